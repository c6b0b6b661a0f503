"""Exams: per-student variants from a secret, papers, the roster, time windows, and the integrity audit.

A variant is a pure function of (secret, exam, student id): HMAC-SHA256 picks one value per key of the
assignment's [exam.variants]. Only the secret is kept; papers, grading and the audit recompute the rest.
"""
from __future__ import annotations

import ast
import csv
import datetime as dt
import hashlib
import hmac
import io
import json
import math
import os
import re
import tomllib
from collections import Counter
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from .assignment import PROJECT_ROOT, Assignment
from .errors import UsageError
from .messages import Message

SECRET_ENV = "GRADE_EXAM_SECRET"
FEEDBACK = ("none", "runs", "public")
LATE_POLICIES = ("flag", "zero", "per_minute")
VARIANT_BEGIN = "# ---- EXAM VARIANT"
VARIANT_END = "# ---- END OF EXAM VARIANT"
PRIVATE_DIR = "exam_private"  # in a Gradescope zip: the roster and the secret (staff-only zip)
DEMO_SECRET_MARK = b"DEMO-ONLY-SECRET"  # how examples/exam/demo-only.secret begins
DEMO_OK_ENV = "GRADE_DEMO_SECRET_OK"  # set to 1 by `make demo`: the published demo secret may be used
MAKE_SECRET = ("make one with: python -c \"import secrets; print(secrets.token_hex(32))\" > exam.secret && "
               "chmod 600 exam.secret, then pass --secret-file exam.secret (or set GRADE_EXAM_SECRET); keep it "
               "out of the repository and use the same file for papers, grading and Gradescope")
MAKE_SECRET_KO = ("다음처럼 만드세요: python -c \"import secrets; print(secrets.token_hex(32))\" > exam.secret && "
                  "chmod 600 exam.secret, 그리고 --secret-file exam.secret을 지정하세요 (또는 GRADE_EXAM_SECRET 설정). "
                  "저장소 밖에 두고 시험지, 채점, Gradescope에 같은 파일을 쓰세요")


class ExamError(UsageError):
    """Raised for exam input that cannot work: no secret, a bad roster, an assignment that is not an exam."""


class WrongSecret(ExamError):
    """Raised when the papers handed in were made with another secret than the one grading was given: the
    instructor's mistake, which would otherwise grade every student against variants that are not on their paper."""


# ---------------------------------------------------------------------------------------------- configuration

@dataclass(frozen=True)
class ExamConfig:
    start: dt.datetime | None
    end: dt.datetime | None
    feedback: str
    late_policy: str
    late_penalty: float
    variants: dict[str, list]
    default: dict[str, Any]


def _when(text: Any, what: str) -> dt.datetime | None:
    if text in (None, ""):
        return None
    t = parse_time(str(text))
    if t is None:
        raise ExamError(f"[exam] {what} = {text!r} is not an ISO 8601 time with a zone "
                        "(e.g. 2026-11-20T10:00:00+09:00)")
    return t


def config(a: Assignment) -> ExamConfig | None:
    """The assignment's [exam] table, or None when it is not an exam."""
    cfg = tomllib.loads((a.dir / "assignment.toml").read_text(encoding="utf-8")).get("exam")
    if not isinstance(cfg, dict):
        return None
    feedback = cfg.get("feedback", "runs")
    policy = cfg.get("late_policy", "flag")
    if feedback not in FEEDBACK:
        raise ExamError(f"[exam] feedback must be one of {', '.join(FEEDBACK)}, not {feedback!r}")
    if policy not in LATE_POLICIES:
        raise ExamError(f"[exam] late_policy must be one of {', '.join(LATE_POLICIES)}, not {policy!r}")
    variants = dict(cfg.get("variants", {}))
    for k, vs in variants.items():
        if not isinstance(vs, list) or not vs:
            raise ExamError(f"[exam.variants] {k} must be a non-empty list of values")
    return ExamConfig(start=_when(cfg.get("start"), "start"), end=_when(cfg.get("end"), "end"), feedback=feedback,
                      late_policy=policy, late_penalty=float(cfg.get("late_penalty", 1.0)), variants=variants,
                      default=dict(cfg.get("default", {})))


def require(a: Assignment) -> ExamConfig:
    c = config(a)
    if c is None or not c.variants:
        raise ExamError(f"assignment {a.name!r} is not an exam with variants (no [exam.variants] in its "
                        "assignment.toml)")
    return c


# ---------------------------------------------------------------------------------------------- secret, variants

def read_secret(secret_file: Path | None, demo_ok: bool = False) -> bytes:
    """The exam secret from --secret-file, else $GRADE_EXAM_SECRET; refuses to go on without one. demo_ok: the
    demo's secret was already allowed where it was chosen (a Gradescope zip's, built with the demo consent)."""
    if secret_file is not None:
        try:
            raw = secret_file.read_bytes().strip()
        except OSError as e:
            raise ExamError(Message(
                f"cannot read the secret file {secret_file} ({e.strerror}); {MAKE_SECRET}",
                f"비밀 값 파일 {secret_file}을(를) 읽을 수 없습니다 ({e.strerror}). {MAKE_SECRET_KO}")) from None
    else:
        # Taken out of the environment so that grader processes and their workers never inherit it.
        raw = os.environ.pop(SECRET_ENV, "").strip().encode()
    if not raw:
        raise ExamError(Message(
            f"no exam secret: pass --secret-file FILE or set {SECRET_ENV}; {MAKE_SECRET}",
            f"시험 비밀 값이 없습니다: --secret-file FILE을 지정하거나 {SECRET_ENV}를 설정하세요. {MAKE_SECRET_KO}"))
    if len(raw) < 16:
        raise ExamError(Message(
            f"the exam secret is too short ({len(raw)} bytes; at least 16); {MAKE_SECRET}",
            f"시험 비밀 값이 너무 짧습니다 ({len(raw)}바이트; 16바이트 이상). {MAKE_SECRET_KO}"))
    if raw.startswith(DEMO_SECRET_MARK) and os.environ.get(DEMO_OK_ENV) != "1" and not demo_ok:
        # The demo's secret is in the repository: anyone can compute every student's variant (and paper code) from
        # it. An instructor who copied `make demo`'s command for a real exam would hand out papers with no secret.
        raise ExamError(Message(
            f"this is the demo's secret (examples/exam/demo-only.secret), published with the grader: with it anyone "
            f"can work out every student's variant. Use your own secret: {MAKE_SECRET}. (For a demo only, set "
            f"{DEMO_OK_ENV}=1, as `make demo` does.)",
            f"이것은 데모용 비밀 값(examples/exam/demo-only.secret)으로, 채점기와 함께 공개되어 있어 누구나 모든 학생의 "
            f"변형을 알아낼 수 있습니다. 본인의 비밀 값을 쓰세요: {MAKE_SECRET_KO} (데모에서만 `make demo`처럼 "
            f"{DEMO_OK_ENV}=1로 설정하세요.)"))
    return raw


def normalize_id(raw: str) -> str:
    """A roster id as `grade batch` names students: an email becomes its local part, ASCII letters in lower case,
    and the rest goes through discover.entry_id as file names and export submitters do (a Korean name became
    `submission` here and `student-<hash>` there: the student's own file was "not on the roster", and a file named
    submission.py got their paper). Python's lower() is not used: it makes the Kelvin sign a k (see email_key)."""
    from .discover import entry_id
    raw = raw.strip()
    if "@" in raw:
        raw = raw.split("@", 1)[0]
    return entry_id(raw.translate(_ASCII_LOWER)) if raw else ""


MARK_LINE = "# paper code / 시험지 코드: "
_MARK = re.compile(r"(?m)^# paper code / 시험지 코드: ([0-9a-f]{12})[ \t]*$")


def paper_mark(secret: bytes, exam: str) -> str:
    """The code every paper of an exam carries in its header: the first 12 hex digits of HMAC-SHA256(secret,
    "paper-fingerprint" NUL exam). Grading compares the codes handed in with its own secret's (Plan.check_marks):
    a wrong --secret-file graded the whole class against variants that were not on their papers, exited 0 and told
    each student their paper said what it did not. The code is the same for the whole class and, being an HMAC,
    tells nothing of the secret or of anyone's variant (a guessable secret could be checked against it, as against
    a paper's own constants already: make it as MAKE_SECRET says)."""
    return hmac.new(secret, b"paper-fingerprint\0" + exam.encode(), hashlib.sha256).hexdigest()[:12]


def read_mark(path: Path) -> str | None:
    """The paper code a submitted file carries (its first), None where it has none (a paper of an older release, a
    file written from scratch) or cannot be read: such a file says nothing about the secret."""
    try:
        m = _MARK.search(_code(path))
    except Exception:  # noqa: BLE001 - an unreadable file is reported by grading, not here
        return None
    return m.group(1) if m else None


def variant_for(secret: bytes, exam: str, student: str, choices: dict[str, list]) -> dict[str, Any]:
    """One value per key, drawn from HMAC-SHA256(secret, exam NUL id); the same inputs give the same variant."""
    digest = hmac.new(secret, f"{exam}\0{normalize_id(student)}".encode(), hashlib.sha256).digest()
    n = int.from_bytes(digest, "big")
    out: dict[str, Any] = {}
    for key, values in choices.items():  # the toml order: adding a key at the end keeps earlier draws
        n, i = divmod(n, len(values))
        out[key] = values[i]
    return out


# ---------------------------------------------------------------------------------------------- roster

@dataclass(frozen=True)
class Student:
    id: str
    extra_minutes: float = 0.0
    email: str = ""  # the roster's full address, where its id is one: only that account is this student
    name: str = ""  # the roster's id as written, where the id is not (a Korean name: `student-<hash>`)


_ASCII_LOWER = str.maketrans("ABCDEFGHIJKLMNOPQRSTUVWXYZ", "abcdefghijklmnopqrstuvwxyz")


def email_key(email: str) -> str:
    """An address as compared with the roster's: ASCII letters in lower case, everything else as it is (Python's
    lower() maps the Kelvin sign U+212A to 'k': an account '\u212aim@uni.example' was taken for kim@uni.example)."""
    return email.strip().translate(_ASCII_LOWER)


def submitter_emails(origin: dict[str, Any] | None) -> list[str]:
    """The submitters' full addresses (see email_key) that a Gradescope export or zip gives, else []."""
    people = (origin or {}).get("submitters") or []
    return [e for e in (email_key(str(p.get("email") or "")) for p in people if isinstance(p, dict)) if "@" in e]


MAX_EXTRA_MINUTES = 7 * 24 * 60  # a week: anything beyond is a typo, not an accommodation


def _column(header: str) -> str:
    """A roster column's name as read: case, spaces and hyphens aside (`Extra Minutes` is extra_minutes)."""
    name = re.sub(r"[\s\-]+", "_", header.strip().lower())
    return "extra_minutes" if name in ("extra_minutes", "extra_time", "extra_mins", "extra", "minutes") else name


def read_roster(path: Path) -> dict[str, Student]:
    """ROSTER.csv: a column `id` (as grade batch names students; an email is reduced to its local part) and an
    optional `extra_minutes` (also read as `Extra Minutes`, `extra_time`); other columns (names) are ignored."""
    from .errors import SubmissionFormatError
    from .source import decode
    try:
        data = path.read_bytes()
    except OSError as e:
        raise ExamError(Message(f"cannot read the roster {path} ({e.strerror or e})",
                                f"명단 {path}을(를) 읽을 수 없습니다 ({e.strerror or e})")) from None
    try:
        # As Excel saves it: UTF-8 (with BOM), "Unicode text" (UTF-16) or, on Korean Windows, CP949: the names in a
        # CP949 roster were refused with a codec error (`grade exam papers` and `grade batch --roster` both stopped).
        text = decode(data, path.name)[0]
    except SubmissionFormatError:
        raise ExamError(Message(f"cannot read the roster {path}: it is not UTF-8, UTF-16 or CP949 text; save it "
                                "from the spreadsheet as \"CSV UTF-8\"",
                                f"명단 {path}을(를) 읽을 수 없습니다: UTF-8, UTF-16, CP949 텍스트가 아닙니다. "
                                "스프레드시트에서 \"CSV UTF-8\"로 저장하세요")) from None
    # Excel's "Unicode text" (the UTF-16 it saves) is tab-separated, whatever the locale: a header with tabs and
    # no comma is read that way (it was refused with "save it as comma-separated CSV").
    first = text.lstrip("\ufeff").split("\n", 1)[0]
    dialect = {"delimiter": "\t"} if "\t" in first and "," not in first else {}
    rows = list(csv.DictReader(io.StringIO(text), **dialect))
    fields = csv.DictReader(io.StringIO(text), **dialect).fieldnames or []
    heads = [_column(h) for h in fields]
    if "id" not in heads:
        sep = next((f"{c!r}" for c in (";", "\t", "|") if len(fields) == 1 and c in fields[0]), "")
        raise ExamError(Message(
            f"{path}: the roster needs a column `id` (optional: extra_minutes); found {fields}"
            + (f" (the columns look separated by {sep}: save it as comma-separated CSV)" if sep else ""),
            f"{path}: 명단에는 `id` 열이 있어야 합니다 (선택: extra_minutes). 찾은 열: {fields}"
            + (f" (열이 {sep}(으)로 나뉜 것 같습니다: 쉼표로 나눈 CSV로 저장하세요)" if sep else "")))
    if heads.count("extra_minutes") > 1:
        raise ExamError(f"{path}: more than one column reads as extra_minutes ({fields}); keep one")
    out: dict[str, Student] = {}
    for n, row in enumerate(rows, start=2):
        row = {_column(k or ""): (v or "").strip() for k, v in row.items() if isinstance(k, str)}
        sid = normalize_id(row.get("id", ""))
        if not sid:
            continue
        try:
            extra = float(row.get("extra_minutes") or 0)
        except ValueError:
            raise ExamError(f"{path}, line {n}: extra_minutes {row.get('extra_minutes')!r} is not a number") \
                from None
        if not (0 <= extra <= MAX_EXTRA_MINUTES):  # NaN fails this too: it stopped grade batch part way
            raise ExamError(f"{path}, line {n}: extra_minutes {row.get('extra_minutes')!r} is not between 0 and "
                            f"{MAX_EXTRA_MINUTES} (a week)")
        if sid in out:
            raise ExamError(f"{path}, line {n}: the id {sid!r} appears twice")
        raw = row.get("id", "")
        out[sid] = Student(sid, extra, email_key(raw) if "@" in raw else "", _written(raw))
    if not out:
        raise ExamError(Message(f"{path}: the roster lists nobody", f"{path}: 명단에 아무도 없습니다"))
    return out


def _written(raw: str) -> str:
    """The roster's id as written where its id (a hash, for a name with non-ASCII letters) does not show it: the
    paper's header and the manifest then name the student as the instructor wrote them."""
    from .safetext import clean
    local = raw.strip().split("@", 1)[0]
    return clean(local, one_line=True) if not local.isascii() else ""


def label(student: Student | None, sid: str) -> str:
    """Who a paper is for, as its header says: the id, and the name as written where the id does not show it."""
    return f"{student.name} ({sid})" if student is not None and student.name else sid


# ---------------------------------------------------------------------------------------------- papers

def literal(value: Any) -> str:
    """A variant value as Python source: lists become tuples (shapes)."""
    if isinstance(value, list):
        return "(" + ", ".join(literal(v) for v in value) + ("," if len(value) == 1 else "") + ")"
    try:
        text = repr(value)
    except ValueError:  # an int over Python's digit limit, written as 0xfff... in a student's file
        return f"<an integer of {value.bit_length()} bits>"
    return text if len(text) <= 200 else text[:200] + "..."


def render(text: str, v: dict[str, Any], student: str, mark: str = "") -> str:
    """The template's text with its EXAM VARIANT block set to `v` (works on a .py or on one notebook cell); with
    `mark`, the block's header also carries the exam's paper code (paper_mark)."""
    begin = text.find(VARIANT_BEGIN)
    end = text.find(VARIANT_END, begin)
    if begin < 0 or end < 0:
        raise ExamError("the template has no EXAM VARIANT block")
    block = text[begin:end]
    for key, value in v.items():
        block, n = re.subn(rf"(?m)^{key.upper()} = .*$", f"{key.upper()} = {literal(value)}", block)
        if n != 1:
            raise ExamError(f"the template's EXAM VARIANT block sets {key.upper()} {n} times (expected once)")
    first_nl = block.index("\n") + 1
    block = block[:first_nl] + f"# paper for / 응시자: {student}\n" + (f"{MARK_LINE}{mark}\n" if mark else "") \
        + block[first_nl:]
    return text[:begin] + block + text[end:]


def render_notebook(nb_text: str, v: dict[str, Any], student: str, mark: str = "") -> str:
    nb = json.loads(nb_text)
    done = False
    for cell in nb.get("cells", []):
        src = "".join(cell.get("source", []))
        if cell.get("cell_type") == "code" and VARIANT_BEGIN in src:
            cell["source"] = render(src, v, student, mark).splitlines(keepends=True)
            done = True
    if not done:
        raise ExamError("the notebook template has no EXAM VARIANT cell")
    return json.dumps(nb, ensure_ascii=False, indent=1) + "\n"


def template(a: Assignment, suffix: str) -> Path:
    return PROJECT_ROOT / "student_template" / f"{a.name}{suffix}"


def paper(a: Assignment, v: dict[str, Any], student: str, mark: str = "") -> str:
    return render(template(a, ".py").read_text(encoding="utf-8"), v, student, mark)


def fingerprint(text: str) -> str:
    return hashlib.sha256(text.encode("utf-8")).hexdigest()[:16]


def write_papers(*, assignment: Assignment, roster: Path, out: Path, secret_file: Path | None) -> list[dict]:
    """`grade exam papers`: DIR/<id>/<name>.py and .ipynb per student, and DIR/manifest.csv."""
    cfg = require(assignment)
    secret = read_secret(secret_file)
    students = read_roster(roster)
    nb_template = template(assignment, ".ipynb")
    mark = paper_mark(secret, assignment.name)
    rows = []
    for sid in sorted(students):
        v = variant_for(secret, assignment.name, sid, cfg.variants)
        who = label(students[sid], sid)
        text = paper(assignment, v, who, mark)
        folder = out / sid
        folder.mkdir(parents=True, exist_ok=True)
        (folder / f"{assignment.name}.py").write_text(text, encoding="utf-8")
        if nb_template.is_file():
            (folder / f"{assignment.name}.ipynb").write_text(
                render_notebook(nb_template.read_text(encoding="utf-8"), v, who, mark), encoding="utf-8")
        rows.append({"id": sid, "name": students[sid].name, "extra_minutes": f"{students[sid].extra_minutes:g}",
                     **{k: json.dumps(val) for k, val in v.items()}, "fingerprint": fingerprint(text)})
    buf = io.StringIO()
    w = csv.DictWriter(buf, fieldnames=["id", "name", "extra_minutes", *cfg.variants, "fingerprint"],
                       lineterminator="\n")
    w.writeheader()
    w.writerows(rows)
    (out / "manifest.csv").write_text(buf.getvalue(), encoding="utf-8")
    return rows


# ---------------------------------------------------------------------------------------------- time windows

def parse_time(text: str) -> dt.datetime | None:
    """An aware datetime from ISO 8601 or Gradescope's forms ("2026-11-20 11:45:12.519522000 +0900")."""
    s = text.strip()
    s = re.sub(r"(\.\d{6})\d+", r"\1", s)  # nanoseconds
    s = re.sub(r"\s+([+-]\d{2}:?\d{2}|Z)$", r"\1", s)  # a space before the zone
    try:
        t = dt.datetime.fromisoformat(s.replace("Z", "+00:00"))
    except ValueError:
        return None
    return t if t.tzinfo is not None else None


def minutes_late(submitted: dt.datetime, end: dt.datetime, extra_minutes: float) -> float:
    """Whole minutes past the student's own end (the exam's end plus their extra time), 0 when on time."""
    over = (submitted - (end + dt.timedelta(minutes=extra_minutes))).total_seconds()
    return float(math.ceil(over / 60)) if over > 0 else 0.0


def penalty(policy: str, per_minute: float, late: float, score: float) -> float:
    if late <= 0 or policy == "flag":
        return 0.0
    if policy == "zero":
        return score
    return min(score, round(late * per_minute, 4))


# ---------------------------------------------------------------------------------------------- grading plan

NOT_ON_ROSTER = "not_on_roster"


@dataclass
class Plan:
    """What `grade batch --roster` needs per job: the variant, the student's extra time, the window."""
    assignment: Assignment
    cfg: ExamConfig
    students: dict[str, Student] | None = None  # None: no roster, everyone gets the default variant
    secret: bytes = b""
    times: dict[str, str] = field(default_factory=dict)  # submission times known from elsewhere (Gradescope)
    foreign: set[str] = field(default_factory=set)  # ids whose file carries another secret's paper code
    owner: dict[str, str] = field(default_factory=dict)  # an earlier submission's id -> the roster student's (bind)

    def extra_minutes(self, student: str) -> float:
        """The extra time of the student a job is: a roster student's earlier submission (`chen-2`) is theirs too,
        judged in their window (it was told it was 20 minutes late, inside chen's 30 extra minutes)."""
        sid = self.owner.get(student) or normalize_id(student)
        return self.students[sid].extra_minutes if self.students and sid in self.students else 0.0

    def check_marks(self, jobs: list) -> None:
        """Before grading: compare the paper codes the files carry with this secret's (paper_mark). If most of the
        files that carry one carry one same other code, the secret is not the one the papers were made with, and nothing is
        graded (WrongSecret: the instructor's to fix, said as such). Otherwise a file with another code is that
        student's (a paper of another exam or another run of `grade exam papers`, or an edited header): recorded
        in their result for the audit, and graded as usual. Files without a code (papers of an older release,
        answers written from scratch) count for neither."""
        if self.students is None and self.cfg.variants:
            # No --roster: everyone is graded against [exam.default]. Papers from `grade exam papers` (they carry a
            # code) were each made for their student's own variant: that grade is wrong for every one of them, and
            # a note on the terminal was all the instructor was told.
            coded = [job.student for job in jobs if job.path is not None and read_mark(job.path) is not None]
            if coded:
                raise ExamError(Message(
                    f"{len(coded)} of the {len(jobs)} submissions are papers made by `grade exam papers` (they carry "
                    "a `# paper code` line), each for its student's own variant; without --roster every submission "
                    "would be graded against the default variant instead, so nothing was graded. Pass --roster "
                    f"ROSTER.csv and --secret-file (or {SECRET_ENV}), the ones the papers were made with.",
                    f"제출물 {len(jobs)}개 중 {len(coded)}개가 `grade exam papers`로 만든 시험지입니다(`# paper code` "
                    "줄이 있음). 시험지마다 그 학생의 변형으로 만들어졌는데, --roster 없이 채점하면 모든 제출물을 기본 "
                    "변형으로 채점하게 되므로 아무것도 채점하지 않았습니다. 시험지를 만들 때 쓴 --roster ROSTER.csv와 "
                    f"--secret-file(또는 {SECRET_ENV})을 지정하세요."))
        if not self.students or not self.secret:
            return
        want = paper_mark(self.secret, self.assignment.name)
        seen = {job.student: m for job in jobs if job.path is not None and (m := read_mark(job.path)) is not None}
        other = sorted(sid for sid, m in seen.items() if m != want)
        # Another secret gives one other code, the same on every paper: codes made up or edited by students differ
        # from one another, and a few of them (two of three coded files in a small sitting) stopped the whole batch
        # (red team s10). So it takes one other code on most of the coded files.
        # And only roster students' own (latest) submissions vote, one each, where there are any: files of ids the
        # roster does not list (other accounts, files added to the folder) and a student's earlier submissions are
        # graded as usual but say nothing about the secret: four files of made-up ids carrying one made-up code
        # stopped a batch of three students' papers (red team s17). Where no roster student is in the batch (the
        # zip's --try as `local.try`, a lone upload from an account the roster lacks) every coded file votes.
        voters = {job.student for job in jobs if job.error is None and normalize_id(job.student) in self.students}
        votes = {sid: m for sid, m in seen.items() if sid in voters} if voters else seen
        top = max(Counter(m for m in votes.values() if m != want).values(), default=0)
        if votes and top * 2 > len(votes):
            raise WrongSecret(Message(
                f"The exam secret given is not the one the papers were made with: {top} of the {len(votes)} "
                "submissions that carry a paper code (the `# paper code` line `grade exam papers` writes) carry "
                "another code than this secret gives, the same one. Grading with it would mark every student against variants "
                "that are not on their papers, so nothing was graded. Pass the --secret-file (or "
                f"{SECRET_ENV}) that `grade exam papers` was run with.",
                f"주어진 시험 비밀 값이 시험지를 만들 때 쓴 것과 다릅니다: 시험지 코드가 있는 제출물(`grade exam "
                f"papers`가 쓰는 `# paper code` 줄) {len(votes)}개 중 {top}개가 이 비밀 값의 코드와 다른 같은 코드를 "
                "가지고 있습니다. 이대로 채점하면 모든 학생을 자기 시험지에 없는 변형으로 채점하게 되므로 아무것도 채점하지 "
                f"않았습니다. `grade exam papers`에 쓴 --secret-file(또는 {SECRET_ENV})을 지정하세요."))
        self.foreign = set(other)

    def variant(self, student: str) -> dict[str, Any] | None:
        if self.students is None:
            return dict(self.cfg.default)
        sid = normalize_id(student)
        if sid not in self.students:
            return None
        return variant_for(self.secret, self.assignment.name, sid, self.cfg.variants)

    def bound_id(self, student: str, emails: list[str]) -> str:
        """The id a submission from `emails` is graded under. Where the roster gives a student's full address,
        only that address is that student: a submission from it is theirs whatever its export id (`chen-2` when
        another account `chen@elsewhere` came first), and one from another address whose local part is the
        same is not (it gets an id of its full address, which no roster lists). Without addresses (a folder of
        files named by the instructor, or a roster of plain ids) the id stays as it is."""
        if not self.students or not emails:
            return student
        by_email = {s.email: s.id for s in self.students.values() if s.email}
        claimed = sorted({by_email[e] for e in emails if e in by_email})
        if len(emails) > 1:  # a group is nobody's paper (staff decide): an id that no roster lists
            return student if normalize_id(student) not in self.students else f"{student}-group"
        if len(claimed) == 1:
            return claimed[0]
        base = re.sub(r"-\d+$", "", normalize_id(student))  # discover's "-2" for a clash of local parts
        listed = self.students.get(base) or self.students.get(normalize_id(student))
        if listed is not None and listed.email and not claimed:
            from .discover import entry_id
            return entry_id(emails[0].replace("@", "-at-"))
        return student

    def bind(self, found: list) -> None:
        """`grade batch`: decide whose paper each job of the submissions folder is, before anything is keyed by
        their ids. A roster student's own address wins the id over an account that took it first (bound_id); a
        student's several submissions (an export's `-2` folder: a resubmission) are one claim, of which the latest
        (created_at) is graded and the others are told so; a "-N" made unique never takes an id that the roster
        owns (it was given to one student's second folder, and the roster student of that id left the roster)."""
        if not self.students:
            return
        rows = []
        for job, origin in found:
            emails = submitter_emails(origin)
            want = self.bound_id(job.student, emails)
            if want not in self.students and len(emails) <= 1 and (origin or {}).get("submitters"):
                base = re.sub(r"-\d+$", "", want)
                listed = self.students.get(base)
                local = normalize_id(emails[0].split("@", 1)[0]) if emails else ""
                if listed is not None and base != want and local == base and (not listed.email or listed.email in emails):
                    want = base  # the same student's other folder (the "-2" is the export's, not their address's)
            when = parse_time(str((origin or {}).get("created_at") or ""))
            rows.append((job, want, when.timestamp() if when is not None else float("-inf")))
        taken: set[str] = set()
        # claims of roster ids first, the latest of each first; then the rest; each made unique with "-2", "-3"...
        for job, want, _when in sorted(rows, key=lambda r: (r[1] not in self.students, -r[2])):
            sid, n = want, 2
            while sid in taken or (sid != want and sid in self.students):
                sid, n = f"{want}-{n}", n + 1
            if sid != want and want in self.students:
                self.owner[sid] = want  # their window, their extra time (extra_minutes)
            if sid != want and want in self.students and job.error is None:  # a student's earlier submission
                job.error = Message(
                    f"This is an earlier submission of `{want}`'s: the latest one in this export was graded as "
                    f"`{want}`. Your instructor can grade this one instead.",
                    f"`{want}`의 이전 제출물입니다: 이 내보내기에서 가장 최근 제출물을 `{want}`(으)로 채점했습니다. "
                    "담당 교수자가 이 제출물을 대신 채점할 수 있습니다.")
            taken.add(sid)
            job.student = sid

    def prepare(self, job) -> None:
        """Give the job its variant (the checks read it as options["variant"]), or an error if not listed."""
        if job.error is not None:
            return
        v = self.variant(job.student)
        if v is None and "+" in job.student:  # an export's id for several submitters
            job.error = Message(
                f"`{job.student}` is a group submission: an exam paper is one student's, so there is no paper to "
                "grade it against; your instructor will decide.",
                f"`{job.student}`은(는) 그룹 제출물입니다: 시험지는 한 학생의 것이라 채점할 시험지가 없습니다. "
                "담당 교수자가 정합니다.")
            job.options = {"exam": NOT_ON_ROSTER}
            return
        if v is None:
            job.error = Message(
                f"`{job.student}` is not on this exam's roster, so there is no paper to grade this submission "
                "against; your instructor will check the name it was submitted under.",
                f"`{job.student}`은(는) 이 시험의 명단에 없어서 채점할 시험지가 없습니다. 담당 교수자가 제출 "
                "이름을 확인합니다.")
            job.options = {"exam": NOT_ON_ROSTER}
            return
        job.options = {"variant": v}

    def tag(self, job, origin: dict[str, Any] | None = None) -> str:
        """Part of the batch's resume key: a result is reused only for the same variant, extra time, submission
        time and submitters (an identical file resubmitted late kept the first one's lateness, and after a roster
        change a result kept another account's origin)."""
        extra = self.extra_minutes(job.student)
        key = [job.options or {}, extra, self.times.get(job.student, ""), str((origin or {}).get("created_at") or ""),
               submitter_emails(origin), str((origin or {}).get("folder") or "")]
        return hashlib.sha256(json.dumps(key, sort_keys=True).encode()).hexdigest()[:8]

    def stamp(self, r, origin: dict[str, Any], path: Path | None = None) -> None:
        """Record the variant and, with a window, how late the submission was and the penalty."""
        info: dict[str, Any] = {"variant": self.variant(r.student), "roster": self.students is not None}
        sid = normalize_id(r.student)
        when = self.times.get(r.student) or (origin or {}).get("created_at") or ""
        t = parse_time(str(when)) if when else None
        if self.cfg.end is not None and t is not None:
            extra = self.extra_minutes(r.student)
            late = minutes_late(t, self.cfg.end, extra)
            info.update(submitted_at=t.isoformat(), late=late, extra_minutes=extra, late_policy=self.cfg.late_policy)
            raw = round(sum(c.score for c in r.checks), 4)
            info["penalty"] = penalty(self.cfg.late_policy, self.cfg.late_penalty, late, raw)
            if late > 0:
                # The rule, never the points it took: those are the score's (min(score, ...)), which an exam holds
                # back with its hidden checks; a late note under "zero" said "100 point(s) off" (red team s19).
                rule_en, rule_ko = {
                    "zero": (": a late submission scores 0", ": 늦은 제출물은 0점"),
                    "per_minute": (f": {self.cfg.late_penalty:g} point(s) off per minute late, "
                                   f"{late * self.cfg.late_penalty:g} in all, never below 0",
                                   f": 1분에 {self.cfg.late_penalty:g}점씩, 모두 "
                                   f"{late * self.cfg.late_penalty:g}점 감점, 0점 미만으로는 내려가지 않음"),
                }.get(self.cfg.late_policy, ("", ""))
                r.notes.append(Message(
                    f"Submitted {late:g} minute(s) after your end time ({self.cfg.late_policy} policy{rule_en}).",
                    f"종료 시각보다 {late:g}분 늦게 제출했습니다 ({self.cfg.late_policy} 규정{rule_ko})."))
        if self.cfg.start is not None and t is not None and t < self.cfg.start:
            # Before the exam opened: the paper was out early (nothing is taken off; the audit says so).
            info.update(submitted_at=t.isoformat(), early=round((self.cfg.start - t).total_seconds() / 60, 2))
        if r.student in self.foreign:
            info["paper_code"] = "other"  # another secret's paper code (check_marks): the audit reports it
        has_template = template(self.assignment, ".py").is_file()  # not in a Gradescope zip
        if self.students is not None and info["variant"] is not None and has_template:
            info["paper"] = fingerprint(paper(self.assignment, info["variant"], label(self.students.get(sid), sid),
                                              paper_mark(self.secret, self.assignment.name)))
        if path is not None:
            info["path"] = str(path.resolve())  # for `grade exam audit`, which reads the code again
            # ... and its bytes: a name that is not UTF-8 (a CP949 `김철수.py` from a Korean Windows zip) comes back
            # from the result's JSON with U+FFFD in place of its bytes, and the audit called the file missing.
            info["path_bytes"] = os.fsencode(path.resolve()).hex()
        r.exam = info


def graded_path(info: dict[str, Any] | None) -> Path | None:
    """The file a result's exam record names (Plan.stamp): from its bytes where it has them, else its text."""
    if not isinstance(info, dict):
        return None
    raw = info.get("path_bytes")
    if isinstance(raw, str) and raw:
        try:
            return Path(os.fsdecode(bytes.fromhex(raw)))
        except ValueError:
            pass
    path = info.get("path")
    return Path(path) if isinstance(path, str) and path else None


def plan(a: Assignment, roster: Path | None, secret_file: Path | None) -> Plan | None:
    """The grading plan for `grade batch`: None for an assignment that is not an exam."""
    cfg = config(a)
    if cfg is None:
        if roster is not None:
            raise ExamError(Message(f"--roster is for exams; assignment {a.name!r} has no [exam] table",
                                    f"--roster는 시험용입니다. 과제 {a.name!r}에는 [exam] 표가 없습니다"))
        return None
    if roster is None:
        return Plan(a, cfg)
    return Plan(a, cfg, read_roster(roster), read_secret(secret_file))


def zip_files(a: Assignment, roster: Path | None, secret_file: Path | None) -> dict[str, bytes]:
    """What an exam's Gradescope zip must carry to pick each submitter's variant: the roster and the secret."""
    cfg = config(a)
    if cfg is None or not cfg.variants:
        if roster is not None:
            raise ExamError(f"--roster is for exams; assignment {a.name!r} has no [exam.variants]")
        return {}
    if roster is None:
        raise ExamError(f"{a.name} is an exam with per-student variants: pass --roster ROSTER.csv and the secret "
                        f"(--secret-file or {SECRET_ENV}); they go into the zip, which is then staff-only")
    read_roster(roster)  # refuse a broken roster here rather than on Gradescope
    return {"roster.csv": roster.read_bytes(), "secret": read_secret(secret_file)}


def gradescope_plan(a: Assignment, times: dict[str, str]) -> Plan | None:
    """On Gradescope: the plan from the roster and secret the zip carries (PRIVATE_DIR), else as without one."""
    folder = PROJECT_ROOT / PRIVATE_DIR
    if not (folder / "roster.csv").is_file():
        return plan(a, None, None)
    # (the secret was refused or allowed when the zip was built, `grade gradescope`: a demo zip built with
    # GRADE_DEMO_SECRET_OK=1 refused every submission on Gradescope, where nothing sets it; red team, round 22)
    p = Plan(a, require(a), read_roster(folder / "roster.csv"), read_secret(folder / "secret", demo_ok=True))
    p.times = dict(times)
    return p


# ---------------------------------------------------------------------------------------------- audit

K_GRAM = 10  # tokens per fingerprinted k-gram
WINDOW = 6  # winnowing window: any shared run of K_GRAM + WINDOW - 1 tokens is guaranteed to be seen
MIN_FINGERPRINTS = 8  # below this, too little of a student's own code remains to compare


@dataclass
class Finding:
    kind: str  # missing | changed | other_variant | rebinds | other_secret | similar | hidden_code | not_compared |
    # early | late | unparsed
    students: list[str]
    detail: str
    score: float = 0.0

    def to_dict(self) -> dict[str, Any]:
        return {"kind": self.kind, "students": self.students, "detail": self.detail, "score": self.score}


def _code(path: Path) -> str:
    return "\n".join(c.code for c in _cells(path))


def _cells(path: Path) -> list:
    from .source import read
    return read(path).cells


def constants(code: str) -> dict[str, Any]:
    """Top-level `NAME = literal` assignments, read without running anything ({} when the code cannot be parsed)."""
    from .source import Unparsable, parse
    try:
        return _constants(parse(code))
    except Unparsable:
        return {}


def cell_constants(cells: list) -> tuple[dict[str, Any], list[str]]:
    """constants() of a file's cells, each parsed on its own (a later cell's value wins, as when run), and one
    "<cell label>: <why>" per cell that could not be parsed: that cell's problem, never the caller's."""
    from .source import Unparsable, parse
    out: dict[str, Any] = {}
    failed: list[str] = []
    for c in cells:
        try:
            out.update(_constants(parse(c.code, c.label)))
        except Unparsable as e:
            failed.append(f"{c.label}: {e}")
    return out, failed


def _constants(tree: ast.Module) -> dict[str, Any]:
    out: dict[str, Any] = {}
    for node in tree.body:
        if isinstance(node, ast.Assign) and len(node.targets) == 1 and isinstance(node.targets[0], ast.Name):
            try:
                out[node.targets[0].id] = ast.literal_eval(node.value)
            except (ValueError, TypeError, SyntaxError, MemoryError, RecursionError):
                continue
    return out


def _rebinds(cells: list, keys: set[str]) -> str | None:
    """Where a file sets a variant constant other than as the paper's block does (`NAME = literal` at the top
    level): a tuple or other target, a value that is not a literal, an augmented assignment, a loop or import
    under that name, `global NAME`, or globals(). None if nowhere. (The audit reads the block without running the
    file: such a file can show one student's values there and run with others.)"""
    from .source import Unparsable, parse
    for c in cells:
        try:
            tree = parse(c.code, c.label)
        except Unparsable:
            continue
        plain = {id(n) for n in tree.body if isinstance(n, ast.Assign) and len(n.targets) == 1
                 and isinstance(n.targets[0], ast.Name) and _is_literal(n.value)}
        for node in ast.walk(tree):
            line = getattr(node, "lineno", "?")
            if isinstance(node, (ast.Global, ast.Nonlocal)) and keys & set(node.names):
                return f"global {sorted(keys & set(node.names))[0]} on line {line}"
            if isinstance(node, ast.Call) and isinstance(node.func, ast.Name) and node.func.id == "globals":
                return f"globals() on line {line}"
            if isinstance(node, ast.alias) and (node.asname or node.name) in keys:
                return f"import as {node.asname or node.name} on line {line}"
            if isinstance(node, (ast.Assign, ast.AugAssign, ast.AnnAssign, ast.For, ast.AsyncFor, ast.With,
                                 ast.AsyncWith, ast.NamedExpr, ast.Delete)) and id(node) not in plain:
                for sub in ast.walk(node):
                    if isinstance(sub, ast.Name) and isinstance(sub.ctx, (ast.Store, ast.Del)) and sub.id in keys:
                        return f"{sub.id} on line {getattr(sub, 'lineno', line)}"
    return None


def _is_literal(node: ast.AST) -> bool:
    try:
        ast.literal_eval(node)
        return True
    except (ValueError, TypeError, SyntaxError, MemoryError, RecursionError):
        return False


def _as_constants(v: dict[str, Any]) -> dict[str, Any]:
    return {k.upper(): (tuple(x) if isinstance(x, list) else x) for k, x in v.items()}


def tokens(code: str) -> list[str]:
    """Python tokens with comments, blank lines, layout and no-op `pass`/`;` dropped and every identifier, number
    and string replaced by a placeholder, so renaming, reformatting, recommenting or padding does not change the
    sequence (similarity.tokens, which `grade report` uses too)."""
    from . import similarity
    return [t.text for t in similarity.tokens(code)]


def winnow(toks: list[str], k: int = K_GRAM, w: int = WINDOW) -> set[int]:
    """Winnowing (Schleimer, Wilkerson, Aiken 2003): the minimum k-gram hash of every window of w."""
    grams = [int.from_bytes(hashlib.blake2b(" ".join(toks[i:i + k]).encode(), digest_size=8).digest(), "big")
             for i in range(len(toks) - k + 1)]
    if len(grams) <= w:
        return set(grams)
    return {min(grams[i:i + w]) for i in range(len(grams) - w + 1)}


def audit(results_dir: Path, *, threshold: float = 0.8) -> list[Finding]:
    """`grade exam audit`: read a graded exam's results and the files they point to."""
    from . import similarity
    from .results import read_result
    results = [r for p in sorted(results_dir.glob("*.json")) if (r := read_result(p)) is not None]
    graded = [r for r in results if r.exam]
    if not graded:
        raise ExamError(f"{results_dir} holds no exam results (grade the exam with grade batch --roster first)")
    from . import assignment as assignments
    findings: list[Finding] = []
    # A result graded without --roster holds the default variant, not a paper anyone was given: comparing with it
    # said of every student that their constants "differ from their paper".
    variants = {r.student: r.exam.get("variant") for r in graded
                if r.exam.get("variant") and r.exam.get("roster", True) is not False}
    codes: dict[str, str] = {}
    cells: dict[str, list] = {}
    for r in graded:
        path = graded_path(r.exam)
        if path is None:
            continue
        # Only the file that was graded is audited: the one at the stored path now may be another (a folder moved
        # away read as "no findings"; a file overwritten since lost its findings), as `grade report` checks too.
        try:
            if not Path(path).is_file():  # (nor is a FIFO put there opened: it would block)
                raise FileNotFoundError(2, "no such file")
            with open(path, "rb") as f:
                now = hashlib.file_digest(f, "sha256").hexdigest()
        except OSError as e:
            findings.append(Finding("missing", [r.student], f"{r.student}'s graded file {path} is not there now "
                                    f"({e.strerror or e}): not audited; restore it, or regrade"))
            continue
        if r.sha256:  # (a result of an older release may have none: its file is read as it is, as before)
            if now != r.sha256:
                findings.append(Finding("changed", [r.student], f"{r.student}'s file {path} has changed since it "
                                        "was graded (another sha256): not audited; restore the graded file, or "
                                        "regrade with grade batch"))
                continue
        try:
            cells[r.student] = _cells(Path(path))
        except Exception:  # noqa: BLE001 - an unreadable file is reported by grading, not here
            continue
        codes[r.student] = "\n".join(c.code for c in cells[r.student])
    # 1. another student's variant (a cell that cannot be parsed is reported, and the others are still read)
    for sid in codes:
        have, failed = cell_constants(cells[sid])
        if failed:
            more = f" and {len(failed) - 1} more" if len(failed) > 1 else ""
            findings.append(Finding("unparsed", [sid], f"{sid}: {failed[0]}{more}; constants there were not "
                                    "compared with the paper"))
        own = variants.get(sid)
        if not own:
            continue
        keys = list(_as_constants(own))
        moved = _rebinds(cells[sid], set(keys))
        if moved:
            # What its code ran with is not what the block shows: no claim about anyone's paper from the block (a
            # block with dana's values and bo's own set right after it framed dana).
            findings.append(Finding("rebinds", [sid], f"{sid} sets its variant constants outside the paper's block "
                                    f"({moved}): the block's values are not necessarily those its code ran with"))
            continue
        found = {k: have.get(k) for k in keys if k in have}
        if found == {k: _as_constants(own)[k] for k in found}:
            continue
        others = [o for o, v in variants.items() if o != sid and found and
                  all(_as_constants(v)[k] == x for k, x in found.items())]
        changed = ", ".join(f"{k} = {literal(list(x) if isinstance(x, tuple) else x)}" for k, x in found.items()
                            if _as_constants(own)[k] != x)
        findings.append(Finding("other_variant", [sid, *others],
                                f"{sid}'s constants differ from their paper ({changed})"
                                + (f" and match the paper of {', '.join(others)}" if others else "")))
    # 2. near-identical files, once the code every student was given is subtracted
    a = assignments.load(graded[0].assignment)
    prints: dict[str, set[int]] = {}
    for sid, code in codes.items():
        base = winnow(tokens(paper(a, variants.get(sid) or {}, sid) if variants.get(sid) else ""))
        base |= winnow(tokens(template(a, ".py").read_text(encoding="utf-8")))
        prints[sid] = winnow(tokens(code)) - base
    scores = {r.student: r.score for r in graded}
    for sid in sorted(prints):  # code the comparison cannot read as code: said, never silently passed over
        hidden = next((h for c in cells[sid] if (h := similarity.hidden_code(c.code))), None)
        if hidden:
            findings.append(Finding("hidden_code", [sid], f"{sid} runs code held in a string ({hidden}): what "
                                    "runs is not what the comparison reads"))
        elif len(prints[sid]) < MIN_FINGERPRINTS and (scores.get(sid) or 0) > 0:
            findings.append(Finding("not_compared", [sid], f"{sid} scored {scores[sid]:g} with too little code of "
                                    f"its own to compare ({len(prints[sid])} fingerprints besides the paper's)"))
    ids = sorted(prints)
    for i, x in enumerate(ids):
        for y in ids[i + 1:]:
            px, py = prints[x], prints[y]
            if min(len(px), len(py)) < MIN_FINGERPRINTS:
                continue
            share = len(px & py) / min(len(px), len(py))
            if share >= threshold:
                findings.append(Finding("similar", [x, y], f"{x} and {y} share {share:.0%} of their own code's "
                                        f"fingerprints ({len(px & py)} of {min(len(px), len(py))})",
                                        round(share, 3)))
    # 3. late submissions, any made before the exam opened, and papers made with another secret
    for r in graded:
        if r.exam.get("paper_code") == "other":
            findings.append(Finding("other_secret", [r.student], f"{r.student}'s file carries the paper code of "
                                    "another secret than the one this exam was graded with (a paper of another exam "
                                    "or another run of grade exam papers, or an edited header): the constants in "
                                    "it were not made for them with this secret"))
        if r.exam.get("early"):
            findings.append(Finding("early", [r.student], f"{r.student} submitted {r.exam['early']:g} minute(s) "
                                    "before the exam opened ([exam] start): the paper was out early",
                                    float(r.exam["early"])))
        if r.exam.get("late"):
            findings.append(Finding("late", [r.student], f"{r.student} submitted {r.exam['late']:g} minute(s) "
                                    f"late (extra time {r.exam.get('extra_minutes', 0):g} min, policy "
                                    f"{r.exam.get('late_policy')}, {r.exam.get('penalty', 0):g} point(s) off)",
                                    float(r.exam["late"])))
    return findings


def audit_text(findings: list[Finding]) -> str:
    if not findings:
        return "no findings: no other student's variant, no near-identical files, no late submission"
    order = {"missing": -1, "changed": -1, "other_variant": 0, "rebinds": 0, "other_secret": 0, "similar": 1,
             "hidden_code": 1, "not_compared": 1, "early": 2, "late": 2, "unparsed": 3}
    lines = [f"{f.kind:<14} {' '.join(f.students):<30} {f.detail}"
             for f in sorted(findings, key=lambda f: (order.get(f.kind, 9), -f.score, f.students))]
    return "\n".join(lines) + f"\n{len(findings)} finding(s)"


# ---------------------------------------------------------------------------------------------- grade check

STAGES = ("constructs", "shapes")  # the public checks of an exam are named "<stage>: ..."


def mode_line(mode: str, file: str, lang: str) -> str:
    what = {"none": ("only whether the file was found and which questions it defines",
                     "파일을 찾았는지와 어떤 문제를 정의했는지만"),
            "runs": ("only whether each question loads, constructs and returns the right shapes",
                     "각 문제가 불러와지는지, 생성되는지, 올바른 shape을 반환하는지만"),
            "public": ("the public checks", "공개 검사 결과를")}[mode]
    if lang == "ko":
        return (f"시험 모드 (feedback = {mode}): {file}에 대해 {what[1]} 보여 줍니다. 점수와 값은 시험이 끝난 뒤 "
                "채점됩니다.")
    return f"Exam mode (feedback = {mode}): {file}: shows {what[0]}. Scores and values are graded after the exam."


def defined_names(path: Path) -> set[str] | None:
    """Top-level names the file defines, read without running it; None when it cannot be read or parsed."""
    from .source import parse
    try:
        tree = parse(_code(path))
    except Exception:  # noqa: BLE001 - unreadable or not Python (Unparsable): reported as "not found"/"does not load"
        return None
    names: set[str] = set()
    for node in tree.body:
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
            names.add(node.name)
        elif isinstance(node, ast.Assign):
            names.update(t.id for t in node.targets if isinstance(t, ast.Name))
    return names


def _pad(text: str, width: int) -> str:
    """Left-justify by display width: Hangul takes two columns in a terminal."""
    from .results import columns
    return text + " " * max(1, width - columns(text))


def _word(ok: bool | None, lang: str) -> str:
    return "-" if ok is None else ("예" if ok else "아니오") if lang == "ko" else ("yes" if ok else "no")


def report_none(a: Assignment, path: Path, lang: str) -> tuple[str, int]:
    names = defined_names(path)
    lines = [mode_line("none", path.name, lang), ""]
    head = ("문제", "정의됨") if lang == "ko" else ("question", "defined")
    width = max(len(q.id) for q in a.questions) + 2
    lines.append(_pad(head[0], width) + head[1])
    for q in a.questions:
        lines.append(_pad(q.id, width) + _word(names is not None and all(n in names for n in q.names), lang))
    if names is None:
        lines += ["", "파일을 파이썬 코드로 읽을 수 없습니다." if lang == "ko" else "The file could not be read as Python code."]
    return "\n".join(lines), 0 if names is not None else 1


def report_runs(a: Assignment, path: Path, r, lang: str) -> tuple[str, int]:
    """Per question: loads, constructs, shapes, each yes or no; never a message, score or value."""
    names = defined_names(path) or set()
    lines = [mode_line("runs", path.name, lang), ""]
    heads = ("문제", "불러옴", "생성", "shape") if lang == "ko" else ("question", "loads", "constructs", "shapes")
    width = max(len(q.id) for q in a.questions) + 2
    lines.append(_pad(heads[0], width) + _pad(heads[1], 12) + _pad(heads[2], 12) + heads[3])
    all_ok = r.error is None
    for q in a.questions:
        loads = r.error is None and all(n in names for n in q.names)
        row = [loads]
        for stage in STAGES:
            mine = [c for c in r.checks if c.question == q.id and c.name.startswith(stage + ":")]
            row.append(None if not mine else loads and all(c.status == "passed" for c in mine))
        all_ok = all_ok and all(x is not False for x in row)
        lines.append(_pad(q.id, width) + "".join(_pad(_word(x, lang), 12) for x in row[:-1]) + _word(row[-1], lang))
    return "\n".join(line.rstrip() for line in lines), 0 if all_ok else 1
