"""An assignment is a folder under assignments/ with an assignment.toml; the engine reads nothing else about it."""
from __future__ import annotations

import copy
import re
import tomllib
from dataclasses import dataclass, field
from pathlib import Path
from typing import Callable

from .checks import VISIBILITIES
from .errors import AssignmentError
from .messages import Message
from .sandbox import Limits

PROJECT_ROOT = Path(__file__).resolve().parent.parent
ASSIGNMENTS = PROJECT_ROOT / "assignments"


@dataclass(frozen=True)
class Question:
    id: str
    title: str
    names: tuple[str, ...]  # what the student must define for it
    points: float | None = None  # the question's total when graded with its hidden checks; None: its checks' sum
    # The arguments its class's __init__ takes first, in order (after self): recognition only (for_source), for a
    # file that defines too few of the assignment's names to tell it by them.
    init: tuple[str, ...] = ()


@dataclass(frozen=True)
class Assignment:
    name: str
    title: str
    dir: Path
    files: tuple[str, ...]  # accepted submission file names, e.g. attention.py, attention.ipynb
    questions: tuple[Question, ...]
    public_dir: Path
    hidden_dir: Path
    hidden_visibility: str
    private: tuple[Path, ...]  # folders the worker must not be able to read
    limits: Limits = field(default_factory=Limits)
    options: dict = field(default_factory=dict)
    aliases: dict = field(default_factory=dict)  # another accepted name -> the name the questions use
    # Questions whose checks run after every other question's (the results keep the checks' own order): the
    # attention lab's wrapper, whose checks may send the grader's stand-in heads into the worker (proxy.taint).
    run_last: tuple[str, ...] = ()
    ko: dict = field(default_factory=dict)  # ko.toml: Korean title, question titles, check names

    def title_in(self, lang: str) -> str:
        return self.ko.get("title", self.title) if lang == "ko" else self.title

    def question_labels(self, lang: str) -> dict[str, str]:
        """How the terminal names each question: its id in English; in Korean its Korean title (ko.toml), up to
        the first colon (the part that names it), or the id where the assignment has no Korean title."""
        if lang != "ko":
            return {}
        titles = self.ko.get("questions", {})
        return {q.id: str(titles[q.id]).split(": ")[0].strip() for q in self.questions if titles.get(q.id)}

    def check_name_ko(self, function: str) -> str:
        return str(self.ko.get("checks", {}).get(function, ""))

    @property
    def question_ids(self) -> list[str]:
        return [q.id for q in self.questions]

    @property
    def graded_names(self) -> frozenset[str]:
        """Every name the checks look for; a rename hint never suggests turning one of them into another."""
        return frozenset(n for q in self.questions for n in q.names)

    def check_dirs(self, public_only: bool) -> list[Path]:
        return [self.public_dir] if public_only else [self.public_dir, self.hidden_dir]


def names() -> list[str]:
    return sorted(p.name for p in ASSIGNMENTS.iterdir() if (p / "assignment.toml").is_file()) \
        if ASSIGNMENTS.is_dir() else []


_PARSED: dict[str, tuple[tuple[int, int], dict]] = {}  # path -> ((mtime_ns, size), parsed TOML)


def _toml(path: Path) -> dict:
    """A TOML file's contents, parsed once per version of the file: `grade batch` recognises each submission by
    comparing it with every assignment, and pure-Python TOML parsing took a millisecond per file each time."""
    st = path.stat()
    key = (st.st_mtime_ns, st.st_size)
    hit = _PARSED.get(str(path))
    if hit is None or hit[0] != key:
        hit = (key, tomllib.loads(path.read_text(encoding="utf-8")))
        _PARSED[str(path)] = hit
    return copy.deepcopy(hit[1])  # callers get their own copy to change


def load(name: str) -> Assignment:
    folder = ASSIGNMENTS / name
    cfg_path = folder / "assignment.toml"
    if not cfg_path.is_file():
        from .messages import near_miss
        known = ', '.join(names()) or 'none'
        guess = near_miss(name, names()) if names() else None
        raise AssignmentError(Message(
            f"unknown assignment {name!r}" + (f" (did you mean {guess}?)" if guess else "") + f"; available: {known}",
            f"알 수 없는 과제 {name!r}" + (f" ({guess}인가요?)" if guess else "") + f"; 있는 과제: {known}"))
    try:
        cfg = _toml(cfg_path)
        questions = tuple(Question(q["id"], q.get("title", q["id"]), tuple(q.get("names", [q["id"]])),
                                   float(q["points"]) if "points" in q else None, tuple(q.get("init", ())))
                          for q in cfg["questions"])
        vis = cfg.get("hidden_visibility", "after_published")
        if vis not in VISIBILITIES:
            raise ValueError(f"hidden_visibility must be one of {VISIBILITIES}")
        limits = Limits(**cfg.get("limits", {}))
        return Assignment(
            name=cfg.get("name", name), title=cfg.get("title", name), dir=folder,
            files=tuple(cfg["files"]), questions=questions,
            public_dir=folder / cfg.get("public", "public"), hidden_dir=folder / cfg.get("hidden", "hidden"),
            hidden_visibility=vis,
            private=tuple((folder / p).resolve() for p in cfg.get("private", ["hidden"])),
            limits=limits, options=dict(cfg.get("options", {})), aliases=dict(cfg.get("aliases", {})),
            run_last=tuple(cfg.get("run_last", ())),
            ko=_toml(folder / "ko.toml") if (folder / "ko.toml").is_file() else {})
    except (KeyError, TypeError, ValueError, tomllib.TOMLDecodeError) as e:
        raise AssignmentError(f"{cfg_path}: {e}") from None


def for_file(filename: str, load: Callable[[str], Assignment] = load) -> Assignment | None:
    """The assignment whose accepted file names include `filename` (how `grade check` recognises a file).
    load: how an assignment is loaded by name (a caller recognising many files passes a cached one)."""
    for n in names():
        a = load(n)
        if filename in a.files:
            return a
    return None


_DEFINED = re.compile(r"^(?:class|def)\s+([A-Za-z_]\w*)", re.MULTILINE)


def _key(name: str) -> str:
    return name.replace("_", "").lower()


def _near(a: str, b: str) -> bool:
    """Names equal once case and underscores are set aside (SelfAttentionV1, selfattention_v1), or one swap of
    two neighbouring letters apart (CasualAttention, MutliHeadAttentionWrapper): how learners miss a name."""
    if a == b:
        return True
    if len(a) != len(b) or len(a) < 8:
        return False
    diff = [i for i in range(len(a)) if a[i] != b[i]]
    return len(diff) == 2 and diff[1] == diff[0] + 1 and a[diff[0]] == b[diff[1]] and a[diff[1]] == b[diff[0]]


def for_source(path: Path, load: Callable[[str], Assignment] = load) -> Assignment | None:
    """The assignment a file answers, from what it defines at the top level (a file named after the student).

    The names are read with a pattern, not a parser, so a file with a syntax error is still recognised. An
    assignment counts when at least half of its questions have a name defined (as written, or missed as learners
    miss them: case, underscores, two letters swapped; or under a name the assignment accepts, its aliases), and
    a larger share of them than of any other assignment's (of equal shares, more questions). By question, not by
    name: a lab file with the five classes and none of the fourteen step functions (they are written inline in a
    notebook) is the lab's."""
    from .source import read  # reading never runs the file
    try:
        cells = [c.code for c in read(path).cells]
    except Exception:  # noqa: BLE001 - unreadable files are reported when they are graded
        return None
    text = "\n".join(cells)
    defined = {_key(n) for n in _DEFINED.findall(text)}
    scored = []
    for n in names():
        a = load(n)
        # A question's names and the other names the assignment accepts for them (mha_intermediates' class as the
        # blog's MultiHeadAttention: without it a class of such files was taken for the midterm and got 19/100).
        # An alias counts only beside a name of the assignment's own: a file with CausalAttention and the book's
        # MultiHeadAttention(d_in, d_out, context_length, dropout, num_heads) had 1 of mha_intermediates' 2
        # questions through the alias alone, and was graded as that lab (learners round rl14); the blog's files
        # define ScaledDotProductAttention too.
        own = any(_near(_key(x), d) for q in a.questions for x in q.names for d in defined)
        asked = {frozenset(_key(x) for x in (*q.names, *(al for al, to in a.aliases.items()
                                                          if to in q.names and own)))
                 for q in a.questions if q.names}
        if asked:
            hit = sum(1 for q in asked if any(_near(x, d) for x in q for d in defined))
            scored.append(((hit / len(asked), hit), a))
    # The largest share of an assignment's questions; of equal shares, more questions (the midterm's answer has all
    # 3 of its questions, and the 2 of mha_intermediates through its alias and ScaledDotProductAttention).
    scored.sort(key=lambda t: (-t[0][0], -t[0][1]))
    if not scored or scored[0][0][0] < 0.5 or (len(scored) > 1 and scored[1][0] == scored[0][0]):
        return _by_init(cells, [a for _share, a in scored] or [load(n) for n in names()])
    return scored[0][1]


def _by_init(cells: list[str], assignments: list[Assignment]) -> Assignment | None:
    """The one assignment with a question whose class the file defines (its name, or missed as learners miss it)
    taking that question's `init` arguments first, in order; None where none or several do. A file with the book's
    MultiHeadAttention(d_in, d_out, context_length, dropout, num_heads) and no other class was refused ("Cannot tell
    which assignment"): 1 of the attention lab's 6 questions, and 1 of the midterm's 3 (whose MultiHeadAttention
    takes d_in, d_out and keyword-only arguments), learners' round, session 16."""
    import ast
    inits: dict[str, list[str]] = {}  # a class's name (_key) -> its __init__'s arguments after self, as written
    for code in cells:
        try:
            tree = ast.parse(code)
        except (SyntaxError, ValueError, MemoryError, RecursionError):
            continue
        for node in tree.body:
            if isinstance(node, ast.ClassDef):
                init = next((f for f in node.body if isinstance(f, ast.FunctionDef) and f.name == "__init__"), None)
                if init is not None:
                    inits[_key(node.name)] = [a.arg for a in (*init.args.posonlyargs, *init.args.args)][1:]
    found = [a for a in assignments
             if any(q.init and any(_near(_key(x), c) and params[:len(q.init)] == list(q.init)
                                   for x in q.names for c, params in inits.items())
                    for q in a.questions)]
    return found[0] if len(found) == 1 else None


def recognise(path: Path, load: Callable[[str], Assignment] = load) -> Assignment | None:
    """By file name (attention.ipynb), else by the names the file defines."""
    return for_file(path.name, load) or for_source(path, load)


def cached_loader() -> Callable[[str], Assignment]:
    """load(), each assignment loaded once (on first use): for recognising a folder of many files, where load()
    per file and assignment took most of a second for 200 files."""
    seen: dict[str, Assignment] = {}

    def get(name: str) -> Assignment:
        if name not in seen:
            seen[name] = load(name)
        return seen[name]
    return get
