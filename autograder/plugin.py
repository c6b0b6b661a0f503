"""pytest plugin: gives checks the `sub` fixture, turns their outcomes into CheckResults, grades many submissions.

Two ways in:
- `grade batch`/`grade check` pass a GradingPlugin to pytest.main(); one pytest session collects the checks once
  and runs them for each submission in turn (pytest_runtestloop), with a fresh worker per submission.
- plain `python -m pytest assignments/<name>/hidden --submission FILE [--json-report]` grades one file the
  ordinary way (assignments/conftest.py loads this module); the benchmark uses it as the baseline.
"""
from __future__ import annotations

import hashlib
import os
import re
import time
import traceback
from pathlib import Path
from typing import Any, Callable, Iterable

import pytest
from _pytest.runner import runtestprotocol

from .assignment import Assignment, for_file, load
from .checks import CheckFailure, CheckMeta, Reveal, rename_fits, rename_guess
from .errors import SubmissionFormatError
from .jobs import Job
from .messages import GRADER_FAILED, Message, bilingual, rename_hint
from .proxy import Submission
from .results import CheckResult, SubmissionResult, write_atomic
from .safetext import shown_name
from .sandbox import Spawning, WorkerLost, Zygote, claim_uid, is_root, make_scratch, remove_scratch
from .source import read

MAX_SHOWN_OUTPUT = 2000
MAX_LOAD_NOTE = 2000  # characters of a note on a top-level line that failed (_load_notes)
MAX_READ_NOTES = 3  # notes on methods that read the file's top-level variables (_top_level_read_notes)
# A load error that the grader's setting alone causes (worker._grader_setting names which): said as such, since the
# same line runs on the student's machine or Colab, and it costs no points by itself.
SETTING_HINTS = {
    "network": (" The grader has no network, so downloads fail there: this costs no points by itself, but keep "
                "downloads out of what your classes need.",
                " 채점기에는 네트워크가 없어서 다운로드가 실패합니다: 이것만으로 감점되지는 않지만, 클래스가 필요로 "
                "하는 것은 다운로드하지 않도록 하세요."),
    "processes": (" The grader runs your code in a single process, so multiprocessing and "
                  "`DataLoader(num_workers>0)` are not available there: this costs no points by itself (use "
                  "`num_workers=0`).",
                  " 채점기는 코드를 하나의 프로세스에서 실행하므로 multiprocessing과 `DataLoader(num_workers>0)`를 "
                  "쓸 수 없습니다: 이것만으로 감점되지는 않습니다 (`num_workers=0`을 쓰세요)."),
    "account": (" The grader runs your code as a user with no account and no login terminal: this costs no points "
                "by itself (`getpass.getuser()` works there).",
                " 채점기는 계정과 로그인 터미널이 없는 사용자로 코드를 실행합니다: 이것만으로 감점되지는 않습니다 "
                "(`getpass.getuser()`는 동작합니다)."),
    "files": (" The grader runs your code without the files beside it (data, saved models): this costs no points "
              "by itself, but your classes must not need them.",
              " 채점기는 코드 옆의 파일(데이터, 저장한 모델) 없이 코드를 실행합니다: 이것만으로 감점되지는 않지만, "
              "클래스가 그 파일을 필요로 해서는 안 됩니다."),
    "folder": (" The grader lets your code write files only in its working folder (relative paths such as "
               "`model.pt`): this costs no points by itself.",
               " 채점기에서는 코드가 작업 폴더에만 파일을 쓸 수 있습니다 (`model.pt` 같은 상대 경로): 이것만으로 "
               "감점되지는 않습니다."),
    "module": (" The grader has only the packages the course uses (torch, numpy, matplotlib), and none of the files "
               "beside your code: this costs no points by itself, but your classes must not need another.",
               " 채점기에는 강의에서 쓰는 패키지(torch, numpy, matplotlib)만 있고 코드 옆의 파일은 없습니다: "
               "이것만으로 감점되지는 않지만, 클래스가 다른 패키지나 파일을 필요로 해서는 안 됩니다."),
    "gpu": (" The grader has no GPU: this costs no points by itself (write "
            "`torch.device('cuda' if torch.cuda.is_available() else 'cpu')`).",
            " 채점기에는 GPU가 없습니다: 이것만으로 감점되지는 않습니다 "
            "(`torch.device('cuda' if torch.cuda.is_available() else 'cpu')`처럼 쓰세요)."),
}


def protect(paths: Iterable[Path]) -> None:
    """Make hidden material unreadable for workers (they run as another uid when we are root)."""
    if not is_root():
        return
    for p in paths:
        if p.exists():
            os.chmod(p, 0o700)


class GradingPlugin:
    def __init__(self, assignment: Assignment, jobs: Iterable[Job], *, on_result: Callable[[SubmissionResult], None],
                 public_only: bool = False, loop: bool = True, zygote: Zygote | None = None,
                 only: list[str] | None = None, sections: list[str] | None = None):
        self.assignment = assignment
        self.jobs = jobs
        self.on_result = on_result
        self.public_only = public_only
        self.only = only  # question ids to check (a notebook checkpoint checks its own section); None: all
        self.sections = sections  # of those, only checks of these notebook sections (checks that name one)
        self.uid = claim_uid() if is_root() else None
        # `grade batch` (a loop over jobs with the batch's zygote) starts the next submission's worker while it
        # grades this one: starting one waits several ms on the kernel (moving it into its memory cgroup), time
        # this process can spend grading. The next worker runs as a second uid, so that nothing the submission
        # being graded does (signals, its uid's sweep when it ends) reaches the worker that waits for the next.
        # (A pool without start_spawn, plainworker's, starts workers only when asked and stops them at once.)
        self.ahead_enabled = loop and zygote is not None and self.uid is not None and hasattr(zygote, "start_spawn")
        self.last_job = False  # the job being graded is known to be the last (see pytest_runtestloop)
        self.uids = [self.uid]  # the second one claimed with the first worker started ahead
        self.ahead: Spawning | None = None
        self.sub_uid = self.uid  # the uid of the submission being graded (its worker, its scratch folder)
        self.closing: list = []  # (worker, scratch, uid) of finished submissions, being torn down
        # The worker that sees the GPU (Submission.gpu), started only where a check runs on a real GPU: a uid and
        # a scratch folder of its own, so that neither worker's end (its uid swept) stops the other.
        self.gpu_uid: int | None = None
        self.gpu_scratch: str | None = None
        self.loop = loop
        self.zygote = zygote
        self.current: Submission | None = None
        self.records: dict[str, CheckResult] = {}
        self.collect_errors: list[str] = []
        self.scratch: str | None = None
        self.job_options: dict[str, Any] = {}
        self._public_cache: dict[str, bool] = {}
        self._direct_cache: dict[str, bool] = {}
        self.factor: dict[str, float] = {}  # question -> scale of its checks' points (assignment.toml `points`)
        self._blank_cache: dict[str, dict[str, Any]] = {}  # nodeid -> a check's fixed fields (see _blank)

    # ------------------------------------------------------------------ fixture and metadata

    @pytest.fixture
    def sub(self) -> Submission:
        return self.sub_value()

    @pytest.fixture
    def options(self) -> dict[str, Any]:
        """The assignment's [options] table from assignment.toml (a copy), for checks whose grading it sets."""
        return self.options_value()

    def sub_value(self) -> Submission:
        if self.current is None:
            pytest.fail("no submission is being graded (run through `grade` or pass --submission)")
        return self.current

    def options_value(self) -> dict[str, Any]:
        return {**self.assignment.options, **self.job_options}

    def _meta(self, item: pytest.Item) -> CheckMeta | None:
        fn = getattr(item, "function", None)
        return getattr(fn, "__grade__", None)

    def _public(self, item: pytest.Item) -> bool:
        # Asked several times per check and submission; resolving paths each time cost thousands of stat calls.
        public = self._public_cache.get(item.nodeid)
        if public is None:
            public = Path(str(item.path)).resolve().is_relative_to(self.assignment.public_dir.resolve())
            self._public_cache[item.nodeid] = public
        return public

    def pytest_collection_modifyitems(self, items: list[pytest.Item]) -> None:
        items[:] = [i for i in items if self._meta(i) is not None
                    and (self.only is None or self._meta(i).question in self.only) and self._in_sections(i)]
        # A question with `points` in assignment.toml is worth exactly that: its checks' points are scaled to
        # it. Only when the hidden checks are collected too; the public checks alone keep their own points.
        self.factor = {}
        self._blank_cache = {}
        if any(not self._public(i) for i in items):
            raw: dict[str, float] = {}
            for i in items:
                raw[self._meta(i).question] = raw.get(self._meta(i).question, 0.0) + self._meta(i).points
            self.factor = {q.id: q.points / raw[q.id] for q in self.assignment.questions
                           if q.points is not None and raw.get(q.id)}

    def _in_sections(self, item: pytest.Item) -> bool:
        # A question can span sections (the steps: 3.3 to 3.5.2): a checkpoint keeps its own section's checks.
        sec = self._meta(item).section
        return not self.sections or sec is None or any(sec == s or sec.startswith(s + ".") for s in self.sections)

    def pytest_collectreport(self, report: pytest.CollectReport) -> None:
        if report.failed:
            self.collect_errors.append(str(report.longrepr))

    # ------------------------------------------------------------------ outcomes

    def _blank(self, item: pytest.Item) -> CheckResult:
        """The check's row with no score yet: name, question, points and visibility from its metadata (worked out
        once per check: the same for every submission this process grades, the points' scale set at collection)."""
        fields = self._blank_cache.get(item.nodeid)
        if fields is None:
            meta = self._meta(item)
            public = self._public(item)
            vis = meta.visibility or ("visible" if public else self.assignment.hidden_visibility)
            name = meta.name or ((item.function.__doc__ or "").strip().splitlines() or [item.name])[0]
            points = round(meta.points * self.factor.get(meta.question, 1.0), 6)
            name_ko = meta.name_ko or self.assignment.check_name_ko(getattr(item, "originalname", item.name))
            fields = self._blank_cache[item.nodeid] = dict(name=name, nodeid=item.nodeid, question=meta.question,
                                                          points=points, public=public, visibility=vis,
                                                          name_ko=name_ko)
        return CheckResult(score=0.0, status="failed", **fields)

    def _classify(self, item: pytest.Item, call: pytest.CallInfo, outcome: str) -> CheckResult:
        res = self._blank(item)
        public = res.public
        fatal = self.current.fatal if self.current is not None else None
        if outcome == "passed" and fatal is not None:  # the code could not run any more: whatever the check concluded
            res.message = fatal  # (e.g. "both fail alike"), it earned nothing
        elif outcome == "passed":
            res.status, res.score = "passed", res.points
        elif outcome == "skipped":
            res.status = "skipped"
            reason = call.excinfo.value.msg if call.excinfo and hasattr(call.excinfo.value, "msg") else ""
            # "English / 한국어": Korean shows its half; English keeps both, as before (tests/test_evidence.py)
            res.message = Message(f"Skipped: {reason}", f"건너뜀: {bilingual(str(reason)).ko}")
        else:
            exc = call.excinfo.value if call.excinfo else None
            if isinstance(exc, CheckFailure):
                res.message, res.staff = exc.message, exc.staff
            elif isinstance(exc, AssertionError):
                text = str(exc).strip() or "assertion failed"
                if public:
                    res.message = Message(text, text)
                else:
                    res.message = Message("This hidden check failed.", "이 비공개 검사를 통과하지 못했습니다.")
                    res.staff = text[:4000]
            else:
                res.status = "error"
                res.message = Message("The autograder hit an internal error in this check; your instructor "
                                      "has been given the details.",
                                      "이 검사에서 채점기 내부 오류가 발생했습니다. 자세한 내용은 담당 교수자에게 전달됩니다.")
                res.staff = "".join(traceback.format_exception(exc))[-8000:] if exc else "no exception recorded"
        if self.current is not None:
            printed = self.current.take_output()
            if printed and public:
                res.output = printed[:MAX_SHOWN_OUTPUT] + (" ..." if len(printed) > MAX_SHOWN_OUTPUT else "")
        return res

    @pytest.hookimpl(tryfirst=True)
    def pytest_runtest_makereport(self, item: pytest.Item, call: pytest.CallInfo) -> pytest.TestReport | None:
        exc = call.excinfo
        outcome = "passed" if exc is None else "skipped" if exc.errisinstance(pytest.skip.Exception) else "failed"
        if call.when == "call" or (call.when == "setup" and outcome != "passed"):
            self.records[item.nodeid] = self._classify(item, call, outcome)
        if not self.loop:
            return None  # plain pytest runs keep pytest's own report, tracebacks and all
        # Nobody reads pytest's report here, and formatting a traceback costs ~0.1 s per failing check.
        longrepr = None if exc is None else (str(item.path), item.location[1] or 0, str(exc.value)[:500]) \
            if outcome == "skipped" else f"{exc.typename}: {str(exc.value)[:2000]}"
        return pytest.TestReport(item.nodeid, item.location, {}, outcome, longrepr, call.when,
                                 duration=call.duration, start=call.start, stop=call.stop)

    @pytest.hookimpl(optionalhook=True)
    def pytest_json_runtest_metadata(self, item: pytest.Item, call: pytest.CallInfo) -> dict[str, Any]:
        rec = self.records.get(item.nodeid)
        if call.when != "call" or rec is None:
            return {}
        return {"grade": {"question": rec.question, "points": rec.points, "score": rec.score,
                          "status": rec.status, "public": rec.public}}

    def pytest_runtest_setup(self, item: pytest.Item) -> None:
        Reveal.expected_values = self._public(item)
        if self.current is not None:
            self.current.take_output()
            meta = self._meta(item)
            if meta is not None:
                self.current.clean_for(meta.question)  # (see Submission.taint)

    # ------------------------------------------------------------------ one submission

    def _begin(self, job: Job) -> SubmissionResult:
        a = self.assignment
        result = SubmissionResult(student=job.student, submission=shown_name(job.path.name) if job.path else "",
                                  assignment=a.name,
                                  questions=[q for q in a.question_ids if self.only is None or q in self.only])
        self.records = {}
        self.current = None
        self.job_options = dict(job.options or {})
        if job.note is not None:
            result.notes.append(job.note)
        if job.error is not None:
            result.error = job.error
            if job.path is not None:  # an exam's "not on the roster" or "earlier submission": the file is known, and
                try:  # with its hash a rerun reuses the result (an empty one read as "file changed" every time)
                    with open(job.path, "rb") as f:
                        result.sha256 = hashlib.file_digest(f, "sha256").hexdigest()
                except OSError:
                    pass
            return result
        try:
            with open(job.path, "rb") as f:  # streamed: the file may be huge (read() refuses it then)
                result.sha256 = hashlib.file_digest(f, "sha256").hexdigest()
            source = read(job.path)
        except SubmissionFormatError as e:
            result.error = e.message
            return result
        except OSError as e:
            if self.loop:
                # The file was found when grading started (discover.py): that it cannot be read now is the machine's
                # or the grader's doing (a name this process cannot spell, a file removed meanwhile), not the
                # student's. The job becomes "the autograder itself failed", with this for staff.
                raise RuntimeError(f"the grader could not read {str(job.path)!r}, a file found when grading "
                                   f"started: {e}") from e
            result.error = Message(f"{job.path.name} could not be read ({e.strerror}).",
                                   f"{job.path.name} 파일을 읽을 수 없습니다 ({e.strerror}).")
            return result
        result.notes.extend(source.notes)
        if self.zygote is None:
            self.zygote = Zygote()
        zyg, limits = self.zygote, a.limits
        ahead, self.ahead = self.ahead, None
        if ahead is not None and ahead.limits != limits:
            self._discard(ahead)
            ahead = None
        if ahead is not None:
            self.scratch, self.sub_uid = ahead.scratch, ahead.uid
        else:
            self._end_closing()  # (a worker being torn down may hold that uid still)
            self.sub_uid = self.uids[0]
            self.scratch = make_scratch(self.sub_uid)
        scratch, uid = self.scratch, self.sub_uid

        def spawn():  # the worker started ahead first, then (restarts, probes) new ones as usual
            nonlocal ahead
            if ahead is not None:
                first, ahead = ahead, None
                try:
                    return first.wait()
                except WorkerLost:
                    pass  # (the zygote is replaced by the next request if it died)
            return zyg.spawn(limits, scratch, uid, gpu=False)
        sub = Submission(source, spawn, limits)

        def gpu_spawn():  # for the checks that run on a real GPU (Submission.gpu); this worker sees none
            if self.gpu_scratch is None:
                if self.uid is not None and self.gpu_uid is None:
                    self.gpu_uid = claim_uid()
                self.gpu_scratch = make_scratch(self.gpu_uid)
            return zyg.spawn(limits, self.gpu_scratch, self.gpu_uid, gpu=True)
        sub.gpu_spawn = gpu_spawn
        sub.graded_names = a.graded_names
        sub.assignment_name = a.name
        self.current = sub
        try:
            sub.start()
        except CheckFailure as e:
            result.error = e.message
            return result
        finally:
            self._start_ahead(limits)
        result.notes.extend(self._load_notes(sub))
        return result

    def _start_ahead(self, limits) -> None:
        """Ask for the next submission's worker, under the uid this submission does not use."""
        self._end_closing()
        if not self.ahead_enabled or self.ahead is not None or self.zygote is None or self.last_job:
            return
        try:
            if len(self.uids) < 2:
                self.uids.append(claim_uid())
            uid = self.uids[1] if self.sub_uid == self.uids[0] else self.uids[0]
            scratch = make_scratch(uid)
            try:
                self.ahead = self.zygote.start_spawn(limits, scratch, uid, gpu=False)
            except WorkerLost:
                remove_scratch(scratch, uid)
        except Exception:  # (no free uid, ...): the next submission starts its worker itself, as before
            self.ahead_enabled = False

    def _end_closing(self) -> None:
        """Finish tearing down the workers of finished submissions (see _finish)."""
        closing, self.closing = self.closing, []
        for worker, scratch, uid in closing:
            try:
                worker.end_kill()
            finally:
                if scratch is not None:
                    remove_scratch(scratch, uid)

    def _discard(self, ahead: Spawning | None) -> None:
        if ahead is None:
            return
        ahead.cancel()
        remove_scratch(ahead.scratch, ahead.uid)

    def _load_notes(self, sub: Submission) -> list[Message]:
        notes = []
        for err in sub.load_errors[:5]:
            w = err.get("where") or {}
            code = f": `{w.get('code')}`" if w.get("code") and err.get("type") != "SyntaxError" else ""
            loc = f"{w.get('file')}, line {w.get('line')}{code}" if w.get("line") else str(w.get("file", ""))
            loc_ko = f"{w.get('file')}, {w.get('line')}번째 줄{code}" if w.get("line") else str(w.get("file", ""))
            text = f"{err.get('type')}: {err.get('message')}"
            if err.get("type") == "SyntaxError":
                code = f" `{w.get('code')}`" if w.get("code") else ""
                notes.append(Message(f"Syntax error ({loc}):{code} {err.get('message')}. Nothing in "
                                     f"{w.get('file')} could run; fix it and check again.",
                                     f"문법 오류 ({loc_ko}):{code} {err.get('message')}. {w.get('file')}의 코드가 "
                                     "전혀 실행되지 않았습니다. 고친 뒤 다시 확인하세요."))
                continue
            inner = w.get("inner") if isinstance(w.get("inner"), dict) else None
            if inner is not None and inner.get("line"):  # raised further in: in a function that line called
                icode = f": `{inner.get('code')}`" if inner.get("code") else ""
                loc += f"; raised in `{inner.get('function')}`, line {inner.get('line')}{icode}"
                loc_ko += f"; `{inner.get('function')}`의 {inner.get('line')}번째 줄에서 발생{icode}"
            if err.get("type") == "Timeout" and isinstance(err.get("seconds"), (int, float)):  # the grader's words
                sec = f"{err['seconds']:g}"
                notes.append(Message(
                    f"While loading your code ({loc}): this line did not finish within {sec} s (a long training "
                    "loop, an infinite loop, or waiting for something?) and was skipped; later definitions were "
                    "still loaded. Keep long runs out of the file you submit.",
                    f"코드를 불러오는 중 ({loc_ko}): 이 줄이 {sec}초 안에 끝나지 않아서 (긴 학습 루프, 무한 루프, "
                    "또는 무언가를 기다리는 코드?) 건너뛰었습니다. 이후의 정의는 계속 불러왔습니다. 오래 걸리는 실행은 "
                    "제출 파일에서 빼 주세요."))
                continue
            if err.get("type") == "Ended" and isinstance(err.get("how"), str):  # (the grader's words: proxy.py)
                notes.append(Message(
                    f"While loading your code ({loc}): this line ended the process running your code ({err['how']}: "
                    "a Colab runtime restart such as `os.kill(os.getpid(), 9)`, or a crash) and was "
                    "skipped; later definitions were still loaded. Keep such lines out of the file you submit.",
                    f"코드를 불러오는 중 ({loc_ko}): 이 줄이 코드를 실행하던 프로세스를 끝내서 ({err['how']}: "
                    "`os.kill(os.getpid(), 9)` 같은 Colab 런타임 재시작, 또는 비정상 종료) 건너뛰었습니다. "
                    "이후의 정의는 계속 불러왔습니다. 이런 줄은 제출 파일에서 빼 주세요."))
                continue
            if err.get("type") == "EOFError" and "input(" in str(w.get("code", "")):
                notes.append(Message(
                    f"While loading your code ({loc}): {text}. The grader types nothing into `input()`, so it "
                    "raised; later definitions were still loaded. Put fixed values in place of `input()`.",
                    f"코드를 불러오는 중 오류 ({loc_ko}): {text}. 채점기는 `input()`에 아무것도 입력하지 않으므로 "
                    "오류가 났습니다. 이후의 정의는 계속 불러왔습니다. `input()` 대신 정해진 값을 쓰세요."))
                continue
            if err.get("rerun") and err.get("type") == "ModuleNotFoundError":  # (worker._rerun_imports)
                notes.append(Message(
                    f"While loading your code ({loc}): {text}. The file it imports is written by a `%%writefile` "
                    "cell further down (as when notebook cells are run out of order), so it ran again after the rest "
                    "of your code and worked. Move the `%%writefile` cell above the import, restart the kernel and "
                    "run all cells to check that your notebook runs from top to bottom.",
                    f"코드를 불러오는 중 오류 ({loc_ko}): {text}. import하는 파일을 더 아래의 `%%writefile` 셀이 "
                    "쓰므로 (노트북 셀을 순서와 다르게 실행했을 때처럼), 나머지 코드를 모두 실행한 뒤 다시 실행했고 "
                    "이번에는 성공했습니다. `%%writefile` 셀을 import 위로 옮기고, 커널을 다시 시작해 모든 셀을 "
                    "실행해서 위에서부터 차례로 실행되는지 확인하세요."))
                continue
            missing = re.fullmatch(r"No module named '([A-Za-z_][\w.]*)'", str(err.get("message", "")))
            if err.get("type") == "ModuleNotFoundError" and missing and not err.get("rerun"):
                # Learners round rl14: study files import tiktoken (or a helper module of their repository) beside
                # the classes; the note read as an error of the student's code. Where the code is graded, only
                # torch's installation and the graded file itself can be imported. (Red team round 24's words for
                # the grader's setting, SETTING_HINTS["module"], are part of it: the two rounds met here.)
                top = missing.group(1).split(".")[0]
                notes.append(Message(
                    f"While loading your code ({loc}): {text}. `{top}` cannot be imported where your code is graded: "
                    "the grader has only the packages the course uses (torch, numpy, matplotlib), and only the graded "
                    "file of your submission is loaded. So this statement was skipped, which costs no points by "
                    "itself; later definitions were still loaded. The graded classes must not need it.",
                    f"코드를 불러오는 중 ({loc_ko}): {text}. 채점 환경에서는 `{top}`을(를) import할 수 없어서 (채점기에는 "
                    "강의에서 쓰는 패키지(torch, numpy, matplotlib)만 있고, 제출물 중 채점하는 파일만 불러옵니다) 이 문장을 "
                    "건너뛰었습니다. 이것만으로 감점되지는 않습니다. 이후의 정의는 계속 불러왔습니다. 채점하는 클래스는 "
                    "이것 없이 동작해야 합니다."))
                continue
            if err.get("rerun"):
                notes.append(Message(
                    f"While loading your code ({loc}): {text}. A name it needs is defined further down (as when "
                    "notebook cells are run out of order), so it ran again after the rest of your code and worked. "
                    "Restart the kernel and run all cells to check that your notebook runs from top to bottom.",
                    f"코드를 불러오는 중 오류 ({loc_ko}): {text}. 필요한 이름이 더 아래에서 정의되어 있어서 (노트북 "
                    "셀을 순서와 다르게 실행했을 때처럼), 나머지 코드를 모두 실행한 뒤 다시 실행했고 이번에는 "
                    "성공했습니다. 커널을 다시 시작하고 모든 셀을 실행해서 위에서부터 차례로 실행되는지 확인하세요."))
                continue
            why_en, why_ko = SETTING_HINTS.get(err.get("setting"), ("", ""))
            notes.append(Message(f"While loading your code ({loc}): {text}.{why_en} Code after this point in the "
                                 "same statement did not run; later definitions were still loaded.",
                                 f"코드를 불러오는 중 오류 ({loc_ko}): {text}.{why_ko} 이 문장은 실행되지 않았고, "
                                 "이후의 정의는 계속 불러왔습니다."))
        # At most MAX_LOAD_NOTE characters each, as a check's message is: an exception class named with 3,000,000
        # characters (its type name is not the message that the worker shortens) made a 24 MB result file and
        # 8 MB of `grade check` output (red team, round 24); a worker the submission changed may send anything.
        notes = [n if len(n.en) <= MAX_LOAD_NOTE and len(n.ko) <= MAX_LOAD_NOTE
                 else Message(_cut(n.en, MAX_LOAD_NOTE), _cut(n.ko, MAX_LOAD_NOTE)) for n in notes]
        graded = self.assignment.graded_names
        # Never "rename" one graded name to another, nor a demo value (`context_vecs`) to a graded function.
        defined = [n for n, kind in sub.names.items() if n not in graded and kind != "value"]
        for q in self.assignment.questions:
            for n in q.names:
                if n not in sub.names:
                    alias = next((a for a, c in self.assignment.aliases.items() if c == n and a in sub.names), None)
                    if alias is not None:  # e.g. the blog notes' name for the same class: graded as it is
                        note = Message(f"`{alias}` is graded as `{n}` (the same class under the name another "
                                       "set of course notes uses).",
                                       f"`{alias}`을(를) `{n}`(으)로 보고 채점했습니다 (다른 강의 노트에서 같은 "
                                       "클래스에 쓰는 이름).")
                        if note not in notes:
                            notes.append(note)
                        continue
                    # Only a name of the kind the notebook's is (a class for a CamelCase name, as every graded
                    # class is): a learner's helper class `BaseNormalizer` was offered here as the rename of the
                    # step function `renormalize` (learners round rl13; the checks' own hint already kept to kinds).
                    kind = "class" if n[:1].isupper() else "function"
                    guess = rename_hint(n, [d for d in defined if sub.names.get(d) == kind], graded)
                    if not (guess and rename_fits(sub, n, guess)):
                        guess = rename_guess(sub, n) if kind == "class" else None
                    if guess:
                        notes.append(Message(f"`{n}` is missing but `{guess}` is defined: rename it to `{n}`.",
                                             f"`{n}`이(가) 없고 `{guess}`이(가) 있습니다: 이름을 `{n}`(으)로 바꾸세요."))
        return notes

    def _top_level_read_notes(self, sub: Submission, result: SubmissionResult) -> list[Message]:
        """For each graded class that lost points, its methods that read variables the file's top level sets (a
        notebook's `inputs`, `d_out`, `mask`, ...) instead of their own arguments and attributes: in the notebook
        they fit its example, so the demo cells printed the right values, and the checks only said that outputs
        differ or that a mask did not fit (learners' notebooks: `queries = inputs @ self.W_query` in forward,
        `omega / d_out ** 0.5`, `masked_fill(mask.bool(), ...)` of the notebook's 6x6 mask). Told once per method,
        only where the class lost points; a class that works whatever it reads gets no note."""
        from .sourcecode import top_level_reads
        lost = {q for q, (s, m) in result.by_question().items() if m > 0 and s < m}
        nb = sub.source.kind == "ipynb"
        where_en, where_ko = ("your notebook", "노트북") if nb else ("your file", "파일")
        notes: list[Message] = []
        classes = list(dict.fromkeys(n for q in self.assignment.questions if q.id in lost for n in q.names))
        try:
            found = top_level_reads(sub, set(classes)) if classes else {}
        except Exception:  # noqa: BLE001 - reading the source for a hint must never cost the result
            found = {}
        for cls in classes:
            # forward and __init__ first: with many methods (a hostile class of hundreds), only a few are told
            for method, names in sorted(found.get(cls, ()), key=lambda mn: mn[0] not in ("forward", "__init__")):
                shown = [f"`{n if len(n) <= 40 else n[:39] + '…'}`" for n in names[:4]]
                method = method if len(method) <= 40 else method[:39] + "…"
                en = shown[0] if len(shown) == 1 else ", ".join(shown[:-1]) + " and " + shown[-1]
                what = "a variable" if len(shown) == 1 else "variables"
                notes.append(Message(
                    f"`{cls}.{method}` reads {en}, {what} that {where_en} sets at the top level, instead of its "
                    f"own arguments and attributes, so it fits {where_en}'s example only: the grader builds "
                    f"`{cls}` with other sizes and calls it with other inputs. Use the method's arguments, "
                    "values kept on self in __init__, or sizes read from the tensors (e.g. keys.shape[-1]).",
                    f"`{cls}.{method}`이(가) 자기 인자나 속성이 아니라 {where_ko} 최상위에서 정한 변수 "
                    f"{', '.join(shown)}을(를) 읽으므로 {where_ko}의 예제에서만 맞습니다: 채점기는 `{cls}`을(를) 다른 "
                    "크기로 만들고 다른 입력으로 호출합니다. 메서드의 인자, __init__에서 self에 저장한 값, 또는 "
                    "텐서에서 읽은 크기(예: keys.shape[-1])를 쓰세요."))
        return notes[:MAX_READ_NOTES]

    def _finish(self, result: SubmissionResult, items: list[pytest.Item], started: float) -> SubmissionResult:
        sub = self.current
        if self.current is not None:
            if self.ahead_enabled and self.current.worker is not None:
                # The next submission runs as the other uid: this worker is torn down while it is graded, and
                # finished (its uid swept, its scratch removed) before this uid serves again (_start_ahead).
                self.current.worker.begin_kill()
                self.closing.append((self.current.worker, self.scratch, self.sub_uid))
                self.current.worker, self.scratch = None, None
            self.current.close()
            result.sandbox = dict(self.current.modes)
            result.notes.extend(n for n in self.current.notes if n not in result.notes)
            if self.current.staff_notes:  # instructors only, never the student's message
                result.staff = "\n".join(filter(None, [result.staff, *self.current.staff_notes]))[-8000:]
        if self.scratch is not None:
            remove_scratch(self.scratch, self.sub_uid)
            self.scratch = None
        self._remove_gpu_scratch()
        for item in items:
            rec = self.records.get(item.nodeid)
            if rec is None:  # never ran: the submission could not be loaded
                rec = self._blank(item)
                rec.message = Message("Not graded: see the error at the top.", "채점되지 않음: 맨 위의 오류를 보세요.")
            result.checks.append(rec)
        if sub is not None and sub.source is not None:
            result.notes.extend(n for n in self._top_level_read_notes(sub, result) if n not in result.notes)
        self.current = None
        result.duration = time.monotonic() - started
        result.reason = zero_reason(result, sub)
        return result

    # ------------------------------------------------------------------ the loop

    @pytest.hookimpl(tryfirst=True)
    def pytest_runtestloop(self, session: pytest.Session) -> bool | None:
        if not self.loop:
            return None
        if self.collect_errors or not session.items:
            raise RuntimeError("the assignment's checks could not be collected:\n" + "\n".join(self.collect_errors))
        items = session.items
        # The assignment's run_last questions after the rest (a stable sort); results list the checks in `items`' order.
        last = set(self.assignment.run_last)
        run_order = sorted(items, key=lambda it: self._meta(it).question in last) if last else items
        # A list of jobs (`grade check`, Gradescope: one) says which is the last: no worker is started ahead after
        # it. Jobs read from a pipe (`grade batch`) may always have a next one.
        count = len(self.jobs) if isinstance(self.jobs, (list, tuple)) else None
        try:
            for index, job in enumerate(self.jobs):
                self.last_job = count is not None and index == count - 1
                started = time.monotonic()
                try:
                    result = self._begin(job)
                    if result.error is None:
                        for i, item in enumerate(run_order):
                            if self._direct(item):
                                self._run_direct(item)
                                continue
                            nxt = run_order[i + 1] if i + 1 < len(run_order) else None
                            # Setup, call and teardown with their hooks (our makereport records the outcome);
                            # no log hooks: no terminal reporter is listening, and they ran 5 times per check.
                            runtestprotocol(item, nextitem=nxt, log=False)
                    result = self._finish(result, items, started)
                except Exception:  # the grader's own failure on this job: reported as ours, the next job goes on
                    result = self._crashed(job, items, started, traceback.format_exc())
                self.on_result(result)
        finally:
            ahead, self.ahead = self.ahead, None
            try:
                self._end_closing()
                self._discard(ahead)  # the worker started for a submission that did not come
            finally:
                if self.zygote is not None:
                    self.zygote.close()
        return True

    DIRECT_FIXTURES = frozenset({"sub", "options"})

    def _direct(self, item: pytest.Item) -> bool:
        """Whether a check can be called as a plain function: no marks, and no fixtures but ours (`sub`,
        `options`). Pytest's per-check protocol (fixture requests, setup/teardown hooks, report objects) then
        adds nothing but time: about a third of the grader's own time on ~200 small checks per submission."""
        direct = self._direct_cache.get(item.nodeid)
        if direct is None:
            info = getattr(item, "_fixtureinfo", None)
            direct = (isinstance(item, pytest.Function) and info is not None and not item.own_markers
                      and not list(item.iter_markers()) and set(info.names_closure) <= self.DIRECT_FIXTURES
                      and type(item).runtest is pytest.Function.runtest)
            self._direct_cache[item.nodeid] = direct
        return direct

    def _run_direct(self, item: pytest.Function) -> None:
        """One check as pytest would run it (same outcome, same record), without its protocol."""
        self.pytest_runtest_setup(item)
        values = {"sub": self.sub_value, "options": self.options_value}
        call = pytest.CallInfo.from_call(
            lambda: item.obj(**{name: values[name]() for name in item._fixtureinfo.argnames}), when="call")
        exc = call.excinfo
        outcome = "passed" if exc is None else "skipped" if exc.errisinstance(pytest.skip.Exception) else "failed"
        self.records[item.nodeid] = self._classify(item, call, outcome)

    def _remove_gpu_scratch(self) -> None:
        """(after Submission.close() has stopped the worker that saw the GPU)"""
        scratch, self.gpu_scratch = self.gpu_scratch, None
        if scratch is not None:
            remove_scratch(scratch, self.gpu_uid)

    def _crashed(self, job: Job, items: list[pytest.Item], started: float, detail: str) -> SubmissionResult:
        """The result of a job whose grading failed in the grader itself: it reads as the grader's failure (the
        instructor gets the traceback), and this process is left clean for the next job (fresh zygote)."""
        a = self.assignment
        result = SubmissionResult(student=job.student, submission=shown_name(job.path.name) if job.path else "",
                                  assignment=a.name, questions=a.question_ids, staff=detail[-8000:],
                                  error=GRADER_FAILED)
        for cleanup in (lambda: self.current.close() if self.current is not None else None,
                        lambda: remove_scratch(self.scratch, self.sub_uid) if self.scratch is not None else None,
                        self._remove_gpu_scratch,
                        self._end_closing,
                        lambda: self._discard(self.ahead),
                        lambda: self.zygote.close() if self.zygote is not None else None):
            try:
                cleanup()
            except Exception:
                pass
        self.current, self.scratch, self.zygote, self.ahead = None, None, None, None
        result.checks = [self._blank(item) for item in items]
        for rec in result.checks:
            rec.message = Message("Not graded: see the error at the top.", "채점되지 않음: 맨 위의 오류를 보세요.")
        result.duration = time.monotonic() - started
        return result

    # standalone mode: one submission, pytest's own loop
    def pytest_sessionstart(self, session: pytest.Session) -> None:
        if not self.loop:
            self._started = time.monotonic()
            job = next(iter(self.jobs))
            self._result = self._begin(job)

    def pytest_sessionfinish(self, session: pytest.Session) -> None:
        if not self.loop and hasattr(self, "_result"):
            result = self._finish(self._result, list(session.items), self._started)
            if self.zygote is not None:
                self.zygote.close()
            self.on_result(result)


def _cut(text: str, limit: int) -> str:
    return text if len(text) <= limit else text[:limit] + " ..."


def zero_reason(result: SubmissionResult, sub: Submission | None) -> Message | None:
    """Why a submission could not be graded or earned nothing, in one line for the summary table and CSV: a
    syntax error, a time-out and an untouched template must not look alike there."""
    if result.error is not None:
        return result.error
    if sub is not None and sub.fatal is not None:
        return sub.fatal
    if sub is not None and sub.hung:
        return next(iter(sub.hung.values()))
    if result.score > 0 or sub is None:
        return None
    for e in sub.load_errors:
        if e.get("type") == "SyntaxError":
            w = e.get("where") or {}
            return Message(f"Syntax error in {w.get('file')}, line {w.get('line')}: {e.get('message')}; nothing "
                           "in it could run.",
                           f"문법 오류 ({w.get('file')}, {w.get('line')}번째 줄): {e.get('message')}; 아무것도 "
                           "실행되지 않았습니다.")
    if sub.not_implemented:
        names = ", ".join(sorted(sub.not_implemented)[:4]) + (", ..." if len(sub.not_implemented) > 4 else "")
        return Message(f"Not implemented yet: {names} raise NotImplementedError (the template as handed out).",
                       f"아직 구현되지 않음: {names}에서 NotImplementedError가 발생합니다 (배포된 템플릿 그대로).")
    return None


# ---------------------------------------------------------------------------------------------- standalone hooks

def pytest_addoption(parser: pytest.Parser) -> None:
    g = parser.getgroup("grade")
    g.addoption("--submission", help="grade this .py/.ipynb file with the collected checks")
    g.addoption("--grade-out", help="write the result (our JSON format) to this file")


def pytest_configure(config: pytest.Config) -> None:
    path = config.getoption("submission", None)
    if not path or config.pluginmanager.has_plugin("grading-session"):
        return
    p = Path(path).resolve()
    assignment = for_file(p.name) or load(Path(str(config.args[0] if config.args else ".")).resolve().parent.name)
    out = config.getoption("grade_out", None)

    def save(r: SubmissionResult) -> None:
        if out:
            import json
            write_atomic(Path(out), json.dumps(r.to_dict(), ensure_ascii=False))

    protect(assignment.private)
    config.pluginmanager.register(GradingPlugin(assignment, [Job(p.stem, p)], on_result=save, loop=False),
                                  "grading-session")
