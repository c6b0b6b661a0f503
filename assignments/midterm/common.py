"""Check logic shared by the public and hidden checks of the midterm exam.

Public: no reference code and no hidden value; how to build and call the student's classes, and which variant
a check grades against (the student's own, passed by `grade batch --roster` as options["variant"]; the default
variant otherwise).
"""
from __future__ import annotations

import torch

from autograder.checks import CheckFailure, expect_shape, expect_tensor, fail
from autograder.messages import Message
from autograder.worker import LIBRARY, LIBRARY_ATTENTION

# The default variant: the same values as [exam.default] in assignment.toml and the skeleton's constants.
DEFAULT_VARIANT = {"num_heads": 2, "qkv_bias": False, "drop_rate": 0.1, "context_length": 8, "mask_window": 3,
                   "sdpa_shape": [2, 2, 5, 4], "norm_first": False, "ff_mult": 4}


def variant(options: dict) -> dict:
    """The variant this submission is graded against."""
    return {**DEFAULT_VARIANT, **(options.get("variant") or {})}


def constant(key: str) -> str:
    """The paper's name for a variant key: num_heads -> NUM_HEADS."""
    return key.upper()


def randn(seed: int, *shape: int) -> torch.Tensor:
    return torch.randn(*shape, generator=torch.Generator().manual_seed(seed))


# Q1 asks the student to write multi-head attention: one that hands its own projections to
# F.multi_head_attention_forward (identity weights inside) had PyTorch compute the heads, the scores, the softmax and
# the merge, and earned all of Q1 (red team, round 21; the paper says so since). Every call of a Q1 module is watched
# for torch's multi-head attention (proxy.Remote.own_work), as the transformer_block lab's attention is.
OWN_Q1 = Message(
    "`MultiHeadAttention` runs PyTorch's own multi-head attention (nn.MultiheadAttention, "
    "F.multi_head_attention_forward or its kernel): Q1 asks you to write it yourself (the split into heads, the "
    "scaled and masked scores, the softmax, the dropout and the merged heads), so what PyTorch computes for it "
    "earns nothing.",
    "`MultiHeadAttention`이(가) PyTorch의 멀티 헤드 어텐션(nn.MultiheadAttention, "
    "F.multi_head_attention_forward 또는 그 커널)을 그대로 실행합니다: 1번 문제는 헤드 나누기, 스케일과 마스크를 "
    "적용한 점수, softmax, dropout, 헤드 합치기를 직접 작성하는 문제이므로 PyTorch가 계산한 결과로는 점수를 받을 수 "
    "없습니다.")


def build_mha(sub, d_in: int, d_out: int, seed: int = 0):
    m = sub.new("MultiHeadAttention", d_in, d_out, seed=seed)
    m.own_work = (LIBRARY_ATTENTION, OWN_Q1)
    return m


def build_sdpa(sub):
    return sub.new("ScaledDotProductAttention", seed=0)


# Q3 asks the student to assemble the block: one whose forward runs torch's transformer layers earns nothing of its
# shape, DROP_RATE or value checks (red team, round 17). Every call of a block is watched for it (proxy.Remote.own_work),
# not only those of call_block: the DROP_RATE check's train-mode call and its call with other weights went unwatched,
# and a block that handed its own weights to nn.TransformerEncoderLayer in train mode only earned its 2 points (red
# team, round 26).
OWN_Q3 = Message(
    "`{what}` runs PyTorch's own nn.TransformerEncoderLayer (your class subclasses it, holds one or calls its forward): "
    "Q3 asks you to build the block yourself from self_attn, linear1, linear2, norm1 and norm2, so what PyTorch's "
    "layer computes for it earns nothing.",
    "`{what}`이(가) PyTorch의 nn.TransformerEncoderLayer를 그대로 실행합니다 (클래스가 그것을 상속하거나, 가지고 "
    "있거나, 그 forward를 호출함): 3번 문제는 self_attn, linear1, linear2, norm1, norm2로 블록을 직접 만드는 "
    "문제이므로 PyTorch의 레이어가 계산한 결과로는 점수를 받을 수 없습니다.")


def own_q3(what: str) -> Message:
    return Message(OWN_Q3.en.replace("{what}", what), OWN_Q3.ko.replace("{what}", what))


def build_block(sub, d_model: int, n_heads: int, seed: int = 0):
    m = sub.new("TransformerBlock", d_model, n_heads, seed=seed)
    m.own_work = (LIBRARY, own_q3(f"TransformerBlock({d_model}, {n_heads})"))
    return m


def call(m, *args, what: str, seed: int | None = None) -> torch.Tensor:
    return expect_tensor(m(*args, seed=seed), what)


def call_block(m, x: torch.Tensor, what: str, seed: int | None = None) -> torch.Tensor:
    """The block's output, where its forward runs none of torch's transformer layers' code: a block that subclasses
    nn.TransformerEncoderLayer (or holds one, or calls its forward) has PyTorch compute what Q3 asks the student to
    assemble, and earned every point of Q3 with a one-line __init__ (red team, round 17)."""
    res = m.run(x, seed=seed, record=[LIBRARY])
    if any(isinstance(r, dict) and r.get("fn") == LIBRARY for r in res.get("records") or []):
        raise CheckFailure(own_q3(what))
    return expect_tensor(res["out"], what)


def call_sdpa(m, Q, K, V, mask=None, what: str = "ScaledDotProductAttention()(Q, K, V)", seed: int | None = None):
    """The student's (out, attention), each checked to be a tensor."""
    from autograder.checks import fail
    got = m(Q, K, V, seed=seed) if mask is None else m(Q, K, V, mask=mask, seed=seed)
    if not isinstance(got, (tuple, list)) or len(got) != 2:
        fail(f"`{what}` should return a pair (out, attention); it returned {type(got).__name__}.",
             f"`{what}`는 (out, attention) 한 쌍을 반환해야 하는데 {type(got).__name__}을(를) 반환했습니다.")
    return expect_tensor(got[0], f"{what}[0]"), expect_tensor(got[1], f"{what}[1]")


def shapes_ok(t: torch.Tensor, shape: tuple[int, ...], what: str) -> torch.Tensor:
    return expect_shape(t, shape, what)


# ---------------------------------------------------------------------------------------------- evidence
# A shape or a construction is worth points only for a module that computes something: a do-nothing answer
# (zeros of the right shape, `return x`, an empty __init__) earned 10 of 100 points (red team, round 14). Each
# check's calls are made from one seed, so that torch.rand of the right shape is the same output for every input.
SHAPE_EARNS = ("so its shape earns nothing", "shape 점수를 받을 수 없습니다")


def _gap(a, b) -> float | None:
    """The largest finite difference of two tensors of one shape, relative to 1 + the largest finite value of `b`;
    None where they cannot be compared (another type or shape, not floating point, nothing finite)."""
    if type(a) is not torch.Tensor or type(b) is not torch.Tensor or a.shape != b.shape or not a.is_floating_point() \
            or not b.is_floating_point():
        return None
    a, b = a.detach().double(), b.detach().double()
    both = torch.isfinite(a) & torch.isfinite(b)
    if not bool(both.any()):
        return None
    return float((a - b)[both].abs().max()) / (1.0 + float(b[both].abs().max()))


def expect_from_input(run, inputs: tuple, what: str, seed: int) -> None:
    """Evidence that `run(*inputs)` (a tuple of output tensors) computes each example from its own input: with
    batch element 0 of every input changed, example 0's outputs change and the other examples' stay as they were
    (zeros, a constant times the input's sum, or torch.rand of the right shape show neither)."""
    g = torch.Generator().manual_seed(seed)
    other = []
    for t in inputs:
        t2 = t.clone()
        t2[0] = torch.randn(tuple(t.shape[1:]), generator=g) * 2 + 0.5
        other.append(t2)
    for a, b in zip(run(*inputs), run(*other)):
        own, rest = _gap(b[:1], a[:1]), _gap(b[1:], a[1:])
        if own is None or own <= 1e-6:
            fail(f"`{what}` gave the same output for two different inputs: it is not computed from its input, "
                 f"{SHAPE_EARNS[0]}.",
                 f"서로 다른 두 입력에 대해 `{what}`의 출력이 같습니다: 입력으로부터 계산되지 않으므로 {SHAPE_EARNS[1]}.")
        if rest is None or rest > 1e-5:
            fail(f"`{what}`: changing only the first example of the batch changed the outputs of the other examples: "
                 f"each example's output is not computed from its own input, {SHAPE_EARNS[0]}.",
                 f"`{what}`: 배치의 첫 번째 예만 바꿨는데 다른 예의 출력이 바뀌었습니다: 각 예의 출력이 자기 입력으로부터 "
                 f"계산되지 않으므로 {SHAPE_EARNS[1]}.")


def expect_from_keys(run, inputs: tuple, names: tuple[str, ...], what: str, seed: int) -> None:
    """Evidence that every output of `run(Q, K, V)` is computed from the keys: with only K drawn anew, each changes.
    Attention weighs the values by how each query meets the keys, so both of SDPA's outputs move with K; the input
    handed back (`return Q, Q @ Q.transpose(-2, -1)`, or V) changes with its own example and earned the SDPA shape
    points (red team, round 25)."""
    g = torch.Generator().manual_seed(seed)
    q, k, v = inputs
    other = (q, torch.randn(tuple(k.shape), generator=g) * 2 + 0.5, v)
    for name, a, b in zip(names, run(*inputs), run(*other)):
        gap = _gap(b, a)
        if gap is None or gap <= 1e-6:
            fail(f"`{what}`: {name} stayed the same when only K changed: it is not computed from the keys, "
                 f"{SHAPE_EARNS[0]}.",
                 f"`{what}`: K만 바꿨는데 {name}이(가) 그대로입니다: 키로부터 계산되지 않으므로 {SHAPE_EARNS[1]}.")


def expect_from_weights(m, run, what: str, seed: int) -> None:
    """Evidence that the module computes with its parameters: other values for them change its output."""
    y = run()
    params = {n: t for n, t in m.state().get("params", {}).items() if type(t) is torch.Tensor and t.is_floating_point()}
    if params:
        g = torch.Generator().manual_seed(seed)
        m.load_state({n: torch.randn(tuple(t.shape), generator=g).to(t.dtype) for n, t in params.items()})
        gap = _gap(run(), y)
        if gap is not None and gap > 1e-6:
            return
    fail(f"`{what}` gives the same output when its weights change: it does not compute with them, {SHAPE_EARNS[0]}.",
         f"가중치를 바꿔도 `{what}`의 출력이 같습니다: 가중치로 계산하지 않으므로 {SHAPE_EARNS[1]}.")


def expect_parameters(m, what: str) -> None:
    """A construction earns its point only where it builds the layers the paper names (an empty __init__ that only
    calls super().__init__() constructs too)."""
    if not m.describe().get("params"):
        fail(f"`{what}` constructs, but holds no parameters: build the layers your paper names in __init__.",
             f"`{what}`은(는) 만들어지지만 파라미터가 하나도 없습니다: 시험지가 정한 층을 __init__에서 만드세요.")
