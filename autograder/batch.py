"""`grade batch`: grade a folder of submissions with N grader processes; one result file each, then a CSV.

This process never imports torch or the checks: it hands jobs to grader processes (gradeproc.py), writes each
result atomically as soon as it arrives, and survives a grader process that dies.
"""
from __future__ import annotations

import json
import os
import queue
import subprocess
import sys
import threading
import time
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Callable

from . import discover
from .assignment import PROJECT_ROOT, Assignment
from .messages import Message
from .plugin import Job
from .safetext import clean, shown_name
from .results import SubmissionResult, csv_text, read_result, write_atomic, write_result

if TYPE_CHECKING:
    from .exam import Plan

WATCHDOG_GRACE = 60.0  # seconds past the per-submission limit before a grader process is presumed stuck


@dataclass
class Slot:
    index: int
    proc: subprocess.Popen
    job: Job | None = None
    since: float = 0.0
    alive: bool = True


@dataclass
class Summary:
    results: list[SubmissionResult] = field(default_factory=list)
    graded: int = 0
    reused: int = 0
    seconds: float = 0.0


def _start(slot: int, a: Assignment, timeout: float | None, events: queue.Queue) -> Slot:
    r, w = os.pipe()
    code = (f"import sys; sys.path.insert(0, {str(PROJECT_ROOT)!r}); "
            "from autograder.gradeproc import main; main()")
    # The options and limits travel along: a caller may grade with an Assignment whose [options] or [limits]
    # it has overridden.
    proc = subprocess.Popen([sys.executable, "-I", "-c", code, a.name, str(slot), str(w),
                             "" if timeout is None else str(timeout), json.dumps(a.options),
                             json.dumps(asdict(a.limits))],
                            stdin=subprocess.PIPE, pass_fds=[w], cwd=str(PROJECT_ROOT), text=True,
                            stdout=subprocess.DEVNULL)
    os.close(w)

    def pump() -> None:
        with os.fdopen(r, encoding="utf-8") as f:
            for line in f:
                events.put((slot, line))
        events.put((slot, None))
    threading.Thread(target=pump, daemon=True).start()
    return Slot(slot, proc)


def _crashed(job: Job, a: Assignment, detail: str) -> SubmissionResult:
    return SubmissionResult(
        student=job.student, submission=shown_name(job.path.name) if job.path else "", assignment=a.name,
        questions=a.question_ids, staff=detail,
        error=Message("The autograder itself failed while grading this submission; your instructor has the "
                      "details and will regrade it.",
                      "이 제출물을 채점하는 중 채점기 자체에 오류가 발생했습니다. 담당 교수자가 확인 후 다시 채점합니다."))


class Progress:
    def __init__(self, total: int, echo: Callable[[str], None], tty: bool):
        self.total, self.echo, self.tty = total, echo, tty
        self.done = 0
        self.start = time.monotonic()

    def update(self, r: SubmissionResult) -> None:
        self.done += 1
        elapsed = time.monotonic() - self.start
        rate = self.done / elapsed if elapsed > 0 else 0.0
        eta = (self.total - self.done) / rate if rate > 0 else 0.0
        status = "could not be graded" if r.error else f"{r.score:g}/{r.max_score:g}"
        line = (f"[{self.done:>{len(str(self.total))}}/{self.total}] {rate:5.2f}/s  ETA {eta:5.0f}s  "
                f"{r.student}: {status}")
        self.echo(("\r\033[K" + line) if self.tty else line)

    def close(self) -> None:
        if self.tty and self.done:
            self.echo("\n")


def main(*, submissions: Path, out: Path, assignment: Assignment, workers: int = 2, timeout: float | None = None,
         lang: str = "en", force: bool = False, echo: Callable[[str], None] = print, tty: bool = False,
         only: list[str] | None = None, exam: "Plan | None" = None) -> Summary:
    """Grade every submission (only: regrade just these ids, keep the other results as they are; exam: each
    student against their own variant, see exam.py)."""
    started = time.monotonic()
    found = discover.entries(submissions.absolute(), assignment)  # grader processes run in the project folder
    jobs = [job for job, _origin in found]
    keep = _others(jobs, only, out) if only is not None else set()
    force = force or only is not None  # the named ones are regraded in place
    origins = {job.student: origin for job, origin in found}
    paths = {job.student: job.path for job in jobs}
    for job in jobs if exam is not None else []:
        exam.prepare(job)  # each student's own variant (options["variant"]), or "not on the roster"
    out.mkdir(parents=True, exist_ok=True)
    summary = Summary()
    todo: list[Job] = []
    base = fingerprint(assignment)
    grader_of = lambda job: base + ("-" + exam.tag(job) if exam is not None else "")  # noqa: E731
    for job in jobs:
        if job.student in keep:
            kept = read_result(out / f"{job.student}.json")
            if kept is not None:  # stays in the CSVs as it is, whatever changed since
                kept.origin = origins.get(job.student, kept.origin)
                summary.results.append(kept)
                summary.reused += 1
            continue
        prev = None if force else read_result(out / f"{job.student}.json")
        # Reuse only what the same checks and options produced for the same file.
        shown = shown_name(job.path.name) if job.path else ""
        if prev is not None and prev.grader == grader_of(job) and prev.submission == shown \
                and (job.path is None or prev.sha256 == _sha(job.path)):
            prev.origin = origins.get(job.student, {})
            summary.results.append(prev)
            summary.reused += 1
        else:
            todo.append(job)
    if summary.reused:
        echo(f"{summary.reused} submission(s) already graded in {out}; skipping them (use --force to regrade).\n")

    progress = Progress(len(todo), echo, tty)
    events: queue.Queue = queue.Queue()
    limit = (timeout or assignment.limits.total_timeout) + WATCHDOG_GRACE
    slots: dict[int, Slot] = {}
    pending = list(reversed(todo))

    graders = {job.student: grader_of(job) for job in jobs}

    def finish(r: SubmissionResult) -> None:
        r.origin = origins.get(r.student, {})
        r.grader = graders.get(r.student, base)
        if exam is not None:
            exam.stamp(r, r.origin, paths.get(r.student))
        try:
            write_result(out, r, lang)
        except Exception as e:  # a full or read-only results disk costs this file, never the batch or the CSV
            r.staff = (r.staff + "\n" if r.staff else "") + f"result file could not be written: {e}"
            echo(f"warning: {r.student}.json could not be written ({e}); its row is still in scores.csv\n")
        summary.results.append(r)
        summary.graded += 1
        progress.update(r)

    def dispatch(slot: Slot) -> None:
        if not pending:
            slot.job = None
            try:
                slot.proc.stdin.close()
            except OSError:
                pass
            return
        job = pending.pop()
        slot.job, slot.since = job, time.monotonic()
        line = {"student": job.student, "path": str(job.path) if job.path else None,
                "error": {"en": job.error.en, "ko": job.error.ko} if job.error else None, "options": job.options}
        try:
            # ASCII: a path is bytes in surrogateescape form (e.g. a CP949 name), which UTF-8 cannot encode.
            slot.proc.stdin.write(json.dumps(line) + "\n")
            slot.proc.stdin.flush()
        except OSError:
            pass  # the process died; its EOF event will requeue nothing and report the job

    try:
        for i in range(min(max(1, workers), len(todo))):
            slots[i] = _start(i, assignment, timeout, events)
            dispatch(slots[i])
        while any(s.alive for s in slots.values()):
            try:
                idx, line = events.get(timeout=1.0)
            except queue.Empty:
                for s in slots.values():  # a grader process stuck past every limit is replaced
                    if s.alive and s.job is not None and time.monotonic() - s.since > limit:
                        s.proc.kill()
                continue
            slot = slots[idx]
            if line is None:  # the grader process ended
                slot.alive = False
                slot.proc.wait()
                if slot.job is not None:
                    finish(_crashed(slot.job, assignment, f"grader process exited with {slot.proc.returncode}"))
                if pending:
                    slots[idx] = _start(idx, assignment, timeout, events)
                    dispatch(slots[idx])
                continue
            try:
                msg = json.loads(line)
                got = SubmissionResult.from_dict(msg["result"]) if "result" in msg else None
            except Exception as e:  # a garbled line costs that job, not the batch
                if slot.job is not None:
                    finish(_crashed(slot.job, assignment, f"unreadable report from the grader process: {e!r}"))
                dispatch(slot)
                continue
            if got is not None:
                finish(got)
                dispatch(slot)
            elif "fatal" in msg and slot.job is not None:
                finish(_crashed(slot.job, assignment, msg["fatal"]))
                slot.job = None
    finally:
        for s in slots.values():
            if s.proc.poll() is None:
                s.proc.kill()
                s.proc.wait()
        progress.close()
        # Always, even when the loop above failed: the CSV holds every result this run got.
        write_atomic(out / "scores.csv", csv_text(summary.results, assignment.question_ids))
    summary.seconds = time.monotonic() - started
    from .results import grades_csv_text
    write_atomic(out / "grades.csv", grades_csv_text(summary.results, assignment.question_ids))  # for an LMS
    return summary


def _others(jobs: list[Job], only: list[str], out: Path) -> set[str]:
    """--only: the ids NOT named, whose existing results are kept as they are; an unknown id is an error."""
    from .errors import UsageError
    from .messages import near_miss
    ids = {job.student for job in jobs}
    unknown = [i for i in only if i not in ids]
    if unknown:
        hints = [f"{i} (did you mean {near_miss(i, sorted(ids))}?)" if near_miss(i, sorted(ids)) else i
                 for i in unknown]
        raise UsageError(f"--only: no submission with id {', '.join(hints)}; the ids are the result file names "
                         f"in {out}")
    return ids - set(only)


def fingerprint(a: Assignment) -> str:
    """Hash of everything that decides a score: the assignment's files (checks, toml), options and limits."""
    import hashlib
    h = hashlib.sha256(json.dumps([a.options, repr(a.limits)], sort_keys=True, default=str).encode())
    files = {p for d in (a.dir, *a.private) if d.is_dir() for p in d.rglob("*")}  # reference code included
    for p in sorted(files):
        if p.is_file() and p.suffix in (".py", ".toml") and "__pycache__" not in p.parts:
            h.update(os.path.relpath(p, a.dir.parent.parent).encode() + b"\0" + p.read_bytes())
    return h.hexdigest()[:16]


def _sha(path: Path) -> str:
    import hashlib
    try:
        with open(path, "rb") as f:
            return hashlib.file_digest(f, "sha256").hexdigest()
    except OSError:
        return ""


def summary_table(results: list[SubmissionResult], a: Assignment) -> str:
    """One line per student: total and per-question scores, errors in words."""
    qs = a.question_ids
    heads = ["student", "total", *qs]
    rows = []
    for r in sorted(results, key=lambda r: r.student):
        per_q = r.by_question()
        rows.append([clean(r.student, True), f"{r.score:g}/{r.max_score:g}",
                     *[f"{per_q.get(q, (0, 0))[0]:g}" for q in qs]]
                    + (["(" + clean(r.error.en, True)[:60] + ")"] if r.error else []))
    widths = [max(len(str(x)) for x in col) for col in zip(heads, *[row[:len(heads)] for row in rows])]
    fmt = lambda row: "  ".join(str(x).ljust(w) for x, w in zip(row, widths)) + (  # noqa: E731
        "  " + row[len(heads)] if len(row) > len(heads) else "")
    return "\n".join([fmt(heads)] + [fmt(row) for row in rows])
