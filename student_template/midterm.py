# Midterm exam: attention and transformer blocks / 중간고사: 어텐션과 트랜스포머 블록
#
# EN: This paper is yours alone. The constants between the two EXAM VARIANT lines are your variant: every
#     class below must read them (do not copy numbers into your code, and do not change them). Grading
#     rebuilds the reference with YOUR constants, copies its weights into your modules and compares outputs:
#       - MultiHeadAttention: NUM_HEADS, QKV_BIAS, DROP_RATE, CONTEXT_LENGTH (bias, dropout, mask buffer, values)
#       - ScaledDotProductAttention: any shapes (your SDPA_SHAPE is the demo's); window_mask uses MASK_WINDOW
#       - TransformerBlock: NORM_FIRST and FF_MULT, against nn.TransformerEncoderLayer with the same weights
#     During the exam `grade check` only says whether each question loads, constructs and returns the right
#     shapes; values are graded after the exam.
# KO: 이 시험지는 본인만의 것입니다. 두 EXAM VARIANT 줄 사이의 상수가 본인의 변형이며, 아래의 모든 클래스는
#     이 상수를 읽어야 합니다 (숫자를 코드에 옮겨 적거나 상수를 바꾸지 마세요). 채점은 본인의 상수로 참조 구현을
#     다시 만들고, 그 가중치를 여러분의 모듈에 복사해 출력을 비교합니다:
#       - MultiHeadAttention: NUM_HEADS, QKV_BIAS, DROP_RATE, CONTEXT_LENGTH (bias, dropout, mask 버퍼, 값)
#       - ScaledDotProductAttention: 어떤 shape이든 (SDPA_SHAPE는 데모용); window_mask는 MASK_WINDOW 사용
#       - TransformerBlock: NORM_FIRST와 FF_MULT, 같은 가중치의 nn.TransformerEncoderLayer와 비교
#     시험 중 `grade check`는 각 문제가 불러와지는지, 생성되는지, shape이 맞는지만 알려 줍니다. 값은 시험 후에
#     채점합니다.
import math

import torch
import torch.nn as nn
import torch.nn.functional as F

# ---- EXAM VARIANT (yours; do not edit) / 시험 변형 (본인 것; 수정 금지) ----
NUM_HEADS = 2
QKV_BIAS = False
DROP_RATE = 0.1
CONTEXT_LENGTH = 8
MASK_WINDOW = 3
SDPA_SHAPE = (2, 2, 5, 4)
NORM_FIRST = False
FF_MULT = 4
# ---- END OF EXAM VARIANT / 시험 변형 끝 ----


class MultiHeadAttention(nn.Module):
    """Q1. Causal multi-head attention configured by the constants above.

    EN: attributes W_query, W_key, W_value (nn.Linear(d_in, d_out, bias=QKV_BIAS)), out_proj
        (nn.Linear(d_out, d_out)), dropout (nn.Dropout(DROP_RATE)) and the buffer `mask`
        = triu(ones(CONTEXT_LENGTH, CONTEXT_LENGTH), diagonal=1); NUM_HEADS heads of d_out // NUM_HEADS.
        forward(x): (b, num_tokens, d_in) -> (b, num_tokens, d_out).
        Write the attention yourself: one that runs nn.MultiheadAttention or F.multi_head_attention_forward
        earns only the construction points.
    KO: 속성 W_query, W_key, W_value (nn.Linear(d_in, d_out, bias=QKV_BIAS)), out_proj
        (nn.Linear(d_out, d_out)), dropout (nn.Dropout(DROP_RATE)), 버퍼 `mask`
        = triu(ones(CONTEXT_LENGTH, CONTEXT_LENGTH), diagonal=1); 헤드 NUM_HEADS개, 각 d_out // NUM_HEADS 차원.
        forward(x): (b, num_tokens, d_in) -> (b, num_tokens, d_out).
        어텐션은 직접 작성하세요: nn.MultiheadAttention이나 F.multi_head_attention_forward를 실행하는 클래스는
        생성 점수만 받습니다.
    """

    def __init__(self, d_in, d_out):
        super().__init__()
        raise NotImplementedError("Q1: MultiHeadAttention.__init__")

    def forward(self, x):
        raise NotImplementedError("Q1: MultiHeadAttention.forward")


class ScaledDotProductAttention(nn.Module):
    """Q2. forward(Q, K, V, mask=None) -> (out, attention) over any leading axes.

    EN: scores = Q @ K^T / sqrt(d_k); where mask == 0 the score becomes -1e9; attention = softmax over the
        last axis; out = attention @ V.
    KO: scores = Q @ K^T / sqrt(d_k); mask == 0인 위치의 점수는 -1e9; attention = 마지막 축의 softmax;
        out = attention @ V.
    """

    def forward(self, Q, K, V, mask=None):
        raise NotImplementedError("Q2: ScaledDotProductAttention.forward")


def window_mask(T):
    """Q2. (T, T) mask: 1 where token i may see token j (i - MASK_WINDOW < j <= i), else 0.
    (T, T) 마스크: 토큰 i가 토큰 j를 볼 수 있으면 1 (i - MASK_WINDOW < j <= i), 아니면 0."""
    raise NotImplementedError("Q2: window_mask")


class TransformerBlock(nn.Module):
    """Q3. An encoder block: NORM_FIRST chooses pre-norm (True) or post-norm (False); the feed-forward
    width is FF_MULT * d_model; dropout DROP_RATE.

    EN: use exactly nn.TransformerEncoderLayer's parameter names, which the grader copies weights into:
        self_attn (nn.MultiheadAttention(d_model, n_heads, dropout=DROP_RATE, batch_first=True)),
        linear1, linear2 (ReLU between them), norm1, norm2 (nn.LayerNorm(d_model)).
        forward(x): (b, num_tokens, d_model) -> the same shape. Build the block from these parts yourself:
        one that subclasses, holds or calls nn.TransformerEncoderLayer earns only the construction point.
    KO: 채점기가 가중치를 복사하는 nn.TransformerEncoderLayer의 파라미터 이름을 그대로 쓰세요:
        self_attn (nn.MultiheadAttention(d_model, n_heads, dropout=DROP_RATE, batch_first=True)),
        linear1, linear2 (사이에 ReLU), norm1, norm2 (nn.LayerNorm(d_model)).
        forward(x): (b, num_tokens, d_model) -> 같은 shape. 블록은 이 부품들로 직접 만드세요:
        nn.TransformerEncoderLayer를 상속하거나, 속성으로 두거나, 호출하는 블록은 생성 점수만 받습니다.
    """

    def __init__(self, d_model, n_heads):
        super().__init__()
        raise NotImplementedError("Q3: TransformerBlock.__init__")

    def forward(self, x):
        raise NotImplementedError("Q3: TransformerBlock.forward")


if __name__ == "__main__":
    # Demo on your own variant's shapes / 본인 변형의 shape으로 하는 데모
    torch.manual_seed(0)
    x = torch.randn(2, CONTEXT_LENGTH, 6)
    print(MultiHeadAttention(6, 12)(x).shape)
    Q, K, V = (torch.randn(*SDPA_SHAPE) for _ in range(3))
    out, attention = ScaledDotProductAttention()(Q, K, V, mask=window_mask(SDPA_SHAPE[2]))
    print(out.shape, attention.shape)
    print(TransformerBlock(12, 3)(torch.randn(2, 5, 12)).shape)
