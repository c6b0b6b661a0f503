"""Standard streams every command can rely on, whatever its caller left: descriptors 0-2 open, text that always
encodes."""
from __future__ import annotations

import os
import sys


def prepare() -> None:
    """Open /dev/null on any of descriptors 0-2 that the caller closed (`grade batch >&-`, a service with no stdin),
    and let stdout and stderr replace what the terminal's encoding cannot show.

    A closed standard descriptor is the lowest free number: the next pipe or socket made gets it, and a child that
    puts /dev/null or its log on its own stdin, stdout or stderr then overwrites that channel (correct files were
    graded 0, or as the grader's failure, with stdout or stdin closed). A Latin-1 or EUC-KR terminal cannot encode
    every character of a summary table (`…`, Korean names): the table must still be printed, not stop the command
    after the grading was done."""
    for fd in (0, 1, 2):
        try:
            os.fstat(fd)
        except OSError:
            null = os.open(os.devnull, os.O_RDWR)  # the lowest free number, so this one or a lower closed one
            if null != fd:
                os.dup2(null, fd)
                os.close(null)
            os.set_inheritable(fd, True)  # (os.open's descriptors are not: children must have it too)
    for name, fd, mode in (("stdin", 0, "r"), ("stdout", 1, "w"), ("stderr", 2, "w")):
        stream = getattr(sys, name, None)
        if stream is None:  # Python found the descriptor closed at start-up
            setattr(sys, name, open(fd, mode, closefd=False, errors="replace", buffering=1 if mode == "w" else -1))
        elif mode == "w" and hasattr(stream, "reconfigure"):
            try:
                stream.reconfigure(errors="replace")
            except (ValueError, OSError, TypeError):
                pass
