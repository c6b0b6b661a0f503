"""The only way a check reaches student code: `sub` sends requests to the worker and gets plain data back."""
from __future__ import annotations

import ast
import contextlib
import os
import re
import time
from typing import Any, Callable, Iterator, NamedTuple

from . import protocol
from .checks import CheckFailure, rename_fits, rename_guess
from .messages import Message, bilingual, near_miss, rename_hint
from .replies import error_well_formed, well_formed
from .sandbox import Limits, WorkerLost, WorkerProcess, WorkerTimeout
from .source import Source

MAX_RESTARTS = 3  # crashes; a hang restarts too, but each class (and each top-level line) can hang only once
MAX_HUNG_LINES = 5  # top-level lines skipped because they never finished; more and the file is not graded
# The student's code may also keep the grader waiting (sleeping, blocking on something) at most this many times its
# CPU budget in all, counted over the requests that returned: a call that sleeps just under call_timeout, in every
# check, used no CPU and kept a grader busy for 13 minutes, until the batch's watchdog blamed the grader.
WAIT_FACTOR = 2.0


MAX_IMPORT_PROBES = 3  # fresh workers a submission may have started to tell its import failures from the grader's


class EnvironmentFailure(RuntimeError):
    """The worker could not import a module that the grader's own Python can: the installation is not reachable
    from the sandbox (e.g. an interpreter under a mode-700 home). The grader's failure, reported to staff."""


def _env_failure(err: dict[str, Any]) -> str | None:
    """The module name when `err` (from the worker) is an import failure of a module installed with the
    grader's Python (looked up on disk, nothing is imported); None when it is the student's own doing."""
    import re
    import sys
    from importlib.machinery import PathFinder
    if err.get("type") not in ("ModuleNotFoundError", "ImportError"):
        return None
    m = re.search(r"No module named '([\w.]+)'", str(err.get("message", "")))
    if not m:
        return None
    roots = [os.path.realpath(p) for p in {sys.prefix, sys.base_prefix, sys.exec_prefix, sys.base_exec_prefix}]
    parts = m.group(1).split(".")
    if parts[0] in sys.builtin_module_names:
        # A builtin module has no submodules: `import sys.getsizeof` is the student's typo, not the installation.
        return m.group(1) if len(parts) == 1 else None
    path = None
    for i, part in enumerate(parts):
        if path is None and i > 0:
            # The name goes on below a module that is not a package (`import torch.nn.functional.softmax`):
            # nothing by that name is installed anywhere, so the failure is the submission's own.
            return None
        try:
            spec = PathFinder.find_spec(part, path)
        except Exception:
            return None
        if spec is None:
            return None
        where = spec.origin if spec.origin not in (None, "namespace") else \
            next(iter(spec.submodule_search_locations or []), "")
        if i == 0 and not any(os.path.realpath(where or "/").startswith(r + os.sep) for r in roots):
            return None  # not part of the installation (e.g. the project's own reference folder)
        path = spec.submodule_search_locations
    return m.group(1)


_FROM_IMPORT = re.compile(r"from\s+([A-Za-z_][\w.]*)\s+import\s+\(?\s*(.*?)\s*\)?\s*(?:#.*)?$")


def _imports_name(code: str, name: str) -> str | None:
    """The module that the statement `code` (one line, as a load error quotes it) imports `name` from: `from X
    import name`, `from X import a, name as n`, `from X import *`; else None."""
    m = _FROM_IMPORT.fullmatch(code.strip())
    if m is None:
        return None
    names = [part.split()[0] for part in m.group(2).split(",") if part.split()]
    return m.group(1) if name in names or "*" in names else None


def _exc_text(err: dict[str, Any]) -> tuple[str, str]:
    """English and Korean one-liners for an exception the submission raised."""
    etype, msg = str(err.get("type", "Exception")), str(err.get("message", ""))
    where = err.get("where") or {}
    loc_en = loc_ko = ""
    if where.get("line"):
        loc_en = f" ({where.get('file')}, line {where['line']} in {where.get('function')}: `{where.get('code', '')}`)"
        loc_ko = f" ({where.get('file')}, {where['line']}번째 줄, {where.get('function')}: `{where.get('code', '')}`)"
    head = f"{etype}: {msg}" if msg else etype
    code = str(where.get("code", ""))
    hint = _mask_hint(msg, code)
    if not hint.en:
        hint = _transpose_hint(msg, code)
    return head + loc_en + hint.en, head + loc_ko + hint.ko


_SIZES = re.compile(r"size of tensor a \((\d+)\) must match the size of tensor b \((\d+)\)")


def _mask_hint(msg: str, code: str) -> Message:
    """Where a line that uses a mask fails on two sizes that do not match, the usual cause in the student's terms: the
    mask is context_length wide and not sliced to the number of tokens (learners round 8: five checks showed only
    PyTorch's broadcast error, one said to slice)."""
    sizes = _SIZES.search(msg)
    if sizes is None or "mask" not in code.lower() or sizes[1] == sizes[2] or "[:" in code.replace(" ", ""):
        return Message("", "")
    return Message(f". The mask and the scores differ in size ({sizes[1]} and {sizes[2]}): the mask is made for "
                   "context_length tokens; slice it to the input's, e.g. self.mask.bool()[:num_tokens, :num_tokens]",
                   f". 마스크와 점수의 크기가 다릅니다({sizes[1]}, {sizes[2]}): 마스크는 context_length개 토큰 크기로 "
                   "만들어지므로 입력 토큰 수에 맞게 잘라 쓰세요. 예: self.mask.bool()[:num_tokens, :num_tokens]")


_MATMUL_MISFIT = re.compile(r"mat1 and mat2 shapes cannot be multiplied|Expected size for first two dimensions of "
                            r"batch2 tensor")
_KEYS = re.compile(r"\bk(?:ey|eys)?\b")
_TRANSPOSED = re.compile(r"\.T\b|\.mT\b|\.t\(|transpose|permute|swapaxes|einsum")


def _transpose_hint(msg: str, code: str) -> Message:
    """Where the scores' product fails on its shapes and the line multiplies by the keys as they are, the usual cause
    in the student's terms: the keys are not transposed (learners' corpus, session 19: `queries @ keys` showed only
    PyTorch's "mat1 and mat2 shapes cannot be multiplied")."""
    if not _MATMUL_MISFIT.search(msg) or "@" not in code and "matmul" not in code or not _KEYS.search(code) \
            or _TRANSPOSED.search(code):
        return Message("", "")
    return Message(". The keys are not transposed: the scores are queries @ keys.T (keys.transpose(-2, -1) where there "
                   "is a batch or heads)",
                   ". 키를 전치하지 않았습니다: 점수는 queries @ keys.T입니다 (배치나 헤드가 있으면 "
                   "keys.transpose(-2, -1))")


# Real special methods a student's class may define: never read as a misspelling of __init__.
_DUNDERS = {"__iter__", "__call__", "__repr__", "__str__", "__len__", "__new__", "__del__", "__getitem__",
            "__setattr__", "__getattr__", "__post_init__", "__init_subclass__"}


def class_methods(source: Source) -> dict[str, list[str]]:
    """The methods each top-level class of the source defines (read, not run; the last definition of a name
    wins, as when run). Cells Python's parser refuses are left out."""
    from .source import Unparsable, parse
    classes: dict[str, list[str]] = {}
    for cell in source.cells:
        try:
            tree = parse(cell.code, cell.label)
        except Unparsable:  # a syntax error, or code nested too deeply for the parser (MemoryError): not this cell
            continue
        for node in tree.body:
            if isinstance(node, ast.ClassDef):
                classes[node.name] = [n.name for n in node.body
                                      if isinstance(n, (ast.FunctionDef, ast.AsyncFunctionDef))]
    return classes


def written_module(source: Source, name: str) -> str | None:
    """The module (a notebook's `%%writefile NAME.py` cell, source.writefile_module) whose top level defines `name`
    (a class or function, read, not run), else None."""
    from .source import Unparsable, parse
    for cell in source.cells:
        if cell.module is None:
            continue
        try:
            tree = parse(cell.code, cell.label)
        except Unparsable:
            continue
        if any(isinstance(n, (ast.ClassDef, ast.FunctionDef, ast.AsyncFunctionDef)) and n.name == name
               for n in tree.body):
            return cell.module
    return None


def nested_definition(source: Source, name: str, kind: str = "class") -> str | None:
    """Where `class name` (kind "class") or `def name` (kind "function", not as a method: a def in a function's
    body) is written indented inside a top-level class or function (read, not run): the enclosing top-level name,
    else None. Such a definition exists only inside the enclosing body, never as a name of the module. Cells
    Python's parser refuses are left out."""
    from .source import Unparsable, parse
    funcs = (ast.FunctionDef, ast.AsyncFunctionDef)
    want = ast.ClassDef if kind == "class" else funcs

    def inside(node: ast.AST) -> bool:
        for child in ast.iter_child_nodes(node):
            if isinstance(child, want) and child.name == name and (kind == "class" or isinstance(node, funcs)):
                return True
            if inside(child):
                return True
        return False

    for cell in source.cells:
        try:
            tree = parse(cell.code, cell.label)
        except Unparsable:
            continue
        for top in tree.body:
            if isinstance(top, (ast.ClassDef, *funcs)) and top.name != name:
                try:
                    if inside(top):
                        return top.name
                except RecursionError:  # (code nested deeper than Python's recursion limit: not told)
                    continue
    return None


def misspelt_method(source: Source, cls: str, wanted: str,
                    classes: dict[str, list[str]] | None = None) -> Message | None:
    """When class `cls` (read from the source, not run) lacks method `wanted` but defines a near spelling of it
    (`__init_`, `__int__`, `foward`), the message that says so: Python silently ignores the misspelt one.
    classes: class_methods(source), when the caller keeps it."""
    methods = (class_methods(source) if classes is None else classes).get(cls)
    if not methods or wanted in methods:
        return None
    guess = near_miss(wanted, [m for m in methods if m not in _DUNDERS])
    if guess is None:
        return None
    return Message(f"`{cls}` defines `{guess}`, not `{wanted}`: Python only calls a method spelt exactly `{wanted}`, "
                   f"so yours never ran (PyTorch's own took the call and refused it). Rename `{guess}` to `{wanted}`.",
                   f"`{cls}`에 `{wanted}`가 아니라 `{guess}`가 정의되어 있습니다. 파이썬은 철자가 정확히 `{wanted}`인 "
                   f"메서드만 호출하므로 작성한 코드는 실행되지 않았습니다 (PyTorch 기본 메서드가 호출을 받아 거부함). "
                   f"`{guess}`의 이름을 `{wanted}`(으)로 바꾸세요.")


def step(op: str, *args: Any, mode: str | None = "eval", seed: int | None = None, record: list[str] | None = None,
         grad_output: Any = None, device: str | None = None, **kwargs: Any) -> dict[str, Any]:
    """One step of a sequence (Remote.seq, Submission.new_seq): step("call", x, mode="train", seed=3) as
    Remote.run(x, mode="train", seed=3); step("load_state", tensors); step("state"); step("describe", *attrs)."""
    if op == "call":
        return {"op": "call", "args": {"args": list(args), "kwargs": kwargs, "mode": mode, "seed": seed,
                                       "record": record, "grad_output": grad_output, "device": device}}
    if op == "load_state":  # (tensors only, as Remote.load_state sends them)
        import torch
        return {"op": "load_state", "args": {"tensors": {n: t for n, t in args[0].items()
                                                         if isinstance(t, torch.Tensor)}}}
    if op == "describe":
        return {"op": "describe", "args": {"attrs": list(args)}}
    if op == "state":
        return {"op": "state", "args": {}}
    if op == "probe_devices":
        return {"op": "probe_devices", "args": {"shapes": [list(a) for a in args], "mode": mode or "eval"}}
    raise ValueError(f"no step {op!r}")


# What a call that reached one of torch's fused transformer kernels is told (the worker refuses them:
# worker.refuse_fused) where no watch of the assignment's has words of its own for it (a check that calls the class
# before its evidence gate)
_FUSED_WORDS = {
    "library:attention": lambda what: Message(
        f"`{what}` runs PyTorch's own multi-head attention (the fused kernel that nn.MultiheadAttention and "
        "F.multi_head_attention_forward run), which the grader turns off: the lab asks you to write the attention "
        "yourself, so what PyTorch computes for it earns nothing.",
        f"`{what}`이(가) PyTorch의 멀티 헤드 어텐션(nn.MultiheadAttention과 F.multi_head_attention_forward가 실행하는 "
        "fused 커널)을 실행합니다. 채점기는 이 커널을 꺼 둡니다: 어텐션은 직접 작성하는 문제이므로 PyTorch가 계산한 "
        "결과로는 점수를 받을 수 없습니다."),
    "library:transformer": lambda what: Message(
        f"`{what}` runs PyTorch's own nn.TransformerEncoderLayer (its fused kernel), which the grader turns off: the "
        "block is yours to build from its parts, so what PyTorch computes for it earns nothing.",
        f"`{what}`이(가) PyTorch의 nn.TransformerEncoderLayer(그 fused 커널)를 실행합니다. 채점기는 이 커널을 꺼 "
        "둡니다: 블록은 부품으로 직접 작성하는 문제이므로 PyTorch가 계산한 결과로는 점수를 받을 수 없습니다."),
}


def _refused_watch(err: dict[str, Any]) -> str | None:
    """The watch whose fused kernel an error reply says was refused (its "library": worker.refuse_fused), else None.
    The reply is the worker's, which the submission runs in: only a known watch's name is taken (a list there, which
    no dict lookup takes, or another word, is not)."""
    library = err.get("library")
    return library if type(library) is str and library in _FUSED_WORDS else None


def _watching(op: str, args: dict[str, Any], tag: str) -> dict[str, Any]:
    """The request's arguments with the watch `tag` added to the records of its call or constructor (or of each such
    step of a sequence)."""
    if op in ("call", "new"):
        return {**args, "record": [*(args.get("record") or []), tag]}
    return {**args, "steps": [{**st, "args": {**st["args"], "record": [*(st["args"].get("record") or []), tag]}}
                              if isinstance(st, dict) and st.get("op") in ("call", "new") else st
                              for st in args["steps"]]}


def _watched_steps(op: str, args: dict[str, Any]) -> dict[int, set[str]]:
    """The steps of a request (0 for one that is not a sequence) that watch for torch's own layers, with those
    watches (the names protocol.EVIDENCE knows among their `record`)."""
    watches = set(protocol.EVIDENCE.values())
    steps = args.get("steps") if op == "seq" else [{"op": op, "args": args}]
    found: dict[int, set[str]] = {}
    if op not in ("call", "new", "seq") or not isinstance(steps, list):
        return found
    for i, st in enumerate(steps):
        if isinstance(st, dict) and st.get("op") in ("call", "new") and isinstance(st.get("args"), dict):
            tags = watches.intersection(t for t in st["args"].get("record") or [] if type(t) is str)
            if tags:
                found[i] = tags
    return found


def _add_evidence(values: list[Any], ran: dict[int, set[str]]) -> None:
    """Add to the values of a request's steps (or its one value) the records of the watches that the evidence pipe
    says ran there, where the worker's reply left them out."""
    for i, tags in ran.items():
        value = values[i] if i < len(values) else None
        if not isinstance(value, dict):
            continue
        records = value.get("records")
        if not isinstance(records, list):
            records = value["records"] = []
        for tag in sorted(tags):
            if not any(isinstance(r, dict) and r.get("fn") == tag for r in records):
                records.append({"fn": tag, "input": None, "watched": False})


def _own_work(op: str, args: dict[str, Any], values: list[Any], watch: tuple[str, Message]) -> None:
    """Raise watch's failure where a call or a constructor (op "call", "new") or such a step among the `values` of a
    sequence (the values of its first steps, in order) ran the watched code: as the step's own failure, with the values before it
    (CheckFailure.step, .done), so a check that takes them in order fails there as it would one by one."""
    steps = args["steps"] if op == "seq" else [{"op": op}]
    for i, (st, value) in enumerate(zip(steps, values)):
        records = value.get("records") if isinstance(value, dict) and st.get("op") in ("call", "new") else None
        if isinstance(records, list) and any(isinstance(r, dict) and r.get("fn") == watch[0] for r in records):
            failure = CheckFailure(watch[1])
            if op == "seq":
                failure.step, failure.done = i, list(values[:i])
            raise failure


def _hinted(e: CheckFailure, hint: Message) -> CheckFailure:
    """e's failure told with a spelling hint instead (same step and values of a sequence)."""
    failure = CheckFailure(hint, e.staff)
    failure.step, failure.done = e.step, e.done
    return failure


def taken(value: Any) -> Any:
    """A value of a lenient sequence (Remote.seq), or its failure raised."""
    if isinstance(value, CheckFailure):
        raise value
    return value


def renamed_name(name: str, prefixes: dict[str, str]) -> str:
    """`name` (a dotted parameter name) with its longest leading run of parts that `prefixes` names replaced:
    attn.W_q.weight -> attention.query.weight for {"attn": "attention", "attn.W_q": "attention.query"}."""
    parts = name.split(".")
    for i in range(len(parts), 0, -1):
        head = ".".join(parts[:i])
        if head in prefixes:
            return ".".join([prefixes[head], *parts[i:]])
    return name


class Remote:
    """A handle on an object that lives in the worker (usually an nn.Module)."""

    def __init__(self, sub: "Submission", handle: int, label: str, generation: int, owner: str | None = None):
        self.sub, self.handle, self.label, self.generation = sub, handle, label, generation
        self.owner = owner  # the student's class it is an instance of: a hang in it is charged to that class
        # How it was built (class name, args, kwargs, seed), so the grader can build the same thing itself.
        self.ctor: tuple[str, tuple, dict, int | None] | None = None
        # Set by a check, (a watch's name, the failure to give): every call of this object watches for the code of
        # torch's own layers of that watch (worker.LIBRARY: its transformer layers, worker.LIBRARY_ATTENTION: its
        # multi-head attention), and a call that ran it fails with this message, whatever the check asked. For a
        # question that asks the student to write what such a layer computes, and is graded against that layer.
        self.own_work: tuple[str, Message] | None = None
        # The names an assignment's weights use for some of its submodules -> the submission's own names for them
        # (set by the assignment's checks; see load_state).
        self.renamed: dict[str, str] = {}
        # Set by a check where the object's forward cannot take the calls the checks make (its parameters are not the
        # template's: forward(query, key, value, mask) for forward(x)): what a call that raised says instead of the
        # bare TypeError, which named the arguments missing but not what the assignment calls the forward with.
        self.call_misfit: Message | None = None
        # The submission's submodules that hold several of the assignment's stacked along the first axis, in order
        # (set by the assignment's checks): {"qkv": ("W_q", "W_k", "W_v")} for one nn.Linear(d, 3 * d) split into
        # the query, key and value in forward. load_state joins their tensors (names after `renamed`: the key is the
        # submission's name, the parts the assignment's).
        self.fused: dict[str, tuple[str, ...]] = {}

    def _check_alive(self) -> None:
        worker = self.sub.worker  # (a worker that died is replaced only by the next request)
        if self.generation != self.sub.generation or worker is None or not worker.alive:
            raise CheckFailure(Message(
                f"`{self.label}` was lost when the worker running your code had to be restarted.",
                f"코드를 실행하던 프로세스가 재시작되어 `{self.label}` 객체를 잃었습니다."))

    def _req(self, op: str, **args: Any) -> Any:
        self._check_alive()
        return self.sub.request(op, what=self.label, owner=self.owner, handle=self.handle, **args)

    def __call__(self, *args: Any, mode: str | None = "eval", seed: int | None = None,
                 record: list[str] | None = None, device: str | None = None, partial: list[str] | None = None,
                 **kwargs: Any) -> Any:
        return self.run(*args, mode=mode, seed=seed, record=record, device=device, partial=partial,
                        **kwargs)["out"]

    def run(self, *args: Any, mode: str | None = "eval", seed: int | None = None, record: list[str] | None = None,
            grad_output: Any = None, device: str | None = None, partial: list[str] | None = None,
            **kwargs: Any) -> dict[str, Any]:
        """Like calling, but returns everything: `out`, `records` (inputs of recorded ops), `grads`.

        mode: "eval"/"train" sets the module's mode first; seed: torch.manual_seed right before the call;
        device: tensor arguments are moved there inside the worker (results always come back on the CPU);
        partial: names of forward's local variables to send back if it raises: the CheckFailure then has
        `frame` = {"function", "line", "code", "locals": {name: tensor}} (see Submission.request).
        """
        extra = {"partial": list(partial)} if partial else {}
        if self.own_work is not None:
            record = [*(record or []), self.own_work[0]]
        try:
            res = self._req("call", args=list(args), kwargs=kwargs, mode=mode, seed=seed, record=record,
                            grad_output=grad_output, device=device, **extra)
        except CheckFailure as e:
            if self.own_work is not None and self.own_work[0] in getattr(e, "library_ran", ()):
                raise CheckFailure(self.own_work[1]) from None  # (it ran the library, then raised)
            spelling = self.sub.misspelt(self.ctor[0], "forward") if self.ctor else None
            spelling = spelling or self._misfit(e)
            if spelling is None:
                raise
            raise CheckFailure(spelling, e.staff) from None
        if not isinstance(res, dict):
            raise CheckFailure(Message(f"`{self.label}` returned a malformed reply.",
                                       f"`{self.label}`의 응답 형식이 잘못되었습니다."))
        if self.own_work is not None:
            records = res.get("records") if isinstance(res.get("records"), list) else []
            if any(isinstance(r, dict) and r.get("fn") == self.own_work[0] for r in records):
                raise CheckFailure(self.own_work[1])
            res["records"] = records  # (only what the check asked for: the watch leaves a record only when it saw)
        return res

    def seq(self, *steps: dict[str, Any], lenient: bool = False) -> list[Any]:
        """Several requests on this object in one round trip (see `step`), run in order exactly as if sent one by
        one: the values in order, or the CheckFailure of the first step that raised (its `.step` says which).
        lenient: where the values of the steps before the failure are known, return them followed by the failure
        instead of raising it; the check takes each in order with `taken` and so fails where it would have failed
        with the requests sent one by one (a comparison of an earlier value before the failure)."""
        self._check_alive()
        if self.own_work is not None and any(st["op"] == "call" for st in steps):
            # (the watch is asked for and read in run(): a call sent in a sequence would go unwatched)
            raise RuntimeError(f"{self.label}: the calls of an object watched for torch's own layers go one by one")
        if self.renamed and any(st["op"] == "load_state" for st in steps):
            # (load_state() sends the names under the submission's own; a step would send the template's)
            raise RuntimeError(f"{self.label}: the weights of an object with renamed parts go in by load_state()")
        try:
            res = self.sub.request("seq", what=self.label, owner=self.owner,
                                   steps=[{"op": st["op"], "args": {**st["args"], "handle": self.handle}}
                                          for st in steps])
        except CheckFailure as e:
            spelling = (self.sub.misspelt(self.ctor[0], "forward") if self.ctor else None) or self._misfit(e) \
                if steps[e.step]["op"] == "call" else None
            failure = e if spelling is None else _hinted(e, spelling)
            if lenient and e.done is not None:
                return list(e.done) + [failure]
            if failure is e:
                raise
            raise failure from None
        return res["values"]

    def _misfit(self, e: CheckFailure) -> Message | None:
        """call_misfit, for a call that raised TypeError (what a call the forward cannot take raises)."""
        return self.call_misfit if self.call_misfit is not None and "raised TypeError" in e.message.en else None

    def calls(self, *inputs: tuple, lenient: bool = False, **opts: Any) -> list[Any]:
        """The outputs of calling the object once per argument tuple, in one round trip (opts as for __call__;
        lenient as for seq, the failure in place of an output)."""
        return [r if isinstance(r, CheckFailure) else r["out"]
                for r in self.seq(*(step("call", *a, **opts) for a in inputs), lenient=lenient)]

    def state(self) -> dict[str, Any]:
        return self._req("state")

    def load_state(self, tensors: dict[str, Any]) -> dict[str, Any]:
        """Copy tensors in by name. Where `renamed` maps a submodule's name to the submission's own (renamed_name),
        the names are sent under the submission's names and the report gives them back under the caller's.
        Only tensors go: what the worker sent as a description (protocol.Opaque: a float8 or sparse parameter of the
        student's) cannot go back as a value. A check that loaded the module's own state into another build passed
        it on, the worker raised AttributeError on it, and the student read that their class had raised it (red
        team, round 21)."""
        import torch
        tensors = {n: t for n, t in tensors.items() if isinstance(t, torch.Tensor)}
        if self.fused:
            return self._load_fused(tensors)
        if not self.renamed:
            return self._req("load_state", tensors=tensors)
        back = {mine: theirs for theirs, mine in self.renamed.items()}
        report = self._req("load_state", tensors={renamed_name(n, self.renamed): t for n, t in tensors.items()})
        return {**report, **{k: [renamed_name(n, back) for n in report.get(k, [])] for k in ("loaded", "missing",
                                                                                        "unexpected")},
                "mismatched": [[renamed_name(e[0], back), *e[1:]] for e in report.get("mismatched", [])]}

    def _load_fused(self, tensors: dict[str, Any]) -> dict[str, Any]:
        """load_state where `fused` names submodules that stack several of the assignment's: their tensors go in
        joined along the first axis (a part not given keeps the module's own rows), and the report names the parts."""
        import torch
        joined: dict[str, dict[int, Any]] = {}  # the submission's tensor name -> {index of the part: tensor}
        parts: dict[str, list[str]] = {}  # the submission's tensor name -> the assignment's names of its parts
        rest = {}
        for n, t in tensors.items():
            head, _, leaf = n.rpartition(".")
            mine = next((f for f, theirs in self.fused.items() if head in theirs), None)
            if mine is None:
                rest[n] = t
                continue
            theirs = self.fused[mine]
            joined.setdefault(f"{mine}.{leaf}", {})[theirs.index(head)] = t
            parts[f"{mine}.{leaf}"] = [f"{h}.{leaf}" for h in theirs]
        fused = None
        if joined:
            own = None
            fused = {}
            for name, got in joined.items():
                if len(got) < len(parts[name]) and own is None:
                    own = self.state().get("params") or {}
                held = own.get(name) if own is not None else None
                rows = [got.get(i) for i in range(len(parts[name]))]
                if any(r is None for r in rows):  # (some parts only: the others keep the module's own rows)
                    if not isinstance(held, torch.Tensor) or held.shape[0] % len(rows):
                        continue
                    rows = [r if r is not None else c for r, c in zip(rows, held.chunk(len(rows), dim=0))]
                if len({tuple(r.shape[1:]) for r in rows}) == 1:
                    fused[name] = torch.cat(rows, dim=0)
        saved, self.fused = self.fused, {}
        try:
            rest_report = self.load_state({**rest, **(fused or {})})
        finally:
            self.fused = saved
        inverse = {mine: theirs for theirs, mine in self.renamed.items()}  # (the report is under the caller's names)
        back = {renamed_name(n, inverse): ps for n, ps in parts.items()}
        unsent = [p for n, ps in parts.items() if n not in (fused or {}) for p in ps]

        def spread(names):
            return [p for n in names for p in back.get(n, [n])]
        return {**rest_report, "loaded": spread(rest_report.get("loaded", [])),
                "missing": sorted(set(spread(rest_report.get("missing", []))) | set(unsent)),
                "unexpected": rest_report.get("unexpected", []),
                "mismatched": [[p, *e[1:]] for e in rest_report.get("mismatched", []) for p in back.get(e[0], [e[0]])]}

    def describe(self, *attrs: str) -> dict[str, Any]:
        return self._req("describe", attrs=list(attrs))

    def to(self, device: str) -> "Remote":
        self._req("to", device=device)
        return self

    def probe_devices(self, *shapes: tuple[int, ...], mode: str = "eval", mask: bool = False) -> dict[str, Any]:
        """mask: also say whether forward filled its scores with a causal mask it made on the input's device."""
        if mask:
            return self._req("probe_devices", shapes=[list(s) for s in shapes], mode=mode, mask=True)
        return self._req("probe_devices", shapes=[list(s) for s in shapes], mode=mode)


class Submission:
    """Grader-side view of one submission: starts its worker, restarts it after a crash, keeps the time budget."""

    def __init__(self, source: Source, spawn: Callable[[], WorkerProcess], limits: Limits):
        self.source = source
        self.spawn = spawn
        self.limits = limits
        self.worker: WorkerProcess | None = None
        self.generation = 0
        self.restarts = 0
        # The budget counts only the worker's CPU time inside the student's code (loading it, requests into
        # it), on a worker that is already running: the grader's and the zygote's start-up, the checks' own
        # arithmetic and the machine's load never count. A request that hangs is charged to its class instead
        # (see `hung`).
        self.used = 0.0
        self.waited = 0.0  # wall-clock seconds of the requests that returned (the CPU time above included)
        self.hung: dict[str, Message] = {}  # class or function -> why it is not called again (it hung once)
        self.evidence_closed = False  # the worker's evidence pipe was closed (see _evidence)
        self.rebound = False  # the worker said a name it calls was bound anew (see _evidence)
        # Class -> (a watch's name, the failure to give): every call of that class, alone or a step of a sequence,
        # is watched for the code of torch's own layers of that watch (worker.LIBRARY, worker.LIBRARY_ATTENTION),
        # and a call that ran it fails with that message (see _watched). Remote.own_work does the same for one
        # object's calls made one by one; this holds for every object of the class, in any request.
        self.watched: dict[str, tuple[str, Message]] = {}
        self.skip: list[str] = []  # "label:line" of top-level statements that hung; skipped on every load
        self.ended_at: dict[str, dict[str, Any]] = {}  # those of them that ended the worker instead: how it ended
        self.loaded = False
        self.not_implemented: set[str] = set()  # classes and functions that raised NotImplementedError
        self.names: dict[str, str] = {}
        self.load_errors: list[dict[str, Any]] = []
        self.fatal: Message | None = None  # set when the code cannot be run at all any more
        self.output: list[str] = []  # student prints since the last take_output()
        self.output_dropped = 0
        self.ended: list[dict[str, Any]] = []  # how each worker ended
        self.modes: dict[str, str] = {}  # which containment ran for its worker (see sandbox._isolate)
        self.diagnosis_s = 0.0  # grader time spent naming bugs (checks.diagnosis), not charged to the student
        self.staff_notes: list[str] = []  # the grader's own troubles while grading (e.g. a diagnosis that failed)
        self.notes: list[Message] = []  # what the checks want the student to read at the top of the result
        self.graded_names: frozenset[str] = frozenset()  # the assignment's names: never offered as a rename
        self.assignment_name = ""  # whose checks.RENAME_FITS judges a rename hint
        self._spelling: dict[tuple[str, str], Message | None] = {}
        self._nested: dict[str, str | None] = {}  # nested_definition, per missing name
        self._written: dict[str, str | None] = {}  # written_module, per missing name
        self._signatures: dict[str, list[dict[str, Any]]] = {}  # see signature()
        self._classes: dict[str, list[str]] | None = None  # class_methods(source), read once when first needed
        self._env: dict[str, Any] | None = None
        self._imports_ok: dict[str, bool] = {}  # module -> a fresh worker imports it (see _student_made)
        self.memo: dict[Any, Any] = {}  # what the checks learn once per submission (e.g. how weights are named)
        self._ahead: list[tuple[FunctionCall, Any]] = []  # the outcomes of calls sent ahead (see ahead())
        self._replaying = False  # see _replayed
        self._ahead_taken = 0  # how many outcomes sent ahead the check took
        self._ahead_lost: tuple[int, str | None] | None = None  # the sent call that ended its worker (see ahead)
        # Where the machine has a GPU, the worker above sees none (plugin.py), so that code which picks its device
        # at import (`device = "cuda" if torch.cuda.is_available() else "cpu"` in a notebook) is graded the same
        # on a GPU server as on a CPU-only one; the checks that run on the GPU use gpu(), a second worker started
        # with this spawn, which sees what the grader sees. None: this worker is the one to use (see gpu()).
        self.gpu_spawn: Callable[[], WorkerProcess] | None = None
        self._gpu: Submission | None = None
        # The questions whose checks may still run in this worker after the grader sent code of its own into it
        # (the wrapper's stand-in heads, which the student's code there can keep and call): None while it has not.
        self.tainted: frozenset[str] | None = None
        self.taint_needless: Callable[[str], bool] | None = None

    # ------------------------------------------------------------------ lifecycle

    def start(self) -> None:
        """Start a worker and run the submission's cells in it."""
        if self.fatal is not None:
            raise CheckFailure(self.fatal)
        self.worker = self.spawn()  # returns once the worker is ready: the budget starts after this
        self.evidence_closed = False  # (a pipe of its own)
        self.rebound = False  # (and its own names)
        self.generation += 1
        self.modes = dict(getattr(self.worker, "modes", {}) or {})
        cells = [{"code": c.code, "label": c.label} if c.module is None else
                 {"code": c.code, "label": c.label, "module": c.module, "append": c.append} for c in self.source.cells]
        try:
            loaded = self._raw("load", {"cells": cells, "skip": list(self.skip)}, loading=True)
        except WorkerTimeout:
            line = self._hung_line()
            if line is not None and len(self.skip) < MAX_HUNG_LINES:
                # Like a line that raises, a line that never ends costs only itself: skip it and load again.
                self.skip.append(line)
                self.worker = None
                self.start()
                return
            limit = self.hang_limit()
            self.fatal = Message(
                f"Running your file took longer than {limit:g} s, so nothing could be graded. "
                "Look for an infinite loop or slow demo code at the top level of your file.",
                f"파일을 실행하는 데 {limit:g}초가 넘게 걸려서 채점할 수 없었습니다. "
                "파일 최상단의 무한 루프나 느린 데모 코드를 확인하세요.")
            raise CheckFailure(self.fatal) from None
        except WorkerLost as e:
            # A top-level line that kills the process with a signal (Colab's "restart the runtime",
            # `os.kill(os.getpid(), 9)`, or a crash in a demo) costs only itself, as one that hangs does: a right
            # notebook with Colab's restart line after its `!pip install` got 0/100, "killed (out of memory or a
            # resource limit)" (red team, round 24). Not a budget's stop (memory, CPU, disk: those say what to
            # fix), nor an exit (`os._exit(0)` at import stays the file's error: tests/hostile_cases.py lie_os_exit).
            line = self._hung_line() if (e.status or {}).get("how") == "signal" else None
            if line is not None and len(self.skip) < MAX_HUNG_LINES:
                self.skip.append(line)
                self.ended_at[line] = dict(e.status or {})
                self.worker = None
                self.start()
                return
            self.fatal = self._lost_message(e, loading=True)
            raise CheckFailure(self.fatal) from None
        except RemoteError as e:  # only a worker the submission tampered with fails the load request itself
            en, ko = _exc_text(e.err)
            self.fatal = Message(f"Your file could not be loaded: {en}", f"파일을 불러올 수 없습니다: {ko}")
            raise CheckFailure(self.fatal) from None
        if not well_formed("load", loaded):
            self.fatal = MALFORMED
            raise CheckFailure(self.fatal)
        if not self.loaded:
            self.loaded = True
            self.names = dict(loaded.get("names", {}))
            self.load_errors = [self._hang_error(w) for w in self.skip] + list(loaded.get("errors", []))
        for err in loaded.get("errors", []):
            missing = _env_failure(err)
            if missing and not self._student_made(missing):
                raise EnvironmentFailure(f"the worker could not import {missing!r} while loading the submission, "
                                         f"but the grader's Python can: {err}")

    def _student_made(self, module: str) -> bool:
        """Whether an import failure of an installed module, as the worker reported it, is the submission's own
        doing (code may raise ModuleNotFoundError("No module named 'numpy'") itself, to pass as the grader's
        failure): a fresh worker, which ran none of the submission's code, does not fail on that import with the
        same "No module named ..." (it imports it, or fails otherwise: some installed modules, torch._dynamo say,
        cannot be imported in any worker, and naming one must not make the file the grader's failure). Asked once
        per module. A probe worker that cannot be started leaves it the grader's failure, as before; one that
        started but did not answer in time or was lost says nothing about the import (the submission's own
        processes, still running beside it, can starve it: a skeleton with 40 spinning processes and a raised
        ModuleNotFoundError passed as the grader's failure instead of getting its 0), so the error stays the
        submission's own."""
        if module not in self._imports_ok:
            if len(self._imports_ok) >= MAX_IMPORT_PROBES:
                # A real installation problem shows in the first modules already; more probes are a submission's
                # way to make the grader import one module after another at its own cost (each a fresh worker).
                return True
            ok = False
            started = time.monotonic()
            try:
                probe = self.spawn()  # a probe that cannot be started: the grader's failure
            except Exception:
                probe = None
            if probe is not None:
                try:
                    reply = probe.request("load", {"cells": [{"code": f"import {module}", "label": "<import check>"}],
                                                   "skip": []}, timeout=self.hang_limit())
                    value = reply.get("value") if isinstance(reply, dict) and reply.get("ok") is True else None
                    ok = well_formed("load", value) and not any(_env_failure(e) == module for e in value["errors"])
                except WorkerLost:  # (a time-out included) inconclusive: not shown to be the grader's
                    ok = True
                except Exception:
                    ok = False
                finally:
                    try:
                        probe.kill(graceful=True, sweep_uid=False)  # the submission's own worker lives on
                    except Exception:
                        pass
            self.waited += time.monotonic() - started  # asked because of the submission: its wall-clock allowance
            self._imports_ok[module] = ok
        return self._imports_ok[module]

    def _hung_line(self) -> str | None:
        """The top-level statement the worker was running when its load timed out ("label:line"), if known.

        The worker writes it to scratch/load.progress (read before the kill), with the number of threads and
        child processes alive when the statement began. A line is skipped only when nothing else was running: threads or
        processes started earlier (a CPU hog, memory-holding children) would go on running after the skip, so
        such a file stays ungraded as before. Student code could rewrite the file, but all it could gain is
        skipping one of its own lines."""
        try:
            where, threads, children = self.worker.last_progress.strip().split("\t")
        except (AttributeError, ValueError):
            return None
        if threads != "1" or children != "0":
            return None
        label, _, line = where.rpartition(":")
        known = {c.label for c in self.source.cells}
        # ASCII digits only: str.isdigit() takes "²", which int() refuses, and a file that wrote "file.py:²" there,
        # hung, and ran on once told of the skip (its frames show the request's arguments) made _hang_error raise:
        # "the autograder itself failed" in place of its own result (red team, round 24).
        ok = line.isascii() and line.isdigit() and len(line) <= 9
        return where if label in known and ok and where not in self.skip else None

    def _hang_error(self, where: str) -> dict[str, Any]:
        label, _, line = where.rpartition(":")
        cell = next((c for c in self.source.cells if c.label == label), None)
        lines = cell.code.splitlines() if cell is not None else []
        code = lines[int(line) - 1].strip()[:200] if 0 < int(line) <= len(lines) else ""
        if where in self.ended_at:
            st = self.ended_at[where]
            how = str(st.get("name") or "a signal")
            return {"type": "Ended", "how": how,
                    "where": {"file": label, "line": int(line), "function": "<module>", "code": code},
                    "message": f"this line ended the process running the code ({how}) and was skipped"}
        return {"type": "Timeout", "seconds": self.hang_limit(),
                "where": {"file": label, "line": int(line), "function": "<module>", "code": code},
                "message": f"this line did not finish within {self.hang_limit():g} s (infinite loop?) and was "
                           "skipped"}

    def close(self) -> None:
        if self._gpu is not None:
            self._gpu.close()
        if self.worker is not None:
            self.ended.append(self.worker.kill(graceful=True))
            self.worker = None

    def taint(self, questions, needless: Callable[[str], bool] | None = None) -> None:
        """The grader is sending code of its own into this worker (a stand-in): from now on only the checks of
        `questions` run in it; the next check of any other question gets a fresh worker (clean_for). Code that
        kept the stand-in (its forward is causal attention of a kind) used it for another class's checks: a head
        without a mask passed its causality check, a MultiHeadAttention returning zeros 8 of its points."""
        self.tainted = frozenset(questions) | (self.tainted or frozenset())
        if needless is not None:
            self.taint_needless = needless  # (a question whose checks can earn nothing more: no fresh worker)

    def clean_for(self, question: str) -> None:
        """Before a check of `question`: a fresh worker if this one holds code the grader sent for other questions'
        checks. (Not a restart of the student's: it costs them nothing.)"""
        if self.tainted is None or question in self.tainted:
            return
        if self.taint_needless is not None and self.taint_needless(question):
            return  # (still tainted: the next question that can earn gets the fresh worker)
        if self.worker is not None:
            self.ended.append(self.worker.kill(graceful=True))
            self.worker = None
        self.tainted = None

    def gpu(self) -> "Submission":
        """The submission as the checks that run on a real GPU see it: its own worker (started once, when first
        asked), which sees the GPUs the grader sees. It shares this one's hangs (a class that hung is not called
        there either), what the checks learned, the notes and the student's prints; its requests count against
        its own budget. Without gpu_spawn, this submission itself."""
        if self.gpu_spawn is None:
            return self
        if self._gpu is None:
            g = Submission(self.source, self.gpu_spawn, self.limits)
            g.graded_names, g.hung, g.skip, g.memo = self.graded_names, self.hung, self.skip, self.memo
            g.watched = self.watched
            g.assignment_name = self.assignment_name
            g.notes, g.staff_notes, g.output, g.not_implemented = (self.notes, self.staff_notes, self.output,
                                                                    self.not_implemented)
            self._gpu = g
        return self._gpu  # (its first request starts its worker)

    def hang_limit(self) -> float:
        """Seconds one request may take before it counts as a hang: the assignment's call_timeout.

        Not the budget's remainder: a request stopped at the remainder could not be told from a hang, and a hang
        must cost only its class. So a submission's code runs at most total_timeout plus one call_timeout, and
        each hang (once per class or top-level line) call_timeout more (the steps of a sequence before a hang
        count as waiting, see _raw and wait_limit)."""
        return max(0.1, self.limits.call_timeout)

    def wait_limit(self) -> float:
        """Wall-clock seconds the submission's requests may take in all (see WAIT_FACTOR); hangs not included."""
        return self.limits.total_timeout * WAIT_FACTOR

    def _lost_message(self, e: WorkerLost, loading: bool = False) -> Message:
        st = e.status or {}
        if isinstance(e, WorkerTimeout):
            return Message(f"Your code did not finish within {self.hang_limit():g} s (infinite loop?).",
                           f"코드가 {self.hang_limit():g}초 안에 끝나지 않았습니다 (무한 루프?).")
        if st.get("how") == "memory":
            how_en = (f"was stopped: all its processes together used more than the {st.get('limit_mb')} MB of "
                      "memory a submission may use")
            how_ko = f"중단되었습니다: 모든 프로세스가 합쳐서 제출물 메모리 한도 {st.get('limit_mb')} MB를 넘었습니다"
        elif st.get("how") == "kernel":
            how_en = (f"was stopped: its processes held more than {st.get('limit_mb')} MB of the kernel's memory (files "
                      "kept open or mapped by the hundred thousand, sockets full of data, or processes)")
            how_ko = (f"중단되었습니다: 프로세스들이 커널 메모리를 {st.get('limit_mb')} MB 넘게 사용했습니다 (수십만 개의 "
                      "열린 파일이나 매핑된 파일, 데이터가 가득 찬 소켓, 또는 프로세스)")
        elif st.get("how") == "protocol":
            how_en = ("sent a malformed reply and was stopped (code that changes the grader's worker or its "
                      "protocol is not graded)")
            how_ko = "잘못된 형식의 응답을 보내 중단되었습니다 (채점기의 작업 프로세스나 통신 규약을 바꾸는 코드는 채점되지 않습니다)"
        elif st.get("how") == "cpu":
            how_en = (f"was stopped: it kept {st.get('cores')} CPU cores busy at once (threads or processes "
                      f"that keep running; a submission may use {st.get('limit')})")
            how_ko = (f"CPU 코어 {st.get('cores')}개를 동시에 계속 사용해서 중단되었습니다 (계속 실행되는 스레드나 "
                      f"프로세스; 제출물은 {st.get('limit')}개까지 쓸 수 있습니다)")
        elif st.get("how") == "disk":
            how_en = f"was stopped: it wrote more than {st.get('limit_mb')} MB (or too many files) to disk"
            how_ko = f"중단되었습니다: 디스크에 {st.get('limit_mb')} MB가 넘게 (또는 너무 많은 파일을) 썼습니다"
        elif st.get("how") == "signal" and st.get("name") == "SIGKILL":
            how_en, how_ko = "was killed (out of memory or a resource limit)", "강제 종료되었습니다 (메모리 또는 자원 제한)"
        elif st.get("how") == "signal":
            how_en = how_ko = f"crashed with {st.get('name')}"
        elif st.get("how") == "exit":
            how_en = f"exited with code {st.get('code')} (os._exit or a crash)"
            how_ko = f"종료 코드 {st.get('code')}로 끝났습니다 (os._exit 또는 비정상 종료)"
        else:
            how_en, how_ko = "stopped unexpectedly", "예기치 않게 멈췄습니다"
        when_en = "while your file was being loaded" if loading else "during this check"
        when_ko = "파일을 불러오는 중에" if loading else "이 검사 중에"
        return Message(f"The process running your code {how_en} {when_en}.",
                       f"코드를 실행하던 프로세스가 {when_ko} {how_ko}.")

    # ------------------------------------------------------------------ requests

    def _evidence(self, watching: dict[int, set[str]]) -> dict[int, set[str]]:
        """Which of the watches of a request that just returned the evidence pipe says ran (protocol.EVIDENCE)."""
        read = getattr(self.worker, "evidence", None)  # (an unsandboxed worker has no such pipe)
        if read is None:
            return {}
        if self.evidence_closed or self.rebound:
            return {i: set(tags) for i, tags in watching.items()}
        data = read()
        if data is None:
            self.evidence_closed = True
        return protocol.read_evidence(data, watching) if data != b"" else {}

    def _raw(self, op: str, args: dict[str, Any], loading: bool = False) -> Any:
        assert self.worker is not None
        started, cpu = time.monotonic(), self.worker.cpu_seconds()
        try:
            if op == "seq":  # each step has its own deadline, as if sent alone
                resp = self.worker.request(op, args, timeout=self.hang_limit(), steps=max(1, len(args["steps"])))
            else:
                resp = self.worker.request(op, args, timeout=self.hang_limit())
        except protocol.MessageTooLarge as e:
            # Only the submission's own tensors make a request this long (the weights of an enormous parameter
            # copied in): it read as a crash of the worker's, "exited with code 0" (red team, round 12).
            raise CheckFailure(Message(
                f"The grader could not send this check's data to your code: it would take {e.size >> 20} MB, over "
                f"the {protocol.MAX_MESSAGE >> 20} MB limit, because your module's parameters are that large (at "
                "the sizes the checks use, the lab's modules have a few thousand values). Remove parameters that "
                "forward does not use.",
                f"이 검사의 데이터를 코드에 보낼 수 없었습니다: {e.size >> 20} MB로 한도 {protocol.MAX_MESSAGE >> 20} "
                "MB를 넘습니다. 모듈의 파라미터가 그만큼 크기 때문입니다 (검사에서 쓰는 크기에서 이 실습의 모듈은 "
                "값이 수천 개 정도입니다). forward에서 쓰지 않는 파라미터를 없애세요.")) from None
        except WorkerTimeout as e:
            # A hang: its call_timeout is charged to its class or line, not to the budget of the rest. The steps of
            # a sequence before the one that hung ran as requests of their own would have: their time counts as
            # waiting (wait_limit), so a worker that writes a false progress file to stretch a sequence spends the
            # submission's own allowance.
            self.waited += e.before
            raise
        except BaseException:
            self.used += time.monotonic() - started  # the worker is gone: its CPU time can no longer be read
            self.waited += time.monotonic() - started
            raise
        self.waited += time.monotonic() - started
        after = self.worker.cpu_seconds()
        # CPU time, not wall-clock time: on a shared, loaded machine the same code takes the same CPU seconds,
        # while its wall-clock time depends on everything else running (a student's sleep costs no CPU: it counts in
        # `waited`, and call_timeout still stops a call that never returns).
        self.used += after - cpu if after is not None and cpu is not None else time.monotonic() - started
        if not isinstance(resp, dict):
            raise WorkerLost("malformed reply")
        if resp.get("tampered") is not None:  # the worker's own code was replaced (worker._Guard)
            self.fatal = MALFORMED
            raise CheckFailure(self.fatal)
        if resp.get("rebound") is not None:  # a name the worker calls was bound anew (worker.Worker.serve)
            self.rebound = True
        out = resp.get("out")
        if isinstance(out, dict):
            room = self.limits.output_kb * 1024 - sum(map(len, self.output))  # what a check may show is bounded
            if isinstance(out.get("text"), str) and out["text"] and room > 0:
                self.output.append(out["text"][:room])
            if type(out.get("dropped")) is int:
                self.output_dropped += max(0, out["dropped"])
        if resp.get("ok") is True:
            return resp.get("value")
        err = resp.get("error") if isinstance(resp.get("error"), dict) else {}
        raise RemoteError(err)

    def request(self, op: str, what: str | list[str] = "", owner: str | None = None, **args: Any) -> Any:
        """Send one request; student exceptions and worker crashes become CheckFailures with a clear message.

        owner: the student's class or function the request runs code of; once it has hung, it is not called
        again (each later check of it fails at once with the hang's message) and the others are graded in full.
        For a sequence (op "seq", see worker.op_seq; `what` may then hold each step's words) the failure's `.step`
        is the index of the step that failed (0 when none ran: the first request alone would have failed the same
        way) and `.done` the values of the steps before it, where known (not after a hang or a crash).
        """
        if self.fatal is not None:
            raise CheckFailure(self.fatal)
        if owner is not None and owner in self.hung and not self._replaying:
            raise CheckFailure(self.hung[owner])
        if self.used >= self.limits.total_timeout:
            self.fatal = Message(
                f"Grading stopped: your code used its whole time budget of {self.limits.total_timeout:g} s "
                "(CPU time).",
                f"채점 중단: 코드가 주어진 전체 시간 {self.limits.total_timeout:g}초(CPU 시간)를 모두 사용했습니다.")
            raise CheckFailure(self.fatal)
        if self.waited >= self.wait_limit():
            self.fatal = Message(
                f"Grading stopped: your code kept the grader waiting for more than {self.wait_limit():g} s in all "
                "(sleeping, or waiting for something that never came), though it used little CPU time.",
                f"채점 중단: 코드가 CPU 시간은 거의 쓰지 않으면서 채점기를 모두 {self.wait_limit():g}초 넘게 기다리게 "
                "했습니다 (sleep, 또는 오지 않는 무언가를 기다림).")
            raise CheckFailure(self.fatal)
        if (self.worker is None or not self.worker.alive) and self._replaying:
            self.start()  # (calls made again after a crash: see _replayed)
        if self.worker is None or not self.worker.alive:
            # Only a restart after a crash or hang counts against the limit; a worker the grader let go (clean_for,
            # _replayed, a settled crash nobody read) is started afresh whatever was used (red team s12 round 20).
            if self.worker is not None and self.restarts - len(self.hung) >= MAX_RESTARTS:
                self.fatal = Message(f"The process running your code had to be restarted {MAX_RESTARTS} times "
                                     "(it crashed, hung or ran out of memory; see the first failed check); the "
                                     "remaining checks could not run.",
                                     f"코드를 실행하던 프로세스를 {MAX_RESTARTS}번 재시작해야 했습니다 (비정상 종료, "
                                     "응답 없음 또는 메모리 초과; 처음 실패한 검사를 보세요). 남은 검사를 실행할 수 "
                                     "없습니다.")
                raise CheckFailure(self.fatal)
            if self.worker is not None:
                self.restarts += 1
            self.start()
        watch = self.watched.get(owner) if owner is not None and op in ("call", "new", "seq") else None
        if watch is not None:
            args = _watching(op, args, watch[0])
        watching = _watched_steps(op, args)
        try:
            value = self._raw(op, args)
            if not well_formed(op, value, args):  # the worker was tampered with: nothing it says counts any more
                self.fatal = MALFORMED
                raise CheckFailure(self.fatal)
            if watching:
                _add_evidence(value["values"] if op == "seq" else [value], self._evidence(watching))
            if watch is not None:
                _own_work(op, args, value["values"] if op == "seq" else [value], watch)
            return value
        except RemoteError as e:
            if not error_well_formed(op, args, e.err):  # a frame nobody asked for, or not made of tensors
                self.fatal = MALFORMED
                raise CheckFailure(self.fatal) from None
            ran = self._evidence(watching) if watching else {}  # (read whatever the step that raised did: the
            if ran and op == "seq" and isinstance(e.err.get("done"), list):  # next request's records start clean)
                _add_evidence(e.err["done"], ran)
            if watch is not None and op == "seq" and isinstance(e.err.get("done"), list):
                _own_work(op, args, e.err["done"], watch)  # (a step before the one that raised ran the library)
            # (the step that raised ran it: the fused kernel the worker refuses raises once the watch noted it)
            at = e.err.get("step", 0) if op == "seq" else 0
            ran_there = frozenset(ran.get(at, ())) if type(at) is int else frozenset()
            library = _refused_watch(e.err)
            if library is not None:
                ran_there |= {library}
            if watch is not None and watch[0] in ran_there:
                failure = CheckFailure(watch[1])
                if op == "seq":
                    failure.step, failure.done = at, e.err.get("done")
                raise failure from None
            if isinstance(what, list):  # a sequence's steps, each with its own words
                what = what[min(e.err["step"], len(what) - 1)]
            missing = _env_failure(e.err)
            if missing and not self._student_made(missing):
                # not the student's error: the check ends as the grader's, with details for staff
                raise EnvironmentFailure(f"the worker could not import {missing!r} in `{what}`, but the grader's "
                                         f"Python can: {e.err}") from None
            en, ko = _exc_text(e.err)
            if e.err.get("type") == "NotImplementedError":
                self.not_implemented.add(owner or what)
                detail = str(e.err.get("message", ""))[:160]
                detail_ko = bilingual(detail).ko  # the skeleton's "English / 한국어": Korean shows its half
                failure = CheckFailure(Message(f"`{what}` is not implemented yet ({detail}).".replace(" ().", "."),
                                               f"`{what}`이(가) 아직 구현되지 않았습니다 ({detail_ko}).".replace(
                                                   " ().", ".")))
            elif library is not None:
                failure = CheckFailure(_FUSED_WORDS[library](what))
            else:
                failure = CheckFailure(Message(f"`{what}` raised {en}", f"`{what}`에서 예외 발생: {ko}"))
            # The exception's classes ("module.name", most derived first), so a check can ask whether a real
            # ValueError was raised rather than a message naming one.
            mro = e.err.get("mro")
            failure.raised = tuple(str(c) for c in mro[:32]) if isinstance(mro, list) else ()
            # What the raising call had computed, when it asked (Remote.run's `partial`; checked above): the
            # callee's line and its local tensors of the names asked for. Only data: the checks judge it.
            failure.frame = e.err.get("frame")
            failure.mask_not_sliced = bool(_mask_hint(str(e.err.get("message", "")),
                                                      str((e.err.get("where") or {}).get("code", ""))).en)
            if op == "seq":  # which step of a sequence raised, and what the steps before it gave
                failure.step, failure.done = e.err.get("step"), e.err.get("done")
            failure.library_ran = ran_there  # (the watches that saw their code run in the step that raised)
            raise failure from None
        except WorkerTimeout as e:
            self.ended.append(e.status)
            message = self._lost_message(e)
            step = e.step
            if owner is not None:
                # The same text for the hang and for every later check of its class, and for any class: a
                # check that asks whether a failure is shared (the wrapper and its CausalAttention heads)
                # compares failure texts, and a hang in the heads must read the same from either.
                message = Message(
                    f"{message.en} It is not called again: the remaining checks of this class fail with this "
                    "same message.",
                    f"{message.ko} 다시 호출하지 않으므로 이 클래스의 나머지 검사도 같은 메시지로 실패합니다.")
                self.hung[owner] = message
            failure = CheckFailure(message)
            failure.step = step
            raise failure from None
        except WorkerLost as e:
            self.ended.append(e.status)
            failure = CheckFailure(self._lost_message(e))
            failure.step = e.step
            raise failure from None

    # ------------------------------------------------------------------ what checks call

    def require(self, name: str, kind: str = "class") -> None:
        """Fail with a rename hint when `name` is missing (e.g. `CasualAttention` for `CausalAttention`)."""
        if self.fatal is not None:
            raise CheckFailure(self.fatal)
        if self.worker is None:
            self.request("names")
        if name in self.names:
            if self.names[name] == "value" and kind in ("function", "class"):
                # (learners compute the notebook's steps at the top level: attention_scores = inputs @ inputs.T)
                what_en, what_ko = ("a function", "함수") if kind == "function" else ("a class", "클래스")
                raise CheckFailure(Message(
                    f"`{name}` in your file is a value computed at the top level (a tensor, a number...), not "
                    f"{what_en}: the grader calls `{name}(...)` as the notebook defines it. Put the computation in "
                    + (f"`def {name}(...):` and return its result." if kind == "function" else f"`class {name}`."),
                    f"파일의 `{name}`은(는) 최상단에서 계산한 값(텐서, 숫자 등)이지 {what_ko}가 아닙니다: 채점기는 "
                    f"노트북처럼 `{name}(...)`을 호출합니다. 계산을 "
                    + (f"`def {name}(...):` 안에 넣고 결과를 반환하세요." if kind == "function"
                       else f"`class {name}` 안에 넣으세요.")))
            return
        # Only a name of the same kind (a class for a class): a learner's helper class `BaseNormalizer` was offered
        # as the rename of the step function `renormalize`.
        guess = rename_hint(name, [n for n, k in self.names.items() if k == kind and n not in self.graded_names],
                            self.graded_names)
        if not (guess and rename_fits(self, name, guess)):
            guess = rename_guess(self, name) if kind == "class" else None
        if guess:
            raise CheckFailure(Message(
                f"`{name}` is not defined, but `{guess}` is. Rename `{guess}` to `{name}`: the grader looks "
                "for the exact name from the notebook.",
                f"`{name}`이(가) 정의되어 있지 않고 `{guess}`이(가) 있습니다. `{guess}`의 이름을 `{name}`(으)로 "
                "바꾸세요: 채점기는 노트북에 나온 이름 그대로를 찾습니다."))
        failed = next((e for e in reversed(self.load_errors) if e.get("defines") == name and not e.get("rerun")), None)
        if failed is not None:  # it is written, but its `class`/`def` statement raised (a base class not imported)
            en, ko = _exc_text(failed)
            raise CheckFailure(Message(
                f"`{name}` is written in your file, but its definition raised {en}, so `{name}` did not exist "
                "after your code ran.",
                f"파일에 `{name}`이(가) 작성되어 있지만 그 정의에서 오류가 발생해서 ({ko}) 코드를 모두 실행한 뒤에도 "
                f"`{name}`이(가) 존재하지 않았습니다."))
        # Its near-miss likewise (`class CasualAttention(nn.module):` raised AttributeError): "not defined" alone
        # did not say that the class the student wrote for it is there, under another name, and did not load
        # (learners round rl16).
        raised = {e["defines"]: e for e in self.load_errors if type(e.get("defines")) is str and not e.get("rerun")
                  and e["defines"] not in self.names}
        near = rename_hint(name, sorted(raised), self.graded_names) if kind == "class" else None
        if near is not None:
            en, ko = _exc_text(raised[near])
            raise CheckFailure(Message(
                f"`{name}` is not defined. Your file writes `{near}` for it, but that definition raised {en}, so "
                f"`{near}` did not exist either after your code ran: fix that line, and rename `{near}` to `{name}` "
                "(the grader looks for the exact name from the notebook).",
                f"`{name}`이(가) 정의되어 있지 않습니다. 파일에는 그 대신 `{near}`이(가) 작성되어 있지만 그 정의에서 "
                f"오류가 발생해서 ({ko}) 코드를 모두 실행한 뒤에도 `{near}`이(가) 존재하지 않았습니다: 그 줄을 "
                f"고치고 `{near}`의 이름을 `{name}`(으)로 바꾸세요 (채점기는 노트북에 나온 이름 그대로를 찾습니다)."))
        imported = next((e for e in self.load_errors if e.get("type") == "ModuleNotFoundError" and not e.get("rerun")
                         and _imports_name(str((e.get("where") or {}).get("code", "")), name)), None)
        if imported is not None:
            # Learners round rl16: a study repository's attention.py that imports each class from the module beside
            # it (from causal_attention import CausalAttention): only the graded file is loaded, and each check
            # said only that the class is not defined.
            where = imported.get("where") or {}
            module = _imports_name(str(where.get("code", "")), name)
            raise CheckFailure(Message(
                f"`{name}` is not defined in the graded file: it imports it from `{module}` ({where.get('file')}, "
                f"line {where.get('line')}), a module that cannot be imported where your code is graded (only the "
                f"graded file of your submission is loaded). Write `{name}` in the graded file itself.",
                f"채점하는 파일에 `{name}`이(가) 정의되어 있지 않습니다: 파일은 그것을 `{module}`에서 import하는데 "
                f"({where.get('file')}, {where.get('line')}번째 줄), 채점 환경에서는 그 모듈을 import할 수 없습니다 "
                f"(제출물 중 채점하는 파일만 불러옵니다). `{name}`을(를) 채점하는 파일 안에 직접 작성하세요."))
        if name not in self._nested:  # (read once per name: every check of a missing class asks)
            self._nested[name] = nested_definition(self.source, name, kind)
        outer = self._nested[name]
        if name not in self._written:
            self._written[name] = written_module(self.source, name)
        module = self._written[name]
        if outer is None and module is not None:  # a %%writefile cell wrote it to a file no later cell imports it from
            raise CheckFailure(Message(
                f"`{name}` is written to the file {module}.py by a `%%writefile` cell of your notebook, but it was "
                f"never imported into the notebook, so it does not exist there: add `from {module} import {name}` "
                f"(or `from {module} import *`) in a cell after it.",
                f"`{name}`은(는) 노트북의 `%%writefile` 셀이 {module}.py 파일에 쓰지만 노트북으로 import되지 않아 "
                f"노트북에는 존재하지 않습니다: 그 셀 뒤의 셀에 `from {module} import {name}` (또는 "
                f"`from {module} import *`)를 추가하세요."))
        if outer is not None:  # (seen: the wrapper indented under CausalAttention, at the end of its cell)
            raise CheckFailure(Message(
                f"`{name}` is defined inside `{outer}` (indented under it), so it exists only there, not as a name "
                f"of your file: move `{name}` to the top level (no indentation before its `class`/`def`).",
                f"`{name}`이(가) `{outer}` 안에 정의되어 있습니다 (그 아래로 들여쓰기됨). 그래서 파일의 이름으로는 "
                f"존재하지 않습니다: `{name}`을(를) 최상단으로 옮기세요 (`class`/`def` 앞에 들여쓰기 없이)."))
        raise CheckFailure(Message(f"`{name}` is not defined in your submission.",
                                   f"제출물에 `{name}`이(가) 정의되어 있지 않습니다."))

    def misspelt(self, cls: str, wanted: str) -> Message | None:
        """misspelt_method, parsed once per class and method (a failing constructor fails in every check)."""
        key = (cls, wanted)
        if key not in self._spelling:
            if self._classes is None:
                self._classes = class_methods(self.source)
            self._spelling[key] = misspelt_method(self.source, cls, wanted, self._classes)
        return self._spelling[key]

    def source_text(self) -> str:
        """The submission's code as the grader read it (every cell), for checks that name a pattern in it."""
        return "\n".join(c.code for c in self.source.cells)

    def signature(self, name: str, method: str | None = None) -> list[dict[str, Any]]:
        """The parameters of `name` (a class's __init__, or its `method`: "forward"), asked once per submission:
        the same code is loaded into every worker it gets."""
        key = name if method is None else f"{name}.{method}"
        if key not in self._signatures:
            self.require(name)
            extra = {} if method is None else {"method": method}
            self._signatures[key] = self.request("signature", what=key, owner=name, name=name, **extra)["params"]
        return [dict(p) for p in self._signatures[key]]

    def new(self, name: str, *args: Any, seed: int | None = None, stand_in: dict[str, str] | None = None,
            **kwargs: Any) -> Remote:
        """Construct `name(*args, **kwargs)` in the worker, after torch.manual_seed(seed) when a seed is given.

        stand_in: {"name": top-level name, "source": the grader's class of that name}: the submission's own is
        replaced by it while this object is built (see worker.op_new); building `name` itself then builds the
        grader's class, whether or not the submission defines one."""
        own = not (stand_in and name in str(stand_in.get("name")).split(","))
        if own:
            self.require(name)
        label = f"{name}({', '.join([repr(a) for a in args] + [f'{k}={v!r}' for k, v in kwargs.items()])})"
        extra = {"stand_in": stand_in} if stand_in else {}
        try:
            info = self.request("new", what=label, owner=name if own else None, name=name, args=list(args),
                                kwargs=kwargs, seed=seed, **extra)
        except CheckFailure as e:
            spelling = self.misspelt(name, "__init__")
            if spelling is None or self.fatal is not None:
                raise
            raise CheckFailure(spelling, e.staff) from None
        remote = Remote(self, int(info["handle"]), label, self.generation, owner=name if own else None)
        remote.ctor = (name, tuple(args), dict(kwargs), seed)
        return remote

    def new_seq(self, name: str, *args: Any, steps: list[dict[str, Any]], seed: int | None = None,
                stand_in: dict[str, str] | None = None, lenient: bool = False,
                **kwargs: Any) -> tuple[Remote, list[Any]]:
        """new(name, *args, ...) and then `steps` on the new object (see Remote.seq), in one round trip: the object
        and the steps' values. A failure is the one new() or that step alone would have raised; lenient as for
        Remote.seq (a constructor that fails raises)."""
        own = not (stand_in and name in str(stand_in.get("name")).split(","))
        if own:
            self.require(name)
        label = f"{name}({', '.join([repr(a) for a in args] + [f'{k}={v!r}' for k, v in kwargs.items()])})"
        extra = {"stand_in": stand_in} if stand_in else {}
        ctor = {"op": "new", "args": {"name": name, "args": list(args), "kwargs": kwargs, "seed": seed, **extra}}
        try:
            res = self.request("seq", what=label, owner=name if own else None,
                               steps=[ctor] + [{"op": st["op"], "args": {**st["args"], "handle": "$new"}}
                                               for st in steps])
            values = res["values"]
            failure = None
        except CheckFailure as e:
            # The hints new() and Remote.run() give: a misspelt __init__ for the constructor, a misspelt forward
            # for a call.
            spelling = self.misspelt(name, "__init__") if e.step == 0 and self.fatal is None else None
            if spelling is None and e.step > 0 and steps[e.step - 1]["op"] == "call":
                spelling = self.misspelt(name, "forward")
            failure = e if spelling is None else _hinted(e, spelling)
            if not (lenient and e.step > 0 and e.done is not None):
                if failure is e:
                    raise
                raise failure from None
            values = list(e.done)
        remote = Remote(self, int(values[0]["handle"]), label, self.generation, owner=name if own else None)
        remote.ctor = (name, tuple(args), dict(kwargs), seed)
        return remote, values[1:] + ([failure] if failure is not None else [])

    def new_all(self, name: str, ctors: list[tuple[tuple, int | None]], steps: list[tuple[int, dict[str, Any]]],
                stand_in: dict[str, str] | None = None) -> tuple[list[Remote], list[Any]]:
        """Build name(*args) after torch.manual_seed(seed) for each (args, seed) of `ctors`, in order, then run each
        (k, step) on the k-th object: one round trip. (objects, the steps' values), lenient as Remote.seq (every
        object was built when a step fails); a constructor that fails raises, with new()'s hint."""
        own = not (stand_in and name in str(stand_in.get("name")).split(","))
        if own:
            self.require(name)
        extra = {"stand_in": stand_in} if stand_in else {}
        labels = [f"{name}({', '.join(repr(a) for a in args)})" for args, _seed in ctors]
        seq = [{"op": "new", "args": {"name": name, "args": list(args), "kwargs": {}, "seed": seed, **extra}}
               for args, seed in ctors]
        seq += [{"op": st["op"], "args": {**st["args"], "handle": f"$new:{k}"}} for k, st in steps]
        n = len(ctors)
        try:
            values = self.request("seq", what=labels + [labels[k] for k, _st in steps], owner=name if own else None,
                                  steps=seq)["values"]
            failure = None
        except CheckFailure as e:
            spelling = (self.misspelt(name, "__init__") if self.fatal is None else None) if e.step < n else \
                self.misspelt(name, "forward") if seq[e.step]["op"] == "call" else None
            failure = e if spelling is None else _hinted(e, spelling)
            if e.step < n or e.done is None:
                if failure is e:
                    raise
                raise failure from None
            values = list(e.done)
        remotes = []
        for label, (args, seed), info in zip(labels, ctors, values):
            r = Remote(self, int(info["handle"]), label, self.generation, owner=name if own else None)
            r.ctor = (name, tuple(args), {}, seed)
            remotes.append(r)
        return remotes, values[n:] + ([failure] if failure is not None else [])

    def new_each(self, name: str, builds: list[tuple[tuple, dict[str, Any], int | None, list[dict[str, Any]]]],
                 stand_in: dict[str, str] | None = None) -> "list[tuple[Remote | None, list[Any]]] | Iterator":
        """new_seq(name, *args, steps=steps, seed=seed, **kwargs) for each (args, kwargs, seed, steps) of `builds`,
        in that order (each object built and then its steps run, before the next is built), in one round trip:
        one (object, its steps' values) per build. Lenient, as new_seq(lenient=True) one after another: the list
        ends at the build whose constructor or step failed, that build's values ending with the failure ((None,
        [failure]) where its constructor failed, with new()'s hint); the caller takes each value in order (taken)
        and so fails where it would have with the builds one by one. A hang or a crash in the first build raises;
        in a later one, it is undone and the builds are made one by one as the caller iterates (an iterator, not a
        list), so that only a check that gets to it meets it."""
        own = not (stand_in and name in str(stand_in.get("name")).split(","))
        if own:
            self.require(name)
        extra = {"stand_in": stand_in} if stand_in else {}
        seq: list[dict[str, Any]] = []
        labels: list[str] = []
        starts: list[int] = []  # the index of each build's constructor in seq
        for args, kwargs, seed, steps in builds:
            label = f"{name}({', '.join([repr(a) for a in args] + [f'{k}={v!r}' for k, v in kwargs.items()])})"
            starts.append(len(seq))
            seq.append({"op": "new", "args": {"name": name, "args": list(args), "kwargs": kwargs, "seed": seed,
                                              **extra}})
            seq += [{"op": st["op"], "args": {**st["args"], "handle": "$new"}} for st in steps]
            labels += [label] * (1 + len(steps))
        failure = None
        owner = name if own else None
        hung_before, ended_before = owner in self.hung, len(self.ended)
        try:
            values = self.request("seq", what=labels, owner=owner, steps=seq)["values"]
        except CheckFailure as e:
            if e.done is None:
                if len(self.ended) > ended_before and isinstance(e.step, int) and len(starts) > 1 \
                        and e.step >= starts[1]:
                    # A hang or a crash in a later build, which the check may never get to (it fails at an earlier
                    # one's value, as one by one it would have): undone as ahead() undoes one (no restart counted,
                    # the class not marked as hung), and the builds made one by one as the check takes them
                    # (a class that hung at a size only the third build asked for lost 10 points of checks that
                    # never ask for it; red team, round 26).
                    if self.worker is not None and not self.worker.alive:
                        self.worker = None
                    if owner is not None and not hung_before:
                        self.hung.pop(owner, None)
                    return self._each_one_by_one(name, builds, stand_in)
                raise
            at = max(i for i, s in enumerate(starts) if s <= e.step)
            if e.step == starts[at]:
                spelling = self.misspelt(name, "__init__") if self.fatal is None else None
            else:
                spelling = self.misspelt(name, "forward") if seq[e.step]["op"] == "call" else None
            failure = e if spelling is None else _hinted(e, spelling)
            values = list(e.done)
        out: list[tuple[Remote | None, list[Any]]] = []
        for k, (start, (args, kwargs, seed, _steps)) in enumerate(zip(starts, builds)):
            end = starts[k + 1] if k + 1 < len(starts) else len(seq)
            if start >= len(values):  # its constructor failed
                out.append((None, [failure]))
                break
            remote = Remote(self, int(values[start]["handle"]), labels[start], self.generation,
                            owner=name if own else None)
            remote.ctor = (name, tuple(args), dict(kwargs), seed)
            if end > len(values):  # one of its steps failed
                out.append((remote, values[start + 1:] + [failure]))
                break
            out.append((remote, values[start + 1:end]))
        return out

    def _each_one_by_one(self, name: str, builds: list[tuple], stand_in: dict[str, str] | None) -> Iterator[tuple]:
        """new_each's entries, each build made (new_seq, lenient) only when the check takes it; ends at a failure."""
        for args, kwargs, seed, steps in builds:
            try:
                remote, values = self.new_seq(name, *args, steps=list(steps), seed=seed, stand_in=stand_in,
                                              lenient=True, **kwargs)
            except CheckFailure as e:
                if e.step:  # (a step failed where its values are not known: a hang or a crash, the check's now)
                    raise
                yield None, [e]
                return
            yield remote, values
            if any(isinstance(v, CheckFailure) for v in values):
                return

    def call(self, name: str, *args: Any, record: list[str] | None = None, **kwargs: Any) -> Any:
        """Call a top-level function of the submission and return its result."""
        if record is None:
            return self.call_function(function_call(name, *args, **kwargs))
        self.require(name, kind="function")
        return self.request("call", what=f"{name}(...)", owner=name, name=name, args=list(args), kwargs=kwargs,
                            record=record)["out"]

    def call_function(self, c: "FunctionCall") -> Any:
        """c's function called in the worker (after torch.manual_seed(c.seed) when a seed is given): what it
        returned, or the CheckFailure its call gives raised. Where the check sent the call ahead (see ahead()),
        its outcome is taken from there instead."""
        if self._ahead:
            sent, outcome = self._ahead.pop(0)
            if sent.same(c) and outcome is not _NOT_SENT:
                self._ahead_taken += 1
                if isinstance(outcome, CheckFailure):
                    raise outcome
                return outcome
            if sent.same(c):  # after a crash or a hang the check read: one by one from here, as it would have been
                self._ahead_lost = None
            else:  # the check went another way than it said it would: ask as it goes from here
                self._settle_ahead()
            self._ahead.clear()
        self.require(c.name, kind="function")
        return self.request("call", what=c.what, owner=c.owner, name=c.name, args=list(c.args), kwargs=c.kwargs,
                            seed=c.seed, record=None)["out"]

    @contextlib.contextmanager
    def ahead(self, calls: list["FunctionCall"]) -> Iterator[None]:
        """Send `calls` (of the submission's top-level functions, on the grader's own inputs) to the worker together,
        in as few round trips as their outcomes allow, before the check runs; while it runs, call_function() takes
        each outcome in order as if its request were made at that point. A check that fails before its last call
        leaves the rest unread: they ran all the same, like the later calls of a check that tells every failure.
        A crash or a hang ends the sending: the calls after it are made one by one if the check gets to them, and
        if it does not (it failed before), that crash or hang, which the calls made one by one would never have
        met, costs nothing (no restart is counted, and a function that hung is called again later). A check that
        makes another call than the next one sent ahead asks the worker from there on. Inside the block the check
        makes no requests of its own but these calls. What is left is dropped when the check ends."""
        self._ahead_taken, self._ahead_lost = 0, None
        self._ahead = list(zip(calls, self._outcomes(calls)))
        try:
            yield
        finally:
            self._settle_ahead()
            self._ahead = []

    def _settle_ahead(self) -> None:
        """A crash or hang among the calls sent ahead that the check never read: undone as far as it can be (the
        worker it ended is replaced without counting a restart; its function is not marked as hung)."""
        lost, self._ahead_lost = self._ahead_lost, None
        if lost is not None and lost[0] >= self._ahead_taken:
            if self.worker is not None and not self.worker.alive:
                self.worker = None
            if lost[1] is not None:
                self.hung.pop(lost[1], None)

    def _outcomes(self, calls: list["FunctionCall"], replay: bool = False) -> list[Any]:
        """Each call's value or its CheckFailure, as made one by one in order: consecutive calls with the same
        owner go in one sequence; after a call that raised, the sequence goes on from the next call. After a hang
        or a crash, the calls before it (their values went with the worker) are made again (_replayed) and the
        calls after it are not sent (_NOT_SENT: call_function makes them, if the check gets that far); the call
        that ended the worker is noted in _ahead_lost (its index, and the function it marked as hung)."""
        out: list[Any] = []
        i = 0
        while i < len(calls):
            try:
                self.require(calls[i].name, kind="function")
            except CheckFailure as e:
                out.append(e)
                i += 1
                continue
            j = i + 1
            while j < len(calls) and calls[j].owner == calls[i].owner and calls[j].name in self.names \
                    and self.names[calls[j].name] != "value":
                j += 1
            group = calls[i:j]
            owner, hung_before, ended_before = group[0].owner, group[0].owner in self.hung, len(self.ended)
            try:
                if len(group) == 1:
                    c = group[0]
                    out.append(self.request("call", what=c.what, owner=owner, name=c.name, args=list(c.args),
                                            kwargs=c.kwargs, seed=c.seed, record=None)["out"])
                else:
                    steps = [{"op": "call", "args": {"name": c.name, "args": list(c.args), "kwargs": c.kwargs,
                                                     "seed": c.seed, "record": None}} for c in group]
                    out += [v["out"] for v in self.request("seq", what=[c.what for c in group], owner=owner,
                                                           steps=steps)["values"]]
                i = j
                continue
            except CheckFailure as e:
                failed = e
            k = failed.step if isinstance(failed.step, int) and 0 <= failed.step < len(group) else 0
            lost = len(self.ended) > ended_before  # this request's worker crashed or hung (or was over budget)
            if failed.done is not None and len(failed.done) == k:
                out += [v["out"] for v in failed.done]
            elif k:
                out += self._replayed(group[:k])
            failed.step, failed.done = 0, None  # (as the call alone would have failed)
            out.append(failed)
            i += k + 1
            if lost:
                if not replay:
                    newly = owner if owner is not None and owner in self.hung and not hung_before else None
                    self._ahead_lost = (i - 1, newly)
                out += [_NOT_SENT] * (len(calls) - i)
                break
        return out

    def _replayed(self, calls: list["FunctionCall"]) -> list[Any]:
        """The outcomes of `calls`, which ran before a call of theirs hung or crashed the worker and went with it:
        made again in a worker started for them (not a restart of the submission's: one by one, they ran before the
        failure, in the worker it ended; and a function that hung after them is called), which is then let go, so
        that the next call made starts a fresh worker, counted as the restart after that crash or hang."""
        self._replaying = True
        try:
            got = self._outcomes(calls, replay=True)
        finally:
            self._replaying = False
        if self.worker is not None and self.worker.alive:
            self.ended.append(self.worker.kill(graceful=True))
        return got

    def ahead_left(self) -> int:
        """How many of the calls sent ahead the check has not taken (yet)."""
        return len(self._ahead)

    def env(self) -> dict[str, Any]:
        """What the worker runs on (the same for every worker of this grader: asked once)."""
        if self._env is None:
            self._env = self.request("env")
        return self._env

    def take_output(self) -> str:
        text = "".join(self.output)
        self.output.clear()
        return text


_NOT_SENT = object()  # a call sent ahead after one that crashed or hung: never sent (see Submission.ahead)


class FunctionCall(NamedTuple):
    """A call of one of the submission's top-level functions, as a check makes it (see Submission.ahead)."""
    name: str
    args: tuple = ()
    kwargs: dict = {}
    seed: int | None = None
    what: str = ""
    owner: str | None = None

    def same(self, other: "FunctionCall") -> bool:
        """The same call: the same function, seed, words and owner, and the very same arguments (a tensor is the
        same object; anything else equal and of the same type)."""
        return (self.name, self.seed, self.what, self.owner) == (other.name, other.seed, other.what, other.owner) \
            and _same_values(list(self.args), list(other.args)) \
            and list(self.kwargs) == list(other.kwargs) and _same_values(list(self.kwargs.values()),
                                                                        list(other.kwargs.values()))


def function_call(name: str, *args: Any, **kwargs: Any) -> FunctionCall:
    """The call Submission.call(name, *args, **kwargs) makes (for Submission.ahead)."""
    return FunctionCall(name, args, kwargs, None, f"{name}(...)", name)


def _same_values(a: list, b: list) -> bool:
    if len(a) != len(b):
        return False
    for x, y in zip(a, b):
        if x is y:
            continue
        if type(x) is not type(y) or type(x) not in (int, float, str, bool) or x != y:
            return False
    return True


MALFORMED = Message(
    "The process running your code sent back a malformed reply; code that changes the grader's worker "
    "(autograder.*, the protocol) is not graded.",
    "코드를 실행하던 프로세스가 잘못된 형식의 응답을 보냈습니다. 채점기의 작업 프로세스(autograder.*, 통신 규약)를 "
    "바꾸는 코드는 채점되지 않습니다.")


class RemoteError(Exception):
    """The submission's code raised; `err` holds its type, message and the student's line."""

    def __init__(self, err: dict[str, Any]):
        super().__init__(err.get("message", ""))
        self.err = err
