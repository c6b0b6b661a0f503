"""`grade check`: a student runs the public checks on their own file and sees where they stand."""
from __future__ import annotations

from pathlib import Path
from typing import Callable

from . import assignment as assignments
from .errors import UsageError
from .messages import Message
from .plugin import Job
from .results import SubmissionResult, table

HIDDEN_NOTE = Message(
    "These are the public checks only. After you submit, hidden checks with other seeds and shapes also run, "
    "so passing here does not guarantee full marks.",
    "여기서 실행한 것은 공개 검사뿐입니다. 제출 후에는 다른 시드와 shape을 쓰는 비공개 검사도 실행되므로, "
    "여기서 모두 통과해도 만점이 보장되지는 않습니다.")


def resolve(path: Path | None, assignment_name: str | None) -> tuple[Path, assignments.Assignment]:
    if path is None:
        known = [f for n in assignments.names() for f in assignments.load(n).files] if not assignment_name \
            else list(assignments.load(assignment_name).files)
        found = [Path(f) for f in known if Path(f).is_file()]
        if not found:
            raise UsageError(Message(
                f"No submission file here; looked for {', '.join(known)}. Pass the path: grade check FILE",
                f"이 폴더에 제출 파일이 없습니다 ({', '.join(known)}). 경로를 지정하세요: grade check FILE"))
        path = found[0]
    if not path.is_file():
        raise UsageError(Message(f"{path} does not exist or is not a file.", f"{path} 파일이 없습니다."))
    a = assignments.load(assignment_name) if assignment_name else assignments.for_file(path.name)
    if a is None:
        names = ", ".join(f for n in assignments.names() for f in assignments.load(n).files)
        raise UsageError(Message(
            f"Cannot tell which assignment {path.name} belongs to (known files: {names}). "
            "Rename it or pass --assignment NAME.",
            f"{path.name}이(가) 어느 과제인지 알 수 없습니다 (알려진 파일: {names}). 이름을 바꾸거나 "
            "--assignment NAME을 지정하세요."))
    return path.resolve(), a


def main(*, path: Path | None, assignment_name: str | None = None, lang: str = "en",
         echo: Callable[[str], None] = print) -> int:
    from .sandbox import Zygote
    file, a = resolve(path, assignment_name)
    # Started first: it imports torch in the background while this process imports pytest and torch.
    zygote = Zygote(full_warm_up=False)
    from .runner import grade
    results: list[SubmissionResult] = []
    grade(a, [Job(file.stem, file)], results.append, public_only=True, zygote=zygote)
    r = results[0]
    echo(f"{a.title_in(lang)} - " + (f"{file.name} 공개 검사\n" if lang == "ko" else f"public checks for {file.name}\n"))
    echo(table(r, lang))
    echo("")
    echo(HIDDEN_NOTE.text(lang))
    return 0 if r.error is None and r.checks and all(c.status in ("passed", "skipped") for c in r.checks) else 1
