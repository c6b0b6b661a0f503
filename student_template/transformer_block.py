"""Week 7-2 assignment: a transformer encoder block from its parts.
7주차 2 과제: 구성 요소로 트랜스포머 인코더 블록 만들기.

You write three modules and two small functions:
    MultiHeadSelfAttention(d_model, n_heads, dropout)        multi-head self-attention, optionally causal
    FeedForward(d_model, d_ff, dropout)                      the position-wise two-layer network
    TransformerBlock(d_model, n_heads, d_ff, dropout, norm_first=False)
                                                             attention + feed-forward, each wrapped in a
                                                             residual connection and a LayerNorm
    build_transformer()                                      the nn.Transformer from the notes
    transformer_output_shape()                               the shape that model gives for (2, 5, 16) inputs
    make_transformer(d_model, nhead, num_layers, dim_feedforward)   exercise 1: other sizes / 실습 과제 1
    transformer_shape(batch, src_len, tgt_len, d_model, nhead, num_layers)   its output shape / 출력 shape
    TransformerBlock(..., use_ffn=True, use_norm=True, use_residual=True)   exercise 3: parts switched off / 실습 과제 3
세 개의 모듈과 두 개의 작은 함수를 작성합니다 (위 목록 참고).

How it is graded / 채점 방식
    The grader builds torch.nn.TransformerEncoderLayer(d_model, n_heads, d_ff, batch_first=True,
    norm_first=...) and copies its weights into YOUR modules under the names below, then compares the outputs
    in eval mode. PyTorch keeps the query, key and value projections in one stacked matrix (in_proj_weight);
    here they are three separate layers W_q, W_k, W_v, and the grader cuts PyTorch's matrix in three for you.
    So: keep every attribute name and shape exactly as described, and use nn.Linear / nn.LayerNorm /
    nn.Dropout modules (not functional calls with your own weights).
    채점기는 torch.nn.TransformerEncoderLayer(d_model, n_heads, d_ff, batch_first=True, norm_first=...)를 만들고
    그 가중치를 아래 이름으로 여러분의 모듈에 복사한 뒤 eval 모드에서 출력을 비교합니다. PyTorch는 쿼리·키·값
    투영을 하나로 쌓은 행렬(in_proj_weight)에 두지만, 여기서는 W_q, W_k, W_v 세 레이어로 나눠 두며 채점기가
    PyTorch의 행렬을 세 조각으로 잘라 넣어 줍니다. 따라서 속성 이름과 shape을 설명 그대로 지키고,
    nn.Linear / nn.LayerNorm / nn.Dropout 모듈을 쓰세요.

    Each part is graded on its own: a block that correctly combines YOUR attention and feed-forward modules
    keeps its points even if one of those modules has a bug (that bug costs points only in its own question).
    부분마다 따로 채점합니다: 여러분의 어텐션과 피드포워드를 올바르게 조합한 블록은, 그 모듈 중 하나에 버그가
    있어도 블록 점수를 잃지 않습니다 (그 버그는 해당 문항에서만 감점됩니다).

Forward signature / forward 시그니처
    MultiHeadSelfAttention.forward(x, causal=False) and TransformerBlock.forward(x, causal=False), with x of
    shape (batch, tokens, d_model) -> same shape. causal=True means token i may attend only to tokens 0..i
    (scores above the diagonal become -inf before the softmax).
    x의 shape은 (batch, tokens, d_model)이고 출력도 같은 shape입니다. causal=True이면 토큰 i는 0..i번 토큰만
    볼 수 있습니다 (softmax 전에 대각선 위의 점수를 -inf로).

`grade check` in this folder runs the public checks. / 이 폴더에서 `grade check`로 공개 검사를 실행하세요.
"""
import math

import torch
import torch.nn as nn
import torch.nn.functional as F


class MultiHeadSelfAttention(nn.Module):
    """Multi-head self-attention. / 멀티 헤드 셀프 어텐션.

    __init__: raise ValueError if d_model % n_heads != 0; d_head = d_model // n_heads.
        self.W_q, self.W_k, self.W_v, self.W_o = nn.Linear(d_model, d_model) (with bias), in this order
        self.dropout = nn.Dropout(dropout), applied to the attention weights after the softmax
    forward(x, causal=False):
        project x with W_q, W_k, W_v; split each into n_heads heads of size d_head
        (view (b, n, n_heads, d_head), then transpose to (b, n_heads, n, d_head));
        scores = q @ k^T / sqrt(d_head); with causal=True set the scores above the diagonal to -inf;
        weights = dropout(softmax(scores, dim=-1)); put the heads' weighted sums side by side again
        (b, n, d_model) and return W_o of that.
    각 헤드의 점수는 sqrt(d_head)로 나눕니다. 헤드를 합친 뒤 W_o를 적용해 반환하세요.
    """

    def __init__(self, d_model, n_heads, dropout=0.1):
        super().__init__()
        raise NotImplementedError("MultiHeadSelfAttention.__init__ / 구현하세요")

    def forward(self, x, causal=False):
        raise NotImplementedError("MultiHeadSelfAttention.forward / 구현하세요")


class FeedForward(nn.Module):
    """Position-wise feed-forward network. / 위치별 피드포워드 네트워크.

    __init__: self.linear1 = nn.Linear(d_model, d_ff), self.linear2 = nn.Linear(d_ff, d_model),
              self.dropout = nn.Dropout(dropout)
    forward(x) = linear2(dropout(relu(linear1(x))))   (every token separately / 토큰마다 따로)
    """

    def __init__(self, d_model, d_ff, dropout=0.1):
        super().__init__()
        raise NotImplementedError("FeedForward.__init__ / 구현하세요")

    def forward(self, x):
        raise NotImplementedError("FeedForward.forward / 구현하세요")


class TransformerBlock(nn.Module):
    """One encoder block. / 인코더 블록 하나.

    __init__: self.attn = MultiHeadSelfAttention(d_model, n_heads, dropout)
              self.ff = FeedForward(d_model, d_ff, dropout)
              self.norm1, self.norm2 = nn.LayerNorm(d_model), nn.LayerNorm(d_model)
              self.dropout1, self.dropout2 = nn.Dropout(dropout), nn.Dropout(dropout)
              keep norm_first / norm_first 값을 저장하세요
    forward(x, causal=False):
        norm_first=False (post-norm, the original Transformer / 원래 트랜스포머):
            x = norm1(x + dropout1(attn(x, causal)))
            x = norm2(x + dropout2(ff(x)))
        norm_first=True (pre-norm, used by GPT-style models / GPT 계열이 쓰는 방식):
            x = x + dropout1(attn(norm1(x), causal))
            x = x + dropout2(ff(norm2(x)))
    The "x + ..." parts are the residual connections: they let the input (and the gradient) pass the
    sub-layer unchanged. / "x + ..." 부분이 잔차 연결입니다: 입력(과 그래디언트)이 서브레이어를 그대로
    건너갈 수 있게 합니다.
    Switches (the notes' exercise 3, graded) / 스위치 (노트의 실습 과제 3, 채점 대상):
        use_ffn=False       no feed-forward sub-layer: the block ends after the attention sub-layer
                            피드포워드 서브레이어 없음: 어텐션 서브레이어에서 블록이 끝납니다
        use_norm=False      norm1 and norm2 act as identities: x = x + attn(x); x = x + ff(x)
                            norm1, norm2를 항등 함수로: x = x + attn(x); x = x + ff(x)
        use_residual=False  no "x + ...": post-norm norm1(attn(x)), norm2(ff(.)); pre-norm attn(norm1(x)), ff(norm2(.))
                            "x + ..." 없이: post-norm은 norm1(attn(x)), norm2(ff(.)); pre-norm은 attn(norm1(x)), ff(norm2(.))
        The grader compares each with the matching torch.nn construction (e.g. nn.TransformerEncoderLayer whose
        LayerNorms are nn.Identity). / 채점기는 각각을 대응하는 torch.nn 구성과 비교합니다.
    """

    def __init__(self, d_model, n_heads, d_ff, dropout=0.1, norm_first=False, use_ffn=True, use_norm=True,
                 use_residual=True):
        super().__init__()
        raise NotImplementedError("TransformerBlock.__init__ / 구현하세요")

    def forward(self, x, causal=False):
        raise NotImplementedError("TransformerBlock.forward / 구현하세요")


def build_transformer():
    """Return torch.nn.Transformer(d_model=16, nhead=4, num_encoder_layers=2, num_decoder_layers=2,
    dim_feedforward=32, batch_first=True), the model from the notes.
    노트에 나온 모델을 만들어 반환하세요."""
    raise NotImplementedError("build_transformer / 구현하세요")


def transformer_output_shape():
    """Run build_transformer() on src = torch.rand(2, 5, 16) and tgt = torch.rand(2, 5, 16) and return the
    output's shape as a plain tuple of ints, e.g. tuple(out.shape).
    build_transformer()에 src, tgt = torch.rand(2, 5, 16)을 넣고 출력의 shape을 정수 튜플로 반환하세요
    (예: tuple(out.shape))."""
    raise NotImplementedError("transformer_output_shape / 구현하세요")


def make_transformer(d_model, nhead, num_layers, dim_feedforward):
    """The notes' exercise 1 (graded): return torch.nn.Transformer with d_model, nhead, num_layers encoder AND
    num_layers decoder layers, dim_feedforward, and batch_first=True.
    노트의 실습 과제 1 (채점 대상): 인코더와 디코더를 각각 num_layers층으로 하는 nn.Transformer를 batch_first=True로
    만들어 반환하세요."""
    raise NotImplementedError("make_transformer / 구현하세요")


def transformer_shape(batch, src_len, tgt_len, d_model, nhead, num_layers):
    """Build make_transformer(d_model, nhead, num_layers, 2 * d_model), run it on a (batch, src_len, d_model)
    source and a (batch, tgt_len, d_model) target, and return the output's shape as a tuple of ints.
    위 모델에 (batch, src_len, d_model) 소스와 (batch, tgt_len, d_model) 타깃을 넣고 출력 shape을 정수 튜플로
    반환하세요."""
    raise NotImplementedError("transformer_shape / 구현하세요")
