"""The attention lab's known learner bugs, each the reference plus stated find/replace changes: one table that is
both the grader's diagnosis library (diagnose.py) and the grader's own test corpus (tests/test_variants.py)."""
from __future__ import annotations

import functools
from pathlib import Path

from autograder.bugtable import Change, Table, Variant, apply, ch, row, scope  # noqa: F401  (this table's API)
from autograder.messages import Message
from reference import attention as R

REFERENCE_SOURCE = Path(R.__file__).read_text(encoding="utf-8")
V = functools.partial(row, REFERENCE_SOURCE)  # one table row: the reference plus its changes (autograder/bugtable.py)
# The wrapper's class as the reference writes it (its lines, for a row that moves it).
WRAPPER_SOURCE = REFERENCE_SOURCE[slice(*scope(REFERENCE_SOURCE, "MultiHeadAttentionWrapper"))]

CA, MHA, WR, V1, V2 = "CausalAttention", "MultiHeadAttention", "MultiHeadAttentionWrapper", "SelfAttention_v1", \
    "SelfAttention_v2"
SCALE = "scores / keys.shape[-1] ** 0.5"
FILL = "scores = scores.masked_fill(self.mask.bool()[:num_tokens, :num_tokens], -torch.inf)"
TRIU = "torch.triu(torch.ones(context_length, context_length), diagonal=1)"
BUFFER = f'self.register_buffer("mask", {TRIU})'
HEAD_LIST = "[CausalAttention(d_in, d_out, context_length, dropout, qkv_bias) for _ in range(num_heads)]"
HEADS = f"nn.ModuleList(\n            {HEAD_LIST}\n        )"
DROP = "        weights = self.dropout(weights)\n"
NO_TRAIN_DROPOUT = "in train mode the attention weights get no dropout"
DEMO = """

# ---- trying it out, as in the notebook
torch.manual_seed(123)
inputs = torch.rand(6, 3)
batch = torch.stack((inputs, inputs), dim=0)
mha = MultiHeadAttentionWrapper(3, 2, 6, 0.0, num_heads=2)
print(mha(batch))
print(mha(batch).shape)
"""
NOT_CAUSAL_HINT = "masked_fill"  # seen: told to assign masked_fill's result, though masked_fill_ is in place
DROPOUT_HINT = "Apply self.dropout once"
# Python reads `s / d_k ** 0/5` as `(s / d_k ** 0) / 5`: the scores end up divided by 5 (a learner's report said
# "multiplies them by 5", which is what the parenthesised `s / (d_k ** 0/5)` does: TYPO_PAREN).
TYPO = Message("`scores / d_k ** 0/5` is read as `(scores / d_k ** 0) / 5` (`d_k ** 0` is 1), so the scores are "
               "divided by 5 instead of sqrt(d_k): a typo for `** 0.5`",
               "`scores / d_k ** 0/5`는 `(scores / d_k ** 0) / 5`로 계산되어(`d_k ** 0`은 1) 점수를 sqrt(d_k)가 아니라 "
               "5로 나눔: `** 0.5`의 오타")
TYPO_PAREN = Message("the scores are divided by `(d_k ** 0/5)`, which is 1/5 (a typo for `** 0.5`), so they are "
                     "multiplied by 5 instead of divided by sqrt(d_k)",
                     "점수를 `(d_k ** 0/5)`(= 1/5, `** 0.5`의 오타)로 나눠서 sqrt(d_k)로 나누는 대신 5배가 됨")
PAREN = "scores / (keys.shape[-1] ** 0/5)"
# Queries made with W_key and keys with W_query: the scores matrix is the transpose of the right one.
QK = "        keys = self.W_key(x)  # (b, T, d_out)\n        queries = self.W_query(x)\n"
QK_SWAPPED = "        keys = self.W_query(x)  # (b, T, d_out)\n        queries = self.W_key(x)\n"
QK_CAUSE = Message("the queries are made with W_key and the keys with W_query (swapped), so the scores are the "
                   "transpose of the right ones; write queries = self.W_query(x) and keys = self.W_key(x)",
                   "쿼리를 W_key로, 키를 W_query로 만들어(서로 바뀜) 점수 행렬이 올바른 것의 전치가 됨; "
                   "queries = self.W_query(x), keys = self.W_key(x)로 쓰세요")

# torch.tril(..., diagonal=1) where the notebook has torch.triu(..., diagonal=1): the mask hides the past and shows
# the future.
TRIL1 = Message("the mask is torch.tril(..., diagonal=1) (tril for triu): it hides each token, the next one and every "
                "earlier one, and leaves the later tokens visible, so the last token sees nothing (NaN); use "
                "torch.triu(..., diagonal=1)",
                "마스크가 torch.tril(..., diagonal=1)임(triu 대신 tril): 각 토큰 자신과 다음 토큰, 앞의 모든 토큰을 "
                "가리고 뒤의 토큰은 보이게 하므로 마지막 토큰은 아무것도 보지 못함(NaN); torch.triu(..., diagonal=1)을 "
                "쓰세요")

MHA_CORE = """        scores = queries @ keys.transpose(2, 3)  # (b, h, T, T)
        scores = scores.masked_fill(self.mask.bool()[:num_tokens, :num_tokens], -torch.inf)
        weights = torch.softmax(scores / keys.shape[-1] ** 0.5, dim=-1)
        weights = self.dropout(weights)

        context = (weights @ values).transpose(1, 2)  # (b, T, h, hd)"""
# MultiHeadAttention's heads one at a time, as learners write it: {drop} is what reaches `weights @ values`.
HEAD_LOOP = """        per_head = []
        for h in range(self.num_heads):
            scores = queries[:, h] @ keys[:, h].transpose(1, 2)
            scores = scores.masked_fill(self.mask.bool()[:num_tokens, :num_tokens], -torch.inf)
            weights = torch.softmax({scores} / keys.shape[-1] ** 0.5, dim=-1)
            per_head.append({drop} @ values[:, h])
        context = torch.stack(per_head, dim=2)  # (b, T, h, hd)"""

VARIANTS: list[Variant] = [
    # ---------------------------------------------------------------- 3.3 steps
    V("attention_scores_transposed", ch("attention_scores", "inputs @ inputs.T", "inputs.T @ inputs"),
      breaks="steps",
      en="attention_scores computes inputs.T @ inputs, a (d, d) matrix; the scores are inputs @ inputs.T, (T, T)",
      ko="attention_scores가 inputs.T @ inputs, 즉 (d, d) 행렬을 계산함; 점수는 inputs @ inputs.T, 즉 (T, T)입니다"),
    V("context_vectors_dim0", ch("context_vectors", "dim=-1", "dim=0"), breaks="steps",
      en="context_vectors normalises the columns of the scores (softmax dim=0); each row must sum to 1 (dim=-1)",
      ko="context_vectors가 점수의 열을 정규화함(softmax dim=0); 각 행의 합이 1이어야 합니다(dim=-1)"),
    V("steps_scaled_softmax_no_sqrt", ch("scaled_softmax", "attn_scores / d_k ** 0.5", "attn_scores / d_k"),
      breaks="steps", en="scaled_softmax divides the scores by d_k instead of its square root; divide by d_k ** 0.5",
      ko="scaled_softmax가 점수를 d_k의 제곱근이 아니라 d_k로 나눔; d_k ** 0.5로 나누세요"),
    V("steps_renormalize_missing_beside_a_class", ch("renormalize", "", "class BaseNormalizer:\n    pass\n"),
      breaks="steps", says=("`renormalize` is not defined",),
      never_says=("Rename `BaseNormalizer`", "`BaseNormalizer` is defined"),
      why="seen in a learner's repository: a helper class was offered as the rename of a missing step function "
          "(and again in the note at the top of the result: learners round rl13)"),
    # Learners round rl15 (a notebook without the step functions, with a display helper of its own): the helper was
    # offered as the missing step's rename ("`context_vectors` is missing but `show_head_context_vectors` is
    # defined"), though it takes other arguments.
    V("steps_display_helper_named_like_a_step",
      ch("context_vectors", "def context_vectors(inputs: torch.Tensor)", "def show_head_context_vectors(inputs, tokens)"),
      breaks="steps", says=("`context_vectors` is not defined",),
      never_says=("rename it to `context_vectors`", "Rename `show_head_context_vectors`")),
    V("steps_scores_as_a_value", ch("attention_scores", "", "attention_scores = torch.rand(6, 6)\n"),
      breaks="steps", says=("`attention_scores` in your file is a value computed at the top level",),
      why="learners round 5: the notebook's step computed at the top level under the step's name was reported as a "
          "crash of their function"),
    V("steps_renormalize_no_keepdim", ch("renormalize", "sum(dim=-1, keepdim=True)", "sum(dim=-1)"),
      breaks="steps",
      en="renormalize divides by sum(dim=-1) without keepdim=True, so column j is divided by the sum of row j; use "
         "sum(dim=-1, keepdim=True)",
      ko="renormalize가 keepdim=True 없이 sum(dim=-1)로 나눠서 j번째 열이 j번째 행의 합으로 나뉨; "
         "sum(dim=-1, keepdim=True)를 쓰세요"),
    V("steps_simple_mask_triu_and_renormalize_no_keepdim",
      ch("simple_mask", "torch.tril(torch.ones(context_length, context_length))",
         "torch.triu(torch.ones(context_length, context_length))"),
      ch("renormalize", "sum(dim=-1, keepdim=True)", "sum(dim=-1)"), breaks="steps",
      says=("simple_mask(", "renormalize("),
      why="learners round 8: a check of several step functions stopped at the first that failed, and the "
          "renormalize bug after it was never named"),
    V("steps_mask_future_diagonal0", ch("mask_future", "diagonal=1)", "diagonal=0)"), breaks="steps",
      en="mask_future hides the diagonal too (diagonal=0), so the first row is all -inf; use "
         "torch.triu(..., diagonal=1)",
      ko="mask_future가 대각선까지 가려서(diagonal=0) 첫 행이 모두 -inf가 됨; torch.triu(..., diagonal=1)을 쓰세요"),
    V("steps_dropout_eval", ch("apply_dropout", "nn.Dropout(p)", "nn.Dropout(p).eval()"), breaks="steps",
      says=("must be in training mode",), why="apply_dropout's nn.Dropout is in eval mode, so nothing is dropped"),
    # ---------------------------------------------------------------- SelfAttention_v1
    V("misnamed_SelfAttentionV1", ch(V1, "class SelfAttention_v1(", "class SelfAttentionV1("),
      breaks=V1, says=("Rename `SelfAttentionV1` to `SelfAttention_v1`",)),
    V("v1_key_before_query", ch(V1, "        self.W_query = nn.Parameter(torch.rand(d_in, d_out))\n"
                                    "        self.W_key = nn.Parameter(torch.rand(d_in, d_out))\n",
                                "        self.W_key = nn.Parameter(torch.rand(d_in, d_out))\n"
                                "        self.W_query = nn.Parameter(torch.rand(d_in, d_out))\n"),
      breaks=V1, init=True,
      en="W_key is created before W_query, so each matrix draws other random numbers; create W_query, W_key, "
         "W_value in that order",
      ko="W_key를 W_query보다 먼저 만들어 각 행렬이 다른 난수를 받음; W_query, W_key, W_value 순서로 만드세요",
      says=("W_query, W_key, W_value",)),
    V("v1_randn_weights", ch(V1, "torch.rand(d_in, d_out)", "torch.randn(d_in, d_out)"), breaks=V1, init=True,
      en="W_query, W_key and W_value are drawn with torch.randn (a normal distribution); the notebook draws them with "
         "torch.rand (uniform on [0, 1)), so each matrix gets other numbers",
      ko="W_query, W_key, W_value를 정규 분포의 torch.randn으로 뽑음; 노트북처럼 torch.rand로 뽑으세요",
      why="learners round rl12: torch.randn for torch.rand was told only to create the matrices in order"),
    V("v1_typo_0_slash_5", ch(V1, "** 0.5", "** 0/5"), breaks=V1, en=TYPO.en, ko=TYPO.ko),
    V("v1_typo_0_slash_5_in_parentheses", ch(V1, SCALE, PAREN), breaks=V1, en=TYPO_PAREN.en, ko=TYPO_PAREN.ko,
      why="learners round 8: the message for `** 0/5` said 'multiplies by 5', true of this spelling only"),
    # Learners round rl14: SelfAttention_v1/v2(d_in, d_out, scale=False) scale the scores only when asked, and the
    # notebook's calls do not ask: the classes' values were only told 'differs'.
    V("v1_no_scaling", ch(V1, SCALE, "scores"), breaks=V1,
      en="the scores are not scaled before the softmax; divide them by sqrt(d_k) = keys.shape[-1] ** 0.5",
      ko="softmax 전에 점수를 나누지 않음; sqrt(d_k) = keys.shape[-1] ** 0.5로 나누세요"),
    # Learners' corpus, session 19: scores divided by the square root of the input's size, not the keys' (`x.shape[-1]`,
    # `d_in`) were only told that the output differs.
    V("v1_scale_by_d_in", ch(V1, "keys.shape[-1] ** 0.5", "x.shape[-1] ** 0.5"), breaks=V1,
      en="the scores are scaled by sqrt(d_in) (x.shape[-1], the size of the input); scale by sqrt(d_k) = "
         "keys.shape[-1] ** 0.5, the size of the keys (d_out)",
      ko="점수를 sqrt(d_in)(x.shape[-1], 입력의 크기)로 나눔; 키의 크기(d_out)인 sqrt(d_k) = keys.shape[-1] ** 0.5로 "
         "나누세요"),
    V("v1_softmax_dim0", ch(V1, "dim=-1)", "dim=0)"), breaks=V1,
      en="the softmax runs over dim=0, so each column of the attention weights sums to 1; normalise each row "
         "(dim=-1)",
      ko="softmax를 dim=0으로 계산해서 어텐션 가중치의 각 열의 합이 1이 됨; 각 행을 정규화하세요(dim=-1)",
      why="learners round 8: only 'differs from the expected values' was said"),
    V("v1_weights_transposed", ch(V1, "torch.rand(d_in, d_out)", "torch.rand(d_out, d_in)"),
      ch(V1, "x @ self.W_key", "x @ self.W_key.T"), ch(V1, "x @ self.W_query", "x @ self.W_query.T"),
      ch(V1, "x @ self.W_value", "x @ self.W_value.T"), breaks=V1,
      en="the weight matrices are stored as (d_out, d_in), like nn.Linear, and used transposed; the notebook "
         "stores them as torch.rand(d_in, d_out) and computes x @ W",
      ko="가중치 행렬을 nn.Linear처럼 (d_out, d_in)으로 저장하고 전치해서 씀; 노트북은 torch.rand(d_in, d_out)으로 "
         "저장하고 x @ W를 계산합니다"),
    # ---------------------------------------------------------------- SelfAttention_v2
    V("v2_causal_mask", ch(V2, "scores = queries @ keys.T  # (T, T)\n",
                            "scores = queries @ keys.T  # (T, T)\n"
                            "        scores = scores.masked_fill(torch.triu(torch.ones_like(scores), diagonal=1).bool(), "
                            "-torch.inf)\n"), breaks=V2,
      en="SelfAttention_v2 masks the future (a causal mask): this class attends to every token; the mask comes with "
         "CausalAttention",
      ko="SelfAttention_v2가 미래를 가림(코잘 마스크): 이 클래스는 모든 토큰을 봅니다. 마스크는 CausalAttention에서 씁니다",
      why="seen in a learner's file: only 'differs from the expected values' was said"),
    V("v2_bias_ignored", ch(V2, "bias=qkv_bias", "bias=False"), breaks=V2, says=("bias=qkv_bias",)),
    V("v2_typo_0_slash_5", ch(V2, "** 0.5", "** 0/5"), breaks=V2, en=TYPO.en, ko=TYPO.ko,
      why="learners round 8: the typo was named in every class but this one"),
    V("v2_no_scaling", ch(V2, SCALE, "scores"), breaks=V2,
      en="the scores are not scaled before the softmax; divide them by sqrt(d_k) = keys.shape[-1] ** 0.5",
      ko="softmax 전에 점수를 나누지 않음; sqrt(d_k) = keys.shape[-1] ** 0.5로 나누세요"),
    V("v2_softmax_dim0", ch(V2, "dim=-1)", "dim=0)"), breaks=V2,
      en="the softmax runs over dim=0, so each column of the attention weights sums to 1; normalise each row "
         "(dim=-1)",
      ko="softmax를 dim=0으로 계산해서 어텐션 가중치의 각 열의 합이 1이 됨; 각 행을 정규화하세요(dim=-1)"),
    V("v2_keys_not_transposed", ch(V2, "scores = queries @ keys.T", "scores = queries @ keys"), breaks=V2,
      says=("The keys are not transposed",), why="learners' corpus, session 19: PyTorch's shape error alone was shown"),
    V("v2_scale_by_tokens", ch(V2, "keys.shape[-1] ** 0.5", "keys.shape[0] ** 0.5"), breaks=V2,
      en="the scores are scaled by the square root of the number of tokens (keys.shape[0]); scale by "
         "sqrt(d_k) = keys.shape[-1] ** 0.5",
      ko="점수를 토큰 수의 제곱근(keys.shape[0])으로 나눔; sqrt(d_k) = keys.shape[-1] ** 0.5로 나누세요"),
    # ---------------------------------------------------------------- CausalAttention
    V("causal_constant_output", ch(CA, "        keys = self.W_key(x)", "        return torch.full((b, num_tokens, "
                                   "self.d_out), 0.25)\n        keys = self.W_key(x)"),
      breaks=CA, says=("does not depend on the input",),
      why="forward returns a constant of the right shape; the wrapper is judged with working heads in their place "
          "(seen: a wrapper lost all 15 points for its heads' fault)"),
    V("causal_keys_T_on_batch", ch(CA, "queries @ keys.transpose(1, 2)", "queries @ keys.T"), breaks=CA,
      says=("keys.T",), why="copied from SelfAttention_v2: .T on the (b, T, d) keys; forward raises, and the "
                            "wrapper is judged with working heads in their place"),
    V("causal_dropout_on_scores", ch(CA, DROP, ""), ch(CA, FILL, f"scores = self.dropout(scores)\n        {FILL}"),
      breaks=CA,
      en="dropout is applied to the scores before the softmax; apply self.dropout to the attention weights, "
         "right after the softmax",
      ko="softmax 전의 점수에 dropout을 적용함; self.dropout은 softmax 직후의 어텐션 가중치에 적용하세요"),
    V("causal_fill_minus_1e9", ch(CA, "-torch.inf", "-1e9"), breaks=CA, says=("instead of -inf",)),
    V("causal_fill_zero", ch(CA, "-torch.inf", "0"), breaks=CA,
      en="the future scores are filled with 0 instead of -inf, so after the softmax they still get weight (e^0 = 1); "
         "fill them with -torch.inf",
      ko="미래 위치의 점수를 -inf가 아니라 0으로 채워서 softmax 뒤에도 가중치를 받음(e^0 = 1); -torch.inf로 채우세요"),
    V("causal_functional_dropout", ch(CA, "self.dropout(weights)",
                                      "torch.nn.functional.dropout(weights, self.dropout.p, training=True)"),
      breaks=CA,
      en="dropout stays on in eval mode (F.dropout(..., training=True) does, and so does an nn.Dropout made "
         "inside forward); use the nn.Dropout module self.dropout made in __init__, which follows model.eval()",
      ko="dropout이 eval 모드에서도 켜져 있음 (F.dropout(..., training=True)도, forward 안에서 만든 nn.Dropout도 "
         "그렇습니다); __init__에서 만든 nn.Dropout 모듈 self.dropout을 쓰세요. 이것은 model.eval()을 따릅니다"),
    V("causal_mask_after_softmax", ch(CA, f"        {FILL}\n", ""),
      ch(CA, "dim=-1)\n", "dim=-1)\n        keep = 1 - self.mask[:num_tokens, :num_tokens]\n"
                          "        weights = weights * keep\n"
                          "        weights = weights / weights.sum(dim=-1, keepdim=True)\n"),
      breaks=CA, says=("reach the softmax unmasked",), why="masks after the softmax and renormalises: same output"),
    # The registered mask moved back to the CPU in forward: the message named register_buffer, which it is.
    V("causal_mask_cpu_in_forward", ch(CA, "self.mask.bool()[:num_tokens", "self.mask.cpu().bool()[:num_tokens"),
      breaks=CA, says=("back to the CPU",)),
    V("causal_mask_plain_attribute", ch(CA, BUFFER, f"self.mask = {TRIU}"), breaks=CA, says=("register_buffer",)),
    V("causal_mask_not_sliced", ch(CA, "self.mask.bool()[:num_tokens, :num_tokens]", "self.mask.bool()"), breaks=CA,
      says=("the mask is made for context_length tokens; slice it",),
      why="learners round 8: of the six checks an unsliced mask fails, only the short-sequence one said to slice it"),
    V("causal_softmax_exp_over_sum", ch(CA, "weights = torch.softmax(scores / keys.shape[-1] ** 0.5, dim=-1)",
                                        "e = torch.exp(scores / keys.shape[-1] ** 0.5)\n"
                                        "        weights = e / e.sum(dim=-1, keepdim=True)"), breaks=CA,
      says=("without subtracting each row's maximum",), never_says=("reach the softmax unmasked",),
      why="variants round: a right -inf fill before an exp / sum softmax was told to fill before the softmax"),
    V("causal_returns_values", ch(CA, "return weights @ values  # (b, T, d_out)", "return values"), breaks=CA,
      says=("forward returns `values` instead of the context vectors",),
      why="learners round rl12: forward computed the context vectors and returned `values`; told only that the "
          "tokens are not mixed"),
    V("causal_returns_weights_too", ch(CA, "return weights @ values  # (b, T, d_out)",
                                       "return weights @ values, weights  # (b, T, d_out)"), breaks=CA,
      says=("should return a torch.Tensor, but returned tuple",)),
    V("causal_returns_weights_too_wrapper_fitted", ch(CA, "return weights @ values  # (b, T, d_out)",
                                                      "return weights @ values, weights  # (b, T, d_out)"),
      ch(WR, "[head(x) for head in self.heads]", "[head(x)[0] for head in self.heads]"), breaks=CA,
      says=("should return a torch.Tensor, but returned tuple",),
      why="learners round 8: the wrapper written for its heads' (context, weights) lost 9 of 15 to the stand-in "
          "heads' tensor; the stand-in now returns the pair where the wrapper takes it so"),
    V("causal_mask_plain_attribute_moved_in_forward", ch(CA, BUFFER, f"self.mask = {TRIU}"),
      ch(CA, "self.mask.bool()[:num_tokens, :num_tokens]", "self.mask.to(x.device).bool()[:num_tokens, :num_tokens]"),
      breaks=CA, says=("register_buffer",),
      why="learners round 8: forward moves its plain mask to x.device, which works on every device, yet the device "
          "check charged it again after the mask-buffer check"),
    # register_buffer returns None: the buffer is made, then replaced by None (seen: told to call register_buffer).
    # qkv_bias=True as the default (the notebook's is False): one word of the signature, charged there once (it
    # cost 13 of SelfAttention_v2's 15 points: every check built the class with biases).
    V("v2_qkv_bias_default_true", ch(V2, "qkv_bias: bool = False", "qkv_bias: bool = True"), breaks=V2,
      says=("defaults `qkv_bias` to True",)),
    # Red-team round 2 (learner code): bugs that kept full marks.
    V("v2_qkv_bias_unused", ch(V2, "keys = self.W_key(x)", "keys = x @ self.W_key.weight.T"),
      ch(V2, "queries = self.W_query(x)", "queries = x @ self.W_query.weight.T"),
      ch(V2, "values = self.W_value(x)", "values = x @ self.W_value.weight.T"), breaks=V2,
      says=("forward does not use them",)),
    V("causal_dropout_fixed_half", ch(CA, "nn.Dropout(dropout)", "nn.Dropout(0.5)"), breaks=CA,
      says=("nn.Dropout(dropout)",)),
    V("wrapper_heads_without_dropout", ch(WR, "CausalAttention(d_in, d_out, context_length, dropout, qkv_bias)",
                                          "CausalAttention(d_in, d_out, context_length, 0.0, qkv_bias)"),
      breaks=WR, says=("pass dropout on to every head",)),
    # Both at once: heads that ignore dropout hid a wrapper that does not pass it on (judged over the student's own
    # heads, the two agree); the wrapper is then judged over the grader's heads.
    V("causal_dropout_unused_and_wrapper_without_dropout", ch(CA, DROP, ""),
      ch(WR, "CausalAttention(d_in, d_out, context_length, dropout, qkv_bias)",
         "CausalAttention(d_in, d_out, context_length, 0.0, qkv_bias)"),
      breaks=f"{CA},{WR}", says=("pass dropout on to every head", NO_TRAIN_DROPOUT), why="two bugs, one in each class"),
    V("causal_dropout_only_in_eval", ch(CA, "weights = self.dropout(weights)",
                                        "weights = torch.nn.functional.dropout(weights, self.dropout.p, "
                                        "training=not self.training)"),
      breaks=CA, says=("dropout stays on in eval mode", NO_TRAIN_DROPOUT), never_says=("dropout cannot be judged",)),
    V("causal_register_buffer_assigned", ch(CA, BUFFER, f"self.mask = {BUFFER}"), breaks=CA,
      says=("register_buffer returns nothing",)),
    # A mask of the positions to keep, used that way, with the weights masked after the softmax and not
    # renormalised: the bug is the masking, not the mask (seen: told to make the mask triu).
    V("causal_keep_mask_zeroed_after_softmax",
      ch(CA, TRIU, "torch.tril(torch.ones(context_length, context_length))"), ch(CA, f"        {FILL}\n", ""),
      ch(CA, "dim=-1)\n", "dim=-1)\n        weights = weights * self.mask[:num_tokens, :num_tokens]\n"),
      breaks=CA, says=("weights masked after the softmax",), never_says=("marks the positions to keep",)),
    V("causal_softmax_dim1", ch(CA, "dim=-1", "dim=1"), breaks=CA,
      en="the softmax runs over dim=1 (the query axis of the (b, T, T) scores); normalise each row over the keys "
         "with dim=-1",
      ko="softmax를 dim=1((b, T, T) 점수의 쿼리 축)에 대해 계산함; 각 행을 키 축(dim=-1)로 정규화하세요"),
    V("causal_softmax_dim1_inplace", ch(CA, "scores = scores.masked_fill(", "scores.masked_fill_("),
      ch(CA, "dim=-1", "dim=1"), breaks=CA, says=("the softmax runs over dim=1",), never_says=(NOT_CAUSAL_HINT,),
      why="seen: masked_fill_ is in place, yet the learner was told to assign masked_fill's result"),
    V("causal_tril_mask", ch(CA, TRIU, "torch.tril(torch.ones(context_length, context_length))"), breaks=CA,
      en="the mask is tril (the positions to keep) but is filled as the positions to hide; use "
         "torch.triu(..., diagonal=1)",
      ko="마스크가 tril(남길 위치)인데 가릴 위치로 채워짐; torch.triu(..., diagonal=1)을 쓰세요",
      says=("tril",)),
    # Learners round rl14: triu swapped for tril, diagonal=1 kept (a study repo's MultiHeadAttention): the mask hides
    # each token itself, the next one and every earlier one, and shows the later ones; the last token sees nothing.
    V("causal_tril_diagonal1_mask", ch(CA, TRIU, "torch.tril(torch.ones(context_length, context_length), diagonal=1)"),
      breaks=CA, en=TRIL1.en, ko=TRIL1.ko),
    V("causal_unsliced_mask", ch(CA, "self.mask.bool()[:num_tokens, :num_tokens]", "self.mask.bool()"), breaks=CA,
      says=("[:num_tokens, :num_tokens]",)),
    V("causal_no_scaling", ch(CA, SCALE, "scores"), breaks=CA,
      en="the scores are not scaled before the softmax; divide them by sqrt(d_k) = keys.shape[-1] ** 0.5",
      ko="softmax 전에 점수를 나누지 않음; sqrt(d_k) = keys.shape[-1] ** 0.5로 나누세요",
      never_says=(DROPOUT_HINT,)),
    V("causal_scale_by_tokens", ch(CA, "keys.shape[-1] ** 0.5", "num_tokens ** 0.5"), breaks=CA,
      en="the scores are scaled by sqrt(num_tokens); scale by sqrt(d_k) = keys.shape[-1] ** 0.5",
      ko="점수를 sqrt(num_tokens)로 나눔; sqrt(d_k) = keys.shape[-1] ** 0.5로 나누세요",
      never_says=(DROPOUT_HINT,)),
    V("causal_scale_by_d_in", ch(CA, "keys.shape[-1] ** 0.5", "d_in ** 0.5"), breaks=CA,
      en="the scores are scaled by sqrt(d_in) (the size of the input); scale by sqrt(d_k) = keys.shape[-1] ** 0.5, "
         "the size of the keys (d_out)",
      ko="점수를 sqrt(d_in)(입력의 크기)로 나눔; 키의 크기(d_out)인 sqrt(d_k) = keys.shape[-1] ** 0.5로 나누세요",
      never_says=(DROPOUT_HINT,), why="learners' corpus, session 19: only 'differs' was said"),
    # The dropout created and never applied, in CausalAttention alone (its train-mode check said only 'differs' and
    # where to apply it; MultiHeadAttention's named it: learners' corpus, session 19)
    # (said so that it is true also of a dropout applied in eval mode only, whose train-mode output is the same)
    V("causal_dropout_unused", ch(CA, DROP, ""), breaks=CA,
      en=f"{NO_TRAIN_DROPOUT}; apply self.dropout (an nn.Dropout) to them right after the softmax: it drops in "
         "train mode and passes them through in eval mode",
      ko="train 모드에서 어텐션 가중치에 dropout이 적용되지 않음; softmax 직후의 어텐션 가중치에 self.dropout(nn.Dropout)을 "
         "적용하세요. train 모드에서만 dropout이 적용되고 eval 모드에서는 그대로 통과합니다"),
    V("causal_typo_0_slash_5", ch(CA, "** 0.5", "** 0/5"), breaks=CA, en=TYPO.en, ko=TYPO.ko,
      never_says=(DROPOUT_HINT,)),
    V("causal_typo_0_slash_5_in_parentheses", ch(CA, SCALE, PAREN), breaks=CA, en=TYPO_PAREN.en,
      ko=TYPO_PAREN.ko, never_says=(DROPOUT_HINT,)),
    V("causal_typo_0_05", ch(CA, "** 0.5", "** 0.05"), breaks=CA,
      en="the scores are divided by d_k ** 0.05 (a typo for `** 0.5`), which is close to 1, so they are hardly scaled; "
         "divide by sqrt(d_k) = keys.shape[-1] ** 0.5",
      ko="점수를 d_k ** 0.05로 나눠서(`** 0.5`의 오타, 거의 1) 거의 스케일되지 않음; "
         "sqrt(d_k) = keys.shape[-1] ** 0.5로 나누세요",
      never_says=(DROPOUT_HINT,), why="learners round rl11 (with masked_fill's result thrown away too)"),
    V("causal_qkv_bias_ignored", ch(CA, "bias=qkv_bias", "bias=False"), breaks=CA, says=("qkv_bias is ignored",)),
    V("context_len_argument", ch(CA, "context_length", "context_len"), breaks=CA,
      says=("`context_len` -> `context_length`",)),
    V("masked_fill_dropped", ch(CA, "scores = scores.masked_fill(", "scores.masked_fill("), breaks=CA,
      en="the result of `scores.masked_fill(...)` is thrown away (it returns a new tensor), so nothing is masked; "
         "write scores = scores.masked_fill(...) or use masked_fill_",
      ko="`scores.masked_fill(...)`의 결과를 버려서(새 텐서를 반환함) 아무것도 가려지지 않음; "
         "scores = scores.masked_fill(...)로 대입하거나 masked_fill_을 쓰세요"),
    V("misnamed_CasualAttention", ch(CA, "class CausalAttention(", "class CasualAttention("),
      ch(WR, "[CausalAttention(", "[CasualAttention("), breaks=CA,
      says=("Rename `CasualAttention` to `CausalAttention`",)),
    # Learners round rl14: the head class under a name of its own (MaskedAttention), built by the wrapper: only
    # CausalAttention's question is charged (the wrapper was judged against stand-in heads it never built).
    V("head_class_named_otherwise", ch(CA, "class CausalAttention(", "class MaskedAttention("),
      ch(WR, "[CausalAttention(", "[MaskedAttention("), breaks=CA,
      says=("`CausalAttention` is not defined", "Rename `MaskedAttention` to `CausalAttention`")),
    # Learners round rl15 (a study repository without the two SelfAttention classes): the head class as
    # `Attention_v1(d_in, d_out, context_length, dropout, qkv_bias=False)` was offered as the rename of the missing
    # SelfAttention_v1, which takes two arguments; renamed so, it would lose that question and keep this one's.
    V("head_class_named_Attention_v1_without_v1", ch(V1, "class SelfAttention_v1(", "class FirstAttention("),
      ch(CA, "class CausalAttention(", "class Attention_v1("), ch(WR, "[CausalAttention(", "[Attention_v1("),
      breaks=f"{V1}, {CA}", says=("Rename `Attention_v1` to `CausalAttention`", "`SelfAttention_v1` is not defined"),
      never_says=("Rename `Attention_v1` to `SelfAttention_v1`", "rename it to `SelfAttention_v1`")),
    # Seen in a learner's chapter-3 notebook (round nb11): only "differs from the expected values" was said.
    V("causal_query_key_swapped", ch(CA, QK, QK_SWAPPED), breaks=CA, en=QK_CAUSE.en, ko=QK_CAUSE.ko),
    V("mha_query_key_swapped", ch(MHA, QK, QK_SWAPPED), breaks=MHA, en=QK_CAUSE.en, ko=QK_CAUSE.ko),
    V("fill_minus_1e9_everywhere", ch(CA, "-torch.inf", "-1e9"), ch(MHA, "-torch.inf", "-1e9"),
      breaks=f"{CA}, {MHA}", says=("instead of -inf",)),
    # ---------------------------------------------------------------- MultiHeadAttentionWrapper
    V("wrapper_cat_dim1", ch(WR, "dim=-1)", "dim=1)"), breaks=WR,
      en="the heads are concatenated along the token axis (dim=1); concatenate the features: torch.cat(..., dim=-1)",
      ko="헤드를 토큰 축(dim=1)로 이어 붙임; 특징 축으로 이어 붙이세요: torch.cat(..., dim=-1)"),
    V("wrapper_cat_dim0", ch(WR, "dim=-1)", "dim=0)"), breaks=WR, says=("has shape",),
      never_says=("nn.ModuleList",), why="seen: an output of the wrong shape was told its heads were not registered"),
    V("wrapper_plain_list", ch(WR, HEADS, HEAD_LIST),
      breaks=WR, says=("nn.ModuleList",)),
    V("wrapper_shared_head", ch(WR, f"self.heads = {HEADS}", "head = CausalAttention(d_in, d_out, context_length, "
                                "dropout, qkv_bias)\n        self.heads = nn.ModuleList([head] * num_heads)"),
      breaks=WR, says=("[head] * num_heads",)),
    V("wrapper_unfinished_and_unsliced_mask", ch(CA, "self.mask.bool()[:num_tokens, :num_tokens]", "self.mask.bool()"),
      ch(WR, "return torch.cat([head(x) for head in self.heads], dim=-1)",
         'raise NotImplementedError(\n            "MultiHeadAttentionWrapper.forward: see notebook section 3.6.1 / '
         '노트북 3.6.1 참고")'),
      breaks=f"{CA}, {WR}", says=("not implemented yet",)),  # the skeleton's raise, left in place
    # Neither CausalAttention nor the wrapper begun (their __init__ still raises, as in the skeleton; seen in six of 32
    # learners' files handed in with the classes they had not reached): the grader's note said the wrapper had been
    # graded with its stand-in heads in place of the unfinished CausalAttention, a grading that gave it nothing.
    V("causal_and_wrapper_not_begun",
      ch(CA, "", "class CausalAttention(nn.Module):\n    def __init__(self, d_in, d_out, context_length, dropout, "
                 "qkv_bias=False):\n        super().__init__()\n        raise NotImplementedError(\"3.5.3\")\n\n"
                 "    def forward(self, x):\n        raise NotImplementedError(\"3.5.3\")\n"),
      ch(WR, "", "class MultiHeadAttentionWrapper(nn.Module):\n    def __init__(self, d_in, d_out, context_length, "
                 "dropout, num_heads, qkv_bias=False):\n        super().__init__()\n"
                 "        raise NotImplementedError(\"3.6.1\")\n\n"
                 "    def forward(self, x):\n        raise NotImplementedError(\"3.6.1\")\n"),
      breaks=f"{CA}, {WR}", says=("not implemented yet",), never_says=("stand-in heads",)),
    V("wrapper_qkv_bias_not_passed", ch(WR, "dropout, qkv_bias) for _", "dropout) for _"), breaks=WR,
      says=("pass qkv_bias on to every CausalAttention head",)),
    V("wrapper_context_len_argument", ch(WR, "context_length", "context_len"), breaks=WR,
      says=("`context_len` -> `context_length`",)),
    V("wrapper_context_len_and_head_num_arguments", ch(WR, "context_length", "context_len"),
      ch(WR, "num_heads", "head_num"), breaks=WR, says=("`context_len` -> `context_length`", "`head_num` -> `num_heads`"),
      never_says=("Add `num_heads`",),
      why="learners round 8: beside another rename, `head_num` was not recognised and the message said to add num_heads"),
    # ---------------------------------------------------------------- MultiHeadAttention
    V("mha_dropout_unused", ch(MHA, DROP, ""), breaks=MHA,
      en="self.dropout is never applied; apply it to the attention weights right after the softmax",
      ko="self.dropout을 적용하지 않음; softmax 직후의 어텐션 가중치에 적용하세요"),
    V("mha_functional_dropout", ch(MHA, "weights = self.dropout(weights)",
                                   "weights = torch.nn.functional.dropout(weights, self.dropout.p)"), breaks=MHA,
      en="dropout is F.dropout(weights, p), whose training=True default keeps it on in eval mode; use the "
         "nn.Dropout module self.dropout, which follows model.eval()",
      ko="dropout을 F.dropout(weights, p)로 적용해 기본값 training=True 때문에 eval 모드에서도 켜져 있음; "
         "model.eval()을 따르는 nn.Dropout 모듈 self.dropout을 쓰세요",
      why="seen (red team): no eval-mode check of MultiHeadAttention with p > 0 caught it"),
    V("mha_masked_fill_dropped", ch(MHA, "scores = scores.masked_fill(", "scores.masked_fill("), breaks=MHA,
      en="the result of `scores.masked_fill(...)` is thrown away (it returns a new tensor), so nothing is masked; "
         "write scores = scores.masked_fill(...) or use masked_fill_",
      ko="`scores.masked_fill(...)`의 결과를 버려서(새 텐서를 반환함) 아무것도 가려지지 않음; "
         "scores = scores.masked_fill(...)로 대입하거나 masked_fill_을 쓰세요",
      never_says=("does not follow .to(device)",),
      why="seen in learners' code: it was also charged as a device fault (its registered mask goes unused)"),
    V("mha_own_names_masked_fill_dropped", ch(MHA, "W_query", "w_queries"), ch(MHA, "W_key", "w_keys"),
      ch(MHA, "W_value", "w_values"), ch(MHA, "scores = scores.masked_fill(", "scores.masked_fill("), breaks=MHA,
      says=("thrown away",),
      why="learners round rl11: with its own projection names (w_queries, w_keys, w_values) the diagnosis could not "
          "copy its weights into the bug versions, and the dropped masked_fill was only told 'differs'"),
    V("mha_mask_diagonal0", ch(MHA, "diagonal=1))", "diagonal=0))"), breaks=MHA,
      en="the mask hides the diagonal too (diagonal=0), so the first token attends to nothing; use diagonal=1",
      ko="마스크가 대각선까지 가려서(diagonal=0) 첫 토큰이 아무것도 보지 못함; diagonal=1을 쓰세요",
      says=("diagonal=1",)),
    V("mha_tril_diagonal1_mask", ch(MHA, TRIU, "torch.tril(torch.ones(context_length, context_length), diagonal=1)"),
      breaks=MHA, en=TRIL1.en, ko=TRIL1.ko),
    V("mha_mask_in_forward_cpu", ch(MHA, f"        {BUFFER}\n", ""),
      ch(MHA, FILL, "mask = torch.triu(torch.ones(num_tokens, num_tokens), diagonal=1)\n"
                    "        scores = scores.masked_fill(mask.bool(), -torch.inf)"),
      breaks=MHA, says=("register_buffer",), why="the mask is built in forward on the CPU"),
    # The heads' outputs joined along the token axis, then reshaped: the same numbers as merging the heads without
    # transposing back, which was named instead (code the student does not have).
    V("mha_head_loop_cat_tokens", ch(MHA, MHA_CORE, HEAD_LOOP.format(drop="self.dropout(weights)", scores="scores")
                                     .replace("torch.stack(per_head, dim=2)  # (b, T, h, hd)",
                                              "torch.cat(per_head, dim=1)  # (b, h * T, hd)")),
      breaks=MHA,
      en="the heads' outputs are concatenated along the token axis (torch.cat(..., dim=1)) and then reshaped, which "
         "mixes tokens and heads; concatenate them on the last axis (dim=-1)",
      ko="헤드 출력을 토큰 축으로 이어 붙인 뒤(torch.cat(..., dim=1)) reshape해서 토큰과 헤드가 섞임; dim=-1, 즉 "
         "마지막 축으로 이어 붙이세요"),
    V("mha_head_loop_dropout_on_scores", ch(MHA, MHA_CORE, HEAD_LOOP.format(drop="weights",
                                                                           scores="self.dropout(scores)")),
      breaks=MHA, says=(DROPOUT_HINT,)),
    V("mha_qkv_bias_ignored", ch(MHA, "bias=qkv_bias", "bias=False"), breaks=MHA, says=("qkv_bias is ignored",)),
    V("mha_out_proj_created_twice", ch(MHA, f"        {BUFFER}\n",
                                       f"        {BUFFER}\n        self.out_proj = nn.Linear(d_out, d_out)\n"),
      breaks=MHA, says=("`self.out_proj` is created twice in `MultiHeadAttention.__init__`",),
      never_says=("in that order",),
      why="learners round rl13: a right MultiHeadAttention with `self.out_proj = nn.Linear(d_out, d_out)` written "
          "twice (the second draws new weights) was told only that its seeded values differ and to create its "
          "layers in the notebook's order, which it did"),
    V("mha_scale_by_d_out", ch(MHA, "keys.shape[-1] ** 0.5", "self.d_out ** 0.5"), breaks=MHA,
      en="the scores are scaled by sqrt(d_out); each head's keys have head_dim = d_out // num_heads features, so "
         "scale by sqrt(head_dim) = keys.shape[-1] ** 0.5",
      ko="점수를 sqrt(d_out)으로 나눔; 각 헤드의 키는 head_dim = d_out // num_heads 차원이므로 "
         "sqrt(head_dim) = keys.shape[-1] ** 0.5로 나누세요",
      never_says=(DROPOUT_HINT,)),
    V("mha_scale_by_head_dim_no_sqrt", ch(MHA, "keys.shape[-1] ** 0.5", "keys.shape[-1]"), breaks=MHA,
      en="the scores are divided by head_dim itself instead of its square root; divide by keys.shape[-1] ** 0.5",
      ko="점수를 head_dim의 제곱근이 아니라 head_dim 자체로 나눔; keys.shape[-1] ** 0.5로 나누세요",
      # With the notebook's d_out=4 and 2 heads, head_dim = 2 = sqrt(d_out): that bug gives the same numbers there,
      # and naming it alone named the wrong one (bugtable._one names both).
      says=("head_dim itself",)),
    V("mha_double_in_train_mode", ch(MHA, "        return self.out_proj(context)  # (b, T, d_out)\n",
                                      "        y = self.out_proj(context)  # (b, T, d_out)\n"
                                      "        return y.double() if self.training else y\n"), breaks=MHA,
      says=("dtype",), never_says=("internal error",),
      why="red team: a float64 output in train mode was the grader's internal error (its dropout check compared "
          "dtypes unguarded)"),
    V("mha_linear_names_key_first", *(ch(MHA, f"self.{a}", f"self.{b}") for a, b in
                                      (("W_query", "q_linear"), ("W_key", "k_linear"), ("W_value", "v_linear"),
                                       ("out_proj", "out"))),
      ch(MHA, "        self.q_linear = nn.Linear(d_in, d_out, bias=qkv_bias)\n"
              "        self.k_linear = nn.Linear(d_in, d_out, bias=qkv_bias)\n",
         "        self.k_linear = nn.Linear(d_in, d_out, bias=qkv_bias)\n"
         "        self.q_linear = nn.Linear(d_in, d_out, bias=qkv_bias)\n"), breaks=MHA, init=True,
      says=("in that order",),
      why="red team: projections named q_linear... created key first lost the checks with the reference's weights "
          "too (they went by creation order), told that forward was wrong"),
    V("mha_scale_by_tokens", ch(MHA, "keys.shape[-1] ** 0.5", "keys.shape[-2] ** 0.5"), breaks=MHA,
      en="the scores are scaled by sqrt(num_tokens) (keys.shape[-2]); scale by sqrt(head_dim) = keys.shape[-1] ** 0.5",
      ko="점수를 sqrt(num_tokens)(keys.shape[-2])로 나눔; sqrt(head_dim) = keys.shape[-1] ** 0.5로 나누세요",
      never_says=(DROPOUT_HINT,), why="seen in a learner's repository: only the causality hint (the mask) was given"),
    V("mha_no_scaling", ch(MHA, SCALE, "scores"), breaks=MHA,
      en="the scores are not scaled before the softmax; divide them by sqrt(head_dim) = keys.shape[-1] ** 0.5",
      ko="softmax 전에 점수를 나누지 않음; sqrt(head_dim) = keys.shape[-1] ** 0.5로 나누세요",
      never_says=(DROPOUT_HINT,)),
    V("mha_typo_0_slash_5", ch(MHA, "** 0.5", "** 0/5"), breaks=MHA, en=TYPO.en, ko=TYPO.ko,
      never_says=(DROPOUT_HINT,)),
    V("mha_no_divisibility_assert", ch(MHA, '        assert d_out % num_heads == 0, "d_out must be divisible by '
                                            'num_heads"\n', ""),
      breaks=MHA, says=("assert d_out % num_heads == 0",)),
    V("mha_assert_tuple", ch(MHA, 'assert d_out % num_heads == 0, "d_out must be divisible by num_heads"',
                             'assert (d_out % num_heads == 0, "d_out must be divisible by num_heads")'),
      breaks=MHA, says=("asserts a tuple, which is always true",), never_says=("Check `assert d_out",),
      why="learners round s9: the parenthesised (condition, message) assert never fails; the message asked for the "
          "assert the learner had written"),
    V("mha_no_transpose", ch(MHA, ".view(b, num_tokens, self.num_heads, self.head_dim).transpose(1, 2)",
                             ".view(b, self.num_heads, num_tokens, self.head_dim)"), breaks=MHA,
      en="the heads are split by viewing straight to (b, num_heads, num_tokens, head_dim); view as (b, num_tokens, "
         "num_heads, head_dim), then .transpose(1, 2)",
      ko="(b, num_heads, num_tokens, head_dim)으로 바로 view해서 헤드를 나눔; (b, num_tokens, num_heads, head_dim)으로 "
         "view한 뒤 .transpose(1, 2)하세요"),
    V("mha_no_transpose_back", ch(MHA, "(weights @ values).transpose(1, 2)", "weights @ values"), breaks=MHA,
      en="the heads are merged without transposing back: (weights @ values) is (b, num_heads, num_tokens, "
         "head_dim); .transpose(1, 2) it before .contiguous().view(b, num_tokens, d_out)",
      ko="다시 전치하지 않고 헤드를 합침: (weights @ values)는 (b, num_heads, num_tokens, head_dim)이므로 "
         ".contiguous().view(b, num_tokens, d_out) 전에 .transpose(1, 2)하세요",
      never_says=("mask",)),
    V("mha_out_proj_unused", ch(MHA, "return self.out_proj(context)", "return context"), breaks=MHA,
      en="self.out_proj is never applied; return self.out_proj(context)",
      ko="self.out_proj를 적용하지 않음; self.out_proj(context)를 반환하세요"),
    V("mha_out_proj_bias_follows_qkv_bias", ch(MHA, "self.out_proj = nn.Linear(d_out, d_out)",
                                               "self.out_proj = nn.Linear(d_out, d_out, bias=qkv_bias)"), breaks=MHA,
      en="out_proj is built with bias=qkv_bias, so with the default qkv_bias=False it has no bias; the notebook's "
         "out_proj = nn.Linear(d_out, d_out) always has one (qkv_bias is for W_query, W_key, W_value only)",
      ko="out_proj를 bias=qkv_bias로 만들어 기본값 qkv_bias=False에서는 bias가 없음; 노트북의 out_proj = "
         "nn.Linear(d_out, d_out)에는 항상 bias가 있습니다 (qkv_bias는 W_query, W_key, W_value에만 적용)",
      why="learners round rl12: the output projection took the qkv bias flag; told only that the values differ and "
          "that out_proj.bias is missing"),
    V("mha_softmax_dim1", ch(MHA, "dim=-1", "dim=1"), breaks=MHA,
      en="the softmax runs over dim=1 (the head axis of the (b, h, T, T) scores); normalise each row over the keys "
         "with dim=-1",
      ko="softmax를 dim=1((b, h, T, T) 점수의 헤드 축)에 대해 계산함; 각 행을 키 축(dim=-1)로 정규화하세요"),
    V("mha_view_not_contiguous", ch(MHA, "context.contiguous().view(", "context.view("), breaks=MHA,
      says=("contiguous",)),
    V("mha_head_num_argument", ch(MHA, "num_heads", "head_num"), breaks=MHA, says=("`head_num` -> `num_heads`",),
      why="seen: a keyword renamed in the signature cost the whole class; it is retried by position"),
    V("mha_max_len_before_dropout", ch(MHA, "d_in: int, d_out: int, context_length: int, dropout: float, num_heads: int,",
                                       "d_in: int, d_out: int, num_heads: int, max_len: int = 1024, dropout: float = 0.0,"),
      ch(MHA, "context_length", "max_len"), breaks=MHA, says=("`max_len` -> `context_length`",),
      never_says=("got multiple values for argument",),
      why="learners round rl12: (d_in, d_out, num_heads, max_len, dropout): max_len was not read as context_length, "
          "so the arguments were passed by position and every check failed ('got multiple values for argument "
          "num_heads') while the signature check said they were passed by name"),
    V("mha_misspelt_init", ch(MHA, "def __init__(", "def __init_("), breaks=MHA,
      says=("defines `__init_`, not `__init__`",), never_says=("takes 1 positional argument", "unexpected keyword")),
    V("wrapper_out_proj", ch(WR, "for _ in range(num_heads)]\n        )\n",
                             "for _ in range(num_heads)]\n        )\n"
                             "        self.out_proj = nn.Linear(num_heads * d_out, num_heads * d_out)\n"),
      ch(WR, "return torch.cat([head(x) for head in self.heads], dim=-1)",
         "return self.out_proj(torch.cat([head(x) for head in self.heads], dim=-1))"), breaks=WR,
      en="the wrapper passes the heads' concatenated outputs through a linear layer (out_proj) of its own; the "
         "notebook's wrapper returns the concatenation itself (the output projection is MultiHeadAttention's)",
      ko="래퍼가 헤드 출력을 이어 붙인 뒤 자체 선형 층(out_proj)에 통과시킴; 노트북의 래퍼는 이어 붙인 결과를 그대로 "
         "반환합니다 (출력 투영은 MultiHeadAttention에 있습니다)",
      never_says=("pass dropout on to every head",),
      why="learners round rl11: its output checks said only 'differs', and the train-mode check told it to pass "
          "dropout on to its heads, which it did"),
    # Learners round rl15 (a Korean study repository): the same projection as self.out_projection was told only that
    # the values differ.
    V("wrapper_out_projection", ch(WR, "for _ in range(num_heads)]\n        )\n",
                                   "for _ in range(num_heads)]\n        )\n"
                                   "        self.out_projection = nn.Linear(d_out * num_heads, d_out * num_heads)\n"),
      ch(WR, "return torch.cat([head(x) for head in self.heads], dim=-1)",
         "return self.out_projection(torch.cat([head(x) for head in self.heads], dim=-1))"), breaks=WR,
      says=("through a linear layer (out_proj) of its own",)),
    V("wrapper_misspelt_init", ch(WR, "def __init__(", "def __init_("), breaks=WR,
      says=("defines `__init_`, not `__init__`",), never_says=("takes ();",),
      why="learners round rl11: the signature check told a wrapper with `def __init_(self, d_in, ...)` that its "
          "__init__ takes () and to add every argument"),
    V("mha_misspelt_forward", ch(MHA, "def forward(", "def foward("), breaks=MHA,
      says=("defines `foward`, not `forward`",)),
    V("mha_missing", ch(MHA, "", ""), breaks=MHA, says=("`MultiHeadAttention` is not defined",),
      never_says=("`MultiHeadAttentionWrapper` is defined", "is not defined, but `MultiHeadAttentionWrapper`"),
      why="seen: a missing class was told to rename another graded class"),
    # CausalAttention taking (d_in, d_out, dropout, context_length): its own question loses; a wrapper that builds
    # such heads in that order is right for them (it got 0/15: the stand-in heads took the notebook's order), and
    # one that builds them in the notebook's order is right by the notebook (neither may lose a wrapper point).
    V("causal_args_swapped_wrapper_follows",
      ch(CA, "context_length: int, dropout: float, qkv_bias", "dropout: float, context_length: int, qkv_bias"),
      ch(WR, "CausalAttention(d_in, d_out, context_length, dropout, qkv_bias)",
         "CausalAttention(d_in, d_out, dropout, context_length, qkv_bias)"), breaks=CA,
      says=("the notebook's signature is",),
      why="seen in a learner's repository: the wrapper, right for its own heads, got 0/15"),
    V("causal_args_swapped_wrapper_notebook",
      ch(CA, "context_length: int, dropout: float, qkv_bias", "dropout: float, context_length: int, qkv_bias"),
      breaks=CA, says=("the notebook's signature is",),
      why="the wrapper follows the notebook: the heads' fault is CausalAttention's only"),
    # ---------------------------------------------------------------- different but correct
    V("ok_demo_code_and_loops", ch(WR, f"self.heads = {HEADS}", "self.heads = nn.ModuleList()\n        for _ in "
                                   "range(num_heads):\n            self.heads.append(CausalAttention(d_in, d_out, "
                                   "context_length, dropout, qkv_bias))"),
      ch(WR, "dim=-1)", "dim=2)"), ch(MHA, "return self.out_proj(context)  # (b, T, d_out)\n",
                                      "return self.out_proj(context)  # (b, T, d_out)\n" + DEMO)),
    # A top-level @dataclass (learners keep a config in one): it failed to load in the worker's plain namespace
    # (dataclasses looks the class's module up in sys.modules) and cost MultiHeadAttention all 20 points.
    V("ok_dataclass_config", ch("", "import torch.nn as nn\n", "import torch.nn as nn\nfrom dataclasses import "
                                "dataclass\n\n\n@dataclass\nclass HeadConfig:\n    num_heads: int\n    head_dim: int\n"),
      ch(MHA, "self.head_dim = d_out // num_heads", "self.cfg = HeadConfig(num_heads, d_out // num_heads)\n"
                                                    "        self.head_dim = self.cfg.head_dim"),
      why="seen in a learner's repository"),
    # Projections named as learners name them (W_q, W_k, W_v; out_proj as last_layer): the grader copies the
    # reference's weights by role and creation order (test_hidden.match_params); each lost 6 to 10 points.
    V("ok_projection_names", *(ch(CA, f"self.{a}", f"self.{b}") for a, b in
                               (("W_query", "W_q"), ("W_key", "W_k"), ("W_value", "W_v"))),
      why="seen in learners' repositories"),
    V("ok_v2_projection_names", *(ch(V2, f"self.{a}", f"self.{b}") for a, b in
                                  (("W_query", "W_q"), ("W_key", "W_k"), ("W_value", "W_v"))),
      why="seen in learners' notebooks: the qkv_bias check looked for W_query.bias by name"),
    V("ok_out_proj_renamed", ch(MHA, "self.out_proj", "self.last_layer"), why="seen in a learner's repository"),
    V("ok_linear_names", *(ch(MHA, f"self.{a}", f"self.{b}") for a, b in
                           (("W_query", "q_linear"), ("W_key", "k_linear"), ("W_value", "v_linear"),
                            ("out_proj", "out"))),
      why="red team: q_linear was not taken for the query, and weights went by creation order"),
    V("ok_projections_moduledict",
      ch(MHA, "self.W_query = nn.Linear(d_in, d_out, bias=qkv_bias)\n"
              "        self.W_key = nn.Linear(d_in, d_out, bias=qkv_bias)\n"
              "        self.W_value = nn.Linear(d_in, d_out, bias=qkv_bias)",
         "self.proj = nn.ModuleDict({n: nn.Linear(d_in, d_out, bias=qkv_bias) for n in (\"W_query\", \"W_key\", "
         "\"W_value\")})"),
      ch(MHA, "keys = self.W_key(x)  # (b, T, d_out)\n        queries = self.W_query(x)\n"
              "        values = self.W_value(x)", "keys = self.proj[\"W_key\"](x)  # (b, T, d_out)\n"
                                                "        queries = self.proj[\"W_query\"](x)\n"
                                                "        values = self.proj[\"W_value\"](x)"),
      ch(CA, "self.W_query = nn.Linear(d_in, d_out, bias=qkv_bias)\n"
             "        self.W_key = nn.Linear(d_in, d_out, bias=qkv_bias)\n"
             "        self.W_value = nn.Linear(d_in, d_out, bias=qkv_bias)",
         "self.qkv = nn.ModuleDict({\"q\": nn.Linear(d_in, d_out, bias=qkv_bias), "
         "\"k\": nn.Linear(d_in, d_out, bias=qkv_bias),\n"
         "                                  \"v\": nn.Linear(d_in, d_out, bias=qkv_bias)})"),
      ch(CA, "keys = self.W_key(x)  # (b, T, d_out)\n        queries = self.W_query(x)\n"
             "        values = self.W_value(x)", "queries, keys, values = (self.qkv[r](x) for r in \"qkv\")"),
      why="variants round 5: the projections in an nn.ModuleDict (proj.W_query.weight, qkv.q.weight) were not found "
          "by the weight copy: CausalAttention lost 10 of 25, MultiHeadAttention 7 of 20, the wrapper 1 (82/100)"),
    V("ok_fused_qkv_v2", ch(V2, "self.W_query = nn.Linear(d_in, d_out, bias=qkv_bias)\n"
                                "        self.W_key = nn.Linear(d_in, d_out, bias=qkv_bias)\n"
                                "        self.W_value = nn.Linear(d_in, d_out, bias=qkv_bias)",
                            "self.qkv = nn.Linear(d_in, 3 * d_out, bias=qkv_bias)"),
      ch(V2, "keys = self.W_key(x)\n        queries = self.W_query(x)\n        values = self.W_value(x)",
         "queries, keys, values = self.qkv(x).chunk(3, dim=-1)"),
      why="variants round: the public qkv_bias check of SelfAttention_v2 wanted the three names (its fused "
          "CausalAttention and MultiHeadAttention earned theirs)"),
    V("ok_fused_qkv", ch(MHA, "self.W_query = nn.Linear(d_in, d_out, bias=qkv_bias)\n"
                              "        self.W_key = nn.Linear(d_in, d_out, bias=qkv_bias)\n"
                              "        self.W_value = nn.Linear(d_in, d_out, bias=qkv_bias)",
                         "self.qkv = nn.Linear(d_in, 3 * d_out, bias=qkv_bias)"),
      ch(MHA, "keys = self.W_key(x)  # (b, T, d_out)\n        queries = self.W_query(x)\n"
              "        values = self.W_value(x)", "queries, keys, values = self.qkv(x).chunk(3, dim=-1)"),
      ch(CA, "self.W_query = nn.Linear(d_in, d_out, bias=qkv_bias)\n"
             "        self.W_key = nn.Linear(d_in, d_out, bias=qkv_bias)\n"
             "        self.W_value = nn.Linear(d_in, d_out, bias=qkv_bias)",
         "self.W_qkv = nn.Linear(d_in, 3 * d_out, bias=qkv_bias)"),
      ch(CA, "keys = self.W_key(x)  # (b, T, d_out)\n        queries = self.W_query(x)\n"
             "        values = self.W_value(x)", "queries, keys, values = self.W_qkv(x).split(self.d_out, dim=-1)"),
      why="fidelity round 7 (nanoGPT's fused projection): the weights were not copied in, and every check that "
          "copies them failed (7 to 10 points)"),
    V("ok_learnable_temperature", ch(CA, '        self.register_buffer("mask"',
                                     '        self.temperature = nn.Parameter(torch.tensor(1.0))\n'
                                     '        self.register_buffer("mask"'),
      ch(CA, "scores / keys.shape[-1] ** 0.5, dim=-1)", "scores / keys.shape[-1] ** 0.5 * self.temperature, dim=-1)"),
      why="red team round 10: a 0-dim parameter crashed the gate (torch.randn(*())): every CausalAttention and "
          "wrapper check read as the grader's internal error"),
    V("ok_heads_property", ch(WR, "self.heads = nn.ModuleList(", "self._heads = nn.ModuleList("),
      ch(WR, "    def forward(self, x", "    @property\n    def heads(self):\n        return self._heads\n\n"
                                      "    def forward(self, x"),
      why="red team round 12: a heads property is read only where it hands out a registered container (one made up "
          "on each access forged an nn.ModuleList); a property over the module's own ModuleList is the heads"),
    V("ok_heads_sequential", ch(WR, "self.heads = nn.ModuleList(\n            [", "self.heads = nn.Sequential(\n            *["),
      why="fidelity round 7: an nn.Sequential registers its heads as a ModuleList does, and was told that PyTorch "
          "does not see their weights"),
    V("ok_heads_moduledict", ch(WR, "self.heads = nn.ModuleList(\n            [CausalAttention(d_in, d_out, context_length, "
                                    "dropout, qkv_bias) for _ in range(num_heads)]",
                                "self.heads = nn.ModuleDict(\n            {f\"head_{i}\": CausalAttention(d_in, d_out, "
                                "context_length, dropout, qkv_bias) for i in range(num_heads)}"),
      ch(WR, "[head(x) for head in self.heads]", "[head(x) for head in self.heads.values()]"),
      why="variants round 3: an nn.ModuleDict registers its heads too (heads.head_0.W_query.weight); it lost 5 of 15, "
          "told that PyTorch does not see the heads' weights and that no weight could be copied in"),
    V("ok_head_subclass", ch("", "class MultiHeadAttentionWrapper(nn.Module):",
                             "class Head(CausalAttention):\n    pass\n\n\nclass MultiHeadAttentionWrapper(nn.Module):"),
      ch(WR, "[CausalAttention(", "[Head("),
      why="fidelity round 7: heads of a subclass of CausalAttention were refused by their class's name"),
    V("heads_renamed", ch(WR, "self.heads", "self.attention_heads"), breaks=WR,
      says=("keeps its heads in `self.attention_heads`",),
      why="the structure check only: the weights are found under the other name (it cost four checks, two of "
          "them saying the heads were not registered)"),
    V("mask_buffer_renamed", ch(CA, 'self.register_buffer("mask"', 'self.register_buffer("causal_mask"'),
      ch(CA, "self.mask.bool()", "self.causal_mask.bool()"), breaks=CA,
      says=("registers its mask as the buffer `causal_mask`",),
      why="the buffer check only, which said the mask would not move with .to(device)"),
    V("ok_einsum", ch(V2, "queries @ keys.T", 'torch.einsum("qd,kd->qk", queries, keys)'),
      ch(CA, "queries @ keys.transpose(1, 2)", 'torch.einsum("bqd,bkd->bqk", queries, keys)'),
      ch(CA, "return weights @ values", 'return torch.einsum("bqk,bkd->bqd", weights, values)'),
      ch(MHA, "queries @ keys.transpose(2, 3)", 'torch.einsum("bhqd,bhkd->bhqk", queries, keys)')),
    V("ok_functional_softmax",
      ch("", "import torch.nn as nn\n", "import torch.nn as nn\nimport torch.nn.functional as F\n"),
      ch("softmax_naive", "e = torch.exp(x)\n    return e / e.sum(dim=-1, keepdim=True)",
         "return torch.exp(x) / torch.exp(x).sum()"),
      ch("context_vectors", "torch.softmax(", "F.softmax("), ch(V1, "torch.softmax(", "F.softmax("),
      ch(V2, "torch.softmax(", "nn.functional.softmax("), ch(CA, "torch.softmax(", "F.softmax("),
      ch(MHA, f"torch.softmax({SCALE}, dim=-1)", f"({SCALE}).softmax(dim=-1)")),
    V("ok_wrapper_calls_each_head_twice", ch(WR, "        return torch.cat([head(x) for head in self.heads], dim=-1)",
                                             "        for head in self.heads:\n            print(head(x))\n"
                                             "        return torch.cat([head(x) for head in self.heads], dim=-1)"),
      why="learners round rl13: a forward that printed every head's output before concatenating fresh calls draws "
          "each head's dropout twice; the train-mode check told it to pass dropout on to its heads, which it did"),
    V("ok_masked_fill_float_inf", ch(CA, FILL, "mask_bool = self.mask.bool()[:num_tokens, :num_tokens]\n"
                                     "        attn_scores = scores.masked_fill(mask_bool, float('-inf'))\n"
                                     "        scores = attn_scores"),
      ch(MHA, FILL, "scores = scores.masked_fill(self.mask[:num_tokens, :num_tokens] == 1, float('-inf'))")),
    V("ok_masked_fill_inplace", ch(CA, "scores = scores.masked_fill(", "scores.masked_fill_("),
      ch(MHA, "scores = scores.masked_fill(", "scores.masked_fill_(")),
    # Moves its (registered) mask to the scores' device and reads a value in forward: both follow .to(device).
    V("ok_mask_to_scores_device", ch(CA, FILL, "mask = self.mask.bool()[:num_tokens, :num_tokens].to(scores.device)\n"
                                     "        assert scores.isfinite().all().item()\n"
                                     "        scores = scores.masked_fill(mask, -torch.inf)"),
      ch(MHA, FILL, "scores = scores.masked_fill(self.mask[:num_tokens, :num_tokens].type_as(scores).bool(), "
                    "-torch.inf)")),
    V("ok_math_sqrt", ch("", "import torch\n", "import math\n\nimport torch\n"),
      ch(V1, "keys.shape[-1] ** 0.5", "math.sqrt(keys.shape[-1])"),
      ch(V2, "keys.shape[-1] ** 0.5", "math.sqrt(keys.shape[-1])"),
      ch(CA, "keys.shape[-1] ** 0.5", "math.sqrt(self.d_out)"),
      ch(MHA, "keys.shape[-1] ** 0.5", "math.sqrt(self.head_dim)")),
    V("ok_reshape", ch(MHA, ".view(", ".reshape(")),
    # The mask stored the other common ways: the positions to keep (tril, filled where == 0), additive (-inf/0),
    # ready to broadcast as (1, 1, T, T); or no mask tensor at all. Seen: the keep-mask lost 15-18 points when the
    # reference's `mask` was copied over it with the weights.
    V("ok_tril_keep_mask", ch(CA, TRIU, "torch.tril(torch.ones(context_length, context_length))"),
      ch(CA, FILL, "scores = scores.masked_fill(self.mask[:num_tokens, :num_tokens] == 0, -torch.inf)"),
      ch(MHA, TRIU, "torch.tril(torch.ones(context_length, context_length))"),
      ch(MHA, FILL, "scores = scores.masked_fill(self.mask[:num_tokens, :num_tokens] == 0, float('-inf'))")),
    V("ok_additive_mask", ch(CA, TRIU, 'torch.triu(torch.full((context_length, context_length), float("-inf")), '
                                       'diagonal=1)'),
      ch(CA, FILL, "scores = scores + self.mask[:num_tokens, :num_tokens]")),
    V("ok_mask_4d_buffer", ch(MHA, TRIU, f"{TRIU}.view(1, 1, context_length, context_length)"),
      ch(MHA, FILL, "scores = scores.masked_fill(self.mask[:, :, :num_tokens, :num_tokens].bool(), -torch.inf)")),
    # Learners round rl14 (a MultiHeadAttention with a KV cache): the causal mask made in forward on the input's
    # device, no buffer at all, lost the `mask` buffer check, which sdpa(is_causal=True) keeps.
    V("ok_mask_made_in_forward_on_the_inputs_device", ch(CA, f"        {BUFFER}\n", ""),
      ch(CA, FILL, "mask = torch.triu(torch.ones(num_tokens, num_tokens, device=x.device), diagonal=1)\n"
                   "        scores = scores.masked_fill(mask.bool(), -torch.inf)"),
      ch(MHA, f"        {BUFFER}\n", ""),
      ch(MHA, FILL, "causal = torch.triu(torch.ones(num_tokens, num_tokens, device=x.device, dtype=torch.bool), "
                    "diagonal=1)\n        scores = scores.masked_fill(causal, -torch.inf)")),
    V("ok_sdpa_is_causal", ch("", "import torch.nn as nn\n", "import torch.nn as nn\nimport torch.nn.functional as F\n"),
      ch(MHA, "scores = queries @ keys.transpose(2, 3)  # (b, h, T, T)\n"
              f"        {FILL}\n"
              "        weights = torch.softmax(scores / keys.shape[-1] ** 0.5, dim=-1)\n"
              "        weights = self.dropout(weights)\n\n"
              "        context = (weights @ values).transpose(1, 2)",
         "context = F.scaled_dot_product_attention(\n"
         "            queries, keys, values, is_causal=True, dropout_p=self.dropout.p if self.training else 0.0\n"
         "        ).transpose(1, 2)")),
    # The same, and no mask buffer at all (the README's "none at all"): the buffer check failed it (learners round 5).
    V("ok_sdpa_no_buffer", ch("", "import torch.nn as nn\n", "import torch.nn as nn\nimport torch.nn.functional as F\n"),
      ch(MHA, "        self.register_buffer(\"mask\", torch.triu(torch.ones(context_length, context_length), "
              "diagonal=1))\n", ""),
      ch(MHA, "scores = queries @ keys.transpose(2, 3)  # (b, h, T, T)\n"
              f"        {FILL}\n"
              "        weights = torch.softmax(scores / keys.shape[-1] ** 0.5, dim=-1)\n"
              "        weights = self.dropout(weights)\n\n"
              "        context = (weights @ values).transpose(1, 2)",
         "context = F.scaled_dot_product_attention(\n"
         "            queries, keys, values, is_causal=True, dropout_p=self.dropout.p if self.training else 0.0\n"
         "        ).transpose(1, 2)")),
    # The notebook's names in another order (num_heads before dropout): every check of the class failed ("got
    # multiple values for argument 'num_heads'"); the signature check alone charges the order (learners round 5).
    V("v1_linear_layers", *(ch(V1, f"self.{w} = nn.Parameter(torch.rand(d_in, d_out))",
                               f"self.{w} = nn.Linear(d_in, d_out, bias=False)") for w in ("W_query", "W_key", "W_value")),
      *(ch(V1, f"x @ self.{w}", f"self.{w}(x)") for w in ("W_key", "W_query", "W_value")), breaks=V1,
      says=("as nn.Linear layers",), never_says=("no parameter named",),
      why="learners round 5: told that W_query was missing while listing W_query.weight"),
    V("wrapper_head_num_no_qkv_bias", ch(WR, "num_heads: int,\n                 qkv_bias: bool = False):", "head_num: int):"),
      ch(WR, "dropout, qkv_bias) for _ in range(num_heads)", "dropout) for _ in range(head_num)"), breaks=WR,
      says=("Rename: `head_num` -> `num_heads`. Add `qkv_bias`.", "takes no `qkv_bias`"),
      never_says=("unexpected keyword argument 'num_heads'",),
      why="learners round 5: the signature check named the rename only, and the qkv_bias check a TypeError about "
          "num_heads"),
    # A wrapper without context_length and dropout, its heads built with fixed ones (seen in a learner's repository:
    # (d_in, d_out, num_heads, qkv_bias)): the signature check offered `num_heads` -> `context_length` and `qkv_bias` ->
    # `dropout`, renaming the notebook's own arguments into others; what is missing is context_length and dropout.
    V("wrapper_without_context_length_and_dropout",
      ch(WR, "def __init__(self, d_in: int, d_out: int, context_length: int, dropout: float, num_heads: int,\n"
             "                 qkv_bias: bool = False):\n        super().__init__()",
         "def __init__(self, d_in: int, d_out: int, num_heads: int, qkv_bias: bool = False):\n"
         "        super().__init__()\n        context_length, dropout = 64, 0.0"), breaks=WR,
      says=("Add `context_length`, `dropout`",), never_says=("`num_heads` -> `context_length`", "`qkv_bias` -> `dropout`")),
    # The wrapper indented under CausalAttention (seen in a learner's repository): a class attribute of
    # CausalAttention, no top-level class. The feedback said only "`MultiHeadAttentionWrapper` is not defined in your
    # submission" of a class the student can see in the file.
    V("wrapper_nested_in_causal_attention", ch(WR, WRAPPER_SOURCE, "".join(
        "    " + line if line.strip() else line for line in WRAPPER_SOURCE.splitlines(keepends=True))),
      breaks=WR, says=("`MultiHeadAttentionWrapper` is defined inside `CausalAttention`",)),
    # SelfAttention_v2 without the qkv_bias argument, its projections without a bias (seen in a learner's repository):
    # both bias checks said "TypeError: ... unexpected keyword argument 'qkv_bias'", and the one that judges the use
    # of the biases charged the missing argument a third time (a bias=False hard-coded costs one bias point).
    V("v2_without_qkv_bias_argument", ch(V2, "d_out: int, qkv_bias: bool = False):", "d_out: int):"),
      ch(V2, "bias=qkv_bias", "bias=False"), breaks=V2,
      says=("Add `qkv_bias`", "`SelfAttention_v2.__init__` takes no `qkv_bias`"),
      never_says=("unexpected keyword argument 'qkv_bias'",)),
    V("mha_arguments_reordered", ch(MHA, "context_length: int, dropout: float, num_heads: int,",
                                    "context_length: int, num_heads: int, dropout: float,"), breaks=MHA,
      says=("the notebook's arguments in another order",),
      why="the signature check only: every other check passes the arguments by name"),
    # Renames beside another order (seen in learners' repositories: CausalAttention(d_in, context_len, d_out, droupout),
    # a wrapper (num_heads, d_in, d_out, context_lenght, ...)): only the notebook's exact names were passed by name,
    # so the head was built with context_length for d_out and every check of CausalAttention failed on the mask; the
    # qkv_bias checks of a MultiHeadAttention (..., num_heads, context_length, dropout, qvk_bias) said "got multiple
    # values for argument 'num_heads'". The signature check alone charges them.
    V("causal_arguments_renamed_and_reordered",
      ch(CA, "d_in: int, d_out: int, context_length: int, dropout: float, qkv_bias: bool = False):",
         "d_in, context_len, d_out, droupout, qkv_bias=False):"),
      ch(CA, "nn.Dropout(dropout)", "nn.Dropout(droupout)"), ch(CA, "context_length", "context_len"),
      ch(WR, "CausalAttention(d_in, d_out, context_length, dropout, qkv_bias)",
         "CausalAttention(d_in=d_in, context_len=context_length, d_out=d_out, droupout=dropout, qkv_bias=qkv_bias)"),
      breaks=CA, says=("the notebook's arguments in another order", "`context_len` -> `context_length`"),
      never_says=("must match the size",)),
    V("mha_arguments_reordered_and_bias_renamed",
      ch(MHA, "context_length: int, dropout: float, num_heads: int,\n                 qkv_bias: bool = False):",
         "num_heads: int, context_length: int, dropout: float,\n                 qvk_bias: bool = False):"),
      ch(MHA, "bias=qkv_bias", "bias=qvk_bias"), breaks=MHA,
      says=("the notebook's arguments in another order", "`qvk_bias` -> `qkv_bias`"),
      never_says=("got multiple values",)),
    # Learners round rl15 (a study notebook's MultiHeadAttention(d_in, d_out, context_size, num_heads, dropout_prob),
    # no qkv_bias, bias=False written in): built by the student's own names, it printed the notebook's values, and
    # the confirmation on a fresh input built the reference with those names: the grader's internal error, 0 of 3.
    # The names were put back into the notebook's only where every notebook argument had a counterpart, and this
    # class has none for qkv_bias.
    V("mha_arguments_renamed_reordered_without_qkv_bias",
      ch(MHA, "context_length: int, dropout: float, num_heads: int,\n                 qkv_bias: bool = False):",
         "context_size: int, num_heads: int, dropout_prob: float):"),
      ch(MHA, "bias=qkv_bias", "bias=False"), ch(MHA, "nn.Dropout(dropout)", "nn.Dropout(dropout_prob)"),
      ch(MHA, "torch.ones(context_length, context_length)", "torch.ones(context_size, context_size)"), breaks=MHA,
      says=("the notebook's arguments in another order", "`context_size` -> `context_length`"),
      never_says=("internal error",)),
    # Learners round rl15 (a Colab notebook's MultiHeadSelfAttention(d_in, d_out, context_length, num_heads, drop_rate,
    # qkv_bias=False)): `drop_rate`, the book's own config key, was no rename of dropout, so the arguments went by
    # position ("got multiple values for argument 'num_heads'", 0 of 20) and the signature check said to rename
    # drop_rate to num_heads and add dropout.
    V("mha_arguments_reordered_and_dropout_named_drop_rate",
      ch(MHA, "context_length: int, dropout: float, num_heads: int,",
         "context_length: int, num_heads: int, drop_rate: float,"),
      ch(MHA, "nn.Dropout(dropout)", "nn.Dropout(drop_rate)"), breaks=MHA,
      says=("the notebook's arguments in another order", "`drop_rate` -> `dropout`"),
      never_says=("got multiple values", "`drop_rate` -> `num_heads`")),
    # Learners round rl15 (a study repository's wrapper (inp_emb_dim, proj_dim, context_length, dropout, qkv_bias=False,
    # num_heads=4)): qkv_bias before num_heads, both passed by name, was called "the notebook's arguments in another
    # order", and the renames the point is charged for went unsaid.
    V("wrapper_inputs_renamed_and_qkv_bias_before_num_heads",
      ch(WR, "d_in: int, d_out: int, context_length: int, dropout: float, num_heads: int,\n"
             "                 qkv_bias: bool = False):",
         "inp_emb_dim, proj_dim, context_length, dropout, qkv_bias=False, num_heads=4):"),
      ch(WR, "CausalAttention(d_in, d_out, context_length, dropout, qkv_bias)",
         "CausalAttention(inp_emb_dim, proj_dim, context_length, dropout, qkv_bias)"), breaks=WR,
      says=("Rename: `inp_emb_dim` -> `d_in`, `proj_dim` -> `d_out`",), never_says=("another order",)),
    # The head's own order, and a wrapper in its own order too that builds its heads in the head's (seen): the
    # grader's check that the wrapper builds heads that way called the wrapper in the notebook's order, which it does
    # not take, so the wrapper was judged with heads in the notebook's order and its right call crashed them (0/15).
    V("wrapper_and_head_arguments_reordered",
      ch(CA, "context_length: int, dropout: float, qkv_bias", "dropout: float, context_length: int, qkv_bias"),
      ch(WR, "context_length: int, dropout: float, num_heads: int,",
         "context_length: int, num_heads: int, dropout: float,"),
      ch(WR, "CausalAttention(d_in, d_out, context_length, dropout, qkv_bias)",
         "CausalAttention(d_in, d_out, dropout, context_length, qkv_bias)"),
      breaks=f"{CA}, {WR}", says=("the notebook's arguments in another order",),
      never_says=("dropout probability has to be between 0 and 1",)),
    # Red team, round 16: the mask made for the first input's length and kept (a buffer registered on the first call),
    # so any later call at another length fails (text generation calls one module at growing lengths). It kept full
    # marks: every check called each module at one length only. The short-sequence checks now call the module again at
    # context_length tokens and then at the short length: 1 point each.
    V("causal_mask_kept_from_first_call", ch(CA, FILL, "if not hasattr(self, \"first_mask\"):\n"
      "            self.register_buffer(\"first_mask\", self.mask.bool()[:num_tokens, :num_tokens], persistent=False)\n"
      "        scores = scores.masked_fill(self.first_mask, -torch.inf)"), breaks=CA,
      says=("but the same module called next on",)),
    V("mha_mask_kept_from_first_call", ch(MHA, FILL, "if not hasattr(self, \"first_mask\"):\n"
      "            self.register_buffer(\"first_mask\", self.mask.bool()[:num_tokens, :num_tokens], persistent=False)\n"
      "        scores = scores.masked_fill(self.first_mask, -torch.inf)"), breaks=MHA,
      says=("but the same module called next on",)),
    # A loop over the heads, each head's weights through self.dropout in turn (seen in learners' code): the same
    # dropout with its random draws made head by head. It lost the train-mode dropout point.
    V("ok_head_loop_dropout", ch(MHA, MHA_CORE, HEAD_LOOP.format(drop="self.dropout(weights)", scores="scores"))),
    # Variants round 4: the same dropout on the same weights, its random draws made in another order; each lost
    # its train-mode dropout point.
    V("ok_mha_weights_laid_b_t_h_t",
      ch(MHA, MHA_CORE,
         "        q4, k4, v4 = (t.transpose(1, 2) for t in (queries, keys, values))  # (b, T, h, hd)\n"
         "        scores = torch.einsum(\"bqhd,bkhd->bqhk\", q4, k4)  # (b, T, h, T)\n"
         "        scores = scores.masked_fill(self.mask.bool()[:num_tokens, None, :num_tokens], -torch.inf)\n"
         "        weights = torch.softmax(scores / keys.shape[-1] ** 0.5, dim=-1)\n"
         "        weights = self.dropout(weights)\n\n"
         "        context = torch.einsum(\"bqhk,bkhd->bqhd\", weights, v4)  # (b, T, h, hd)"),
      why="einsum keeps the weights as (b, T, heads, T): dropout draws over that layout"),
    V("ok_causal_weights_keys_first",
      ch(CA, "        scores = queries @ keys.transpose(1, 2)  # (b, T, T)\n"
             "        # Slice the mask: a batch may be shorter than context_length.\n        " + FILL + "\n"
             "        weights = torch.softmax(scores / keys.shape[-1] ** 0.5, dim=-1)\n"
             "        weights = self.dropout(weights)\n"
             "        return weights @ values  # (b, T, d_out)",
         "        scores_kq = keys @ queries.transpose(1, 2)  # (b, keys, queries)\n"
         "        future = self.mask.bool()[:num_tokens, :num_tokens].T\n"
         "        scores_kq = scores_kq.masked_fill(future, -torch.inf)\n"
         "        weights_kq = self.dropout(torch.softmax(scores_kq / keys.shape[-1] ** 0.5, dim=1))\n"
         "        return weights_kq.transpose(1, 2) @ values  # (b, T, d_out)"),
      why="the weights computed keys first, softmax over dim=1: dropout draws over the transposed layout"),
    V("ok_wrapper_heads_called_last_first",
      ch(WR, "return torch.cat([head(x) for head in self.heads], dim=-1)",
         "outs = [None] * len(self.heads)\n"
         "        for i in reversed(range(len(self.heads))):\n"
         "            outs[i] = self.heads[i](x)\n"
         "        return torch.cat(outs, dim=-1)"),
      why="the heads' dropout drawn last head first; the concatenation keeps their order"),
    V("ok_extra_init_argument", ch(CA, "qkv_bias: bool = False):\n        super().__init__()",
                                   "qkv_bias: bool = False,\n                 verbose: bool = False):\n"
                                   "        super().__init__()\n        self.verbose = verbose"),
      ch(MHA, "qkv_bias: bool = False):\n        super().__init__()", "qkv_bias: bool = False, **kwargs):\n"
                                                                      "        super().__init__()")),
    # Learners round rl15 (seen): an extra argument with a default between num_heads and qkv_bias,
    # MultiHeadAttention(d_in, d_out, context_length, dropout, num_heads, is_causal=True, qkv_bias=False), the mask
    # applied when is_causal. The notebook's calls pass num_heads and qkv_bias by name, so no call of the notebook
    # changes; the signature check took it for a rename ("Rename: `is_causal` -> `qkv_bias`", a class that has both).
    V("ok_mha_extra_argument_before_qkv_bias",
      ch(MHA, "num_heads: int,\n                 qkv_bias: bool = False):",
         "num_heads: int, is_causal: bool = True,\n                 qkv_bias: bool = False):"),
      ch(MHA, "        self.register_buffer(\"mask\"", "        self.is_causal = is_causal\n"
                                                    "        self.register_buffer(\"mask\""),
      why="learners round rl15: the signature check told it to rename is_causal to the qkv_bias it has"),
]


def both(name: str, first: str, second: str, **kw) -> Variant:
    """Two of the table's bugs in one class, as learners write them (round rl11): no single bug gives their output,
    so the diagnosis names the pair, each mistake in its own words."""
    a, b = (next(v for v in VARIANTS if v.name == n) for n in (first, second))
    assert a.cause is not None and b.cause is not None, (first, second)
    return V(name, *a.changes, *b.changes, breaks=",".join(dict.fromkeys(a.breaks + b.breaks)),
             says=(a.cause.en, b.cause.en, "with both of these mistakes"), **kw)


VARIANTS += [
    both("mha_masked_fill_dropped_and_out_proj_unused", "mha_masked_fill_dropped", "mha_out_proj_unused",
         why="learners round rl11: told only that the output differs"),
    both("causal_masked_fill_dropped_and_typo_0_05", "masked_fill_dropped", "causal_typo_0_05",
         why="learners round rl11: told only that the output differs"),
]
TABLE = Table(REFERENCE_SOURCE, VARIANTS)
BY_NAME = TABLE.by_name
# The diagnosis library: the bugs whose output differs from the reference's, so an exact match names them.
LIBRARY = TABLE.library
module = TABLE.module  # the bug version of the reference as a module, built once per grader process
