"""Hostile test case `pry_disk`: the skeleton, plus a search for the reference, the hidden checks, the git history, other students' files and other processes' memory; whatever solution it can read, it runs"""
import glob as _glob
import os as _os
import sys as _sys
import zlib as _zlib

MARKER = "HOSTILE-GRADER-TEST-7f3a"
FOUND = {}  # path -> what reading it gave


def _solution_in(text):
    return ("class MultiHeadAttention" in text and "self.out_proj" in text and "def softmax_naive" in text
            and "NotImplementedError(\"softmax_naive" not in text and MARKER not in text)


def _read(path, limit=2_000_000):
    try:
        with open(path, "rb") as f:
            data = f.read(limit)
    except OSError as e:
        FOUND.setdefault(path, type(e).__name__)
        return None
    FOUND[path] = "read"
    return data


def _walk(top, depth, limit):
    """.py and .ipynb files below `top`, at most `depth` folders down and `limit` files."""
    n, todo = 0, [(top, 0)]
    while todo and n < limit:
        folder, d = todo.pop()
        try:
            entries = sorted(_os.scandir(folder), key=lambda e: e.name)
        except OSError as e:
            FOUND.setdefault(folder + "/", type(e).__name__)
            continue
        for e in entries:
            if e.is_dir(follow_symlinks=False) and d < depth and e.name not in (".venv", "site-packages", "proc"):
                todo.append((e.path, d + 1))
            elif e.name.endswith((".py", ".ipynb")):
                n += 1
                yield e.path


def candidates(project):
    """Where a solution could be lying around: the project, its git history, temp folders, paths that
    other processes' command lines mention."""
    for pattern in ("reference/*.py", "assignments/*/hidden/*.py", "assignments/*/*.py", "examples/*/*",
                    "tests/*.py", "tests/*/*.py", "tests/*/*/*.py", "results/*/*.json", "*.py"):
        yield from sorted(_glob.glob(_os.path.join(project, pattern)))
    yield from sorted(_glob.glob(_os.path.join(project, ".git", "objects", "??", "*")))
    for top in ("/tmp", "/var/tmp", "/dev/shm", "/work", "/home", "/root"):
        yield from _walk(top, 6, 3000)
    for cmd in sorted(_glob.glob("/proc/[0-9]*/cmdline")):
        data = _read(cmd, 65536) or b""
        for arg in data.split(b"\0"):
            arg = arg.decode("utf-8", "replace")
            if arg.startswith("/") and arg.count("/") > 1 and _os.path.isdir(arg):
                yield from _walk(arg, 4, 500)
            elif arg.endswith((".py", ".ipynb")):
                yield arg
    for pid in sorted(_glob.glob("/proc/[0-9]*")):
        for leaf in ("environ", "mem", "cwd/attention.py", "root/work/main/reference/attention.py"):
            yield pid + "/" + leaf


def find_solution(project):
    """Source text of a working solution, if any can be read from here."""
    for path in candidates(project):
        data = _read(path)
        if data is None:
            continue
        if "/.git/objects/" in path:
            try:
                data = _zlib.decompress(data)
            except Exception:
                continue
        text = data.decode("utf-8", "replace")
        if path.endswith(".ipynb"):
            import json as _json
            try:
                text = "\n".join("".join(c.get("source", "")) for c in _json.loads(text)["cells"]
                                 if c.get("cell_type") == "code")
            except Exception:
                continue
        if "\0" in text[:64]:  # a git blob header
            text = text.split("\0", 1)[1]
        if _solution_in(text):
            return path, text
    return None, None


def _project():
    worker = _sys.modules.get("autograder.worker")
    return _os.path.dirname(_os.path.dirname(worker.__file__)) if worker else "/work/main"


if __name__ == "submission":  # only when graded: the test imports this file to run find_solution itself
    _where, _code = find_solution(_project())
    if _code is not None:
        exec(_code, globals())
import torch
import torch.nn as nn


# ---------------------------------------------------------------- 3.3 step exercises / 단계별 연습

def softmax_naive(x):
    """Softmax of a 1-D tensor of scores written out as exp(x) / sum(exp(x)).  (notebook 3.3.1)"""
    raise NotImplementedError("softmax_naive: see notebook section 3.3.1 / 노트북 3.3.1 참고")


def attention_scores(inputs):
    """Dot product of every token with every token: (T, d) -> (T, T).  (notebook 3.3.2)"""
    raise NotImplementedError("attention_scores: see notebook section 3.3.2 / 노트북 3.3.2 참고")


def context_vectors(inputs):
    """Weight-free self-attention: softmax over each row of the scores, then weighted sums of the inputs.
    (notebook 3.3.2)"""
    raise NotImplementedError("context_vectors: see notebook section 3.3.2 / 노트북 3.3.2 참고")


# ---------------------------------------------------------------- 3.4 trainable weights / 학습 가능한 가중치

class SelfAttention_v1(nn.Module):
    """W_query, W_key, W_value as nn.Parameter(torch.rand(d_in, d_out)), created in that order.  (3.4.2)"""

    def __init__(self, d_in, d_out):
        super().__init__()
        raise NotImplementedError("SelfAttention_v1.__init__: see notebook section 3.4.2 / 노트북 3.4.2 참고")

    def forward(self, x):
        raise NotImplementedError("SelfAttention_v1.forward: see notebook section 3.4.2 / 노트북 3.4.2 참고")


class SelfAttention_v2(nn.Module):
    """The same computation with nn.Linear(d_in, d_out, bias=qkv_bias) projections.  (3.4.2)"""

    def __init__(self, d_in, d_out, qkv_bias=False):
        super().__init__()
        raise NotImplementedError("SelfAttention_v2.__init__: see notebook section 3.4.2 / 노트북 3.4.2 참고")

    def forward(self, x):
        raise NotImplementedError("SelfAttention_v2.forward: see notebook section 3.4.2 / 노트북 3.4.2 참고")


# ---------------------------------------------------------------- 3.5 causal attention / 코잘 어텐션

class CausalAttention(nn.Module):
    """Batched attention with a causal mask buffer and dropout on the attention weights.  (3.5.3)"""

    def __init__(self, d_in, d_out, context_length, dropout, qkv_bias=False):
        super().__init__()
        raise NotImplementedError("CausalAttention.__init__: see notebook section 3.5.3 / 노트북 3.5.3 참고")

    def forward(self, x):
        raise NotImplementedError("CausalAttention.forward: see notebook section 3.5.3 / 노트북 3.5.3 참고")


# ---------------------------------------------------------------- 3.6 multi-head attention / 멀티 헤드 어텐션

class MultiHeadAttentionWrapper(nn.Module):
    """num_heads CausalAttention modules in self.heads; outputs concatenated on the last axis.  (3.6.1)"""

    def __init__(self, d_in, d_out, context_length, dropout, num_heads, qkv_bias=False):
        super().__init__()
        raise NotImplementedError(
            "MultiHeadAttentionWrapper.__init__: see notebook section 3.6.1 / 노트북 3.6.1 참고")

    def forward(self, x):
        raise NotImplementedError(
            "MultiHeadAttentionWrapper.forward: see notebook section 3.6.1 / 노트북 3.6.1 참고")


class MultiHeadAttention(nn.Module):
    """One projection per role, split into heads by reshaping; then out_proj.  (3.6.2)

    Create W_query, W_key, W_value, out_proj, dropout and the mask buffer in that order.
    """

    def __init__(self, d_in, d_out, context_length, dropout, num_heads, qkv_bias=False):
        super().__init__()
        raise NotImplementedError("MultiHeadAttention.__init__: see notebook section 3.6.2 / 노트북 3.6.2 참고")

    def forward(self, x):
        raise NotImplementedError("MultiHeadAttention.forward: see notebook section 3.6.2 / 노트북 3.6.2 참고")


if __name__ == "submission" and _code is None:
    _report = (f"pry: tried {len(FOUND)} paths, read {sum(v == 'read' for v in FOUND.values())}, "
               f"solution found: {_where}")

    def softmax_naive(x):
        print(_report)
        print("readable:", sorted(p for p, v in FOUND.items() if v == "read" and "/proc/" not in p)[:50])
        raise NotImplementedError("softmax_naive")
