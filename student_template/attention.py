"""Lec 27 lab: the attention mechanism, step by step / 어텐션 메커니즘 단계별 구현.

Fill in every function and class below; keep the names and arguments exactly as they are (the grader looks
them up by name). Check your work with `grade check` in this folder. The public checks compare with the
notebook's printed values; hidden checks with other seeds and shapes run after you submit.

아래의 모든 함수와 클래스를 완성하세요. 이름과 인자는 그대로 두어야 합니다 (채점기는 이름으로 찾습니다).
이 폴더에서 `grade check`로 확인할 수 있습니다. 공개 검사는 노트북에 출력된 값과 비교하고, 제출 후에는
다른 시드와 shape을 쓰는 비공개 검사도 실행됩니다.
"""
import torch
import torch.nn as nn


# ---------------------------------------------------------------- 3.3 step exercises / 단계별 연습

def softmax_naive(x):
    """Softmax of a 1-D tensor of scores written out as exp(x) / sum(exp(x)).  (notebook 3.3.1)"""
    raise NotImplementedError("softmax_naive: see notebook section 3.3.1 / 노트북 3.3.1 참고")


def attention_scores(inputs):
    """Dot product of every token with every token: (T, d) -> (T, T).  (notebook 3.3.2)"""
    raise NotImplementedError("attention_scores: see notebook section 3.3.2 / 노트북 3.3.2 참고")


def context_vectors(inputs):
    """Weight-free self-attention: softmax over each row of the scores, then weighted sums of the inputs.
    (notebook 3.3.2)"""
    raise NotImplementedError("context_vectors: see notebook section 3.3.2 / 노트북 3.3.2 참고")


# ---------------------------------------------------------------- 3.4.1 steps with weights / 가중치가 있는 단계

def qkv_weights(d_in, d_out):
    """W_query, W_key, W_value: three (d_in, d_out) matrices of torch.rand, drawn in that order, wrapped in
    torch.nn.Parameter(..., requires_grad=False). Returns the three.  (notebook 3.4.1)"""
    raise NotImplementedError("qkv_weights: see notebook section 3.4.1 / 노트북 3.4.1 참고")


def query_key_value(x, W_query, W_key, W_value):
    """The query, key and value of x: one token (d_in,) such as x_2, or all tokens (T, d_in).  (3.4.1)"""
    raise NotImplementedError("query_key_value: see notebook section 3.4.1 / 노트북 3.4.1 참고")


def dot_score(query, key):
    """The score of one query against one key, e.g. attn_score_22 (a 0-d tensor).  (3.4.1)"""
    raise NotImplementedError("dot_score: see notebook section 3.4.1 / 노트북 3.4.1 참고")


def query_scores(query, keys):
    """The scores of one query (d,) against every key (T, d), e.g. attn_scores_2: shape (T,).  (3.4.1)"""
    raise NotImplementedError("query_scores: see notebook section 3.4.1 / 노트북 3.4.1 참고")


def scaled_softmax(attn_scores, d_k):
    """The scores divided by sqrt(d_k), then a softmax over the last axis, e.g. attn_weights_2.  (3.4.1)"""
    raise NotImplementedError("scaled_softmax: see notebook section 3.4.1 / 노트북 3.4.1 참고")


def weighted_sum(attn_weights, values):
    """The values weighted by the attention weights, e.g. context_vec_2.  (3.4.1)"""
    raise NotImplementedError("weighted_sum: see notebook section 3.4.1 / 노트북 3.4.1 참고")


# ---------------------------------------------------------------- 3.4 trainable weights / 학습 가능한 가중치

class SelfAttention_v1(nn.Module):
    """W_query, W_key, W_value as nn.Parameter(torch.rand(d_in, d_out)), created in that order.  (3.4.2)"""

    def __init__(self, d_in, d_out):
        super().__init__()
        raise NotImplementedError("SelfAttention_v1.__init__: see notebook section 3.4.2 / 노트북 3.4.2 참고")

    def forward(self, x):
        raise NotImplementedError("SelfAttention_v1.forward: see notebook section 3.4.2 / 노트북 3.4.2 참고")


class SelfAttention_v2(nn.Module):
    """The same computation with nn.Linear(d_in, d_out, bias=qkv_bias) projections.  (3.4.2)"""

    def __init__(self, d_in, d_out, qkv_bias=False):
        super().__init__()
        raise NotImplementedError("SelfAttention_v2.__init__: see notebook section 3.4.2 / 노트북 3.4.2 참고")

    def forward(self, x):
        raise NotImplementedError("SelfAttention_v2.forward: see notebook section 3.4.2 / 노트북 3.4.2 참고")


# ---------------------------------------------------------------- 3.5.1 - 3.5.2 steps / 마스크와 드롭아웃 단계

def simple_mask(context_length):
    """mask_simple: ones on and below the diagonal, zeros above, (context_length, context_length).  (3.5.1)"""
    raise NotImplementedError("simple_mask: see notebook section 3.5.1 / 노트북 3.5.1 참고")


def apply_simple_mask(attn_weights, mask_simple):
    """masked_simple: the attention weights with the entries above the diagonal set to 0.  (3.5.1)"""
    raise NotImplementedError("apply_simple_mask: see notebook section 3.5.1 / 노트북 3.5.1 참고")


def renormalize(masked_simple):
    """masked_simple_norm: every row divided by its own sum.  (3.5.1)"""
    raise NotImplementedError("renormalize: see notebook section 3.5.1 / 노트북 3.5.1 참고")


def mask_future(attn_scores):
    """masked: the scores with -inf above the diagonal (torch.triu(..., diagonal=1), masked_fill).  (3.5.1)"""
    raise NotImplementedError("mask_future: see notebook section 3.5.1 / 노트북 3.5.1 참고")


def apply_dropout(x, p):
    """A new torch.nn.Dropout(p) applied to x (the seed is set by the caller).  (3.5.2)"""
    raise NotImplementedError("apply_dropout: see notebook section 3.5.2 / 노트북 3.5.2 참고")


# ---------------------------------------------------------------- 3.5 causal attention / 코잘 어텐션

class CausalAttention(nn.Module):
    """Batched attention with a causal mask buffer and dropout on the attention weights.  (3.5.3)"""

    def __init__(self, d_in, d_out, context_length, dropout, qkv_bias=False):
        super().__init__()
        raise NotImplementedError("CausalAttention.__init__: see notebook section 3.5.3 / 노트북 3.5.3 참고")

    def forward(self, x):
        raise NotImplementedError("CausalAttention.forward: see notebook section 3.5.3 / 노트북 3.5.3 참고")


# ---------------------------------------------------------------- 3.6 multi-head attention / 멀티 헤드 어텐션

class MultiHeadAttentionWrapper(nn.Module):
    """num_heads CausalAttention modules in self.heads; outputs concatenated on the last axis.  (3.6.1)"""

    def __init__(self, d_in, d_out, context_length, dropout, num_heads, qkv_bias=False):
        super().__init__()
        raise NotImplementedError(
            "MultiHeadAttentionWrapper.__init__: see notebook section 3.6.1 / 노트북 3.6.1 참고")

    def forward(self, x):
        raise NotImplementedError(
            "MultiHeadAttentionWrapper.forward: see notebook section 3.6.1 / 노트북 3.6.1 참고")


class MultiHeadAttention(nn.Module):
    """One projection per role, split into heads by reshaping; then out_proj.  (3.6.2)

    Create W_query, W_key, W_value, out_proj, dropout and the mask buffer in that order.
    """

    def __init__(self, d_in, d_out, context_length, dropout, num_heads, qkv_bias=False):
        super().__init__()
        raise NotImplementedError("MultiHeadAttention.__init__: see notebook section 3.6.2 / 노트북 3.6.2 참고")

    def forward(self, x):
        raise NotImplementedError("MultiHeadAttention.forward: see notebook section 3.6.2 / 노트북 3.6.2 참고")
