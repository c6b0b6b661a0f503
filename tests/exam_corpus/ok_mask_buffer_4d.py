"""A correct midterm answer whose MultiHeadAttention keeps its mask buffer as a (1, 1, CONTEXT_LENGTH, CONTEXT_LENGTH)
view of the triangle, to broadcast against the (b, h, T, T) scores (the attention lab takes it): it lost the 8 points
of the constants check, told the buffer had shape (1, 1, 8, 8). Einsum heads, a window mask from two tril calls."""
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
    """Q1."""

    def __init__(self, d_in, d_out):
        super().__init__()
        assert d_out % NUM_HEADS == 0
        self.d_out = d_out
        self.num_heads = NUM_HEADS
        self.head_dim = d_out // NUM_HEADS
        self.W_query = nn.Linear(d_in, d_out, bias=QKV_BIAS)
        self.W_key = nn.Linear(d_in, d_out, bias=QKV_BIAS)
        self.W_value = nn.Linear(d_in, d_out, bias=QKV_BIAS)
        self.out_proj = nn.Linear(d_out, d_out)
        self.dropout = nn.Dropout(DROP_RATE)
        self.register_buffer("mask", torch.triu(torch.ones(CONTEXT_LENGTH, CONTEXT_LENGTH), diagonal=1).view(1, 1, CONTEXT_LENGTH, CONTEXT_LENGTH))

    def forward(self, x):
        b, T, _ = x.shape
        h, hd = self.num_heads, self.head_dim
        q = self.W_query(x).view(b, T, h, hd)
        k = self.W_key(x).view(b, T, h, hd)
        v = self.W_value(x).view(b, T, h, hd)
        att = torch.einsum("bqhd,bkhd->bhqk", q, k) / math.sqrt(hd)
        att = att.masked_fill(self.mask[:, :, :T, :T].bool(), float("-inf"))
        att = self.dropout(F.softmax(att, dim=-1))
        ctx = torch.einsum("bhqk,bkhd->bqhd", att, v).reshape(b, T, self.d_out)
        return self.out_proj(ctx)


class ScaledDotProductAttention(nn.Module):
    """Q2."""

    def forward(self, Q, K, V, mask=None):
        scores = torch.einsum("...qd,...kd->...qk", Q, K) / math.sqrt(K.shape[-1])
        if mask is not None:
            scores = scores.masked_fill(mask == 0, -1e9)
        attention = scores.softmax(dim=-1)
        return torch.einsum("...qk,...kd->...qd", attention, V), attention


def window_mask(T):
    """Q2."""
    ones = torch.ones(T, T, dtype=torch.long)
    return torch.tril(ones) - torch.tril(ones, diagonal=-MASK_WINDOW)


class TransformerBlock(nn.Module):
    """Q3."""

    def __init__(self, d_model, n_heads):
        super().__init__()
        self.self_attn = nn.MultiheadAttention(d_model, n_heads, dropout=DROP_RATE, batch_first=True)
        self.linear1 = nn.Linear(d_model, FF_MULT * d_model)
        self.linear2 = nn.Linear(FF_MULT * d_model, d_model)
        self.norm1 = nn.LayerNorm(d_model)
        self.norm2 = nn.LayerNorm(d_model)
        self.dropout = nn.Dropout(DROP_RATE)
        self.dropout1 = nn.Dropout(DROP_RATE)
        self.dropout2 = nn.Dropout(DROP_RATE)

    def _sa_block(self, x):
        out, _ = self.self_attn(x, x, x)
        return self.dropout1(out)

    def _ff_block(self, x):
        return self.dropout2(self.linear2(self.dropout(torch.relu(self.linear1(x)))))

    def forward(self, x):
        if NORM_FIRST:
            x = x + self._sa_block(self.norm1(x))
            x = x + self._ff_block(self.norm2(x))
        else:
            x = self.norm1(x + self._sa_block(x))
            x = self.norm2(x + self._ff_block(x))
        return x


if __name__ == "__main__":
    torch.manual_seed(0)
    x = torch.randn(2, CONTEXT_LENGTH, 6)
    print(MultiHeadAttention(6, 12)(x).shape)
    Q, K, V = (torch.randn(*SDPA_SHAPE) for _ in range(3))
    out, attention = ScaledDotProductAttention()(Q, K, V, mask=window_mask(SDPA_SHAPE[2]))
    print(out.shape, attention.shape)
    print(TransformerBlock(12, 3)(torch.randn(2, 5, 12)).shape)
