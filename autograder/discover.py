"""Find the submissions in a folder: one entry per student, a file or a folder holding one gradable file."""
from __future__ import annotations

import hashlib
import json
import os
import re
import unicodedata
from pathlib import Path
from typing import Any

from .assignment import PROJECT_ROOT, Assignment
from .errors import UsageError
from .messages import Message
from .jobs import Job
from .safetext import shown_name

GRADABLE = (".py", ".ipynb")
# Never the student's answer, even when it is the only .py in a folder: these would shadow real modules
# or configure pytest if anything imported them.
NOT_ANSWERS = {"conftest.py", "setup.py", "__init__.py", "torch.py", "numpy.py", "pytest.py"}
# Gradescope's "Export Submissions" download: one folder per submission plus this file naming their students.
EXPORT_METADATA = "submission_metadata.yml"


def student_id(name: str) -> str:
    """A name safe for a result file: ASCII letters, digits, `.`, `_`, `-`; the original stays in the result."""
    clean = re.sub(r"[^A-Za-z0-9._-]+", "_", shown_name(name)).strip("._") or "submission"
    return clean[:100]


_ASCII_LOWER = str.maketrans("ABCDEFGHIJKLMNOPQRSTUVWXYZ", "abcdefghijklmnopqrstuvwxyz")


def entry_id(name: str) -> str:
    """The one id of a name, wherever it comes from: a file's or folder's stem, a roster's `id`, an email's local
    part (exam.normalize_id, export_id and Gradescope's entry point all come here, so that a student has the same
    id in the roster, the papers, `grade batch` and the zip).

    An ASCII name is student_id() of it, as always. A name with any other character (Korean, accents, CP949 bytes
    from a Windows zip, read as shown_name reads them) keeps its ASCII letters and digits (or `student`) and gets
    a hash of the whole name, NFC-normalised with ASCII letters in lower case (ids compare ignoring ASCII case):
    student_id() alone made every Korean name `submission` and both `김a` and `이a` `a`, so two students shared a
    paper, and a file named submission.py was graded as the Korean student on the roster. Different names never
    share an id (48 bits of SHA-256); the same name written in NFD (a macOS zip) or CP949 keeps its id."""
    try:
        raw = os.fsencode(name)
    except UnicodeEncodeError:  # a surrogate that is not an escaped byte
        raw = name.encode("utf-8", "surrogatepass")
    text = None
    for enc in ("utf-8", "cp949"):
        try:
            text = raw.decode(enc)
            break
        except UnicodeDecodeError:
            continue
    if text is not None and text.isascii():
        sid = student_id(text)
        if sid != "submission" or text in ("submission", "submission.py", "submission.ipynb"):
            return sid
    # The hash is of the decoded text, NFC (so a CP949 or NFD spelling is the same name), or of the bytes where no
    # encoding reads them; nothing is dropped first (two names differing only by an invisible character differ).
    # Whether a name is ASCII is decided before NFC, which makes the Kelvin sign a K: `\u212aim` is not `kim`.
    key = unicodedata.normalize("NFC", text).translate(_ASCII_LOWER).encode("utf-8", "surrogatepass") \
        if text is not None else raw
    readable = re.sub(r"[^A-Za-z0-9._-]+", "_", shown_name(name)).strip("._-")[:80] or "student"
    return f"{readable}-{hashlib.sha256(key).hexdigest()[:12]}"


def unique_ids(wanted: list[tuple[str, bool]]) -> list[str]:
    """One distinct id per entry, from (the id it asks for, whether that id is its own name), in listing order.

    Every asked-for id is reserved: it goes to the entry whose own name it is (the first in order when several
    are, e.g. `a.py`, `a.ipynb`, a folder `a/`), else to the first asking; each other entry gets `<id>-N` with the
    smallest N >= 2 that nobody asks for and nobody has yet, so `kim_.py` (asking for `kim`, which `kim.py` owns)
    never takes `kim-2` from `kim-2.py`. Ids are compared ignoring case, so that results never overwrite each
    other on a case-insensitive disk (`A.py` sorts before `a.py` and keeps `A`; `a.py` gets `a-2`). The same
    entries always give the same ids: the callers sort them first."""
    key = str.lower  # ids are ASCII
    taken = {key(sid) for sid, _own in wanted}
    groups: dict[str, list[int]] = {}
    for i, (sid, _own) in enumerate(wanted):
        groups.setdefault(key(sid), []).append(i)
    out = [""] * len(wanted)
    for members in groups.values():
        first, *rest = sorted(members, key=lambda i: (not wanted[i][1], i))
        out[first] = wanted[first][0]
        for i in rest:  # "<id>-N" of two different ids never coincide: each group only skips reserved ids
            n = 2
            while key(f"{wanted[i][0]}-{n}") in taken:
                n += 1
            out[i] = f"{wanted[i][0]}-{n}"
            taken.add(key(out[i]))
    return out


def _code(path: Path) -> str | None:
    """The file's code (a notebook's code cells, joined), with the exam's EXAM VARIANT block left out and blank
    lines and trailing spaces dropped: what tells an untouched template or paper from a worked file. None where the
    file cannot be read."""
    from . import exam, source  # (exam imports what imports this module)
    try:
        text = "\n".join(c.code for c in source.read(path).cells)
    except Exception:  # noqa: BLE001 (any file the grader cannot read is not the untouched template)
        return None
    begin = text.find(exam.VARIANT_BEGIN)
    end = text.find(exam.VARIANT_END, begin + 1) if begin >= 0 else -1
    if begin >= 0 and end >= 0:
        text = text[:begin] + text[end:]
    return "\n".join(line.rstrip() for line in text.splitlines() if line.strip())


# Where the Gradescope zip, which ships no student_template/, keeps the digest of each template's code (gradescope.py
# writes it): assignments/<lab>/TEMPLATE_DIGESTS, {file name: sha256 of _code}.
TEMPLATE_DIGESTS = "template_digests.json"


def template_digest(path: Path) -> str | None:
    """The sha256 of `path`'s code as untouched compares it (None where it cannot be read)."""
    code = _code(path)
    return None if code is None else hashlib.sha256(code.encode("utf-8", "surrogatepass")).hexdigest()


def untouched(path: Path) -> bool:
    """Whether `path` is the bundle's own template of that name, unchanged (or an exam paper as handed out): its
    code is student_template/<name>'s, whatever its outputs, line endings or blank lines. Where the templates are
    not there (the Gradescope zip), by the digest of that code shipped with the assignment: without it the rule
    never applied on Gradescope, and a solved .py beside the notebook as handed out got 0/100 there where `grade
    batch` gave 100 (red team, round 18)."""
    template = PROJECT_ROOT / "student_template" / path.name
    if template.is_file():
        mine = _code(path)
        return mine is not None and mine == _code(template)
    known = set()
    for digests in sorted((PROJECT_ROOT / "assignments").glob(f"*/{TEMPLATE_DIGESTS}")):
        try:
            table = json.loads(digests.read_text(encoding="utf-8"))
        except (OSError, ValueError):
            continue
        if isinstance(table, dict) and isinstance(table.get(path.name), str):
            known.add(table[path.name])
    return bool(known) and template_digest(path) in known


_CLASS = re.compile(r"^class\s+([A-Za-z_]\w*)", re.MULTILINE)


def notebook_imports(nb: Path, py: Path) -> bool:
    """Whether the notebook `nb` takes its code from the module `py` beside it (`from attention import
    CausalAttention`, `import attention`: Jupyter finds it in the notebook's folder) and defines no class of its own
    that `py` lacks (then the notebook holds answers too, and which file is graded stays the modified time's call).
    A module that a `%%writefile` cell of the notebook writes is the notebook's own. Read, never run."""
    from . import source  # (source imports what imports this module)
    try:
        cells = source.read(nb).cells
        py_text = "\n".join(c.code for c in source.read(py).cells)
    except Exception:  # noqa: BLE001 (a file the grader cannot read takes no part in the choice)
        return False
    mod = re.escape(py.stem)
    if nb.suffix != ".ipynb" or py.suffix != ".py" or not py.stem.isidentifier() or any(c.module == py.stem for c in cells):
        return False
    code = "\n".join(c.code for c in cells if c.module is None)
    if not re.search(rf"^[ \t]*(?:from[ \t]+{mod}[ \t]+import\b|import[ \t]+{mod}\b)", code, re.MULTILINE):
        return False
    return not set(_CLASS.findall(code)) - set(_CLASS.findall(py_text))


def newer_of_pair(paths: list[Path]) -> tuple[Path, Message] | None:
    """For a .py and an .ipynb side by side (the bundle ships both), the one the student worked on: the more
    recently modified, unless that one is the untouched template and the other is not. None when `paths` is not
    exactly such a pair."""
    if len(paths) != 2 or {p.suffix for p in paths} != {".py", ".ipynb"}:
        return None
    py, nb = sorted(paths, key=lambda p: p.suffix != ".py")
    if notebook_imports(nb, py) and not untouched(py):
        # Learners' round rl14: a notebook whose cells run `from attention import SelfAttention_v1` of the
        # attention.py beside it (Jupyter puts the notebook's folder on sys.path) keeps its classes in the .py; the
        # notebook, modified last, was graded alone, every import failed, and a 57/100 answer got 0/100.
        new, old, mod = shown_name(py.name), shown_name(nb.name), shown_name(py.stem)
        return py, Message(
            f"Graded {new}, not {old}: both were there and {old} imports its code from {new} (`from {mod} import "
            f"...`), so the classes are in {new}. Submit only one to avoid doubt.",
            f"{old}이(가) 아니라 {new}을(를) 채점했습니다: 두 파일이 모두 있었고 {old}은(는) 코드를 {new}에서 "
            f"가져옵니다 (`from {mod} import ...`). 그래서 클래스는 {new}에 있습니다. 헷갈리지 않도록 하나만 "
            "제출하세요.")
    # On a tie (copied together) the notebook wins: it is the lab's main format.
    newer, older = sorted(paths, key=lambda p: (p.stat().st_mtime_ns, p.suffix == ".ipynb"), reverse=True)
    if untouched(newer) and not untouched(older):
        # Variants round 3: a solved .py beside the bundle's notebook as handed out, uploaded together (a tie) or
        # the notebook touched last, graded the notebook: 0/100 for a correct answer.
        new, old = shown_name(older.name), shown_name(newer.name)
        return older, Message(
            f"Graded {new}, not {old}: both were there and {old} is the template as handed out, unchanged. "
            "Submit only one to avoid doubt.",
            f"{old}이(가) 아니라 {new}을(를) 채점했습니다: 두 파일이 모두 있었고 {old}은(는) 받은 그대로의 "
            "템플릿입니다. 헷갈리지 않도록 하나만 제출하세요.")
    new, old = shown_name(newer.name), shown_name(older.name)  # the names may hold escapes or odd bytes
    return newer, Message(
        f"Graded {new}, not {old}: both were there and {new} was modified more recently "
        f"(the one you worked on). Submit only one to avoid doubt.",
        f"{old}이(가) 아니라 {new}을(를) 채점했습니다: 두 파일이 모두 있었고 {new}이(가) 더 "
        "최근에 수정되었습니다 (작업한 파일). 헷갈리지 않도록 하나만 제출하세요.")


def pick_file(folder: Path, assignment: Assignment) -> tuple[Path | None, Message | None]:
    """The file to grade in a submission folder, or an explanation of why there is none."""
    path, err, _note = choose_file(folder, assignment)
    return path, err


def choose_file(folder: Path, assignment: Assignment) -> tuple[Path | None, Message | None, Message | None]:
    """Like pick_file, plus a note saying how the file was chosen when there was a choice."""
    files = _gradable(folder)
    named = [p for p in files if p.name in assignment.files]
    if len(named) == 1:
        if untouched(named[0]):  # the template as handed out, beside the student's work under a name of their own
            worked = [p for p in files if p not in named and p.name not in NOT_ANSWERS
                      and not p.name.startswith("test_") and not untouched(p)]
            if len(worked) == 1:
                new, old = shown_name(str(worked[0].relative_to(folder))), shown_name(named[0].name)
                return worked[0], None, Message(
                    f"Graded {new}, not {old}: {old} is the template as handed out, unchanged, and {new} is the "
                    f"only other code file. Name your work {' or '.join(assignment.files)} (and submit only that "
                    "file) to avoid doubt.",
                    f"{old}이(가) 아니라 {new}을(를) 채점했습니다: {old}은(는) 받은 그대로의 템플릿이고 {new}이(가) "
                    f"유일한 다른 코드 파일입니다. 헷갈리지 않도록 작업한 파일 이름을 {' 또는 '.join(assignment.files)}"
                    "(으)로 하고 그 파일만 제출하세요.")
        return named[0], None, None
    pair = newer_of_pair(named)
    if pair is not None:
        return pair[0], None, pair[1]
    others = [p for p in files if p.name not in NOT_ANSWERS and not p.name.startswith("test_")]
    if not named and len(others) == 2 and {p.suffix for p in others} == {".py", ".ipynb"}:
        # Learners round rl14: a study notebook (03a.coding_attention.ipynb) whose cells import the classes from the
        # module beside it (`from SelfAttention import SelfAttention_v1`), neither named as the lab asks: "several
        # candidate files", 0/100. The module it imports holds the answers: it is graded, with a note.
        py, nb = sorted(others, key=lambda p: p.suffix != ".py")
        if notebook_imports(nb, py) and not untouched(py):
            new, old, mod = (shown_name(str(p.relative_to(folder))) for p in (py, nb, py.with_suffix("")))
            return py, None, Message(
                f"Graded {new}, not {old}: neither is named {' or '.join(assignment.files)}, and {old} imports its "
                f"code from {new} (`from {shown_name(py.stem)} import ...`), so the classes are in {new}. Name it "
                f"{assignment.files[0]} to avoid doubt.",
                f"{old}이(가) 아니라 {new}을(를) 채점했습니다: 어느 파일도 {' 또는 '.join(assignment.files)} 이름이 "
                f"아니고, {old}은(는) 코드를 {new}에서 가져옵니다 (`from {shown_name(py.stem)} import ...`). 그래서 "
                f"클래스는 {new}에 있습니다. 헷갈리지 않도록 파일 이름을 {assignment.files[0]}(으)로 하세요.")
    path, err = _pick_other(folder, files, named, assignment)
    return path, err, None


def _pick_other(folder: Path, files: list[Path], named: list[Path],
                assignment: Assignment) -> tuple[Path | None, Message | None]:
    rel = lambda ps: ", ".join(shown_name(str(p.relative_to(folder))) for p in ps)  # noqa: E731
    if len(named) > 1:
        return None, Message(
            f"The submission holds several files the grader could grade ({rel(named)}); submit only one of "
            f"{' or '.join(assignment.files)}.",
            f"제출물에 채점할 수 있는 파일이 여러 개 있습니다 ({rel(named)}). {' 또는 '.join(assignment.files)} 중 "
            "하나만 제출하세요.")
    others = [p for p in files if p.name not in NOT_ANSWERS and not p.name.startswith("test_")]
    if len(others) == 1:
        return others[0], None
    if not others:
        return None, _why_none(folder, assignment)
    return None, Message(
        f"The submission holds several candidate files ({rel(others)}) and none is named "
        f"{' or '.join(assignment.files)}; rename the one to grade.",
        f"제출물에 후보 파일이 여러 개 있고({rel(others)}) {' 또는 '.join(assignment.files)}라는 이름의 파일이 "
        "없습니다. 채점할 파일의 이름을 바꾸세요.")


def _why_none(folder: Path, assignment: Assignment) -> Message:
    """Why a folder holds no file to grade, naming what was there instead: a file whose extension is not in lower
    case (`Attention.PY`), or a symbolic link (not followed). Both read "No .py or .ipynb file was found", which
    sent students looking for a file they had handed in."""
    expected_en, expected_ko = " or ".join(assignment.files), " 또는 ".join(assignment.files)
    near = [p for p in walk(folder) if p.suffix.lower() in GRADABLE
            and not any(part.startswith(".") or part == "__pycache__" for part in p.relative_to(folder).parts)]
    links = [p for p in near if p.is_symlink()]
    cased = [p for p in near if not p.is_symlink() and p.is_file() and p.suffix not in GRADABLE]
    rel = lambda p: shown_name(str(p.relative_to(folder)))  # noqa: E731
    if links:
        return Message(
            f"{rel(links[0])} is a symbolic link, and links are not followed (one could point at any file the "
            f"grader can read, such as another student's answer), so it was not read; submit the file itself, "
            f"named {expected_en}.",
            f"{rel(links[0])}은(는) 심볼릭 링크입니다. 링크는 따라가지 않으므로 (채점기가 읽을 수 있는 어떤 파일, "
            f"예를 들어 다른 학생의 답안을 가리킬 수도 있음) 읽지 않았습니다. 파일 자체를 {expected_ko} 이름으로 "
            "제출하세요.")
    if cased:
        p = cased[0]
        fixed = p.stem + p.suffix.lower()
        return Message(
            f"{rel(p)} ends in {shown_name(p.suffix)}, not {p.suffix.lower()}: only a lower-case extension is read "
            f"as a notebook or as Python code. Rename it to {shown_name(fixed)} (the grader expects "
            f"{expected_en}).",
            f"{rel(p)}의 확장자가 {p.suffix.lower()}이(가) 아니라 {shown_name(p.suffix)}입니다: 확장자는 소문자여야 "
            f"파이썬 코드나 노트북으로 읽습니다. 이름을 {shown_name(fixed)}(으)로 바꾸세요 ({expected_ko}이(가) "
            "필요합니다).")
    zips = [p for p in walk(folder) if p.suffix.lower() == ".zip" and p.is_file() and not p.is_symlink()
            and not any(part.startswith(".") for part in p.relative_to(folder).parts)]
    if zips:  # an archive is never opened (what is in it could be anything): said, as grade check says it
        return Message(
            f"{rel(zips[0])} is a zip archive, and archives are not opened: no .py or .ipynb file was found "
            f"beside it. Unzip it and submit the file itself, named {expected_en}.",
            f"{rel(zips[0])}은(는) zip 압축 파일이며 압축 파일은 열지 않습니다: 그 옆에서 .py나 .ipynb 파일을 찾지 "
            f"못했습니다. 압축을 풀고 파일 자체를 {expected_ko} 이름으로 제출하세요.")
    return Message(
        f"No .py or .ipynb file was found in the submission; expected {expected_en}.",
        f"제출물에서 .py나 .ipynb 파일을 찾지 못했습니다. {expected_ko}이(가) 필요합니다.")


MAX_DEPTH = 32  # folders inside a submission that are looked into: a student's work is never this deep


def walk(folder: Path) -> list[Path]:
    """Every entry under `folder`, sorted, as sorted(folder.rglob("*")) lists them (links listed, not followed),
    at most MAX_DEPTH folders down and without recursion: rglob recursed once per level, and one student's folder
    nested 1,000 deep (a zip upload) stopped `grade batch` for the whole class with a RecursionError and made the
    Gradescope entry point report the grader's own failure (red team s19). A folder that cannot be read is skipped."""
    out: list[Path] = []
    stack = [(folder, 1)]
    while stack:
        here, depth = stack.pop()
        try:
            with os.scandir(here) as it:
                found = [(e.name, e.is_dir(follow_symlinks=False)) for e in it]
        except OSError:
            continue
        for name, is_dir in found:
            out.append(here / name)
            if is_dir and depth < MAX_DEPTH:
                stack.append((here / name, depth + 1))
    return sorted(out)


def _gradable(folder: Path) -> list[Path]:
    return [p for p in walk(folder) if p.is_file() and not p.is_symlink() and p.suffix in GRADABLE
            and not any(part.startswith(".") or part == "__pycache__" for part in p.relative_to(folder).parts)]


# Each zip of a folder into a folder of its own, as the zip refusal offers it to be pasted in that folder: `./` so
# that a name beginning with `-` is no option of unzip's, .ZIP as well as .zip (red team s23).
UNZIP_EACH = ('for f in ./*.zip ./*.ZIP; do [ -e "$f" ] || continue; unzip -q -d "${f%.*}" "$f" && rm "$f"; done')


def recognise(root: Path, names: list[str], notes: list[Message] | None = None) -> Assignment:
    """The one assignment the submissions in `root` answer, recognised from their files as `grade check` does.

    Each entry backs every assignment its files are recognised as (a folder with an old exam paper beside the
    lab backs both). The assignment backed by the most entries wins if no other is backed as often and at most
    one entry in ten (or a single one) backs only others; those are named in `notes` (graded as the rest are,
    their results say what is missing). One student's stray file or wrong upload no longer refuses the whole
    batch (a red team's finding). Refuses (UsageError, with the fix) an empty folder, a folder where nothing is recognised, and
    one that really mixes assignments: grading with the wrong checks would give everyone 0 without a word."""
    from . import assignment as assignments
    entries = [e for e in sorted(root.iterdir()) if not e.name.startswith(".")
               and e.name not in (EXPORT_METADATA, "__pycache__") and not e.is_symlink()]
    if not entries:
        raise UsageError(Message(f"{root} is empty: there is nothing to grade.",
                                 f"{root} 폴더가 비어 있어 채점할 것이 없습니다."))
    load = assignments.cached_loader()
    votes: dict[str, set[str]] = {}
    for e in entries:
        files = [e] if e.is_file() and e.suffix in GRADABLE else _gradable(e) if e.is_dir() else []
        found = {a.name for a in (assignments.recognise(f, load) for f in files[:20]) if a is not None}
        if found:
            votes[e.name] = found
    hint_en = f"pass --assignment NAME (one of: {', '.join(names)})"
    hint_ko = f"--assignment NAME을 지정하세요 ({', '.join(names)} 중 하나)"
    zips = [e for e in entries if e.is_file() and e.suffix.lower() == ".zip"]
    if not votes and zips and len(zips) * 2 >= len(entries):  # an LMS download: one zip per student
        raise UsageError(Message(
            f"{len(zips)} of the {len(entries)} entries in {root} are zip archives (e.g. {shown_name(zips[0].name)}); "
            "the grader reads .py and .ipynb files, alone or in a folder. Unzip each into a folder of its own (in "
            f"{root.name}/: {UNZIP_EACH}) and grade again.",
            f"{root}의 항목 {len(entries)}개 중 {len(zips)}개가 zip 압축 파일입니다 (예: {shown_name(zips[0].name)}). "
            "채점기는 .py와 .ipynb 파일을 (그대로 또는 폴더 안에서) 읽습니다. 각각 따로 폴더에 압축을 풀고 "
            f"({root.name}/에서: {UNZIP_EACH}) 다시 "
            "채점하세요."))
    if not votes:
        raise UsageError(Message(
            f"Cannot tell which assignment the submissions in {root} answer (no file is named like "
            f"attention.py and none defines an assignment's classes); {hint_en}.",
            f"{root}의 제출물이 어느 과제인지 알 수 없습니다 (과제 파일 이름도 아니고 과제의 클래스도 정의하지 "
            f"않습니다). {hint_ko}."))
    backing: dict[str, int] = {}
    for found in votes.values():
        for n in found:
            backing[n] = backing.get(n, 0) + 1
    ranked = sorted(backing, key=lambda n: (-backing[n], n))
    top = ranked[0] if len(ranked) == 1 or backing[ranked[0]] > backing[ranked[1]] else ""
    odd = [entry for entry, found in votes.items() if top not in found]
    if not top or len(odd) >= backing[top] or len(odd) > max(1, len(votes) // 10):  # one in ten, or one
        seen: dict[str, list[str]] = {}
        for entry, found in votes.items():
            for n in found:
                seen.setdefault(n, []).append(entry)
        listed = "; ".join(f"{n}: {', '.join(v[:3])}{' ...' if len(v) > 3 else ''}" for n, v in sorted(seen.items()))
        raise UsageError(Message(
            f"The submissions in {root} mix assignments ({listed}). Put each assignment in its own folder, or "
            f"{hint_en} to grade them all as one.",
            f"{root}의 제출물에 여러 과제가 섞여 있습니다 ({listed}). 과제마다 폴더를 나누거나, 모두 한 과제로 "
            f"채점하려면 {hint_ko}."))
    if odd and notes is not None:
        shown = ", ".join(f"{shown_name(e)} ({'/'.join(sorted(votes[e]))})" for e in odd[:5]) + \
            (" ..." if len(odd) > 5 else "")
        notes.append(Message(f"{len(odd)} submission(s) look like another assignment and are graded as {top} like "
                             f"the rest: {shown}.",
                             f"제출물 {len(odd)}개는 다른 과제처럼 보이지만 나머지처럼 {top}(으)로 채점합니다: {shown}."))
    return assignments.load(top)


def find(root: Path, assignment: Assignment) -> list[Job]:
    """One Job per entry of `root` (hidden entries skipped); ids are unique and safe as file names."""
    return [job for job, _origin in entries(root, assignment)]


RESULTS_HEAD = b"student,submission,score,max_score,"  # scores.csv as grade batch writes it


def results_folder(entry: Path) -> bool:
    """Whether `entry` is a folder grade batch wrote results in: its scores.csv as grade batch writes it, and no
    code file. Put inside the submissions (--out submissions/results, as the refusal of --out submissions itself
    advises), it was graded as a student named "results" with 0/100 (a row in grades.csv for nobody) by any later
    run into another --out (red team, round 23). Read without following a link or blocking on a FIFO."""
    from .safetext import read_untrusted
    try:
        if entry.is_symlink() or not entry.is_dir():
            return False
    except OSError:
        return False
    head, _size = read_untrusted(str(entry / "scores.csv"), len(RESULTS_HEAD))
    return head == RESULTS_HEAD and not _gradable(entry)


def entries(root: Path, assignment: Assignment, skip: Path | None = None) -> list[tuple[Job, dict[str, Any]]]:
    """Like find(), with where each job came from: {"folder": entry name} plus, for a Gradescope export, the
    submitters and submission time from submission_metadata.yml (see export_id for how those jobs are named).
    skip: a folder that is not a student's (the results folder, when it was put inside the submissions)."""
    meta = read_export_metadata(root)
    out: list[tuple[Job, dict[str, Any]]] = []
    skipped = os.path.realpath(skip) if skip is not None else None
    listed = [e for e in sorted(root.iterdir())
              if not e.name.startswith(".") and e.name not in (EXPORT_METADATA, "__pycache__")
              and (skipped is None or os.path.realpath(e) != skipped) and not results_folder(e)]
    wanted: list[tuple[str, bool]] = []
    for entry in listed:
        info = meta.get(entry.name)
        own = entry.stem if entry.is_file() else entry.name
        sid = export_id(info) if info else ""
        # An export's id is its submitter's own name; else the entry's, when its stem is an id as it is.
        wanted.append((sid, True) if sid else (entry_id(own), entry_id(own) == own))
    for entry, sid in zip(listed, unique_ids(wanted)):
        info = meta.get(entry.name)
        shown = shown_name(entry.name)  # entry.name keeps the bytes (surrogateescape); people read this
        origin: dict[str, Any] = {"folder": shown, **(info or {})}
        if entry.is_symlink():  # it could point anywhere the grader may read (the reference, another student)
            out.append((Job(sid, None, Message(
                f"{shown} is a symbolic link; only regular files and folders are graded.",
                f"{shown}은(는) 심볼릭 링크입니다. 일반 파일과 폴더만 채점합니다.")), origin))
        elif entry.is_dir():
            path, err, note = choose_file(entry, assignment)
            out.append((Job(sid, path, err, note), origin))
        elif entry.suffix in GRADABLE and entry.is_file():  # not a FIFO or device that would block a read
            out.append((Job(sid, entry), origin))
        elif entry.suffix.lower() == ".zip" and entry.is_file():  # an LMS download: one zip per student
            out.append((Job(sid, None, Message(
                f"{shown} is a zip archive; the grader reads .py and .ipynb files, alone or in a folder. Unzip it into "
                f"a folder of its own ({shown_name(entry.stem)}/) in place of the zip, and grade again.",
                f"{shown}은(는) zip 압축 파일입니다. 채점기는 .py와 .ipynb 파일을 (그대로 또는 폴더 안에서) 읽습니다. "
                f"zip 대신 그 폴더({shown_name(entry.stem)}/)에 압축을 풀고 다시 채점하세요.")), origin))
        else:
            out.append((Job(sid, None, Message(
                f"{shown} is not a .py or .ipynb file and cannot be graded.",
                f"{shown}은(는) .py나 .ipynb 파일이 아니어서 채점할 수 없습니다.")), origin))
    return out


# ---------------------------------------------------------------------------------------------- Gradescope export

def _field(d: Any, key: str) -> Any:
    """Gradescope writes Ruby symbols (`:submitters:` reads as the key ":submitters"); accept plain keys too."""
    if not isinstance(d, dict):
        return None
    return d[key] if key in d else d.get(":" + key)


def _yaml_loader():
    import yaml

    class Loader(yaml.SafeLoader):
        """Safe loading that reads Ruby-tagged nodes (e.g. !ruby/hash:...) as plain data instead of failing."""

    def untagged(loader, _suffix, node):
        if isinstance(node, yaml.MappingNode):
            return loader.construct_mapping(node, deep=True)
        if isinstance(node, yaml.SequenceNode):
            return loader.construct_sequence(node, deep=True)
        return loader.construct_scalar(node)
    Loader.add_multi_constructor("!", untagged)
    Loader.add_multi_constructor("tag:", untagged)
    return yaml, Loader


def read_export_metadata(root: Path) -> dict[str, dict[str, Any]]:
    """submission_metadata.yml of a Gradescope export, as {folder: {"submitters": [{name, sid, email}],
    "created_at": str}}; {} when the folder is not an export."""
    path = root / EXPORT_METADATA
    if not path.is_file():
        return {}
    yaml, loader = _yaml_loader()
    try:
        data = yaml.load(path.read_text(encoding="utf-8"), Loader=loader) or {}
    except (OSError, UnicodeDecodeError, yaml.YAMLError) as e:
        raise UsageError(f"{path} could not be read ({e}); fix it, or remove it to name results by folder") \
            from None
    if not isinstance(data, dict):
        raise UsageError(f"{path} is not a mapping of submission folders to submitters")
    out: dict[str, dict[str, Any]] = {}
    for folder, sub in data.items():
        people = _field(sub, "submitters")
        submitters = [{k: "" if _field(p, k) is None else str(_field(p, k)) for k in ("name", "sid", "email")}
                      for p in (people if isinstance(people, list) else []) if isinstance(p, dict)]
        created = _field(sub, "created_at")
        out[str(folder)] = {"submitters": submitters, "created_at": "" if created is None else str(created)}
    return out


def export_id(info: dict[str, Any]) -> str:
    """How a Gradescope export names a result: per submitter the local part of the email (ASCII letters in lower
    case), else the student id (sid), each through entry_id (a Korean local part has the id its roster entry has),
    else the ASCII form of the name; group submissions join theirs with "+". "" when nobody is named.

    Email local parts are unique within one university and are what staff recognise; a clash (two domains)
    gets the usual "-2" suffix, and the folder and full submitter details stay in the result's origin."""
    ids = []
    for p in info.get("submitters", []):
        email, sid, name = p.get("email", ""), p.get("sid", ""), p.get("name", "")
        raw = email.split("@", 1)[0].translate(_ASCII_LOWER) if "@" in email else sid
        if raw.strip():
            ids.append(entry_id(raw.strip()))  # a Korean local part: the id its roster entry has
        elif name.strip() and student_id(name) != "submission":
            # A display name is not an account (two students may share one): only its ASCII form names a result,
            # as before; a name with none leaves the folder's name.
            ids.append(student_id(name))
    return "+".join(ids)[:100]
