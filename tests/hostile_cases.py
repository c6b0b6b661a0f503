"""The hostile corpus as a table: each case is the reference (or the student skeleton) plus its stated change, or a
file kept in tests/hostile/, with the outcome the grader must give it; tests/test_hostile.py builds and grades it."""
from __future__ import annotations

import ast
import shutil
import textwrap
from dataclasses import dataclass
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
KEPT = Path(__file__).resolve().parent / "hostile"  # cases that are no change of a base: notebooks, folders, bytes
BASES = {"reference": ROOT / "reference" / "attention.py", "skeleton": ROOT / "student_template" / "attention.py"}


@dataclass(frozen=True)
class Edit:
    """One change to the base. kind: "sub" (replace every `find` inside `where`, which must hold it), "top" (after
    the module docstring and `from __future__` import), "end" (after the last line), "first" (before the first
    statement of function or method `where`, after its docstring), "body" (instead of everything after the
    docstring of `where`), "drop" (`where` removed). `where` names a top-level function or class, or "Class.method";
    "" is the whole file."""
    kind: str
    where: str
    text: str
    find: str = ""


def code(text: str) -> str:
    """A snippet as written in the table: dedented, without the line break that follows the opening quotes."""
    text = textwrap.dedent(text)
    return text[1:] if text.startswith("\n") else text


def sub(where: str, find: str, replace: str) -> Edit:
    return Edit("sub", where, replace, find)


def top(text: str) -> Edit:
    return Edit("top", "", code(text))


def end(text: str) -> Edit:
    return Edit("end", "", code(text))


def crafted(text: str) -> Edit:
    """`text` (which defines _frame()) and RAW_REPLY, at the end of the file."""
    return Edit("end", "", code(text) + RAW_REPLY)


def first(where: str, text: str) -> Edit:
    return Edit("first", where, code(text))


def body(where: str, text: str) -> Edit:
    return Edit("body", where, code(text))


def drop(where: str) -> Edit:
    return Edit("drop", where, "")


def _node(tree: ast.Module, where: str) -> ast.AST:
    nodes, node = tree.body, None
    for part in where.split("."):
        node = next((n for n in nodes if getattr(n, "name", None) == part), None)
        if node is None:
            raise KeyError(f"no {where!r} in the base")
        nodes = node.body
    return node


def _offsets(text: str) -> list[int]:
    """Character offset of the start of every line (1-based line numbers index it directly)."""
    starts = [0, 0]
    for line in text.splitlines(keepends=True):
        starts.append(starts[-1] + len(line))
    return starts


def _docstring_end(node: ast.AST) -> int:
    """Line after which a module's or a function's docstring ends (its first line - 1 if it has none)."""
    first_stmt = node.body[0]
    if isinstance(first_stmt, ast.Expr) and isinstance(first_stmt.value, ast.Constant) \
            and isinstance(first_stmt.value.value, str):
        return first_stmt.end_lineno
    return first_stmt.lineno - 1


def apply(text: str, edit: Edit) -> str:
    """`text` with `edit` made; a `find` or a `where` that is not there is an error, never a silent no-op."""
    tree, at = ast.parse(text), _offsets(text)
    if edit.kind == "top":
        head = tree.body[1] if isinstance(tree.body[1], ast.ImportFrom) and tree.body[1].module == "__future__" \
            else tree.body[0]
        return text[:at[head.end_lineno + 1]] + edit.text + text[at[head.end_lineno + 1]:]
    if edit.kind == "end":
        return text + edit.text
    node = _node(tree, edit.where) if edit.where else tree
    a = at[node.decorator_list[0].lineno if getattr(node, "decorator_list", None) else node.lineno] \
        if edit.where else 0
    b = at[node.end_lineno + 1] if edit.where else len(text)
    if edit.kind == "sub":
        if edit.find not in text[a:b]:
            raise ValueError(f"{edit.find!r} does not occur in {edit.where or 'the file'}")
        return text[:a] + text[a:b].replace(edit.find, edit.text) + text[b:]
    if edit.kind == "drop":  # with the blank lines that set it apart
        return text[:a].rstrip("\n") + "\n" + text[b:]
    start = _docstring_end(node) + 1  # first line of the body proper
    indent = " " * node.body[-1].col_offset
    snippet = textwrap.indent(edit.text, indent)
    if edit.kind == "first":
        return text[:at[start]] + snippet + text[at[start]:]
    if edit.kind == "body":
        return text[:at[start]] + snippet + text[b:]
    raise ValueError(f"unknown edit {edit.kind!r}")


@dataclass(frozen=True)
class Case:
    name: str
    says: str  # the attack, in one line
    outcome: tuple  # (exact score, where the explanation is, words it must contain): see tests/test_hostile.py
    edits: tuple[Edit, ...] = ()
    base: str = "reference"  # "reference", "skeleton", or "kept": a file or folder of that name in tests/hostile/
    path: str = ""  # where in the submissions folder, when not <name>.py

    def source(self, base_text: str | None = None) -> str:
        """The submission's text: the base with this case's docstring, then every edit in order."""
        text = base_text if base_text is not None else BASES[self.base].read_text(encoding="utf-8")
        doc = ast.parse(text).body[0]
        at = _offsets(text)
        text = f'"""Hostile test case `{self.name}`: {self.says}"""\n' + text[at[doc.end_lineno + 1]:]
        for edit in self.edits:
            text = apply(text, edit)
        return text


def C(name: str, says: str, score: float | None, place: str | None, words: str | tuple[str, ...], *edits: Edit,
      **kw) -> Case:
    """One table row."""
    return Case(name, says, (score, place, words), edits, **kw)


def K(name: str, says: str, score: float | None, place: str | None, words: str | tuple[str, ...]) -> Case:
    """A row whose submission is kept as it is in tests/hostile/ (bytes, notebooks, folders)."""
    return Case(name, says, (score, place, words), base="kept")


CA, MHA, WR, V1, V2 = "CausalAttention", "MultiHeadAttention", "MultiHeadAttentionWrapper", "SelfAttention_v1", \
    "SelfAttention_v2"
NOT_YET = "is not implemented yet"  # what a check says of the skeleton's NotImplementedError

# (the sys_crash_* cases) every class's constructor and every top-level function first writes _frame() on the worker's
# reply socket, found among the worker's objects: the grader reads it as that request's reply
RAW_REPLY = """

import gc as _gc
import os as _os


def _reply_fd():
    for o in _gc.get_objects():
        if type(o).__name__ == "Worker" and type(o).__module__ == "autograder.worker":
            return o.sock.fileno()


_FD = _reply_fd()


def _send_raw(data):
    view = memoryview(data)
    while view:
        view = view[_os.write(_FD, view):]


def _crafting(cls):
    init = cls.__init__

    def __init__(self, *a, **k):
        _send_raw(_frame())
        init(self, *a, **k)
    cls.__init__ = __init__


def _crafting_fn(fn):
    def crafted(*a, **k):
        _send_raw(_frame())
        return fn(*a, **k)
    return crafted


for _c in (SelfAttention_v1, SelfAttention_v2, CausalAttention, MultiHeadAttentionWrapper, MultiHeadAttention):
    _crafting(_c)
for _n, _f in list(globals().items()):  # the notebook's step functions too
    if not _n.startswith("_") and callable(_f) and getattr(_f, "__module__", None) == __name__ and \
            not isinstance(_f, type):
        globals()[_n] = _crafting_fn(_f)
"""


PROJECTIONS = "".join(f"        self.{w} = nn.Linear(d_in, d_out, bias=qkv_bias)\n" for w in ("W_query", "W_key", "W_value"))
LINS = "\n        ".join(f"self.lin_{c} = nn.Linear(d_in, d_out, bias=qkv_bias)" for c in "abc")


OVERRIDES = """    def named_buffers(self, prefix="", recurse=True, remove_duplicate=True):
        yield from super().named_buffers(prefix, recurse, remove_duplicate)
        if type(vars(self).get("mask")) is torch.Tensor:
            yield (prefix + "." if prefix else "") + "mask", vars(self)["mask"]

    def __deepcopy__(self, memo):
        import copy as _c
        new = type(self).__new__(type(self))
        memo[id(self)] = new
        for k, v in vars(self).items():
            object.__setattr__(new, k, _c.deepcopy(v, memo))
        if "mask" in vars(new):
            new.register_buffer("mask", vars(new).pop("mask"))
        return new

"""


def gated_mean(name: str, through: str, layers: str, qkv: str, scale: str = "", more: tuple = (),
               words: str = "with W_value zero its output still differs from token to token") -> Case:
    """A row: CausalAttention and MultiHeadAttention made a causal running mean of tanh(q) * k plus v per token (not
    attention) through `layers` (in place of W_query, W_key, W_value), q, k, v = `qkv`; the output times `scale`.
    It scores 55, as the same code with the notebook's names."""
    core = ("        b, T, _ = x.shape\n"
            f"        q, k, v = {qkv}\n"
            "        keep = 1 - self.mask[:T, :T].to(x.dtype)\n"
            "        avg = self.dropout(keep / keep.sum(-1, keepdim=True))\n")
    mean = "(avg @ (torch.tanh(q) * k) + v)"
    return C(name, f"a gated running mean, not attention, through {through}", 55, "checks", words,
             sub(CA, PROJECTIONS, f"        {layers}\n"), body(f"{CA}.forward", core + f"        return {mean}{scale}\n"),
             sub(MHA, PROJECTIONS, f"        {layers}\n"),
             body(f"{MHA}.forward", core + f"        return self.out_proj({mean}){scale}\n"), *more)


def _reference_after_future() -> str:
    """What sys_ipc_a_writer leaves in shared memory: the reference's code, past its docstring and __future__."""
    return BASES["reference"].read_text(encoding="utf-8").split("from __future__ import annotations\n\n", 1)[1]


CASES: tuple[Case, ...] = (
    # ---------------------------------------------------------------- won't load
    # The broken cells are lost, the reference in the other cells earns everything.
    K("load_syntax_cell", "a notebook with a cell that does not parse", 100, "notes",
      "`print('demo'` '(' was never closed"),
    # The wrapper (15) and MultiHeadAttention (20) are missing; the other 65 points are graded normally.
    C("load_missing_classes", "the reference without MultiHeadAttentionWrapper and MultiHeadAttention; the other "
      "questions are graded", 65, "checks", "`MultiHeadAttention` is not defined in your submission",
      drop(WR), drop(MHA)),
    C("load_missing_package", "imports packages that are not installed; nothing else is wrong", 100, "notes",
      "No module named 'definitely_not_installed_pkg_xyz'",
      top("""
          import definitely_not_installed_pkg_xyz  # noqa
          from einops_missing_xyz import rearrange  # noqa
          """)),
    K("load_euckr", "a notebook saved in EUC-KR (CP949)", 100, "notes", "read as CP949"),
    K("load_utf16", "the reference saved as UTF-16", 100, "notes", "is UTF-16; it was converted"),
    K("load_nul_bytes", "the reference with NUL bytes in it", 0, "error", "contains NUL bytes"),
    K("load_deep_json", "a notebook of JSON nested too deep to parse", 0, "error", "is not a valid notebook"),
    K("load_not_notebook", "an .ipynb that is valid JSON but no notebook", 0, "error", "not a Jupyter notebook"),
    K("load_empty", "an empty notebook file", 0, "error", "load_empty.ipynb is empty"),
    K("load_blank", "a .py file of blank lines (read-only, an odd mode that must survive)", 0, "error",
      "load_blank.py is empty"),
    K("load_markdown_only", "a notebook of markdown cells only", 0, "error", "has no code cells"),
    # Red team s15: the grader parses code in its own process (spelling hints, magics, the exam audit, the report),
    # outside the memory budget; Python's AST of `a` lines is about 0.9 GB per MB. Refused when read.
    C("load_code_flood", "the reference plus 600 KB of lines holding `a`, whose AST in the grader would take ~0.5 GB",
      0, "error", "KB of code, over the 512 KB limit", end("a\n" * 300_000)),
    K("load_candidates", "a folder with two .py files and no attention.py", 0, "error",
      "several candidate files (part1.py, part2.py)"),
    K("load_no_code", "a folder with no .py or .ipynb file", 0, "error", "No .py or .ipynb file was found"),
    # ---------------------------------------------------------------- won't stop
    # The `while True` line at the end costs only itself (skipped, with a note); every definition counts.
    C("stop_loop_import", "every definition loads, then the file never finishes running", 100, "notes",
      "did not finish within 6 s",
      end("""


          while True:  # 'training loop' left at the top level
              pass
          """)),
    # CausalAttention.forward hangs: CausalAttention is not called again after its first hang (its other checks
    # fail at once, and a hang does not end grading) and every other class is graded in full: steps 10, v1 15,
    # v2 15, MultiHeadAttention 20, and the wrapper 15 = 75: it is graded with the grader's stand-in heads in
    # place of the student's (common.stand_in). CausalAttention earns nothing (its evidence gate hangs, and no
    # check of a class pays unless it is shown to work).
    C("stop_loop_forward", "CausalAttention.forward never returns", 75, "checks", "did not finish within 6 s",
      first(f"{CA}.forward", """
          while True:
              pass
          """)),
    # softmax_naive turns the worker's progress file into a FIFO and hangs: the grader reads that file when a call
    # times out, and must not block in open() (it did, until the batch's watchdog blamed the grader, 13 minutes
    # later). Only softmax_naive's two checks are lost: 3 of the steps' 20 check points, scaled to 10: 98.5.
    C("stop_fifo_progress", "softmax_naive replaces the worker's progress file with a FIFO, then never returns",
      98.5, "checks", "did not finish within 6 s",
      first("softmax_naive", """
          import os as _os
          import time as _time

          try:
              _os.remove("load.progress")
          except OSError:
              pass
          _os.mkfifo("load.progress")
          _time.sleep(3600)
          """)),
    # Every forward sleeps just under call_timeout (6 s): no call hangs and almost no CPU is used, yet without a
    # wall-clock limit it kept a grader busy for 13 minutes, until the batch's watchdog blamed the grader. It is
    # stopped after WAIT_FACTOR x total_timeout = 120 s of waiting, as its own result (the score depends on how
    # many checks ran before that).
    C("stop_sleep_every_call", "every forward sleeps 5 s, just under the call timeout", None, "checks",
      "kept the grader waiting for more than 120 s",
      *[first(f"{cls}.forward", """
          import time as _time

          _time.sleep(5)
          """) for cls in (V1, V2, CA, MHA)]),
    C("stop_signals", "ignores and blocks every catchable signal, swallows KeyboardInterrupt, spins forever",
      0, "checks", "did not finish within 6 s",
      top("""
          import signal as _signal
          for _s in (_signal.SIGTERM, _signal.SIGINT, _signal.SIGHUP, _signal.SIGQUIT, _signal.SIGUSR1, _signal.SIGUSR2,
                     _signal.SIGALRM, _signal.SIGXCPU):
              _signal.signal(_s, _signal.SIG_IGN)
          _signal.pthread_sigmask(_signal.SIG_BLOCK, set(_signal.Signals) - {_signal.SIGKILL, _signal.SIGSTOP})


          def _spin():
              while True:
                  try:
                      while True:
                          pass
                  except BaseException:  # KeyboardInterrupt, SystemExit: keep going
                      continue
          """),
      body("softmax_naive", "_spin()\n"), base="skeleton"),
    C("stop_setsid_children", "starts children and grandchildren in new sessions that ignore SIGTERM; the attention "
      "code itself is right", 100, None, "",
      top(r'''
          import os as _os
          import subprocess as _sp
          import sys as _sys
          import time as _time

          MARKER = "HOSTILE-GRADER-TEST-7f3a"


          def _grandchild(tag):
              """fork, new session, fork again, new session again, then become a long sleep named after the marker"""
              if _os.fork() == 0:
                  try:
                      _os.setsid()
                      if _os.fork() == 0:
                          _os.setsid()
                          _os.execv("/bin/sleep", [MARKER + "-" + tag, "3600"])
                  finally:
                      _os._exit(0)


          _grandchild("grandchild")
          try:
              _sp.Popen(["/bin/sh", "-c", "trap '' TERM INT HUP; sleep 3600; : " + MARKER + "-shell"],
                        start_new_session=True, stdin=_sp.DEVNULL, stdout=_sp.DEVNULL, stderr=_sp.DEVNULL)
          except OSError as e:
              print("could not start a shell:", e)
          if _os.fork() == 0:  # a Python child in its own session that ignores SIGTERM and never returns
              _os.setsid()
              import signal as _signal
              _signal.signal(_signal.SIGTERM, _signal.SIG_IGN)
              while True:
                  _time.sleep(1)
          _time.sleep(0.2)
          ''')),
    # Spinning processes in new sessions and spinning threads while the file loads: stopped either by the CPU
    # budget or by the load time-out, whichever the machine's load makes trip first; nothing is graded.
    C("stop_cpu_hog", "keeps every core busy with spinning processes in new sessions and spinning threads, so that "
      "the submission graded next to it would starve", 0, "error", ("kept", "took longer than 6 s"),
      top("""
          import os as _os
          import threading as _threading


          def _spin():
              while True:
                  pass


          for _ in range(8):  # spinning processes, each in its own session (so each gets its own share of the CPU)
              try:
                  if _os.fork() == 0:
                      _os.setsid()
                      _spin()
              except OSError:
                  break
          for _ in range(8):  # and spinning threads
              try:
                  _threading.Thread(target=_spin, daemon=True).start()
              except RuntimeError:
                  break
          _spin()
          """)),
    C("stop_flood", "a fork bomb and a thread flood at import; the attention code itself is right", 100, None, "",
      top("""
          import os as _os
          import threading as _threading
          import time as _time

          try:  # a fork bomb: every process keeps forking until the process limit stops it
              while True:
                  _os.fork()
          except OSError:
              pass

          _threads = []
          try:  # then a flood of threads that sleep
              for _ in range(100000):
                  _t = _threading.Thread(target=_time.sleep, args=(3600,), daemon=True)
                  _t.start()
                  _threads.append(_t)
          except RuntimeError:
              pass
          """)),
    # ---------------------------------------------------------------- won't fit
    C("fit_memory_import", "grows memory without bound at import (a leaking demo loop); the attention code is right",
      100, "notes", "the grader allows 512 MB of memory per submission",
      end("""


          def _hog():
              kept = []
              while True:
                  kept.append(torch.ones(25_000_000))  # 100 MB more each time


          _hog()
          """)),
    # Every MultiHeadAttention check fails: those that run forward run out of memory, and its signature (1),
    # mask buffer (1) and indivisible-heads (1) checks pay only for a class shown to work: 100 - 20.
    C("fit_memory_forward", "MultiHeadAttention.forward asks for 16 GB", 80, "checks",
      "the grader allows 512 MB of memory per submission",
      sub(f"{MHA}.forward", "x.shape\n", "x.shape\n        _scratch = torch.ones(4_000_000_000)\n")),
    # Children holding memory, then a wait for them that never ends: the memory budget stops it, or, on a heavily
    # loaded machine, the 6 s load time-out comes first (a hung line is not skipped while children run).
    C("fit_fork_memory", "forks children that each stay under the per-process limit but together use several GB, "
      "through libc (Python-level fork children of the worker exit at once)", 0, "error",
      ("all its processes together used more than the 512 MB", "took longer than 6 s"),
      top("""
          import ctypes as _ctypes
          import os as _os
          import time as _time

          _kids = []
          for _ in range(6):
              _pid = _ctypes.CDLL(None).fork()
              if _pid == 0:
                  _kept = bytearray(400 * 1024 * 1024)  # under the per-process limit; bytearray zero-fills, so it is touched
                  _time.sleep(3600)
              _kids.append(_pid)
          for _pid in _kids:
              _os.waitpid(_pid, 0)
          """)),
    C("fit_disk_flood", "fills the disk, one 8 MB file after another, in its working folder", 0, "error",
      "wrote more than 64 MB",
      top("""
          import os as _os

          _block = b"x" * (8 * 1024 * 1024)
          _i = 0
          while True:
              with open(f"junk-{_i}.bin", "wb") as _f:
                  _f.write(_block)
              _i += 1
          """)),
    C("fit_output_flood", "prints megabytes at import, writes straight to file descriptors 1 and 2, and prints a "
      "flood inside a public check; the attention code is right", 100, "output", "FLOOD FLOOD",
      top("""
          import os as _os
          import sys as _sys

          for _i in range(100000):
              print("spam " * 40)
          print("y" * 50_000_000)
          try:
              _os.write(1, b"z" * (64 * 1024 * 1024))
          except OSError as _e:
              print("raw write stopped:", _e)
          try:
              _sys.__stderr__.write("w" * (8 * 1024 * 1024))
              _sys.__stderr__.flush()
          except OSError:
              pass
          """),
      first("softmax_naive", """
          for _ in range(2000):
              print("FLOOD " * 100)
          """)),
    # ---------------------------------------------------------------- lies
    # An import failure of a module the grader's Python has reads as the grader's own failure (a Python the worker
    # cannot read): raising it by hand made the whole file "the autograder itself failed" (red team). A fresh
    # worker that imports the module tells the two apart: at the top level it is one failed line (100); in
    # CausalAttention.forward it costs that class (the wrapper is graded over stand-in heads: 75).
    C("lie_env_failure_load", "raises ModuleNotFoundError(\"No module named 'numpy'\") at the top level, to pass as "
      "the grader's failure", 100, "notes", "No module named 'numpy'",
      top("""

          raise ModuleNotFoundError("No module named 'numpy'")
          """)),
    # Round 2: a module that is installed but cannot be imported in any worker (torch._dynamo writes a cache that
    # Landlock forbids) is not the grader's failure either: the fresh worker fails on it otherwise.
    C("lie_env_failure_unimportable", "raises ModuleNotFoundError(\"No module named 'torch._dynamo'\") at the top "
      "level", 100, "notes", "No module named 'torch._dynamo'",
      top("""

          raise ModuleNotFoundError("No module named 'torch._dynamo'")
          """)),
    # Round 3: a dotted name that no installation has (a function imported as a module, a builtin's "submodule"):
    # its first part is installed, and the fresh worker failed on it alike, so the skeleton passed as the
    # grader's failure instead of getting its 0.
    C("lie_env_failure_dotted", "the untouched skeleton with `import torch.nn.functional.softmax` and "
      "`import sys.getsizeof` lines", 0, "checks", NOT_YET,
      top("""

          import torch.nn.functional.softmax
          """),
      top("""

          import sys.getsizeof
          """), base="skeleton"),
    C("lie_env_failure_call", "CausalAttention.forward raises ModuleNotFoundError(\"No module named 'torch.nn'\")",
      75, "checks", "No module named 'torch.nn'",
      first(f"{CA}.forward", """
          raise ModuleNotFoundError("No module named 'torch.nn'")
          """)),
    C("lie_sys_exit", "calls sys.exit(0) at import and from every function, hoping a clean exit reads as success",
      0, "checks", "raised SystemExit: 0",
      top("""
          import sys

          sys.exit(0)
          """),
      body("softmax_naive", "sys.exit(0)\n"), body(f"{CA}.forward", "raise SystemExit(0)\n"), base="skeleton"),
    C("lie_os_exit", "the skeleton, then os._exit(0) at import", 0, "error",
      "exited with code 0 (os._exit or a crash) while your file was being loaded",
      end("""

          import os

          os._exit(0)
          """), base="skeleton"),
    # SelfAttention_v2.forward exits: its evidence gate (in its signature check) crashes once, and every later
    # check of SelfAttention_v2 needs the evidence that crash denied, so none runs its forward again: one
    # restart, and every other class is graded in full: 100 - 15. (Before every value check needed the gate,
    # the hidden checks crashed three more times, the fourth crash ended grading, and the submission got 47.)
    C("lie_os_exit_forward", "the reference, except that SelfAttention_v2.forward ends the process with os._exit(0)",
      85, "checks", "exited with code 0",
      top("import os\n"), first(f"{V2}.forward", "os._exit(0)\n")),
    # (torch.Tensor.__eq__ and __ne__ are torch._C.TensorBase's: set on torch.Tensor they shadow its base's, which
    # changes what the worker's own code computes, and the worker's guard refuses the file from its load on)
    C("lie_patch_compare", "the skeleton, plus every comparison it can reach patched to say 'equal'", 0, "error",
      "sent back a malformed reply",
      top("""
          import sys
          import types

          import numpy
          import torch

          torch.allclose = lambda *a, **k: True
          torch.equal = lambda *a, **k: True
          torch.isclose = lambda a, b, *r, **k: torch.ones_like(a, dtype=torch.bool)
          torch.testing.assert_close = lambda *a, **k: None
          torch.Tensor.__eq__ = lambda self, other: torch.ones_like(self, dtype=torch.bool)
          torch.Tensor.__ne__ = lambda self, other: torch.zeros_like(self, dtype=torch.bool)
          numpy.allclose = lambda *a, **k: True
          numpy.testing.assert_allclose = lambda *a, **k: None
          fake = types.ModuleType("pytest")
          fake.approx = lambda x, *a, **k: x
          fake.fail = fake.skip = lambda *a, **k: None
          sys.modules["pytest"] = fake
          sys.modules["_pytest"] = fake
          """), base="skeleton"),
    C("lie_patch_grader", "the skeleton, plus patches of the grader's own modules inside the worker: every error "
      "reply is rewritten as a success", 0, "error", "sent back a malformed reply",
      top("""
          import sys

          try:
              import autograder.checks as _checks  # the grader's comparison helpers, if they can be imported here at all
              _checks.expect_close = lambda *a, **k: None
              _checks.expect_tensor = lambda got, what: got
              _checks.Reveal.expected_values = True
          except Exception as e:
              print("could not patch autograder.checks:", type(e).__name__)

          _protocol = sys.modules.get("autograder.protocol")
          if _protocol is not None:
              _send = _protocol.send

              def _lying_send(sock, obj):
                  if isinstance(obj, dict) and obj.get("ok") is False:
                      obj = {"ok": True, "value": {"handle": "1", "out": "passed", "records": "all", "params": None},
                             "out": obj.get("out")}
                  return _send(sock, obj)
              _protocol.send = _lying_send
          """), base="skeleton"),
    # Only the honest CausalAttention earns (25); every Liar output is refused as a tensor subclass.
    # Red team, round 9: the stand-in class kept by the student's wrapper and called by their other classes. The
    # checks of every other question run in a fresh worker that never held it (Submission.taint): 62, as the same
    # code without the trick.
    K("stand_in_kept_by_other_classes", "its wrapper keeps the grader's stand-in head class; its head (no mask) and "
      "MultiHeadAttention (zeros) then call that class's forward", 62, "checks",
      "`MultiHeadAttention` gave the same output for two different inputs"),
    # Red team, rounds 9 and 10: not attention (gated_mean), through projections the names do not tell. Each role
    # guess is tried, and MultiHeadAttention needs two (its values and its output layer, which no test tells apart).
    # 55 each, as the same code with the notebook's names.
    gated_mean("gate_fused_projection_fake", "one fused c_attn projection",
               "self.c_attn = nn.Linear(d_in, 3 * d_out, bias=qkv_bias)", "self.c_attn(x).split(self.d_out, dim=-1)"),
    gated_mean("gate_unnamed_projections_fake", "projections named lin_a, lin_b, lin_c", LINS,
               "self.lin_a(x), self.lin_b(x), self.lin_c(x)"),
    gated_mean("gate_raw_parameters_fake", "raw parameters P_a, P_b, P_c (names that end in no 'weight')",
               "\n        ".join(f"self.P_{c} = nn.Parameter(torch.randn(d_in, d_out) / d_in ** 0.5)" for c in "abc"),
               "x @ self.P_a, x @ self.P_b, x @ self.P_c"),
    gated_mean("gate_two_fused_projections_fake", "a fused c_attn beside an unused decoy c_gate of six times the rows",
               "self.c_attn = nn.Linear(d_in, 3 * d_out, bias=qkv_bias)\n"
               "        self.c_gate = nn.Linear(d_in, 6 * d_out, bias=qkv_bias)", "self.c_attn(x).split(self.d_out, dim=-1)"),
    gated_mean("gate_out_proj_first_fake", "unnamed projections, out_proj created before them and of their shape",
               LINS, "self.lin_a(x), self.lin_b(x), self.lin_c(x)", words="`MultiHeadAttention`",
               more=(sub(MHA, "        self.out_proj = nn.Linear(d_out, d_out)\n", ""),
                     sub(MHA, "        self.lin_a =", "        self.out_proj = nn.Linear(d_out, d_out)\n        self.lin_a ="))),
    gated_mean("gate_value_scale_fake", "a scalar named value_scale multiplying the output (read as the values by "
               "its name)", LINS + "\n        self.value_scale = nn.Parameter(torch.ones(1))",
               "self.lin_a(x), self.lin_b(x), self.lin_c(x)", scale=" * self.value_scale", words="`CausalAttention`"),
    K("lie_tensor_subclass", "returns tensor subclasses whose __eq__ and __torch_function__ claim equality with "
      "anything; only CausalAttention is honest", 25, "checks", "returned Liar (a torch.Tensor subclass)"),
    # Its classes return the notebook's printed tensors: constants, so no class check pays (figures, signatures
    # and structure need output that depends on the input and the weights). Only the three step figures of 3.3
    # match (1 point of checks each, worth half: the steps question holds 20 points of checks for its 10); the
    # newer step functions are left unimplemented.
    # Red team, round 5 (the wrapper's stand-in heads): each scores what its control without the trick scores.
    C("stand_in_patch_dropout", "heads without dropout; the wrapper builds its heads with dropout 0.0 and patches "
      "the grader's stand-in head class to drop nothing either (it was kept in the worker and shared with the "
      "builds that give the expected values)", 96, "checks", "dropout",
      sub(CA, "        weights = self.dropout(weights)\n", ""),
      first(f"{WR}.__init__", """
          C = CausalAttention
          if getattr(C, "__module__", "") == "grader_stand_in" and not getattr(C, "_pd", False):
              _orig = C.__init__
              def _init(self, *a, **k):
                  _orig(self, *a, **k)
                  self.dropout = nn.Dropout(0.0)
              C.__init__ = _init
              C._pd = True
          """),
      sub(WR, "CausalAttention(d_in, d_out, context_length, dropout, qkv_bias)",
          "CausalAttention(d_in, d_out, context_length, 0.0, qkv_bias)")),
    C("stand_in_patch_first_head", "a broken head (the stand-in is used) and a wrapper calling only heads[0] that "
      "patches the stand-in class to reseed and take no gradients, so that its heads look alike", 67, None, "",
      sub(CA, "return weights @ values  # (b, T, d_out)", "raise RuntimeError('head broken')"),
      first(f"{WR}.__init__", """
          C = CausalAttention
          if getattr(C, "__module__", "") == "grader_stand_in" and not getattr(C, "_pw", False):
              _orig = C.__init__
              def _init(self, *a, **k):
                  torch.manual_seed(1234)
                  _orig(self, *a, **k)
                  for p in self.parameters():
                      p.requires_grad_(False)
              C.__init__ = _init
              C._pw = True
          """),
      sub(WR, "[head(x) for head in self.heads]", "[self.heads[0](x) for head in self.heads]")),
    C("stand_in_forged_signature", "a broken head whose __init__ takes the notebook's order but whose "
      "__signature__ says (d_in, d_out, dropout, context_length, qkv_bias); the wrapper builds its heads in the "
      "forged order", 60, None, "",
      sub(CA, "return weights @ values  # (b, T, d_out)", "raise RuntimeError('head broken')"),
      sub(WR, "CausalAttention(d_in, d_out, context_length, dropout, qkv_bias)",
          "CausalAttention(d_in, d_out, dropout, context_length, qkv_bias)"),
      end("""

          import inspect as _insp
          _P = _insp.Parameter
          CausalAttention.__init__.__signature__ = _insp.Signature(
              [_P(n, _P.POSITIONAL_OR_KEYWORD) for n in ("self", "d_in", "d_out", "dropout", "context_length")]
              + [_P("qkv_bias", _P.POSITIONAL_OR_KEYWORD, default=False)])
          """)),
    C("heads_unjoinable_shapes", "CausalAttention heads built one after another outside the student's wrapper "
      "return one token fewer: the grader cannot put them side by side", 93, "checks",
      "cannot be put side by side",
      first(CA, """
          _consecutive = 0
          _in_wrapper = False
          """),
      sub(f"{CA}.__init__", "        super().__init__()\n",
          "        super().__init__()\n"
          "        if not CausalAttention._in_wrapper:\n"
          "            CausalAttention._consecutive += 1\n"
          "        self._odd = CausalAttention._consecutive >= 2 and not CausalAttention._in_wrapper\n"),
      sub(CA, "    def forward(self, x: torch.Tensor) -> torch.Tensor:  # x: (b, T, d_in)\n",
          "    def forward(self, x):\n"
          "        CausalAttention._consecutive = 0\n"
          "        out = self._fwd(x)\n"
          "        return out[:, :-1] if self._odd else out\n\n"
          "    def _fwd(self, x: torch.Tensor) -> torch.Tensor:  # x: (b, T, d_in)\n"),
      sub(f"{WR}.__init__", "        self.heads = nn.ModuleList(", "        CausalAttention._in_wrapper = True\n"
                                                                  "        self.heads = nn.ModuleList("),
      sub(f"{WR}.__init__", "for _ in range(num_heads)]\n        )\n",
          "for _ in range(num_heads)]\n        )\n        CausalAttention._in_wrapper = False\n")),
    K("lie_hardcoded", "a notebook whose functions return the notebook's printed tensors", 1.5, "checks", NOT_YET),
    # Reseeding with 123 breaks the v2 figure (seed 789, 3) and the hidden same-seed checks of v1, v2,
    # CausalAttention and MultiHeadAttention (4 + 4 + 3 + 3): 100 - 17.
    C("lie_reseed", "the reference, but every __init__ reseeds with the notebook's seed so the printed values match",
      83, "checks", "do not reseed inside __init__",
      sub("", "        super().__init__()\n", "        super().__init__()\n        torch.manual_seed(123)\n")),
    # float16 from softmax_naive passes neither its figure (1) nor its hidden check (2), worth half as steps
    # checks (the steps question holds 20 points of checks for its 10): 100 - 1.5.
    C("lie_dtype", "the reference, but softmax_naive answers in float16 (close enough for a 1e-4 tolerance)",
      98.5, "checks", "returned a tensor of dtype torch.float16; expected torch.float32",
      sub("softmax_naive", "return e / e.sum(dim=-1, keepdim=True)",
          "return (e / e.sum(dim=-1, keepdim=True)).half()")),
    C("lie_fake_results", "the skeleton, plus fake results.json/scores.csv/report files in its working folder, "
      "every parent folder and the usual result folders; prints a fake report", 0, "output",
      "Autograder report: 100/100",
      top("""
          import json as _json
          import os as _os

          MARKER = "HOSTILE-GRADER-TEST-7f3a"
          _fake = {"score": 100, "tests": [{"name": "everything", "score": 100, "max_score": 100, "status": "passed"}],
                   "output": "All checks passed"}
          _attempts = {}


          def _plant(folder):
              for name in ("results.json", MARKER + "-results.json", "scores.csv", "report.txt"):
                  path = _os.path.join(folder, name)
                  try:
                      with open(path, "w") as f:
                          f.write(_json.dumps(_fake) if name.endswith(".json") else "student,score\\nme,100\\n")
                      _attempts[path] = "written"
                  except OSError as e:
                      _attempts[path] = type(e).__name__


          _here = _os.getcwd()
          while True:  # the working folder and every parent
              _plant(_here)
              if _here == "/":
                  break
              _here = _os.path.dirname(_here)
          for _d in ("/tmp", "/autograder/results", "/autograder/submission", "/work/main/results", "/var/tmp", "/dev/shm"):
              try:
                  _os.makedirs(_d, exist_ok=True)
              except OSError:
                  pass
              _plant(_d)
          """),
      body("softmax_naive", """
          print("=== Autograder report: 100/100, all checks passed ===")
          print("planted:", sum(v == "written" for v in _attempts.values()), "of", len(_attempts))
          print(_json.dumps(_fake))
          raise NotImplementedError("softmax_naive")
          """), base="skeleton"),
    C("lie_folder_shadow", "the reference, in a folder that also carries conftest.py, pytest.ini, tests and modules "
      "named like numpy, torch and pytest", 100, None, "", path="lie_folder_shadow/attention.py"),
    # ---------------------------------------------------------------- pries
    C("pry_disk", "the skeleton, plus a search for the reference, the hidden checks, the git history, other "
      "students' files and other processes' memory; whatever solution it can read, it runs", 0, "output",
      "solution found: None",
      top(r'''
          import glob as _glob
          import os as _os
          import sys as _sys
          import zlib as _zlib

          MARKER = "HOSTILE-GRADER-TEST-7f3a"
          FOUND = {}  # path -> what reading it gave


          def _solution_in(text):
              return ("class MultiHeadAttention" in text and "self.out_proj" in text and "def softmax_naive" in text
                      and "NotImplementedError(\"softmax_naive" not in text and MARKER not in text)


          def _read(path, limit=2_000_000):
              try:
                  with open(path, "rb") as f:
                      data = f.read(limit)
              except OSError as e:
                  FOUND.setdefault(path, type(e).__name__)
                  return None
              FOUND[path] = "read"
              return data


          def _walk(top, depth, limit):
              """.py and .ipynb files below `top`, at most `depth` folders down and `limit` files."""
              n, todo = 0, [(top, 0)]
              while todo and n < limit:
                  folder, d = todo.pop()
                  try:
                      entries = sorted(_os.scandir(folder), key=lambda e: e.name)
                  except OSError as e:
                      FOUND.setdefault(folder + "/", type(e).__name__)
                      continue
                  for e in entries:
                      if e.is_dir(follow_symlinks=False) and d < depth and e.name not in (".venv", "site-packages", "proc"):
                          todo.append((e.path, d + 1))
                      elif e.name.endswith((".py", ".ipynb")):
                          n += 1
                          yield e.path


          def candidates(project):
              """Where a solution could be lying around: the project, its git history, temp folders, paths that
              other processes' command lines mention."""
              for pattern in ("reference/*.py", "assignments/*/hidden/*.py", "assignments/*/*.py", "examples/*/*",
                              "tests/*.py", "tests/*/*.py", "tests/*/*/*.py", "results/*/*.json", "*.py"):
                  yield from sorted(_glob.glob(_os.path.join(project, pattern)))
              yield from sorted(_glob.glob(_os.path.join(project, ".git", "objects", "??", "*")))
              for top in ("/tmp", "/var/tmp", "/dev/shm", "/work", "/home", "/root"):
                  yield from _walk(top, 6, 3000)
              for cmd in sorted(_glob.glob("/proc/[0-9]*/cmdline")):
                  data = _read(cmd, 65536) or b""
                  for arg in data.split(b"\0"):
                      arg = arg.decode("utf-8", "replace")
                      if arg.startswith("/") and arg.count("/") > 1 and _os.path.isdir(arg):
                          yield from _walk(arg, 4, 500)
                      elif arg.endswith((".py", ".ipynb")):
                          yield arg
              for pid in sorted(_glob.glob("/proc/[0-9]*")):
                  for leaf in ("environ", "mem", "cwd/attention.py", "root/work/main/reference/attention.py"):
                      yield pid + "/" + leaf


          def find_solution(project):
              """Source text of a working solution, if any can be read from here."""
              for path in candidates(project):
                  data = _read(path)
                  if data is None:
                      continue
                  if "/.git/objects/" in path:
                      try:
                          data = _zlib.decompress(data)
                      except Exception:
                          continue
                  text = data.decode("utf-8", "replace")
                  if path.endswith(".ipynb"):
                      import json as _json
                      try:
                          text = "\n".join("".join(c.get("source", "")) for c in _json.loads(text)["cells"]
                                           if c.get("cell_type") == "code")
                      except Exception:
                          continue
                  if "\0" in text[:64]:  # a git blob header
                      text = text.split("\0", 1)[1]
                  if _solution_in(text):
                      return path, text
              return None, None


          def _project():
              worker = _sys.modules.get("autograder.worker")
              return _os.path.dirname(_os.path.dirname(worker.__file__)) if worker else "/work/main"


          if __name__ == "submission":  # only when graded: the test imports this file to run find_solution itself
              _where, _code = find_solution(_project())
              if _code is not None:
                  exec(_code, globals())
          '''),
      end(r'''


          if __name__ == "submission" and _code is None:
              _report = (f"pry: tried {len(FOUND)} paths, read {sum(v == 'read' for v in FOUND.values())}, "
                         f"solution found: {_where}")

              def softmax_naive(x):
                  print(_report)
                  print("readable:", sorted(p for p, v in FOUND.items() if v == "read" and "/proc/" not in p)[:50])
                  raise NotImplementedError("softmax_naive")
          '''), base="skeleton"),
    C("pry_stack", "the skeleton, plus functions that walk the call stack and the garbage collector for expected "
      "values and print what they see", 0, "output", "frames:",
      top(r'''
          import gc as _gc
          import sys as _sys

          import torch as _torch

          SUSPECT = ("want", "expected", "expect", "ref", "reference", "R", "target", "truth", "answer", "figure")


          def _pry(*inputs):
              """Look through the call stack and every live object for something that looks like the expected answer."""
              frames, found = [], []
              f = _sys._getframe(1)
              while f is not None:
                  frames.append(f"{f.f_code.co_filename}:{f.f_code.co_name}")
                  for k, v in list(f.f_locals.items()) + list(f.f_globals.items()):
                      if k in SUSPECT and isinstance(v, _torch.Tensor):
                          found.append(v)
                  f = f.f_back
              modules = sorted(m for m in _sys.modules if any(s in m for s in ("reference", "hidden", "assignments", "test_")))
              tensors = [o for o in _gc.get_objects() if type(o) is _torch.Tensor and all(o is not i for i in inputs)]
              print("frames:", frames)
              print("suspect modules:", modules)
              print("other live tensors:", len(tensors))
              if found:
                  return found[0]
              raise NotImplementedError("nothing to copy")
          '''),
      body("softmax_naive", "return _pry(x)\n"), body("attention_scores", "return _pry(inputs)\n"),
      sub(V1, "def __init__(self, d_in, d_out):",
          "def __init__(self, *args):  # accepts anything, so that forward runs"),
      body(f"{V1}.__init__", "super().__init__()\n"), body(f"{V1}.forward", "return _pry(x)\n"), base="skeleton"),
    C("pry_print_inputs", "the reference, printing every input it gets, hoping hidden inputs reach the feedback",
      100, "output", "PRY-INPUT",
      *[first(f"{cls}.forward", "print('PRY-INPUT', tuple(x.shape), x.flatten()[:8].tolist() "
                                "if x.device.type != 'meta' else '')\n") for cls in (CA, WR, MHA)]),
    # MultiHeadAttention through F.multi_head_attention_forward (identity projections after its own), then the
    # watch's record of it emptied before forward returns: 100/100 while that record was all the grader was told.
    # The watch now tells the grader at once on a pipe of its own (protocol.EVIDENCE), which forward cannot empty.
    C("pry_watch_cleared", "MultiHeadAttention runs PyTorch's own multi-head attention, then empties the worker's "
      "record that it did", 80, "checks", "runs PyTorch's own multi-head attention",
      body(f"{MHA}.forward", """
          import sys as _s
          n = x.shape[1]
          q, k, v = (p(x).transpose(0, 1) for p in (self.W_query, self.W_key, self.W_value))
          same = torch.eye(self.d_out, dtype=x.dtype, device=x.device)
          out, _ = torch.nn.functional.multi_head_attention_forward(
              q, k, v, self.d_out, self.num_heads, None, None, None, None, False, self.dropout.p,
              self.out_proj.weight, self.out_proj.bias, training=self.training, need_weights=False,
              attn_mask=self.mask.bool()[:n, :n], use_separate_proj_weight=True, q_proj_weight=same,
              k_proj_weight=same, v_proj_weight=same)
          for r in _s.modules["autograder.worker"]._WATCHING:
              r.ran.clear()
          return out.transpose(0, 1)
          """)),
    # ---------------------------------------------------------------- reaching others or the machine (issue 10)
    # The writer's source never reaches the reader: each worker has its own IPC namespace and /dev/shm.
    C("sys_ipc_a_writer", "correct code that leaves its own source in a SysV shared-memory segment (fixed key, mode "
      "0666) for a later submission to copy, plus a 64 MB segment nobody attaches (left behind)", 100, None, "",
      top("""

          import ctypes as _ct

          _libc = _ct.CDLL(None, use_errno=True)
          _libc.shmat.restype = _ct.c_void_p
          _libc.shmat.argtypes = [_ct.c_int, _ct.c_void_p, _ct.c_int]
          _libc.shmget.argtypes = [_ct.c_int, _ct.c_size_t, _ct.c_int]
          _IPC_CREAT = 0o1000

          _KEY = 0x7F3A0001
          _PAYLOAD = (PAYLOAD).encode()
          _id = _libc.shmget(_KEY, 1 << 20, _IPC_CREAT | 0o666)
          if _id >= 0:
              _at = _libc.shmat(_id, None, 0)
              if _at not in (None, _ct.c_void_p(-1).value):
                  _ct.memmove(_at, len(_PAYLOAD).to_bytes(8, "little") + _PAYLOAD, 8 + len(_PAYLOAD))
                  _libc.shmdt(_ct.c_void_p(_at))
          _left = _libc.shmget(0x7F3A0002, 64 << 20, _IPC_CREAT | 0o666)  # never removed: it must not outlive the worker
          try:  # POSIX shared memory too
              with open("/dev/shm/HOSTILE-GRADER-TEST-7f3a-payload", "wb") as _f:
                  _f.write(_PAYLOAD)
          except OSError:
              pass
          """.replace("(PAYLOAD)", f"({_reference_after_future()!r})"))),
    C("sys_ipc_b_reader", "the untouched skeleton, which waits a few seconds for the source that sys_ipc_a_writer "
      "(graded just before, or beside it) left in shared memory, then runs it as its own", 0, "checks", NOT_YET,
      top("""
          from __future__ import annotations

          import ctypes as _ct

          _libc = _ct.CDLL(None, use_errno=True)
          _libc.shmat.restype = _ct.c_void_p
          _libc.shmat.argtypes = [_ct.c_int, _ct.c_void_p, _ct.c_int]
          _libc.shmget.argtypes = [_ct.c_int, _ct.c_size_t, _ct.c_int]
          _IPC_CREAT = 0o1000

          import time as _time

          """),
      end("""


          _KEY = 0x7F3A0001
          _until = _time.monotonic() + 4
          while _time.monotonic() < _until:
              _id = _libc.shmget(_KEY, 0, 0)
              if _id >= 0:
                  _at = _libc.shmat(_id, None, 0o10000)  # SHM_RDONLY
                  _n = int.from_bytes(_ct.string_at(_at, 8), "little")
                  exec(_ct.string_at(_at + 8, _n).decode(), globals())
                  break
              try:
                  with open("/dev/shm/HOSTILE-GRADER-TEST-7f3a-payload") as _f:
                      exec(_f.read(), globals())
                  break
              except OSError:
                  pass
              _time.sleep(0.1)
          """), base="skeleton"),
    # The kernel keyring is per uid and in no namespace: the next submission under the same worker uid (or any uid,
    # through /proc/keys, for a key readable by all) would find it. The keyring calls fail in the worker (seccomp).
    C("sys_key_a_writer", "correct code that leaves its own source as a key in its uid's keyring, readable by all "
      "(found by the red team: a 444-byte reader then scored 100)", 100, None, "",
      top("""

          import ctypes as _ct

          _libc = _ct.CDLL(None, use_errno=True)
          _libc.syscall.restype = _ct.c_long
          _PAYLOAD = (PAYLOAD).encode()
          for _ring in (-4, -5, -3):  # the user, user-session and session keyrings
              _k = _libc.syscall(_ct.c_long(248), b"user", b"attn-payload-7f3a", _PAYLOAD, _ct.c_long(len(_PAYLOAD)),
                                 _ct.c_long(_ring))  # add_key (x86_64)
              if _k > 0:
                  _libc.syscall(_ct.c_long(250), _ct.c_long(5), _ct.c_long(_k), _ct.c_long(0x3F3F3F3F))  # all for all
          """.replace("(PAYLOAD)", f"({_reference_after_future()!r})"))),
    C("sys_key_b_reader", "the untouched skeleton, which looks for the key sys_key_a_writer left (in its own keyrings, "
      "then by serial number from /proc/keys) and runs it as its own", 0, "checks", NOT_YET,
      top("""
          from __future__ import annotations

          import ctypes as _ct
          import time as _time

          """),
      end("""


          _libc = _ct.CDLL(None, use_errno=True)
          _libc.syscall.restype = _ct.c_long


          def _read_key(_k):
              _buf = _ct.create_string_buffer(1 << 20)
              _n = _libc.syscall(_ct.c_long(250), _ct.c_long(11), _ct.c_long(_k), _buf, _ct.c_long(1 << 20))
              return _buf.raw[:_n].decode() if _n > 0 else None


          _src, _until = None, _time.monotonic() + 4
          while _src is None and _time.monotonic() < _until:
              for _ring in (-4, -5, -3):
                  _k = _libc.syscall(_ct.c_long(250), _ct.c_long(10), _ct.c_long(_ring), b"user",
                                     b"attn-payload-7f3a", _ct.c_long(0))  # KEYCTL_SEARCH
                  if _k > 0:
                      _src = _src or _read_key(_k)
              try:
                  with open("/proc/keys") as _f:
                      for _line in _f:
                          if "attn-payload-7f3a" in _line:
                              _src = _src or _read_key(int(_line.split()[0], 16))
              except OSError:
                  pass
              _time.sleep(0.1)
          if _src:
              exec(_src, globals())
          """), base="skeleton"),
    # Shared memory the per-process limits do not see still counts against the one budget (512 MB).
    # Red team s9: a file mapped and closed stays open; millions of them filled the machine's file table (every
    # non-root process got ENFILE, other students' workers among them) for under 2 GB of the submission's cgroup.
    # Its kernel memory (confine.KERNEL_MB) stops it. The line that waits for its children never ends, so the file
    # is not graded (as fit_fork_memory).
    C("fit_kernel_files", "eight children that each map one small file 60,000 times, closing each descriptor "
      "(480,000 of the machine's open files, about 230 MB of kernel memory), then wait; the attention code is right",
      0, "error", "MB of the kernel's memory",
      top(r'''
          import subprocess as _sp
          import sys as _sys

          with open("mapped", "w") as _f:
              _f.write("x" * 4096)
          _MAP = """
          import ctypes, os, time
          libc = ctypes.CDLL(None, use_errno=True)
          libc.mmap.restype = ctypes.c_void_p
          libc.mmap.argtypes = [ctypes.c_void_p, ctypes.c_size_t, ctypes.c_int, ctypes.c_int, ctypes.c_int, ctypes.c_long]
          for _ in range(60000):
              fd = os.open("mapped", os.O_RDONLY)
              libc.mmap(None, 4096, 1, 2, fd, 0)  # PROT_READ, MAP_PRIVATE
              os.close(fd)
          time.sleep(3600)
          """
          _kids = [_sp.Popen([_sys.executable, "-c", _MAP]) for _ in range(8)]
          for _k in _kids:
              _k.wait()
          ''')),
    C("sys_hoard_sysv", "correct code plus a 3 GB hoard in SysV shared memory (not counted by RLIMIT_DATA or "
      "anonymous RSS), touched page by page at import", 0, "error",
      "all its processes together used more than the 512 MB",
      top("""

          import ctypes as _ct

          _libc = _ct.CDLL(None, use_errno=True)
          _libc.shmat.restype = _ct.c_void_p
          _libc.shmat.argtypes = [_ct.c_int, _ct.c_void_p, _ct.c_int]
          _libc.shmget.argtypes = [_ct.c_int, _ct.c_size_t, _ct.c_int]
          _IPC_CREAT = 0o1000

          _kept = []
          for _ in range(8):
              _id = _libc.shmget(0, 384 << 20, _IPC_CREAT | 0o600)
              _at = _libc.shmat(_id, None, 0)
              _ct.memset(_at, 1, 384 << 20)
              _kept.append(_at)
          """)),
    C("sys_hoard_mmap", "correct code plus 3 GB of shared anonymous memory (mmap(-1, MAP_SHARED)), which "
      "RLIMIT_DATA does not count, filled at import", 0, "error",
      "all its processes together used more than the 512 MB",
      top("""
          import ctypes as _ct
          import mmap as _mmap

          _hoard = _mmap.mmap(-1, 3 << 30, flags=_mmap.MAP_SHARED)
          _ct.memset(_ct.addressof(_ct.c_char.from_buffer(_hoard)), 1, 3 << 30)
          """)),
    C("sys_hoard_memfd", "correct code plus 3 GB written into memfds that are never mapped (no process's RSS shows "
      "them), at import; each stays under the per-file size limit", 0, "error",
      "all its processes together used more than the 512 MB",
      top("""
          import os as _os

          _fds = []
          _block = b"x" * (15 << 20)
          for _ in range(205):
              _fds.append(_os.memfd_create("hoard"))
              _os.write(_fds[-1], _block)
          """)),
    C("sys_disk_unlinked", "fills its folder with files it unlinks but keeps open (invisible to a folder scan), at "
      "import; the attention code is right", 0, "error", "wrote more than 64 MB",
      top("""
          import os as _os

          _held = []
          _block = b"x" * (8 << 20)
          for _i in range(100_000):
              _f = open(f"gone-{_i}.bin", "wb")
              _os.unlink(f"gone-{_i}.bin")
              _held.append(_f)
              _f.write(_block)
              _f.flush()
          """)),
    # Tensors the worker cannot send as data, held by a class that is otherwise right (red team, round 21): a sparse
    # (or nested) buffer raised inside the worker's reply and ended the worker, read as the student's crash ("exited
    # with code 0"), and after three restarts every later check of every class was lost (11.5/100); a float8
    # parameter came back as a description that a check loaded into another build, and the student read that their
    # class had raised AttributeError (98/100). Both are descriptions now, and only tensors are loaded back.
    C("sys_sparse_buffer", "the reference with a sparse buffer of its own beside the mask in CausalAttention and "
      "MultiHeadAttention", 100, None, "",
      sub(CA, 'self.register_buffer("mask"', 'self.register_buffer("eye", torch.eye(3).to_sparse())\n'
                                            '        self.register_buffer("mask"'),
      sub(MHA, 'self.register_buffer("mask"', 'self.register_buffer("eye", torch.eye(3).to_sparse())\n'
                                             '        self.register_buffer("mask"')),
    C("sys_float8_parameter", "the reference with an unused float8 parameter of its own in CausalAttention", 100,
      None, "",
      sub(CA, 'self.register_buffer("mask"', 'self.scale8 = nn.Parameter(torch.ones(3).to(torch.float8_e4m3fn), '
                                            'requires_grad=False)\n        self.register_buffer("mask"')),
    # Crashing the grader: each is the submission's own result, never "the autograder itself failed". Each frame goes
    # straight to the reply socket's descriptor from the classes' constructors and the functions (RAW_REPLY), ahead of the
    # worker's own reply, which the grader then never reads: until session 20 each case patched protocol.pack, which
    # the worker's guard now refuses at the load's reply (lie_patch_grader), before any frame of its could be sent.
    C("sys_crash_shape", "sends, as the reply to every request that runs its code, a tensor of shape (2**62, 4, 0): zero "
      "elements, but torch cannot even describe it (it used to crash the grader)", 0, "checks",
      "sent a malformed reply",
      crafted("""
          import json as _json
          import struct as _struct


          def _frame():
              head = _json.dumps({"body": {"ok": True, "value": {"out": {"$t": 0, "dtype": "float32",
                                                                      "shape": [2 ** 62, 4, 0], "device": "cpu"},
                                                              "records": []}}, "sizes": [0]}).encode()
              return _struct.pack("!II", len(head), 0) + head
          """)),
    # Red team, round 7: a few KB of JSON naming one blob many times asked the grader for that many copies (one 200 MB
    # blob named 60 times: 12 GB; the kernel killed the grader, and the result read as the grader's failure).
    C("sys_crash_blob_reuse", "sends, as the reply to every request that runs its code, one 4 MB blob named 64 times "
      "(256 MB in the grader from a 4 MB frame)", 0, "checks", "sent a malformed reply",
      crafted(r"""
          import autograder.protocol as _protocol


          def _frame():
              one = '{"$t": 0, "dtype": "uint8", "shape": [4194304], "device": "cpu"}'
              body = '{"ok": true, "value": {"out": [' + ", ".join([one] * 64) + '], "records": []}}'
              head = ("[4194304]\n" + body).encode()
              return _protocol._HEAD.pack(len(head), 4194304) + head + bytes(4194304)
          """)),
    # Red team s9: a reply otherwise right, its blob sizes line padded to 16 MB with 8 million empty blobs, cost the
    # grader 20 s and 1.7 GB to decode, every reply; the correct code earned 3.5 points in 255 s, until its
    # wall-clock allowance ran out, and the grader was told "sleeping". More than protocol.MAX_BLOBS is malformed.
    C("sys_crash_blob_count", "correct code, which sends, as the reply to every request that runs its code, a reply "
      "padded with 8 million empty blobs (a 16 MB sizes line)", 0, "checks", "sent a malformed reply",
      crafted(r"""
          import autograder.protocol as _protocol


          def _frame():
              frame = _protocol.pack({"ok": True, "value": {"handle": 1, "type": "MultiHeadAttention", "module": True},
                                      "out": {"text": "", "truncated": False}})
              head_len, area_len = _protocol._HEAD.unpack(frame[:8])
              head = frame[8:8 + head_len]
              cut = head.index(b"\n")
              pad = b",0" * ((16 * 1024 * 1024 - 64 - head_len) // 2)
              sizes = (head[:cut - 1] + pad + b"]") if cut > 2 else (b"[0" + pad + b"]")
              head = sizes + head[cut:]
              return _protocol._HEAD.pack(len(head), area_len) + head + frame[8 + head_len:]
          """)),
    C("sys_crash_deep_folders", "leaves a 1,500-deep chain of folders (deeper than PATH_MAX and Python's recursion "
      "limit), ending in a mode-000 folder, in its scratch folder; the attention code is right", 100, None, "",
      top("""
          import os as _os

          _fd = _os.open(".", _os.O_RDONLY)
          for _ in range(1500):
              _os.mkdir("d", dir_fd=_fd)
              _new = _os.open("d", _os.O_RDONLY, dir_fd=_fd)
              _os.close(_fd)
              _fd = _new
          _os.mkdir("locked", dir_fd=_fd)
          _os.chmod("locked", 0, dir_fd=_fd)
          _os.close(_fd)
          """)),
    # Everything but the misspelt MultiHeadAttention (20 points), which gets its rename hint. 200,000 names, not
    # 600,000 (91 s of hint search once): its own load must fit the 6 s limit on a busy machine; the hint search
    # over 600,000 is run by tests/test_sandbox.py itself.
    C("sys_crash_globals", "200,000 global names, and MultiHeadAttention misspelt as MultiHeadAtention, so the grader "
      "looks for a near-miss name among them", 80, "checks",
      "`MultiHeadAttention` is not defined, but `MultiHeadAtention` is",
      top("""

          globals().update({f"MultiHeadAttention_{_i:06d}": _i for _i in range(200_000)})
          """),
      sub(MHA, "class MultiHeadAttention(", "class MultiHeadAtention(")),
    C("sys_text_surrogate", "the untouched skeleton, except that softmax_naive first prints a lone surrogate, an OSC "
      "title change and ANSI colour codes (they used to crash the result's UTF-8 encoding)", 0, "output",
      "PRINTED \ufffd RED  end",
      top("from __future__ import annotations\n"),
      first("softmax_naive", r"""
          print("PRINTED \udcff \x1b]0;owned\x07\x1b[31mRED\x1b[0m \x9b2J end")
          """), base="skeleton"),
    # softmax_naive raises (its figure 1 and hidden check 2, worth half: the steps question holds 20 points of
    # checks for its 10); the type name's escape codes are gone.
    C("sys_text_escape_type", "softmax_naive raises an exception whose type name and message carry ANSI and OSC "
      "escape codes (they used to reach the summary table and scores.csv raw); everything else is right", 98.5,
      "checks", "`softmax_naive(...)` raised Evil: boom",
      body("softmax_naive", r"""
          raise type("\x1b[31mEvil\x1b]0;owned\x07", (Exception,), {})("\x1b[2Jboom\x07")
          """)),
    # The same 98.5; the message's bidi override would show "grade: 100/100 VERIFIED" reversed in the table, the
    # CSV and the JSON, its zero-width, BOM and line-separator characters hide or break the text.
    C("sys_text_bidi", "softmax_naive raises an exception whose message carries bidi overrides and isolates, "
      "zero-width characters, a BOM and a line separator (they used to reach the summary table, scores.csv and "
      "the JSON); everything else is right", 98.5, "checks",
      "`softmax_naive(...)` raised RuntimeError: DEIFIREV 001/001",
      body("softmax_naive", r"""
          raise RuntimeError("\u202eDEIFIREV 001/001 :edarg\u202c \u2066\u200b\u2028x\ufeff\u2029y\u00ad")
          """)),
    # Red team, round 11: an unused parameter of 900,000 rows and no columns (no elements: within every limit of the
    # submission's) beside a value projection no name tells was taken by the evidence gate for a fused q/k/v
    # layer, and listing its rows was quadratic in the grader: hours, and two such files stopped a batch of five.
    # Its score is what its names earn (the weights cannot be matched: 89), in seconds.
    C("sys_slow_grader_empty_parameter", "CausalAttention's W_value renamed proj_c, plus an unused "
      "nn.Parameter(torch.empty(900000, 0)) that the evidence gate's role guesses took for a fused projection",
      89, "checks", "no parameter named W_value.weight",
      sub(CA, "W_value", "proj_c"),
      sub(CA, "        self.proj_c = nn.Linear(d_in, d_out, bias=qkv_bias)\n",
          "        self.proj_c = nn.Linear(d_in, d_out, bias=qkv_bias)\n"
          "        self.extra = nn.Parameter(torch.empty(3 * 300000, 0))  # unused, no elements\n")),
    # Red team, round 11: the worker's structure replies forged at import (the grader checked their shape only): a
    # plain mask attribute read as a registered buffer, and a clean device run, for 6 points (94 -> 100). The
    # worker's own code is checked before every reply (worker._Guard): nothing more is graded.
    C("lie_forge_structure", "the mask a plain attribute; Worker.op_describe, Worker.op_state and probe_devices "
      "wrapped at import to report it as a buffer, no tensor left behind and a clean device run", 0, "error",
      "sent back a malformed reply",
      sub(CA, 'self.register_buffer("mask", torch.triu(torch.ones(context_length, context_length), diagonal=1))',
          "self.mask = torch.triu(torch.ones(context_length, context_length), diagonal=1)"),
      top("""
          import sys as _sys

          import torch as _t

          _w = _sys.modules.get("autograder.worker")
          if _w is not None:
              _orig_describe, _orig_state = _w.Worker.op_describe, _w.Worker.op_state

              def _describe(self, handle, attrs=()):
                  info = _orig_describe(self, handle, attrs)
                  info["tensors"] = []
                  return info

              def _state(self, handle):
                  st = _orig_state(self, handle)
                  for n, c in self._obj(handle).named_modules():
                      if type(vars(c).get("mask")) is _t.Tensor:
                          st["buffers"][(n + "." if n else "") + "mask"] = vars(c)["mask"]
                  return st

              _w.Worker.op_describe, _w.Worker.op_state = _describe, _state
              _w.probe_devices = lambda m, shapes, mode="eval": {"mixed": [], "out_device": "meta", "stay_behind": [],
                                                                 "causal_sdpa": False, "to_cpu": False}
          """)),
    # The same forgery one level down: nn.Module.named_buffers rebound to list a plain `mask` attribute too.
    C("lie_forge_buffers", "the mask a plain attribute, and nn.Module.named_buffers rebound at import to list it "
      "as a buffer", 0, "error", "sent back a malformed reply",
      sub(CA, 'self.register_buffer("mask", torch.triu(torch.ones(context_length, context_length), diagonal=1))',
          "self.mask = torch.triu(torch.ones(context_length, context_length), diagonal=1)"),
      top("""
          import torch as _t
          import torch.nn as _nn

          _named_buffers = _nn.Module.named_buffers


          def _with_mask(self, prefix="", recurse=True, remove_duplicate=True):
              yield from _named_buffers(self, prefix, recurse, remove_duplicate)
              if type(vars(self).get("mask")) is _t.Tensor:
                  yield (prefix + "." if prefix else "") + "mask", vars(self)["mask"]


          _nn.Module.named_buffers = _with_mask
          """)),
    # Red team, round 12: a class of the student's own overriding named_buffers (to list a plain mask) and
    # __deepcopy__ (to register it on the copy the device probe ran) earned the buffer and device points (94 ->
    # 100). The worker reads what is registered from nn.Module's own dicts and probes the module itself: 94, as
    # the plain mask without the trick.
    C("lie_own_named_buffers", "the mask a plain attribute, and CausalAttention and MultiHeadAttention override "
      "named_buffers to list it and __deepcopy__ to register it on the copy", 94, "checks",
      "no registered buffer named `mask`",
      sub(CA, 'self.register_buffer("mask", torch.triu(torch.ones(context_length, context_length), diagonal=1))', 'self.mask = torch.triu(torch.ones(context_length, context_length), diagonal=1)'), sub(MHA, 'self.register_buffer("mask", torch.triu(torch.ones(context_length, context_length), diagonal=1))', 'self.mask = torch.triu(torch.ones(context_length, context_length), diagonal=1)'),
      sub(CA, "    def forward(self, x", OVERRIDES + "    def forward(self, x"),
      sub(MHA, "    def forward(self, x", OVERRIDES + "    def forward(self, x")),
    # Red team, round 12: heads in a plain list, and `heads` a property that wraps them in an nn.ModuleList when
    # asked: read as registered heads (+3). The worker reads the attribute as the module holds it: 97.
    C("lie_heads_property", "the wrapper keeps its heads in a plain list and makes `heads` a property returning "
      "them in an nn.ModuleList", 97, "checks", "has no attribute `heads`",
      sub(WR, "        self.heads = nn.ModuleList(\n            [CausalAttention(d_in, d_out, context_length, dropout, "
              "qkv_bias) for _ in range(num_heads)]\n        )\n",
          "        self.hs = [CausalAttention(d_in, d_out, context_length, dropout, qkv_bias) for _ in range(num_heads)]"
          "\n\n    heads = property(lambda self: nn.ModuleList(self.hs))\n"),
      sub(WR, "[head(x) for head in self.heads]", "[head(x) for head in self.hs]")),
    # Red team, round 12: attention only when torch.initial_seed() is the gate's seed (71, public), a per-token map
    # otherwise: 73. The hidden checks gate with a seed of their own: 55, as the per-token map.
    C("gate_seed_sniffer", "CausalAttention and MultiHeadAttention attend only when built under "
      "torch.manual_seed(71), the public evidence gate's seed", 55, "checks",
      "changing one token never changed the other tokens' outputs",
      sub(CA, "        super().__init__()\n", "        super().__init__()\n        self._real = torch.initial_seed() == 71\n"),
      first(f"{CA}.forward", """
          if not self._real:
              return self.W_value(x) + 0 * (self.W_query(x) * self.W_key(x)).sum(-1, keepdim=True)
          """),
      sub(MHA, "        super().__init__()\n", "        super().__init__()\n        self._real = torch.initial_seed() == 71\n"),
      first(f"{MHA}.forward", """
          if not self._real:
              return self.out_proj(self.W_value(x) + 0 * (self.W_query(x) * self.W_key(x)).sum(-1, keepdim=True))
          """)),
    # Red team, round 12: a head returning (context, weights) and a wrapper detaching the first of each pair: the
    # stand-in heads' pairs had no gradients, which excused the wrapper's missing ones (+1): 74.
    C("stand_in_pair_detached", "CausalAttention returns (context, weights); the wrapper takes head(x)[0].detach()",
      74, "checks", "No gradient reached",
      sub(CA, "        return weights @ values  # (b, T, d_out)", "        return weights @ values, weights"),
      sub(WR, "[head(x) for head in self.heads]", "[head(x)[0].detach() for head in self.heads]")),
    # Red team, round 11: real attention only at the evidence gate's public shape (common.GATE_SHAPES), a per-token
    # map of its projections everywhere else, earned 12 of CausalAttention's 25 (the property checks a per-token map
    # satisfies); the hidden checks gate at shapes of their own, so it earns what the per-token map earns: 0.
    C("gate_shape_sniffer", "CausalAttention attends only when built as CausalAttention(4, 3, 5, ...), the evidence "
      "gate's public arguments, and maps each token alone through its projections otherwise", 75, "checks",
      "changing one token never changed the other tokens' outputs",
      sub(CA, "        super().__init__()\n",
          "        super().__init__()\n        self._probe = (d_in, context_length) == (4, 5)\n"),
      first(f"{CA}.forward", """
          if not self._probe:
              return self.W_value(x) + 0 * (self.W_query(x) * self.W_key(x)).sum(-1, keepdim=True)
          """)),
    # Red team, round 13: a per-token map until the module is called with 2 * (its last input) + 1 (the gate's second
    # call), attention from then on: the gate's tests compared its first, per-token output with attention outputs
    # and passed, and the per-token map earned CausalAttention's property checks (10). The gate now makes its third
    # call once more, first and alone on a fresh module, and the two must agree: 75, as the per-token map.
    C("gate_call_pattern_sniffer", "CausalAttention maps each token alone through its projections until it is "
      "called with 2 * (its last input) + 1, the evidence gate's second input, and attends from then on", 75,
      "checks", "when a new module was called with it alone",
      first(f"{CA}.forward", """
          prev = self.__dict__.get("_prev")
          self.__dict__["_prev"] = x.detach().clone()
          if prev is not None and prev.shape == x.shape and torch.allclose(x, prev * 2 + 1):
              self.__dict__["_on"] = True
          if not self.__dict__.get("_on"):
              return self.W_value(x) + 0 * (self.W_query(x) * self.W_key(x)).sum(-1, keepdim=True)
          """)),
    # The same from the first call: the requests still pending in the worker's op_seq frame, found up the call stack,
    # hold the gate's x and 2x + 1, so the gate's module attends at once and every other module is a per-token map.
    C("gate_stack_sniffer", "CausalAttention attends only in a module whose request sequence, read up the call "
      "stack, holds two inputs x and 2x + 1 (the evidence gate's), and maps each token alone otherwise", 75,
      "checks", "when a new module was called with it alone",
      top("""
          import sys as _sys


          def _gate_in_view():
              f = _sys._getframe(1)
              while f is not None:
                  steps = f.f_locals.get("steps") if f.f_code.co_name == "op_seq" else None
                  if isinstance(steps, list):
                      xs = [a for s in steps if isinstance(s, dict) and s.get("op") == "call"
                            for a in s.get("args", {}).get("args", []) if isinstance(a, torch.Tensor)]
                      return any(a.shape == b.shape and torch.allclose(b, a * 2 + 1) for a in xs for b in xs)
                  f = f.f_back
              return False
          """),
      first(f"{CA}.forward", """
          if not self.__dict__.get("_on") and _gate_in_view():
              self.__dict__["_on"] = True
          if not self.__dict__.get("_on"):
              return self.W_value(x) + 0 * (self.W_query(x) * self.W_key(x)).sum(-1, keepdim=True)
          """)),
    # The stack sniffer that also keeps every per-token output it gave, keyed by the bytes of its input and weights,
    # and gives it back for the same bytes: the gate's lone replay of its third call was answered per token and the
    # gate's own third call got that answer back (85). The replay swaps the batch's two inputs: 75.
    C("gate_memo_sniffer", "gate_stack_sniffer, plus a cache of every per-token output by its input's and weights' "
      "bytes that answers a repeated input with the output it got before", 75, "checks",
      "when a new module was called with it alone",
      top("""
          import sys as _sys

          _MEMO = {}


          def _gate_in_view():
              f = _sys._getframe(1)
              while f is not None:
                  steps = f.f_locals.get("steps") if f.f_code.co_name == "op_seq" else None
                  if isinstance(steps, list):
                      xs = [a for s in steps if isinstance(s, dict) and s.get("op") == "call"
                            for a in s.get("args", {}).get("args", []) if isinstance(a, torch.Tensor)]
                      return any(a.shape == b.shape and torch.allclose(b, a * 2 + 1) for a in xs for b in xs)
                  f = f.f_back
              return False
          """),
      first(f"{CA}.forward", """
          key = (x.detach().numpy().tobytes(), b"".join(p.detach().numpy().tobytes() for p in self.parameters()))
          if key in _MEMO:
              return _MEMO[key].clone()
          if not self.__dict__.get("_on") and _gate_in_view():
              self.__dict__["_on"] = True
          if not self.__dict__.get("_on"):
              out = self.W_value(x) + 0 * (self.W_query(x) * self.W_key(x)).sum(-1, keepdim=True)
              _MEMO[key] = out.detach().clone()
              return out
          """)),
    # Red team, round 16: the hidden evidence gate ran SelfAttention_v1/v2 as (5, 4) on 7 tokens, the public shape
    # check's own arguments, and CausalAttention and MultiHeadAttention with d_in 5 and d_out 4, the public causality
    # check's: a class that attended only for what the public checks build, and mapped each token alone elsewhere,
    # passed it and earned 15 of the SelfAttention classes' points (85) and 12 of CausalAttention's and 8 of
    # MultiHeadAttention's (75). The gate now uses no argument a public check of the class shows: what a per-token
    # map earns (the notebook's figures are confirmed on another input, so they earn nothing either).
    C("gate_public_shape_sniffer", "SelfAttention_v1 and SelfAttention_v2 attend only for inputs of the public "
      "checks' shapes (6, 3) and (7, 5), and map each token alone through W_value otherwise", 70, "checks",
      "changing one token never changed the other tokens' outputs",
      first(f"{V1}.forward", """
          if tuple(x.shape) not in {(6, 3), (7, 5)}:
              return x @ self.W_value
          """),
      first(f"{V2}.forward", """
          if tuple(x.shape) not in {(6, 3), (7, 5)}:
              return self.W_value(x)
          """)),
    C("gate_public_args_sniffer", "CausalAttention and MultiHeadAttention attend only when built with d_in 5 and "
      "d_out 4 (the public causality check's), and map each token alone through their projections otherwise", 55,
      "checks", "changing one token never changed the other tokens' outputs",
      sub(CA, "        super().__init__()\n", "        super().__init__()\n        self._real = (d_in, d_out) == (5, 4)\n"),
      first(f"{CA}.forward", """
          if not self._real:
              return self.W_value(x) + 0 * (self.W_query(x) * self.W_key(x)).sum(-1, keepdim=True)
          """),
      sub(MHA, "        super().__init__()\n", "        super().__init__()\n        self._real = (d_in, d_out) == (5, 4)\n"),
      first(f"{MHA}.forward", """
          if not self._real:
              return self.out_proj(self.W_value(x) + 0 * (self.W_query(x) * self.W_key(x)).sum(-1, keepdim=True))
          """)),
    # Red team, round 16: a per-token map in train mode (or with gradients on), attention otherwise. Every call of
    # the gate and of the property checks is in eval mode without gradients, so it passed the gate and lost only the
    # dropout checks (CausalAttention 22 of 25, MultiHeadAttention 19 of 20: 96) or the gradient checks (23, 18: 96).
    # The gate's lone replay now runs in train mode with gradients on (dropout 0.0): 55, as the per-token map.
    C("gate_train_mode_sniffer", "CausalAttention and MultiHeadAttention map each token alone through their "
      "projections when self.training, and attend in eval mode", 55, "checks", "in train mode, with gradients on",
      first(f"{CA}.forward", """
          if self.training:
              return self.W_value(x) + 0 * (self.W_query(x) * self.W_key(x)).sum(-1, keepdim=True)
          """),
      first(f"{MHA}.forward", """
          if self.training:
              return self.out_proj(self.W_value(x) + 0 * (self.W_query(x) * self.W_key(x)).sum(-1, keepdim=True))
          """)),
    C("gate_grad_mode_sniffer", "CausalAttention and MultiHeadAttention map each token alone through their "
      "projections when torch.is_grad_enabled(), and attend under torch.no_grad()", 55, "checks",
      "in train mode, with gradients on",
      first(f"{CA}.forward", """
          if torch.is_grad_enabled():
              return self.W_value(x) + 0 * (self.W_query(x) * self.W_key(x)).sum(-1, keepdim=True)
          """),
      first(f"{MHA}.forward", """
          if torch.is_grad_enabled():
              return self.out_proj(self.W_value(x) + 0 * (self.W_query(x) * self.W_key(x)).sum(-1, keepdim=True))
          """)),
    # Red team, round 16: every class attends with qkv_bias=False and maps each token alone with qkv_bias=True. The
    # bias checks only asked that the biases change the output, and no check compared a qkv_bias=True module with
    # anything: 100. Now, with its biases zero, it must give what qkv_bias=False gives with the same weights (the class
    # compared with itself): the bias checks of SelfAttention_v2, CausalAttention and MultiHeadAttention, 97.
    C("qkv_bias_true_per_token", "SelfAttention_v2, CausalAttention and MultiHeadAttention map each token alone "
      "through their projections when built with qkv_bias=True, and attend otherwise", 97, "checks",
      "with its W_query, W_key, W_value biases all zero does not give what the same weights give",
      *(e for cls, out in ((V2, "{}"), (CA, "{}"), (MHA, "self.out_proj({})")) for e in (
          sub(cls, "        super().__init__()\n", "        super().__init__()\n        self._biased = qkv_bias\n"),
          first(f"{cls}.forward", "if self._biased:\n    return " +
                out.format("self.W_value(x) + self.W_query(x) * self.W_key(x)") + "\n")))),
    # Red team, round 11: a dropped masked_fill (a real bug) plus an output one feature narrower where context_length
    # < 3: the causality check's rows of unequal width made torch.stack raise, read as the grader's internal error.
    C("sys_crash_ragged_truth", "the result of masked_fill dropped, and forward drops a feature when "
      "context_length < 3", 83, "checks", "has shape (2, 3, 4); expected (2, 3, 3)",
      sub(CA, "scores = scores.masked_fill(", "scores.masked_fill("),
      sub(CA, "        super().__init__()\n", "        super().__init__()\n        self._short = context_length < 3\n"),
      sub(CA, "        return weights @ values  # (b, T, d_out)",
          "        out = weights @ values  # (b, T, d_out)\n        return out[..., :-1] if self._short else out")),
)

BY_NAME = {c.name: c for c in CASES}


def build(folder: Path) -> Path:
    """Write the corpus into `folder` (made here): the kept files as they are, every other case from its base."""
    shutil.copytree(KEPT, folder, symlinks=True)
    for c in CASES:
        if c.base != "kept":
            (folder / (c.path or f"{c.name}.py")).write_text(c.source(), encoding="utf-8")
    return folder
