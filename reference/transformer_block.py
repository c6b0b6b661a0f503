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
    """The encoder block; use_ffn, use_norm and use_residual switch a part off (the notes' exercise 3)."""

    def __init__(self, d_model, n_heads, d_ff, dropout=0.1, norm_first=False, use_ffn=True, use_norm=True,
                 use_residual=True):
        super().__init__()
        self.norm_first = norm_first
        self.use_ffn, self.use_norm, self.use_residual = use_ffn, use_norm, use_residual
        self.attn = MultiHeadSelfAttention(d_model, n_heads, dropout)
        self.ff = FeedForward(d_model, d_ff, dropout)
        self.norm1 = nn.LayerNorm(d_model)
        self.norm2 = nn.LayerNorm(d_model)
        self.dropout1 = nn.Dropout(dropout)
        self.dropout2 = nn.Dropout(dropout)

    def forward(self, x, causal=False):
        if not (self.use_ffn and self.use_norm and self.use_residual):
            return self._switched_off(x, causal)
        if self.norm_first:  # pre-norm: normalise what goes into each sub-layer
            x = x + self.dropout1(self.attn(self.norm1(x), causal))
            x = x + self.dropout2(self.ff(self.norm2(x)))
        else:  # post-norm: normalise each residual sum
            x = self.norm1(x + self.dropout1(self.attn(x, causal)))
            x = self.norm2(x + self.dropout2(self.ff(x)))
        return x

    def _switched_off(self, x, causal):
        """The same two sub-layers, each part that is switched off left out."""
        def sublayer(z, layer, norm, dropout):
            keep = z if self.use_residual else 0
            if not self.use_norm:
                return keep + dropout(layer(z))
            if not self.norm_first:  # post-norm: normalise the residual sum
                return norm(keep + dropout(layer(z)))
            return keep + dropout(layer(norm(z)))  # pre-norm: normalise what goes into the sub-layer
        x = sublayer(x, lambda z: self.attn(z, causal), self.norm1, self.dropout1)
        if self.use_ffn:  # without it the block ends after the attention sub-layer
            x = sublayer(x, self.ff, self.norm2, self.dropout2)
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


def make_transformer(d_model, nhead, num_layers, dim_feedforward):
    """The notes' exercise 1: an nn.Transformer with num_layers encoder and num_layers decoder layers, batch first."""
    return nn.Transformer(d_model=d_model, nhead=nhead, num_encoder_layers=num_layers,
                          num_decoder_layers=num_layers, dim_feedforward=dim_feedforward, batch_first=True)


def transformer_shape(batch, src_len, tgt_len, d_model, nhead, num_layers):
    """The output shape of make_transformer(d_model, nhead, num_layers, 2 * d_model) on a (batch, src_len, d_model)
    source and a (batch, tgt_len, d_model) target, as a tuple of ints: (batch, tgt_len, d_model)."""
    model = make_transformer(d_model, nhead, num_layers, 2 * d_model).eval()
    with torch.no_grad():
        out = model(torch.rand(batch, src_len, d_model), torch.rand(batch, tgt_len, d_model))
    return tuple(out.shape)
