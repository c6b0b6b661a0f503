"""A correct midterm answer that keeps buffers of its own beside the weights (a scale, a step counter): the
reference has no value for them, and copying its weights in must leave them be, not fail."""
import math

import torch
import torch.nn as nn
import torch.nn.functional as F

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
        self.d_out, self.num_heads, self.head_dim = d_out, NUM_HEADS, d_out // NUM_HEADS
        self.W_query = nn.Linear(d_in, d_out, bias=QKV_BIAS)
        self.W_key = nn.Linear(d_in, d_out, bias=QKV_BIAS)
        self.W_value = nn.Linear(d_in, d_out, bias=QKV_BIAS)
        self.out_proj = nn.Linear(d_out, d_out)
        self.dropout = nn.Dropout(DROP_RATE)
        self.register_buffer("mask", torch.triu(torch.ones(CONTEXT_LENGTH, CONTEXT_LENGTH), diagonal=1))
        self.register_buffer("scale", torch.tensor(self.head_dim ** -0.5))  # saved with the model

    def forward(self, x):
        b, n, _ = x.shape
        q, k, v = (w(x).view(b, n, self.num_heads, self.head_dim).transpose(1, 2)
                   for w in (self.W_query, self.W_key, self.W_value))
        s = (q @ k.transpose(-2, -1)).masked_fill(self.mask.bool()[:n, :n], float("-inf"))
        a = self.dropout(torch.softmax(s * self.scale, dim=-1))
        return self.out_proj((a @ v).transpose(1, 2).reshape(b, n, self.d_out))


class ScaledDotProductAttention(nn.Module):
    def forward(self, Q, K, V, mask=None):
        s = Q @ K.transpose(-2, -1) / math.sqrt(K.size(-1))
        if mask is not None:
            s = s.masked_fill(mask == 0, -1e9)
        a = torch.softmax(s, dim=-1)
        return a @ V, a


def window_mask(T):
    return torch.ones(T, T, dtype=torch.long).tril().triu(1 - MASK_WINDOW)


class TransformerBlock(nn.Module):
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
        self.register_buffer("calls", torch.zeros((), dtype=torch.long))  # how often forward ran

    def forward(self, x):
        self.calls += 1
        sa = lambda z: self.dropout1(self.self_attn(z, z, z, need_weights=False)[0])  # noqa: E731
        ff = lambda z: self.dropout2(self.linear2(self.dropout(F.relu(self.linear1(z)))))  # noqa: E731
        if NORM_FIRST:
            x = x + sa(self.norm1(x))
            return x + ff(self.norm2(x))
        x = self.norm1(x + sa(x))
        return self.norm2(x + ff(x))
