"""Names a learner's bug in mha_intermediates: when a comparison fails, each bug version of the reference
(bugs.py) runs with the student's weights and inputs, and one that gives the student's output exactly is the
diagnosis (autograder/bugtable.py)."""
from __future__ import annotations

from typing import Any

from assignments.mha_intermediates.common import ALIAS, CLASS
from assignments.mha_intermediates.hidden import bugs
from autograder.bugtable import Call, diagnose_module
from autograder.checks import DIAGNOSERS
from autograder.messages import Message
from reference import mha_intermediates as R


def diagnose(*, sub: Any, until: float, target: Any, got: Any, call: Call, scale: str | None = None) -> Message | None:
    """The known bug that explains the student's module `target` having given `got` (one intermediate tensor, as
    `call.pick` takes it from forward's dict), or None. `scale` is the assignment's option, set on every version
    of the reference as the checks set it on the reference; the other convention is tried next, because mixing
    the two up is common and is charged on its own (the scores check says so), so a later step's bug is still
    named in a submission that also scales the other way."""
    ctor = target.ctor
    cls = CLASS if ctor is not None and ctor[0] == ALIAS else None  # the blog notes' name for the same class
    for convention in ([scale, OTHER[scale]] if scale in OTHER else [None]):
        def prepare(m: Any, convention: str | None = convention) -> None:
            if convention is not None and hasattr(m, "scale"):
                m.scale = convention
        named = diagnose_module(bugs.TABLE, R, until, target, got, call, cls=cls, prepare=prepare)
        if named is not None:
            return named
    return None


OTHER = {"full": "head", "head": "full"}


DIAGNOSERS["mha_intermediates"] = diagnose
