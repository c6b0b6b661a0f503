"""The grader tests itself on its table of known bugs: each costs points on its own question(s) only, and is named.

The table is assignments/attention/hidden/bugs.py: every variant is the reference plus stated find/replace
changes, the questions it breaks (none for a different but correct solution, which must get 100/100), and what
the feedback must say. The same table is the grader's diagnosis library, so every bug with a `cause` must be
named by it. All variants are built here from the reference and graded once, in one batch.
"""
from __future__ import annotations

import re

import pytest

from assignments.attention.hidden import bugs
from conftest import grade_sources

QUESTIONS = {"steps": 10, "SelfAttention_v1": 15, "SelfAttention_v2": 15, "CausalAttention": 25,
             "MultiHeadAttentionWrapper": 15, "MultiHeadAttention": 20}
BUGS = [v.name for v in bugs.VARIANTS if v.breaks]
CORRECT = [v.name for v in bugs.VARIANTS if not v.breaks]
NAMED = [v.name for v in bugs.VARIANTS if v.breaks and (v.cause or v.says or v.never_says)]
DIAGNOSIS = "exactly what the reference gives"


@pytest.fixture(scope="module")
def graded(tmp_path_factory):
    files = {f"{v.name}.py": v.source() for v in bugs.VARIANTS}
    files["reference.py"] = bugs.REFERENCE_SOURCE
    return grade_sources(tmp_path_factory.mktemp("variants"), files)


def failures(r, question: str) -> list[str]:
    return [f"{c.name}: {c.message.en if c.message else ''}" for c in r.checks
            if c.question == question and c.status != "passed" and c.points > 0]


def messages(r, question: str | None = None, words: str = "", lang: str = "en", notes: bool = False) -> list[str]:
    """Messages of the failed checks (of `question`, if given) whose check name contains `words` (and notes)."""
    found = [c.message.text(lang) for c in r.checks if (question is None or c.question == question)
             and c.status == "failed" and words in c.name and c.message]
    return found + ([n.text(lang) for n in r.notes] if notes else [])


# ---------------------------------------------------------------------------------------------- the table

def test_table_is_large_enough_and_well_formed():
    assert len(BUGS) >= 30 and len(CORRECT) >= 5, (BUGS, CORRECT)
    covered = {q for v in bugs.VARIANTS for q in v.breaks}
    assert covered == set(QUESTIONS), f"no bug variant for {set(QUESTIONS) - covered}"
    for v in bugs.VARIANTS:
        assert set(v.breaks) <= set(QUESTIONS), v.name
        assert v.source() != bugs.REFERENCE_SOURCE, f"{v.name}: the change changes nothing"
        if v.breaks:
            assert v.cause or v.says, f"{v.name}: say what the feedback must name (cause or says)"
        if v.cause:
            assert v.cause.en and v.cause.ko, f"{v.name}: the diagnosis needs English and Korean"


def test_a_change_that_does_not_apply_is_refused():
    with pytest.raises(ValueError, match="does not occur"):
        bugs.apply(bugs.REFERENCE_SOURCE, (bugs.ch("CausalAttention", "dim=-3", "dim=1"),))
    with pytest.raises(KeyError):
        bugs.apply(bugs.REFERENCE_SOURCE, (bugs.ch("NoSuchClass", "x", "y"),))


def test_every_variant_was_graded(graded):
    assert sorted(graded) == sorted([v.name for v in bugs.VARIANTS] + ["reference"])
    for name, r in graded.items():
        assert r.error is None, (name, r.error)
        assert r.max_score == 100, name
        assert {q: m for q, (_s, m) in r.by_question().items()} == QUESTIONS, name
        assert not [c.name for c in r.checks if c.status == "error"], (name, [c.staff for c in r.checks
                                                                              if c.status == "error"])


@pytest.mark.parametrize("name", BUGS)
def test_bug_loses_points_only_where_it_breaks(graded, name):
    r = graded[name]
    breaks = bugs.BY_NAME[name].breaks
    by_q = r.by_question()
    for q in breaks:
        s, m = by_q[q]
        assert s < m, f"{name}: the bug in {q} was not caught ({s}/{m})"
    spill = {q: (s, m, failures(r, q)) for q, (s, m) in by_q.items() if q not in breaks and s != m}
    assert not spill, f"{name} also lost points elsewhere: {spill}"


@pytest.mark.parametrize("name", CORRECT + ["reference"])
def test_correct_variant_gets_full_marks(graded, name):
    r = graded[name]
    assert r.score == 100, {q: failures(r, q) for q in QUESTIONS if failures(r, q)}


# ---------------------------------------------------------------------------------------------- messages

def test_misnamed_classes_are_told_to_rename_with_both_names(graded):
    for variant, wrong, right in (("misnamed_SelfAttentionV1", "SelfAttentionV1", "SelfAttention_v1"),
                                  ("misnamed_CasualAttention", "CasualAttention", "CausalAttention")):
        msgs = messages(graded[variant], right, "")
        assert msgs, variant
        assert all("Rename" in m and f"`{wrong}`" in m and f"`{right}`" in m for m in msgs), msgs
        notes = " ".join(n.en for n in graded[variant].notes)
        assert wrong in notes and right in notes, notes


def test_key_before_query_keeps_equivalence_and_gets_the_order_hint(graded):
    r = graded["v1_key_before_query"]
    v1 = {c.name: c for c in r.checks if c.question == "SelfAttention_v1"}
    failed = sorted(n for n, c in v1.items() if c.status != "passed" and c.points > 0)
    assert failed == ["SelfAttention_v1 on hidden seeds and shapes",
                      "SelfAttention_v1(3, 2) with torch.manual_seed(123) prints the notebook's values"], failed
    assert v1["SelfAttention_v1 with the reference's weights copied in"].status == "passed"
    assert v1["SelfAttention_v1: gradients reach every weight"].status == "passed"
    seeded = v1["SelfAttention_v1 on hidden seeds and shapes"].message.en
    assert "in that order" in seeded and "W_query, W_key, W_value" in seeded, seeded


def test_renamed_projections_created_key_first_lose_only_the_seeded_checks(graded):
    """q_linear, k_linear, v_linear, out (created key first): the weights are copied in by role, so only the
    checks that build with the notebook's seeds fail, with the creation-order hint."""
    r = graded["mha_linear_names_key_first"]
    failed = sorted(c.name for c in r.checks if c.question == "MultiHeadAttention" and c.status != "passed"
                    and c.points > 0)
    assert failed == ["MultiHeadAttention on hidden seeds, shapes and head counts",
                      "MultiHeadAttention(3, 4, 6, 0.0, num_heads=2) with seed 123 prints the notebook's values"], failed


def test_a_layer_created_twice_loses_only_the_seeded_checks_and_is_named(graded):
    """Learners round rl13: `self.out_proj = nn.Linear(d_out, d_out)` written twice in MultiHeadAttention.__init__ draws
    new weights; the module is right. It loses the checks that build with the notebook's seeds, and those name the
    repeated line instead of telling it to create its layers in an order it already keeps."""
    r = graded["mha_out_proj_created_twice"]
    failed = {c.name: c.message.en for c in r.checks if c.question == "MultiHeadAttention" and c.status != "passed"
              and c.points > 0}
    assert sorted(failed) == ["MultiHeadAttention on hidden seeds, shapes and head counts",
                              "MultiHeadAttention(3, 4, 6, 0.0, num_heads=2) with seed 123 prints the notebook's "
                              "values"], failed
    assert all("`self.out_proj` is created twice" in m and "in that order" not in m for m in failed.values()), failed


def test_hidden_messages_show_no_expected_values(graded):
    value = re.compile(r"(expected|기댓값) (-?\d+\.\d+|-?inf|nan)")
    leaks = [(name, c.name, c.message.en) for name in BUGS for c in graded[name].checks
             if not c.public and c.status == "failed" and c.message
             and (value.search(c.message.en) or value.search(c.message.ko))]
    assert not leaks, leaks


def test_heads_in_a_plain_list_cost_only_what_the_list_breaks(graded):
    """A learner's wrapper with its heads in a Python list computes the right values; what the list breaks is
    registration: .parameters(), state_dict and .to(device). It lost all 15 points, told its output did not depend
    on its weights (the grader could not set them). Now the structure and device checks charge it, by name."""
    r = graded["wrapper_plain_list"]
    lost = {c.name: c.points - c.score for c in r.checks
            if c.question == "MultiHeadAttentionWrapper" and c.score < c.points}
    assert set(lost) == {"MultiHeadAttentionWrapper keeps num_heads separate CausalAttention modules in an nn.ModuleList",
                         "MultiHeadAttentionWrapper moves all its heads with .to(device)"}, lost
    said = " ".join(c.message.en for c in r.checks if c.question == "MultiHeadAttentionWrapper" and c.message)
    assert "nn.ModuleList" in said and "does not change when its weights change" not in said, said


@pytest.mark.parametrize("name, question, check", [
    ("heads_renamed", "MultiHeadAttentionWrapper",
     "MultiHeadAttentionWrapper keeps num_heads separate CausalAttention modules in an nn.ModuleList"),
    ("mask_buffer_renamed", "CausalAttention", "CausalAttention registers the buffer `mask` = triu(ones, diagonal=1)"),
    ("mha_arguments_reordered", "MultiHeadAttention",
     "MultiHeadAttention.__init__ takes (d_in, d_out, context_length, dropout, num_heads, qkv_bias)"),
    ("causal_mask_plain_attribute_moved_in_forward", "CausalAttention",
     "CausalAttention registers the buffer `mask` = triu(ones, diagonal=1)"),
    ("causal_arguments_renamed_and_reordered", "CausalAttention",
     "CausalAttention.__init__ takes (d_in, d_out, context_length, dropout, qkv_bias)"),
    ("mha_arguments_reordered_and_bias_renamed", "MultiHeadAttention",
     "MultiHeadAttention.__init__ takes (d_in, d_out, context_length, dropout, num_heads, qkv_bias)"),
])
def test_a_name_or_order_other_than_the_notebooks_costs_its_own_check_only(graded, name, question, check):
    """Heads kept as self.attention_heads, the mask as the buffer causal_mask, num_heads before dropout: the grader
    finds the weights and the mask under those names and passes each argument by its name, so only the check of the
    notebook's name or order charges it (the heads cost four checks, two of them saying that the heads were not
    registered; the order cost all 20 points of MultiHeadAttention)."""
    r = graded[name]
    lost = {c.name for c in r.checks if c.score < c.points}
    assert lost == {check}, lost


def test_constant_output_earns_no_property_points(graded):
    """Causality and eval-mode dropout hold for a constant; they must not pay for one."""
    checks = {c.nodeid.split("::")[-1]: c for c in graded["causal_constant_output"].checks}
    for name in ("test_causal_is_causal", "test_causal_eval_disables_dropout"):
        assert checks[name].score == 0 and "does not depend on the input" in checks[name].message.en


# ---------------------------------------------------------------------------------------------- diagnosis

def diagnoses(texts: list[str]) -> list[str]:
    return [t for t in texts if DIAGNOSIS in t]


@pytest.mark.parametrize("name", NAMED)
def test_feedback_names_the_bug(graded, name):
    """The table's cause (the grader's diagnosis) or its words appear where the points are lost, in both
    languages; words of the wrong causes seen in learners' feedback appear nowhere."""
    v, r = bugs.BY_NAME[name], graded[name]
    en = [m for q in v.breaks for m in messages(r, q)] + messages(r, notes=True)[len(messages(r)):]
    ko = [m for q in v.breaks for m in messages(r, q, lang="ko")]
    if v.cause is not None:
        assert any(v.cause.en in m for m in en), (name, en)
        assert any(v.cause.ko in m for m in ko), (name, ko)
    for words in v.says:
        assert any(words in m for m in en), (name, words, en)
    everything = messages(r, notes=True) + [r.error.en if r.error else ""]
    for words in v.never_says:
        assert not [m for m in everything if words in m], (name, words)
    own = [v.cause.en] if v.cause else list(v.says)
    wrong = [d for d in diagnoses(messages(r)) if not any(w in d for w in own)]
    assert not wrong, (name, wrong)


def test_a_tril_diagonal1_mask_is_named_by_the_buffer_check(graded):
    """Learners round rl14: torch.tril(..., diagonal=1) for the mask; beside a forward whose masked_fill result is
    thrown away (the output then never shows the mask), the buffer check is the only one that can name it, and said
    only that the mask is not triu."""
    for name, cls in (("causal_tril_diagonal1_mask", "CausalAttention"), ("mha_tril_diagonal1_mask", "MultiHeadAttention")):
        en = messages(graded[name], cls, "registers the buffer")
        ko = messages(graded[name], cls, "registers the buffer", lang="ko")
        assert any(f"`{cls}.mask` is torch.tril(..., diagonal=1) (tril for triu)" in m for m in en), (name, en)
        assert any("triu 대신 tril" in m for m in ko), (name, ko)


def test_right_code_is_never_diagnosed(graded):
    named = {n: diagnoses(messages(graded[n], notes=True)) for n in CORRECT + ["reference"]}
    assert not any(named.values()), named


def test_every_diagnosis_in_the_library_is_reachable():
    """Each library bug is named by the mechanism itself (not by a check's own words)."""
    assert {v.name for v in bugs.LIBRARY} <= set(NAMED)
    assert len(bugs.LIBRARY) >= 18, [v.name for v in bugs.LIBRARY]


def test_renamed_keyword_is_retried_by_position_and_costs_only_the_signature(graded):
    for name, question in (("mha_head_num_argument", "MultiHeadAttention"),
                           ("wrapper_context_len_argument", "MultiHeadAttentionWrapper"),
                           ("context_len_argument", "CausalAttention"),
                           # learners round rl12: `max_len` for context_length, placed before dropout
                           ("mha_max_len_before_dropout", "MultiHeadAttention")):
        r = graded[name]
        lost = [c.name for c in r.checks if c.question == question and c.score < c.points]
        assert len(lost) == 1 and "__init__ takes" in lost[0], (name, lost)


def test_a_bug_versions_output_is_computed_once_per_grader_process(monkeypatch):
    """The diagnosis remembers what each bug version gives for the same constructor, weights and call (the
    same for every student whose failing check saw the same weights), and recomputes whatever differs."""
    import torch

    from autograder import bugtable
    from reference import attention as R

    runs: list[int] = []
    real = bugtable._output
    monkeypatch.setattr(bugtable, "_output", lambda *a, **k: (runs.append(1), real(*a, **k))[1])
    monkeypatch.setattr(bugtable, "_OUTPUTS", {})
    ctor = ("CausalAttention", (3, 2, 6, 0.0), {}, 123)
    x = torch.rand(2, 6, 3)
    first = bugtable.output(R, ctor, None, bugtable.Call((x,), {}, "eval", None))
    again = bugtable.output(R, ctor, None, bugtable.Call((x.clone(),), {}, "eval", None))
    assert len(runs) == 1 and torch.equal(first, again) and again is not first
    bugtable.output(R, ("CausalAttention", (3, 2, 6, 0.0), {}, 124), None, bugtable.Call((x,), {}, "eval", None))
    bugtable.output(R, ctor, None, bugtable.Call((x + 1,), {}, "eval", None))
    assert len(runs) == 3  # another seed, other inputs: computed
    drop = ("CausalAttention", (3, 2, 6, 0.5), {}, 123)
    bugtable.output(R, drop, None, bugtable.Call((x,), {}, "train", None))
    bugtable.output(R, drop, None, bugtable.Call((x,), {}, "train", None))
    assert len(runs) == 5  # dropout with no seed depends on the random state: never remembered


def test_a_wrong_default_of_qkv_bias_costs_only_the_signature_point(graded):
    """SelfAttention_v2(d_in, d_out, qkv_bias=True) as the default: the signature check charges it and says so; the
    other checks pass qkv_bias=False and judge the rest (it kept 2 of 15 points when every check built the class
    with biases)."""
    r = graded["v2_qkv_bias_default_true"]
    lost = [c for c in r.checks if c.question == "SelfAttention_v2" and c.score < c.points]
    assert len(lost) == 1 and "signature" in lost[0].nodeid, [(c.nodeid, c.message.en) for c in lost]


def test_a_missing_qkv_bias_argument_costs_the_signature_and_one_bias_point(graded):
    """SelfAttention_v2(d_in, d_out) without qkv_bias: the signature check and the check that qkv_bias=True makes
    biases charge it, in words (it lost a third point, and both bias checks showed a TypeError)."""
    r = graded["v2_without_qkv_bias_argument"]
    lost = [c for c in r.checks if c.question == "SelfAttention_v2" and c.score < c.points]
    assert sum(c.points - c.score for c in lost) == 2, [(c.nodeid, c.message.en) for c in lost]
