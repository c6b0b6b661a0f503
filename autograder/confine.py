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
from typing import Any, Callable, Iterable

try:
    _libc = ctypes.CDLL(None, use_errno=True)
    _libc.syscall.restype = ctypes.c_long
except (OSError, TypeError, AttributeError):  # Windows (no C library by None), macOS (no syscall): plainworker.py
    _libc = None
_HZ = os.sysconf("SC_CLK_TCK") if hasattr(os, "sysconf") else 100

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

# The device files a worker that sees no GPU may open (read and write).
DEVICES = ("null", "zero", "full", "random", "urandom")
# The GPU's device files under /dev, by the start of their names: NVIDIA's (nvidia0, nvidiactl, nvidia-uvm,
# nvidia-uvm-tools, nvidia-modeset, the folder nvidia-caps) and ROCm's (kfd, the folder dri).
GPU_DEVICES = ("nvidia", "kfd", "dri")


def gpu_device_files(dev: str = "/dev") -> list[str]:
    """The GPU device files and folders under `dev` (see GPU_DEVICES), as the worker's Landlock rules name them."""
    try:
        names = os.listdir(dev)
    except OSError:
        return []
    return sorted(os.path.join(dev, n) for n in names if n.startswith(GPU_DEVICES))


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


# The kernel keyring calls (add_key, request_key, keyctl), per architecture: (AUDIT_ARCH_*, syscall numbers).
# A uid's keyrings belong to no namespace that the sandbox makes, outlive every process, and are not files
# (Landlock does not see them): a key a submission leaves is read by the next one under the same worker uid.
_KEYRING_CALLS = {"x86_64": (0xC000003E, (248, 249, 250)), "aarch64": (0xC00000B7, (217, 218, 219))}
# socket, socketpair and io_uring_setup, per architecture. A Unix socket named by a path is reached through the file
# system, not the network namespace, and Landlock (ABI <= 7) does not see a connect() to one: a worker connected to
# a world-writable socket a root process of the grading machine listened on (red team s9: a host service such as
# D-Bus, a database or a notebook server). A vsock reaches the hypervisor host, which no namespace covers either.
# So the worker may not make an AF_UNIX or AF_VSOCK socket (a socketpair() of a stream or seqpacket still works; a
# datagram pair could be sent through to any path), nor an io_uring (whose IORING_OP_SOCKET and _CONNECT no filter sees).
_SOCKET_CALLS = {"x86_64": (41, 53, 425), "aarch64": (198, 199, 425)}
# connect, per architecture: where torch is built for a GPU a worker may make a Unix stream socket, since CUDA's
# driver does so as it starts (it looks for the MPS daemon's), but connects it nowhere (ENOENT: no daemon there).
_CONNECT_CALL = {"x86_64": 42, "aarch64": 203}
_AF_UNIX, _AF_VSOCK, _SOCK_STREAM, _SOCK_SEQPACKET = 1, 40, 1, 5
PR_SET_SECCOMP, SECCOMP_MODE_FILTER = 22, 2


class _SockFilter(ctypes.Structure):
    _fields_ = [("code", ctypes.c_ushort), ("jt", ctypes.c_ubyte), ("jf", ctypes.c_ubyte), ("k", ctypes.c_uint)]


class _SockFprog(ctypes.Structure):
    _fields_ = [("len", ctypes.c_ushort), ("filter", ctypes.POINTER(_SockFilter))]


def _assemble(prog: list[tuple]) -> list[tuple[int, int, int, int]]:
    """Classic BPF from (code, jump if true, jump if false, k) rows whose jumps name labels (("label", name) rows
    mark them); returns the rows with relative jump offsets."""
    at, rows = {}, []
    for row in prog:
        if row[0] == "label":
            at[row[1]] = len(rows)
        else:
            rows.append(row)
    out = []
    for i, (code, jt, jf, k) in enumerate(rows):
        rel = [at[j] - i - 1 if isinstance(j, str) else j for j in (jt, jf)]
        if not all(0 <= r <= 255 for r in rel):  # classic BPF jumps only forward, at most 255 rows
            raise ValueError(f"seccomp row {i}: jump {rel} out of range")
        out.append((code, rel[0], rel[1], k))
    return out


def deny_keyrings(gpu_driver: bool = False) -> bool:
    """A seccomp filter for this process and its future children: the kernel keyring calls fail with EPERM, and
    so does every call made through another architecture's entry (the 32-bit ABIs number them differently); an
    AF_UNIX or AF_VSOCK socket, a socketpair other than a stream or seqpacket one (a datagram or raw pair) and an
    io_uring fail with EACCES (see _SOCKET_CALLS).
    Needs no_new_privs (set by landlock()). Returns whether the filter is in place: False where the architecture is
    not known or where the kernel or container has no seccomp filters (EINVAL, ENOSYS, EPERM, EACCES); an OSError
    where it has them but could not install this one (ENOMEM: the worker must not run unconfined).

    gpu_driver: torch is built for a GPU. CUDA's driver makes a Unix stream socket as it starts (to look for the MPS
    daemon) and fails to start where that is refused (error 304 on an H100: every CUDA check was the grader's
    failure, and a worker that sees no GPU printed the error where `torch.cuda.is_available()` is asked). Such a
    worker may make a stream (or seqpacket) one, but every connect() fails with ENOENT, as where no daemon
    listens: it reaches nothing."""
    import errno
    import platform
    known = _KEYRING_CALLS.get(platform.machine())
    if _libc is None or known is None:
        return False
    arch, calls = known
    sock, pair, uring = _SOCKET_CALLS[platform.machine()]
    ld_abs, jeq, jge, ret, and_k = 0x20, 0x15, 0x35, 0x06, 0x54
    allow, deny, refuse = 0x7FFF0000, 0x00050000 | errno.EPERM, 0x00050000 | errno.EACCES
    nowhere = 0x00050000 | errno.ENOENT
    arg = lambda i: 16 + 8 * i  # noqa: E731 - seccomp_data.args[i], its low 32 bits (little-endian)
    prog = [(ld_abs, 0, 0, 4),  # seccomp_data.arch
            (jeq, 0, "deny", arch),
            (ld_abs, 0, 0, 0),  # seccomp_data.nr
            (jge, "deny", 0, 0x40000000)]  # x86's x32 ABI: the same calls with this bit set
    prog += [(jeq, "deny", 0, nr) for nr in calls]
    if gpu_driver:
        prog += [(jeq, "nowhere", 0, _CONNECT_CALL[platform.machine()])]
    prog += [(jeq, "refuse", 0, uring), (jeq, "socket", 0, sock), (jeq, "pair", 0, pair), (ret, 0, 0, allow),
             ("label", "socket"), (ld_abs, 0, 0, arg(0)), (jeq, "refuse", 0, _AF_VSOCK)]
    # Unix sockets: only the connected kinds, stream and seqpacket, whose sendto() cannot name a path. A list of the
    # kinds allowed, not of those refused: SOCK_RAW of AF_UNIX is a datagram socket under another name (af_unix.c),
    # and a pair of them sent to a socket of the machine where SOCK_DGRAM was refused (red team s15).
    connected = lambda ok: [(ld_abs, 0, 0, arg(1)), (and_k, 0, 0, 0xF), (jeq, ok, 0, _SOCK_STREAM),  # noqa: E731
                            (jeq, ok, "refuse", _SOCK_SEQPACKET)]
    if gpu_driver:  # a Unix socket, but no datagram one (sendto() names any path)
        prog += [(jeq, 0, "allowed", _AF_UNIX)] + connected("allowed")
    else:
        prog += [(jeq, "refuse", "allowed", _AF_UNIX)]
    prog += [("label", "allowed"), (ret, 0, 0, allow),
             ("label", "pair")] + connected("pair allowed") + [("label", "pair allowed"), (ret, 0, 0, allow),
             ("label", "deny"), (ret, 0, 0, deny),
             ("label", "refuse"), (ret, 0, 0, refuse),
             ("label", "nowhere"), (ret, 0, 0, nowhere)]
    rows = _assemble(prog)
    filters = (_SockFilter * len(rows))(*[_SockFilter(*ins) for ins in rows])
    fprog = _SockFprog(len(rows), filters)
    _libc.prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0)
    if _libc.prctl(PR_SET_SECCOMP, SECCOMP_MODE_FILTER, ctypes.byref(fprog), 0, 0) != 0:
        err = ctypes.get_errno()
        if err in (errno.EINVAL, errno.ENOSYS, errno.EPERM, errno.EACCES):
            # No seccomp filters here (a kernel built without them, a container that forbids installing one): the
            # documented fallback, reported as keyrings_denied False, as where the architecture is not known.
            return False
        raise OSError(err, f"the seccomp filter could not be installed: {os.strerror(err)}")
    return True


def landlock(scratch: str, read_paths: list[str], gpu: bool = False) -> int:
    """Confine this process and its future children: read (and execute) only `read_paths` (see read_paths()),
    write only in `scratch` (and existing device files such as /dev/null), no TCP, no signals to or abstract
    sockets of processes outside the sandbox. Returns the ABI version applied, 0 where the kernel has no Landlock;
    raises OSError where it has one but the sandbox could not be applied.

    gpu: torch was built for a GPU. The NVIDIA driver writes (and truncates) a file under /proc as CUDA starts:
    without that right every worker's CUDA failed to start (cudaGetDeviceCount: error 304, "OS call failed"),
    seen on an H100. /proc holds no file to create, and what a worker may write there the kernel decides by its
    own uid (its own process's settings)."""
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
        # The kernel has Landlock but would not make a ruleset (ENFILE: the machine's file table full, e.g. of a
        # submission's files beside; EMFILE, ENOMEM). Going on unconfined would give the submission every file its
        # uid can read and write: the worker's start fails instead, as the grader's failure (red team s9).
        err = ctypes.get_errno()
        raise OSError(err, f"Landlock (ABI {abi}) could not make a ruleset: {os.strerror(err)}")
    read = EXECUTE | READ_FILE | READ_DIR
    rules = [(p, read) for p in read_paths]
    # Only these device files. Opening /dev/ptmx (even read-only) allocates one of the machine's ptys (4096 in
    # all): a worker held them, and no terminal could be opened on the machine (red team s9); /dev/fuse and
    # /dev/net/tun opened too.
    rules.append(("/dev", READ_DIR))
    rules += [(f"/dev/{name}", READ_FILE | WRITE_FILE | IOCTL_DEV) for name in DEVICES]
    if gpu:
        # and the GPU's (their names and number vary by driver: see GPU_DEVICES). Where none is found by those
        # names, the whole of /dev as before, so that an unknown driver's GPU still works.
        found = gpu_device_files()
        rules += [(path, read | WRITE_FILE | IOCTL_DEV) for path in found] or [("/dev", read | WRITE_FILE | IOCTL_DEV)]
        rules.append(("/proc", read | WRITE_FILE | TRUNCATE | IOCTL_DEV))
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
            err = ctypes.get_errno()
            raise OSError(err, f"Landlock (ABI {abi}) could not be applied: {os.strerror(err)}")
    finally:
        os.close(ruleset)
    return abi


# ---------------------------------------------------------------------------------------------- watchdog

def proc_stats(pids: Iterable[int] | None = None):
    """(pid, fields of /proc/pid/stat after the command name) for every live process, or for just `pids` (those
    that have ended are left out); fields[1] is the ppid."""
    for pid in (int(e) for e in os.listdir("/proc") if e.isdigit()) if pids is None else pids:
        try:
            with open(f"/proc/{pid}/stat", "rb") as f:
                stat = f.read()
        except OSError:
            continue
        yield pid, stat[stat.rfind(b")") + 2:].split()


def _process_tree(root: int, members: list[int] | None = None) -> tuple[list[int], int]:
    """Every descendant of `root` (not root itself), and the CPU time in clock ticks that they and the children
    they reaped used, plus what root reaped: a total that only grows while processes come and go.

    members: every process that can be a descendant (a memory cgroup's processes, which cannot leave it), so
    only their /proc entries are read instead of every process's on the machine."""
    kids: dict[int, list[int]] = {}
    ticks: dict[int, int] = {}
    for pid, fields in proc_stats(members):
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


def _smaps_kb(pid: int, keys: tuple[bytes, ...]) -> int:
    """Sum of the given fields of /proc/pid/smaps_rollup (kB)."""
    try:
        with open(f"/proc/{pid}/smaps_rollup", "rb") as f:
            text = f.read()
    except OSError:
        return 0
    total = 0
    for key in keys:
        at = text.find(key)
        if at >= 0:
            try:
                total += int(text[at + len(key):].split()[0])
            except (ValueError, IndexError):
                pass
    return total


def _sysv_unattached_kb(own_namespace: bool, pids: set[int], uid: int | None) -> int:
    """SysV segments no process has attached (attached ones are in the processes' Pss_Shmem already). With a
    private IPC namespace every segment listed is the submission's; otherwise those its processes or uid made."""
    try:
        with open("/proc/sysvipc/shm") as f:
            rows = f.read().splitlines()[1:]
    except OSError:
        return 0
    total = 0
    for row in rows:
        v = row.split()
        try:  # key shmid perms size cpid lpid nattch uid gid cuid cgid atime dtime ctime rss swap
            cpid, nattch, cuid, rss = int(v[4]), int(v[6]), int(v[9]), int(v[14])
        except (IndexError, ValueError):
            continue
        if nattch == 0 and (own_namespace or cpid in pids or (uid is not None and cuid == uid)):
            total += rss // 1024 if rss else 0
    return total


def _held_files(pids: list[int]) -> tuple[int, int]:
    """(kB in memfds and deleted tmpfs/shm files, bytes in other deleted files) held open by `pids`: memory and
    disk that no folder scan sees. Each file is counted once, whichever process holds it."""
    seen: set[tuple[int, int]] = set()
    mem = disk = 0
    for pid in pids:
        try:
            fds = os.listdir(f"/proc/{pid}/fd")
        except OSError:
            continue
        for fd in fds:
            path = f"/proc/{pid}/fd/{fd}"
            try:
                target = os.readlink(path)
                if not (target.startswith("/memfd:") or target.endswith(" (deleted)")):
                    continue
                st = os.stat(path)
            except OSError:
                continue
            if (st.st_dev, st.st_ino) in seen or not (st.st_mode & 0o170000 == 0o100000):
                continue
            seen.add((st.st_dev, st.st_ino))
            if target.startswith(("/memfd:", "/dev/shm/", "/SYSV")):
                mem += st.st_blocks // 2
            else:
                disk += st.st_blocks * 512
    return mem, disk


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
    """Run by the keeper a few times a second: one memory budget for all of a submission's processes together,
    one disk budget for its scratch folder, and one CPU budget (a core and a quarter, averaged over a few
    seconds: the worker itself is single-threaded, so only threads or processes that spin get there, and they
    would starve the submissions graded next to it).

    Memory: with a cgroup (see MemoryCgroup) the kernel counts everything and the watchdog only asks whether
    the limit was hit. Polled otherwise: proportional anonymous and shared memory (shared mmap, attached SysV,
    mapped memfds) of every process, plus unattached SysV segments and memfds held only by a descriptor.
    Disk: a tmpfs scratch is limited by the kernel (nothing to poll); a plain folder is scanned, and deleted
    files still held open are added."""

    MAX_ENTRIES = 20000
    CPU_WINDOW = 5.0  # seconds: long enough that a burst (a fork bomb that gives up) is not a hog

    def __init__(self, memory_mb: int, disk_mb: int, scratch: str, cpu_cores: float = 1.25,
                 cgroup: "MemoryCgroup | None" = None, tmpfs: bool = False, own_ipc: bool = False,
                 uid: int | None = None):
        self.memory_mb, self.disk_mb, self.scratch, self.cpu_cores = memory_mb, disk_mb, scratch, cpu_cores
        self.cgroup, self.tmpfs, self.own_ipc, self.uid = cgroup, tmpfs, own_ipc, uid
        # Pages inherited from the zygote (torch and all) are shared, not the submission's: allow for them once.
        self.memory_kb = memory_mb * 1024 + _status_kb(os.getpid(), b"RssAnon:")
        self.cpu: list[tuple[float, int]] = []  # (time, total ticks) over the last CPU_WINDOW

    def _polled_memory_kb(self, procs: list[int]) -> int:
        # RssAnon + RssShmem count every shared page in full: an upper bound, refined only when high.
        rough = sum(_status_kb(p, b"RssAnon:") + _status_kb(p, b"RssShmem:") for p in procs)
        extra = _sysv_unattached_kb(self.own_ipc, set(procs), self.uid) + _held_files(procs)[0]
        if rough + extra <= self.memory_kb:
            return rough + extra
        return sum(_smaps_kb(p, (b"Pss_Anon:", b"Pss_Shmem:")) for p in procs) + extra

    def check(self) -> dict[str, Any] | None:
        """None while within budget, else how the submission went over (the keeper then kills it)."""
        members = self.cgroup.procs() if self.cgroup is not None else None
        procs, ticks = _process_tree(os.getpid(), members)
        if self.cgroup is not None:
            if self.cgroup.over():
                return {"how": "memory", "limit_mb": self.memory_mb, "processes": len(procs)}
            if self.cgroup.over_kernel():
                return {"how": "kernel", "limit_mb": KERNEL_MB, "processes": len(procs)}
        elif procs and self._polled_memory_kb(procs) > self.memory_kb:
            return {"how": "memory", "limit_mb": self.memory_mb, "processes": len(procs)}
        now = time.monotonic()
        self.cpu = [(t, n) for t, n in self.cpu if now - t <= self.CPU_WINDOW + 0.3] + [(now, ticks)]
        t0, n0 = self.cpu[0]
        if now - t0 >= self.CPU_WINDOW and (ticks - n0) / _HZ / (now - t0) > self.cpu_cores:
            return {"how": "cpu", "cores": round((ticks - n0) / _HZ / (now - t0), 1), "limit": self.cpu_cores,
                    "processes": len(procs)}
        if self.tmpfs:
            try:
                st = os.statvfs(self.scratch)
                if st.f_bfree == 0 or st.f_ffree == 0:  # full: the kernel refuses more, the submission stops
                    return {"how": "disk", "limit_mb": self.disk_mb, "files": st.f_files - st.f_ffree}
            except OSError:
                pass
        else:
            used, seen = _disk_usage(self.scratch, self.MAX_ENTRIES)
            used += _held_files(procs)[1]
            if used > self.disk_mb * 1024 * 1024 or seen >= self.MAX_ENTRIES:
                return {"how": "disk", "limit_mb": self.disk_mb, "files": seen}
        return None


def project_root() -> str:
    return str(Path(__file__).resolve().parent.parent)


# ---------------------------------------------------------------------------------------------- namespaces, mounts

CLONE_NEWNS, CLONE_NEWUTS, CLONE_NEWIPC, CLONE_NEWNET = 0x00020000, 0x04000000, 0x08000000, 0x40000000
MS_RDONLY, MS_NOSUID, MS_NODEV, MS_REMOUNT, MS_BIND, MS_REC, MS_PRIVATE = 1, 2, 4, 32, 4096, 16384, 1 << 18
_libc.mount.argtypes = [ctypes.c_char_p, ctypes.c_char_p, ctypes.c_char_p, ctypes.c_ulong, ctypes.c_char_p]
_libc.unshare.argtypes = [ctypes.c_int]


def _check(ret: int, what: str) -> None:
    if ret != 0:
        err = ctypes.get_errno()
        raise OSError(err, f"{what}: {os.strerror(err)}")


def mount(source: str | None, target: str, fstype: str | None, flags: int = 0, data: str | None = None) -> None:
    enc = lambda s: None if s is None else os.fsencode(s)  # noqa: E731
    _check(_libc.mount(enc(source), enc(target), enc(fstype), flags, enc(data)), f"mount {target}")


def private_namespaces() -> str:
    """Give this process (the keeper) and all it forks their own IPC, network, mount and UTS namespaces (root).

    SysV and POSIX IPC objects, abstract Unix sockets, network interfaces and mounts made inside then belong to
    the submission alone and are destroyed by the kernel when its last process ends. Returns the namespaces
    obtained ("ipc,net,mnt,uts" when all), each tried alone where the kernel refuses them together (a container
    may allow some), or "none" (not root, or no namespace at all).

    Not root, nothing is tried: a user namespace would be needed, and a half-made one (uid map refused) would
    leave the worker unable to use its own files; a non-root run is a student checking their own code."""
    if os.geteuid() != 0:
        return "none"
    names = (("ipc", CLONE_NEWIPC), ("net", CLONE_NEWNET), ("mnt", CLONE_NEWNS), ("uts", CLONE_NEWUTS))
    if _libc.unshare(CLONE_NEWIPC | CLONE_NEWNET | CLONE_NEWNS | CLONE_NEWUTS) == 0:
        got = [n for n, _ in names]
    else:
        got = [n for n, flag in names if _libc.unshare(flag) == 0]
    if "mnt" in got:
        try:
            # Mounts made from here on must not propagate back to the grader's namespace.
            mount(None, "/", None, MS_REC | MS_PRIVATE)
        except OSError:
            got.remove("mnt")  # the namespace exists but must not be used for mounts
    return ",".join(got) or "none"


def scratch_tmpfs(scratch: str, size_mb: int, uid: int | None, max_entries: int) -> bool:
    """Mount a size-limited tmpfs on `scratch` (in this process's private mount namespace), owned by the worker.

    Everything the submission writes counts against `size_mb`, unlinked-but-open files included, and a full
    scratch cannot touch the disk that holds the results. It disappears with the namespace."""
    owner = uid if uid is not None else os.geteuid()
    gid = uid if uid is not None else os.getegid()
    opts = f"size={size_mb}m,nr_inodes={max_entries},mode=0700,uid={owner},gid={gid}"
    try:
        mount("tmpfs", scratch, "tmpfs", MS_NOSUID | MS_NODEV, opts)
    except OSError:
        return False
    # POSIX shared memory (/dev/shm) of its own, so that nothing it puts there is seen by or outlives it.
    try:
        mount("tmpfs", "/dev/shm", "tmpfs", MS_NOSUID | MS_NODEV, f"size={size_mb}m,nr_inodes=1000,mode=1777")
    except OSError:
        pass
    return True


def _traversable(path: str, uid: int) -> bool:
    try:
        st = os.stat(path)
    except OSError:
        return True  # nothing to expose
    if st.st_uid == uid:
        return bool(st.st_mode & 0o100)
    return bool(st.st_mode & 0o001)


def expose_python(paths: list[str], uid: int) -> list[str]:
    """Make Python's own folders reachable by the worker's uid when one of their ancestors is not (e.g. an
    interpreter installed under /root, mode 700, as on Gradescope). In this private mount namespace, the first
    blocked ancestor is covered by an empty tmpfs in which only the paths to those folders exist, each a
    read-only bind mount of the real folder: nothing else of the hidden directory becomes visible, and
    Landlock still decides what may be read. Returns the folders exposed. Root only."""
    exposed: list[str] = []
    for _ in range(4):  # a bound folder may itself hold a blocked folder on the way to another path
        blocked: dict[str, list[str]] = {}
        for p in sorted(set(paths)):
            parts = p.split(os.sep)
            for i in range(2, len(parts) + 1):
                anc = os.sep.join(parts[:i]) or os.sep
                if not _traversable(anc, uid):
                    if anc != p:  # the folder itself unreadable: binding it elsewhere would not help
                        blocked.setdefault(anc, []).append(p)
                    break
        if not blocked:
            break
        for anc, inner in blocked.items():
            fds = {}
            # A folder inside another one bound here comes along with it.
            inner = [p for p in inner if not any(q != p and _inside(p, q) for q in inner)]
            for p in inner:
                try:
                    fds[p] = os.open(p, os.O_PATH | os.O_DIRECTORY | os.O_CLOEXEC)
                except OSError:
                    pass
            try:
                mount("tmpfs", anc, "tmpfs", MS_NOSUID | MS_NODEV, "size=1m,nr_inodes=4096,mode=0755")
                for p, fd in fds.items():
                    os.makedirs(p, 0o755, exist_ok=True)
                    mount(f"/proc/self/fd/{fd}", p, None, MS_BIND | MS_REC)
                    mount(None, p, None, MS_REMOUNT | MS_BIND | MS_RDONLY | MS_NOSUID | MS_NODEV)
                    exposed.append(p)
            except OSError:
                pass
            finally:
                for fd in fds.values():
                    os.close(fd)
        paths = [p for p in paths if not any(_inside(p, e) for e in exposed)]
    return exposed


# ---------------------------------------------------------------------------------------------- memory cgroup

def _own_cgroup() -> tuple[str, str] | None:
    """(folder of this process's memory cgroup, "cgroup-v1" or "cgroup-v2"), if the controller is mounted."""
    try:
        with open("/proc/self/cgroup") as f:
            lines = f.read().splitlines()
    except OSError:
        return None
    for line in lines:
        _, controllers, path = line.split(":", 2)
        if "memory" in controllers.split(","):
            base = "/sys/fs/cgroup/memory"
            if os.path.exists(os.path.join(base, "memory.limit_in_bytes")):
                return os.path.join(base, path.lstrip("/")), "cgroup-v1"
    for line in lines:
        if line.startswith("0::"):
            folder = os.path.join("/sys/fs/cgroup", line[3:].lstrip("/"))
            if os.path.exists(os.path.join(folder, "cgroup.controllers")):
                return folder, "cgroup-v2"
    return None


# Kernel memory a submission's processes may hold (see MemoryCgroup.kernel_kb): a correct one holds well under a
# megabyte, a fork bomb of the worker's image some tens. A file mapped and closed stays open, and a submission's
# processes could map 64 x 65,530 of them, each about 490 bytes of its memory cgroup: millions of the machine's
# struct files (fs.file-max is about one per 10 KB of memory), and every non-root process then got ENFILE while it
# was graded, other students' workers among them (red team s9: 240,000 for 112 MB). 128 MB is about 270,000.
KERNEL_MB = 128


class MemoryCgroup:
    """One memory cgroup per submission: everything its processes hold (anonymous, shared, memfd, tmpfs, SysV)
    is charged to it. v1: the OOM killer is disabled, so processes stall at the limit and the keeper kills the
    whole tree; v2: memory.oom.group kills the whole group at once. The keeper itself stays outside."""

    def __init__(self, folder: str, mode: str, kernel_mb: int | None = KERNEL_MB):
        self.folder, self.mode = folder, mode
        self.kernel_mb = kernel_mb  # see over_kernel(); None: not limited
        self._fds: dict[str, int] = {}  # files read at every reply, opened once (see over())

    @classmethod
    def create(cls, name: str, limit_mb: int) -> "MemoryCgroup | None":
        own = _own_cgroup()
        if own is None:
            return None
        parent, mode = own
        folder = os.path.join(parent, name)
        try:
            os.mkdir(folder)
        except FileExistsError:
            pass
        except OSError:
            return None
        cg = cls(folder, mode)
        limit = str(limit_mb * 1024 * 1024)
        try:
            if mode == "cgroup-v1":
                cg._write("memory.limit_in_bytes", limit)
                if os.path.exists(os.path.join(folder, "memory.memsw.limit_in_bytes")):
                    cg._write("memory.memsw.limit_in_bytes", limit)  # no escape into swap
                cg._write("memory.oom_control", "1")
            else:
                cg._write("memory.max", limit)
                for key, value in (("memory.swap.max", "0"), ("memory.oom.group", "1")):
                    try:
                        cg._write(key, value)
                    except OSError:
                        pass
        except OSError:
            cg.remove()
            return None
        return cg

    def _write(self, key: str, value: str) -> None:
        with open(os.path.join(self.folder, key), "w") as f:
            f.write(value)

    def _read(self, key: str) -> str:
        try:
            with open(os.path.join(self.folder, key)) as f:
                return f.read()
        except OSError:
            return ""

    def join(self, pid: int = 0) -> bool:
        try:
            self._write("cgroup.procs", str(pid or os.getpid()))
            return True
        except OSError:
            return False

    def _pread(self, key: str, size: int = 4096) -> bytes | None:
        """Like _read, through a descriptor kept open: the grader asks at every reply (hundreds per submission).
        None when it cannot be read."""
        fd = self._fds.get(key)
        try:
            if fd is None:
                fd = self._fds[key] = os.open(os.path.join(self.folder, key), os.O_RDONLY | os.O_CLOEXEC)
            return os.pread(fd, size, 0)
        except OSError:
            return None

    def close(self) -> None:
        """Close the descriptors that over() and procs() keep open (before the group is removed)."""
        for fd in self._fds.values():
            try:
                os.close(fd)
            except OSError:
                pass
        self._fds.clear()

    def procs(self) -> list[int] | None:
        """The processes in the group (None if that cannot be read: the caller then scans every process)."""
        size = 1 << 20
        data = self._pread("cgroup.procs", size)
        try:
            return [int(x) for x in data.split()] if data is not None and len(data) < size else None
        except ValueError:
            return None

    def kernel_kb(self) -> int | None:
        """Kernel memory charged to the group, in kB (structs of open and mapped files, page tables, socket
        buffers, processes); None where it cannot be read."""
        if self.mode == "cgroup-v1":
            try:
                return int(self._pread("memory.kmem.usage_in_bytes") or b"") // 1024
            except ValueError:
                return None
        fields = dict(line.split() for line in (self._pread("memory.stat", 1 << 16) or b"").splitlines()
                      if b" " in line)
        try:
            if b"kernel" in fields:
                return int(fields[b"kernel"]) // 1024
            return sum(int(fields.get(k, b"0")) for k in (b"slab", b"kernel_stack", b"pagetables", b"sock",
                                                            b"percpu")) // 1024 if fields else None
        except ValueError:
            return None

    def over_kernel(self) -> bool:
        """Whether the group holds more than `kernel_mb` of kernel memory (see KERNEL_MB; never where it is None:
        a worker that sees a GPU, whose driver's kernel memory no one has measured here)."""
        if self.kernel_mb is None:
            return False
        kb = self.kernel_kb()
        return kb is not None and kb > self.kernel_mb * 1024

    def over(self) -> bool:
        """Whether the submission hit the limit (v1: a process is stalled waiting for memory; v2: OOM kill)."""
        # Reaching the limit at all counts (failcnt, "max"): a submission within budget never gets near it, and a
        # hoard that the kernel refused (ENOMEM from a memfd write) must not go on to earn points.
        if self.mode == "cgroup-v1":
            if (self._pread("memory.failcnt") or b"").strip() not in (b"", b"0"):
                return True
            control = self._pread("memory.oom_control") or b""
            fields = dict(line.split() for line in control.splitlines() if b" " in line)
            return fields.get(b"under_oom") == b"1" or fields.get(b"oom_kill", b"0") != b"0"
        fields = dict(line.split() for line in (self._pread("memory.events") or b"").splitlines() if b" " in line)
        return any(fields.get(k, b"0") != b"0" for k in (b"max", b"oom", b"oom_kill", b"oom_group_kill"))

    def remove(self) -> bool:
        self.close()
        for _ in range(200):  # processes killed a moment ago may still be leaving the group
            try:
                os.rmdir(self.folder)
                return True
            except FileNotFoundError:
                return True
            except OSError:
                time.sleep(0.01)
        return False


def _own_cpu_cgroup_v1() -> str | None:
    """The folder of this process's cgroup in a v1 hierarchy that has the cpu controller, if one is mounted."""
    try:
        with open("/proc/self/cgroup") as f:
            lines = f.read().splitlines()
    except OSError:
        return None
    for line in lines:
        _, controllers, path = line.split(":", 2)
        names = controllers.split(",")
        if "cpu" in names:
            for base in ("/sys/fs/cgroup/cpu", "/sys/fs/cgroup/" + ",".join(names), "/sys/fs/cgroup/cpu,cpuacct"):
                folder = os.path.join(base, path.lstrip("/"))
                if os.path.exists(os.path.join(folder, "cpu.cfs_quota_us")):
                    return folder
    return None


class CpuCgroup:
    """One cpu cgroup per submission: its processes together weigh one share of a core against every other
    process or submission, and use at most `cores` cores (a CFS quota), however many processes or sessions they
    make. Without it the kernel shares a core between sessions (autogroups): 40 spinning processes, each in a
    session of its own and all moved onto the other grader's core, left the submission graded there 1/41 of its
    core and its forward timed out, while their total stayed under the CPU budget. v1 (a cpu hierarchy of its
    own) or v2 (cpu.max in the submission's memory cgroup, where the controller is enabled there)."""

    PERIOD_US = 100_000

    def __init__(self, folder: str, mode: str, owned: bool):
        self.folder, self.mode, self.owned = folder, mode, owned

    @classmethod
    def create(cls, name: str, cores: float, memory: "MemoryCgroup | None" = None) -> "CpuCgroup | None":
        quota = max(1000, int(cores * cls.PERIOD_US))
        if memory is not None and memory.mode == "cgroup-v2":
            cg = cls(memory.folder, "cgroup-v2", owned=False)
            try:
                cg._write("cpu.max", f"{quota} {cls.PERIOD_US}")
            except OSError:
                return None
            return cg
        parent = _own_cpu_cgroup_v1()
        if parent is None:
            return None
        folder = os.path.join(parent, name)
        try:
            os.mkdir(folder)
        except FileExistsError:
            pass
        except OSError:
            return None
        cg = cls(folder, "cgroup-v1", owned=True)
        try:
            cg._write("cpu.cfs_period_us", str(cls.PERIOD_US))
            cg._write("cpu.cfs_quota_us", str(quota))
        except OSError:
            cg.remove()
            return None
        return cg

    def _write(self, key: str, value: str) -> None:
        with open(os.path.join(self.folder, key), "w") as f:
            f.write(value)

    def join(self, pid: int) -> bool:
        if not self.owned:  # v2: the memory cgroup's folder, which the worker joins for both
            return True
        try:
            self._write("cgroup.procs", str(pid))
            return True
        except OSError:
            return False

    def remove(self) -> bool:
        if not self.owned:
            return True
        for _ in range(200):  # processes killed a moment ago may still be leaving the group
            try:
                os.rmdir(self.folder)
                return True
            except FileNotFoundError:
                return True
            except OSError:
                time.sleep(0.01)
        return False


def remove_stale_cgroups(prefix: str, live: Callable[[int], bool]) -> None:
    """Remove cgroups named `prefix<pid>` whose keeper is gone (a grader killed before it cleaned up): memory, and
    cpu where it is a hierarchy of its own (v1)."""
    own = _own_cgroup()
    for parent in ([own[0]] if own is not None else []) + [p for p in [_own_cpu_cgroup_v1()] if p is not None]:
        try:
            names = os.listdir(parent)
        except OSError:
            continue
        for n in names:
            if n.startswith(prefix) and n[len(prefix):].isdigit() and not live(int(n[len(prefix):])):
                try:
                    os.rmdir(os.path.join(parent, n))
                except OSError:
                    pass
