"""`grade gradescope`: the zip otter builds (and what we change in it), the same scores there as with `grade batch`,
and `grade batch` on a Gradescope "Export Submissions" folder (results named by student)."""
from __future__ import annotations

import csv
import json
import re
import stat
import os
import subprocess
import sys
import time
import tomllib
import zipfile
from pathlib import Path

import pytest
import yaml

from conftest import REFERENCE, ROOT, SKELETON, grade_folder
from autograder import assignment, discover, gradescope
from autograder.errors import UsageError
from autograder.results import to_gradescope

A = assignment.load("attention")


def bug_softmax_dim1() -> str:
    """The reference with the softmax of CausalAttention over dim=1 (the query axis) instead of the last axis."""
    text = REFERENCE.read_text()
    start, end = text.index("class CausalAttention"), text.index("class MultiHeadAttentionWrapper")
    part = text[start:end]
    assert part.count("dim=-1") == 1
    return text[:start] + part.replace("dim=-1", "dim=1") + text[end:]


# Tries to forge its result wherever one could be written, then kills the process that loads it.
HOSTILE = """import glob, os
for d in glob.glob('/tmp/gradescope-try-*/autograder/results') + ['/autograder/results', '../results']:
    try:
        with open(os.path.join(d, 'results.json'), 'w') as f:
            f.write('{"score": 100, "tests": []}')
    except Exception:
        pass
os._exit(0)
""" + SKELETON.read_text()

# Export folder -> (files in it, submitters); the last uses plain keys, the rest Gradescope's Ruby symbols.
EXPORT = {
    "submission_1001": ({"attention.py": REFERENCE.read_text(), "helper.py": "SCALE = 1\n"},
                        [{"name": "Ada Lovelace", "sid": "2024001", "email": "Ada.L@uni.example"}]),
    "submission_1002": ({"attention.py": SKELETON.read_text()},
                        [{"name": "Bo Kim", "sid": "2024002", "email": "bo@uni.example"},
                         {"name": "Chen Wu", "sid": "2024003", "email": "chen@uni.example"}]),
    "submission_1003": ({"attention.py": bug_softmax_dim1()}, [{"name": "Dana", "sid": "2024004", "email": ""}]),
    "submission_1004": ({"work/attention.py": HOSTILE}, [{"name": "Eli", "sid": "", "email": "eli@uni.example"}]),
}
EXPECTED_IDS = {"submission_1001": "ada.l", "submission_1002": "bo+chen", "submission_1003": "2024004",
                "submission_1004": "eli"}
EXPECTED_SCORES = {"ada.l": 100, "bo+chen": 0, "eli": 0}  # 2024004 (the bug) loses CausalAttention marks


def metadata_yaml(plain_keys_for: str = "submission_1004") -> str:
    lines = []
    for folder, (_files, people) in EXPORT.items():
        k = (lambda s: s) if folder == plain_keys_for else (lambda s: f":{s}")
        lines.append(f"{folder}:")
        lines.append(f"  {k('submitters')}:")
        for p in people:
            lines.append(f"  - {k('name')}: {p['name']}")
            lines.append(f"    {k('sid')}: '{p['sid']}'")
            lines.append(f"    {k('email')}: {p['email']}")
        lines.append(f"  {k('created_at')}: 2025-03-14 09:26:53.589793000 +09:00")
        lines.append(f"  {k('score')}: 0.0")
        lines.append(f"  {k('results')}: !ruby/hash:ActiveSupport::HashWithIndifferentAccess")
        lines.append("    score: 0.0")
    return "\n".join(lines) + "\n"


def make_export(root: Path) -> Path:
    for folder, (files, _people) in EXPORT.items():
        for rel, text in files.items():
            p = root / folder / rel
            p.parent.mkdir(parents=True, exist_ok=True)
            p.write_text(text, encoding="utf-8")
    (root / "submission_metadata.yml").write_text(metadata_yaml(), encoding="utf-8")
    return root


def key(tests: list[dict]) -> list[tuple]:
    return [(t["name"], t["score"], t["max_score"], t["status"], t["visibility"]) for t in tests]


@pytest.fixture(scope="module")
def built(tmp_path_factory):
    return gradescope.build(A, tmp_path_factory.mktemp("zip") / "autograder.zip")


@pytest.fixture(scope="module")
def batch_export(tmp_path_factory):
    """`grade batch` over a fake Gradescope export of the four submissions."""
    tmp = tmp_path_factory.mktemp("export")
    export = make_export(tmp / "export")
    return grade_folder(export, tmp / "results", workers=2), tmp / "results"


@pytest.fixture(scope="module")
def tried(built, tmp_path_factory):
    """The same four submissions graded through the zip's Gradescope entry point (hostile one via the CLI)."""
    tmp = tmp_path_factory.mktemp("try")
    export = make_export(tmp / "export")
    out = {}
    for folder, sid in EXPECTED_IDS.items():
        if folder == "submission_1004":
            continue
        out[sid] = gradescope.try_zip(built.zip, export / folder, echo=lambda _m: None)
    p = subprocess.run([sys.executable, str(ROOT / "cli.py"), "gradescope", "-o", str(tmp / "cli.zip"),
                        "--try", str(export / "submission_1004")], capture_output=True, text=True, timeout=600)
    assert p.returncode == 0, p.stderr[-3000:]
    out["eli"] = json.loads(p.stdout)
    return out


# ---------------------------------------------------------------------------------------------- the zip

def test_zip_holds_our_package_and_nothing_else(built):
    names = set(built.entries)
    with zipfile.ZipFile(built.zip) as zf:
        assert set(zf.namelist()) == names
        modes = {i.filename: i.external_attr >> 16 for i in zf.infolist()}
    assert {"setup.sh", "run_autograder", "grade_submission.py", "environment.yml", "otter_config.json",
            "files/cli.py", "files/pyproject.toml", "files/autograder/batch.py", "files/autograder/gradescope.py",
            "files/assignments/conftest.py", "files/assignments/attention/assignment.toml",
            "files/assignments/attention/common.py", "files/assignments/attention/public/test_public.py",
            "files/assignments/attention/hidden/test_hidden.py",
            "files/reference/__init__.py", "files/reference/attention.py"} <= names
    assert "run_otter.py" not in names
    for n in names:
        parts = n.split("/")
        assert not ({"__pycache__", ".venv", "results", "tests", "student_template", "examples", "bench"}
                    & set(parts)), n
        assert not n.endswith((".pyc", ".pyo", ".so")) and not any(p.startswith(".") for p in parts), n
    # the library watch's C filter ships as source, built by setup.sh for Gradescope's image (a build of this
    # machine's may not load there)
    assert {"files/setup.py", "files/autograder/_watchhook.c"} <= names
    assert {n.split("/")[2] for n in names if n.startswith("files/assignments/") and n.count("/") > 2} == {"attention"}
    assert {n for n in names if n.startswith("files/reference/")} == {"files/reference/__init__.py",
                                                                      "files/reference/attention.py"}
    assert modes["run_autograder"] & stat.S_IXUSR and modes["setup.sh"] & stat.S_IXUSR
    assert 20 <= len(names) <= 60
    # about 260 KiB today (the engine's own code: exams, report, diagnosis, the bug table); caches, tests or corpora
    # would add MBs
    assert built.size < 384 * 1024, built.size


def test_setup_installs_python_311_and_cpu_torch_without_pdf_or_chromium(built):
    with zipfile.ZipFile(built.zip) as zf:
        setup = zf.read("setup.sh").decode()
        env = yaml.safe_load(zf.read("environment.yml"))
        run = zf.read("run_autograder").decode()
        entry = zf.read("grade_submission.py").decode()
    deps = env["dependencies"]
    assert "python=3.11" in deps
    pip = next(d["pip"] for d in deps if isinstance(d, dict))
    assert "--extra-index-url https://download.pytorch.org/whl/cpu" in pip
    torch_pin = [d for d in pip if d.startswith("torch")]
    assert len(torch_pin) == 1 and re.fullmatch(r"torch==\d+\.\d+\.\d+\+cpu", torch_pin[0]), torch_pin
    assert not any("otter" in d or "playwright" in d for d in pip), pip  # otter's runner is not used on Gradescope
    low = "\n".join(line for line in setup.lower().splitlines() if not line.lstrip().startswith("#"))
    for word in ("playwright", "chromium", "texlive", "pandoc", "nb_conda_kernels"):
        assert word not in low, word
    assert "mamba env create -f /autograder/source/environment.yml" in setup
    assert "torch.version.cuda is None" in setup
    build = next(line for line in setup.splitlines() if "build_ext --inplace" in line)
    assert "cd /autograder/source/files &&" in build and "|| echo" in build  # (without a compiler: Python's filter)
    assert "python -I /autograder/source/grade_submission.py /autograder" in run
    assert "run_otter" not in run and "otter" not in entry.replace("otter-env", "")
    fallback = json.loads(run.split("<<'RESULTS_JSON'\n")[1].split("\nRESULTS_JSON")[0])
    assert [t["visibility"] for t in fallback["tests"]] == ["visible", "hidden"]


def test_hidden_visibility_is_baked_into_the_zip(tmp_path, built):
    with zipfile.ZipFile(built.zip) as zf:
        default = zf.read("files/assignments/attention/assignment.toml")
    assert default == (A.dir / "assignment.toml").read_bytes()
    other = gradescope.build(A, tmp_path / "hidden.zip", hidden_visibility="hidden")
    with zipfile.ZipFile(other.zip) as zf:
        cfg = tomllib.loads(zf.read("files/assignments/attention/assignment.toml").decode())
    assert cfg["hidden_visibility"] == "hidden" and cfg["questions"] == tomllib.loads(default.decode())["questions"]


# ---------------------------------------------------------------------------------------------- same scores

def test_zip_scores_match_grade_batch(tried, batch_export):
    results, _ = batch_export
    assert set(results) == set(tried) == set(EXPECTED_IDS.values())
    for sid, gs in tried.items():
        r = results[sid]
        assert gs["score"] == r.score, sid
        assert key(gs["tests"]) == key(to_gradescope(r)["tests"]), sid
        assert gs["extra_data"]["max_score"] == 100
    for sid, score in EXPECTED_SCORES.items():
        assert tried[sid]["score"] == score, sid
    bug = results["2024004"].by_question()
    assert 0 < results["2024004"].score < 100 and bug["CausalAttention"][0] < 25
    assert bug["SelfAttention_v2"] == (15, 15)


def test_visibility_public_visible_hidden_after_published(tried):
    tests = tried["ada.l"]["tests"]
    vis = {t["visibility"] for t in tests if "staff" not in t["tags"]}
    assert vis == {"visible", "after_published"}
    assert all(t["visibility"] == "hidden" for t in tests if "staff" in t["tags"])
    # the public checks: 44 points of checks, of which the 11 of the steps question count half (it holds 20
    # points of checks for its 10 in assignment.toml): 33 + 5.5
    assert sum(t["max_score"] for t in tests if t["visibility"] == "visible") == 38.5


def test_hostile_submission_cannot_forge_its_result(tried):
    gs = tried["eli"]
    assert gs["score"] == 0 and gs["extra_data"]["max_score"] == 100
    assert len(gs["tests"]) > 20  # every check is listed, none earned


def test_grading_failure_still_writes_results_json(tmp_path):
    root = tmp_path / "autograder"
    (root / "submission").mkdir(parents=True)
    (root / "submission" / "attention.py").write_text("x = 1\n")
    data = gradescope.run_submission(root, assignment_name="no_such_assignment", echo=lambda _m: None)
    assert json.loads((root / "results" / "results.json").read_text()) == data
    assert data["score"] == 0
    first, last = data["tests"][0], data["tests"][-1]
    assert first["visibility"] == "visible" and "autograder itself failed" in first["output"]
    assert last["visibility"] == "hidden" and "no_such_assignment" in last["output"] and "Traceback" in last["output"]


# ---------------------------------------------------------------------------------------------- exports

def test_export_metadata_names_results_by_student(tmp_path):
    export = make_export(tmp_path / "export")
    (export / "submission_1005").mkdir()  # not in the metadata: named by its folder
    (export / "submission_1005" / "attention.py").write_text("x = 1\n")
    found = {job.student: (job, origin) for job, origin in discover.entries(export, A)}
    assert set(found) == set(EXPECTED_IDS.values()) | {"submission_1005"}
    job, origin = found["bo+chen"]
    assert origin["folder"] == "submission_1002" and job.path.name == "attention.py"
    assert [p["email"] for p in origin["submitters"]] == ["bo@uni.example", "chen@uni.example"]
    assert origin["created_at"].startswith("2025-03-14")
    assert found["eli"][1]["submitters"] == [{"name": "Eli", "sid": "", "email": "eli@uni.example"}]  # plain keys
    assert found["ada.l"][0].path.name == "attention.py"  # helper.py beside it does not confuse the pick
    assert found["submission_1005"][1] == {"folder": "submission_1005"}


def test_export_duplicate_and_nameless_submitters(tmp_path):
    export = tmp_path / "export"
    for f in ("submission_1", "submission_2", "submission_3"):
        (export / f).mkdir(parents=True)
        (export / f / "attention.py").write_text("x = 1\n")
    (export / "submission_metadata.yml").write_text(
        "submission_1:\n  :submitters:\n  - :name: A\n    :email: same@a.example\n"
        "submission_2:\n  :submitters:\n  - :name: B\n    :email: same@b.example\n"
        "submission_3:\n  :submitters:\n  - :name: 김철수\n", encoding="utf-8")
    ids = [job.student for job in discover.find(export, A)]
    assert ids == ["same", "same-2", "submission_3"]


def test_broken_metadata_is_reported(tmp_path):
    (tmp_path / "submission_metadata.yml").write_text("a: [unclosed\n")
    from autograder.errors import UsageError
    with pytest.raises(UsageError, match="submission_metadata.yml"):
        discover.find(tmp_path, A)


def test_batch_on_export_keeps_the_folder(batch_export):
    results, out = batch_export
    assert {p.stem for p in out.glob("*.json")} == set(EXPECTED_IDS.values())
    data = json.loads((out / "ada.l.json").read_text())
    assert data["extra_data"]["origin"]["folder"] == "submission_1001"
    assert data["extra_data"]["origin"]["submitters"][0]["name"] == "Ada Lovelace"
    rows = {r["student"]: r for r in csv.DictReader((out / "scores.csv").open())}
    assert rows["bo+chen"]["folder"] == "submission_1002" and float(rows["ada.l"]["score"]) == 100


def test_try_reads_output_that_is_not_utf8_and_stops_what_overruns(built, tmp_path):
    """The entry point echoes the names it dropped from a submission folder, which need not be UTF-8 (red team:
    --try crashed with UnicodeDecodeError); and a try that overruns its time stops the whole process group it
    started, with the grader's own message (it raised TimeoutExpired and left the zygote grading)."""
    sub = tmp_path / "odd"
    sub.mkdir()
    (sub / "attention.py").write_text(REFERENCE.read_text(encoding="utf-8"), encoding="utf-8")
    (sub / os.fsdecode(b".hidden\xff")).write_text("x")
    seen: list[str] = []
    res = gradescope.try_zip(built.zip, sub, echo=seen.append)
    assert res["score"] == 100
    slow = tmp_path / "slow"
    slow.mkdir()
    (slow / "attention.py").write_text(REFERENCE.read_text(encoding="utf-8") + "\nimport time\ntime.sleep(60)\n",
                                       encoding="utf-8")
    started = time.monotonic()
    with pytest.raises(UsageError, match="did not finish within 3 s"):
        gradescope.try_zip(built.zip, slow, timeout=3, echo=seen.append)
    assert time.monotonic() - started < 60
    deadline = time.monotonic() + 20
    while time.monotonic() < deadline and _graders_running():
        time.sleep(0.2)
    assert not _graders_running()


def _graders_running() -> bool:
    """Whether a grader process started from a gradescope-try folder is still alive."""
    for d in os.listdir("/proc"):
        try:
            with open(f"/proc/{d}/cmdline", "rb") as f:
                if b"gradescope-try-" in f.read():
                    return True
        except OSError:
            continue
    return False


def test_a_linked_answer_on_gradescope_is_told_it_is_a_link(tmp_path):
    """Audit D #8 on Gradescope: a submission whose attention.py is a symbolic link (to the reference here) lost
    the link when copied and read "No .py or .ipynb file was found"; it is told the file is a link, still unread."""
    root = tmp_path / "autograder"
    (root / "submission").mkdir(parents=True)
    (root / "submission" / "attention.py").symlink_to(REFERENCE)
    data = gradescope.run_submission(root, assignment_name="attention", echo=lambda _m: None)
    assert data["score"] == 0
    assert "attention.py is a symbolic link" in data["tests"][0]["output"], data["tests"][0]["output"]


def test_a_submission_with_folders_nested_a_thousand_deep_is_graded_on_gradescope(tmp_path):
    """Red team s19: a submission holding folders nested 1,100 deep beside a correct attention.py read "The autograder
    itself failed while grading this submission" (os.walk recursed once per level while copying it): the student's
    upload, reported as the grader's failure, and a regrade failed the same. The answer is graded; what lies deeper
    than discover.MAX_DEPTH is not copied."""
    from test_batch import deep_chain, remove_chain
    root = tmp_path / "autograder"
    (root / "submission").mkdir(parents=True)
    (root / "submission" / "attention.py").write_text(REFERENCE.read_text())
    try:
        (deep_chain(root / "submission" / "deep", 1100) / "x.txt").write_text("x")
        said: list[str] = []
        data = gradescope.run_submission(root, assignment_name="attention", echo=said.append)
    finally:
        remove_chain(root / "submission" / "deep")
    assert data["score"] == 100, [t["output"] for t in data["tests"]][:2]
    assert any("not copied" in m and f"over {discover.MAX_DEPTH} deep" in m for m in said), said


def test_the_template_as_handed_out_beside_the_work_is_not_graded_on_gradescope(built, tmp_path):
    """Red team s18: the zip ships no student_template/, so discover.untouched never knew the template there, and
    the rule that `grade batch` applies (the notebook as handed out, uploaded beside the solved .py, or beside the
    work under a name of the student's own, is not graded in its place) did not apply on Gradescope: 0/100 where
    `grade batch` gives 100. The zip carries the digests of the lab's templates' code."""
    notebook = ROOT / "student_template" / "attention.ipynb"
    pair, named = tmp_path / "pair", tmp_path / "named"
    for folder, answer in ((pair, "attention.py"), (named, "Week7_kim.py")):
        folder.mkdir()
        (folder / answer).write_text(REFERENCE.read_text(encoding="utf-8"), encoding="utf-8")
        (folder / "attention.ipynb").write_bytes(notebook.read_bytes())
        stamp = (folder / answer).stat().st_mtime_ns
        os.utime(folder / "attention.ipynb", ns=(stamp, stamp))  # uploaded together: a tie
    for folder in (pair, named):
        res = gradescope.try_zip(built.zip, folder, echo=lambda _m: None)
        assert res["score"] == 100, (folder.name, [t.get("output", "")[:200] for t in res["tests"][:2]])
