"""A correct midterm answer written independently of the reference (reshape/permute, einsum, loops): full
marks, and the audit must not call it a copy of the reference."""
import math
import torch
from torch import nn

# ---- EXAM VARIANT (default) ----
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
    def __init__(self, d_in, d_out):
        super().__init__()
        self.h = NUM_HEADS
        self.d_out = d_out
        self.W_query = nn.Linear(d_in, d_out, bias=QKV_BIAS)
        self.W_key = nn.Linear(d_in, d_out, bias=QKV_BIAS)
        self.W_value = nn.Linear(d_in, d_out, bias=QKV_BIAS)
        self.out_proj = nn.Linear(d_out, d_out)
        self.dropout = nn.Dropout(DROP_RATE)
        self.register_buffer("mask", torch.triu(torch.ones(CONTEXT_LENGTH, CONTEXT_LENGTH), diagonal=1))

    def forward(self, x):
        B, T, _ = x.shape
        hd = self.d_out // self.h
        q = self.W_query(x).reshape(B, T, self.h, hd).permute(0, 2, 1, 3)
        k = self.W_key(x).reshape(B, T, self.h, hd).permute(0, 2, 3, 1)
        v = self.W_value(x).reshape(B, T, self.h, hd).permute(0, 2, 1, 3)
        att = torch.matmul(q, k) * (1.0 / math.sqrt(hd))
        att = att.masked_fill(self.mask[:T, :T] == 1, float("-inf"))
        att = self.dropout(att.softmax(-1))
        y = torch.matmul(att, v).permute(0, 2, 1, 3).contiguous().view(B, T, self.d_out)
        return self.out_proj(y)


class ScaledDotProductAttention(nn.Module):
    def forward(self, Q, K, V, mask=None):
        s = torch.einsum("...id,...jd->...ij", Q, K) / K.shape[-1] ** 0.5
        if mask is not None:
            s = torch.where(mask == 0, torch.full_like(s, -1e9), s)
        a = torch.softmax(s, dim=-1)
        return torch.einsum("...ij,...jd->...id", a, V), a


def window_mask(T):
    m = torch.zeros(T, T, dtype=torch.long)
    for i in range(T):
        for j in range(max(0, i - MASK_WINDOW + 1), i + 1):
            m[i, j] = 1
    return m


class TransformerBlock(nn.Module):
    def __init__(self, d_model, n_heads):
        super().__init__()
        self.self_attn = nn.MultiheadAttention(d_model, n_heads, dropout=DROP_RATE, batch_first=True)
        self.linear1 = nn.Linear(d_model, FF_MULT * d_model)
        self.linear2 = nn.Linear(FF_MULT * d_model, d_model)
        self.norm1 = nn.LayerNorm(d_model)
        self.norm2 = nn.LayerNorm(d_model)
        self.drop = nn.Dropout(DROP_RATE)

    def ff(self, x):
        return self.drop(self.linear2(self.drop(torch.relu(self.linear1(x)))))

    def forward(self, x):
        if NORM_FIRST:
            y = self.norm1(x)
            x = x + self.drop(self.self_attn(y, y, y)[0])
            return x + self.ff(self.norm2(x))
        x = self.norm1(x + self.drop(self.self_attn(x, x, x)[0]))
        return self.norm2(x + self.ff(x))
