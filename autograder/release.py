"""`grade release`: the student bundle. Everything `grade check` needs to run the public checks offline, and nothing
hidden: no hidden checks, no reference code, no hidden expected values.

Bundle layout (DIR):
    attention.py, attention.ipynb       the assignment's `files` found in student_template/ (the notebook only when
                                        it exists)
    cli.py, autograder/                 the engine (it holds nothing about any assignment)
    pyproject.toml                      minimal: `pip install DIR` gives `grade`; ships assignments/ as package data
    assignments/conftest.py
    assignments/<name>/assignment.toml  unchanged (its `private` paths simply do not exist here)
    assignments/<name>/public/          the public checks
    assignments/<name>/<module>.py      only the assignment modules the public checks import (common.py)
    README.md                           how to install and run `grade check`
"""
from __future__ import annotations

import ast
import json
import shutil
from pathlib import Path
from typing import Callable

from . import assignment as assignments
from . import discover
from .assignment import PROJECT_ROOT, Assignment
from .errors import UsageError
from .messages import Message, korean
from .gradescope import _tree  # regular files without caches

PYPROJECT = """[build-system]
requires = ["setuptools>=68"]
build-backend = "setuptools.build_meta"

[project]
name = "attention-grader"
version = "{version}"
description = "Student self-checks for the course labs: grade check runs the public checks on your file."
requires-python = ">=3.11"
# Install torch first from https://pytorch.org (the CPU build is enough); then pip install this folder.
# Install torch first (see README.md: the CPU build); this list does not pull the CUDA build if torch is there.
dependencies = ["torch>=2.1", "numpy", "pytest>=7", "click>=8"]

[project.scripts]
grade = "cli:main"

[tool.setuptools]
py-modules = ["cli"]

[tool.setuptools.packages.find]
include = ["autograder*", "assignments*"]

[tool.setuptools.package-data]
"*" = ["*.toml", "template_digests.json"]
"""

README = """# {title}

Your files: {files}.

Check your work with the public checks (they run offline, on your machine).

## 1. Install (once)

Install the CPU build of PyTorch first: a plain `pip install torch` on Linux downloads the CUDA build (several
GB), which the checks do not need. Then install this folder. Python 3.11 or newer.

| platform | commands (in this folder) |
| --- | --- |
| Linux | `python3 -m venv .venv && . .venv/bin/activate`<br>`pip install torch --index-url https://download.pytorch.org/whl/cpu`<br>`pip install .` |
| macOS | `python3 -m venv .venv && . .venv/bin/activate`<br>`pip install torch` (the macOS wheels are CPU/MPS only)<br>`pip install .` |
| Windows (PowerShell) | `py -m venv .venv; .venv\\Scripts\\Activate.ps1`<br>`pip install torch --index-url https://download.pytorch.org/whl/cpu`<br>`pip install .` |
| Colab | torch is already there: `!pip install -q /content/<this folder>` |

## 2. Check

```
grade check              # in the folder with {first}
grade check --lang ko    # 한국어 피드백
```

Without installing: `python cli.py check path/to/{first}`. With both the `.py` and the `.ipynb` in the folder,
`grade check` checks the one you modified last and says so.

Platforms: on Linux (WSL and Colab included) `grade check` runs your code in a sandboxed process. On native
Windows or macOS, which lack the Linux process controls the sandbox needs, it runs the same public checks in a
plain Python process with a time limit per call and says so above the table ("not sandboxed: public checks only,
run on Windows"); the scores are the same. Your submission is always graded in the sandbox.

These are the public checks only. After you submit, hidden checks with other seeds and shapes also run, so
passing here does not guarantee full marks.
"""

README_KO = """# {title}

제출할 파일: {files}.

공개 검사로 작업을 확인하세요 (인터넷 없이 여러분의 컴퓨터에서 실행됩니다).

## 1. 설치 (한 번만)

먼저 PyTorch의 CPU 빌드를 설치하세요: Linux에서 그냥 `pip install torch`를 하면 검사에 필요 없는 CUDA 빌드(수 GB)를
내려받습니다. 그다음 이 폴더를 설치합니다. Python 3.11 이상이 필요합니다.

| 플랫폼 | 명령 (이 폴더에서) |
| --- | --- |
| Linux | `python3 -m venv .venv && . .venv/bin/activate`<br>`pip install torch --index-url https://download.pytorch.org/whl/cpu`<br>`pip install .` |
| macOS | `python3 -m venv .venv && . .venv/bin/activate`<br>`pip install torch` (macOS용 휠은 CPU/MPS 전용)<br>`pip install .` |
| Windows (PowerShell) | `py -m venv .venv; .venv\\Scripts\\Activate.ps1`<br>`pip install torch --index-url https://download.pytorch.org/whl/cpu`<br>`pip install .` |
| Colab | torch가 이미 있습니다: `!pip install -q /content/<이 폴더>` |

## 2. 검사

```
grade check --lang ko    # {first}이(가) 있는 폴더에서
grade check              # English feedback
```

설치하지 않고 실행하려면: `python cli.py check path/to/{first} --lang ko`. 같은 폴더에 `.py`와 `.ipynb`가 모두
있으면 `grade check` 명령은 마지막으로 수정한 파일을 검사하고 그렇다고 알려 줍니다.

플랫폼: Linux(WSL과 Colab 포함)에서는 `grade check` 명령이 코드를 샌드박스 프로세스에서 실행합니다. 샌드박스에 필요한
Linux 프로세스 기능이 없는 Windows와 macOS에서는 같은 공개 검사를 호출마다 시간 제한이 있는 일반 Python
프로세스에서 실행하고, 표 위에 그렇다고 표시합니다 ("샌드박스 없이 실행: 공개 검사만, Windows에서 ..."). 점수는
같습니다. 제출물은 항상 샌드박스에서 채점됩니다.

여기서 실행되는 것은 공개 검사뿐입니다. 제출 후에는 다른 시드와 shape을 쓰는 비공개 검사도 실행되므로,
여기서 모두 통과해도 만점이 보장되지는 않습니다.
"""


def _version(root: Path) -> str:
    import tomllib
    try:
        return tomllib.loads((root / "pyproject.toml").read_text(encoding="utf-8"))["project"]["version"]
    except (OSError, KeyError, ValueError):
        return "0"


def _public_modules(a: Assignment) -> list[Path]:
    """Modules of the assignment's own package that the public checks import, followed transitively."""
    package = f"assignments.{a.dir.name}"
    todo = [p for p, _ in _tree(a.public_dir, a.public_dir) if p.suffix == ".py"]
    seen: set[Path] = set()
    needed: list[Path] = []
    while todo:
        py = todo.pop()
        if py in seen:
            continue
        seen.add(py)
        for node in ast.walk(ast.parse(py.read_text(encoding="utf-8"))):
            names = [node.module] if isinstance(node, ast.ImportFrom) and node.module and node.level == 0 else \
                [al.name for al in node.names] if isinstance(node, ast.Import) else []
            for n in names:
                if n.startswith(package + "."):
                    mod = a.dir / (n[len(package) + 1:].split(".")[0] + ".py")
                    if mod.is_file() and mod not in seen:
                        needed.append(mod)
                        todo.append(mod)
    return sorted(set(needed))


def bundle_files(a: Assignment, root: Path = PROJECT_ROOT, template: Path | None = None) -> list[tuple[Path, str]]:
    """(file, path in the bundle) for everything the bundle holds except the generated pyproject/README."""
    template = template if template is not None else root / "student_template"
    # only this assignment's files: student_template/ also holds other labs' skeletons and notebooks
    files = [(template / f, f) for f in a.files if (template / f).is_file()]
    files += _tree(root / "autograder", root)
    files.append((root / "cli.py", "cli.py"))
    conftest = root / "assignments" / "conftest.py"
    if conftest.is_file():
        files.append((conftest, "assignments/conftest.py"))
    files.append((a.dir / "assignment.toml", (a.dir / "assignment.toml").relative_to(root).as_posix()))
    if (a.dir / "ko.toml").is_file():  # Korean titles and check names, for grade check --lang ko
        files.append((a.dir / "ko.toml", (a.dir / "ko.toml").relative_to(root).as_posix()))
    files += [(m, m.relative_to(root).as_posix()) for m in _public_modules(a)]
    files += _tree(a.public_dir, root)
    return files


def audit(out: Path, a: Assignment, root: Path = PROJECT_ROOT) -> None:
    """Refuse a bundle that holds anything hidden: a hidden/private path, or a copy of a hidden or reference file."""
    private = [a.hidden_dir.resolve(), *a.private]
    secret = {p.read_bytes() for d in private if d.is_dir() for p, _ in _tree(d, d)} - {b""}
    for p in out.rglob("*"):
        rel = p.relative_to(out)
        if rel.parts[0] in ("reference",) or a.hidden_dir.name in rel.parts[:-1] or \
                (p.is_file() and p.read_bytes() in secret):
            raise UsageError(f"refusing to release {rel}: it is (or holds) hidden material")


def main(*, assignment_name: str = "attention", out: Path, template: Path | None = None, lang: str = "en",
         echo: Callable[[str], None] = lambda _m: None) -> list[Path]:
    a = assignments.load(assignment_name)
    if out.exists() and (not out.is_dir() or any(out.iterdir())):
        raise UsageError(Message(f"{out} exists and is not an empty folder; pass a new one",
                                 f"{out}이(가) 이미 있고 빈 폴더가 아닙니다. 새 폴더를 지정하세요"))
    root = PROJECT_ROOT
    files = bundle_files(a, root, template)
    written: list[Path] = []
    for src, rel in files:
        dst = out / rel
        dst.parent.mkdir(parents=True, exist_ok=True)
        shutil.copyfile(src, dst)
        written.append(dst)
    # The digests of the templates' code (discover.untouched: the bundle has no student_template/), so that `grade
    # check` in a folder holding the solved .py and the notebook as handed out, copied together, checks the .py
    # (red team s18: it checked the notebook, every check "not implemented yet").
    folder = template if template is not None else root / "student_template"
    digests = {f: d for f in a.files if (folder / f).is_file()
               and (d := discover.template_digest(folder / f)) is not None}
    if digests:
        dst = out / a.dir.relative_to(root) / discover.TEMPLATE_DIGESTS
        dst.parent.mkdir(parents=True, exist_ok=True)
        dst.write_text(json.dumps(digests, indent=1, sort_keys=True) + "\n", encoding="utf-8")
        written.append(dst)
    (out / "pyproject.toml").write_text(PYPROJECT.format(version=_version(root)), encoding="utf-8")
    student_files = [rel for _, rel in files if "/" not in rel and rel not in ("cli.py",)]
    readme = README_KO if lang == "ko" else README
    first = next((f for f in a.files if f in student_files), a.files[0])
    text = readme.format(title=a.title_in(lang), first=first,
                         files=", ".join(student_files) or ("강의 페이지 참고" if lang == "ko" else "see your course page"))
    (out / "README.md").write_text(korean(text) if lang == "ko" else text, encoding="utf-8")
    written += [out / "pyproject.toml", out / "README.md"]
    try:
        audit(out, a, root)
    except UsageError:
        shutil.rmtree(out, ignore_errors=True)
        raise
    echo(f"wrote {len(written)} files to {out}")
    return written

