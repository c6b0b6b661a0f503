"""Shared fixtures: grade folders of submissions through the real `grade batch` path and read the results."""
from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest

from autograder import assignment, batch
from autograder.results import SubmissionResult

# The hostile corpus is submissions, not tests: some carry a hostile conftest.py or pytest.ini on purpose.
collect_ignore_glob = ["hostile*"]

ROOT = Path(__file__).resolve().parent.parent
REFERENCE = ROOT / "reference" / "attention.py"
SKELETON = ROOT / "student_template" / "attention.py"


def notebook(*cells: str) -> str:
    """A minimal valid .ipynb holding the given code cells."""
    return json.dumps({"nbformat": 4, "nbformat_minor": 5, "metadata": {},
                       "cells": [{"cell_type": "code", "metadata": {}, "execution_count": None, "outputs": [],
                                  "source": c} for c in cells]})


def grade_folder(folder: Path, out: Path, name: str = "attention", **kw) -> dict[str, SubmissionResult]:
    """Run `grade batch` on `folder`; return results by student id, read back from the JSON files."""
    a = assignment.load(name)
    batch.main(submissions=folder, out=out, assignment=a, echo=lambda _m: None, **kw)
    return {p.stem: SubmissionResult.from_dict(json.loads(p.read_text())["extra_data"]["internal"])
            for p in out.glob("*.json")}


def grade_sources(tmp: Path, files: dict[str, str | bytes | Path], name: str = "attention",
                  **kw) -> dict[str, SubmissionResult]:
    """Write each submission (text, bytes, or a file to copy; a name with '/' makes a folder) and grade them."""
    subs = tmp / "submissions"
    for rel, content in files.items():
        p = subs / rel
        p.parent.mkdir(parents=True, exist_ok=True)
        if isinstance(content, Path):
            shutil.copy(content, p)
        elif isinstance(content, bytes):
            p.write_bytes(content)
        else:
            p.write_text(content, encoding="utf-8")
    return grade_folder(subs, tmp / "results", name, **kw)


def by_question(r: SubmissionResult) -> dict[str, float]:
    return {q: s for q, (s, _m) in r.by_question().items()}


def failed_messages(r: SubmissionResult, questions: tuple[str, ...] | None = None, lang: str = "en") -> list[str]:
    """Messages of the failed checks (of `questions`, if given), as the student reads them in `lang`."""
    return [c.message.text(lang) for c in r.checks if c.status == "failed" and c.message
            and (questions is None or c.question in questions)]


def assert_table_well_formed(bugs, questions) -> None:
    """A bug table (hidden/bugs.py): large enough, every question broken by some bug, each bug breaking at most
    one (or saying why it breaks more), changing something, and saying what the feedback must name (its diagnosis in both languages)."""
    assert len(bugs.VARIANTS) >= 20, len(bugs.VARIANTS)
    covered = {q for v in bugs.VARIANTS for q in v.breaks}
    assert covered == set(questions), f"no bug for {set(questions) - covered}"
    for v in bugs.VARIANTS:
        # one question each, unless the row says why it breaks more (e.g. a forward that raises part way: the
        # steps after the one that raised are never computed)
        assert set(v.breaks) <= set(questions) and (len(v.breaks) <= 1 or v.why), v.name
        assert v.source() != bugs.REFERENCE_SOURCE, f"{v.name}: the change changes nothing"
        if v.breaks:
            assert v.cause or v.says, f"{v.name}: say what the feedback must name (cause or says)"
        if v.cause:
            assert v.cause.en and v.cause.ko, f"{v.name}: the diagnosis needs English and Korean"
