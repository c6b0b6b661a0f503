"""`grade check`: a student runs the public checks on their own file and sees where they stand."""
from __future__ import annotations

import re
import shlex
from pathlib import Path
from typing import Any, Callable

from . import assignment as assignments, discover
from .errors import UsageError
from .messages import GRADER_FAILED, Message, term
from .plugin import Job
from .results import SubmissionResult, table
from .safetext import shown_name

HIDDEN_NOTE = Message(
    "These are the public checks only. After you submit, hidden checks with other seeds and shapes also run, "
    "so passing here does not guarantee full marks.",
    "여기서 실행한 것은 공개 검사뿐입니다. 제출 후에는 다른 시드와 shape을 쓰는 비공개 검사도 실행되므로, "
    "여기서 모두 통과해도 만점이 보장되지는 않습니다.")


def resolve(path: Path | None, assignment_name: str | None) -> tuple[Path, assignments.Assignment, Message | None]:
    """The file to check, its assignment, and a note when the file was a choice (.py beside .ipynb)."""
    note = None
    if path is None or path.is_dir():  # a folder is looked in as `grade check` looks here (it was "does not exist")
        known = [f for n in assignments.names() for f in assignments.load(n).files] if not assignment_name \
            else list(assignments.load(assignment_name).files)
        found = [(path / f if path is not None else Path(f)) for f in known]
        found = [f for f in found if f.is_file()]
        if not found:
            # A file saved under another name (a browser's "attention (1).py"): name what is here to check.
            try:
                here = sorted(f.name for f in Path(path or ".").iterdir() if f.suffix in (".py", ".ipynb")
                              and f.is_file() and not f.name.startswith("."))
            except OSError:
                here = []
            if here:
                shown = ", ".join(shown_name(n) for n in here[:5]) + (" ..." if len(here) > 5 else "")
                cmd = _check_command(here[0])
                also = Message(f". Here: {shown}" + (f" (grade check {cmd})" if cmd else ""),
                               f". 이 폴더의 파일: {shown}" + (f" (grade check {cmd})" if cmd else ""))
            else:
                also = Message("", "")
            raise UsageError(Message(
                f"No submission file here; looked for {', '.join(known)}. Pass the path: grade check FILE{also.en}",
                f"이 폴더에 제출 파일이 없습니다 ({', '.join(known)}). 경로를 지정하세요: grade check FILE{also.ko}")
                if path is None else Message(
                f"No submission file in {path}; looked for {', '.join(known)}. Pass the file: grade check FILE",
                f"{path} 폴더에 제출 파일이 없습니다 ({', '.join(known)}). 파일을 지정하세요: grade check FILE"))
        path = found[0]
        same = [f for f in found if f.stem == path.stem]
        pair = discover.newer_of_pair(same)
        if pair is not None:  # the bundle ships both: check the one the student worked on, and say so
            path, older = pair[0], next(f for f in same if f != pair[0])
            note = Message(
                f"Checking {path.name}, not {older.name}: both are here and {older.name} imports its code from "
                f"{path.name} (`from {path.stem} import ...`). To check the other: grade check {older.name}",
                f"{older.name}이(가) 아니라 {path.name}을(를) 확인합니다: 두 파일이 모두 있고 {older.name}은(는) "
                f"코드를 {path.name}에서 가져옵니다 (`from {path.stem} import ...`). 다른 파일을 확인하려면: "
                f"grade check {older.name}") if discover.notebook_imports(older, path) else Message(
                f"Checking {path.name}, not {older.name}: both are here and {older.name} is the template as handed "
                f"out, unchanged. To check the other: grade check {older.name}",
                f"{older.name}이(가) 아니라 {path.name}을(를) 확인합니다: 두 파일이 모두 있고 {older.name}은(는) 받은 "
                f"그대로의 템플릿입니다. 다른 파일을 확인하려면: grade check {older.name}") \
                if discover.untouched(older) and not discover.untouched(path) else Message(
                f"Checking {path.name}, not {older.name}: both are here and {path.name} was modified more "
                f"recently (the one you worked on). To check the other: grade check {older.name}",
                f"{older.name}이(가) 아니라 {path.name}을(를) 확인합니다: 두 파일이 모두 있고 {path.name}이(가) 더 "
                f"최근에 수정되었습니다 (작업 중인 파일). 다른 파일을 확인하려면: grade check {older.name}")
    if not path.is_file():
        raise UsageError(Message(f"{path} does not exist or is not a file.", f"{path} 파일이 없습니다."))
    if _is_zip(path):  # was "cannot tell which assignment ... Rename it", or with --assignment "not UTF-8 or CP949"
        raise UsageError(Message(
            f"{path.name} is a zip archive: grade check reads your code file itself. Unzip it and run grade check "
            "on the .py or .ipynb file inside.",
            f"{path.name}은(는) zip 압축 파일입니다: grade check는 코드 파일 자체를 읽습니다. 압축을 풀고 안에 있는 "
            ".py 또는 .ipynb 파일로 grade check를 실행하세요."))
    a = assignments.load(assignment_name) if assignment_name else assignments.recognise(path)
    if a is None:
        names = ", ".join(f for n in assignments.names() for f in assignments.load(n).files)
        raise UsageError(Message(
            f"Cannot tell which assignment {path.name} belongs to (known files: {names}). "
            "Rename it or pass --assignment NAME.",
            f"{path.name}이(가) 어느 과제인지 알 수 없습니다 (알려진 파일: {names}). 이름을 바꾸거나 "
            "--assignment NAME을 지정하세요."))
    return path.resolve(), a, note


def _check_command(name: str) -> str | None:
    """`name` as a shell needs it in the command to copy, or None where it cannot be shown as it is (a control
    character or a byte of no encoding: shown_name replaces those). Double quotes where they keep every character
    as it is in sh, PowerShell and cmd alike; else single quotes (sh and PowerShell): a file named
    "attention $(touch x).py" was offered as grade check "attention $(touch x).py", which runs the command in
    its name when copied."""
    if shown_name(name) != name:
        return None
    if name.startswith("-"):  # read as an option otherwise
        name = "./" + name
    if not re.search(r"[^\w./\-]", name):
        return name
    return f'"{name}"' if not re.search(r'[$`\\"!%]', name) else shlex.quote(name)


def _is_zip(path: Path) -> bool:
    if path.suffix.lower() == ".zip":
        return True
    try:
        with open(path, "rb") as f:
            return f.read(4) == b"PK\x03\x04"
    except OSError:
        return False


def select(a: assignments.Assignment, wanted: tuple[str, ...]) -> list[str] | None:
    """Question ids for --question values: an id (CausalAttention) or a section number (3.4 picks the questions
    whose title names a section 3.4 or 3.4.x). None when nothing was asked for (every question)."""
    if not wanted:
        return None

    def sections(title: str) -> list[str]:  # "Step exercises (3.3, 3.4.1, 3.5.1 - 3.5.2)" names four
        return re.findall(r"\d+(?:\.\d+)+", title)

    picked = []
    for w in wanted:
        hits = [q.id for q in a.questions
                if q.id == w or q.title == w or any(s == w or s.startswith(w + ".") for s in sections(q.title))]
        if not hits:
            listed = ", ".join(f"{q.id} ({', '.join(sections(q.title)) or q.title})" for q in a.questions)
            ko_titles = a.ko.get("questions", {}) if isinstance(a.ko, dict) else {}
            listed_ko = ", ".join(f"{q.id} ({', '.join(sections(q.title)) or str(ko_titles.get(q.id) or q.title)})"
                                  for q in a.questions)  # (the Korean titles: the English ones read as untranslated)
            raise UsageError(Message(f"No question {w!r} in {a.name}; choose from: {listed}.",
                                     f"{a.name}에 {w!r} 문제가 없습니다. 다음 중에서 고르세요: {listed_ko}."))
        picked += [h for h in hits if h not in picked]
    return picked


CHECKER_FAILED = Message(
    "The checker itself failed on this computer: this says nothing about your code (ask your instructor or TA "
    "with the lines below; they come from the checker and your Python installation).",
    "이 컴퓨터에서 검사 도구 자체가 실패했습니다. 코드의 문제가 아닙니다 (아래 내용을 담당 교수자나 조교에게 "
    "보여 주세요. 검사 도구와 Python 설치에서 나온 내용입니다).")


def main(*, path: Path | None, assignment_name: str | None = None, lang: str = "en",
         echo: Callable[[str], None] = print, questions: tuple[str, ...] = ()) -> int:
    from . import exam, plainworker
    file, a, note = resolve(path, assignment_name)
    mode = (exam.config(a) or exam.ExamConfig(None, None, "", "flag", 0.0, {}, {})).feedback  # "" if not an exam
    if mode == "none":  # the exam shows nothing the code does: nothing runs
        text, code = exam.report_none(a, file, lang)
        echo(text)
        return code
    only = select(a, questions)
    # Where the sandbox cannot run (Windows, macOS), a plain worker runs the public checks, labelled as such.
    unsandboxed = plainworker.sandbox_missing() is not None
    if unsandboxed:
        zygote: Any = plainworker.PlainPool()
    else:
        from .sandbox import Zygote
        # Started first: it imports torch in the background while this process imports pytest and torch.
        zygote = Zygote(full_warm_up=False)
    from .runner import grade
    results: list[SubmissionResult] = []
    sections = [w for w in questions if re.fullmatch(r"\d+(?:\.\d+)*", w)] or None
    grade(a, [Job(file.stem, file)], results.append, public_only=True, zygote=zygote, only=only, sections=sections)
    r = results[0]
    if mode == "runs":
        text, code = exam.report_runs(a, file, r, lang)
        if unsandboxed:
            echo(f"{plainworker.label().text(lang)}\n")
        echo(text)
        return code
    if mode:
        echo(exam.mode_line(mode, file.name, lang))
    scope = "" if only is None else f" (only {', '.join(only)})"
    scope_ko = "" if only is None else f" ({', '.join(only)}만)"
    echo(f"{a.title_in(lang)} - " + (f"{file.name} 공개 검사{scope_ko}\n" if lang == "ko"
                                     else f"public checks for {file.name}{scope}\n"))
    if unsandboxed:
        echo(f"{plainworker.label().text(lang)}\n")
    if note is not None:
        echo(f"{term('note', lang)}: {note.text(lang)}\n")
    failed = r.error == GRADER_FAILED
    if failed:  # on the student's own computer nobody else will look: say so, and show what went wrong
        r.error = CHECKER_FAILED
    echo(table(r, lang, labels=a.question_labels(lang)))
    if failed:
        echo("\n".join(r.staff.strip().splitlines()[-12:]))
    if unsandboxed:  # kept with the result too (its `sandbox` field says the same: none, public only)
        r.notes.insert(0, plainworker.label())
    echo("")
    echo(HIDDEN_NOTE.text(lang))
    return 0 if r.error is None and r.checks and all(c.status in ("passed", "skipped") for c in r.checks) else 1
