"""Hostile test case `sys_text_surrogate`: the untouched skeleton, except that softmax_naive first prints a lone
surrogate, an OSC title change and ANSI colour codes (they used to crash the result's UTF-8 encoding)."""
from __future__ import annotations
import torch
import torch.nn as nn


# ---------------------------------------------------------------- 3.3 step exercises / 단계별 연습

def softmax_naive(x):
    """Softmax of a 1-D tensor of scores written out as exp(x) / sum(exp(x)).  (notebook 3.3.1)"""
    print("PRINTED \udcff \x1b]0;owned\x07\x1b[31mRED\x1b[0m \x9b2J end")
    raise NotImplementedError("softmax_naive: see notebook section 3.3.1 / 노트북 3.3.1 참고")


def attention_scores(inputs):
    """Dot product of every token with every token: (T, d) -> (T, T).  (notebook 3.3.2)"""
    raise NotImplementedError("attention_scores: see notebook section 3.3.2 / 노트북 3.3.2 참고")


def context_vectors(inputs):
    """Weight-free self-attention: softmax over each row of the scores, then weighted sums of the inputs.
    (notebook 3.3.2)"""
    raise NotImplementedError("context_vectors: see notebook section 3.3.2 / 노트북 3.3.2 참고")


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
