"""Near-identical submissions: winnowing fingerprints (as MOSS and copydetect do) over normalised Python tokens.

Names, literals, comments and layout are normalised away, so renaming variables or reformatting does not hide a
copy. Fingerprints of the code everyone was given (the skeleton and the notebook's given cells) are removed from
every submission first, so two untouched skeletons share nothing.
"""
from __future__ import annotations

import ast
import hashlib
import io
import keyword
import re
import tokenize
from dataclasses import dataclass, field
from itertools import combinations

K = 25  # tokens per k-gram: shorter runs are noise (copydetect's default noise threshold)
WINDOW = 6  # a shared run of K + WINDOW - 1 = 30 tokens is always detected
THRESHOLD = 0.8  # Dice coefficient of the two fingerprint sets from which a pair is reported
MAX_PLACES = 256  # positions kept per fingerprint for highlighting
MAX_TOKENS = 200_000  # of a submission, compared (a lab's answer has a few thousand; 200,000 take about 3 s)
MIN_FINGERPRINTS = 8  # a submission with fewer of its own is too small to call a copy of anything
_FALLBACK = re.compile(r"#[^\n]*|[A-Za-z_]\w*|\d[\w.]*|\"(?:\\.|[^\"\\\n])*\"|'(?:\\.|[^'\\\n])*'|\S")
_SKIP = {tokenize.COMMENT, tokenize.NL, tokenize.NEWLINE, tokenize.INDENT, tokenize.DEDENT,
         tokenize.ENCODING, tokenize.ENDMARKER}
# Tokens that change nothing a program does, dropped like layout: a `pass` after every statement (or `;`
# between them) otherwise breaks every k-gram of a copied file (seen: a padded copy went unreported).
_NO_OPS = {"pass", ";"}


@dataclass(frozen=True)
class Token:
    text: str  # the normalised token: a keyword or operator as is, any name "V", any number "N", any string "S"
    cell: int
    line: int  # 1-based, within its cell


@dataclass
class Fingerprints:
    hashes: dict[int, list[int]] = field(default_factory=dict)  # hash -> start indices of its k-grams
    tokens: list[Token] = field(default_factory=list)

    def lines(self, shared: set[int]) -> set[tuple[int, int]]:
        """(cell, line) pairs covered by a k-gram whose fingerprint is in `shared`, for highlighting."""
        out: set[tuple[int, int]] = set()
        for h in shared:
            for start in self.hashes.get(h, []):
                out.update((t.cell, t.line) for t in self.tokens[start:start + K])
        return out


def _normalise(text: str, kind: int) -> str:
    if kind == tokenize.NAME:
        return text if keyword.iskeyword(text) else "V"
    if kind == tokenize.NUMBER:
        return "N"
    if kind in (tokenize.STRING, getattr(tokenize, "FSTRING_START", -1)):
        return "S"
    return text


def _stored(target: ast.AST) -> list[ast.AST] | None:
    """The names and attributes an assignment target binds (`a`, `self.a`, `a, b`), None for any other target
    (a subscript: `x[i] = ...` changes a value something else may hold)."""
    if isinstance(target, (ast.Name, ast.Attribute)):
        return [target]
    if isinstance(target, ast.Starred):
        return _stored(target.value)
    if isinstance(target, (ast.Tuple, ast.List)):
        out: list[ast.AST] = []
        for t in target.elts:
            got = _stored(t)
            if got is None:
                return None
            out += got
        return out
    return None


# Builtins whose call changes nothing (where the file does not bind the name to something else): a statement that
# only calls them, on arguments that call nothing else, does nothing, as `len(x)` or `print(end="")` after every
# statement (red team s19 left: a copy padded so went unreported). A print() with nothing to print and no file=
# writes an empty line at most; one that prints something is kept (what it prints is the student's).
_PURE_BUILTINS = frozenset({"len", "abs", "int", "float", "str", "bool", "repr", "id", "type", "isinstance",
                            "issubclass", "hash", "min", "max", "round", "ord", "chr", "hex", "oct", "bin",
                            "callable", "tuple", "list", "dict", "set", "frozenset", "range", "divmod", "format",
                            "ascii"})


def _bound_names(tree: ast.AST) -> set[str]:
    """Every name the code binds anywhere (assigned, defined, imported, a parameter): not the builtin then."""
    out: set[str] = set()
    for n in ast.walk(tree):
        if isinstance(n, ast.Name) and isinstance(n.ctx, (ast.Store, ast.Del)):
            out.add(n.id)
        elif isinstance(n, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
            out.add(n.name)
        elif isinstance(n, ast.alias):
            out.add((n.asname or n.name).split(".")[0])
        elif isinstance(n, ast.arg):
            out.add(n.arg)
        elif isinstance(n, (ast.Global, ast.Nonlocal)):
            out.update(n.names)
        elif isinstance(n, ast.ExceptHandler) and n.name:
            out.add(n.name)
        elif isinstance(n, (ast.MatchAs, ast.MatchStar)) and n.name:
            out.add(n.name)
    return out


def _inert(node: ast.AST, rebound: set[str]) -> bool:
    """Whether this node of an expression statement does nothing by itself: anything but a call, an await, a yield
    or a walrus, or a call of a pure builtin (or of a print() that prints nothing) that the file does not rebind."""
    if isinstance(node, (ast.Await, ast.Yield, ast.YieldFrom, ast.NamedExpr)):
        return False
    if not isinstance(node, ast.Call):
        return True
    f = node.func
    if not isinstance(f, ast.Name) or f.id in rebound:
        return False
    if f.id == "print":  # nothing to print, on standard output: an empty line at most
        return not node.args and all(k.arg in ("end", "sep", "flush") for k in node.keywords) and all(
            isinstance(k.value, ast.Constant) and (k.value.value is None or type(k.value.value) is str)
            for k in node.keywords if k.arg in ("end", "sep"))
    return f.id in _PURE_BUILTINS


# A statement written the same way this many times, and as one statement in REPEATED_SHARE of the code's, is
# padding when it binds nothing and leaves nothing: `assert True`, `if 0: pass`, `print("", end="")` or
# `sorted(())` after every statement broke every k-gram of a copy as `pass` did (red team, round 22: each scored
# about 0.05 against the file it was copied from). Only repetition tells them: whatever one such statement does
# once, it is not the student's code many times over.
REPEATED, REPEATED_SHARE = 5, 5
_LEAVES = (ast.Return, ast.Raise, ast.Break, ast.Continue, ast.Yield, ast.YieldFrom, ast.Await, ast.NamedExpr,
           ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef, ast.Global, ast.Nonlocal)


def _repeated(tree: ast.AST) -> set[int]:
    """The ids of the statements of `tree` that are padding by repetition (REPEATED): each written alike at least
    REPEATED times and as one in REPEATED_SHARE of all statements, none of them binding a name or leaving its
    block (return, raise, break, ...)."""
    stmts = [n for n in ast.walk(tree) if isinstance(n, ast.stmt)]
    alike: dict[str, list[ast.stmt]] = {}
    for n in stmts:
        if not isinstance(n, (ast.Import, ast.ImportFrom)) and any(  # (the same import again binds the same)
                isinstance(x, _LEAVES) or isinstance(getattr(x, "ctx", None), (ast.Store, ast.Del))
                for x in ast.walk(n)):
            continue
        alike.setdefault(ast.dump(n), []).append(n)
    return {id(n) for same in alike.values() if len(same) >= REPEATED and len(same) * REPEATED_SHARE >= len(stmts)
            for n in same}


def _dead(code: str) -> list[tuple[tuple[int, int], tuple[int, int]]]:
    """(start, end) positions, as the tokenizer counts them, of statements that change nothing the code computes:
    an assignment none of whose names or attributes is ever read (`_u7 = 7`, `self._pad = x`; repeated until
    nothing more is dead, so a chain of them goes too), and an expression statement that calls nothing (`0`, `x`,
    a string). A copy with one of those after every statement broke every k-gram and shared nothing with the file
    it was copied from (red team s19); a `pass` after every statement was already dropped. [] where the code
    cannot be parsed (the tokens are then compared as they are)."""
    from .source import Unparsable, parse
    if len(code) > 512 * 1024:  # (source.MAX_CODE_CHARS: never an AST of more, here in the grader's process)
        return []
    try:
        tree = parse(code)
    except Unparsable:
        return []
    stmts = [n for n in ast.walk(tree) if isinstance(n, (ast.Assign, ast.AnnAssign, ast.AugAssign, ast.Expr))]
    dead: set[int] = set()
    rebound = _bound_names(tree)
    for n in stmts:  # an expression statement that calls nothing (no call, await or yield) does nothing
        if isinstance(n, ast.Expr) and all(_inert(x, rebound) for x in ast.walk(n.value)):
            dead.add(id(n))
    while True:
        read_names: set[str] = set()
        read_attrs: set[str] = set()
        strings: set[str] = set()  # getattr(self, "name") reads an attribute by its name
        stack: list[ast.AST] = [tree]
        while stack:
            node = stack.pop()
            if id(node) in dead:
                continue
            if isinstance(node, ast.Name) and not isinstance(node.ctx, ast.Store):
                read_names.add(node.id)
            elif isinstance(node, ast.Attribute) and not isinstance(node.ctx, ast.Store):
                read_attrs.add(node.attr)
            elif isinstance(node, ast.Constant) and isinstance(node.value, str):
                strings.add(node.value)
            elif isinstance(node, (ast.Global, ast.Nonlocal)):
                read_names.update(node.names)
            stack.extend(ast.iter_child_nodes(node))
        more = False
        for n in stmts:
            if id(n) in dead or isinstance(n, ast.Expr):
                continue
            targets = n.targets if isinstance(n, ast.Assign) else [n.target]
            bound = [b for t in targets for b in (_stored(t) or [None])]
            if not bound or None in bound:
                continue
            if any(b.id in read_names or b.id == "__all__" if isinstance(b, ast.Name)
                   else b.attr in read_attrs or b.attr in strings for b in bound):
                continue
            dead.add(id(n))
            more = True
        if not more:
            break
    dead.update(_repeated(tree))
    stmts += [n for n in ast.walk(tree) if id(n) in dead and not isinstance(n, (ast.Assign, ast.AnnAssign,
                                                                                   ast.AugAssign, ast.Expr))]
    lines = code.splitlines(keepends=True)

    def at(line: int, col: int) -> tuple[int, int]:  # the AST counts UTF-8 bytes in a line, the tokenizer characters
        text = lines[line - 1] if 0 < line <= len(lines) else ""
        return line, len(text.encode("utf-8")[:col].decode("utf-8", "ignore"))
    return sorted((at(n.lineno, n.col_offset), at(n.end_lineno or n.lineno, n.end_col_offset or 0))
                  for n in stmts if id(n) in dead)


def tokens(code: str, cell: int = 0, limit: int = MAX_TOKENS) -> list[Token]:
    """Normalised tokens of one cell (the first `limit`), without those of statements that do nothing (_dead);
    code that Python cannot tokenize (a syntax error) falls back to a regex."""
    out: list[Token] = []
    skip = _dead(code)
    k = 0
    try:
        for t in tokenize.generate_tokens(io.StringIO(code).readline):
            if len(out) >= limit:
                return out
            if t.type in _SKIP or t.type in (getattr(tokenize, "FSTRING_MIDDLE", -1),
                                             getattr(tokenize, "FSTRING_END", -1)):
                continue
            if t.string in _NO_OPS and t.type in (tokenize.NAME, tokenize.OP):
                continue
            while k < len(skip) and skip[k][1] <= t.start:
                k += 1
            if k < len(skip) and skip[k][0] <= t.start < skip[k][1]:
                continue
            out.append(Token(_normalise(t.string, t.type), cell, t.start[0]))
        return out
    except Exception:  # noqa: BLE001 - a syntax error, or text too odd for the tokenizer: never the caller's crash
        out = []
    for lineno, line in enumerate(code.splitlines(), start=1):
        if len(out) >= limit:
            break
        for m in _FALLBACK.finditer(line):
            s = m.group(0)
            if s.startswith("#") or s in _NO_OPS:
                continue
            kind = (tokenize.NAME if s[0].isalpha() or s[0] == "_" else tokenize.NUMBER if s[0].isdigit()
                    else tokenize.STRING if s[0] in "\"'" else tokenize.OP)
            out.append(Token(_normalise(s, kind), cell, lineno))
    return out


def fingerprint(cells: list[str]) -> Fingerprints:
    """Winnowing: hash every k-gram, keep the smallest hash of each window of WINDOW consecutive k-grams."""
    toks: list[Token] = []
    for i, code in enumerate(cells):
        toks += tokens(code, i, MAX_TOKENS - len(toks))
    grams = [int.from_bytes(hashlib.blake2b(" ".join(t.text for t in toks[i:i + K]).encode(), digest_size=8)
                            .digest(), "big") for i in range(len(toks) - K + 1)]
    fp = Fingerprints(tokens=toks)
    picked = set()
    for w in range(max(0, len(grams) - WINDOW + 1) or (1 if grams else 0)):
        window = grams[w:w + WINDOW]
        j = min(range(len(window)), key=lambda x: (window[x], -x))  # rightmost minimum, as in the paper
        picked.add(w + j)
    for i in sorted(picked):
        at = fp.hashes.setdefault(grams[i], [])
        if len(at) < MAX_PLACES:
            at.append(i)
    # Every position of a selected hash, so highlighting shows each place the shared code occurs: looked up in a
    # set (a list made a file of one repeated token quadratic: a 2 MB `[0, 0, ...]` held `grade report` for the
    # class over an hour), and at most MAX_PLACES of them (one hash of such a file is at a million places).
    seen = {g: set(at) for g, at in fp.hashes.items()}
    for i, g in enumerate(grams):
        at = seen.get(g)
        if at is not None and i not in at and len(at) < MAX_PLACES:
            at.add(i)
            fp.hashes[g].append(i)
    return fp


RUNS_STRINGS = {"exec", "eval", "compile", "__import__"}  # builtins that run (or load) code held in a string
LONG_STRING = 2000  # characters: a string that can hold a program


def hidden_code(code: str) -> str | None:
    """Where `code` runs code held in a string (exec, eval, compile) or carries a string long enough to be a
    program, in words ("exec(...) on line 12"); None if it does neither. Such code is not what the comparison
    reads: a copy inside exec(base64...) left its file nothing of its own to compare, and went unreported. A
    method of the same name (model.eval()) is not one of those builtins."""
    try:
        tree = ast.parse(code)
    except (SyntaxError, ValueError, MemoryError, RecursionError):
        return None
    for node in ast.walk(tree):
        if isinstance(node, ast.Call):
            f = node.func
            name = f.id if isinstance(f, ast.Name) else f.attr if isinstance(f, ast.Attribute) and \
                isinstance(f.value, ast.Name) and f.value.id in ("builtins", "__builtins__") else None
            if name in RUNS_STRINGS:
                return f"{name}(...) on line {node.lineno}"
        elif isinstance(node, ast.Constant) and isinstance(node.value, (str, bytes)) \
                and len(node.value) > LONG_STRING:
            return f"a string of {len(node.value):,} characters on line {node.lineno}"
    return None


@dataclass(frozen=True)
class Pair:
    a: str
    b: str
    score: float  # Dice coefficient of the students' own fingerprints (given code removed): 1.0 = same code
    shared: int  # fingerprints in common
    own_a: int
    own_b: int


def similar_pairs(codes: dict[str, list[str]], base: list[str], threshold: float = THRESHOLD) \
        -> tuple[list[Pair], dict[str, Fingerprints], set[int]]:
    """Pairs of students whose own code (base subtracted) scores at least `threshold`, most similar first;
    also each student's fingerprints and the base hashes, for side-by-side highlighting."""
    base_hashes = set(fingerprint(base).hashes)
    fps = {sid: fingerprint(cells) for sid, cells in codes.items()}
    own = {sid: set(fp.hashes) - base_hashes for sid, fp in fps.items()}
    pairs = []
    for a, b in combinations(sorted(own), 2):
        if len(own[a]) < MIN_FINGERPRINTS or len(own[b]) < MIN_FINGERPRINTS:
            continue
        shared = len(own[a] & own[b])
        score = 2 * shared / (len(own[a]) + len(own[b]))
        if score >= threshold:
            pairs.append(Pair(a, b, round(score, 4), shared, len(own[a]), len(own[b])))
    pairs.sort(key=lambda p: (-p.score, p.a, p.b))
    return pairs, fps, base_hashes
