"""Hostile test case `gate_two_fused_projections_fake` (red team round 10): CausalAttention and MultiHeadAttention are a causal running
mean of tanh(q) * k plus v per token, not attention, through a fused c_attn beside an unused decoy c_gate of six times the rows: the role tests
were skipped or passed, and it earned points over the same code with the notebook's names."""
from __future__ import annotations

import torch
import torch.nn as nn


# ---------------------------------------------------------------- step exercises (3.3)

def softmax_naive(x: torch.Tensor) -> torch.Tensor:
    """Softmax over the last axis written out as exp / sum(exp)."""
    e = torch.exp(x)
    return e / e.sum(dim=-1, keepdim=True)


def attention_scores(inputs: torch.Tensor) -> torch.Tensor:
    """Unscaled dot-product scores of every token against every token: (T, d) -> (T, T)."""
    return inputs @ inputs.T


def context_vectors(inputs: torch.Tensor) -> torch.Tensor:
    """Weight-free self-attention: softmax over each row of the scores, then a weighted sum of the inputs."""
    weights = torch.softmax(attention_scores(inputs), dim=-1)  # (T, T), rows sum to 1
    return weights @ inputs  # (T, d)


# ---------------------------------------------------------------- step exercises with weights (3.4.1)

def qkv_weights(d_in: int, d_out: int) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
    """W_query, W_key, W_value: (d_in, d_out) draws of torch.rand, in that order, kept out of training."""
    W_query = nn.Parameter(torch.rand(d_in, d_out), requires_grad=False)
    W_key = nn.Parameter(torch.rand(d_in, d_out), requires_grad=False)
    W_value = nn.Parameter(torch.rand(d_in, d_out), requires_grad=False)
    return W_query, W_key, W_value


def query_key_value(x: torch.Tensor, W_query: torch.Tensor, W_key: torch.Tensor,
                    W_value: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
    """One token (d_in,) or all tokens (T, d_in) projected by each matrix: (..., d_out) three times."""
    return x @ W_query, x @ W_key, x @ W_value


def dot_score(query: torch.Tensor, key: torch.Tensor) -> torch.Tensor:
    """The unscaled score of one query against one key: a 0-d tensor."""
    return query.dot(key)


def query_scores(query: torch.Tensor, keys: torch.Tensor) -> torch.Tensor:
    """The scores of one query (d,) against every key (T, d): (T,)."""
    return query @ keys.T


def scaled_softmax(attn_scores: torch.Tensor, d_k: int) -> torch.Tensor:
    """Scores divided by sqrt(d_k), then a softmax over the last axis (-inf scores get weight 0)."""
    return torch.softmax(attn_scores / d_k ** 0.5, dim=-1)


def weighted_sum(attn_weights: torch.Tensor, values: torch.Tensor) -> torch.Tensor:
    """The context vector(s): the values weighted by the attention weights, (..., T) @ (T, d) -> (..., d)."""
    return attn_weights @ values


# ---------------------------------------------------------------- step exercises with masks (3.5.1 - 3.5.2)

def simple_mask(context_length: int) -> torch.Tensor:
    """Ones on and below the diagonal, zeros above: the positions each query may keep."""
    return torch.tril(torch.ones(context_length, context_length))


def apply_simple_mask(attn_weights: torch.Tensor, mask_simple: torch.Tensor) -> torch.Tensor:
    """Weights above the diagonal set to 0 after the softmax (rows no longer sum to 1)."""
    return attn_weights * mask_simple


def renormalize(masked_simple: torch.Tensor) -> torch.Tensor:
    """Each row divided by its own sum, so that it sums to 1 again."""
    return masked_simple / masked_simple.sum(dim=-1, keepdim=True)


def mask_future(attn_scores: torch.Tensor) -> torch.Tensor:
    """Scores above the diagonal replaced by -inf before the softmax (a new tensor; the input is kept)."""
    n = attn_scores.shape[-1]
    mask = torch.triu(torch.ones(n, n), diagonal=1)
    return attn_scores.masked_fill(mask.bool(), -torch.inf)


def apply_dropout(x: torch.Tensor, p: float) -> torch.Tensor:
    """A new nn.Dropout(p), in training mode as created, applied to x: zeros, and the rest scaled by 1/(1-p)."""
    dropout = nn.Dropout(p)
    return dropout(x)


# ---------------------------------------------------------------- classes (3.4 - 3.6)

class SelfAttention_v1(nn.Module):
    """Self-attention with raw weight matrices drawn from torch.rand."""

    def __init__(self, d_in: int, d_out: int):
        super().__init__()
        # Creation order is part of the contract: it fixes which random numbers each matrix gets.
        self.W_query = nn.Parameter(torch.rand(d_in, d_out))
        self.W_key = nn.Parameter(torch.rand(d_in, d_out))
        self.W_value = nn.Parameter(torch.rand(d_in, d_out))

    def forward(self, x: torch.Tensor) -> torch.Tensor:  # x: (T, d_in)
        keys = x @ self.W_key  # (T, d_out)
        queries = x @ self.W_query
        values = x @ self.W_value
        scores = queries @ keys.T  # (T, T)
        weights = torch.softmax(scores / keys.shape[-1] ** 0.5, dim=-1)
        return weights @ values  # (T, d_out)


class SelfAttention_v2(nn.Module):
    """Self-attention whose projections are nn.Linear layers."""

    def __init__(self, d_in: int, d_out: int, qkv_bias: bool = False):
        super().__init__()
        self.W_query = nn.Linear(d_in, d_out, bias=qkv_bias)
        self.W_key = nn.Linear(d_in, d_out, bias=qkv_bias)
        self.W_value = nn.Linear(d_in, d_out, bias=qkv_bias)

    def forward(self, x: torch.Tensor) -> torch.Tensor:  # x: (T, d_in)
        keys = self.W_key(x)
        queries = self.W_query(x)
        values = self.W_value(x)
        scores = queries @ keys.T  # (T, T)
        weights = torch.softmax(scores / keys.shape[-1] ** 0.5, dim=-1)
        return weights @ values  # (T, d_out)


class CausalAttention(nn.Module):
    """NOT attention: a causal running mean of tanh(q)*k, plus v (per token)."""
    def __init__(self, d_in, d_out, context_length, dropout, qkv_bias=False):
        super().__init__()
        self.d_out = d_out
        self.c_attn = nn.Linear(d_in, 3 * d_out, bias=qkv_bias)
        self.c_gate = nn.Linear(d_in, 6 * d_out, bias=qkv_bias)
        self.dropout = nn.Dropout(dropout)
        self.register_buffer("mask", torch.triu(torch.ones(context_length, context_length), diagonal=1))

    def forward(self, x):
        b, T, _ = x.shape
        q, k, v = self.c_attn(x).split(self.d_out, dim=-1)
        keep = 1 - self.mask[:T, :T].to(x.dtype)
        avg = self.dropout(keep / keep.sum(-1, keepdim=True))
        return avg @ (torch.tanh(q) * k) + v


class MultiHeadAttentionWrapper(nn.Module):
    """Several independent CausalAttention heads whose outputs are concatenated."""

    def __init__(self, d_in: int, d_out: int, context_length: int, dropout: float, num_heads: int,
                 qkv_bias: bool = False):
        super().__init__()
        # nn.ModuleList registers every head, so .parameters() and .to() reach them.
        self.heads = nn.ModuleList(
            [CausalAttention(d_in, d_out, context_length, dropout, qkv_bias) for _ in range(num_heads)]
        )

    def forward(self, x: torch.Tensor) -> torch.Tensor:  # x: (b, T, d_in)
        return torch.cat([head(x) for head in self.heads], dim=-1)  # (b, T, num_heads * d_out)


class MultiHeadAttention(nn.Module):
    """NOT attention: a causal running mean of tanh(q)*k, plus v, then out_proj."""
    def __init__(self, d_in, d_out, context_length, dropout, num_heads, qkv_bias=False):
        super().__init__()
        assert d_out % num_heads == 0, "d_out must be divisible by num_heads"
        self.d_out = d_out
        self.num_heads = num_heads
        self.c_attn = nn.Linear(d_in, 3 * d_out, bias=qkv_bias)
        self.c_gate = nn.Linear(d_in, 6 * d_out, bias=qkv_bias)
        self.out_proj = nn.Linear(d_out, d_out)
        self.dropout = nn.Dropout(dropout)
        self.register_buffer("mask", torch.triu(torch.ones(context_length, context_length), diagonal=1))

    def forward(self, x):
        b, T, _ = x.shape
        q, k, v = self.c_attn(x).split(self.d_out, dim=-1)
        keep = 1 - self.mask[:T, :T].to(x.dtype)
        avg = self.dropout(keep / keep.sum(-1, keepdim=True))
        return self.out_proj(avg @ (torch.tanh(q) * k) + v)


