"""The submission's source read in the grader (parsed, never run): the last definition of a class or a method, and
two slips that only the source shows -- an assert of a (condition, message) tuple, which is always true, and a
masked_fill whose result is dropped (it returns a new tensor; masked_fill_ is the one that works in place)."""
from __future__ import annotations

import ast


def _top_level(sub):
    """Every top-level statement of the submission's source, cell after cell (cells Python cannot parse left out)."""
    from .source import Unparsable, parse
    for cell in sub.source.cells:
        try:
            tree = parse(cell.code, cell.label)
        except Unparsable:
            continue
        yield from tree.body


def _last(sub, kind: type, name: str):
    """The last top-level definition of `name` of that kind (ast.ClassDef, ast.FunctionDef), or None."""
    found = None
    for node in _top_level(sub):
        if isinstance(node, kind) and node.name == name:
            found = node
    return found


def class_node(sub, cls: str):
    """The last top-level definition of class `cls` in the submission's source, or None."""
    return _last(sub, ast.ClassDef, cls)


def method_node(sub, cls: str, name: str):
    """The last definition of method `name` in class_node(sub, cls), or None."""
    node = class_node(sub, cls)
    found = [f for f in (node.body if node is not None else ()) if isinstance(f, ast.FunctionDef) and f.name == name]
    return found[-1] if found else None


def unfinished(sub, cls: str) -> bool:
    """Whether `cls`'s __init__ or forward still raises NotImplementedError as the skeleton does: a note that the
    class was graded over the grader's stand-in parts would tell of a grading that gave it nothing."""
    for f in (method_node(sub, cls, "__init__"), method_node(sub, cls, "forward")):
        for st in (f.body if f is not None else ()):
            exc = st.exc.func if isinstance(st, ast.Raise) and isinstance(st.exc, ast.Call) else \
                (st.exc if isinstance(st, ast.Raise) else None)
            if isinstance(exc, ast.Name) and exc.id == "NotImplementedError":
                return True
    return False


def asserts_tuple(sub, cls: str, method: str = "__init__") -> bool:
    """Whether `cls.method` asserts a parenthesised (condition, message) tuple: always true, so it never raises."""
    node = method_node(sub, cls, method)
    return node is not None and any(isinstance(a, ast.Assert) and isinstance(a.test, ast.Tuple) and a.test.elts
                                    for a in ast.walk(node))


def dropped_masked_fill(sub, *where: tuple[str, str]) -> int | None:
    """The line of a statement that calls .masked_fill(...) and keeps nothing of it (`scores.masked_fill(mask, v)`
    on a line of its own) in one of the (class, method) pairs `where` ("" as the class: a top-level function), or
    None."""
    for cls, name in where:
        node = method_node(sub, cls, name) if cls else _last(sub, ast.FunctionDef, name)
        if node is None:
            continue
        for st in ast.walk(node):
            if isinstance(st, ast.Expr) and isinstance(st.value, ast.Call) \
                    and isinstance(st.value.func, ast.Attribute) and st.value.func.attr == "masked_fill":
                return st.lineno
    return None


# Calls that draw from the random generator when a module is built (a layer's initial weights, a torch.rand matrix).
_DRAWS = ("Linear", "Parameter", "Embedding", "rand")


def created_twice(sub, cls: str) -> list[str]:
    """The attributes that `cls.__init__` sets twice to something that draws initial weights (`self.out_proj =
    nn.Linear(d_out, d_out)` written twice, learners round rl13): the second draw gives the module other weights than
    the notebook's seed gives, so its printed values differ though forward is right. In order of the second
    assignment; [] where there is none or no such class."""
    node = method_node(sub, cls, "__init__")
    seen: set[str] = set()
    twice: list[str] = []
    for st in ast.walk(node) if node is not None else ():
        if not (isinstance(st, ast.Assign) and isinstance(st.value, ast.Call)
                and any(w in ast.unparse(st.value.func) or w in ast.unparse(st.value) for w in _DRAWS)):
            continue
        for t in st.targets:
            if isinstance(t, ast.Attribute) and isinstance(t.value, ast.Name) and t.value.id == "self":
                if t.attr in seen and t.attr not in twice:
                    twice.append(t.attr)
                seen.add(t.attr)
    return twice


def _stored(node) -> set[str]:
    """The names a statement binds anywhere inside it (assignment targets, loop and `with` variables, ...)."""
    return {n.id for n in ast.walk(node) if isinstance(n, ast.Name) and isinstance(n.ctx, (ast.Store, ast.Del))}


def top_level_reads(sub, classes) -> dict[str, list[tuple[str, list[str]]]]:
    """For each class of `classes`: (method, names) for each of its methods whose body reads a variable that the
    submission's top level sets (`inputs = torch.tensor(...)`, `d_in, d_out = 3, 2`, `mask = ...` in a notebook's
    exploration cells) and that the method neither takes nor sets itself: it then works on the file's own example
    only. Names bound by a top-level def, class or import, and UPPER_CASE constants (a lab's DROP_RATE), are not
    counted; a default argument's value is not part of the body. The source is parsed once for all classes."""
    data: set[str] = set()
    other: set[str] = set()
    nodes: dict[str, ast.ClassDef] = {}
    for st in _top_level(sub):
        if isinstance(st, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
            other.add(st.name)
            if isinstance(st, ast.ClassDef) and st.name in classes:
                nodes[st.name] = st  # the last definition, as when run
        elif isinstance(st, (ast.Import, ast.ImportFrom)):
            other.update((a.asname or a.name).split(".")[0] for a in st.names)
        else:
            data |= _stored(st)
    data = {n for n in data - other if not n.isupper() and n != "_"}
    out: dict[str, list[tuple[str, list[str]]]] = {}
    for cls, node in nodes.items():
        for f in node.body:
            if not isinstance(f, (ast.FunctionDef, ast.AsyncFunctionDef)):
                continue
            own = {a.arg for a in ast.walk(f.args) if isinstance(a, ast.arg)}
            names: list[ast.Name] = []
            for st in f.body:  # one walk of the body: what it binds (names, arguments of lambdas) and what it reads
                for n in ast.walk(st):
                    if isinstance(n, ast.Name):
                        if isinstance(n.ctx, (ast.Store, ast.Del)):
                            own.add(n.id)
                        elif isinstance(n.ctx, ast.Load):
                            names.append(n)
                    elif isinstance(n, ast.arg):
                        own.add(n.arg)
            outside = data - own
            loads = sorted((n.lineno, n.col_offset, n.id) for n in names if n.id in outside)
            reads = list(dict.fromkeys(name for _line, _col, name in loads))
            if reads:
                out.setdefault(cls, []).append((f.name, reads))
    return out
