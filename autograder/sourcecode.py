"""The submission's source read in the grader (parsed, never run): the last definition of a class or a method, and
two slips that only the source shows -- an assert of a (condition, message) tuple, which is always true, and a
masked_fill whose result is dropped (it returns a new tensor; masked_fill_ is the one that works in place)."""
from __future__ import annotations

import ast


def class_node(sub, cls: str):
    """The last top-level definition of class `cls` in the submission's source, or None."""
    found = None
    for cell in sub.source.cells:
        try:
            tree = ast.parse(cell.code)
        except (SyntaxError, ValueError, RecursionError, MemoryError):
            continue
        for node in tree.body:
            if isinstance(node, ast.ClassDef) and node.name == cls:
                found = node
    return found


def method_node(sub, cls: str, name: str):
    """The last definition of method `name` in class_node(sub, cls), or None."""
    node = class_node(sub, cls)
    found = [f for f in (node.body if node is not None else ()) if isinstance(f, ast.FunctionDef) and f.name == name]
    return found[-1] if found else None


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
        if cls:
            node = method_node(sub, cls, name)
        else:
            node = None
            for cell in sub.source.cells:
                try:
                    tree = ast.parse(cell.code)
                except (SyntaxError, ValueError, RecursionError, MemoryError):
                    continue
                node = next((n for n in tree.body if isinstance(n, ast.FunctionDef) and n.name == name), node)
        if node is None:
            continue
        for st in ast.walk(node):
            if isinstance(st, ast.Expr) and isinstance(st.value, ast.Call) \
                    and isinstance(st.value.func, ast.Attribute) and st.value.func.attr == "masked_fill":
                return st.lineno
    return None
