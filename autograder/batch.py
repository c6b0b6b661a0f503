"""`grade batch`: grade a folder of submissions with N grader processes; one result file each, then a CSV.

This process never imports torch or the checks: it hands jobs to grader processes (gradeproc.py), writes each
result atomically as soon as it arrives, and survives a grader process that dies.
"""
from __future__ import annotations

import json
import os
import queue
import re
import select
import shlex
import signal
import socket
import subprocess
import sys
import threading
import time
from dataclasses import asdict, dataclass, field, replace
from pathlib import Path
from typing import TYPE_CHECKING, Any, Callable

from . import discover
from .assignment import PROJECT_ROOT, Assignment
from .errors import UsageError
from .messages import GRADER_FAILED, Message
from .jobs import Job
from .results import (SubmissionResult, columns, csv_text, grades_csv_text, one_line, read_result, read_text_file,
                      write_atomic, write_result)
from .safetext import clean, shown_name

if TYPE_CHECKING:
    from .exam import Plan

WATCHDOG_GRACE = 60.0  # seconds past the per-submission limit before a grader process is presumed stuck
STARTUP_LIMIT = 600.0  # seconds a grader process may take to import torch, pytest and the checks
# From this many submissions on, the zygote moves onto huge pages (sandbox.zygote_main): the move costs about 0.3
# CPU-seconds and saves about 12 CPU-milliseconds a submission (one submission on Gradescope: not worth it).
HUGE_PAGES_FROM = 30


@dataclass
class Slot:
    index: int
    proc: "subprocess.Popen | ForkedGrader"
    job: Job | None = None
    since: float = 0.0
    begun: bool = False  # the grader process reported that it started on `job` (it is past its start-up)
    alive: bool = True


@dataclass
class Summary:
    results: list[SubmissionResult] = field(default_factory=list)
    graded: int = 0
    reused: int = 0
    seconds: float = 0.0
    regraded: dict[str, int] = field(default_factory=dict)  # why earlier results were not reused -> how many
    kept: int = 0  # of `reused`: results left as they were because --only did not name them
    set_aside: list[str] = field(default_factory=list)  # ids with a result file here and no submission (_set_aside)
    grader_failed: int = 0  # of `graded`: jobs that failed in the grader itself (messages.GRADER_FAILED)

    def reuse_note(self, lang: str = "en") -> str:
        """What was reused and why, and why the rest was (re)graded, in one line."""
        ko = lang == "ko"
        parts = []
        if self.reused - self.kept:
            parts.append(f"{self.reused - self.kept}개 재사용 (파일, 검사, 옵션, 제한, 언어가 같음)" if ko else
                         f"reused {self.reused - self.kept} (same file, checks, options, limits and language)")
        if self.kept:
            parts.append(f"{self.kept}개는 그대로 둠 (--only에 없음)" if ko else
                         f"kept {self.kept} as they were (not named by --only)")
        if self.regraded.get("new"):
            parts.append(f"새 제출물 {self.regraded['new']}개" if ko else f"{self.regraded['new']} new")
        others = {why: n for why, n in self.regraded.items() if why != "new"}
        if others:
            listed = ", ".join(f"{n} ({_why_ko(why) if ko else why})" for why, n in sorted(others.items()))
            parts.append(f"다시 채점: {listed}" if ko else f"regraded {listed}")
        return "; ".join(parts)


def _start(slot: int, a: Assignment, timeout: float | None, events: queue.Queue,
           zygote_sock: "socket.socket | None" = None, cpu: int | None = None) -> Slot:
    r, w = os.pipe()
    from .sandbox import path_prelude
    code = path_prelude(str(PROJECT_ROOT)) + "from autograder.gradeproc import main; main()"
    # The options and limits travel along: a caller may grade with an Assignment whose [options] or [limits]
    # it has overridden.
    proc = subprocess.Popen([sys.executable, "-I", "-c", code, a.name, str(slot), str(w),
                             "" if timeout is None else str(timeout), json.dumps(a.options),
                             json.dumps(asdict(a.limits)), str(zygote_sock.fileno()) if zygote_sock else "",
                             "" if cpu is None else str(cpu)],
                            stdin=subprocess.PIPE, pass_fds=[w] + ([zygote_sock.fileno()] if zygote_sock else []),
                            cwd=str(PROJECT_ROOT), text=True, stdout=subprocess.DEVNULL)
    os.close(w)
    if zygote_sock is not None:
        zygote_sock.close()  # the grader process holds it now
    _pump(slot, r, events)
    return Slot(slot, proc)


class ForkedGrader:
    """A grader process that the batch's zygote forked after its torch import, with the parts of
    subprocess.Popen this module uses. It is the zygote's child, which never reaps it: its end shows on a pidfd,
    its exit status is read from /proc while it is a zombie, and its pid cannot be reused while we hold it."""

    def __init__(self, pid: int, pidfd: int, stdin: Any):
        self.pid, self.pidfd, self.stdin = pid, pidfd, stdin
        self.returncode: int | None = None

    def poll(self) -> int | None:
        if self.returncode is None and select.select([self.pidfd], [], [], 0)[0]:
            self.returncode = _zombie_status(self.pid)
        return self.returncode

    def wait(self, timeout: float | None = None) -> int:
        if self.returncode is None and not select.select([self.pidfd], [], [], timeout)[0]:
            raise subprocess.TimeoutExpired("grade-grader", timeout)
        return self.poll()

    def kill(self) -> None:
        try:
            signal.pidfd_send_signal(self.pidfd, signal.SIGKILL)
        except ProcessLookupError:
            pass

    def close(self) -> None:
        os.close(self.pidfd)


def _zombie_status(pid: int) -> int:
    """As Popen.returncode: the exit code, or minus the signal that ended it (-1: unknown)."""
    try:
        with open(f"/proc/{pid}/stat", "rb") as f:
            code = int(f.read().rsplit(b")", 1)[1].split()[49])  # field 52, exit_code (Linux >= 3.5)
    except (OSError, ValueError, IndexError):
        return -1
    return -(code & 0x7F) if code & 0x7F else (code >> 8) & 0xFF


def _start_forked(n: int, a: Assignment, events: queue.Queue, cpus: list[int | None], huge: bool) \
        -> tuple[subprocess.Popen, dict[int, Slot]] | None:
    """One zygote that imports torch once and forks the n grader processes before its warm-up (sandbox.py:
    _fork_graders); None where that cannot be done (no pidfd) or did not work, and the caller starts them itself."""
    if not hasattr(os, "pidfd_open") or not hasattr(signal, "pidfd_send_signal"):
        return None
    from .sandbox import GRADER_ENV, launch_zygote
    env = {k: v for k, v in os.environ.items() if k in GRADER_ENV}
    graders, ours, theirs = [], [], []
    for i in range(n):
        jobs_r, jobs_w = os.pipe()
        results_r, results_w = os.pipe()
        argv = ["grade-grader", a.name, str(i), str(results_w), "", json.dumps(a.options),
                json.dumps(asdict(a.limits)), "", "" if cpus[i] is None else str(cpus[i])]
        # A batch started with SIGINT ignored (`grade batch ... &` from a script) keeps it ignored in its graders:
        # a Ctrl-C meant for the script killed them, and the jobs they had read as the grader's failures.
        graders.append({"jobs": jobs_r, "results": results_w, "argv": argv, "env": env,
                        "sigint_ignored": signal.getsignal(signal.SIGINT) is signal.SIG_IGN})
        ours.append((jobs_w, results_r))
        theirs += [jobs_r, results_w]
    status_r, status_w = os.pipe()
    try:
        proc = launch_zygote(f"[], True, huge={huge}, graders=True", theirs + [status_w], stdin=subprocess.PIPE)
    finally:
        for fd in theirs + [status_w]:
            os.close(fd)
    pids = None
    try:
        proc.stdin.write(json.dumps({"graders": graders, "status": status_w}).encode())
        proc.stdin.close()
        with os.fdopen(status_r, "rb") as f:
            if select.select([f], [], [], STARTUP_LIMIT)[0]:
                pids = json.loads(f.readline())["pids"]
        pidfds = [os.pidfd_open(pid) for pid in pids]
    except Exception:  # it died while importing torch, or could not fork: start them the usual way
        for jobs_w, results_r in ours:
            os.close(jobs_w)
            os.close(results_r)
        proc.kill()
        proc.wait()
        return None
    slots = {}
    for i, (pid, pidfd, (jobs_w, results_r)) in enumerate(zip(pids, pidfds, ours)):
        slots[i] = Slot(i, ForkedGrader(pid, pidfd, os.fdopen(jobs_w, "w", encoding="utf-8")))
        _pump(i, results_r, events)
    return proc, slots


def _pump(slot: int, fd: int, events: queue.Queue) -> None:
    def pump() -> None:
        with os.fdopen(fd, encoding="utf-8") as f:
            for line in f:
                events.put((slot, line))
        events.put((slot, None))
    threading.Thread(target=pump, daemon=True).start()


def _crashed(job: Job, a: Assignment, detail: str) -> SubmissionResult:
    return SubmissionResult(
        student=job.student, submission=shown_name(job.path.name) if job.path else "", assignment=a.name,
        questions=a.question_ids, staff=detail, error=GRADER_FAILED)


class Progress:
    def __init__(self, total: int, echo: Callable[[str], None], tty: bool, lang: str = "en"):
        self.total, self.echo, self.tty, self.lang = total, echo, tty, lang
        self.done = 0
        self.start = time.monotonic()

    def update(self, r: SubmissionResult) -> None:
        self.done += 1
        elapsed = time.monotonic() - self.start
        rate = self.done / elapsed if elapsed > 0 else 0.0
        eta = (self.total - self.done) / rate if rate > 0 else 0.0
        ko = self.lang == "ko"
        status = ("채점 불가" if ko else "could not be graded") if r.error else f"{r.score:g}/{r.max_score:g}"
        line = (f"[{self.done:>{len(str(self.total))}}/{self.total}] {rate:5.2f}/s  "
                f"{'남은 시간' if ko else 'ETA'} {eta:5.0f}s  {r.student}: {status}")
        self.echo(("\r\033[K" + line) if self.tty else line)

    def close(self) -> None:
        if self.tty and self.done:
            self.echo("\n")


def _preflight(a: Assignment, out: Path) -> None:
    """What would make every job fail alike is said once, before any grading, as the user's to fix: hidden checks
    this user cannot read (a run as root made them mode 700, then a run as another user got "the autograder itself
    failed" for every student and exit status 0), a results folder that cannot be written (everything was graded,
    then the CSV could not be written)."""
    for d in a.check_dirs(False):
        if d.is_dir() and not os.access(d, os.R_OK | os.X_OK):
            raise UsageError(Message(
                f"The checks in {d} cannot be read by this user (a run as root makes the hidden checks readable by "
                f"root only). Run grade batch as root, or give the folder back to this user: chmod -R u+rX {d}",
                f"이 사용자는 {d}의 검사를 읽을 수 없습니다 (root로 실행하면 비공개 검사를 root만 읽을 수 있게 "
                f"바꿉니다). grade batch를 root로 실행하거나 폴더 권한을 되돌리세요: chmod -R u+rX {d}"))
    try:
        out.mkdir(parents=True, exist_ok=True)
        import tempfile
        fd, probe = tempfile.mkstemp(dir=out, prefix=".write-check-")
        os.close(fd)
        os.unlink(probe)
    except OSError as e:
        raise UsageError(Message(f"Results cannot be written in {out} ({e.strerror or e}); choose another --out.",
                                 f"{out}에 결과를 쓸 수 없습니다 ({e.strerror or e}). 다른 --out을 고르세요.")) from None


_ASSIGNMENT_KEY = re.compile(r'"assignment": "((?:[^"\\]|\\.)*)"')


def result_assignment(path: Path) -> str | None:
    """The assignment a result file was graded for, else None (not a result). The key is found in the file's text
    (write_result's separators; inside a JSON string every quote is escaped, so the first match is a key, that of
    extra_data) instead of parsing the whole file: a rerun into a folder of 1,000 results reads them all here."""
    try:
        text = read_text_file(path)
    except (OSError, ValueError):
        return None
    m = _ASSIGNMENT_KEY.search(text)
    if m is not None:
        try:
            return json.loads(f'"{m.group(1)}"')
        except ValueError:
            pass
    r = read_result(path)
    return r.assignment if r is not None else None


def _shell_path(p: Path) -> str:
    """An absolute path as a --out to type in the shell here: from the working folder where it is below it, quoted
    where a shell needs it. A folder's bare name was offered (--out lab1/results for submissions elsewhere named
    a folder that is not there; '--out my results-attention' two arguments; red team, round 23)."""
    rel = os.path.relpath(p)
    return shlex.quote(str(p) if rel == os.pardir or rel.startswith(os.pardir + os.sep) else rel)


def _refuse_other_assignment(out: Path, a: Assignment) -> None:
    """A results folder that holds another assignment's results is refused before anything is written: the
    default --out (results/) of lab 2 was lab 1's, and every lab 1 result was overwritten (same student ids) or
    moved to no_submission/ "with no submission any more", and both CSVs were rewritten with lab 2 alone."""
    try:
        files = sorted(out.glob("*.json"))
    except OSError:
        return
    others: dict[str, list[str]] = {}
    for p in files:
        name = result_assignment(p)
        if name is not None and name != a.name:
            others.setdefault(name, []).append(p.name)
    if not others:
        return
    kinds = ", ".join(f"{k} ({len(v)} file{'s' * (len(v) > 1)})" for k, v in sorted(others.items()))
    kinds_ko = ", ".join(f"{k} ({len(v)}개)" for k, v in sorted(others.items()))
    example = next(iter(sorted(others.values())))[0]
    new = _shell_path(out.with_name(f"{out.name}-{a.name}"))
    raise UsageError(Message(
        f"{out} already holds results of another assignment: {kinds}, e.g. {example}. Grading "
        f"{a.name} there would overwrite those results or move them aside, and rewrite scores.csv and grades.csv. "
        f"Choose another folder (--out {new}), or move those results out of {out.name}/ first.",
        f"{out}에는 이미 다른 과제의 결과가 있습니다: {kinds_ko} (예: {example}). 여기서 {a.name}을(를) 채점하면 "
        f"그 결과를 덮어쓰거나 옮기고 scores.csv와 grades.csv를 새로 씁니다. 다른 폴더를 고르거나 "
        f"(--out {new}) 그 결과를 먼저 {out.name}/ 밖으로 옮기세요."))


def main(*, submissions: Path, out: Path, assignment: Assignment, workers: int = 2, timeout: float | None = None,
         lang: str = "en", force: bool = False, echo: Callable[[str], None] = print, tty: bool = False,
         only: list[str] | None = None, exam: "Plan | None" = None, details: bool = True) -> Summary:
    """Grade every submission (only: regrade just these ids, keep the other results as they are; exam: each
    student against their own variant, see exam.py). details=False: summary.results keeps only what the CSVs and
    the summary table need (SubmissionResult.summary_only), so memory stays flat however many are graded; the
    result files have everything either way."""
    keep_in_memory = (lambda r: r) if details else SubmissionResult.summary_only
    started = time.monotonic()
    # Grader processes run in the repository: a relative path would name another folder there.
    submissions, out = submissions.absolute(), out.absolute()
    if timeout:  # from here on the limit is part of the assignment: it travels to the graders and into the key
        assignment = replace(assignment, limits=replace(assignment.limits, total_timeout=float(timeout)))
    if os.path.realpath(out) == os.path.realpath(submissions):
        # Its results and CSVs were graded as students by the next run (ada.json took the id ada, 0/100, and ada.py
        # became ada-2).
        raise UsageError(Message(
            f"--out {out} is the submissions folder itself: the result files and CSVs written there would be graded "
            f"as students by the next run. Write them elsewhere (the default --out results, or --out "
            f"{_shell_path(submissions / 'results')}).",
            f"--out {out}은(는) 제출물 폴더 자체입니다. 그곳에 쓴 결과 파일과 CSV를 다음 실행이 학생으로 채점하게 "
            f"됩니다. 다른 곳에 쓰세요 (기본값 --out results, 또는 --out {_shell_path(submissions / 'results')})."))
    inside = os.path.realpath(out).startswith(os.path.join(os.path.realpath(submissions), ""))
    if inside and out.is_dir() and discover._gradable(out):
        # A student's folder (a zip named results.zip, unzipped as the zip refusal says): it was skipped as the
        # results folder, that student neither graded nor listed, and the results written among their files.
        raise UsageError(Message(
            f"--out {out} is inside the submissions and holds code files: it is a student's submission, which "
            f"would be left ungraded and written over. Write the results elsewhere (the default --out results).",
            f"--out {out}은(는) 제출물 폴더 안에 있고 코드 파일이 있습니다: 학생의 제출물이므로 채점되지 않고 "
            f"결과로 덮어쓰이게 됩니다. 결과는 다른 곳에 쓰세요 (기본값 --out results)."))
    _preflight(assignment, out)
    _refuse_other_assignment(out, assignment)
    found = discover.entries(submissions, assignment, skip=out)
    if not found:
        raise UsageError(Message(f"{submissions} holds no submissions: there is nothing to grade.",
                                 f"{submissions}에 제출물이 없어 채점할 것이 없습니다."))
    if exam is not None:
        exam.bind(found)  # a roster's full addresses decide whose id each export folder is graded under
        exam.check_marks([job for job, _origin in found])  # a wrong secret stops here, before any result
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
    base = grading_settings(assignment, lang)
    # An exam grades each student against their own variant (and window): that is part of their settings.
    settings_of = lambda job: base if exam is None else {**base, "exam": exam.tag(job, origins.get(job.student))}  # noqa: E731
    settings = {job.student: settings_of(job) for job in jobs}
    graders = {sid: settings_key(s) for sid, s in settings.items()}
    for job in jobs:
        if job.student in keep:
            kept = read_result(out / f"{job.student}.json")
            if kept is not None:  # stays in the CSVs as it is, whatever changed since
                kept.origin = origins.get(job.student, kept.origin)
                summary.results.append(keep_in_memory(kept))
                summary.reused += 1
                summary.kept += 1
                continue
            # no result yet (a submission new since the last run): graded too, or the CSVs "with everyone" lacked it
            todo.append(job)
            summary.regraded["new"] = summary.regraded.get("new", 0) + 1
            continue
        prev = None if force else read_result(out / f"{job.student}.json")
        # Reuse only what the same checks, options, limits, language (and variant) produced for the same file.
        why = ("--only" if only is not None else "--force") if force else \
            stale(prev, job, graders[job.student], settings[job.student])
        if why is None:
            prev.origin = origins.get(job.student, {})
            summary.results.append(keep_in_memory(prev))
            summary.reused += 1
        else:
            todo.append(job)
            summary.regraded[why] = summary.regraded.get(why, 0) + 1
    if summary.reused:
        echo(f"{summary.reuse_note(lang)}; " + ("모두 다시 채점하려면 --force.\n" if lang == "ko" else
                                                "use --force to regrade everything.\n"))
    # An id now given to another file than the one its result was graded from (kim.py removed: kim_.py, which was
    # kim-2, is now kim): that result is another submission's, and is set aside before this run writes over it.
    from .safetext import shown_name
    for job in todo:
        old = out / f"{job.student}.json"
        if job.path is None or not old.is_file():
            continue
        prev = read_result(old)
        if prev is not None and prev.submission and prev.submission != shown_name(job.path.name):
            if _move_aside(out, old):
                summary.set_aside.append(job.student)

    progress = Progress(len(todo), echo, tty, lang)
    events: queue.Queue = queue.Queue()
    limit = watchdog_limit(assignment)
    slots: dict[int, Slot] = {}
    pending = list(reversed(todo))

    def finish(r: SubmissionResult) -> None:
        r.origin = origins.get(r.student, {})
        r.grader, r.settings = graders.get(r.student, settings_key(base)), settings.get(r.student, base)
        if exam is not None:
            exam.stamp(r, r.origin, paths.get(r.student))
        try:
            write_result(out, r, lang)
        except Exception as e:  # a full or read-only results disk costs this file, never the batch or the CSV
            r.staff = (r.staff + "\n" if r.staff else "") + f"result file could not be written: {e}"
            echo(f"경고: {r.student}.json을(를) 쓸 수 없었습니다 ({e}). 이 학생의 행은 scores.csv에 그대로 있습니다.\n"
                 if lang == "ko" else
                 f"warning: {r.student}.json could not be written ({e}); its row is still in scores.csv\n")
        summary.results.append(keep_in_memory(r))
        summary.graded += 1
        summary.grader_failed += r.error == GRADER_FAILED
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
        slot.job, slot.since, slot.begun = job, time.monotonic(), False
        # The path as bytes: a grader process decodes text with its own encoding (UTF-8), which need not be this
        # process's (a Korean or Latin-1 locale gave every file under a Korean folder name 0, "could not be read").
        line = {"student": job.student, "path": os.fsencode(job.path).hex() if job.path else None,
                "error": {"en": job.error.en, "ko": job.error.ko} if job.error else None, "options": job.options,
                "note": {"en": job.note.en, "ko": job.note.ko} if job.note else None}
        try:
            # ASCII: a path is bytes in surrogateescape form (e.g. a CP949 name), which UTF-8 cannot encode.
            slot.proc.stdin.write(json.dumps(line) + "\n")
            slot.proc.stdin.flush()
        except OSError:
            pass  # the process died; its EOF event will requeue nothing and report the job

    zygote = forked = None
    try:
        n = min(max(1, workers), len(todo))
        cpus = sorted(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else []
        # With no more grader processes than cores, each grader and its workers keep to one core: a request and its
        # reply then hand over on the same core instead of waking a process on the other one.
        cores = [cpus[i] if n <= len(cpus) else None for i in range(n)]
        # One zygote (torch imported and warmed up once) forks the workers of every grader process, and first
        # the grader processes themselves; a grader process restarted later, or one that finds it gone, starts
        # its own.
        huge = len(todo) >= HUGE_PAGES_FROM
        forked = _start_forked(n, assignment, events, cores, huge) if n else None
        if forked is not None:
            zygote, first = forked
            slots.update(first)
        elif n:
            from .sandbox import start_shared_zygote
            zygote, socks = start_shared_zygote(n, huge=huge)
            for i in range(n):
                slots[i] = _start(i, assignment, None, events, socks[i], cores[i])
        for i in range(n):
            dispatch(slots[i])
        while any(s.alive for s in slots.values()):
            try:
                idx, line = events.get(timeout=1.0)
            except queue.Empty:
                for s in slots.values():  # a grader process stuck past every limit is replaced
                    if s.alive and s.job is not None and time.monotonic() - s.since > (
                            limit if s.begun else STARTUP_LIMIT + limit):
                        s.proc.kill()
                continue
            slot = slots[idx]
            if line is None:  # the grader process ended
                slot.alive = False
                slot.proc.wait()
                if slot.job is not None:
                    finish(_crashed(slot.job, assignment, f"grader process exited with {slot.proc.returncode}"))
                if pending:
                    slots[idx] = _start(idx, assignment, None, events)
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
            if "begin" in msg and slot.job is not None:
                slot.since, slot.begun = time.monotonic(), True
            elif got is not None:
                dispatch(slot)  # first: the grader process starts on its next job while this result is written
                finish(got)
            elif "fatal" in msg and slot.job is not None:
                finish(_crashed(slot.job, assignment, msg["fatal"]))
                slot.job = None
    finally:
        # A Ctrl-C (or SIGTERM, see cli.py) that comes while the graders are being stopped, the loop above having
        # ended, waits until the CSVs are written: it left none, the run's results on disk but in no CSV.
        stopped: KeyboardInterrupt | None = None
        try:
            for s in slots.values():
                if s.proc.poll() is None:
                    s.proc.kill()
                    s.proc.wait()
        except KeyboardInterrupt as e:
            stopped = e
            for s in slots.values():
                if s.proc.poll() is None:
                    s.proc.kill()
        try:
            for s in (forked[1].values() if forked is not None else ()):
                s.proc.close()  # (also those that ended and were replaced)
                try:  # it leaves once every grader process has closed its socket
                    zygote.wait(timeout=5)
                except subprocess.TimeoutExpired:
                    zygote.kill()
                    zygote.wait()
        except KeyboardInterrupt as e:
            stopped = stopped or e
            if zygote is not None and zygote.poll() is None:
                zygote.kill()
        progress.close()
        # Always, even when the loop above failed: the CSVs hold every result this run got. A first Ctrl-C or
        # SIGTERM in the middle of one is taken and the write done again (only the first stops a run, cli.py):
        # it left the old scores.csv, or no grades.csv, behind a message that both list what was finished.
        for name, text_of in (("scores.csv", csv_text), ("grades.csv", grades_csv_text)):  # grades: for an LMS
            text = text_of(summary.results, assignment.question_ids)
            try:
                write_atomic(out / name, text)
            except KeyboardInterrupt as e:
                stopped = stopped or e
                write_atomic(out / name, text)
        if stopped is not None:
            raise stopped
    summary.set_aside += _set_aside(out, {job.student for job in jobs})
    if summary.set_aside:
        n = len(summary.set_aside)
        shown = ", ".join(discover.student_id(i) for i in summary.set_aside[:5]) + (" ..." if n > 5 else "")
        echo(f"{n}개 결과는 {submissions.name}에 제출물이 없어 {SET_ASIDE}/ 폴더로 옮겼습니다: {shown}\n" if lang == "ko"
             else f"moved {n} result{'s' * (n > 1)} with no submission in {submissions.name} any more to "
                  f"{SET_ASIDE}/: {shown}\n")
    summary.seconds = time.monotonic() - started
    return summary


SET_ASIDE = "no_submission"


def _set_aside(out: Path, ids: set[str]) -> list[str]:
    """Move the result files of ids this run has no submission for (a folder removed or renamed since an earlier
    run into the same --out) to out/no_submission/, and return those ids. Left in place, `grade report`, the exam
    audit and an upload of the folder counted a grade nobody had a submission for any more (the CSVs already
    held only this run's). Moved, never deleted; only files that read as results."""
    moved = []
    try:
        names = sorted(p for p in out.glob("*.json") if p.stem not in ids)
    except OSError:
        return moved
    for p in names:
        if read_result(p) is not None and _move_aside(out, p):
            moved.append(p.stem)
    return moved


def _move_aside(out: Path, p: Path) -> bool:
    """Move result file `p` into out/no_submission/, under a name no earlier one there has (kim.json, kim-1.json,
    ...): never over another. False where it cannot be moved (a read-only results disk: left where it is)."""
    try:
        folder = out / SET_ASIDE
        folder.mkdir(exist_ok=True)
        target, n = folder / p.name, 0
        while target.exists():
            n += 1
            target = folder / f"{p.stem}-{n}{p.suffix}"
        os.replace(p, target)
        return True
    except OSError:
        return False


def _others(jobs: list[Job], only: list[str], out: Path) -> set[str]:
    """--only: the ids NOT named, whose existing results are kept as they are; an unknown id is an error."""
    from .messages import near_miss
    ids = {job.student for job in jobs}
    unknown = [i for i in only if i not in ids]
    if unknown:
        guesses = {i: near_miss(i, sorted(ids)) for i in unknown}
        hints = [f"{i} (did you mean {g}?)" if g else i for i, g in guesses.items()]
        hints_ko = [f"{i} ({g}인가요?)" if g else i for i, g in guesses.items()]
        raise UsageError(Message(f"--only: no submission with id {', '.join(hints)}; the ids are the result file "
                                 f"names in {out}",
                                 f"--only: 이 id의 제출물이 없습니다: {', '.join(hints_ko)}. id는 {out}에 있는 결과 "
                                 "파일의 이름입니다"))
    return ids - set(only)


def watchdog_limit(a: Assignment) -> float:
    """Seconds one submission may keep its grader process once begun: the student's budget, one hang per class
    or top-level line and a few crashes (each a restart), and a generous margin for the checks themselves."""
    from .proxy import MAX_HUNG_LINES, MAX_RESTARTS, WAIT_FACTOR
    names = sum(len(q.names) for q in a.questions)
    # The student's requests take at most WAIT_FACTOR times the budget of wall-clock time (a CPU second is one too),
    # so a submission that only sleeps is stopped as its own result well before this.
    return a.limits.total_timeout * WAIT_FACTOR + \
        a.limits.call_timeout * (names + MAX_HUNG_LINES + MAX_RESTARTS + 2) + WATCHDOG_GRACE


def grading_settings(a: Assignment, lang: str) -> dict[str, Any]:
    """Everything besides the file that decides a score or its text; a result is reused only when all match."""
    return {"assignment": a.name, "lang": lang, "limits": asdict(a.limits), "options": a.options,
            "checks": fingerprint(a)}


def settings_key(settings: dict[str, Any]) -> str:
    import hashlib
    return hashlib.sha256(json.dumps(settings, sort_keys=True, default=str).encode()).hexdigest()[:16]


_WHY_KO = {"file changed": "파일이 바뀜", "graded by an older version": "이전 버전으로 채점됨",
           "exam variant changed": "시험 변형이 바뀜", "checks changed": "검사가 바뀜", "options changed": "옵션이 바뀜",
           "settings changed": "설정이 바뀜"}


def _why_ko(why: str) -> str:
    """stale()'s reasons in Korean (a setting's own name and values, such as `timeout 60 -> 120`, stay)."""
    for en, ko in _WHY_KO.items():
        why = why.replace(en, ko)
    return why


def stale(prev: SubmissionResult | None, job: Job, key: str, settings: dict[str, Any]) -> str | None:
    """Why an earlier result cannot be reused for `job` (None when it can), in a few words."""
    if prev is None:
        return "new"
    if prev.submission != (shown_name(job.path.name) if job.path else "") or (job.path is not None and
                                                                  prev.sha256 != _sha(job.path)):
        return "file changed"
    if prev.grader == key:
        return None
    old = prev.settings or {}
    if not old:
        return "graded by an older version"
    changed = []
    if old.get("exam") != settings.get("exam"):  # the exam's variant, extra time or submission time
        changed.append("exam variant changed")
    for k in ("assignment", "lang", "checks", "options"):
        if old.get(k) != settings[k]:
            changed.append(f"{k} changed" if k in ("checks", "options") else f"{k} {old.get(k)} -> {settings[k]}")
    for k, v in settings["limits"].items():
        if (old.get("limits") or {}).get(k) != v:
            name = "timeout" if k == "total_timeout" else k
            was = (old.get("limits") or {}).get(k)
            changed.append(f"{name} {_num(was)} -> {_num(v)}")
    return ", ".join(changed) or "settings changed"


def _num(v: Any) -> str:
    return f"{v:g}" if isinstance(v, (int, float)) and not isinstance(v, bool) else str(v)


def fingerprint(a: Assignment) -> str:
    """Hash of the files that decide a score: checks, toml, shared helpers, reference code and the engine."""
    import hashlib
    h = hashlib.sha256()
    # Reference code included, and the engine itself: a fixed grader must not reuse what the broken one gave.
    files = {p for d in (a.dir, *a.private, PROJECT_ROOT / "autograder") if d.is_dir() for p in d.rglob("*")}
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


def summary_table(results: list[SubmissionResult], a: Assignment, lang: str = "en") -> str:
    """One line per student: total and per-question scores, errors in words (headings in `lang`)."""
    qs = a.question_ids
    labels = a.question_labels(lang)
    heads = ["학생", "총점"] if lang == "ko" else ["student", "total"]
    heads += [labels.get(q, q) for q in qs]
    rows = []
    for r in sorted(results, key=lambda r: r.student):
        per_q = r.by_question()
        why = r.reason or r.error
        rows.append([clean(r.student, True), f"{r.score:g}/{r.max_score:g}",
                     *[f"{per_q.get(q, (0, 0))[0]:g}" for q in qs]]
                    + ([clean(one_line(why.text(lang), 90), True)] if why else []))
    widths = [max(columns(str(x)) for x in col) for col in zip(heads, *[row[:len(heads)] for row in rows])]
    fmt = lambda row: "  ".join(str(x) + " " * (w - columns(str(x))) for x, w in zip(row, widths)) + (  # noqa: E731
        "  " + row[len(heads)] if len(row) > len(heads) else "")
    return "\n".join([fmt(heads).rstrip()] + [fmt(row).rstrip() for row in rows])
