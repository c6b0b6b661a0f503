"""Hidden checks for the step exercises of 3.4.1 and 3.5.1 - 3.5.2: other sizes and seeds, against the reference."""
import torch

from assignments.attention.common import explain, randn
from assignments.attention.steps import call, check_dropout, check_qkv_weights, check_query_key_value
from autograder.checks import check, each, expect_close
from reference import attention as R


@check(question="steps", points=1)
def test_weight_steps_other_sizes(sub):
    """3.4.1 steps on hidden seeds and sizes"""
    for seed, T, d_in, d_out in ((5150, 7, 5, 4), (2718, 4, 2, 3)):
        check_qkv_weights(sub, seed, d_in, d_out)
        x = randn(seed, T, d_in)
        W = tuple(randn(seed + i + 1, d_in, d_out) for i in range(3))
        check_query_key_value(sub, x[2], W, "x[2]")
        check_query_key_value(sub, x, W, "x")
        q, keys, values = x[2] @ W[0], x @ W[1], x @ W[2]
        expect_close(call(sub, "dot_score", q, keys[0]), R.dot_score(q, keys[0]), "dot_score(query, key)")
        scores = call(sub, "query_scores", q, keys)
        expect_close(scores, R.query_scores(q, keys), "query_scores(query, keys)")
        weights = R.scaled_softmax(R.query_scores(q, keys), d_out)
        expect_close(call(sub, "scaled_softmax", R.query_scores(q, keys), d_out), weights,
                     f"scaled_softmax(attn_scores, {d_out})",
                     explain=explain(sub, "scaled_softmax", R.query_scores(q, keys), d_out))
        expect_close(call(sub, "weighted_sum", weights, values), R.weighted_sum(weights, values),
                     "weighted_sum(attn_weights, values)")


@check(question="steps", points=1)
def test_mask_steps_other_sizes(sub):
    """3.5.1 - 3.5.2 steps on hidden sizes and seeds"""
    for seed, n in ((6021, 4), (1911, 9)):
        scores = randn(seed, n, n)
        weights = torch.softmax(scores, dim=-1)
        mask = R.simple_mask(n)
        each(lambda: expect_close(call(sub, "simple_mask", n), mask, f"simple_mask({n})"),
             lambda: expect_close(call(sub, "apply_simple_mask", weights, mask), R.apply_simple_mask(weights, mask),
                                  "apply_simple_mask(attn_weights, mask_simple)"),
             lambda: expect_close(call(sub, "renormalize", weights * mask), R.renormalize(weights * mask),
                                  "renormalize(masked_simple)", explain=explain(sub, "renormalize", weights * mask)),
             lambda: expect_close(call(sub, "mask_future", scores), R.mask_future(scores), "mask_future(attn_scores)",
                                  explain=explain(sub, "mask_future", scores)),
             lambda: check_dropout(sub, weights, 0.3, seed, "attn_weights"))
