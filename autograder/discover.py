"""Find the submissions in a folder: one entry per student, a file or a folder holding one gradable file."""
from __future__ import annotations

import re
from pathlib import Path

from .assignment import Assignment
from .messages import Message
from .plugin import Job

GRADABLE = (".py", ".ipynb")
# Never the student's answer, even when it is the only .py in a folder: these would shadow real modules
# or configure pytest if anything imported them.
NOT_ANSWERS = {"conftest.py", "setup.py", "__init__.py", "torch.py", "numpy.py", "pytest.py"}


def student_id(name: str) -> str:
    clean = re.sub(r"[^A-Za-z0-9._-]+", "_", name).strip("._") or "submission"
    return clean[:100]


def pick_file(folder: Path, assignment: Assignment) -> tuple[Path | None, Message | None]:
    """The file to grade in a submission folder, or an explanation of why there is none."""
    files = [p for p in sorted(folder.rglob("*")) if p.is_file() and p.suffix in GRADABLE
             and not any(part.startswith(".") or part == "__pycache__" for part in p.relative_to(folder).parts)]
    named = [p for p in files if p.name in assignment.files]
    if len(named) == 1:
        return named[0], None
    rel = lambda ps: ", ".join(str(p.relative_to(folder)) for p in ps)  # noqa: E731
    if len(named) > 1:
        return None, Message(
            f"The submission holds several files the grader could grade ({rel(named)}); submit only one of "
            f"{' or '.join(assignment.files)}.",
            f"제출물에 채점할 수 있는 파일이 여러 개 있습니다 ({rel(named)}). {' 또는 '.join(assignment.files)} 중 "
            "하나만 제출하세요.")
    others = [p for p in files if p.name not in NOT_ANSWERS and not p.name.startswith("test_")]
    if len(others) == 1:
        return others[0], None
    if not others:
        return None, Message(
            f"No .py or .ipynb file was found in the submission; expected {' or '.join(assignment.files)}.",
            f"제출물에서 .py나 .ipynb 파일을 찾지 못했습니다. {' 또는 '.join(assignment.files)}이(가) 필요합니다.")
    return None, Message(
        f"The submission holds several candidate files ({rel(others)}) and none is named "
        f"{' or '.join(assignment.files)}; rename the one to grade.",
        f"제출물에 후보 파일이 여러 개 있고({rel(others)}) {' 또는 '.join(assignment.files)}라는 이름의 파일이 "
        "없습니다. 채점할 파일의 이름을 바꾸세요.")


def find(root: Path, assignment: Assignment) -> list[Job]:
    """One Job per entry of `root` (hidden entries skipped); ids are unique and safe as file names."""
    jobs: list[Job] = []
    seen: dict[str, int] = {}
    for entry in sorted(root.iterdir()):
        if entry.name.startswith(".") or entry.name in ("submission_metadata.yml", "__pycache__"):
            continue
        sid = student_id(entry.stem if entry.is_file() else entry.name)
        seen[sid] = seen.get(sid, 0) + 1
        if seen[sid] > 1:
            sid = f"{sid}-{seen[sid]}"
        if entry.is_dir():
            path, err = pick_file(entry, assignment)
            jobs.append(Job(sid, path, err))
        elif entry.suffix in GRADABLE:
            jobs.append(Job(sid, entry))
        else:
            jobs.append(Job(sid, None, Message(
                f"{entry.name} is not a .py or .ipynb file and cannot be graded.",
                f"{entry.name}은(는) .py나 .ipynb 파일이 아니어서 채점할 수 없습니다.")))
    return jobs
