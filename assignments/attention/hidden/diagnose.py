"""Names a learner's bug: when a comparison fails, each bug version of the reference (bugs.py) runs with the
student's weights and inputs, and one that gives the student's output exactly is the diagnosis."""
from __future__ import annotations

import time
from typing import Any

import torch

from assignments.attention.hidden import bugs
from autograder.checks import DIAGNOSERS
from autograder.messages import Message
from autograder.rng import manual_seed
from reference import attention as R


def same(a: Any, b: Any) -> bool:
    """Equal up to float rounding, with nan and inf in the same places: another summation order still matches,
    another bug does not."""
    if type(a) is not torch.Tensor or type(b) is not torch.Tensor or a.shape != b.shape:
        return False
    return bool(torch.allclose(a.detach().double(), b.detach().double(), rtol=1e-4, atol=1e-5, equal_nan=True))


def named(v: bugs.Variant) -> Message:
    assert v.cause is not None
    return Message(f"Your output is exactly what the reference gives when {v.cause.en}.",
                   f"출력이 참조 구현에 다음 실수를 넣었을 때의 결과와 정확히 같습니다: {v.cause.ko}.")


def build(mod: Any, ctor: tuple, params: dict[str, torch.Tensor] | None) -> torch.nn.Module | None:
    """`ctor`'s class from `mod`, built after the same seed, with `params` (the student's weights) copied in when
    given; None when the weights do not fit (other names or shapes: no diagnosis then)."""
    cls, args, kwargs, seed = ctor
    manual_seed(seed if seed is not None else 0)
    m = getattr(mod, cls)(*args, **kwargs)
    if params is not None:
        own = dict(m.named_parameters())
        if set(own) != set(params) or any(tuple(p.shape) != tuple(params[n].shape) for n, p in own.items()):
            return None
        with torch.no_grad():
            for n, p in own.items():
                p.copy_(params[n])
    return m


def output(mod: Any, ctor: tuple, params: dict | None, inputs: tuple, mode: str | None, seed: int | None) -> Any:
    """What `mod`'s version of the student's module gives on `inputs`, called as the check called it."""
    try:
        with torch.random.fork_rng(devices=[]):  # the grader's own random state stays as the checks left it
            m = build(mod, ctor, params)
            if m is None:
                return None
            m.train(mode == "train")
            if seed is not None:
                manual_seed(seed)
            with torch.no_grad():
                return m(*inputs)
    except Exception:  # a bug version that cannot run with these arguments names nothing
        return None


def diagnose_module(until: float, target: Any, inputs: tuple, mode: str | None, seed: int | None,
                    got: Any) -> Message | None:
    ctor = target.ctor
    if ctor is None or not hasattr(R, ctor[0]):
        return None
    candidates = [v for v in bugs.LIBRARY if ctor[0] in v.targets]
    if not candidates:
        return None
    params = target.state()["params"]
    # With the student's weights the reference either gives their output (their forward is right: look for a bug
    # in how weights are created, built from the same seed) or it does not (look for a bug in forward).
    forward_right = same(output(R, ctor, params, inputs, mode, seed), got)
    if forward_right and same(output(R, ctor, None, inputs, mode, seed), got):
        return None  # the student's module is the reference's: the failure is not one of these bugs
    for v in candidates:
        if time.monotonic() > until:
            return None
        if v.init == forward_right and same(output(bugs.module(v), ctor, None if v.init else params, inputs, mode,
                                                   seed), got):
            return named(v)
    return None


def diagnose_function(until: float, name: str, inputs: tuple, got: Any) -> Message | None:
    candidates = [v for v in bugs.LIBRARY if name in v.targets]
    for v in candidates:
        if time.monotonic() > until:
            return None
        try:
            out = getattr(bugs.module(v), name)(*inputs)
        except Exception:
            continue
        if same(out, got):
            return named(v)
    return None


def diagnose(*, sub: Any, until: float, target: Any, got: Any, inputs: tuple = (), mode: str | None = "eval",
             seed: int | None = None) -> Message | None:
    """The known bug that explains `target(*inputs)` (a module handle, or the name of a function) having given
    `got`, or None. The student's code is not run again; only a module's weights are read."""
    if type(got) is not torch.Tensor:
        return None
    if isinstance(target, str):
        return diagnose_function(until, target, inputs, got)
    return diagnose_module(until, target, inputs, mode, seed, got)


DIAGNOSERS["attention"] = diagnose
