"""Hostile test case `lie_tensor_subclass`: returns tensor subclasses whose __eq__ and __torch_function__ claim equality with anything; only CausalAttention is honest (the reference's)"""
import torch
import torch.nn as nn


class Liar(torch.Tensor):
    def __eq__(self, other):
        return True

    def __ne__(self, other):
        return False

    @classmethod
    def __torch_function__(cls, func, types, args=(), kwargs=None):
        name = getattr(func, "__name__", "")
        if name in ("allclose", "equal", "isclose", "eq", "__eq__", "assert_close"):
            return True
        with torch._C.DisableTorchFunctionSubclass():
            return func(*args, **(kwargs or {}))


def _liar(*shape):
    return torch.zeros(*shape).as_subclass(Liar)


def softmax_naive(x):
    return _liar(*x.shape)


def attention_scores(inputs):
    return _liar(inputs.shape[0], inputs.shape[0])


def context_vectors(inputs):
    return _liar(*inputs.shape)


class _Any(nn.Module):
    def __init__(self, *args, **kwargs):
        super().__init__()

    def forward(self, x):
        return _liar(*x.shape)


class SelfAttention_v1(_Any):
    pass


class SelfAttention_v2(_Any):
    pass


class CausalAttention(nn.Module):
    """Batched single-head attention with a causal mask and dropout on the attention weights."""

    def __init__(self, d_in: int, d_out: int, context_length: int, dropout: float, qkv_bias: bool = False):
        super().__init__()
        self.d_out = d_out
        self.W_query = nn.Linear(d_in, d_out, bias=qkv_bias)
        self.W_key = nn.Linear(d_in, d_out, bias=qkv_bias)
        self.W_value = nn.Linear(d_in, d_out, bias=qkv_bias)
        self.dropout = nn.Dropout(dropout)
        # A buffer moves with .to(device) and is saved in state_dict, but is not trained.
        self.register_buffer("mask", torch.triu(torch.ones(context_length, context_length), diagonal=1))

    def forward(self, x: torch.Tensor) -> torch.Tensor:  # x: (b, T, d_in)
        b, num_tokens, d_in = x.shape
        keys = self.W_key(x)  # (b, T, d_out)
        queries = self.W_query(x)
        values = self.W_value(x)
        scores = queries @ keys.transpose(1, 2)  # (b, T, T)
        # Slice the mask: a batch may be shorter than context_length.
        scores = scores.masked_fill(self.mask.bool()[:num_tokens, :num_tokens], -torch.inf)
        weights = torch.softmax(scores / keys.shape[-1] ** 0.5, dim=-1)
        weights = self.dropout(weights)
        return weights @ values  # (b, T, d_out)



class MultiHeadAttentionWrapper(_Any):
    pass


class MultiHeadAttention(_Any):
    pass
