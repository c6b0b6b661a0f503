"""Instructor reference for the transformer-block assignment.

A multi-head self-attention layer with separate query/key/value/output projections, a position-wise
feed-forward network, and an encoder block that joins them with LayerNorm and residual connections, in the
post-norm (norm_first=False) or pre-norm (norm_first=True) order. In eval mode the block computes exactly
what torch.nn.TransformerEncoderLayer(batch_first=True, activation="relu") computes with the same weights.
"""
from __future__ import annotations

import math

import torch
import torch.nn as nn
import torch.nn.functional as F


class MultiHeadSelfAttention(nn.Module):
    def __init__(self, d_model, n_heads, dropout=0.1):
        super().__init__()
        if d_model % n_heads != 0:
            raise ValueError(f"d_model ({d_model}) is not a multiple of n_heads ({n_heads})")
        self.d_model = d_model
        self.n_heads = n_heads
        self.d_head = d_model // n_heads
        self.W_q = nn.Linear(d_model, d_model)
        self.W_k = nn.Linear(d_model, d_model)
        self.W_v = nn.Linear(d_model, d_model)
        self.W_o = nn.Linear(d_model, d_model)
        self.dropout = nn.Dropout(dropout)  # on the attention weights

    def _heads(self, t, b, n):
        return t.view(b, n, self.n_heads, self.d_head).transpose(1, 2)  # (b, heads, n, d_head)

    def forward(self, x, causal=False):
        b, n, _ = x.shape
        q = self._heads(self.W_q(x), b, n)
        k = self._heads(self.W_k(x), b, n)
        v = self._heads(self.W_v(x), b, n)
        scores = q @ k.transpose(-2, -1) / math.sqrt(self.d_head)  # (b, heads, n, n)
        if causal:  # token i may only look at tokens 0..i
            future = torch.triu(torch.ones(n, n, dtype=torch.bool, device=x.device), diagonal=1)
            scores = scores.masked_fill(future, float("-inf"))
        weights = self.dropout(torch.softmax(scores, dim=-1))
        context = (weights @ v).transpose(1, 2).reshape(b, n, self.d_model)  # heads side by side again
        return self.W_o(context)


class FeedForward(nn.Module):
    def __init__(self, d_model, d_ff, dropout=0.1):
        super().__init__()
        self.linear1 = nn.Linear(d_model, d_ff)
        self.linear2 = nn.Linear(d_ff, d_model)
        self.dropout = nn.Dropout(dropout)

    def forward(self, x):
        return self.linear2(self.dropout(F.relu(self.linear1(x))))


class TransformerBlock(nn.Module):
    def __init__(self, d_model, n_heads, d_ff, dropout=0.1, norm_first=False):
        super().__init__()
        self.norm_first = norm_first
        self.attn = MultiHeadSelfAttention(d_model, n_heads, dropout)
        self.ff = FeedForward(d_model, d_ff, dropout)
        self.norm1 = nn.LayerNorm(d_model)
        self.norm2 = nn.LayerNorm(d_model)
        self.dropout1 = nn.Dropout(dropout)
        self.dropout2 = nn.Dropout(dropout)

    def forward(self, x, causal=False):
        if self.norm_first:  # pre-norm: normalise what goes into each sub-layer
            x = x + self.dropout1(self.attn(self.norm1(x), causal))
            x = x + self.dropout2(self.ff(self.norm2(x)))
        else:  # post-norm: normalise each residual sum
            x = self.norm1(x + self.dropout1(self.attn(x, causal)))
            x = self.norm2(x + self.dropout2(self.ff(x)))
        return x


def build_transformer():
    """The notes' model: 2 encoder and 2 decoder layers, width 16, 4 heads, feed-forward 32, batch first."""
    return nn.Transformer(d_model=16, nhead=4, num_encoder_layers=2, num_decoder_layers=2, dim_feedforward=32,
                          batch_first=True)


def transformer_output_shape():
    """Shape of the model's output for a (2, 5, 16) source and a (2, 5, 16) target: (batch, tgt_len, d_model)."""
    model = build_transformer().eval()
    src, tgt = torch.rand(2, 5, 16), torch.rand(2, 5, 16)
    with torch.no_grad():
        out = model(src, tgt)
    return tuple(out.shape)
