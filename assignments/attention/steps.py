"""Check logic for the lab's step exercises of 3.4.1 (weights) and 3.5.1 - 3.5.2 (masks, dropout). Public.

Each blank of those cells is a small function named in the skeleton and the notebook; it is judged on the
notebook's own inputs (computed here the way the notebook's cells compute them) against the printed values,
and on inputs of other sizes by the hidden checks. A step gets the grader's inputs, never the student's result
of an earlier step, so one mistake costs one step.
"""
from __future__ import annotations

from typing import Any

import torch
import torch.nn as nn

from assignments.attention.common import INPUTS
from autograder.checks import expect_close, expect_shape, expect_tensor, fail
from autograder.proxy import FunctionCall
from autograder.rng import manual_seed

T = torch.tensor

# ---------------------------------------------------------------------------------------------- the notebook's values

QUERY_2 = T([0.4306, 1.4551])  # 3.4.1, after torch.manual_seed(123)
ATTN_SCORE_22 = T(1.8524)
ATTN_SCORES_2 = T([1.2705, 1.8524, 1.8111, 1.0795, 0.5577, 1.5440])
ATTN_WEIGHTS_2 = T([0.1500, 0.2264, 0.2199, 0.1311, 0.0906, 0.1820])
CONTEXT_VEC_2 = T([0.3061, 0.8210])

MASK_SIMPLE = torch.tril(torch.ones(6, 6))  # 3.5.1, printed as ones on and below the diagonal
MASKED_SIMPLE = T([[0.1921, 0.0000, 0.0000, 0.0000, 0.0000, 0.0000],
                   [0.2041, 0.1659, 0.0000, 0.0000, 0.0000, 0.0000],
                   [0.2036, 0.1659, 0.1662, 0.0000, 0.0000, 0.0000],
                   [0.1869, 0.1667, 0.1668, 0.1571, 0.0000, 0.0000],
                   [0.1830, 0.1669, 0.1670, 0.1588, 0.1658, 0.0000],
                   [0.1935, 0.1663, 0.1666, 0.1542, 0.1666, 0.1529]])
MASKED_SIMPLE_NORM = T([[1.0000, 0.0000, 0.0000, 0.0000, 0.0000, 0.0000],
                        [0.5517, 0.4483, 0.0000, 0.0000, 0.0000, 0.0000],
                        [0.3800, 0.3097, 0.3103, 0.0000, 0.0000, 0.0000],
                        [0.2758, 0.2460, 0.2462, 0.2319, 0.0000, 0.0000],
                        [0.2175, 0.1983, 0.1984, 0.1888, 0.1971, 0.0000],
                        [0.1935, 0.1663, 0.1666, 0.1542, 0.1666, 0.1529]])
_INF = -torch.inf
MASKED = T([[0.2899, _INF, _INF, _INF, _INF, _INF],
            [0.4656, 0.1723, _INF, _INF, _INF, _INF],
            [0.4594, 0.1703, 0.1731, _INF, _INF, _INF],
            [0.2642, 0.1024, 0.1036, 0.0186, _INF, _INF],
            [0.2183, 0.0874, 0.0882, 0.0177, 0.0786, _INF],
            [0.3408, 0.1270, 0.1290, 0.0198, 0.1290, 0.0078]])

# The names the skeleton and the notebook define for these steps, in notebook order.
STEP_FUNCTIONS = ("qkv_weights", "query_key_value", "dot_score", "query_scores", "scaled_softmax", "weighted_sum",
                  "simple_mask", "apply_simple_mask", "renormalize", "mask_future", "apply_dropout")


# ---------------------------------------------------------------------------------------------- the notebook's inputs

def notebook_weights(seed: int = 123, d_in: int = 3, d_out: int = 2) -> tuple[torch.Tensor, ...]:
    """W_query, W_key, W_value as the 3.4.1 cell draws them after torch.manual_seed(seed)."""
    g = torch.Generator().manual_seed(seed)  # the same numbers as torch.manual_seed(seed) then torch.rand
    return tuple(torch.rand(d_in, d_out, generator=g) for _ in range(3))


def notebook_scores_351() -> tuple[torch.Tensor, torch.Tensor]:
    """attn_scores and attn_weights of 3.5.1: sa_v2's query and key layers (SelfAttention_v2(3, 2), seed 789)."""
    with torch.random.fork_rng(devices=[]), torch.no_grad():  # the grader's own random state is left alone
        manual_seed(789)
        W_query, W_key = nn.Linear(3, 2, bias=False), nn.Linear(3, 2, bias=False)  # W_value comes after them
        scores = W_query(INPUTS) @ W_key(INPUTS).T
    return scores, torch.softmax(scores / 2 ** 0.5, dim=-1)


# ---------------------------------------------------------------------------------------------- calling the student

def fn(name: str, *args: Any, seed: int | None = None, what: str = "") -> FunctionCall:
    """The call name(*args) as call() makes it (for Submission.ahead: a check's calls sent together)."""
    return FunctionCall(name, args, {}, seed, what or f"{name}(...)", None)


def call(sub, name: str, *args: Any, seed: int | None = None, what: str = "") -> Any:
    """name(*args) in the worker, after torch.manual_seed(seed) when a seed is given."""
    return sub.call_function(fn(name, *args, seed=seed, what=what))


def qkv_weights_call(seed: int, d_in: int, d_out: int) -> FunctionCall:
    return fn("qkv_weights", d_in, d_out, seed=seed, what=f"torch.manual_seed({seed}); qkv_weights({d_in}, {d_out})")


def query_key_value_call(x: torch.Tensor, W: tuple[torch.Tensor, ...], label: str) -> FunctionCall:
    return fn("query_key_value", x, *W, what=f"query_key_value({label}, W_query, W_key, W_value)")


def dropout_call(x: torch.Tensor, p: float, seed: int, label: str) -> FunctionCall:
    return fn("apply_dropout", x, p, seed=seed, what=f"torch.manual_seed({seed}); apply_dropout({label}, {p})")


def triple(got: Any, what: str) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
    """A function that returns three tensors (a tuple or a list of them)."""
    if type(got) not in (tuple, list) or len(got) != 3:
        desc = getattr(got, "description", None) or type(got).__name__
        fail(f"`{what}` should return three tensors (query, key, value order); it returned {desc}.",
             f"`{what}`는 텐서 세 개(query, key, value 순서)를 반환해야 하는데 {desc}을(를) 반환했습니다.")
    return tuple(expect_tensor(t, f"{what}[{i}]") for i, t in enumerate(got))  # type: ignore[return-value]


def check_qkv_weights(sub, seed: int, d_in: int, d_out: int) -> None:
    c = qkv_weights_call(seed, d_in, d_out)
    what = c.what
    got = triple(sub.call_function(c), what)
    want = notebook_weights(seed, d_in, d_out)
    for name, g, w in zip(("W_query", "W_key", "W_value"), got, want):
        expect_close(g, w, f"{what} -> {name}")


def check_query_key_value(sub, x: torch.Tensor, W: tuple[torch.Tensor, ...], label: str) -> tuple:
    c = query_key_value_call(x, W, label)
    what = c.what
    got = triple(sub.call_function(c), what)
    for name, g, w in zip(("query", "key", "value"), got, W):
        expect_close(g, x @ w, f"{what} -> {name}")
    return got


def check_dropout(sub, x: torch.Tensor, p: float, seed: int, label: str) -> None:
    """The student's dropout against the grader's own torch under the same seed (the masks differ between torch
    versions, so the notebook's printout is not the reference here); the output must depend on the seed."""
    c = dropout_call(x, p, seed, label)
    what = c.what
    got = expect_tensor(sub.call_function(c), what)
    with torch.random.fork_rng(devices=[]):
        manual_seed(seed)
        want = nn.Dropout(p)(x)
    expect_shape(got, tuple(want.shape), what)
    if torch.equal(got, x):
        fail(f"`{what}` returned its input unchanged: nn.Dropout must be in training mode (as it is when "
             "created) and applied to x.",
             f"`{what}`가 입력을 그대로 반환했습니다. nn.Dropout은 (만들었을 때처럼) 학습 모드여야 하고 x에 "
             "적용해야 합니다.")
    expect_close(got, want, what)
