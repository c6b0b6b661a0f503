"""Typed grading results and their serializers: Gradescope results.json, CSV rows, and a terminal table."""
from __future__ import annotations

import copy
import csv
import io
import json
import os
import stat
import tempfile
from dataclasses import dataclass, field, fields, is_dataclass, replace
from pathlib import Path
from typing import Any

from .messages import Message, term
from .safetext import clean, clean_data


_FIELDS: dict[type, tuple[str, ...]] = {}


def _plain(obj: Any) -> Any:
    """dataclasses.asdict for the result types (dataclasses, lists, tuples, dicts of JSON values), without its
    deep copy of every leaf: a result of 200 checks took 6 ms, in the batch's single coordinating process."""
    kind = type(obj)
    if kind in (str, int, float, bool) or obj is None:
        return obj
    if kind is list:
        return [_plain(x) for x in obj]
    if kind is dict:
        return {k: _plain(v) for k, v in obj.items()}
    if kind is tuple:
        return tuple(_plain(x) for x in obj)
    names = _FIELDS.get(kind)
    if names is None:
        if not is_dataclass(obj):
            return copy.deepcopy(obj)
        names = _FIELDS[kind] = tuple(f.name for f in fields(obj))
    return {n: _plain(getattr(obj, n)) for n in names}


_SHARED: dict[tuple[type, Any], Any] = {}  # SubmissionResult.summary_only's values, one object each


@dataclass(slots=True)
class CheckResult:
    name: str
    nodeid: str
    question: str
    points: float
    score: float
    status: str  # passed | failed | skipped | error
    public: bool
    visibility: str
    message: Message | None = None
    output: str = ""  # what the student's code printed during a public check
    staff: str = ""  # staff-only detail: tracebacks, messages of hidden checks that could leak
    name_ko: str = ""  # the check's name in Korean, when the assignment gives one

    def title(self, lang: str = "en") -> str:
        return self.name_ko if lang == "ko" and self.name_ko else self.name


@dataclass
class SubmissionResult:
    student: str
    submission: str
    assignment: str
    checks: list[CheckResult] = field(default_factory=list)
    notes: list[Message] = field(default_factory=list)
    error: Message | None = None  # the submission could not be graded at all
    staff: str = ""
    duration: float = 0.0
    questions: list[str] = field(default_factory=list)  # question ids in assignment order
    sha256: str = ""
    origin: dict[str, Any] = field(default_factory=dict)  # where it came from: folder, export submitters
    grader: str = ""  # fingerprint of the checks and options that produced it (batch resume compares it)
    sandbox: dict[str, str] = field(default_factory=dict)  # containment that ran: namespaces, scratch, memory
    exam: dict[str, Any] = field(default_factory=dict)  # exams: variant, late minutes, penalty (exam.py)
    settings: dict[str, Any] = field(default_factory=dict)  # what `grader` is the hash of, to say why a regrade
    reason: Message | None = None  # one line: why the code could not be graded or earned nothing, if it did not

    @property
    def late(self) -> float | None:
        return self.exam.get("late")

    @property
    def score(self) -> float:
        return round(max(0.0, sum(c.score for c in self.checks) - self.exam.get("penalty", 0.0)), 4)

    @property
    def max_score(self) -> float:
        return round(sum(c.points for c in self.checks), 4)

    def summary_only(self) -> "SubmissionResult":
        """What the CSVs and the summary table need (scores per check, the error, the reason, origin, exam), none
        of the feedback: what `grade batch` keeps in memory per student once the full result is on disk."""
        same = _SHARED.setdefault  # the same few question ids, statuses and point values in every result
        return replace(self, checks=[CheckResult(name="", nodeid="", question=same((str, c.question), c.question),
                                                 points=same((type(c.points), c.points), c.points),
                                                 score=same((type(c.score), c.score), c.score),
                                                 status=same((str, c.status), c.status), public=c.public,
                                                 visibility=same((str, c.visibility), c.visibility))
                                     for c in self.checks],
                       notes=[], staff="", sandbox={}, settings={})

    def by_question(self) -> dict[str, tuple[float, float]]:
        out: dict[str, tuple[float, float]] = {q: (0.0, 0.0) for q in self.questions}
        for c in self.checks:
            s, m = out.get(c.question, (0.0, 0.0))
            out[c.question] = (round(s + c.score, 4), round(m + c.points, 4))
        return out

    # ------------------------------------------------------------------ our own round-trip format

    def to_dict(self) -> dict[str, Any]:
        d = _plain(self)
        d["score"], d["max_score"] = self.score, self.max_score
        return d

    @classmethod
    def from_dict(cls, d: dict[str, Any]) -> "SubmissionResult":
        def msg(m: Any) -> Message | None:
            return Message(**m) if isinstance(m, dict) else None
        checks = [CheckResult(**{**c, "message": msg(c.get("message"))}) for c in d.get("checks", [])]
        return cls(student=d["student"], submission=d["submission"], assignment=d["assignment"], checks=checks,
                   notes=[Message(**n) for n in d.get("notes", [])], error=msg(d.get("error")),
                   staff=d.get("staff", ""), duration=d.get("duration", 0.0),
                   questions=list(d.get("questions", [])), sha256=d.get("sha256", ""),
                   origin=dict(d.get("origin") or {}), grader=str(d.get("grader", "")),
                   sandbox=dict(d.get("sandbox") or {}), exam=dict(d.get("exam") or {}),
                   settings=dict(d.get("settings") or {}), reason=msg(d.get("reason")))


# ---------------------------------------------------------------------------------------------- Gradescope

def _check_output(c: CheckResult, lang: str) -> str:
    parts = []
    if c.message is not None:
        parts.append(c.message.text(lang))
    elif c.status == "passed":
        parts.append("통과" if lang == "ko" else "Passed.")
    if c.output:
        parts.append(("코드 출력:\n" if lang == "ko" else "Your code printed:\n") + c.output)
    return "\n".join(parts)


def question_labels(assignment_name: str, lang: str) -> dict[str, str]:
    """Question ids as students read them in `lang` (assignment.Assignment.question_labels); {} if unknown."""
    if lang != "ko":
        return {}
    from .assignment import load  # lazily: results are also read where no assignment folder exists
    try:
        return load(assignment_name).question_labels(lang)
    except Exception:  # noqa: BLE001 - an unknown or unreadable assignment keeps the ids
        return {}


_HELD_BACK = ("visible", "after_due_date", "after_published", "hidden")  # Gradescope's, least held back first


def to_gradescope(r: SubmissionResult, lang: str = "en") -> dict[str, Any]:
    """Gradescope's results.json: one test per check, tagged with its question; staff details hidden."""
    tests: list[dict[str, Any]] = []
    labels = question_labels(r.assignment, lang)
    for i, c in enumerate(r.checks, start=1):
        tests.append({
            "name": f"{labels.get(c.question, c.question)}: {c.title(lang)}", "number": str(i), "score": c.score,
            "max_score": c.points,
            # a 0-point skip is a note (e.g. "no GPU here, the GPU part was simulated"), not a failure
            "status": "passed" if c.status == "passed" or (c.status == "skipped" and c.points == 0) else "failed",
            "output": _check_output(c, lang),
            "output_format": "text", "tags": [c.question], "visibility": c.visibility,
        })
        if c.staff:
            tests.append({"name": f"[staff] {c.question}: {c.name}", "score": 0, "max_score": 0,
                          "status": "failed" if c.status != "passed" else "passed", "output": c.staff,
                          "output_format": "text", "tags": [c.question, "staff"], "visibility": "hidden"})
    if r.error is not None:
        title = "채점기: 제출물을 채점할 수 없음" if lang == "ko" else "Autograder: submission could not be graded"
        tests.insert(0, {"name": title, "score": 0, "max_score": 0,
                         "status": "failed", "output": r.error.text(lang), "output_format": "text",
                         "tags": ["autograder"], "visibility": "visible"})
    if r.staff:
        tests.append({"name": "[staff] autograder details", "score": 0, "max_score": 0, "status": "failed",
                      "output": r.staff, "output_format": "text", "tags": ["staff"], "visibility": "hidden"})
    notes = "\n".join(n.text(lang) for n in r.notes)
    # An exam's total is a value too: while a check is held back (after_published), so is the score, which would
    # otherwise show the hidden checks' points to the student during the exam. A lab shows its score.
    shown = "visible"
    if r.exam:
        shown = max((c.visibility for c in r.checks if c.visibility in _HELD_BACK), key=_HELD_BACK.index,
                    default="visible")
    # Last line of defence for text that reached a result another way than the worker protocol (file names).
    return clean_data({"score": r.score, "execution_time": round(r.duration, 3), "output": notes, "output_format": "text",
            "visibility": shown, "stdout_visibility": "hidden",
            "extra_data": {"student": r.student, "submission": r.submission, "assignment": r.assignment,
                           "max_score": r.max_score, "questions": {q: list(v) for q, v in r.by_question().items()},
                           "sha256": r.sha256, "origin": r.origin, "sandbox": r.sandbox,
                           **({"late": r.late} if r.late is not None else {}),
                           # on Gradescope, where results.json has no `internal` copy, what the staff must see
                           **{k: r.exam[k] for k in ("early", "wrong_secret") if r.exam.get(k)}},
            "tests": tests})


# ---------------------------------------------------------------------------------------------- CSV and files

_FORMULA_START = ("=", "+", "-", "@", "\t", "\r")


def cell(text: str) -> str:
    """A text cell a spreadsheet will not run: student-made text (a file named `=HYPERLINK(...).py`, a name in
    Gradescope's metadata) that starts like a formula gets a leading apostrophe (OWASP's CSV-injection advice)."""
    text = clean(text, True)
    return "'" + text if text.startswith(_FORMULA_START) else text


def csv_text(results: list[SubmissionResult], questions: list[str]) -> str:
    buf = io.StringIO()
    w = csv.writer(buf)
    timed = any(r.late is not None for r in results)  # an exam with a window: minutes late per student
    w.writerow(["student", "submission", "score", "max_score", *questions, "reason", "folder"]
               + (["late"] if timed else []))
    for r in sorted(results, key=lambda r: r.student):
        per_q = r.by_question()
        w.writerow([cell(r.student), cell(r.submission), r.score, r.max_score,
                    *[per_q.get(q, (0.0, 0.0))[0] for q in questions],
                    # (a result that is the grader's own failure has its error and no reason of its own)
                    cell(one_line((r.reason or r.error).en)) if r.reason or r.error else "",
                    cell(str(r.origin.get("folder", "")))]
                   + ([f"{r.late:g}" if r.late is not None else ""] if timed else []))
    return buf.getvalue()


def grades_csv_text(results: list[SubmissionResult], questions: list[str]) -> str:
    """grades.csv, for an LMS import: one row per student (a group submission: one per member, same scores)
    with sid, email and name when a Gradescope export supplied them. A submission that could not be graded
    has an empty total, not a 0: the instructor decides, the grader's failure never reads as a score."""
    buf = io.StringIO()
    w = csv.writer(buf)
    w.writerow(["sid", "email", "name", "student", "total", *questions, "status"])
    for r in sorted(results, key=lambda r: r.student):
        per_q = r.by_question()
        scores = [""] * (1 + len(questions)) if r.error else [r.score, *[per_q.get(q, (0.0, 0.0))[0]
                                                                          for q in questions]]
        status = "not graded: " + r.error.en if r.error else ""
        people = [p for p in r.origin.get("submitters", []) if isinstance(p, dict)] or [{}]
        for p in people:
            w.writerow([cell(str(p.get("sid", ""))), cell(str(p.get("email", ""))), cell(str(p.get("name", ""))),
                        cell(r.student), *scores, cell(status)])
    return buf.getvalue()


def one_line(text: str, limit: int = 110) -> str:
    """The first sentence of `text` on one line, shortened at a word boundary (never mid-word) when too long."""
    text = " ".join(text.split())
    for end in (". ", "; "):
        if end in text:
            text = text[:text.index(end) + 1].rstrip(";")
            break
    if len(text) <= limit:
        return text
    cut = text[:limit - 1]
    cut = cut[:cut.rfind(" ")] if " " in cut else cut
    return cut.rstrip(" ,;:(") + "…"


def write_atomic(path: Path, text: str) -> None:
    """Write via a temporary file and rename, so a crash never leaves a truncated file behind."""
    path.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=f".{path.name}.", suffix=".tmp")
    try:
        with os.fdopen(fd, "w", encoding="utf-8") as f:
            f.write(text)
            f.flush()
            os.fsync(f.fileno())
        os.replace(tmp, path)
    except BaseException:
        try:
            os.unlink(tmp)
        except OSError:
            pass
        raise


def write_result(out_dir: Path, r: SubmissionResult, lang: str) -> Path:
    path = out_dir / f"{r.student}.json"
    gs = to_gradescope(r, lang)
    gs["extra_data"]["internal"] = clean_data(r.to_dict())  # a resumed batch rebuilds the CSV from it
    # One line: json's C encoder runs only without indent (the indented form took 9 ms per result in the batch's
    # single coordinating process; tools and `grade report` read it either way).
    write_atomic(path, json.dumps(gs, ensure_ascii=False))
    return path


def read_text_file(path: Path) -> str:
    """A regular file's text (UTF-8); OSError for anything else. A FIFO named <id>.json among the results hung every
    command that reads them (opening it waits for a writer; red team, round 23), a device file could be endless."""
    fd = os.open(path, os.O_RDONLY | os.O_NONBLOCK | os.O_CLOEXEC)
    try:
        if not stat.S_ISREG(os.fstat(fd).st_mode):
            raise OSError(f"{path} is not a regular file")
        with os.fdopen(fd, "rb", closefd=False) as f:
            return f.read().decode("utf-8")
    finally:
        os.close(fd)


def read_result(path: Path) -> SubmissionResult | None:
    try:
        data = json.loads(read_text_file(path))
        return SubmissionResult.from_dict(data["extra_data"]["internal"])
    except (OSError, ValueError, KeyError, TypeError):
        return None


# ---------------------------------------------------------------------------------------------- terminal

def columns(text: str) -> int:
    """Terminal columns `text` takes: Hangul and other wide characters take two."""
    import unicodedata
    return sum(2 if unicodedata.east_asian_width(ch) in ("W", "F") else 1 for ch in text)


# How a check ended and how a question scored, as the terminal table shows them (one place for both languages).
STATUS_TAG = {"en": {"passed": "PASS", "failed": "FAIL", "skipped": "SKIP", "error": "ERROR"},
              "ko": {"passed": "통과", "failed": "실패", "skipped": "건너뜀", "error": "오류"}}
MARK = {"en": {"full": "ok", "zero": "--", "part": "~~"}, "ko": {"full": "만점", "zero": "0점", "part": "부분"}}


def table(r: SubmissionResult, lang: str = "en", show_passed: bool = False,
          labels: dict[str, str] | None = None) -> str:
    """The terminal summary: one row per question, then the checks that did not pass.

    labels: each question's name as shown (the Korean title in Korean); the id where none is given. In Korean the
    score comes first, so rows stay aligned whatever the width of the Korean title after it."""
    lines = []
    per_q = r.by_question()
    labels = labels or {}
    name = {q: labels.get(q) or q for q in per_q}
    marks = MARK["ko" if lang == "ko" else "en"]
    tags = STATUS_TAG["ko" if lang == "ko" else "en"]

    def mark(s: float, m: float) -> str:
        return marks["full"] if s == m and m > 0 else marks["zero"] if s == 0 else marks["part"]
    if lang == "ko":
        width = max([len(f"{s:g}/{m:g}") for s, m in per_q.values()] + [len(f"{r.score:g}/{r.max_score:g}"), 4])
        head = term('score', lang)
        lines.append(f"{' ' * (width - columns(head))}{head}  {' ' * 4}  {term('question', lang)}")
        for q, (s, m) in per_q.items():
            mk = mark(s, m)
            lines.append(f"{f'{s:g}/{m:g}'.rjust(width)}  {mk}{' ' * (4 - columns(mk))}  {name[q]}")
        lines.append(f"{f'{r.score:g}/{r.max_score:g}'.rjust(width)}  {term('total', lang)}")
    else:
        width = max([len(name[q]) for q in per_q] + [8])
        lines.append(f"{term('question', lang).ljust(width)}  {term('score', lang)}")
        for q, (s, m) in per_q.items():
            lines.append(f"{name[q].ljust(width)}  {s:g}/{m:g}  {mark(s, m)}")
        lines.append(f"{term('total', lang).ljust(width)}  {r.score:g}/{r.max_score:g}")
    if r.error is not None:
        lines.append("")
        lines.append(r.error.text(lang))
    for n in r.notes:
        lines.append(f"{term('note', lang)}: {n.text(lang)}")
    failed = [c for c in r.checks if c.status != "passed" or show_passed]
    if failed:
        lines.append("")
    # Checks that failed with the very same message (e.g. all those a fatal error stopped) are shown once, with
    # their count, rather than one screenful of identical lines.
    groups: dict[tuple[str, str], list[CheckResult]] = {}
    for c in failed:
        text = c.message.text(lang) if c.message else ""
        key = (c.status, text) if text and c.status != "passed" else (c.status, c.nodeid)
        groups.setdefault(key, []).append(c)
    for (status, _key), cs in groups.items():
        tag = tags[status]
        c = cs[0]
        text = c.message.text(lang) if c.message else ""
        if len(cs) == 1:
            lines.append(f"[{tag}] {name.get(c.question, c.question)}: {c.title(lang)} ({c.score:g}/{c.points:g})")
        else:
            qs = list(dict.fromkeys(x.question for x in cs))
            score, points = sum(x.score for x in cs), sum(x.points for x in cs)
            if lang == "ko":
                where = "모든 문항" if len(qs) > 1 and set(qs) == set(per_q) else \
                    ", ".join(name.get(q, q) for q in qs)
                lines.append(f"[{tag}] {where}의 검사 {len(cs)}개 ({score:g}/{points:g}), 모두 같은 메시지:")
            else:
                where = "every question" if len(qs) > 1 and set(qs) == set(per_q) else ", ".join(qs)
                lines.append(f"[{tag}] {len(cs)} checks of {where} ({score:g}/{points:g}), all with this message:")
        if text:
            lines.append("       " + text.replace("\n", "\n       "))
    return clean("\n".join(lines))
