"""Public checks for the attention lab: the notebook's own printed figures and properties any correct code has.

These ship to students. Hidden checks add other seeds and shapes, compare with the instructor's reference,
and look at the mask fill, dropout, devices and gradients.
"""
import torch

from assignments.attention.common import (BATCH, INPUTS, _role, build, build_then, check_causality, check_eval_no_dropout,
                                          check_heads_structure, check_mask_buffer, check_rejects_bad_heads,
                                          check_short_sequence, check_signature, check_wrapper_matches_heads,
                                          confirm_figures, expect_working, explain, no_qkv_bias, projection_names)
from autograder.checks import check, expect_close, expect_shape, fail
from autograder.proxy import step

T = torch.tensor

# ------------------------------------------------------------------------------- 3.3 step exercises

@check(question="steps", points=1, section="3.3")
def test_softmax_naive_notebook(sub):
    """softmax_naive on the scores of query x^(2) (notebook 3.3.1)"""
    scores = T([0.9544, 1.4950, 1.4754, 0.8434, 0.7070, 1.0865])
    expect_close(sub.call("softmax_naive", scores), T([0.1385, 0.2379, 0.2333, 0.1240, 0.1082, 0.1581]),
                 "softmax_naive(attn_scores_2)", atol=1e-4)


@check(question="steps", points=1, section="3.3")
def test_attention_scores_notebook(sub):
    """attention_scores(inputs) is the 6x6 matrix of dot products (notebook 3.3.2)"""
    want = T([[0.9995, 0.9544, 0.9422, 0.4753, 0.4576, 0.6310],
              [0.9544, 1.4950, 1.4754, 0.8434, 0.7070, 1.0865],
              [0.9422, 1.4754, 1.4570, 0.8296, 0.7154, 1.0605],
              [0.4753, 0.8434, 0.8296, 0.4937, 0.3474, 0.6565],
              [0.4576, 0.7070, 0.7154, 0.3474, 0.6654, 0.2935],
              [0.6310, 1.0865, 1.0605, 0.6565, 0.2935, 0.9450]])
    expect_close(sub.call("attention_scores", INPUTS), want, "attention_scores(inputs)", atol=1e-4,
                 explain=explain(sub, "attention_scores", INPUTS))


@check(question="steps", points=1, section="3.3")
def test_context_vectors_notebook(sub):
    """context_vectors(inputs) matches the notebook's all_context_vecs"""
    want = T([[0.4421, 0.5931, 0.5790], [0.4419, 0.6515, 0.5683], [0.4431, 0.6496, 0.5671],
              [0.4304, 0.6298, 0.5510], [0.4671, 0.5910, 0.5266], [0.4177, 0.6503, 0.5645]])
    expect_close(sub.call("context_vectors", INPUTS), want, "context_vectors(inputs)", atol=1e-4,
                 explain=explain(sub, "context_vectors", INPUTS))


# ------------------------------------------------------------------------------- signatures

@check(question="SelfAttention_v1", points=1)
def test_v1_signature(sub):
    """SelfAttention_v1.__init__ takes (d_in, d_out)"""
    check_signature(sub, "SelfAttention_v1")


@check(question="SelfAttention_v2", points=1)
def test_v2_signature(sub):
    """SelfAttention_v2.__init__ takes (d_in, d_out, qkv_bias)"""
    check_signature(sub, "SelfAttention_v2")


@check(question="CausalAttention", points=1)
def test_causal_signature(sub):
    """CausalAttention.__init__ takes (d_in, d_out, context_length, dropout, qkv_bias)"""
    check_signature(sub, "CausalAttention")


@check(question="MultiHeadAttentionWrapper", points=1)
def test_wrapper_signature(sub):
    """MultiHeadAttentionWrapper.__init__ takes (d_in, d_out, context_length, dropout, num_heads, qkv_bias)"""
    check_signature(sub, "MultiHeadAttentionWrapper")


@check(question="MultiHeadAttention", points=1)
def test_mha_signature(sub):
    """MultiHeadAttention.__init__ takes (d_in, d_out, context_length, dropout, num_heads, qkv_bias)"""
    check_signature(sub, "MultiHeadAttention")


# ------------------------------------------------------------------------------- the notebook's printed outputs

@check(question="SelfAttention_v1", points=3)
def test_v1_notebook(sub):
    """SelfAttention_v1(3, 2) with torch.manual_seed(123) prints the notebook's values"""
    want = T([[0.2996, 0.8053], [0.3061, 0.8210], [0.3058, 0.8203],
              [0.2948, 0.7939], [0.2927, 0.7891], [0.2990, 0.8040]])
    expect_working(sub, "SelfAttention_v1")  # a module returning a constant (even the right one) earns nothing
    m, (res,) = build_then(sub, "SelfAttention_v1", 3, 2, seed=123, steps=[step("call", INPUTS)])
    expect_close(res["out"], want, "SelfAttention_v1(3, 2)(inputs)", explain=explain(sub, m, INPUTS, seeded="SelfAttention_v1"))
    confirm_figures(sub, m, INPUTS, "SelfAttention_v1(3, 2)(inputs)")


@check(question="SelfAttention_v2", points=3)
def test_v2_notebook(sub):
    """SelfAttention_v2(3, 2) with torch.manual_seed(789) prints the notebook's values"""
    want = T([[-0.0739, 0.0713], [-0.0748, 0.0703], [-0.0749, 0.0702],
              [-0.0760, 0.0685], [-0.0763, 0.0679], [-0.0754, 0.0693]])
    expect_working(sub, "SelfAttention_v2")  # a module returning a constant (even the right one) earns nothing
    m, (res,) = build_then(sub, "SelfAttention_v2", 3, 2, seed=789, steps=[step("call", INPUTS)])
    expect_close(res["out"], want, "SelfAttention_v2(3, 2)(inputs)", explain=explain(sub, m, INPUTS, seeded="SelfAttention_v2"))
    confirm_figures(sub, m, INPUTS, "SelfAttention_v2(3, 2)(inputs)")


@check(question="CausalAttention", points=3)
def test_causal_notebook(sub):
    """CausalAttention(3, 2, 6, 0.0) with seed 123 on the stacked batch prints the notebook's values"""
    row = T([[-0.4519, 0.2216], [-0.5874, 0.0058], [-0.6300, -0.0632],
             [-0.5675, -0.0843], [-0.5526, -0.0981], [-0.5299, -0.1081]])
    expect_working(sub, "CausalAttention")  # a module returning a constant (even the right one) earns nothing
    m, (res,) = build_then(sub, "CausalAttention", 3, 2, 6, 0.0, seed=123, steps=[step("call", BATCH)])
    expect_close(res["out"], torch.stack((row, row)), "CausalAttention(3, 2, 6, 0.0)(batch)",
                 explain=explain(sub, m, BATCH, seeded="CausalAttention"))
    confirm_figures(sub, m, BATCH, "CausalAttention(3, 2, 6, 0.0)(batch)")


@check(question="MultiHeadAttentionWrapper", points=3)
def test_wrapper_notebook(sub):
    """MultiHeadAttentionWrapper(3, 2, 6, 0.0, num_heads=2) with seed 123 prints the notebook's values"""
    row = T([[-0.4519, 0.2216, 0.4772, 0.1063], [-0.5874, 0.0058, 0.5891, 0.3257],
             [-0.6300, -0.0632, 0.6202, 0.3860], [-0.5675, -0.0843, 0.5478, 0.3589],
             [-0.5526, -0.0981, 0.5321, 0.3428], [-0.5299, -0.1081, 0.5077, 0.3493]])
    check_wrapper_matches_heads(sub, 123, 2, 6, 3, 2, 2, figure=torch.stack((row, row)))


@check(question="MultiHeadAttention", points=3)
def test_mha_notebook(sub):
    """MultiHeadAttention(3, 4, 6, 0.0, num_heads=2) with seed 123 prints the notebook's values"""
    row = T([[0.1184, 0.3120, -0.0847, -0.5774], [0.0178, 0.3221, -0.0763, -0.4225],
             [-0.0147, 0.3259, -0.0734, -0.3721], [-0.0116, 0.3138, -0.0708, -0.3624],
             [-0.0117, 0.2973, -0.0698, -0.3543], [-0.0132, 0.2990, -0.0689, -0.3490]])
    expect_working(sub, "MultiHeadAttention")  # a module returning a constant (even the right one) earns nothing
    m, (res,) = build_then(sub, "MultiHeadAttention", 3, 4, 6, 0.0, 2, seed=123, steps=[step("call", BATCH)])
    expect_close(res["out"], torch.stack((row, row)), "MultiHeadAttention(3, 4, 6, 0.0, num_heads=2)(batch)",
                 explain=explain(sub, m, BATCH, seeded="MultiHeadAttention"))
    confirm_figures(sub, m, BATCH, "MultiHeadAttention(3, 4, 6, 0.0, num_heads=2)(batch)")


# ------------------------------------------------------------------------------- properties

@check(question="SelfAttention_v2", points=1)
def test_v2_qkv_bias(sub):
    """SelfAttention_v2(..., qkv_bias=True) gives the three projections a bias"""
    missing_argument = no_qkv_bias(sub, "SelfAttention_v2")
    if missing_argument is not None:  # (in words, not as the TypeError of the call below)
        expect_working(sub, "SelfAttention_v2")
        fail(missing_argument.en, missing_argument.ko)
    m = build(sub, "SelfAttention_v2", 3, 2, seed=1, qkv_bias=True)
    shapes = {n: tuple(s) for n, s, _ in m.describe()["params"]}
    params = set(shapes)
    # By role where the projections are named otherwise (W_q, q_proj, query): each of the three has a bias.
    biased = {_role(n) for n in params if n.endswith(".bias")}
    missing = [f"{w}.bias" for w, role in (("W_query", "query"), ("W_key", "key"), ("W_value", "value"))
               if f"{w}.bias" not in params and role not in biased]
    # One fused projection nn.Linear(d_in, 3 * d_out, bias=qkv_bias), split in forward: its bias serves all three
    # (variants round: a correct fused SelfAttention_v2 lost this point, while its fused CausalAttention did not).
    if any(n.endswith(".bias") and s == (6,) and shapes.get(n[:-len("bias")] + "weight") == (6, 3)
           for n, s in shapes.items()):
        missing = []
    names = projection_names(params)
    if missing and names is not None:
        fail(f"qkv_bias=True should create {', '.join(missing)}: {names.en}.",
             f"qkv_bias=True이면 {', '.join(missing)}이(가) 있어야 합니다: {names.ko}.")
    if missing:
        fail(f"qkv_bias=True should create {', '.join(missing)} (nn.Linear(d_in, d_out, bias=qkv_bias)).",
             f"qkv_bias=True이면 {', '.join(missing)}이(가) 있어야 합니다 (nn.Linear(d_in, d_out, bias=qkv_bias)).")
    expect_working(sub, "SelfAttention_v2")


@check(question="SelfAttention_v1", points=1)
def test_v1_shape(sub):
    """SelfAttention_v1(5, 4) maps 7 tokens of size 5 to 7 vectors of size 4"""
    x = torch.rand(7, 5, generator=torch.Generator().manual_seed(5))
    _m, (res,) = build_then(sub, "SelfAttention_v1", 5, 4, seed=5, steps=[step("call", x)])
    expect_shape(res["out"], (7, 4), "SelfAttention_v1(5, 4)(x)")
    expect_working(sub, "SelfAttention_v1")


@check(question="CausalAttention", points=2)
def test_causal_mask_buffer(sub):
    """CausalAttention registers the buffer `mask` = triu(ones, diagonal=1)"""
    check_mask_buffer(sub, "CausalAttention")


@check(question="MultiHeadAttention", points=1)
def test_mha_mask_buffer(sub):
    """MultiHeadAttention registers the buffer `mask` = triu(ones, diagonal=1)"""
    check_mask_buffer(sub, "MultiHeadAttention")


@check(question="CausalAttention", points=2)
def test_causal_is_causal(sub):
    """CausalAttention: future tokens do not change earlier outputs"""
    check_causality(sub, "CausalAttention", seed=11)


@check(question="MultiHeadAttention", points=1)
def test_mha_is_causal(sub):
    """MultiHeadAttention: future tokens do not change earlier outputs"""
    check_causality(sub, "MultiHeadAttention", seed=12)


@check(question="CausalAttention", points=1)
def test_causal_short_sequence(sub):
    """CausalAttention accepts fewer tokens than context_length"""
    check_short_sequence(sub, "CausalAttention", seed=13)


@check(question="CausalAttention", points=1)
def test_causal_eval_disables_dropout(sub):
    """CausalAttention in eval mode ignores dropout"""
    check_eval_no_dropout(sub, "CausalAttention", seed=14)


@check(question="MultiHeadAttentionWrapper", points=2)
def test_wrapper_heads_structure(sub):
    """MultiHeadAttentionWrapper keeps num_heads separate CausalAttention modules in an nn.ModuleList"""
    check_heads_structure(sub)


@check(question="MultiHeadAttention", points=1)
def test_mha_rejects_indivisible(sub):
    """MultiHeadAttention refuses a d_out that num_heads does not divide"""
    check_rejects_bad_heads(sub)
