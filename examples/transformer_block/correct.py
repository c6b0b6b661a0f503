# Student submission (example): a correct solution in a style of its own (one helper for the head split,
# torch.where for the mask, einsum for the scores).
import math

import torch
import torch.nn as nn


class MultiHeadSelfAttention(nn.Module):
    def __init__(self, d_model, n_heads, dropout=0.1):
        super().__init__()
        if d_model % n_heads:
            raise ValueError("n_heads must divide d_model")
        self.h, self.dh = n_heads, d_model // n_heads
        self.W_q = nn.Linear(d_model, d_model)
        self.W_k = nn.Linear(d_model, d_model)
        self.W_v = nn.Linear(d_model, d_model)
        self.W_o = nn.Linear(d_model, d_model)
        self.dropout = nn.Dropout(dropout)

    def split(self, t):
        b, n, _ = t.shape
        return t.reshape(b, n, self.h, self.dh).permute(0, 2, 1, 3)

    def forward(self, x, causal=False):
        q, k, v = self.split(self.W_q(x)), self.split(self.W_k(x)), self.split(self.W_v(x))
        s = torch.einsum("bhqd,bhkd->bhqk", q, k) / math.sqrt(self.dh)
        if causal:
            n = x.shape[1]
            allowed = torch.ones(n, n, dtype=torch.bool, device=x.device).tril()
            s = torch.where(allowed, s, torch.full_like(s, float("-inf")))
        w = self.dropout(s.softmax(-1))
        out = (w @ v).permute(0, 2, 1, 3).flatten(2)
        return self.W_o(out)


class FeedForward(nn.Module):
    def __init__(self, d_model, d_ff, dropout=0.1):
        super().__init__()
        self.linear1 = nn.Linear(d_model, d_ff)
        self.linear2 = nn.Linear(d_ff, d_model)
        self.dropout = nn.Dropout(dropout)

    def forward(self, x):
        return self.linear2(self.dropout(torch.relu(self.linear1(x))))


class TransformerBlock(nn.Module):
    def __init__(self, d_model, n_heads, d_ff, dropout=0.1, norm_first=False, use_ffn=True, use_norm=True,
                 use_residual=True):
        super().__init__()
        self.norm_first = norm_first
        self.use_ffn, self.use_residual = use_ffn, use_residual
        self.attn = MultiHeadSelfAttention(d_model, n_heads, dropout)
        self.ff = FeedForward(d_model, d_ff, dropout) if use_ffn else None
        self.norm1 = nn.LayerNorm(d_model) if use_norm else nn.Identity()
        self.norm2 = nn.LayerNorm(d_model) if use_norm else nn.Identity()
        self.dropout1 = nn.Dropout(dropout)
        self.dropout2 = nn.Dropout(dropout)

    def _add(self, x, y):
        return x + y if self.use_residual else y

    def forward(self, x, causal=False):
        if self.norm_first:
            h = self._add(x, self.dropout1(self.attn(self.norm1(x), causal=causal)))
            return self._add(h, self.dropout2(self.ff(self.norm2(h)))) if self.use_ffn else h
        h = self.norm1(self._add(x, self.dropout1(self.attn(x, causal=causal))))
        return self.norm2(self._add(h, self.dropout2(self.ff(h)))) if self.use_ffn else h


def build_transformer():
    return nn.Transformer(d_model=16, nhead=4, num_encoder_layers=2, num_decoder_layers=2,
                          dim_feedforward=32, batch_first=True)


def transformer_output_shape():
    model = build_transformer()
    out = model(torch.rand(2, 5, 16), torch.rand(2, 5, 16))
    return tuple(out.shape)


print(transformer_output_shape())


def make_transformer(d_model, nhead, num_layers, dim_feedforward):
    return nn.Transformer(d_model, nhead, num_layers, num_layers, dim_feedforward, batch_first=True)


def transformer_shape(batch, src_len, tgt_len, d_model, nhead, num_layers):
    out = make_transformer(d_model, nhead, num_layers, 2 * d_model)(torch.rand(batch, src_len, d_model),
                                                                    torch.rand(batch, tgt_len, d_model))
    return tuple(out.shape)
