"""An assignment is a folder under assignments/ with an assignment.toml; the engine reads nothing else about it."""
from __future__ import annotations

import tomllib
from dataclasses import dataclass, field
from pathlib import Path

from .checks import VISIBILITIES
from .errors import AssignmentError
from .sandbox import Limits

PROJECT_ROOT = Path(__file__).resolve().parent.parent
ASSIGNMENTS = PROJECT_ROOT / "assignments"


@dataclass(frozen=True)
class Question:
    id: str
    title: str
    names: tuple[str, ...]  # what the student must define for it


@dataclass(frozen=True)
class Assignment:
    name: str
    title: str
    dir: Path
    files: tuple[str, ...]  # accepted submission file names, e.g. attention.py, attention.ipynb
    questions: tuple[Question, ...]
    public_dir: Path
    hidden_dir: Path
    hidden_visibility: str
    private: tuple[Path, ...]  # folders the worker must not be able to read
    limits: Limits = field(default_factory=Limits)
    options: dict = field(default_factory=dict)

    @property
    def question_ids(self) -> list[str]:
        return [q.id for q in self.questions]

    @property
    def graded_names(self) -> frozenset[str]:
        """Every name the checks look for; a rename hint never suggests turning one of them into another."""
        return frozenset(n for q in self.questions for n in q.names)

    def check_dirs(self, public_only: bool) -> list[Path]:
        return [self.public_dir] if public_only else [self.public_dir, self.hidden_dir]


def names() -> list[str]:
    return sorted(p.name for p in ASSIGNMENTS.iterdir() if (p / "assignment.toml").is_file()) \
        if ASSIGNMENTS.is_dir() else []


def load(name: str) -> Assignment:
    folder = ASSIGNMENTS / name
    cfg_path = folder / "assignment.toml"
    if not cfg_path.is_file():
        raise AssignmentError(f"unknown assignment {name!r}; available: {', '.join(names()) or 'none'}")
    try:
        cfg = tomllib.loads(cfg_path.read_text(encoding="utf-8"))
        questions = tuple(Question(q["id"], q.get("title", q["id"]), tuple(q.get("names", [q["id"]])))
                          for q in cfg["questions"])
        vis = cfg.get("hidden_visibility", "after_published")
        if vis not in VISIBILITIES:
            raise ValueError(f"hidden_visibility must be one of {VISIBILITIES}")
        limits = Limits(**cfg.get("limits", {}))
        return Assignment(
            name=cfg.get("name", name), title=cfg.get("title", name), dir=folder,
            files=tuple(cfg["files"]), questions=questions,
            public_dir=folder / cfg.get("public", "public"), hidden_dir=folder / cfg.get("hidden", "hidden"),
            hidden_visibility=vis,
            private=tuple((folder / p).resolve() for p in cfg.get("private", ["hidden"])),
            limits=limits, options=dict(cfg.get("options", {})))
    except (KeyError, TypeError, ValueError, tomllib.TOMLDecodeError) as e:
        raise AssignmentError(f"{cfg_path}: {e}") from None


def for_file(filename: str) -> Assignment | None:
    """The assignment whose accepted file names include `filename` (how `grade check` recognises a file)."""
    for n in names():
        a = load(n)
        if filename in a.files:
            return a
    return None
