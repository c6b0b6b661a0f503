"""Instructor reference for the midterm exam: MultiHeadAttention, ScaledDotProductAttention, TransformerBlock.

Every class reads the module-level exam constants by default, as a student's paper does; the keyword-only
overrides let the hidden checks build the reference for any student's variant without touching this module.
"""
from __future__ import annotations

import math

import torch
import torch.nn as nn
import torch.nn.functional as F

# The default variant (what `grade check` and a batch without a roster use); each paper sets its own.
# ---- EXAM VARIANT (the default) ----
NUM_HEADS = 2
QKV_BIAS = False
DROP_RATE = 0.1
CONTEXT_LENGTH = 8
MASK_WINDOW = 3
SDPA_SHAPE = (2, 2, 5, 4)
NORM_FIRST = False
FF_MULT = 4
# ---- END OF EXAM VARIANT ----


class MultiHeadAttention(nn.Module):
    def __init__(self, d_in, d_out, *, num_heads=None, qkv_bias=None, drop_rate=None, context_length=None):
        super().__init__()
        num_heads = NUM_HEADS if num_heads is None else num_heads
        qkv_bias = QKV_BIAS if qkv_bias is None else qkv_bias
        drop_rate = DROP_RATE if drop_rate is None else drop_rate
        context_length = CONTEXT_LENGTH if context_length is None else context_length
        assert d_out % num_heads == 0, "d_out must be divisible by the number of heads"
        self.d_out = d_out
        self.num_heads = num_heads
        self.head_dim = d_out // num_heads
        self.W_query = nn.Linear(d_in, d_out, bias=qkv_bias)
        self.W_key = nn.Linear(d_in, d_out, bias=qkv_bias)
        self.W_value = nn.Linear(d_in, d_out, bias=qkv_bias)
        self.out_proj = nn.Linear(d_out, d_out)
        self.dropout = nn.Dropout(drop_rate)
        self.register_buffer("mask", torch.triu(torch.ones(context_length, context_length), diagonal=1))

    def forward(self, x):
        b, n, _ = x.shape
        split = lambda t: t.view(b, n, self.num_heads, self.head_dim).transpose(1, 2)  # (b, h, n, hd)  # noqa: E731
        q, k, v = split(self.W_query(x)), split(self.W_key(x)), split(self.W_value(x))
        scores = q @ k.transpose(2, 3)  # (b, h, n, n)
        scores = scores.masked_fill(self.mask.bool()[:n, :n], -torch.inf)
        weights = self.dropout(torch.softmax(scores / self.head_dim ** 0.5, dim=-1))
        context = (weights @ v).transpose(1, 2).reshape(b, n, self.d_out)  # heads side by side again
        return self.out_proj(context)


class ScaledDotProductAttention(nn.Module):
    def forward(self, Q, K, V, mask=None):
        d_k = K.size(-1)
        scores = Q @ K.transpose(-2, -1) / math.sqrt(d_k)
        if mask is not None:
            scores = scores.masked_fill(mask == 0, -1e9)
        attention = torch.softmax(scores, dim=-1)
        return attention @ V, attention


def window_mask(T, window=None):
    """(T, T) mask, 1 where token i may look at token j: j <= i and i - j < window (the most recent tokens)."""
    window = MASK_WINDOW if window is None else window
    i = torch.arange(T).unsqueeze(1)
    j = torch.arange(T).unsqueeze(0)
    return ((j <= i) & (i - j < window)).long()


class TransformerBlock(nn.Module):
    def __init__(self, d_model, n_heads, *, norm_first=None, ff_mult=None, dropout=None):
        super().__init__()
        self.norm_first = NORM_FIRST if norm_first is None else norm_first
        ff_mult = FF_MULT if ff_mult is None else ff_mult
        dropout = DROP_RATE if dropout is None else dropout
        self.self_attn = nn.MultiheadAttention(d_model, n_heads, dropout=dropout, batch_first=True)
        self.linear1 = nn.Linear(d_model, ff_mult * d_model)
        self.linear2 = nn.Linear(ff_mult * d_model, d_model)
        self.norm1 = nn.LayerNorm(d_model)
        self.norm2 = nn.LayerNorm(d_model)
        self.dropout = nn.Dropout(dropout)
        self.dropout1 = nn.Dropout(dropout)
        self.dropout2 = nn.Dropout(dropout)

    def _sa(self, x):
        return self.dropout1(self.self_attn(x, x, x, need_weights=False)[0])

    def _ff(self, x):
        return self.dropout2(self.linear2(self.dropout(F.relu(self.linear1(x)))))

    def forward(self, x):
        if self.norm_first:  # pre-norm: normalise what enters each sub-layer
            x = x + self._sa(self.norm1(x))
            return x + self._ff(self.norm2(x))
        x = self.norm1(x + self._sa(x))  # post-norm: normalise each residual sum
        return self.norm2(x + self._ff(x))
