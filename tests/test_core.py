"""The grader grades the lab: reference = full marks, skeleton = zero, notebook form, bad files, result formats."""
from __future__ import annotations

import contextlib
import csv
import os
import json
import shutil
import subprocess
import sys

import pytest

from conftest import REFERENCE, ROOT, SKELETON, by_question, grade_sources, notebook


@pytest.fixture(scope="module")
def graded(tmp_path_factory):
    ref = REFERENCE.read_text()
    nb = notebook(
        "%matplotlib inline\n!pip install torch\nimport torch",
        ref,
        "%%timeit\nthis cell is a magic and never runs",
        "raise RuntimeError('a demo cell that fails')",
        "print(undefined_name)  # another broken demo",
    )
    return grade_sources(tmp_path_factory.mktemp("core"), {
        "reference.py": REFERENCE,
        "skeleton.py": SKELETON,
        "nbstudent/attention.ipynb": nb,
        "cp949.py": ("# 한국어 주석: 인코딩 테스트\n" + ref).encode("cp949"),
        "twofiles/attention.py": REFERENCE,
        "twofiles/attention.ipynb": nb,
        "empty.py": "",
        "badjson.ipynb": '{"cells": [',
        "syntax.py": "import torch\ndef broken(:\n    pass\n",
        "readme.txt": "not code",
        # A cell nested 100,000 deep: Python's parser raises MemoryError on it, not SyntaxError.
        "deep_cell.ipynb": notebook(ref, "_x = " + "-" * 100_000 + "1\n"),
    })


def test_reference_gets_full_marks(graded):
    r = graded["reference"]
    assert r.error is None
    assert r.max_score == 100
    assert r.score == 100, [(c.name, c.message) for c in r.checks if c.status != "passed"]


def test_a_cell_too_deep_to_parse_costs_only_itself(graded):
    """The deep cell is lost (the worker skips it); the grader's own reading of the source (the misspelt-method
    hint, looked for when a constructor raises as asked) must not turn that into an internal error."""
    r = graded["deep_cell"]
    assert r.error is None and not r.staff, (r.error, r.staff)
    assert r.score == 100, [(c.name, c.message and c.message.en) for c in r.checks if c.status != "passed"]


def test_skeleton_gets_zero_without_crash(graded):
    r = graded["skeleton"]
    assert r.error is None, r.error
    assert r.score == 0
    assert r.max_score == 100
    assert all(c.status in ("failed", "skipped") for c in r.checks)
    texts = [c.message.en for c in r.checks if c.status == "failed"]
    assert texts and all("not implemented" in t for t in texts), texts[:3]


def test_notebook_with_magics_and_failing_demo_cells_gets_full_marks(graded):
    r = graded["nbstudent"]
    assert r.submission == "attention.ipynb"
    assert r.score == 100
    notes = " ".join(n.en for n in r.notes)
    assert "a demo cell that fails" in notes and "undefined_name" in notes


def test_cp949_source_is_decoded_with_a_note(graded):
    r = graded["cp949"]
    assert r.score == 100
    assert any("CP949" in n.en for n in r.notes)


def test_py_beside_ipynb_grades_the_newer_with_a_note(graded):
    """The bundle ships both files; the one modified last (here the notebook) is graded, with a note (issue 9)."""
    r = graded["twofiles"]
    assert r.error is None and r.score == 100 and r.submission == "attention.ipynb"
    assert any("modified more recently" in n.en for n in r.notes)


@pytest.mark.parametrize("student, words", [
    ("empty", "empty"),
    ("badjson", "not a valid notebook"),
    ("readme", "not a .py or .ipynb"),
])
def test_unusable_input_gets_a_result_with_a_clear_message(graded, student, words):
    r = graded[student]
    assert r.error is not None and words in r.error.en
    assert r.score == 0 and r.max_score == 100  # every check is listed, none earned


def test_syntax_error_names_the_line(graded):
    r = graded["syntax"]
    assert r.score == 0
    assert any("Syntax error" in n.en and "line 2" in n.en for n in r.notes)


def test_results_follow_gradescope_schema_and_csv_has_a_row_each(graded, tmp_path_factory):
    out = next(p for p in tmp_path_factory.getbasetemp().glob("core*/results"))
    data = json.loads((out / "reference.json").read_text())
    assert data["score"] == 100
    for t in data["tests"]:
        assert {"name", "score", "max_score", "status", "output", "visibility", "tags"} <= set(t)
        assert t["status"] in ("passed", "failed")
        assert t["visibility"] in ("hidden", "after_due_date", "after_published", "visible")
    assert {"CausalAttention", "MultiHeadAttention"} <= {tag for t in data["tests"] for tag in t["tags"]}
    rows = list(csv.DictReader((out / "scores.csv").open()))
    assert sorted(r["student"] for r in rows) == sorted(graded)
    ref = next(r for r in rows if r["student"] == "reference")
    assert float(ref["score"]) == 100 and float(ref["CausalAttention"]) == 25


def test_question_totals(graded):
    assert by_question(graded["reference"]) == {"steps": 10, "SelfAttention_v1": 15, "SelfAttention_v2": 15,
                                                "CausalAttention": 25, "MultiHeadAttentionWrapper": 15,
                                                "MultiHeadAttention": 20}


def test_checks_called_directly_grade_exactly_as_through_pytests_protocol(tmp_path, monkeypatch):
    """The grading loop calls checks as plain functions (pytest's per-check protocol costs a third of the
    grader's time); every check of every assignment takes that path, and the results are the same as through
    pytest's protocol: scores, statuses, messages, output, in the same order."""
    from autograder import assignment, plugin, runner
    from autograder.plugin import GradingPlugin, Job

    buggy = REFERENCE.read_text().replace("dim=-1)\n        weights = self.dropout", "dim=1)\n        weights = self.dropout")
    files = {"ref.py": REFERENCE.read_text(), "bug.py": buggy, "skel.py": SKELETON.read_text()}
    for name, text in files.items():
        (tmp_path / name).write_text(text)
    protocol_runs: list[str] = []
    real = plugin.runtestprotocol
    monkeypatch.setattr(plugin, "runtestprotocol",
                        lambda item, **kw: (protocol_runs.append(item.nodeid), real(item, **kw))[1])

    def grade_all(name: str, paths: list) -> list[dict]:
        out: list = []
        runner.grade(assignment.load(name), [Job(p.stem, p) for p in paths], out.append)
        return [{k: v for k, v in r.to_dict().items() if k not in ("duration", "sandbox")} for r in out]  # per run

    direct = grade_all("attention", [tmp_path / n for n in files])
    assert protocol_runs == []  # every check went the direct way
    assert [r["score"] for r in direct][0] == 100 and 0 < direct[1]["score"] < 100
    for name in ("mha_intermediates", "transformer_block"):  # their checks qualify too (one assignment per
        code = f"""                                         # grader process, as in `grade batch`)
import sys; sys.path.insert(0, {str(ROOT)!r})
from pathlib import Path
from autograder import assignment, plugin, runner
def refuse(item, **kw): raise SystemExit("not direct: " + item.nodeid)
plugin.runtestprotocol = refuse
out = []
runner.grade(assignment.load({name!r}), [plugin.Job("r", Path({str(ROOT / "reference" / f"{name}.py")!r}))], out.append)
print("score", out[0].score)
"""
        done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=600)
        assert done.returncode == 0 and "score 100" in done.stdout, (name, done.stdout[-500:], done.stderr[-2000:])
    monkeypatch.setattr(GradingPlugin, "DIRECT_FIXTURES", frozenset())  # force pytest's protocol
    through_pytest = grade_all("attention", [tmp_path / n for n in files])
    assert protocol_runs  # this time they did not
    assert through_pytest == direct


class _Probe:
    """A fresh worker as Submission._student_made sees it: its load reply, and how it was stopped."""

    def __init__(self, errors):
        self.errors, self.stopped = errors, None

    def request(self, op, args, timeout):
        assert op == "load" and args["cells"][0]["code"] == "import numpy", (op, args)
        return {"ok": True, "value": {"names": {}, "errors": self.errors}}

    def kill(self, graceful=False, sweep_uid=True):
        self.stopped = (graceful, sweep_uid)
        return {}


@pytest.mark.parametrize("fresh_worker_fails", [False, True])
def test_an_import_failure_is_the_graders_only_where_a_fresh_worker_fails_too(fresh_worker_fails):
    """A submission may raise ModuleNotFoundError("No module named 'numpy'") itself, to pass as the grader's
    failure (red team); a fresh worker, which ran none of its code, tells: if it imports the module, the
    failure was the submission's. The probe is stopped without sweeping the worker uid (the submission's own
    worker is still running under it)."""
    from autograder.proxy import EnvironmentFailure, Submission
    from autograder.sandbox import Limits
    err = {"type": "ModuleNotFoundError", "message": "No module named 'numpy'"}
    probe = _Probe([err] if fresh_worker_fails else [])
    sub = Submission(None, lambda: probe, Limits())
    assert sub._student_made("numpy") is (not fresh_worker_fails)
    assert probe.stopped == (True, False)
    # A fresh worker that fails on the import otherwise (an installed module no worker can import, such as
    # torch._dynamo, or one missing a dependency) does not make a hand-raised error the grader's.
    other = _Probe([{"type": "PermissionError", "message": "[Errno 13] Permission denied: '/tmp/torchinductor'"},
                    {"type": "ModuleNotFoundError", "message": "No module named 'tensorboard'"}])
    assert Submission(None, lambda: other, Limits())._student_made("numpy") is True
    sub.worker = type("W", (), {"cpu_seconds": lambda self: 0.0, "alive": True,
                                "request": lambda self, op, args, timeout: {"ok": False, "error": err}})()
    if fresh_worker_fails:
        with pytest.raises(EnvironmentFailure):
            sub.request("call", what="f(...)")
    else:
        from autograder.checks import CheckFailure
        with pytest.raises(CheckFailure, match="No module named 'numpy'"):
            sub.request("call", what="f(...)")


def test_the_worker_puts_back_the_torch_settings_a_submission_changed(tmp_path):
    """What each setting is after a load that changed them all, in a worker of its own (a Worker in the test process
    would install its guards here): grad mode, default dtype and device, matmul precision, deterministic algorithms,
    anomaly mode and the thread count (1 in a worker: a demo's torch.set_num_threads(16) made a batch's workers
    contend for the cores). A notebook's `torch.set_grad_enabled(False)` cost its gradient checks, and
    `torch.set_default_dtype(torch.float64)` every check (test_notebook has those notebooks)."""
    script = """
import json, socket, torch
from autograder.worker import Worker
torch.set_num_threads(1)
before = [torch.is_grad_enabled(), str(torch.get_default_dtype()), str(torch.get_default_device()),
          torch.get_float32_matmul_precision(), torch.are_deterministic_algorithms_enabled(),
          torch.is_anomaly_enabled(), torch.get_num_threads()]
demo = '''import torch
torch.set_grad_enabled(False)
torch.set_default_dtype(torch.float64)
torch.set_default_device('meta')
torch.set_float32_matmul_precision('medium')
torch.use_deterministic_algorithms(True)
torch.autograd.set_detect_anomaly(True)
torch.set_num_threads(3)
'''
reply = Worker(socket.socketpair()[0]).op_load([{"code": demo, "label": "demo.py"}])
after = [torch.is_grad_enabled(), str(torch.get_default_dtype()), str(torch.get_default_device()),
         torch.get_float32_matmul_precision(), torch.are_deterministic_algorithms_enabled(),
         torch.is_anomaly_enabled(), torch.get_num_threads()]
print(json.dumps([reply["errors"], before, after]))
"""
    out = subprocess.run([sys.executable, "-c", script], cwd=tmp_path, capture_output=True, text=True, timeout=120,
                         env={"PYTHONPATH": str(ROOT), "PATH": "/usr/bin:/bin"})
    errors, before, after = json.loads(out.stdout.strip().splitlines()[-1])
    assert errors == []
    assert after == before == [True, "torch.float32", "cpu", "highest", False, False, 1]


def test_putting_back_the_torch_settings_imports_nothing():
    """The worker puts back torch's settings after every load (worker._TorchDefaults). torch.use_deterministic_algorithms
    imports torch._inductor and sympy (about a second of CPU and 70 MB): called every time, it made every submission
    that much slower and starved a hostile test's load past its limit (session 14). Only a changed setting is set,
    and an unchanged one costs no import. In a fresh interpreter, as a worker's is after the zygote's imports."""
    code = (f"import sys; sys.path.insert(0, {str(ROOT)!r})\n"
            "import torch\nfrom autograder import worker\n"
            "before = set(sys.modules)\nworker._TorchDefaults().restore()\n"
            "print(sorted(set(sys.modules) - before)[:5])\n")
    p = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120)
    assert p.returncode == 0 and p.stdout.strip() == "[]", (p.stdout, p.stderr[-2000:])


def test_a_call_watched_only_for_the_library_runs_under_no_torch_mode():
    """A watch for torch's layers (LIBRARY, LIBRARY_ATTENTION) alone puts neither a function mode nor a dispatch mode
    on torch's stacks: their fused kernels are refused in the worker (refuse_fused), and the two modes were half of
    a watched call's cost (every call of the attention lab's MultiHeadAttention is watched). A watch that records
    what softmax is given still needs the function mode, and gets it."""
    import torch
    from autograder import worker
    seen = []

    class Probe(torch.nn.Module):
        def forward(self, x):
            seen.append((torch._C._len_torch_function_stack(), torch._C._len_torch_dispatch_stack()))
            return torch.softmax(x, dim=-1)

    m, x = Probe(), torch.rand(2, 3)
    for names in ([worker.LIBRARY], [worker.LIBRARY_ATTENTION], [worker.LIBRARY, worker.LIBRARY_ATTENTION],
                  ["softmax", worker.LIBRARY_ATTENTION]):
        rec = worker.Recorder(names)
        with rec:
            m(x)
        assert [r["fn"] for r in rec.seen] == (["softmax"] if "softmax" in names else []), (names, rec.seen)
    assert seen == [(0, 0), (0, 0), (0, 0), (1, 0)], seen


def test_a_call_watched_for_the_library_imports_nothing():
    """A call watched for torch's own layers (worker.Recorder with LIBRARY or LIBRARY_ATTENTION) imports no module in
    the worker: while the watch had a dispatch mode (until session 18), torch wrapped its __torch_dispatch__ in
    torch._disable_dynamo, whose first call imported torch._dynamo and sympy (about 800 modules, 2 s of CPU in every
    worker, and a PermissionError that failed the watched class where the worker cannot read torch's files). After
    the imports and warm-up the zygote does, in a fresh interpreter."""
    code = (f"import sys; sys.path.insert(0, {str(ROOT)!r})\n"
            "import torch\nfrom autograder import worker\nworker.warm_up(False)\n"
            "before = set(sys.modules)\nm = torch.nn.Linear(4, 4)\n"
            "for watch in (worker.LIBRARY, worker.LIBRARY_ATTENTION):\n"
            "    with worker.Recorder([watch]):\n        m(torch.ones(2, 4))\n"
            "print(sorted(set(sys.modules) - before)[:5])\n")
    p = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120)
    assert p.returncode == 0 and p.stdout.strip() == "[]", (p.stdout, p.stderr[-2000:])


@contextlib.contextmanager
def _process_of(uid: int):
    """A child process under `uid` that sleeps until the block ends (its uid set before the block begins)."""
    import signal
    import time
    from autograder import worker
    pid = os.fork()
    if pid == 0:
        try:
            os.setuid(uid)
            time.sleep(60)
        finally:
            os._exit(0)
    try:
        for _ in range(500):
            if worker._uid_of(str(pid)) == uid:
                break
            time.sleep(0.01)
        yield pid
    finally:
        os.kill(pid, signal.SIGKILL)
        os.waitpid(pid, 0)


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="needs /proc and waitid")
def _in_a_fresh_process(body) -> None:
    """body() run in a forked child of this process (one of no children, whatever it changes); a failure there fails
    the test, its traceback in the test's captured output."""
    pid = os.fork()
    if pid == 0:
        code = 1
        try:
            body()
            code = 0
        except BaseException:
            import traceback
            traceback.print_exc()  # (which step failed)
        finally:
            os._exit(code)
    assert os.waitpid(pid, 0)[1] == 0


def _sleeper() -> int:
    """A child that sleeps for a minute: its pid."""
    import time
    kid = os.fork()
    if kid == 0:
        time.sleep(60)
        os._exit(0)
    return kid


def _zombie(kid: int) -> None:
    """Child `kid` killed and left unreaped (a zombie) once this returns."""
    import time
    os.kill(kid, 9)
    for _ in range(500):
        with open(f"/proc/{kid}/stat") as f:
            if f.read().rsplit(")", 1)[1].split()[0] == "Z":
                return
        time.sleep(0.01)


def _sleeper_of_an_ended_thread() -> int:
    """A sleeping child made by a thread that has ended since (joined): its pid."""
    import threading
    made = []
    t = threading.Thread(target=lambda: made.append(_sleeper()))
    t.start()
    t.join()
    return made[0]


def test_a_watched_call_lists_its_processs_children_unless_waitid_says_there_are_none():
    """worker._children_mark(), at each end of every watched call, reads /proc/self/task and a file per thread only
    where waitid (ECHILD, nothing reaped) does not say the process has no child at all: a live child, a zombie and the
    child of another thread are each listed, and none is reaped by looking. Run in a fresh process of no children."""
    from autograder import worker

    def body():
        assert worker._no_children() and worker._children_mark()[1] == frozenset()
        kid = _sleeper()
        assert not worker._no_children() and worker._children_mark()[1] == {str(kid)}
        _zombie(kid)
        for _ in range(2):  # (looking reaps nothing)
            assert not worker._no_children() and worker._children_mark()[1] == {str(kid)}
        assert os.waitpid(kid, 0)[0] == kid
        assert worker._no_children() and worker._children_mark()[1] == frozenset()
        kid = _sleeper_of_an_ended_thread()
        assert not worker._no_children() and str(kid) in worker._children_mark()[1]
        os.kill(kid, 9)
        os.waitpid(kid, 0)
        assert worker._no_children()
    _in_a_fresh_process(body)


def test_the_threads_that_starting_cuda_made_are_the_workers_own_and_no_others(monkeypatch):
    """worker.start_cuda (a worker that may see a GPU, before the submission's code): the threads CUDA's driver starts
    there are the worker's own (_OWN_THREADS), and a watched call does not read them as the submission's doing work
    when they wake (on an H200 a right MultiHeadAttention beside an idle thread lost its CUDA run's point now and
    then). A thread made afterwards counts, and so does one holding a recorded id with another start time (an id
    given again). Here a thread started by a stand-in for the CUDA probe plays the driver's. In a fresh process."""
    import threading
    import time
    from autograder import worker

    def body():
        stop = threading.Event()

        def busy():  # wakes and runs, as the driver's event handler does
            while not stop.is_set():
                sum(range(2000))
                time.sleep(0.001)

        def probe():
            threading.Thread(target=busy, daemon=True).start()
            return True, ""
        monkeypatch.setattr(worker, "probe_cuda", probe)
        worker.start_cuda()
        (own, start), = worker._OWN_THREADS
        assert worker.SANDBOX["cuda"] is True and start == worker._thread_start(own) and start
        assert own not in worker._activity([]), worker._activity([])
        mine = threading.Thread(target=busy, daemon=True)
        mine.start()
        assert str(mine.native_id) in worker._activity([])
        monkeypatch.setattr(worker, "_OWN_THREADS", ((str(mine.native_id), b"1"),))  # (the id, another start)
        assert {own, str(mine.native_id)} <= set(worker._activity([]))
        stop.set()
    _in_a_fresh_process(body)


def test_where_the_kernel_has_no_children_files_a_processs_children_are_found_by_their_parent(monkeypatch):
    """Where a thread's /proc/<pid>/task/<tid>/children is missing (a thread still leaving the kernel after its join,
    which failed the waitid test above once on an H200, session 19; a kernel built without CONFIG_PROC_CHILDREN),
    _own_children finds the children by the parent each process names (_children_by_parent), a live child, a zombie
    and the child of an ended thread alike, and does not raise (it raised FileNotFoundError, and _children_mark then
    saw no child at all). Here every children file is missing. Run in a fresh process of no children."""
    from autograder import worker
    real = worker._read_proc

    def no_children_file(path):
        if path.endswith("/children"):
            raise FileNotFoundError(2, "No such file or directory", path)
        return real(path)

    def body():
        monkeypatch.setattr(worker, "_read_proc", no_children_file)
        assert worker._own_children() == set() and worker._children_by_parent() == set()
        live, zombie = _sleeper(), _sleeper()
        _zombie(zombie)
        orphaned = _sleeper_of_an_ended_thread()
        want = {str(k) for k in (live, zombie, orphaned)}
        assert worker._own_children() == want, (worker._own_children(), want)
        assert worker._children_mark()[1] == want
        for k in (live, zombie, orphaned):
            if k != zombie:
                os.kill(k, 9)
            os.waitpid(k, 0)
        assert worker._children_by_parent() == set()
    _in_a_fresh_process(body)


@pytest.mark.skipif(not sys.platform.startswith("linux") or os.geteuid() != 0, reason="needs /proc and root (setuid)")
def test_the_start_of_a_watched_call_skips_the_scan_of_proc_only_while_no_process_was_made(monkeypatch):
    """worker._process_ids(quick=True), at the start of a watched call, skips the stat of every process on the machine
    (0.4 ms with 190, at each of the transformer block lab's 130 watched calls) while /proc/loadavg says no process has
    been made since a scan that found none of the worker's uid; one made since is found. (The end of the call always
    scans: see test_exam's orphan_rescanned, which rewrites worker._SCANNED to hide its server.)"""
    from autograder import worker
    uid = 54321  # a uid no process here has: the worker's own, as when it runs under a uid of its own as root
    monkeypatch.setattr(os, "getuid", lambda: uid)
    scans: list[str] = []
    listdir = os.listdir
    monkeypatch.setattr(os, "listdir", lambda p=".": (scans.append(p) if p == "/proc" else None) or listdir(p))
    skipped = False
    for _ in range(50):  # (another process made on the machine between the two calls makes the second scan: again)
        scans.clear()
        assert worker._process_ids() == [] and scans == ["/proc"]
        assert worker._process_ids(quick=True) == []
        if scans == ["/proc"]:
            skipped = True
            break
    assert skipped, "the quick call scanned /proc although no process had been made"
    assert worker._process_ids(quick=False) == [] and scans.count("/proc") == 2  # (a full scan always scans)
    with _process_of(uid) as pid:
        assert str(pid) in worker._process_ids(quick=True)


@pytest.mark.skipif(not sys.platform.startswith("linux") or os.geteuid() != 0, reason="needs /proc and root (setuid)")
def test_the_cgroups_list_of_processes_stands_for_the_scan_only_while_it_is_the_groups_and_lists_the_worker(
        monkeypatch, tmp_path):
    """worker._process_ids reads the worker's cgroup's cgroup.procs (worker.set_procs) instead of stat-ing every process
    on the machine, but only while that descriptor is still the file it was (not one the submission put in its place)
    and the list holds the worker itself (a group the keeper could not put it in, or one removed, lists nobody); else
    it scans /proc as before. Here a file stands in for cgroup.procs."""
    from autograder import worker
    uid = 54321
    monkeypatch.setattr(os, "getuid", lambda: uid)
    scans: list[str] = []
    listdir = os.listdir
    monkeypatch.setattr(os, "listdir", lambda p=".": (scans.append(p) if p == "/proc" else None) or listdir(p))
    me = os.getpid()
    monkeypatch.setattr(worker, "_PROCS_FD", -1)
    monkeypatch.setattr(worker, "_PROCS_ID", ())
    procs = tmp_path / "cgroup.procs"
    with _process_of(uid) as other:
        procs.write_text(f"{me}\n{other}\n")
        fd = os.open(procs, os.O_RDONLY)
        worker.set_procs(fd)
        assert worker._process_ids() == [str(other)] and scans == []  # the list, no scan
        procs.write_text(f"{other}\n")  # (same inode) a group this process is not in: the scan, which finds it too
        assert worker._process_ids() == [str(other)] and scans == ["/proc"]
        procs.write_text(f"{me}\n")
        decoy = tmp_path / "decoy"
        decoy.write_text(f"{me}\n")
        d = os.open(decoy, os.O_RDONLY)
        os.dup2(d, fd)  # the submission's own file in its place, listing the worker alone: not believed
        os.close(d)
        assert worker._process_ids() == [str(other)] and scans == ["/proc", "/proc"]
        os.close(fd)


def test_the_profile_functions_quick_test_lets_through_all_that_a_watch_looks_for():
    """Recorder._profile first asks whether any watch looks for a call (one set lookup: nearly every call of a forward
    is looked for by none), then each watch as before. What the watches look for still gets through: the layer's
    code (also copied, another file's equal code object), its large methods' names under another name, the kernel
    by name or builtin, a thread's start; what none looks for marks nothing."""
    import _thread
    import types
    import torch
    from autograder import worker
    layer = torch.nn.TransformerEncoderLayer

    def ran(event, arg=None, code=None):
        rec = worker.Recorder([worker.LIBRARY, worker.LIBRARY_ATTENTION])
        rec._profile(types.SimpleNamespace(f_code=code, f_locals={}), event, arg)
        return sorted(rec.ran)

    lib, both = ["library:transformer"], ["library:attention", "library:transformer"]
    assert ran("call", code=layer._ff_block.__code__) == lib
    assert ran("call", code=layer._ff_block.__code__.replace(co_filename="student.py")) == lib  # (equal: copied)
    assert ran("call", code=layer.forward.__code__.replace(co_name="mine", co_firstlineno=3)) == lib  # (its names)
    assert ran("call", code=torch.nn.functional.multi_head_attention_forward.__code__) == ["library:attention"]
    assert ran("c_call", arg=torch._transformer_encoder_layer_fwd) == lib
    assert ran("c_call", arg=worker._LIBRARY_BUILTINS[0]) == lib
    assert ran("c_call", arg=_thread.start_new_thread) == both
    assert ran("call", code=torch.nn.Linear.forward.__code__) == []
    assert ran("call", code=torch.nn.Module._call_impl.__code__) == []
    assert ran("c_call", arg=torch.matmul) == []
    # (red team, session 19) code torch.fx generated: a GraphModule from make_fx or symbolic_trace, called directly
    from torch.fx.experimental.proxy_tensor import make_fx
    assert ran("call", code=make_fx(lambda x: x.sin())(torch.ones(2)).forward.__code__) == both
    assert ran("call", code=torch.fx.symbolic_trace(torch.nn.Linear(2, 2)).forward.__code__) == both


def _watched(fn, c_filter: bool) -> list[str]:
    """What a watch of both libraries says ran while fn() ran (its exception, if any, ignored), with the C filter in
    front of Recorder._profile or without it."""
    from autograder import worker
    saved = worker._FILTERED_SETPROFILE
    if not c_filter:
        worker._FILTERED_SETPROFILE = None
    try:
        rec = worker.Recorder([worker.LIBRARY, worker.LIBRARY_ATTENTION])
        with rec:
            with contextlib.suppress(Exception):
                fn()
        assert all(s.get("watched") for s in rec.seen), rec.seen  # (seen, not taken off: else all would read as ran)
        return sorted(rec.ran)
    finally:
        worker._FILTERED_SETPROFILE = saved


def test_the_c_filter_hands_the_watch_every_event_it_acts_on():
    """The library watch's C filter (autograder/_watchhook.c) answers the profile events Recorder._profile would
    return from without a look and hands it all others: a watch with it and one without say the same of the layer's
    code (called, or copied under another file or name), its kernel called by name, a thread started, code torch.fx
    generated, and of the notebook's own MultiHeadAttention (nothing). Built wherever a C compiler is (make setup)."""
    import threading
    import types
    import torch
    from autograder import worker
    if shutil.which("cc") or shutil.which("gcc"):
        assert worker.WATCH_FILTER == "c"
    if worker.WATCH_FILTER != "c":
        pytest.skip("the C filter is not built here")
    sys.path.insert(0, str(ROOT / "reference"))
    try:
        import attention as R
    finally:
        sys.path.remove(str(ROOT / "reference"))
    layer = torch.nn.TransformerEncoderLayer(4, 2, 8, dropout=0.0, batch_first=True).eval()
    x = torch.ones(1, 3, 4)
    mha = torch.nn.MultiheadAttention(4, 2, batch_first=True)
    F = torch.nn.functional
    copied = types.FunctionType(F.multi_head_attention_forward.__code__.replace(co_filename="student.py"),
                                F.multi_head_attention_forward.__globals__, None,
                                F.multi_head_attention_forward.__defaults__)
    copied.__kwdefaults__ = F.multi_head_attention_forward.__kwdefaults__
    renamed = types.FunctionType(layer.forward.__code__.replace(co_name="mine", co_firstlineno=3),
                                 vars(torch.nn.modules.transformer), None, layer.forward.__defaults__)
    graph = torch.fx.symbolic_trace(torch.nn.Linear(4, 4))
    both, attention, transformer = ["library:attention", "library:transformer"], ["library:attention"], \
        ["library:transformer"]
    ran = []

    class Loud:  # (any method of it that runs says so: nothing may run it inside the watch)
        def __hash__(self):
            ran.append("hash")
            return 1

        def __eq__(self, other):
            ran.append("eq")
            return self is other

    class LoudName(str):
        def __hash__(self):
            ran.append("name")
            return str.__hash__(self)

    class LoudNames(tuple):
        def __len__(self):
            ran.append("names")
            return tuple.__len__(self)

    class Classy(torch.nn.Module):
        @property
        def __class__(self):
            ran.append("class")
            return type(self)

        def forward(self, t):
            return t

    def nested(depth):
        out = 1
        for _ in range(depth):
            out = (out,)
        return out

    def at_line(consts=(), name=None, names=None, line=F.multi_head_attention_forward.__code__.co_firstlineno):
        code = (lambda: None).__code__
        code = code.replace(co_firstlineno=line, co_consts=code.co_consts + consts, co_name=name or code.co_name,
                            co_names=code.co_names if names is None else names)
        return types.FunctionType(code, {})
    cases = {
        "the notebook's MultiHeadAttention": (lambda: R.MultiHeadAttention(4, 4, 3, 0.0, num_heads=2)(x), []),
        "nn.MultiheadAttention": (lambda: mha(x, x, x), attention),
        "nn.TransformerEncoderLayer": (lambda: layer(x), None),
        "the function copied": (lambda: copied(x, x, x, 4, 2, mha.in_proj_weight, mha.in_proj_bias, None, None,
                                               False, 0.0, mha.out_proj.weight, mha.out_proj.bias), attention),
        "its forward renamed": (lambda: renamed(layer, x), None),
        "the kernel by name": (lambda: torch._transformer_encoder_layer_fwd(), transformer),
        "a thread": (lambda: threading.Thread(target=len, args=((),)).start(), both),
        "fx's code": (lambda: graph(x), both),
        # (session 21) code objects made to run code when compared or measured, and their plain look-alikes
        "a constant of its own at the library's first line": (lambda: at_line(consts=(Loud(),))(), both),
        "constants nested too deep at that line": (lambda: at_line(consts=(nested(250),))(), both),
        "constants nested deep but plain at that line": (lambda: at_line(consts=(nested(150),))(), []),
        "its name a str subclass at that line": (lambda: at_line(name=LoudName("f"))(), both),
        "its co_names a tuple subclass": (lambda: at_line(names=LoudNames(), line=1)(), both),
        "a module whose __class__ is a property": (lambda: Classy()(x), []),
    }
    for what, (fn, expected) in cases.items():
        with_c, without = _watched(fn, True), _watched(fn, False)
        assert with_c == without, what
        if expected is None:
            assert "library:transformer" in with_c, what
        else:
            assert with_c == expected, what
    assert ran == [], ran


def test_the_c_filter_hands_on_few_events_and_its_constants_are_set_once():
    """Of a constructor's profile events, the filter passes on a handful (those Recorder._profile looks at);
    install() refuses a second call, so a submission cannot empty the sets it reads."""
    import torch
    from autograder import worker
    if worker.WATCH_FILTER != "c":
        pytest.skip("the C filter is not built here")

    class Count:
        def __init__(self):
            self.events = 0

        def hook(self, frame, event, arg):
            self.events += 1

    every, passed = Count(), Count()
    for count, switch in ((every, sys.setprofile), (passed, worker._watchhook.setprofile)):
        switch(count.hook)
        try:
            torch.nn.TransformerEncoderLayer(8, 2, 16)
        finally:
            sys.setprofile(None)
    assert every.events > 500 and passed.events < every.events / 20, (every.events, passed.events)
    # a step that watches only the attention: code of the encoder layer's own (its feed-forward block, the other
    # watch's) is not handed on, so that nothing runs inside the Python function for a note the grader would leave
    # aside
    tags = [w[0] for w in worker._WATCHES]
    layer, x = torch.nn.TransformerEncoderLayer(8, 2, 16).eval(), torch.ones(1, 3, 8)
    counts = {}
    for tag in tags:
        count = Count()
        worker._watchhook.setprofile(count.hook, 1 << tags.index(tag))
        try:
            layer._ff_block(x)
        finally:
            sys.setprofile(None)
        counts[tag] = count.events
    assert counts[worker.LIBRARY] > 0 and counts[worker.LIBRARY_ATTENTION] == 0, counts
    empty = frozenset()
    with pytest.raises(RuntimeError):
        worker._watchhook.install(empty, empty, 1, None, object, True, empty, (), (), 1 << 30, "")
    p = subprocess.run([sys.executable, "-c", "from autograder import worker; print(worker.WATCH_FILTER)"],
                       capture_output=True, text=True, cwd=ROOT, timeout=120,
                       env={**os.environ, "GRADE_WATCH_FILTER": "python"})
    assert p.stdout.strip() == "python", p.stderr[-2000:]


def test_a_worker_refuses_torchscripts_compilers_and_keeps_torchscript_off():
    """worker.refuse_torchscript (run by Worker() before any of the submission's code): torch.jit._state.enable()
    changes nothing (torch.jit.script hands back what it is given), and TorchScript's compilers raise
    TorchScriptRefused however they are reached: torch.jit.CompilationUnit, torch.jit.script with the switch's class
    put back, torch._C's own compile function, a trace, a saved module. A process that only imports the worker module
    (the grader, the zygote) compiles as before. In a fresh interpreter."""
    code = f"""import sys, io, socket, warnings
sys.path.insert(0, {str(ROOT)!r})
warnings.simplefilter("ignore")
import torch
import torch.jit._state as js
from autograder import worker
F = torch.nn.functional
proxy_class = type(js._enabled)
buf = io.BytesIO()
torch.jit.save(torch.jit.script(torch.nn.Linear(2, 2)), buf)  # (importing the worker refuses nothing)
before = type(torch.jit.CompilationUnit("def f(x: int) -> int:\\n    return x\\n").f).__name__
worker.Worker(socket.socketpair()[0])
js.enable()
lin = torch.nn.Linear(2, 2)
got = [before, torch.jit.script(F.multi_head_attention_forward) is F.multi_head_attention_forward,
       torch.jit.trace(lin, torch.ones(1, 2)) is lin, bool(js._enabled)]
def swapped():
    js._enabled.__class__ = proxy_class
    js._enabled.enabled = True
    return torch.jit.script(F.multi_head_attention_forward)
for attempt in (lambda: torch.jit.CompilationUnit("def f(x: int) -> int:\\n    return x\\n"),
                lambda: js._python_cu.define("def g(x: int) -> int:\\n    return x\\n"),
                lambda: torch._C._jit_script_compile("f", None, None, None),
                lambda: torch.jit.load(io.BytesIO(buf.getvalue())), swapped,
                lambda: torch.jit.trace(torch.nn.Linear(2, 2), torch.ones(1, 2))):  # (the switch swapped back)
    try:
        attempt()
        got.append("compiled")
    except worker.TorchScriptRefused:
        got.append("refused")
    except Exception as e:
        got.append(type(e).__name__)
print(got)
"""
    p = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120)
    assert p.returncode == 0, p.stderr[-3000:]
    assert p.stdout.strip() == str(["ScriptFunction", True, True, False] + ["refused"] * 6), p.stdout


def test_the_namespace_check_sees_every_name_rebound_though_it_skips_dicts_that_did_not_change():
    """worker._namespaces_intact (a watched call's start and end) skips a namespace whose dict has the version tag it had
    when the guard read it, and reads the others name by name: a name of torch, torch.Tensor, builtins or os bound
    anew is seen, whether or not a new name came too, and a rebinding undone passes again; a new name alone passes.
    The worker's guard (before every reply) sees a name added to torch.Tensor that its C base has (numpy, to, clone,
    device), and no longer once it is deleted.
    A `value` property given to ctypes' integer classes changes nothing (the tag is read through a memoryview). On
    CPython 3.9 to 3.13, whose dicts have such a tag, the guard holds a view of each namespace's. In a fresh
    interpreter."""
    code = f"""import sys, socket, os, builtins, ctypes
sys.path.insert(0, {str(ROOT)!r})
import torch
from autograder import worker
guard = worker.Worker(socket.socketpair()[0]).guard
fast = worker._VERSION_AT is not None and all(view is not None for *_, view, _tag in worker._NAMESPACES)
same = [view[0] == tag for *_, view, tag in worker._NAMESPACES] if fast else []
seen = [worker._namespaces_intact()]
torch._a_new_name = object()
seen.append(worker._namespaces_intact())
for owner, name in ((torch, "softmax"), (torch.Tensor, "detach"), (builtins, "bytearray"), (os, "write")):
    was = getattr(owner, name)
    setattr(owner, name, lambda *a, **k: was(*a, **k))
    seen.append(worker._namespaces_intact())
    setattr(owner, name, was)
    seen.append(worker._namespaces_intact())
for cls in (ctypes.c_uint64, ctypes.c_ubyte, ctypes.c_ulong):
    cls.value = property(lambda self: 0)
was = torch.matmul
torch.matmul = lambda *a: was(*a)
seen.append(worker._namespaces_intact())
torch.matmul = was
shadows = [guard.intact()]
for name in ("numpy", "to", "clone", "device"):  # (torch._C.TensorBase's: shadowed by a name added to torch.Tensor)
    setattr(torch.Tensor, name, property(lambda self: None) if name == "device" else lambda self, *a, **k: None)
    shadows.append(guard.intact())
    delattr(torch.Tensor, name)
    shadows.append(guard.intact())
torch.Tensor._a_new_name = object()
shadows.append(guard.intact())
try:  # (the guard's views are read-only: the old tag cannot be written back)
    worker._NAMESPACES[0][3][0] = 0
    shadows.append("written")
except TypeError:
    shadows.append(worker._VERSION_AT is not None)
print(fast, all(same), seen + shadows)
"""
    p = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120)
    assert p.returncode == 0, p.stderr[-3000:]
    fast, unchanged, seen = p.stdout.split(maxsplit=2)
    fast_here = sys.implementation.name == "cpython" and (3, 9) <= sys.version_info[:2] <= (3, 13)
    assert seen.strip() == str([True, True] + [False, True] * 4 + [False] + [True] + [False, True] * 4 + [True]
                               + [fast_here]), p.stdout
    if fast_here:
        assert (fast, unchanged) == ("True", "True"), p.stdout


def test_a_worker_refuses_torchs_fused_kernels_however_called_and_its_layers_still_run():
    """worker.refuse_fused (run by Worker() before any of the submission's code): the fused kernels raise
    FusedKernelRefused called directly, through torch.ops, from C (functools.partial) with torch's dispatch and
    function modes off, and on nested tensors (the Triton attention kernel too, which a CUDA build has); nn.MultiheadAttention, nn.TransformerEncoderLayer and nn.Transformer
    still compute (their fast path, which alone reaches the kernels, is off), as they do where nothing was refused;
    a process that only imports the worker module (the grader, the zygote) keeps torch's kernels; and the refusal
    undone is seen (_fused_refused). In a fresh interpreter."""
    code = f"""import sys, functools, socket, warnings
sys.path.insert(0, {str(ROOT)!r})
warnings.simplefilter("ignore")
import torch
from torch import nn
from autograder import worker
x = torch.rand(2, 5, 8)
mha = nn.MultiheadAttention(8, 2, batch_first=True).eval()
w = (x, x, x, 8, 2, mha.in_proj_weight, mha.in_proj_bias, mha.out_proj.weight, mha.out_proj.bias)
with torch.no_grad():
    before = torch._native_multi_head_attention(*w)[0]  # (importing the worker refuses nothing)
    layers = [mha(x, x, x)[0], nn.TransformerEncoderLayer(8, 2, 16, 0.0, batch_first=True).eval()(x)]
worker.Worker(socket.socketpair()[0])
refused = []
def undispatched():
    with torch._C._DisableTorchDispatch(), torch._C.DisableTorchFunction():
        return functools.partial(torch._native_multi_head_attention)(*w)
nested = torch.nested.nested_tensor([x[0], x[1]])
for call in (lambda: torch._native_multi_head_attention(*w), lambda: torch.ops.aten._native_multi_head_attention(*w),
             undispatched, lambda: torch._native_multi_head_attention(nested, nested, nested, *w[3:]),
             lambda: torch._triton_multi_head_attention(*w),
             lambda: torch._transformer_encoder_layer_fwd(x, 8, 2, *w[5:], False, False, 1e-5, *[torch.ones(8)] * 4,
                                                          torch.ones(16, 8), torch.ones(16), torch.ones(8, 16),
                                                          torch.ones(8), None, None)):
    try:
        with torch.no_grad():
            call()
        refused.append(None)
    except worker.FusedKernelRefused as e:
        refused.append(e.tag)
    except NotImplementedError:  # (a kernel this torch has for no backend: the Triton one in a CPU build)
        refused.append("none here")
with torch.no_grad():
    again = [mha(x, x, x)[0], nn.TransformerEncoderLayer(8, 2, 16, 0.0, batch_first=True).eval()(x)]
    shape = tuple(nn.Transformer(8, 2, 1, 1, 16, batch_first=True).eval()(x, x).shape)
intact = worker._fused_refused()
worker._FUSED_LIBRARY[0]._destroy()
print(refused, torch.allclose(before, layers[0], atol=1e-6), torch.allclose(again[0], layers[0], atol=1e-6),
      again[1].shape == layers[1].shape, shape, intact, worker._fused_refused())
"""
    p = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120)
    assert p.returncode == 0, p.stderr[-3000:]
    a, t = "'library:attention'", "'library:transformer'"
    import torch
    triton = a if torch.backends.cuda.is_built() else "'none here'"
    assert p.stdout.strip() == f"[{a}, {a}, {a}, {a}, {triton}, {t}] True True True (2, 5, 8) True False", p.stdout
