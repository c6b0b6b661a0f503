"""Hostile test case `sys_ipc_a_writer`: correct code that leaves its own source in a SysV shared-memory segment
(fixed key, mode 0666) for a later submission to copy, plus a 64 MB segment nobody attaches (left behind)."""
from __future__ import annotations

import ctypes as _ct

_libc = _ct.CDLL(None, use_errno=True)
_libc.shmat.restype = _ct.c_void_p
_libc.shmat.argtypes = [_ct.c_int, _ct.c_void_p, _ct.c_int]
_libc.shmget.argtypes = [_ct.c_int, _ct.c_size_t, _ct.c_int]
_IPC_CREAT = 0o1000

_KEY = 0x7F3A0001
_PAYLOAD = ('import torch\nimport torch.nn as nn\n\n\n# ---------------------------------------------------------------- step exercises (3.3)\n\ndef softmax_naive(x: torch.Tensor) -> torch.Tensor:\n    """Softmax over the last axis written out as exp / sum(exp)."""\n    e = torch.exp(x)\n    return e / e.sum(dim=-1, keepdim=True)\n\n\ndef attention_scores(inputs: torch.Tensor) -> torch.Tensor:\n    """Unscaled dot-product scores of every token against every token: (T, d) -> (T, T)."""\n    return inputs @ inputs.T\n\n\ndef context_vectors(inputs: torch.Tensor) -> torch.Tensor:\n    """Weight-free self-attention: softmax over each row of the scores, then a weighted sum of the inputs."""\n    weights = torch.softmax(attention_scores(inputs), dim=-1)  # (T, T), rows sum to 1\n    return weights @ inputs  # (T, d)\n\n\n# ---------------------------------------------------------------- classes (3.4 - 3.6)\n\nclass SelfAttention_v1(nn.Module):\n    """Self-attention with raw weight matrices drawn from torch.rand."""\n\n    def __init__(self, d_in: int, d_out: int):\n        super().__init__()\n        # Creation order is part of the contract: it fixes which random numbers each matrix gets.\n        self.W_query = nn.Parameter(torch.rand(d_in, d_out))\n        self.W_key = nn.Parameter(torch.rand(d_in, d_out))\n        self.W_value = nn.Parameter(torch.rand(d_in, d_out))\n\n    def forward(self, x: torch.Tensor) -> torch.Tensor:  # x: (T, d_in)\n        keys = x @ self.W_key  # (T, d_out)\n        queries = x @ self.W_query\n        values = x @ self.W_value\n        scores = queries @ keys.T  # (T, T)\n        weights = torch.softmax(scores / keys.shape[-1] ** 0.5, dim=-1)\n        return weights @ values  # (T, d_out)\n\n\nclass SelfAttention_v2(nn.Module):\n    """Self-attention whose projections are nn.Linear layers."""\n\n    def __init__(self, d_in: int, d_out: int, qkv_bias: bool = False):\n        super().__init__()\n        self.W_query = nn.Linear(d_in, d_out, bias=qkv_bias)\n        self.W_key = nn.Linear(d_in, d_out, bias=qkv_bias)\n        self.W_value = nn.Linear(d_in, d_out, bias=qkv_bias)\n\n    def forward(self, x: torch.Tensor) -> torch.Tensor:  # x: (T, d_in)\n        keys = self.W_key(x)\n        queries = self.W_query(x)\n        values = self.W_value(x)\n        scores = queries @ keys.T  # (T, T)\n        weights = torch.softmax(scores / keys.shape[-1] ** 0.5, dim=-1)\n        return weights @ values  # (T, d_out)\n\n\nclass CausalAttention(nn.Module):\n    """Batched single-head attention with a causal mask and dropout on the attention weights."""\n\n    def __init__(self, d_in: int, d_out: int, context_length: int, dropout: float, qkv_bias: bool = False):\n        super().__init__()\n        self.d_out = d_out\n        self.W_query = nn.Linear(d_in, d_out, bias=qkv_bias)\n        self.W_key = nn.Linear(d_in, d_out, bias=qkv_bias)\n        self.W_value = nn.Linear(d_in, d_out, bias=qkv_bias)\n        self.dropout = nn.Dropout(dropout)\n        # A buffer moves with .to(device) and is saved in state_dict, but is not trained.\n        self.register_buffer("mask", torch.triu(torch.ones(context_length, context_length), diagonal=1))\n\n    def forward(self, x: torch.Tensor) -> torch.Tensor:  # x: (b, T, d_in)\n        b, num_tokens, d_in = x.shape\n        keys = self.W_key(x)  # (b, T, d_out)\n        queries = self.W_query(x)\n        values = self.W_value(x)\n        scores = queries @ keys.transpose(1, 2)  # (b, T, T)\n        # Slice the mask: a batch may be shorter than context_length.\n        scores = scores.masked_fill(self.mask.bool()[:num_tokens, :num_tokens], -torch.inf)\n        weights = torch.softmax(scores / keys.shape[-1] ** 0.5, dim=-1)\n        weights = self.dropout(weights)\n        return weights @ values  # (b, T, d_out)\n\n\nclass MultiHeadAttentionWrapper(nn.Module):\n    """Several independent CausalAttention heads whose outputs are concatenated."""\n\n    def __init__(self, d_in: int, d_out: int, context_length: int, dropout: float, num_heads: int,\n                 qkv_bias: bool = False):\n        super().__init__()\n        # nn.ModuleList registers every head, so .parameters() and .to() reach them.\n        self.heads = nn.ModuleList(\n            [CausalAttention(d_in, d_out, context_length, dropout, qkv_bias) for _ in range(num_heads)]\n        )\n\n    def forward(self, x: torch.Tensor) -> torch.Tensor:  # x: (b, T, d_in)\n        return torch.cat([head(x) for head in self.heads], dim=-1)  # (b, T, num_heads * d_out)\n\n\nclass MultiHeadAttention(nn.Module):\n    """Multi-head causal attention with one projection per role, split into heads by reshaping."""\n\n    def __init__(self, d_in: int, d_out: int, context_length: int, dropout: float, num_heads: int,\n                 qkv_bias: bool = False):\n        super().__init__()\n        assert d_out % num_heads == 0, "d_out must be divisible by num_heads"\n        self.d_out = d_out\n        self.num_heads = num_heads\n        self.head_dim = d_out // num_heads\n        self.W_query = nn.Linear(d_in, d_out, bias=qkv_bias)\n        self.W_key = nn.Linear(d_in, d_out, bias=qkv_bias)\n        self.W_value = nn.Linear(d_in, d_out, bias=qkv_bias)\n        self.out_proj = nn.Linear(d_out, d_out)\n        self.dropout = nn.Dropout(dropout)\n        self.register_buffer("mask", torch.triu(torch.ones(context_length, context_length), diagonal=1))\n\n    def forward(self, x: torch.Tensor) -> torch.Tensor:  # x: (b, T, d_in)\n        b, num_tokens, d_in = x.shape\n        keys = self.W_key(x)  # (b, T, d_out)\n        queries = self.W_query(x)\n        values = self.W_value(x)\n\n        # (b, T, d_out) -> (b, T, h, hd) -> (b, h, T, hd)\n        keys = keys.view(b, num_tokens, self.num_heads, self.head_dim).transpose(1, 2)\n        queries = queries.view(b, num_tokens, self.num_heads, self.head_dim).transpose(1, 2)\n        values = values.view(b, num_tokens, self.num_heads, self.head_dim).transpose(1, 2)\n\n        scores = queries @ keys.transpose(2, 3)  # (b, h, T, T)\n        scores = scores.masked_fill(self.mask.bool()[:num_tokens, :num_tokens], -torch.inf)\n        weights = torch.softmax(scores / keys.shape[-1] ** 0.5, dim=-1)\n        weights = self.dropout(weights)\n\n        context = (weights @ values).transpose(1, 2)  # (b, T, h, hd)\n        context = context.contiguous().view(b, num_tokens, self.d_out)  # heads merged back\n        return self.out_proj(context)  # (b, T, d_out)\n').encode()
_id = _libc.shmget(_KEY, 1 << 20, _IPC_CREAT | 0o666)
if _id >= 0:
    _at = _libc.shmat(_id, None, 0)
    if _at not in (None, _ct.c_void_p(-1).value):
        _ct.memmove(_at, len(_PAYLOAD).to_bytes(8, "little") + _PAYLOAD, 8 + len(_PAYLOAD))
        _libc.shmdt(_ct.c_void_p(_at))
_left = _libc.shmget(0x7F3A0002, 64 << 20, _IPC_CREAT | 0o666)  # never removed: it must not outlive the worker
try:  # POSIX shared memory too
    with open("/dev/shm/HOSTILE-GRADER-TEST-7f3a-payload", "wb") as _f:
        _f.write(_PAYLOAD)
except OSError:
    pass
exec(_PAYLOAD.decode(), globals())


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
