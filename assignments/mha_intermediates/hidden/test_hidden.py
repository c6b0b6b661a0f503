"""Hidden checks for mha_intermediates: values of every intermediate against the reference, with the
reference's weights copied into the student's module. A step passes when it matches the reference, or when
it is the right step applied to the student's own (possibly wrong) inputs: a mistake is charged once."""
from __future__ import annotations

import itertools
import math
from typing import Any, Callable, NamedTuple

import torch
import torch.nn as nn
import torch.nn.functional as F

from assignments.mha_intermediates.common import (build_mha, call_text, divisor, entry, expect_layers, forward_dict,
                                                  informative, memo, other_divisor, rand, randn, scale_of, scale_rule,
                                                  sdpa_call, tensor_or_none)
from assignments.mha_intermediates.hidden import diagnose  # noqa: F401  (registers the grader's bug diagnosis)
from autograder.bugtable import Call
from autograder.checks import CheckFailure, check, diagnosis, expect_close, fail
from autograder.messages import Message
from autograder.rng import manual_seed
from reference import mha_intermediates as R

# ------------------------------------------------------------------------------- cases

# name: (seed, n_batch, n_Q, n_K, d_feat, n_head, distinct Q/K/V inputs, mask kind)
CASES = {
    "self": (301, 3, 6, 6, 20, 4, False, None),
    "cross": (302, 2, 5, 7, 24, 3, True, None),
    "padding": (303, 3, 6, 6, 12, 2, False, "padding"),
    "causal": (304, 2, 5, 5, 18, 3, False, "causal"),
}


def case_inputs(name):
    seed, b, nq, nk, d, h, distinct, mask_kind = CASES[name]
    Q = randn(seed, b, nq, d)
    K = randn(seed + 1, b, nk, d) if distinct else Q
    V = randn(seed + 2, b, nk, d) if distinct else Q
    mask = None
    if mask_kind == "padding":  # (n_batch, 1, 1, n_K): the last keys of some sequences are padding
        lengths = torch.tensor([nk, nk - 2, 1])[:b]
        mask = (torch.arange(nk)[None, :] < lengths[:, None]).to(torch.float32)[:, None, None, :]
    elif mask_kind == "causal":  # (n_Q, n_K): 1 where a query may look
        mask = torch.tril(torch.ones(nq, nk, dtype=torch.int64))
    return Q, K, V, mask


def transplant(m, ref, what):
    """Copy the reference's weights into the student's module. A layer without its bias (bias=False where
    USE_BIAS=True: charged once, in mha_init, by test_mha_layers) still gets its weight, and the reference drops
    that bias too, so that every value check judges what the student's forward computes. Any other parameter
    missing, or of another shape, and nothing can be compared: the message lists them."""
    report = m.load_state(dict(ref.state_dict()))
    needed = {n for n, _ in ref.named_parameters()}
    missing = sorted(needed & set(report["missing"]))
    shapes = [(n, s, r) for n, s, r in report["mismatched"] if n in needed]
    loaded = set(report["loaded"])
    no_bias = [n for n in missing if n.endswith(".bias") and n[:-len("bias")] + "weight" in loaded]
    missing = [n for n in missing if n not in no_bias]
    if missing or shapes:
        have = ", ".join(f"{n} {tuple(s)}" for n, s, _ in m.describe()["params"])
        bad_en = "; ".join([f"no parameter named {n}" for n in missing] +
                           [f"{n} has shape {tuple(s)}, expected {tuple(r)}" for n, s, r in shapes])
        bad_ko = "; ".join([f"{n} 파라미터가 없음" for n in missing] +
                           [f"{n}의 shape이 {tuple(s)}임 (기대값 {tuple(r)})" for n, s, r in shapes])
        fail(f"The reference weights could not be copied into your `{what}`: {bad_en}. Keep the layers named "
             f"lin_Q, lin_K, lin_V, lin_O as in the notebook (yours: {have or 'no parameters'}).",
             f"참조 가중치를 `{what}`에 복사할 수 없습니다: {bad_ko}. 레이어 이름을 노트북처럼 lin_Q, lin_K, lin_V, "
             f"lin_O로 두세요 (현재: {have or '파라미터 없음'}).")
    for n in no_bias:  # the student's layer has no bias: neither has the reference's, from here on
        setattr(ref.get_submodule(n[:-len(".bias")]), "bias", None)


class Case(NamedTuple):
    got: dict  # the student's dict of intermediates
    want: dict  # the reference's, same weights
    ref: Any
    inputs: tuple  # Q, K, V, mask
    m: Any  # the student's module (the reference's weights copied in)
    mode: str
    seed_call: int | None


def run_case(sub, options, name, *, mode="eval", dropout_p=0.0, seed_call=None) -> Case:
    """The student's dict and the reference's dict for one case, same weights; computed once per submission."""
    def make():
        seed, b, nq, nk, d, h, distinct, mask_kind = CASES[name]
        Q, K, V, mask = case_inputs(name)
        manual_seed(seed)
        ref = R.MultiHeadedAttention(d, h, USE_BIAS=True, dropout_p=dropout_p)
        ref.scale = scale_of(options)
        what = call_text(d, h)
        m = build_mha(sub, d, h, seed=seed, dropout_p=dropout_p)
        transplant(m, ref, what)
        got = forward_dict(m, Q, K, V, mask, what=what, mode=mode, seed=seed_call)
        ref.train(mode == "train")
        if seed_call is not None:
            manual_seed(seed_call)
        with torch.no_grad():
            want = ref(Q, K, V, mask)
        return Case(got, want, ref, (Q, K, V, mask), m, mode, seed_call)
    return memo(sub, ("case", name, mode, dropout_p, seed_call, scale_of(options)), make)


def explain(sub, options, case: Case, key: str) -> Callable[[Any], Message | None]:
    """For judge(explain=...): the grader's name for the bug behind the student's entry `key` of this case
    (hidden/diagnose.py); the student's code is not run again."""
    Q, K, V, mask = case.inputs
    call = Call((Q, K, V), {} if mask is None else {"mask": mask}, case.mode, case.seed_call,
                pick=lambda out: out[key])
    return lambda got: diagnosis("mha_intermediates", sub, target=case.m, got=got, call=call,
                                 scale=scale_of(options))


def judge(got_out, want_out, key, what, fallback: Callable[[], Any] | None = None,
          hint: Message | None = None, atol=1e-4, explain: Callable[[Any], Message | None] | None = None):
    """Pass if the entry matches the reference, or equals this step applied to the student's own inputs (the
    fallback gives that tensor, or a tuple of the tensors a right step may give); else `explain` may name the known
    bug behind it (its words then replace the generic `hint`)."""
    got = entry(got_out, key, what)
    try:
        expect_close(got, want_out[key], f"{what}['{key}']", atol=atol, hint=hint)
        return
    except CheckFailure as first:
        if fallback is not None:
            try:
                alts = fallback()
            except (RuntimeError, ValueError, TypeError, IndexError, AttributeError):
                alts = None
            for alt in (alts if isinstance(alts, tuple) else (alts,)):
                if alt is not None and tuple(alt.shape) == tuple(got.shape) and _close(got, alt, atol):
                    return
        named = explain(got) if explain is not None else None
        if named is not None:
            raise CheckFailure(named + first.base, first.staff) from None
        if hint is not None and hint.en not in first.message.en:  # e.g. a shape mismatch, reported without it
            raise CheckFailure(first.message + hint, first.staff) from None
        raise first from None


def _close(a, b, atol):
    a, b = a.to(torch.float64), b.detach().to(torch.float64)
    nan = torch.isnan(a) & torch.isnan(b)
    return bool(((a - b).abs() <= atol + 1e-4 * b.abs()).logical_or(nan).logical_or(a == b).all())


def own(out, *keys):
    """The student's own tensors for a fallback; raises ValueError when one is missing or carries no evidence
    (constant: zeros split, merged or weighted are zeros, and a module returning zeros for every entry earned the
    split, merge and x_raw points "on its own inputs")."""
    ts = [tensor_or_none(out, k) for k in keys]
    if any(t is None for t in ts):
        raise ValueError("missing")
    if not all(informative(t) for t in ts):
        raise ValueError("constant")
    return ts


def case_what(name, mode: str = "", **kw):
    """The case as code, the same in both languages: `MultiHeadedAttention(...).train()(x[3, 6, 20], mask=causal)`
    (inputs by their shapes, the mask by its kind)."""
    seed, b, nq, nk, d, h, distinct, mask_kind = CASES[name]
    inputs = f"Q[{b}, {nq}, {d}], K[{b}, {nk}, {d}], V[{b}, {nk}, {d}]" if distinct else f"x[{b}, {nq}, {d}]"
    return (call_text(d, h, **kw) + (f".{mode}()" if mode else "")
            + f"({inputs}{f', mask={mask_kind}' if mask_kind else ''})")


# ------------------------------------------------------------------------------- ScaledDotProductAttention

SDPA_HINT = Message("out = softmax(Q @ K^T / sqrt(d_K), dim=-1) @ V, with K.transpose(-2, -1) so that any leading "
                    "batch axes work, and d_K = K.size(-1).",
                    "out = softmax(Q @ K^T / sqrt(d_K), dim=-1) @ V입니다. 앞쪽 배치 축이 몇 개든 동작하도록 "
                    "K.transpose(-2, -1)을 쓰고, d_K = K.size(-1)입니다.")


def sdpa_against_reference(sub, Q, K, V, mask=None, label="", hint=SDPA_HINT):
    what = f"ScaledDotProductAttention()(Q{list(Q.shape)}, K{list(K.shape)}, V{list(V.shape)}{label})"
    m = sub.new("ScaledDotProductAttention")
    out, attention = sdpa_call(sub, Q, K, V, mask, what=what, m=m)
    with torch.no_grad():
        want_out, want_att = R.ScaledDotProductAttention()(Q, K, V, mask)

    def explain(part: int) -> Callable[[Any], Message | None]:
        call = Call((Q, K, V), {} if mask is None else {"mask": mask}, pick=lambda res: res[part])
        return lambda got: diagnosis("mha_intermediates", sub, target=m, got=got, call=call)
    expect_close(attention, want_att, what + " -> attention", hint=hint, explain=explain(1))
    expect_close(out, want_out, what + " -> out", hint=hint, explain=explain(0))


@check(question="sdpa", points=4)
def test_sdpa_values(sub):
    """SDPA values with n_Q != n_K and d_K != d_V"""
    sdpa_against_reference(sub, rand(401, 2, 4, 6), rand(402, 2, 7, 6), rand(403, 2, 7, 9))
    sdpa_against_reference(sub, randn(404, 3, 5, 8), randn(405, 3, 3, 8), randn(406, 3, 3, 2))


@check(question="sdpa", points=4)
def test_sdpa_multihead_values(sub):
    """SDPA values on 4-D (multi-head) inputs"""
    sdpa_against_reference(sub, randn(411, 2, 3, 4, 6), randn(412, 2, 3, 7, 6), randn(413, 2, 3, 7, 5))


@check(question="sdpa", points=5)
def test_sdpa_mask(sub):
    """SDPA: scores where mask == 0 become -1e9 before the softmax (a fully masked row stays finite)"""
    hint = Message("Fill the scores where mask == 0 with -1e9 before the softmax: "
                   "scores.masked_fill(mask == 0, -1e9). With -inf a fully masked row turns into NaN.",
                   "softmax 전에 mask == 0인 위치의 점수를 -1e9로 채우세요: scores.masked_fill(mask == 0, -1e9). "
                   "-inf를 쓰면 전부 가려진 행이 NaN이 됩니다.")
    mask = (rand(421, 2, 4, 7) > 0.4).to(torch.int64)
    mask[0, 1, :] = 0  # one query sees nothing at all
    mask[1, :, 0] = 1
    sdpa_against_reference(sub, randn(422, 2, 4, 6), randn(423, 2, 7, 6), randn(424, 2, 7, 3), mask,
                           ", mask=0/1 ints", hint)
    pad = torch.ones(2, 1, 1, 5, dtype=torch.bool)
    pad[1, ..., 3:] = False
    sdpa_against_reference(sub, randn(425, 2, 2, 5, 4), randn(426, 2, 2, 5, 4), randn(427, 2, 2, 5, 4), pad,
                           ", padding mask (2, 1, 1, 5) of bools", hint)


@check(question="sdpa", points=3)
def test_sdpa_any_leading_axes(sub):
    """SDPA works without a batch axis and with three leading axes"""
    sdpa_against_reference(sub, randn(431, 4, 6), randn(432, 5, 6), randn(433, 5, 3))
    sdpa_against_reference(sub, randn(434, 2, 2, 3, 4, 6), randn(435, 2, 2, 3, 5, 6), randn(436, 2, 2, 3, 5, 3))


# ------------------------------------------------------------------------------- constructor

@check(question="mha_init", points=1)
def test_mha_no_bias(sub):
    """USE_BIAS=False: none of the four layers has a bias"""
    m = build_mha(sub, 12, 3, seed=0, USE_BIAS=False)
    expect_layers(m, call_text(12, 3, USE_BIAS=False), ("having no bias earns nothing", "bias가 없다는 점수를 받을 수 "
                                                                                        "없습니다"))
    info = m.describe()
    biases = sorted(n for n, _, _ in info.get("params", []) if n.endswith("bias"))
    if biases:
        fail(f"With USE_BIAS=False no layer should have a bias, but found {', '.join(biases)}. Pass the flag to "
             "every layer: nn.Linear(d_feat, d_feat, bias=USE_BIAS).",
             f"USE_BIAS=False이면 어떤 레이어에도 bias가 없어야 하는데 {', '.join(biases)}이(가) 있습니다. "
             "모든 레이어에 전달하세요: nn.Linear(d_feat, d_feat, bias=USE_BIAS).")


@check(question="mha_init", points=1)
def test_mha_dropout_module(sub):
    """self.dropout is nn.Dropout(p=dropout_p)"""
    info = build_mha(sub, 12, 3, seed=0, dropout_p=0.3).describe("dropout")
    d = info["attrs"].get("dropout")
    if d is None or d.get("type") != "Dropout" or abs(d.get("p", -1) - 0.3) > 1e-9:
        found = "nothing" if d is None else f"{d.get('type')} (p={d.get('p')})"
        fail(f"With dropout_p=0.3, `self.dropout` should be nn.Dropout(p=0.3); found {found}.",
             f"dropout_p=0.3이면 `self.dropout`은 nn.Dropout(p=0.3)이어야 합니다. 현재: {found}.")


# ------------------------------------------------------------------------------- projections

PROJ_HINT = Message("Each projection is one linear layer on its own input: Q_feat = lin_Q(Q), K_feat = lin_K(K), "
                    "V_feat = lin_V(V) (`actv` is stored but not applied).",
                    "각 투영은 자기 입력에 대한 선형 레이어 하나입니다: Q_feat = lin_Q(Q), K_feat = lin_K(K), "
                    "V_feat = lin_V(V) (`actv`는 저장만 하고 적용하지 않습니다).")


def check_projections(sub, options, name):
    c = run_case(sub, options, name)
    for key in ("Q_feat", "K_feat", "V_feat"):
        judge(c.got, c.want, key, case_what(name), hint=PROJ_HINT, explain=explain(sub, options, c, key))


@check(question="projections", points=4)
def test_projections_self(sub, options):
    """Q_feat, K_feat, V_feat values (self-attention)"""
    check_projections(sub, options, "self")


@check(question="projections", points=4)
def test_projections_cross(sub, options):
    """Q_feat, K_feat, V_feat values with different Q, K, V (n_Q != n_K)"""
    check_projections(sub, options, "cross")


# ------------------------------------------------------------------------------- split

SPLIT_HINT = Message("Split the features into heads with .view(n_batch, -1, n_head, d_head) and then bring the head "
                     "axis forward with .permute(0, 2, 1, 3).",
                     "특징을 .view(n_batch, -1, n_head, d_head)로 헤드별로 나눈 뒤 .permute(0, 2, 1, 3)으로 헤드 축을 "
                     "앞으로 옮기세요.")


def check_split(sub, options, name):
    c = run_case(sub, options, name)
    for key, src in (("Q_split", "Q_feat"), ("K_split", "K_feat"), ("V_split", "V_feat")):
        judge(c.got, c.want, key, case_what(name), lambda src=src: R.split_heads(*own(c.got, src), c.ref.n_head),
              hint=SPLIT_HINT, explain=explain(sub, options, c, key))


@check(question="split", points=5)
def test_split_self(sub, options):
    """Q_split, K_split, V_split values (self-attention)"""
    check_split(sub, options, "self")


@check(question="split", points=6)
def test_split_cross(sub, options):
    """Q_split, K_split, V_split values with n_Q != n_K"""
    check_split(sub, options, "cross")


# ------------------------------------------------------------------------------- scores

def measured_divisor(qs, ks, sc, mask) -> float | None:
    """The one number the student's scores divide Q_split @ K_split^T by, read where the mask keeps the scores;
    None when they are not that product divided by one number (or the shapes do not allow the reading)."""
    try:
        raw = torch.matmul(qs.double(), ks.double().transpose(-2, -1))
        keep = torch.ones_like(raw, dtype=torch.bool) if mask is None else (mask != 0).expand_as(raw)
    except RuntimeError:
        return None
    if raw.shape != sc.shape:
        return None
    s = sc.double()
    keep = keep & torch.isfinite(s) & (s.abs() > 1e-6) & (raw.abs() > 1e-3)
    if int(keep.sum()) < 4:
        return None
    ratios = raw[keep] / s[keep]
    mid = float(ratios.median())
    if mid <= 0 or float((ratios - mid).abs().max()) > 1e-3 * mid:
        return None
    return mid


def divisor_names(value: float, b: int, nq: int, nk: int, d: int, h: int) -> list[tuple[str, str]]:
    """The quantities of this case that equal `value`, in words (English, Korean)."""
    dh = d // h
    cands = [(math.sqrt(d), f"sqrt(d_feat) = sqrt({d})", f"sqrt(d_feat) = sqrt({d})"),
             (math.sqrt(dh), f"sqrt(d_head) = sqrt({dh})", f"sqrt(d_head) = sqrt({dh})"),
             (float(d), f"d_feat = {d}", f"d_feat = {d}"), (float(dh), f"d_head = {dh}", f"d_head = {dh}"),
             (math.sqrt(nk), f"sqrt({nk}), the root of the number of keys n_K", f"키 개수 n_K의 제곱근 sqrt({nk})"),
             (float(nk), f"{nk}, the number of keys n_K", f"키 개수 n_K = {nk}"),
             (1.0, "1: the scores are not scaled", "1: 점수를 나누지 않음")]
    if nq != nk:
        cands += [(math.sqrt(nq), f"sqrt({nq}), the root of the number of queries n_Q",
                   f"쿼리 개수 n_Q의 제곱근 sqrt({nq})"), (float(nq), f"{nq}, the number of queries n_Q",
                                                          f"쿼리 개수 n_Q = {nq}")]
    return [(en, ko) for v, en, ko in cands if math.isclose(v, value, rel_tol=1e-3)]


def check_scores(sub, options, name):
    c = run_case(sub, options, name)
    got, want, mask = c.got, c.want, c.inputs[3]
    seed, b, nq, nk, d, h, distinct, mask_kind = CASES[name]
    div = divisor(options, d, h)
    what = case_what(name)
    hint = scale_rule(options, d, h)
    qs, ks, sc = (tensor_or_none(got, k) for k in ("Q_split", "K_split", "scores"))
    if qs is not None and ks is not None and sc is not None:
        alt, alt_name = other_divisor(options, d, h)
        try:
            other = R.head_scores(qs, ks, alt, mask)
        except RuntimeError:
            other = None
        measured = measured_divisor(qs, ks, sc, mask)
        fits = divisor_names(measured, b, nq, nk, d, h) if measured is not None else []
        if measured is not None and not math.isclose(measured, div, rel_tol=1e-3):
            # Named by what the divisor is, in the case's numbers: a case where n_K = d_head (padding: 6 and 6) told
            # a learner dividing by sqrt(n_K) that the scores were divided by sqrt(d_head).
            en = " or ".join(n[0] for n in fits) or "none of d_feat, d_head or the number of tokens, or their roots"
            ko = " 또는 ".join(n[1] for n in fits) or "d_feat, d_head, 토큰 수나 그 제곱근 어느 것도 아님"
            hint = Message(f"Your scores are Q_split @ K_split^T divided by {measured:.4g} ({en}).",
                           f"여러분의 scores는 Q_split @ K_split^T를 {measured:.4g}({ko})(으)로 나눈 값입니다.") + hint
        if other is not None and informative(other) and other.shape == sc.shape and _close(sc, other, 1e-4) \
                and len(fits) == 1:
            fail(f"`{what}`: your scores are divided by {alt_name}. " + hint.en,
                 f"`{what}`: 점수를 {alt_name}(으)로 나눴습니다. " + hint.ko)
        if mask is not None:  # the scores before the mask, while the attention was computed from the masked ones
            try:
                unmasked = R.head_scores(qs, ks, div)
                masked_att = torch.softmax(R.head_scores(qs, ks, div, mask), dim=-1)
            except RuntimeError:
                unmasked = masked_att = None
            att = tensor_or_none(got, "attention")
            if (unmasked is not None and informative(unmasked) and unmasked.shape == sc.shape
                    and _close(sc, unmasked, 1e-4) and att is not None and att.shape == masked_att.shape
                    and _close(att, masked_att, 1e-4) and not _close(masked_att, torch.softmax(unmasked, dim=-1), 1e-4)):
                fail(f"`{what}`: the scores you return are the ones before the mask, although your attention was "
                     "computed from the masked scores (the mask is applied, but only to what goes into the softmax). "
                     "Return the masked scores as out['scores']: scores = scores.masked_fill(mask == 0, -1e9), then "
                     "attention = torch.softmax(scores, dim=-1).",
                     f"`{what}`: 반환한 scores가 마스크를 적용하기 전의 값입니다. attention은 마스크를 적용한 점수로 "
                     "계산했습니다 (마스크는 softmax에 들어가는 값에만 적용됨). out['scores']로 마스크를 적용한 점수를 "
                     "반환하세요: scores = scores.masked_fill(mask == 0, -1e9) 다음 attention = torch.softmax(scores, "
                     "dim=-1).")
        if mask is not None and bool(torch.isinf(sc).any()):
            hint = Message("Masked scores must be -1e9, not -inf: scores.masked_fill(mask == 0, -1e9).",
                           "가려진 점수는 -inf가 아니라 -1e9여야 합니다: scores.masked_fill(mask == 0, -1e9).")
        elif mask is not None and (measured is None or math.isclose(measured, div, rel_tol=1e-3)):
            hint = Message("Apply the mask to the scores before the softmax: scores.masked_fill(mask == 0, -1e9).",
                           "softmax 전에 점수에 마스크를 적용하세요: scores.masked_fill(mask == 0, -1e9).")
    judge(got, want, "scores", what, lambda: R.head_scores(*own(got, "Q_split", "K_split"), div, mask), hint=hint,
          explain=explain(sub, options, c, "scores"))


@check(question="scores", points=4)
def test_scores_values(sub, options):
    """scores values without a mask (self- and cross-attention)"""
    check_scores(sub, options, "self")
    check_scores(sub, options, "cross")


@check(question="scores", points=5)
def test_scores_masked(sub, options):
    """scores with a padding mask and a causal mask: -1e9 where mask == 0"""
    check_scores(sub, options, "padding")
    check_scores(sub, options, "causal")


# ------------------------------------------------------------------------------- attention and x_raw

SOFTMAX_HINT = Message("attention = torch.softmax(scores, dim=-1): each query's weights over the keys sum to 1.",
                       "attention = torch.softmax(scores, dim=-1): 각 쿼리의 키에 대한 가중치 합이 1이 되어야 합니다.")
TRAIN_P, TRAIN_SEED = 0.5, 77  # the dropout cases (train mode, and eval mode): p, and the seed right before the call
XRAW_HINT = Message("x_raw = self.dropout(attention) @ V_split.", "x_raw = self.dropout(attention) @ V_split입니다.")


@check(question="attention", points=3)
def test_attention_values(sub, options):
    """attention = softmax of the scores over the keys"""
    for name in ("self", "cross", "padding"):
        c = run_case(sub, options, name)
        judge(c.got, c.want, "attention", case_what(name), lambda: torch.softmax(*own(c.got, "scores"), dim=-1),
              hint=SOFTMAX_HINT, explain=explain(sub, options, c, "attention"))


EVAL_DROPOUT_HINT = Message(
    "In eval mode dropout must do nothing, whatever dropout_p is: apply it through the module, "
    "x_raw = self.dropout(attention) @ V_split (nn.Dropout follows .train() and .eval()). F.dropout(attention, p) "
    "drops weights in eval mode too: it needs training=self.training.",
    "eval 모드에서는 dropout_p가 얼마든 dropout이 아무 일도 하지 않아야 합니다. 모듈로 적용하세요: "
    "x_raw = self.dropout(attention) @ V_split (nn.Dropout은 .train()과 .eval()을 따릅니다). "
    "F.dropout(attention, p)는 eval 모드에서도 가중치를 0으로 만듭니다: training=self.training이 필요합니다.")


@check(question="attention", points=3)
def test_x_raw_values(sub, options):
    """x_raw = attention @ V_split (eval mode: dropout does nothing, also with dropout_p > 0)"""
    for name in ("self", "cross", "causal"):
        c = run_case(sub, options, name)
        judge(c.got, c.want, "x_raw", case_what(name, "eval"),
              lambda: torch.matmul(*own(c.got, "attention", "V_split")), hint=XRAW_HINT,
              explain=explain(sub, options, c, "x_raw"))
    # The cases above are built with dropout_p=0.0, where a dropout that also runs in eval mode changes nothing.
    p = TRAIN_P
    c = run_case(sub, options, "self", dropout_p=p, seed_call=TRAIN_SEED)
    judge(c.got, c.want, "x_raw", case_what("self", "eval", dropout_p=p),
          lambda: torch.matmul(*own(c.got, "attention", "V_split")), hint=EVAL_DROPOUT_HINT,
          explain=explain(sub, options, c, "x_raw"))


@check(question="attention", points=1)
def test_x_raw_dropout(sub, options):
    """Train mode: dropout is applied to the attention weights, before they weigh V_split"""
    p, seed_call = TRAIN_P, TRAIN_SEED
    c = run_case(sub, options, "self", mode="train", dropout_p=p, seed_call=seed_call)
    got, want = c.got, c.want

    def own_dropout():
        attention, v = own(got, "attention", "V_split")
        # With the module's own dropout probability: one fixed in __init__ (nn.Dropout(p=0.1)) is the init
        # check's to charge, not this one's (it was charged twice).
        held = c.m.describe("dropout")["attrs"].get("dropout") or {}
        q = held.get("p") if type(held.get("p")) is float and 0.0 <= held["p"] < 1.0 else p
        drop = nn.Dropout(q).train()
        manual_seed(seed_call)
        whole = R.weigh_values(attention, v, drop)
        # A forward that loops over its heads draws each head's mask in turn (variants round 3: a correct
        # per-head loop, self.dropout(attention[:, h]) @ V_split[:, h], lost this point).
        manual_seed(seed_call)
        per_head = torch.stack([R.weigh_values(attention[:, h], v[:, h], drop) for h in range(attention.shape[1])],
                               dim=1)
        # The weights kept with their axes in another memory order (variants round 4: einsum "bqhk" computes them
        # as (n_batch, n_Q, n_head, n_K)): the same dropout, each draw landing on the element at its place there.
        laid = []
        for perm in itertools.permutations(range(attention.dim())) if attention.dim() <= 4 else ():
            if perm != tuple(range(attention.dim())):
                back = [perm.index(i) for i in range(len(perm))]
                manual_seed(seed_call)
                laid.append(R.weigh_values(attention, v, lambda a: drop(a.permute(perm).contiguous()).permute(back)))
        return (whole, per_head, *laid)
    judge(got, want, "x_raw", case_what("self", "train", dropout_p=p), own_dropout,
          hint=Message("In train mode x_raw = self.dropout(attention) @ V_split: dropout acts on the attention "
                       "weights (after the softmax), once, through the nn.Dropout module.",
                       "train 모드에서 x_raw = self.dropout(attention) @ V_split입니다. dropout은 softmax 뒤의 "
                       "어텐션 가중치에 nn.Dropout 모듈로 한 번 적용합니다."), explain=explain(sub, options, c, "x_raw"))


def _after_dropout(got: torch.Tensor, before: torch.Tensor, p: float) -> bool:
    """Whether `got` is `before` through a dropout of probability p: each entry zeroed or scaled by 1/(1-p), and
    some nonzero weight zeroed."""
    if got.shape != before.shape or got.dtype != before.dtype:
        return False
    got, before = got.to(torch.float64), before.detach().to(torch.float64)
    zeroed = (got == 0) & (before != 0)
    kept = got != 0
    # Some weight kept too: an all-zero attention was told it is "the weights AFTER dropout".
    return bool(zeroed.any()) and bool(kept.any()) and _close(got[kept], before[kept] / (1 - p), 1e-5)


@check(question="attention", points=1)
def test_attention_before_dropout(sub, options):
    """Train mode: the attention returned is the weights before dropout"""
    p, seed_call = TRAIN_P, TRAIN_SEED
    c = run_case(sub, options, "self", mode="train", dropout_p=p, seed_call=seed_call)
    what = case_what("self", "train", dropout_p=p)
    got = entry(c.got, "attention", what)
    if _after_dropout(got, c.want["attention"], p):
        fail(f"`{what}`: the attention you return is the weights AFTER dropout (some are zeroed, the others scaled "
             f"by 1/(1-p) = {1 / (1 - p):g}). Return the attention BEFORE dropout, the softmax of the scores, and "
             "apply the dropout only where the weights meet the values: x_raw = self.dropout(attention) @ V_split.",
             f"`{what}`: 반환한 attention이 dropout을 적용한 뒤의 가중치입니다 (일부는 0이 되고 나머지는 "
             f"1/(1-p) = {1 / (1 - p):g}배가 됨). attention은 dropout 전의 값, 즉 scores의 소프트맥스를 반환하고 "
             "dropout은 값에 곱할 때만 적용하세요: x_raw = self.dropout(attention) @ V_split.")
    judge(c.got, c.want, "attention", what, lambda: torch.softmax(*own(c.got, "scores"), dim=-1),
          hint=Message("In train mode too, out['attention'] is the softmax of the scores, before dropout: dropout "
                       "only acts inside x_raw = self.dropout(attention) @ V_split.",
                       "train 모드에서도 out['attention']은 dropout 전의 값, 즉 scores의 소프트맥스입니다. dropout은 "
                       "x_raw = self.dropout(attention) @ V_split 안에서만 적용합니다."),
          explain=explain(sub, options, c, "attention"))


# ------------------------------------------------------------------------------- merge

MERGE_HINT = Message("x_rsh1 = x_raw.permute(0, 2, 1, 3).contiguous() puts the heads next to each other for every "
                     "query; x_rsh2 = x_rsh1.view(n_batch, -1, d_feat) glues them into one feature vector.",
                     "x_rsh1 = x_raw.permute(0, 2, 1, 3).contiguous()로 쿼리마다 헤드를 나란히 놓고, "
                     "x_rsh2 = x_rsh1.view(n_batch, -1, d_feat)로 하나의 특징 벡터로 이어 붙입니다.")


@check(question="merge", points=3)
def test_x_rsh1_values(sub, options):
    """x_rsh1: heads moved behind the query axis"""
    for name in ("self", "cross"):
        c = run_case(sub, options, name)
        judge(c.got, c.want, "x_rsh1", case_what(name), lambda: R.heads_to_back(*own(c.got, "x_raw")),
              hint=MERGE_HINT, explain=explain(sub, options, c, "x_rsh1"))


@check(question="merge", points=4)
def test_x_rsh2_values(sub, options):
    """x_rsh2: the heads merged back into d_feat features"""
    for name in ("self", "cross"):
        c = run_case(sub, options, name)
        judge(c.got, c.want, "x_rsh2", case_what(name), lambda: R.merge_heads(*own(c.got, "x_rsh1"), c.ref.d_feat),
              hint=MERGE_HINT, explain=explain(sub, options, c, "x_rsh2"))


# ------------------------------------------------------------------------------- output

def _detached(t):
    return None if t is None else t.detach()


OUT_HINT = Message("x = self.lin_O(x_rsh2): the output projection of the merged heads, nothing added.",
                   "x = self.lin_O(x_rsh2): 합친 헤드에 출력 투영만 적용하고 다른 것은 더하지 않습니다.")


def check_output(sub, options, names):
    for name in names:
        c = run_case(sub, options, name)
        judge(c.got, c.want, "x", case_what(name),
              lambda: F.linear(*own(c.got, "x_rsh2"), c.ref.lin_O.weight.detach(), _detached(c.ref.lin_O.bias)),
              hint=OUT_HINT, explain=explain(sub, options, c, "x"))


@check(question="output", points=5)
def test_output_values(sub, options):
    """x values (self-attention, with and without a mask; in train mode, no dropout after lin_O)"""
    check_output(sub, options, ("self", "padding"))
    # The notes apply dropout to the attention weights only: in train mode x is still lin_O(x_rsh2).
    p, seed_call = TRAIN_P, TRAIN_SEED
    c = run_case(sub, options, "self", mode="train", dropout_p=p, seed_call=seed_call)
    judge(c.got, c.want, "x", case_what("self", "train", dropout_p=p),
          lambda: F.linear(*own(c.got, "x_rsh2"), c.ref.lin_O.weight.detach(), _detached(c.ref.lin_O.bias)),
          hint=Message("Dropout belongs on the attention weights only (x_raw = self.dropout(attention) @ V_split); "
                       "in train mode too the output is x = self.lin_O(x_rsh2), with no dropout after it.",
                       "dropout은 어텐션 가중치에만 적용합니다 (x_raw = self.dropout(attention) @ V_split). "
                       "train 모드에서도 출력은 x = self.lin_O(x_rsh2)이고 그 뒤에 dropout을 적용하지 않습니다."),
          explain=explain(sub, options, c, "x"))


@check(question="output", points=3)
def test_output_cross(sub, options):
    """x values with different Q, K, V (n_Q != n_K)"""
    check_output(sub, options, ("cross",))
