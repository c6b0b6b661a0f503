"""Known learner bugs as data: each is an assignment's reference plus stated find/replace changes, and one table is
both the grader's own test corpus and its diagnosis library (a bug version of the reference that gives a
student's output exactly names the bug). Only hidden, grader-side code imports this module."""
from __future__ import annotations

import ast
import functools
import time
import types
from dataclasses import dataclass, field
from typing import Any, Callable, Iterable

import torch

from .messages import Message
from .rng import manual_seed

# ---------------------------------------------------------------------------------------------- the table


@dataclass(frozen=True)
class Change:
    """Replace every `find` by `replace` inside the top-level function or class `where` ("" = the whole file);
    an empty `find` replaces the whole of `where`."""
    where: str
    find: str
    replace: str


@dataclass(frozen=True)
class Variant:
    name: str
    changes: tuple[Change, ...]
    breaks: tuple[str, ...]  # the questions it loses points on; () for a different but correct solution
    # The diagnosis: what the grader says when this bug version of the reference gives the student's output
    # exactly. None for bugs whose output equals the reference's or that raise; checks name those (`says`).
    cause: Message | None = None
    init: bool = False  # the change is in how weights are created: compare with the same seed, not copied weights
    says: tuple[str, ...] = ()  # words a failing check's message must contain (the assignment's tests)
    never_says: tuple[str, ...] = ()  # words no message may contain (wrong causes seen in learners' feedback)
    why: str = ""  # one line for readers of the table when neither cause nor the change says it
    reference: str = field(default="", repr=False, compare=False)  # the source the changes apply to

    def source(self) -> str:
        return apply(self.reference, self.changes)

    @property
    def targets(self) -> set[str]:
        return {c.where for c in self.changes}


@functools.lru_cache(maxsize=256)
def scope(text: str, where: str) -> tuple[int, int]:
    """Character span of the top-level function or class `where` (decorators and docstring included)."""
    if not where:
        return 0, len(text)
    for node in ast.parse(text).body:
        if getattr(node, "name", None) == where:
            lines = text.splitlines(keepends=True)
            start = sum(map(len, lines[:node.lineno - 1]))
            return start, sum(map(len, lines[:node.end_lineno]))
    raise KeyError(f"no top-level {where!r} in the reference")


def apply(text: str, changes: tuple[Change, ...]) -> str:
    for c in changes:
        a, b = scope(text, c.where)
        part = text[a:b]
        if c.find and c.find not in part:
            raise ValueError(f"{c.find!r} does not occur in {c.where or 'the file'}")
        text = text[:a] + (part.replace(c.find, c.replace) if c.find else c.replace) + text[b:]
    return text


def ch(where: str, find: str, replace: str) -> Change:
    return Change(where, find, replace)


def row(reference: str, name: str, *changes: Change, breaks: str = "", en: str = "", ko: str = "",
        **kw: Any) -> Variant:
    """One table row: `breaks` is comma-separated; `en`/`ko` give the diagnosis (the cause and its fix).
    A table binds `reference` once: V = functools.partial(row, REFERENCE_SOURCE)."""
    qs = tuple(q.strip() for q in breaks.split(",") if q.strip())
    return Variant(name, changes, qs, Message(en, ko) if en else None, reference=reference, **kw)


class Table:
    """An assignment's variants with what the grader derives from them: by name, the diagnosis library, the bug
    versions as modules, and which top-level definitions a change reaches."""

    def __init__(self, reference: str, variants: Iterable[Variant]):
        self.reference = reference
        self.variants = list(variants)
        self.by_name = {v.name: v for v in self.variants}
        assert len(self.by_name) == len(self.variants), "variant names must be unique"
        # The bugs whose output differs from the reference's, so an exact match names them.
        self.library = [v for v in self.variants if v.cause is not None and v.breaks]
        self._modules: dict[str, types.ModuleType] = {}
        self._pairs: dict[tuple[str, str], Variant | None] = {}
        self._sources: dict[str, str] = {}
        self._uses = _uses(reference)

    def module(self, v: Variant) -> types.ModuleType:
        """The bug version of the reference as a module, built once per grader process (it is reference code)."""
        if v.name not in self._modules:
            m = types.ModuleType(f"reference_bug_{v.name}")
            exec(compile(self.source(v), f"<reference with bug {v.name}>", "exec"), m.__dict__)
            self._modules[v.name] = m
        return self._modules[v.name]

    def pair(self, a: Variant, b: Variant) -> Variant | None:
        """`a` and `b` in one bug version of the reference (a learner with both mistakes), or None where their
        edits do not compose: one's edit no longer applies after the other's (in either order), or one undoes or
        swallows the other (the result is one of them alone). Composed once per grader process, as text only;
        its module is built by `module` when first needed."""
        key = (a.name, b.name)
        if key not in self._pairs:
            both = None
            for first, second in ((a, b), (b, a)):
                try:
                    text = apply(self.source(first), second.changes)
                except (ValueError, KeyError, SyntaxError):
                    continue
                if text not in (self.reference, self.source(a), self.source(b)):
                    both = Variant(f"{a.name}+{b.name}", first.changes + second.changes,
                                   tuple(dict.fromkeys(a.breaks + b.breaks)), init=a.init or b.init,
                                   reference=self.reference)
                    self._sources[both.name] = text
                break
            self._pairs[key] = both
        return self._pairs[key]

    def source(self, v: Variant) -> str:
        """`v.source()`, worked out once per grader process."""
        if v.name not in self._sources:
            self._sources[v.name] = v.source()
        return self._sources[v.name]

    def reaches(self, v: Variant, name: str) -> bool:
        """Whether `v` changes `name` or something `name` uses (a helper function it calls, a class it builds);
        a change to the whole file (a constant, an import) reaches everything."""
        return "" in v.targets or bool(v.targets & self._uses.get(name, {name}))

    def candidates(self, name: str) -> list[Variant]:
        return [v for v in self.library if self.reaches(v, name)]


def _uses(text: str) -> dict[str, set[str]]:
    """Top-level definition -> itself and every top-level definition it uses, directly or through others."""
    defs = {n.name: n for n in ast.parse(text).body
            if isinstance(n, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef))}
    direct = {name: {x.id for x in ast.walk(node) if isinstance(x, ast.Name) and x.id in defs}
              for name, node in defs.items()}
    closure: dict[str, set[str]] = {}
    for name in defs:
        seen, todo = {name}, [name]
        while todo:
            for used in direct[todo.pop()] - seen:
                seen.add(used)
                todo.append(used)
        closure[name] = seen
    return closure


# ---------------------------------------------------------------------------------------------- the diagnosis

def same(a: Any, b: Any) -> bool:
    """Equal up to float rounding, with nan and inf in the same places (another summation order still matches,
    another bug does not); sequences of plain numbers (a shape) must be equal."""
    if isinstance(a, (tuple, list)) and isinstance(b, (tuple, list)):
        return len(a) == len(b) and all(type(x) in (int, float, bool) and type(y) in (int, float, bool) and x == y
                                        for x, y in zip(a, b))
    if type(a) is not torch.Tensor or type(b) is not torch.Tensor or a.shape != b.shape:
        return False
    return bool(torch.allclose(a.detach().double(), b.detach().double(), rtol=1e-4, atol=1e-5, equal_nan=True))


def named(v: Variant) -> Message:
    assert v.cause is not None
    return Message(f"Your output is exactly what the reference gives when {v.cause.en}.",
                   f"출력이 참조 구현에 다음 실수를 넣었을 때의 결과와 정확히 같습니다: {v.cause.ko}.")


Ctor = tuple  # (name, args, kwargs, seed), as proxy.Remote.ctor records how the student's object was built


def build(mod: Any, ctor: Ctor, params: dict[str, torch.Tensor] | None, cls: str | None = None,
          prepare: Callable[[Any], None] | None = None) -> torch.nn.Module | None:
    """`ctor`'s class (or `cls`, the reference's name for it) from `mod`, built after the same seed, with `params`
    (the student's weights) copied in when given; None when the weights do not fit (other names or shapes: no
    diagnosis then). `prepare` sets what the checks set on the reference (e.g. an assignment option)."""
    name, args, kwargs, seed = ctor
    manual_seed(seed if seed is not None else 0)
    m = getattr(mod, cls or name)(*args, **kwargs)
    if not isinstance(m, torch.nn.Module):
        return None
    if prepare is not None:
        prepare(m)
    if params is not None:
        own = dict(m.named_parameters())
        if set(own) != set(params) or any(tuple(p.shape) != tuple(params[n].shape) for n, p in own.items()):
            return None
        with torch.no_grad():
            for n, p in own.items():
                p.copy_(params[n])
    return m


@dataclass(frozen=True)
class Call:
    """How a check called the student's module: the inputs, the mode, the seed before the call, and which part
    of what forward returned it compared (`pick`: e.g. one entry of a dict)."""
    inputs: tuple = ()
    kwargs: dict = field(default_factory=dict)
    mode: str | None = "eval"
    seed: int | None = None
    pick: Callable[[Any], Any] | None = None


_OUTPUTS: dict[tuple, Any] = {}  # (bug module, how built, weights, call) -> output, for this grader process
_OUTPUTS_MAX = 4096


def _key(x: Any) -> Any:
    """A hashable stand-in for a value made of tensors, numbers, strings and containers (raises on others)."""
    if type(x) is torch.Tensor:
        t = x.detach().cpu().contiguous()
        data = t.view(torch.int16).numpy().tobytes() if t.dtype is torch.bfloat16 else t.numpy().tobytes()
        return ("T", str(t.dtype), tuple(t.shape), data)
    if x is None or type(x) in (bool, int, float, str):
        return x
    if type(x) in (tuple, list):
        return (type(x).__name__, *map(_key, x))
    if type(x) is dict:
        return ("D", *sorted((str(k), _key(v)) for k, v in x.items()))
    raise TypeError(type(x).__name__)


_CALL_KEYS: dict[tuple, tuple[tuple, Any]] = {}  # ids of (ctor, params, call), cls -> (those objects, their key)
_PAIR_SEARCHES: dict[tuple, Any] = {}  # what diagnose_module's pair search named, for this grader process


def _call_key(ctor: Ctor, params: dict | None, call: Call, cls: str | None,
              prepare: Callable[[Any], None] | None) -> tuple | None:
    """The part of output()'s key that is not the bug module: None where the output cannot be remembered (a
    closure cannot be part of a key; an unseeded call in train mode depends on the random state). The tensors' bytes
    are read once for the objects of one diagnosis, not once per bug tried (the pair search asks hundreds of times)."""
    if prepare is not None or call.pick is not None or (call.mode == "train" and call.seed is None):
        return None
    objs = (ctor, params, call, cls)
    ids = (id(ctor), id(params), id(call), cls)
    held = _CALL_KEYS.get(ids)
    if held is not None and all(a is b for a, b in zip(held[0], objs)):
        return held[1]
    try:
        part = (_key(ctor), _key(params), _key(call.inputs), _key(call.kwargs), call.mode, call.seed, cls)
    except TypeError:
        part = None
    if len(_CALL_KEYS) >= 64:
        _CALL_KEYS.clear()
    _CALL_KEYS[ids] = (objs, part)  # (the objects are held with their key: an id is never reused meanwhile)
    return part


def output(mod: Any, ctor: Ctor, params: dict | None, call: Call, cls: str | None = None,
           prepare: Callable[[Any], None] | None = None) -> Any:
    """What `mod`'s version of the student's module gives, called as the check called it; None if it cannot.

    Remembered for the grader process: it depends only on the bug, the constructor call, the weights and the
    call, which are the same for every student whose failing check saw the same weights (copied-in reference
    weights, or the same seeded construction), so a class full of the same bug pays for the search once."""
    part = _call_key(ctor, params, call, cls, prepare)
    key = None if part is None else (id(mod), *part)
    if key is not None and key in _OUTPUTS:
        hit = _OUTPUTS[key]
        return hit.clone() if type(hit) is torch.Tensor else hit
    got = _output(mod, ctor, params, call, cls, prepare)
    if key is not None and (got is None or type(got) is torch.Tensor):
        if len(_OUTPUTS) >= _OUTPUTS_MAX:
            _OUTPUTS.clear()
        _OUTPUTS[key] = got.clone() if type(got) is torch.Tensor else got
    return got


def _output(mod: Any, ctor: Ctor, params: dict | None, call: Call, cls: str | None = None,
            prepare: Callable[[Any], None] | None = None) -> Any:
    try:
        with torch.random.fork_rng(devices=[]):  # the grader's own random state stays as the checks left it
            m = build(mod, ctor, params, cls, prepare)
            if m is None:
                return None
            m.train(call.mode == "train")
            if call.seed is not None:
                manual_seed(call.seed)
            with torch.no_grad():
                out = m(*call.inputs, **call.kwargs)
            return call.pick(out) if call.pick is not None else out
    except Exception:  # a bug version that cannot run with these arguments names nothing
        return None


def diagnose_module(table: Table, reference: Any, until: float, target: Any, got: Any, call: Call,
                    cls: str | None = None, prepare: Callable[[Any], None] | None = None,
                    candidates: list[Variant] | None = None,
                    rename: Callable[[dict], dict] | None = None, pairs: int = 0) -> Message | None:
    """The library bug that explains the student's module `target` (a proxy handle) having given `got` when
    called as `call` says, or None. The student's code is not run again; only the module's weights are read.
    `candidates`: the bugs to try (by default every library bug that reaches the class). `rename`: the student's
    weights under the reference's names, where the assignment can tell which is which (projections named
    otherwise); without it, weights under other names name no bug. `pairs`: when no single bug explains the
    output, at most this many pairs of bugs (each changing this call's output to the student's shape, their edits
    composed) are tried, and a pair that gives the output exactly is named; 0 tries none."""
    ctor = target.ctor
    cls = cls or (ctor[0] if ctor is not None else None)
    if ctor is None or not hasattr(reference, cls):
        return None
    candidates = table.candidates(cls) if candidates is None else candidates
    if not candidates:
        return None
    params = target.state()["params"]
    if rename is not None:
        params = rename(params)
    # With the student's weights the reference either gives their output (their forward is right: look for a bug
    # in how weights are created, built from the same seed) or it does not (look for a bug in forward).
    reference_out = output(reference, ctor, params, call, cls, prepare)
    forward_right = same(reference_out, got)
    if forward_right:
        reference_out = output(reference, ctor, None, call, cls, prepare)
        if same(reference_out, got):
            return None  # the student's module is the reference's: the failure is not one of these bugs
    found: list[Variant] = []
    outs: list[tuple[Variant, Any]] = []
    for v in candidates:
        if time.monotonic() > until:
            return None
        if v.init != forward_right:
            continue
        out = output(table.module(v), ctor, None if v.init else params, call, cls, prepare)
        if same(out, got):
            found.append(v)
        outs.append((v, out))
    if found or not pairs or type(got) is not torch.Tensor:
        return _one(found)
    # The pairs' parts: bugs that change this call's output (a bug that does not leaves its partner alone, which
    # was tried) and keep the student's shape.
    alone = [v for v, out in outs if type(out) is torch.Tensor and out.shape == got.shape
             and not same(out, reference_out)]
    # No one bug explains it: two of them together may (learners round rl11). Only where no single bug does. What the
    # search named is remembered with what it was asked (the same bug in many students' files: searched once).
    part = _call_key(ctor, params, call, cls, prepare)
    try:
        searched = None if part is None else (id(table), pairs, part, _key(got), tuple(v.name for v in alone))
    except TypeError:
        searched = None
    if searched is not None and searched in _PAIR_SEARCHES:
        return _PAIR_SEARCHES[searched]
    named = _pairs_named(table, alone, pairs, until, ctor, params, call, cls, prepare, got)
    if searched is not None and named is not _UNFINISHED:
        if len(_PAIR_SEARCHES) >= 1024:
            _PAIR_SEARCHES.clear()
        _PAIR_SEARCHES[searched] = named
    return None if named is _UNFINISHED else named


_UNFINISHED = object()  # a pair search stopped by its cap or deadline: nothing named, and nothing remembered


def _pairs_named(table: Table, alone: list[Variant], pairs: int, until: float, ctor: Ctor, params: dict | None,
                 call: Call, cls: str | None, prepare: Callable[[Any], None] | None, got: Any) -> Any:
    """diagnose_module's pair search: the message naming the pairs of `alone`'s bugs that give `got`, None where
    none does, _UNFINISHED where not every pair could be tried."""
    both: list[tuple[Variant, Variant]] = []
    tried = 0
    for i, a in enumerate(alone):
        for b in alone[i + 1:]:
            if a.cause == b.cause:
                continue
            ab = table.pair(a, b)
            if ab is None:
                continue
            if tried >= pairs or time.monotonic() > until:
                return _UNFINISHED  # not every pair was tried: naming one of them could name the wrong one
            tried += 1
            if same(output(table.module(ab), ctor, None if ab.init else params, call, cls, prepare), got):
                both.append((a, b))
    return _two(both)


MAX_NAMED = 3  # causes named together when they give the same numbers; more say nothing certain


def _one(found: list[Variant]) -> Message | None:
    """The diagnosis from the bugs that explain the output. Different bugs can give the same numbers on a call
    (scores divided by sqrt(d_out) or by head_dim: both 2 when d_out is 4 and there are 2 heads; heads merged
    without transposing back, or concatenated along the token axis): naming the first one named the wrong one for
    some students, so all of them are named (the checks on other shapes tell them apart)."""
    causes = list(dict.fromkeys(v.cause for v in found if v.cause is not None))
    if len(causes) == 1:
        return named(found[0])
    if not causes or len(causes) > MAX_NAMED:
        return None
    return Message("Your output is exactly what the reference gives with any one of these mistakes (they give the "
                   "same numbers here): " + "; or ".join(c.en for c in causes) + ".",
                   "출력이 참조 구현에 다음 실수 중 하나를 넣었을 때의 결과와 정확히 같습니다 (여기서는 같은 값이 "
                   "나옴): " + "; 또는 ".join(c.ko for c in causes) + ".")


def _two(found: list[tuple[Variant, Variant]]) -> Message | None:
    """The diagnosis from the pairs of bugs that together explain the output: each mistake in its own words; several
    pairs only when at most MAX_NAMED causes are involved, as for one bug."""
    pairs = list({frozenset((a.cause, b.cause)): (a.cause, b.cause) for a, b in found
                  if a.cause is not None and b.cause is not None}.values())
    causes = set(c for p in pairs for c in p)
    if not pairs or len(causes) > MAX_NAMED:
        return None
    if len(pairs) == 1:
        (x, y), = pairs
        return Message(f"Your output is exactly what the reference gives with both of these mistakes: {x.en}; and "
                       f"{y.en}.",
                       f"출력이 참조 구현에 다음 두 실수를 함께 넣었을 때의 결과와 정확히 같습니다: {x.ko}; 그리고 "
                       f"{y.ko}.")
    return Message("Your output is exactly what the reference gives with both mistakes of any one of these pairs "
                   "(they give the same numbers here): "
                   + "; or ".join(f"({n}) {x.en}; and {y.en}" for n, (x, y) in enumerate(pairs, 1)) + ".",
                   "출력이 참조 구현에 다음 두 실수 쌍 중 하나를 함께 넣었을 때의 결과와 정확히 같습니다 (여기서는 "
                   "같은 값이 나옴): "
                   + "; 또는 ".join(f"({n}) {x.ko}; 그리고 {y.ko}" for n, (x, y) in enumerate(pairs, 1)) + ".")


def diagnose_function(table: Table, until: float, name: str, inputs: tuple, got: Any,
                      candidates: list[Variant] | None = None) -> Message | None:
    """The library bug that explains the student's top-level function `name` having returned `got` for `inputs`
    (`candidates`: the bugs to try, by default every library bug that reaches the function)."""
    found: list[Variant] = []
    for v in table.candidates(name) if candidates is None else candidates:
        if time.monotonic() > until:
            return None
        try:
            with torch.random.fork_rng(devices=[]):
                out = getattr(table.module(v), name)(*inputs)
        except Exception:
            continue
        if same(out, got):
            found.append(v)
    return _one(found)
