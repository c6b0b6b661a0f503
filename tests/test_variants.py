"""The grader tests itself on a corpus of known bugs: each bug costs points on its own question(s) and only there.

Every file in tests/variants/ is a complete submission (the reference with one small, realistic change) whose
first line says what it should cost: `# breaks: <Question>[, <Question>]`, or `# correct` for a different but
right solution, which must get 100/100. The whole corpus is graded once, in one batch.
"""
from __future__ import annotations

import re
from pathlib import Path

import pytest

from conftest import grade_sources

VARIANTS = Path(__file__).resolve().parent / "variants"
QUESTIONS = {"steps": 10, "SelfAttention_v1": 15, "SelfAttention_v2": 15, "CausalAttention": 25,
             "MultiHeadAttentionWrapper": 15, "MultiHeadAttention": 20}


def expectation(path: Path) -> set[str] | None:
    """The questions a variant breaks (from its header); None for a correct variant."""
    lines = path.read_text(encoding="utf-8").splitlines()
    head = lines[0].strip() if lines else ""
    assert len(lines) > 1 and lines[1].startswith("# ") and len(lines[1]) > 10, \
        f"{path.name}: the second line must say what the bug (or the alternative) is"
    if head == "# correct":
        return None
    assert head.startswith("# breaks: "), f"{path.name}: first line must be '# breaks: Q[, Q]' or '# correct'"
    qs = {q.strip() for q in head[len("# breaks: "):].split(",")}
    assert qs and qs <= set(QUESTIONS), f"{path.name}: unknown question in {sorted(qs)}"
    return qs


FILES = sorted(VARIANTS.glob("*.py"))
BUGS = [p.stem for p in FILES if expectation(p) is not None]
CORRECT = [p.stem for p in FILES if expectation(p) is None]


@pytest.fixture(scope="module")
def graded(tmp_path_factory):
    return grade_sources(tmp_path_factory.mktemp("variants"), {p.name: p for p in FILES})


def scores(r) -> dict[str, tuple[float, float]]:
    return r.by_question()


def failures(r, question: str) -> list[str]:
    return [f"{c.name}: {c.message.en if c.message else ''}" for c in r.checks
            if c.question == question and c.status != "passed" and c.points > 0]


def messages(r, question: str, words: str = "") -> list[str]:
    """English messages of the failed checks of `question` whose check name contains `words`."""
    return [c.message.en for c in r.checks
            if c.question == question and c.status == "failed" and words in c.name and c.message]


# ---------------------------------------------------------------------------------------------- the corpus

def test_corpus_is_large_enough():
    assert len(BUGS) >= 20, BUGS
    assert len(CORRECT) >= 5, CORRECT
    covered = set().union(*(expectation(VARIANTS / f"{b}.py") for b in BUGS))
    assert covered == set(QUESTIONS), f"no bug variant for {set(QUESTIONS) - covered}"


def test_every_variant_was_graded(graded):
    assert sorted(graded) == sorted(p.stem for p in FILES)
    for name, r in graded.items():
        assert r.error is None, (name, r.error)
        assert r.max_score == 100, name
        assert {q: m for q, (_s, m) in scores(r).items()} == QUESTIONS, name
        assert not [c.name for c in r.checks if c.status == "error"], (name, [c.staff for c in r.checks
                                                                              if c.status == "error"])


@pytest.mark.parametrize("name", BUGS)
def test_bug_loses_points_only_where_it_breaks(graded, name):
    r = graded[name]
    breaks = expectation(VARIANTS / f"{name}.py")
    by_q = scores(r)
    for q in breaks:
        s, m = by_q[q]
        assert s < m, f"{name}: the bug in {q} was not caught ({s}/{m})"
    spill = {q: (s, m, failures(r, q)) for q, (s, m) in by_q.items() if q not in breaks and s != m}
    assert not spill, f"{name} also lost points elsewhere: {spill}"


@pytest.mark.parametrize("name", CORRECT)
def test_correct_variant_gets_full_marks(graded, name):
    r = graded[name]
    assert r.score == 100, {q: failures(r, q) for q in QUESTIONS if failures(r, q)}


# ---------------------------------------------------------------------------------------------- messages

def test_minus_1e9_fill_is_told_to_use_minus_inf(graded):
    msgs = messages(graded["bug_causal_fill_minus_1e9"], "CausalAttention")
    assert msgs and all("-inf" in m for m in msgs), msgs


def test_misnamed_classes_are_told_to_rename_with_both_names(graded):
    for variant, wrong, right in (("bug_misnamed_SelfAttentionV1", "SelfAttentionV1", "SelfAttention_v1"),
                                  ("bug_misnamed_CasualAttention", "CasualAttention", "CausalAttention")):
        msgs = messages(graded[variant], right)
        assert msgs, variant
        assert all("Rename" in m and f"`{wrong}`" in m and f"`{right}`" in m for m in msgs), msgs
        notes = " ".join(n.en for n in graded[variant].notes)
        assert wrong in notes and right in notes, notes


def test_misnamed_argument_is_told_which_rename(graded):
    msgs = messages(graded["bug_context_len_argument"], "CausalAttention")
    assert len(msgs) == 1 and "`context_len` -> `context_length`" in msgs[0], msgs


def test_plain_list_heads_mention_module_list(graded):
    msgs = messages(graded["bug_wrapper_plain_list"], "MultiHeadAttentionWrapper")
    assert any("nn.ModuleList" in m for m in msgs), msgs


def test_shared_head_is_named(graded):
    msgs = messages(graded["bug_wrapper_shared_head"], "MultiHeadAttentionWrapper", "separate")
    assert msgs and "[head] * num_heads" in msgs[0], msgs


def test_key_before_query_keeps_equivalence_and_gets_the_order_hint(graded):
    r = graded["bug_v1_key_before_query"]
    v1 = {c.name: c for c in r.checks if c.question == "SelfAttention_v1"}
    failed = sorted(n for n, c in v1.items() if c.status != "passed" and c.points > 0)
    assert failed == ["SelfAttention_v1 on hidden seeds and shapes",
                      "SelfAttention_v1(3, 2) with torch.manual_seed(123) prints the notebook's values"], failed
    assert v1["SelfAttention_v1 with the reference's weights copied in"].status == "passed"
    assert v1["SelfAttention_v1: gradients reach every weight"].status == "passed"
    seeded = v1["SelfAttention_v1 on hidden seeds and shapes"].message.en
    assert "in that order" in seeded and "W_query, W_key, W_value" in seeded, seeded


def test_dropped_masked_fill_says_to_assign(graded):
    msgs = messages(graded["bug_masked_fill_dropped"], "CausalAttention", "future tokens")
    assert msgs and "assigned" in msgs[0], msgs


def test_unsliced_mask_says_to_slice(graded):
    msgs = messages(graded["bug_causal_unsliced_mask"], "CausalAttention", "fewer tokens")
    assert msgs and "[:num_tokens, :num_tokens]" in msgs[0], msgs


def test_mask_device_bugs_point_to_register_buffer(graded):
    for variant, cls in (("bug_causal_mask_plain_attribute", "CausalAttention"),
                         ("bug_mha_mask_in_forward_cpu", "MultiHeadAttention")):
        msgs = messages(graded[variant], cls, "device")
        assert msgs and "register_buffer" in msgs[0], (variant, msgs)


def test_tril_and_diagonal_masks_are_recognised(graded):
    assert any("tril" in m for m in messages(graded["bug_causal_tril_mask"], "CausalAttention", "buffer"))
    assert any("diagonal=1" in m for m in messages(graded["bug_mha_mask_diagonal0"], "MultiHeadAttention", "buffer"))


def test_hidden_messages_show_no_expected_values(graded):
    value = re.compile(r"(expected|기댓값) (-?\d+\.\d+|-?inf|nan)")
    leaks = [(name, c.name, c.message.en) for name in BUGS for c in graded[name].checks
             if not c.public and c.status == "failed" and c.message
             and (value.search(c.message.en) or value.search(c.message.ko))]
    assert not leaks, leaks


def test_constant_output_earns_no_property_points(graded):
    """Causality and eval-mode dropout hold for a constant; they must not pay for one."""
    checks = {c.nodeid.split("::")[-1]: c for c in graded["bug_causal_constant_output"].checks}
    for name in ("test_causal_is_causal", "test_causal_eval_disables_dropout"):
        assert checks[name].score == 0 and "does not depend on the input" in checks[name].message.en
