"""`grade gradescope`: build the Gradescope autograder zip with otter-grader, and try it locally.

otter builds the zip (`otter generate`: conda environment, setup.sh, layout), but it does not grade: otter runs a
submission in the same kernel as its tests, so a submission can patch otter's runner. The zip's
`run_autograder` therefore calls our engine (`grade_submission.py` -> run_submission below), which grades
/autograder/submission exactly as `grade batch` does (one grader process, sandboxed workers, hidden checks and
reference only in the grader) and writes /autograder/results/results.json itself.

Zip layout (Gradescope unpacks it to /autograder/source):
    setup.sh             otter's, minus PDF/LaTeX, playwright/Chromium and nb_conda_kernels; checks torch is CPU-only
    run_autograder       ours: activates otter's conda env, runs grade_submission.py, falls back to a fixed error
    grade_submission.py  ours: puts files/ on sys.path and calls run_submission
    environment.yml      otter's: Python 3.11 and our pinned pip requirements (CPU torch index)
    otter_config.json    otter's (PDFs off, no token)
    files/               our package: autograder/, cli.py, pyproject.toml, assignments/<name>/ (hidden included),
                         assignments/conftest.py, the reference modules the checks import; no caches
"""
from __future__ import annotations

import ast
import contextlib
import datetime
import io
import json
import os
import re
import shutil
import stat
import signal
import subprocess
import sys
import tempfile
import time
import traceback
import zipfile
from dataclasses import dataclass
from importlib import metadata
from pathlib import Path
from typing import Any, Callable

from . import assignment as assignments
from . import discover, exam
from .assignment import PROJECT_ROOT, Assignment
from .checks import VISIBILITIES
from .discover import GRADABLE
from .errors import UsageError
from .messages import GRADER_FAILED, Message
from .results import SubmissionResult, to_gradescope, write_atomic

PYTHON_VERSION = "3.11"  # what this project is developed and tested with (otter's default is 3.13)
TORCH_INDEX = "https://download.pytorch.org/whl/cpu"  # Gradescope has no GPU; the default torch wheel pulls CUDA
GRADESCOPE_ROOT = "/autograder"
ENTRY = "grade_submission.py"
ENV_NAME = "otter-env"  # the conda env otter's setup.sh creates
SKIP_DIRS = {"__pycache__", ".venv", "venv", "results", "tests", ".git", ".pytest_cache", "build", "dist",
             ".ipynb_checkpoints"}
# (".so": the library watch's C filter built here, for this machine; setup.sh builds it again on Gradescope's image)
SKIP_SUFFIXES = (".pyc", ".pyo", ".egg-info", ".orig", ".rej", ".swp", ".so", ".pyd")
MAX_SUBMISSION_BYTES = 64 * 1024 * 1024  # copied from /autograder/submission before grading; the rest is dropped
FIXED_TIME = (2020, 1, 1, 0, 0, 0)  # zip entry times: the same inputs give the same zip


WRONG_SECRET = Message(
    "Not graded: this autograder was set up with another exam secret than the one your paper was made with. This is "
    "your instructor's setup, not your answer; your instructor will fix it and regrade your submission.",
    "채점하지 않음: 이 채점기에 설정된 시험 비밀 값이 시험지를 만들 때 쓴 것과 다릅니다. 답안이 아니라 담당 "
    "교수자의 설정 문제이며, 교수자가 고친 뒤 다시 채점합니다.")


@dataclass
class Built:
    zip: Path
    size: int
    entries: list[str]
    results: dict[str, Any] | None = None  # results.json of --try


# ---------------------------------------------------------------------------------------------- what ships

def _skipped(rel: Path) -> bool:
    return any(part in SKIP_DIRS or part.startswith(".") or part.endswith(SKIP_SUFFIXES) for part in rel.parts)


def _tree(folder: Path, base: Path) -> list[tuple[Path, str]]:
    """Regular files under `folder` without caches, as (path, name relative to `base`)."""
    out = []
    for p in sorted(folder.rglob("*")):
        rel = p.relative_to(folder)
        if p.is_file() and not p.is_symlink() and not _skipped(rel):
            out.append((p, p.relative_to(base).as_posix()))
    return out


def _reference_modules(a: Assignment) -> set[str]:
    """Modules of the top-level `reference` package that the assignment's checks import."""
    mods: set[str] = set()
    for py in a.dir.rglob("*.py"):
        if _skipped(py.relative_to(a.dir)):
            continue
        try:
            tree = ast.parse(py.read_text(encoding="utf-8"))
        except (SyntaxError, UnicodeDecodeError):
            continue
        for node in ast.walk(tree):
            if isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
                if node.module == "reference":
                    mods.update(alias.name for alias in node.names)
                elif node.module.startswith("reference."):
                    mods.add(node.module.split(".")[1])
            elif isinstance(node, ast.Import):
                mods.update(al.name.split(".")[1] for al in node.names if al.name.startswith("reference."))
    return mods


def package_files(a: Assignment, root: Path = PROJECT_ROOT) -> list[tuple[Path, str]]:
    """Everything the grader needs on Gradescope, as (file, path relative to the project root)."""
    files = _tree(root / "autograder", root)
    files += [(root / n, n) for n in ("cli.py", "pyproject.toml", "setup.py") if (root / n).is_file()]
    conftest = root / "assignments" / "conftest.py"
    if conftest.is_file():
        files.append((conftest, "assignments/conftest.py"))
    files += _tree(a.dir, root)
    ref = root / "reference"
    mods = _reference_modules(a)
    if mods:
        if (ref / "__init__.py").is_file():
            files.append((ref / "__init__.py", "reference/__init__.py"))
        for m in sorted(mods):
            if (ref / f"{m}.py").is_file():
                files.append((ref / f"{m}.py", f"reference/{m}.py"))
            elif (ref / m).is_dir():
                files += _tree(ref / m, root)
    return files


def _set_toml_key(text: str, key: str, value: str) -> str:
    """Set a top-level string key of a TOML file, keeping the rest as written."""
    line = f"{key} = {json.dumps(value)}"
    pattern = re.compile(rf"^{re.escape(key)}\s*=.*$", re.M)
    first_table = re.search(r"^\s*\[", text, re.M)
    head = text[:first_table.start()] if first_table else text
    if pattern.search(head):
        return pattern.sub(line, head, count=1) + text[len(head):]
    return f"{line}\n{text}"


def requirements() -> list[str]:
    """pip lines for the grading image: the versions graded with here, torch from PyTorch's CPU index."""
    def pinned(dist: str, fallback: str) -> str:
        try:
            return f"{dist}=={metadata.version(dist).split('+')[0]}"
        except metadata.PackageNotFoundError:
            return fallback
    torch = pinned("torch", "torch==2.13.0")
    return [f"--extra-index-url {TORCH_INDEX}", f"{torch}+cpu", pinned("numpy", "numpy"),
            pinned("pytest", "pytest>=7"), pinned("click", "click>=8")]


# ---------------------------------------------------------------------------------------------- scripts we ship

def _fallback_results(lang: str) -> str:
    """results.json for a run in which our entry point could not even start (written by run_autograder)."""
    r = SubmissionResult(student="submission", submission="", assignment="", error=GRADER_FAILED,
                         staff="grade_submission.py wrote no results.json; the autograder's stdout has the traceback "
                               "(the environment may have failed to build: check the image build log).")
    return json.dumps(to_gradescope(r, lang), ensure_ascii=False)


def _run_autograder(lang: str) -> str:
    return f"""#!/usr/bin/env bash
# Written by `grade gradescope` (attention-grader) in place of otter's: otter would run the submission in the
# same kernel as its tests. Our engine grades it in sandboxed workers and writes results/results.json itself.
export PATH=/root/miniforge3/bin:$PATH
eval "$(mamba shell hook --shell bash)"
mamba activate {ENV_NAME}
python -I {GRADESCOPE_ROOT}/source/{ENTRY} {GRADESCOPE_ROOT}
if [ ! -s {GRADESCOPE_ROOT}/results/results.json ]; then
    mkdir -p {GRADESCOPE_ROOT}/results
    cat > {GRADESCOPE_ROOT}/results/results.json <<'RESULTS_JSON'
{_fallback_results(lang)}
RESULTS_JSON
fi
"""


def _entry(name: str, lang: str) -> str:
    return f'''"""Gradescope entry point written by `grade gradescope`: grade <root>/submission with attention-grader and
write <root>/results/results.json. Usage: python -I grade_submission.py [/autograder]"""
import json
import sys
import traceback
from pathlib import Path

ROOT = Path(sys.argv[1] if len(sys.argv) > 1 else "{GRADESCOPE_ROOT}")
sys.path.insert(0, str(Path(__file__).resolve().parent / "files"))
try:
    from autograder.gradescope import run_submission
except BaseException:  # the environment is broken: still give Gradescope a result, with the cause for staff
    (ROOT / "results").mkdir(parents=True, exist_ok=True)
    failed = json.loads({_fallback_results(lang)!r})
    failed["tests"][-1]["output"] = traceback.format_exc()[-8000:]
    (ROOT / "results" / "results.json").write_text(json.dumps(failed, ensure_ascii=False), encoding="utf-8")
    raise

run_submission(ROOT, assignment_name={name!r}, lang={lang!r})
'''


def _patch_setup(text: str) -> str:
    """otter 7's setup.sh minus what this grader never uses; fails loudly if otter's template changed."""
    pdf = re.compile(r"\n# install PDF generation dependencies if enabled\nif .*?\nfi\n", re.S)
    removals = [
        (pdf, "\n"),
        (re.compile(r"^.*playwright install.*\n", re.M), ""),  # Chromium for PDFs: slow, often breaks the build
        (re.compile(r"^mamba install -n \S+ -c conda-forge nb_conda_kernels\n", re.M), ""),  # otter's kernels
    ]
    for pattern, repl in removals:
        text, n = pattern.subn(repl, text)
        if n != 1:
            raise RuntimeError(f"otter's setup.sh template changed ({pattern.pattern!r} matched {n} times); "
                               "review autograder/gradescope.py:_patch_setup")
    header = ("# Edited by `grade gradescope` (attention-grader): no PDF/LaTeX, no playwright/Chromium, no\n"
              "# nb_conda_kernels (grading never runs Jupyter); the last step checks that torch is the CPU build.\n")
    text = text.replace("set -e\n", "set -e\n" + header, 1)
    check = ("import torch, numpy, pytest, click; assert torch.version.cuda is None, torch.__version__; "
             "print('torch', torch.__version__)")
    # The library watch's C filter (autograder/_watchhook.c), built for this image; without a compiler the worker
    # filters in Python (the same grades, slower; a result's sandbox modes say which ran).
    build_filter = (f"(cd /autograder/source/files && mamba run -n {ENV_NAME} python setup.py -q build_ext --inplace) "
                    "|| echo 'the C filter of the library watch was not built: the worker filters in Python'")
    return text.rstrip("\n") + f'\n\nmamba run -n {ENV_NAME} python -c "{check}"\n{build_filter}\n'


# ---------------------------------------------------------------------------------------------- build

def build(a: Assignment, output: Path, *, hidden_visibility: str | None = None, lang: str = "en",
          root: Path = PROJECT_ROOT, exam_files: dict[str, bytes] | None = None) -> Built:
    """Write the Gradescope autograder zip for `a` to `output` with `otter generate`, then adapt it."""
    import warnings
    with warnings.catch_warnings():  # otter's imports raise traitlets/jupyter deprecation warnings
        warnings.simplefilter("ignore", DeprecationWarning)
        from otter.generate import main as otter_generate

    if hidden_visibility is not None and hidden_visibility not in VISIBILITIES:
        raise UsageError(f"hidden visibility must be one of {', '.join(VISIBILITIES)}")
    output = output.resolve()
    with tempfile.TemporaryDirectory(prefix="grade-gradescope-") as tmp:
        stage, tests = Path(tmp) / "stage", Path(tmp) / "tests"
        tests.mkdir()  # otter copies test files from here; ours are in files/, run by our engine
        for src, rel in package_files(a, root):
            dst = stage / rel
            dst.parent.mkdir(parents=True, exist_ok=True)
            shutil.copyfile(src, dst)
        # The digests of the lab's templates as handed out (discover.untouched: the zip ships no student_template/),
        # so that a template uploaded beside the student's work is not graded in its place.
        digests = {n: d for n in a.files if (root / "student_template" / n).is_file()
                   and (d := discover.template_digest(root / "student_template" / n)) is not None}
        if digests:
            dst = stage / a.dir.relative_to(root) / discover.TEMPLATE_DIGESTS
            dst.write_text(json.dumps(digests, indent=1, sort_keys=True) + "\n", encoding="utf-8")
        for name, data in (exam_files or {}).items():  # an exam's roster and secret: the zip is staff-only
            dst = stage / exam.PRIVATE_DIR / name
            dst.parent.mkdir(parents=True, exist_ok=True)
            dst.write_bytes(data)
        if hidden_visibility is not None:
            toml = stage / a.dir.relative_to(root) / "assignment.toml"
            toml.write_text(_set_toml_key(toml.read_text(encoding="utf-8"), "hidden_visibility", hidden_visibility),
                            encoding="utf-8")
        reqs = Path(tmp) / "requirements.txt"
        reqs.write_text("\n".join(requirements()) + "\n", encoding="utf-8")
        raw = Path(tmp) / "otter.zip"
        with contextlib.chdir(stage), contextlib.redirect_stdout(io.StringIO()):
            # overwrite_requirements: otter's own runner (and its playwright/nbconvert/pandas) is never used
            otter_generate(tests_dir=str(tests), output_path=str(raw), no_config=True, no_environment=True,
                           requirements=str(reqs), overwrite_requirements=True, python_version=PYTHON_VERSION,
                           files=sorted(p.name for p in stage.iterdir()))
        output.parent.mkdir(parents=True, exist_ok=True)
        part = output.with_name(output.name + ".part")
        names: list[str] = []
        with zipfile.ZipFile(raw) as src, zipfile.ZipFile(part, "w", zipfile.ZIP_DEFLATED) as dst:
            def put(name: str, data: bytes, executable: bool = False) -> None:
                info = zipfile.ZipInfo(name, FIXED_TIME)
                info.external_attr = ((0o100755 if executable else 0o100644) & 0xFFFF) << 16
                info.compress_type = zipfile.ZIP_DEFLATED
                dst.writestr(info, data)
                names.append(name)
            for item in sorted(src.infolist(), key=lambda i: i.filename):
                if item.is_dir() or item.filename in ("run_autograder", "run_otter.py"):
                    continue
                data = src.read(item)
                if item.filename == "setup.sh":
                    put("setup.sh", _patch_setup(data.decode()).encode(), executable=True)
                else:
                    put(item.filename, data)
            put("run_autograder", _run_autograder(lang).encode(), executable=True)
            put(ENTRY, _entry(a.name, lang).encode())
        os.replace(part, output)
    return Built(output, output.stat().st_size, names)


# ---------------------------------------------------------------------------------------------- on Gradescope

def _copy_submission(src: Path, dst: Path) -> list[str]:
    """Copy the regular files of a submission (no links, caches or dot folders, at most MAX_SUBMISSION_BYTES)."""
    dropped: list[str] = []
    total = 0
    dst.mkdir(parents=True, exist_ok=True)
    for dirpath, dirnames, filenames in os.walk(src, followlinks=False):
        here = Path(dirpath)
        dirnames[:] = sorted(d for d in dirnames if not d.startswith(".") and d != "__pycache__"
                             and not (here / d).is_symlink())
        if len(here.relative_to(src).parts) + 1 >= discover.MAX_DEPTH:  # os.walk recurses: a 1,000-deep folder
            dropped += [str((here / d).relative_to(src)) for d in dirnames]  # was the grader's failure (s19)
            dirnames[:] = []
        for f in sorted(filenames):
            p = here / f
            rel = p.relative_to(src)
            try:
                st = os.lstat(p)
            except OSError:
                continue
            if not stat.S_ISREG(st.st_mode) or f.startswith("."):
                dropped.append(str(rel))
                if stat.S_ISLNK(st.st_mode) and not f.startswith(".") and Path(f).suffix.lower() in GRADABLE:
                    # A link to /dev/null stands in for it (never followed: discovery grades no link), so that the
                    # result says "is a symbolic link" rather than "no .py or .ipynb file was found".
                    (dst / rel).parent.mkdir(parents=True, exist_ok=True)
                    os.symlink(os.devnull, dst / rel)
                continue
            if total + st.st_size > MAX_SUBMISSION_BYTES:
                dropped.append(str(rel))
                continue
            total += st.st_size
            (dst / rel).parent.mkdir(parents=True, exist_ok=True)
            shutil.copyfile(p, dst / rel, follow_symlinks=False)
            os.utime(dst / rel, ns=(st.st_atime_ns, st.st_mtime_ns))  # a .py beside an .ipynb: the newer is graded
    return dropped


def _people(meta: dict[str, Any]) -> list[dict[str, str]]:
    users = meta.get("users") if isinstance(meta.get("users"), list) else []
    return [{k: str(u.get(k) or "") for k in ("name", "sid", "email")} for u in users if isinstance(u, dict)]


def _student(meta: dict[str, Any]) -> str:
    from .discover import export_id
    return export_id({"submitters": _people(meta)}) or "submission"


def run_submission(root: Path, *, assignment_name: str, lang: str = "en",
                   echo: Callable[[str], None] = lambda m: print(m, flush=True)) -> dict[str, Any]:
    """Grade <root>/submission like `grade batch` and write <root>/results/results.json; never raises for a bad
    submission or a broken grader: the result then holds a visible error and a hidden staff traceback."""
    from . import batch, stdio

    stdio.prepare()
    out = root / "results" / "results.json"
    started = time.monotonic()
    try:
        meta = json.loads((root / "submission_metadata.json").read_text(encoding="utf-8"))
        meta = meta if isinstance(meta, dict) else {}
    except (OSError, ValueError):
        meta = {}
    student = _student(meta)
    origin = {k: v for k, v in (("gradescope_submission", meta.get("id")), ("created_at", meta.get("created_at")))
              if v is not None}
    try:
        a = assignments.load(assignment_name)
        plan = exam.gradescope_plan(a, {})
        if plan is not None and plan.students is not None:  # the zip carries a roster
            # its full addresses decide whose paper this is (exam.Plan.bound_id)
            student = plan.bound_id(student, exam.submitter_emails({"submitters": _people(meta)}))
            plan.times = {student: str(meta.get("created_at") or "")}
        with tempfile.TemporaryDirectory(prefix="grade-") as tmp:  # 0700: workers (other uids) cannot look in
            subs = Path(tmp) / "submissions"
            dropped = _copy_submission(root / "submission", subs / student)
            if dropped:
                echo(f"not copied (links, dot files, folders over {discover.MAX_DEPTH} deep, or over "
                 f"{MAX_SUBMISSION_BYTES >> 20} MB): {', '.join(dropped)}")
            summary = batch.main(submissions=subs, out=Path(tmp) / "out", assignment=a, workers=1, lang=lang,
                                 force=True, echo=echo, exam=plan)
            if len(summary.results) != 1:
                raise RuntimeError(f"expected one result, got {len(summary.results)}")
            r = summary.results[0]
    except exam.WrongSecret as e:  # the zip's secret did not make this paper: the instructor's setup, said so
        r = SubmissionResult(student=student, submission="", assignment=assignment_name, error=WRONG_SECRET,
                             staff=e.message.en, duration=time.monotonic() - started, exam={"wrong_secret": True})
    except BaseException as e:  # noqa: BLE001 - Gradescope must get a results.json whatever happened
        r = SubmissionResult(student=student, submission="", assignment=assignment_name, error=GRADER_FAILED,
                             staff="".join(traceback.format_exception(e))[-8000:],
                             duration=time.monotonic() - started)
        if not isinstance(e, Exception):
            echo(f"interrupted: {type(e).__name__}")
    r.origin = origin
    data = to_gradescope(r, lang)
    write_atomic(out, json.dumps(data, ensure_ascii=False, indent=1))
    echo(f"{student}: {r.score:g}/{r.max_score:g}" + (" (could not be graded)" if r.error else ""))
    return data


# ---------------------------------------------------------------------------------------------- --try

def try_zip(zip_path: Path, submission: Path, *, timeout: float | None = None, try_as: str | None = None,
            echo: Callable[[str], None] = print) -> dict[str, Any]:
    """Unpack the zip into a temporary /autograder-like layout and run its entry point with this Python.

    setup.sh is not run (it installs conda and system packages); the zip's own copy of the engine grades."""
    if not submission.exists():
        raise UsageError(f"{submission} does not exist")
    with tempfile.TemporaryDirectory(prefix="gradescope-try-") as tmp:
        root = Path(tmp) / "autograder"
        source, sub = root / "source", root / "submission"
        with zipfile.ZipFile(zip_path) as zf:
            for name in zf.namelist():
                if name.startswith("/") or ".." in Path(name).parts:
                    raise UsageError(f"{zip_path}: unsafe entry {name!r}")
            zf.extractall(source)
        sub.mkdir(parents=True)
        if submission.is_dir():
            # (as deep as the zip's entry point looks, no deeper: copytree recurses once per level)
            deep = lambda d, names: names if len(Path(d).relative_to(submission).parts) >= discover.MAX_DEPTH \
                else []  # noqa: E731
            shutil.copytree(submission, sub, symlinks=True, dirs_exist_ok=True, ignore=deep)
        else:
            shutil.copy2(submission, sub / submission.name)
        (root / "results").mkdir()
        now = datetime.datetime.now(datetime.timezone.utc).isoformat()
        who = try_as.split("@", 1)[0] if try_as else ""  # an id, or the full address a roster lists
        (root / "submission_metadata.json").write_text(json.dumps({
            "id": 0, "created_at": now, "assignment": {"title": "local try"}, "submission_method": "upload",
            "users": [{"name": who or "Local Try", "sid": who or "0", "id": 0,
                       "email": try_as if try_as and "@" in try_as else f"{try_as or 'local.try'}@example.com"}],
            "previous_submissions": []}), encoding="utf-8")
        # Its own session, so that a time-out stops everything it started (its zygote and graders included); its
        # output decoded leniently (file names it echoes need not be UTF-8).
        proc = subprocess.Popen([sys.executable, "-I", str(source / ENTRY), str(root)], cwd=root,
                                stdout=subprocess.PIPE, stderr=subprocess.STDOUT, encoding="utf-8", errors="replace",
                                start_new_session=True)
        try:
            output, _ = proc.communicate(timeout=timeout)
        except subprocess.TimeoutExpired:
            try:
                os.killpg(proc.pid, signal.SIGKILL)
            except (ProcessLookupError, PermissionError):
                pass
            proc.communicate()
            raise UsageError(f"the zip's {ENTRY} did not finish within {timeout:g} s (it was stopped)") from None
        for line in output.splitlines():
            echo(line)
        results = root / "results" / "results.json"
        if not results.is_file():
            raise UsageError(f"the zip's {ENTRY} exited with {proc.returncode} and wrote no results.json")
        return json.loads(results.read_text(encoding="utf-8"))


def main(*, assignment_name: str = "attention", output: Path | None = None, hidden_visibility: str | None = None,
         lang: str = "en", try_path: Path | None = None, echo: Callable[[str], None] = print,
         roster: Path | None = None, secret_file: Path | None = None, try_as: str | None = None) -> Built:
    """Build the zip (default ./autograder.zip; with --try and no -o, a temporary one) and optionally try it."""
    a = assignments.load(assignment_name)
    exam_files = exam.zip_files(a, roster, secret_file)
    if try_path is not None and not try_path.exists():
        raise UsageError(f"{try_path} does not exist")
    with tempfile.TemporaryDirectory(prefix="grade-zip-") as tmp:
        target = output or (Path(tmp) / "autograder.zip" if try_path is not None else Path("autograder.zip"))
        built = build(a, target, hidden_visibility=hidden_visibility, lang=lang, exam_files=exam_files)
        echo(f"built {built.zip if output or try_path is None else 'a temporary autograder.zip'}: "
             f"{built.size / 1024:.1f} KiB, {len(built.entries)} files")
        if try_path is not None:
            from .batch import watchdog_limit
            limit = watchdog_limit(a) + 120  # the most one submission may take, and the grader's start-up
            built.results = try_zip(built.zip, try_path, timeout=limit, try_as=try_as, echo=echo)
            if (built.results.get("extra_data") or {}).get("wrong_secret"):
                # Every student would get this: the zip is not kept, so that it cannot be uploaded by mistake.
                built.zip.unlink(missing_ok=True)
                raise exam.WrongSecret(Message(
                    f"--try: {try_path} is a paper made with another exam secret than the one given (its paper code "
                    "is not this secret's): on Gradescope no student would be graded. The zip was not kept; build "
                    "it with the --secret-file that `grade exam papers` was run with.",
                    f"--try: {try_path}은(는) 주어진 것과 다른 시험 비밀 값으로 만든 시험지입니다 (시험지 코드가 이 비밀 "
                    "값의 것이 아님). Gradescope에서 어느 학생도 채점되지 않습니다. zip은 남기지 않았습니다. "
                    "`grade exam papers`에 쓴 --secret-file로 다시 만드세요."))
        return built
