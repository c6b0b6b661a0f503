"""Two bugs in one class (learners round rl11): when no single bug of the table explains a module's output, the
diagnosis tries pairs of the class's bugs (both edits applied to the reference) and names the pair that gives the
output exactly, each mistake in its own words; a single bug's message is what it was.

The students here are written anew from the table's edits and run as the student's code would be; the diagnosis
sees only their output and their weights, as in a failed check (tests/test_variants.py grades the same pairs
through `grade batch`: the rows built by bugs.both)."""
from __future__ import annotations

import time
import types

import pytest
import torch

from assignments.attention.hidden import bugs, diagnose
from autograder import bugtable
from autograder.rng import manual_seed

BOTH = "exactly what the reference gives with both"  # one pair, or several that give the same numbers
BOTH_KO = "함께 넣었을 때의 결과와 정확히 같습니다"
# How the checks build each class (constructor arguments), as (args, kwargs).
CTORS = {"SelfAttention_v1": ((3, 2), {}), "SelfAttention_v2": ((3, 2), {}),
         "CausalAttention": ((3, 4, 6, 0.0), {}), "MultiHeadAttention": ((3, 4, 6, 0.0), {"num_heads": 2}),
         "MultiHeadAttentionWrapper": ((3, 2, 6, 0.0), {"num_heads": 2})}


class Handle:
    """What the diagnosis reads of a student's module: how it was built, and its weights."""

    def __init__(self, ctor: tuple, module: torch.nn.Module):
        self.ctor, self._m = ctor, module

    def state(self) -> dict:
        return {"params": {n: p.detach().clone() for n, p in self._m.named_parameters()}}


def student(source: str, cls: str, seed: int = 123, inputs: torch.Tensor | None = None):
    """The student's class built as the checks build it and called once: (handle, inputs, output)."""
    m = types.ModuleType("student")
    exec(compile(source, "<student>", "exec"), m.__dict__)
    args, kwargs = CTORS[cls]
    manual_seed(seed)
    module = getattr(m, cls)(*args, **kwargs).eval()
    x = inputs if inputs is not None else torch.randn(2, 6, 3, generator=torch.Generator().manual_seed(seed))
    if cls.startswith("SelfAttention"):
        x = x[0]
    with torch.no_grad():
        got = module(x)
    return Handle((cls, args, kwargs, seed), module), x, got


def diagnosis(source: str, cls: str, pairs: int | None = None, seed: int = 123, until: float = 30.0):
    old = diagnose.PAIRS
    if pairs is not None:
        diagnose.PAIRS = pairs
    try:
        target, x, got = student(source, cls, seed)
        return diagnose.diagnose(sub=None, until=time.monotonic() + until, target=target, got=got, inputs=(x,))
    finally:
        diagnose.PAIRS = old


def two(first: str, second: str) -> str:
    """The reference with both bugs' edits, applied here afresh (not through the diagnosis's own composition)."""
    return bugs.apply(bugs.REFERENCE_SOURCE, bugs.BY_NAME[first].changes + bugs.BY_NAME[second].changes)


@pytest.mark.parametrize("cls, first, second", [
    ("MultiHeadAttention", "mha_masked_fill_dropped", "mha_out_proj_unused"),  # learners round rl11
    ("CausalAttention", "masked_fill_dropped", "causal_typo_0_05"),  # learners round rl11
    ("CausalAttention", "causal_no_scaling", "causal_softmax_dim1"),
    ("MultiHeadAttention", "mha_no_transpose_back", "mha_out_proj_unused"),
])
def test_two_bugs_in_one_class_are_named_together(cls, first, second):
    a, b = bugs.BY_NAME[first], bugs.BY_NAME[second]
    for seed in (123, 7):
        said = diagnosis(two(first, second), cls, seed=seed)
        assert said is not None, (first, second, seed)
        assert BOTH in said.en and a.cause.en in said.en and b.cause.en in said.en, said.en
        assert BOTH_KO in said.ko and a.cause.ko in said.ko and b.cause.ko in said.ko, said.ko
        assert diagnosis(two(first, second), cls, pairs=0, seed=seed) is None  # what rl11's learners were told


def test_pairs_that_give_the_same_numbers_are_named_together():
    """Heads merged without transposing back give what heads concatenated on the token axis give (as single bugs):
    with out_proj never applied too, both pairs are named, three causes in all."""
    said = diagnosis(two("mha_no_transpose_back", "mha_out_proj_unused"), "MultiHeadAttention")
    causes = [bugs.BY_NAME[n].cause for n in ("mha_no_transpose_back", "mha_out_proj_unused",
                                               "mha_head_loop_cat_tokens")]
    assert "any one of these pairs" in said.en and all(c.en in said.en for c in causes), said.en
    assert "쌍 중 하나" in said.ko and all(c.ko in said.ko for c in causes), said.ko
    assert said.en.count(causes[1].en) == 2


def test_the_rl11_pairs_are_not_explained_by_one_bug_of_the_table():
    for cls, first, second in (("MultiHeadAttention", "mha_masked_fill_dropped", "mha_out_proj_unused"),
                               ("CausalAttention", "masked_fill_dropped", "causal_typo_0_05")):
        target, x, got = student(two(first, second), cls)
        ref = bugtable.output(bugs.module(bugs.BY_NAME[first]), target.ctor, target.state()["params"],
                              bugtable.Call((x,)))
        assert not bugtable.same(ref, got)


@pytest.mark.parametrize("v", [v for v in bugs.LIBRARY if v.targets & set(CTORS)], ids=lambda v: v.name)
def test_a_single_bug_keeps_its_own_message(v):
    """Pairs are tried only where no single bug explains the output: every single bug of the library is told what
    it was told before, on calls its bug shows in and on calls it does not."""
    cls = next(c for c in CTORS if c in v.targets)
    for seed in (123, 7):
        with_pairs = diagnosis(v.source(), cls, seed=seed)
        without = diagnosis(v.source(), cls, pairs=0, seed=seed)
        assert with_pairs == without, (v.name, with_pairs, without)
        assert with_pairs is None or BOTH not in with_pairs.en


@pytest.mark.parametrize("cls, find, replace", [
    ("CausalAttention", "values = self.W_value(x)", "values = self.W_value(x) * 1.7"),
    ("MultiHeadAttention", "return self.out_proj(context)", "return self.out_proj(context) * 0.6"),
    ("MultiHeadAttention", "-torch.inf)", "-2.5)"),
])
def test_a_bug_no_pair_gives_names_nothing(cls, find, replace):
    source = bugs.apply(bugs.REFERENCE_SOURCE, (bugs.ch(cls, find, replace),))
    assert diagnosis(source, cls) is None


def test_a_pair_not_tried_in_full_names_nothing():
    """Over the cap or past the deadline the search stops, and says nothing: an untried pair might have given the
    same numbers too."""
    source = two("mha_masked_fill_dropped", "mha_out_proj_unused")
    assert diagnosis(source, "MultiHeadAttention", pairs=1) is None
    assert diagnosis(source, "MultiHeadAttention", until=-1.0) is None


def test_the_deadline_stops_the_pairs_too(monkeypatch):
    """A deadline reached while pairs are tried (the single bugs all tried in time) names nothing."""
    source = two("mha_masked_fill_dropped", "mha_out_proj_unused")
    target, x, got = student(source, "MultiHeadAttention")
    monkeypatch.setattr(bugtable, "_PAIR_SEARCHES", {})  # (as in a fresh grader process: the search itself runs)
    composed: list[int] = []
    real_pair = bugs.TABLE.pair
    monkeypatch.setattr(bugs.TABLE, "pair", lambda a, b: (composed.append(1), real_pair(a, b))[1])
    clock = types.SimpleNamespace(monotonic=lambda: 1e9 if len(composed) > 3 else 0.0)
    monkeypatch.setattr(bugtable, "time", clock)
    assert diagnose.diagnose(sub=None, until=1.0, target=target, got=got, inputs=(x,)) is None
    assert 3 < len(composed) < 10
    monkeypatch.setattr(bugtable, "time", time)
    assert diagnose.diagnose(sub=None, until=time.monotonic() + 30, target=target, got=got, inputs=(x,))


def test_pairs_whose_edits_do_not_compose_are_skipped_and_each_pair_is_composed_once():
    t = bugs.TABLE
    # Both rewrite `** 0.5`: the second edit no longer applies after the first, in either order.
    assert t.pair(bugs.BY_NAME["causal_typo_0_slash_5"], bugs.BY_NAME["causal_typo_0_05"]) is None
    a, b = bugs.BY_NAME["mha_masked_fill_dropped"], bugs.BY_NAME["mha_out_proj_unused"]
    ab = t.pair(a, b)
    assert ab is not None and t.pair(a, b) is ab and t.module(ab) is t.module(ab)
    assert t.source(ab) == two(a.name, b.name)


def test_a_pair_search_is_remembered_for_the_same_weights_call_and_output(monkeypatch):
    """Many students with the same two bugs (or the same unexplained output) ask the same search: the second time
    nothing is composed or run again, and the words are the same (the bench's buggy submissions paid the search
    once per submission, about 40 ms each)."""
    source = two("mha_masked_fill_dropped", "mha_out_proj_unused")
    target, x, got = student(source, "MultiHeadAttention")
    monkeypatch.setattr(bugtable, "_PAIR_SEARCHES", {})
    first = diagnose.diagnose(sub=None, until=time.monotonic() + 30, target=target, got=got, inputs=(x,))
    assert first is not None and "both of these mistakes" in first.en
    composed: list[int] = []
    real_pair = bugs.TABLE.pair
    monkeypatch.setattr(bugs.TABLE, "pair", lambda a, b: (composed.append(1), real_pair(a, b))[1])
    again = diagnose.diagnose(sub=None, until=time.monotonic() + 30, target=target, got=got, inputs=(x,))
    assert again == first and not composed
    other = got.clone()
    other[0, 0, 0] += 1.0  # another output: searched anew, and nothing explains it
    assert diagnose.diagnose(sub=None, until=time.monotonic() + 30, target=target, got=other, inputs=(x,)) is None
    assert composed
