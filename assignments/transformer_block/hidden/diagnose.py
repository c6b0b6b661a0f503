"""Names a learner's bug in transformer_block: when a comparison fails, each bug version of the reference
(bugs.py) runs with the student's weights and inputs, and one that gives the student's output exactly is the
diagnosis (autograder/bugtable.py)."""
from __future__ import annotations

from typing import Any, Callable

from assignments.transformer_block.common import as_template
from assignments.transformer_block.hidden import bugs
from autograder.bugtable import Call, diagnose_function, diagnose_module
from autograder.checks import DIAGNOSERS, diagnosis
from autograder.messages import Message
from reference import transformer_block as R


def diagnose(*, sub: Any, until: float, target: Any, got: Any, call: Call) -> Message | None:
    """The known bug that explains `target` (a module handle, or the name of a top-level function) having given
    `got` when called as `call` says, or None. The student's code is not run again; only weights are read."""
    if isinstance(target, str):
        return diagnose_function(bugs.TABLE, until, target, call.inputs, got)
    # (the student's weights under the template's names: layers named otherwise, a fused query/key/value projection)
    rename = (lambda params: as_template(target, params)) if target.renamed or target.fused else None
    return diagnose_module(bugs.TABLE, R, until, target, got, call, rename=rename)


def explain(sub: Any, target: Any, *inputs: Any, mode: str | None = "eval", seed: int | None = None,
            **kwargs: Any) -> Callable[[Any], Message | None]:
    """For expect_close(explain=...): the diagnosis of `target(*inputs, **kwargs)` having given the value compared."""
    call = Call(inputs, kwargs, mode, seed)
    return lambda got: diagnosis("transformer_block", sub, target=target, got=got, call=call)


DIAGNOSERS["transformer_block"] = diagnose
