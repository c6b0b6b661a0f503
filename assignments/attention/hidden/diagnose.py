"""Names a learner's bug: when a comparison fails, each bug version of the reference (bugs.py) runs with the
student's weights and inputs, and one that gives the student's output exactly is the diagnosis (the mechanism is
autograder/bugtable.py)."""
from __future__ import annotations

import functools
from typing import Any

import torch

from assignments.attention.common import match_params, piece, target
from assignments.attention.hidden import bugs
from autograder.bugtable import Call, diagnose_function, diagnose_module
from autograder.checks import DIAGNOSERS
from autograder.messages import Message
from reference import attention as R


def diagnose(*, sub: Any, until: float, target: Any, got: Any, inputs: tuple = (), mode: str | None = "eval",
             seed: int | None = None) -> Message | None:
    """The known bug that explains `target(*inputs)` (a module handle, or the name of a function) having given
    `got`, or None. The student's code is not run again; only a module's weights are read. The bugs tried are
    those that change that very class or function."""
    if type(got) is not torch.Tensor:
        return None
    if isinstance(target, str):
        return diagnose_function(bugs.TABLE, until, target, inputs, got,
                                 candidates=[v for v in bugs.LIBRARY if target in v.targets])
    ctor = target.ctor
    if ctor is None or not hasattr(R, ctor[0]):
        return None
    return diagnose_module(bugs.TABLE, R, until, target, got, Call(inputs, {}, mode, seed),
                           candidates=[v for v in bugs.LIBRARY if ctor[0] in v.targets],
                           rename=functools.partial(notebook_names, ctor), pairs=PAIRS)


# Pairs of bugs tried when no single bug explains a module's output (learners round rl11: masked_fill's result thrown
# away and out_proj never applied, in one MultiHeadAttention). Today's library has at most 14 bugs per class, so
# every pair of those that change the output fits under this cap (91 for MultiHeadAttention).
PAIRS = 120


def notebook_names(ctor: tuple, params: dict) -> dict:
    """The student's weights under the reference's names where their layers are named otherwise (w_queries,
    w_keys, w_values for W_query, W_key, W_value: match_params, as the checks that copy the reference's weights in
    read them); as they are where the names already agree or no one-to-one match exists. Learners round rl11: a
    MultiHeadAttention with its own projection names whose masked_fill result was thrown away was only told
    "differs"; with the notebook's names the same code was told why."""
    try:
        with torch.random.fork_rng(devices=[]):  # (the grader's random state stays as the checks left it)
            ref = getattr(R, ctor[0])(*ctor[1], **ctor[2])
    except Exception:  # (the constructor call is the student's; the reference may refuse it)
        return params
    want = [(n, tuple(p.shape)) for n, p in ref.named_parameters()]
    if {n for n, _ in want} == set(params) or not all(type(t) is torch.Tensor for t in params.values()):
        return params
    names = match_params([(n, tuple(t.shape)) for n, t in params.items()], want)
    if not names:
        return _extra_layer_as_out_proj(params, {n for n, _ in want})
    return {n: piece(params[target(names.get(n, n))], names.get(n, n)) for n, _ in want}


def _extra_layer_as_out_proj(params: dict, want: set[str]) -> dict:
    """The student's weights with the one layer the reference's class lacks read as `out_proj` (the table's
    wrapper_out_proj: a wrapper that passes its concatenated heads through a projection of its own). Learners round
    rl15: a wrapper's `self.out_projection` kept its weights under that name, no bug version fitted them, and the
    student was told only that the values differ. As they are where the names agree or more than one layer is extra."""
    extra = sorted(n for n in params if n not in want)
    layers = {n.rpartition(".")[0] for n in extra}
    if "out_proj.weight" in want or len(layers) != 1 or not set(want) <= set(params):
        return params
    layer = layers.pop()
    if not layer or not {f"{layer}.weight"} <= set(extra) <= {f"{layer}.weight", f"{layer}.bias"}:
        return params
    return {(f"out_proj.{n.rpartition('.')[2]}" if n in extra else n): t for n, t in params.items()}


DIAGNOSERS["attention"] = diagnose
