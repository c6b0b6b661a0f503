"""Public checks for mha_intermediates: the shapes the notes print, the constructor, and the score scaling.

These ship to students. Hidden checks compare every intermediate tensor's values with the instructor's
reference (same weights copied in), with masks, cross-attention shapes and dropout.
"""
import torch

from assignments.mha_intermediates.common import (build_mha, call_text, check_demo_shapes, check_device_argument,
                                                  check_sdpa_demo, check_signature, divisor, entry, expect_layers,
                                                  forward_dict, informative, mha_class, other_divisor, randn,
                                                  scale_rule)
from autograder.checks import CheckFailure, check, expect_close, fail
from autograder.sourcecode import asserts_tuple

# ------------------------------------------------------------------------------- ScaledDotProductAttention

@check(question="sdpa", points=2)
def test_sdpa_demo_shapes(sub):
    """SDPA demo: Q[3, 30, 128] K[3, 50, 128] V[3, 50, 256] => out[3, 30, 256] attention[3, 30, 50]"""
    check_sdpa_demo(sub, "3d")


@check(question="sdpa", points=2)
def test_sdpa_multihead_demo_shapes(sub):
    """Multi-head SDPA demo: Q[3, 5, 30, 128] ... => out[3, 5, 30, 256] attention[3, 5, 30, 50]"""
    check_sdpa_demo(sub, "4d")


# ------------------------------------------------------------------------------- constructor

@check(question="mha_init", points=2)
def test_mha_signature(sub):
    """MultiHeadedAttention.__init__(d_feat=128, n_head=5, actv=F.relu, USE_BIAS=True, dropout_p=0.1, device=None)"""
    check_signature(sub)


@check(question="mha_init", points=1)
def test_mha_device_argument(sub):
    """MultiHeadedAttention(..., device=...) as in the notes: accepted, same layer, called on CPU tensors"""
    check_device_argument(sub)


@check(question="mha_init", points=2)
def test_mha_rejects_indivisible(sub):
    """MultiHeadedAttention raises ValueError when n_head does not divide d_feat"""
    # must work first, with its layers: a class that cannot be built, or makes none, earns nothing here
    expect_layers(build_mha(sub, 200, 5, seed=0), mha_class(sub), ("rejecting n_head earns nothing yet",
                                                                   "n_head를 거부하는 점수를 아직 받을 수 없습니다"))
    try:
        build_mha(sub, 200, 3, seed=0)
    except CheckFailure as e:
        # the worker reports the exception's classes: a real ValueError (or subclass), not a message naming one
        if "builtins.ValueError" in getattr(e, "raised", ()):
            return
        fail("`MultiHeadedAttention(d_feat=200, n_head=3)` should raise ValueError (200 is not a multiple of 3), "
             f"but: {e.message.en}",
             "`MultiHeadedAttention(d_feat=200, n_head=3)`는 ValueError를 발생시켜야 합니다 (200은 3의 배수가 아님). "
             f"실제: {e.message.ko}")
    if asserts_tuple(sub, mha_class(sub)):
        fail("`MultiHeadedAttention(d_feat=200, n_head=3)` was accepted: `assert (d_feat % n_head == 0, \"...\")` in "
             "__init__ asserts a (condition, message) tuple, which is always true, so it never fails. Raise "
             "ValueError when d_feat % n_head != 0: if d_feat % n_head != 0: raise ValueError(\"...\").",
             "`MultiHeadedAttention(d_feat=200, n_head=3)`가 만들어졌습니다: __init__의 "
             "`assert (d_feat % n_head == 0, \"...\")`는 (조건, 메시지) 튜플을 검사하는데, 튜플은 항상 참이라서 절대 "
             "실패하지 않습니다. d_feat % n_head != 0이면 ValueError를 발생시키세요: "
             "if d_feat % n_head != 0: raise ValueError(\"...\").")
    fail("`MultiHeadedAttention(d_feat=200, n_head=3)` was accepted, but 200 features cannot be cut into 3 equal "
         "heads. Raise ValueError in __init__ when d_feat % n_head != 0.",
         "`MultiHeadedAttention(d_feat=200, n_head=3)`가 만들어졌지만 200개의 특징은 헤드 3개로 똑같이 나눌 수 "
         "없습니다. __init__에서 d_feat % n_head != 0이면 ValueError를 발생시키세요.")


@check(question="mha_init", points=3)
def test_mha_layers(sub):
    """lin_Q, lin_K, lin_V, lin_O are nn.Linear(d_feat, d_feat) with a bias when USE_BIAS=True"""
    info = build_mha(sub, 12, 3, seed=0, USE_BIAS=True).describe()
    modules = dict(info.get("modules", []))
    params = {n: tuple(s) for n, s, _ in info.get("params", [])}
    for name in ("lin_Q", "lin_K", "lin_V", "lin_O"):
        if modules.get(name) != "Linear":
            found = f"a {modules[name]}" if name in modules else "nothing"
            fail(f"`self.{name}` should be an nn.Linear(d_feat, d_feat); found {found}.",
                 f"`self.{name}`은(는) nn.Linear(d_feat, d_feat)여야 합니다. 현재: {found}.")
        if params.get(f"{name}.weight") == (12, 12) and f"{name}.bias" not in params:
            fail(f"`self.{name}` has no bias although the layer was built with USE_BIAS=True: USE_BIAS is ignored. "
                 f"Pass the flag on instead of a fixed value: nn.Linear(d_feat, d_feat, bias=USE_BIAS) (the values of "
                 "the other checks are judged without the missing biases, so this is charged only here).",
                 f"USE_BIAS=True로 만들었는데 `self.{name}`에 bias가 없습니다: USE_BIAS를 무시하고 있습니다. 고정된 값 "
                 f"대신 이 인자를 넘기세요: nn.Linear(d_feat, d_feat, bias=USE_BIAS) (다른 검사의 값은 빠진 bias 없이 "
                 "평가하므로 여기서만 감점됩니다).")
        if params.get(f"{name}.weight") != (12, 12) or f"{name}.bias" not in params:
            fail(f"With d_feat=12 and USE_BIAS=True, `self.{name}` should have a (12, 12) weight and a bias; "
                 f"it has weight {params.get(f'{name}.weight')} and {'a' if f'{name}.bias' in params else 'no'} "
                 "bias.",
                 f"d_feat=12, USE_BIAS=True이면 `self.{name}`의 weight는 (12, 12)이고 bias가 있어야 합니다. "
                 f"현재 weight {params.get(f'{name}.weight')}, bias {'있음' if f'{name}.bias' in params else '없음'}.")


# ------------------------------------------------------------------------------- the notes' demo shapes

@check(question="projections", points=2)
def test_demo_shapes_projections(sub):
    """Demo (128 x 32 x 200, 5 heads): Q_feat, K_feat, V_feat are [128, 32, 200]"""
    check_demo_shapes(sub, ("Q_feat", "K_feat", "V_feat"))


@check(question="split", points=4)
def test_demo_shapes_split(sub):
    """Demo: Q_split, K_split, V_split are [128, 5, 32, 40] = [n_batch, n_head, n_src, d_head]"""
    check_demo_shapes(sub, ("Q_split", "K_split", "V_split"))


@check(question="scores", points=2)
def test_demo_shapes_scores(sub):
    """Demo: scores is [128, 5, 32, 32]"""
    check_demo_shapes(sub, ("scores",))


@check(question="attention", points=2)
def test_demo_shapes_attention(sub):
    """Demo: attention is [128, 5, 32, 32] and x_raw is [128, 5, 32, 40]"""
    check_demo_shapes(sub, ("attention", "x_raw"))


@check(question="merge", points=3)
def test_demo_shapes_merge(sub):
    """Demo: x_rsh1 is [128, 32, 5, 40] and x_rsh2 is [128, 32, 200]"""
    check_demo_shapes(sub, ("x_rsh1", "x_rsh2"))


@check(question="output", points=2)
def test_demo_shape_output(sub):
    """Demo: the output x is [128, 32, 200]"""
    check_demo_shapes(sub, ("x",))


# ------------------------------------------------------------------------------- scaling

@check(question="scores", points=4)
def test_scores_scaling(sub, options):
    """scores = Q_split @ K_split^T divided by the scale this assignment uses (see the notebook)"""
    d_feat, n_head = 24, 4
    m = build_mha(sub, d_feat, n_head, seed=5, dropout_p=0.0)
    x = randn(7, 2, 5, d_feat)
    what = call_text(d_feat, n_head)
    out = forward_dict(m, x, x, x, what=what)
    q, k, scores = entry(out, "Q_split", what), entry(out, "K_split", what), entry(out, "scores", what)
    try:
        if k.dim() >= 2 and q.dim() >= 2 and k.shape[-2] == q.shape[-1] != k.shape[-1]:
            raw = torch.matmul(q, k)  # K_split returned already transposed, (..., d_head, T): the split's to judge
        else:
            raw = torch.matmul(q, k.transpose(-2, -1))
    except RuntimeError:
        fail("scores could not be judged: Q_split and K_split cannot be multiplied (see the split checks).",
             "Q_split과 K_split을 곱할 수 없어 scores를 평가할 수 없습니다 (분할 검사를 보세요).")
    if not informative(raw):  # zeros (or a constant) divided by anything are what they were: no evidence
        fail("scores could not be judged: Q_split @ K_split^T is constant (Q_split or K_split holds no values of "
             "the input; see the projection and split checks), so the scaling earns nothing.",
             "scores를 평가할 수 없습니다: Q_split @ K_split^T가 상수입니다 (Q_split이나 K_split에 입력의 값이 "
             "없습니다. 투영과 분할 검사를 보세요). 따라서 스케일 점수를 받을 수 없습니다.")
    rule = scale_rule(options, d_feat, n_head)
    alt, alt_name = other_divisor(options, d_feat, n_head)
    if tuple(scores.shape) == tuple(raw.shape) and torch.allclose(scores, raw / alt, atol=1e-4, rtol=1e-4):
        fail(f"Your scores are divided by {alt_name}. " + rule.en,
             f"점수를 {alt_name}(으)로 나눴습니다. " + rule.ko)
    expect_close(scores, raw / divisor(options, d_feat, n_head), f"{what}(x, x, x)['scores']", hint=rule)
