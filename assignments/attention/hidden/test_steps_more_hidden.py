"""Hidden checks for the step exercises of 3.4.1 and 3.5.1 - 3.5.2: other sizes and seeds, against the reference."""
import torch

from assignments.attention.common import explain, randn
from assignments.attention.steps import (call, check_dropout, check_qkv_weights, check_query_key_value, dropout_call, fn,
                                         qkv_weights_call, query_key_value_call)
from autograder.checks import check, each, expect_close
from reference import attention as R


def _weight_step_inputs(seed: int, T: int, d_in: int, d_out: int) -> tuple:
    """Each step's inputs drawn on their own: none is what another call of the check should return. The calls are
    sent to the worker in one sequence (Submission.ahead), where a step function can read the later steps' inputs:
    with the chain of the notebook (query_scores on query_key_value's q and keys, scaled_softmax on query_scores'
    scores, weighted_sum on scaled_softmax's weights) each step could return the next one's input and pass without
    its own work (red team s12, round 20)."""
    x = randn(seed, T, d_in)
    x2 = x[2]  # (one object: a call sent ahead is known by its very arguments)
    W = tuple(randn(seed + i + 1, d_in, d_out) for i in range(3))
    q, keys, values = randn(seed + 11, d_out), randn(seed + 12, T, d_out), randn(seed + 13, T, d_out)
    scores = randn(seed + 14, T) * 2
    weights = R.scaled_softmax(randn(seed + 15, T) * 2, d_out)
    return x, x2, W, q, keys, keys[0], values, scores, weights


WEIGHT_STEP_SIZES = ((5150, 7, 5, 4), (2718, 4, 2, 3))
MASK_STEP_SIZES = ((6021, 4), (1911, 9))


@check(question="steps", points=1)
def test_weight_steps_other_sizes(sub):
    """3.4.1 steps on hidden seeds and sizes"""
    inputs = [(size, _weight_step_inputs(*size)) for size in WEIGHT_STEP_SIZES]
    calls = []  # every call below, in order, sent to the worker together
    for (seed, _T, d_in, d_out), (x, x2, W, q, keys, key0, values, scores, weights) in inputs:
        calls += [qkv_weights_call(seed, d_in, d_out), query_key_value_call(x2, W, "x[2]"),
                  query_key_value_call(x, W, "x"), fn("dot_score", q, key0), fn("query_scores", q, keys),
                  fn("scaled_softmax", scores, d_out), fn("weighted_sum", weights, values)]
    with sub.ahead(calls):
        for (seed, _T, d_in, d_out), (x, x2, W, q, keys, key0, values, scores, weights) in inputs:
            check_qkv_weights(sub, seed, d_in, d_out)
            check_query_key_value(sub, x2, W, "x[2]")
            check_query_key_value(sub, x, W, "x")
            expect_close(call(sub, "dot_score", q, key0), R.dot_score(q, key0), "dot_score(query, key)")
            expect_close(call(sub, "query_scores", q, keys), R.query_scores(q, keys), "query_scores(query, keys)")
            expect_close(call(sub, "scaled_softmax", scores, d_out), R.scaled_softmax(scores, d_out),
                         f"scaled_softmax(attn_scores, {d_out})",
                         explain=explain(sub, "scaled_softmax", scores, d_out))
            expect_close(call(sub, "weighted_sum", weights, values), R.weighted_sum(weights, values),
                         "weighted_sum(attn_weights, values)")


def _mask_step_inputs(seed: int, n: int) -> tuple:
    """As _weight_step_inputs: apply_simple_mask gets a mask of another size than simple_mask's (n + 1), and
    renormalize other masked weights than apply_simple_mask's, so no call's input is another's answer."""
    scores = randn(seed, n, n)
    weights = torch.softmax(scores, dim=-1)
    m = n + 1
    mask = R.simple_mask(m)
    return scores, weights, torch.softmax(randn(seed + 1, m, m), dim=-1), mask, \
        torch.softmax(randn(seed + 2, m, m), dim=-1) * mask


@check(question="steps", points=1)
def test_mask_steps_other_sizes(sub):
    """3.5.1 - 3.5.2 steps on hidden sizes and seeds"""
    inputs = [(size, _mask_step_inputs(*size)) for size in MASK_STEP_SIZES]
    calls = []
    for (seed, n), (scores, weights, weights_m, mask, masked) in inputs:
        calls += [fn("simple_mask", n), fn("apply_simple_mask", weights_m, mask), fn("renormalize", masked),
                  fn("mask_future", scores), dropout_call(weights, 0.3, seed, "attn_weights")]
    with sub.ahead(calls):
        for (seed, n), (scores, weights, weights_m, mask, masked) in inputs:
            each(lambda: expect_close(call(sub, "simple_mask", n), R.simple_mask(n), f"simple_mask({n})"),
                 lambda: expect_close(call(sub, "apply_simple_mask", weights_m, mask),
                                      R.apply_simple_mask(weights_m, mask),
                                      "apply_simple_mask(attn_weights, mask_simple)"),
                 lambda: expect_close(call(sub, "renormalize", masked), R.renormalize(masked),
                                      "renormalize(masked_simple)", explain=explain(sub, "renormalize", masked)),
                 lambda: expect_close(call(sub, "mask_future", scores), R.mask_future(scores),
                                      "mask_future(attn_scores)", explain=explain(sub, "mask_future", scores)),
                 lambda: check_dropout(sub, weights, 0.3, seed, "attn_weights"))
