"""Real learners' near-misses in the attention lab (chapter 3 of "Build a Large Language Model (From Scratch)"),
left open by earlier rounds (session 16): each bug costs points where it lives, once, with the right words.

Each student is the reference with a learner's edit (bugs.apply), graded once through `grade batch`."""
from __future__ import annotations

import pytest

from assignments.attention.hidden import bugs
from autograder.bugtable import ch
from conftest import grade_sources

CA, MHA = "CausalAttention", "MultiHeadAttention"
CAUSAL = "future tokens do not change earlier outputs"

STUDENTS = {
    # Scores divided by sqrt(num_tokens): the outputs depend on how many tokens there are, never on a later
    # token's value. The causality check said "it depends on later tokens" beside the diagnosis that named it.
    "ca_scale_by_tokens": (ch(CA, "keys.shape[-1] ** 0.5", "num_tokens ** 0.5"),),
    "mha_scale_by_tokens": (ch(MHA, "keys.shape[-1] ** 0.5", "keys.shape[-2] ** 0.5"),),
    # Control: token 0 sees token 1 (one hole in the mask), and its outputs depend on the number of tokens too: a
    # leak at one split point only (not at the middle one the check changes first) is still a leak.
    "ca_token0_sees_token1": (ch(CA, "keys.shape[-1] ** 0.5", "num_tokens ** 0.5"),
                              ch(CA, "b, num_tokens, d_in = x.shape\n",
                                 "b, num_tokens, d_in = x.shape\n        self.mask[0, 1:2] = 0\n")),
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
