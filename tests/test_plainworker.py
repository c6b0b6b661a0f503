"""`grade check` where the sandbox cannot run (issue 9, item 10): the public checks run unsandboxed, labelled.

Linux has the sandbox, so the mode is forced the two ways a test can: the documented hook GRADE_UNSANDBOXED=1
(plainworker.FORCE_ENV), and a grader Python without the `resource` module that also reports itself as Windows (as
on a student's Windows laptop: sandbox.py must still import and the checks must still run). Each drives the
installed `grade` from a folder outside the repository, as a student does.
"""
from __future__ import annotations

import json
import os
import shutil
import subprocess
import tempfile
from pathlib import Path

import pytest

from conftest import REFERENCE, ROOT, SKELETON
from test_as_user import GRADE, with_line_after

LABEL_EN = "not sandboxed: public checks only, run on"
LABEL_KO = "샌드박스 없이 실행: 공개 검사만"

pytestmark = pytest.mark.skipif(not GRADE.exists(), reason="run `make setup` first: the installed command is tested")


def run(args: list[str], cwd: Path, env: dict[str, str] | None = None, python: str | None = None,
        timeout: float = 600) -> subprocess.CompletedProcess:
    base = {k: v for k, v in os.environ.items() if not k.startswith(("PYTHON", "PYTEST", "GRADE_"))}
    cmd = [python, "-c", args[0]] if python else [str(GRADE), *args]
    return subprocess.run(cmd, cwd=cwd, capture_output=True, text=True, timeout=timeout, env={**base, **(env or {})})


FORCED = {"GRADE_UNSANDBOXED": "1"}


@pytest.fixture(scope="module")
def lab():
    """ref/, skel/ and hang/ (MultiHeadAttention.forward never returns), each holding an attention.py."""
    folder = Path(tempfile.mkdtemp(prefix="grade-plain-"))
    ref = REFERENCE.read_text(encoding="utf-8")
    for name, text in (("ref", ref), ("skel", SKELETON.read_text(encoding="utf-8")),
                       ("hang", with_line_after(ref, -1, "def forward", "        while True:\n            pass\n"))):
        (folder / name).mkdir()
        (folder / name / "attention.py").write_text(text, encoding="utf-8")
    yield folder
    shutil.rmtree(folder, ignore_errors=True)


def test_reference_gets_full_public_marks_with_the_label(lab):
    p = run(["check"], lab / "ref", FORCED)
    assert p.returncode == 0, p.stdout + p.stderr
    assert f"{LABEL_EN} Linux" in p.stdout and "total                      44/44" in p.stdout, p.stdout
    k = run(["check", "--lang", "ko"], lab / "ref", FORCED)
    assert k.returncode == 0 and LABEL_KO in k.stdout and "44/44" in k.stdout, k.stdout + k.stderr
    assert LABEL_EN not in k.stdout


def test_skeleton_scores_zero_without_a_crash(lab):
    p = run(["check"], lab / "skel", FORCED)
    assert p.returncode == 1, p.stdout + p.stderr
    assert LABEL_EN in p.stdout and "0/44" in p.stdout and "not implemented yet" in p.stdout, p.stdout
    assert "Traceback" not in p.stdout + p.stderr


def test_an_infinite_loop_times_out_and_costs_only_its_class(lab):
    p = run(["check"], lab / "hang", FORCED)
    assert p.returncode == 1, p.stdout + p.stderr
    assert LABEL_EN in p.stdout and "did not finish within 20 s (infinite loop?)" in p.stdout, p.stdout
    rows = {line.split()[0]: line.split()[1] for line in p.stdout.splitlines() if line.count("/") == 1
            and len(line.split()) >= 2}
    assert rows["MultiHeadAttention"] == "0/7" and rows["CausalAttention"] == "10/10", rows
    left = subprocess.run(["pgrep", "-f", "autograder.plainworker"], capture_output=True, text=True)
    assert left.stdout.strip() == "", "a worker outlived grade check"


def test_a_grader_python_without_resource_on_windows_runs_the_checks_unsandboxed(lab):
    """What a Windows student's Python is like: no `resource` module, sys.platform 'win32'. Before this mode,
    `grade check` only said it needs Linux; sandbox.py could not even be imported without `resource`."""
    code = ("import sys; sys.modules['resource'] = None\n"
            "import torch, pytest, cli, autograder.cmd_check, autograder.runner, autograder.plugin\n"
            "sys.platform = 'win32'; sys.argv = ['grade', 'check']; cli.main()")
    p = run([code], lab / "ref", {"PYTHONPATH": str(ROOT)}, python=str(GRADE.parent / "python"))
    assert p.returncode == 0, p.stdout + p.stderr
    assert f"{LABEL_EN} Windows" in p.stdout and "44/44" in p.stdout, p.stdout


def test_batch_never_runs_unsandboxed(lab, tmp_path):
    """The hook is `grade check`'s only: a batch with it set still grades in the sandbox."""
    subs = tmp_path / "subs"
    subs.mkdir()
    shutil.copy(lab / "ref" / "attention.py", subs / "ada.py")
    p = run(["batch", "subs", "--assignment", "attention"], tmp_path, FORCED)
    assert p.returncode == 0, p.stderr[-2000:]
    data = json.loads((tmp_path / "results" / "ada.json").read_text(encoding="utf-8"))
    assert data["score"] == 100 and data["extra_data"]["sandbox"].get("sandbox") != "none", data["extra_data"]
    assert LABEL_EN not in json.dumps(data)


def test_every_lab_reference_gets_full_public_marks_unsandboxed(tmp_path):
    """The other labs' public checks (they ask the worker about its environment too) run the same way."""
    for lab in ("mha_intermediates", "transformer_block"):
        (tmp_path / lab).mkdir()
        shutil.copy(ROOT / "reference" / f"{lab}.py", tmp_path / lab / f"{lab}.py")
        p = run(["check"], tmp_path / lab, FORCED)
        assert p.returncode == 0, p.stdout + p.stderr
        total = next(line for line in p.stdout.splitlines() if line.startswith("total"))
        got, full = total.split()[1].split("/")
        assert LABEL_EN in p.stdout and got == full, p.stdout
