"""`grade release`: the student bundle runs the public checks offline and holds nothing hidden."""
from __future__ import annotations

import ast
import os
import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from conftest import REFERENCE, ROOT, SKELETON
from autograder import assignment, release
from autograder.errors import UsageError

A = assignment.load("attention")
TEMPLATE = ROOT / "student_template"


def hidden_seeds() -> set[int]:
    """The seeds in the hidden checks' CONFIGS (read from the source, so new ones are covered)."""
    tree = ast.parse((A.hidden_dir / "test_hidden.py").read_text())
    node = next(n.value for n in tree.body if isinstance(n, ast.Assign)
                and any(isinstance(t, ast.Name) and t.id == "CONFIGS" for t in n.targets))
    configs = ast.literal_eval(node)
    return {cfg[0] for rows in configs.values() for cfg in rows}


def texts(folder: Path) -> dict[str, str]:
    return {p.relative_to(folder).as_posix(): p.read_bytes().decode("utf-8", "replace")
            for p in folder.rglob("*") if p.is_file()}


@pytest.fixture(scope="module")
def bundle(tmp_path_factory):
    out = tmp_path_factory.mktemp("release") / "lab"
    release.main(assignment_name="attention", out=out)
    return out


def test_bundle_holds_what_grade_check_needs(bundle):
    files = set(texts(bundle))
    assert {"attention.py", "cli.py", "pyproject.toml", "README.md", "autograder/cmd_check.py",
            "assignments/conftest.py", "assignments/attention/assignment.toml", "assignments/attention/common.py",
            "assignments/attention/public/test_public.py"} <= files
    assert (bundle / "attention.py").read_bytes() == SKELETON.read_bytes()
    notebook = TEMPLATE / "attention.ipynb"  # written by another engineer; present or not
    assert ("attention.ipynb" in files) == notebook.is_file()
    if notebook.is_file():
        assert (bundle / "attention.ipynb").read_bytes() == notebook.read_bytes()
    # nothing of another lab (student_template/ holds every lab's skeleton), nothing else at the top
    assert {f for f in files if "/" not in f} <= {*A.files, "cli.py", "pyproject.toml", "README.md"}
    assert not any(f.startswith("assignments/") and f.split("/")[1] not in ("attention", "conftest.py") for f in files)
    # (no binary built for the instructor's machine: the library watch's C filter ships as source; grade check
    # filters in Python where it is not built)
    assert not any(f.endswith((".so", ".pyd", ".pyc")) for f in files)


def test_bundle_holds_no_hidden_material(bundle):
    files = texts(bundle)
    for rel in files:
        parts = rel.split("/")
        assert "hidden" not in parts[:-1] and "reference" not in parts, rel
        assert "__pycache__" not in parts and not rel.endswith(".pyc"), rel
    assert not (bundle / "reference").exists() and not (bundle / "assignments/attention/hidden").exists()
    hidden_sources = {p.read_bytes() for p in A.hidden_dir.rglob("*.py")} | {REFERENCE.read_bytes()}
    assert not any((bundle / rel).read_bytes() in hidden_sources for rel in files)

    seeds = {s for s in hidden_seeds() if s >= 1000}  # 77 would also match 0.77 in the public inputs
    assert {2024, 31337, 4242} <= seeds
    for rel, text in files.items():
        for s in seeds:
            assert not re.search(rf"(?<![\d.]){s}(?!\d)", text), (rel, s)

    # Reference lines that students do not already get from the template (skeleton, notebook hints) or the
    # public checks: none may appear anywhere in the bundle.
    given = set()
    for p in [*(TEMPLATE / f for f in A.files), A.dir / "common.py", *A.public_dir.rglob("*.py")]:
        if p.is_file():
            given |= {line.strip() for line in p.read_bytes().decode("utf-8", "replace").splitlines()}
    secret = {line.strip() for line in REFERENCE.read_text().splitlines()
              if len(line.strip()) >= 20 and line.strip() not in given}
    assert len(secret) >= 20, len(secret)  # the check has teeth
    for rel, text in files.items():
        lines = {line.strip() for line in text.splitlines()}
        assert not (secret & lines), (rel, sorted(secret & lines)[:3])


def test_grade_check_from_inside_the_bundle(bundle, tmp_path):
    student = tmp_path / "student"
    student.mkdir()
    shutil.copy(REFERENCE, student / "attention.py")
    env = {k: v for k, v in os.environ.items() if k != "PYTHONPATH"}
    p = subprocess.run([sys.executable, str(bundle / "cli.py"), "check"], cwd=student, capture_output=True,
                       text=True, timeout=300, env=env)
    assert p.returncode == 0, p.stdout + p.stderr
    assert re.search(r"total\s+44/44", p.stdout), p.stdout
    # and it was the bundle's engine and checks that ran, not this repository's
    probe = subprocess.run([sys.executable, "-c", "import autograder.assignment as a; print(a.ASSIGNMENTS)"],
                           cwd=bundle, capture_output=True, text=True, timeout=60, env=env)
    assert probe.stdout.strip() == str(bundle / "assignments"), probe.stdout + probe.stderr


def test_pip_install_of_the_bundle_gives_grade(bundle, tmp_path):
    target = tmp_path / "site"
    p = subprocess.run([sys.executable, "-m", "pip", "install", "-q", "--no-deps", "--no-build-isolation",
                        "--no-index", "--target", str(target), str(bundle)],
                       capture_output=True, text=True, timeout=300)
    assert p.returncode == 0, p.stdout + p.stderr
    assert (target / "assignments/attention/assignment.toml").is_file()
    assert (target / "assignments/conftest.py").is_file() and (target / "bin/grade").is_file()
    student = tmp_path / "student"
    student.mkdir()
    shutil.copy(SKELETON, student / "attention.py")
    env = {**os.environ, "PYTHONPATH": str(target)}
    c = subprocess.run([str(target / "bin/grade"), "check"], cwd=student, capture_output=True, text=True,
                       timeout=300, env=env)
    assert c.returncode == 1 and re.search(r"total\s+0/44", c.stdout), c.stdout + c.stderr


def test_release_without_a_notebook_and_into_a_used_folder(tmp_path):
    template = tmp_path / "template"
    template.mkdir()
    shutil.copy(SKELETON, template / "attention.py")
    out = tmp_path / "lab"
    release.main(assignment_name="attention", out=out, template=template)
    assert (out / "attention.py").is_file() and not (out / "attention.ipynb").exists()
    assert "attention.py" in (out / "README.md").read_text()
    with pytest.raises(UsageError, match="not an empty folder"):
        release.main(assignment_name="attention", out=out, template=template)


def test_grade_check_in_the_bundle_checks_the_solved_file_beside_the_notebook_as_handed_out(bundle, tmp_path):
    """Red team s18: the bundle has no student_template/, so `grade check` never knew the notebook as handed out:
    with the solved attention.py and the bundle's notebook copied together (a tie), it checked the notebook, every
    check 'not implemented yet'. The bundle carries the digests of the templates' code."""
    notebook = TEMPLATE / "attention.ipynb"
    if not notebook.is_file():
        pytest.skip("no notebook template")
    student = tmp_path / "student"
    student.mkdir()
    shutil.copy(REFERENCE, student / "attention.py")
    shutil.copy(notebook, student / "attention.ipynb")
    stamp = (student / "attention.py").stat().st_mtime_ns
    os.utime(student / "attention.ipynb", ns=(stamp, stamp))
    env = {k: v for k, v in os.environ.items() if k != "PYTHONPATH"}
    p = subprocess.run([sys.executable, str(bundle / "cli.py"), "check"], cwd=student, capture_output=True,
                       text=True, timeout=300, env=env)
    assert "Checking attention.py, not attention.ipynb" in p.stdout + p.stderr, p.stdout + p.stderr
    assert re.search(r"total\s+44/44", p.stdout), p.stdout
