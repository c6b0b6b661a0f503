"""Public checks for the midterm: each question loads, constructs, and returns the right shapes.

Nothing here depends on a student's variant or shows a value, so these checks can run during the exam
([exam] feedback = "runs" shows only whether each one passed). The check names start with the stage they
test ("constructs", "shapes"), which is how `grade check` groups them in exam mode.
"""
from assignments.midterm.common import (build_block, build_mha, build_sdpa, call, call_block, call_sdpa,
                                        expect_from_input, expect_from_keys, expect_from_weights, expect_parameters,
                                        randn, shapes_ok)
from autograder.checks import check, expect_tensor, fail


@check(question="MultiHeadAttention", points=1, name="constructs: MultiHeadAttention(5, 12)")
def test_mha_constructs(sub):
    expect_parameters(build_mha(sub, 5, 12), "MultiHeadAttention(5, 12)")


@check(question="MultiHeadAttention", points=2, name="shapes: MultiHeadAttention(5, 12)(x) for x of shape (2, 4, 5)")
def test_mha_shapes(sub):
    what = "MultiHeadAttention(5, 12)(x)"
    m, x = build_mha(sub, 5, 12), randn(0, 2, 4, 5)
    shapes_ok(call(m, x, what=what, seed=0), (2, 4, 12), what)
    # Evidence: computed from each example's input, with the module's weights (zeros of that shape kept it too).
    expect_from_input(lambda x: (call(m, x, what=what, seed=0),), (x,), what, seed=5)
    expect_from_weights(m, lambda: call(m, x, what=what, seed=0), what, seed=6)


# Worth nothing: constructing a module with no __init__ of its own proves nothing (the skeleton does it).
@check(question="ScaledDotProductAttention", points=0, name="constructs: ScaledDotProductAttention()")
def test_sdpa_constructs(sub):
    build_sdpa(sub)


@check(question="ScaledDotProductAttention", points=3,
       name="shapes: ScaledDotProductAttention()(Q, K, V) for Q, K, V of shape (2, 2, 5, 4)")
def test_sdpa_shapes(sub):
    what = "ScaledDotProductAttention()(Q, K, V)"
    m, qkv = build_sdpa(sub), (randn(1, 2, 2, 5, 4), randn(2, 2, 2, 5, 4), randn(3, 2, 2, 5, 4))
    out, attn = call_sdpa(m, *qkv, what=what, seed=0)
    shapes_ok(out, (2, 2, 5, 4), f"{what}[0]")
    shapes_ok(attn, (2, 2, 5, 5), f"{what}[1]")
    expect_from_input(lambda *qkv: call_sdpa(m, *qkv, what=what, seed=0), qkv, what, seed=7)
    expect_from_keys(lambda *qkv: call_sdpa(m, *qkv, what=what, seed=0), qkv, ("out", "attention"), what, seed=10)


@check(question="ScaledDotProductAttention", points=1, name="shapes: window_mask(5)")
def test_window_mask_shape(sub):
    got = shapes_ok(expect_tensor(sub.call("window_mask", 5), "window_mask(5)"), (5, 5), "window_mask(5)")
    # Evidence: a mask, which lets some positions through and hides others (zeros of that shape kept it too).
    if not (bool((got != 0).any()) and bool((got == 0).any())):
        fail("`window_mask(5)` is the same value everywhere: a mask lets some positions through (1) and hides the "
             "others (0), so its shape earns nothing.",
             "`window_mask(5)`의 값이 모두 같습니다: 마스크는 어떤 위치는 통과시키고(1) 나머지는 가리므로(0), shape "
             "점수를 받을 수 없습니다.")


@check(question="TransformerBlock", points=1, name="constructs: TransformerBlock(12, 2)")
def test_block_constructs(sub):
    expect_parameters(build_block(sub, 12, 2), "TransformerBlock(12, 2)")


@check(question="TransformerBlock", points=2, name="shapes: TransformerBlock(12, 2)(x) for x of shape (2, 4, 12)")
def test_block_shapes(sub):
    what = "TransformerBlock(12, 2)(x)"
    m, x = build_block(sub, 12, 2), randn(4, 2, 4, 12)
    shapes_ok(call_block(m, x, what, seed=0), (2, 4, 12), what)
    # Evidence: computed from each example's input, with the block's weights (`return x` kept its shape too).
    expect_from_input(lambda x: (call(m, x, what=what, seed=0),), (x,), what, seed=8)
    expect_from_weights(m, lambda: call(m, x, what=what, seed=0), what, seed=9)
