"""What a worker may touch beyond its rlimits: a Landlock file-system/network/signal sandbox, and a watchdog that
holds a whole submission (the worker and every process it starts) to one memory, one disk and one CPU budget.

Both run in the zygote's children only (see sandbox.py): `landlock()` in the worker right before it serves,
`Watchdog` in the keeper. Nothing here imports torch.

Landlock (Linux >= 5.13, no privileges needed) is what keeps a worker away from the reference, the hidden
checks, the project's git history, the submissions folder and the results folder even when the grader does not
run as root. Where the kernel lacks it, `landlock()` returns 0 and only the uid separation (root) is left.
"""
from __future__ import annotations

import ctypes
import os
import sys
import time
from pathlib import Path
from typing import Any

_libc = ctypes.CDLL(None, use_errno=True)
_libc.syscall.restype = ctypes.c_long
_HZ = os.sysconf("SC_CLK_TCK")

PR_SET_NO_NEW_PRIVS = 38
_CREATE_RULESET, _ADD_RULE, _RESTRICT_SELF = 444, 445, 446  # the same numbers on every architecture
_RULE_PATH_BENEATH = 1
_CREATE_RULESET_VERSION = 1

# access rights, in kernel bit order
EXECUTE, WRITE_FILE, READ_FILE, READ_DIR, REMOVE_DIR, REMOVE_FILE, MAKE_CHAR, MAKE_DIR, MAKE_REG, MAKE_SOCK, \
    MAKE_FIFO, MAKE_BLOCK, MAKE_SYM, REFER, TRUNCATE, IOCTL_DEV = (1 << i for i in range(16))
_FILE_ONLY = EXECUTE | WRITE_FILE | READ_FILE | TRUNCATE | IOCTL_DEV  # the rights a rule on a file may carry
NET_BIND_TCP, NET_CONNECT_TCP = 1, 2
SCOPE_ABSTRACT_UNIX_SOCKET, SCOPE_SIGNAL = 1, 2

# System folders a Python process reads (and may execute from); everything else is out of reach.
SYSTEM_READ = ("/usr", "/lib", "/lib64", "/lib32", "/bin", "/sbin", "/etc", "/opt", "/proc", "/sys")


class _RulesetAttr(ctypes.Structure):
    _fields_ = [("handled_access_fs", ctypes.c_uint64), ("handled_access_net", ctypes.c_uint64),
                ("scoped", ctypes.c_uint64)]


class _PathBeneath(ctypes.Structure):
    _pack_ = 1
    _fields_ = [("allowed_access", ctypes.c_uint64), ("parent_fd", ctypes.c_int32)]


def _syscall(*args: Any) -> int:
    return _libc.syscall(*[ctypes.c_long(a) if isinstance(a, int) else a for a in args])


def abi_version() -> int:
    """The kernel's Landlock ABI version; 0 when Landlock is missing or disabled."""
    v = _syscall(_CREATE_RULESET, None, 0, _CREATE_RULESET_VERSION)
    return int(v) if v > 0 else 0


def _inside(path: str, folder: str) -> bool:
    return path == folder or path.startswith(folder.rstrip(os.sep) + os.sep)


def _around(folder: str, root: str, keep: set[str]) -> list[str]:
    """The entries of `folder` except the branch that leads to `root`; folders of `keep` inside root stay."""
    out = []
    try:
        names = sorted(os.listdir(folder))
    except OSError:
        return out
    for name in names:
        child = os.path.join(folder, name)
        if not _inside(root, child):
            out.append(child)
        elif child != root:
            out.extend(_around(child, root, keep))
        else:
            out.extend(sorted(k for k in keep if _inside(k, root)))
    return out


def read_paths(project_root: str) -> list[str]:
    """What a worker may read: the system folders and Python's own (interpreter, standard library, packages).

    A project checkout (the reference, the hidden checks, .git, the corpora) is left out, even where it lies
    inside an allowed folder (e.g. /opt/grader), except for a virtual environment inside it. An engine that is
    an installed package (a student's `grade check` bundle) lies inside Python's folders and holds no secrets.
    """
    root = os.path.realpath(project_root)
    prefixes = {os.path.realpath(v) for v in (sys.prefix, sys.exec_prefix, sys.base_prefix, sys.base_exec_prefix)}
    checkout = not any(_inside(root, v) for v in prefixes)
    wanted = {*SYSTEM_READ, *prefixes, os.path.dirname(sys.executable), *(p for p in sys.path if p)}
    out: set[str] = set()
    for p in wanted:
        real = os.path.realpath(p)
        if not os.path.exists(real):
            continue
        if checkout and _inside(real, root):
            if any(_inside(real, v) for v in prefixes):
                out.add(real)  # the virtual environment inside the checkout
        elif checkout and _inside(root, real):
            out.update(_around(real, root, prefixes))  # e.g. /opt when the checkout is /opt/grader
        else:
            out.add(real)
    return sorted(out)


def landlock(scratch: str, read_paths: list[str]) -> int:
    """Confine this process and its future children: read (and execute) only `read_paths` (see read_paths()),
    write only in `scratch` (and existing device files such as /dev/null), no TCP, no signals to or abstract
    sockets of processes outside the sandbox. Returns the ABI version applied, 0 if none was."""
    abi = abi_version()
    _libc.prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0)  # also a precondition of Landlock for an unprivileged process
    if abi < 1:
        return 0
    fs = (1 << 13) - 1
    if abi >= 2:
        fs |= REFER
    if abi >= 3:
        fs |= TRUNCATE
    if abi >= 5:
        fs |= IOCTL_DEV
    attr = _RulesetAttr(fs, NET_BIND_TCP | NET_CONNECT_TCP if abi >= 4 else 0,
                        SCOPE_ABSTRACT_UNIX_SOCKET | SCOPE_SIGNAL if abi >= 6 else 0)
    size = 8 if abi < 4 else 16 if abi < 6 else 24
    ruleset = _syscall(_CREATE_RULESET, ctypes.byref(attr), size, 0)
    if ruleset < 0:
        return 0
    read = EXECUTE | READ_FILE | READ_DIR
    rules = [(p, read) for p in read_paths]
    rules.append(("/dev", read | WRITE_FILE | IOCTL_DEV))  # /dev/null, /dev/urandom, GPUs; no new files
    rules.append((scratch, fs))
    try:
        for path, access in rules:
            try:
                fd = os.open(path, os.O_PATH | os.O_CLOEXEC)
            except OSError:
                continue
            try:
                if not os.path.isdir(f"/proc/self/fd/{fd}"):
                    access &= _FILE_ONLY
                rule = _PathBeneath(access & fs, fd)
                _syscall(_ADD_RULE, ruleset, _RULE_PATH_BENEATH, ctypes.byref(rule), 0)
            finally:
                os.close(fd)
        if _syscall(_RESTRICT_SELF, ruleset, 0) != 0:
            return 0
    finally:
        os.close(ruleset)
    return abi


# ---------------------------------------------------------------------------------------------- watchdog

def proc_stats():
    """(pid, fields of /proc/pid/stat after the command name) for every live process; fields[1] is the ppid."""
    for entry in os.listdir("/proc"):
        if not entry.isdigit():
            continue
        try:
            with open(f"/proc/{entry}/stat", "rb") as f:
                stat = f.read()
        except OSError:
            continue
        yield int(entry), stat[stat.rfind(b")") + 2:].split()


def _process_tree(root: int) -> tuple[list[int], int]:
    """Every descendant of `root` (not root itself), and the CPU time in clock ticks that they and the children
    they reaped used, plus what root reaped: a total that only grows while processes come and go."""
    kids: dict[int, list[int]] = {}
    ticks: dict[int, int] = {}
    for pid, fields in proc_stats():
        if len(fields) > 14:
            kids.setdefault(int(fields[1]), []).append(pid)
            ticks[pid] = sum(int(x) for x in fields[11:15])  # utime, stime, cutime, cstime
    out, todo = [], [root]
    while todo:
        for k in kids.get(todo.pop(), ()):
            out.append(k)
            todo.append(k)
    own = os.times()  # root's reaped children (orphans re-parented to it), in seconds
    return out, sum(ticks.get(p, 0) for p in out) + round((own.children_user + own.children_system) * _HZ)


def _status_kb(pid: int, key: bytes) -> int:
    try:
        with open(f"/proc/{pid}/status", "rb") as f:
            for line in f:
                if line.startswith(key):
                    return int(line.split()[1])
    except (OSError, ValueError, IndexError):
        pass
    return 0


def _pss_anon_kb(pid: int) -> int:
    """Anonymous memory of `pid`, pages shared with other processes (e.g. the zygote's) counted proportionally."""
    try:
        with open(f"/proc/{pid}/smaps_rollup", "rb") as f:
            text = f.read()
    except OSError:
        return 0
    for key in (b"Pss_Anon:", b"Pss:"):
        at = text.find(key)
        if at >= 0:
            try:
                return int(text[at + len(key):].split()[0])
            except (ValueError, IndexError):
                return 0
    return 0


def _disk_usage(path: str, max_entries: int) -> tuple[int, int]:
    """Bytes allocated below `path` and the number of entries seen (counting stops at max_entries)."""
    used, seen, todo = 0, 0, [path]
    while todo and seen < max_entries:
        try:
            with os.scandir(todo.pop()) as it:
                for e in it:
                    seen += 1
                    try:
                        st = e.stat(follow_symlinks=False)
                    except OSError:
                        continue
                    used += st.st_blocks * 512
                    if e.is_dir(follow_symlinks=False):
                        todo.append(e.path)
                    if seen >= max_entries:
                        break
        except OSError:
            continue
    return used, seen


class Watchdog:
    """Run by the keeper a few times a second: one memory budget for all of a submission's processes together
    (each process alone is already held by RLIMIT_DATA), one disk budget for its scratch folder, and one CPU
    budget (a core and a quarter, averaged over a few seconds: the worker itself is single-threaded, so only
    threads or processes that spin get there, and they would starve the submissions graded next to it)."""

    MAX_ENTRIES = 20000
    CPU_WINDOW = 5.0  # seconds: long enough that a burst (a fork bomb that gives up) is not a hog

    def __init__(self, memory_mb: int, disk_mb: int, scratch: str, cpu_cores: float = 1.25):
        self.memory_mb, self.disk_mb, self.scratch, self.cpu_cores = memory_mb, disk_mb, scratch, cpu_cores
        # Pages inherited from the zygote (torch and all) are shared, not the submission's: allow for them once.
        self.memory_kb = memory_mb * 1024 + _status_kb(os.getpid(), b"RssAnon:")
        self.cpu: list[tuple[float, int]] = []  # (time, total ticks) over the last CPU_WINDOW

    def check(self) -> dict[str, Any] | None:
        """None while within budget, else how the submission went over (the keeper then kills it)."""
        procs, ticks = _process_tree(os.getpid())
        if len(procs) > 1:  # a single process cannot pass RLIMIT_DATA; only count when it has company
            # RssAnon counts every shared page in full, so it is an upper bound worth refining only when high.
            if sum(_status_kb(p, b"RssAnon:") for p in procs) > self.memory_kb:
                used = sum(_pss_anon_kb(p) for p in procs)
                if used > self.memory_kb:
                    return {"how": "memory", "limit_mb": self.memory_mb, "processes": len(procs)}
        now = time.monotonic()
        self.cpu = [(t, n) for t, n in self.cpu if now - t <= self.CPU_WINDOW + 0.3] + [(now, ticks)]
        t0, n0 = self.cpu[0]
        if now - t0 >= self.CPU_WINDOW and (ticks - n0) / _HZ / (now - t0) > self.cpu_cores:
            return {"how": "cpu", "cores": round((ticks - n0) / _HZ / (now - t0), 1), "limit": self.cpu_cores,
                    "processes": len(procs)}
        used, seen = _disk_usage(self.scratch, self.MAX_ENTRIES)
        if used > self.disk_mb * 1024 * 1024 or seen >= self.MAX_ENTRIES:
            return {"how": "disk", "limit_mb": self.disk_mb, "files": seen}
        return None


def project_root() -> str:
    return str(Path(__file__).resolve().parent.parent)
