"""Instructor reference for the multi-headed attention assignment.

`ScaledDotProductAttention` works on any number of leading batch dimensions; `MultiHeadedAttention` returns a
dict with every intermediate tensor so that each step can be graded on its own. The small stage functions
below are what the forward pass is made of; the hidden checks also use them to judge one step on the
student's own inputs, so a mistake early in the chain is charged once, where it happens.
"""
from __future__ import annotations

import math

import torch
import torch.nn as nn
import torch.nn.functional as F

MASK_FILL = -1e9  # masked scores (mask == 0) get a large negative number, so a fully masked row stays finite
# How the multi-head scores are scaled (the assignment's `scale` option):
#   "full": divide by sqrt(d_feat) = K.size(-1) of the unsplit input, as the course documents do (the default)
#   "head": divide by sqrt(d_head), the size each head works in (Vaswani et al.)
SCALE = "full"


def score_divisor(d_feat: int, n_head: int, scale: str = SCALE) -> float:
    if scale == "head":
        return math.sqrt(d_feat // n_head)
    if scale == "full":
        return math.sqrt(d_feat)
    raise ValueError(f"scale must be 'head' or 'full', not {scale!r}")


class ScaledDotProductAttention(nn.Module):
    """softmax(Q K^T / sqrt(d_K)) V over the last two axes; every axis before them is a batch axis."""

    def forward(self, Q, K, V, mask=None):
        # Q: (..., n_Q, d_K)  K: (..., n_K, d_K)  V: (..., n_K, d_V)
        d_K = K.size(-1)
        scores = torch.matmul(Q, K.transpose(-2, -1)) / math.sqrt(d_K)  # (..., n_Q, n_K)
        if mask is not None:
            scores = scores.masked_fill(mask == 0, MASK_FILL)
        attention = torch.softmax(scores, dim=-1)  # each query's weights over the keys sum to 1
        out = torch.matmul(attention, V)  # (..., n_Q, d_V)
        return out, attention


# ---------------------------------------------------------------- one step each

def split_heads(feat: torch.Tensor, n_head: int) -> torch.Tensor:
    """(n_batch, n, d_feat) -> (n_batch, n_head, n, d_head): cut the features into heads, heads first."""
    n_batch, n_tok, d_feat = feat.shape
    return feat.view(n_batch, n_tok, n_head, d_feat // n_head).permute(0, 2, 1, 3)


def head_scores(Q_split: torch.Tensor, K_split: torch.Tensor, divisor: float, mask=None) -> torch.Tensor:
    """(n_batch, n_head, n_Q, d_head) x (n_batch, n_head, n_K, d_head) -> (n_batch, n_head, n_Q, n_K)."""
    scores = torch.matmul(Q_split, K_split.transpose(-2, -1)) / divisor
    if mask is not None:
        scores = scores.masked_fill(mask == 0, MASK_FILL)
    return scores


def weigh_values(attention: torch.Tensor, V_split: torch.Tensor, dropout: nn.Module) -> torch.Tensor:
    """Dropout on the attention weights (train mode only), then the weighted sum of the values."""
    return torch.matmul(dropout(attention), V_split)


def heads_to_back(x_raw: torch.Tensor) -> torch.Tensor:
    """(n_batch, n_head, n_Q, d_head) -> (n_batch, n_Q, n_head, d_head), stored contiguously."""
    return x_raw.permute(0, 2, 1, 3).contiguous()


def merge_heads(x_rsh1: torch.Tensor, d_feat: int) -> torch.Tensor:
    """(n_batch, n_Q, n_head, d_head) -> (n_batch, n_Q, d_feat): the heads side by side again."""
    return x_rsh1.reshape(x_rsh1.shape[0], -1, d_feat)


class MultiHeadedAttention(nn.Module):
    def __init__(self, d_feat=128, n_head=5, actv=F.relu, USE_BIAS=True, dropout_p=0.1, device=None):
        super().__init__()
        if d_feat % n_head != 0:
            raise ValueError(f"d_feat ({d_feat}) is not a multiple of n_head ({n_head})")
        self.d_feat = d_feat
        self.n_head = n_head
        self.d_head = d_feat // n_head
        self.actv = actv  # kept as in the notes' signature; the projections stay linear
        self.USE_BIAS = USE_BIAS
        self.dropout_p = dropout_p
        self.scale = SCALE  # the hidden checks set the instance's value from the assignment's option
        self.lin_Q = nn.Linear(d_feat, d_feat, bias=USE_BIAS)
        self.lin_K = nn.Linear(d_feat, d_feat, bias=USE_BIAS)
        self.lin_V = nn.Linear(d_feat, d_feat, bias=USE_BIAS)
        self.lin_O = nn.Linear(d_feat, d_feat, bias=USE_BIAS)
        self.dropout = nn.Dropout(p=dropout_p)
        # `device` is accepted and kept, as in the course documents, which never move the layers with it:
        # the caller places the module (and its inputs) with .to(device).
        self.device = device

    def forward(self, Q, K, V, mask=None):
        Q_feat = self.lin_Q(Q)  # (n_batch, n_Q, d_feat)
        K_feat = self.lin_K(K)  # (n_batch, n_K, d_feat)
        V_feat = self.lin_V(V)  # (n_batch, n_K, d_feat)

        Q_split = split_heads(Q_feat, self.n_head)  # (n_batch, n_head, n_Q, d_head)
        K_split = split_heads(K_feat, self.n_head)  # (n_batch, n_head, n_K, d_head)
        V_split = split_heads(V_feat, self.n_head)  # (n_batch, n_head, n_K, d_head)

        scores = head_scores(Q_split, K_split, score_divisor(self.d_feat, self.n_head, self.scale), mask)
        attention = torch.softmax(scores, dim=-1)  # (n_batch, n_head, n_Q, n_K)
        x_raw = weigh_values(attention, V_split, self.dropout)  # (n_batch, n_head, n_Q, d_head)

        x_rsh1 = heads_to_back(x_raw)  # (n_batch, n_Q, n_head, d_head)
        x_rsh2 = merge_heads(x_rsh1, self.d_feat)  # (n_batch, n_Q, d_feat)
        x = self.lin_O(x_rsh2)  # (n_batch, n_Q, d_feat)
        return {"Q_feat": Q_feat, "K_feat": K_feat, "V_feat": V_feat,
                "Q_split": Q_split, "K_split": K_split, "V_split": V_split,
                "scores": scores, "attention": attention,
                "x_raw": x_raw, "x_rsh1": x_rsh1, "x_rsh2": x_rsh2, "x": x}
