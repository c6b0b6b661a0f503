"""Public checks for the step exercises of 3.4.1 and 3.5.1 - 3.5.2: every blank of those cells, on the
notebook's own inputs, against the values the notebook prints (the dropout demo against this torch's own)."""
import torch

from assignments.attention.common import INPUTS
from assignments.attention.steps import (ATTN_SCORE_22, ATTN_SCORES_2, ATTN_WEIGHTS_2, CONTEXT_VEC_2, MASK_SIMPLE,
                                         MASKED, MASKED_SIMPLE, MASKED_SIMPLE_NORM, QUERY_2, call, check_dropout,
                                         check_qkv_weights, check_query_key_value, dropout_call, fn,
                                         notebook_scores_351, notebook_weights, query_key_value_call)
from autograder.checks import check, each, expect_close

# ------------------------------------------------------------------------------- 3.4.1

@check(question="steps", points=1, section="3.4.1")
def test_qkv_weights_notebook(sub):
    """qkv_weights(3, 2) after torch.manual_seed(123) draws the notebook's W_query, W_key, W_value"""
    check_qkv_weights(sub, 123, 3, 2)


@check(question="steps", points=1, section="3.4.1")
def test_query_key_value_notebook(sub):
    """query_key_value(x_2, ...) gives query_2 = [0.4306, 1.4551]; on all inputs, (6, 2) queries, keys, values"""
    W = notebook_weights()
    x_2 = INPUTS[1]
    with sub.ahead([query_key_value_call(x_2, W, "x_2"), query_key_value_call(INPUTS, W, "inputs")]):
        query_2, _key_2, _value_2 = check_query_key_value(sub, x_2, W, "x_2")
        expect_close(query_2, QUERY_2, "query_key_value(x_2, W_query, W_key, W_value)[0] (query_2)")
        check_query_key_value(sub, INPUTS, W, "inputs")


@check(question="steps", points=1, section="3.4.1")
def test_scores_of_query_2_notebook(sub):
    """dot_score(query_2, keys[1]) = 1.8524 and query_scores(query_2, keys) prints attn_scores_2"""
    W_query, W_key, _ = notebook_weights()
    query_2, keys = INPUTS[1] @ W_query, INPUTS @ W_key
    keys_2 = keys[1]
    with sub.ahead([fn("dot_score", query_2, keys_2), fn("query_scores", query_2, keys)]):
        expect_close(call(sub, "dot_score", query_2, keys_2), ATTN_SCORE_22, "dot_score(query_2, keys_2)")
        expect_close(call(sub, "query_scores", query_2, keys), ATTN_SCORES_2, "query_scores(query_2, keys)")


@check(question="steps", points=1, section="3.4.1")
def test_scaled_softmax_notebook(sub):
    """scaled_softmax(attn_scores_2, d_k=2) prints attn_weights_2; on the -inf masked scores, the causal weights"""
    W_query, W_key, _ = notebook_weights()
    scores = INPUTS[1] @ W_query @ (INPUTS @ W_key).T
    attn_scores, _ = notebook_scores_351()
    masked = attn_scores.masked_fill(torch.triu(torch.ones(6, 6), diagonal=1).bool(), -torch.inf)
    with sub.ahead([fn("scaled_softmax", scores, 2), fn("scaled_softmax", masked, 2)]):
        expect_close(call(sub, "scaled_softmax", scores, 2), ATTN_WEIGHTS_2, "scaled_softmax(attn_scores_2, d_k)")
        expect_close(call(sub, "scaled_softmax", masked, 2), MASKED_SIMPLE_NORM,
                     "scaled_softmax(masked, d_k) (3.5.1)")


@check(question="steps", points=1, section="3.4.1")
def test_weighted_sum_notebook(sub):
    """weighted_sum(attn_weights_2, values) prints context_vec_2 = [0.3061, 0.8210]"""
    W_query, W_key, W_value = notebook_weights()
    weights = torch.softmax(INPUTS[1] @ W_query @ (INPUTS @ W_key).T / 2 ** 0.5, dim=-1)
    expect_close(call(sub, "weighted_sum", weights, INPUTS @ W_value), CONTEXT_VEC_2,
                 "weighted_sum(attn_weights_2, values)")


# ------------------------------------------------------------------------------- 3.5.1 - 3.5.2

@check(question="steps", points=1, section="3.5.1")
def test_simple_mask_notebook(sub):
    """simple_mask(6), apply_simple_mask and renormalize print mask_simple, masked_simple, masked_simple_norm"""
    _, attn_weights = notebook_scores_351()
    masked_simple = attn_weights * MASK_SIMPLE
    with sub.ahead([fn("simple_mask", 6), fn("apply_simple_mask", attn_weights, MASK_SIMPLE),
                    fn("renormalize", masked_simple)]):
        each(lambda: expect_close(call(sub, "simple_mask", 6), MASK_SIMPLE, "simple_mask(context_length)"),
             lambda: expect_close(call(sub, "apply_simple_mask", attn_weights, MASK_SIMPLE), MASKED_SIMPLE,
                                  "apply_simple_mask(attn_weights, mask_simple)"),
             lambda: expect_close(call(sub, "renormalize", masked_simple), MASKED_SIMPLE_NORM,
                                  "renormalize(masked_simple)"))


@check(question="steps", points=1, section="3.5.2")
def test_mask_future_notebook(sub):
    """mask_future(attn_scores) prints `masked`: -inf above the diagonal, the scores elsewhere"""
    attn_scores, _ = notebook_scores_351()
    expect_close(call(sub, "mask_future", attn_scores), MASKED, "mask_future(attn_scores)")


@check(question="steps", points=1, section="3.5.2")
def test_dropout_notebook(sub):
    """apply_dropout(torch.ones(6, 6), 0.5) and apply_dropout(attn_weights, 0.5) after torch.manual_seed(123)"""
    ones = torch.ones(6, 6)
    with sub.ahead([dropout_call(ones, 0.5, 123, "example"), dropout_call(MASKED_SIMPLE_NORM, 0.5, 123, "attn_weights")]):
        check_dropout(sub, ones, 0.5, 123, "example")
        check_dropout(sub, MASKED_SIMPLE_NORM, 0.5, 123, "attn_weights")
