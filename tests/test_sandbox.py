"""Forking workers from a zygote that imported torch is safe: one thread, no stray descriptors, same answers."""
from __future__ import annotations

import os
import signal
import sys
import time

import torch

from autograder.proxy import Submission
from autograder.sandbox import Limits, Zygote, make_scratch, remove_scratch
from autograder.source import read
from conftest import REFERENCE


def test_zygote_forks_single_threaded_with_only_its_socket_open():
    z = Zygote()
    try:
        sc = make_scratch(None)
        w = z.spawn(Limits(), sc, None)  # returns once the zygote has warmed up and forked
        status = open(f"/proc/{z.proc.pid}/status").read()
        assert status.split("Threads:")[1].split()[0] == "1"  # no thread pool to be cut in half by fork
        targets = [os.readlink(f"/proc/{z.proc.pid}/fd/{fd}") for fd in os.listdir(f"/proc/{z.proc.pid}/fd")]
        assert sum(t.startswith("socket:") for t in targets) == 1
        assert not [t for t in targets if t.startswith("/") and t != "/dev/null" and not t.startswith("pipe:")
                    and os.path.realpath(t) != os.path.realpath("/proc/self/fd/2")], targets
        w.kill()
        remove_scratch(sc)
    finally:
        z.close()


def test_workers_forked_from_one_zygote_give_identical_seeded_results():
    z = Zygote()
    try:
        outs = []
        for _ in range(3):
            sc = make_scratch(None)
            sub = Submission(read(REFERENCE), lambda: z.spawn(Limits(), sc, None), Limits())
            sub.start()
            m = sub.new("MultiHeadAttention", 3, 4, 6, 0.5, num_heads=2, seed=7)
            outs.append(m(torch.ones(2, 6, 3), mode="train", seed=11))  # dropout draws from the worker's RNG
            sub.close()
            remove_scratch(sc)
        assert torch.equal(outs[0], outs[1]) and torch.equal(outs[1], outs[2])
    finally:
        z.close()


def _collapse_supported() -> bool:
    import ctypes
    import mmap
    from autograder.sandbox import collapse_huge
    m = mmap.mmap(-1, 6 << 20, flags=mmap.MAP_PRIVATE | mmap.MAP_ANONYMOUS)
    m.write(b"x" * (6 << 20))
    base = ctypes.addressof(ctypes.c_char.from_buffer(m))
    start = (base + (2 << 20) - 1) & ~((2 << 20) - 1)
    try:
        return collapse_huge(start, 2 << 20) is not None
    finally:
        m.close()


def _huge_kb(pid: int) -> int:
    with open(f"/proc/{pid}/smaps_rollup") as f:
        return next(int(line.split()[1]) for line in f if line.startswith("AnonHugePages:"))


def test_a_batch_zygote_moves_onto_huge_pages_and_its_workers_compute_the_same():
    """`grade batch`'s zygote backs its memory with huge pages between requests (fork and exit then copy and
    tear down 512 times fewer page-table entries); workers forked before, during and after the move compute
    what a plain zygote's workers compute."""
    if not _collapse_supported():
        pytest.skip("this kernel has no MADV_COLLAPSE (Linux >= 6.1)")
    plain, huge = Zygote(), Zygote(huge=True)

    def seeded(z):
        sc = make_scratch(None)
        sub = Submission(read(REFERENCE), lambda: z.spawn(Limits(), sc, None), Limits())
        sub.start()
        m = sub.new("MultiHeadAttention", 3, 4, 6, 0.5, num_heads=2, seed=7)
        out = m(torch.ones(2, 6, 3), mode="train", seed=11)
        sub.close()
        remove_scratch(sc)
        return out
    try:
        want = seeded(plain)
        got = [seeded(huge)]  # the first fork: nothing moved yet
        deadline = time.monotonic() + 60
        while _huge_kb(huge.proc.pid) < 32 * 1024 and time.monotonic() < deadline:
            got.append(seeded(huge))
            time.sleep(0.2)
        assert _huge_kb(huge.proc.pid) >= 32 * 1024, "the zygote's memory never moved onto huge pages"
        got.append(seeded(huge))
        assert all(torch.equal(g, want) for g in got)
        assert _huge_kb(plain.proc.pid) == 0 or open("/sys/kernel/mm/transparent_hugepage/enabled").read() \
            .startswith("[always]")  # only the batch's zygote asks for them
    finally:
        plain.close()
        huge.close()


# ---------------------------------------------------------------------------------------------- issue 10 / 9.6

import ctypes
import json
import shutil
import subprocess
import tempfile
from pathlib import Path

import pytest

from autograder import confine, messages, worker
from autograder.sandbox import claim_uid, is_root
from conftest import ROOT

HOARD = """
import ctypes, mmap
_h = mmap.mmap(-1, 1 << 30, flags=mmap.MAP_SHARED)  # shared: RLIMIT_DATA does not count it
ctypes.memset(ctypes.addressof(ctypes.c_char.from_buffer(_h)), 1, 1 << 30)
"""


def test_fallback_modes_still_count_shared_memory_and_say_so(tmp_path):
    """Without namespaces, tmpfs or cgroup (what a bare kernel gives), the polled budget still counts shared
    memory: a 1 GB shared mapping against a 256 MB budget ends the worker, and the modes say what ran."""
    from autograder.source import Cell, Source
    z = Zygote()
    try:
        uid = claim_uid() if is_root() else None
        sc = make_scratch(uid)
        lim = Limits(memory_mb=256, call_timeout=60)
        sub = Submission(Source("hoard.py", "py", [Cell(HOARD, "hoard.py")]),
                         lambda: z.spawn(lim, sc, uid, isolate=False), lim)
        with pytest.raises(Exception) as e:
            sub.start()
        assert "all its processes together used more than the 256 MB" in str(e.value.message)
        assert sub.modes == {"namespaces": "none", "scratch": "folder", "memory": "polled", "cpu": "polled",
                             "library watch": "C filter" if worker.WATCH_FILTER == "c" else "Python"} | (
            {"python": sub.modes["python"]} if "python" in sub.modes else {})
        sub.close()
        remove_scratch(sc, uid)
        assert not os.path.exists(sc)
    finally:
        z.close()


UNLINKED = """
import os
held = []
for i in range(1000):
    f = open(f"gone-{i}", "wb")
    os.unlink(f"gone-{i}")
    held.append(f)
    f.write(b"x" * (1 << 20))
    f.flush()
"""


def test_tmpfs_scratch_counts_unlinked_files_and_leaves_no_mount(tmp_path):
    """An 8 MB tmpfs scratch (skipped where no mount namespace or tmpfs is allowed): files unlinked but held
    open fill it, the submission is stopped for disk, and the grader's namespace never sees the mount."""
    from autograder.source import Cell, Source
    z = Zygote()
    try:
        uid = claim_uid() if is_root() else None
        sc = make_scratch(uid)
        lim = Limits(disk_mb=8, call_timeout=60)
        sub = Submission(Source("fill.py", "py", [Cell(UNLINKED, "fill.py")]), lambda: z.spawn(lim, sc, uid), lim)
        with pytest.raises(Exception) as e:
            sub.start()
        if sub.modes.get("scratch") != "tmpfs":
            pytest.skip(f"no tmpfs scratch here ({sub.modes})")
        assert "wrote more than 8 MB" in str(e.value.message)
        assert sc not in Path("/proc/self/mountinfo").read_text()
        sub.close()
        remove_scratch(sc, uid)
        assert not os.path.exists(sc)
    finally:
        z.close()


def test_memory_cgroup_counts_shared_memory_and_is_removed():
    """A memory cgroup made here (skipped where the kernel or our privileges do not allow one) sees a child's
    shared mapping, which RLIMIT_DATA and anonymous RSS do not, and reports the limit as reached."""
    cg = confine.MemoryCgroup.create(f"attention-grader-test-{os.getpid()}", 64)
    if cg is None:
        pytest.skip("no writable memory cgroup on this machine")
    try:
        r, w = os.pipe()
        pid = os.fork()
        if pid == 0:
            try:
                os.read(r, 1)
                import mmap
                h = mmap.mmap(-1, 256 << 20, flags=mmap.MAP_SHARED)
                ctypes.memset(ctypes.addressof(ctypes.c_char.from_buffer(h)), 1, 256 << 20)
            finally:
                os._exit(0)
        assert cg.join(pid)
        os.write(w, b"x")
        deadline = time.monotonic() + 60
        while not cg.over() and time.monotonic() < deadline:
            time.sleep(0.05)
        assert cg.over()
        os.kill(pid, signal.SIGKILL)
        os.waitpid(pid, 0)
    finally:
        assert cg.remove()
    assert not os.path.exists(cg.folder)


def test_scratch_removal_survives_a_deep_chain_and_locked_folders(tmp_path):
    uid = claim_uid() if is_root() else None
    sc = make_scratch(uid)
    fd = os.open(sc, os.O_RDONLY)
    for _ in range(1500):  # deeper than PATH_MAX and than Python's recursion limit
        os.mkdir("d", dir_fd=fd)
        new = os.open("d", os.O_RDONLY, dir_fd=fd)
        os.close(fd)
        fd = new
    os.mkdir("locked", dir_fd=fd)
    os.symlink("/etc", "link", dir_fd=fd)
    os.chmod("locked", 0, dir_fd=fd)
    os.close(fd)
    remove_scratch(sc, uid)
    assert not os.path.exists(sc) and os.path.exists("/etc/passwd")


def test_near_miss_hints_are_bounded_whatever_the_number_of_names(monkeypatch):
    seen = []
    real = messages.difflib.get_close_matches
    monkeypatch.setattr(messages.difflib, "get_close_matches",
                        lambda w, pos, **kw: seen.append(len(pos)) or real(w, pos, **kw))
    names = [f"MultiHeadAttention_{i:06d}" for i in range(600_000)] + ["x"]
    assert messages.near_miss("SelfAttention_v1", ["SelfAttention_V1"] + names) == "SelfAttention_V1"
    messages.near_miss("MultiHeadAtention", names)
    assert seen and max(seen) <= messages.MAX_HINT_CANDIDATES


def test_a_result_that_cannot_be_written_costs_only_that_file(tmp_path):
    """One result path is unwritable (a folder is in the way): the others are written and scores.csv lists all."""
    from autograder import assignment, batch
    subs, out = tmp_path / "submissions", tmp_path / "results"
    subs.mkdir()
    shutil.copy(REFERENCE, subs / "aa_ref.py")
    shutil.copy(ROOT / "student_template" / "attention.py", subs / "bb_skeleton.py")
    (out / "bb_skeleton.json").mkdir(parents=True)
    said = []
    summary = batch.main(submissions=subs, out=out, assignment=assignment.load("attention"), echo=said.append)
    assert summary.graded == 2
    assert json.loads((out / "aa_ref.json").read_text())["score"] == 100
    rows = (out / "scores.csv").read_text().splitlines()
    assert [r.split(",")[:3] for r in rows[1:]] == [["aa_ref", "aa_ref.py", "100.0"],
                                                    ["bb_skeleton", "bb_skeleton.py", "0.0"]]
    assert any("bb_skeleton.json could not be written" in m for m in said)
    # The same warning in Korean for a Korean batch (the instructor's own language, like the rest of its lines).
    ko_subs, ko_out = tmp_path / "ko_submissions", tmp_path / "ko_results"
    ko_subs.mkdir()
    shutil.copy(ROOT / "student_template" / "attention.py", ko_subs / "bb_skeleton.py")
    (ko_out / "bb_skeleton.json").mkdir(parents=True)
    said = []
    batch.main(submissions=ko_subs, out=ko_out, assignment=assignment.load("attention"), echo=said.append, lang="ko")
    assert any("bb_skeleton.json을(를) 쓸 수 없었습니다" in m and "could not" not in m for m in said), said


@pytest.mark.skipif(not is_root(), reason="the rig bind-mounts a venv under a mode-700 folder (root only)")
def test_python_under_a_mode_700_home_is_reachable_from_the_worker(tmp_path):
    """Issue 9.6: the grader's interpreter lies under a mode-700 folder (as /root on Gradescope). A correct
    submission that prints tensors in forward, imports numpy and csv lazily and asks importlib.metadata for
    torch's version gets full marks, and the result says which folders were bind-mounted for the worker."""
    base = Path(tempfile.mkdtemp(prefix="home700-", dir="/tmp"))
    home = base / "home700"
    venv = home / "venv"
    venv.mkdir(parents=True)
    os.chmod(home, 0o700)
    # The environment running these tests (the repository's .venv under `make test`)
    subprocess.run(["mount", "--bind", sys.prefix, str(venv)], check=True)
    try:
        src = REFERENCE.read_text().replace(
            "        return weights @ values  # (T, d_out)",
            "        print(weights)  # lazily imports torch's printing helpers\n"
            "        import csv, numpy, importlib.metadata\n"
            "        assert importlib.metadata.version('torch').startswith(torch.__version__.split('+')[0])\n"
            "        return weights @ values", 1)
        assert src != REFERENCE.read_text()
        subs = tmp_path / "submissions"
        subs.mkdir()
        (subs / "ada.py").write_text(src)
        p = subprocess.run([str(venv / "bin" / "python"), str(ROOT / "cli.py"), "batch", "submissions",
                            "--out", "results"], cwd=tmp_path, capture_output=True, text=True, timeout=600)
        assert p.returncode == 0, p.stdout + p.stderr
        gs = json.loads((tmp_path / "results" / "ada.json").read_text())
        assert gs["score"] == 100, [t["output"][:300] for t in gs["tests"] if t["score"] != t["max_score"]]
        assert str(venv) in gs["extra_data"]["sandbox"]["python"]
    finally:
        subprocess.run(["umount", "-l", str(venv)], check=False)
        shutil.rmtree(base, ignore_errors=True)


def _link(path: str) -> str:
    """What a /proc/PID/fd entry points to, or "" for one closed since it was listed."""
    try:
        return os.readlink(path)
    except FileNotFoundError:
        return ""


def test_one_zygote_serves_several_graders_and_a_dead_one_is_replaced(tmp_path):
    """`grade batch` starts one zygote for all its grader processes: each gets workers through its own socket,
    and a grader whose shared zygote is gone starts its own instead of failing the submission."""
    from autograder.sandbox import start_shared_zygote
    proc, socks = start_shared_zygote(2)
    graders = [Zygote(sock=s) for s in socks]
    try:
        for i, z in enumerate(graders):
            scratch = tmp_path / f"s{i}"
            scratch.mkdir()
            w = z.spawn(Limits(), str(scratch), None)
            # A request that starts no GPU: CUDA's driver holds a socket of its own in the worker that asks it.
            assert w.request("names", {}, timeout=60)["ok"]
            assert w.cpu_seconds() is not None and w.cpu_seconds() > 0  # the worker's own CPU clock is read
            for pid in (w.worker_pid, w.keeper_pid):  # neither holds a socket to the zygote (or another grader)
                fds = [_link(f"/proc/{pid}/fd/{fd}") for fd in os.listdir(f"/proc/{pid}/fd")]  # some close
                assert sum(t.startswith("socket:") for t in fds) == 1, (pid, fds)
            w.kill(graceful=True)
        proc.kill()
        proc.wait()
        scratch = tmp_path / "after"
        scratch.mkdir()
        w = graders[0].spawn(Limits(), str(scratch), None)
        assert w.request("env", {}, timeout=60)["ok"]
        assert graders[0].proc is not None and graders[0].proc.pid != proc.pid  # its own zygote now
        w.kill(graceful=True)
    finally:
        for z in graders:
            z.close()
        if proc.poll() is None:
            proc.kill()
            proc.wait()


@pytest.mark.skipif(not is_root(), reason="scratch folders belong to worker uids (root only)")
def test_a_killed_graders_scratch_folders_are_removed_when_its_uid_is_claimed_again(tmp_path, monkeypatch):
    """A grader process killed mid-submission leaves its scratch folder (grade-*, owned by its worker uid); the
    next grader to claim that uid removes it, whatever the submission left inside, and nothing of other uids."""
    from autograder import sandbox
    from autograder.sandbox import remove_stale_scratch
    monkeypatch.setattr(sandbox, "_SCRATCH_BASES", {True: str(tmp_path)})  # where the scratch folders are made
    mine, other, unrelated = tmp_path / "grade-aaaa", tmp_path / "grade-bbbb", tmp_path / "keep-cccc"
    for d, uid in ((mine, 61990), (other, 61991), (unrelated, 61990)):
        d.mkdir()
        os.chown(d, uid, uid)
    (mine / "sub").mkdir()
    (mine / "sub" / "f").write_text("left behind")
    os.symlink("/etc", mine / "link")
    for p in (mine / "sub", mine / "sub" / "f"):
        os.chown(p, 61990, 61990)
    remove_stale_scratch(61990)
    assert not mine.exists() and other.exists() and unrelated.exists()
    assert os.path.exists("/etc/passwd")


def test_stopping_a_worker_waits_for_it_and_leaves_its_own_children_to_the_sweep():
    """The keeper's _stop: SIGKILL, wait for the end (the exit status is the kill), no child left of that one; a
    grandchild it left behind is re-parented to the subreaper and the sweep after it still finds and kills it."""
    import ctypes as _ct
    from autograder import sandbox
    r, w = os.pipe()
    keeper = os.fork()
    if keeper == 0:  # a stand-in keeper: a child subreaper with one "worker" that has a child of its own
        try:
            _ct.CDLL(None).prctl(36, 1, 0, 0, 0)  # PR_SET_CHILD_SUBREAPER
            worker = os.fork()
            if worker == 0:
                if os.fork() == 0:
                    time.sleep(60)
                    os._exit(0)
                time.sleep(60)
                os._exit(0)
            time.sleep(0.2)
            status = sandbox._stop(worker)
            killed = status is not None and os.WIFSIGNALED(status) and os.WTERMSIG(status) == signal.SIGKILL
            left = sandbox._kill_descendants()
            swept = len(left) == 1 and not sandbox._children(os.getpid())
            os.write(w, json.dumps({"killed": killed, "swept": swept}).encode())
        finally:
            os._exit(0)
    os.close(w)
    with os.fdopen(r) as f:
        got = json.loads(f.read() or "{}")
    os.waitpid(keeper, 0)
    assert got == {"killed": True, "swept": True}


def test_a_worker_that_cannot_set_itself_up_is_the_graders_failure_not_the_submissions(monkeypatch):
    """A worker that fails before it runs any submitted code (here: its scratch folder is under /dev/shm, which the
    keeper covers with a fresh tmpfs) used to read as the student's file crashing while it loaded, 0 points and the
    student blamed. Its keeper now says why in its hello, and the job is the autograder's failure, with the reason
    for staff; and scratch folders are never made under /dev/shm."""
    from autograder import assignment, sandbox
    from autograder.jobs import Job
    from autograder.runner import grade
    from autograder.sandbox import WorkerSetupFailed
    if not sandbox.is_root():
        pytest.skip("only root gives workers a mount namespace with a /dev/shm of their own")
    monkeypatch.setenv("TMPDIR", "/dev/shm")
    monkeypatch.setattr(sandbox, "_SCRATCH_BASES", {})
    monkeypatch.setattr(tempfile, "tempdir", None)
    assert not sandbox.make_scratch(None).startswith("/dev/shm")
    monkeypatch.setattr(sandbox, "_SCRATCH_BASES", {True: "/dev/shm", False: "/dev/shm"})
    zyg = Zygote()
    uid = sandbox.claim_uid()
    scratch = make_scratch(uid)
    try:
        with pytest.raises(WorkerSetupFailed, match="before it ran any submitted code.*/dev/shm"):
            zyg.spawn(Limits(), scratch, uid)
        results = []
        grade(assignment.load("attention"), [Job("ada", REFERENCE)], results.append, zygote=zyg)
    finally:
        zyg.close()
        remove_scratch(scratch, uid)  # (left in the machine's /dev/shm by every run before)
    (r,) = results
    assert r.error is not None and "autograder itself failed" in r.error.en, r.error
    assert "could not be set up" in r.staff and "/dev/shm" in r.staff
    assert not any("while your file was being loaded" in str(c.message) for c in r.checks)


def test_a_uid_that_is_a_users_account_is_never_claimed_for_workers(monkeypatch):
    """The workers' uids (61000 and up) may be real accounts on a university machine (LDAP): claiming one killed
    that person's processes (every process of a claimed uid is killed as leftovers). A uid the passwd database
    knows is skipped, and the process of such a user lives on."""
    import pwd
    from autograder import sandbox
    if not sandbox.is_root():
        pytest.skip("uids are claimed only by root")
    import fcntl

    def lockable(uid: int) -> bool:  # what claim_uid would take first (other grading runs hold some)
        if uid in sandbox._claimed:
            return False
        fd = os.open(os.path.join(sandbox.lock_dir(), f"uid-{uid}.lock"), os.O_RDWR | os.O_CREAT, 0o600)
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
            return True
        except OSError:
            return False
        finally:
            os.close(fd)
    free = next(u for u in range(sandbox.UID_BASE, sandbox.UID_BASE + 1000) if lockable(u))
    real = pwd.getpwuid

    def getpwuid(uid):
        if free <= uid <= free + 3:
            return real(0)  # an account, as far as claim_uid can tell
        return real(uid)
    monkeypatch.setattr(pwd, "getpwuid", getpwuid)
    pid = os.fork()
    if pid == 0:
        try:
            os.setgid(free)
            os.setuid(free)
            time.sleep(30)
        finally:
            os._exit(0)
    try:
        time.sleep(0.2)
        got = sandbox.claim_uid()
        assert got > free + 3, got
        assert os.waitpid(pid, os.WNOHANG) == (0, 0), "the account's process was killed"
    finally:
        os.kill(pid, signal.SIGKILL)
        os.waitpid(pid, 0)


def test_a_keeper_stays_cheap_however_fast_the_submissions_processes_come_and_go():
    """Red-team finding: processes that fork and end without pause (`while :; do ( : & ); done`) woke the keeper
    (a child subreaper, outside the submission's cgroups) at every child's end; it reaped and ran its watchdog each
    time and used a whole core, beyond the submission's CPU quota. It now wakes at most sandbox.WAKE_HZ times a
    second and checks on its own cadence."""
    from autograder import sandbox
    if not sandbox.is_root():
        pytest.skip("the uid sweep and cgroups need root")
    z = Zygote()
    uid = sandbox.claim_uid()
    try:
        w = z.spawn(Limits(), make_scratch(uid), uid)
        churn = ("import subprocess\n_p = [subprocess.Popen(['/bin/sh', '-c', 'while :; do ( : & ) ; done']) "
                 "for _ in range(2)]\n")
        w.request("load", {"cells": [{"code": churn, "label": "churn.py"}]}, 20)
        hz = os.sysconf("SC_CLK_TCK")

        def keeper_cpu() -> float:
            with open(f"/proc/{w.keeper_pid}/stat") as f:
                fields = f.read().rsplit(")", 1)[1].split()
            return (int(fields[11]) + int(fields[12])) / hz
        time.sleep(0.5)
        before, t = keeper_cpu(), time.monotonic()
        time.sleep(3)
        used = (keeper_cpu() - before) / (time.monotonic() - t)
        w.kill()
    finally:
        z.close()
    assert used < 0.25, f"the keeper used {used:.2f} of a core"


# ------------------------------------------------------------------------------------ a torch built for a GPU
#
# On a GPU server the zygote's torch is a CUDA build. Its first backward pass counts the devices: that starts the
# GPU driver and autograd's device threads in the zygote, and every worker forked from it then failed its first
# backward ("autograd's threading in combination with fork-based multiprocessing") and every CUDA run ("CUDA
# error: initialization error"): the reference got 88/100 there. tests/test_cuda.py grades on a real GPU.

def test_warm_up_takes_no_backward_pass_where_torch_is_built_for_a_gpu(monkeypatch):
    from autograder import worker
    passes = []
    monkeypatch.setattr(torch.Tensor, "backward", lambda self, *a, **k: passes.append(1))
    monkeypatch.setattr(worker, "accelerator_built", lambda: True)
    worker.warm_up(True)
    assert passes == []
    monkeypatch.setattr(worker, "accelerator_built", lambda: False)
    worker.warm_up(True)
    assert passes == [1]


def test_a_gpu_hidden_from_the_grader_is_hidden_from_its_workers(monkeypatch):
    from autograder.sandbox import clean_env
    monkeypatch.setenv("CUDA_VISIBLE_DEVICES", "")  # set and empty: no GPU (it was dropped, and workers saw one)
    assert clean_env()["CUDA_VISIBLE_DEVICES"] == ""
    monkeypatch.setenv("CUDA_VISIBLE_DEVICES", "1")
    assert clean_env()["CUDA_VISIBLE_DEVICES"] == "1"
    monkeypatch.delenv("CUDA_VISIBLE_DEVICES")
    assert "CUDA_VISIBLE_DEVICES" not in clean_env()


def test_a_worker_says_whether_it_can_use_cuda():
    z = Zygote()
    try:
        sc = make_scratch(None)
        sub = Submission(read(REFERENCE), lambda: z.spawn(Limits(), sc, None), Limits())
        sub.start()
        env = sub.env()
        sub.close()
        remove_scratch(sc)
        assert env["cuda"] is torch.cuda.is_available(), env
        assert env["cuda_error"] == "", env  # a GPU the grader sees and its worker cannot use is named here
    finally:
        z.close()


def test_the_graded_worker_sees_no_gpu_and_its_gpu_companion_sees_the_graders(monkeypatch):
    """Code that picks its device at import (`device = "cuda" if torch.cuda.is_available() else "cpu"`, common in
    notebooks) fails every CPU check where its worker sees a GPU: the submission's worker hides every GPU
    (gpu=False), and the checks that run on a real GPU ask Submission.gpu(), a second worker that sees what the
    grader sees, shares what the first learned (hangs, prints, notes) and stops with it."""
    from autograder.source import Cell, Source
    monkeypatch.setenv("CUDA_VISIBLE_DEVICES", "1")
    code = "import os\ndef seen():\n    print('seen', os.getpid())\n    return os.environ.get('CUDA_VISIBLE_DEVICES', '(unset)')\n"
    z = Zygote()
    sc, gsc = make_scratch(None), make_scratch(None)
    try:
        sub = Submission(Source("seen.py", "py", [Cell(code, "seen.py")]),
                         lambda: z.spawn(Limits(), sc, None, gpu=False), Limits())
        assert sub.gpu() is sub  # no companion asked for: the one worker
        sub.gpu_spawn = lambda: z.spawn(Limits(), gsc, None, gpu=True)
        assert sub.call("seen") == ""  # hidden, though the grader was given GPU 1
        gpu = sub.gpu()
        assert gpu is sub.gpu() and gpu is not sub
        assert gpu.call("seen") == "1"
        assert gpu.hung is sub.hung and gpu.memo is sub.memo and gpu.notes is sub.notes
        printed = sub.take_output()
        assert printed.count("seen ") == 2 and len(set(printed.split())) == 3, printed  # two workers' prints
        assert sub.worker.worker_pid != gpu.worker.worker_pid
        companion = gpu.worker
        sub.close()
        assert gpu.worker is None and not companion.alive
    finally:
        remove_scratch(sc)
        remove_scratch(gsc)
        z.close()


def test_a_notebook_global_device_is_the_cpu_in_the_graded_worker(tmp_path, monkeypatch):
    """Through `grade batch`: the submission's worker sees no GPU even where the grader is given one, so a class
    that reads the GPUs at import computes on the CPU like the checks' inputs (on a GPU server a notebook-global
    `device` sent the mask to CUDA and cost every CPU check: 76/100 there, 98 on a CPU-only machine)."""
    from conftest import grade_sources
    monkeypatch.setenv("CUDA_VISIBLE_DEVICES", "0")  # (this machine has no GPU: only what the worker is told)
    ref = REFERENCE.read_text()
    fill = "scores = scores.masked_fill(self.mask.bool()[:num_tokens, :num_tokens], -torch.inf)"
    assert ref.count(fill) >= 1
    told = ref.replace("import torch.nn as nn\n", "import torch.nn as nn\nimport os\n"
                       "SCALE = 1.0 if os.environ.get('CUDA_VISIBLE_DEVICES') == '' else 2.0\n", 1)
    # (on the GPU, in the worker that sees one, the CUDA checks' run: there it is told the grader's GPU)
    told = told.replace(fill, fill + "\n        scores = scores * (1.0 if scores.is_cuda else SCALE)", 1)
    results = grade_sources(tmp_path, {"ref.py": ref, "told.py": told})
    assert results["ref"].score == 100
    assert results["told"].score == 100, [c.name for c in results["told"].checks if c.score < c.max_score]


def test_a_worker_sees_the_gpus_its_grader_was_given(monkeypatch):
    """CUDA_VISIBLE_DEVICES reaches the worker as the grader had it: set and empty hides every GPU (a batch run
    with it saw no GPU in its graders while its workers ran the submissions on one), "1" picks a GPU."""
    from autograder.source import Cell, Source
    code = "import os\ndef seen():\n    return os.environ.get('CUDA_VISIBLE_DEVICES', '(unset)')\n"
    for value, want in (("", ""), ("1", "1"), (None, "(unset)")):
        if value is None:
            monkeypatch.delenv("CUDA_VISIBLE_DEVICES", raising=False)
        else:
            monkeypatch.setenv("CUDA_VISIBLE_DEVICES", value)
        z = Zygote()  # launched with the grader's environment of the moment
        try:
            sc = make_scratch(None)
            sub = Submission(Source("seen.py", "py", [Cell(code, "seen.py")]), lambda: z.spawn(Limits(), sc, None),
                             Limits())
            sub.start()
            got = sub.call("seen")
            sub.close()
            remove_scratch(sc)
            assert got == want, (value, got)
        finally:
            z.close()


REACH_UNIX = '''
import socket


def reach(folder):
    """What the submission could send to the Unix sockets that a process of the machine listens on in `folder`."""
    got = []
    try:
        s = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        s.connect(folder + "/stream")
        s.sendall(b"from a worker")
        got.append("stream")
    except OSError as e:
        got.append(f"stream refused: {e.strerror}")
    try:
        a, b = socket.socketpair(socket.AF_UNIX, socket.SOCK_DGRAM)  # a datagram can name any path
        a.sendto(b"from a worker", folder + "/dgram")
        got.append("dgram")
    except OSError as e:
        got.append(f"dgram refused: {e.strerror}")
    # SOCK_RAW of AF_UNIX is a datagram socket under another name (af_unix.c: "BSD has AF_UNIX, SOCK_RAW"): a pair
    # of them, and where Unix sockets are allowed at all a socket of its own, sent to any path (red team s15).
    for kind, make in (("raw pair", lambda: socket.socketpair(socket.AF_UNIX, socket.SOCK_RAW)[0]),
                       ("raw", lambda: socket.socket(socket.AF_UNIX, socket.SOCK_RAW))):
        try:
            make().sendto(b"from a worker", folder + "/dgram")
            got.append(kind)
        except OSError as e:
            got.append(f"{kind} refused: {e.strerror}")
    try:
        socket.socket(socket.AF_VSOCK, socket.SOCK_STREAM)  # (not connected: the hypervisor's host is not ours)
        got.append("vsock")
    except (OSError, AttributeError) as e:
        got.append(f"vsock refused: {getattr(e, 'strerror', e)}")
    return got
'''


def test_a_worker_reaches_no_unix_socket_of_the_machine():
    """A Unix socket named by a path is reached through the file system: neither the worker's network namespace
    nor Landlock (ABI <= 7) kept a worker from connecting to one that a root process of the machine listened on,
    world-writable, in a folder anyone may pass (D-Bus, a database, a notebook server; red team s9: reached). The
    worker's seccomp filter refuses AF_UNIX and AF_VSOCK sockets and datagram socketpairs; its own socket and
    a stream socketpair still work."""
    import socket
    from autograder.source import Cell, Source
    folder = tempfile.mkdtemp(prefix="unix-listeners-", dir="/tmp")
    os.chmod(folder, 0o755)
    stream = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    dgram = socket.socket(socket.AF_UNIX, socket.SOCK_DGRAM)
    z = Zygote()
    uid = claim_uid() if is_root() else None
    sc = make_scratch(uid)
    try:
        stream.bind(folder + "/stream")
        stream.listen()
        dgram.bind(folder + "/dgram")
        for name in ("stream", "dgram"):
            os.chmod(f"{folder}/{name}", 0o777)
        code = REACH_UNIX + "\n\ndef pair():\n    a, b = socket.socketpair()\n    a.sendall(b'x')\n    return b.recv(1).decode()\n"
        sub = Submission(Source("reach.py", "py", [Cell(code, "reach.py")]), lambda: z.spawn(Limits(), sc, uid),
                         Limits())
        sub.start()
        got = sub.call("reach", folder)
        paired = sub.call("pair")
        sub.close()
        stream.setblocking(False)
        dgram.setblocking(False)
        try:
            conn, _ = stream.accept()
            reached = [conn.recv(100)]
        except BlockingIOError:
            reached = []
        try:
            reached.append(dgram.recv(100))
        except BlockingIOError:
            pass
        assert reached == [] and not {"stream", "dgram", "raw pair", "raw", "vsock"} & set(got), (reached, got)
        assert paired == "x"
    finally:
        stream.close()
        dgram.close()
        shutil.rmtree(folder, ignore_errors=True)
        remove_scratch(sc, uid)
        z.close()


def test_landlock_that_the_kernel_has_but_cannot_apply_fails_the_workers_start():
    """Where the kernel has Landlock but cannot make the ruleset (ENFILE: the machine's file table full, which one
    submission's processes can do by keeping millions of mapped files open; EMFILE here), `landlock()` returned 0
    and the worker ran unconfined: every file its uid can read, the world-readable submissions and results
    included (red team s9). It now raises, so the worker's start fails as the grader's failure."""
    if confine.abi_version() < 1:
        pytest.skip("no Landlock on this kernel")
    import resource
    r, w = os.pipe()
    pid = os.fork()
    if pid == 0:
        try:
            os.close(r)
            resource.setrlimit(resource.RLIMIT_NOFILE, (64, 64))
            held = []
            try:
                while True:
                    held.append(os.open(os.devnull, os.O_RDONLY))
            except OSError:
                pass
            try:  # no descriptor left for the ruleset
                got = f"returned {confine.landlock(tempfile.gettempdir(), ['/usr'])}"
            except OSError as e:
                got = f"raised {e}"
            os.write(w, got.encode())
        finally:
            os._exit(0)
    os.close(w)
    with os.fdopen(r, "rb") as f:
        got = f.read().decode()
    os.waitpid(pid, 0)
    assert got.startswith("raised") and "Landlock" in got, got


def test_a_kernel_or_container_without_seccomp_filters_falls_back_and_the_kernel_cap_spares_gpu_workers(monkeypatch):
    """The fail-closed start (red team s9) is for a kernel that has seccomp filters but could not install this one:
    where it has none (EINVAL from a kernel built without them, EPERM from a container that forbids installing
    one), the worker runs with the documented fallback, reported as keyrings_denied False, instead of never
    starting, so that nothing could be graded there. And the kernel memory cap (KERNEL_MB) is not applied to a
    worker that sees a GPU, whose driver's kernel memory nobody here has measured."""
    import ctypes
    import errno

    class Refusing:
        def __init__(self, err):
            self.err = err

        def prctl(self, option, *args):
            if option == confine.PR_SET_SECCOMP:
                ctypes.set_errno(self.err)
                return -1
            return 0

    for err in (errno.EINVAL, errno.EPERM):
        monkeypatch.setattr(confine, "_libc", Refusing(err))
        assert confine.deny_keyrings() is False
    monkeypatch.setattr(confine, "_libc", Refusing(errno.ENOMEM))
    with pytest.raises(OSError):
        confine.deny_keyrings()
    monkeypatch.undo()

    class Heavy(confine.MemoryCgroup):
        def kernel_kb(self):
            return (confine.KERNEL_MB + 1) * 1024
    assert Heavy("/nonexistent", "cgroup-v1").over_kernel()
    assert not Heavy("/nonexistent", "cgroup-v1", kernel_mb=None).over_kernel()


DEVICE_FILES = '''
import os


def devices():
    """Which device files this process can open, and how."""
    got = {}
    for path, flags in (("/dev/ptmx", os.O_RDONLY | os.O_NOCTTY), ("/dev/ptmx", os.O_RDWR | os.O_NOCTTY),
                        ("/dev/null", os.O_WRONLY), ("/dev/urandom", os.O_RDONLY), ("/dev/zero", os.O_RDWR)):
        try:
            os.close(os.open(path, flags))
            got[f"{path} {flags & 3}"] = "opened"
        except OSError as e:
            got[f"{path} {flags & 3}"] = e.strerror
    return got
'''


def test_a_worker_that_sees_no_gpu_opens_only_the_ordinary_device_files():
    """Opening /dev/ptmx, even read-only, allocates one of the machine's ptys (kernel.pty.max, 4096): a worker
    could hold them all for as long as it was graded, and no terminal could be opened on the machine (red team s9:
    64 taken by one file). A worker that sees no GPU may open only /dev/null, zero, full, random and urandom."""
    from autograder.source import Cell, Source
    if confine.abi_version() < 1:
        pytest.skip("no Landlock on this kernel")
    z = Zygote()
    uid = claim_uid() if is_root() else None
    sc = make_scratch(uid)
    try:
        sub = Submission(Source("dev.py", "py", [Cell(DEVICE_FILES, "dev.py")]),
                         lambda: z.spawn(Limits(), sc, uid, gpu=False), Limits())
        sub.start()
        got = sub.call("devices")
        sub.close()
    finally:
        remove_scratch(sc, uid)
        z.close()
    assert got["/dev/ptmx 0"] != "opened" and got["/dev/ptmx 2"] != "opened", sorted(got.items())
    assert all(got[k] == "opened" for k in ("/dev/null 1", "/dev/urandom 0", "/dev/zero 2")), sorted(got.items())


def _opens_after_landlock(gpu_files):
    """In a child: Landlock as a GPU worker's, with `gpu_files` as the GPU's device files; which files open."""
    r, w = os.pipe()
    pid = os.fork()
    if pid == 0:
        try:
            os.close(r)
            confine.gpu_device_files = lambda dev="/dev": gpu_files
            confine.landlock(tempfile.mkdtemp(), ["/usr"], gpu=True)
            got = []
            for path in ("/dev/ptmx", "/dev/full", "/dev/null", "/dev/tty"):
                try:
                    os.close(os.open(path, os.O_RDWR | os.O_NOCTTY))
                    got.append(path)
                except OSError:
                    pass
            os.write(w, " ".join(got).encode())
        finally:
            os._exit(0)
    os.close(w)
    with os.fdopen(r, "rb") as f:
        got = f.read().decode().split()
    os.waitpid(pid, 0)
    return got


def test_a_worker_that_sees_a_gpu_opens_the_gpus_device_files_and_the_ordinary_ones_only(tmp_path):
    """The GPU worker (the CUDA checks' run) may open the GPU's device files, found by name (/dev/nvidia*, kfd,
    dri), and the ordinary ones: it could open all of /dev, /dev/ptmx (the machine's ptys) among them. Where no
    GPU device file is found by those names, all of /dev as before, so that an unknown driver's GPU still works.
    Checked with CUDA on an H100 (tests/test_cuda.py)."""
    if confine.abi_version() < 1:
        pytest.skip("no Landlock on this kernel")
    for name in ("nvidia0", "nvidiactl", "nvidia-uvm", "nvidia-caps", "kfd", "dri", "ptmx", "fuse", "null", "shm"):
        (tmp_path / name).touch()
    assert confine.gpu_device_files(str(tmp_path)) == [str(tmp_path / n) for n in
                                                       ("dri", "kfd", "nvidia-caps", "nvidia-uvm", "nvidia0",
                                                        "nvidiactl")]
    assert _opens_after_landlock(["/dev/full"]) == ["/dev/full", "/dev/null"]
    assert "/dev/ptmx" in _opens_after_landlock([])  # (the fallback: no GPU file found by name)


def test_where_torch_is_built_for_a_gpu_a_worker_may_make_a_unix_stream_socket_but_connects_it_nowhere():
    """CUDA's driver makes a Unix stream socket as it starts (looking for the MPS daemon's) and failed to start
    where the worker's seccomp filter refused it (error 304 on an H100: every CUDA check was the grader's failure,
    the reference got 98). Where torch is built for a GPU a worker may make one, but each connect() fails as where
    no daemon listens (ENOENT): the machine's Unix sockets stay out of reach (red team s9), and datagram and vsock
    sockets stay refused. Checked on an H100 with torch 2.11+cu130 (.gpu/variants10.py, tests/test_cuda.py)."""
    import socket
    folder = tempfile.mkdtemp(prefix="unix-listeners-", dir="/tmp")
    os.chmod(folder, 0o755)
    stream = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    dgram = socket.socket(socket.AF_UNIX, socket.SOCK_DGRAM)
    try:
        stream.bind(folder + "/stream")
        stream.listen()
        dgram.bind(folder + "/dgram")
        r, w = os.pipe()
        pid = os.fork()
        if pid == 0:
            try:
                os.close(r)
                installed = confine.deny_keyrings(gpu_driver=True)
                ns = {}
                exec(REACH_UNIX, ns)
                got = ns["reach"](folder)
                try:
                    socket.socket(socket.AF_UNIX, socket.SOCK_STREAM).close()
                    got.append("made")
                except OSError as e:
                    got.append(f"not made: {e.strerror}")
                a, b = socket.socketpair()
                a.sendall(b"x")
                got.append("pair " + b.recv(1).decode())
                os.write(w, repr((installed, got)).encode())
            finally:
                os._exit(0)
        os.close(w)
        with os.fdopen(r, "rb") as f:
            installed, got = eval(f.read().decode())
        os.waitpid(pid, 0)
        stream.setblocking(False)
        dgram.setblocking(False)
        reached = []
        for take in (lambda: stream.accept()[0].recv(100), lambda: dgram.recv(100)):
            try:
                reached.append(take())
            except BlockingIOError:
                pass
        if not installed:
            pytest.skip("no seccomp filters here")
        assert reached == [] and not {"stream", "dgram", "raw pair", "raw", "vsock"} & set(got), (reached, got)
        assert "made" in got and "pair x" in got and "No such file or directory" in got[0], got
    finally:
        stream.close()
        dgram.close()
        shutil.rmtree(folder, ignore_errors=True)


def test_a_workers_temporary_files_and_torch_optim_go_to_its_scratch_folder(tmp_path):
    """The zygote computed tempfile's folder (/tmp) before any worker set TMPDIR to its scratch folder, and every
    worker kept that cached answer: Landlock refused it, so a notebook's training cell failed at
    `torch.optim.Adam(...)` with PermissionError '/tmp/torchinductor_uid_...' (torch makes its cache folder there),
    and `tempfile.NamedTemporaryFile()` did too: the grader's setup read as the student's error."""
    from conftest import grade_sources, notebook
    demo = ("import tempfile, os\n"
            "assert os.path.dirname(tempfile.mkstemp()[1]) == os.environ['TMPDIR'], tempfile.gettempdir()\n"
            "model = nn.Linear(3, 2)\n"
            "opt = torch.optim.Adam(model.parameters(), lr=1e-3)\n"
            "loss = model(torch.ones(4, 3)).sum()\n"
            "opt.zero_grad(); loss.backward(); opt.step()\n")
    results = grade_sources(tmp_path, {"train.ipynb": notebook(REFERENCE.read_text(), demo)})
    r = results["train"]
    assert r.score == 100
    assert not [n.en for n in r.notes if "While loading" in n.en], [n.en for n in r.notes]


def test_a_worker_has_a_user_name_though_its_uid_has_no_account(tmp_path):
    """Found on a GPU server (torch 2.11, Python 3.12): a worker's uid has no account, so `getpass.getuser()` raised
    KeyError 'getpwuid(): uid not found'. torch 2.11 asks it for its compile cache folder the first time an optimizer
    is made, so a notebook's `torch.optim.Adam(...)` failed at load and the note blamed the student (torch 2.13,
    on this machine, catches the KeyError itself). The worker's environment names a user (LOGNAME, USER), as a
    login does; nothing of the grader's own account."""
    from conftest import grade_sources
    demo = ("\nimport getpass, os\n"
            "WHO = getpass.getuser()\n"
            "assert WHO not in ('root', os.environ.get('SUDO_USER')), WHO\n")
    r = grade_sources(tmp_path, {"who.py": REFERENCE.read_text() + demo})["who"]
    assert r.score == 100
    assert not [n.en for n in r.notes if "While loading" in n.en], [n.en for n in r.notes]


def test_a_line_that_fails_only_in_the_graders_setting_says_so(tmp_path):
    """Red team, round 24: ordinary notebook lines that run on a student's machine or Colab fail in a worker (no
    network, one process, a uid with no account or terminal, no GPU, none of the files beside the submission). The notes were bare errors that read as the
    student's mistake ("PermissionError: [Errno 13] Permission denied" at a `DataLoader(num_workers=2)` loop,
    "Temporary failure in name resolution" at a download); each now says that the grader's setting is the cause and
    that it costs nothing, and the classes keep full marks."""
    import importlib.util
    from conftest import grade_sources
    # A package a notebook of the book imports and the course does not install (tiktoken is in a GPU server's image:
    # there the import worked and the test miscounted the notes, session 19)
    missing = next(m for m in ("tiktoken", "d2l", "gensim", "tiktoken_not_installed")
                   if importlib.util.find_spec(m) is None)
    demo = ("\nimport os, pwd, urllib.request\n"
            "from torch.utils.data import DataLoader, TensorDataset\n"
            "urllib.request.urlopen('https://example.com/the-verdict.txt')\n"
            "for xb, in DataLoader(TensorDataset(torch.randn(8, 2)), batch_size=4, num_workers=2): pass\n"
            "os.getlogin()\n"
            "pwd.getpwuid(os.getuid())\n"
            "x = torch.ones(2).cuda() if not torch.cuda.is_available() else torch.ones(2)[5]\n")
    both = grade_sources(tmp_path, {"env.py": REFERENCE.read_text() + demo, "files.py": REFERENCE.read_text()
                                    + f"\ntext = open('the-verdict.txt', encoding='utf-8').read()\nimport {missing}\n"
                                    + "torch.save({'w': torch.ones(2)}, '/tmp/model.pt')\n"
                                    + "open('/tmp/log.txt', 'w').write('loss')\n"})
    r = both["env"]
    assert r.score == 100 and both["files"].score == 100
    files, module, *folder = [n for n in both["files"].notes if "While loading" in n.en]
    assert len(folder) == 2, ([n.en for n in both["files"].notes],
                              {f: (os.path.exists(f) and os.stat(f).st_uid) for f in ("/tmp/model.pt", "/tmp/log.txt")})
    for n in folder:
        assert "/tmp/" in n.en and "write files only in its working folder" in n.en and "작업 폴더에만" in n.ko, n.en
    assert f"No module named '{missing}'" in module.en and "only the packages the course uses" in module.en, module.en
    assert "강의에서 쓰는 패키지" in module.ko, module.ko
    assert "the-verdict.txt" in files.en and "without the files beside it" in files.en, files.en
    assert "코드 옆의 파일" in files.ko, files.ko
    notes = [n for n in r.notes if "While loading" in n.en]
    assert len(notes) == 5, [n.en for n in r.notes]
    net, procs, login, account, gpu = notes
    assert "urlopen" in net.en and "The grader has no network" in net.en and "네트워크가 없어서" in net.ko, net.en
    assert "DataLoader" in procs.en and "runs your code in a single process" in procs.en, procs.en
    assert "하나의 프로세스에서" in procs.ko, procs.ko
    for n in (login, account):
        assert "a user with no account and no login terminal" in n.en and "계정과 로그인 터미널이" in n.ko, n.en
    if not torch.cuda.is_available():  # (a worker that sees a GPU runs `.cuda()`, and the index error is the student's)
        assert "The grader has no GPU" in gpu.en and "GPU가 없습니다" in gpu.ko, gpu.en
    else:
        assert "IndexError" in gpu.en and "grader has no" not in gpu.en, gpu.en


def test_a_notebooks_default_dtype_or_device_is_not_the_checks(tmp_path):
    """Red team, round 24: `torch.set_default_dtype(torch.float64)` or `torch.set_default_device('cuda')` (a Colab
    habit) at the top of a right notebook stayed set for the checks: its classes made float64 weights for the
    grader's float32 inputs (9/44 of the public checks), or CUDA tensors that a machine without a GPU cannot make and
    the CPU inputs cannot meet (8/44). Each request runs with torch's defaults, as a fresh notebook does."""
    from conftest import grade_sources
    ref = REFERENCE.read_text()
    r = grade_sources(tmp_path, {"f64.py": "import torch\ntorch.set_default_dtype(torch.float64)\n" + ref,
                                 "gpu.py": "import torch\ntorch.set_default_device('cuda')\n" + ref})
    assert r["f64"].score == 100, [c.message.en for c in r["f64"].checks if c.status == "failed"][:3]
    assert r["gpu"].score == 100, [c.message.en for c in r["gpu"].checks if c.status == "failed"][:3]


def test_a_notebooks_console_settings_load_without_a_note(tmp_path):
    """Red team, round 24: `sys.stdout.reconfigure(encoding='utf-8')` (a habit where a Windows console encodes
    cp949), `sys.stdout.encoding.lower()` and `sys.stdout.buffer.write(...)` failed at load against the worker's
    output stand-in ("'BoundedText' object has no attribute 'reconfigure'"), a note that read as the student's
    mistake. They run, and what they print is kept as text."""
    from autograder.worker import BoundedText
    from conftest import grade_sources
    demo = ("\nimport sys\n"
            "sys.stdout.reconfigure(encoding='utf-8')\n"
            "ENC = sys.stdout.encoding.lower()\n"
            "sys.stdout.buffer.write('한글 ok\\n'.encode())\n")
    r = grade_sources(tmp_path, {"con.py": REFERENCE.read_text() + demo})["con"]
    assert r.score == 100
    assert not [n.en for n in r.notes if "While loading" in n.en], [n.en for n in r.notes]
    out = BoundedText(100)
    out.buffer.write("한글".encode() + b"\xff")
    assert out.take()["text"] == "한글\ufffd"


def test_an_exception_class_with_a_huge_name_makes_a_short_load_note(tmp_path):
    """Red team, round 24: the worker shortened an exception's message but not its class's name, and load notes had
    no bound: `raise type('C' * 3_000_000, (Exception,), {})('m')` at the top of a right file made a 24 MB result
    file and 8 MB of `grade check` output. A load note is at most plugin.MAX_LOAD_NOTE characters, as a check's
    message is, and the classes keep their marks."""
    from conftest import grade_sources
    demo = "\nraise type('C' * 3_000_000, (Exception,), {})('m')\n"
    r = grade_sources(tmp_path, {"big.py": REFERENCE.read_text() + demo})["big"]
    assert r.score == 100
    (note,) = [n for n in r.notes if "While loading" in n.en]
    assert "CCCC" in note.en and len(note.en) <= 2010 and len(note.ko) <= 2010, len(note.en)
    assert sum(p.stat().st_size for p in (tmp_path / "results").iterdir()) < 1_000_000


def test_a_forged_load_progress_line_is_not_the_graders_failure(tmp_path):
    """Red team, round 24: a file that wrote `attention.py:²` (a digit to str.isdigit(), not to int()) into its
    scratch folder's load.progress and hung was read as hung at that line; told of the skip (its frames show the
    load request's arguments), it then loaded, and the grader raised on int('²'): "the autograder itself failed"
    in place of the file's own result. A line number is ASCII digits; the forged one is not taken, so the hang is
    the file's own and the result says so."""
    import json
    from dataclasses import replace
    from autograder import assignment, batch
    from autograder.results import SubmissionResult
    forge = r'''
import os, sys
def _told():
    f = sys._getframe(1)
    while f is not None:
        if isinstance(f.f_locals.get('skip'), (set, list, frozenset)) and f.f_locals['skip']:
            return True
        f = f.f_back
    return False
if not _told():
    with open(os.path.join(os.environ['TMPDIR'], 'load.progress'), 'w') as f:
        f.write('sup.py:\u00b2\t1\t0\n')
        f.flush()
        while True:
            pass
'''
    subs = tmp_path / "subs"
    subs.mkdir()
    (subs / "sup.py").write_text(REFERENCE.read_text() + forge, encoding="utf-8")
    a = assignment.load("attention")
    a = replace(a, limits=replace(a.limits, call_timeout=4.0))
    batch.main(submissions=subs, out=tmp_path / "out", assignment=a, echo=lambda _m: None)
    r = SubmissionResult.from_dict(json.loads((tmp_path / "out" / "sup.json").read_text())["extra_data"]["internal"])
    assert r.error is not None and "itself failed" not in r.error.en and not r.staff, (r.error, r.staff[-300:])
    assert "did not finish within 4 s" in r.error.en or "longer than" in r.error.en, r.error.en


def test_a_top_level_line_that_kills_the_worker_costs_only_itself(tmp_path):
    """Red team, round 24: Colab's "restart the runtime" line after a `!pip install` (`os.kill(os.getpid(), 9)`),
    or a demo line that crashes, at the top of a right notebook ended the worker while it loaded: 0/100, "killed
    (out of memory or a resource limit)". Like a line that hangs, it is skipped (the worker's load.progress names
    it) and the file loads again without it, with a note that says so."""
    from conftest import grade_sources, notebook
    nb = notebook("!pip install -q tiktoken\nimport os\nos.kill(os.getpid(), 9)  # restart the runtime",
                  REFERENCE.read_text())
    seg = REFERENCE.read_text() + "\nimport ctypes\nctypes.string_at(0)\n"
    r = grade_sources(tmp_path, {"restart.ipynb": nb, "seg.py": seg})
    for sid, how in (("restart", "SIGKILL"), ("seg", "SIGSEGV")):
        assert r[sid].score == 100, (sid, r[sid].error)
        (note,) = [n for n in r[sid].notes if "While loading" in n.en]
        assert f"this line ended the process running your code ({how}" in note.en and "skipped" in note.en, note.en
        assert "건너뛰었습니다" in note.ko, note.ko
    assert "code cell 1, line 3: `os.kill(os.getpid(), 9)" in r["restart"].notes[0].en, r["restart"].notes[0].en
