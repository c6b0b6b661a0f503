"""Names a learner's bug: when a comparison fails, each bug version of the reference (bugs.py) runs with the
student's weights and inputs, and one that gives the student's output exactly is the diagnosis (the mechanism is
autograder/bugtable.py)."""
from __future__ import annotations

from typing import Any

import torch

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
                           candidates=[v for v in bugs.LIBRARY if ctor[0] in v.targets])


DIAGNOSERS["attention"] = diagnose
