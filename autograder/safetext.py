"""Student-derived text made safe to show and store: no control codes, no lone surrogates, names readable."""
from __future__ import annotations

import json
import os
import re
from typing import Any

# ANSI/VT escape sequences (CSI, OSC up to BEL or ST, two-byte ESC forms), then any other C0/C1 control or DEL.
_ESCAPES = re.compile(r"\x1b\[[0-?]*[ -/]*[@-~]?|\x1b\][^\x07\x1b]*(?:\x07|\x1b\\)?|\x9b[0-?]*[ -/]*[@-~]?"
                      r"|\x9d[^\x07\x1b\x9c]*(?:\x07|\x1b\\|\x9c)?|\x1b[ -~]?")
_CONTROLS = re.compile(r"[\x00-\x08\x0b-\x1f\x7f-\x9f]")
_CONTROLS_ONE_LINE = re.compile(r"[\x00-\x1f\x7f-\x9f]")
_SURROGATE = re.compile(r"[\ud800-\udfff]")
# Unicode format characters (category Cf): bidi embeddings, overrides and isolates (U+202A-202E, U+2066-2069:
# "Trojan Source" reordering in a terminal, a spreadsheet or a page), zero-width characters (U+200B-200D, U+2060),
# the BOM (U+FEFF), soft hyphen, tags... All of Unicode 14 (Python 3.11) and 15's Egyptian format controls; a test
# checks the list against the running Python's unicodedata (computing it here would cost every command 0.2 s).
_INVISIBLE = re.compile("[\u00ad\u0600-\u0605\u061c\u06dd\u070f\u0890\u0891\u08e2\u180e\u200b-\u200f"
                        "\u202a-\u202e\u2060-\u2064\u2066-\u206f\ufeff\ufff9-\ufffb\U000110bd\U000110cd"
                        "\U00013430-\U0001343f\U0001bca0-\U0001bca3\U0001d173-\U0001d17a\U000e0001"
                        "\U000e0020-\U000e007f]")
# Line and paragraph separators (Zl, Zp): a line break to a terminal or an editor, none to a CSV reader.
_SEPARATORS = re.compile("[\u2028\u2029]")


def _fix_surrogates(s: str) -> str:
    if not _SURROGATE.search(s):
        return s
    # Valid pairs become their character; a lone surrogate (or a surrogateescape byte) becomes U+FFFD.
    return s.encode("utf-16-le", "surrogatepass").decode("utf-16-le", "replace")


def clean(s: Any, one_line: bool = False) -> str:
    """Printable text: escape sequences, control characters and invisible format characters (bidi controls,
    zero-width characters, BOM) removed, line and paragraph separators (U+2028, U+2029) made newlines (spaces when
    `one_line`; newlines and tabs are kept unless `one_line`), lone surrogates replaced. Idempotent, and the
    identity on ordinary text (Korean included)."""
    if type(s) is not str:
        s = str(s)
    elif s.isascii() and s.isprintable():  # the common case, and nothing to remove in it
        return s
    s = _fix_surrogates(s)
    if not s.isprintable():  # False for every character removed or replaced below
        s = _ESCAPES.sub("", s)
        s = (_CONTROLS_ONE_LINE if one_line else _CONTROLS).sub("", s)
        s = _SEPARATORS.sub(" " if one_line else "\n", s)
        s = _INVISIBLE.sub("", s)
    return s


def reveal(s: str) -> str:
    """Code as a reader must see it: every invisible format character, separator or control (but tab) shown as
    ⟨U+XXXX⟩ instead of acting (a bidi override in a student's line reorders what a page shows: "Trojan Source"),
    lone surrogates replaced."""
    s = _fix_surrogates(s)
    if s.isprintable():
        return s
    return re.sub(f"{_INVISIBLE.pattern}|[\u2028\u2029\x00-\x08\x0a-\x1f\x7f-\x9f]",
                  lambda m: f"⟨U+{ord(m.group()):04X}⟩", s)


# In JSON text written with ensure_ascii=False, the escapes that stand for a character clean() removes: a control
# other than newline and tab (\r, \b, \f, \u00XX). (A literal backslash before one of these letters matches too;
# that only sends the structure the long way.)
_JSON_DIRTY = re.compile(r"\\[rbfu]")


def clean_data(obj: Any, depth: int = 0) -> Any:
    """clean() applied to every string (dict keys too) inside a structure decoded from JSON. A structure whose text
    is all clean already (the usual case: the grader's own results) is returned as it is, decided by one pass of
    json's C encoder over it instead of a Python call per string (thousands per result)."""
    if depth == 0 and type(obj) in (dict, list):
        try:
            text = json.dumps(obj, ensure_ascii=False, check_circular=False)
        except (TypeError, ValueError, RecursionError):
            text = None
        # Printable JSON text holds no raw control, format or separator character and no lone surrogate; without
        # the escapes above it holds no other control either: clean() would change no string in it.
        if text is not None and text.isprintable() and _JSON_DIRTY.search(text) is None:
            return obj
    if type(obj) is str:
        return clean(obj)
    if depth > 200:
        return obj
    if type(obj) is list:
        return [clean_data(x, depth + 1) for x in obj]
    if type(obj) is tuple:
        return tuple(clean_data(x, depth + 1) for x in obj)
    if type(obj) is dict:
        return {clean_data(k, depth + 1): clean_data(v, depth + 1) for k, v in obj.items()}
    return obj


def shown_name(name: str | bytes) -> str:
    """A file or folder name for people to read. Names are kept as bytes (surrogateescape) for the file system;
    for display, UTF-8 is tried first, then CP949 (what Korean Windows zip tools write), else bytes are replaced."""
    try:
        raw = name if isinstance(name, bytes) else os.fsencode(name)
    except UnicodeEncodeError:  # a surrogate that is not an escaped byte
        raw = name.encode("utf-8", "replace")
    for enc in ("utf-8", "cp949"):
        try:
            return clean(raw.decode(enc), one_line=True)
        except UnicodeDecodeError:
            continue
    return clean(raw.decode("utf-8", "replace"), one_line=True)


def read_untrusted(path: str, limit: int, dir_fd: int | None = None) -> tuple[bytes, int]:
    """The first `limit` bytes and the size of a regular file that student code may have replaced: not followed
    if it is a symlink, never opened for long if it is a FIFO or a device (a FIFO named like the worker's progress
    file would otherwise block the grader in open()). Anything but a regular file reads as empty. dir_fd: `path`
    is a name in that open folder."""
    import stat
    flags = os.O_RDONLY | getattr(os, "O_NOFOLLOW", 0) | getattr(os, "O_NONBLOCK", 0) | getattr(os, "O_NOCTTY", 0)
    try:
        fd = os.open(path, flags | getattr(os, "O_CLOEXEC", 0), dir_fd=dir_fd)
    except OSError:
        return b"", 0
    try:
        st = os.fstat(fd)
        if not stat.S_ISREG(st.st_mode):
            return b"", 0
        chunks, left = [], max(0, limit)
        while left > 0:
            chunk = os.read(fd, min(left, 1 << 20))
            if not chunk:
                break
            chunks.append(chunk)
            left -= len(chunk)
        return b"".join(chunks), st.st_size
    except OSError:
        return b"", 0
    finally:
        os.close(fd)
