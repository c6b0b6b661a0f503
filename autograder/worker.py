"""Inside the worker process: run the submission's cells and answer one request at a time over a socket.

Nothing here is trusted by the grader. The submission shares this interpreter and may patch any of it;
the grader only ever receives data (see protocol.py) and re-checks every value it gets back.
"""
from __future__ import annotations

import ast
import contextlib
import copy
import functools
import inspect
import io
import linecache
import operator
import os
import re
try:
    import resource
except ImportError:  # (no such module on Windows: the grader imports this module for its constants, plainworker.py)
    resource = None
import socket
import sys
import _thread
import time
import traceback
import types
import weakref
from typing import Any

import torch
import torch.nn as nn
import torch.nn.functional  # noqa: F401  (loaded before the fork, so the worker needs no disk access for it)
from torch.overrides import TorchFunctionMode
from torch.utils._pytree import tree_flatten, tree_unflatten

from . import protocol
from .rng import manual_seed

try:  # the library watch's C filter (autograder/_watchhook.c, built by `pip install`; optional)
    from . import _watchhook
except ImportError:
    _watchhook = None

MAX_TEXT = 600  # characters of an exception message sent back
MAX_NAMES = 5000  # top-level names reported to the grader
SEQ_OPS = ("new", "call", "load_state", "state", "describe", "signature", "probe_devices")  # what op_seq runs
SANDBOX: dict[str, Any] = {}  # filled in by sandbox._become_worker: memory_mb, uid, landlock (ABI version or 0)
_exit = os._exit  # kept before student code can replace os._exit


class BoundedText(io.TextIOBase):
    """A stdout/stderr stand-in that keeps the first `limit` characters and counts the rest."""

    def __init__(self, limit: int):
        self.limit = limit
        self.kept: list[str] = []
        self.size = 0
        self.dropped = 0

    # What a notebook asks of sys.stdout as a console's has it: `sys.stdout.reconfigure(encoding='utf-8')` (a habit
    # on Windows, whose Korean console encodes cp949), `sys.stdout.encoding.lower()`, `sys.stdout.buffer.write(b)`.
    # These failed at load with "'BoundedText' object has no attribute 'reconfigure'", a note that read as the
    # student's mistake (red team, round 24). Text is kept as str, so an encoding changes nothing here.
    encoding = "utf-8"
    errors = "strict"

    def reconfigure(self, **_settings: Any) -> None:
        pass

    @property
    def buffer(self) -> "_BytesInto":
        return _BytesInto(self)

    def writable(self) -> bool:
        return True

    def write(self, s: Any) -> int:
        s = str(s)
        room = self.limit - self.size
        if room > 0:
            self.kept.append(s[:room])
            self.size += min(len(s), room)
        self.dropped += max(0, len(s) - max(room, 0))
        return len(s)

    def take(self) -> dict[str, Any]:
        """What was printed since the last take (at most `limit` characters); the budget starts over, so a flood
        at import does not silence the prints of later checks."""
        text, dropped = "".join(self.kept), self.dropped
        self.kept, self.size, self.dropped = [], 0, 0
        return {"text": text, "dropped": dropped}


class _BytesInto:
    """sys.stdout.buffer of a BoundedText: bytes written there are kept as the text they encode (UTF-8, else
    replaced)."""

    def __init__(self, text: BoundedText):
        self.text = text

    def write(self, b: Any) -> int:
        data = bytes(b)
        self.text.write(data.decode("utf-8", "replace"))
        return len(data)

    def flush(self) -> None:
        pass


class _NoIPython:
    """What `get_ipython()` gives a notebook here: every method does nothing, as the grader skips a cell's magics
    (source.strip_magics), so `get_ipython().run_line_magic('matplotlib', 'inline')` is skipped too."""

    def __getattr__(self, name: str) -> Any:
        if name.startswith("__"):
            raise AttributeError(name)
        return lambda *args, **kwargs: None

    def __repr__(self) -> str:
        return "<no IPython: the autograder runs the notebook's code as a script>"


def _display(*objs: Any, **_options: Any) -> None:
    """`display(...)` of a notebook here: each object's repr printed, as Jupyter shows one without a rich form."""
    for obj in objs:
        print(repr(obj))


def _notebook_builtins() -> None:
    """`display` and `get_ipython`, which Jupyter and Colab put in builtins: a notebook's `display(df)` line
    failed at load with "NameError: name 'display' is not defined", a note that blamed the student for a line that
    runs in every notebook (red team, round 24). In builtins, as there, so no top-level name of the submission's
    (nor a rename hint) comes of them; a definition of its own shadows them, as in Jupyter."""
    import builtins
    for name, value in (("display", _display), ("get_ipython", lambda: _NoIPython())):
        if not hasattr(builtins, name):
            setattr(builtins, name, value)


def _short(s: str) -> str:
    return s if len(s) <= MAX_TEXT else s[:MAX_TEXT] + " ..."


# What an honest line fails on in the grader's setting alone, which a student's machine (or Colab) has: the grader
# then says so (plugin._load_notes), and a bare "PermissionError: [Errno 13] Permission denied" at a DataLoader, or
# "Temporary failure in name resolution" at a download, does not read as the student's mistake (red team, round 24).
_NETWORK_ERRORS = {"socket.gaierror", "socket.herror", "builtins.ConnectionError", "urllib.error.URLError",
                   "requests.exceptions.ConnectionError", "urllib3.exceptions.NewConnectionError",
                   "urllib3.exceptions.NameResolutionError", "httpx.ConnectError"}
_NO_GPU = ("Torch not compiled with CUDA enabled", "No CUDA GPUs are available", "Found no NVIDIA driver")


def _grader_setting(e: BaseException) -> str | None:
    """"network", "processes", "account", "gpu", "files", "folder" or "module" where `e` is what the grader's setting
    makes an ordinary line raise (no network, one process, a uid with no account or terminal, no GPU, none of the
    files beside the submission, no folder but its own to write in, a package not installed); None otherwise. Only words for a
    note: a submission that forges one gains nothing."""
    try:
        seen, x = 0, e
        while x is not None and seen < 8:  # requests and huggingface_hub wrap the socket error in their own
            if any(f"{c.__module__}.{c.__qualname__}" in _NETWORK_ERRORS for c in type(x).__mro__):
                return "network"
            x, seen = x.__cause__ or x.__context__, seen + 1
        # (only an OSError's frames are read: extracting them costs more than the rest of a reply)
        frames = traceback.extract_tb(e.__traceback__) if isinstance(e, OSError) else ()
        text = str(e)
        if isinstance(e, OSError) and any(f"{os.sep}multiprocessing{os.sep}" in f.filename for f in frames) \
                or "DataLoader worker (pid" in text:  # a semaphore in /dev/shm, or a forked worker that exited
            return "processes"
        if isinstance(e, OSError) and any("getlogin" in (f.line or "") for f in frames) \
                or isinstance(e, KeyError) and re.match(r"'getpw(uid|nam)\(\): ", text):
            return "account"
        if any(m in text for m in _NO_GPU):
            return "gpu"
        if isinstance(e, FileNotFoundError):  # the-verdict.txt, a checkpoint: only the code is sent to the worker
            return "files"
        if isinstance(e, PermissionError) and isinstance(e.filename, str) and os.path.isabs(e.filename) \
                and not e.filename.startswith(os.getcwd() + os.sep) \
                or "open file failed with strerror: Permission denied" in text:  # torch.save(m, '/tmp/model.pt')
            return "folder"
        if isinstance(e, ModuleNotFoundError):  # tiktoken, google.colab: what the course's notebooks do not need
            return "module"
    except BaseException:
        pass
    return None


def _frozen(value: Any) -> Any:
    """A step's value as it is now (op_seq): its tensors copied, through plain lists, tuples and dicts. A sequence's
    values are encoded only when the last step is done, and a tensor a step returned is still the submission's to
    change: a forward that kept its outputs wrote, when a later call's input extended an earlier one's, its own
    rows into the earlier output, so the causality check's prefix builds (one round trip) all sent back the rows of
    the whole input, with no mask at all (red team, round 27). Tensors the encoder describes rather than sends
    (a subclass, the meta device, sparse or nested) go as they are: what it says of them cannot change."""
    kind = type(value)
    if kind is dict:
        return {k: _frozen(v) for k, v in value.items()}
    if kind is list:
        return [_frozen(v) for v in value]
    if kind is tuple:
        return tuple(_frozen(v) for v in value)
    if kind is torch.Tensor or isinstance(value, nn.Parameter):
        t = value.detach()
        if type(t) is torch.Tensor and t.layout is torch.strided and not t.is_nested and not t.is_meta:
            return t.clone()
    return value


def _torch_defaults() -> None:
    """Each request runs with torch's defaults: float32, on the CPU. A notebook's top-level
    `torch.set_default_dtype(torch.float64)` or `torch.set_default_device('cuda')` (a Colab habit) stayed set for
    the checks, so a right class made float64 weights for the grader's float32 inputs, or failed every constructor
    on a machine without CUDA: 9/44 and 8/44 of the public checks (red team, round 24). The classes are graded as
    the notebook runs them, with the defaults; a class that sets either itself still does so for its own calls."""
    try:
        if torch.get_default_dtype() is not torch.float32:
            torch.set_default_dtype(torch.float32)
        if _device_context() is not None:
            torch.set_default_device(None)
    except BaseException:  # noqa: BLE001 - a submission that broke these gets what it made
        pass


class Worker:
    def __init__(self, sock: socket.socket, output_limit: int = 64 * 1024):
        self.sock = sock
        # A real module, registered under its name: @dataclass, typing.get_type_hints and enum look a class's
        # module up in sys.modules (a top-level @dataclass failed to load in a plain dict and cost its question).
        module = types.ModuleType("submission")
        module.__dict__["__builtins__"] = __builtins__
        sys.modules["submission"] = module
        self.ns: dict[str, Any] = module.__dict__
        self.objects: dict[int, Any] = {}
        self.stand_ins: dict[str, Any] = {}  # source -> its code, compiled (op_new's stand_in)
        self.lines: dict[str, list[str]] = {}
        self.files = NotebookFiles()  # the modules a notebook's %%writefile cells wrote (op_load)
        self.out = BoundedText(output_limit)
        self.frame: dict[str, Any] | None = None  # a failed call's callee frame (op_call's `partial`), sent once
        self.seq_progress: _ScratchFile | None = None  # scratch/seq.progress (op_seq)
        self.seq_step: int | None = None  # the step of op_seq running now
        self.seq_done: list[Any] = []  # the values of its steps before it
        self.scratch = os.getcwd()  # the scratch folder (the submission may chdir)
        protocol._torch()  # (what decodes tensors, taken before any of the submission's code runs: protocol._MAKERS)
        refuse_fused()
        refuse_torchscript()
        if accelerator_built() and os.environ.get("CUDA_VISIBLE_DEVICES") != "":  # (a worker that may see a GPU)
            start_cuda()
        self.guard = _Guard(self)  # before any of the submission's code runs (its cells come with "load")
        watch_profile_switches()

    # ------------------------------------------------------------------ plumbing

    def show_warning(self, message: Any, category: Any, filename: str, lineno: int, file: Any = None,
                     line: Any = None) -> None:
        """warnings.showwarning in the worker: a warning is the student's output only where it points into the
        student's code (their own warnings.warn, or torch's with a stacklevel that reaches their line), shown with
        the cell's name. One raised inside torch itself (nn.Transformer's "enable_nested_tensor is True, but ...")
        is the library's advice, not something the student printed, and its file is the grader's install path
        (/.../.venv/.../torch/nn/modules/transformer.py): it went into "Your code printed"."""
        if filename not in self.lines:
            return
        name = getattr(category, "__name__", "Warning")
        self.out.write(f"{filename}:{lineno}: {name}: {message}\n")

    def serve(self) -> None:
        sys.stdout = sys.stderr = self.out
        import warnings
        warnings.showwarning = self.show_warning
        me = os.getpid()
        while True:
            try:
                req = protocol.recv(self.sock)
            except protocol.ProtocolError:
                return
            op = req.get("op") if isinstance(req, dict) else None
            if op == "exit":
                return
            handler = self.guard.handlers.get(f"op_{op}")  # as loaded, whatever the submission rebinds
            self.frame = None
            self.seq_step = None
            _torch_defaults()
            try:
                if handler is None:
                    raise ValueError(f"unknown request {op!r}")
                resp = {"ok": True, "value": handler(self, **req.get("args", {}))}
            except BaseException as e:  # SystemExit and KeyboardInterrupt from student code included
                resp = {"ok": False, "error": self.describe(e)}
                if op == "seq" and self.seq_step is not None:
                    resp["error"]["step"] = self.seq_step
                    resp["error"]["done"] = self.seq_done[:self.seq_step]
                if self.frame is not None:
                    resp["error"]["frame"] = self.frame
            self.frame = None
            if os.getpid() != me:  # a process the submission forked got here: only the worker may answer
                _exit(0)
            resp["out"] = self.out.take()
            if not self.guard.intact():
                resp["tampered"] = True  # the grader counts nothing this worker says from now on (proxy.py)
            # A name of builtins, os, time, torch or torch.Tensor bound anew at any time, not only during a watched
            # call: the grader then takes every watched call of this worker, this request's and every later one, to
            # have run what its watch looks for (proxy.Submission._evidence). Bound anew at import, a name the worker
            # calls before a call's watch begins (torch._GLOBAL_DEVICE_CONTEXT, read at the start of each request) ran
            # the submission's code with the coming call's input up the stack, and could put the name back before
            # the watch looked. (Cheap: only a namespace whose dict has changed is read, _namespaces_intact.)
            if not _namespaces_intact():
                resp["rebound"] = True
            try:
                protocol.send(self.sock, resp)
            except protocol.MessageTooLarge as e:  # what the submission's code returned cannot travel: say so
                too_large = OverflowError(f"the value it returned is too large to send back to the grader "
                                          f"({e.size >> 20} MB; at most {protocol.MAX_MESSAGE >> 20} MB)")
                error = self.describe(too_large)
                if op == "seq":  # an error of a sequence says at which step (replies.error_well_formed): the first,
                    error.update(step=0, done=[])  # with none of the values (they are what is too large)
                try:
                    protocol.send(self.sock, {"ok": False, "error": error, "out": resp["out"]})
                except (OSError, protocol.ProtocolError):
                    return
            except OSError:
                return

    def describe(self, e: BaseException) -> dict[str, Any]:
        try:
            text = _short(str(e))
        except BaseException:
            text = "(the exception could not be turned into text)"
        if SANDBOX.get("memory_mb") and (isinstance(e, MemoryError) or "not enough memory" in text
                                         or "can't allocate memory" in text):
            text += f" (the grader allows {SANDBOX['memory_mb']} MB of memory per submission)"
        elif SANDBOX.get("disk_mb") and isinstance(e, OSError) and e.errno in (28, 122):  # ENOSPC, EDQUOT
            text += f" (the grader allows {SANDBOX['disk_mb']} MB of disk per submission)"
        where = None
        try:
            # The innermost frame in the submission's own cells, read from the traceback's frames themselves:
            # traceback.extract_tb reads every frame's source and column positions (in torch's files too), which
            # cost more than the rest of a reply to a request that raised (a skeleton's, at every check).
            tb = e.__traceback__
            while tb is not None:  # (Python refuses a tb_next that would make a loop)
                code_object = tb.tb_frame.f_code
                filename, lineno = code_object.co_filename, tb.tb_lineno
                if filename in self.lines:
                    src = self.lines[filename]
                    code = src[lineno - 1].strip() if type(lineno) is int and 0 < lineno <= len(src) else ""
                    where = {"file": filename, "line": lineno, "function": code_object.co_name, "code": _short(code)}
                tb = tb.tb_next
        except BaseException:
            pass
        try:
            mro = [_short(f"{c.__module__}.{c.__qualname__}") for c in type(e).__mro__][:32]
        except BaseException:
            mro = []
        out = {"type": _short(str(type(e).__name__)), "message": text, "where": where, "mro": mro}
        cause = _grader_setting(e)
        if cause:
            out["setting"] = cause
        if type(e) is FusedKernelRefused and type(e.tag) is str and e.tag:
            out["library"] = e.tag  # (a submission that raises it itself only charges itself)
        return out

    # ------------------------------------------------------------------ loading

    def op_load(self, cells: list[dict[str, str]], skip: list[str] = ()) -> dict[str, Any]:
        skip = set(skip)  # "label:line" of top-level statements that hung in an earlier load
        progress = _Progress(os.path.join(os.getcwd(), "load.progress"))  # the scratch folder: read on a hang
        defaults = _TorchDefaults()
        try:
            return self._load(cells, skip, progress)
        finally:
            progress.close()
            defaults.restore()

    def _load(self, cells: list[dict[str, str]], skip: set[str], progress: "_Progress") -> dict[str, Any]:
        errors = []
        if any(".ipynb, " in str(c.get("label")) for c in cells):
            _notebook_builtins()
        # A module that a %%writefile cell wrote runs, when a statement below imports it, one statement at a time as
        # the cells do: a demo line in it that fails or hangs costs that line, not the module's definitions.
        self.files.load = {"skip": skip, "progress": progress, "errors": errors, "describe": self.describe,
                           "lines": self.lines}
        try:
            return self._load_cells(cells, skip, progress, errors)
        finally:
            self.files.load = None

    def _load_cells(self, cells: list[dict[str, str]], skip: set[str], progress: "_Progress",
                    errors: list) -> dict[str, Any]:
        defined: dict[str, int] = {}  # name -> rank of the last `class`/`def` statement that defined it
        pending = []  # (rank, label, stmt, error) of `class`/`def` statements that raised NameError
        imports = []  # (rank, label, stmt, error, module) of imports that found no module (_rerun_imports)
        rank = 0
        for cell in cells:
            code, label = str(cell["code"]), str(cell["label"])
            if cell.get("module"):  # a notebook's `%%writefile NAME.py`: what `import NAME` runs from here on
                self._remember(label, code)
                self.files.write(str(cell["module"]), label, code, bool(cell.get("append")))
                continue
            if label.endswith(".py"):  # as `python attention.py` sets it (a notebook has none, as in Jupyter)
                self.ns.setdefault("__file__", label)
            self._remember(label, code)
            try:
                tree = ast.parse(code, filename=label)
            except SyntaxError as e:
                errors.append({"type": "SyntaxError", "message": _short(e.msg or "invalid syntax"),
                               "where": {"file": label, "line": e.lineno, "function": "<module>",
                                         "code": _short((e.text or "").strip())}})
                continue
            except Exception as e:  # null bytes (ValueError), nesting too deep for the parser (RecursionError)
                errors.append({"type": "SyntaxError", "message": _short(f"{type(e).__name__}: {e}"),
                               "where": {"file": label, "line": None, "function": "<module>", "code": ""}})
                continue
            # One statement at a time: a failing demo line must not cost the definitions after it.
            for stmt in tree.body:
                where = f"{label}:{stmt.lineno}"
                if where in skip:
                    continue
                progress.mark(where)
                rank += 1
                is_def = isinstance(stmt, (ast.ClassDef, ast.FunctionDef, ast.AsyncFunctionDef))
                try:
                    exec(compile(ast.Module(body=[stmt], type_ignores=[]), label, "exec"), self.ns)
                    if is_def:
                        defined[stmt.name] = rank
                except BaseException as e:
                    err = self.describe(e)
                    # The statement that failed, which is what did not run; where the exception came from (a
                    # forward that a demo line called) as `inner`, when that is another line.
                    lines = self.lines[label]
                    top = {"file": label, "line": stmt.lineno, "function": "<module>",
                           "code": _short(lines[stmt.lineno - 1].strip()) if 0 < stmt.lineno <= len(lines) else ""}
                    if err.get("where") and err["where"].get("line") != stmt.lineno:
                        top["inner"] = err["where"]
                    err["where"] = top
                    if is_def:
                        err["defines"] = stmt.name
                        if isinstance(e, NameError):
                            pending.append((rank, label, stmt, err))
                    elif isinstance(stmt, (ast.Import, ast.ImportFrom)) and isinstance(e, ModuleNotFoundError):
                        imports.append((rank, label, stmt, err, getattr(e, "name", None)))
                    errors.append(err)
        self._rerun_imports(imports, defined, progress)
        self._rerun(pending, defined, progress)
        # The definitions' errors first: a graded class that could not be defined matters more than demo lines.
        errors.sort(key=lambda err: "defines" not in err)
        return {"names": self.op_names(), "errors": errors[:20]}

    def _remember(self, label: str, code: str) -> None:
        """Keep a cell's lines: for the messages (self.lines), and in linecache under the name its code is compiled
        with, where inspect.getsource looks, as it finds a file's on disk. The submission's file is not on disk in
        the worker, so a right answer with a `@torch.jit.script` helper (TorchScript compiles from the function's
        source) failed to load it ("Can't get source") and lost every check that called it (correct variants,
        round 5: 26 of the midterm's 35 points of Q1). mtime None: checkcache keeps the entry, though no file of that
        name exists."""
        self.lines[label] = code.splitlines()
        lines = code.splitlines(True)
        if lines and not lines[-1].endswith("\n"):
            lines[-1] += "\n"
        linecache.cache[label] = (len(code), None, lines, label)

    def _rerun_imports(self, imports: list, defined: dict[str, int], progress: "_Progress") -> None:
        """Run again, after the whole notebook, each import of a module that a `%%writefile` cell further down
        writes: cells run out of order (the file written in an earlier session, or its cell run first) import it in
        Jupyter, and a right notebook got 0/100, its classes "never imported" (red team, round 18). The names it
        binds replace only what the notebook defined before that import (the template's skeleton classes), never a
        definition further down or a value set elsewhere."""
        for rank, label, stmt, err, module in imports:
            if module not in self.files.parts:
                continue
            progress.mark(f"{label}:{stmt.lineno}")
            scratch: dict[str, Any] = {"__builtins__": self.ns.get("__builtins__", __builtins__),
                                       "__name__": self.ns.get("__name__", "__main__")}
            try:
                exec(compile(ast.Module(body=[stmt], type_ignores=[]), label, "exec"), scratch)
            except BaseException:
                continue
            for name, value in scratch.items():
                if name.startswith("__") or name in self.ns and not defined.get(name, rank) < rank:
                    continue
                self.ns[name] = value
            err["rerun"] = True

    def _rerun(self, pending: list, defined: dict[str, int], progress: "_Progress") -> None:
        """Run again, after the whole file, each `class`/`def` statement that raised NameError and that no later
        statement defined again: in a notebook the name it needs (`nn` of `class X(nn.Module)`) may be defined
        further down, in a cell the student ran first. As often as one of them succeeds (one may need another)."""
        pending = [p for p in pending if defined.get(p[2].name, 0) < p[0]]
        while pending:
            left = []
            for rank, label, stmt, err in pending:
                progress.mark(f"{label}:{stmt.lineno}")
                try:
                    exec(compile(ast.Module(body=[stmt], type_ignores=[]), label, "exec"), self.ns)
                except BaseException:
                    left.append((rank, label, stmt, err))
                else:
                    err["rerun"] = True
            if len(left) == len(pending):
                return
            pending = left

    def op_names(self) -> dict[str, str]:
        """Kinds of the top-level names: every class and function, then values, MAX_NAMES in all (a file with
        600,000 globals must not cost the grader seconds of decoding and hint searching)."""
        kinds: dict[str, str] = {}
        values = []
        plain = (int, float, str, bool, bytes, type(None))
        for name, value in list(self.ns.items()):
            if type(value) in plain or not callable(value):  # the common case first: it may run 600,000 times
                if type(name) is str and not name.startswith("__"):
                    values.append(name)
            elif len(kinds) < MAX_NAMES and type(name) is str and not name.startswith("__"):
                kinds[name] = "class" if isinstance(value, type) else "function"
        for name in values[:max(0, MAX_NAMES - len(kinds))]:
            kinds[name] = "value"
        return kinds

    def op_signature(self, name: str, method: str | None = None) -> dict[str, Any]:
        """The parameters of `name` (a class's __init__, or its `method`, e.g. forward: what a call may pass)."""
        target = self.ns[name]
        if method is not None:
            target = getattr(target, method)
        elif inspect.isclass(target):
            target = target.__init__
        sig = inspect.signature(target)
        params = [p for p in sig.parameters.values() if p.name != "self"]
        return {"params": [{"name": p.name, "kind": p.kind.name,
                            "default": None if p.default is p.empty else repr(p.default)[:80]} for p in params]}

    # ------------------------------------------------------------------ objects

    def _obj(self, handle: int) -> Any:
        if handle not in self.objects:
            raise KeyError(f"no object with handle {handle}")
        return self.objects[handle]

    def op_new(self, name: str, args: list, kwargs: dict, seed: int | None = None,
               stand_in: dict[str, str] | None = None, record: list[str] | None = None) -> dict[str, Any]:
        """stand_in: {"name", "source"}: while this object is built, the submission's top-level `name` is the class
        of that name defined by `source` (the grader's; used to judge a class on its own code when a class it
        builds on, e.g. its attention heads, does not work). record: the watches to keep over the constructor, as
        op_call's (its "records" in the reply): built in a sequence, __init__ sees the sequence's later steps up the
        stack, their inputs and weights, and computed their outputs there with F.multi_head_attention_forward, out
        of the calls' watch (the attention lab's value checks of MultiHeadAttention; red team, round 26)."""
        recorder = Recorder(record, self.seq_step or 0) if record else contextlib.nullcontext()
        with recorder:
            obj = self._build(name, args, kwargs, seed, stand_in)
        handle = len(self.objects) + 1
        self.objects[handle] = obj
        return {"handle": handle, "type": type(obj).__name__, "module": isinstance(obj, nn.Module),
                **({"records": recorder.seen} if record else {})}

    def _build(self, name: str, args: list, kwargs: dict, seed: int | None,
               stand_in: dict[str, str] | None) -> Any:
        if seed is not None:
            manual_seed(seed)
        if not stand_in:
            return self.ns[name](*args, **kwargs)
        else:
            # ("name" may list several top-level names, comma-separated: each is the class of that name in source)
            replaced, source = str(stand_in["name"]).split(","), str(stand_in["source"])
            if source not in self.stand_ins:
                self.stand_ins[source] = compile(source, "<grader's stand-in>", "exec")
            # A new class for every object built: a class kept from one build to the next could be changed by the
            # submission (a wrapper's __init__ patching it) for the builds that give the grader's expected values.
            space: dict[str, Any] = {"torch": torch, "nn": nn, "__name__": "grader_stand_in"}
            exec(self.stand_ins[source], space)
            missing = object()
            saved = {r: self.ns.get(r, missing) for r in replaced}
            for r in replaced:
                self.ns[r] = space[r]
            try:
                return self.ns[name](*args, **kwargs)
            finally:
                for r, was in saved.items():
                    if was is missing:
                        self.ns.pop(r, None)
                    else:
                        self.ns[r] = was

    def op_call(self, args: list, kwargs: dict, handle: int | None = None, name: str | None = None,
                mode: str | None = None, seed: int | None = None, record: list[str] | None = None,
                grad_output: torch.Tensor | None = None, device: str | None = None,
                partial: list[str] | None = None) -> dict[str, Any]:
        """Call a module or top-level function. `partial`: names of local variables of the callee (a module's
        forward, or the function itself) to send back, when they hold plain tensors, should the call raise, so
        that the grader can judge the steps it had done before (the error reply's "frame")."""
        target = self._obj(handle) if handle is not None else self.ns[name]
        # A function mode puts every torch call of the forward through Python: enter one only when asked to.
        recorder = Recorder(record, self.seq_step or 0) if record else contextlib.nullcontext()
        try:
            # The mode, the gradients, the device and the seed are set inside the watch: each can run the
            # submission's code (a train() or zero_grad() of its class, a default generator it replaced, a method of
            # torch's it patched), which sees this call's arguments up the stack. A block whose train() ran
            # nn.TransformerEncoderLayer on them before the watch began, and whose forward handed back what it got,
            # earned all of the exam's Q3 (red team, round 26); torch.set_grad_enabled's __init__ replaced did the
            # same for the attention lab's MultiHeadAttention, 20 of 20 (red team, session 20).
            with recorder, torch.set_grad_enabled(grad_output is not None):
                if device is not None:
                    args = [a.to(device) if isinstance(a, torch.Tensor) else a for a in args]
                if mode is not None and isinstance(target, nn.Module):
                    target.train(mode == "train")
                if grad_output is not None and isinstance(target, nn.Module):
                    target.zero_grad(set_to_none=True)
                if seed is not None:
                    manual_seed(seed)
                out = target(*args, **kwargs)
                # What a watched call sends back is copied here, inside the watch: code of the submission's that the
                # garbage collector runs after the watch has switched its profile function off (a gc.callbacks
                # entry, the __del__ of an object in a cycle, armed by forward with gc.set_threshold(1, 1, 1)) filled
                # forward's zeros in place with F.multi_head_attention_forward's numbers before the reply was
                # encoded: MultiHeadAttention 20 of 20 (red team, session 20, round 2).
                sent = _frozen(out) if record else out
        except BaseException as e:
            if partial:
                self.frame = self.callee_frame(e.__traceback__, target, partial)
            raise
        result: dict[str, Any] = {"out": sent, "records": recorder.seen if record else []}
        if grad_output is not None:
            if not isinstance(out, torch.Tensor) or not out.requires_grad or out.shape != grad_output.shape:
                result["grads"] = None  # the grader reports the shape or the missing graph itself
            else:
                # As out.backward(grad_output), bit for bit (1.0 * g is exact), without importing sympy on the
                # first call (a tensor gradient sends backward through torch's symbolic-shapes checks).
                (out * grad_output.to(out.device)).sum().backward()
                result["grads"] = {n: p.grad for n, p in all_parameters(target)}
        return result

    def callee_frame(self, tb: Any, target: Any, names: list[str]) -> dict[str, Any] | None:
        """The innermost frame of the traceback `tb` that runs `target`'s own code (a module's forward, or the
        function): the line it was at and those of its local variables named in `names` that hold plain tensors
        (protocol.MAX_PARTIAL_NAMES names and protocol.MAX_PARTIAL_BYTES bytes at most). None when there is no
        such frame. Only data leaves: the grader re-checks every tensor like any other reply."""
        try:
            fn = getattr(target, "forward", None) if isinstance(target, nn.Module) else target
            fn = inspect.unwrap(getattr(fn, "__func__", fn))
            code = getattr(fn, "__code__", None)
            if type(code) is not types.CodeType:
                return None
            found = None
            while tb is not None:
                if tb.tb_frame.f_code is code:
                    found = tb
                tb = tb.tb_next
            if found is None:
                return None
            frame, line = found.tb_frame, found.tb_lineno
            variables = frame.f_locals
            kept: dict[str, torch.Tensor] = {}
            room = protocol.MAX_PARTIAL_BYTES
            for n in list(dict.fromkeys(n for n in names if type(n) is str))[:protocol.MAX_PARTIAL_NAMES]:
                v = variables.get(n)
                if type(v) is not torch.Tensor or v.layout is not torch.strided or v.is_meta \
                        or v.dtype not in _PLAIN_DTYPES or v.is_quantized or v.is_nested:
                    continue
                size = v.numel() * v.element_size()
                if size > room:
                    continue
                t = v.detach()
                if type(t) is not torch.Tensor:
                    continue
                kept[n] = t
                room -= size
            src = self.lines.get(code.co_filename)
            text = src[line - 1].strip() if src and type(line) is int and 0 < line <= len(src) else ""
            return {"function": _short(str(code.co_name)), "line": line if type(line) is int else None,
                    "code": _short(text), "locals": kept}
        except BaseException:  # whatever the submission did to its frame or its tensors: no partial evidence
            return None

    def op_state(self, handle: int) -> dict[str, Any]:
        m = self._obj(handle)
        return {"params": dict(all_parameters(m)), "buffers": dict(walk_tensors(m, "_buffers")),
                "persistent": sorted(persistent_buffers(m))}

    def op_load_state(self, handle: int, tensors: dict[str, torch.Tensor]) -> dict[str, Any]:
        m = self._obj(handle)
        own = dict(all_parameters(m))
        own.update(dict(walk_tensors(m, "_buffers")))
        loaded, mismatched = [], []
        with torch.no_grad():
            for n, t in own.items():
                if n not in tensors:
                    continue
                if tuple(t.shape) != tuple(tensors[n].shape):
                    mismatched.append([n, list(t.shape), list(tensors[n].shape)])
                    continue
                t.copy_(tensors[n].to(t.device, t.dtype))
                loaded.append(n)
        # ("unexpected" is the module's to make long: 60,000 parameters made a sequence's replies too long to read)
        return {"loaded": loaded, "missing": sorted(set(tensors) - set(own)),
                "unexpected": sorted(set(own) - set(tensors))[:64], "mismatched": mismatched}

    def op_describe(self, handle: int, attrs: list[str] = ()) -> dict[str, Any]:
        m = self._obj(handle)
        info: dict[str, Any] = {"type": type(m).__name__, "attrs": {}}
        if isinstance(m, nn.Module):
            info["modules"] = [[n, type(c).__name__] for n, c in walk_modules(m) if n]
            # (an nn.LayerNorm under another class name: a subclass of it, which is one)
            info["layer_norms"] = [n for n, c in walk_modules(m) if n and isinstance(c, nn.LayerNorm)]
            info["params"] = [[n, list(p.shape), p.requires_grad] for n, p in all_parameters(m)]
            # Tensors kept as plain attributes (not parameters or buffers): what .to(device) leaves behind.
            info["tensors"] = [[f"{n}.{a}" if n else a, list(t.shape)] for n, c in walk_modules(m)
                               for a, t in list(own_dict(c).items()) if type(t) is torch.Tensor][:64]
        for a in attrs:
            # What the module holds under that name (registered, or an attribute of its own), never what a
            # property or __getattr__ of its class makes up when asked (it runs the submission's code).
            v = _held(m, a)
            if v is _ABSENT:
                info["attrs"][a] = None
                continue
            entry: dict[str, Any] = {"type": type(v).__name__}
            if isinstance(v, (list, tuple, nn.ModuleList, nn.Sequential, nn.ModuleDict)):
                held = list(v.values()) if isinstance(v, nn.ModuleDict) else v  # (a dict of modules: its modules)
                entry["len"] = len(held)
                entry["items"] = [type(x).__name__ for x in held][:64]
                entry["kinds"] = [[c.__name__ for c in type(x).__mro__][:8] for x in held][:64]  # (subclasses)
                entry["same_object"] = len({id(x) for x in held}) < len(held)
            if type(v) in (int, float, bool, str) or isinstance(v, torch.Tensor):
                entry["value"] = v
            if isinstance(v, nn.Dropout):
                entry["p"] = float(v.p)
            info["attrs"][a] = entry
        return info

    def op_to(self, handle: int, device: str) -> None:
        self._obj(handle).to(device)

    def op_probe_devices(self, handle: int, shapes: list[list[int]], mode: str = "eval",
                         mask: bool = False) -> dict[str, Any]:
        # On the module itself, not a copy: copy.deepcopy runs the class's own __deepcopy__, which can make a copy
        # unlike the module (red team, round 12: one registering its plain mask). The simulation tags tensors and
        # moves nothing; each module's training flag is put back.
        m = self._obj(handle)
        modes = [(c, own_dict(c).get("training")) for _, c in walk_modules(m)]
        try:
            return probe_devices(m, shapes, mode, mask=mask is True)
        finally:
            for c, flag in modes:
                if type(flag) is bool:
                    own_dict(c)["training"] = flag

    def op_seq(self, steps: list[dict[str, Any]]) -> dict[str, Any]:
        """Several requests in one round trip, run in order as if sent one by one; the first that raises ends the
        sequence, and its error (with "step": its index, and "done": the values of the steps before it) is the
        reply. A step's handle "$new" is the object the last "new" step of this sequence built, "$new:K" the one
        its K-th "new" step built (from 0). Before each step its index and start time go to scratch/seq.progress,
        so the grader keeps each step's own deadline (sandbox.WorkerProcess.request)."""
        values: list[Any] = []
        self.seq_done = values  # what the steps before a failure gave (serve() adds it to the error reply)
        made: list[int] = []  # the handles of the objects the "new" steps built, in order
        for i, step in enumerate(steps):
            self.seq_step = i  # the step an exception comes from (serve() adds it to the error reply)
            op, args = step.get("op"), dict(step.get("args", {}))
            if op not in SEQ_OPS:
                raise ValueError(f"request {op!r} cannot be part of a sequence")
            ref = args.get("handle")
            if ref == "$new":
                args["handle"] = made[-1] if made else None
            elif type(ref) is str and ref.startswith("$new:") and ref[5:].isdigit() and int(ref[5:]) < len(made):
                args["handle"] = made[int(ref[5:])]
            if i:  # the first step's deadline starts with the request
                self._progress(i)
            value = self.guard.handlers[f"op_{op}"](self, **args)
            if op == "new":
                made.append(value["handle"])
            values.append(_frozen(value) if op in ("call", "state") else value)
        return {"values": values}

    def _progress(self, step: int) -> None:
        if self.seq_progress is None:
            self.seq_progress = _ScratchFile(os.path.join(self.scratch, "seq.progress"), truncate=False)
        fd = self.seq_progress.fd()
        if fd is not None:
            try:
                os.pwrite(fd, f"{step} {time.monotonic():.6f}\n".ljust(32).encode(), 0)
            except OSError:
                pass

    def op_env(self) -> dict[str, Any]:
        if "cuda" not in SANDBOX:  # asked once a worker, when a check first wants to know (never in the zygote)
            SANDBOX.update(zip(("cuda", "cuda_error"), probe_cuda()))
        return {"cuda": SANDBOX["cuda"], "cuda_error": SANDBOX.get("cuda_error", ""), "torch": torch.__version__,
                "landlock": SANDBOX.get("landlock", 0), "keyrings_denied": SANDBOX.get("keyrings_denied", False),
                "uid": os.getuid() if hasattr(os, "getuid") else None}  # Windows has no uids (plainworker.py)


class NotebookFiles:
    """The Python files a notebook's `%%writefile NAME.py` cells wrote into its folder, served to `import NAME`
    from memory (the sandbox has no such folder to write to): a finder at the front of sys.meta_path, as the
    notebook's own folder is at the front of sys.path in Jupyter. A module is run when it is first imported, from
    what the cells before that import wrote (each cell under its own label, so that a traceback names the cell and
    its line); writing the file again after that changes nothing until a reload, as in Jupyter."""

    def __init__(self) -> None:
        self.parts: dict[str, list[tuple[str, str]]] = {}
        self.load: dict[str, Any] | None = None  # while op_load runs: its skip, progress, errors (Worker._load)

    def write(self, module: str, label: str, code: str, append: bool) -> None:
        if append and module in self.parts:
            self.parts[module].append((label, code))
        else:
            self.parts[module] = [(label, code)]
        if self not in sys.meta_path:
            sys.meta_path.insert(0, self)

    def find_spec(self, fullname: str, path: Any = None, target: Any = None) -> Any:
        if path is not None or fullname not in self.parts:
            return None
        import importlib.util
        return importlib.util.spec_from_loader(fullname, self, origin=f"{fullname}.py")

    def create_module(self, spec: Any) -> None:
        return None  # the default module object

    def exec_module(self, module: Any) -> None:
        module.__file__ = f"{module.__name__}.py"
        load = self.load
        for label, code in self.parts.get(module.__name__, []):
            if load is None:  # (imported by a check's call: as Python runs a module)
                exec(compile(code, label, "exec"), module.__dict__)
                continue
            # Imported while the notebook loads: one statement at a time, as the cells run (Worker._load). A demo
            # line after the definitions that failed, or that hung (a training loop: skipped as a cell's line is),
            # made the import fail and lost every class of a right module: 0/100 where the same code in a cell
            # earned 100 (red team, round 18). Its error is told at its own cell and line. A syntax error still
            # fails the import, as Python's would.
            tree = ast.parse(code, filename=label)
            for stmt in tree.body:
                where = f"{label}:{stmt.lineno}"
                if where in load["skip"]:
                    continue
                load["progress"].mark(where)
                try:
                    exec(compile(ast.Module(body=[stmt], type_ignores=[]), label, "exec"), module.__dict__)
                except BaseException as e:
                    err = load["describe"](e)
                    lines = load["lines"].get(label) or []
                    top = {"file": label, "line": stmt.lineno, "function": "<module>",
                           "code": _short(lines[stmt.lineno - 1].strip()) if 0 < stmt.lineno <= len(lines) else ""}
                    if err.get("where") and err["where"].get("line") != stmt.lineno:
                        top["inner"] = err["where"]
                    err["where"] = top
                    if isinstance(stmt, (ast.ClassDef, ast.FunctionDef, ast.AsyncFunctionDef)):
                        err["defines"] = stmt.name
                    load["errors"].append(err)


_ABSENT = object()


def _held(m: Any, name: str) -> Any:
    """m's attribute `name` as nn.Module keeps it: a registered parameter, buffer or module, else an entry of its
    own __dict__, else a plain (non-descriptor) class attribute, else what a property returns where that is held
    registered in m (the only case that runs m's code); _ABSENT otherwise."""
    if not isinstance(m, nn.Module):
        return getattr(m, name, _ABSENT)
    for key in ("_parameters", "_buffers", "_modules"):
        reg = _registered(m, key)
        if name in reg:
            return reg[name]
    d = own_dict(m)
    if name in d:
        return d[name]
    for klass in type(m).__mro__:
        if name in vars(klass):
            v = vars(klass)[name]
            if isinstance(v, property):
                # A property counts only where it hands out what the module holds registered (`heads` returning a
                # registered self._heads), never a container made up on each access.
                try:
                    got = getattr(m, name)
                except Exception:
                    return _ABSENT
                held = {id(c) for _, c in walk_modules(m)}
                held.update(id(t) for _, t in walk_tensors(m, "_parameters") + walk_tensors(m, "_buffers"))
                return got if id(got) in held else _ABSENT
            return _ABSENT if hasattr(type(v), "__get__") and not isinstance(v, (int, float, bool, str)) else v
    return _ABSENT


class _Guard:
    """The worker's own code as it was before the submission's ran: its request handlers (what serve() calls,
    whatever the submission later rebinds on the class), and a check that none of it has been replaced since.

    The submission runs in this process and can reach all of it, so this proves nothing against code written
    against this very check; it stops the plain patch (red team, round 11: `Worker.op_describe`, `op_state` and
    `probe_devices` wrapped at import made a plain mask attribute and heads in a list read as a registered buffer,
    an nn.ModuleList and a clean device run, for 9 points). A replaced function, a swapped __code__ or a worker of
    another class marks every later reply, and the grader then grades nothing more (proxy.py: MALFORMED)."""

    FUNCTIONS = ("probe_devices", "all_parameters", "probe_cuda", "accelerator_built", "own_dict", "_registered",
                 "walk_modules", "walk_tensors", "persistent_buffers", "_held", "_kernel_name", "_own_norm",
                 "_other_threads", "_python_threads", "_other_processes", "_process_ids", "_activity", "_alive",
                 "_uid_of", "_profile_audit", "_set_profile", "_children_mark", "_children_ran",
                 "_namespaces_intact", "_last_pid", "_bindings", "_frozen", "_plain", "_evidence",
                 "set_evidence", "_evidence_fd", "_evidence_code", "set_procs", "_cgroup_pids", "_read_proc",
                 "_own_children", "_children_by_parent", "_no_children", "_thread_start", "_task_ids", "start_cuda",
                 "_copied", "_plain_code", "_address_hash_is_identity", "_calls_by_address", "_install_filter", "refuse_torchscript", "_refuse_script", "_version_at", "_dict_of", "_version_view", "_version_now",
                 "_refused", "refuse_fused", "_fused_refused")
    VALUES = ("_INSTANCE_DICT", "_ABSENT", "SETTLE_TRIES", "SETTLE_PAUSE", "MAX_WALK", "_LIBRARY_CODE",
              "_LIBRARY_PRINTS", "_LIBRARY_LARGE", "LIBRARY",
              "_SETPROFILE", "_GETPROFILE", "_LIBRARY_KERNELS",
              "_LIBRARY_BUILTINS", "LIBRARY_ATTENTION", "_ATTENTION_CODE", "_WATCHES", "_THREAD_STARTS",
              "_CURRENT_FRAMES", "_CALL_IMPL", "_SCRIPT_MODULE",
              "_WATCHING", "_SWITCHING", "_PROFILE_EVENTS", "_NAMESPACES", "_ANY", "_IS", "_PLAIN", "_SCANNED",
              "_ALL_CODES",
              "_ALL_PRINTS", "_ALL_KERNELS", "_C_CALL_IDS", "_C_CALLS", "_CALLS_BY_ADDRESS", "_IDENTITY",
              "_IS_SUBTYPE", "_PLAIN_CONSTANTS", "_EVERY_WATCH", "_RECORDER_SAW", "_RECORDER_SAW_ALL",
              "_PLAIN_MAX", "_PLAIN_DEPTH", "_STARTSWITH", "_THREAD_START_SET", "_FILTERED_SETPROFILE", "WATCH_FILTER",
              "_watchhook", "_CODE_OF", "_CODE_SET", "_ALL_CODE_LINES",
              "_ALL_PRINT_SIZES", "_QUIET_CALL_IMPL", "_EVIDENCE_FD", "_WRITE",
              "_EVIDENCE_ID", "_FSTAT", "_LISTDIR", "_RECORDER_PROFILE", "_SET_PROFILE_CODE", "_SWITCHERS",
              "_GETFRAME", "_PROCS_FD", "_PROCS_ID", "_PREAD", "_EVIDENCE_CODES",
              "_EVIDENCE_OFF", "_EVIDENCE_ENTER", "_EVIDENCE_EXIT", "_WAITID", "_WAIT_ANY", "_FUSED",
              "_FUSED_KEYS",
              "_FUSED_LIBRARY", "_FUSED_LINES", "_DUMP_TABLE", "_OWN_THREADS", "_NAMESETS",
              "_NAMESET_MIN", "_GENERATED", "_VERSION_AT", "_REGISTRY")
    CLASSES = ("Worker", "DeviceSim", "Recorder", "BoundedText", "_ScratchFile", "_Progress", "FusedKernelRefused",
               "AuditHookRefused",
               "TorchScriptRefused", "_TorchScriptOff")
    MODULE_METHODS = ("named_modules", "named_parameters", "named_buffers", "named_children", "modules", "children",
                      "parameters", "buffers", "state_dict", "load_state_dict", "_load_from_state_dict", "to",
                      "_apply", "__setattr__", "__getattr__", "register_buffer", "register_parameter", "train",
                      "eval", "_call_impl", "_wrapped_call_impl", "__call__")

    def __init__(self, worker: "Worker"):
        mod = sys.modules[__name__]
        self.worker, self.cls, self.module = worker, type(worker), mod
        self.handlers = {n: f for n, f in vars(Worker).items() if n.startswith("op_") and callable(f)}
        self.items: list[tuple[Any, str, Any, Any]] = []
        for name in self.CLASSES:
            cls = getattr(mod, name)
            self.items.append((mod, name, cls, None))
            self.items += [(cls, n, f, f.__code__) for n, f in vars(cls).items() if isinstance(f, types.FunctionType)]
        self.items += [(mod, n, getattr(mod, n), getattr(mod, n).__code__) for n in self.FUNCTIONS]
        # And every name the worker's own code reaches between a request's bytes and the watch of its calls: the
        # builtins, os, time, torch's namespace and torch.Tensor's methods (a wrapped
        # builtins.bytearray saw each input as the protocol rebuilt it, and torch.Tensor.to or os.write, run by a
        # load_state or the progress of a sequence, could find a later step's input up the stack: each ran
        # nn.TransformerEncoderLayer out of the watch, red team round 26). A watched call that starts or ends with
        # one of them bound anew is taken to have run what it watches for (Recorder; new names, a submodule
        # imported later, do not count). Checked there, not before every reply: 3,500 names take 0.4 ms.
        import builtins
        kept = [builtins, os, time, torch, torch.Tensor]
        # (torch.manual_seed excepted: importing torch._dynamo, as a notebook's first torch.optim step does, binds it
        # anew, and every watched call after such a notebook's training cell counted as running the library: a right
        # MultiHeadAttention lost its 20 points. The worker seeds through the CPU generator, or, with CUDA, through
        # torch.manual_seed inside the call's watch, so a wrapped one runs watched.)
        # Nor names bound to plain data (a str, number or tuple of them: what no call or attribute of it can run):
        # importing pandas calls time.tzset(), which binds time.tzname anew, and a notebook that imported it had
        # every watched call counted as running the library.
        # (each with a view of its dict's version tag, and the tag now, read before the names: _namespaces_intact)
        versions = [_version_now(vars(k)) for k in kept]
        mod._NAMESPACES = tuple((*_bindings(vars(k), [n for n, v in vars(k).items() if n != "_NAMESPACES"
                                                      and not (k is torch and n == "manual_seed") and not _plain(v)]),
                                 *version) for k, version in zip(kept, versions))
        self.items += [(mod, n, getattr(mod, n), None) for n in self.VALUES]
        # What decodes the grader's tensors, and the functions it calls (protocol._torch): a submission that swapped
        # one of them saw every input before the call it was for began (red team, round 26)
        self.items += [(protocol, n, getattr(protocol, n), getattr(getattr(protocol, n), "__code__", None))
                       for n in ("_MAKERS", "_NUMPY", "_tensor", "_tagged", "_json", "unpack", "_torch", "recv",
                                 "_DECODER")]
        self.makers = dict(protocol._MAKERS)
        # (and the JSON decoder's own attributes: its scan_once, wrapped, handed every decoded value to the
        # submission, the request's tensors among them, before the call they were for began)
        self.decoder = dict(vars(protocol._DECODER))
        self.items += [(type(protocol._DECODER), n, f, f.__code__) for n in ("raw_decode", "decode")
                       for f in [vars(type(protocol._DECODER)).get(n)] if isinstance(f, types.FunctionType)]
        # Every name of the protocol module, and of the request socket's classes (socket.socket.recv_into, wrapped,
        # handed the submission every request's bytes, which protocol.unpack decodes: red team, round 26); the names
        # that send a reply too, and the JSON encoder's class, its own attributes and its module: code put there runs
        # as the reply is encoded, after the call's watch has ended, and protocol._encode wrapped by a forward handed
        # the encoder F.multi_head_attention_forward's outputs (and gradients) for its own zeros: MultiHeadAttention
        # 20 of 20 (red team, session 20). And every name of this module (its own imports: `protocol` rebound to a
        # copy with another send, the same 20 of 20), no name added to any of them either.
        import json.encoder
        encoder = protocol._ENCODER
        # (each with a view of its dict's version tag and the tag now, read first: one whose dict has not changed
        # since is not read name by name, _namespaces_intact)
        # (the size without __warningregistry__, which the warnings machinery adds to the module a warning is
        # told from: a socket the submission left unclosed, collected during a request, put one in this module's)
        self.spaces = [(space, len(space) - (_REGISTRY in space), *_bindings(space, list(space))[1:], *version)
                       for space in [vars(protocol), *(vars(c) for c in type(worker.sock).__mro__ if c is not object),
                                     vars(type(encoder)), vars(encoder), vars(json.encoder), vars(mod)]
                       for version in [_version_now(space)]]
        # What the handlers read a module's structure with: rebinding nn.Module.named_buffers would forge a buffer.
        self.items += [(nn.Module, n, f, getattr(f, "__code__", None)) for n in self.MODULE_METHODS
                       for f in [vars(nn.Module).get(n)] if f is not None]
        # Each owner's namespace, read once: a class's mappingproxy and a module's __dict__ show every later change
        # (a module's __dict__ is the one it has for life). Looked up there, not by getattr: a module-level
        # __getattr__ handing back the original for a name that was deleted does not pass.
        self.checks = [(vars(owner), name, obj, code) for owner, name, obj, code in self.items]
        # The same, checked at C speed (intact() runs before every reply: 178 names one by one took 42 us): each
        # namespace's names at once, then the code of every function at once.
        grouped: dict[int, tuple[Any, list[str]]] = {}
        for owner, name, _obj, _code in self.items:  # (by owner: vars() of a class is a new mappingproxy each time)
            grouped.setdefault(id(owner), (vars(owner), []))[1].append(name)
        self.bound = [(*_bindings(space, list(dict.fromkeys(names))), *_version_now(space))
                      for space, names in grouped.values()]
        # A name added to torch.Tensor's own dict that one of its bases has (to, clone, numpy, contiguous, device: C
        # methods and attributes of torch._C.TensorBase, which the class's dict does not hold, so no binding above
        # covers them) puts the submission's code into every use of it by the worker: the reply's encoding calls
        # numpy() on each tensor after the call's watch has ended, and a forward that set torch.Tensor.numpy to its
        # own function could compute there, unwatched, what it handed back. Checked only once the dict has changed.
        tensor_space = vars(torch.Tensor)
        self.shadowed = frozenset(n for base in torch.Tensor.__mro__[1:] for n in vars(base)) - set(tensor_space)
        self.tensor = (tensor_space, *_version_now(tensor_space))
        self.funcs = tuple(obj for _s, _n, obj, code in self.checks if code is not None)
        self.swapped = False
        self.codes = tuple(code for _s, _n, _obj, code in self.checks if code is not None)

    def intact(self) -> bool:
        try:
            if type(self.worker) is not self.cls or sys.modules.get(__name__) is not self.module:
                return False
            for space, get, values, view, tag in self.bound:  # (a name deleted: KeyError)
                if (view is None or view[0] != tag) and not all(map(_IS, get(space), values)):
                    return False
            # (each read of a function's __code__ raises an audit event, which runs the worker's audit hook: 121 of
            # them took 30 us. A function's code can only be swapped by assigning __code__, which raises one too: the
            # hook notes it (_CODE_SET), and the code is compared only then)
            if _CODE_SET or self.swapped:
                _CODE_SET.clear()
                self.swapped = self.swapped or not all(map(_IS, map(_CODE_OF, self.funcs), self.codes))
                if self.swapped:
                    return False
            for space, size, get, values, view, tag in self.spaces:  # (no name added either: one could shadow a
                if (view is None or view[0] != tag) and (  # builtin or a base's method)
                        len(space) - (_REGISTRY in space) != size or not all(map(_IS, get(space), values))):
                    return False
            space, view, tag = self.tensor
            if (view is None or view[0] != tag) and not self.shadowed.isdisjoint(space):
                return False
            made, decoder = protocol._MAKERS, object.__getattribute__(protocol._DECODER, "__dict__")
            return type(made) is dict and len(made) == len(self.makers) and all(
                dict.get(made, k) is v for k, v in self.makers.items()) and type(decoder) is dict and \
                len(decoder) == len(self.decoder) and all(dict.get(decoder, k) is v for k, v in self.decoder.items())
        except BaseException:  # (whatever the submission did to make the check itself fail)
            return False


# A module's structure read from nn.Module's own dicts, with none of the submission's methods: a class of the
# student's may override named_buffers, named_modules, parameters, state_dict, __deepcopy__, __getattr__ or a
# property (legitimate Python), and the grader must not take its word for what is registered (red team, round 12:
# named_buffers listing a plain mask, a __deepcopy__ registering it on the probe's copy, and `heads` a property
# wrapping a plain list in an nn.ModuleList earned the buffer, device and structure points).
_INSTANCE_DICT = nn.Module.__dict__["__dict__"].__get__
MAX_WALK = 4096  # modules read in one tree (the lab's have a handful)


class _TorchDefaults:
    """torch's process-wide settings that a notebook's demo cells change and leave changed, as they were before the
    submission ran. Jupyter keeps them for the cells below, but the checks call the classes afterwards on the grader's
    own float32 inputs: `torch.set_grad_enabled(False)` (or a `torch.no_grad()` entered by hand) left on cost every
    "gradients reach every weight" check of a right notebook (the backward of its output ran with grad off; correct
    variants, round 7). A class is graded as written, not under its notebook's settings. The default dtype and
    device (a float64 notebook got 8/100) are put back by _torch_defaults, which every request also starts with."""

    def __init__(self) -> None:
        self.grad = torch.is_grad_enabled()
        self.matmul = torch.get_float32_matmul_precision()
        self.deterministic = (torch.are_deterministic_algorithms_enabled(),
                              torch.is_deterministic_algorithms_warn_only_enabled())
        self.anomaly = torch.is_anomaly_enabled()
        self.threads = torch.get_num_threads()  # 1: the workers of a batch share the cores (sandbox.py)

    def restore(self) -> None:
        # Each on its own: one that fails leaves the others put back.
        steps = (lambda: torch.set_grad_enabled(self.grad),
                 _torch_defaults,  # the default dtype and device, as every request starts with them
                 lambda: torch.set_float32_matmul_precision(self.matmul),
                 # (only when changed: the call imports torch._inductor and sympy, a second of CPU and 70 MB in
                 # every worker; it slowed every submission and starved the hostile spinner test's load)
                 lambda: (torch.are_deterministic_algorithms_enabled(),
                          torch.is_deterministic_algorithms_warn_only_enabled()) == self.deterministic
                 or torch.use_deterministic_algorithms(self.deterministic[0], warn_only=self.deterministic[1]),
                 lambda: torch.autograd.set_detect_anomaly(self.anomaly),
                 # a demo's torch.set_num_threads(16): each tiny call slower
                 lambda: torch.get_num_threads() == self.threads or torch.set_num_threads(self.threads))
        for step in steps:
            try:
                step()
            except Exception:  # noqa: BLE001 - a submission that broke torch's setters gets what it made
                pass


def _device_context() -> Any:
    """The context torch.set_default_device() installs (None: the CPU, torch's default). Not
    torch.get_default_device(): it makes a tensor on that device to tell its index, which raised "Torch not compiled
    with CUDA enabled" after a notebook's set_default_device('cuda') on a machine without CUDA."""
    return getattr(getattr(torch, "_GLOBAL_DEVICE_CONTEXT", None), "device_context", None)


def _address_hash_is_identity() -> bool:
    """Whether object.__hash__ gives each live object a number of its own, as id() does (CPython: the address
    rotated by four bits, one to one)."""
    probe = [object(), [], _address_hash_is_identity]
    mask = (1 << 64) - 1
    for o in probe:
        i = id(o)
        rotated = ((i >> 4) | (i << 60)) & mask
        if rotated >= 1 << 63:
            rotated -= 1 << 64
        if sys.maxsize != (1 << 63) - 1 or object.__hash__(o) != rotated:
            return False
    return True


# An object's identity for the worker's own bookkeeping (the walks' `seen` sets, DeviceSim's moved tensors):
# id() raises the audit event "builtins.id" at every call, which runs the worker's audit hook (_profile_audit, a
# Python function): about 0.2 us each, and a watched constructor made some 320 of them (its profile function asked
# id() of every C function called). object.__hash__ is the address itself, without the event; id() where it is not.
_IDENTITY = object.__hash__ if _address_hash_is_identity() else id


def own_dict(m: Any) -> dict[str, Any]:
    """m's instance __dict__, whatever its class defines ({} where there is none)."""
    try:
        d = _INSTANCE_DICT(m)
    except (TypeError, AttributeError):
        return {}
    return d if type(d) is dict else {}


def _registered(m: Any, key: str) -> dict[str, Any]:
    d = own_dict(m).get(key)
    return d if type(d) is dict else {}


def walk_modules(m: Any) -> list[tuple[str, Any]]:
    """(name, module) for m and every module registered under it, as nn.Module.named_modules gives them (each
    once, parents first), read from the `_modules` dicts."""
    out, seen, todo = [], set(), [("", m)]
    while todo and len(out) < MAX_WALK:
        name, mod = todo.pop()
        key = _IDENTITY(mod)
        if key in seen or not isinstance(mod, nn.Module):
            continue
        seen.add(key)
        out.append((name, mod))
        kids = [(f"{name}.{k}" if name else str(k), c) for k, c in _registered(mod, "_modules").items() if c is not None]
        todo.extend(reversed(kids))
    return out


def walk_tensors(m: Any, key: str, modules: list[tuple[str, Any]] | None = None) -> list[tuple[str, Any]]:
    """(name, tensor) of every registered parameter (key "_parameters") or buffer ("_buffers"), each tensor once.
    modules: walk_modules(m), where the caller has it already."""
    out, seen = [], set()
    for name, mod in walk_modules(m) if modules is None else modules:
        for k, t in _registered(mod, key).items():
            if isinstance(t, torch.Tensor) and _IDENTITY(t) not in seen:
                seen.add(_IDENTITY(t))
                out.append((f"{name}.{k}" if name else str(k), t))
    return out


def persistent_buffers(m: Any) -> list[str]:
    """The names of the registered buffers a state_dict holds (not those made with persistent=False)."""
    out, seen = [], set()
    for name, mod in walk_modules(m):
        skip = own_dict(mod).get("_non_persistent_buffers_set")
        skip = skip if type(skip) is set else set()
        for k, t in _registered(mod, "_buffers").items():
            if isinstance(t, torch.Tensor) and k not in skip and _IDENTITY(t) not in seen:
                seen.add(_IDENTITY(t))
                out.append(f"{name}.{k}" if name else str(k))
    return out


def all_parameters(m: Any) -> list[tuple[str, Any]]:
    """m.named_parameters(), then those of modules it keeps in plain lists, tuples or dicts (heads in a Python list
    instead of nn.ModuleList), named as if registered (heads.0.W_query.weight). The grader sets and reads the
    weights such a module computes with, and the missing registration costs points once, where it is checked
    (the structure and device checks), not in every check that sets weights (a learner's plain list of heads lost
    all 15 of the wrapper's points)."""
    if not isinstance(m, nn.Module):
        return []
    modules = walk_modules(m)  # (read once: it is most of the cost of a request that loads weights)
    out = walk_tensors(m, "_parameters", modules)
    seen = None
    for name, owner in modules[:256]:
        for attr, held in list(own_dict(owner).items())[:256]:
            if type(attr) is not str or attr[:1] == "_":  # nn.Module's own _parameters, _modules...: registered
                continue
            kind = type(held)
            if (kind is not list and kind is not tuple and kind is not dict) or not held or len(held) > 64:
                continue
            items = list(held.items()) if kind is dict else list(enumerate(held))
            if not all(isinstance(x, nn.Module) for _, x in items):
                continue
            if seen is None:
                seen = {_IDENTITY(p) for _, p in out}
            for key, child in items:
                for n, p in walk_tensors(child, "_parameters"):
                    if _IDENTITY(p) not in seen:
                        seen.add(_IDENTITY(p))
                        out.append((".".join(x for x in (name, attr, str(key), n) if x), p))
    return out


_PLAIN_DTYPES = frozenset((torch.float32, torch.float64, torch.float16, torch.bfloat16, torch.int64, torch.int32,
                           torch.int16, torch.int8, torch.uint8, torch.bool))  # protocol._DTYPE_NAMES


class _ScratchFile:
    """A file of the worker's own in the scratch folder (load.progress, seq.progress) that the grader reads, kept
    open while it is written often. Opened without following a link, and opened again whenever the descriptor is
    no longer that file: the submission may close it and open a file of its own under the same number, which must
    never be written into."""

    def __init__(self, path: str, truncate: bool):
        self.path, self.truncate = path, truncate
        self._fd: int | None = None
        self._id: tuple[int, int] | None = None

    def fd(self) -> int | None:
        """The descriptor (None when the file cannot be made)."""
        if self._fd is not None:
            try:
                st = os.fstat(self._fd)
                if (st.st_dev, st.st_ino) == self._id:
                    return self._fd
            except OSError:
                pass
            self._fd = None  # not ours any more: not closed either, the number may be the submission's now
        flags = os.O_WRONLY | os.O_CREAT | os.O_NOFOLLOW | os.O_CLOEXEC | (os.O_TRUNC if self.truncate else 0)
        try:
            fd = os.open(self.path, flags, 0o600)
        except OSError:
            return None
        try:
            st = os.fstat(fd)
        except OSError:
            os.close(fd)
            return None
        self._fd, self._id = fd, (st.st_dev, st.st_ino)
        return fd

    def close(self) -> None:
        if self._fd is not None and self.fd() == self._fd:
            try:
                os.close(self._fd)
            except OSError:
                pass
        self._fd = None


class _Progress(_ScratchFile):
    """scratch/load.progress during a load: which statement runs, and how many threads and child processes exist
    as it starts, so that the grader can skip it if it never finishes (only when nothing else of the submission
    was running by then)."""

    def __init__(self, path: str):
        super().__init__(path, truncate=True)
        self.written = 0  # the longest line written so far

    def fd(self) -> int | None:
        fd = self._fd
        got = super().fd()
        if got != fd:  # a new (empty) file
            self.written = 0
        return got

    def mark(self, where: str) -> None:
        import threading
        fd = self.fd()
        if fd is None:
            return
        try:
            # One system call for the usual case, no child process at all (running or ended); only a process that
            # has children lists every thread's children in /proc.
            os.waitid(os.P_ALL, 0, os.WEXITED | os.WNOHANG | os.WNOWAIT)
            children = _children()
        except ChildProcessError:
            children = 0
        except OSError:
            children = _children()
        data = f"{where}\t{threading.active_count()}\t{children}".encode("utf-8", "replace")
        try:  # spaces over what a longer line before left (the grader strips them)
            os.pwrite(fd, data.ljust(self.written), 0)
        except OSError:
            return
        self.written = max(self.written, len(data))


def _children() -> int:
    """This process's child processes, from /proc (-1 when that cannot be read: the grader then does not skip)."""
    children = 0
    try:
        for tid in os.listdir("/proc/self/task"):
            with open(f"/proc/self/task/{tid}/children") as f:
                children += len(f.read().split())
    except OSError:
        return -1
    return children


# torch's own encoder and decoder layers and stacks: the code of their methods, taken before the submission runs.
# A block that runs it (a subclass of nn.TransformerEncoderLayer, one held inside, its forward borrowed or called)
# has PyTorch compute what the question asks the student to assemble: the exam's TransformerBlock, graded against
# that very layer, earned all its points as `class TransformerBlock(nn.TransformerEncoderLayer)` and a one-line
# __init__ (red team, round 17).
_LIBRARY_LARGE = 15  # names a function uses: the encoder layer's forward 42, its __init__ 27, its _ff_block 5
_LIBRARY_CODE = frozenset(f.__code__ for cls in (nn.TransformerEncoderLayer, nn.TransformerDecoderLayer,
                                                 nn.TransformerEncoder, nn.TransformerDecoder, nn.Transformer)
                          for f in vars(cls).values() if isinstance(f, types.FunctionType))
# The same code copied rather than borrowed: the large ones (forward, __init__) by the names they use, in order (42
# of them in the encoder layer's forward), which neither their line numbers, nor their file, nor the compiler that
# made their instructions change. A forward rebuilt from the layer's code object at other line numbers, or its text
# compiled again as the student's own (pasted into the class), was not the layer's code to the identity test above
# and earned all of Q3 (red team, round 18). The small methods (_ff_block: one line a student may write alike) are
# only told by identity.
_LIBRARY_PRINTS = frozenset(c.co_names for c in _LIBRARY_CODE if len(c.co_names) >= _LIBRARY_LARGE)
# PyTorch's fused kernel of the encoder layer (what the layer's forward calls in eval mode): called directly with the
# block's own weights, it computed all of Q3 in one line and earned 100/100 (red team, round 18). Known by name, both
# as a torch function (torch._transformer_encoder_layer_fwd, torch.ops.aten....default) and as a builtin's call.
_LIBRARY_KERNELS = frozenset({"_transformer_encoder_layer_fwd"})


def _kernel_builtins(name: str = "_transformer_encoder_layer_fwd") -> tuple:
    """The builtins that run the kernel for torch.ops.aten (their names are empty): the packet's and each overload's."""
    found = []
    try:
        packet = getattr(torch.ops.aten, name)
        found.append(packet._op)
        for name in packet.overloads():
            found.append(getattr(packet, name)._op)
    except Exception:  # noqa: BLE001 (a torch without the op: its name alone)
        pass
    return tuple(found)


_LIBRARY_BUILTINS = _kernel_builtins()
# What starts a thread. A profile function (sys.setprofile) watches only the thread that set it: a block that ran
# nn.TransformerEncoderLayer.forward in a threading.Thread and joined it earned all of the exam's Q3 (100/100, red
# team, round 21). So a watched call that starts a thread, or runs while another Python thread of the submission's
# is alive (one started at import could run the layer on request), is taken to have run that code: a forward does
# not need a thread, and a thread's work is out of sight. (A thread started through ctypes, outside these builtins
# and joined before the call returns, is not seen: code written against this check can still defeat it.)
# The same holds for another process: a server started at import (subprocess.Popen of `python -c` running the
# layer on what forward writes to its pipe) earned the exam's 100/100 too. So do a call that starts a process, and
# one that runs while another live process of the submission's exists: a child of the worker, or, where the worker
# has a uid of its own (as root), any process of that uid (a grandchild left by a double fork belongs to the keeper).
_THREAD_STARTS = tuple(f for f in [*(getattr(_thread, n, None) for n in ("start_new_thread", "start_new",
                                                                         "start_joinable_thread")),
                                   *(getattr(os, n, None) for n in ("fork", "forkpty", "system", "posix_spawn",
                                                                    "posix_spawnp")),
                                   getattr(sys.modules.get("_posixsubprocess"), "fork_exec", None)] if f is not None)
_CURRENT_FRAMES = sys._current_frames
# A TorchScript module called during a watched call: its code runs compiled, out of the watch's sight (the worker
# turns TorchScript off before the submission runs, sandbox._become_worker; one the submission compiled after
# turning it on again is taken to have run the library).
_CALL_IMPL, _SCRIPT_MODULE = nn.Module._call_impl.__code__, torch.jit.ScriptModule
# type's own issubclass, by the classes' real MRO: isinstance() also asks an object its __class__, which a property of
# the submission's answers (see _plain_code for why nothing of the submission's may run in the profile function)
_IS_SUBTYPE = type.__subclasscheck__


def _alive(pid: str) -> bool:
    """Whether process `pid` exists and is not a zombie (an ended child not yet reaped computes nothing)."""
    try:
        with open(f"/proc/{pid}/stat", "rb") as f:
            return f.read().rsplit(b")", 1)[1].split()[0] != b"Z"
    except (OSError, IndexError):
        return False


def _other_threads() -> bool:
    """Whether a Python thread other than this one exists (the worker itself runs in one thread), or another live
    process of the submission's (see above)."""
    return _python_threads() or _other_processes()


def _python_threads() -> bool:
    try:
        return len(_CURRENT_FRAMES()) > 1
    except Exception:  # noqa: BLE001 (an interpreter without it: nothing to tell)
        return False


def _other_processes() -> bool:
    return bool(_process_ids())


# The list of processes of the worker's memory cgroup (cgroup.procs), opened by the sandbox before the submission runs;
# -1 where there is none (no cgroup: not root, or a kernel without one). Every process the submission makes is in
# that group (a child is born in its parent's, and only root can move one out), so where the worker is in it, the
# list is every process of the submission's: one read of a few bytes where the scan of /proc stats every process on
# the machine (0.25 ms and more at the end of every watched call, some 90 of them per attention submission).
_PROCS_FD = -1
_PROCS_ID: tuple = ()
_PREAD = os.pread


def set_procs(fd: int) -> None:
    global _PROCS_FD, _PROCS_ID
    st = os.fstat(fd)
    _PROCS_FD, _PROCS_ID = fd, (st.st_dev, st.st_ino)


def _cgroup_pids(me: int) -> list[str] | None:
    """The other processes of the worker's cgroup; None where that list cannot tell (none, not the group's file any
    more, a group this process is not in: the keeper could not put it there, or the group is gone)."""
    if _PROCS_FD < 0:
        return None
    try:
        st = _FSTAT(_PROCS_FD)
        if (st.st_dev, st.st_ino) != _PROCS_ID:
            return None
        data = _PREAD(_PROCS_FD, 1 << 16, 0)
    except Exception:  # noqa: BLE001
        return None
    pids = data.split()
    mine = str(me).encode()
    if len(data) >= 1 << 16 or mine not in pids:
        return None
    return [p.decode() for p in pids if p != mine and p.isdigit()]


def _read_proc(path: str) -> bytes:
    """A small /proc file's bytes, read with os.open and os.read (Python's buffered text files cost five times as
    much, and a watched call reads a few of them at its start and its end)."""
    fd = os.open(path, os.O_RDONLY | os.O_CLOEXEC)
    try:
        chunks = []
        while True:
            chunk = os.read(fd, 1 << 16)
            if not chunk:
                return b"".join(chunks)
            chunks.append(chunk)
    finally:
        os.close(fd)


# waitid(P_ALL, WEXITED | WNOHANG | WNOWAIT | __WALL): fails with ECHILD only where this process has no child at all,
# live or ended and not reaped, of any of its threads, made with fork() or clone() (__WALL; Linux >= 4.7 for waitid),
# and reaps none. One system call where listing the children reads /proc/self/task and a file per thread (some 40 us
# at each end of every watched call, where a submission has none).
_WAITID = getattr(os, "waitid", None)
_WAIT_ANY = ((os.P_ALL, 0, os.WEXITED | os.WNOHANG | os.WNOWAIT | 0x40000000)
             if sys.platform.startswith("linux") and _WAITID is not None else None)


def _no_children() -> bool:
    """Whether this process surely has no child (False where that cannot be told: see _WAIT_ANY)."""
    if _WAIT_ANY is None:
        return False
    try:
        _WAITID(*_WAIT_ANY)
    except ChildProcessError:
        return True
    except Exception:  # noqa: BLE001 (EINVAL from an older kernel, a filter's EPERM: the children are listed)
        return False
    return False


def _own_children() -> set[str]:
    """The children of this process's threads (zombies included)."""
    if _no_children():
        return set()
    kids: set[str] = set()
    try:
        for tid in os.listdir("/proc/self/task"):
            kids.update(x.decode() for x in _read_proc(f"/proc/self/task/{tid}/children").split())
    except FileNotFoundError:  # a thread gone since the listing (or a kernel without CONFIG_PROC_CHILDREN)
        return _children_by_parent()
    return kids


def _children_by_parent() -> set[str]:
    """The children of this process's threads, zombies included, found by the parent each process of /proc names:
    where a thread's children file is missing. A thread that has just ended (joined, and still leaving the kernel)
    is listed in /proc/self/task and then has no file; its children, handed to another thread of the process, went
    unseen for that look (test_core's waitid test failed so once on an H200, session 19), and a kernel built without
    CONFIG_PROC_CHILDREN has no such file at all. A stat of each process (some 0.4 ms with 190)."""
    me = str(os.getpid()).encode()
    kids: set[str] = set()
    for pid in os.listdir("/proc"):
        if pid.isdigit():
            try:
                if _read_proc(f"/proc/{pid}/stat").rsplit(b")", 1)[1].split()[1] == me:
                    kids.add(pid)
            except (OSError, IndexError):
                continue  # (gone since the listing)
    return kids


def _process_ids(quick: bool = False, children: set[str] | frozenset | None = None) -> list[str]:
    """The live processes of the submission's other than this one: the children of this process's threads, and, where
    the worker has a uid of its own (as root), every process of that uid ([] where /proc cannot tell).

    quick: skip the scan of every process on the machine (a stat of each: 0.4 ms with 190 of them, at every watched
    call's start and end, and the transformer block lab watches some 130 calls per submission) where no process has been
    created since a scan that found none of the uid's (_SCANNED). Only for the start of a watched call: one hidden
    from it there (by a submission that rewrote _SCANNED) is found by the full scan at its end, and then counts as
    having run during the call."""
    me, uid = os.getpid(), os.getuid()
    found: list[str] = []
    try:
        # (children: what _own_children() gave just before, where the caller has it)
        found = [pid for pid in sorted(_own_children() if children is None else children) if _alive(pid)]
        if os.stat(f"/proc/{os.getppid()}").st_uid == uid:
            return found  # the keeper shares this uid (not root): the uid is not the submission's alone
        group = _cgroup_pids(me)
        if group is not None:
            return sorted(set(found) | {pid for pid in group if _alive(pid)})
        last = _last_pid()  # (read before the scan: a process made during it changes it)
        if quick and last is not None and type(_SCANNED[0]) is bytes and _SCANNED[0] == last:
            return found
        others = {n for n in os.listdir("/proc") if n.isdigit() and int(n) != me and _uid_of(n) == uid and _alive(n)}
        _SCANNED[0] = last if not others else None
        return sorted(set(found) | others)
    except (OSError, ValueError):
        return found


# The last process id the kernel had handed out when a scan of /proc found no process of the worker's uid but the
# worker (None: none such, or it found some): while /proc/loadavg still names it, no process has been made since.
_SCANNED: list = [None]


def _last_pid() -> bytes | None:
    """The last process id handed out in this pid namespace (/proc/loadavg's last field), None if unreadable."""
    try:
        with open("/proc/loadavg", "rb") as f:
            return f.read(256).split()[-1]
    except (OSError, IndexError):
        return None


SETTLE_TRIES, SETTLE_PAUSE = 5, 0.002  # Recorder._threads_before: at most 10 ms for other tasks to settle


# The threads of the worker's own that CUDA's driver started as the worker set CUDA up, before any of the
# submission's code ran (start_cuda): ((tid, its start time), ...). They wake now and then (the driver's event
# handler), during a watched call too, and on a GPU server a right MultiHeadAttention beside an idle thread of its
# own (a progress bar's monitor, say) lost the point of its run on CUDA now and then: the watch read the driver's
# thread as the submission's, running during the call (seen on an H200, session 19). A thread is known by its start
# time too, so that a thread of the submission's that is given the id of one that ended is not taken for it.
_OWN_THREADS: tuple = ()


def _thread_start(tid: str) -> bytes:
    """When thread `tid` of this process started (its stat's 22nd field, in clock ticks since boot); b"" if gone."""
    try:
        return _read_proc(f"/proc/self/task/{tid}/stat").rsplit(b")", 1)[1].split()[19]
    except (OSError, IndexError):
        return b""


def start_cuda() -> None:
    """In a worker that may use a GPU, before the submission's code runs: CUDA started (probe_cuda, what op_env then
    reports), and the threads that this made noted as the worker's own (_OWN_THREADS). The start costs about a
    second, which the worker's start (not the submission's time budget) now takes."""
    global _OWN_THREADS
    before = _task_ids()
    SANDBOX.update(zip(("cuda", "cuda_error"), probe_cuda()))
    _OWN_THREADS = tuple((tid, _thread_start(tid)) for tid in sorted(_task_ids() - before))


def _task_ids() -> set[str]:
    """The ids of this process's threads (none where /proc cannot tell: Windows, macOS)."""
    try:
        return set(os.listdir("/proc/self/task"))
    except OSError:
        return set()


def _activity(pids: list[str] | None = None) -> dict[str, bytes] | None:
    """Every thread of this process but the one asking and the worker's own (_OWN_THREADS), and every thread of the
    submission's other live processes (`pids`, else _process_ids()), with how much it has run: its schedstat (CPU
    time in ns, time waiting to run, times run), which moves whenever the thread runs at all. None where that cannot
    be read."""
    me = str(_thread.get_native_id())
    got = {}
    try:
        for tid in os.listdir("/proc/self/task"):
            if tid != me and not (_OWN_THREADS and (tid, _thread_start(tid)) in _OWN_THREADS):
                got[tid] = _read_proc(f"/proc/self/task/{tid}/schedstat")[:200]
        for pid in _process_ids() if pids is None else pids:
            for tid in os.listdir(f"/proc/{pid}/task"):
                got[f"{pid}/{tid}"] = _read_proc(f"/proc/{pid}/task/{tid}/schedstat")[:200]
    except (OSError, ValueError):
        return None
    return got


# A child of this process that ran during a watched call, whether or not it is still there at the call's end: one made
# with libc's fork() through ctypes (not one of _THREAD_STARTS) ran nn.TransformerEncoderLayer, wrote its output to a
# pipe and exited before forward returned (reaped, or left a zombie, which _process_ids does not list), and the exam's
# Q3 earned 100/100 (red team, round 26). The children's CPU time counts each child once reaped, and a zombie is a
# child that was not there before. (A thread started and joined through ctypes is still not seen: the process's own
# CPU clock, which counts ended threads too, is only as precise as the scheduler's tick where RLIMIT_CPU is set.)
def _children_mark() -> tuple[float, frozenset]:
    """(the reaped children's CPU time, this process's children now, zombies included)."""
    if resource is not None:
        ru = resource.getrusage(resource.RUSAGE_CHILDREN)
        spent = ru.ru_utime + ru.ru_stime
    else:
        t = os.times()
        spent = t.children_user + t.children_system
    try:
        kids = _own_children()
    except OSError:
        kids = set()
    return spent, frozenset(kids)


def _children_ran(before: tuple[float, frozenset], now: tuple[float, frozenset]) -> bool:
    """Whether a child was reaped, or a new one made, between the _children_mark()s `before` and `now`."""
    return now[0] > before[0] or bool(now[1] - before[1])


_ANY = object()  # (_Guard: a name whose value is not checked)


# What the worker's own code reaches between a request's bytes and a call's watch (set by _Guard, before the
# submission runs): each namespace with what it held then, and its dict's version tag then. See _Guard.
_NAMESPACES: tuple = ()


def _namespaces_intact() -> bool:
    """Whether every name of _NAMESPACES is bound to what it was (new names may have come). A namespace whose dict
    still has the version tag it had when the guard read it has not changed at all since (_version_view); only one
    that has is read name by name (3,500 names: some 50 us, and every watched call checks at its start and its end,
    two thirds of a watch's own cost)."""
    try:
        for _space, get, values, version, tag in _NAMESPACES:
            if version is not None and version[0] == tag:
                continue
            if not all(map(_IS, get(_space), values)):  # (a name deleted: KeyError)
                return False
        return True
    except BaseException:  # noqa: BLE001 (whatever the submission did to make the check itself fail)
        return False


def _version_at() -> int | None:
    """Where a dict holds its version tag, from the dict's address: CPython's ma_version_tag (PEP 509), which every
    change to the dict (a name bound anew, added or deleted, the dict cleared or updated) sets to a value no dict has
    had before. None where this interpreter's dicts have no such tag, or the probe below does not see it move as it
    should (Python 3.14, another Python, a build laid out otherwise): every check then reads each name."""
    if sys.implementation.name != "cpython" or not (3, 9) <= sys.version_info[:2] <= (3, 13):
        return None
    try:
        import ctypes
        if ctypes.sizeof(ctypes.c_void_p) != 8:
            return None
        used_at = object.__basicsize__
        at = used_at + ctypes.sizeof(ctypes.c_ssize_t)

        class Probe:
            pass

        module = types.ModuleType("_version_probe")
        spaces = [({"a": 1}, None), (vars(module), module), (_dict_of(vars(Probe)), Probe)]
        seen: set[int] = set()
        for space, owner in spaces:
            if space is None:
                return None
            used = ctypes.c_ssize_t.from_address(id(space) + used_at)
            tag = _version_view(space, at)
            changes = [lambda: space.__setitem__("b", object()), lambda: space.__setitem__("b", object()),
                       lambda: space.pop("b"), lambda: space.update(c=object()), lambda: space.__delitem__("c")]
            if owner is not None:
                changes += [lambda: setattr(owner, "d", object()), lambda: delattr(owner, "d")]
            for change in changes:
                before = tag[0]
                seen.add(before)
                _ = space.get("a"), len(space), list(space)  # (reading changes nothing)
                if tag[0] != before or used.value != len(space):
                    return None
                change()
                if tag[0] in seen or used.value != len(space):
                    return None
        return at
    except Exception:  # noqa: BLE001 (no ctypes, a layout other than the probe expects)
        return None


def _dict_of(space: Any) -> dict | None:
    """The dict behind a namespace: a module's __dict__ itself, the dict a class's mappingproxy shows."""
    if type(space) is dict:
        return space
    import gc
    inner = [x for x in gc.get_referents(space) if type(x) is dict]
    return inner[0] if len(inner) == 1 and len(inner[0]) == len(space) else None


def _version_view(space: Any, at: int | None) -> memoryview | None:
    """A live, read-only view of the version tag of `space`'s dict (view[0] reads it: a memoryview's item read, which
    no Python code can be put into, unlike a ctypes object's `value`, whose class the submission could give a
    property); None where there is none (_version_at)."""
    d = _dict_of(space) if at is not None else None
    if d is None:
        return None
    import ctypes
    # (read-only: the guard's view written through, the old tag put back after a name was rebound, made the fast path
    # skip the rebinding, red team session 20; a view of one's own through ctypes is writing the interpreter's memory)
    return memoryview((ctypes.c_ubyte * 8).from_address(id(d) + at)).cast("B").cast("Q").toreadonly()


def _version_now(space: Any) -> tuple[memoryview | None, int | None]:
    """(a view of `space`'s version tag, the tag now), read before its names are: (None, None) where there is none."""
    view = _version_view(space, _VERSION_AT)
    return view, None if view is None else view[0]


_IS = operator.is_
_CODE_OF = operator.attrgetter("__code__")
_VERSION_AT = _version_at()
_REGISTRY = "__warningregistry__"
_PLAIN = (str, int, float, bool, bytes, type(None))


def _plain(v: Any) -> bool:
    """Plain data of the exact built-in types (a tuple of such too): reading or using it runs no code of anyone's."""
    return type(v) in _PLAIN or type(v) is tuple and all(type(x) in _PLAIN for x in v)


def _bindings(space: Any, names: list[str]) -> tuple:
    """(space, a getter of `names` from it, what they are bound to now): `all(map(_IS, get(space), values))` then
    tells at C speed whether each is still bound to the same object (3,500 names looked up one by one in Python took
    0.4 ms, and every watched call looks twice); a getter raises KeyError for a name that is gone."""
    if len(names) == 1:
        get = (lambda s, _n=names[0]: (s[_n],))
    else:
        get = operator.itemgetter(*names) if names else (lambda s: ())
    return space, get, tuple(get(space))


def _uid_of(pid: str) -> int:
    """The owner of process `pid` (-1 once it is gone)."""
    try:
        return os.stat(f"/proc/{pid}").st_uid
    except OSError:
        return -1


LIBRARY = "library:transformer"  # in a call's `record`: note whether that code ran (a record {"fn": LIBRARY})
# torch's own multi-head attention, watched the same way (a record {"fn": LIBRARY_ATTENTION}): nn.MultiheadAttention's
# methods, F.multi_head_attention_forward (what its forward runs) and its fused kernel. The transformer_block lab's
# MultiHeadSelfAttention is graded against nn.MultiheadAttention, and one that handed its W_q, W_k, W_v and W_o to
# F.multi_head_attention_forward earned all 20 points of the question (red team, round 21). Not part of LIBRARY: the
# exam's block is built around an nn.MultiheadAttention as its paper says.
LIBRARY_ATTENTION = "library:attention"


def _attention_classes() -> list:
    """nn.MultiheadAttention and torch's other Python multi-head attention: the quantizable one computes the whole of
    it in its own `_forward_impl` (heads, scale, mask, softmax, dropout, out_proj), and called with the submission's
    projections on a namespace it earned the attention lab's 20 of 20 and the exam's Q1 35 of 35 (red team, s19)."""
    classes = [nn.MultiheadAttention]
    try:
        from torch.ao.nn import quantizable
        classes.append(quantizable.MultiheadAttention)
    except Exception:  # noqa: BLE001 (a torch without it)
        pass
    return classes


_ATTENTION_CODE = frozenset([f.__code__ for cls in _attention_classes() for f in vars(cls).values()
                             if isinstance(f, types.FunctionType)]
                            + [torch.nn.functional.multi_head_attention_forward.__code__])
# (each watch: its record's name, the code objects, the names of the large ones, the kernels' names and builtins)
_WATCHES = ((LIBRARY, _LIBRARY_CODE, _LIBRARY_PRINTS, _LIBRARY_KERNELS, _LIBRARY_BUILTINS),
            (LIBRARY_ATTENTION, _ATTENTION_CODE,
             frozenset(c.co_names for c in _ATTENTION_CODE if len(c.co_names) >= _LIBRARY_LARGE),
             # (and the Triton one, which a CUDA build of torch has: nn.MultiheadAttention does not call it)
             frozenset({"_native_multi_head_attention", "_triton_multi_head_attention"}),
             _kernel_builtins("_native_multi_head_attention")))
# What any watch looks for, together: Recorder._profile's first test, so that the profile event of a call that none
# of them looks for (nearly all of a forward's hundreds) costs a set lookup, not a pass over each watch (3.3 us a C
# call, a third of the transformer block lab's worker time). The builtins by id: each is held here, so its id is its.
_ALL_CODES = frozenset().union(*(w[1] for w in _WATCHES))
_ALL_PRINTS = frozenset().union(*(w[2] for w in _WATCHES))
# And a cheaper test first, implied by each (Recorder._profile): a code object's hash is computed afresh at every
# lookup (its constants and names hashed again), and so is a tuple's, which made a watched constructor's 370 calls cost
# 0.5 ms. Equal code objects start on the same line; names that print a large function have its number of names.
_ALL_CODE_LINES = frozenset(c.co_firstlineno for c in _ALL_CODES)
_ALL_PRINT_SIZES = frozenset(len(p) for p in _ALL_PRINTS)
# And the large functions that compute (not __init__) copied with names added: by the set of names they use, all but a
# tenth of them there. A code object rebuilt with one more name in co_names, or the layer's text pasted with one line
# that loads another global (`_x = len`), was neither the layer's code nor its names in order, and earned the exam's
# 100/100 and the attention lab's MultiHeadAttention 20 of 20 (red team, session 19). Known gap: a copy split into
# functions of fewer names each, or with a tenth of its names aliased, is not seen. ((tag, names, how many may be
# missing), ...; a function of fewer names than _NAMESET_MIN cannot hold any of them.)
_NAMESETS = tuple((w[0], frozenset(c.co_names), max(2, len(set(c.co_names)) // 10)) for w in _WATCHES for c in w[1]
                  if len(set(c.co_names)) >= 2 * _LIBRARY_LARGE and c.co_name != "__init__")
_NAMESET_MIN = min((len(names) - slack for _tag, names, slack in _NAMESETS), default=1 << 30)


# The file name of the code torch.fx generates (a GraphModule's forward, from symbolic_trace, make_fx, AOT tracing):
# such code does what the traced functions did, as new code objects. PyTorch's multi-head attention traced by make_fx
# at import, and the encoder layer through torch.func.functional_call, each run as a GraphModule in forward, earned
# the attention lab's 20 of 20 and the exam's 100/100 (red team, session 19). A watched call that runs generated
# code is taken to have run what every watch looks for; the course needs no FX. Known gap: the generated text
# compiled again under a name of the submission's is not seen.
_GENERATED = "<eval_with_key>"


_PLAIN_CONSTANTS = frozenset({type(None), bool, int, float, complex, str, bytes, type(...)})
_PLAIN_MAX = 1 << 16  # constants looked at in one code object, nested ones included (more: not plain)
_PLAIN_DEPTH = 200  # how deep they may nest (deeper: not plain; the C filter's recursion stops there)
_STARTSWITH = str.startswith  # (str's own: a co_filename of a str subclass keeps its startswith to itself)


def _plain_code(code: types.CodeType) -> bool:
    """Whether hashing or comparing `code` runs only CPython's own code: its name, line table and constants are of
    the types compile() makes, all the way down (nested tuples, frozensets, slices and code objects). Hashing a code
    object hashes its constants, and comparing compares them: code.replace(co_consts=...) with an object of the
    submission's among them ran that object's __hash__ inside the profile function, where nothing is watched, and
    it ran F.multi_head_attention_forward there: MultiHeadAttention 20 of 20 (red team, session 21). compile() never
    makes such a code object, so one is taken to have run what every watch looks for."""
    todo, seen = [(code, 0)], 0  # (object, how deep: nested more than _PLAIN_DEPTH, not plain, as in the C filter)
    while todo:
        c, depth = todo.pop()
        kind = type(c)
        seen += 1
        if seen > _PLAIN_MAX or depth > _PLAIN_DEPTH:
            return False
        if kind in _PLAIN_CONSTANTS:
            continue
        if kind is tuple or kind is frozenset:
            todo += [(x, depth + 1) for x in c]
        elif kind is slice:
            todo += [(c.start, depth + 1), (c.stop, depth + 1), (c.step, depth + 1)]
        elif kind is types.CodeType:
            if type(c.co_name) is not str or type(c.co_qualname) is not str or type(c.co_filename) is not str \
                    or type(c.co_linetable) is not bytes or type(c.co_exceptiontable) is not bytes \
                    or type(c.co_consts) is not tuple or type(c.co_names) is not tuple:
                return False
            todo.append((c.co_consts, depth + 1))
        else:
            return False
    return True


def _copied(names: tuple) -> tuple:
    """The tags of the watches whose large computing functions a code object of these co_names copies (_NAMESETS)."""
    have = frozenset(names)
    return tuple(tag for tag, lib, slack in _NAMESETS if len(lib - have) <= slack)
_ALL_KERNELS = frozenset().union(*(w[3] for w in _WATCHES))
# The C functions a watch looks for by the object itself: a C call's profile event names a builtin function or method
# (a method descriptor is bound first), whose hash and equality read its function and its __self__'s address, never
# __self__'s own __hash__ or __eq__ (_CALLS_BY_ADDRESS checks that here). Looked up as such, not by id(), whose
# audit event ran the audit hook at every C call of every watched call.
_C_CALLS = frozenset(_THREAD_STARTS + tuple(f for w in _WATCHES for f in w[4]))
_THREAD_START_SET = frozenset(_THREAD_STARTS)


def _calls_by_address() -> bool:
    """Whether a builtin method's hash and equality leave its __self__'s own methods alone (CPython 3.11+)."""
    class Loud(list):
        def __hash__(self) -> int:
            raise TypeError("hash")

        def __eq__(self, other: Any) -> bool:
            raise TypeError("eq")
    loud, calm = Loud(), Loud()
    try:
        return (loud.append in _C_CALLS) is False and loud.append == loud.append and loud.append != calm.append
    except TypeError:
        return False


_CALLS_BY_ADDRESS = _calls_by_address()
_C_CALL_IDS = frozenset(map(id, _C_CALLS))  # (where _CALLS_BY_ADDRESS is False)
_QUIET_CALL_IMPL = _CALL_IMPL not in _ALL_CODES and _CALL_IMPL.co_names not in _ALL_PRINTS
_SETPROFILE, _GETPROFILE = sys.setprofile, sys.getprofile
# The watches in force now (the Recorders of the calls under way), and whether the worker itself is switching the
# profile function. A forward that took the profile function off and put it back before returning (sys.getprofile()
# kept, sys.setprofile(None), then sys.setprofile of what it kept) ran F.multi_head_attention_forward, or the
# encoder layer's Python forward, unseen and left the watch as it found it: 100/100 for the exam's Q1 and Q3 both
# (red team, round 25). Every switch of the profile function raises the audit event "sys.setprofile" (also one made
# from C: map(sys.setprofile, ...), ctypes' PyEval_SetProfile), and an audit hook cannot be taken off: a switch made
# by anything but the watch itself during a watched call is taken to have run what the watch looks for.
_WATCHING: list = []
_SWITCHING: list = []
_CODE_SET: list = []  # a function's __code__ was assigned since _Guard.intact last looked (see there)
_PROFILE_EVENTS = frozenset({"sys.setprofile", "sys._setprofileallthreads"})  # (the latter: Python 3.12's all threads)


class AuditHookRefused(Exception):
    """Raised by the worker's audit hook at sys.addaudithook: see _profile_audit."""


def _profile_audit(event: str, _args: tuple, watching: list = _WATCHING, switching: list = _SWITCHING) -> None:
    """The audit hook of the worker (sys.addaudithook, before the submission runs): see _WATCHING above; and a
    function's __code__ assigned (_CODE_SET, for _Guard.intact)."""
    if event == "object.__setattr__":
        if len(_args) > 1 and _args[1] == "__code__":
            _CODE_SET.append(True)
        return
    if event == "sys.addaudithook":
        # No audit hook of the submission's: hooks run at audited events inside the watch's profile function, where
        # nothing is watched (reading frame.f_code is one), and one that ran F.multi_head_attention_forward there
        # earned MultiHeadAttention's 20 of 20 (red team, session 21). An Exception raised here makes
        # sys.addaudithook add nothing, silently.
        raise AuditHookRefused("the grader's worker takes no audit hooks")
    if event in _PROFILE_EVENTS:
        if watching and not switching:
            for rec in watching:
                rec.off = True
        # The evidence from what runs now, not from those two lists, which the submission can empty or fill: the
        # profile function in force (the audit event comes before the switch) is a watch's, and the switch is not
        # the watch's own (_set_profile, called from Recorder.__enter__ or __exit__).
        now = _GETPROFILE()
        rec = getattr(now, "__self__", None)
        if type(rec) is Recorder and getattr(now, "__func__", None) is _RECORDER_PROFILE:
            try:
                caller = _GETFRAME(1)
                own = caller.f_code is _SET_PROFILE_CODE and caller.f_back.f_code in _SWITCHERS
            except Exception:  # noqa: BLE001
                own = False
            if not own:
                _evidence(_EVIDENCE_OFF, rec.step)


def _install_filter() -> Any:
    """The C filter's switch (_watchhook.setprofile) with the watches' constants given to it, or None where there is
    no C filter (not built, or turned off for a test) and Recorder._profile gets every event itself.

    The filter decides in C, by Recorder._profile's own rules, which events that function would note anything about
    and hands it only those, unchanged (autograder/_watchhook.c says why: no Python code of any kind runs inside a
    profile function until there is something to note). A watched constructor of the attention lab's
    MultiHeadAttention made some 970 events, a Python call each: about three quarters of its cost."""
    if _watchhook is None or os.environ.get("GRADE_WATCH_FILTER") == "python":
        return None
    try:
        tags = [w[0] for w in _WATCHES]
        _watchhook.install(_ALL_CODE_LINES, _ALL_PRINT_SIZES, _LIBRARY_LARGE, _CALL_IMPL, _SCRIPT_MODULE,
                           _QUIET_CALL_IMPL, _THREAD_START_SET,
                           tuple((frozenset(codes), frozenset(prints), frozenset(kernels), frozenset(builtins))
                                 for _tag, codes, prints, kernels, builtins in _WATCHES),
                           tuple((tags.index(tag), names, slack) for tag, names, slack in _NAMESETS),
                           _NAMESET_MIN, _GENERATED)
    except (RuntimeError, TypeError, ValueError):  # installed already (a module imported twice), or a filter built
        # from other sources than this module's: in Python
        return None
    return _watchhook.setprofile


_FILTERED_SETPROFILE = _install_filter()
_EVERY_WATCH = (1 << len(_WATCHES)) - 1
WATCH_FILTER = "c" if _FILTERED_SETPROFILE is not None else "python"  # (said in a result's sandbox modes)


def _set_profile(fn: Any, mask: int = -1) -> None:
    """The watch's own switch of the profile function (not a submission's: _profile_audit lets it pass). A watch's
    own profile function goes behind the C filter where there is one, which hands it only what notes a watch of
    `mask` (Recorder.mask; -1: every watch); anything else (the profile function in force before the watch, put
    back) as sys.setprofile sets it."""
    _SWITCHING.append(True)
    try:
        if _FILTERED_SETPROFILE is not None and type(fn) is types.MethodType and fn.__func__ is _RECORDER_PROFILE:
            _FILTERED_SETPROFILE(fn, mask if type(mask) is int and mask >= 0 else _EVERY_WATCH)
        else:
            _SETPROFILE(fn)
    finally:
        _SWITCHING.pop()


# The write end of the evidence pipe (protocol.EVIDENCE), set by the sandbox before any of the submission's code runs;
# -1 where there is none (an unsandboxed worker: the records in the replies are all there is).
_EVIDENCE_FD = -1
_EVIDENCE_ID: tuple = ()  # its (st_dev, st_ino): the pipe itself, whatever descriptor the submission puts there
_WRITE, _FSTAT, _LISTDIR = os.write, os.fstat, os.listdir


def set_evidence(fd: int) -> None:
    global _EVIDENCE_FD, _EVIDENCE_ID
    st = os.fstat(fd)
    _EVIDENCE_FD, _EVIDENCE_ID = fd, (st.st_dev, st.st_ino)


def _evidence_fd() -> int:
    """The descriptor of the evidence pipe: _EVIDENCE_FD, or where the submission moved the pipe if it put something
    else there (a forward that dup2'd /dev/null onto it, ran F.multi_head_attention_forward and put the pipe back
    kept all 20 points); -1 where this process holds it nowhere (the grader then sees it closed, or the process
    that holds it counts as having run during the call)."""
    try:
        st = _FSTAT(_EVIDENCE_FD)
        if (st.st_dev, st.st_ino) == _EVIDENCE_ID:
            return _EVIDENCE_FD
    except Exception:  # noqa: BLE001
        pass
    try:
        for name in _LISTDIR("/proc/self/fd"):
            try:
                st = _FSTAT(int(name))
            except Exception:  # noqa: BLE001 (the listing's own descriptor, closed by now)
                continue
            if (st.st_dev, st.st_ino) == _EVIDENCE_ID:
                return int(name)
    except Exception:  # noqa: BLE001
        pass
    return -1


# What a record's first byte is for each watch, as protocol.EVIDENCE says, held here in a tuple (protocol's table is a
# dict the submission could refill, and its evidence_code a function it could give other code: a block that gave it
# code naming every watch with the attention's byte, which a Q3 call does not ask for, kept all of Q3)
_EVIDENCE_CODES = tuple((name, code) for code, name in protocol.EVIDENCE.items())
_EVIDENCE_OFF, _EVIDENCE_ENTER = protocol.EVIDENCE_OFF, protocol.EVIDENCE_ENTER
_EVIDENCE_EXIT = protocol.EVIDENCE_EXIT


def _evidence_code(tag: str) -> bytes:
    for name, code in _EVIDENCE_CODES:
        if name == tag:
            return code
    return _EVIDENCE_OFF


def _evidence(code: bytes, step: Any) -> None:
    """Tell the grader at once, on the evidence pipe, that watch `code` saw what it looks for at request step `step`
    (see protocol.EVIDENCE). A full pipe (the submission's own bytes) already counts against it there."""
    if _EVIDENCE_FD >= 0:
        fd = _evidence_fd()
        try:
            _WRITE(fd, code + (step if type(step) is int and 0 <= step < 65536 else 0).to_bytes(2, "big"))
        except Exception:  # noqa: BLE001 (not there: see _evidence_fd)
            pass


# torch's fused transformer kernels, refused in a worker on every backend that has them. The library watch saw them from
# Python (the profile function, the function mode) and below it (a dispatch mode), but a forward that turned both
# modes off (torch._C._DisableTorchDispatch() and DisableTorchFunction()) and called the kernel from C
# (functools.partial(torch._transformer_encoder_layer_fwd)(...), or a torch.jit.CompilationUnit function) ran it
# unseen: the exam's Q3 100/100 (session 18). A kernel registered for the backend itself is reached however the call is
# made. PyTorch's own layers reach these kernels only on their "fast path", which the worker turns off
# (torch.backends.mha.set_fastpath_enabled(False)): nn.MultiheadAttention and nn.TransformerEncoderLayer then compute
# with their Python code, which the profile function watches, and a call of the kernel itself can only be the
# submission's.
_FUSED = tuple(sorted(_ALL_KERNELS))  # ("_native_multi_head_attention", "_transformer_encoder_layer_fwd")
_FUSED_KEYS: dict[str, tuple[str, ...]] = {}  # op -> the dispatch keys refused (refuse_fused)
_FUSED_LIBRARY: list = []  # the torch.library.Library that holds the refusals, kept alive here
# each op's lines of torch's dispatch table while it is refused, by its qualified name
# ("CPU: registered at FILE:LINE [kernel]")
_FUSED_LINES: dict[str, tuple] = {}
_DUMP_TABLE = torch._C._dispatch_dump_table


class FusedKernelRefused(RuntimeError):
    """What a call of a fused kernel raises in a worker (refuse_fused). `tag`: the watch whose kernel it is, which the
    error's reply names ("library"), so that the grader says what it says of the watch's code, also where the call
    was not watched (the attention lab's evidence gate calls the class unwatched first)."""

    def __init__(self, name: str, tag: str):
        super().__init__(f"PyTorch's fused kernel aten::{name} is turned off while grading: the layer has to be "
                         f"computed by the submission's own code")
        self.tag = tag


def _refused(name: str, *_args: Any, **_kwargs: Any) -> Any:
    """The kernel of fused op `name` in a worker: every watch under way notes the kernel, and the call raises."""
    try:
        for rec in list(_WATCHING):
            rec.saw_kernel(name)
    except Exception:  # noqa: BLE001 (the list is the submission's to spoil: the call still raises)
        pass
    raise FusedKernelRefused(name, next((w[0] for w in _WATCHES if name in w[3]), ""))


class TorchScriptRefused(RuntimeError):
    """What compiling TorchScript raises in a worker (refuse_torchscript)."""

    def __init__(self, what: str):
        super().__init__(f"TorchScript is turned off while grading ({what}): the submission's code runs as Python")


class _TorchScriptOff:
    """torch.jit._state._enabled's class in a worker: TorchScript stays off (torch.jit.script and trace hand back
    what they are given), whatever torch.jit._state.enable() sets."""

    enabled = property(lambda self: False, lambda self, value: None)

    def __bool__(self) -> bool:
        return False


# TorchScript's compilers, refused in a worker (refuse_torchscript): torch._C's functions, and the methods of its
# classes, that make compiled code from source, a trace or a saved file. Code that runs compiled is out of the
# profile function's sight (a call of a scripted function or method makes no profile event), and TorchScript compiles
# the Python functions it calls: torch.jit.script(F.multi_head_attention_forward), compiled after turning
# TorchScript on again, earned the attention lab's 20 of 20 and the exam's Q1, and an encoder layer made without its
# __init__, scripted and called through its forward, Q3's 35 (red team, session 19). The course needs none of it.
_TORCHSCRIPT_FUNCTIONS = ("_jit_script_compile", "_jit_script_class_compile", "_jit_script_compile_overload",
                          "_create_module_with_type", "_create_function_from_trace",
                          "_create_function_from_trace_with_dict", "import_ir_module", "import_ir_module_from_buffer",
                          "_import_ir_module_from_package", "_load_for_lite_interpreter",
                          "_load_for_lite_interpreter_from_buffer")
_TORCHSCRIPT_METHODS = (("CompilationUnit", ("__init__", "define", "create_function")),
                        ("ScriptModule", ("_create_method_from_trace", "_create_method_from_trace_with_dict",
                                          "_define")),
                        ("ConcreteModuleType", ("_create_methods_and_properties", "_create_hooks")))


def _refuse_script(what: str) -> Any:
    def refused(*_args: Any, **_kwargs: Any) -> Any:
        raise TorchScriptRefused(what)
    return refused


def refuse_torchscript() -> None:
    """In a worker, before any of the submission's code runs: TorchScript cannot be turned on again, and its
    compilers raise TorchScriptRefused (see _TORCHSCRIPT_FUNCTIONS). Never in the grader or the zygote."""
    import torch.jit._state as state
    state._enabled.__class__ = _TorchScriptOff
    for name in _TORCHSCRIPT_FUNCTIONS:
        if hasattr(torch._C, name):
            setattr(torch._C, name, _refuse_script(f"torch._C.{name}"))
    for cls_name, methods in _TORCHSCRIPT_METHODS:
        cls = getattr(torch._C, cls_name, None)
        for name in methods if cls is not None else ():
            if name in vars(cls):
                setattr(cls, name, _refuse_script(f"{cls_name}.{name}"))


def refuse_fused() -> None:
    """Refuse _FUSED in this process (the worker, before any of the submission's code runs; never the grader, which
    computes the expected values with PyTorch's layers)."""
    import functools
    import warnings
    if _FUSED_LIBRARY:
        return
    try:
        torch.backends.mha.set_fastpath_enabled(False)
    except AttributeError:  # (a torch without the switch: its layers then reach the kernels, refused below)
        pass
    lib = torch.library.Library("aten", "IMPL")
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # ("Overriding a previously registered kernel")
        for op in _FUSED:
            keys = set()
            for line in _DUMP_TABLE(f"aten::{op}").splitlines():
                key, _, rest = line.partition(": ")
                if rest.endswith("[kernel]") and not key.startswith(("Meta", "Autograd", "Autocast", "Tracer")):
                    keys.add(key)
            if not keys:
                continue  # (no backend of this torch has it: the Triton kernel in a CPU build)
            keys |= {"CPU", "CUDA"}
            refused = []
            for key in sorted(keys):
                try:
                    lib.impl(op, functools.partial(_refused, op), key)
                    refused.append(key)
                except (RuntimeError, ValueError):
                    if key == "CPU":  # (no worker runs with torch's own there: the grader's failure, as Landlock's)
                        raise
            _FUSED_KEYS[op] = tuple(refused)
    _FUSED_LIBRARY.append(lib)
    at = next(x for x in _DUMP_TABLE(f"aten::{_FUSED[0]}").splitlines() if x.startswith("CPU: "))[len("CPU: "):]
    _FUSED_LINES.update((f"aten::{op}", tuple(f"\n{key}: {at}\n" for key in keys)) for op, keys in _FUSED_KEYS.items())


def _fused_refused() -> bool:
    """Whether each backend's kernel of each fused op is still the worker's refusal (not torch's own kernel, put back
    by a submission that found the Library and destroyed it). True where nothing was refused (the grader)."""
    if not _FUSED_LIBRARY:
        return True
    try:
        for op, lines in _FUSED_LINES.items():
            table = "\n" + _DUMP_TABLE(op) + "\n"
            for line in lines:  # (no generator: each of its steps is a profile event of the watch that calls this)
                if line not in table:
                    return False
        return True
    except Exception:  # noqa: BLE001
        return False


def watch_profile_switches() -> None:
    """Install _profile_audit (once per process; the worker calls it before any of the submission's code runs)."""
    if not getattr(watch_profile_switches, "done", False):
        sys.addaudithook(_profile_audit)
        watch_profile_switches.done = True


def _kernel_name(func: Any) -> str:
    """A torch function's own name without an overload (`_transformer_encoder_layer_fwd.default`); "" if none."""
    try:
        name = func.__name__
    except Exception:  # noqa: BLE001 (whatever was called: a submission's object may raise on any attribute)
        return ""
    return name.split(".", 1)[0] if type(name) is str else ""


class Recorder(TorchFunctionMode):
    """Keeps a copy of the first argument of the named torch functions (e.g. what went into softmax); with LIBRARY
    (or LIBRARY_ATTENTION) among the names, also notes whether the code of torch's transformer layers (of its
    multi-head attention) ran, or the watch was taken off.
    With "layer_norm" among them, an nn.LayerNorm subclass whose own forward computes the norm (mean and variance
    written out) is recorded as one layer_norm call of what it is given, and the torch calls inside it are not."""

    def __init__(self, names: list[str], step: int = 0):
        super().__init__()
        self.names = set(names)
        self.step = step  # the request's step (op_seq): what the evidence pipe names
        self.seen: list[dict[str, Any]] = []
        self.watches = tuple(w for w in _WATCHES if w[0] in self.names)
        self.tags = frozenset(w[0] for w in self.watches)
        self.mask = sum(1 << i for i, w in enumerate(_WATCHES) if w[0] in self.names)  # (the C filter's)
        self.library = bool(self.watches)
        self.hook, self.was = self._profile, None
        self.ran: set[str] = set()  # the watches whose code ran
        self.off = False  # whether something else switched the profile function during the call (_profile_audit)
        self.norms = "layer_norm" in self.names
        self.inside, self.handles = 0, []  # how deep in such a subclass's forward; its hooks
        # The function mode (this object on torch's stack of them: __torch_function__) only where the call records
        # what a torch function is given (softmax's scores); a watch for torch's layers does without it. It saw
        # their fused kernels called by name, as the profile function does where they are called from Python, and
        # a dispatch mode (_KernelWatch) watched for them below Python (a TorchScript function's call): since
        # session 18 the worker refuses those kernels outright (refuse_fused), which no mode can be taken off to
        # hide, and the two modes were half of a watched call's cost.
        self.modes = bool(self.names - self.tags) or not self.library
        # whether other threads or processes of the submission's were there, and how much each had run (_threads_before)
        self.threads, self.idle = False, {}
        self.children: tuple | None = None  # _children_mark() at the start of the call
        self.tampered = False  # whether a name the worker calls was rebound at the start of the call

    def saw(self, tag: str) -> None:
        """What watch `tag` looks for ran: noted here where this call watches for it, and at once on the evidence
        pipe whether or not it does. The grader keeps the records of the watches it asked for: which ones this
        call watches is the Recorder's own state, which the code it watches can empty (`watches`, `ran`)."""
        _evidence(_evidence_code(tag), self.step)
        if tag in self.tags:
            self.ran.add(tag)

    def saw_all(self) -> None:
        """Every watch's code may have run unseen (a thread started, a TorchScript module called)."""
        for w in _WATCHES:
            _RECORDER_SAW(self, w[0])

    def saw_kernel(self, name: str) -> None:
        for tag, _codes, _prints, kernels, _builtins in _WATCHES:
            if name in kernels:
                _RECORDER_SAW(self, tag)

    def _norm_enter(self, module, args) -> None:
        if _own_norm(module):
            if not self.inside and args and isinstance(args[0], torch.Tensor) and len(self.seen) < 16:
                self.seen.append({"fn": "layer_norm", "input": args[0].detach().clone(), "dim": None})
            self.inside += 1

    def _norm_exit(self, module, args, out) -> None:
        if _own_norm(module):
            self.inside = max(0, self.inside - 1)

    def _profile(self, frame, event, arg) -> None:
        # Nothing of the submission's may run in here: CPython turns profiling off while a profile function runs, so
        # what it would run here makes no events. Hence no isinstance() of its objects (their __class__), and no hash
        # or comparison of a code object before _plain_code (its constants' own __hash__ and __eq__). And what it
        # notes goes through the class's own saw and saw_all, not this object's attributes: a forward that set
        # `sys.getprofile().__self__.saw = lambda tag: None` (and saw_all) ran F.multi_head_attention_forward unseen,
        # 20 of 20 (session 21).
        if event == "call":
            code = frame.f_code
            if code is _CALL_IMPL:  # (every module's call: looked for by no watch, _QUIET_CALL_IMPL)
                if _IS_SUBTYPE(_SCRIPT_MODULE, type(frame.f_locals.get("self"))):
                    _RECORDER_SAW_ALL(self)
                if _QUIET_CALL_IMPL:
                    return
            used = code.co_names
            if type(used) is not tuple:  # (code.replace(co_names=) of a tuple subclass: its __len__ and __hash__)
                _RECORDER_SAW_ALL(self)
                return
            lines = code.co_firstlineno in _ALL_CODE_LINES
            names = len(used) in _ALL_PRINT_SIZES and used in _ALL_PRINTS
            if (lines or names) and not _plain_code(code):
                _RECORDER_SAW_ALL(self)  # (a code object made to run code when compared: code.replace, CodeType)
                return
            if not (lines and code in _ALL_CODES) and not names:
                if len(used) >= _NAMESET_MIN:  # (rare: a function of 40 names and more)
                    for tag in _copied(used):
                        _RECORDER_SAW(self, tag)
                if _STARTSWITH(code.co_filename, _GENERATED):
                    _RECORDER_SAW_ALL(self)
                return  # (what no watch looks for)
            for tag, codes, prints, _kernels, _builtins in _WATCHES:
                if code in codes or len(code.co_names) >= _LIBRARY_LARGE and code.co_names in prints:
                    _RECORDER_SAW(self, tag)
        elif event == "c_call":
            if (arg not in _C_CALLS) if _CALLS_BY_ADDRESS else (id(arg) not in _C_CALL_IDS):
                try:
                    name = arg.__name__  # (a builtin's: C code, as _kernel_name's, without a call)
                except AttributeError:
                    name = None
                if name not in _ALL_KERNELS and (type(name) is not str or "." not in name
                                                 or _kernel_name(arg) not in _ALL_KERNELS):
                    return  # (what no watch looks for)
            # (a builtin equal to a watched one, its function bound to the same object, is that function: looked up as
            # the C filter does, by address, where _CALLS_BY_ADDRESS)
            if any(arg is f for f in _THREAD_STARTS) or _CALLS_BY_ADDRESS and arg in _THREAD_START_SET:
                _RECORDER_SAW_ALL(self)
                return
            name = _kernel_name(arg)
            for tag, _codes, _prints, kernels, builtins in _WATCHES:
                if name in kernels or any(arg is f or _CALLS_BY_ADDRESS and arg == f for f in builtins):
                    _RECORDER_SAW(self, tag)

    def _threads_before(self) -> None:
        """At the start of a watched call: another thread or live process of the submission's can do the work
        unseen, but only if it runs during the call, so how much each has run is noted now (_threads_after). One
        still finishing a request of an earlier call (a server process writing its last reply, then waiting for
        the next) is given a few milliseconds to settle first, so that it is not read as running in this one; one
        that keeps running counts."""
        # (the processes are found once here, where no scan of /proc is made while no process has been made since
        # one that found none, and once in full at the end: a full look reads all of /proc, tenths of a millisecond
        # to 3 ms in a worker, and since round 26 every call of the attention lab's MultiHeadAttention is watched)
        mark = _children_mark()
        pids = _process_ids(quick=True, children=mark[1])
        self.threads = _python_threads() or bool(pids)
        # (with no other Python thread and no process, how much each thread had run is not read: a thread or process
        # found at the end was then not there, or ran no Python, at the start, which counts as running whatever it
        # did, as a thread or process missing from the start's reading does; see _threads_after)
        self.idle = _activity(pids) if self.threads else None
        for _ in range(SETTLE_TRIES if self.threads else 0):
            time.sleep(SETTLE_PAUSE)
            now = _activity()
            if now == self.idle:
                break
            self.idle = now
        self.children = _children_mark() if self.threads else mark  # (after the others settled, if there were any)

    def _threads_after(self) -> None:
        """At its end: a thread or process of the submission's that ran meanwhile (or started or ended) may have done
        the work unseen, so the watches' code is taken to have run. One that slept through the call cannot have: a
        monitor thread left from import (a progress bar's, a flood of sleeping threads: hostile case stop_flood) or
        sleeping processes in sessions of their own (stop_setsid_children) cost a right MultiHeadAttention all 20
        points, "runs PyTorch's own multi-head attention", while a pool's thread or a server process that runs the
        layer on request still counts."""
        now = _children_mark()
        ran = self.children is not None and _children_ran(self.children, now)  # (a child made or reaped)
        pids = _process_ids(children=now[1])  # (a full scan: see _process_ids)
        if ran or (self.threads or _python_threads() or pids) and (self.idle is None or _activity(pids) != self.idle):
            self.ran.update(w[0] for w in self.watches)

    def __enter__(self):
        if self.library:
            # (one per watched step: a forward that called the watch's __exit__ early, ran the layer unwatched and
            # called __enter__ again left two, which the grader reads as the watch taken off)
            _evidence(_EVIDENCE_ENTER, self.step)
            # (what the other threads and processes had run, read before the profile function is on, where each of the
            # reads' calls is not a profile event: a thread that runs in between counts, as one that runs later does)
            self._threads_before()
            self.was = _GETPROFILE()
            _set_profile(self.hook, self.mask)
            _WATCHING.append(self)
            # (the refusal of the fused kernels is checked at the end only: one undone before the call is still
            # undone then, unless code run during the call put it back, and code run during the call could as well
            # have undone it there)
            self.tampered = not _namespaces_intact()
        if self.norms:
            self.handles = [nn.modules.module.register_module_forward_pre_hook(self._norm_enter),
                            nn.modules.module.register_module_forward_hook(self._norm_exit, always_call=True)]
        return super().__enter__() if self.modes else self

    def __exit__(self, *exc):
        for h in self.handles:
            h.remove()
        self.handles = []
        if self.library:
            # (written first, whoever runs this: an end run by the submission's code, on this watch or on a Recorder
            # of its own, is one end too many for the grader, protocol.read_evidence)
            _evidence(_EVIDENCE_EXIT, self.step)
            # (a name the worker calls rebound, before the call or during it: the call's input may have been
            # seen, and the watched code run, before the watch began; see _Guard)
            watched = _GETPROFILE() is self.hook and not self.off and not self.tampered and _namespaces_intact() \
                and _fused_refused()
            if self in _WATCHING:
                _WATCHING.remove(self)
            was = self.was  # (a watch's of an outer call, put back with the watches it asked for)
            outer = getattr(was, "__self__", None) if type(was) is types.MethodType else None
            _set_profile(was, vars(outer).get("mask", -1) if type(outer) is Recorder else -1)
            self._threads_after()
            for w in self.watches:
                if w[0] in self.ran or not watched:  # (a forward that takes the watch off is taken to have run it)
                    self.seen.append({"fn": w[0], "input": None, "watched": watched})
            if not watched:  # (every watch of the step, whatever `watches` holds by now)
                _evidence(_EVIDENCE_OFF, self.step)
            elif self.ran:
                for tag in self.ran:
                    _evidence(_evidence_code(tag), self.step)
        return super().__exit__(*exc) if self.modes else None

    def __torch_function__(self, func, types, args=(), kwargs=None):
        kwargs = kwargs or {}
        try:
            name = func.__name__
        except AttributeError:
            name = ""
        if self.library:
            kernel = name if type(name) is str and "." not in name else _kernel_name(func)
            if kernel in _ALL_KERNELS:
                self.saw_kernel(kernel)
        if name in self.names and args and isinstance(args[0], torch.Tensor) and len(self.seen) < 16 \
                and not (self.inside and name == "layer_norm"):
            dim = kwargs.get("dim", args[1] if len(args) > 1 else None)
            self.seen.append({"fn": name, "input": args[0].detach().clone(),
                              "dim": dim if type(dim) is int else None})
        return func(*args, **kwargs)


# (_profile_audit: the watch's profile function, and the code that switches it on and off)
_RECORDER_PROFILE = Recorder._profile
_RECORDER_SAW, _RECORDER_SAW_ALL = Recorder.saw, Recorder.saw_all
_SET_PROFILE_CODE = _set_profile.__code__
_SWITCHERS = frozenset({Recorder.__enter__.__code__, Recorder.__exit__.__code__})
_GETFRAME = sys._getframe


def _own_norm(module: Any) -> bool:
    """An nn.LayerNorm whose class writes its own forward (a subclass that computes the norm itself)."""
    return isinstance(module, nn.LayerNorm) and getattr(type(module), "forward", None) is not nn.LayerNorm.forward


SIMULATED = "meta"  # the name DeviceSim's device goes by (in `tensor.device` and in probe replies)
_DEVICE_NAME = re.compile(r"(cpu|cuda|meta|mps|xpu)(:\d+)?")
_GETTERS = {torch.Tensor.device.__get__: torch.device(SIMULATED), torch.Tensor.is_meta.__get__: True}
# Calls that legally take tensors from two devices: the result's device is the target's (`to`, `type_as`, a
# copy's destination) or the first argument's (only the other's shape is used).
_TARGET_SECOND = {"to", "type_as"}
_SHAPE_ONLY = {"copy_", "expand_as", "view_as", "reshape_as"}
# Indexing: index tensors may sit on the CPU whatever the indexed tensor's device (PyTorch: "indices should be
# either on cpu or on the same device as the indexed tensor"); a value written must sit with the indexed tensor.
_INDEXING = {"__getitem__", "__setitem__", "index_put_", "index_put"}


class DeviceSim(TorchFunctionMode):
    """Runs a forward on the CPU as if the module's parameters and buffers (what .to(device) moves) and its input
    sat on another device: those tensors are tagged, and so is every result computed from them, or created with
    `device=` one of their devices. A call that gets tagged and untagged tensors (of dim > 0: a 0-dim CPU
    tensor may meet any device) is recorded and raises, as it would on a GPU.

    Why not the meta device: in PyTorch 2.x its first use imports sympy, dynamo and inductor (1.5 s, 70 MB),
    which every worker forked from the zygote would then copy. And real data lets code that reads values
    (`.item()`, an assert) run here, so it is judged too.
    """

    def __init__(self):
        super().__init__()
        self.moved: "weakref.WeakValueDictionary[int, torch.Tensor]" = weakref.WeakValueDictionary()
        self.mixed: list[list[Any]] = []
        self.causal_sdpa = False  # scaled_dot_product_attention(is_causal=True) without attn_mask was called
        self.to_cpu = False  # a tensor on the (simulated) device was moved to the CPU: .cpu(), .to("cpu")
        # masked_fill of scores on the device by a causal mask (triu(ones, diagonal=1) in its last two dimensions) that
        # forward made on the device too: `torch.triu(torch.ones(T, T, device=x.device), diagonal=1)`.
        self.forward_mask = False

    def move(self, t: torch.Tensor) -> torch.Tensor:
        self.moved[_IDENTITY(t)] = t
        return t

    def script_call(self, fn: Any, args: tuple, kwargs: dict) -> Any:
        """A TorchScript function called from forward: its ops run inside TorchScript, where __torch_function__
        sees none of them, so its result came back untagged and a right forward with a `@torch.jit.script` helper
        was told it mixed devices (variants round 5). It is taken as one op: its tensor arguments must sit on one
        device, and what it returns sits where they do (what it makes inside on its own stays unseen here)."""
        tensors = [a for a in tree_flatten((args, kwargs))[0] if isinstance(a, torch.Tensor)]
        devices = {self._device(a) for a in tensors if a.dim() > 0}
        if len(devices) > 1:
            if len(self.mixed) < 20:
                self.mixed.append([str(getattr(fn, "name", "") or "script function"), sorted(devices)])
            raise RuntimeError("Expected all tensors to be on the same device, but found at least two devices, "
                               + " and ".join(sorted(devices)) + "!")
        if any(self.on(t) for t in tensors):
            # What it makes on the CPU itself (torch.ones(n, n) without device=) and hands to an op with its
            # arguments' tensors would mix devices on a GPU: such a mask inside a TorchScript helper passed this
            # check (red team, round 22; TorchScript turned on again, or a torch.jit.CompilationUnit).
            mixes = _script_mixes(fn)
            if mixes is not None:
                if len(self.mixed) < 20:
                    self.mixed.append([mixes, ["cpu", SIMULATED]])
                raise RuntimeError(f"Expected all tensors to be on the same device, but found at least two devices, "
                                   f"cpu and {SIMULATED}!")
        out = fn(*args, **kwargs)
        if any(self.on(t) for t in tensors):
            for t in tree_flatten(out)[0]:
                if isinstance(t, torch.Tensor):
                    self.move(t)
        return out

    def on(self, t: Any) -> bool:
        return isinstance(t, torch.Tensor) and self.moved.get(_IDENTITY(t)) is t

    def _device(self, t: torch.Tensor) -> str:
        return SIMULATED if self.on(t) else t.device.type

    def __torch_function__(self, func, types, args=(), kwargs=None):
        kwargs = kwargs or {}
        if args and self.on(args[0]):
            for getter, value in _GETTERS.items():
                if func == getter:
                    return value
        flat, spec = tree_flatten((args, kwargs))
        explicit = None  # the device named by a device argument, if any
        devices = set()
        for i, a in enumerate(flat):
            if isinstance(a, torch.Tensor):
                if a.dim() > 0:
                    devices.add(SIMULATED if self.on(a) else a.device.type)
            elif isinstance(a, torch.device) or (type(a) is str and _DEVICE_NAME.fullmatch(a)):
                explicit = torch.device(a).type
                if explicit == SIMULATED:
                    flat[i] = torch.device("cpu")
        name = getattr(func, "__name__", None) or str(func)
        if name == "scaled_dot_product_attention" and kwargs.get("is_causal") is True \
                and kwargs.get("attn_mask") is None and (len(args) < 4 or args[3] is None):
            self.causal_sdpa = True  # its causal mask is made inside, on the inputs' device
        if name in ("masked_fill", "masked_fill_") and len(args) >= 2 and self.on(args[0]) \
                and isinstance(args[1], torch.Tensor) and self.on(args[1]) and _causal_mask(args[1]):
            self.forward_mask = True
        if name in ("cpu", "cuda"):  # Tensor.cpu(), Tensor.cuda(): a move named by the method
            explicit = name
        if explicit == "cpu" and args and self.on(args[0]):
            self.to_cpu = True
        indexing = name in _INDEXING and bool(args) and isinstance(args[0], torch.Tensor)
        if indexing:
            where = self._device
            devices = {where(t) for t in [args[0], *tree_flatten(list(args[2:]))[0]]
                       if isinstance(t, torch.Tensor) and t.dim() > 0}
            devices |= {where(t) for t in tree_flatten(args[1:2])[0]
                        if isinstance(t, torch.Tensor) and t.dim() > 0 and where(t) != "cpu"}
        if len(devices) > 1 and name not in _TARGET_SECOND | _SHAPE_ONLY:
            if len(self.mixed) < 20:
                self.mixed.append([name, sorted(devices)])
            raise RuntimeError("Expected all tensors to be on the same device, but found at least two devices, "
                               + " and ".join(sorted(devices)) + "!")
        if explicit == SIMULATED:
            args, kwargs = tree_unflatten(flat, spec)
        out = func(*args, **(kwargs or {}))
        tensors = [a for a in flat if isinstance(a, torch.Tensor)]
        if indexing:
            moved = self.on(args[0])
        elif name in _TARGET_SECOND and len(tensors) > 1:
            moved = self.on(tensors[1])
        elif explicit is not None:
            moved = explicit == SIMULATED
        elif name in _SHAPE_ONLY and tensors:
            moved = self.on(tensors[0])
        else:
            moved = any(self.on(t) for t in tensors)
        if (name in _TARGET_SECOND or explicit is not None) and isinstance(out, torch.Tensor) \
                and self.on(out) != moved and any(out is t for t in tensors):
            # A move that had nothing to do on the CPU returned its input (x.cpu(), mask.to(scores)); between
            # devices it is a new tensor, and the input stays where it was.
            out = out.clone()
        if moved:
            for t in tree_flatten(out)[0]:
                if isinstance(t, torch.Tensor):
                    self.move(t)
        return out


def probe_devices(m: nn.Module, shapes: list[list[int]], mode: str = "eval", mask: bool = False) -> dict[str, Any]:
    """Run m forward as if it and its input sat on another device (DeviceSim) and list the ops whose tensor
    arguments would sit on different devices, the parameters and buffers left behind, and the output's device.
    `m` is tagged as moved: pass a copy."""
    for _, c in walk_modules(m):  # (nn.Module.train, without an override of the submission's)
        own_dict(c)["training"] = mode == "train"
    sim = DeviceSim()
    for _, t in walk_tensors(m, "_parameters") + walk_tensors(m, "_buffers"):  # what .to(device) moves
        sim.move(t)
    gen = torch.Generator().manual_seed(0)
    args = [sim.move(torch.randn(*s, generator=gen)) for s in shapes]
    out = None
    scripted = _script_functions(m) + _script_modules(m)
    for ns, name, fn in scripted:  # called through the simulation while forward runs (DeviceSim.script_call)
        ns[name] = functools.partial(lambda fn, *a, **k: sim.script_call(fn, a, k), fn)
    with torch.random.fork_rng(devices=[]):  # dropout in train mode must not move the checks' random state
        try:
            with torch.no_grad(), sim:
                out = m(*args)
        except Exception:
            if not sim.mixed:
                raise
            # The call that mixed devices is recorded; that it then failed says nothing more.
        finally:
            for ns, name, fn in scripted:
                ns[name] = fn
    leftovers = sorted({f"{n} on {t.device.type}" for n, t in
                        walk_tensors(m, "_parameters") + walk_tensors(m, "_buffers") if not sim.on(t)})
    out_device = None
    if isinstance(out, torch.Tensor):
        out_device = SIMULATED if sim.on(out) else out.device.type
    reply = {"mixed": sim.mixed[:20], "out_device": out_device, "stay_behind": leftovers[:20],
             "causal_sdpa": sim.causal_sdpa, "to_cpu": sim.to_cpu}
    if mask:  # (asked by the mask check only: the other checks' replies stay as they were)
        reply["forward_mask"] = sim.forward_mask and not sim.mixed
    return reply


def _causal_mask(mask: torch.Tensor) -> bool:
    """Whether `mask` (as masked_fill reads it) hides exactly the future: triu(ones, diagonal=1) in its last two
    dimensions, every leading dimension of size 1."""
    if mask.dim() < 2 or mask.shape[-1] != mask.shape[-2] or any(d != 1 for d in mask.shape[:-2]):
        return False
    n = mask.shape[-1]
    with torch.no_grad():
        return bool(torch.equal(mask.detach().reshape(n, n).bool().cpu(),
                                torch.triu(torch.ones(n, n, dtype=torch.bool), diagonal=1)))


# Ops of a TorchScript graph whose tensor arguments may sit on different devices: shapes and values read out, and
# the moves that put their first tensor where their second is.
_SCRIPT_ANY_DEVICE = {"aten::size", "aten::dim", "aten::numel", "aten::item", "aten::len", "aten::to", "aten::type_as",
                      "aten::expand_as", "aten::view_as", "aten::reshape_as", "aten::copy_", "aten::__is__",
                      "aten::__isnot__"}


def _script_made_on_cpu(node: Any, kind: str) -> bool:
    """Whether a TorchScript graph's node makes a tensor on the CPU whatever its inputs' device: .cpu(), a device
    argument that is the constant "cpu", or a factory's device left out (torch.ones(n, n)); not the *_like and new_*
    ops, which follow their input, nor torch.tensor(...) (most often a number: a 0-dimensional CPU tensor mixes with
    any device)."""
    if kind == "aten::cpu":
        return True
    if kind.endswith("_like") or kind.startswith("aten::new_") or kind in ("aten::tensor", "aten::scalar_tensor"):
        return False
    try:
        names = [a.name for a in torch._C.parse_schema(node.schema()).arguments]
    except Exception:
        return False
    if "device" not in names:
        return False
    dev = list(node.inputs())[names.index("device")]
    if dev.node().kind() != "prim::Constant":
        return False
    value = dev.toIValue()
    if value is None:
        return kind != "aten::to"  # (to(dtype=...) keeps the device)
    return torch.device(value).type == "cpu"


def _script_mixes(fn: Any) -> str | None:
    """The name of the first op of TorchScript function or module `fn` that takes a tensor it made on the CPU
    (_script_made_on_cpu, or computed from such tensors alone) together with one it did not (its arguments'
    tensors, its weights): with its arguments on a GPU, the op that would raise. None where none does, or where
    its graph cannot be read. DeviceSim.script_call sees nothing inside TorchScript otherwise."""
    try:
        graph = fn.inlined_graph
    except Exception:
        return None
    cpu: set[str] = set()

    def walk(block) -> str | None:
        for node in block.nodes():
            kind = node.kind()
            outs = [o.debugName() for o in node.outputs()]
            if _script_made_on_cpu(node, kind):
                cpu.update(outs)
                continue
            tensors = [v for v in node.inputs() if isinstance(v.type(), (torch._C.TensorType, torch._C.ListType))
                       and (isinstance(v.type(), torch._C.TensorType) or v.debugName() in cpu
                            or v.node().kind() == "prim::ListConstruct")]
            if kind in ("aten::index", "aten::index_put", "aten::index_put_"):  # (CPU indices index any device)
                tensors = [v for i, v in enumerate(node.inputs())
                           if i != 1 and isinstance(v.type(), torch._C.TensorType)]
            mine = [v for v in tensors if v.debugName() in cpu]
            if kind == "prim::ListConstruct":
                items = [v for v in node.inputs() if isinstance(v.type(), torch._C.TensorType)]
                if items and all(v.debugName() in cpu for v in items):
                    cpu.update(outs)
                elif any(v.debugName() in cpu for v in items):
                    uses = [u.user.kind() for o in node.outputs() for u in o.uses()]
                    return (uses[0] if uses else kind).split("::")[-1]
                continue
            if mine and kind not in _SCRIPT_ANY_DEVICE:
                if len(mine) < len(tensors):
                    return kind.split("::")[-1]
                cpu.update(outs)
            elif mine and kind in ("aten::item", "aten::size", "aten::dim", "aten::numel", "aten::len"):
                pass
            elif mine and kind == "aten::to" and len(tensors) == 1 and not _moves(node):
                cpu.update(outs)  # (to(dtype): still on the CPU)
            for b in node.blocks():
                found = walk(b)
                if found:
                    return found
        return None

    def _moves(node) -> bool:
        try:
            names = [a.name for a in torch._C.parse_schema(node.schema()).arguments]
        except Exception:
            return True
        if "device" not in names:
            return True
        dev = list(node.inputs())[names.index("device")]
        return not (dev.node().kind() == "prim::Constant" and dev.toIValue() is None)

    try:
        return walk(graph)
    except Exception:  # (a graph of a kind not foreseen: taken as one op, as before)
        return None


def _script_functions(m: nn.Module) -> list[tuple[dict, str, Any]]:
    """(namespace, name, function) of each TorchScript function (`@torch.jit.script def ...`) that the methods of m's
    modules can call by a global name (those of the namespaces where their classes were defined) or as an attribute
    of their own (self.attend = attend)."""
    spaces: dict[int, dict] = {}
    try:
        for _, c in walk_modules(m):
            attrs = own_dict(c)
            spaces.setdefault(id(attrs), attrs)
            for klass in type(c).__mro__:
                if klass is object or str(klass.__module__).startswith("torch."):
                    continue
                for v in vars(klass).values():
                    f = v.__func__ if type(v) in (staticmethod, classmethod) else v
                    ns = f.__globals__ if type(f) is types.FunctionType else None
                    if type(ns) is dict:
                        spaces.setdefault(id(ns), ns)
        return [(ns, name, v) for ns in spaces.values() for name, v in list(ns.items())
                if type(v) is torch.jit.ScriptFunction][:MAX_WALK]
    except Exception:  # (whatever the submission did to its classes: nothing is wrapped, as before)
        return []


def _script_modules(m: nn.Module) -> list[tuple[dict, str, Any]]:
    """(the parent's _modules, name, submodule) of each TorchScript module (`self.attend = torch.jit.script(...)`)
    registered under m: its forward runs inside TorchScript too, and accepts no forward hook."""
    return [(mods, name, c) for _, parent in walk_modules(m) for mods in (_registered(parent, "_modules"),)
            for name, c in list(mods.items()) if isinstance(c, torch.jit.ScriptModule)][:MAX_WALK]


# Imported by the zygote before any fork. A worker that runs as another user may not be able to read the
# interpreter's files (e.g. a Python installed under /root), so what student code commonly imports, and what
# torch imports lazily, must already be in memory. It also saves every worker the import time.
PRELOAD = ("math", "random", "numpy", "collections", "itertools", "functools", "typing", "dataclasses", "copy",
           "re", "json", "time", "warnings", "string", "textwrap", "types", "abc", "enum", "operator", "pprint",
           "statistics", "fractions", "decimal", "numbers", "contextlib", "weakref", "heapq", "bisect",
           "torch.nn.init", "torch.optim", "torch.utils.data", "torch.autograd", "torch.testing", "unittest",
           "unittest.mock")


def accelerator_built() -> bool:
    """Whether this torch was built for a GPU (CUDA, ROCm or XPU), asked without starting one."""
    xpu = getattr(torch, "xpu", None)
    return bool(torch.backends.cuda.is_built() or (xpu is not None and getattr(xpu, "_is_compiled", bool)()))


def probe_cuda() -> tuple[bool, str]:
    """(whether this process can run on CUDA, why not where torch says it has a GPU but using it fails). A real
    allocation and kernel, not just `torch.cuda.is_available()`: a process forked from one that had started CUDA
    still counts the GPU and fails at its first use. About a second where there is a GPU; nothing without one."""
    import warnings
    try:
        if not torch.backends.cuda.is_built():
            return False, ""
        with warnings.catch_warnings(record=True) as said:  # why torch counts no GPU ("CUDA initialization: ...")
            warnings.simplefilter("always")
            available = torch.cuda.is_available()
        if not available:
            return False, "; ".join(str(w.message) for w in said)[:500]
        torch.ones(1, device="cuda").add_(1).cpu()
        return True, ""
    except Exception as e:  # noqa: BLE001 - any failure here means: this worker cannot use the GPU
        return False, f"{type(e).__name__}: {e}"[:500]


def warm_up(full: bool = True) -> None:
    """Import PRELOAD and run each kind of request once, so lazy imports inside torch happen before the fork.

    full=False skips the first backward pass, and so does a torch built for a GPU: autograd's first backward
    counts the devices, which starts the GPU driver and autograd's device threads in this process, and a process
    forked from it can then use neither (CUDA "initialization error"; "Unable to handle autograd's threading in
    combination with fork-based multiprocessing" at the first backward). Nothing here may touch a GPU.
    """
    full = full and not accelerator_built()
    import importlib
    for name in PRELOAD:
        try:
            importlib.import_module(name)
        except ImportError:
            pass

    class Tiny(nn.Module):
        def __init__(self):
            super().__init__()
            self.lin = nn.Linear(4, 4)
            self.drop = nn.Dropout(0.5)
            self.register_buffer("mask", torch.triu(torch.ones(3, 3), diagonal=1))

        def forward(self, x):
            s = self.lin(x) @ x.transpose(-2, -1)
            s = s.masked_fill(self.mask.bool(), -torch.inf)
            y = self.drop(torch.softmax(s / 2 ** 0.5, dim=-1)) @ x
            heads = y.view(2, 3, 2, 2).transpose(1, 2)  # as multi-head attention splits and merges its heads
            h = (heads @ heads.transpose(2, 3)).masked_fill_(self.mask.bool()[:3, :3], -torch.inf)
            h = torch.softmax(h / heads.shape[-1] ** 0.5, dim=-1) @ heads
            z = h.transpose(1, 2).contiguous().view(2, 3, 4)[:, :2] @ self.lin.weight.T
            z = nn.functional.gelu(nn.functional.layer_norm(z, (4,))) + (x[0] @ x[0].T).relu()[:2, :2].sum()
            return y[:, :2] + z

    m = Tiny()
    x = torch.rand(2, 3, 4)
    # A watched call, as the checks make them (LIBRARY, LIBRARY_ATTENTION, an op's input recorded), through the ops of
    # the labs' attention and blocks, so that a worker's first one imports and builds nothing.
    with Recorder(["softmax", "exp", LIBRARY, LIBRARY_ATTENTION]):
        y = m(x)
    if full:
        (y * torch.ones_like(y)).sum().backward()  # as op_call runs it
    probe_devices(copy.deepcopy(m), [[2, 3, 4]])
    protocol.unpack(*_split(protocol.pack({"t": y.detach(), "b": torch.ones(2, dtype=torch.bool)})))
    torch.nn.functional.dropout(x, 0.5, training=True)
    inspect.signature(Tiny.__init__)
    ast.parse("x = 1")


def _split(frame: bytes) -> tuple[bytes, bytes]:
    head_len, _ = protocol._HEAD.unpack(frame[:protocol._HEAD.size])
    start = protocol._HEAD.size
    return frame[start:start + head_len], frame[start + head_len:]
