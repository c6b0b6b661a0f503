"""Check logic shared by the public and hidden checks of mha_intermediates.

Public: it holds no reference code and no hidden value, only the demo shapes printed in the notes, how to
build and call the student's classes, and the rule that a step is judged on the student's own inputs.
"""
from __future__ import annotations

import ast
import math
import re
import weakref
from typing import Any, Callable

import torch

from autograder.checks import CheckFailure, expect_close, expect_shape, expect_tensor, fail
from autograder.messages import Message, near_miss

KEYS = ("Q_feat", "K_feat", "V_feat", "Q_split", "K_split", "V_split", "scores", "attention",
        "x_raw", "x_rsh1", "x_rsh2", "x")

# What each entry is made from: a step is judged on the student's own inputs to it, so a mistake is charged
# once, at the step where it happens.
UPSTREAM = {"Q_split": ("Q_feat",), "K_split": ("K_feat",), "V_split": ("V_feat",),
            "scores": ("Q_split", "K_split"), "attention": ("scores",), "x_raw": ("attention", "V_split"),
            "x_rsh1": ("x_raw",), "x_rsh2": ("x_rsh1",), "x": ("x_rsh2",)}

LAYOUT = {"Q_feat": "[n_batch, n_Q, d_feat]", "K_feat": "[n_batch, n_K, d_feat]", "V_feat": "[n_batch, n_K, d_feat]",
          "Q_split": "[n_batch, n_head, n_Q, d_head]", "K_split": "[n_batch, n_head, n_K, d_head]",
          "V_split": "[n_batch, n_head, n_K, d_head]", "scores": "[n_batch, n_head, n_Q, n_K]",
          "attention": "[n_batch, n_head, n_Q, n_K]", "x_raw": "[n_batch, n_head, n_Q, d_head]",
          "x_rsh1": "[n_batch, n_Q, n_head, d_head]", "x_rsh2": "[n_batch, n_Q, d_feat]",
          "x": "[n_batch, n_Q, d_feat]"}

# The notes' self-attention demo: n_batch 128, n_src 32, d_feat 200, n_head 5 (d_head 40).
DEMO = {"n_batch": 128, "n_src": 32, "d_feat": 200, "n_head": 5}
# The notes' SDPA demos: Q, K, V shapes and the printed out / attention shapes.
SDPA_DEMOS = {
    "3d": (((3, 30, 128), (3, 50, 128), (3, 50, 256)), (3, 30, 256), (3, 30, 50)),
    "4d": (((3, 5, 30, 128), (3, 5, 50, 128), (3, 5, 50, 256)), (3, 5, 30, 256), (3, 5, 30, 50)),
}


def rand(seed: int, *shape: int) -> torch.Tensor:
    """torch.rand from its own generator (the notes' demos use torch.rand); no global state is touched."""
    return torch.rand(*shape, generator=torch.Generator().manual_seed(seed))


def randn(seed: int, *shape: int) -> torch.Tensor:
    return torch.randn(*shape, generator=torch.Generator().manual_seed(seed))


# ---------------------------------------------------------------------------------------------- the scale option

def scale_of(options: dict) -> str:
    scale = options.get("scale", "full")
    if scale not in ("head", "full"):
        raise ValueError(f"assignment option scale must be 'head' or 'full', not {scale!r}")
    return scale


def divisor(options: dict, d_feat: int, n_head: int) -> float:
    return math.sqrt(d_feat // n_head) if scale_of(options) == "head" else math.sqrt(d_feat)


def scale_rule(options: dict, d_feat: int, n_head: int) -> Message:
    """The convention this assignment grades with, in words, with the numbers of the case at hand."""
    if scale_of(options) == "head":
        d = d_feat // n_head
        return Message(f"This assignment divides the scores by sqrt(d_head) = sqrt(d_feat // n_head) "
                       f"(here sqrt({d}) = {math.sqrt(d):.4g}).",
                       f"이 과제는 점수를 sqrt(d_head) = sqrt(d_feat // n_head)로 나눕니다 "
                       f"(여기서는 sqrt({d}) = {math.sqrt(d):.4g}).")
    return Message(f"This assignment divides the scores by sqrt(d_feat), the feature size before the split "
                   f"(here sqrt({d_feat}) = {math.sqrt(d_feat):.4g}).",
                   f"이 과제는 점수를 분할 전 특징 크기인 sqrt(d_feat)로 나눕니다 "
                   f"(여기서는 sqrt({d_feat}) = {math.sqrt(d_feat):.4g}).")


def other_divisor(options: dict, d_feat: int, n_head: int) -> tuple[float, str]:
    """The divisor of the convention this assignment does NOT use, and its name (to recognise a mix-up)."""
    if scale_of(options) == "head":
        return math.sqrt(d_feat), f"sqrt(d_feat) = sqrt({d_feat})"
    return math.sqrt(d_feat // n_head), f"sqrt(d_head) = sqrt({d_feat // n_head})"


# ---------------------------------------------------------------------------------------------- calling the student

CLASS = "MultiHeadedAttention"
ALIAS = "MultiHeadAttention"  # the blog notes' name for the same class (assignment.toml [aliases])
# The notes' constructor: names, order and defaults (a default as the worker's repr shows it).
SIGNATURE = (("d_feat", "128"), ("n_head", "5"), ("actv", "relu"), ("USE_BIAS", "True"), ("dropout_p", "0.1"),
             ("device", "None"))


def mha_class(sub) -> str:
    """The student's class name: MultiHeadedAttention, or MultiHeadAttention when only that one is defined."""
    if sub.worker is None:
        sub.request("names")
    return ALIAS if CLASS not in sub.names and sub.names.get(ALIAS) == "class" else CLASS


def call_text(d_feat: int, n_head: int, **kw: Any) -> str:
    extra = "".join(f", {k}={v!r}" for k, v in kw.items())
    return f"{CLASS}(d_feat={d_feat}, n_head={n_head}{extra})"


def build_mha(sub, d_feat: int, n_head: int, *, seed: int, dropout_p: float = 0.1, USE_BIAS: bool = True,
              **extra: Any):
    """Construct with the notes' keyword names (actv and device keep their defaults unless given in extra), each
    under the student's own spelling of it where that differs only in case or by a near miss (use_bias: every check
    of a right class failed with "unexpected keyword argument 'USE_BIAS'"; the signature check charges it, once)."""
    cls = mha_class(sub)
    theirs = student_names(sub, cls)
    kw = {"d_feat": d_feat, "n_head": n_head, "USE_BIAS": USE_BIAS, "dropout_p": dropout_p, **extra}
    return sub.new(cls, seed=seed, **{theirs.get(k, k): v for k, v in kw.items()})


def student_names(sub, cls: str) -> dict[str, str]:
    """The notes' argument -> the student's name for it, where the student has not the notes' name but one name
    that differs from it only in case, or is its near miss (and not another of the notes' names). Asked once."""
    key = ("student_names", cls)
    if key not in sub.memo:
        try:
            names = [p["name"] for p in sub.signature(cls) if p["kind"] in ("POSITIONAL_OR_KEYWORD", "KEYWORD_ONLY")]
        except CheckFailure:
            names = []
        notes = [n for n, _ in SIGNATURE]
        out = {}
        for want in notes:
            if want in names:
                continue
            same = [n for n in names if n.lower() == want.lower() and n not in notes]
            near = near_miss(want, [n for n in names if n not in notes])
            pick = same[0] if len(same) == 1 else near
            if pick is not None and pick not in out.values():
                out[want] = pick
        # Then a notes' argument still unmatched whose place holds a name that is none of the notes' (d_model for
        # d_feat, first): passed under that name, as the attention lab retries a renamed argument by position
        # (learners round rl11: (d_model, n_head, ...) failed every check with "unexpected keyword argument
        # 'd_feat'"; the signature check charges the name, once).
        for i, want in enumerate(notes):
            if want not in names and want not in out and i < len(names) and names[i] not in notes \
                    and names[i] not in out.values():
                out[want] = names[i]
        sub.memo[key] = out
    return sub.memo[key]


def _default_matches(got: str | None, want: str) -> bool:
    if got is None:
        return False
    return want in got.lower() if want == "relu" else got == want


_FUNCTION_REPR = re.compile(r"<(?:built-in )?function ([\w.<>]+) at 0x[0-9a-fA-F]+>")


def readable_default(default: str | None) -> str | None:
    """A default as the worker's repr shows it, for a message: a function by its name (`<function relu at
    0x7f...>` -> relu), any other object without its memory address."""
    if default is None:
        return None
    m = _FUNCTION_REPR.fullmatch(default)
    return m[1] if m else re.sub(r" at 0x[0-9a-fA-F]+", "", default)


def signature_differs(sub, cls: str) -> None:
    """Fail with the notes' signature beside the student's where the student's names are not the notes' (nor a
    spelling build_mha passes them under); nothing where they are."""
    try:
        params = [p for p in sub.signature(cls) if p["kind"] in ("POSITIONAL_OR_KEYWORD", "KEYWORD_ONLY")]
    except CheckFailure:
        return
    if any(p["kind"] == "VAR_KEYWORD" for p in sub.signature(cls)):
        return
    theirs = student_names(sub, cls)
    names = [p["name"] for p in params]
    missing = [n for n, _ in SIGNATURE if n != "device" and n not in names and theirs.get(n) not in names]
    if not missing:
        return
    want_text = ", ".join(f"{n}={'F.relu' if d == 'relu' else d}" for n, d in SIGNATURE)
    got_text = ", ".join(p["name"] if p["default"] is None else f"{p['name']}={readable_default(p['default'])}"
                         for p in params)
    extra = [n for n in names if n not in (w for w, _ in SIGNATURE)]
    more_en = f"; not in the notes: {', '.join(extra)}" if extra else ""
    more_ko = f"; 노트에 없는 인자: {', '.join(extra)}" if extra else ""
    fail(f"`{cls}.__init__` takes ({got_text}); the notes' signature is ({want_text}) (missing "
         f"{', '.join(missing)}{more_en}), and every check builds it as the notes do, with keywords: "
         f"{call_text(12, 3, USE_BIAS=True, dropout_p=0.1)}.",
         f"`{cls}.__init__`의 인자가 ({got_text})입니다. 노트의 시그니처는 ({want_text})입니다 (빠진 인자: "
         f"{', '.join(missing)}{more_ko}). 모든 검사는 노트처럼 키워드로 만듭니다: "
         f"{call_text(12, 3, USE_BIAS=True, dropout_p=0.1)}.")


def check_signature(sub) -> None:
    """__init__(d_feat=128, n_head=5, actv=F.relu, USE_BIAS=True, dropout_p=0.1, device=None): names, order and
    defaults as in the notes; earns nothing until the class can be built. More arguments after the notes' ones,
    each with a default (`verbose=False`), change no call of the notes and are accepted."""
    cls = mha_class(sub)
    try:
        built = build_mha(sub, 12, 3, seed=0)
    except CheckFailure:
        # Built with the notes' names, a constructor that has others fails with a TypeError: the signature is the
        # cause, and says what to change (learners round rl11: __init__(self, head, embedding_dim, dropout=0.1)
        # and (d_model, n_head) were told only "raised TypeError: unexpected keyword argument 'd_feat'").
        signature_differs(sub, cls)
        raise
    expect_layers(built, cls, ("its signature earns nothing yet", "시그니처 점수를 아직 받을 수 없습니다"))
    params = [p for p in sub.signature(cls) if p["kind"] in ("POSITIONAL_OR_KEYWORD", "KEYWORD_ONLY")]
    got = [(p["name"], p["default"]) for p in params]
    want_text = ", ".join(f"{n}={'F.relu' if d == 'relu' else d}" for n, d in SIGNATURE)
    got_text = ", ".join(n if d is None else f"{n}={readable_default(d)}" for n, d in got)
    names, want_names = [n for n, _ in got], [n for n, _ in SIGNATURE]
    signature = SIGNATURE
    if "device" not in names:  # missing: charged once, by the check that `device` is accepted
        signature = tuple(x for x in SIGNATURE if x[0] != "device")
        want_names = [n for n, _ in signature]
    trailing = got[len(want_names):]
    if names[:len(want_names)] == want_names and trailing and all(d is not None for _, d in trailing):
        names, got = names[:len(want_names)], got[:len(want_names)]  # extra trailing arguments with defaults
    elif names[:len(want_names)] == want_names and trailing:
        extra = ", ".join(f"`{n}`" for n, d in trailing if d is None)
        fail(f"`{cls}.__init__` takes ({got_text}); the notes' signature is ({want_text}). Give {extra} a default "
             "value or remove it: the notes' calls do not pass it.",
             f"`{cls}.__init__`의 인자가 ({got_text})입니다. 노트의 시그니처는 ({want_text})입니다. {extra}에 "
             "기본값을 주거나 없애세요: 노트의 호출은 이 인자를 넘기지 않습니다.")
    if names != want_names:
        missing = [n for n in want_names if n not in names]
        extra = [n for n in names if n not in want_names]
        detail_en = "; ".join(filter(None, [f"missing {', '.join(missing)}" if missing else "",
                                            f"not in the notes: {', '.join(extra)}" if extra else "",
                                            "the order differs" if not missing and not extra else ""]))
        detail_ko = "; ".join(filter(None, [f"빠진 인자: {', '.join(missing)}" if missing else "",
                                            f"노트에 없는 인자: {', '.join(extra)}" if extra else "",
                                            "순서가 다릅니다" if not missing and not extra else ""]))
        fail(f"`{cls}.__init__` takes ({got_text}); the notes' signature is ({want_text}) ({detail_en}).",
             f"`{cls}.__init__`의 인자가 ({got_text})입니다. 노트의 시그니처는 ({want_text})입니다 ({detail_ko}).")
    wrong = [(n, d, w) for (n, d), (_, w) in zip(got, signature) if not _default_matches(d, w)]
    if wrong:
        shown = ", ".join(f"{n}={'(none)' if d is None else readable_default(d)} (notes: "
                          f"{'F.relu' if w == 'relu' else w})" for n, d, w in wrong)
        shown_ko = ", ".join(f"{n}={'(없음)' if d is None else readable_default(d)} (노트: "
                             f"{'F.relu' if w == 'relu' else w})" for n, d, w in wrong)
        fail(f"`{cls}.__init__` has other defaults than the notes: {shown}.",
             f"`{cls}.__init__`의 기본값이 노트와 다릅니다: {shown_ko}.")



def expect_layers(m, cls: str, earns: tuple[str, str]) -> None:
    """The constructor's checks pay a class that makes its layers (`m` built): its signature, "no layer has a bias",
    rejecting an indivisible n_head and accepting `device` all hold for a class that makes none. An __init__ of the
    docstring's signature that only called super().__init__() (and raised ValueError for an indivisible n_head)
    earned 5 points of them, one holding only its dropout 3 more (red team, round 25). `earns`: what the check would
    have paid, said in the failure (English, Korean)."""
    if not m.describe().get("params"):
        fail(f"`{cls}` can be built but holds no parameters: the layers it should make (lin_Q, lin_K, lin_V, lin_O: "
             f"nn.Linear(d_feat, d_feat, bias=USE_BIAS)) are not there, so {earns[0]}.",
             f"`{cls}`을(를) 만들 수는 있지만 파라미터가 하나도 없습니다: 만들어야 할 레이어(lin_Q, lin_K, lin_V, "
             f"lin_O: nn.Linear(d_feat, d_feat, bias=USE_BIAS))가 없으므로 {earns[1]}.")


def check_device_argument(sub) -> None:
    """The notes build the layer with device=device (the GPU when there is one) and then call it on CPU tensors:
    `device` is accepted and the layers stay where they are. Same seed with and without it, same output."""
    if torch.cuda.is_available() and sub.gpu().env().get("cuda"):  # the worker that sees the GPU (Submission.gpu)
        sub, dev = sub.gpu(), "cuda:0"
    else:
        dev = "cpu"
    x = randn(5, 2, 4, 12)
    what = call_text(12, 3, dropout_p=0.0, device=dev)
    plain_m = build_mha(sub, 12, 3, seed=9, dropout_p=0.0)
    plain_out = forward_dict(plain_m, x, x, x, what=call_text(12, 3))
    # The output, or when forward raises (charged at the step that raised), the last entry it computed.
    key = next((k for k in reversed(KEYS) if k in plain_out), "x") if isinstance(plain_out, Crashed) else "x"
    plain = entry(plain_out, key, call_text(12, 3))
    try:
        got_out = forward_dict(build_mha(sub, 12, 3, seed=9, dropout_p=0.0, device=dev), x, x, x, what=what)
        if isinstance(got_out, Crashed) and key not in got_out:  # raised only with `device`: say what it raised
            raise CheckFailure(got_out.failure.message, got_out.failure.staff)
        got = entry(got_out, key, what)
    except CheckFailure as e:
        raise CheckFailure(e.message + Message(
            f"The notes pass device={dev!r} to the constructor and then call the layer on CPU tensors: accept "
            "`device` and leave the layers where they are (do not call .to(device) in __init__).",
            f"노트는 생성자에 device={dev!r}를 넘긴 뒤 CPU 텐서로 레이어를 호출합니다. `device`를 받기만 하고 "
            "레이어는 옮기지 마세요 (__init__에서 .to(device)를 호출하지 않기).")) from None
    expect_close(got, plain, what + f"(x, x, x)['{key}']", hint=Message(
        "With the same seed, passing `device` must not change the layer: the notes only accept the argument.",
        "같은 시드라면 `device`를 넘겨도 레이어가 달라지면 안 됩니다: 노트는 이 인자를 받기만 합니다."))
    expect_layers(plain_m, mha_class(sub), ("accepting `device` earns nothing yet",
                                             "`device`를 받는 것만으로는 아직 점수를 받을 수 없습니다"))


class Crashed(dict):
    """What a forward that raised had computed: its local tensors named like the entries (Q_feat ...), taken from
    its frame as it raised, judged like a returned dict's entries. A step it never got to fails: the step whose
    line raised with the exception and that line, each later one as not computed. `step` is that step: the entry
    the raising line of forward assigns, else the first entry (in the order of KEYS) it had not computed."""

    def __init__(self, entries: dict, failure: CheckFailure, line: int | None, code: str):
        step = _assigned(code)
        # The raising line was to (re)compute `step`: an older value of that name is not what forward meant to give.
        super().__init__({k: v for k, v in entries.items() if k != step})
        self.failure, self.line, self.code = failure, line, code
        self.step = step or next((k for k in KEYS if k not in entries), None)


def _assigned(code: str) -> str | None:
    """The entry a line of code assigns (`x_rsh2 = x_rsh1.view(...)` -> "x_rsh2"), if it assigns one."""
    try:
        tree = ast.parse(code.strip())
    except (SyntaxError, ValueError):
        return None
    stmt = tree.body[0] if len(tree.body) == 1 else None
    targets = stmt.targets if isinstance(stmt, ast.Assign) else [stmt.target] if isinstance(
        stmt, (ast.AnnAssign, ast.AugAssign)) else []
    names = [n.id for t in targets for n in ast.walk(t) if isinstance(n, ast.Name) and n.id in KEYS]
    return names[0] if len(names) == 1 else None


def forward_dict(m, Q, K, V, mask=None, *, what: str, mode: str = "eval", seed: int | None = None) -> dict:
    """The dict of intermediates forward returned; when forward raised, what it had computed by then (Crashed)."""
    kwargs = {} if mask is None else {"mask": mask}
    try:
        out = m(Q, K, V, mode=mode, seed=seed, partial=list(KEYS), **kwargs)
    except CheckFailure as e:
        frame = getattr(e, "frame", None)
        if not isinstance(frame, dict):
            raise
        entries = {k: v for k, v in frame.get("locals", {}).items() if k in KEYS}
        return Crashed(entries, e, frame.get("line"), str(frame.get("code") or ""))
    if not isinstance(out, dict):  # an OrderedDict (any dict subclass with string keys) arrives as a dict
        desc = getattr(out, "description", None) or type(out).__name__
        fail(f"`{what}.forward(Q, K, V)` should return a dict of the intermediate tensors "
             f"({', '.join(KEYS)}); it returned {desc}.",
             f"`{what}.forward(Q, K, V)`는 중간 텐서들의 dict({', '.join(KEYS)})를 반환해야 하는데 "
             f"{desc}을(를) 반환했습니다.")
    return out


def entry(out: dict, key: str, what: str) -> torch.Tensor:
    if key not in out and isinstance(out, Crashed):
        if key == out.step:
            raise CheckFailure(out.failure.message, out.failure.staff)
        at = f"line {out.line}" if out.line else "a line"
        at_ko = f"{out.line}번째 줄" if out.line else "어떤 줄"
        code = f" (`{out.code}`)" if out.code else ""
        step_en = f" (the exception is charged to out['{out.step}'])" if out.step else ""
        step_ko = f" (예외는 out['{out.step}'] 단계에서 감점됩니다)" if out.step else ""
        fail(f"`{what}`: forward raised at {at}{code} before it computed out['{key}']{step_en}; this step earns "
             "nothing until forward gets to it.",
             f"`{what}`: forward가 out['{key}']를 계산하기 전에 {at_ko}{code}에서 예외를 발생시켰습니다"
             f"{step_ko}. forward가 이 단계까지 실행되어야 점수를 받을 수 있습니다.")
    if key not in out:
        have = ", ".join(sorted(out)) or "nothing"
        fail(f"The dict returned by `{what}.forward` has no entry '{key}' (it has: {have}).",
             f"`{what}.forward`가 반환한 dict에 '{key}' 항목이 없습니다 (있는 항목: {have}).")
    return expect_tensor(out[key], f"{what}(...)['{key}']")


def tensor_or_none(out: dict, key: str) -> torch.Tensor | None:
    v = out.get(key)
    return v if type(v) is torch.Tensor else None


def informative(t: Any) -> bool:
    """Whether a tensor can carry evidence of a step done on it: a floating tensor with two finite values that
    differ. A constant one (zeros included) is what every reshape, permute, product or weighted sum of constants
    gives, so a module that returns zeros for every entry matched "this step applied to your own inputs"."""
    if type(t) is not torch.Tensor or not t.is_floating_point():
        return False
    f = t.detach()[torch.isfinite(t)].to(torch.float64)
    return f.numel() >= 2 and float(f.max() - f.min()) > 1e-6 * (1.0 + float(f.abs().max()))


def changed(a: Any, b: Any) -> bool:
    """Whether two outputs of the same shape differ somewhere (the same call on two different inputs)."""
    if type(a) is not torch.Tensor or type(b) is not torch.Tensor or a.shape != b.shape:
        return True  # another shape for another input: not the same output
    a, b = a.detach().to(torch.float64), b.detach().to(torch.float64)
    both = torch.isfinite(a) & torch.isfinite(b)
    if not bool(both.any()):
        return False
    return float((a - b)[both].abs().max()) > 1e-6 * (1.0 + float(b[both].abs().max()))


# ---------------------------------------------------------------------------------------------- per-submission memo

_memo: "weakref.WeakKeyDictionary[Any, dict]" = weakref.WeakKeyDictionary()


def memo(sub, key: Any, make: Callable[[], Any]) -> Any:
    """Compute `make()` once per submission (e.g. the big demo forward pass). Only a success is kept: a failure
    may come from a worker that was lost and restarted, so the next check tries again."""
    store = _memo.setdefault(sub, {})
    if key not in store:
        store[key] = make()
    return store[key]


# ---------------------------------------------------------------------------------------------- demo shapes

def demo_shapes(n_batch: int, n_src: int, d_feat: int, n_head: int) -> dict[str, tuple[int, ...]]:
    d_head = d_feat // n_head
    feat, split = (n_batch, n_src, d_feat), (n_batch, n_head, n_src, d_head)
    square = (n_batch, n_head, n_src, n_src)
    return {"Q_feat": feat, "K_feat": feat, "V_feat": feat, "Q_split": split, "K_split": split, "V_split": split,
            "scores": square, "attention": square, "x_raw": split, "x_rsh1": (n_batch, n_src, n_head, d_head),
            "x_rsh2": feat, "x": feat}


def derived_shape(key: str, ups: list[tuple[int, ...]], d_feat: int, n_head: int) -> tuple[int, ...] | None:
    """The shape this step gives when its inputs have the (student's) shapes `ups`; None when it cannot run."""
    try:
        if key in ("Q_split", "K_split", "V_split"):
            (s,) = ups
            return (s[0], n_head, s[1], s[2] // n_head) if len(s) == 3 and s[2] % n_head == 0 else None
        if key in ("scores", "attention"):
            if key == "attention":
                return ups[0]
            q, k = ups
            return q[:-1] + (k[-2],) if len(q) >= 2 and len(k) >= 2 and q[-1] == k[-1] else None
        if key == "x_raw":
            a, v = ups
            return a[:-1] + (v[-1],) if len(a) >= 2 and len(v) >= 2 and a[-1] == v[-2] else None
        if key == "x_rsh1":
            (s,) = ups
            return (s[0], s[2], s[1], s[3]) if len(s) == 4 else None
        if key == "x_rsh2":
            (s,) = ups
            n = math.prod(s)
            return (s[0], n // (s[0] * d_feat), d_feat) if s and s[0] and n % (s[0] * d_feat) == 0 else None
        if key == "x":
            (s,) = ups
            return s[:-1] + (d_feat,) if s and s[-1] == d_feat else None
    except (ValueError, IndexError, ZeroDivisionError):
        return None
    return None


def demo_outputs(sub, seed: int = 2024, base: int | None = None) -> dict:
    """The notes' self-attention demo, run once per submission and input: src = torch.rand(128, 32, 200), 5 heads
    (another seed: the evidence that each entry is computed from the input). With `base`, the input is that of
    seed `base` with only its first example replaced by that of `seed`."""
    def run() -> dict:
        d = DEMO
        m = build_mha(sub, d["d_feat"], d["n_head"], seed=0, dropout_p=0.1)
        src = rand(seed, d["n_batch"], d["n_src"], d["d_feat"])
        if base is not None:
            src = torch.cat([src[:1], rand(base, d["n_batch"], d["n_src"], d["d_feat"])[1:]])
        return forward_dict(m, src, src, src, what=call_text(d["d_feat"], d["n_head"]))
    return memo(sub, ("demo", seed, base), run)


# The entries a step computes with the module's weights: lin_Q, lin_K and lin_V give the projections, lin_O the output.
# The input itself passes for each of them: `return {"Q_feat": Q, "K_feat": K, "V_feat": V, "x": Q}` has the notes'
# shapes, changes with each example's own input, and earned the projections' and the output's demo shapes (red team,
# round 25). Those shapes pay only an entry that changes when other weights are loaded. (The later steps reshape,
# multiply and weigh what came before: they are judged on the input, so that a projection left out costs only the
# projections' points.)
WEIGHTED = ("Q_feat", "K_feat", "V_feat", "x")


def other_weights(m, seed: int = 4242) -> bool:
    """Load other weights into the student's module `m` (every floating parameter, drawn from `seed`): False where it
    holds none, so that nothing can show that it computes with them."""
    params = {n: t for n, t in (m.state().get("params") or {}).items()
              if type(t) is torch.Tensor and t.is_floating_point()}
    if not params:
        return False
    g = torch.Generator().manual_seed(seed)
    m.load_state({n: (torch.randn(tuple(t.shape), generator=g) * 0.1).to(t.dtype) for n, t in params.items()})
    return True


def demo_other_weights(sub) -> dict:
    """The notes' demo (the input of demo_outputs' seed) with other weights loaded ({} where the module holds none)."""
    def run() -> dict:
        d = DEMO
        m = build_mha(sub, d["d_feat"], d["n_head"], seed=0, dropout_p=0.1)
        if not other_weights(m):
            return {}
        src = rand(2024, d["n_batch"], d["n_src"], d["d_feat"])
        return forward_dict(m, src, src, src, what=call_text(d["d_feat"], d["n_head"]))
    return memo(sub, ("demo", "other weights"), run)


def from_own_example(a: Any, b: Any, n_batch: int) -> str | None:
    """Why `b`, the output for an input whose first example alone was changed, is no evidence that each example's
    output is computed from its own input: "same" (it did not change), "others" (it changed in other examples too);
    None when it is. An entry whose first axis is not the batch (a wrong shape, charged at its own step) needs only
    to change. A constant times the input's sum changed from input to input and earned the shape points of every
    entry (red team, round 14)."""
    if type(a) is not torch.Tensor or type(b) is not torch.Tensor or a.shape != b.shape or a.dim() == 0 \
            or a.shape[0] != n_batch:
        return None if changed(a, b) else "same"
    if not changed(a[:1], b[:1]):
        return "same"
    return "others" if changed(a[1:], b[1:]) else None


def not_from_input(what: str, en: str, ko: str, why: str = "same") -> None:
    """A shape check's evidence failed: the output is the same for two different inputs ("same"), or changing the
    first example of the input changed the output of other examples ("others")."""
    if why == "others":
        fail(f"With {what}, changing only the first example of the batch changed {en} in the other examples too: it "
             "is not computed from each example's own input, so its shape earns nothing.",
             f"{what}에서 배치의 첫 번째 예만 바꿨는데 다른 예의 {ko}도 바뀌었습니다: 각 예의 입력으로부터 계산되지 "
             "않으므로 shape 점수를 받을 수 없습니다.")
    fail(f"With {what}, {en} came out exactly the same for two different inputs: it is not computed from the "
         "input, so its shape earns nothing.",
         f"{what}에서 서로 다른 두 입력에 대해 {ko}이(가) 똑같이 나왔습니다: 입력으로부터 계산되지 않으므로 shape "
         "점수를 받을 수 없습니다.")


def check_demo_shapes(sub, keys: tuple[str, ...]) -> None:
    """Each entry has the shape the notes print; an entry built from a wrongly shaped earlier entry is judged
    by whether this step turned that input into the right kind of shape."""
    d = DEMO
    want_all = demo_shapes(d["n_batch"], d["n_src"], d["d_feat"], d["n_head"])
    out = demo_outputs(sub)
    what = call_text(d["d_feat"], d["n_head"])
    for key in keys:
        got = entry(out, key, what)
        want = want_all[key]
        # Evidence first: the entry changes with the input (zeros of the right shape earned 15 points).
        other = tensor_or_none(demo_outputs(sub, 2025, base=2024), key)
        why = from_own_example(got, other, d["n_batch"]) if other is not None else None
        if why is not None:
            not_from_input(f"the notes' demo (n_batch={d['n_batch']}, n_src={d['n_src']}, d_feat={d['d_feat']}, "
                           f"n_head={d['n_head']})", f"out['{key}']", f"out['{key}']", why)
        moved = tensor_or_none(demo_other_weights(sub), key) if key in WEIGHTED else None
        if key in WEIGHTED and (moved is None or not changed(got, moved)):
            layer = "lin_O" if key == "x" else f"lin_{key[0]}"
            fail(f"With the notes' demo (n_batch={d['n_batch']}, n_src={d['n_src']}, d_feat={d['d_feat']}, "
                 f"n_head={d['n_head']}), out['{key}'] came out the same with other weights loaded into the layer: it "
                 f"is not computed with {layer}, so its shape earns nothing.",
                 f"노트의 데모(n_batch={d['n_batch']}, n_src={d['n_src']}, d_feat={d['d_feat']}, n_head={d['n_head']})"
                 f"에서 레이어에 다른 가중치를 넣어도 out['{key}']이(가) 똑같이 나왔습니다: {layer}(으)로 계산되지 "
                 "않으므로 shape 점수를 받을 수 없습니다.")
        if tuple(got.shape) == want:
            continue
        ups = [tensor_or_none(out, u) for u in UPSTREAM.get(key, ())]
        if ups and all(u is not None for u in ups):
            up_shapes = [tuple(u.shape) for u in ups]
            upstream_wrong = any(s != want_all[u] for s, u in zip(up_shapes, UPSTREAM[key]))
            if upstream_wrong and derived_shape(key, up_shapes, d["d_feat"], d["n_head"]) == tuple(got.shape):
                continue  # consistent with the student's own (wrong) input, which is charged at its own step
        fail(f"With the notes' demo (n_batch={d['n_batch']}, n_src={d['n_src']}, d_feat={d['d_feat']}, "
             f"n_head={d['n_head']}), out['{key}'] has shape {list(got.shape)}; the notes print {list(want)} "
             f"= {LAYOUT[key]}.",
             f"노트의 데모(n_batch={d['n_batch']}, n_src={d['n_src']}, d_feat={d['d_feat']}, n_head={d['n_head']})"
             f"에서 out['{key}']의 shape이 {list(got.shape)}입니다. 노트에는 {list(want)} = {LAYOUT[key]}로 "
             "출력됩니다.")


# ---------------------------------------------------------------------------------------------- SDPA

def sdpa_call(sub, Q, K, V, mask=None, what: str = "ScaledDotProductAttention().forward(Q, K, V)", m=None,
              seed: int | None = None):
    """(out, attention) of the student's SDPA (a new one, or the module `m` given) on Q, K, V (seed: torch's seed
    set right before the call)."""
    m = m if m is not None else sub.new("ScaledDotProductAttention")
    kwargs = {} if mask is None else {"mask": mask}
    res = m(Q, K, V, seed=seed, **kwargs)
    if type(res) not in (tuple, list) or len(res) != 2:
        desc = getattr(res, "description", None) or type(res).__name__
        fail(f"`{what}` should return the pair (out, attention); it returned {desc}.",
             f"`{what}`는 (out, attention) 쌍을 반환해야 하는데 {desc}을(를) 반환했습니다.")
    out, attention = res
    return expect_tensor(out, what + "[0] (out)"), expect_tensor(attention, what + "[1] (attention)")


def check_sdpa_demo(sub, which: str) -> None:
    (qs, ks, vs), out_shape, att_shape = SDPA_DEMOS[which]
    Q, K, V = rand(11, *qs), rand(12, *ks), rand(13, *vs)
    what = f"SDPA on Q{list(qs)} K{list(ks)} V{list(vs)}"
    # Both calls from the same seed, as the MultiHeadedAttention demo's: torch.rand of the demo's shapes is then the
    # same for both inputs (red team, round 13: random tensors of those shapes earned these 4 points).
    out, attention = sdpa_call(sub, Q, K, V, what=what, seed=0)
    expect_shape(out, out_shape, what + " -> out")
    expect_shape(attention, att_shape, what + " -> attention")
    # Evidence: out and attention are computed from the inputs (zeros of the demo's shapes earned 4 points).
    # Only the first example of each input changed: each example's output must come from its own input.
    others = [torch.cat([rand(seed, *shape)[:1], t[1:]]) for seed, shape, t in ((21, qs, Q), (22, ks, K), (23, vs, V))]
    out2, attention2 = sdpa_call(sub, *others, what=what, seed=0)
    for name, a, b in (("out", out, out2), ("attention", attention, attention2)):
        why = from_own_example(a, b, qs[0])
        if why is not None:
            not_from_input(f"`{what}`", name, name, why)
