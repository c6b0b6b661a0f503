"""The transformer_block assignment's known learner bugs, each the reference plus stated find/replace changes: one
table that is both the grader's diagnosis library (diagnose.py) and the grader's own test corpus
(tests/test_transformer_block.py)."""
from __future__ import annotations

import functools
from pathlib import Path

from autograder.bugtable import Table, Variant, ch, row
from reference import transformer_block as R

REFERENCE_SOURCE = Path(R.__file__).read_text(encoding="utf-8")
V = functools.partial(row, REFERENCE_SOURCE)

ATTN, FFN, BLOCK = "MultiHeadSelfAttention", "FeedForward", "TransformerBlock"
POST_ATTN = "x = self.norm1(x + self.dropout1(self.attn(x, causal)))"
POST_FF = "x = self.norm2(x + self.dropout2(self.ff(x)))"
PRE_ATTN = "x = x + self.dropout1(self.attn(self.norm1(x), causal))"
PRE_FF = "x = x + self.dropout2(self.ff(self.norm2(x)))"
SWITCHED = "keep = z if self.use_residual else 0"
MERGE = "(weights @ v).transpose(1, 2).reshape(b, n, self.d_model)"
ATTN_DROP = "weights = self.dropout(torch.softmax(scores, dim=-1))"
NO_FF_RESIDUAL = ("there is no residual connection around the feed-forward network; add its input back: "
                  "norm2(x + ff(x)) (post-norm), x + ff(norm2(x)) (pre-norm)",
                  "피드포워드 네트워크를 감싸는 잔차 연결이 없음; 입력을 다시 더하세요: "
                  "norm2(x + ff(x)) (post-norm), x + ff(norm2(x)) (pre-norm)")
FFN_WIDTH = "self.linear1 = nn.Linear(d_model, d_ff)\n        self.linear2 = nn.Linear(d_ff, d_model)"

VARIANTS: list[Variant] = [
    # ---------------------------------------------------------------- MultiHeadSelfAttention
    V("attn_scale_by_d_model", ch(ATTN, "/ math.sqrt(self.d_head)", "/ math.sqrt(self.d_model)"),
      breaks=ATTN,
      en="the scores are divided by sqrt(d_model); each head divides by sqrt(d_head), d_head = d_model // n_heads",
      ko="점수를 sqrt(d_model)로 나눔; 헤드마다 sqrt(d_head)로 나눕니다, d_head = d_model // n_heads"),
    V("attn_no_scaling", ch(ATTN, " / math.sqrt(self.d_head)", ""), breaks=ATTN,
      en="the scores are not scaled before the softmax; divide q @ k^T by sqrt(d_head)",
      ko="softmax 전에 점수를 나누지 않음; q @ k^T를 sqrt(d_head)로 나누세요"),
    V("attn_mask_hides_diagonal", ch(ATTN, "diagonal=1)", "diagonal=0)"), breaks=ATTN, says=("diagonal=1",),
      why="the causal mask also hides the token itself, so row 0 is all -inf and turns into NaN"),
    V("attn_mask_hides_past", ch(ATTN, "torch.triu(torch.ones(n, n, dtype=torch.bool, device=x.device), diagonal=1)",
                                 "torch.tril(torch.ones(n, n, dtype=torch.bool, device=x.device), diagonal=-1)"),
      breaks=ATTN, says=("hides the past instead of the future",), never_says=("no attention mixes the tokens",),
      why="learners round C: tril(..., diagonal=-1) hides the past; the block's causality was charged too, and both "
          "were told that no attention mixes the tokens"),
    V("attn_softmax_queries", ch(ATTN, "torch.softmax(scores, dim=-1)", "torch.softmax(scores, dim=-2)"),
      breaks=ATTN,
      en="the softmax runs over dim=-2 (the queries); normalise each query's row over the keys with dim=-1",
      ko="softmax를 dim=-2(쿼리 축)에 대해 계산함; 각 쿼리의 행을 키 축(dim=-1)으로 정규화하세요"),
    V("attn_softmax_heads", ch(ATTN, "torch.softmax(scores, dim=-1)", "torch.softmax(scores, dim=1)"),
      breaks=ATTN,
      en="the softmax runs over dim=1 (the heads); normalise each query's row over the keys with dim=-1",
      ko="softmax를 dim=1(헤드 축)에 대해 계산함; 각 쿼리의 행을 키 축(dim=-1)으로 정규화하세요",
      never_says=("diagonal=1",),
      why="learners round s9: with causal=True its NaN was blamed on a mask that hides the diagonal"),
    V("attn_einsum_values_apart", ch(ATTN, "(weights @ v)", 'torch.einsum("bhqk, bhvd -> bhqd", weights, v)'),
      breaks=ATTN,
      en="the weighted sum's einsum names the keys' axis of the weights and the tokens' axis of v with different "
         "letters ('bhqk, bhvd -> bhqd'), so it sums each over its own and every token gets the sum of all values; "
         "use one letter for both: 'bhqk, bhkd -> bhqd' (or weights @ v)",
      ko="가중합의 einsum이 가중치의 키 축과 v의 토큰 축에 서로 다른 문자를 써서('bhqk, bhvd -> bhqd') 각각 따로 합하므로 "
         "모든 토큰이 값 전체의 합을 받음; 두 축에 같은 문자를 쓰세요: 'bhqk, bhkd -> bhqd' (또는 weights @ v)",
      why="learners round rl13 (Korean study notes): with 1 head the check blamed a softmax over the heads, which "
          "gives the same numbers there (every weight 1); the learner's softmax was right"),
    V("attn_no_divisibility_check", ch(ATTN, "        if d_model % n_heads != 0:\n            raise ValueError("
                                             "f\"d_model ({d_model}) is not a multiple of n_heads ({n_heads})\")\n",
                                       ""),
      breaks=ATTN, says=("10 features cannot be cut into 3 equal heads",),
      why="learners round s9: nothing checked the template's ValueError, so a class without it kept full marks"),
    V("attn_assert_tuple", ch(ATTN, "        if d_model % n_heads != 0:\n            raise ValueError(",
                              "        assert (d_model % n_heads == 0, "), breaks=ATTN, says=("always true",),
      why="learners round s9: a parenthesised assert of (condition, message) never fails"),
    V("attn_masked_fill_dropped", ch(ATTN, 'scores = scores.masked_fill(future, float("-inf"))',
                                     'scores.masked_fill(future, float("-inf"))'), breaks=ATTN,
      says=("drops its result",),
      why="learners round s9: the result of masked_fill is not kept; the feedback only said to hide the future"),
    V("attn_heads_not_transposed", ch(ATTN, "return t.view(b, n, self.n_heads, self.d_head).transpose(1, 2)",
                                      "return t.view(b, self.n_heads, n, self.d_head)"), breaks=ATTN,
      en="the heads are split by viewing straight to (b, n_heads, n, d_head); view as (b, n, n_heads, d_head), "
         "then .transpose(1, 2)",
      ko="(b, n_heads, n, d_head)로 바로 view해서 헤드를 나눔; (b, n, n_heads, d_head)로 view한 뒤 "
         ".transpose(1, 2)하세요"),
    V("attn_no_transpose_back", ch(ATTN, MERGE, "(weights @ v).reshape(b, n, self.d_model)"), breaks=ATTN,
      en="the heads are merged without transposing back: weights @ v is (b, n_heads, n, d_head); .transpose(1, 2) "
         "it before .reshape(b, n, d_model)",
      ko="다시 전치하지 않고 헤드를 합침: weights @ v는 (b, n_heads, n, d_head)이므로 .reshape(b, n, d_model) "
         "전에 .transpose(1, 2)하세요", never_says=("Hide the future",),
      why="learners round s11: the merge mixes the tokens, and the causality check told them to hide the future"),
    V("attn_no_out_proj", ch(ATTN, "return self.W_o(context)", "return context"), breaks=ATTN,
      en="W_o is never applied; return self.W_o(context)",
      ko="W_o를 적용하지 않음; self.W_o(context)를 반환하세요"),
    V("attn_no_dropout", ch(ATTN, ATTN_DROP, "weights = torch.softmax(scores, dim=-1)"), breaks=ATTN,
      says=("the dropout is missing",), why="self.dropout is never applied: train mode drops nothing"),
    V("attn_dropout_on_output", ch(ATTN, ATTN_DROP, "weights = torch.softmax(scores, dim=-1)"),
      ch(ATTN, "return self.W_o(context)", "return self.dropout(self.W_o(context))"), breaks=ATTN,
      says=("the dropout is applied to the output (after W_o)",)),
    V("attn_functional_dropout", ch(ATTN, ATTN_DROP, "weights = F.dropout(torch.softmax(scores, dim=-1), "
                                                     "self.dropout.p)"), breaks=ATTN,
      says=("the dropout is still active in eval mode",), why="F.dropout keeps dropping in eval mode"),
    V("attn_dropout_training_true", ch(ATTN, ATTN_DROP, "weights = F.dropout(torch.softmax(scores, dim=-1), 0.1, "
                                                        "True)"), breaks=ATTN,
      says=("gives different outputs for the same input in eval mode",), never_says=("Hide the future",),
      why="learners round s11: F.dropout(x, 0.1, True) drops in eval mode; its causality check said to hide the "
          "future, and the block (18 of 36) and exercise 3 (9 of 12) were charged for it too; the block is now judged "
          "over the grader's stand-in attention"),
    V("attn_q_no_bias", ch(ATTN, "self.W_q = nn.Linear(d_model, d_model)",
                           "self.W_q = nn.Linear(d_model, d_model, bias=False)"), breaks=ATTN,
      says=("W_q.bias",), why="PyTorch's query bias cannot be copied in; the block is judged with the student's "
                              "own attention"),
    V("attn_class_misspelt", ch("", "class MultiHeadSelfAttention(", "class MultiheadSelfAttention("),
      ch(BLOCK, "MultiHeadSelfAttention(", "MultiheadSelfAttention("), breaks=ATTN,
      says=("`MultiheadSelfAttention`",),
      why="learners round 5: the block's structure check charged the part's name a second time"),
    V("attn_k_not_transposed", ch(ATTN, "q @ k.transpose(-2, -1)", "q @ k.transpose(1, 2)"), breaks=ATTN,
      says=("raised RuntimeError",),
      why="learners round s10: the attention raises (k's heads and tokens swapped instead of its last two axes); "
          "the block, right, lost its residual, LayerNorm and dropout checks (12 of 36) and 10 of 12 in exercise 3, "
          "which did not excuse a raising attention, while its comparisons were excused. The block is now judged "
          "over the grader's stand-in attention"),
    V("attn_raises_block_returns_input",
      ch(ATTN, "        b, n, _ = x.shape\n        q = self._heads(",
         "        raise RuntimeError(\"todo later\")\n        b, n, _ = x.shape\n        q = self._heads("),
      ch(BLOCK, "        if not (self.use_ffn and self.use_norm and self.use_residual):\n",
         "        self.attn(x, causal)\n        return x\n"
         "        if not (self.use_ffn and self.use_norm and self.use_residual):\n"),
      breaks=f"{ATTN},{BLOCK},ablation", says=("todo later", "it does not compute with them"),
      why="learners round s10 (security): an attention that always raises and a block whose forward calls it and "
          "returns its input scored 24 of 36 on the block, every failure excused as the attention's"),
    # ---------------------------------------------------------------- FeedForward
    V("ffn_gelu", ch(FFN, "F.relu(", "F.gelu("), breaks=FFN,
      en="the feed-forward network uses GELU; the block (like nn.TransformerEncoderLayer's default) uses ReLU",
      ko="피드포워드 네트워크가 GELU를 씀; 이 블록은 (nn.TransformerEncoderLayer의 기본값처럼) ReLU를 씁니다"),
    V("ffn_gelu_tanh", ch(FFN, "F.relu(self.linear1(x))", "F.gelu(self.linear1(x), approximate=\"tanh\")"),
      breaks=FFN,
      en="the feed-forward network uses GELU (its tanh approximation, 0.5 * x * (1 + tanh(...))); the block (like "
         "nn.TransformerEncoderLayer's default) uses ReLU",
      ko="피드포워드 네트워크가 GELU(tanh 근사, 0.5 * x * (1 + tanh(...)))를 씀; 이 블록은 "
         "(nn.TransformerEncoderLayer의 기본값처럼) ReLU를 씁니다",
      why="learners round s11: a hand-written tanh GELU (as in GPT-2's code) was told only the expected formula"),
    V("ffn_dropout_at_output", ch(FFN, "return self.linear2(self.dropout(F.relu(self.linear1(x))))",
                                  "return self.dropout(self.linear2(F.relu(self.linear1(x))))"), breaks=FFN,
      en="dropout is applied to linear2's output; apply it between the ReLU and linear2: "
         "linear2(dropout(relu(linear1(x))))",
      ko="linear2의 출력에 dropout을 적용함; ReLU와 linear2 사이에 적용하세요: linear2(dropout(relu(linear1(x))))"),
    V("ffn_width_4x", ch(FFN, FFN_WIDTH, FFN_WIDTH.replace("d_ff", "4 * d_model")), breaks=FFN,
      says=("linear1.weight is (48, 12), expected (20, 12)",),
      why="the hidden width is 4 * d_model, not d_ff; the block is judged with the student's own feed-forward"),
    V("ffn_width_d_model", ch(FFN, FFN_WIDTH, FFN_WIDTH.replace("d_ff", "d_model")), breaks=FFN,
      says=("linear1.weight is (12, 12), expected (20, 12)",),
      why="the hidden width is d_model, not d_ff; the block is judged with the student's own feed-forward"),
    V("ffn_raises", ch(FFN, "return self.linear2(self.dropout(F.relu(self.linear1(x))))",
                       "raise RuntimeError(\"todo later\")"), breaks=FFN, says=("todo later",),
      why="the feed-forward network raises: a right block lost 12 of 36 and 7 of 12 in exercise 3 (the checks that "
          "do not excuse a raising part); it is now judged over the grader's stand-in feed-forward network"),
    V("ffn_raises_block_returns_input", ch(FFN, "return self.linear2(self.dropout(F.relu(self.linear1(x))))",
                                           "raise RuntimeError(\"todo later\")"),
      ch(BLOCK, "        if not (self.use_ffn and self.use_norm and self.use_residual):\n",
         "        self.ff(self.attn(x, causal))\n        return x\n"
         "        if not (self.use_ffn and self.use_norm and self.use_residual):\n"),
      breaks=f"{FFN},{BLOCK},ablation", says=("todo later", "it does not compute with them"),
      why="the same hole as attn_raises_block_returns_input through the feed-forward network: 24 of 36 on the block"),
    V("parts_raise_block_right",
      ch(ATTN, "q @ k.transpose(-2, -1)", "q @ k.transpose(1, 2)"),
      ch(FFN, "return self.linear2(self.dropout(F.relu(self.linear1(x))))", "raise RuntimeError(\"todo later\")"),
      breaks=f"{ATTN},{FFN}", says=("todo later", "raised RuntimeError"),
      why="both parts raise; the block, right, is judged over both stand-ins"),
    # ---------------------------------------------------------------- TransformerBlock
    V("block_no_attn_residual", ch(BLOCK, POST_ATTN, "x = self.norm1(self.dropout1(self.attn(x, causal)))"),
      ch(BLOCK, PRE_ATTN, "x = self.dropout1(self.attn(self.norm1(x), causal))"), breaks=BLOCK,
      says=("residual connection around the self-attention is missing",)),
    V("block_no_ffn_residual", ch(BLOCK, POST_FF, "x = self.norm2(self.dropout2(self.ff(x)))"),
      ch(BLOCK, PRE_FF, "x = self.dropout2(self.ff(self.norm2(x)))"), breaks=BLOCK,
      en=NO_FF_RESIDUAL[0], ko=NO_FF_RESIDUAL[1]),
    # The same missing residual in the code the switches share (one sublayer function, as tutorials write it): the
    # block is wrong in both orders, so no case shows exercise 3's switches working against PyTorch's block, and the
    # switch that keeps the feed-forward network loses its points too, saying why (known gap; learners' corpus,
    # session 19: it was told only that the output differs)
    V("block_no_ffn_residual_in_switches_too", ch(BLOCK, POST_FF, "x = self.norm2(self.dropout2(self.ff(x)))"),
      ch(BLOCK, PRE_FF, "x = self.dropout2(self.ff(self.norm2(x)))"),
      ch(BLOCK, "def sublayer(z, layer, norm, dropout):", "def sublayer(z, layer, norm, dropout, add=True):"),
      ch(BLOCK, SWITCHED, "keep = z if self.use_residual and add else 0"),
      ch(BLOCK, "x = sublayer(x, self.ff, self.norm2, self.dropout2)",
         "x = sublayer(x, self.ff, self.norm2, self.dropout2, add=False)"),
      breaks=f"{BLOCK},ablation", en=NO_FF_RESIDUAL[0], ko=NO_FF_RESIDUAL[1], says=("in either order",),
      why="one bug in code the switches share: the block is wrong in both orders, and no case can show exercise 3's "
          "switches right against PyTorch's block (known gap)"),
    V("block_norm_first_ignored", ch(BLOCK, "if self.norm_first:", "if False:"), breaks=BLOCK,
      says=("post-norm", "norm_first=True")),
    V("block_norm_first_ignored_in_switches_too", ch(BLOCK, "if self.norm_first:", "if False:"),
      ch(BLOCK, "if not self.norm_first:  # post-norm", "if True:  # post-norm"), breaks=BLOCK,
      says=("post-norm", "norm_first=True"),
      why="learners round s9: norm_first ignored in code the use_* switches share cost the ablation question too "
          "(6 of 12), though with norm_first=False every switch worked"),
    V("block_pre_norm_ends_with_norm", ch(BLOCK, PRE_FF, "x = self.norm2(x + self.dropout2(self.ff(x)))"),
      breaks=BLOCK, says=("feed-forward one is post-norm",)),
    V("block_pre_norm_residual_normalised", ch(BLOCK, PRE_ATTN, "x = self.norm1(x)\n"
                                               "            x = x + self.dropout1(self.attn(x, causal))"),
      ch(BLOCK, PRE_FF, "x = self.norm2(x)\n            x = x + self.dropout2(self.ff(x))"), breaks=BLOCK,
      en="the pre-norm block replaces x by its LayerNorm (x = norm1(x), then x + attn(x)), so the residual carries "
         "the normalised x; keep x and normalise only the sub-layer's input: x + attn(norm1(x))",
      ko="pre-norm 블록이 x를 LayerNorm 결과로 바꿔서(x = norm1(x) 다음 x + attn(x)) 잔차가 정규화된 x를 "
         "전달함; x는 그대로 두고 서브레이어의 입력만 정규화하세요: x + attn(norm1(x))"),
    V("block_post_norm_on_branch", ch(BLOCK, POST_ATTN, "x = x + self.norm1(self.dropout1(self.attn(x, causal)))"),
      ch(BLOCK, POST_FF, "x = x + self.norm2(self.dropout2(self.ff(x)))"), breaks=BLOCK,
      en="the post-norm block applies the LayerNorm to the sub-layer's output, x + norm1(attn(x)); post-norm "
         "normalises the residual sum: norm1(x + attn(x))",
      ko="post-norm 블록이 LayerNorm을 서브레이어의 출력에 적용함(x + norm1(attn(x))); "
         "post-norm은 잔차 합을 정규화합니다: norm1(x + attn(x))"),
    V("block_post_norm2_on_branch", ch(BLOCK, POST_FF, "x = x + self.norm2(self.dropout2(self.ff(x)))"),
      breaks=BLOCK,
      en="the post-norm block applies norm2 to the feed-forward output, x + norm2(ff(x)), while the attention "
         "sub-layer is right; post-norm normalises the residual sum: norm2(x + ff(x))",
      ko="post-norm 블록이 norm2를 피드포워드 출력에 적용함(x + norm2(ff(x))), 어텐션 서브레이어는 맞음; "
         "post-norm은 잔차 합을 정규화합니다: norm2(x + ff(x))",
      why="learners round s11: only the feed-forward residual on the wrong side; the comparisons said only to "
          "compare with nn.TransformerEncoderLayer"),
    V("block_causal_not_passed", ch(BLOCK, POST_ATTN, "x = self.norm1(x + self.dropout1(self.attn(x)))"),
      ch(BLOCK, PRE_ATTN, "x = x + self.dropout1(self.attn(self.norm1(x)))"), breaks=BLOCK,
      says=("causal=causal",)),
    V("attn_leaks_block_ignores_causal", ch(ATTN, 'scores = scores.masked_fill(future, float("-inf"))',
                                            'scores.masked_fill(future, float("-inf"))'),
      ch(BLOCK, POST_ATTN, "x = self.norm1(x + self.dropout1(self.attn(x)))"),
      ch(BLOCK, PRE_ATTN, "x = x + self.dropout1(self.attn(self.norm1(x)))"), breaks=f"{ATTN},{BLOCK}",
      says=("drops its result", "causal=causal", "stand-in attention, which is causal"),
      why="a block whose attention leaks was excused in its causality check without evidence that it is causal "
          "itself: this one never passes causal on and kept its 36 of 36; it is now checked over the grader's causal "
          "stand-in attention"),
    V("block_functional_dropout", ch(BLOCK, POST_ATTN, "x = self.norm1(x + F.dropout(self.attn(x, causal), "
                                                       "self.dropout1.p))"),
      ch(BLOCK, PRE_ATTN, "x = x + F.dropout(self.attn(self.norm1(x), causal), self.dropout1.p)"), breaks=BLOCK,
      says=("F.dropout",), why="F.dropout keeps dropping in eval mode"),
    V("block_dropout_training_true", ch(BLOCK, POST_ATTN, "x = self.norm1(x + F.dropout(self.attn(x, causal), 0.1, "
                                                          "True))"), breaks=BLOCK,
      says=("gives different outputs for the same input in eval mode", "training=self.training",
            "another output at each call in eval mode"),
      never_says=("causal=causal",),
      why="learners round s11: F.dropout(x, 0.1, True) in the block drops in eval mode; its causality check told "
          "them to pass the flag on, self.attn(..., causal=causal)"),
    V("block_no_dropout", ch(BLOCK, POST_ATTN, "x = self.norm1(x + self.attn(x, causal))"),
      ch(BLOCK, POST_FF, "x = self.norm2(x + self.ff(x))"), ch(BLOCK, PRE_ATTN, "x = x + self.attn(self.norm1(x), causal)"),
      ch(BLOCK, PRE_FF, "x = x + self.ff(self.norm2(x))"), breaks=BLOCK,
      says=("dropout1 (on the self-attention's output) is missing",
            "dropout2 (on the feed-forward network's output) is missing")),
    V("block_dropout_after_add", ch(BLOCK, POST_ATTN, "x = self.norm1(self.dropout1(x + self.attn(x, causal)))"),
      ch(BLOCK, POST_FF, "x = self.norm2(self.dropout2(x + self.ff(x)))"),
      ch(BLOCK, PRE_ATTN, "x = self.dropout1(x + self.attn(self.norm1(x), causal))"),
      ch(BLOCK, PRE_FF, "x = self.dropout2(x + self.ff(self.norm2(x)))"), breaks=BLOCK,
      says=("dropout1 is applied after the residual addition", "dropout2 is applied after the residual addition")),
    V("block_builds_ffn_4x", ch(BLOCK, "self.ff = FeedForward(d_model, d_ff, dropout)",
                                "self.ff = FeedForward(d_model, 4 * d_model, dropout)"), breaks="TransformerBlock,ablation",
      says=("ff.linear1.weight is (48, 12), PyTorch's is (20, 12)",),
      why="the block builds its feed-forward network 4 * d_model wide although FeedForward itself is right: the "
          "block's own bug, in every block of exercise 3 too"),
    V("block_pre_norm1_twice", ch(BLOCK, PRE_FF, "x = x + self.dropout2(self.ff(self.norm1(x)))"), breaks=BLOCK,
      en="the pre-norm block normalises the feed-forward input with norm1 again; each sub-layer has its own "
         "LayerNorm: x + ff(norm2(x))",
      ko="pre-norm 블록이 피드포워드 입력도 norm1로 정규화함; 서브레이어마다 자기 LayerNorm이 있습니다: "
         "x + ff(norm2(x))"),
    V("block_post_norm1_missing", ch(BLOCK, POST_ATTN, "x = x + self.dropout1(self.attn(x, causal))"), breaks=BLOCK,
      en="the post-norm block does not apply norm1: the attention sub-layer's residual sum must be normalised too, "
         "norm1(x + attn(x))",
      ko="post-norm 블록이 norm1을 적용하지 않음; 어텐션 서브레이어의 잔차 합도 정규화해야 합니다: "
         "norm1(x + attn(x))"),
    V("block_ffn_residual_from_input", ch(BLOCK, POST_ATTN, "h = self.norm1(x + self.dropout1(self.attn(x, causal)))"),
      ch(BLOCK, POST_FF, "x = self.norm2(x + self.dropout2(self.ff(h)))"), breaks=BLOCK,
      en="the feed-forward residual adds the block's input x instead of the attention sub-layer's output h: with "
         "h = norm1(x + attn(x)) the block ends with norm2(h + ff(h))",
      ko="피드포워드 잔차 연결이 어텐션 서브레이어의 출력 h 대신 블록의 입력 x를 더함; h = norm1(x + attn(x))이면 "
         "블록은 norm2(h + ff(h))로 끝납니다"),
    V("block_norm_first_renamed", ch(BLOCK, "dropout=0.1, norm_first=False, use_ffn=True",
                                     "dropout=0.1, pre_norm=False, use_ffn=True"),
      ch(BLOCK, "self.norm_first = norm_first", "self.norm_first = pre_norm"), breaks="ablation",
      says=("`pre_norm`", "Rename `pre_norm` to norm_first"),
      why="learners round s10: norm_first=... was refused, and a right block got 0 of 36 and 1 of 12; now passed under "
          "the student's name, the name charged once in the signature check"),
    V("block_norms_used_the_other_way",
      ch(BLOCK, POST_ATTN, "x = self.norm2(x + self.dropout1(self.attn(x, causal)))"),
      ch(BLOCK, POST_FF, "x = self.norm1(x + self.dropout2(self.ff(x)))"),
      ch(BLOCK, PRE_ATTN, "x = x + self.dropout1(self.attn(self.norm2(x), causal))"),
      ch(BLOCK, PRE_FF, "x = x + self.dropout2(self.ff(self.norm1(x)))"),
      ch(BLOCK, "lambda z: self.attn(z, causal), self.norm1, self.dropout1",
         "lambda z: self.attn(z, causal), self.norm2, self.dropout1"),
      ch(BLOCK, "x = sublayer(x, self.ff, self.norm2, self.dropout2)", "x = sublayer(x, self.ff, self.norm1, self.dropout2)"),
      breaks=BLOCK, says=("uses norm1 and norm2 the other way round",), never_says=("norm1 and norm2 are swapped",),
      why="learners round tb16: norm2 around the attention and norm1 around the feed-forward network, a right block "
          "once each LayerNorm gets the weights of its role, lost 20.25 of 36 and 6 of 12 ('norm1 and norm2 are "
          "swapped' in every comparison); the template fixes the names, so the structure check alone charges them"),
    V("attn_layers_renamed", *(ch(ATTN, f"self.{a}", f"self.{b}") for a, b in
                               (("W_q", "query"), ("W_k", "key"), ("W_v", "value"), ("W_o", "out"))),
      breaks=ATTN, says=("does not have the parameters the template names",), never_says=("could not be copied",),
      why="learners round rl13: query/key/value/out, as tutorials name them, got 4 of 20 (every check that copies "
          "PyTorch's weights in failed); they are given them in the order made, and the names check alone charges"),
    V("attn_layers_renamed_key_first",
      ch(ATTN, "self.W_q = nn.Linear(d_model, d_model)\n        self.W_k = nn.Linear(d_model, d_model)",
         "self.key = nn.Linear(d_model, d_model)\n        self.query = nn.Linear(d_model, d_model)"),
      *(ch(ATTN, f"self.{a}", f"self.{b}") for a, b in (("W_q", "query"), ("W_k", "key"), ("W_v", "value"),
                                                       ("W_o", "proj"))),
      breaks=ATTN, says=("does not have the parameters the template names",), never_says=("could not be copied",),
      why="red team, round 22: key made before query, as nanoGPT's Head does, got W_q's weights in its keys (the order "
          "made) and 5.6 of 20; the attention's layers go by the words of their names where each names its role"),
    V("attn_layers_in_list_out_first",
      ch(ATTN, "self.W_q = nn.Linear(d_model, d_model)\n        self.W_k = nn.Linear(d_model, d_model)\n"
               "        self.W_v = nn.Linear(d_model, d_model)\n        self.W_o = nn.Linear(d_model, d_model)",
         "self.linears = nn.ModuleList([nn.Linear(d_model, d_model) for _ in range(4)])  # out, q, k, v"),
      ch(ATTN, "q = self._heads(self.W_q(x), b, n)\n        k = self._heads(self.W_k(x), b, n)\n"
               "        v = self._heads(self.W_v(x), b, n)",
         "q = self._heads(self.linears[1](x), b, n)\n        k = self._heads(self.linears[2](x), b, n)\n"
         "        v = self._heads(self.linears[3](x), b, n)"),
      ch(ATTN, "return self.W_o(context)", "return self.linears[0](context)"),
      breaks=ATTN, says=("The other checks read your layers so: self.linears[1] as W_q",),
      never_says=("could not be copied",),
      why="learners round tb16: four projections in one nn.ModuleList, used as out, q, k, v, name no role and got the "
          "weights in the order made (5.6 of 20); forward's use of each (q = ...linears[1](x), the one returned) "
          "says its role, and the names check alone charges them, saying which is which"),
    V("attn_fused_qkv",
      ch(ATTN, "self.W_q = nn.Linear(d_model, d_model)\n        self.W_k = nn.Linear(d_model, d_model)\n"
               "        self.W_v = nn.Linear(d_model, d_model)\n        self.W_o = nn.Linear(d_model, d_model)",
         "self.c_attn = nn.Linear(d_model, 3 * d_model)\n        self.c_proj = nn.Linear(d_model, d_model)"),
      ch(ATTN, "q = self._heads(self.W_q(x), b, n)\n        k = self._heads(self.W_k(x), b, n)\n"
               "        v = self._heads(self.W_v(x), b, n)",
         "q, k, v = (self._heads(t, b, n) for t in self.c_attn(x).split(self.d_model, dim=2))"),
      ch(ATTN, "return self.W_o(context)", "return self.c_proj(context)"),
      breaks=ATTN, says=("keeps the query, key and value projections in one layer, self.c_attn (36, 12)",),
      never_says=("could not be copied",),
      why="learners round tb16: one fused query/key/value projection (nanoGPT's c_attn, split in q, k, v order) and "
          "c_proj kept 4.8 of 20: every check that copies PyTorch's weights in failed; the fused layer gets the three "
          "weights stacked, and the names check alone charges it, saying so"),
    V("ffn_layers_in_sequential", ch(FFN, FFN_WIDTH + "\n        self.dropout = nn.Dropout(dropout)",
                                     "self.net = nn.Sequential(nn.Linear(d_model, d_ff), nn.ReLU(), "
                                     "nn.Dropout(dropout),\n                                 nn.Linear(d_ff, d_model))"),
      ch(FFN, "return self.linear2(self.dropout(F.relu(self.linear1(x))))", "return self.net(x)"),
      breaks=FFN, says=("does not have the parameters the template names",), never_says=("could not be copied",),
      why="learners round rl13: the feed-forward network as one nn.Sequential (net.0, net.3) lost every check "
          "that copies PyTorch's weights in; they go in by order, and the names check alone charges"),
    V("block_parts_renamed", ch(BLOCK, "self.attn", "self.attention"), ch(BLOCK, "self.ff", "self.ffn"),
      ch(BLOCK, "self.norm1", "self.ln1"), ch(BLOCK, "self.norm2", "self.ln2"), breaks=BLOCK,
      says=("yours is self.attention", "yours is self.ffn", "yours is self.ln1"),
      never_says=("could not be copied", "does not use its"),
      why="learners round rl13: a right block with self.attention and self.ffn, as tutorials name them, got 58.75 "
          "of 100 (PyTorch's weights went to attn.* and ff.* only, and its evidence read no attention weights); "
          "the weights go in under the student's names and the structure check alone charges the names"),
    V("block_without_dropout", ch(BLOCK, "d_ff, dropout=0.1, norm_first", "d_ff, norm_first"),
      ch(BLOCK, "MultiHeadSelfAttention(d_model, n_heads, dropout)", "MultiHeadSelfAttention(d_model, n_heads, 0.0)"),
      ch(BLOCK, "FeedForward(d_model, d_ff, dropout)", "FeedForward(d_model, d_ff, 0.0)"),
      ch(BLOCK, "nn.Dropout(dropout)", "nn.Dropout(0.0)"), breaks="TransformerBlock",
      says=("takes no dropout argument",), never_says=("positional arguments but",),
      why="learners round rl11: a block written (d_model, n_heads, d_ff), without dropout, was refused every call "
          "('takes 4 positional arguments but 5 were given'); it loses the checks that need a dropout only"),
    V("block_without_norm_first", ch(BLOCK, "dropout=0.1, norm_first=False, use_ffn=True, use_norm=True,\n"
                                            "                 use_residual=True):", "dropout=0.1):"),
      ch(BLOCK, "self.norm_first = norm_first\n"
                "        self.use_ffn, self.use_norm, self.use_residual = use_ffn, use_norm, use_residual",
         "self.norm_first = False\n        self.use_ffn, self.use_norm, self.use_residual = True, True, True"),
      breaks="TransformerBlock, ablation", says=("takes (d_model, n_heads, d_ff, dropout=0.1)", "norm_first=True"),
      never_says=("unexpected keyword argument 'norm_first'",),
      why="learners round rl11: a post-norm block written (d_model, n_heads, d_ff, dropout), as in most tutorials, "
          "was refused every norm_first=False call and got 0 of 36; built without the keyword it loses the "
          "pre-norm checks and exercise 3's switches, which it lacks"),
    V("block_layer_norm_eps_fifth", ch(BLOCK, "dropout=0.1, norm_first=False, use_ffn=True, use_norm=True,\n"
                                              "                 use_residual=True):", "dropout=0.1, layer_norm_eps=1e-5):"),
      ch(BLOCK, "self.norm_first = norm_first\n"
                "        self.use_ffn, self.use_norm, self.use_residual = use_ffn, use_norm, use_residual",
         "self.norm_first = False\n        self.use_ffn, self.use_norm, self.use_residual = True, True, True"),
      ch(BLOCK, "self.norm1 = nn.LayerNorm(d_model)\n        self.norm2 = nn.LayerNorm(d_model)",
         "self.norm1 = nn.LayerNorm(d_model, eps=layer_norm_eps)\n"
         "        self.norm2 = nn.LayerNorm(d_model, eps=layer_norm_eps)"),
      breaks="TransformerBlock, ablation", says=("takes (d_model, n_heads, d_ff, dropout=0.1", "norm_first=True"),
      never_says=("Rename `layer_norm_eps`", "layer_norm_eps=False", "layer_norm_eps=True"),
      why="learners round rl12: a post-norm block (d_model, n_heads, d_ff, dropout=0.1, layer_norm_eps=1e-5) had its "
          "LayerNorms' eps taken for a renamed norm_first (the name holds 'norm'): built with layer_norm_eps=False "
          "and True (eps 0 and 1), and told to rename it to norm_first"),
    V("ffn_without_dropout", ch(FFN, "def __init__(self, d_model, d_ff, dropout=0.1):", "def __init__(self, d_model, d_ff):"),
      ch(FFN, "        self.dropout = nn.Dropout(dropout)\n", ""),
      ch(FFN, "self.linear2(self.dropout(F.relu(self.linear1(x))))", "self.linear2(F.relu(self.linear1(x)))"),
      ch(BLOCK, "FeedForward(d_model, d_ff, dropout)", "FeedForward(d_model, d_ff)"), breaks=FFN,
      says=("`FeedForward.__init__` takes no dropout argument",), never_says=("positional arguments but",),
      why="learners round rl12: FeedForward(d_model, d_ff), without dropout, was refused every call ('takes 3 "
          "positional arguments but 4 were given') and lost all 12 points; it loses the checks that need a dropout"),
    V("attn_without_dropout", ch(ATTN, "def __init__(self, d_model, n_heads, dropout=0.1):",
                                 "def __init__(self, d_model, n_heads):"),
      ch(ATTN, "        self.dropout = nn.Dropout(dropout)  # on the attention weights\n", ""),
      ch(ATTN, ATTN_DROP, "weights = torch.softmax(scores, dim=-1)"),
      ch(BLOCK, "MultiHeadSelfAttention(d_model, n_heads, dropout)", "MultiHeadSelfAttention(d_model, n_heads)"),
      breaks=ATTN, says=("`MultiHeadSelfAttention.__init__` takes no dropout argument",),
      never_says=("positional arguments but",),
      why="learners round rl12: MultiHeadSelfAttention(d_model, n_heads), without dropout, was refused every call "
          "and lost every check; it loses the checks that need a dropout"),
    V("encoder_without_causal", ch(ATTN, "def forward(self, x, causal=False):", "def forward(self, x):"),
      ch(ATTN, "        if causal:  # token i may only look at tokens 0..i\n"
               "            future = torch.triu(torch.ones(n, n, dtype=torch.bool, device=x.device), diagonal=1)\n"
               "            scores = scores.masked_fill(future, float(\"-inf\"))\n", ""),
      ch(BLOCK, "def forward(self, x, causal=False):", "def forward(self, x):"), ch(BLOCK, ", causal)", ")"),
      breaks="MultiHeadSelfAttention, TransformerBlock", says=("takes no `causal` argument",),
      never_says=("unexpected keyword argument 'causal'", "mixes no tokens on its own"),
      why="learners round rl13: an encoder written forward(self, x), attention and block, as most tutorials write "
          "it, was refused every call, causal=False included, and a right attention got 4 of 20, its block 12 of "
          "36; called without the keyword, they lose the checks that need causal=True only"),
    # ---------------------------------------------------------------- nn.Transformer
    V("nn_batch_first_missing", ch("build_transformer", "dim_feedforward=32,\n                          "
                                                        "batch_first=True)", "dim_feedforward=32)"),
      breaks="nn_transformer",
      en="nn.Transformer is built without batch_first=True, so it reads (batch, sequence, feature) inputs as "
         "(sequence, batch, feature); pass batch_first=True",
      ko="nn.Transformer를 batch_first=True 없이 만들어서 (batch, sequence, feature) 입력을 "
         "(sequence, batch, feature)로 읽음; batch_first=True를 넘기세요"),
    V("nn_wrong_heads", ch("build_transformer", "nhead=4", "nhead=2"), breaks="nn_transformer",
      en="nn.Transformer is built with nhead=2; the notes build it with nhead=4",
      ko="nn.Transformer를 nhead=2로 만듦; 노트는 nhead=4로 만듭니다"),
    # ---------------------------------------------------------------- exercise 3: parts switched off
    V("ablation_residual_kept", ch(BLOCK, SWITCHED, "keep = z"), breaks="ablation",
      en="use_residual=False still adds the input back; without the residual connections each sub-layer's input "
         "is not added to its output",
      ko="use_residual=False인데도 입력을 다시 더함; 잔차 연결이 없으면 서브레이어의 입력을 출력에 더하지 않습니다"),
    V("ablation_norm_still_applied", ch(BLOCK, "            if not self.use_norm:\n"
                                               "                return keep + dropout(layer(z))\n", ""),
      breaks="ablation",
      en="use_norm=False still applies the LayerNorms; without them each sub-layer is x + sublayer(x)",
      ko="use_norm=False인데도 LayerNorm을 적용함; LayerNorm이 없으면 각 서브레이어는 x + sublayer(x)입니다"),
    V("ablation_ffn_ignored", ch(BLOCK, "        if self.use_ffn:  # without it", "        if True:  # without it"),
      breaks="ablation",
      en="use_ffn=False still runs the feed-forward sub-layer; without it the block ends after the attention "
         "sub-layer",
      ko="use_ffn=False인데도 피드포워드 서브레이어를 실행함; 그것이 없으면 블록은 어텐션 서브레이어 뒤에서 끝납니다"),
    # ---------------------------------------------------------------- exercise 1: nn.Transformer's shapes
    V("shapes_layers_ignored", ch("make_transformer", "num_encoder_layers=num_layers,\n"
                                                      "                          num_decoder_layers=num_layers,",
                                  "num_encoder_layers=2,\n                          num_decoder_layers=2,"),
      breaks="transformer_shapes", says=("num_encoder_layers=1",), why="make_transformer always builds 2 + 2 layers"),
    V("shapes_source_length", ch("transformer_shape", "return tuple(out.shape)", "return (batch, src_len, d_model)"),
      breaks="transformer_shapes",
      en="transformer_shape answers (batch, src_len, d_model); the output has one vector per target position: "
         "(batch, tgt_len, d_model)",
      ko="transformer_shape가 (batch, src_len, d_model)을 답함; 출력은 타깃 위치마다 벡터 하나이므로 "
         "(batch, tgt_len, d_model)입니다"),
    # ---------------------------------------------------------------- different but correct
    V("ok_attn_causal_named_is_causal", ch(ATTN, "def forward(self, x, causal=False):",
                                           "def forward(self, x, is_causal=False):"),
      ch(ATTN, "        if causal:", "        if is_causal:"),
      why="learners round rl13: the flag under scaled_dot_product_attention's name; passed as causal=..., it was "
          "refused with every call (the block passes it by position)"),
    V("ok_matmul_and_temporaries", ch(ATTN, "q @ k.transpose(-2, -1) / math.sqrt(self.d_head)",
                                      "torch.matmul(q, k.transpose(-2, -1)) * self.d_head ** -0.5"),
      ch(BLOCK, PRE_ATTN, "h = self.norm1(x)\n            x = x + self.dropout1(self.attn(h, causal))")),
    V("ok_head_loop_dropout", ch(ATTN, ATTN_DROP + "\n        context = (weights @ v)",
                                 "weights = torch.stack([self.dropout(torch.softmax(scores[:, j], dim=-1))\n"
                                 "                               for j in range(scores.shape[1])], dim=1)\n"
                                 "        context = (weights @ v)"),
      why="variants round: a softmax and dropout per head, in a loop, draw the heads' masks one after another; "
          "the train-mode checks compared with one draw over all heads and could never pass"),
    V("ok_sdpa_dropout", ch(ATTN, ATTN_DROP + "\n        context = (weights @ v)",
                            "p = self.dropout.p if self.training else 0.0\n"
                            "        context = F.scaled_dot_product_attention(q, k, v, dropout_p=p, is_causal=causal)")),
    V("ok_functional_dropout_training",
      ch(BLOCK, POST_ATTN, "x = self.norm1(x + F.dropout(self.attn(x, causal), self.dropout1.p, self.training))"),
      ch(BLOCK, PRE_FF, "x = x + F.dropout(self.ff(self.norm2(x)), p=self.dropout2.p, training=self.training)"),
      ch(ATTN, ATTN_DROP, "weights = F.dropout(torch.softmax(scores, dim=-1), self.dropout.p, self.training)")),
    V("block_own_layernorm_class",
      ch("", "class TransformerBlock(nn.Module):",
         "class LayerNorm(nn.Module):\n"
         "    def __init__(self, d, eps=1e-5):\n"
         "        super().__init__()\n"
         "        self.eps = eps\n"
         "        self.weight = nn.Parameter(torch.ones(d))\n"
         "        self.bias = nn.Parameter(torch.zeros(d))\n\n"
         "    def forward(self, x):\n"
         "        mean = x.mean(dim=-1, keepdim=True)\n"
         "        var = x.var(dim=-1, keepdim=True, unbiased=False)\n"
         "        return self.weight * (x - mean) / torch.sqrt(var + self.eps) + self.bias\n\n\n"
         "class TransformerBlock(nn.Module):"),
      ch(BLOCK, "nn.LayerNorm(d_model)", "LayerNorm(d_model)"), breaks=BLOCK,
      says=("your own LayerNorm class",), never_says=("called LayerNorm 0 times",),
      why="learners round s9: a hand-written LayerNorm (as in the textbook) computes what nn.LayerNorm does, but the "
          "placement check sees only nn.LayerNorm calls and said the block called LayerNorm 0 times"),
    V("ok_layernorm_subclass_own_forward",
      ch("", "class TransformerBlock(nn.Module):",
         "class TokenNorm(nn.LayerNorm):\n"
         "    def forward(self, x):\n"
         "        mean = x.mean(dim=-1, keepdim=True)\n"
         "        var = torch.var(x, dim=-1, keepdim=True, unbiased=False)\n"
         "        return (x - mean) * torch.rsqrt(var + self.eps) * self.weight + self.bias\n\n\n"
         "class TransformerBlock(nn.Module):"),
      ch(BLOCK, "nn.LayerNorm(d_model)", "TokenNorm(d_model)"),
      why="variants round 4: a subclass of nn.LayerNorm (its weight, bias and eps) that writes the norm out is an "
          "nn.LayerNorm; the structure check wanted the class name LayerNorm and the placement check saw no "
          "F.layer_norm call ('called nn.LayerNorm 0 times'): 94/100"),
    V("ok_attn_weights_laid_b_n_h_n",
      ch(ATTN, "scores = q @ k.transpose(-2, -1) / math.sqrt(self.d_head)  # (b, heads, n, n)",
         "scores = torch.einsum(\"bhid,bhjd->bihj\", q, k) / math.sqrt(self.d_head)  # (b, n, heads, n)"),
      ch(ATTN, 'scores = scores.masked_fill(future, float("-inf"))',
         'scores = scores.masked_fill(future[:, None, :], float("-inf"))'),
      ch(ATTN, MERGE, "torch.einsum(\"bihj,bhjd->bihd\", weights, v).reshape(b, n, self.d_model)"),
      why="variants round 4: einsum keeps the weights as (b, n, heads, n), so the dropout draws land over that "
          "layout; the attention's train-mode check lost 1.6 points and, once it passed, the block's 2.25"),
    V("ok_no_feed_forward_parts_when_off",
      ch(BLOCK, "self.ff = FeedForward(d_model, d_ff, dropout)", "self.ff = FeedForward(d_model, d_ff, dropout) if use_ffn else None"),
      ch(BLOCK, "self.norm2 = nn.LayerNorm(d_model)", "self.norm2 = nn.LayerNorm(d_model) if use_ffn else None"),
      why="variants round 3: with use_ffn=False the feed-forward sub-layer's LayerNorm is not built either; the "
          "ablation check sent PyTorch's norm2 and lost 3 points, 'no parameter named norm2.bias, norm2.weight'"),
    V("ok_dropout_keyword_only", ch(BLOCK, "d_ff, dropout=0.1, norm_first", "d_ff, *, dropout=0.1, norm_first"),
      why="red team s18: a block whose dropout (and what follows) is keyword-only was built without dropout, told "
          "'takes no dropout argument', and lost both dropout checks (4.5 points); it is given dropout by name"),
    V("ok_mask_buffer_and_sequential",
      ch(ATTN, "self.dropout = nn.Dropout(dropout)  # on the attention weights",
         "self.dropout = nn.Dropout(dropout)  # on the attention weights\n"
         "        self.register_buffer(\"future\", torch.triu(torch.ones(64, 64, dtype=torch.bool), diagonal=1))"),
      ch(ATTN, "scores = scores.masked_fill(future, float(\"-inf\"))",
         "scores = scores.masked_fill(self.future[:n, :n], float(\"-inf\"))"),
      ch(FFN, "self.dropout = nn.Dropout(dropout)",
         "self.dropout = nn.Dropout(dropout)\n        self.net = nn.Sequential(self.linear1, nn.ReLU(), self.dropout, "
         "self.linear2)"),
      ch(FFN, "return self.linear2(self.dropout(F.relu(self.linear1(x))))", "return self.net(x)")),
]
TABLE = Table(REFERENCE_SOURCE, VARIANTS)
BY_NAME = TABLE.by_name
LIBRARY = TABLE.library
