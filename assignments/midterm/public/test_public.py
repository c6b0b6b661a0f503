"""Public checks for the midterm: each question loads, constructs, and returns the right shapes.

Nothing here depends on a student's variant or shows a value, so these checks can run during the exam
([exam] feedback = "runs" shows only whether each one passed). The check names start with the stage they
test ("constructs", "shapes"), which is how `grade check` groups them in exam mode.
"""
from assignments.midterm.common import build_block, build_mha, build_sdpa, call, call_sdpa, randn, shapes_ok
from autograder.checks import check, expect_tensor


@check(question="MultiHeadAttention", points=1, name="constructs: MultiHeadAttention(5, 12)")
def test_mha_constructs(sub):
    build_mha(sub, 5, 12)


@check(question="MultiHeadAttention", points=2, name="shapes: MultiHeadAttention(5, 12)(x) for x of shape (2, 4, 5)")
def test_mha_shapes(sub):
    what = "MultiHeadAttention(5, 12)(x)"
    shapes_ok(call(build_mha(sub, 5, 12), randn(0, 2, 4, 5), what=what), (2, 4, 12), what)


# Worth nothing: constructing a module with no __init__ of its own proves nothing (the skeleton does it).
@check(question="ScaledDotProductAttention", points=0, name="constructs: ScaledDotProductAttention()")
def test_sdpa_constructs(sub):
    build_sdpa(sub)


@check(question="ScaledDotProductAttention", points=3,
       name="shapes: ScaledDotProductAttention()(Q, K, V) for Q, K, V of shape (2, 2, 5, 4)")
def test_sdpa_shapes(sub):
    what = "ScaledDotProductAttention()(Q, K, V)"
    out, attn = call_sdpa(build_sdpa(sub), randn(1, 2, 2, 5, 4), randn(2, 2, 2, 5, 4), randn(3, 2, 2, 5, 4),
                          what=what)
    shapes_ok(out, (2, 2, 5, 4), f"{what}[0]")
    shapes_ok(attn, (2, 2, 5, 5), f"{what}[1]")


@check(question="ScaledDotProductAttention", points=1, name="shapes: window_mask(5)")
def test_window_mask_shape(sub):
    shapes_ok(expect_tensor(sub.call("window_mask", 5), "window_mask(5)"), (5, 5), "window_mask(5)")


@check(question="TransformerBlock", points=1, name="constructs: TransformerBlock(12, 2)")
def test_block_constructs(sub):
    build_block(sub, 12, 2)


@check(question="TransformerBlock", points=2, name="shapes: TransformerBlock(12, 2)(x) for x of shape (2, 4, 12)")
def test_block_shapes(sub):
    what = "TransformerBlock(12, 2)(x)"
    shapes_ok(call(build_block(sub, 12, 2), randn(4, 2, 4, 12), what=what), (2, 4, 12), what)
