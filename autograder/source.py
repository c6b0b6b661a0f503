"""Turn a submitted `.py` or `.ipynb` file into code cells, in the grader, without running anything."""
from __future__ import annotations

import ast
import json
import re
import sys
from dataclasses import dataclass, field
from pathlib import Path

from .errors import SubmissionFormatError
from .messages import Message

MAX_SOURCE_BYTES = 20 * 1024 * 1024  # notebooks with images can be large; code itself never is
# The code itself (a .py file, or a notebook's code cells together), in characters. The grader parses a submission's
# code in its own process, outside the submission's memory budget (a notebook cell's magics at read, a class's
# methods for a spelling hint, the exam audit, `grade report`), and Python's AST of code such as `a` on every line
# takes about 0.9 GB of memory per MB (measured): a 2 MB notebook cell took the grader's read() to 0.8 GB, so the
# 20 MB allowed before would have taken it near 18 GB, for over a minute (red team s15). A pasted tensor or printed
# output is what makes more.
MAX_CODE_CHARS = 512 * 1024  # ~0.5 GB of AST at the worst; a lab's whole code is some 30 KB
_MAGIC_LINE = re.compile(r"^(\s*)([%!]|\?\?|\?)")
_HELP_SUFFIX = re.compile(r"^\s*[\w.]+\?{1,2}\s*$")
_MAGIC_ASSIGN = re.compile(r"^(\s*)[A-Za-z_][\w.]*(\s*,\s*[A-Za-z_][\w.]*)*\s*=\s*[!%]")  # files = !ls
_TIME_LINE = re.compile(r"^(\s*)%time\s+(.*)$")  # `%time out = f(x)` runs the statement where it stands
_CELL_MAGICS_RUN_BODY = {"time", "capture"}  # IPython runs these cells' bodies in the notebook's namespace
_MODULE_NAME = re.compile(r"(?:\./)?([A-Za-z_][A-Za-z0-9_]*)\.py")


_RUN_LINE = re.compile(r"^(\s*)%run\s+(?:-i\s+)?(?:\./)?([A-Za-z_][A-Za-z0-9_]*)\.py\s*$")


def run_written(code: str, written: set[str]) -> str:
    """`%run NAME.py` lines of a cell, where an earlier `%%writefile NAME.py` cell wrote that file, as
    `from NAME import *`: what %run leaves in the notebook (the script's names) for a module of definitions (its
    `if __name__ == "__main__":` demo is not run). Other `%run` lines stay magics (see strip_magics)."""
    if "%run" not in code or not written:
        return code
    lines = code.splitlines()
    for k, line in enumerate(lines):
        m = _RUN_LINE.match(line)
        if m and m.group(2) in written:
            lines[k] = f"{m.group(1)}from {m.group(2)} import *  # grader: %run {m.group(2)}.py"
    return "\n".join(lines)


def writefile_module(code: str) -> tuple[str, bool, str] | None:
    """(module name, append, body) of a `%%writefile [-a] NAME.py` cell that writes a Python module into the
    notebook's own folder, which later cells can import (`from NAME import *`); None for any other cell (another
    file or folder, other options). The body keeps the magic's line, blank, so that line numbers are the cell's."""
    lines = code.splitlines()
    first = next((k for k, ln in enumerate(lines) if ln.strip()), None)
    if first is None or not lines[first].lstrip().startswith("%%writefile"):
        return None
    words = lines[first].split()
    if words[0] != "%%writefile":
        return None
    flags = [w for w in words[1:] if w.startswith("-")]
    names = [w for w in words[1:] if not w.startswith("-")]
    if len(names) != 1 or any(f not in ("-a", "--append") for f in flags):
        return None
    m = _MODULE_NAME.fullmatch(names[0])
    if m is None:
        return None
    return m.group(1), bool(flags), "\n" * (first + 1) + "\n".join(lines[first + 1:])


@dataclass(frozen=True)
class Cell:
    code: str
    label: str  # shown to students: "attention.py" or "attention.ipynb, cell 7"
    # A notebook's `%%writefile NAME.py` cell: its body is the module NAME (importable by the later cells, as
    # Jupyter makes it by writing the file into the notebook's folder), not code run in the notebook's namespace.
    module: str | None = None
    append: bool = False  # `%%writefile -a`: added to what earlier cells wrote to that file


@dataclass
class Source:
    filename: str
    kind: str  # "py" or "ipynb"
    cells: list[Cell]
    notes: list[Message] = field(default_factory=list)


class Unparsable(Exception):
    """Student text that Python's parser refused, for whatever reason; str() says why, in one short line."""


_PARSED: dict[tuple[str, str], ast.Module | str] = {}  # (code, label) -> its tree, or why it is Unparsable
_PARSED_MAX = 8  # the cells of the submission being graded (each tree of a long file holds megabytes)
_PARSE_ROOM = 1000  # frames of recursion limit above the caller's for a parse (Python's default limit, from 0 deep)


def parse(code: str, label: str = "<submission>") -> ast.Module:
    """ast.parse() of student text in the grader process, where nothing a file holds may crash a command.

    Besides SyntaxError, the parser raises MemoryError or RecursionError for deeply nested code (100,000 unary
    minuses), ValueError for NUL bytes (older Pythons), OverflowError and whatever else a later Python adds: every
    one of them is raised as Unparsable, the file's own problem, for the caller to report or skip.

    The same text is parsed once: the checks read a submission's cells several times over (its classes' methods,
    a name defined inside another, the module a notebook cell writes). The tree is shared: callers read it and
    never change it."""
    key = (code, label)
    got = _PARSED.get(key)
    if got is None:
        # The same room for nesting whoever asks: the parser's depth check counts the caller's frames too, so a
        # file nested 2,000 deep parsed from a shallow stack and was refused from a deep one, and the cache kept
        # whichever came first (red team s20).
        limit = sys.getrecursionlimit()
        depth, frame = 0, sys._getframe()
        while frame is not None:
            depth, frame = depth + 1, frame.f_back
        try:
            sys.setrecursionlimit(depth + _PARSE_ROOM)
            got = ast.parse(code, filename=label)
        except SyntaxError as e:
            where = f" (line {e.lineno})" if e.lineno else ""
            got = f"SyntaxError: {e.msg}{where}"
        except (MemoryError, RecursionError) as e:
            got = f"{type(e).__name__}: nested too deeply for Python's parser"
        except Exception as e:  # noqa: BLE001 - ValueError (NUL bytes), OverflowError, ...
            got = f"{type(e).__name__}: {str(e)[:200]}"
        finally:
            sys.setrecursionlimit(limit)
        if len(_PARSED) >= _PARSED_MAX:
            del _PARSED[next(iter(_PARSED))]
        _PARSED[key] = got
    if type(got) is str:
        raise Unparsable(got)
    return got


def decode(data: bytes, filename: str) -> tuple[str, list[Message]]:
    """UTF-8 first (with or without BOM), then the Korean legacy encodings Windows editors still write."""
    notes: list[Message] = []
    if data.startswith(b"\xef\xbb\xbf"):
        data = data[3:]
    if data.startswith((b"\xff\xfe", b"\xfe\xff")):  # what Windows Notepad calls "Unicode"
        try:
            text = data.decode("utf-16")
        except UnicodeDecodeError:
            pass
        else:
            notes.append(Message(f"{filename} is UTF-16; it was converted. Save it as UTF-8 to be safe.",
                                 f"{filename} 파일이 UTF-16이어서 변환했습니다. UTF-8로 저장하는 것이 안전합니다."))
            return text, notes
    try:
        return data.decode("utf-8"), notes
    except UnicodeDecodeError:
        pass
    for enc in ("cp949", "euc-kr"):
        try:
            text = data.decode(enc)
        except UnicodeDecodeError:
            continue
        notes.append(Message(
            f"{filename} is not UTF-8; it was read as {enc.upper()} (Korean Windows encoding). "
            "Save it as UTF-8 to be safe.",
            f"{filename} 파일이 UTF-8이 아니어서 {enc.upper()}(한국어 Windows 인코딩)로 읽었습니다. "
            "UTF-8로 저장하는 것이 안전합니다."))
        return text, notes
    raise SubmissionFormatError(Message(
        f"{filename} could not be decoded as UTF-8 or CP949/EUC-KR. Save the file as UTF-8 and submit again.",
        f"{filename} 파일을 UTF-8이나 CP949/EUC-KR로 읽을 수 없습니다. UTF-8로 저장해서 다시 제출하세요."))


def strip_magics(code: str) -> str | None:
    """Replace IPython magics and shell lines with `pass` (line numbers kept); None for a whole-cell magic whose
    body is not Python run in the notebook's namespace (%%bash, %%writefile, %%timeit, %%html ...).

    As IPython does: the body of a `%%time` or `%%capture` cell runs (its definitions stay), so does the statement
    of a `%time` line; `x = !ls` and `x = %env` are magics too, and a shell line ending in a backslash goes on to
    the next line. A cell that is Python as it stands has no magic (none is valid Python), so it is left as it is:
    a line of a multi-line string or a continued expression that starts with `%` or `!` is not a magic."""
    lines = code.splitlines()
    first = next((k for k, ln in enumerate(lines) if ln.strip()), None)
    if first is not None and lines[first].lstrip().startswith("%%"):
        words = lines[first].lstrip()[2:].split()
        if not words or words[0] not in _CELL_MAGICS_RUN_BODY:
            return None
        lines[first] = "pass  # grader: skipped notebook magic"
        code = "\n".join(lines)
    try:
        ast.parse(code)
        return code
    except Exception:  # noqa: BLE001 - not Python as it stands: look for magics line by line
        pass
    out = []
    continued = False
    for line in code.splitlines():
        if continued:  # the rest of a shell line or line magic that ended in a backslash
            out.append("")
            continued = line.rstrip().endswith("\\")
            continue
        timed = _TIME_LINE.match(line)
        m = _MAGIC_LINE.match(line) or _MAGIC_ASSIGN.match(line)
        if timed and timed.group(2).strip():
            out.append(timed.group(1) + timed.group(2))
        elif m or _HELP_SUFFIX.match(line):
            indent = m.group(1) if m else re.match(r"\s*", line).group(0)
            out.append(f"{indent}pass  # grader: skipped notebook magic")
            continued = bool(m) and line.rstrip().endswith("\\")
        else:
            out.append(line)
    return "\n".join(out)


def _ipython_call(stmt: ast.stmt) -> tuple[str, list[ast.expr]] | None:
    """(method, arguments) of a top-level `get_ipython().METHOD(...)` statement (or `x = get_ipython()...`): how
    `jupyter nbconvert --to script` (Jupyter's File > Download as > Python) writes a notebook's magics."""
    value = stmt.value if isinstance(stmt, (ast.Expr, ast.Assign)) else None
    if not (isinstance(value, ast.Call) and isinstance(value.func, ast.Attribute)):
        return None
    inner = value.func.value
    if isinstance(inner, ast.Call) and isinstance(inner.func, ast.Name) and inner.func.id == "get_ipython" \
            and not inner.args and not inner.keywords:
        return value.func.attr, value.args
    return None


_COLAB_MARK = "# Commented out IPython magic to ensure Python compatibility."


def _colab_cell_magics(text: str) -> str:
    """A notebook downloaded from Colab as .py (File > Download > .py) has each magic commented out after the line
    _COLAB_MARK, and for a cell magic the whole cell: `# %%time`, then `# class SelfAttention_v1(nn.Module):`,
    `#     def __init__(...)`, ... every line of the cell behind "# ". The notebook ran the body of a %%time or
    %%capture cell (strip_magics), so its classes were there; in the script they were comments, and a right
    notebook got 0/100 for them (correct variants, round 7). Those lines are the cell's code again, in place (the
    line numbers stay the file's), when they make Python; the magic's own line stays a comment."""
    if _COLAB_MARK not in text:
        return text
    lines = text.splitlines()
    k = 0
    while k < len(lines) - 1:
        words = lines[k + 1].strip()[1:].split() if lines[k + 1].strip().startswith("#") else []
        if lines[k].strip() != _COLAB_MARK or not words or words[0][2:] not in _CELL_MAGICS_RUN_BODY \
                or not words[0].startswith("%%"):
            k += 1
            continue
        end = k + 2  # the cell's lines: every one behind "#", up to the blank line that ends the cell
        while end < len(lines) and lines[end].startswith("#"):
            end += 1
        body = [ln[2:] if ln.startswith("# ") else ln[1:] for ln in lines[k + 2:end]]
        code = strip_magics("\n".join(body))
        try:
            parse(code or "", "<colab cell>")
        except Unparsable:  # not Python: comments the student wrote, left as they are
            code = None
        if code and code.strip():
            lines[k + 2:end] = (code.split("\n") + [""] * len(body))[:len(body)]  # one line for one
        k = end
    return "\n".join(lines) + ("\n" if text.endswith("\n") else "")


def _shell_lines(text: str, name: str, notes: list[Message] | None) -> str:
    """Colab's File > Download > .py keeps a notebook's shell lines as they were (`!pip install tiktoken`), which no
    Python parses: the whole file was a syntax error, 0/100 for a right notebook (correct variants, round 7). A
    file that is Python once its magic and shell lines are skipped, as the notebook skipped them (strip_magics), is
    read so, with a note: `python` itself cannot run that file."""
    if not re.search(r"(?m)^\s*[!%]", text):
        return text
    try:
        parse(text, name)
        return text
    except Unparsable:
        pass
    code = strip_magics(text)
    if code is None or code == text:
        return text
    try:
        parse(code, name)
    except Unparsable:
        return text
    if notes is not None:
        lines = text.splitlines()
        shown = next((ln.strip() for ln, new in zip(lines, code.splitlines()) if ln != new), "")[:60]
        notes.append(Message(
            f"{name} holds notebook lines that Python cannot run (`{shown}`): they were skipped, as the notebook "
            "skipped them. Delete them (or submit the .ipynb itself) so that `python` can run the file.",
            f"{name}에 파이썬이 실행할 수 없는 노트북 줄이 있어 (`{shown}`) 노트북에서처럼 건너뛰었습니다. `python`으로 "
            "실행할 수 있도록 그 줄을 지우세요 (또는 .ipynb 파일을 그대로 제출하세요)."))
    return code


def exported_cells(text: str, name: str, notes: list[Message] | None = None) -> list[Cell]:
    """The cells of a .py file: the file itself, unless it is a notebook exported as a script, whose magics read
    `get_ipython().system('nvidia-smi')`, `get_ipython().run_line_magic('timeit', ...)` and, for a `%%time` cell,
    `get_ipython().run_cell_magic('time', '', 'class SelfAttention_v1 ...')`. `python file.py` has no get_ipython,
    so each was a NameError: a note for a shell line, and the whole body of a `%%time` or `%%capture` cell never
    ran, so its classes were missing (0/100 for a right notebook downloaded as .py; correct variants, round 7).
    They are read as the notebook's cells are (strip_magics): a line magic is skipped, `%time STATEMENT` runs its
    statement, the body of a %%time/%%capture cell runs as a cell of its own, named by the line that holds it; the
    code after it keeps the file's line numbers."""
    text = _colab_cell_magics(text)
    text = _shell_lines(text, name, notes)
    if "get_ipython" not in text:
        return [Cell(text, name)]
    try:
        tree = parse(text, name)
    except Unparsable:
        return [Cell(text, name)]
    lines = text.splitlines()
    cuts: list[tuple[int, int, str, str]] = []  # (first line, last line, magic, body) of cell magics run in place
    starts = [stmt.lineno for stmt in tree.body]
    for n, stmt in enumerate(tree.body):
        call = _ipython_call(stmt)
        if call is None or starts.count(stmt.lineno) > 1 or n + 1 < len(starts) and \
                starts[n + 1] <= (stmt.end_lineno or stmt.lineno):
            continue  # another statement shares its lines (`x = 1; get_ipython()...`): not nbconvert's, left
        method, args = call
        first, last = stmt.lineno, stmt.end_lineno or stmt.lineno
        texts = [a.value for a in args if isinstance(a, ast.Constant) and isinstance(a.value, str)]
        if method == "run_cell_magic" and len(texts) == 3 == len(args) and isinstance(stmt, ast.Expr) \
                and texts[0] in _CELL_MAGICS_RUN_BODY:
            cuts.append((first, last, texts[0], texts[2]))
            continue
        keep = ""
        if method == "run_line_magic" and len(texts) == 2 == len(args) and isinstance(stmt, ast.Expr) \
                and texts[0] == "time" and "\n" not in texts[1] and texts[1].strip():
            keep = texts[1].strip()  # `%time out = f(x)` runs the statement where it stands
        lines[first - 1:last] = [keep or "pass  # grader: skipped notebook magic"] + [""] * (last - first)
    if not cuts:
        return [Cell("\n".join(lines), name)]
    cells: list[Cell] = []
    start = 1  # the first line of the part of the file not yet in a cell
    for first, last, magic, body in cuts:
        part = "\n" * (start - 1) + "\n".join(lines[start - 1:first - 1])
        if part.strip():
            cells.append(Cell(part, name if start == 1 else f"{name} (from line {start})"))
        code = strip_magics(body)
        if code and code.strip():
            cells.append(Cell(code, f"{name}, the %%{magic} cell of line {first}"))
        start = last + 1
    part = "\n" * (start - 1) + "\n".join(lines[start - 1:])
    if part.strip():
        cells.append(Cell(part, f"{name} (from line {start})"))
    return cells or [Cell(text, name)]


def _cell_text(raw: object) -> str:
    if isinstance(raw, list):
        return "".join(x for x in raw if isinstance(x, str))
    return raw if isinstance(raw, str) else ""


def read(path: Path) -> Source:
    """Read one submission file; raises SubmissionFormatError with a student-facing message."""
    name = path.name
    try:
        size = path.stat().st_size
    except OSError as e:
        raise SubmissionFormatError(Message(f"{name} could not be read ({e.strerror}).",
                                            f"{name} 파일을 읽을 수 없습니다 ({e.strerror}).")) from None
    if size > MAX_SOURCE_BYTES:
        mb, limit = size // (1024 * 1024), MAX_SOURCE_BYTES // (1024 * 1024)
        if name.lower().endswith(".ipynb"):
            fix_en, fix_ko = "Clear the notebook outputs and submit again.", "노트북 출력을 지우고 다시 제출하세요."
        else:  # a .py file has no outputs to clear: something other than code was saved into it
            fix_en = ("Code alone is never this large: remove the data, printed output or pasted tensors saved in "
                      "the file (load data from a separate file instead) and submit again.")
            fix_ko = ("코드만으로는 이렇게 커질 수 없습니다. 파일에 저장된 데이터, 출력 결과, 붙여 넣은 텐서를 지우고 "
                      "(데이터는 별도 파일에서 읽으세요) 다시 제출하세요.")
        raise SubmissionFormatError(Message(f"{name} is {mb} MB, over the {limit} MB limit. {fix_en}",
                                            f"{name} 파일이 {mb} MB로 제한({limit} MB)을 넘습니다. {fix_ko}"))
    data = path.read_bytes()
    if not data.strip():
        raise SubmissionFormatError(Message(f"{name} is empty.", f"{name} 파일이 비어 있습니다."))
    text, notes = decode(data, name)
    if "\x00" in text:
        raise SubmissionFormatError(Message(
            f"{name} contains NUL bytes, so it is not a text file (a binary file renamed, or a broken save?). "
            "Save it as UTF-8 text and submit again.",
            f"{name} 파일에 NUL 바이트가 있어 텍스트 파일이 아닙니다 (이름만 바꾼 바이너리 파일이거나 저장 오류?). "
            "UTF-8 텍스트로 저장해서 다시 제출하세요."))
    if path.suffix == ".py":
        _check_code_size(len(text), name, "")
        return Source(name, "py", exported_cells(text, name, notes), notes)
    if path.suffix == ".ipynb":
        return Source(name, "ipynb", notebook_cells(text, name, notes), notes)
    raise SubmissionFormatError(Message(f"{name}: only .py and .ipynb files can be graded.",
                                        f"{name}: .py와 .ipynb 파일만 채점할 수 있습니다."))


def _check_code_size(chars: int, name: str, where_en: str, where_ko: str = "") -> None:
    if chars > MAX_CODE_CHARS:
        kb, limit = chars // 1024, MAX_CODE_CHARS // 1024
        raise SubmissionFormatError(Message(
            f"{name}{where_en} holds {kb} KB of code, over the {limit} KB limit. Code alone is never this large: "
            "remove the data, printed output or pasted tensors saved in it (load data from a separate file instead) "
            "and submit again.",
            f"{name}{where_ko}에 코드가 {kb} KB 있어 제한({limit} KB)을 넘습니다. 코드만으로는 이렇게 커질 수 "
            "없습니다. 저장된 데이터, 출력 결과, 붙여 넣은 텐서를 지우고 (데이터는 별도 파일에서 읽으세요) 다시 "
            "제출하세요."))


def _short_title(title: str, limit: int = 70) -> str:
    """A section heading short enough for a message, cut at a word boundary."""
    title = " ".join(title.replace("*", "").replace("`", "").split())
    if len(title) <= limit:
        return title
    cut = title[:limit - 1]
    return cut[:cut.rfind(" ")].rstrip(" /:,") + "…" if " " in cut else cut + "…"


_DEF_LINE = re.compile(r"^(?:async\s+)?(?:class|def)\s+[A-Za-z_]\w*\s*[(:]")  # at the start of a line


def _code_in_markdown(text: str, heading: str, name: str) -> Message | None:
    """A markdown cell holding a top-level `class`/`def` (the lab notebooks' markdown has none): an answer typed
    into, or pasted as, a markdown cell, which Jupyter shows as text and never runs."""
    line = next((ln for ln in text.splitlines() if _DEF_LINE.match(ln)), None)
    if line is None:
        return None
    code = " ".join(line.split())[:80]
    where_en = f"the markdown cell under \"{heading}\"" if heading else "a markdown cell"
    where_ko = f"\"{heading}\" 아래의 마크다운 셀" if heading else "마크다운 셀"
    return Message(
        f"{name}: {where_en} holds Python code (`{code}`), but only code cells run, so it was not graded. If it is "
        "your answer, make it a code cell (Jupyter: select the cell, press Esc then Y; Colab: Ctrl+M Y), without the "
        "``` lines, save, and check again.",
        f"{name}: {where_ko}에 파이썬 코드가 있지만 (`{code}`) 코드 셀만 실행되므로 채점되지 않았습니다. 답안이라면 "
        "코드 셀로 바꾸고 (Jupyter: 셀 선택 후 Esc, Y; Colab: Ctrl+M Y) ``` 줄은 지운 뒤, 저장하고 다시 확인하세요.")


def _stale_definitions(ran: list[tuple[str, str, object]], name: str, most: int = 3) -> list[Message]:
    """A class or function defined in two code cells, the later of which the notebook ran first (its saved
    execution counts say so) and which differ: the student's kernel held the one run last, and what they saw
    came from it, but the grader runs the cells from top to bottom (as Restart & Run All does) and grades the
    one further down. A right class followed by an earlier buggy try lost its points with no word on why
    (correct variants, round 7). Said only, not changed: Restart & Run All is what the notebook does."""
    defs: dict[str, list[tuple[int, str, str]]] = {}  # name -> (execution count, where, its code) in cell order
    for code, where, count in ran:
        if type(count) is not int:
            continue
        try:
            tree = parse(code, where)
        except Unparsable:
            continue
        for node in tree.body:
            if isinstance(node, (ast.ClassDef, ast.FunctionDef, ast.AsyncFunctionDef)):
                defs.setdefault(node.name, []).append((count, where, ast.dump(node)))
    notes: list[Message] = []
    for what, found in defs.items():
        graded = found[-1]
        last = max(found, key=lambda f: f[0])
        if last is graded or last[2] == graded[2] or len(notes) >= most:
            continue
        notes.append(Message(
            f"{name}: `{what}` is defined in {last[1]} and again further down, in {graded[1]}. The grader runs the "
            f"cells from top to bottom (as Restart & Run All does), so the one in {graded[1]} was graded; your "
            f"notebook ran {last[1]} last (execution count [{last[0]}], after [{graded[0]}]), so what you saw came "
            "from the other one. Keep the definition you mean (delete or fix the other), run all cells again, save, "
            "and check again.",
            f"{name}: `{what}`이(가) {last[1]}에 정의되어 있고, 아래쪽 {graded[1]}에 다시 정의되어 있습니다. 채점기는 "
            f"셀을 위에서 아래로 실행하므로 (Restart & Run All과 같이) {graded[1]}의 정의를 채점했습니다. 노트북에서는 "
            f"{last[1]}을(를) 마지막에 실행했으므로 (실행 번호 [{last[0]}], [{graded[0]}] 다음) 보신 결과는 다른 "
            "정의에서 나온 것입니다. 원하는 정의만 남기고 (다른 쪽은 지우거나 고치고) 모든 셀을 다시 실행해 저장한 뒤 "
            "다시 확인하세요."))
    return notes


def _other_kernel(nb: dict, name: str) -> Message | None:
    """A notebook saved with a kernel of another language (R, Julia: its metadata says so): its cells are run as
    Python all the same, and an R notebook read as "NameError: name 'library' is not defined" with no word on why."""
    meta = nb.get("metadata") if isinstance(nb.get("metadata"), dict) else {}
    spec = meta.get("kernelspec") if isinstance(meta.get("kernelspec"), dict) else {}
    info = meta.get("language_info") if isinstance(meta.get("language_info"), dict) else {}
    language = next((v.strip() for v in (spec.get("language"), info.get("name")) if isinstance(v, str) and v.strip()),
                    "")
    if not language or language.lower().startswith(("python", "ipython")):
        return None
    from .safetext import clean
    language = clean(language)[:40]
    kernel = spec.get("display_name") if isinstance(spec.get("display_name"), str) else ""
    shown = f"the {clean(kernel)[:40]} kernel" if kernel.strip() else "a kernel"
    return Message(
        f"{name} was saved with {shown}, whose language is {language}; the lab is graded as Python 3, so its code "
        "cells were run as Python. If you wrote them in another language, switch the notebook to Python 3 (Jupyter: "
        "Kernel > Change Kernel; Colab: Runtime > Change runtime type), write the cells in Python, save, and check "
        "again.",
        f"{name}은(는) 언어가 {language}인 커널({clean(kernel)[:40] or language})로 저장되었습니다. 이 실습은 Python 3로 "
        "채점하므로 코드 셀을 Python으로 실행했습니다. 다른 언어로 작성했다면 노트북을 Python 3로 바꾸고 (Jupyter: "
        "Kernel > Change Kernel; Colab: 런타임 > 런타임 유형 변경) Python으로 다시 작성해 저장한 뒤 다시 확인하세요.")


def _v3_cells(worksheets: list) -> list[dict]:
    """The cells of an nbformat 3 notebook (IPython 1 to 3, still in some course repositories) as nbformat 4 has
    them: the worksheets' cells in order, a code cell's `input` as its source, a heading cell as a markdown
    heading of its level."""
    out: list[dict] = []
    for sheet in worksheets:
        for cell in sheet.get("cells", []) if isinstance(sheet, dict) and isinstance(sheet.get("cells"), list) else []:
            if not isinstance(cell, dict):
                continue
            kind = cell.get("cell_type")
            if kind == "code":
                out.append({"cell_type": "code", "source": cell.get("input", "")})
            elif kind == "heading":
                level = cell.get("level") if type(cell.get("level")) is int and 1 <= cell.get("level") <= 6 else 1
                out.append({"cell_type": "markdown", "source": "#" * level + " " + _cell_text(cell.get("source"))})
            elif kind == "markdown":
                out.append({"cell_type": "markdown", "source": cell.get("source", "")})
    return out


def notebook_cells(text: str, name: str, notes: list[Message] | None = None) -> list[Cell]:
    try:
        nb = json.loads(text)
    except (json.JSONDecodeError, RecursionError) as e:
        where = f" (line {e.lineno})" if isinstance(e, json.JSONDecodeError) else ""
        raise SubmissionFormatError(Message(
            f"{name} is not a valid notebook: its JSON is broken{where}. Re-download it from Jupyter/Colab "
            "(File > Download > .ipynb) instead of editing it as text.",
            f"{name} 파일이 올바른 노트북이 아닙니다: JSON이 깨졌습니다{where}. 텍스트로 고치지 말고 "
            "Jupyter/Colab에서 다시 내려받으세요 (파일 > 다운로드 > .ipynb).")) from None
    cells = nb.get("cells") if isinstance(nb, dict) else None
    if cells is None and isinstance(nb, dict) and isinstance(nb.get("worksheets"), list):
        cells = _v3_cells(nb["worksheets"])
    if not isinstance(cells, list):
        raise SubmissionFormatError(Message(f"{name} is JSON but not a Jupyter notebook (no cells).",
                                            f"{name} 파일은 JSON이지만 주피터 노트북이 아닙니다 (셀이 없음)."))
    _check_code_size(sum(len(_cell_text(c.get("source"))) for c in cells
                         if isinstance(c, dict) and c.get("cell_type") == "code"),
                     name, " (its code cells together)", " (코드 셀 전체)")
    out: list[Cell] = []
    # Jupyter shows no cell numbers: a place is named as the student sees it, by the section heading above it
    # and the code cell's rank under that heading (the offending line's text is in the message itself).
    heading, rank, i = "", 0, 0
    used: set[str] = set()
    markdown: list[tuple[str, str]] = []  # (text, heading above it) of markdown cells, for _code_in_markdown
    modules: set[str] = set()  # what %%writefile cells so far wrote (run_written)
    ran: list[tuple[str, str, object]] = []  # (code, where, execution count) of the code cells, for _stale_definitions
    for cell in cells:
        if not isinstance(cell, dict):
            continue
        if cell.get("cell_type") == "markdown":
            titles, fenced = [], False
            for ln in _cell_text(cell.get("source")).splitlines():
                fenced ^= ln.lstrip().startswith(("```", "~~~"))  # a `# comment` in a code block is no heading
                if not fenced and ln.startswith("#") and ln.lstrip("#").strip():
                    titles.append(ln.lstrip("#").strip())
            if titles:
                heading, rank = _short_title(titles[-1]), 0
            markdown.append((_cell_text(cell.get("source")), heading))  # (its own heading, if it has one)
            continue
        if cell.get("cell_type") != "code":
            continue
        i += 1
        rank += 1
        written = writefile_module(_cell_text(cell.get("source")))
        code = strip_magics(run_written(_cell_text(cell.get("source")), modules)) if written is None else written[2]
        if written is not None:
            modules.add(written[0])
        if code and (code.strip() or written is not None):
            where = f"section \"{heading}\", code cell {rank}" if heading else f"code cell {i}"
            label = f"{name}, {where}"
            if label in used:
                # A heading used twice ("## Try it" after each part): the label is how the worker and the grader
                # name a cell ("label:line" of a line that hung and is skipped on the next load, the lines quoted in
                # messages), so two cells of one label shared them: a training cell that hung at line 1 of the second
                # skipped line 1 of the first, its `import torch.nn as nn`, and every class was lost (red team s15).
                label += f" (code cell {i} of the notebook)"  # (ends as no label made above ends: unique)
            used.add(label)
            out.append(Cell(code, label) if written is None else Cell(code, label, written[0], written[1]))
            if written is None:
                ran.append((code, label[len(name) + 2:], cell.get("execution_count")))
    if notes is not None:
        kernel = _other_kernel(nb, name)
        if kernel is not None:
            notes.append(kernel)
        notes.extend(_stale_definitions(ran, name))
        for text, above in markdown:
            note = _code_in_markdown(text, above, name)
            if note is not None:
                notes.append(note)
                break  # one is enough to say what happened
    if not out:
        raise SubmissionFormatError(Message(f"{name} has no code cells.", f"{name}에 코드 셀이 없습니다."))
    return out
