"""`grade check` without the sandbox: where Linux process controls are missing, a plain subprocess runs the public checks.

Only `grade check` uses this (a student checking their own file on their own Windows or macOS machine); `grade
batch` and the Gradescope zip always use the sandbox (sandbox.py). The worker is the same `worker.Worker` speaking
the same protocol (protocol.py), started as `python -m autograder.plainworker` (no fork: Windows has none) and
connected back over a loopback TCP socket, with a wall-clock deadline per request. Nothing limits its memory, disk
or processes, so the result is labelled "not sandboxed" wherever it is shown.
"""
from __future__ import annotations

import os
import platform
import secrets
import socket
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

from . import protocol
from .messages import Message
from .safetext import read_untrusted

# Test hook: set to 1 to force the unsandboxed mode on Linux (tests/test_plainworker.py drives `grade check` so).
FORCE_ENV = "GRADE_UNSANDBOXED"
START_TIMEOUT = 120.0  # seconds for a fresh interpreter to import torch and connect back (slow laptops)


def platform_name() -> str:
    """The student's system as they would call it: Windows, macOS, Linux (or whatever Python reports)."""
    return {"win32": "Windows", "darwin": "macOS"}.get(sys.platform, platform.system() or sys.platform)


def sandbox_missing() -> str | None:
    """Why the sandbox cannot run here (None when it can): it needs Linux's process controls (prctl) and the
    `resource` module; FORCE_ENV=1 pretends they are missing."""
    if os.environ.get(FORCE_ENV) == "1":
        return f"{FORCE_ENV}=1"
    if not sys.platform.startswith("linux"):
        return f"no Linux process controls on {platform_name()}"
    try:
        import resource  # noqa: F401
    except ImportError:
        return "no resource module"
    return None


def label() -> Message:
    """The line that says how the checks ran, shown above the table and kept in the result's notes."""
    where = platform_name()
    return Message(f"not sandboxed: public checks only, run on {where} in a plain Python process without the "
                   "grader's sandbox (your own file on your own machine; batch grading always uses the sandbox).",
                   f"샌드박스 없이 실행: 공개 검사만, {where}에서 채점기 샌드박스 없이 일반 Python 프로세스로 "
                   "실행했습니다 (내 컴퓨터에서 내 파일을 검사할 때만; 일괄 채점은 항상 샌드박스를 씁니다).")


class PlainPool:
    """Stands where sandbox.Zygote stands for GradingPlugin: `spawn` gives a worker, `close` ends the pool.

    There is no warm process to fork from: each worker is a fresh interpreter (a few seconds for `import torch`),
    which `grade check` pays once."""

    def __init__(self) -> None:
        self.workers: list[PlainWorkerProcess] = []

    def spawn(self, limits: Any, scratch: str, uid: int | None = None, start_timeout: float = START_TIMEOUT,
              gpu: bool = True, **_ignored: Any) -> "PlainWorkerProcess":
        from .sandbox import WorkerLost
        listener = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
        try:
            listener.bind(("127.0.0.1", 0))
            listener.listen(1)
            port = listener.getsockname()[1]
            token = secrets.token_hex(16)  # only the process we started may answer on this port
            root = str(Path(__file__).resolve().parent.parent)
            env = {k: v for k, v in os.environ.items() if not k.startswith(("PYTHON", "GRADE_"))}
            env.update({"PYTHONPATH": root, "PYTHONHASHSEED": "0", "OMP_NUM_THREADS": "1", "MKL_NUM_THREADS": "1",
                        "PYTHONDONTWRITEBYTECODE": "1", "PYTHONIOENCODING": "utf-8"})
            if not gpu:  # as sandbox.Zygote.spawn(gpu=False): no GPU for this worker
                env["CUDA_VISIBLE_DEVICES"] = ""
            log = open(os.path.join(scratch, "output.log"), "wb")
            try:
                proc = subprocess.Popen([sys.executable, "-m", "autograder.plainworker", str(port),
                                         str(limits.output_kb * 1024)],
                                        stdin=subprocess.PIPE, stdout=log, stderr=subprocess.STDOUT, cwd=scratch,
                                        env=env)
            finally:
                log.close()
            try:
                assert proc.stdin is not None
                proc.stdin.write(token.encode() + b"\n")
                proc.stdin.close()
                deadline = time.monotonic() + start_timeout
                while True:
                    listener.settimeout(max(0.1, min(1.0, deadline - time.monotonic())))
                    try:
                        conn, _ = listener.accept()
                    except socket.timeout:
                        if proc.poll() is not None or time.monotonic() > deadline:
                            raise WorkerLost(f"the worker did not start (exit status {proc.poll()})") from None
                        continue
                    try:
                        hello = protocol.recv(conn, deadline=time.monotonic() + 10)
                    except protocol.ProtocolError:
                        conn.close()
                        continue
                    if isinstance(hello, dict) and hello.get("token") == token:
                        break
                    conn.close()
            except BaseException:
                proc.kill()
                proc.wait()
                raise
        finally:
            listener.close()
        w = PlainWorkerProcess(conn, proc, scratch, limits)
        self.workers.append(w)
        return w

    def close(self) -> None:
        for w in self.workers:
            w.kill()
        self.workers.clear()


class PlainWorkerProcess:
    """One unsandboxed worker, with the interface proxy.Submission uses of sandbox.WorkerProcess."""

    def __init__(self, sock: socket.socket, proc: subprocess.Popen, scratch: str, limits: Any):
        self.sock, self.proc, self.scratch, self.limits = sock, proc, scratch, limits
        self.worker_pid = self.keeper_pid = proc.pid
        self.uid = None
        self.status: dict[str, Any] | None = None
        self.alive = True
        self.modes = {"sandbox": "none", "checks": "public only", "platform": platform_name()}
        self.cgroup = None
        self.last_progress = ""

    def over_budget(self) -> dict[str, Any] | None:
        return None  # nothing is measured without the sandbox

    def cpu_seconds(self) -> float | None:
        return None  # not portable: the student's time budget counts wall-clock time here

    def request(self, op: str, args: dict[str, Any], timeout: float, steps: int = 1) -> Any:
        from .sandbox import WorkerLost, WorkerTimeout, _at
        if not self.alive:
            raise WorkerLost("the worker is no longer running", self.status)
        started = time.monotonic()
        try:
            deadline = started + timeout
            protocol.send(self.sock, {"op": op, "args": args}, deadline=deadline)
            if steps > 1:
                deadline = protocol.wait_steps(self.sock, started, timeout, steps,
                                               lambda: self.read_scratch("seq.progress", 64))
            return protocol.recv(self.sock, deadline=deadline, max_head=16 * 1024 * 1024)
        except protocol.ChannelTimeout:
            self.last_progress = self.read_scratch("load.progress", 2000)
            step, began = self._began(started, steps)
            self.kill()
            hang = _at(WorkerTimeout(f"no answer within {timeout:g} s", self.status), step)
            hang.before = max(0.0, began - started)
            raise hang from None
        except (protocol.ProtocolError, OSError) as e:
            step = self._began(started, steps)[0]
            self.last_progress = self.read_scratch("load.progress", 2000) if op == "load" else ""
            self.kill()
            raise _at(WorkerLost(str(e), self.status), step) from None

    def _began(self, started: float, steps: int) -> tuple[int, float]:
        return protocol.step_reached(lambda: self.read_scratch("seq.progress", 64), started, steps)

    def kill(self, graceful: bool = False, sweep_uid: bool = True) -> dict[str, Any]:  # no uids to sweep here
        if not self.alive:
            return self.status or {}
        self.alive = False
        if graceful:
            try:
                protocol.send(self.sock, {"op": "exit", "args": {}}, deadline=time.monotonic() + 3)
                self.proc.wait(timeout=3)
            except (OSError, subprocess.TimeoutExpired, protocol.ProtocolError):
                pass
        if self.proc.poll() is None:
            self.proc.kill()  # TerminateProcess on Windows, SIGKILL elsewhere
        code = self.proc.wait()
        self.status = {"how": "exit", "code": code} if code >= 0 else {"how": "signal", "signal": -code}
        self.sock.close()
        return self.status

    def read_scratch(self, name: str, limit: int) -> str:
        return read_untrusted(os.path.join(self.scratch, name), limit)[0].decode("utf-8", "replace")

    def output(self, limit: int) -> tuple[str, int]:
        data, size = read_untrusted(os.path.join(self.scratch, "output.log"), limit)
        return data.decode("utf-8", "replace"), size


def main(argv: list[str]) -> None:
    """The worker side: connect back, prove who we are with the token from stdin, then serve requests."""
    port, output_limit = int(argv[0]), int(argv[1])
    token = sys.stdin.readline().strip()
    from . import worker  # torch and the worker code
    import torch
    torch.set_num_threads(1)
    sock = socket.create_connection(("127.0.0.1", port))
    protocol.send(sock, {"token": token})
    worker.Worker(sock, output_limit=output_limit).serve()


if __name__ == "__main__":
    main(sys.argv[1:])
