"""Near-identical submissions: winnowing fingerprints (as MOSS and copydetect do) over normalised Python tokens.

Names, literals, comments and layout are normalised away, so renaming variables or reformatting does not hide a
copy. Fingerprints of the code everyone was given (the skeleton and the notebook's given cells) are removed from
every submission first, so two untouched skeletons share nothing.
"""
from __future__ import annotations

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


def tokens(code: str, cell: int = 0) -> list[Token]:
    """Normalised tokens of one cell; code that Python cannot tokenize (a syntax error) falls back to a regex."""
    out: list[Token] = []
    try:
        for t in tokenize.generate_tokens(io.StringIO(code).readline):
            if t.type in _SKIP or t.type in (getattr(tokenize, "FSTRING_MIDDLE", -1),
                                             getattr(tokenize, "FSTRING_END", -1)):
                continue
            if t.string in _NO_OPS and t.type in (tokenize.NAME, tokenize.OP):
                continue
            out.append(Token(_normalise(t.string, t.type), cell, t.start[0]))
        return out
    except Exception:  # noqa: BLE001 - a syntax error, or text too odd for the tokenizer: never the caller's crash
        out = []
    for lineno, line in enumerate(code.splitlines(), start=1):
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
    toks = [t for i, code in enumerate(cells) for t in tokens(code, i)]
    grams = [int.from_bytes(hashlib.blake2b(" ".join(t.text for t in toks[i:i + K]).encode(), digest_size=8)
                            .digest(), "big") for i in range(len(toks) - K + 1)]
    fp = Fingerprints(tokens=toks)
    picked = set()
    for w in range(max(0, len(grams) - WINDOW + 1) or (1 if grams else 0)):
        window = grams[w:w + WINDOW]
        j = min(range(len(window)), key=lambda x: (window[x], -x))  # rightmost minimum, as in the paper
        picked.add(w + j)
    for i in sorted(picked):
        fp.hashes.setdefault(grams[i], []).append(i)
    # Every position of a selected hash, so highlighting shows each place the shared code occurs.
    for i, g in enumerate(grams):
        if g in fp.hashes and i not in fp.hashes[g]:
            fp.hashes[g].append(i)
    return fp


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
