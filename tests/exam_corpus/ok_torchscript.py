"""A correct midterm answer with TorchScript helpers (`@torch.jit.script`), which compile from the function's
source: the worker runs the file from memory, and inspect found no source for them ("Can't get source"), so the
helpers were never defined and every check that called them failed."""
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


@torch.jit.script
def causal_softmax(scores: torch.Tensor, future: torch.Tensor, scale: float) -> torch.Tensor:
    return torch.softmax(scores.masked_fill(future, float("-inf")) * scale, dim=-1)


class MultiHeadAttention(nn.Module):
    def __init__(self, d_in, d_out):
        super().__init__()
        self.num_heads, self.head_dim = NUM_HEADS, d_out // NUM_HEADS
        self.W_query = nn.Linear(d_in, d_out, bias=QKV_BIAS)
        self.W_key = nn.Linear(d_in, d_out, bias=QKV_BIAS)
        self.W_value = nn.Linear(d_in, d_out, bias=QKV_BIAS)
        self.out_proj = nn.Linear(d_out, d_out)
        self.dropout = nn.Dropout(DROP_RATE)
        self.register_buffer("mask", torch.triu(torch.ones(CONTEXT_LENGTH, CONTEXT_LENGTH), diagonal=1))

    def forward(self, x):
        b, t, _ = x.shape
        q, k, v = (w(x).view(b, t, self.num_heads, self.head_dim).transpose(1, 2)
                   for w in (self.W_query, self.W_key, self.W_value))
        weights = causal_softmax(q @ k.transpose(2, 3), self.mask.bool()[:t, :t], self.head_dim ** -0.5)
        return self.out_proj((self.dropout(weights) @ v).transpose(1, 2).reshape(b, t, -1))


class ScaledDotProductAttention(nn.Module):
    def forward(self, Q, K, V, mask=None):
        scores = Q @ K.transpose(-2, -1) / math.sqrt(K.size(-1))
        if mask is not None:
            scores = scores.masked_fill(mask == 0, -1e9)
        attention = torch.softmax(scores, dim=-1)
        return attention @ V, attention


@torch.jit.script
def band(T: int, width: int) -> torch.Tensor:
    i = torch.arange(T).unsqueeze(1)
    j = torch.arange(T).unsqueeze(0)
    return ((j <= i) & (i - j < width)).long()


def window_mask(T):
    return band(T, MASK_WINDOW)


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

    def forward(self, x):
        def sa(z):
            return self.dropout1(self.self_attn(z, z, z, need_weights=False)[0])

        def ff(z):
            return self.dropout2(self.linear2(self.dropout(F.relu(self.linear1(z)))))

        if NORM_FIRST:
            x = x + sa(self.norm1(x))
            return x + ff(self.norm2(x))
        x = self.norm1(x + sa(x))
        return self.norm2(x + ff(x))
