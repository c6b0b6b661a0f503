"""Hidden checks for transformer_block.

The expected values come from torch.nn (TransformerEncoderLayer with batch_first=True, its MultiheadAttention,
its two linear layers; nn.Transformer) with the weights copied into the student's modules. PyTorch fuses the
query, key and value projections into one `in_proj_weight` of shape (3 d_model, d_model); the template keeps
them apart as W_q, W_k, W_v, so the transplant cuts that matrix (and its bias) in three.

A block that differs from PyTorch is still accepted when it is the right composition of the student's OWN
attention and feed-forward modules (so a bug in a part is charged to that part only); a part that cannot take
PyTorch's weights at all (another width, no bias) keeps its own in the block, which is then judged with it;
otherwise the checks look for the usual structural mistakes (a missing residual connection, LayerNorms in the
wrong place, the causal flag not passed on) and name them.

Dropout: each part and the block are run in train mode right after a seed and compared with the reference's
dropout drawn from the same random state (the attention drops its weights after the softmax, the feed-forward
network its ReLU output, the block each sub-layer's output before the residual addition), and in eval mode
with dropout=0.5 against the same module with dropout=0.0.
"""
from __future__ import annotations

import itertools
import math

import torch
import torch.nn as nn
import torch.nn.functional as F

from assignments.transformer_block.common import (CONFIG, as_template, EVIDENCE, differs, expect_working, attn_stand_in, attn_text,
                                                  block_text, build_attn, build_block, build_block_attn, blame_part,
                                                  build_block_ffn, build_ffn, build_transformer, call, feature_perm,
                                                  ffn_stand_in, ffn_text, permuted, randn, stand_in_attention,
                                                  stand_in_ffn, transformer_out, with_pytorch_weights, norm_first_name,
                                                  takes_causal, takes_norm_first)
from assignments.transformer_block.hidden.diagnose import explain  # also registers the grader's bug diagnosis
from autograder.checks import CheckFailure, check, expect_close, expect_shape, expect_tensor, fail
from autograder.messages import Message
from autograder.rng import manual_seed
from autograder.sourcecode import asserts_tuple

# (nn.Transformer's fast-path advice raised while the grader builds the references is silenced in common.py.)

ATOL = 1e-4


# ------------------------------------------------------------------------------- PyTorch's side

def ref_layer(d, h, d_ff, norm_first=False, seed=0) -> nn.TransformerEncoderLayer:
    """An encoder layer in eval mode whose biases and LayerNorm parameters are moved off their 0/1 defaults,
    so that a bias left out or norm1/norm2 swapped shows in the output."""
    manual_seed(seed)
    layer = nn.TransformerEncoderLayer(d, h, d_ff, dropout=0.0, batch_first=True, norm_first=norm_first)
    with torch.no_grad():
        for name, p in layer.named_parameters():
            if name.endswith("bias") or name.startswith("norm"):
                p.add_(0.2 * torch.randn_like(p))
    return layer.eval()


def attn_state(mha: nn.MultiheadAttention) -> dict[str, torch.Tensor]:
    d = mha.embed_dim
    W, b = mha.in_proj_weight.detach(), mha.in_proj_bias.detach()
    out = {}
    for i, role in enumerate("qkv"):  # in_proj_weight stacks the query, key and value projections
        out[f"W_{role}.weight"] = W[i * d:(i + 1) * d].clone()
        out[f"W_{role}.bias"] = b[i * d:(i + 1) * d].clone()
    out["W_o.weight"] = mha.out_proj.weight.detach().clone()
    out["W_o.bias"] = mha.out_proj.bias.detach().clone()
    return out


def ffn_state(layer) -> dict[str, torch.Tensor]:
    return {f"{lin}.{t}": getattr(getattr(layer, lin), t).detach().clone()
            for lin in ("linear1", "linear2") for t in ("weight", "bias")}


def block_state(layer) -> dict[str, torch.Tensor]:
    out = {f"attn.{k}": v for k, v in attn_state(layer.self_attn).items()}
    out.update({f"ff.{k}": v for k, v in ffn_state(layer).items()})
    out.update({f"{n}.{t}": getattr(getattr(layer, n), t).detach().clone()
                for n in ("norm1", "norm2") for t in ("weight", "bias")})
    return out


def attn_grads(mha: nn.MultiheadAttention) -> dict[str, torch.Tensor]:
    d = mha.embed_dim
    gW, gb = mha.in_proj_weight.grad, mha.in_proj_bias.grad
    out = {}
    for i, role in enumerate("qkv"):
        out[f"W_{role}.weight"], out[f"W_{role}.bias"] = gW[i * d:(i + 1) * d], gb[i * d:(i + 1) * d]
    out["W_o.weight"], out["W_o.bias"] = mha.out_proj.weight.grad, mha.out_proj.bias.grad
    return out


def causal_mask(n: int) -> torch.Tensor:
    return nn.Transformer.generate_square_subsequent_mask(n)


def ref_attn(layer, x, causal=False):
    with torch.no_grad():
        return layer.self_attn(x, x, x, attn_mask=causal_mask(x.shape[1]) if causal else None,
                               need_weights=False)[0]


def ref_ffn(layer, x):
    with torch.no_grad():
        return layer.linear2(F.relu(layer.linear1(x)))


def ref_block(layer, x, causal=False):
    with torch.no_grad():
        return layer(x, src_mask=causal_mask(x.shape[1]) if causal else None)


def attn_by_hand(layer, x, causal=False, drop=None):
    """The layer's self-attention computed step by step (what ref_attn gives), `drop` applied to the attention
    weights right after the softmax: with F.dropout after manual_seed, the draws of the reference's self.dropout."""
    mha = layer.self_attn
    d, h = mha.embed_dim, mha.num_heads
    b, n, _ = x.shape
    W, bias = mha.in_proj_weight.detach(), mha.in_proj_bias.detach()
    with torch.no_grad():
        q, k, v = (F.linear(x, W[i * d:(i + 1) * d], bias[i * d:(i + 1) * d]).view(b, n, h, d // h).transpose(1, 2)
                   for i in range(3))
        scores = q @ k.transpose(-2, -1) / math.sqrt(d // h)
        if causal:
            scores = scores.masked_fill(torch.triu(torch.ones(n, n, dtype=torch.bool), diagonal=1), float("-inf"))
        weights = torch.softmax(scores, dim=-1)
        if drop is not None:
            weights = drop(weights)
        return mha.out_proj((weights @ v).transpose(1, 2).reshape(b, n, d))


def dropping(p):
    return lambda t: F.dropout(t, p, training=True)


def dropping_per_head(p):
    """The same dropout on the weights of one head after another (a forward that loops over its heads draws each
    head's mask in turn: variants round, a correct per-head loop could never pass)."""
    return lambda t: torch.stack([F.dropout(t[:, j], p, training=True) for j in range(t.shape[1])], dim=1)


LAYOUTS = tuple(perm for perm in itertools.permutations(range(4)) if perm != (0, 1, 2, 3))


def dropping_laid(p, perm):
    """The same dropout on the (b, heads, n, n) weights kept in memory with their axes in the order `perm`, as a
    forward that computes them so applies it: einsum "bihj" keeps them as (b, n, heads, n), and each random draw
    lands on the element at its place in that layout (variants round 4: such a correct layer lost the point)."""
    back = [perm.index(i) for i in range(len(perm))]
    return lambda t: F.dropout(t.permute(perm).contiguous(), p, training=True).permute(back)


def refused(report) -> list[str]:
    """The names of a load_state report that did not go in: missing from the module, or of another shape."""
    return sorted(set(report["missing"]) | {n for n, _s, _r in report["mismatched"]})


def load(m, state, cls, excused=None):
    """Copy `state` into the student's module (whatever fits goes in); fail naming what is missing or misshaped,
    unless `excused(names)` says that every name that did not go in is charged elsewhere."""
    report = m.load_state(state)
    bad = refused(report)
    if not bad or (excused is not None and excused(bad)):
        return
    missing = sorted(set(report["missing"]))
    mismatched = [(n, tuple(s), tuple(r)) for n, s, r in report["mismatched"]]
    have = ", ".join(f"{n} {tuple(s)}" for n, s, _ in m.describe()["params"])
    en = "; ".join(([f"no parameter named {', '.join(missing)}"] if missing else [])
                   + [f"{n} is {s}, PyTorch's is {r}" for n, s, r in mismatched])
    ko = "; ".join(([f"이름이 {', '.join(missing)}인 파라미터가 없음"] if missing else [])
                   + [f"{n}: 현재 {s}, PyTorch는 {r}" for n, s, r in mismatched])
    fail(f"PyTorch's weights could not be copied into your `{cls}`: {en}. Keep the template's names "
         f"and shapes (yours: {have or 'no parameters'}).",
         f"PyTorch의 가중치를 `{cls}`에 복사할 수 없습니다: {ko}. 템플릿의 이름과 shape을 지키세요 "
         f"(현재: {have or '파라미터 없음'}).")


PART_PREFIXES = ("attn.", "ff.")


def build_part(sub, prefix, d, h, d_ff):
    """The part a block holds, built alone (the attention: the grader's stand-in where the block is built over it)."""
    return build_block_attn(sub, d, h, seed=1) if prefix == "attn." else build_block_ffn(sub, d, d_ff, seed=1)


def parts_refuse(sub, state, d, h, d_ff):
    """For load(excused=...) on a block: whether every name of `state` the block did not take belongs to its
    attention or feed-forward module AND the student's own module of that class, built alone, refuses the same
    weights (other names, no bias, another width): that bug lives in the part and is charged in the part's
    question; the block is then judged with the weights the student's parts have (judge_block)."""
    def excused(bad):
        if not all(n.startswith(PART_PREFIXES) for n in bad):
            return False
        for prefix in PART_PREFIXES:
            mine = [n for n in bad if n.startswith(prefix)]
            if not mine:
                continue
            try:
                alone = refused(build_part(sub, prefix, d, h, d_ff).load_state(
                    {n[len(prefix):]: t for n, t in state.items() if n.startswith(prefix)}))
            except CheckFailure:
                return False
            if not {n[len(prefix):] for n in mine} <= set(alone):
                return False
        return True
    return excused


def load_block(sub, m, state, d, h, d_ff):
    """Copy a block's weights in; what the student's own parts cannot take stays as built (see parts_refuse)."""
    load(m, state, "TransformerBlock", excused=parts_refuse(sub, state, d, h, d_ff))


def close(a, b, atol=ATOL) -> bool:
    if type(a) is not torch.Tensor or tuple(a.shape) != tuple(b.shape):
        return False
    a, b = a.to(torch.float64), b.detach().to(torch.float64)
    same = (a - b).abs() <= atol + ATOL * b.abs()
    return bool((same | (torch.isnan(a) & torch.isnan(b))).all())


def eval_pair(make, state: dict | None, d: int, heads: int, x: torch.Tensor, what: str, seed: int | None = None):
    """The outputs in eval mode of the module built with dropout=0.5 and of the one built with dropout=0.0, both
    holding the weights `state` (make(p, state) builds one and loads `state` into it; None: the weights the
    dropout=0.0 module was built with). The first is computed, where it can be, with its input's features and its
    weights in another order (feature_perm) and put back in order: an output kept from an earlier call, keyed by the
    weights and the input, cannot then stand in for the dropped one (red team s17: an attention that dropped in eval
    mode and handed back each input's first output passed this check). Where the permuted module is not shown to be
    the same function (the dropout=0.0 module with the permuted weights, on a third input: another layout of heads),
    the plain pair, the first computed first. Two modules are built, as before."""
    perm = feature_perm(d, heads)
    back = torch.argsort(perm)
    plain = make(0.0, state)
    if state is None:
        state = {n: v for n, v in (plain.state().get("params") or {}).items() if type(v) is torch.Tensor}
    moved = permuted(state, d, perm)
    x3 = randn(int(x.abs().sum() * 1000) % 9973, *x.shape)
    e = call(plain, x3, what, seed=seed)
    plain.load_state(moved)
    try:
        twin = call(plain, x3[..., perm], what, seed=seed)
    finally:
        plain.load_state(state)
    if type(twin) is torch.Tensor and tuple(twin.shape) == tuple(e.shape) and close(twin[..., back], e):
        y0 = call(plain, x, what, seed=seed)
        y5 = call(make(0.5, moved), x[..., perm], what, seed=seed)
        return (y5[..., back] if type(y5) is torch.Tensor and tuple(y5.shape) == tuple(x.shape) else y5), y0
    return call(make(0.5, state), x, what, seed=seed), call(plain, x, what, seed=seed)


# ------------------------------------------------------------------------------- MultiHeadSelfAttention

ATTN_HINT = Message(
    "Per head: softmax(q k^T / sqrt(d_head)) v with d_head = d_model // n_heads; split the heads with "
    ".view(b, n, n_heads, d_head).transpose(1, 2), put them side by side again after the weighted sum, and "
    "finish with W_o. With causal=True the scores above the diagonal are -inf.",
    "헤드마다 softmax(q k^T / sqrt(d_head)) v이고 d_head = d_model // n_heads입니다. "
    ".view(b, n, n_heads, d_head).transpose(1, 2)로 헤드를 나누고, 가중합 뒤에 다시 나란히 붙인 다음 W_o를 "
    "적용하세요. causal=True이면 대각선 위의 점수는 -inf입니다.")

ATTN_CASES = [(16, 4, 2, 5, 601), (12, 3, 3, 7, 602)]  # d_model, n_heads, batch, tokens, seed


def attn_against_pytorch(sub, d, h, b, n, seed, causal):
    layer = ref_layer(d, h, 2 * d, seed=seed)
    m = build_attn(sub, d, h, seed=seed)
    load(m, attn_state(layer.self_attn), f"MultiHeadSelfAttention({d}, {h})")
    x = randn(seed + 1, b, n, d)
    what = attn_text(d, h, causal=causal)
    got = call(m, x, what, causal=causal)
    if causal and tuple(got.shape) == tuple(x.shape) and bool(torch.isnan(got).any()):
        rows = sorted({int(i) for i in torch.isnan(got).any(dim=-1).nonzero()[:, 1]})
        if rows and rows != [0] and rows[-1] < x.shape[1] - 1:
            # Row 0 sees only itself, the last row sees every token: NaN in the rows between but not in the last one
            # is a softmax over another axis (dim=1, the heads), not a mask that hides the diagonal (learners s9).
            fail(f"`{what}` returns NaN for token(s) {rows}, which have tokens they may see, but not for the last "
                 "token, which is not masked at all: your softmax turns every -inf of the mask into NaN, so it "
                 "normalises over another axis than the keys (dim=1 is the heads). Normalise each query's row of "
                 "scores over the keys: torch.softmax(scores, dim=-1).",
                 f"`{what}`가 볼 수 있는 토큰이 있는 토큰 {rows}에 대해 NaN을 반환하고, 마스크가 전혀 없는 마지막 "
                 "토큰에는 반환하지 않습니다: softmax가 마스크의 -inf마다 NaN을 만드므로 키 축이 아닌 다른 축(dim=1은 "
                 "헤드 축)으로 정규화하고 있습니다. 각 쿼리의 점수 행을 키 축으로 정규화하세요: "
                 "torch.softmax(scores, dim=-1).")
        fail(f"`{what}` returns NaN for token(s) {rows}: the softmax got a row of scores that are all -inf. "
             "The causal mask must hide only the future (above the diagonal, torch.triu(..., diagonal=1)); "
             "every token may look at itself.",
             f"`{what}`가 토큰 {rows}에 대해 NaN을 반환합니다: softmax에 모두 -inf인 점수 행이 들어갔습니다. "
             "코잘 마스크는 미래(대각선 위, torch.triu(..., diagonal=1))만 가려야 하며, 모든 토큰은 자기 자신을 "
             "볼 수 있어야 합니다.")
    expect_close(got, ref_attn(layer, x, causal), with_pytorch_weights(what), atol=ATOL, hint=ATTN_HINT,
                 explain=explain(sub, m, x, causal=causal))


@check(question="MultiHeadSelfAttention", points=5)
def test_attn_matches_pytorch(sub):
    """MultiHeadSelfAttention equals nn.MultiheadAttention (in_proj cut into W_q, W_k, W_v)"""
    for d, h, b, n, seed in ATTN_CASES:
        attn_against_pytorch(sub, d, h, b, n, seed, causal=False)


@check(question="MultiHeadSelfAttention", points=4)
def test_attn_causal_matches_pytorch(sub):
    """MultiHeadSelfAttention(x, causal=True) equals nn.MultiheadAttention with the causal mask"""
    for d, h, b, n, seed in ATTN_CASES:
        attn_against_pytorch(sub, d, h, b, n, seed, causal=True)


@check(question="MultiHeadSelfAttention", points=2)  # 3 until s9; 1 went to test_attn_rejects_indivisible
def test_attn_head_counts(sub):
    """MultiHeadSelfAttention with 1 head and with 8 heads"""
    for d, h, seed in ((8, 1, 611), (16, 8, 612)):
        attn_against_pytorch(sub, d, h, 2, 4, seed, causal=False)


@check(question="MultiHeadSelfAttention", points=1)
def test_attn_rejects_indivisible(sub):
    """MultiHeadSelfAttention(10, 3) raises ValueError: 10 features cannot be cut into 3 heads"""
    expect_working(build_attn(sub, 12, 3, seed=631), 12, 631, attn_text(12, 3), causal=False)  # evidence first
    try:
        build_attn(sub, 10, 3, seed=632)
    except CheckFailure as e:
        # the worker reports the exception's classes; a plain `assert d_model % n_heads == 0` rejects them too
        if any(f"builtins.{t}" in getattr(e, "raised", ()) for t in ("ValueError", "AssertionError")):
            return
        fail(f"`MultiHeadSelfAttention(10, 3)` should raise ValueError (10 is not a multiple of 3), but: "
             f"{e.message.en}",
             f"`MultiHeadSelfAttention(10, 3)`는 ValueError를 발생시켜야 합니다 (10은 3의 배수가 아님). "
             f"실제: {e.message.ko}")
    if asserts_tuple(sub, "MultiHeadSelfAttention"):
        fail("`MultiHeadSelfAttention(10, 3)` was accepted: `assert (d_model % n_heads == 0, \"...\")` in __init__ "
             "asserts a (condition, message) tuple, which is always true, so it never fails. Raise ValueError when "
             "d_model % n_heads != 0: if d_model % n_heads != 0: raise ValueError(\"...\").",
             "`MultiHeadSelfAttention(10, 3)`가 만들어졌습니다: __init__의 `assert (d_model % n_heads == 0, \"...\")`는 "
             "(조건, 메시지) 튜플을 검사하는데, 튜플은 항상 참이라서 절대 실패하지 않습니다. d_model % n_heads != 0이면 "
             "ValueError를 발생시키세요: if d_model % n_heads != 0: raise ValueError(\"...\").")
    fail("`MultiHeadSelfAttention(10, 3)` was accepted, but 10 features cannot be cut into 3 equal heads. Raise "
         "ValueError in __init__ when d_model % n_heads != 0.",
         "`MultiHeadSelfAttention(10, 3)`가 만들어졌지만 10개의 특징은 헤드 3개로 똑같이 나눌 수 없습니다. "
         "__init__에서 d_model % n_heads != 0이면 ValueError를 발생시키세요.")


@check(question="MultiHeadSelfAttention", points=2)
def test_attn_gradients(sub):
    """Gradients reach W_q, W_k, W_v and W_o and equal PyTorch's"""
    d, h, seed = 12, 3, 621
    layer = ref_layer(d, h, 2 * d, seed=seed).train()
    m = build_attn(sub, d, h, seed=seed)
    load(m, attn_state(layer.self_attn), f"MultiHeadSelfAttention({d}, {h})")
    x = randn(seed + 1, 2, 5, d)
    out = layer.self_attn(x, x, x, need_weights=False)[0]
    g = randn(seed + 2, *out.shape)
    (out * g).sum().backward()  # = out.backward(g) exactly, without importing sympy (see attention)
    res = m.run(x, grad_output=g)
    expect_tensor(res["out"], attn_text(d, h))
    grads = res.get("grads")
    grads = None if grads is None else as_template(m, grads)  # (layers named otherwise: part_renames)
    if grads is None:
        fail("The output of `MultiHeadSelfAttention` is not connected to its weights (no grad_fn): do not use "
             ".detach(), torch.no_grad() or .data in forward.",
             "`MultiHeadSelfAttention`의 출력이 가중치와 연결되어 있지 않습니다 (grad_fn 없음). forward에서 "
             ".detach(), torch.no_grad(), .data를 쓰지 마세요.")
    for name, want in attn_grads(layer.self_attn).items():
        got = grads.get(name)
        if type(got) is not torch.Tensor:
            fail(f"No gradient reached `MultiHeadSelfAttention.{name}`: it is not used in forward.",
                 f"`MultiHeadSelfAttention.{name}`에 그래디언트가 전달되지 않았습니다: forward에서 쓰이지 않습니다.")
        expect_close(got, want, f"gradient of MultiHeadSelfAttention.{name}", atol=ATOL, rtol=1e-3)


ATTN_DROPOUT_HINT = Message(
    "Apply self.dropout (an nn.Dropout) once, to the attention weights right after the softmax: "
    "weights = self.dropout(torch.softmax(scores, dim=-1)); not to the scores, the values or the output.",
    "self.dropout(nn.Dropout)은 softmax 직후의 어텐션 가중치에 한 번만 적용하세요: "
    "weights = self.dropout(torch.softmax(scores, dim=-1)). 점수, 값, 출력에 적용하면 안 됩니다.")


def attn_train(sub, d, h, seed, causal):
    """MultiHeadSelfAttention(d, h, 0.5) with PyTorch's weights in train mode, seeded, against the reference's
    dropout on the attention weights drawn from the same random state; a miss names where the dropout went."""
    layer = ref_layer(d, h, 2 * d, seed=seed)
    m = build_attn(sub, d, h, 0.5, seed=seed)
    load(m, attn_state(layer.self_attn), f"MultiHeadSelfAttention({d}, {h}, 0.5)")
    x = randn(seed + 1, 2, 5, d)
    what = attn_text(d, h, 0.5, causal)
    plain = build_attn(sub, d, h, 0.0, seed=seed)  # dropout=0.0: what any right layer gives with nothing dropped
    load(plain, attn_state(layer.self_attn), f"MultiHeadSelfAttention({d}, {h}, 0.0)")
    evaluated = call(plain, x, attn_text(d, h, 0.0, causal), causal=causal, seed=seed + 2)
    if not close(evaluated, ref_attn(layer, x, causal)):
        fail("The dropout cannot be judged: MultiHeadSelfAttention already differs from PyTorch's in eval mode "
             "(see the checks that compare with nn.MultiheadAttention).",
             "dropout을 평가할 수 없습니다: MultiHeadSelfAttention이 eval 모드에서 이미 PyTorch와 다릅니다 "
             "(nn.MultiheadAttention과 비교하는 검사를 보세요).")
    got = call(m, x, what, causal=causal, mode="train", seed=seed + 2)
    manual_seed(seed + 2)
    want = attn_by_hand(layer, x, causal, dropping(0.5))
    if close(got, want):
        return
    manual_seed(seed + 2)
    if close(got, attn_by_hand(layer, x, causal, dropping_per_head(0.5))):
        return
    for perm in LAYOUTS:  # (the weights kept with their axes in another order)
        manual_seed(seed + 2)
        if close(got, attn_by_hand(layer, x, causal, dropping_laid(0.5, perm))):
            return
    if close(got, evaluated):
        fail(f"`{what}` in train mode gives exactly what the layer gives with nothing dropped: the dropout is "
             "missing. " + ATTN_DROPOUT_HINT.en,
             f"train 모드의 `{what}`가 아무것도 버리지 않은 출력과 똑같습니다: dropout이 빠져 있습니다. "
             + ATTN_DROPOUT_HINT.ko)
    manual_seed(seed + 2)
    with torch.no_grad():
        on_output = F.dropout(attn_by_hand(layer, x, causal), 0.5, training=True)
    if close(got, on_output):
        fail(f"`{what}` in train mode drops entries of its output: the dropout is applied to the output (after "
             "W_o) instead of to the attention weights. " + ATTN_DROPOUT_HINT.en,
             f"train 모드의 `{what}`가 출력의 원소를 버립니다: dropout이 어텐션 가중치가 아니라 출력(W_o 뒤)에 "
             "적용되었습니다. " + ATTN_DROPOUT_HINT.ko)
    expect_close(got, want, what + " in train mode", hint=ATTN_DROPOUT_HINT,
                 explain=explain(sub, m, x, mode="train", seed=seed + 2, causal=causal))


ATTN_DROPOUT_CASES = ((12, 3, 631, False), (8, 2, 632, True))  # d_model, n_heads, seed, causal


@check(question="MultiHeadSelfAttention", points=2)
def test_attn_dropout_placement(sub):
    """MultiHeadSelfAttention in train mode: dropout acts on the attention weights after the softmax"""
    for d, h, seed, causal in ATTN_DROPOUT_CASES:
        if causal and not takes_causal(sub, "MultiHeadSelfAttention"):
            continue  # (a forward without causal: the causal checks charge that, not the dropout's)
        attn_train(sub, d, h, seed, causal)


EVAL = ("ignoring dropout in eval mode earns nothing", "eval 모드에서 dropout을 끄는 검사 점수를 받을 수 없습니다")


def attn_eval(sub, d=12, h=3, seed=641):
    """MultiHeadSelfAttention(d, h, 0.5) in eval mode against the same layer built with dropout=0.0."""
    layer = ref_layer(d, h, 2 * d, seed=seed)
    x = randn(seed + 1, 2, 5, d)

    def make(p, state):
        m = build_attn(sub, d, h, p, seed=seed)
        load(m, state, f"MultiHeadSelfAttention({d}, {h}, {p})")
        return m
    outs = eval_pair(make, attn_state(layer.self_attn), d, h, x, attn_text(d, h, 0.5), seed=seed + 2)
    # Evidence first: a layer that ignores its input or its weights, or maps each token alone, drops nothing in
    # eval mode trivially (a per-token W_o(tanh(W_q x) * W_k x + W_v x) earned this).
    expect_working(build_attn(sub, d, h, 0.0, seed=seed), d, seed + 3, attn_text(d, h), causal=False, earns=EVAL)
    if not close(outs[0], outs[1]):
        what = attn_text(d, h, 0.5)
        fail(f"`{what}` in eval mode differs from the same layer built with dropout=0.0: the dropout is still "
             "active in eval mode. Use the nn.Dropout module self.dropout, which does nothing after model.eval() "
             "(F.dropout(...) drops unless given training=self.training).",
             f"eval 모드의 `{what}`가 dropout=0.0으로 만든 같은 레이어와 다릅니다: eval 모드에서도 dropout이 여전히 "
             "작동합니다. model.eval() 뒤에는 아무 일도 하지 않는 nn.Dropout 모듈 self.dropout을 쓰세요 "
             "(F.dropout(...)은 training=self.training을 주지 않으면 항상 버립니다).")


@check(question="MultiHeadSelfAttention", points=1)
def test_attn_eval_ignores_dropout(sub):
    """MultiHeadSelfAttention(..., dropout=0.5) in eval mode gives what MultiHeadSelfAttention(..., dropout=0.0) gives"""
    attn_eval(sub)


# ------------------------------------------------------------------------------- FeedForward

FFN_HINT = Message("FeedForward(x) = linear2(dropout(relu(linear1(x)))): ReLU between the two linear layers.",
                   "FeedForward(x) = linear2(dropout(relu(linear1(x))))입니다: 두 선형 레이어 사이에 ReLU.")


@check(question="FeedForward", points=6)
def test_ffn_matches_pytorch(sub):
    """FeedForward equals the encoder layer's linear1 -> ReLU -> linear2"""
    for d, d_ff, seed in ((16, 32, 701), (12, 20, 702)):
        layer = ref_layer(d, 4 if d == 16 else 3, d_ff, seed=seed)
        m = build_ffn(sub, d, d_ff, seed=seed)
        load(m, ffn_state(layer), f"FeedForward({d}, {d_ff})")
        x = randn(seed + 1, 2, 5, d)
        expect_close(call(m, x, ffn_text(d, d_ff)), ref_ffn(layer, x), with_pytorch_weights(ffn_text(d, d_ff)),
                     hint=FFN_HINT, explain=explain(sub, m, x))


@check(question="FeedForward", points=1)
def test_ffn_eval_ignores_dropout(sub):
    """FeedForward(..., dropout=0.5) in eval mode gives what FeedForward(..., dropout=0.0) gives"""
    ffn_eval(sub)


def ffn_eval(sub):
    # Evidence first: a feed-forward network that returns its input (or ignores its weights) drops nothing in eval
    # mode trivially.
    expect_working(build_ffn(sub, 8, 16, 0.0, seed=711), 8, 713, ffn_text(8, 16), causal=None, mixes=False,
                   earns=EVAL)
    layer = ref_layer(8, 2, 16, seed=711)
    x = randn(712, 2, 5, 8)

    def make(p, state):
        m = build_ffn(sub, 8, 16, p, seed=711)
        load(m, state, f"FeedForward(8, 16, {p})")
        return m
    outs = eval_pair(make, ffn_state(layer), 8, 1, x, ffn_text(8, 16, 0.5))
    expect_close(outs[0], outs[1], ffn_text(8, 16, 0.5) + " in eval mode (compared with dropout=0.0)",
                 hint=Message("Use the nn.Dropout module (self.dropout), which does nothing after model.eval().",
                              "model.eval() 뒤에는 아무 일도 하지 않는 nn.Dropout 모듈(self.dropout)을 쓰세요."))


@check(question="FeedForward", points=2)
def test_ffn_dropout_placement(sub):
    """FeedForward in train mode: dropout sits between the ReLU and linear2, as in PyTorch's encoder layer"""
    ffn_train(sub)


def ffn_train(sub):
    layer = ref_layer(8, 2, 16, seed=721)
    m = build_ffn(sub, 8, 16, 0.5, seed=721)
    load(m, ffn_state(layer), "FeedForward(8, 16, 0.5)")
    x = randn(722, 2, 5, 8)
    if not close(call(m, x, ffn_text(8, 16, 0.5)), ref_ffn(layer, x)):
        fail("The dropout placement cannot be judged: FeedForward already differs from PyTorch's in eval mode "
             "(see the check that compares with the encoder layer).",
             "dropout 위치를 평가할 수 없습니다: FeedForward가 eval 모드에서 이미 PyTorch와 다릅니다 "
             "(인코더 레이어와 비교하는 검사를 보세요).")
    got = call(m, x, ffn_text(8, 16, 0.5), mode="train", seed=723)
    manual_seed(723)
    with torch.no_grad():
        want = layer.linear2(F.dropout(F.relu(layer.linear1(x)), 0.5, training=True))
    expect_close(got, want, ffn_text(8, 16, 0.5) + " in train mode", hint=Message(
        "Apply self.dropout once, to the ReLU output, before linear2: linear2(dropout(relu(linear1(x)))).",
        "self.dropout은 ReLU 출력에, linear2 전에 한 번만 적용하세요: linear2(dropout(relu(linear1(x))))."),
        explain=explain(sub, m, x, mode="train", seed=723))


@check(question="FeedForward", points=2)
def test_ffn_gradients(sub):
    """Gradients reach linear1 and linear2 and equal PyTorch's"""
    layer = ref_layer(8, 2, 16, seed=731)
    m = build_ffn(sub, 8, 16, seed=731)
    load(m, ffn_state(layer), "FeedForward(8, 16)")
    x = randn(732, 2, 5, 8)
    out = layer.linear2(F.relu(layer.linear1(x)))
    g = randn(733, *out.shape)
    (out * g).sum().backward()  # = out.backward(g) exactly, without importing sympy (see attention)
    grads = as_template(m, m.run(x, grad_output=g).get("grads") or {})  # (layers named otherwise: part_renames)
    for name in ("linear1.weight", "linear1.bias", "linear2.weight", "linear2.bias"):
        lin, t = name.split(".")
        got = grads.get(name)
        if type(got) is not torch.Tensor:
            fail(f"No gradient reached `FeedForward.{name}`: keep the output connected to both layers.",
                 f"`FeedForward.{name}`에 그래디언트가 전달되지 않았습니다: 출력이 두 레이어와 연결되어야 합니다.")
        expect_close(got, getattr(getattr(layer, lin), t).grad, f"gradient of FeedForward.{name}", rtol=1e-3)


# ------------------------------------------------------------------------------- TransformerBlock

def compose(x, A, Fn, ln1, ln2, norm_first, causal, variant=""):
    """The block built from attention A, feed-forward Fn and the two LayerNorms, or one of its usual mistakes."""
    attend = (lambda z: A(z, False)) if variant == "causal_ignored" else (lambda z: A(z, causal))
    n1, n2 = (ln2, ln1) if variant == "norms_swapped" else (ln1, ln2)
    pre = (not norm_first) if variant == "other_order" else norm_first
    keep_a = 0.0 if variant in ("no_res_attn", "no_res") else 1.0
    keep_f = 0.0 if variant in ("no_res_ff", "no_res") else 1.0
    if variant == "norm_on_branch":
        x1 = x + n1(attend(x))
        return x1 + n2(Fn(x1))
    if variant == "attn_pre_ff_post":
        x1 = x + attend(n1(x))
        return n2(x1 + Fn(x1))
    if variant == "attn_post_ff_pre":
        x1 = n1(x + attend(x))
        return x1 + Fn(n2(x1))
    if pre:
        x1 = keep_a * x + attend(n1(x))
        return keep_f * x1 + Fn(n2(x1))
    x1 = n1(keep_a * x + attend(x))
    y = keep_f * x1 + Fn(x1)
    return y if variant == "no_final_norm" else n2(y)


def variant_message(variant, norm_first):
    order = ("pre-norm: x = x + attn(norm1(x)); x = x + ff(norm2(x))" if norm_first else
             "post-norm: x = norm1(x + attn(x)); x = norm2(x + ff(x))")
    texts = {
        "no_res_attn": ("the residual connection around the self-attention is missing: add the sub-layer's input "
                        "to its output", "셀프 어텐션을 감싸는 잔차 연결이 없습니다: 서브레이어의 입력을 출력에 더하세요"),
        "no_res_ff": ("the residual connection around the feed-forward network is missing: add its input back",
                      "피드포워드 네트워크를 감싸는 잔차 연결이 없습니다: 입력을 다시 더하세요"),
        "no_res": ("both residual connections (around the attention and around the feed-forward network) are "
                   "missing", "두 잔차 연결(어텐션과 피드포워드 둘레)이 모두 없습니다"),
        "other_order": (("the LayerNorms sit after the residual additions (post-norm) although norm_first=True"
                         if norm_first else
                         "the LayerNorms sit before the sub-layers (pre-norm) although norm_first=False"),
                        ("norm_first=True인데 LayerNorm이 잔차 덧셈 뒤에 있습니다 (post-norm)" if norm_first else
                         "norm_first=False인데 LayerNorm이 서브레이어 앞에 있습니다 (pre-norm)")),
        "no_final_norm": ("the second LayerNorm is missing: the post-norm block ends with norm2(x + ff(x))",
                          "두 번째 LayerNorm이 없습니다: post-norm 블록은 norm2(x + ff(x))로 끝납니다"),
        "norm_on_branch": ("the LayerNorm is applied to the sub-layer's output (x + norm(attn(x))) instead of "
                           + ("its input" if norm_first else "the residual sum"),
                           "LayerNorm이 " + ("서브레이어의 입력" if norm_first else "잔차 합") +
                           " 대신 서브레이어의 출력에 적용되었습니다 (x + norm(attn(x)))"),
        "norms_swapped": ("norm1 and norm2 are swapped: norm1 belongs to the attention sub-layer, norm2 to the "
                          "feed-forward one", "norm1과 norm2가 바뀌었습니다: norm1은 어텐션, norm2는 피드포워드 서브레이어 것"),
        "attn_pre_ff_post": ("the attention sub-layer is pre-norm but the feed-forward one is post-norm "
                             "(norm2 after the addition)", "어텐션 서브레이어는 pre-norm인데 피드포워드는 post-norm입니다 "
                             "(덧셈 뒤에 norm2)"),
        "attn_post_ff_pre": ("the attention sub-layer is post-norm but the feed-forward one is pre-norm",
                             "어텐션 서브레이어는 post-norm인데 피드포워드는 pre-norm입니다"),
        "causal_ignored": ("with causal=True the block computes the non-causal output: pass the flag on, "
                           "self.attn(..., causal=causal)", "causal=True인데 블록이 코잘(causal)이 아닌 출력을 계산합니다: "
                           "self.attn(..., causal=causal)로 플래그를 넘기세요"),
    }
    en, ko = texts[variant]
    return Message(f"Your block matches a transformer block in which {en}. Expected {order}.",
                   f"여러분의 블록은 다음과 같은 블록과 일치합니다: {ko}. 기대하는 구조는 {order}입니다.")


VARIANTS = ("no_res_attn", "no_res_ff", "no_res", "other_order", "no_final_norm", "norm_on_branch", "norms_swapped",
            "attn_pre_ff_post", "attn_post_ff_pre", "causal_ignored")

BLOCK_CASES = [(16, 4, 32, 801), (12, 3, 20, 802)]  # d_model, n_heads, d_ff, seed


def ref_parts(layer, stand_in=False, stand_in_ff=False):
    """PyTorch's attention and feed-forward as functions; stand_in, stand_in_ff: the grader's stand-in attention,
    feed-forward network in place of PyTorch's (the block holds them: attn_stand_in, ffn_stand_in)."""
    attend = (lambda z, c: stand_in_attention(attn_state(layer.self_attn), z, c)) if stand_in else \
        (lambda z, c: ref_attn(layer, z, c))
    feed = (lambda z: stand_in_ffn(ffn_state(layer), z)) if stand_in_ff else (lambda z: ref_ffn(layer, z))
    return attend, feed


def student_parts(sub, layer, d, h, d_ff, block=None):
    """The student's own attention and feed-forward modules as functions, holding the weights the student's block
    `block` holds (PyTorch's where they fitted, the part's own where the part refused them: another width, no
    bias), or PyTorch's without a block (or for a part the block does not have). None when a part cannot hold
    the block's: the block builds its parts otherwise than the student's classes are built alone."""
    own = as_template(block, block.state()["params"]) if block is not None else {}
    fns = []
    for prefix, pytorch in (("attn.", attn_state(layer.self_attn)), ("ff.", ffn_state(layer))):
        held = {n[len(prefix):]: t for n, t in own.items() if n.startswith(prefix)}
        try:
            part = build_part(sub, prefix, d, h, d_ff)
            if held and refused(part.load_state(held)):
                return None
            if not held:  # what fits (a part that refuses PyTorch's weights is charged in its own question)
                part.load_state(pytorch)
        except CheckFailure:
            return None
        fns.append(part)
    a, f = fns
    return (lambda z, c: call(a, z, "attn", causal=c)), (lambda z: call(f, z, "ffn"))


def norms(layer):
    def ln(which):
        mod = getattr(layer, which)
        return lambda z: F.layer_norm(z, mod.normalized_shape, mod.weight.detach(), mod.bias.detach(), mod.eps)
    return ln("norm1"), ln("norm2")


def safe_compose(x, parts, layer, norm_first, causal, variant=""):
    try:
        with torch.no_grad():
            return compose(x, *parts, *norms(layer), norm_first, causal, variant)
    except (CheckFailure, RuntimeError):
        return None


def judge_block(sub, d, h, d_ff, seed, norm_first, causal, dropout=0.0):
    layer = ref_layer(d, h, d_ff, norm_first, seed)
    m = build_block(sub, d, h, d_ff, dropout, norm_first, seed=seed)
    load_block(sub, m, block_state(layer), d, h, d_ff)
    x = randn(seed + 1, 2, 6, d)
    what = block_text(d, h, d_ff, dropout, norm_first, causal)
    # over stand-in parts, the right block is the one around them
    si, sf = attn_stand_in(sub) is not None, ffn_stand_in(sub) is not None
    want = safe_compose(x, ref_parts(layer, si, sf), layer, norm_first, causal) if si or sf else \
        ref_block(layer, x, causal)
    try:
        got = call(m, x, what, causal=causal)
    except CheckFailure as e:
        if blame_part(sub, e, d, h, d_ff, causal=causal):
            return  # the block fails because one of the student's parts fails: charged to that part
        raise
    if close(got, want):
        return
    mine = student_parts(sub, layer, d, h, d_ff, block=m)
    if mine is not None and close(got, safe_compose(x, mine, layer, norm_first, causal)):
        return  # the right block around the student's own (differing) parts
    named = explain(sub, m, x, causal=causal)(got)  # a known bug of the table, exactly (hidden/bugs.py)
    if named is not None:
        expect_close(got, want, with_pytorch_weights(what), explain=lambda _got: named)
    if differs(call(m, x, what, causal=causal), got):  # F.dropout(x, 0.1, True): learners round s11
        expect_close(got, want, with_pytorch_weights(what), hint=Message(
            "Your block gives another output at each call in eval mode: a dropout still drops after model.eval() "
            "(F.dropout(x, p, True), or F.dropout(x, p)); pass training=self.training, or use self.dropout1 and "
            "self.dropout2.",
            "eval 모드에서 블록의 출력이 호출할 때마다 달라집니다: model.eval() 뒤에도 dropout이 값을 버립니다 "
            "(F.dropout(x, p, True) 또는 F.dropout(x, p)); training=self.training을 넘기거나 self.dropout1과 "
            "self.dropout2를 쓰세요."))
    for parts in (ref_parts(layer, si, sf), mine):
        if parts is None:
            continue
        for v in VARIANTS:
            if v == "causal_ignored" and not causal:
                continue
            alt = safe_compose(x, parts, layer, norm_first, causal, v)
            if alt is not None and close(got, alt):
                raise CheckFailure(variant_message(v, norm_first), staff=f"{what}: matches variant {v}")
    expect_close(got, want, with_pytorch_weights(what), hint=Message(
        "Compare with torch.nn.TransformerEncoderLayer(d_model, n_heads, d_ff, batch_first=True, "
        f"norm_first={norm_first}) in eval mode.",
        "eval 모드의 torch.nn.TransformerEncoderLayer(d_model, n_heads, d_ff, batch_first=True, "
        f"norm_first={norm_first})와 비교해 보세요."))


@check(question="TransformerBlock", points=7)
def test_block_post_norm(sub):
    """norm_first=False equals nn.TransformerEncoderLayer(batch_first=True) with the same weights"""
    for d, h, d_ff, seed in BLOCK_CASES:
        judge_block(sub, d, h, d_ff, seed, norm_first=False, causal=False)


@check(question="TransformerBlock", points=7)
def test_block_pre_norm(sub):
    """norm_first=True equals nn.TransformerEncoderLayer(batch_first=True, norm_first=True)"""
    for d, h, d_ff, seed in BLOCK_CASES:
        judge_block(sub, d, h, d_ff, seed, norm_first=True, causal=False)


@check(question="TransformerBlock", points=5)
def test_block_post_norm_causal(sub):
    """norm_first=False with causal=True equals the encoder layer with the causal src_mask"""
    for d, h, d_ff, seed in BLOCK_CASES:
        judge_block(sub, d, h, d_ff, seed + 10, norm_first=False, causal=True)


@check(question="TransformerBlock", points=5)
def test_block_pre_norm_causal(sub):
    """norm_first=True with causal=True equals the encoder layer with the causal src_mask"""
    for d, h, d_ff, seed in BLOCK_CASES:
        judge_block(sub, d, h, d_ff, seed + 10, norm_first=True, causal=True)


PROPERTIES = ("its residual connections, LayerNorm placement and dropout earn nothing",
              "잔차 연결, LayerNorm 위치, dropout 검사 점수를 받을 수 없습니다")


def block_evidence(sub, nf: bool, d: int = 12, h: int = 3, d_ff: int = 20, seed: int = 861) -> None:
    """What the block's property checks (residual connections, LayerNorm placement, eval-mode dropout) need
    first, asked once per norm_first: with PyTorch's weights, the output mixes the tokens and changes with its
    attention's weights and with its feed-forward's. A block that only calls norm1 and norm2 where the checks
    look (x + norm2(norm1(x) + 1)) satisfied all three without any attention or feed-forward (red team)."""
    key = ("block_evidence", nf)
    if key not in sub.memo:
        try:
            _block_evidence(sub, nf, d, h, d_ff, seed)
            sub.memo[key] = None
        except CheckFailure as e:
            sub.memo[key] = e
    if sub.memo[key] is not None:
        raise CheckFailure(sub.memo[key].message, sub.memo[key].staff)


def _block_evidence(sub, nf, d, h, d_ff, seed):
    layer = ref_layer(d, h, d_ff, nf, seed)
    what = block_text(d, h, d_ff, norm_first=nf)
    m = build_block(sub, d, h, d_ff, 0.0, nf, seed=seed)
    load_block(sub, m, block_state(layer), d, h, d_ff)
    x = randn(seed + 1, 2, 5, d)
    # Its calls from one seed (as expect_working's): a forward that returns torch.rand(x.shape) gives the same output
    # whatever the weights (red team, round 13: it passed, and earned the residual, LayerNorm and dropout checks).
    y = call(m, x, what, seed=seed)
    for prefix, en, ko in (("attn.", "self-attention", "셀프 어텐션"), ("ff.", "feed-forward network", "피드포워드 네트워크")):
        own = {n: t for n, t in as_template(m, m.state()["params"]).items()
               if n.startswith(prefix) and type(t) is torch.Tensor and t.is_floating_point() and t.dim() == 2}
        g = torch.Generator().manual_seed(seed + 2)
        m.load_state({n: torch.randn(tuple(t.shape), generator=g).to(t.dtype) for n, t in own.items()})
        moved = bool(own) and differs(call(m, x, what, seed=seed), y, EVIDENCE)
        m.load_state(own)
        if moved:
            continue
        cls = "MultiHeadSelfAttention" if prefix == "attn." else "FeedForward"
        if own and part_ignores_weights(sub, prefix, d, h, d_ff, seed, x):
            # The student's part ignores its weights itself (a placeholder `return x`): charged in its question.
            # The block's own evidence is then that it is the right composition of the student's own parts.
            mine = student_parts(sub, layer, d, h, d_ff, block=m)
            if mine is not None and close(y, safe_compose(x, mine, layer, nf, False)):
                continue
            fail(f"`{what}` gives the same output whatever the weights of its {en} (self.{prefix[:-1]}), and your "
                 f"`{cls}` alone ignores its weights too (charged in its own question); the block is not the right "
                 f"composition of your own parts either, so {PROPERTIES[0]}.",
                 f"`{what}`의 출력이 {ko}(self.{prefix[:-1]})의 가중치와 상관없이 같고, `{cls}` 자체도 가중치를 "
                 f"쓰지 않습니다 (그 문항에서 감점됩니다). 블록도 여러분의 구성 요소를 올바르게 조합한 것이 아니므로 "
                 f"{PROPERTIES[1]}.")
        fail(f"`{what}` gives the same output whatever the weights of its {en} (self.{prefix[:-1]}): the block "
             f"does not use its {en}, so {PROPERTIES[0]}.",
             f"`{what}`의 출력이 {ko}(self.{prefix[:-1]})의 가중치와 상관없이 같습니다: 블록이 {ko}을(를) 쓰지 "
             f"않으므로 {PROPERTIES[1]}.")
    try:  # fresh calls: the output depends on the input and its tokens are mixed
        expect_working(m, d, seed + 3, what, causal=None, earns=PROPERTIES)
    except CheckFailure:
        try:
            expect_working(build_block_attn(sub, d, h, 0.0, seed=seed), d, seed + 4, attn_text(d, h), causal=False)
        except CheckFailure:
            return  # its own attention mixes nothing either: charged in that question, not again here
        raise


def part_ignores_weights(sub, prefix, d, h, d_ff, seed, x) -> bool:
    """Whether the student's own attention ("attn.") or feed-forward ("ff.") module, built alone, gives the same
    output on x whatever its weights (by EVIDENCE); False when it cannot be asked."""
    try:
        part = build_part(sub, prefix, d, h, d_ff)
        y = call(part, x, "part", seed=seed)
        params = {n: t for n, t in part.state()["params"].items()
                  if type(t) is torch.Tensor and t.is_floating_point() and t.dim() == 2}
        g = torch.Generator().manual_seed(seed + 5)
        part.load_state({n: torch.randn(tuple(t.shape), generator=g).to(t.dtype) for n, t in params.items()})
        return not params or not differs(call(part, x, "part", seed=seed), y, EVIDENCE)
    except CheckFailure:
        return False


@check(question="TransformerBlock", points=5)
def test_block_residual_connections(sub):
    """Both residual connections carry the input past their sub-layer"""
    d, h, d_ff, seed = 12, 3, 20, 811
    x = randn(seed + 1, 2, 6, d)
    for nf in (False, True):
        block_evidence(sub, nf)
        for silenced, names, what_en, what_ko in (
                ("attn", ("attn.W_o.weight", "attn.W_o.bias"), "self-attention", "셀프 어텐션"),
                ("ff", ("ff.linear2.weight", "ff.linear2.bias"), "feed-forward network", "피드포워드 네트워크")):
            layer = ref_layer(d, h, d_ff, nf, seed)
            state = block_state(layer)
            for n in names:  # this sub-layer now outputs exactly zero for every input
                state[n] = torch.zeros_like(state[n])
            m = build_block(sub, d, h, d_ff, 0.0, nf, seed=seed)
            load_block(sub, m, state, d, h, d_ff)
            own = as_template(m, m.state()["params"])  # a part of another width kept its own weights: silence those
            m.load_state({n: torch.zeros_like(own[n]) for n in names if n in own})
            y = call(m, x, block_text(d, h, d_ff, norm_first=nf))
            # The same vector for every token of an example, whatever the examples give: the weights silenced are
            # the template's W_o and linear2, and layers named otherwise get them by their names or the order made
            # (part_layers). A block without the attention's residual whose projections were made q, v, out, k
            # under names of no role had its keys silenced: each example's tokens got one vector, the examples
            # different ones, and it earned this check (red team, round 22).
            if tuple(y.shape) == tuple(x.shape) and float((y - y[:, :1]).abs().max()) < 1e-5:
                fail(f"The residual connection around the {what_en} is missing (norm_first={nf}): with that "
                     "sub-layer's output weights set to zero, your block returns the same vector for every token, "
                     f"so nothing of its input gets past the {what_en}. Add the sub-layer's input to its output: "
                     "x + sublayer(...).",
                     f"{what_ko}을(를) 감싸는 잔차 연결이 없습니다 (norm_first={nf}): 그 서브레이어의 출력 가중치를 "
                     "0으로 두면 블록이 모든 토큰에 같은 벡터를 반환하므로, 입력이 전혀 전달되지 않습니다. "
                     "서브레이어의 입력을 출력에 더하세요: x + sublayer(...).")


@check(question="TransformerBlock", points=5)
def test_block_layernorm_placement(sub):
    """LayerNorm placement: pre-norm normalises the sub-layer inputs; post-norm normalises the residual sums"""
    d, h, d_ff, seed = 12, 3, 20, 821
    x = randn(seed + 1, 2, 6, d)
    for nf in (False, True):
        block_evidence(sub, nf)
        layer = ref_layer(d, h, d_ff, nf, seed)
        m = build_block(sub, d, h, d_ff, 0.0, nf, seed=seed)
        load_block(sub, m, block_state(layer), d, h, d_ff)
        res = m.run(x, record=["layer_norm"])
        y = expect_tensor(res["out"], block_text(d, h, d_ff, norm_first=nf))
        seen = [r["input"] for r in res.get("records") or [] if r.get("fn") == "layer_norm"
                and type(r.get("input")) is torch.Tensor]
        if not seen:
            fail(f"A forward pass of the block (norm_first={nf}) called nn.LayerNorm 0 times. If norm1 and norm2 are "
                 "your own LayerNorm class, make them nn.LayerNorm(d_model), as the assignment asks: this check can "
                 "see only nn.LayerNorm (F.layer_norm) calls, so it cannot tell where yours sit. Otherwise call "
                 "norm1 once and norm2 once.",
                 f"블록(norm_first={nf})의 forward에서 nn.LayerNorm이 한 번도 호출되지 않았습니다. norm1과 norm2가 "
                 "직접 만든 LayerNorm 클래스라면 과제 설명대로 nn.LayerNorm(d_model)으로 바꾸세요: 이 검사는 "
                 "nn.LayerNorm(F.layer_norm) 호출만 볼 수 있어서 직접 만든 정규화가 어디에 있는지 알 수 없습니다. "
                 "그렇지 않다면 norm1과 norm2를 한 번씩 호출하세요.")
        if len(seen) != 2:
            fail(f"A forward pass of the block (norm_first={nf}) called LayerNorm {len(seen)} times; it should call "
                 "norm1 once and norm2 once (nn.LayerNorm modules).",
                 f"블록(norm_first={nf})의 forward에서 LayerNorm이 {len(seen)}번 호출되었습니다. norm1과 norm2를 "
                 "한 번씩 호출해야 합니다 (nn.LayerNorm 모듈).")
        first_is_input = close(seen[0], x, 1e-6)
        with torch.no_grad():  # is the output the last LayerNorm's result (whichever norm the student used)?
            ends_with_norm = tuple(seen[1].shape) == tuple(y.shape) and any(
                close(y, ln(seen[1]), 1e-5) for ln in norms(layer))
        if nf and not first_is_input:
            fail("With norm_first=True the first thing the block does is norm1(x): the attention works on the "
                 "normalised input, x + attn(norm1(x)). Your first LayerNorm was applied to something else.",
                 "norm_first=True이면 블록은 먼저 norm1(x)을 계산합니다: 어텐션은 정규화된 입력에 적용됩니다, "
                 "x + attn(norm1(x)). 첫 LayerNorm이 다른 값에 적용되었습니다.")
        if nf and ends_with_norm:
            fail("With norm_first=True the block must not end with a LayerNorm: its output is x + ff(norm2(x)), "
                 "not norm2(...) of the sum.",
                 "norm_first=True이면 블록이 LayerNorm으로 끝나면 안 됩니다: 출력은 x + ff(norm2(x))이고, "
                 "합에 norm2(...)를 적용한 값이 아닙니다.")
        if not nf and first_is_input:
            fail("With norm_first=False the input goes into the attention unnormalised and norm1 comes after the "
                 "residual addition: norm1(x + attn(x)). Yours normalises x first (pre-norm order).",
                 "norm_first=False이면 입력은 정규화 없이 어텐션에 들어가고, norm1은 잔차 덧셈 뒤에 옵니다: "
                 "norm1(x + attn(x)). 여러분의 코드는 x를 먼저 정규화합니다 (pre-norm 순서).")
        if not nf and not ends_with_norm:
            fail("With norm_first=False the block ends with norm2 applied to the feed-forward residual sum: "
                 "norm2(x + ff(x)). Your output is not the result of that last LayerNorm.",
                 "norm_first=False이면 블록은 피드포워드 잔차 합에 norm2를 적용하며 끝납니다: norm2(x + ff(x)). "
                 "출력이 그 마지막 LayerNorm의 결과가 아닙니다.")


@check(question="TransformerBlock", points=3)
def test_block_eval_ignores_dropout(sub):
    """TransformerBlock(..., dropout=0.5) in eval mode gives what the same block with dropout=0.0 gives"""
    d, h, d_ff, seed = 12, 3, 20, 831
    x = randn(seed + 1, 2, 6, d)
    for nf in (False, True):
        block_evidence(sub, nf)
        layer = ref_layer(d, h, d_ff, nf, seed)

        def make(p, state, nf=nf):
            m = build_block(sub, d, h, d_ff, p, nf, seed=seed)
            load_block(sub, m, state, d, h, d_ff)
            return m
        outs = eval_pair(make, block_state(layer), d, h, x, block_text(d, h, d_ff, 0.5, nf))
        if close(outs[0], outs[1]):
            continue
        for build, text, heads in ((lambda p: build_block_attn(sub, d, h, p, seed=2), "attn", h),
                                   (lambda p: build_block_ffn(sub, d, d_ff, p, seed=2), "ffn", 1)):
            def part(p, state, build=build):
                m = build(p)
                if state is not None:
                    m.load_state(state)
                return m
            try:  # a part that keeps dropping in eval mode is charged to that part
                if not close(*eval_pair(part, None, d, heads, x, text)):
                    return
            except CheckFailure:
                pass
        expect_close(outs[0], outs[1], block_text(d, h, d_ff, 0.5, nf) + " in eval mode (compared with dropout=0.0)",
                     hint=Message("In eval mode the block must drop nothing: use nn.Dropout modules (self.dropout1, "
                                  "self.dropout2), which follow model.eval(), not F.dropout(...).",
                                  "eval 모드에서는 블록이 아무것도 버리면 안 됩니다: F.dropout(...) 대신 model.eval()을 "
                                  "따르는 nn.Dropout 모듈(self.dropout1, self.dropout2)을 쓰세요."))


def block_by_hand(layer, x, norm_first, p, seed, where=("right", "right"), per_head=False, stand_in=False,
                  stand_in_ff=False):
    """PyTorch's block in train mode step by step, drawing in the reference's order after manual_seed(seed): the
    attention's dropout (on its weights), dropout1, the feed-forward's dropout, dropout2. `where` puts dropout1
    and dropout2: "right" (on the sub-layer's output, before the residual addition), "missing", "after_add"
    (on the residual sum). per_head: True, the attention draws its heads' masks one after another
    (dropping_per_head); a permutation of the weights' four axes, it draws over them laid out so (dropping_laid).
    stand_in: the block holds the grader's stand-in attention (attn_stand_in), which drops its weights once;
    stand_in_ff: the grader's stand-in feed-forward network (ffn_stand_in)."""
    drop = dropping(p)
    attn_drop = dropping_per_head(p) if per_head is True else dropping_laid(p, per_head) if per_head else drop
    n1, n2 = norms(layer)
    manual_seed(seed)
    with torch.no_grad():
        attend = (lambda z: stand_in_attention(attn_state(layer.self_attn), z, False, drop)) if stand_in else \
            (lambda z: attn_by_hand(layer, z, False, attn_drop))
        for layer_fn, norm, at in ((attend, n1, where[0]),
                                   ((lambda z: stand_in_ffn(ffn_state(layer), z, drop)) if stand_in_ff else
                                    (lambda z: layer.linear2(drop(F.relu(layer.linear1(z))))), n2, where[1])):
            y = layer_fn(norm(x) if norm_first else x)
            total = x + y if at == "missing" else drop(x + y) if at == "after_add" else x + drop(y)
            x = total if norm_first else norm(total)
    return x


def dropout_message(where, what) -> Message:
    parts = {
        "missing": ("{d} (on the {sl}'s output) is missing", "{d}({sl} 출력에 적용)가 빠져 있음"),
        "after_add": ("{d} is applied after the residual addition, to x + {f}, instead of to the {sl}'s output "
                      "before it", "{d}가 {sl} 출력이 아니라 잔차 덧셈 뒤의 x + {f}에 적용됨"),
    }
    names = (("dropout1", "self-attention", "셀프 어텐션", "attn(...)"),
             ("dropout2", "feed-forward network", "피드포워드 네트워크", "ff(...)"))
    en = "; ".join(parts[at][0].format(d=d, sl=sl, f=f) for at, (d, sl, _k, f) in zip(where, names) if at in parts)
    ko = "; ".join(parts[at][1].format(d=d, sl=k, f=f) for at, (d, _s, k, f) in zip(where, names) if at in parts)
    return Message(f"`{what}` in train mode matches a block in which {en}. Each sub-layer's output is dropped "
                   "before it is added to the residual: x + dropout1(attn(...)), x + dropout2(ff(...)).",
                   f"train 모드의 `{what}`는 다음과 같은 블록과 일치합니다: {ko}. 각 서브레이어의 출력에 dropout을 "
                   "적용한 다음 잔차에 더합니다: x + dropout1(attn(...)), x + dropout2(ff(...)).")


BLOCK_DROPOUT_HINT = Message(
    "In train mode dropout1 and dropout2 drop each sub-layer's output before the residual addition: "
    "x + dropout1(attn(...)) and x + dropout2(ff(...)), inside norm1/norm2 for post-norm.",
    "train 모드에서 dropout1과 dropout2는 잔차 덧셈 전에 각 서브레이어의 출력에 적용됩니다: "
    "x + dropout1(attn(...)), x + dropout2(ff(...)) (post-norm이면 norm1/norm2 안에서).")


@check(question="TransformerBlock", points=3)
def test_block_dropout_placement(sub):
    """TransformerBlock in train mode: dropout1 and dropout2 drop each sub-layer's output before the residual addition"""
    d, h, d_ff, seed = 12, 3, 20, 851
    x = randn(seed + 1, 2, 6, d)
    si = attn_stand_in(sub) is not None  # the block holds the grader's stand-in attention
    sf = ffn_stand_in(sub) is not None  # the grader's stand-in feed-forward network
    heads = (False,) if si else (False, True)

    def eval_right(nf):
        layer = ref_layer(d, h, d_ff, nf, seed)
        plain = build_block(sub, d, h, d_ff, 0.0, nf, seed=seed)
        load_block(sub, plain, block_state(layer), d, h, d_ff)
        return close(call(plain, x, block_text(d, h, d_ff, 0.0, nf)),
                     block_by_hand(layer, x, nf, 0.0, seed + 2, stand_in=si, stand_in_ff=sf) if si or sf else
                     ref_block(layer, x))

    orders = (False, True)
    if norm_first_name(sub) is None and not takes_norm_first(sub):
        # A block without norm_first computes one order; the checks of the other order charge that (learners
        # round rl11: a right post-norm block also lost this check, "cannot be judged" with norm_first=True).
        orders = tuple(nf for nf in orders if eval_right(nf)) or (False,)
    for nf in orders:
        # Evidence first, as for the other property checks: this one passes where a part fails its own dropout
        # checks, and a block that returns its input (parts that return theirs) earned it that way.
        block_evidence(sub, nf)
        layer = ref_layer(d, h, d_ff, nf, seed)
        m = build_block(sub, d, h, d_ff, 0.5, nf, seed=seed)
        load_block(sub, m, block_state(layer), d, h, d_ff)
        what = block_text(d, h, d_ff, 0.5, nf)
        got = call(m, x, what, mode="train", seed=seed + 2)
        if any(close(got, block_by_hand(layer, x, nf, 0.5, seed + 2, per_head=ph, stand_in=si, stand_in_ff=sf))
               for ph in heads + (() if si else LAYOUTS)):
            continue
        # The block's draws follow its parts' own: a part that does not drop like the reference (or is wrong in
        # eval mode, or does not take PyTorch's weights) is charged in its own question.
        # (A stand-in part is not the student's: the student's part's faults are no excuse then.)
        for part_check in ((() if si else (lambda: attn_train(sub, *ATTN_DROPOUT_CASES[0]), lambda: attn_eval(sub)))
                           + (() if sf else (lambda: ffn_train(sub), lambda: ffn_eval(sub)))):
            try:
                part_check()
            except CheckFailure:
                return
        plain = build_block(sub, d, h, d_ff, 0.0, nf, seed=seed)
        load_block(sub, plain, block_state(layer), d, h, d_ff)
        if not close(call(plain, x, block_text(d, h, d_ff, 0.0, nf)),
                     block_by_hand(layer, x, nf, 0.0, seed + 2, stand_in=si, stand_in_ff=sf) if si or sf else
                     ref_block(layer, x)):
            fail("The dropout cannot be judged: the block already differs from PyTorch's in eval mode (see the "
                 "checks that compare with the encoder layer).",
                 "dropout을 평가할 수 없습니다: 블록이 eval 모드에서 이미 PyTorch와 다릅니다 "
                 "(인코더 레이어와 비교하는 검사를 보세요).")
        for where in [(a, f) for a in ("right", "missing", "after_add") for f in ("right", "missing", "after_add")]:
            if where != ("right", "right") and any(
                    close(got, block_by_hand(layer, x, nf, 0.5, seed + 2, where, ph, si, sf)) for ph in heads):
                raise CheckFailure(dropout_message(where, what), staff=f"{what}: dropout {where}")
        expect_close(got, block_by_hand(layer, x, nf, 0.5, seed + 2, stand_in=si, stand_in_ff=sf), what + " in train mode",
                     hint=BLOCK_DROPOUT_HINT,
                     explain=explain(sub, m, x, mode="train", seed=seed + 2))


# ------------------------------------------------------------------------------- nn.Transformer

@check(question="nn_transformer", points=2)
def test_transformer_lengths(sub):
    """The built model maps src (2, 7, 16) and tgt (2, 3, 16) to (2, 3, 16): the target length, batch first"""
    out = transformer_out(sub, randn(901, 2, 7, 16), randn(902, 2, 3, 16))
    expect_shape(out, (2, 3, 16), "build_transformer()(src (2, 7, 16), tgt (2, 3, 16))")


@check(question="nn_transformer", points=3)
def test_transformer_values(sub):
    """The built model computes what nn.Transformer(..., batch_first=True) computes with its weights"""
    m = build_transformer(sub)
    state = m.state()
    local = nn.Transformer(**CONFIG).eval()
    try:
        local.load_state_dict({**state["params"], **state["buffers"]}, strict=True)
    except RuntimeError as e:
        fail(f"The weights of your model do not fit nn.Transformer(d_model=16, nhead=4, 2 + 2 layers, "
             f"dim_feedforward=32): {str(e).splitlines()[0][:300]}",
             f"모델의 가중치가 nn.Transformer(d_model=16, nhead=4, 2 + 2 레이어, dim_feedforward=32)와 맞지 "
             f"않습니다: {str(e).splitlines()[0][:300]}")
    src, tgt = randn(911, 2, 5, 16), randn(912, 2, 5, 16)
    with torch.no_grad():
        want = local(src, tgt)
    expect_close(call(m, src, "build_transformer()(src, tgt)", tgt=tgt), want,
                 "build_transformer()(src, tgt)", atol=1e-4, explain=explain(sub, m, src, tgt=tgt), hint=Message(
                     "With batch_first=True the inputs are (batch, sequence, feature); without it PyTorch reads "
                     "them as (sequence, batch, feature).",
                     "batch_first=True이면 입력은 (배치, 시퀀스, 특징) 순서입니다. 없으면 PyTorch는 "
                     "(시퀀스, 배치, 특징) 순서로 읽습니다."))
