"""Real learners' near-misses in the attention lab (chapter 3 of "Build a Large Language Model (From Scratch)"),
left open by earlier rounds (session 16): each bug costs points where it lives, once, with the right words.

Each student is the reference with a learner's edit (bugs.apply), graded once through `grade batch`."""
from __future__ import annotations

import pytest

from assignments.attention.hidden import bugs
from autograder.bugtable import ch
from conftest import grade_sources

CA, MHA, WR = "CausalAttention", "MultiHeadAttention", "MultiHeadAttentionWrapper"
CAUSAL = "future tokens do not change earlier outputs"

UNSLICED = ("self.mask.bool()[:num_tokens, :num_tokens]", "self.mask.bool()")
SLICE = "the mask is made for context_length tokens; slice it"
# The checks of inputs shorter than context_length: where an unsliced mask is charged.
SHORT = {CA: ("accepts fewer tokens than context_length", "on hidden seeds and shapes (some shorter"),
         MHA: ("on hidden seeds, shapes and head counts", "1 to 4 heads and short sequences")}

STUDENTS = {
    # The mask used whole (`self.mask.bool()`): only inputs shorter than context_length raise. It cost 12 of
    # CausalAttention's 25 points and 10 of MultiHeadAttention's 20: the dropout, qkv_bias, gradient and
    # reference-weight checks all start on an input shorter than context_length.
    "ca_unsliced": (ch(CA, *UNSLICED),),
    "mha_unsliced": (ch(MHA, *UNSLICED),),
    # ... beside a dropout that is never applied: the dropout check, judged at context_length tokens, names that.
    "ca_unsliced_dropout_unused": (ch(CA, *UNSLICED), ch(CA, "weights = self.dropout(weights)", "")),
    # Scores divided by sqrt(num_tokens): the outputs depend on how many tokens there are, never on a later
    # token's value. The causality check said "it depends on later tokens" beside the diagnosis that named it.
    "ca_scale_by_tokens": (ch(CA, "keys.shape[-1] ** 0.5", "num_tokens ** 0.5"),),
    "mha_scale_by_tokens": (ch(MHA, "keys.shape[-1] ** 0.5", "keys.shape[-2] ** 0.5"),),
    # Control: token 0 sees token 1 (one hole in the mask), and its outputs depend on the number of tokens too: a
    # leak at one split point only (not at the middle one the check changes first) is still a leak.
    "ca_token0_sees_token1": (ch(CA, "keys.shape[-1] ** 0.5", "num_tokens ** 0.5"),
                              ch(CA, "b, num_tokens, d_in = x.shape\n",
                                 "b, num_tokens, d_in = x.shape\n        self.mask[0, 1:2] = 0\n")),
    # The head class misspelt (CasualAttention) and taking dropout before context_length, its wrapper building it
    # in that order: it works, yet the gate built it in the notebook's order (dropout=context_length) and the
    # wrapper's note said the heads "do not work yet".
    "misspelt_head_reordered": (ch(CA, "context_length: int, dropout: float,", "dropout: float, context_length: int,"),
                                ch(CA, "class CausalAttention(", "class CasualAttention("),
                                ch(WR, "[CausalAttention(d_in, d_out, context_length, dropout, qkv_bias)",
                                   "[CasualAttention(d_in, d_out, dropout, context_length, qkv_bias)")),
    # The heads' class under a name of its own (MaskedAttention) and the wrapper misspelt, its arguments renamed:
    # CausalAttention's checks said only that it is not defined (the heads' class was looked for in the wrapper
    # under its exact name only).
    "misspelt_wrapper_of_masked_heads": (ch(CA, "class CausalAttention(", "class MaskedAttention("),
                                         ch(WR, "[CausalAttention(", "[MaskedAttention("),
                                         ch(WR, "context_length", "context_len"), ch(WR, "num_heads", "n_heads"),
                                         ch(WR, "class MultiHeadAttentionWrapper(", "class MultiheadAttentionWrapper(")),
    # The head misspelt and broken (keys.T on a batch): the wrapper's note said "see its checks", whose messages
    # only say to rename it.
    # The head class misspelt where it is defined only: the wrapper builds `CausalAttention`, the notebook's name,
    # which the file never defines. The wrapper raised NameError in every check and lost its 15 points to the heads'
    # misspelling, which CausalAttention's question already charges (the gate judged the misspelt class, which works,
    # so no stand-in heads were offered; learners' round, session 16).
    "misspelt_head_right_wrapper": (ch(CA, "class CausalAttention(", "class CasualAttention("),),
    "misspelt_head_broken": (ch(CA, "keys.transpose(1, 2)", "keys.T"),
                             ch(CA, "class CausalAttention(", "class CasualAttention("),
                             ch(WR, "[CausalAttention(", "[CasualAttention(")),
}


@pytest.fixture(scope="module")
def graded(tmp_path_factory):
    files = {f"{name}/attention.py": bugs.apply(bugs.REFERENCE_SOURCE, changes) for name, changes in STUDENTS.items()}
    return grade_sources(tmp_path_factory.mktemp("near_misses"), files)


def check(r, question: str, words: str):
    found = [c for c in r.checks if c.question == question and words in c.name]
    assert len(found) == 1, [c.name for c in r.checks if c.question == question]
    return found[0]


def texts(r) -> list[str]:
    return [c.message.text(lang) for c in r.checks if c.message for lang in ("en", "ko")]


@pytest.mark.parametrize("name, cls", [("ca_scale_by_tokens", CA), ("mha_scale_by_tokens", MHA)])
def test_scores_scaled_by_the_number_of_tokens_are_not_called_a_leak_from_the_future(graded, name, cls):
    r = graded[name]
    assert check(r, cls, CAUSAL).status == "passed", check(r, cls, CAUSAL).message
    assert not [t for t in texts(r) if "later tokens" in t or "뒤의 토큰에 의존" in t]
    # still charged where it lives: the value checks name it
    assert any("scaled by sqrt(num_tokens)" in c.message.en for c in r.checks
               if c.question == cls and c.status == "failed" and c.message)
    assert {q: s for q, (s, m) in r.by_question().items() if s != m} == {cls: pytest.approx(r.by_question()[cls][0])}


def test_a_leak_at_one_split_point_still_fails_causality(graded):
    r = graded["ca_token0_sees_token1"]
    c = check(r, CA, CAUSAL)
    assert c.status == "failed" and "is not causal" in c.message.en, c.message


@pytest.mark.parametrize("name, cls", [("ca_unsliced", CA), ("mha_unsliced", MHA)])
def test_an_unsliced_mask_costs_the_checks_of_shorter_inputs_only(graded, name, cls):
    r = graded[name]
    lost = {c.name for c in r.checks if c.score < c.points}
    assert lost == {next(c.name for c in r.checks if c.question == cls and words in c.name) for words in SHORT[cls]}, \
        lost
    for c in r.checks:
        if c.score < c.points:
            assert SLICE in c.message.en and "입력 토큰 수에 맞게 잘라" in c.message.ko, c.message


def test_an_unsliced_mask_does_not_hide_another_bug_of_the_checks_judged_at_full_length(graded):
    r = graded["ca_unsliced_dropout_unused"]
    c = check(r, CA, "applies dropout to the attention weights in train mode")
    assert c.status == "failed" and SLICE not in c.message.en, c.message
    assert r.by_question()[CA][0] < graded["ca_unsliced"].by_question()[CA][0]


def test_a_misspelt_head_that_works_is_not_said_to_fail(graded):
    r = graded["misspelt_head_reordered"]
    assert {q: s for q, (s, m) in r.by_question().items() if s != m} == {CA: 0}, r.by_question()
    notes = [n.en for n in r.notes]
    assert any("rename it to `CausalAttention`" in n for n in notes), notes
    assert not [n for n in notes if "does not work yet" in n or "stand-in" in n], notes


def test_a_wrapper_that_builds_the_notebooks_head_name_keeps_its_points_where_only_the_head_is_misspelt(graded):
    r = graded["misspelt_head_right_wrapper"]
    assert {q: s for q, (s, m) in r.by_question().items() if s != m} == {CA: 0}, r.by_question()
    assert all("NameError" not in m for m in texts(r)), [m for m in texts(r) if "NameError" in m][:2]
    renames = [c.message.en for c in r.checks if c.question == CA and c.message]
    assert renames and all("Rename `CasualAttention` to `CausalAttention`" in m for m in renames), renames[:2]
    notes = [(n.en, n.ko) for n in r.notes if "stand-in" in n.en]
    assert notes and "does not define `CausalAttention`" in notes[0][0] and "정의되어 있지" in notes[0][1], notes


def test_a_file_with_only_the_books_multihead_attention_is_the_attention_labs(tmp_path):
    """A learner's file named after them with the book's MultiHeadAttention and no other class: 1 of the attention
    lab's 6 questions and 1 of the midterm's 3, so `grade check` refused it ("Cannot tell which assignment"). Its
    __init__ takes the lab's arguments (the question's `init`); the midterm's, keyword-only after d_in and d_out,
    is not taken for the lab's."""
    from autograder import assignment
    from autograder.bugtable import scope
    from conftest import ROOT
    lab = bugs.REFERENCE_SOURCE
    f = tmp_path / "park_ch3.py"
    f.write_text("import torch\nimport torch.nn as nn\n\n\n" + lab[slice(*scope(lab, MHA))], encoding="utf-8")
    assert assignment.for_source(f).name == "attention"
    exam = (ROOT / "reference" / "midterm.py").read_text(encoding="utf-8")
    f.write_text("import torch\nimport torch.nn as nn\n\n\n" + exam[slice(*scope(exam, MHA))], encoding="utf-8")
    assert assignment.for_source(f) is None


def test_the_heads_of_a_misspelt_wrapper_are_guessed_as_causal_attention(graded):
    r = graded["misspelt_wrapper_of_masked_heads"]
    en = [c.message.en for c in r.checks if c.question == CA and c.message]
    ko = [c.message.ko for c in r.checks if c.question == CA and c.message]
    assert en and all("Rename `MaskedAttention` to `CausalAttention`" in m for m in en), en[:2]
    assert all("`MaskedAttention`의 이름을 `CausalAttention`" in m for m in ko), ko[:2]


def test_the_stand_in_note_of_a_misspelt_broken_head_says_to_rename_it(graded):
    r = graded["misspelt_head_broken"]
    assert {q: s for q, (s, m) in r.by_question().items() if s != m} == {CA: 0}, r.by_question()
    en = [n.en for n in r.notes if "stand-in" in n.en]
    ko = [n.text("ko") for n in r.notes if "대체 헤드" in n.ko]
    assert en and "rename it to `CausalAttention`, and the checks of CausalAttention will say why" in en[0], en
    assert "see its checks" not in en[0]
    assert ko and "`CasualAttention`의 이름을 `CausalAttention`으로 바꾸면" in ko[0], ko


def test_a_misspelt_head_whose_class_statement_raised_is_named(tmp_path):
    """Learners round rl16: `class CasualAttention(nn.module):` raises AttributeError when the file runs, so neither
    name exists. CausalAttention's checks said only "`CausalAttention` is not defined in your submission" (the load
    note at the top named the line, not that it was CausalAttention's class): they now name the class written for
    it, the error and the rename, in English and Korean. The wrapper, which builds CasualAttention heads, lost its 15
    points to a NameError beside a note saying it had been graded with stand-in heads (they went under the name
    CausalAttention): they now go under the name it builds, and the heads' fault costs CausalAttention only."""
    source = bugs.apply(bugs.REFERENCE_SOURCE, (ch(CA, "class CausalAttention(nn.Module):",
                                                   "class CasualAttention(nn.module):"),
                                                ch(WR, "[CausalAttention(", "[CasualAttention(")))
    r = grade_sources(tmp_path, {"nn_module/attention.py": source})["nn_module"]
    en = [c.message.en for c in r.checks if c.question == CA and c.message]
    ko = [c.message.ko for c in r.checks if c.question == CA and c.message]
    assert en and all("Your file writes `CasualAttention` for it, but that definition raised AttributeError" in m
                      and "rename `CasualAttention` to `CausalAttention`" in m for m in en), en[:2]
    assert all("`CasualAttention`의 이름을 `CausalAttention`" in m for m in ko), ko[:2]
    assert {q: s for q, (s, m) in r.by_question().items() if s != m} == {CA: 0}, r.by_question()
    assert [n.en for n in r.notes if "in place of your `CasualAttention`" in n.en], [n.en for n in r.notes]


def test_a_class_imported_from_a_module_beside_the_file_is_named_so(tmp_path):
    """Learners round rl16: a study repository's attention.py imports each class from its own module beside it
    (`from causal_attention import CausalAttention`). Only the graded file is loaded: the load note said the import
    was skipped, and each check said only that CausalAttention "is not defined in your submission". The checks now
    say where the file imports it from and to write it in the graded file."""
    lab = bugs.REFERENCE_SOURCE
    from autograder.bugtable import scope
    head = lab[slice(*scope(lab, CA))]
    rest = lab.replace(head, "")
    files = {"split/attention.py": "from causal_attention import CausalAttention\n" + rest,
             "split/causal_attention.py": "import torch\nimport torch.nn as nn\n\n\n" + head}
    r = grade_sources(tmp_path, files)["split"]
    en = [c.message.en for c in r.checks if c.question == CA and c.message]
    ko = [c.message.ko for c in r.checks if c.question == CA and c.message]
    assert en and all("it imports it from `causal_attention` (attention.py, line 1)" in m for m in en), en[:2]
    assert all("`causal_attention`에서 import하는데" in m for m in ko), ko[:2]
