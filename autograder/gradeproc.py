"""A grader process for `grade batch`: reads jobs as JSON lines on stdin, reports each result on its result fd.

It imports pytest, torch and the checks once, then grades job after job in one pytest session; student code
only ever runs in workers forked from this process's own zygote.
"""
from __future__ import annotations

import json
import os
import sys
import traceback
from dataclasses import replace
from pathlib import Path
from typing import Callable, Iterator

from . import assignment as assignments
from .messages import Message
from .plugin import Job
from .sandbox import Limits
from .results import SubmissionResult


def read_jobs(stream, begin: Callable[[str], None] = lambda _s: None) -> Iterator[Job]:
    for line in stream:
        if not line.strip():
            continue
        d = json.loads(line)
        err = d.get("error")
        begin(d["student"])  # this process is ready and starts on it: the batch's watchdog counts from here
        note = d.get("note")
        yield Job(d["student"], Path(os.fsdecode(bytes.fromhex(d["path"]))) if d.get("path") else None,
                  Message(**err) if err else None,
                  Message(**note) if note else None, d.get("options"))


def main(argv: list[str] | None = None) -> None:
    """argv: as on the command line (batch.py); the zygote passes it to a grader process it forked."""
    argv = sys.argv if argv is None else argv
    name, fd = argv[1], int(argv[3])  # argv[2] is the slot number, a label for ps
    timeout = float(argv[4]) if len(argv) > 4 and argv[4] else None
    out = os.fdopen(fd, "w", buffering=1, encoding="utf-8")
    a = assignments.load(name)
    if len(argv) > 5 and argv[5]:
        a = replace(a, options=json.loads(argv[5]))  # as given to `grade batch` (possibly overridden)
    if len(argv) > 6 and argv[6]:
        a = replace(a, limits=Limits(**json.loads(argv[6])))  # likewise
    if timeout:
        a = replace(a, limits=replace(a.limits, total_timeout=timeout))

    def report(r: SubmissionResult) -> None:
        # ASCII on the wire: a stray surrogate (from a file name) must not break the pipe's UTF-8 encoding.
        out.write(json.dumps({"result": r.to_dict()}) + "\n")

    cpu = int(argv[8]) if len(argv) > 8 and argv[8] else None
    if cpu is not None:
        try:
            os.sched_setaffinity(0, {cpu})
        except OSError:
            cpu = None
    zygote = None
    if len(argv) > 7 and argv[7]:  # the zygote `grade batch` started for all its grader processes
        import socket
        from .sandbox import Zygote
        zygote = Zygote(sock=socket.socket(fileno=int(argv[7])))
    if zygote is not None and cpu is not None:
        zygote.cpus = [cpu]  # its workers run on this grader's core
    import torch
    torch.set_num_threads(1)  # N grader processes and N workers share the cores; intra-op threads only contend
    from .runner import grade
    try:
        # A private copy of stdin: pytest may swap sys.stdin and fd 0 while tests run.
        jobs = os.fdopen(os.dup(0), encoding="utf-8")
        grade(a, read_jobs(jobs, lambda s: out.write(json.dumps({"begin": s}) + "\n")),
              report, zygote=zygote)
    except BaseException:
        out.write(json.dumps({"fatal": traceback.format_exc()[-8000:]}) + "\n")
        raise
    out.flush()
    os._exit(0)  # every result is reported; tearing down torch would only delay the batch's end


if __name__ == "__main__":
    main()
