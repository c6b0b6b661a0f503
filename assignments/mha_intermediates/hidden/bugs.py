"""The mha_intermediates assignment's known learner bugs, each the reference plus stated find/replace changes: one
table that is both the grader's diagnosis library (diagnose.py) and the grader's own test corpus
(tests/test_mha_intermediates.py)."""
from __future__ import annotations

import functools
from pathlib import Path

from autograder.bugtable import Table, Variant, ch, row
from autograder.messages import Message
from reference import mha_intermediates as R

REFERENCE_SOURCE = Path(R.__file__).read_text(encoding="utf-8")
V = functools.partial(row, REFERENCE_SOURCE)

SDPA, MHA = "ScaledDotProductAttention", "MultiHeadedAttention"
INIT = "def __init__(self, d_feat=128, n_head=5, actv=F.relu, USE_BIAS=True, dropout_p=0.1, device=None):"
SPLIT = "feat.view(n_batch, n_tok, n_head, d_feat // n_head).permute(0, 2, 1, 3)"
FILL = "    if mask is not None:\n        scores = scores.masked_fill(mask == 0, MASK_FILL)\n"
MASK_INVERTED = Message(
    "the multi-head scores are filled with -1e9 where the mask is 1 (the keys that may be seen: mask == 1, or "
    "mask.bool()); the mask is inverted: fill where mask == 0, scores.masked_fill(mask == 0, -1e9)",
    "멀티 헤드 점수를 마스크가 1인 위치(볼 수 있는 키: mask == 1 또는 mask.bool())에서 -1e9로 채움; 마스크가 "
    "뒤집혔습니다: mask == 0인 위치를 채우세요, scores.masked_fill(mask == 0, -1e9)")

VARIANTS: list[Variant] = [
    # ---------------------------------------------------------------- ScaledDotProductAttention
    V("sdpa_transpose_1_2", ch(SDPA, "K.transpose(-2, -1)", "K.transpose(1, 2)"), breaks="sdpa",
      says=("raised RuntimeError", "K.transpose(1, 2)"),
      why="transposes axes 1 and 2 of K: right for 3-D inputs only, so 4-D ones raise (the message quotes the line)"),
    V("sdpa_mask_inverted", ch(SDPA, "masked_fill(mask == 0, MASK_FILL)", "masked_fill(mask == 1, MASK_FILL)"),
      breaks="sdpa",
      en="the scores are filled with -1e9 where mask == 1 (the keys that may be seen); fill where mask == 0",
      ko="mask == 1인 위치(볼 수 있는 키)의 점수를 -1e9로 채움; mask == 0인 위치를 채우세요"),
    V("sdpa_fill_1e_minus_9", ch(SDPA, "masked_fill(mask == 0, MASK_FILL)", "masked_fill(mask == 0, 1e-9)"),
      breaks="sdpa",
      en="the masked scores are filled with 1e-9, a tiny positive number (about 0), so the masked keys still get "
         "weight; the fill is -1e9, minus one billion: scores.masked_fill(mask == 0, -1e9)",
      ko="가려진 점수를 아주 작은 양수인 1e-9(거의 0)로 채워서 가려진 키도 가중치를 받음; 채울 값은 음수 10억인 "
         "-1e9입니다: scores.masked_fill(mask == 0, -1e9)"),
    V("scores_fill_1e_minus_9", ch("head_scores", "MASK_FILL", "1e-9"), breaks="scores",
      en="the masked multi-head scores are filled with 1e-9, a tiny positive number (about 0), so the masked keys "
         "still get weight; the fill is -1e9, minus one billion: scores.masked_fill(mask == 0, -1e9)",
      ko="가려진 멀티 헤드 점수를 아주 작은 양수인 1e-9(거의 0)로 채워서 가려진 키도 가중치를 받음; 채울 값은 "
         "음수 10억인 -1e9입니다: scores.masked_fill(mask == 0, -1e9)"),
    V("sdpa_no_sqrt", ch(SDPA, "/ math.sqrt(d_K)", "/ d_K"), breaks="sdpa",
      en="the scores are divided by d_K instead of its square root; divide by math.sqrt(d_K)",
      ko="점수를 d_K의 제곱근이 아니라 d_K로 나눔; math.sqrt(d_K)로 나누세요"),
    V("sdpa_softmax_queries", ch(SDPA, "torch.softmax(scores, dim=-1)", "torch.softmax(scores, dim=-2)"),
      breaks="sdpa",
      en="the softmax runs over dim=-2 (the queries); each query's weights over the keys sum to 1 with dim=-1",
      ko="softmax를 dim=-2(쿼리 축)에 대해 계산함; 각 쿼리의 키에 대한 가중치 합이 1이 되도록 dim=-1을 쓰세요"),
    # ---------------------------------------------------------------- constructor
    V("init_assert", ch(MHA, "        if d_feat % n_head != 0:\n            raise ValueError(",
                        "        assert d_feat % n_head == 0, ("), breaks="mha_init", says=("ValueError",),
      why="an assert instead of ValueError (and python -O removes asserts)"),
    V("init_assert_tuple", ch(MHA, "        if d_feat % n_head != 0:\n            raise ValueError(",
                              "        assert (d_feat % n_head == 0, "), breaks="mha_init",
      says=("always true",),
      why="learners round s9: a parenthesised assert of (condition, message) never fails; the feedback only said to "
          "raise ValueError"),
    V("init_argument_order", ch(MHA, INIT, INIT.replace("actv=F.relu, USE_BIAS=True, dropout_p=0.1",
                                                          "dropout_p=0.1, USE_BIAS=True, actv=F.relu")),
      breaks="mha_init", says=("order differs", "actv=relu"), never_says=("<function", " at 0x")),
    V("init_use_bias_lowercase", ch(MHA, "USE_BIAS", "use_bias"), breaks="mha_init",
      says=("not in the notes: use_bias",),
      why="learners round 5: every check passed USE_BIAS= by name, and the whole class got 20/100"),
    V("init_feature_argument_renamed", ch(MHA, "d_feat", "d_model"),
      breaks="mha_init", says=("missing d_feat; not in the notes: d_model",),
      why="learners round rl11: (d_model, n_head, ...) failed every check with 'unexpected keyword argument d_feat' "
          "(20/100 for a right class); d_model, in d_feat's place, is passed under its own name and the signature "
          "check charges the name, once"),
    V("init_two_arguments", ch(MHA, INIT, "def __init__(self, d_feat=128, n_head=5):\n"
                                          "        actv, USE_BIAS, dropout_p, device = F.relu, True, 0.1, None"),
      breaks="mha_init, projections, split, scores, attention, merge, output",
      says=("takes (d_feat=128, n_head=5); the notes' signature is", "missing actv, USE_BIAS, dropout_p"),
      why="learners round rl11: a constructor that cannot take the notes' keywords fails every check; its signature "
          "check said only 'raised TypeError: unexpected keyword argument', not which arguments the notes add"),
    V("init_no_device", ch(MHA, "dropout_p=0.1, device=None):", "dropout_p=0.1):"),
      ch(MHA, "        self.device = device\n", ""), breaks="mha_init", says=("accept `device`",),
      never_says=("missing device",), why="charged once, by the device check (the signature check charged it too)"),
    V("init_no_actv_no_device", ch(MHA, INIT, "def __init__(self, d_feat=128, n_head=5, USE_BIAS=True, "
                                              "dropout_p=0.1, actv=None):"),
      ch(MHA, "        self.device = device\n", ""), breaks="mha_init", says=("accept `device`",),
      why="drops device and moves actv (with another default) to the end"),
    V("init_dropout_p_fixed", ch(MHA, "self.dropout = nn.Dropout(p=dropout_p)", "self.dropout = nn.Dropout(p=0.1)"),
      breaks="mha_init", says=("nn.Dropout(p=0.3)",),
      why="learners' round: the attention question was charged too (its own dropout was rebuilt with dropout_p)"),
    V("split_k_pretransposed", ch(MHA, "K_split = split_heads(K_feat, self.n_head)",
                                  "K_split = split_heads(K_feat, self.n_head).transpose(-2, -1)"),
      ch(MHA, "head_scores(Q_split, K_split,", "head_scores(Q_split, K_split.transpose(-2, -1),"),
      breaks="split", says=("K_split",),
      why="learners' round: scores, right, lost 4 points (Q_split @ K_split^T could not be formed)"),
    V("init_other_defaults", ch(MHA, INIT, INIT.replace("d_feat=128, n_head=5, actv=F.relu, USE_BIAS=True",
                                                          "d_feat=64, n_head=4, actv=F.relu, USE_BIAS=False")),
      breaks="mha_init", says=("d_feat=64 (notes: 128)",)),
    V("init_bias_false", ch(MHA, "bias=USE_BIAS)", "bias=False)"), breaks="mha_init",
      says=("USE_BIAS is ignored", "bias=USE_BIAS"), never_says=("Keep the layers named",),
      why="no layer gets a bias whatever USE_BIAS says: charged once, in mha_init; the weights are still copied in, "
          "so every value check judges the forward itself"),
    # ---------------------------------------------------------------- projections
    V("proj_activation", ch(MHA, "Q_feat = self.lin_Q(Q)", "Q_feat = self.actv(self.lin_Q(Q))"),
      ch(MHA, "K_feat = self.lin_K(K)", "K_feat = self.actv(self.lin_K(K))"),
      ch(MHA, "V_feat = self.lin_V(V)", "V_feat = self.actv(self.lin_V(V))"), breaks="projections",
      en="`actv` (ReLU) is applied after each projection; the projections stay linear, Q_feat = self.lin_Q(Q) "
         "(actv is only stored)",
      ko="각 투영 뒤에 `actv`(ReLU)를 적용함; 투영은 선형이어야 합니다, Q_feat = self.lin_Q(Q) (actv는 저장만 함)"),
    V("proj_self_only", ch(MHA, "K_feat = self.lin_K(K)", "K_feat = self.lin_K(Q)"),
      ch(MHA, "V_feat = self.lin_V(V)", "V_feat = self.lin_V(Q)"), breaks="projections",
      en="the keys and values are projected from Q (self.lin_K(Q), self.lin_V(Q)), which only works for "
         "self-attention; project each input: self.lin_K(K), self.lin_V(V)",
      ko="키와 값을 Q에서 투영함(self.lin_K(Q), self.lin_V(Q)): 셀프 어텐션에서만 맞습니다; 각자의 입력을 "
         "투영하세요: self.lin_K(K), self.lin_V(V)"),
    V("proj_key_uses_lin_Q", ch(MHA, "K_feat = self.lin_K(K)", "K_feat = self.lin_Q(K)"), breaks="projections",
      en="the keys are projected with lin_Q (K_feat = self.lin_Q(K)); use K_feat = self.lin_K(K)",
      ko="키를 lin_Q로 투영함(K_feat = self.lin_Q(K)); K_feat = self.lin_K(K)를 쓰세요"),
    # ---------------------------------------------------------------- split
    V("split_heads_first", ch("split_heads", SPLIT, "feat.view(n_batch, n_head, n_tok, d_feat // n_head)"),
      breaks="split",
      en="the heads are split by viewing straight to (n_batch, n_head, n, d_head); view as (n_batch, n, n_head, "
         "d_head), then .permute(0, 2, 1, 3)",
      ko="(n_batch, n_head, n, d_head)로 바로 view해서 헤드를 나눔; (n_batch, n, n_head, d_head)로 view한 뒤 "
         ".permute(0, 2, 1, 3)하세요"),
    V("split_interleaved", ch("split_heads", SPLIT,
                              "feat.view(n_batch, n_tok, d_feat // n_head, n_head).permute(0, 3, 1, 2)"),
      breaks="split",
      en="the features are cut as (n_batch, n, d_head, n_head), so each head takes every n_head-th feature; view as "
         "(n_batch, n, n_head, d_head), then .permute(0, 2, 1, 3)",
      ko="특징을 (n_batch, n, d_head, n_head)로 잘라서 각 헤드가 n_head개마다 하나씩 특징을 가져감; "
         "(n_batch, n, n_head, d_head)로 view한 뒤 .permute(0, 2, 1, 3)하세요"),
    # ---------------------------------------------------------------- scores
    V("scores_head_scale", ch("", 'SCALE = "full"', 'SCALE = "head"'), breaks="scores",
      says=("sqrt(d_feat)", "sqrt(d_head)"),
      why="divides by sqrt(d_head), the paper's convention, while the option says full (right under scale = head)"),
    V("scores_by_token_count", ch("head_scores", "/ divisor", "/ math.sqrt(K_split.shape[-2])"), breaks="scores",
      says=("the root of the number of keys n_K",), never_says=("your scores are divided by sqrt(d_head)",),
      why="learners round s9: divides by the root of the token count; in the padding case n_K = d_head = 6, and the "
          "feedback said the scores were divided by sqrt(d_head)"),
    V("scores_scale_0_slash_5", ch("head_scores", "/ divisor", "/ divisor ** 0/5"), breaks="scores",
      says=("divided by 5",), never_says=("Apply the mask",),
      why="learners round s9: `d ** 0/5` (a typo for 0.5) divides by 5; the masked case told to apply the mask"),
    V("scores_no_scaling", ch("head_scores", " / divisor", ""), breaks="scores",
      en="the multi-head scores are not scaled; divide Q_split @ K_split^T by the assignment's scale (the notebook "
         "says which)",
      ko="멀티 헤드 점수를 나누지 않음; Q_split @ K_split^T를 이 과제의 스케일로 나누세요 (노트북 참고)"),
    V("scores_neg_inf", ch("head_scores", "MASK_FILL", "-torch.inf"), breaks="scores",
      en="the masked multi-head scores are filled with -inf instead of -1e9; use scores.masked_fill(mask == 0, -1e9) "
         "so that a fully masked row stays finite",
      ko="가려진 멀티 헤드 점수를 -1e9가 아니라 -inf로 채움; 전부 가려진 행도 유한하도록 "
         "scores.masked_fill(mask == 0, -1e9)를 쓰세요"),
    V("scores_fill_finfo_min", ch("head_scores", "MASK_FILL", "torch.finfo(scores.dtype).min"), breaks="scores",
      en="the masked multi-head scores are filled with torch.finfo(dtype).min (about -3.4e38) instead of -1e9: the "
         "scores you return are graded by value; use scores.masked_fill(mask == 0, -1e9)",
      ko="가려진 멀티 헤드 점수를 -1e9가 아니라 torch.finfo(dtype).min(약 -3.4e38)으로 채움: 반환하는 scores는 값으로 "
         "채점됩니다. scores.masked_fill(mask == 0, -1e9)를 쓰세요",
      never_says=("Apply the mask",),
      why="variants round 5: the mask was applied, with the dtype's lowest value, and the feedback said to apply it"),
    V("scores_returned_before_mask",
      ch(MHA, "scores = head_scores(Q_split, K_split, score_divisor(self.d_feat, self.n_head, self.scale), mask)",
         "scores = head_scores(Q_split, K_split, score_divisor(self.d_feat, self.n_head, self.scale))"),
      ch(MHA, "attention = torch.softmax(scores, dim=-1)",
         "attention = torch.softmax(scores if mask is None else scores.masked_fill(mask == 0, -1e9), dim=-1)"),
      breaks="scores", says=("the scores you return are the ones before the mask",), never_says=("never applied",),
      why="learners round C: the mask goes into the softmax but the unmasked scores are returned; it was told that "
          "the mask is never applied"),
    V("scores_mask_ignored", ch("head_scores", FILL, ""), breaks="scores",
      en="the mask is never applied to the multi-head scores; fill them with -1e9 where mask == 0, before the softmax",
      ko="멀티 헤드 점수에 마스크를 적용하지 않음; softmax 전에 mask == 0인 위치를 -1e9로 채우세요"),
    V("scores_mask_inverted", ch("head_scores", "masked_fill(mask == 0, MASK_FILL)",
                                 "masked_fill(mask == 1, MASK_FILL)"), breaks="scores",
      en=MASK_INVERTED.en, ko=MASK_INVERTED.ko),
    V("scores_mask_bool_inverted", ch("head_scores", "masked_fill(mask == 0, MASK_FILL)",
                                      "masked_fill(mask.bool(), MASK_FILL)"), breaks="scores",
      en=MASK_INVERTED.en, ko=MASK_INVERTED.ko),
    # ---------------------------------------------------------------- attention and x_raw
    V("attention_softmax_queries", ch(MHA, "attention = torch.softmax(scores, dim=-1)",
                                      "attention = torch.softmax(scores, dim=-2)"), breaks="attention",
      en="the softmax runs over dim=-2 (the queries); normalise each query's row over the keys with dim=-1",
      ko="softmax를 dim=-2(쿼리 축)에 대해 계산함; 각 쿼리의 행을 키 축(dim=-1)으로 정규화하세요"),
    V("attention_no_dropout", ch("weigh_values", "torch.matmul(dropout(attention), V_split)",
                                 "torch.matmul(attention, V_split)"), breaks="attention",
      en="self.dropout is never applied to the attention weights; x_raw = self.dropout(attention) @ V_split",
      ko="어텐션 가중치에 self.dropout을 적용하지 않음; x_raw = self.dropout(attention) @ V_split입니다"),
    V("attention_after_dropout", ch(MHA, "attention = torch.softmax(scores, dim=-1)",
                                    "attention = self.dropout(torch.softmax(scores, dim=-1))"),
      ch(MHA, "x_raw = weigh_values(attention, V_split, self.dropout)", "x_raw = torch.matmul(attention, V_split)"),
      breaks="attention", says=("the weights AFTER dropout",),
      why="returns the attention after dropout (x_raw is still right): only a train-mode call with p > 0 shows it"),
    V("attention_dropout_in_eval", ch("weigh_values", "torch.matmul(dropout(attention), V_split)",
                                      "torch.matmul(F.dropout(attention, dropout.p), V_split)"), breaks="attention",
      en="the attention weights go through F.dropout(attention, p) without training=, so dropout also runs in eval "
         "mode; use self.dropout(attention) (the nn.Dropout module follows .train() and .eval())",
      ko="어텐션 가중치에 training= 없이 F.dropout(attention, p)를 적용해서 eval 모드에서도 dropout이 실행됨; "
         "self.dropout(attention)을 쓰세요 (nn.Dropout 모듈은 .train()과 .eval()을 따릅니다)"),
    # ---------------------------------------------------------------- a forward that raises part way
    # Each step it computed before the line that raised is judged on the local tensor of that name; the step that
    # line computes fails with the exception and the line, every later one as not computed.
    V("attention_remask_raises", ch(MHA, "attention = torch.softmax(scores, dim=-1)  # (n_batch, n_head, n_Q, n_K)\n",
                                    "attention = torch.softmax(scores, dim=-1)\n"
                                    "        attention = attention.masked_fill(mask == 0, 0.0)\n"),
      breaks="attention, merge, output", says=("raised TypeError", "charged to out['attention']"),
      why="masks the weights again after the softmax (right with a mask) and raises without one: the softmax "
          "computed on the line before must not earn the attention's points"),
    V("split_view_raises", ch("split_heads", SPLIT, "feat.view(n_batch, n_tok, n_head, d_feat).permute(0, 2, 1, 3)"),
      breaks="split, scores, attention, merge, output", says=("raised RuntimeError", "charged to out['Q_split']"),
      why="views d_feat features per head, so the split raises: only the projections, computed before, earn"),
    # ---------------------------------------------------------------- merge
    V("merge_skips_permute", ch(MHA, "x_rsh2 = merge_heads(x_rsh1, self.d_feat)",
                                "x_rsh2 = merge_heads(x_raw, self.d_feat)"), breaks="merge",
      en="the heads are merged from x_raw without first moving the head axis behind the query axis; merge "
         "x_rsh1 = x_raw.permute(0, 2, 1, 3).contiguous()",
      ko="헤드 축을 쿼리 축 뒤로 옮기지 않고 x_raw에서 바로 헤드를 합침; "
         "x_rsh1 = x_raw.permute(0, 2, 1, 3).contiguous()를 합치세요"),
    V("merge_view_not_contiguous", ch("heads_to_back", "x_raw.permute(0, 2, 1, 3).contiguous()",
                                      "x_raw.permute(0, 2, 1, 3)"),
      ch("merge_heads", "x_rsh1.reshape(", "x_rsh1.view("), breaks="merge, output",
      says=("view size is not compatible", "charged to out['x_rsh2']"),
      why="no .contiguous() before .view, so the merge raises: every step before it keeps its points, x cannot "
          "be computed"),
    V("merge_length_of_K", ch(MHA, "x_rsh2 = merge_heads(x_rsh1, self.d_feat)",
                              "x_rsh2 = x_rsh1.view(x_rsh1.shape[0], K.shape[1], self.d_feat)"),
      breaks="merge, output", says=("is invalid for input of size", "charged to out['x_rsh2']"),
      why="merges to n_K positions instead of n_Q: right for self-attention, raises with n_Q != n_K"),
    # ---------------------------------------------------------------- output
    V("output_no_projection", ch(MHA, "x = self.lin_O(x_rsh2)", "x = x_rsh2"), breaks="output",
      en="lin_O is never applied; x = self.lin_O(x_rsh2)",
      ko="lin_O를 적용하지 않음; x = self.lin_O(x_rsh2)입니다"),
    V("output_uses_lin_V", ch(MHA, "x = self.lin_O(x_rsh2)", "x = self.lin_V(x_rsh2)"), breaks="output",
      en="the output is projected with lin_V (x = self.lin_V(x_rsh2)); use x = self.lin_O(x_rsh2)",
      ko="출력을 lin_V로 투영함(x = self.lin_V(x_rsh2)); x = self.lin_O(x_rsh2)를 쓰세요"),
    V("output_residual", ch(MHA, "x = self.lin_O(x_rsh2)", "x = self.lin_O(x_rsh2) + Q"), breaks="output",
      en="the query input Q is added to the output as a residual; x = self.lin_O(x_rsh2), nothing added",
      ko="출력에 쿼리 입력 Q를 잔차로 더함; x = self.lin_O(x_rsh2)이고 더하는 것은 없습니다"),
    V("output_dropout", ch(MHA, "x = self.lin_O(x_rsh2)", "x = self.dropout(self.lin_O(x_rsh2))"), breaks="output",
      en="self.dropout is also applied to the output (x = self.dropout(self.lin_O(x_rsh2))); the notes apply dropout "
         "to the attention weights only: x = self.lin_O(x_rsh2)",
      ko="출력에도 self.dropout을 적용함(x = self.dropout(self.lin_O(x_rsh2))); 노트는 어텐션 가중치에만 dropout을 "
         "적용합니다: x = self.lin_O(x_rsh2)"),
    # ---------------------------------------------------------------- different but correct
    V("ok_power_scale", ch(SDPA, "/ math.sqrt(d_K)", "* d_K ** -0.5"),
      ch(MHA, "x_rsh2 = merge_heads(x_rsh1, self.d_feat)", "x_rsh2 = x_rsh1.view(x_rsh1.shape[0], -1, self.d_feat)")),
    # forward returns an OrderedDict (a dict subclass travels from the worker as the plain dict it holds)
    V("ok_ordereddict", ch("", "import math\n", "import collections\nimport math\n"),
      ch(MHA, '        return {"Q_feat": Q_feat,', '        out = {"Q_feat": Q_feat,'),
      ch(MHA, '"x_raw": x_raw, "x_rsh1": x_rsh1, "x_rsh2": x_rsh2, "x": x}\n',
         '"x_raw": x_raw, "x_rsh1": x_rsh1, "x_rsh2": x_rsh2, "x": x}\n'
         '        return collections.OrderedDict(out)\n')),
    # one more __init__ argument after the notes' ones, with a default: no call of the notes changes
    V("ok_extra_init_arg", ch(MHA, INIT, INIT.replace("device=None):", "device=None, verbose=False):"))),
    # F.dropout that follows the module's mode, as nn.Dropout does
    V("ok_functional_dropout", ch("weigh_values", "torch.matmul(dropout(attention), V_split)",
                                  "torch.matmul(F.dropout(attention, dropout.p, training=dropout.training), V_split)")),
    # forward only delegates: none of its own locals is named like an entry (they are the helper's)
    V("ok_forward_delegates", ch(MHA, "    def forward(self, Q, K, V, mask=None):\n",
                                 "    def forward(self, query, key, value, mask=None):\n"
                                 "        return self.steps(query, key, value, mask)\n\n"
                                 "    def steps(self, Q, K, V, mask=None):\n")),
    # dropout on each head's weights in a loop: the heads' masks are drawn one after another
    V("ok_head_loop_dropout", ch(MHA, "x_raw = weigh_values(attention, V_split, self.dropout)",
                                 "x_raw = torch.stack([self.dropout(attention[:, h]) @ V_split[:, h]\n"
                                 "                             for h in range(self.n_head)], dim=1)"),
      why="variants round 3: a correct per-head loop lost the train-mode x_raw point (the check drew one mask over "
          "all heads at once)"),
    # dropout on the weights as einsum lays them out, (n_batch, n_Q, n_head, n_K)
    V("ok_dropout_on_queries_first_layout", ch(MHA, "x_raw = weigh_values(attention, V_split, self.dropout)",
                                               "w_qhk = self.dropout(attention.transpose(1, 2).contiguous())\n"
                                               "        x_raw = torch.einsum(\"bqhk,bhkd->bhqd\", w_qhk, V_split)"),
      why="variants round 4: the weights kept as (n_batch, n_Q, n_head, n_K) take their dropout draws in that order; "
          "a correct forward lost the train-mode x_raw point"),
]
TABLE = Table(REFERENCE_SOURCE, VARIANTS)
BY_NAME = TABLE.by_name
LIBRARY = TABLE.library
