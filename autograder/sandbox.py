"""Worker processes: a warm zygote forks a keeper and a limited worker for each submission, and kills them all.

Process tree (the grader holds the hidden checks and never forks student code itself):

    grader ──socketpair──> zygote (clean interpreter: torch and autograder.worker imported, nothing hidden)
                              └─ keeper   one per submission; child subreaper, so every descendant stays below it
                                   └─ worker   rlimits, scratch folder, other uid when run as root, runs the code

As root, the keeper first moves into its own IPC, network, mount and UTS namespaces, mounts a tmpfs scratch and
makes Python's folders reachable, and creates a memory cgroup for the worker (see _isolate); everything the
submission creates there dies with the keeper.

The zygote is started with `python -I`, so it never sees the grader's memory, and a fork costs milliseconds
instead of the seconds an `import torch` costs.
"""
from __future__ import annotations

import ctypes
import errno
import gc
import json
import os
import select
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import time
from dataclasses import asdict, dataclass
from typing import Any

from . import confine, protocol
from .safetext import read_untrusted

try:
    import resource
except ImportError:  # Windows: no sandbox; only `grade check` runs there, unsandboxed (plainworker.py)
    resource = None  # type: ignore[assignment]

PR_SET_PDEATHSIG = 1
PR_SET_CHILD_SUBREAPER = 36
UID_BASE = 61000  # workers run as a uid/gid in [UID_BASE, UID_BASE + UID_COUNT) when the grader is root
UID_COUNT = 1000
LOCK_DIR = "/run/attention-grader"
# Where the locks go when /run cannot be written (a read-only /run in a container). Every grading run on the machine
# meets the same refusal, so all of them agree on the same fallback.
LOCK_DIR_FALLBACKS = ("/var/lib/attention-grader", "/dev/shm/attention-grader-locks", "/tmp/attention-grader-locks")
_claimed: dict[int, int] = {}  # uid -> fd of the lock that reserves it for this process
try:
    _libc = ctypes.CDLL(None, use_errno=True)
except (OSError, TypeError):  # Windows has no C library to load by None; see plainworker.py
    _libc = None
_TICK = os.sysconf("SC_CLK_TCK") if hasattr(os, "sysconf") else 100
MAX_REPLY_HEAD = 16 * 1024 * 1024  # JSON part of a worker's reply; tensors travel outside it
CGROUP_PREFIX = "attention-grader-"  # memory cgroups are named after their keeper's pid
CGROUP_OVERHEAD_MB = 128  # the worker's own runtime in its cgroup: zygote pages it writes to, files it reads


@dataclass(frozen=True)
class Limits:
    """Per-submission resource limits; the defaults let two workers run side by side on a 2-core, 24 GiB box."""
    call_timeout: float = 20.0  # seconds for one request (one forward pass, one construction, ...)
    total_timeout: float = 120.0  # CPU seconds of the student's code in all (wall-clock: WAIT_FACTOR times that)
    memory_mb: int = 2048  # address space the worker may add on top of the zygote's
    max_procs: int = 64  # processes and threads
    file_mb: int = 16  # largest file the worker may write
    output_kb: int = 64  # student stdout/stderr kept
    disk_mb: int = 256  # all files in the scratch folder together
    cpu_cores: float = 1.25  # all processes together, averaged over a second (the worker itself uses one)


def _prctl(option: int, arg: int) -> None:
    _libc.prctl(option, arg, 0, 0, 0)


def _set_name(name: str) -> None:
    """The process's name as ps, top and perf show it (PR_SET_NAME; 15 bytes at most)."""
    try:
        _libc.prctl(15, ctypes.c_char_p(name.encode()[:15]), 0, 0, 0)
    except Exception:
        pass


def is_root() -> bool:
    return hasattr(os, "geteuid") and os.geteuid() == 0  # Windows has no geteuid


def lock_dir() -> str:
    """The folder of the uid locks (root only): LOCK_DIR, or the first fallback that can be made and is root's
    own folder (not a link, not another user's: /tmp and /dev/shm are anyone's to write in)."""
    import stat
    errors = []
    for folder in (LOCK_DIR, *LOCK_DIR_FALLBACKS):
        try:
            os.makedirs(folder, mode=0o700, exist_ok=True)
            st = os.lstat(folder)
            if not stat.S_ISDIR(st.st_mode) or st.st_uid != os.geteuid():
                errors.append(f"{folder}: not this user's own folder")
                continue
            os.chmod(folder, 0o700)
            probe = os.path.join(folder, ".write-check")
            os.close(os.open(probe, os.O_RDWR | os.O_CREAT | os.O_NOFOLLOW, 0o600))
            return folder
        except OSError as e:
            errors.append(f"{folder}: {e.strerror or e}")
    raise RuntimeError("no folder for the worker uids' locks could be made: " + "; ".join(errors))


def claim_uid() -> int:
    """Reserve a worker uid no other live grader process uses (root only); held until this process exits.

    A fixed uid per slot would let two grading runs on one machine kill each other's workers, since a
    finished submission ends with killing every process of its uid.
    """
    import fcntl
    folder = lock_dir()
    for uid in range(UID_BASE, UID_BASE + UID_COUNT):
        if uid in _claimed or _account(uid):
            continue
        fd = os.open(os.path.join(folder, f"uid-{uid}.lock"), os.O_RDWR | os.O_CREAT | os.O_NOFOLLOW, 0o600)
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except OSError:
            os.close(fd)
            continue
        _claimed[uid] = fd
        kill_uid(uid)  # leftovers of a grader that died without cleaning up
        confine.remove_stale_cgroups(CGROUP_PREFIX, lambda pid: os.path.exists(f"/proc/{pid}"))
        remove_stale_scratch(uid)
        return uid
    raise RuntimeError("no free worker uid: too many grading processes on this machine")


def _account(uid: int) -> bool:
    """Whether `uid` is a user's account here (the passwd database, LDAP through NSS): claiming it would kill that
    person's processes (kill_uid), and its files would be the submission's to read."""
    try:
        import pwd
        pwd.getpwuid(uid)
    except KeyError:
        return False
    except Exception:  # noqa: BLE001 - a broken NSS setup: not known to be an account
        return False
    return True


def clean_env(home: str | None = None) -> dict[str, str]:
    """The few variables a worker needs; nothing from the grader's environment leaks through."""
    env = {"PATH": "/usr/local/bin:/usr/bin:/bin", "LANG": "C.UTF-8", "PYTHONHASHSEED": "0",
           "OMP_NUM_THREADS": "1", "MKL_NUM_THREADS": "1", "PYTHONDONTWRITEBYTECODE": "1"}
    if "CUDA_VISIBLE_DEVICES" in os.environ:  # set but empty hides every GPU: workers see what the graders see
        env["CUDA_VISIBLE_DEVICES"] = os.environ["CUDA_VISIBLE_DEVICES"]
    if os.environ.get("GRADE_WATCH_FILTER") == "python":  # the library watch without its C filter (worker.py)
        env["GRADE_WATCH_FILTER"] = "python"
    if home:  # a worker's: its scratch folder, and a user name, as a login gives (its uid has no account, so
        # getpass.getuser() raised KeyError: torch 2.11 asks it as the first optimizer is made, found on a GPU server)
        env["HOME"] = env["TMPDIR"] = home
        env["LOGNAME"] = env["USER"] = "student"
    return env


# ---------------------------------------------------------------------------------------------- process listing

def _children(pid: int) -> list[int]:
    return [p for p, fields in confine.proc_stats() if len(fields) > 1 and int(fields[1]) == pid]


def _user_tasks(uid: int) -> int:
    n = 0
    for entry in os.listdir("/proc"):
        if entry.isdigit():
            try:
                if os.stat(f"/proc/{entry}").st_uid == uid:
                    n += len(os.listdir(f"/proc/{entry}/task"))
            except OSError:
                pass
    return n


def _reap() -> dict[int, int]:
    done = {}
    while True:
        try:
            pid, status = os.waitpid(-1, os.WNOHANG)
        except ChildProcessError:
            return done
        if pid == 0:
            return done
        done[pid] = status


def _kill_descendants(rounds: int = 200) -> dict[int, int]:
    """Kill every process below this one (orphans re-parent here: we are a child subreaper).

    Returns the exit statuses it reaped on the way, so a caller waiting for one child does not lose it.
    """
    me = os.getpid()
    reaped: dict[int, int] = {}
    for _ in range(rounds):
        reaped.update(_reap())
        try:  # one system call for the usual case, instead of reading every process's /proc/<pid>/stat
            os.waitid(os.P_ALL, 0, os.WEXITED | os.WNOHANG | os.WNOWAIT)
        except ChildProcessError:
            # No child at all, running or not: nothing is left below this process either, because a subreaper's
            # orphaned descendants become its own children.
            return reaped
        kids = _children(me)
        if not kids:
            return reaped
        for k in kids:
            try:
                os.kill(k, signal.SIGKILL)
            except ProcessLookupError:
                pass
        time.sleep(0.002)
    return reaped


def _stop(pid: int, timeout: float = 1.0) -> int | None:
    """SIGKILL a child and wait (at most `timeout`) until it has ended; its exit status, or None when it has not
    ended by then or cannot be waited for. So that the sweep after it (_kill_descendants) usually finds no child
    left and returns without listing every process on the machine: the common case, a worker with no children of
    its own, ends with no /proc read at all."""
    try:
        os.kill(pid, signal.SIGKILL)
        fd = os.pidfd_open(pid)  # readable once the process has ended (Linux >= 5.3)
    except (AttributeError, OSError):
        return None
    try:
        waiter = select.poll()  # (no FD_SETSIZE limit, unlike select)
        waiter.register(fd, select.POLLIN)
        waiter.poll(timeout * 1000)
    except (OSError, ValueError):
        pass
    finally:
        os.close(fd)
    try:
        done, status = os.waitpid(pid, os.WNOHANG)
    except ChildProcessError:
        return None
    return status if done == pid else None


_SYS_SETRESUID = {"x86_64": 117, "aarch64": 147}.get(os.uname().machine) if hasattr(os, "uname") else None


def _kill_uid_in_thread(uid: int) -> bool:
    """kill(-1, SIGKILL) from a short-lived thread that alone takes `uid`'s credentials. A raw setresuid
    changes only the calling thread (glibc's wrapper would change every thread), and a root process that drops
    every uid loses its capabilities, so the signal reaches exactly that user's processes. No fork of this big
    process (about 15 ms of page tables per submission). False where the syscall number is unknown."""
    if _SYS_SETRESUID is None:
        return False
    import threading
    done: list[bool] = []

    def run() -> None:
        if _libc.syscall(ctypes.c_long(_SYS_SETRESUID), *[ctypes.c_long(uid)] * 3) != 0:
            return
        try:
            os.kill(-1, signal.SIGKILL)
        except ProcessLookupError:  # no process of that user: nothing to do
            pass
        except OSError:
            return
        done.append(True)

    t = threading.Thread(target=run, name=f"kill-uid-{uid}", daemon=True)
    t.start()
    t.join()
    return bool(done)


def kill_uid(uid: int) -> None:
    """Kill every process of `uid` (root only), as that user: signalling -1 reaches only its own processes."""
    if _kill_uid_in_thread(uid):
        return
    pid = os.fork()
    if pid == 0:
        try:
            os.setgroups([])
            os.setgid(uid)
            os.setuid(uid)
            os.kill(-1, signal.SIGKILL)
        finally:
            os._exit(0)
    os.waitpid(pid, 0)


def describe_status(status: int | None) -> dict[str, Any]:
    if status is None:
        return {"how": "unknown"}
    if os.WIFSIGNALED(status):
        sig = os.WTERMSIG(status)
        return {"how": "signal", "signal": sig, "name": signal.Signals(sig).name if sig in
                signal.Signals._value2member_map_ else str(sig)}
    return {"how": "exit", "code": os.WEXITSTATUS(status)}


# ---------------------------------------------------------------------------------------------- inside the zygote

_READ_PATHS: list[str] | None = None


def _read_paths() -> list[str]:
    """confine.read_paths for this installation, computed once in the zygote (a millisecond of realpath calls
    that every keeper and worker would otherwise repeat): they inherit it, before any student code runs."""
    global _READ_PATHS
    if _READ_PATHS is None:
        _READ_PATHS = confine.read_paths(confine.project_root())
    return list(_READ_PATHS)


def _above_std(fd: int) -> int:
    """`fd`, moved to a number above 2 if it is 0, 1 or 2."""
    if fd > 2:
        return fd
    import fcntl
    moved = fcntl.fcntl(fd, fcntl.F_DUPFD, 3)
    os.close(fd)
    return moved


def _become_worker(spec: dict[str, Any], wsock: socket.socket, keeper_pid: int, ready: int,
                   evidence: int | None = None) -> None:
    """ready: the pipe on which this process tells its keeper, before it runs any of the submission's code, that it
    is set up (see _keeper). evidence: the write end of the evidence pipe to the grader (protocol.EVIDENCE)."""
    from .worker import Worker  # already imported by the zygote
    import torch

    _set_name("grade-worker")
    lim = spec["limits"]
    scratch = spec["scratch"]
    os.chdir(scratch)
    # Its channels above 2 before /dev/null and the log go onto 0-2 (a grader with a closed stdin or stdout could
    # have handed them one of those numbers).
    if wsock.fileno() <= 2:
        wsock = socket.socket(fileno=_above_std(wsock.detach()))
    ready = _above_std(ready)
    if evidence is not None:
        evidence = _above_std(evidence)
    out = os.open(os.path.join(scratch, "output.log"), os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
    null = os.open(os.devnull, os.O_RDONLY)
    os.dup2(null, 0)
    os.dup2(out, 1)
    os.dup2(out, 2)
    lo = 3
    for fd in sorted({wsock.fileno(), ready} | ({evidence} if evidence is not None else set())):
        os.closerange(lo, fd)
        lo = fd + 1
    os.closerange(lo, 65536)
    if evidence is not None:
        # Never blocking (a pipe the submission filled counts against it at the grader's end) and not inherited by
        # a program it runs.
        os.set_blocking(evidence, False)
        os.set_inheritable(evidence, False)
    if spec.get("cgroup_procs"):
        # The worker's memory cgroup's list of processes, opened while this process may (Landlock comes later): a
        # watched call's end reads it instead of a scan of all of /proc (worker._process_ids).
        try:
            from . import worker as _w
            _w.set_procs(os.open(spec["cgroup_procs"], os.O_RDONLY | os.O_CLOEXEC))
        except OSError:
            pass
    signal.signal(signal.SIGXFSZ, signal.SIG_IGN)  # an oversized write fails with EFBIG instead of killing
    signal.signal(signal.SIGINT, signal.default_int_handler)
    signal.signal(signal.SIGTERM, signal.SIG_DFL)

    uid = spec.get("uid")
    # RLIMIT_DATA (private writable memory) rather than RLIMIT_AS: CUDA reserves huge PROT_NONE ranges.
    with open("/proc/self/status") as f:
        vm = next(int(line.split()[1]) for line in f if line.startswith("VmData:")) * 1024
    nproc = lim["max_procs"] if uid is not None else _user_tasks(os.getuid()) + lim["max_procs"]
    for res, value in ((resource.RLIMIT_DATA, vm + lim["memory_mb"] * 1024 * 1024),
                       (resource.RLIMIT_FSIZE, lim["file_mb"] * 1024 * 1024),
                       (resource.RLIMIT_CORE, 0),
                       (resource.RLIMIT_NPROC, nproc),
                       # The budget plus one hanging call (proxy.py: a hang costs call_timeout, then a new worker).
                       (resource.RLIMIT_CPU, int(lim["total_timeout"] + lim["call_timeout"]) + 5)):
        try:
            resource.setrlimit(res, (value, value))
        except (ValueError, OSError):
            # A hard limit below it that this process may not raise (a student's `ulimit -t 100`; no
            # CAP_SYS_RESOURCE): the lower one holds. Failing here failed the worker's start, and `grade check`
            # gave every file 0.
            hard = resource.getrlimit(res)[1]
            resource.setrlimit(res, (min(value, hard), min(value, hard)))
    if uid is not None:
        os.setgroups([])
        os.setgid(uid)
        os.setuid(uid)
    env = clean_env(scratch)  # read before the clear: CUDA_VISIBLE_DEVICES comes from the zygote's environment
    if spec.get("gpu") is False:  # set and empty before anything starts CUDA: this worker sees no GPU
        env["CUDA_VISIBLE_DEVICES"] = ""
    os.environ.clear()
    os.environ.update(env)
    # tempfile caches its folder: the zygote's answer (/tmp, which Landlock refuses a worker) would outlive the new
    # TMPDIR, and torch.optim (its compile cache folder), tempfile.mkstemp() ... failed with PermissionError.
    tempfile.tempdir = None
    # Set after the uid change (a credential change clears it): the worker dies with its keeper.
    _prctl(PR_SET_PDEATHSIG, signal.SIGKILL)
    if os.getppid() != keeper_pid:
        os._exit(3)
    torch.set_num_threads(1)
    if spec.get("cpus"):
        try:  # beside its grader (batch.py); a submission that moves itself only changes where it runs
            os.sched_setaffinity(0, spec["cpus"])
        except (OSError, ValueError, TypeError):
            pass
    # A Python-level fork in student code yields a child that exits at once: the lab needs no processes, and
    # a fork bomb then ends at the same point every run (unreaped children fill RLIMIT_NPROC) instead of
    # racing the time and memory budgets. subprocess forks in C without these hooks and still works.
    os.register_at_fork(after_in_child=lambda: os._exit(0))
    # TorchScript off: torch.jit.script and torch.jit.trace hand back the module (or function) as it is, run as
    # Python. A compiled module runs none of its Python code, so the checks that watch for torch's own layers
    # (worker.Recorder) did not see a block that ran torch.jit.script(nn.TransformerEncoderLayer(...)) or a trace of
    # it, and it earned the exam's 100/100 (red team, round 21). The labs need no TorchScript; what it computes is
    # the same either way.
    import torch.jit._state
    torch.jit._state.disable()
    # Last step before student code: read only Python's own folders, write only the scratch folder (Landlock).
    from . import worker
    gpu = worker.accelerator_built() and spec.get("gpu") is not False
    if evidence is not None:
        worker.set_evidence(evidence)
    worker.SANDBOX.update(memory_mb=lim["memory_mb"], disk_mb=lim["disk_mb"], uid=uid, modes=spec.get("modes", {}),
                          landlock=confine.landlock(scratch, _read_paths(), gpu=gpu),
                          keyrings_denied=confine.deny_keyrings(gpu_driver=worker.accelerator_built()))
    worker = Worker(wsock, output_limit=lim["output_kb"] * 1024)
    os.write(ready, READY)
    os.close(ready)
    worker.serve()


def _isolate(spec: dict[str, Any], me: int) \
        -> tuple[dict[str, str], "confine.MemoryCgroup | None", "confine.CpuCgroup | None"]:
    """In the keeper, before the worker is forked (and as root, before anyone drops privileges): private
    namespaces, a tmpfs scratch, Python's folders made reachable, a memory cgroup. Each step that the kernel or
    our privileges refuse falls back, and the returned modes say what ran (they end up in the result)."""
    lim, scratch, uid = spec["limits"], spec["scratch"], spec.get("uid")
    modes: dict[str, str] = {}
    ns = confine.private_namespaces() if spec.get("isolate", True) else "none"
    modes["namespaces"] = ns
    tmpfs = "mnt" in ns.split(",") and confine.scratch_tmpfs(scratch, lim["disk_mb"], uid,
                                                             confine.Watchdog.MAX_ENTRIES)
    modes["scratch"] = "tmpfs" if tmpfs else "folder"
    if uid is not None and "mnt" in ns.split(","):
        exposed = confine.expose_python(_read_paths(), uid)
        modes["python"] = "bind-mounted: " + ", ".join(exposed) if exposed else "reachable"
    cg = None
    if is_root() and spec.get("isolate", True):
        # The tmpfs scratch is charged to the cgroup too, so it gets room on top of the memory budget.
        cg = confine.MemoryCgroup.create(f"{CGROUP_PREFIX}{me}",
                                         lim["memory_mb"] + (lim["disk_mb"] if tmpfs else 0) + CGROUP_OVERHEAD_MB)
    modes["memory"] = cg.mode if cg is not None else "polled"
    if cg is not None:
        modes["cgroup"] = os.path.basename(cg.folder)
        # The kernel memory cap is for a worker that sees no GPU: CUDA's driver and its threads hold kernel memory
        # that no machine here could measure, and a correct GPU run stopped as the student's would be the worse
        # failure. The GPU worker runs the same code as the submission's own worker, which is capped.
        from . import worker  # (imported by the zygote already)
        if worker.accelerator_built() and spec.get("gpu") is not False:
            cg.kernel_mb = None
        modes["kernel memory"] = f"at most {cg.kernel_mb} MB" if cg.kernel_mb is not None else "not capped (GPU)"
    cpu = None
    if is_root() and spec.get("isolate", True):
        cpu = confine.CpuCgroup.create(f"{CGROUP_PREFIX}{me}", lim.get("cpu_cores", 1.25), cg)
    modes["cpu"] = f"{cpu.mode}, at most {lim.get('cpu_cores', 1.25):g} cores" if cpu is not None else "polled"
    from . import worker  # (imported by the zygote already)
    modes["library watch"] = "C filter" if worker.WATCH_FILTER == "c" else "Python"  # (worker._install_filter)
    return modes, cg, cpu


WATCH_EVERY = 0.25  # seconds between the keeper's watchdog checks
WAKE_HZ = 50  # the most times a second a keeper wakes to reap (see _keeper)
READY = b"ready"  # what a worker writes on its setup pipe once it is set up, before it runs the submission's code
SETUP_ERROR_CHARS = 2000
SETUP_TIMEOUT = 60.0  # seconds a worker may take to set itself up (a few milliseconds here)


def _worker_setup(fd: int) -> str | None:
    """In the keeper: wait until the worker it forked is set up (None) or has failed to (why, as it said, or that
    it said nothing). It writes before it runs any of the submission's code, so what comes here is the grader's own:
    a worker that could not enter its scratch folder, drop its privileges or confine itself must not read as a
    submission that crashed while it loaded."""
    got = b""
    try:
        waiter = select.poll()
        waiter.register(fd, select.POLLIN)
        deadline = time.monotonic() + SETUP_TIMEOUT
        while got != READY and time.monotonic() < deadline:
            if not waiter.poll(max(1, int((deadline - time.monotonic()) * 1000))):
                break
            chunk = os.read(fd, SETUP_ERROR_CHARS * 4)
            if not chunk:
                break
            got += chunk
    except OSError as e:
        return f"its setup could not be followed ({e})"
    finally:
        os.close(fd)
    if got == READY:
        return None
    return got.decode("utf-8", "replace") or "it ended without saying why"


def _keeper(spec: dict[str, Any], wsock: socket.socket, ksock: socket.socket, evidence: int | None = None) -> None:
    _set_name("grade-keeper")
    if spec.get("cpus"):
        try:  # on its grader's core, as its worker will be (batch.py)
            os.sched_setaffinity(0, spec["cpus"])
        except (OSError, ValueError, TypeError):
            pass
    os.setsid()
    _prctl(PR_SET_CHILD_SUBREAPER, 1)
    signal.signal(signal.SIGCHLD, signal.SIG_DFL)
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    me = os.getpid()
    try:
        modes, cg, cpu = _isolate(spec, me)
    except Exception as e:  # a kernel refusing something in a way not foreseen: grade with the polled budgets
        cpu = None
        modes, cg = {"namespaces": "unknown", "scratch": "folder", "memory": "polled",
                     "error": f"{type(e).__name__}: {e}"[:200]}, None
    spec = {**spec, "modes": modes, "cgroup_procs": os.path.join(cg.folder, "cgroup.procs") if cg is not None else None}
    ready_r, ready_w = os.pipe()
    pid = os.fork()
    if pid == 0:
        try:
            ksock.close()
            os.close(ready_r)
            _become_worker(spec, wsock, me, ready_w, evidence)
        except BaseException as e:  # before any student code: the grader's own failure, and it is told why
            try:
                os.write(ready_w, f"{type(e).__name__}: {e}"[:SETUP_ERROR_CHARS].encode("utf-8", "replace"))
            except BaseException:
                pass
        finally:
            os._exit(0)
    wsock.close()
    os.close(ready_w)
    if evidence is not None:  # (only the worker may hold it: the grader sees the pipe closed when the worker does)
        os.close(evidence)
    # The worker waits for its first request, which comes only after this hello: it is in the cgroup before
    # any student code runs.
    if cpu is not None and not cpu.join(pid):  # (before the memory cgroup: v2 joins that folder for both)
        cpu.remove()
        cpu, modes["cpu"] = None, "polled"
    if cg is not None and not cg.join(pid):
        cg.remove()
        cg, modes["memory"] = None, "polled"
        modes.pop("cgroup", None)
        if cpu is not None and not cpu.owned:  # v2: its quota was that folder's
            cpu, modes["cpu"] = None, "polled"
    setup_error = _worker_setup(ready_r)  # (it set itself up meanwhile)
    protocol.send(ksock, {"keeper": me, "worker": pid, "modes": modes,
                          "cgroup": cg.folder if cg is not None else None, "setup_error": setup_error})
    rfd, wfd = os.pipe()
    os.set_blocking(wfd, False)
    signal.set_wakeup_fd(wfd)
    signal.signal(signal.SIGCHLD, lambda *_: None)
    status = None
    over = None  # set when the watchdog stops the submission (memory or disk of all its processes together)
    lim = spec["limits"]
    watch = confine.Watchdog(lim["memory_mb"], lim.get("disk_mb", 256), spec["scratch"], lim.get("cpu_cores", 1.25),
                             cgroup=cg, tmpfs=modes["scratch"] == "tmpfs",
                             own_ipc="ipc" in modes["namespaces"].split(","), uid=spec.get("uid"))
    # The keeper is outside the submission's cgroups, so its own CPU must stay small whatever the submission does:
    # each child that ends wakes it (SIGCHLD), and a submission whose processes fork and end without pause (`while
    # :; do ( : & ); done`) kept it busy a whole core, reaping and checking at every wakeup, beyond the submission's
    # CPU quota. So it reaps at most WAKE_HZ times a second and runs the watchdog on its own cadence.
    next_check = 0.0
    while status is None:
        woke = time.monotonic()
        for p, st in _reap().items():
            if p == pid:
                status = st
        if status is not None:
            break
        if woke >= next_check:
            over = watch.check()
            if over is not None:
                break
            next_check = time.monotonic() + WATCH_EVERY
        ready, _, _ = select.select([ksock, rfd], [], [], max(0.0, next_check - time.monotonic()))
        if rfd in ready:
            os.read(rfd, 4096)
        if ksock in ready:
            try:
                data = ksock.recv(64)
            except OSError:
                data = b""
            if not data or b"kill" in data:
                break
        pause = woke + 1.0 / WAKE_HZ - time.monotonic()
        if pause > 0 and ksock not in ready:
            # (a request to stop is never kept waiting; the worker's end is noticed at most 1/WAKE_HZ s late)
            ready, _, _ = select.select([ksock], [], [], pause)
            if ready:
                try:
                    data = ksock.recv(64)
                except OSError:
                    data = b""
                if not data or b"kill" in data:
                    break
    if status is None:
        status = _stop(pid)
    reaped = _kill_descendants()
    if status is None and pid in reaped:
        status = reaped[pid]
    if status is None:
        try:
            _, status = os.waitpid(pid, 0)
        except ChildProcessError:
            pass
    if cpu is not None:
        cpu.remove()
    if cg is not None:
        cg.remove()
    try:
        protocol.send(ksock, {"status": over or describe_status(status)})
    except OSError:
        pass


_MADV_COLLAPSE = 25  # Linux >= 6.1
_HUGE = 2 << 20


def huge_page_chunks(chunk: int = 4 << 20) -> list[tuple[int, int]]:
    """2 MiB-aligned pieces of this process's private writable anonymous memory (the heap included), in
    `chunk`-sized steps, for MADV_COLLAPSE; [] where /proc cannot be read."""
    try:
        with open("/proc/self/maps") as f:
            lines = f.readlines()
    except OSError:
        return []
    out = []
    for line in lines:
        parts = line.split()
        if len(parts) < 5 or parts[1][1:2] != "w" or parts[1][3:4] != "p" or (len(parts) > 5 and parts[5] != "[heap]"):
            continue
        lo, hi = (int(x, 16) for x in parts[0].split("-"))
        lo, hi = (lo + _HUGE - 1) & ~(_HUGE - 1), hi & ~(_HUGE - 1)
        out.extend((a, min(chunk, hi - a)) for a in range(lo, hi, chunk))
    return out


def collapse_huge(start: int, length: int) -> bool | None:
    """Back [start, start + length) with transparent huge pages (same contents): True if done, False if this
    range could not be (busy, unmapped, no free huge page), None if the kernel has no MADV_COLLAPSE."""
    if _libc is None:
        return None
    if _libc.madvise(ctypes.c_void_p(start), ctypes.c_size_t(length), ctypes.c_int(_MADV_COLLAPSE)) == 0:
        return True
    return None if ctypes.get_errno() in (errno.EINVAL, errno.ENOSYS, errno.EPERM) else False


# The environment a grader process forked by the batch's zygote gets from `grade batch` (through the zygote, whose
# memory every worker inherits: so only these, none of which is a secret).
GRADER_ENV = ("PATH", "HOME", "TMPDIR", "TEMP", "TMP", "LANG", "LC_ALL", "LC_CTYPE", "CUDA_VISIBLE_DEVICES",
              "GRADE_UNSANDBOXED")


def _read_all(fd: int) -> bytes:
    chunks = []
    while True:
        chunk = os.read(fd, 1 << 16)
        if not chunk:
            return b"".join(chunks)
        chunks.append(chunk)


def _fork_graders(spec: dict[str, Any]) -> list[socket.socket]:
    """In the batch's zygote, after `import torch` and before anything else: fork its grader processes, which then
    share torch's pages instead of importing it again (two cores, three imports: about a second of every batch).
    Each gets its job pipe as stdin, its result pipe and a socket to this zygote; returns this zygote's ends."""
    mine: list[socket.socket] = []
    pids = []
    for g in spec["graders"]:
        ours, theirs = socket.socketpair(socket.AF_UNIX, socket.SOCK_SEQPACKET)
        pid = os.fork()
        if pid == 0:
            try:
                for s_ in mine + [ours]:
                    s_.close()
                _become_grader(g, theirs)
            finally:
                os._exit(70)
        theirs.close()
        mine.append(ours)
        pids.append(pid)
    for g in spec["graders"]:  # a result pipe held here would hide its grader's end from `grade batch`
        os.close(g["jobs"])
        os.close(g["results"])
    os.write(spec["status"], (json.dumps({"pids": pids}) + "\n").encode())
    os.close(spec["status"])
    return mine


def _become_grader(g: dict[str, Any], sock: socket.socket) -> None:
    # torch's objects, shared with the zygote page for page: a full collection would write to every one of them
    # (and so copy the pages) only to find them alive.
    gc.freeze()
    os.dup2(g["jobs"], 0)
    lo = 3
    for fd in sorted({g["results"], sock.fileno()}):  # nothing else: not the other graders' pipes
        if fd >= lo:
            os.closerange(lo, fd)
            lo = fd + 1
    os.closerange(lo, 65536)
    signal.signal(signal.SIGINT, signal.SIG_IGN if g.get("sigint_ignored") else signal.default_int_handler)
    os.chdir(confine.project_root())
    os.environ.clear()
    os.environ.update({k: v for k, v in g["env"].items() if k in GRADER_ENV})
    _set_name("grade-grader")
    from .gradeproc import main
    argv = list(g["argv"])
    argv[7] = str(sock.fileno())
    main(argv)


def zygote_main(fds: int | list[int], full: bool = True, huge: bool = False, graders: bool = False) -> None:
    """Fork a keeper for each spawn request. `fds`: one socket per grader process it serves (`grade batch`
    starts one zygote for all of its grader processes: one torch import and warm-up instead of one each).

    huge: while no request waits, move its memory onto transparent huge pages, a few MB at a time. Every fork
    (a keeper, then its worker) copies the page table of the zygote's ~150 MB of torch and Python objects, and
    every exit tears that copy down: with huge pages there are 512 times fewer entries. Only for a zygote that
    forks many times (`grade batch`): the move itself costs a few tenths of a second of CPU.

    graders: `grade batch` sends on stdin which grader processes to fork (see _fork_graders, batch.py) and reads
    their pids from the status pipe it names. Keepers are reaped here, graders never: a grader that ended stays
    a zombie while this zygote lives, so `grade batch` can read its exit status and its pid is never reused."""
    from . import stdio
    spec = json.loads(_read_all(0)) if graders else None
    if spec is not None:
        null = os.open(os.devnull, os.O_RDONLY)
        os.dup2(null, 0)
        os.close(null)
    # Descriptors 0-2 open, so that no socket received later takes one of their numbers: a worker puts /dev/null
    # and its log there (_become_worker).
    stdio.prepare()
    socks = [socket.socket(fileno=fd) for fd in ([fds] if isinstance(fds, int) else fds)]
    _set_name("grade-zygote")
    _prctl(PR_SET_PDEATHSIG, signal.SIGKILL)
    signal.signal(signal.SIGINT, signal.SIG_IGN)  # Ctrl-C is the grader's to handle
    signal.pthread_sigmask(signal.SIG_UNBLOCK, {signal.SIGINT})  # (blocked from its start: launch_zygote)
    from . import worker  # torch and the worker code, imported once before any fork
    if spec is not None:
        socks += _fork_graders(spec)
    worker.warm_up(full)
    _read_paths()
    # Everything imported so far goes to a generation the collector never scans: a worker's collections then
    # do not write to (and so copy) every page of the zygote's objects it inherited.
    gc.collect()
    gc.freeze()
    pending = huge_page_chunks() if huge else []
    pending.reverse()  # the lowest addresses (the heap) first
    keepers: set[int] = set()
    while socks:
        for pid in [p for p in keepers if _ended(p)]:
            keepers.discard(pid)
        ready, _, _ = select.select(socks, [], [], 0 if pending else None)
        if not ready and pending:
            if collapse_huge(*pending.pop()) is None:
                pending.clear()  # not on this kernel
            continue
        for sock in ready:
            try:
                msg, fds_in, _, _ = socket.recv_fds(sock, 1 << 16, 4)
            except OSError:
                msg, fds_in = b"", []
            if not msg or len(fds_in) not in (2, 3):  # that grader is done (or confused): stop serving it
                for f in fds_in:
                    os.close(f)
                socks.remove(sock)
                sock.close()
                continue
            spec = json.loads(msg)
            spec["scratch"] = os.fsdecode(bytes.fromhex(spec["scratch"]))  # (Zygote.start_spawn)
            pid = os.fork()
            if pid == 0:
                try:
                    for s_ in socks:
                        s_.close()
                    signal.signal(signal.SIGCHLD, signal.SIG_DFL)
                    _keeper(spec, socket.socket(fileno=fds_in[0]), socket.socket(fileno=fds_in[1]),
                            fds_in[2] if len(fds_in) > 2 else None)
                finally:
                    os._exit(0)
            keepers.add(pid)
            for f in fds_in:
                os.close(f)
    for pid in keepers:  # those that are done; one still sweeping up after its worker goes on by itself
        _ended(pid)
    os._exit(0)  # every grader is done; tearing down torch would only cost them a second of waiting


def _ended(pid: int) -> bool:
    """Reap `pid` if it has ended (a keeper of this zygote)."""
    try:
        return os.waitpid(pid, os.WNOHANG)[0] != 0
    except ChildProcessError:
        return True


def start_shared_zygote(clients: int, full_warm_up: bool = True,
                        huge: bool = True) -> tuple[subprocess.Popen, list[socket.socket]]:
    """One zygote for `clients` grader processes: returns it and one socket for each (hand each to one grader
    process, which wraps it with Zygote(sock=...))."""
    pairs = [socket.socketpair(socket.AF_UNIX, socket.SOCK_SEQPACKET) for _ in range(clients)]
    fds = [child.fileno() for _, child in pairs]
    proc = launch_zygote(f"{fds!r}, {full_warm_up}, huge={huge}", fds)
    for _, child in pairs:
        child.close()
    return proc, [parent for parent, _ in pairs]


def _package_dirs() -> list[str]:
    """The folders in which this process finds torch and numpy (found, not imported). Where they are not where
    `python -I` looks (PYTHONPATH, a `pip install --user`), a zygote or grader process started with -I could not
    import torch, and a student's `grade check` gave 0/44 for every file."""
    import importlib.util
    out: list[str] = []
    for name in ("torch", "numpy"):
        try:
            spec = importlib.util.find_spec(name)
        except (ImportError, ValueError):
            continue
        for place in (spec.submodule_search_locations or []) if spec is not None else []:
            folder = os.path.dirname(os.path.abspath(place))
            if folder not in out:
                out.append(folder)
    return out


def path_prelude(root: str) -> str:
    """Code for `python -I -c` that puts the project first on sys.path and this process's torch and numpy folders
    last (see _package_dirs). Paths go as bytes: the child may decode file names with another encoding."""
    extra = [os.fsencode(d).hex() for d in _package_dirs()]
    return (f"import os, sys; sys.path.insert(0, os.fsdecode(bytes.fromhex({os.fsencode(root).hex()!r}))); "
            f"sys.path.extend(d for d in map(os.fsdecode, map(bytes.fromhex, {extra!r})) if d not in sys.path); ")


def launch_zygote(args: str, pass_fds: list[int], stdin: Any = subprocess.DEVNULL) -> subprocess.Popen:
    """A clean `python -I` (nothing of the caller's environment but clean_env()) running zygote_main(<args>)."""
    root = confine.project_root()
    env = clean_env()
    env["PYTHONPATH"] = root  # -I ignores it; the path is passed explicitly below
    # Ctrl-C while the zygote's Python was still starting (before zygote_main ignores SIGINT) printed a
    # KeyboardInterrupt traceback from its imports under the command's own "interrupted" line. The zygote starts
    # with SIGINT blocked (the mask survives fork and exec) until it ignores it, which discards one pending.
    old = signal.pthread_sigmask(signal.SIG_BLOCK, {signal.SIGINT})
    try:
        return subprocess.Popen(
            [sys.executable, "-I", "-c",
             path_prelude(root) + f"from autograder.sandbox import zygote_main; zygote_main({args})"],
            pass_fds=pass_fds, env=env, stdin=stdin, cwd="/", stdout=subprocess.DEVNULL, stderr=None)
    finally:
        signal.pthread_sigmask(signal.SIG_SETMASK, old)


# ---------------------------------------------------------------------------------------------- grader side

class WorkerLost(Exception):
    """The worker stopped answering: it exited, crashed, was killed, or broke the protocol."""

    def __init__(self, reason: str, status: dict[str, Any] | None = None):
        super().__init__(reason)
        self.reason = reason
        self.status = status or {}
        self.step = 0  # the step of a sequence (op "seq") that was running when the worker was lost
        self.before = 0.0  # seconds the steps of that sequence before it took (a hang: see proxy._raw)


class WorkerTimeout(WorkerLost):
    """A request ran past its deadline; the worker has been killed."""


class WorkerSetupFailed(WorkerLost):
    """The worker failed to set itself up (scratch folder, privileges, confinement) before it ran any submitted
    code: the grader's failure, never the submission's (the job's result says the autograder failed)."""


def _at(e: WorkerLost, step: int) -> WorkerLost:
    e.step = step  # the step of a sequence that was running (0 for a single request)
    return e


class Zygote:
    """Grader-side handle on the zygote process: our own, or (sock given) one shared with other grader
    processes; when a shared one is gone, this grader starts its own."""

    def __init__(self, full_warm_up: bool = True, sock: socket.socket | None = None, huge: bool = False) -> None:
        # full_warm_up=False saves about a second for `grade check`: its public checks take no gradients and
        # probe no devices, the two uses of torch whose lazy imports a worker under another uid may not reach.
        self.full_warm_up = full_warm_up
        self.huge = huge  # zygote_main(huge=...): worth it only for a zygote that forks many workers
        self.cpus: list[int] | None = None  # the cores its workers may use (None: any)
        self.proc: subprocess.Popen | None = None
        if sock is None:
            self._launch()
        else:
            self.sock = sock

    def _launch(self) -> None:
        parent, child = socket.socketpair(socket.AF_UNIX, socket.SOCK_SEQPACKET)
        self.proc = launch_zygote(f"{child.fileno()}, {self.full_warm_up}, huge={self.huge}", [child.fileno()])
        child.close()
        self.sock = parent

    def spawn(self, limits: Limits, scratch: str, uid: int | None, start_timeout: float = 90.0,
              isolate: bool = True, gpu: bool = True) -> "WorkerProcess":
        """isolate=False skips namespaces, the tmpfs scratch and the cgroup: the fallback a kernel without them
        gets (tests use it to check that the fallbacks still hold). gpu=False hides every GPU from the worker
        (CUDA_VISIBLE_DEVICES set and empty), whatever the grader sees."""
        return self.start_spawn(limits, scratch, uid, isolate, gpu).wait(start_timeout)

    def start_spawn(self, limits: Limits, scratch: str, uid: int | None, isolate: bool = True,
                    gpu: bool = True) -> "Spawning":
        """Ask for a worker and return at once: Spawning.wait() gives it once it is ready. `grade batch` asks for
        the next submission's worker while it grades this one (see plugin.py)."""
        wa, wb = socket.socketpair()
        ka, kb = socket.socketpair()
        er, ew = os.pipe()  # the evidence pipe (protocol.EVIDENCE): the worker writes, this process reads
        os.set_blocking(er, False)
        # The scratch path as bytes: the zygote decodes text as UTF-8, this process with its locale's encoding.
        spec = {"limits": asdict(limits), "scratch": os.fsencode(scratch).hex(), "uid": uid, "isolate": isolate,
                "cpus": self.cpus, "gpu": bool(gpu)}
        if self.proc is not None and self.proc.poll() is not None:  # it died (killed, out of memory): later
            self.sock.close()                                       # submissions need one
            self._launch()
        try:
            try:
                socket.send_fds(self.sock, [json.dumps(spec).encode()], [wb.fileno(), kb.fileno(), ew])
            except OSError:
                if self.proc is not None:
                    raise
                self.sock.close()  # the shared zygote is gone: from now on this grader has its own
                self._launch()
                socket.send_fds(self.sock, [json.dumps(spec).encode()], [wb.fileno(), kb.fileno(), ew])
        except OSError as e:
            for s in (wa, wb, ka, kb):
                s.close()
            os.close(er)
            os.close(ew)
            raise WorkerLost(f"the worker pool is not running ({e})") from None
        wb.close()
        kb.close()
        os.close(ew)
        return Spawning(wa, ka, limits, scratch, uid, er)

    def close(self) -> None:
        """Stop the zygote. It holds no state (keepers and workers answer to their own sockets)."""
        try:
            self.sock.close()
        except OSError:
            pass
        if self.proc is None:  # shared: it ends when its last grader process is done
            return
        try:
            self.proc.wait(timeout=2)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            self.proc.wait()


class Spawning:
    """A worker asked of the zygote (Zygote.start_spawn), not yet ready."""

    def __init__(self, wa: socket.socket, ka: socket.socket, limits: Limits, scratch: str, uid: int | None,
                 evidence: int | None = None):
        self.wa, self.ka, self.limits, self.scratch, self.uid = wa, ka, limits, scratch, uid
        self.evidence = evidence  # the evidence pipe's read end (protocol.EVIDENCE)

    def _close(self) -> None:
        self.wa.close()
        self.ka.close()
        if self.evidence is not None:
            os.close(self.evidence)
            self.evidence = None

    def wait(self, start_timeout: float = 90.0) -> "WorkerProcess":
        wa, ka = self.wa, self.ka
        try:
            hello = protocol.recv(ka, deadline=time.monotonic() + start_timeout)
        except protocol.ProtocolError as e:
            self._close()
            raise WorkerLost(f"the worker did not start ({e})") from None
        if not isinstance(hello, dict) or not all(type(hello.get(k)) is int for k in ("keeper", "worker")):
            self._close()
            raise WorkerLost("the worker did not start (bad hello)")
        w = WorkerProcess(wa, ka, hello["keeper"], hello["worker"], self.uid, self.scratch)
        w.evidence_fd, self.evidence = self.evidence, None
        w.modes = dict(hello.get("modes") or {})
        w.limits = self.limits
        if isinstance(hello.get("cgroup"), str) and w.modes.get("memory", "").startswith("cgroup"):
            w.cgroup = confine.MemoryCgroup(hello["cgroup"], w.modes["memory"],
                                            None if w.modes.get("kernel memory", "").startswith("not") else
                                            confine.KERNEL_MB)
        if "setup_error" in hello and hello["setup_error"] is not None:  # (a keeper of an older release sends none)
            w.kill()
            raise WorkerSetupFailed(f"the worker could not be set up, before it ran any submitted code: "
                                    f"{str(hello['setup_error'])[:SETUP_ERROR_CHARS]} (modes: {w.modes})", w.status)
        return w

    def cancel(self) -> None:
        """Stop it whether or not it started (it ran no student code): once ready, killed as any worker is."""
        try:
            self.wait(10.0).kill(graceful=True)
        except WorkerLost:
            pass


class WorkerProcess:
    """One live worker: send requests, enforce deadlines, and kill it with everything it started."""

    def __init__(self, sock: socket.socket, ctrl: socket.socket, keeper: int, worker: int,
                 uid: int | None, scratch: str):
        self.sock, self.ctrl = sock, ctrl
        self.keeper_pid, self.worker_pid = keeper, worker
        self.uid, self.scratch = uid, scratch
        self.status: dict[str, Any] | None = None
        self.alive = True
        self.modes: dict[str, str] = {}  # which containment ran (namespaces, scratch, memory), from the keeper
        self.limits = Limits()
        self.cgroup: confine.MemoryCgroup | None = None
        self.last_progress = ""  # scratch/load.progress as it was when a request timed out (before the kill)
        self._stat_fd: int | None = None  # /proc/<worker>/stat, when the CPU clock below cannot be read
        self._scratch_fd: int | None = None  # the tmpfs scratch (in the keeper's mount namespace), for fstatvfs
        self.evidence_fd: int | None = None  # the evidence pipe's read end (Spawning.wait; protocol.EVIDENCE)
        # The worker's process CPU-time clock (Linux: MAKE_PROCESS_CPUCLOCK(pid, CPUCLOCK_SCHED)): read twice per
        # request, in under a microsecond, where /proc/<pid>/stat takes tens of microseconds.
        self._clock: int | None = ((~worker) << 3) | 2 if sys.platform.startswith("linux") else None

    def cpu_seconds(self) -> float | None:
        """User plus system CPU seconds of the worker and its threads, or None once it cannot be read. (The
        worker's pid cannot be reused while we ask: it is only asked of a worker that has not been reaped.)"""
        if self._clock is not None:
            try:
                return time.clock_gettime(self._clock)
            except OSError:
                self._clock = None
        try:
            if self._stat_fd is None:
                self._stat_fd = os.open(f"/proc/{self.worker_pid}/stat", os.O_RDONLY | os.O_CLOEXEC)
            fields = os.pread(self._stat_fd, 4096, 0).rsplit(b")", 1)[1].split()
            return (int(fields[11]) + int(fields[12])) / _TICK  # utime, stime (fields 14 and 15 of stat)
        except (OSError, ValueError, IndexError):
            return None

    def evidence(self) -> bytes | None:
        """What the worker wrote on the evidence pipe since the last look (protocol.EVIDENCE), EVIDENCE_MAX bytes at
        most; None where the pipe is closed (the worker closed its end: the submission did, as the worker is alive
        when this is asked) or there is none (b"": nothing)."""
        if self.evidence_fd is None:
            return b""
        got = b""
        try:
            while len(got) < protocol.EVIDENCE_MAX:
                chunk = os.read(self.evidence_fd, protocol.EVIDENCE_MAX - len(got))
                if not chunk:
                    return None
                got += chunk
        except BlockingIOError:
            pass
        except OSError:
            return None
        return got

    def _close_fds(self) -> None:
        for fd in (self._stat_fd, self._scratch_fd, self.evidence_fd):
            if fd is not None:
                try:
                    os.close(fd)
                except OSError:
                    pass
        self._stat_fd = self._scratch_fd = self.evidence_fd = None
        if self.cgroup is not None:
            self.cgroup.close()

    def over_budget(self) -> dict[str, Any] | None:
        """Whether the submission hit its memory or disk limit, asked at every reply: the keeper's watchdog
        also notices, but only a few times a second, so asking here makes the outcome the same on every run."""
        if self.cgroup is not None and self.cgroup.over():
            return {"how": "memory", "limit_mb": self.limits.memory_mb}
        if self.cgroup is not None and self.cgroup.over_kernel():
            return {"how": "kernel", "limit_mb": confine.KERNEL_MB}
        if self.modes.get("scratch") == "tmpfs":
            try:  # the scratch tmpfs exists only in the keeper's mount namespace
                if self._scratch_fd is None:
                    self._scratch_fd = os.open(f"/proc/{self.keeper_pid}/root{self.scratch}",
                                               os.O_RDONLY | os.O_DIRECTORY | os.O_CLOEXEC)
                st = os.fstatvfs(self._scratch_fd)
            except OSError:
                return None
            if st.f_bfree == 0 or st.f_ffree == 0:
                return {"how": "disk", "limit_mb": self.limits.disk_mb}
        return None

    def request(self, op: str, args: dict[str, Any], timeout: float, steps: int = 1) -> Any:
        """steps: how many requests `args` holds (op "seq"): each gets `timeout` (protocol.wait_steps), and a
        WorkerLost or WorkerTimeout says in `.step` which of them was running."""
        if not self.alive:
            raise WorkerLost("the worker is no longer running", self.status)
        started = time.monotonic()
        try:
            deadline = started + timeout  # a worker that stops reading its requests hangs, too
            protocol.send(self.sock, {"op": op, "args": args}, deadline=deadline)
            if steps > 1:
                deadline = protocol.wait_steps(self.sock, started, timeout, steps,
                                               lambda: self.read_scratch("seq.progress", 64))
            reply = protocol.recv(self.sock, deadline=deadline, max_head=MAX_REPLY_HEAD)
        except protocol.MessageTooLarge:
            raise  # nothing was sent: the worker is as it was (proxy.py says why)
        except protocol.ChannelTimeout:
            over = self.over_budget()  # a hoard slowed down at its limit was over budget, not merely slow
            self.last_progress = self.read_scratch("load.progress", 2000)  # gone with the worker's files
            step, began = self._began(started, steps)
            self.kill()
            if over is not None:
                self.status = over
                raise _at(WorkerLost(f"over its {over['how']} budget", over), step) from None
            hang = _at(WorkerTimeout(f"no answer within {timeout:g} s", self.status), step)
            hang.before = max(0.0, began - started)  # the steps before the one that hung (see proxy._raw)
            raise hang from None
        except (protocol.ProtocolError, OSError) as e:
            step = self._step(started, steps)
            # (a load that ended its worker: the statement it was running, proxy.Submission.start skips it)
            self.last_progress = self.read_scratch("load.progress", 2000) if op == "load" else ""
            self.kill()
            if isinstance(e, protocol.ProtocolError) and not isinstance(e, protocol.ChannelClosed):
                raise _at(WorkerLost(str(e), {"how": "protocol", "detail": str(e)[:200]}), step) from None
            raise _at(WorkerLost(str(e), self.status), step) from None
        over = self.over_budget()
        if over is not None:
            step = self._step(started, steps)
            self.kill()
            self.status = over
            raise _at(WorkerLost(f"over its {over['how']} budget", over), step)
        return reply

    def _step(self, started: float, steps: int) -> int:
        """Which step of a sequence sent at `started` the worker was running (read before it is killed)."""
        return self._began(started, steps)[0]

    def _began(self, started: float, steps: int) -> tuple[int, float]:
        """That step, and when it began (`started` for the first)."""
        return protocol.step_reached(lambda: self.read_scratch("seq.progress", 64), started, steps)

    def kill(self, graceful: bool = False, sweep_uid: bool = True) -> dict[str, Any]:
        """Stop the worker and every descendant; returns how the worker ended. sweep_uid=False leaves the other
        processes of the worker's uid alone: only for a worker that ran no student code, beside one that runs."""
        if not self.alive:
            return self.status or {}
        self.alive = False
        return self._kill(graceful, sweep_uid)

    def begin_kill(self) -> None:
        """The first half of kill(): the keeper is told to stop everything, and this returns at once. end_kill()
        waits for it and sweeps the uid: `grade batch` grades the next submission (as its other uid) meanwhile."""
        if not self.alive:
            return
        self.alive = False
        try:
            self.ctrl.sendall(b"kill")
        except OSError:
            pass  # the keeper may have ended already: its report is queued

    def end_kill(self) -> dict[str, Any]:
        return self._kill(False, True)

    def _kill(self, graceful: bool, sweep_uid: bool) -> dict[str, Any]:
        if graceful:  # ask the worker to leave; the keeper then sweeps up whatever it started
            try:
                protocol.send(self.sock, {"op": "exit", "args": {}}, deadline=time.monotonic() + 3.0)
                self.status = self._keeper_status(3.0)
            except (OSError, protocol.ProtocolError):
                pass
        if self.status is None:
            try:
                self.ctrl.sendall(b"kill")
            except OSError:
                pass  # the keeper may have ended already (its watchdog stopped the worker): its report is queued
            try:
                self.status = self._keeper_status(2.0)
            except (OSError, protocol.ProtocolError):
                # The keeper did not answer (only possible when the worker shares our uid): force it.
                for pid in (self.worker_pid, self.keeper_pid):
                    try:
                        os.kill(pid, signal.SIGKILL)
                    except (ProcessLookupError, PermissionError):
                        pass
        if self.uid is not None and sweep_uid:
            kill_uid(self.uid)
        for s in (self.sock, self.ctrl):
            s.close()
        self._close_fds()
        return self.status or {}

    def _keeper_status(self, timeout: float) -> dict[str, Any]:
        reply = protocol.recv(self.ctrl, deadline=time.monotonic() + timeout)
        if not isinstance(reply, dict) or not isinstance(reply.get("status"), dict):
            raise protocol.ProtocolError("bad keeper reply")
        return reply["status"]

    def _scratch_file(self, name: str, limit: int) -> tuple[bytes, int]:
        """read_untrusted of a file in the scratch folder. The tmpfs exists in the keeper's mount namespace only:
        through the folder's descriptor where one is open (over_budget opens it after the first reply), which keeps
        the tmpfs readable once the keeper is gone (a worker that crashed in a sequence: its keeper exits and tears
        the namespace down, and which step it reached was read as the first, red team s12 round 20)."""
        if self.modes.get("scratch") == "tmpfs":
            if self._scratch_fd is not None:
                return read_untrusted(name, limit, dir_fd=self._scratch_fd)
            return read_untrusted(f"/proc/{self.keeper_pid}/root{os.path.join(self.scratch, name)}", limit)
        return read_untrusted(os.path.join(self.scratch, name), limit)

    def read_scratch(self, name: str, limit: int) -> str:
        """The first `limit` characters of a small file the worker wrote in its scratch folder ("" if none)."""
        return self._scratch_file(name, limit)[0].decode("utf-8", "replace")  # the worker may have made it a FIFO

    def output(self, limit: int) -> tuple[str, int]:
        """Raw stdout/stderr the worker wrote at the file-descriptor level (first `limit` bytes, total size)."""
        data, size = self._scratch_file("output.log", limit)
        return data.decode("utf-8", "replace"), size


def _passable(path: str) -> bool:
    """Whether a user other than the owner and group of each folder on the way can pass through to `path`."""
    parts = os.path.realpath(path).split(os.sep)
    for i in range(1, len(parts) + 1):
        try:
            if not os.stat(os.sep.join(parts[:i]) or os.sep).st_mode & 0o001:
                return False
        except OSError:
            return False
    return True


_SCRATCH_BASES: dict[bool, str] = {}


def scratch_base(uid: int | None) -> str:
    """The folder scratch folders are made in: the temporary folder (TMPDIR and the like) where a worker can use
    it, else /tmp or /var/tmp. Never under /dev/shm, of which each submission gets a fresh tmpfs
    (confine.scratch_tmpfs) that would hide a scratch folder made there; for a worker of another uid, never below a
    folder that uid cannot pass (TMPDIR in a mode-700 home), whose scratch folder it could not reach. Either made
    the worker exit before it ran any code, and every submission read as crashing while it loaded."""
    other = uid is not None
    if other not in _SCRATCH_BASES:
        usable = None
        for base in (tempfile.gettempdir(), "/tmp", "/var/tmp"):
            real = os.path.realpath(base)
            if os.path.isdir(real) and not (real + os.sep).startswith("/dev/shm/") and (not other or _passable(real)):
                usable = base
                break
        _SCRATCH_BASES[other] = usable or tempfile.gettempdir()  # none: the worker's start says why (Spawning)
    return _SCRATCH_BASES[other]


def make_scratch(uid: int | None) -> str:
    path = tempfile.mkdtemp(prefix="grade-", dir=scratch_base(uid))
    if uid is not None:
        os.chown(path, uid, uid)
    return path


def remove_stale_scratch(uid: int) -> None:
    """Remove the scratch folders a killed grader process left for `uid` (make_scratch's, owned by that uid): the
    caller holds the uid's lock, so no live grader uses them."""
    import stat
    tmp = scratch_base(uid)
    try:
        names = [n for n in os.listdir(tmp) if n.startswith("grade-")]
    except OSError:
        return
    for name in names:
        path = os.path.join(tmp, name)
        try:
            st = os.lstat(path)
        except OSError:
            continue
        if stat.S_ISDIR(st.st_mode) and st.st_uid == uid:
            remove_scratch(path, uid)


def _empty_tree(path: str) -> None:
    """Remove everything below `path`, however deep (no recursion, one open folder at a time), never following
    links; entries that cannot be removed are left. Runs after every process of the submission has ended."""
    flags = os.O_RDONLY | os.O_DIRECTORY | os.O_NOFOLLOW
    fd = os.open(path, flags)
    names: list[str] = []
    stuck: set[tuple[int, int]] = set()
    try:
        while True:
            child = None
            with os.scandir(fd) as it:
                for e in it:
                    try:
                        if e.is_dir(follow_symlinks=False):
                            st = e.stat(follow_symlinks=False)
                            if (st.st_dev, st.st_ino) not in stuck:
                                child = e.name
                                break
                        else:
                            os.unlink(e.name, dir_fd=fd)
                    except OSError:
                        pass
            if child is not None:
                try:
                    os.chmod(child, 0o700, dir_fd=fd)  # a mode-000 folder of the student's
                except OSError:
                    pass
                try:
                    sub = os.open(child, flags, dir_fd=fd)
                except OSError:
                    st = os.stat(child, dir_fd=fd, follow_symlinks=False)
                    stuck.add((st.st_dev, st.st_ino))
                    continue
                os.close(fd)
                fd = sub
                names.append(child)
                continue
            if not names:
                return
            parent = os.open("..", flags, dir_fd=fd)
            st = os.fstat(fd)
            os.close(fd)
            fd = parent
            name = names.pop()
            try:
                os.rmdir(name, dir_fd=fd)
            except OSError:
                stuck.add((st.st_dev, st.st_ino))
    finally:
        os.close(fd)


def remove_scratch(path: str, uid: int | None = None) -> None:
    """Remove a scratch folder; never raises (a failed cleanup must not cost the result).

    As root the contents are removed by a child running as the worker's uid: whatever the submission left
    (links, odd modes, a 1,500-deep chain of folders), root never walks the student's tree itself.
    """
    try:
        try:  # the usual case: the files were on the worker's own tmpfs, gone with its mount namespace
            os.rmdir(path)
            return
        except FileNotFoundError:
            return
        except OSError:
            pass
        if uid is not None and is_root():
            pid = os.fork()
            if pid == 0:
                try:
                    os.setgroups([])
                    os.setgid(uid)
                    os.setuid(uid)
                    _empty_tree(path)
                finally:
                    os._exit(0)
            os.waitpid(pid, 0)
        _empty_tree(path)  # what is left (root's own files, or everything when not root)
        os.rmdir(path)
    except Exception:
        try:
            shutil.rmtree(path, ignore_errors=True)
        except Exception:
            pass
