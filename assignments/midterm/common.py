"""Check logic shared by the public and hidden checks of the midterm exam.

Public: no reference code and no hidden value; how to build and call the student's classes, and which variant
a check grades against (the student's own, passed by `grade batch --roster` as options["variant"]; the default
variant otherwise).
"""
from __future__ import annotations

import torch

from autograder.checks import expect_shape, expect_tensor

# The default variant: the same values as [exam.default] in assignment.toml and the skeleton's constants.
DEFAULT_VARIANT = {"num_heads": 2, "qkv_bias": False, "drop_rate": 0.1, "context_length": 8, "mask_window": 3,
                   "sdpa_shape": [2, 2, 5, 4], "norm_first": False, "ff_mult": 4}


def variant(options: dict) -> dict:
    """The variant this submission is graded against."""
    return {**DEFAULT_VARIANT, **(options.get("variant") or {})}


def constant(key: str) -> str:
    """The paper's name for a variant key: num_heads -> NUM_HEADS."""
    return key.upper()


def randn(seed: int, *shape: int) -> torch.Tensor:
    return torch.randn(*shape, generator=torch.Generator().manual_seed(seed))


def build_mha(sub, d_in: int, d_out: int, seed: int = 0):
    return sub.new("MultiHeadAttention", d_in, d_out, seed=seed)


def build_sdpa(sub):
    return sub.new("ScaledDotProductAttention", seed=0)


def build_block(sub, d_model: int, n_heads: int, seed: int = 0):
    return sub.new("TransformerBlock", d_model, n_heads, seed=seed)


def call(m, *args, what: str) -> torch.Tensor:
    return expect_tensor(m(*args), what)


def call_sdpa(m, Q, K, V, mask=None, what: str = "ScaledDotProductAttention()(Q, K, V)"):
    """The student's (out, attention), each checked to be a tensor."""
    from autograder.checks import fail
    got = m(Q, K, V) if mask is None else m(Q, K, V, mask=mask)
    if not isinstance(got, (tuple, list)) or len(got) != 2:
        fail(f"`{what}` should return a pair (out, attention); it returned {type(got).__name__}.",
             f"`{what}`는 (out, attention) 한 쌍을 반환해야 하는데 {type(got).__name__}을(를) 반환했습니다.")
    return expect_tensor(got[0], f"{what}[0]"), expect_tensor(got[1], f"{what}[1]")


def shapes_ok(t: torch.Tensor, shape: tuple[int, ...], what: str) -> torch.Tensor:
    return expect_shape(t, shape, what)
