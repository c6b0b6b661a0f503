"""Hostile and broken submissions (hostile_cases.py) are contained, gain no credit and lose nothing else.

The corpus is built from its table (most cases are the reference or the skeleton plus a stated change; notebooks,
folders and byte-level files are kept in tests/hostile/), then graded whole in ONE `grade batch` run, next to three
copies of the reference (bystanders that must keep their 100), from a folder that is world-writable on purpose:
only the sandbox keeps the workers out of it. Each case then gets its exact score and the words the student reads;
after the batch no process of the submissions is left, the submissions folder is byte-for-byte (and mode-for-mode)
what it was, nothing was planted outside the workers' scratch folders, and no hidden material reached any
feedback. Grading the folder a second time gives the same scores; `grade check` survives a hostile file in a
hostile folder.

Scores are exact and derived in the table's comments: "what the code earns legitimately", never more.
"""
from __future__ import annotations

import contextlib
import fcntl
import glob
import hashlib
import json
import os
import runpy
import shutil
import stat
import subprocess
import sys
import tempfile
import time
from dataclasses import replace
from pathlib import Path

import pytest

import hostile_cases
from autograder import assignment, batch, confine, discover, sandbox
from autograder.results import SubmissionResult
from conftest import REFERENCE, ROOT

CORPUS = hostile_cases.KEPT  # the cases kept as files; the others are built from their table rows at test time
MARKER = "HOSTILE-GRADER-TEST-7f3a"  # in the command line of every process the corpus leaves running
# Short limits keep the run short; memory and disk budgets small enough that the floods hit them fast.
LIMITS = {"call_timeout": 6.0, "total_timeout": 60.0, "memory_mb": 512, "disk_mb": 64}
BYSTANDERS = ("aa_bystander", "mm_bystander", "zz_bystander")  # sorted first, in the middle and last
# Bits of the hidden checks and the reference that no student-visible text may ever contain.
HIDDEN_SNIPPETS = ("def ref_build", "def transplant", "from reference import", "CONFIGS = {",
                   "Instructor reference for the attention lab", "Creation order is part of the contract")

CP949_NAME = "김철수_정답.py".encode("cp949")  # what a Korean Windows zip tool writes
CP949_ID = discover.entry_id(os.fsdecode(CP949_NAME[:-3]))
ESC_NAME = b"esc_name_\x1b[31m\x1b]0;owned\x07.txt"
SYSV_KEYS = (0x7F3A0001, 0x7F3A0002)  # the segments sys_ipc_a_writer leaves behind

# case: (exact score, where the explanation is, words it must contain). The corpus's own cases, each with its
# attack and the derivation of its score, are the table in hostile_cases.py; these four are made by the test.
CASES = {
    **{c.name: c.outcome for c in hostile_cases.CASES},
    "load_huge": (0, "error", "is 100 MB, over the 20 MB limit"),  # a sparse file
    "pry_symlink": (0, "error", "is a symbolic link"),
    # Names made by the test: a correct file named in CP949 bytes, a file whose name carries escape codes.
    CP949_ID: (100, None, ""),
    "esc_name": (0, "error", "esc_name_.txt is not a .py or .ipynb file"),
}
# Outcomes that need a containment mode (see SubmissionResult.sandbox); skipped where the kernel lacks it.
NEEDS = {"sys_ipc_a_writer": ("namespaces", "ipc"), "sys_ipc_b_reader": ("namespaces", "ipc"),
         "sys_hoard_sysv": ("memory", "cgroup"), "sys_hoard_mmap": ("memory", "cgroup"),
         "sys_hoard_memfd": ("memory", "cgroup"), "sys_disk_unlinked": ("scratch", "tmpfs")}
MADE_BY_TEST = {"pry_symlink", "load_huge", CP949_ID, "esc_name"}


# ---------------------------------------------------------------------------------------------- helpers

def snapshot(root: Path) -> dict[str, tuple]:
    """Every entry below root: type, mode, owner, mtime and content hash (link target for a symlink)."""
    state = {}
    for dirpath, dirnames, filenames in os.walk(root):
        for p in [Path(dirpath)] + [Path(dirpath, n) for n in dirnames + filenames]:
            st = os.lstat(p)
            if stat.S_ISLNK(st.st_mode):
                content = "-> " + os.readlink(p)
            elif stat.S_ISREG(st.st_mode):
                content = hashlib.sha256(p.read_bytes()).hexdigest()
            else:
                content = ""
            state[str(p.relative_to(root))] = (stat.S_IFMT(st.st_mode), stat.S_IMODE(st.st_mode), st.st_uid,
                                               st.st_mtime_ns, content)
    return state


def uid_in_use(uid: int) -> bool:
    """Whether a live grader process (someone else's run on this shared machine) holds worker uid `uid`."""
    lock_dir = getattr(sandbox, "LOCK_DIR", None)
    if not lock_dir:
        return False
    try:
        fd = os.open(os.path.join(lock_dir, f"uid-{uid}.lock"), os.O_RDWR)
    except OSError:
        return False
    try:
        fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        return False
    except OSError:
        return True
    finally:
        os.close(fd)


def worker_uid(uid: int) -> bool:
    return sandbox.UID_BASE <= uid < sandbox.UID_BASE + getattr(sandbox, "UID_COUNT", 64)


def strays(wait: float = 10.0) -> list[str]:
    """Processes our submissions left: any with the marker in its command line, any of a worker uid that no live
    grader holds. Waits a little for processes that are being killed."""
    deadline = time.monotonic() + wait
    while True:
        found = []
        for entry in os.listdir("/proc"):
            if not entry.isdigit():
                continue
            try:
                uid = os.stat(f"/proc/{entry}").st_uid
                cmd = Path(f"/proc/{entry}/cmdline").read_bytes()
                state = Path(f"/proc/{entry}/stat").read_bytes().rsplit(b")", 1)[1].split()[0]
            except OSError:
                continue
            if state == b"Z":
                continue
            if MARKER.encode() in cmd or (worker_uid(uid) and not uid_in_use(uid)):
                found.append(f"pid {entry} uid {uid}: {cmd[:100]!r}")
        if not found or time.monotonic() > deadline:
            return found
        time.sleep(0.5)


def planted(since: float) -> list[str]:
    """Files the corpus tried to plant outside its scratch folders (see lie_fake_results, lie_folder_shadow)."""
    paths = glob.glob(f"/tmp/*{MARKER}*") + glob.glob(f"/var/tmp/*{MARKER}*") + glob.glob(f"/dev/shm/*{MARKER}*")
    paths += glob.glob(f"{ROOT}/*{MARKER}*") + glob.glob(f"{ROOT}/results/*{MARKER}*")
    for p in ("/tmp/results.json", "/tmp/scores.csv", "/tmp/report.txt", "/autograder/results/results.json",
              "/var/tmp/results.json", "/dev/shm/results.json"):
        try:
            st = os.lstat(p)
        except OSError:
            continue
        if worker_uid(st.st_uid) or st.st_mtime >= since:
            paths.append(p)
    return sorted(set(paths))


def sysv_segments() -> list[tuple[int, int, int]]:
    """(key, creator uid, bytes) of every SysV shared-memory segment in this (the host's) IPC namespace."""
    rows = []
    for line in Path("/proc/sysvipc/shm").read_text().splitlines()[1:]:
        v = line.split()
        rows.append((int(v[0]) & 0xFFFFFFFF, int(v[9]), int(v[3])))
    return rows


def private_tmp(base: Path) -> Path:
    """A TMPDIR for the grader processes of one test, so that their scratch folders can be told from those of
    other runs on this machine. World-writable like /tmp: only the sandbox keeps workers out of its parent."""
    tmp = base / "tmp"
    tmp.mkdir()
    os.chmod(tmp, 0o1777)
    return tmp


@contextlib.contextmanager
def env(**values: str):
    """Environment variables for the child processes started inside the block (grader processes)."""
    old = {k: os.environ.get(k) for k in values}
    os.environ.update(values)
    try:
        yield
    finally:
        for k, v in old.items():
            if v is None:
                os.environ.pop(k, None)
            else:
                os.environ[k] = v


def visible_text(r: SubmissionResult) -> str:
    """Everything a student can read about their result, in both languages."""
    parts = []
    for m in [r.error, *r.notes, *[c.message for c in r.checks]]:
        if m is not None:
            parts += [m.en, m.ko]
    parts += [c.output for c in r.checks]
    return "\n".join(parts)


def where(r: SubmissionResult, place: str) -> str:
    if place == "error":
        return r.error.en if r.error else ""
    if place == "notes":
        return "\n".join(n.en for n in r.notes)
    if place == "checks":
        return "\n".join(c.message.en for c in r.checks if c.message is not None)
    return "\n".join(c.output for c in r.checks)


def read_results(out: Path) -> dict[str, SubmissionResult]:
    return {p.stem: SubmissionResult.from_dict(json.loads(p.read_text())["extra_data"]["internal"])
            for p in out.glob("*.json")}


def limited_assignment():
    a = assignment.load("attention")
    return replace(a, limits=replace(a.limits, **LIMITS))


def writable_copy(src: Path, dest: Path) -> None:
    """Copy the corpus (mtimes kept) and open it up to everybody: the sandbox, not permissions, must protect it."""
    shutil.copytree(src, dest, symlinks=True)
    for n in BYSTANDERS:
        shutil.copy2(REFERENCE, dest / f"{n}.py")
    os.symlink(REFERENCE, dest / "pry_symlink.py")
    shutil.copy2(REFERENCE, os.fsencode(dest) + b"/" + CP949_NAME)
    with open(os.fsencode(dest) + b"/" + ESC_NAME, "w") as f:
        f.write("not code")
    with open(dest / "load_huge.py", "wb") as f:  # sparse: takes no disk, but the grader must not load it
        f.truncate(100 * 1024 * 1024)
    for dirpath, dirnames, filenames in os.walk(dest):
        os.chmod(dirpath, 0o777)
        for n in filenames:
            os.chmod(os.path.join(dirpath, n), 0o666)
    os.chmod(dest / "load_blank.py", 0o444)  # and an odd mode that must survive too


# ---------------------------------------------------------------------------------------------- the batch

@pytest.fixture(scope="module")
def graded(tmp_path_factory):
    base = Path(tempfile.mkdtemp(prefix="hostile-", dir="/tmp"))
    os.chmod(base, 0o755)
    subs = base / "submissions"
    corpus = hostile_cases.build(tmp_path_factory.mktemp("hostile-corpus") / "corpus")
    writable_copy(corpus, subs)
    before = snapshot(subs)
    out = tmp_path_factory.mktemp("hostile") / "results"
    tmp = private_tmp(base)
    since = time.time() - 1
    started = time.monotonic()
    with env(TMPDIR=str(tmp)):
        summary = batch.main(submissions=subs, out=out, assignment=limited_assignment(), echo=lambda _m: None)
    info = {"corpus": corpus, "subs": subs, "out": out, "base": base, "since": since,
            "seconds": time.monotonic() - started,
            "sysv": sysv_segments(), "mounts": Path("/proc/self/mountinfo").read_text(),
            "table": batch.summary_table(summary.results, limited_assignment()),
            "summary": summary, "results": read_results(out), "strays": strays(), "planted": planted(since),
            "scratch": sorted(os.listdir(tmp)), "before": before, "after": snapshot(subs)}
    yield info
    shutil.rmtree(base, ignore_errors=True)


def test_every_case_is_in_the_corpus_and_gets_a_result(graded):
    on_disk = {p.stem for p in graded["corpus"].iterdir()}
    assert on_disk == set(CASES) - MADE_BY_TEST
    # tests/hostile/ holds the kept cases (and the folder a built case goes into), nothing stale
    kept = {c.name for c in hostile_cases.CASES if c.base == "kept"}
    assert {p.stem for p in CORPUS.iterdir()} == kept | {c.path.split("/")[0] for c in hostile_cases.CASES if c.path}
    assert set(graded["results"]) == set(CASES) | set(BYSTANDERS)
    assert graded["summary"].graded == len(CASES) + len(BYSTANDERS)
    rows = (graded["out"] / "scores.csv").read_text().splitlines()
    assert len(rows) == 1 + len(CASES) + len(BYSTANDERS)


def test_every_built_case_is_its_base_plus_its_change():
    """Each row that is not kept builds a file that compiles and differs from its base beyond the docstring (only
    lie_folder_shadow is the reference unchanged: its attack is the folder around it)."""
    for c in hostile_cases.CASES:
        if c.base == "kept":
            continue
        text = c.source()
        compile(text, c.name, "exec")
        plain = hostile_cases.Case(c.name, c.says, c.outcome, base=c.base).source()
        assert (text == plain) == (c.name == "lie_folder_shadow"), c.name


@pytest.mark.parametrize("case", sorted(CASES))
def test_case_outcome(graded, case):
    score, place, words = CASES[case]
    r = graded["results"][case]
    if case in NEEDS:
        key, mode = NEEDS[case]
        if mode not in r.sandbox.get(key, ""):
            pytest.skip(f"needs {key} {mode}; this kernel or user gave {r.sandbox.get(key)!r}")
    assert r.max_score == 100  # every check is listed, whatever happened
    if score is not None:
        assert r.score == score, [(c.nodeid.split("::")[-1], c.score) for c in r.checks if c.score]
    if place is not None:
        assert any(w in where(r, place) for w in (words if isinstance(words, tuple) else (words,))), \
            where(r, place)[:2000]
    if place == "error":
        assert r.error.ko and all(c.score == 0 for c in r.checks)
    texts = visible_text(r)
    assert "internal error" not in texts  # always the submission's own doing, said so plainly
    for snippet in HIDDEN_SNIPPETS:
        assert snippet not in texts


def test_os_exit_in_a_forward_costs_only_its_class(graded):
    r = graded["results"]["lie_os_exit_forward"]
    ref = graded["results"]["aa_bystander"]
    crashed = [c for c in r.checks if c.message and "exited with code 0" in c.message.en
               and "in an earlier check" not in c.message.en]  # (a repeat of an earlier crash runs nothing)
    needs_v2 = [c for c in r.checks if c.message and "`SelfAttention_v2` could not be shown to work" in c.message.en]
    assert len(crashed) == 1 and len(needs_v2) >= 5  # one crash: no later check runs v2's forward again
    assert not [c for c in r.checks if c.message and "had to be restarted" in c.message.en]
    # Every check of SelfAttention_v2 earns nothing; every other check what the reference earns.
    for mine, theirs in zip(r.checks, ref.checks):
        assert mine.nodeid == theirs.nodeid
        if mine.question == "SelfAttention_v2":
            assert mine.score == 0, mine.nodeid
        else:
            assert mine.score == theirs.score, mine.nodeid


def test_bystanders_keep_full_marks(graded):
    for n in BYSTANDERS:
        r = graded["results"][n]
        assert r.error is None and r.score == 100, [c.message for c in r.checks if c.status == "failed"]


def test_no_process_outlives_the_batch(graded):
    assert graded["strays"] == []


def test_submissions_folder_is_unchanged(graded):
    assert graded["after"] == graded["before"]


def test_nothing_is_planted_outside_scratch_and_scratch_is_removed(graded):
    assert graded["planted"] == []
    assert graded["scratch"] == []
    assert sorted(p.name for p in graded["out"].iterdir()) == sorted(
        [f"{n}.json" for n in list(CASES) + list(BYSTANDERS)] + ["scores.csv", "grades.csv"])


def test_output_floods_are_truncated(graded):
    r = graded["results"]["fit_output_flood"]
    shown = [c.output for c in r.checks if c.output]
    assert shown and all(len(o) <= 2004 for o in shown)
    assert (graded["out"] / "fit_output_flood.json").stat().st_size < 200_000


def test_prints_show_only_in_public_checks(graded):
    r = graded["results"]["pry_print_inputs"]
    assert any("PRY-INPUT" in c.output for c in r.checks if c.public)
    assert all(c.output == "" for c in r.checks if not c.public)
    stack = graded["results"]["pry_stack"]
    frames = " ".join(c.output for c in stack.checks)
    assert f"frames: ['pry_stack.py:softmax_naive', '{ROOT}/autograder/worker.py:op_call'" in frames
    assert "'reference'" not in frames and "assignments" not in frames and "hidden" not in frames


def test_hardcoded_values_earn_only_the_step_figures(graded):
    """Classes that return the notebook's printed tensors are constants: no class check pays for them (their
    figures, signatures and structure need output that depends on the input and the weights)."""
    r = graded["results"]["lie_hardcoded"]
    earned = {c.nodeid.split("::")[-1] for c in r.checks if c.score}
    figures = {"test_softmax_naive_notebook", "test_attention_scores_notebook", "test_context_vectors_notebook"}
    assert earned == figures
    assert sum(c.score for c in r.checks if c.nodeid.split("::")[-1] in figures) == 1.5  # steps figures: 0.5 each
    assert all(c.public for c in r.checks if c.score)


def test_the_disk_search_would_succeed_without_the_sandbox(graded):
    """pry_disk's search, run here (root, no sandbox), finds a working solution; in the worker it found none."""
    mod = runpy.run_path(str(graded["corpus"] / "pry_disk.py"), run_name="probe")
    where_found, code = mod["find_solution"](str(ROOT))
    assert code is not None and where_found
    shown = " ".join(c.output for c in graded["results"]["pry_disk"].checks)
    assert "solution found: None" in shown and "readable: []" in shown


def test_patched_grader_modules_are_a_fatal_tamper(graded):
    """protocol.send patched at import: since session 20 the worker's guard covers the names that send a reply, so
    the file is refused from its load on (it was refused check by check, each reply malformed)."""
    r = graded["results"]["lie_patch_grader"]
    assert all(c.score == 0 for c in r.checks)
    assert r.error is not None and "malformed reply" in r.error.en, r.error


def test_grading_twice_gives_identical_scores(graded, tmp_path):
    out2 = tmp_path / "again"
    with env(TMPDIR=str(graded["base"] / "tmp")):
        batch.main(submissions=graded["subs"], out=out2, assignment=limited_assignment(), echo=lambda _m: None)
    again = read_results(out2)
    first = graded["results"]
    assert set(again) == set(first)
    for sid in first:
        assert [(c.nodeid, c.score) for c in again[sid].checks] == \
            [(c.nodeid, c.score) for c in first[sid].checks], (sid, [
                (a.nodeid, a.message, b.message) for a, b in zip(again[sid].checks, first[sid].checks)
                if a.score != b.score])
        assert (again[sid].error is None) == (first[sid].error is None)
    assert snapshot(graded["subs"]) == graded["before"]
    assert strays() == [] and os.listdir(graded["base"] / "tmp") == []


def test_a_dead_zygote_is_replaced(tmp_path):
    """Later submissions still get a worker when the zygote died (killed, or out of memory)."""
    z = sandbox.Zygote()
    try:
        z.proc.kill()
        z.proc.wait()
        w = z.spawn(sandbox.Limits(), str(tmp_path), None)
        env = w.request("env", {}, timeout=60)
        assert env["ok"] and env["value"]["landlock"] == confine.abi_version()
        w.kill(graceful=True)
    finally:
        z.close()


def test_grade_check_survives_a_hostile_file_in_a_hostile_folder():
    """`grade check` in a folder whose conftest.py, pytest.ini, numpy.py, torch.py and pytest.py would each end
    the process, on a file that leaves children in new sessions behind: a normal result, nothing left over."""
    folder = Path(tempfile.mkdtemp(prefix="hostile-check-", dir="/tmp"))
    scratch = Path(tempfile.mkdtemp(prefix="hostile-check-tmp-", dir="/tmp"))  # its TMPDIR
    try:
        os.chmod(folder, 0o777)
        os.chmod(scratch, 0o1777)
        (folder / "attention.py").write_text(hostile_cases.BY_NAME["stop_setsid_children"].source(), encoding="utf-8")
        for p in (CORPUS / "lie_folder_shadow").iterdir():
            if p.name != "attention.py":
                shutil.copy2(p, folder / p.name)
        before = snapshot(folder)
        since = time.time() - 1
        p = subprocess.run([sys.executable, str(ROOT / "cli.py"), "check", "attention.py"], cwd=folder,
                           capture_output=True, text=True, timeout=240, env={**os.environ, "TMPDIR": str(scratch)})
        assert p.returncode == 0, p.stdout + p.stderr
        assert "44/44" in p.stdout and "Traceback" not in p.stdout + p.stderr
        assert snapshot(folder) == before
        assert strays() == []
        assert planted(since) == [] and os.listdir(scratch) == []
    finally:
        shutil.rmtree(folder, ignore_errors=True)
        shutil.rmtree(scratch, ignore_errors=True)


# ---------------------------------------------------------------------------------------------- issue 10

def test_nothing_a_worker_creates_outlives_it(graded):
    """No SysV segment (the writer's two, or any of a worker uid), no mount, no memory cgroup is left."""
    left = [seg for seg in graded["sysv"] if seg[0] in SYSV_KEYS or worker_uid(seg[1])]
    assert left == []
    assert str(graded["base"]) not in graded["mounts"] and "/grade-" not in graded["mounts"]
    own = confine._own_cgroup()
    names = {r.sandbox["cgroup"] for r in graded["results"].values() if r.sandbox.get("cgroup")}
    if own is not None and names:
        assert [n for n in names if os.path.exists(os.path.join(own[0], n))] == []


def test_containment_modes_are_recorded(graded):
    """Every graded submission says which containment ran; as root on a kernel that has them, all of it."""
    r = graded["results"]["aa_bystander"]
    assert set(r.sandbox) >= {"namespaces", "scratch", "memory"}
    if os.geteuid() == 0:
        assert r.sandbox["namespaces"] in ("ipc,net,mnt,uts", "none")
        if r.sandbox["namespaces"] != "none":
            assert r.sandbox["scratch"] == "tmpfs"
        if confine._own_cgroup() is not None and r.sandbox["memory"] == "polled":
            pytest.fail("a memory cgroup could be created here, but the submission ran with polled accounting")
        if confine._own_cpu_cgroup_v1() is not None:
            assert r.sandbox["cpu"].startswith("cgroup-v1"), r.sandbox
    gs = json.loads((graded["out"] / "aa_bystander.json").read_text())
    assert gs["extra_data"]["sandbox"] == r.sandbox


def _strings(obj):
    if isinstance(obj, str):
        yield obj
    elif isinstance(obj, dict):
        for k, v in obj.items():
            yield from _strings(k)
            yield from _strings(v)
    elif isinstance(obj, list):
        for x in obj:
            yield from _strings(x)


def _unsafe(text: str) -> list[str]:
    import unicodedata
    return sorted({repr(ch) for ch in text if (ord(ch) < 32 and ch not in "\n\t") or 0x7F <= ord(ch) <= 0x9F
                   or 0xD800 <= ord(ch) <= 0xDFFF or unicodedata.category(ch) in ("Cf", "Zl", "Zp")})


def test_student_text_is_clean_in_json_csv_and_table(graded):
    """Escape codes, control characters, lone surrogates and invisible format characters (bidi controls, zero-width
    characters, BOM, line separators) from names, exceptions and prints reach no output."""
    for p in graded["out"].glob("*.json"):
        for text in _strings(json.loads(p.read_text(encoding="utf-8"))):
            assert _unsafe(text) == [], (p.name, text[:200])
    assert _unsafe((graded["out"] / "scores.csv").read_text(encoding="utf-8")) == []
    assert _unsafe(graded["table"]) == []
    printed = " ".join(c.output for c in graded["results"]["sys_text_surrogate"].checks)
    assert "PRINTED \ufffd RED  end" in printed and "owned" not in printed


def test_a_cp949_file_name_is_graded_and_shown_decoded(graded):
    r = graded["results"][CP949_ID]
    assert r.score == 100 and r.submission == "김철수_정답.py" and r.origin["folder"] == "김철수_정답.py"
    assert "김철수_정답.py" in (graded["out"] / "scores.csv").read_text(encoding="utf-8")
    assert graded["results"]["esc_name"].origin["folder"] == "esc_name_.txt"


def test_no_result_is_a_grader_failure(graded):
    """Crashes on demand end as the submission's own result, never as "the autograder itself failed"."""
    failed = [sid for sid, r in graded["results"].items() if r.error and "autograder itself failed" in r.error.en]
    assert failed == []


SPIN = """
import os as _os, subprocess as _sp, time as _time
_mine = _os.sched_getaffinity(0)
_os.sched_setaffinity(0, set(range(_os.cpu_count() or 1)) - _mine or _mine)  # the other grader's core
_kids = [_sp.Popen(["/bin/sh", "-c", "while :; do :; done"], stdin=_sp.DEVNULL, stdout=_sp.DEVNULL,
                   stderr=_sp.DEVNULL, start_new_session=True) for _ in range(40)]
_os.sched_setaffinity(0, _mine)
"""


@pytest.mark.skipif(os.geteuid() != 0 or (os.cpu_count() or 1) < 2, reason="two cores and root (workers' cgroups)")
def test_spinning_processes_in_their_own_sessions_do_not_starve_the_submission_graded_beside(tmp_path):
    """Red-team finding: 40 spinning processes, each in a session of its own (the kernel shares a core between
    sessions) and moved onto the other grader's core, together under the 1.25-core budget, left the submission
    graded there 1/41 of its core: a correct CausalAttention that needs a second of CPU timed out (20 s) and lost
    all its points while the attacker kept 100. Each submission is one cpu cgroup now (one share, at most 1.25
    cores). Also: the same spinners beside a raised ModuleNotFoundError starved the check that tells a
    submission's own import failure from the grader's, and the untouched skeleton passed as the grader's failure."""
    from conftest import REFERENCE, SKELETON, grade_sources
    ref = REFERENCE.read_text()

    def first_calls_of(src: str, cls: str, n: int, body: str) -> str:
        """src with `body` run at the start of cls.forward's first n calls."""
        line = "        b, num_tokens, d_in = x.shape" if cls != "SelfAttention_v1" else "        keys = x @ self.W_key"
        i = src.index(f"class {cls}(")
        j = src.index(line, i)
        return (f"_calls_{cls} = [0]\n\n\n" + src[:j]
                + f"        _calls_{cls}[0] += 1\n        if _calls_{cls}[0] <= {n}:\n{body}" + src[j:])
    # The victim: a correct file whose CausalAttention needs 0.6 s of CPU on each of its first five calls.
    slow = first_calls_of(ref, "CausalAttention", 5, "            _t = __import__('time').process_time()\n"
                          "            while __import__('time').process_time() - _t < 0.6:\n                pass\n")
    # The attacker: 40 spinners on the other core while it sleeps (its own grading goes on meanwhile).
    hog = first_calls_of(ref, "SelfAttention_v1", 2, "            __import__('time').sleep(8)\n") + SPIN + \
        "_time.sleep(12)\n"
    results = grade_sources(tmp_path, {
        "a_hog.py": hog,
        "b_slow.py": slow,
        "c_skeleton_starving.py": SKELETON.read_text() + SPIN.replace("set(range(_os.cpu_count() or 1)) - _mine or "
                                                                      "_mine", "_mine")
                                  + "raise ModuleNotFoundError(\"No module named 'matplotlib.pyplot'\")\n"})
    assert results["b_slow"].score == 100, [(c.name, c.message.en) for c in results["b_slow"].checks
                                            if c.status != "passed" and c.points]
    skeleton = results["c_skeleton_starving"]
    assert skeleton.score == 0 and skeleton.error is None, (skeleton.error, skeleton.staff[-800:])
