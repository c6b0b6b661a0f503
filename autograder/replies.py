"""The shape of a well-formed worker reply, per request: anything else came from a worker the submission tampered
with (or broke) and is refused before a check sees it, so that it reads as the submission's fault, not the
grader's. Only the structure is checked here; the values are the checks' business."""
from __future__ import annotations

from typing import Any, Callable


def _str(x: Any) -> bool:
    return type(x) is str


def _opt_str(x: Any) -> bool:
    return x is None or type(x) is str


def _list_of(x: Any, item: Callable[[Any], bool]) -> bool:
    return type(x) is list and all(item(i) for i in x)


def _dict_of(x: Any, item: Callable[[Any], bool]) -> bool:
    return type(x) is dict and all(_str(k) and item(v) for k, v in x.items())


def _anything(_x: Any) -> bool:
    return True


def _fields(x: Any, required: dict[str, Callable[[Any], bool]],
            optional: dict[str, Callable[[Any], bool]] | None = None) -> bool:
    if type(x) is not dict or not all(k in x and ok(x[k]) for k, ok in required.items()):
        return False
    return all(k not in x or ok(x[k]) for k, ok in (optional or {}).items())


def _tuple(*items: Callable[[Any], bool]) -> Callable[[Any], bool]:
    return lambda x: type(x) is list and len(x) == len(items) and all(ok(v) for ok, v in zip(items, x))


def _ints(x: Any) -> bool:
    return _list_of(x, lambda i: type(i) is int)


_ERROR = lambda e: _fields(e, {"type": _str, "message": _str},  # noqa: E731
                           {"where": lambda w: w is None or type(w) is dict})
_NAMES = lambda v: _dict_of(v, _str)  # noqa: E731
_ATTR = lambda a: a is None or _fields(a, {"type": _str}, {  # noqa: E731
    "len": lambda n: type(n) is int, "items": lambda i: _list_of(i, _str),
    "kinds": lambda k: _list_of(k, lambda c: _list_of(c, _str)),
    "same_object": lambda b: type(b) is bool, "value": _anything, "p": lambda p: type(p) in (int, float)})

def _schema(required: dict[str, Callable[[Any], bool]],
            optional: dict[str, Callable[[Any], bool]] | None = None) -> Callable[[Any], bool]:
    """A check of a dict's fields, its field checks made once (every reply is checked: dozens a check)."""
    return lambda x: _fields(x, required, optional)


def _is_int(x: Any) -> bool:
    return type(x) is int


def _is_bool(x: Any) -> bool:
    return type(x) is bool


_PARAM = _schema({"name": _str, "kind": _str}, {"default": _opt_str})
_RECORD = _schema({"fn": _str, "input": _anything}, {"dim": lambda n: n is None or type(n) is int})
_STR_LIST = lambda x: _list_of(x, _str)  # noqa: E731
_ANY_DICT = lambda d: _dict_of(d, _anything)  # noqa: E731

SCHEMAS: dict[str, Callable[[Any], bool]] = {
    "load": _schema({"names": _NAMES, "errors": lambda e: _list_of(e, _ERROR)}),
    "names": _NAMES,
    "signature": _schema({"params": lambda ps: _list_of(ps, _PARAM)}),
    "new": _schema({"handle": _is_int}, {"type": _str, "module": _anything,
                                         "records": lambda r: _list_of(r, _RECORD)}),
    "call": _schema({"out": _anything, "records": lambda r: _list_of(r, _RECORD)},
                    {"grads": lambda g: g is None or _dict_of(g, _anything)}),
    "state": _schema({"params": _ANY_DICT, "buffers": _ANY_DICT, "persistent": _STR_LIST}),
    "load_state": _schema({"loaded": _STR_LIST, "missing": _STR_LIST, "unexpected": _STR_LIST,
                           "mismatched": lambda x: _list_of(x, _tuple(_str, _ints, _ints))}),
    "describe": _schema({"type": _str, "attrs": lambda a: _dict_of(a, _ATTR)}, {
        "modules": lambda m: _list_of(m, _tuple(_str, _str)),
        "layer_norms": _STR_LIST,
        "params": lambda p: _list_of(p, _tuple(_str, _ints, _is_bool)),
        "tensors": lambda t: _list_of(t, _tuple(_str, _ints))}),
    "to": lambda v: v is None,
    "probe_devices": _schema({"mixed": lambda m: _list_of(m, _tuple(_str, lambda d: _list_of(d, _str))),
                              "out_device": _opt_str, "stay_behind": _STR_LIST},
                             {"causal_sdpa": _is_bool, "to_cpu": _is_bool, "forward_mask": _is_bool}),
    "env": lambda v: type(v) is dict,
}


def _partial_locals(d: Any, names: list[str]) -> bool:
    """A failed call's local tensors: only names the request asked for, plain tensors, within the bounds."""
    from .protocol import MAX_PARTIAL_BYTES, MAX_PARTIAL_NAMES
    import torch
    if type(d) is not dict or len(d) > MAX_PARTIAL_NAMES or not set(d) <= set(names):
        return False
    total = 0
    for v in d.values():
        if type(v) is not torch.Tensor:
            return False
        total += v.numel() * v.element_size()
    return total <= MAX_PARTIAL_BYTES


def error_well_formed(op: str, args: dict[str, Any], err: Any) -> bool:
    """True when the error reply `err` to request `op` with `args` has the structure a genuine worker gives: the
    optional "frame" (the callee's line and local tensors, worker.op_call) only on a call that asked for it
    (`partial`), holding only the names it asked for."""
    if op == "seq":  # the error of one step, which says which, and the values of the steps before it
        steps = args.get("steps")
        step = err.get("step") if type(err) is dict else None
        done = err.get("done") if type(err) is dict else None
        if type(steps) is not list or type(step) is not int or not 0 <= step < len(steps) \
                or type(done) is not list or len(done) != step \
                or not all(well_formed(st["op"], v, st["args"]) for st, v in zip(steps, done)):
            return False
        return error_well_formed(steps[step]["op"], steps[step]["args"],
                                 {k: v for k, v in err.items() if k not in ("step", "done")})
    if type(err) is not dict or "frame" not in err:
        return True
    names = args.get("partial") if op == "call" else None
    try:
        return type(names) is list and bool(names) and _fields(
            err["frame"], {"locals": lambda d: _partial_locals(d, names)},
            {"function": _str, "code": _str, "line": lambda n: n is None or type(n) is int})
    except Exception:
        return False


def well_formed(op: str, value: Any, args: dict[str, Any] | None = None) -> bool:
    """True when `value` has the structure a genuine worker gives for `op` (unknown ops are not judged); for "seq",
    one value per step of `args`, each as its own request would give it."""
    if op == "seq":
        steps = (args or {}).get("steps")
        if type(value) is not dict or type(steps) is not list or type(value.get("values")) is not list \
                or len(value["values"]) != len(steps):
            return False
        return all(well_formed(st["op"], v, st["args"]) for st, v in zip(steps, value["values"]))
    check = SCHEMAS.get(op)
    try:
        return check is None or bool(check(value))
    except Exception:  # RecursionError on deep nesting, or anything else odd data provokes
        return False
