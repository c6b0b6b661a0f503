"""One submission to grade, as the batch parent hands it to a grader process (kept apart from plugin.py, so that
the parent, which only lists and dispatches, does not import pytest before it starts the graders)."""
from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Any

from .messages import Message


@dataclass
class Job:
    student: str
    path: Path | None
    error: Message | None = None  # found before grading (e.g. a folder with two candidate files)
    note: Message | None = None  # how the file was chosen, when that was a choice (a .py beside an .ipynb)
    options: dict[str, Any] | None = None  # per-submission options on top of [options] (an exam's variant)
