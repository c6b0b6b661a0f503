"""Check logic shared by the public and hidden attention checks. Public: it holds no reference code or hidden value."""
from __future__ import annotations

import collections
import itertools

import keyword
import re
import weakref
from typing import Any, Callable

import torch

from autograder.checks import (RENAME_FITS, RENAME_GUESS, CheckFailure, described, diagnosis, expect_close, expect_shape,
                               expect_tensor, fail)
from autograder.messages import Message, near_miss, rename_hint
from autograder.sourcecode import (asserts_tuple, class_node, created_twice, dropped_masked_fill,  # noqa: F401
                                   method_node, unfinished)  # (class_node: hidden checks)
from autograder.proxy import step, taken
from autograder.worker import LIBRARY_ATTENTION

# The lab's running example: "Your journey starts with one step", one 3-d embedding per token.
INPUTS = torch.tensor(
    [[0.43, 0.15, 0.89],
     [0.55, 0.87, 0.66],
     [0.57, 0.85, 0.64],
     [0.22, 0.58, 0.33],
     [0.77, 0.25, 0.10],
     [0.05, 0.80, 0.55]])
BATCH = torch.stack((INPUTS, INPUTS), dim=0)  # (2, 6, 3), as in 3.5.3

SIGNATURES = {
    "SelfAttention_v1": ["d_in", "d_out"],
    "SelfAttention_v2": ["d_in", "d_out", "qkv_bias"],
    "CausalAttention": ["d_in", "d_out", "context_length", "dropout", "qkv_bias"],
    "MultiHeadAttentionWrapper": ["d_in", "d_out", "context_length", "dropout", "num_heads", "qkv_bias"],
    "MultiHeadAttention": ["d_in", "d_out", "context_length", "dropout", "num_heads", "qkv_bias"],
}
MULTI = ("MultiHeadAttentionWrapper", "MultiHeadAttention")
# How many of SIGNATURES' arguments the notebook's calls pass by position (the rest by name: num_heads=2, and
# qkv_bias, which only the wrapper's CausalAttention(d_in, d_out, context_length, dropout, qkv_bias) places).
BY_POSITION = {"SelfAttention_v1": 2, "SelfAttention_v2": 2, "CausalAttention": 5, "MultiHeadAttentionWrapper": 4,
               "MultiHeadAttention": 4}

ORDER_HINT = Message(
    "With the reference's weights copied in, your module gives the right output, so the difference comes from "
    "initialisation: create W_query, W_key, W_value (and out_proj) in that order, right after super().__init__(), "
    "with torch.rand / nn.Linear exactly as in the notebook, and do not reseed inside __init__.",
    "참조 구현의 가중치를 복사해 넣으면 출력이 맞으므로, 차이는 초기화에서 생깁니다: super().__init__() 다음에 "
    "W_query, W_key, W_value(그리고 out_proj) 순서로 노트북과 똑같이 torch.rand / nn.Linear로 만들고, "
    "__init__ 안에서 시드를 다시 설정하지 마세요.")


def randn(seed: int, *shape: int) -> torch.Tensor:
    """Random input whose batch items differ; drawn from its own generator so no global state is touched."""
    g = torch.Generator().manual_seed(seed)
    return torch.randn(*shape, generator=g)


def explain(sub, target: Any, *inputs: Any, mode: str | None = "eval", seed: int | None = None,
            out: Any = None, seeded: str | None = None) -> Callable[[Any], Message | None]:
    """For expect_close(explain=...): the grader's name for the bug behind `target(*inputs)` (a module handle or
    a function name) having given `out` (by default, the value compared), from hidden/diagnose.py; None where
    only the public checks run. The student's code is not run again. seeded: the class, where the check compares
    a module built with its own seeded weights (the notebook's printed values): where no bug is named, a layer it
    creates twice is (twice_created)."""
    def explained(got: Any) -> Message | None:
        said = diagnosis("attention", sub, target=target, inputs=inputs, mode=mode, seed=seed,
                         got=got if out is None else out)
        return said if said is not None or seeded is None else twice_created(sub, seeded)
    return explained


def twice_created(sub, cls: str) -> Message | None:
    """Said where `cls.__init__` creates a layer twice (sourcecode.created_twice): `self.out_proj = nn.Linear(...)`
    written twice drew new weights, and a right MultiHeadAttention was told only that its values differ and to create
    its layers in the notebook's order, which it did (learners round rl13)."""
    names = created_twice(sub, cls)
    if not names:
        return None
    said = ", ".join(f"`self.{n}`" for n in names)
    return Message(f"{said} is created twice in `{cls}.__init__`: each creation draws new random weights, so after "
                   "the notebook's torch.manual_seed your module holds other weights than the notebook's and prints "
                   "other values. Delete the repeated line.",
                   f"`{cls}.__init__`에서 {said}을(를) 두 번 만듭니다: 만들 때마다 새 난수 가중치를 뽑으므로 노트북의 "
                   "torch.manual_seed 뒤에도 노트북과 다른 가중치를 갖고 다른 값을 출력합니다. 반복된 줄을 지우세요.")


def _ctor(sub, cls: str, d_in: int, d_out: int, ctx: int, dropout: float, heads: int, kw: dict
          ) -> tuple[tuple, dict, dict]:
    """Positional arguments, keyword arguments and new()'s stand_in for build()."""
    if cls in ("SelfAttention_v1", "SelfAttention_v2"):
        args: tuple = (d_in, d_out)
    elif cls == "CausalAttention":
        args = (d_in, d_out, ctx, dropout)
    else:
        args, kw = (d_in, d_out, ctx, dropout), {"num_heads": heads, **kw}
    if "qkv_bias" not in kw and "qkv_bias" in SIGNATURES.get(cls, ()) and _bias_by_default(sub, cls):
        kw = {**kw, "qkv_bias": False}  # the notebook's default, charged once by the signature check
    extra = {"stand_in": spec} if cls == "MultiHeadAttentionWrapper" and (spec := stand_in(sub)) else {}
    own = _reordered_names(sub, cls, len(args), kw)
    if own:  # the notebook's arguments (or renames of them) in another order: each value by the student's name
        return (), {own[k]: v for k, v in (dict(zip(SIGNATURES[cls], args)) | kw).items()}, extra
    return args, kw, extra


def _own_names(sub, cls: str, names, notebook) -> dict[str, str] | None:
    """The student's parameter of `cls.__init__` for each of the notebook's `names`: the name itself, or a rename
    of it (`context_len`, `droupout`, `bias`); None where one has none, or two read as the same."""
    try:
        params = sub.signature(cls)
    except CheckFailure:
        return None
    got = [p.get("name") for p in params if p.get("kind") == "POSITIONAL_OR_KEYWORD"]
    own = {w: w if w in got else _rename_of(w, got, list(notebook)) for w in names}
    if None in own.values() or len(set(own.values())) != len(own):
        return None
    return own


def _reordered_names(sub, cls: str, placed: int, kw: dict) -> dict[str, str] | None:
    """The notebook's name -> the student's, where `cls.__init__` takes the notebook's first `placed` arguments (or
    renames of them) in another order (num_heads before dropout; (d_in, context_len, d_out, droupout)): passed by
    position they land on the wrong names ("got multiple values for argument 'num_heads'", and every check of a
    right MultiHeadAttention failed; a head built with context_length for d_out crashed every check). None in the
    notebook's order (a rename alone is placed by position: by_position). The signature check charges the order,
    once."""
    if cls not in SIGNATURES:
        return None
    want = SIGNATURES[cls]
    own = _own_names(sub, cls, dict.fromkeys((*want[:placed], *kw)), want)
    if not own:
        return None
    got = [p.get("name") for p in sub.signature(cls) if p.get("kind") == "POSITIONAL_OR_KEYWORD"]
    return own if [got.index(own[w]) for w in want[:placed]] != list(range(placed)) else None


# How many arguments the notebook's step functions take (student_template/attention.py).
STEP_ARGS = {"softmax_naive": 1, "attention_scores": 1, "context_vectors": 1, "qkv_weights": 2, "query_key_value": 4,
             "dot_score": 2, "query_scores": 2, "scaled_softmax": 2, "weighted_sum": 2, "simple_mask": 1,
             "apply_simple_mask": 2, "renormalize": 1, "mask_future": 1, "apply_dropout": 2}


def _could_be(sub, wanted: str, guess: str) -> bool:
    """Whether the student's class or function `guess` could be the graded `wanted` it is named like
    (checks.RENAME_FITS): not where its __init__ (or the function) needs more arguments than `wanted` takes at all. A
    causal head `Attention_v1(d_in, d_out, context_length, dropout, qkv_bias=False)` was offered as the rename of
    SelfAttention_v1(d_in, d_out), which the notebook builds with two, and a notebook's display helper
    `show_head_context_vectors(ins_dict, tokens)` as that of context_vectors(inputs) (learners round rl15)."""
    takes = len(SIGNATURES[wanted]) if wanted in SIGNATURES else STEP_ARGS.get(wanted)
    if takes is None:
        return True
    needed = [p for p in sub.signature(guess) if p.get("kind") == "POSITIONAL_OR_KEYWORD" and p.get("default") is None]
    return len(needed) <= takes


RENAME_FITS["attention"] = _could_be


def _head_named_otherwise(sub, wanted: str) -> str | None:
    """The class of the student's own that the wrapper builds its heads from, as the missing CausalAttention's
    rename (checks.RENAME_GUESS): `MaskedAttention`, `Attention_v1` were told only that CausalAttention is not defined
    (learners rounds rl14, rl15)."""
    if wanted != HEAD or HEAD in sub.names:
        return None
    head = head_class(sub)
    return head if head != HEAD and sub.names.get(head) == "class" else None


RENAME_GUESS["attention"] = _head_named_otherwise


def _bias_by_default(sub, cls: str) -> bool:
    """Whether the student's `cls.__init__` defaults qkv_bias to True (the notebook's default is False). Such a
    class built as the notebook builds it has biases: every check of its forward differed (SelfAttention_v2 kept 2
    of 15 points for one word of its signature). The checks then pass qkv_bias=False, and the signature check
    alone charges the default."""
    try:
        params = sub.signature(cls)
    except CheckFailure:
        return False
    return any(p.get("name") == "qkv_bias" and p.get("default") == "True" for p in params)


def build(sub, cls: str, d_in: int, d_out: int, ctx: int = 0, dropout: float = 0.0, heads: int = 0,
          seed: int | None = None, **kw):
    """Construct a student class with the argument style of the notebook (positional, num_heads by keyword).
    The wrapper gets working heads in place of the student's CausalAttention where that does not work
    (`stand_in`)."""
    args, kw, extra = _ctor(sub, cls, d_in, d_out, ctx, dropout, heads, kw)
    try:
        return _as_notebook(sub, cls, sub.new(cls, *args, seed=seed, **extra, **kw))
    except CheckFailure as e:
        positional = by_position(sub, cls, args, kw, e)
        if positional is None:
            raise
        return sub.new(cls, *positional, seed=seed, **extra)


def build_then(sub, cls: str, d_in: int, d_out: int, ctx: int = 0, dropout: float = 0.0, heads: int = 0,
               seed: int | None = None, steps: list | tuple = (), lenient: bool = False, **kw):
    """build(...) and then `steps` on the new module (proxy.step), in one round trip: (module, the steps'
    values). Fails as build() and those requests one by one would (lenient: see proxy.Remote.seq)."""
    args, kw, extra = _ctor(sub, cls, d_in, d_out, ctx, dropout, heads, kw)
    try:
        m, values = sub.new_seq(cls, *args, steps=list(steps), seed=seed, lenient=lenient, **extra, **kw)
        return _as_notebook(sub, cls, m), values
    except CheckFailure as e:
        positional = by_position(sub, cls, args, kw, e) if e.step == 0 else None
        if positional is None:
            raise
        return sub.new_seq(cls, *positional, steps=list(steps), seed=seed, lenient=lenient, **extra)


def build_each_then(sub, cls: str, builds: list[tuple]) -> list[tuple]:
    """build_then(sub, cls, d_in, d_out, ctx, dropout, heads, seed=seed, steps=steps, lenient=True) for each
    (d_in, d_out, ctx, dropout, heads, seed, steps) of `builds`, in order, in one round trip (proxy.new_each): a
    list of (module or None, its steps' values), ending at the build that failed (see new_each); the caller takes
    the values in order with `taken`. Where a constructor refused a keyword only because the student renamed that
    argument (by_position), the builds go one by one, as build_then places their arguments."""
    made = [(_ctor(sub, cls, d_in, d_out, ctx, dropout, heads, {}), seed, steps)
            for d_in, d_out, ctx, dropout, heads, seed, steps in builds]
    spec = made[0][0][2].get("stand_in") if made else None  # (the same for every build: the submission's)
    entries = sub.new_each(cls, [(args, kw, seed, list(steps)) for (args, kw, _extra), seed, steps in made],
                           stand_in=spec)
    if not isinstance(entries, list):  # (a later build hung or crashed: they come one by one, as the caller takes them)
        return ((None if m is None else _as_notebook(sub, cls, m), values) for m, values in entries)
    if entries and entries[-1][0] is None:
        (args, kw, _extra), _seed, _steps = made[len(entries) - 1]
        if by_position(sub, cls, args, kw, entries[-1][1][0]) is not None:
            entries = []
            for d_in, d_out, ctx, dropout, heads, seed, steps in builds:
                try:
                    entries.append(build_then(sub, cls, d_in, d_out, ctx, dropout, heads, seed=seed, steps=steps,
                                              lenient=True))
                except CheckFailure as e:
                    entries.append((None, [e]))
                    break
                if any(isinstance(v, CheckFailure) for v in entries[-1][1]):
                    break
            return entries
    return [(None if m is None else _as_notebook(sub, cls, m), values) for m, values in entries]


def _each_taken(built: list[tuple]) -> list[tuple]:
    """build_each_then's entries with every value taken in order (the first failure raised), for a check that reads
    them all before anything else."""
    return [(m, [taken(v) for v in values]) for m, values in built]


def _as_notebook(sub, cls: str, m):
    """`m` with its recorded constructor call in the notebook's argument names, as the reference takes them (the
    figures' confirmation and the bug diagnosis build the reference from it): a class built by the student's own
    names (`context_len`, `droupout`) was recorded with those, and the reference refused them (an internal error)."""
    name, args, kwargs, seed = m.ctor
    if cls in SIGNATURES and not args and any(k not in SIGNATURES[cls] for k in kwargs):
        # Only the notebook's arguments that were passed: a class without qkv_bias (context_size, dropout_prob and
        # no qkv_bias, learners round rl15) has no counterpart for it, and asking for one kept its own names.
        notebook = list(SIGNATURES[cls])
        passed = [w for w in notebook if w in kwargs or _rename_of(w, list(kwargs), notebook)]
        own = _own_names(sub, cls, passed, notebook) or {}
        role = {g: w for w, g in own.items()}
        m.ctor = (name, args, {role.get(k, k): v for k, v in kwargs.items()}, seed)
    return m


def by_position(sub, cls: str, args: tuple, kw: dict, err: CheckFailure) -> tuple | None:
    """All arguments by position, when a keyword was refused only because the student renamed that argument
    (`head_num` for `num_heads`) and kept the notebook's order: the signature check charges the rename, once."""
    refused = [k for k in kw if f"unexpected keyword argument '{k}'" in err.message.en]
    if not refused or cls not in SIGNATURES:
        return None
    want = SIGNATURES[cls]
    got = [p["name"] for p in sub.signature(cls) if p["kind"] == "POSITIONAL_OR_KEYWORD"]
    last = max(want.index(k) for k in kw)
    # Every argument up to the last one placed must be the notebook's, or a rename of it (`head_num`,
    # `context_len`): another order (numberOfHeads first) would build the class from the wrong numbers.
    if len(got) <= last or any(got[i] != w and not _renamed(w, got[i]) for i, w in enumerate(want[:last + 1])):
        return None  # the student's order differs from the notebook's: no safe way to place the arguments
    values = dict(zip(want, args)) | kw
    if any(w not in values for w in want[:last + 1]):
        return None
    return tuple(values[w] for w in want[:last + 1])


# Abbreviated words of argument names read as the word (learners round rl12: `max_len` for context_length, placed
# before dropout, was no rename of it; passed by position every call failed, "got multiple values for argument").
# Likewise `drop_rate` (the book's own config key) for dropout after num_heads (learners round rl15: 0 of 20).
_WORDS = {"len": "length", "drop": "dropout"}


def _parts(name: str) -> set[str]:
    """The words of an argument name (snake or camel case), singular, single letters left out."""
    words = re.split(r"_+", re.sub(r"(?<=[a-z0-9])(?=[A-Z])", "_", name).lower())
    return {_WORDS.get(w, w).rstrip("s") for w in words if len(w) > 1}


def _renamed(want: str, got: str) -> bool:
    """Whether the student's argument `got` reads as a rename of the notebook's `want` (`head_num` for
    `num_heads`, `context_len` for `context_length`), not another argument (`numberOfHeads` for `d_in`)."""
    return near_miss(want, [got]) is not None or bool(_parts(want) & _parts(got))


def _rename_of(want: str, got: list[str], notebook: list[str]) -> str | None:
    """The student's argument that reads as a rename of the notebook's `want`: a near spelling (`context_len`), else
    the same words in another order (`head_num` for `num_heads`); never one of the notebook's own names."""
    others = [g for g in got if g not in notebook]
    return near_miss(want, others) or next((g for g in others if _parts(want) & _parts(g)), None)


def call_text(cls: str, d_in: int, d_out: int, ctx: int = 0, dropout: float = 0.0, heads: int = 0) -> str:
    if cls in ("SelfAttention_v1", "SelfAttention_v2"):
        return f"{cls}({d_in}, {d_out})(x)"
    if cls == "CausalAttention":
        return f"{cls}({d_in}, {d_out}, {ctx}, {dropout})(x)"
    return f"{cls}({d_in}, {d_out}, {ctx}, {dropout}, num_heads={heads})(x)"


# ---------------------------------------------------------------------------------------------- evidence
#
# Structure, causality, eval-mode dropout, devices and gradients hold trivially for a module that does nothing
# (returns its input, zeros or a constant). Such checks earn their points only together with this evidence,
# computed in the grader from fresh calls: the class's output changes with its input and with its weights.

# The evidence gate's constructor arguments and input shape per kind of class (tokens == context_length, so an
# unsliced mask, charged elsewhere, does not get in the way). These are the public ones (`grade check`); the hidden
# checks put others in their place when they are collected (batch, Gradescope), so that a module cannot work only
# at the shape it knows the gate uses (red team, round 11: real attention only for (d_in, context_length) = (4, 5)
# and a per-token map everywhere else earned 12 points of CausalAttention's property checks).
GATE_SEED = [71]  # the gate's seed (its weights and inputs): the hidden checks set their own (red team, round 12:
# a module that attended only when torch.initial_seed() was 71, or once its input was randn from seed 71, earned
# 15 to 18 points as a per-token map)
GATE_SHAPES: dict[str, tuple[tuple, tuple[int, ...]]] = {
    "single": ((4, 3), (5, 4)),
    "causal": ((4, 3, 5, 0.0), (2, 5, 4)),
    "heads": ((4, 4, 5, 0.0, 2), (2, 5, 4)),
}
_PUBLIC_GATE = (dict(GATE_SHAPES), GATE_SEED[0])  # what the public checks show (grade check)


def _gate_hidden() -> bool:
    """Whether the gate runs at the hidden checks' shapes and seed (set by hidden/test_hidden.py)."""
    return (GATE_SHAPES, GATE_SEED[0]) != _PUBLIC_GATE


def gate_args(cls: str) -> tuple[tuple, tuple[int, ...]]:
    """Constructor arguments and input shape for the evidence gate (GATE_SHAPES)."""
    if cls in ("SelfAttention_v1", "SelfAttention_v2"):
        return GATE_SHAPES["single"]
    if cls == "CausalAttention":
        return GATE_SHAPES["causal"]
    return GATE_SHAPES["heads"]


def _differs(a, b) -> bool:
    """True when two outputs of the same shape differ somewhere both are finite."""
    if type(a) is not torch.Tensor or type(b) is not torch.Tensor or a.shape != b.shape or not a.is_floating_point():
        return False
    both = torch.isfinite(a) & torch.isfinite(b)
    return bool(both.any()) and float((a.double() - b.double())[both].abs().max()) > 1e-6


# Per submission and class: None when the evidence was found, else the failure (computed once: a class that
# hangs or crashes must not use up the submission's restarts and time again in every check that needs it).
_EVIDENCE: "weakref.WeakKeyDictionary[object, dict[str, Message | None]]" = weakref.WeakKeyDictionary()


def expect_working(sub, cls: str, seed: int | None = None) -> None:
    """Fail unless `cls`'s output depends on its input and on its weights (fresh module, fresh calls).

    The wrapper can only show this through heads that work: when a single CausalAttention does not, the
    wrapper fails too (and says why) without being run again.
    """
    seed = GATE_SEED[0] if seed is None else seed
    known = _EVIDENCE.setdefault(sub, {})
    if cls not in known:
        try:
            if cls == "MultiHeadAttentionWrapper" and head_class(sub) in sub.names and not stand_in(sub):
                try:
                    expect_working(sub, head_class(sub), seed)
                except CheckFailure as e:
                    raise CheckFailure(Message(
                        "A single CausalAttention does not work yet, so the wrapper cannot show that it works: ",
                        "CausalAttention 하나가 아직 동작하지 않아서 래퍼가 동작함을 보일 수 없습니다: ") + e.message) from None
            _quiet_if_hidden(sub, cls, seed)
            known[cls] = None
        except CheckFailure as e:
            known[cls] = e.message
            raise
    if known[cls] is not None:  # found by an earlier check; the class is not run again for it
        if cls not in sub.names:  # the class does not exist: the same words (one group on the student's screen)
            raise CheckFailure(known[cls])
        raise CheckFailure(Message(f"`{cls}` could not be shown to work in an earlier check, so this check earns "
                                   "nothing: ",
                                   f"앞선 검사에서 `{cls}`가 동작함을 보일 수 없었으므로 이 검사는 점수가 없습니다: ")
                           + known[cls])
    if cls == "MultiHeadAttention":
        # Every call of the class is watched (proxy.Submission.watched) from the gate's tests on, in every check: the
        # gate's one watched call was not enough. A forward that kept each output it gave, keyed by its input, handed
        # the unwatched call's back in the watched one (the same input), ran F.multi_head_attention_forward
        # everywhere else and earned 100/100; so did one whose __init__ found the coming calls' inputs up the stack
        # and computed them there (red team, round 26).
        sub.watched[cls] = (LIBRARY_ATTENTION, OWN_HEADS)


# MultiHeadAttention's heads are the student's to write: its own projections handed to F.multi_head_attention_forward
# (identity projections inside, its out_proj as the output layer) had PyTorch split the heads, mask, scale and
# softmax the scores, drop, merge the heads and apply out_proj, and earned 100/100 (red team, round 25; the
# transformer_block lab's attention and the exam's Q1 were closed the same way in round 21). F.scaled_dot_product_
# attention stays the student's to use, as the notebook's variants do: the split into heads, their merge and the
# output projection are still theirs. A class that runs torch's multi-head attention does not pass the gate.
OWN_HEADS = Message(
    "`MultiHeadAttention` runs PyTorch's own multi-head attention (nn.MultiheadAttention, "
    "F.multi_head_attention_forward or its kernel): this class asks you to write it yourself (the split into heads, "
    "the masked and scaled scores, the softmax, the dropout, the merged heads and out_proj), so what PyTorch "
    "computes for it earns nothing.",
    "`MultiHeadAttention`이(가) PyTorch의 멀티 헤드 어텐션(nn.MultiheadAttention, "
    "F.multi_head_attention_forward 또는 그 커널)을 그대로 실행합니다: 이 클래스는 헤드 나누기, 마스크와 스케일을 "
    "적용한 점수, softmax, dropout, 헤드 합치기와 out_proj를 직접 작성하는 문제이므로 PyTorch가 계산한 결과로는 "
    "점수를 받을 수 없습니다.")


def _own_heads_taken(value: Any) -> Any:
    """taken(value), where a call that raised after running torch's multi-head attention (its fused kernel, which the
    worker refuses) fails with OWN_HEADS, not with the refusal's error."""
    try:
        return taken(value)
    except CheckFailure as e:
        if LIBRARY_ATTENTION in e.library_ran:
            raise CheckFailure(OWN_HEADS) from None
        raise


def _expect_own_heads(sub, cls: str, seed: int) -> None:
    """One call of a fresh module at the gate's shapes, watched for torch's multi-head attention (see OWN_HEADS), which
    must give what the same call unwatched gives: the watch is seen from inside (sys.getprofile(), a torch function
    mode), and a forward that returned zeros when watched and ran F.multi_head_attention_forward otherwise would pass
    a watched call that only looked for the library."""
    args, shape = gate_args(cls)
    x = randn(seed, *shape)
    # (both calls seeded alike: a dropout that acts in eval mode, a bug charged where it is, draws the same twice;
    # built and called in one round trip, each reply taken in order)
    _m, values = build_then(sub, cls, *args, seed=seed, lenient=True,
                            steps=[step("call", x, seed=seed), step("call", x, seed=seed, record=[LIBRARY_ATTENTION])])
    plain = expect_tensor(_own_heads_taken(values[0])["out"], f"{cls}(...)(x)")
    res = _own_heads_taken(values[1])
    if any(isinstance(r, dict) and r.get("fn") == LIBRARY_ATTENTION for r in res.get("records") or []):
        raise CheckFailure(OWN_HEADS)
    watched = res.get("out")
    if type(watched) is not torch.Tensor or watched.shape != plain.shape or not torch.allclose(
            watched.double(), plain.double(), rtol=1e-5, atol=1e-6, equal_nan=True):
        raise CheckFailure(Message(
            f"`{cls}` gave another output for the same input when its call was watched for PyTorch's own multi-head "
            "attention than when it was not: a forward that changes what it computes when it is watched earns "
            "nothing here. ",
            f"같은 입력인데 PyTorch의 멀티 헤드 어텐션 사용 여부를 살펴볼 때와 그렇지 않을 때 `{cls}`의 출력이 "
            "달랐습니다: 관찰될 때 계산을 바꾸는 forward는 점수를 받을 수 없습니다. ") + OWN_HEADS)


def _quiet_if_hidden(sub, cls: str, seed: int) -> None:
    """_expect_working; at the hidden checks' shapes and seed, what the student's code printed during it is not
    shown, nor the text of an exception it raised (only its type, where it is Python's or torch's): both are the
    student's to write, and a class that printed its constructor's arguments and torch.initial_seed(), or put them
    in an exception's message, read the hidden gate's shapes and seed in a visible check's feedback, which undid
    them for its next submission (red team s9). The other checks show what it prints and raises at their sizes."""
    if not _gate_hidden():
        _expect_working(sub, cls, seed)
        return
    mark, dropped = len(sub.output), sub.output_dropped
    try:
        _expect_working(sub, cls, seed)
    except CheckFailure as e:
        raised = getattr(e, "raised", ()) or ()
        if not raised:
            raise
        # The same tests at the public shapes and seed: a class that raises there too (a bug, not a sniffer) is told
        # what it raises, in words about sizes the student has seen (keys.T on a batch, a mask not sliced).
        public = _public_gate_failure(sub, cls)
        if public is not None and getattr(public, "raised", ()):
            raise public from None
        kind = raised[0].rsplit(".", 1)
        name = kind[-1] if kind[0] in ("builtins", "torch") or kind[0].startswith("torch.") else "an exception"
        raise CheckFailure(Message(
            f"`{cls}` raised {name} on the evidence checks' own inputs, at sizes the checks do not show (its message "
            "is left out: it could tell them). The other checks show what it raises at their sizes. This check "
            "counts only for a working class.",
            f"`{cls}`이(가) 증거 검사 자체의 입력(검사에서 보여 주지 않는 크기)에서 {name}을(를) 발생시켰습니다 "
            "(그 크기를 알려 줄 수 있어서 메시지는 보여 주지 않습니다). 다른 검사들이 각자의 크기에서 발생하는 오류를 "
            "보여 줍니다. 이 검사는 동작하는 클래스에만 점수를 줍니다."), e.staff) from None
    finally:
        del sub.output[mark:]
        sub.output_dropped = dropped


def _public_gate_failure(sub, cls: str) -> CheckFailure | None:
    """How the gate's tests fail at the public checks' shapes and seed (None: they pass)."""
    saved = dict(GATE_SHAPES), GATE_SEED[0]
    GATE_SHAPES.update(_PUBLIC_GATE[0])
    GATE_SEED[0] = _PUBLIC_GATE[1]
    try:
        _expect_working(sub, cls, _PUBLIC_GATE[1])
        return None
    except CheckFailure as e:
        return e
    finally:
        GATE_SHAPES.clear()
        GATE_SHAPES.update(saved[0])
        GATE_SEED[0] = saved[1]


def _role(name: str) -> str | None:
    """"query", "key" or "value" for a parameter named like one of the three projections (W_value.weight,
    heads.1.W_query.bias, w_values, v_proj.weight...), else None."""
    parts = [p for p in name.split(".") if not p.isdigit() and p.lower() not in ("heads", "weight", "bias")]
    attr = parts[-1] if parts else ""
    # Its words (q_linear, linear_q, queryLayer, Wq, to_q): one of them names a role, and no other role is named
    # (a fused qkv projection is none of the three).
    words = {w.lower() for w in re.findall(r"[A-Z]+[a-z]*|[a-z]+|\d+", attr)} | {attr.lower().replace("_", "")}
    found = {role for role, names in (("query", ("q", "wq", "query", "queries")), ("key", ("k", "wk", "key", "keys")),
                                      ("value", ("v", "wv", "value", "values")))
             if words & set(names) or role in attr.lower()}
    return found.pop() if len(found) == 1 else None


# ---------------------------------------------------------------------------------------------- the student's names
# for the notebook's parameters (shared by the hidden checks and the bug diagnosis)

def target(name: str) -> str:
    """The student's parameter a param_map value names: "qkv.weight#1/3" (the second third of a fused query, key
    and value projection) is qkv.weight."""
    return name.split("#", 1)[0]


def piece(tensor, name: str):
    """The part of the student's `tensor` that a param_map value names (all of it, or one third of a fused one)."""
    if "#" not in name or type(tensor) is not torch.Tensor:
        return tensor
    i, n = (int(v) for v in name.split("#", 1)[1].split("/"))
    rows = tensor.shape[0] // n if tensor.dim() else 0
    return tensor[i * rows:(i + 1) * rows]


def _split_name(name: str) -> tuple[str, str]:
    """("heads.0.", "weight") for heads.0.W_query.weight: where a parameter sits and which of its layer's it is."""
    parts = name.split(".")
    return ".".join(parts[:-2]) + ("." if len(parts) > 2 else ""), parts[-1]


def match_params(have: list[tuple[str, tuple]], want: list[tuple[str, tuple]]) -> dict[str, str]:
    """The reference's name -> the student's, for a module whose layers are named otherwise than the notebook's:
    the same name where there is one; else the same role (query, key, value: W_q, Wq, q_proj, query...) at the
    same place (heads.N.), the same kind (weight, bias) and shape; else, for what is left, the order they were
    created in with the same shapes (out_proj as last_layer, fc_out). {} where every name is the notebook's or
    no complete one-to-one match exists (then the checks say which names are missing, as before).

    A container under another name (the wrapper's heads as self.attention_heads) is read as the notebook's when
    it alone holds what the notebook's would, shape for shape: its missing name costs the structure check only.
    Layers the notebook keeps on the module itself and the student in a keyed container (an nn.ModuleDict
    self.proj = {"W_query": ...}: proj.W_query.weight) are read without the container's name (_unwrapped)."""
    held = _unwrapped(have, want)  # "W_query.weight" -> "proj.W_query.weight"
    inner = {v: k for k, v in held.items()}
    have = [(inner.get(h, h), shape) for h, shape in have]
    moved = _container_rename(have, want)  # the notebook's container -> the student's, e.g. "heads." -> "attn_heads."
    back = {v: k for k, v in moved.items()}
    have = [(_prefix_renamed(h, back), shape) for h, shape in have]
    out = {}
    for n, h in _match_params(have, want).items():
        base, cut, part = _prefix_renamed(h, moved).partition("#")  # (qkv.weight#0/3: a third of a fused one)
        h = held.get(base, base) + cut + part
        if n != h:
            out[n] = h
    return out


def _unwrapped(have: list[tuple[str, tuple]], want: list[tuple[str, tuple]]) -> dict[str, str]:
    """{name without its container: the student's name} for the layers of each keyed container (an nn.ModuleDict of
    the projections: proj.W_query.weight, heads.0.qkv.q.bias) that sits where the notebook keeps its layers on the
    module itself: at a level where the notebook's names are attributes, not list entries, and under a name the
    notebook has none of there (variants round 5: projections in an nn.ModuleDict cost 18 points in three
    questions, told the reference's weights could not be copied in). A container is read so whole or not at all,
    and never where a name without it is one the module already has."""
    def level(where: str) -> set[str]:  # the notebook's names right under `where` (W_query, out_proj; 0, 1)
        return {n[len(where):].split(".", 1)[0] for n, _ in want if n.startswith(where) and n != where}
    names = {n for n, _ in have}
    groups: dict[str, dict[str, str]] = {}
    for n, _ in have:
        parts = n.split(".")
        if len(parts) < 3 or parts[-3].isdigit() or parts[-2].isdigit():
            continue
        where = "".join(f"{p}." for p in parts[:-3])
        theirs = level(where)
        if theirs and parts[-3] not in theirs and not any(t.isdigit() for t in theirs):
            groups.setdefault(where + parts[-3], {})[where + ".".join(parts[-2:])] = n
    out: dict[str, str] = {}
    for inner in groups.values():
        if not any(k in names or k in out for k in inner):
            out.update(inner)
    return out


def _prefix_renamed(name: str, prefixes: dict[str, str]) -> str:
    for old, new in prefixes.items():
        if name.startswith(old):
            return new + name[len(old):]
    return name


def _container_rename(have: list[tuple[str, tuple]], want: list[tuple[str, tuple]]) -> dict[str, str]:
    def containers(names):  # "heads." for heads.0.W_query.weight: a top-level list of modules
        out: dict[str, list] = {}
        for n, shape in names:
            parts = n.split(".")
            if len(parts) > 2 and parts[1].isdigit():
                out.setdefault(parts[0] + ".", []).append((".".join(parts[1:2]), tuple(shape)))
        return {k: sorted(v) for k, v in out.items()}
    mine, theirs = containers(have), containers(want)
    moved = _keyed_rename(have, want, theirs, mine)
    for top, held in theirs.items():
        if top in mine or any(k.startswith(top) for k in moved):
            continue
        same = [t for t, h in mine.items() if t not in theirs and h == held]
        if len(same) == 1:
            moved[top] = same[0]
    return moved


def _keyed_rename(have: list[tuple[str, tuple]], want: list[tuple[str, tuple]], theirs: dict[str, list],
                  mine: dict[str, list]) -> dict[str, str]:
    """The notebook's numbered entries of a container held under keys (an nn.ModuleDict: heads.head_0.W_query.weight
    for heads.0.W_query.weight), in the order the keys were added (the order of the student's parameters): "heads.0."
    -> "heads.head_0.", ... where the keys are as many as the notebook's entries and each holds that entry's names
    and shapes (variants round 3: a wrapper with its heads in a ModuleDict lost 5 of 15, told the heads were not
    registered)."""
    def entries(names, top):  # key -> sorted (name within the entry, shape), keys in order of first appearance
        out: dict[str, list] = {}
        for n, shape in names:
            parts = n.split(".")
            if len(parts) > 2 and parts[0] + "." == top:
                out.setdefault(parts[1], []).append((".".join(parts[2:]), tuple(shape)))
        return {k: sorted(v) for k, v in out.items()}
    moved: dict[str, str] = {}
    for top in theirs:
        if top in mine:
            continue
        keys, numbered = entries(have, top), entries(want, top)
        if not keys or any(k.isdigit() for k in keys) or list(numbered) != [str(i) for i in range(len(numbered))] \
                or len(keys) != len(numbered):
            continue
        if all(held == numbered[str(i)] for i, held in enumerate(keys.values())):
            moved.update({f"{top}{i}.": f"{top}{k}." for i, k in enumerate(keys)})
    return moved


def _match_params(have: list[tuple[str, tuple]], want: list[tuple[str, tuple]]) -> dict[str, str]:
    """match_params with every name the same where it can be (identities included)."""
    left = dict(have)
    out: dict[str, str] = {}
    for n, shape in want:
        if left.get(n) == shape:
            out[n] = n
            del left[n]
    for n, shape in want:
        role = _role(n) if n not in out else None
        if role is None:
            continue
        where, kind = _split_name(n)
        found = [h for h, hs in left.items() if hs == shape and _split_name(h) == (where, kind) and _role(h) == role]
        if len(found) == 1:
            out[n] = found[0]
            del left[found[0]]
    # One projection computing all three (nn.Linear(d_in, 3 * d_out), split into query, key and value in that
    # order, as learners from nanoGPT write it): each role is a third of its rows.
    for where, kind in sorted({_split_name(n) for n, _ in want if n not in out}):
        trio = {_role(n): (n, shape) for n, shape in want if n not in out and _split_name(n) == (where, kind)}
        if not all(r in trio for r in ("query", "key", "value")) or len({trio[r][1] for r in ("query", "key",
                                                                                              "value")}) != 1:
            continue
        shape = trio["query"][1]
        fused = (3 * shape[0], *shape[1:])
        found = [h for h, hs in left.items() if hs == fused and _split_name(h) == (where, kind) and _role(h) is None]
        if len(found) == 1:
            for i, r in enumerate(("query", "key", "value")):
                out[trio[r][0]] = f"{found[0]}#{i}/3"
            del left[found[0]]
    rest = [(n, shape) for n, shape in want if n not in out]
    if len(rest) != len(left) or any(hs != shape or _split_name(h)[0] != _split_name(n)[0]
                                     for (h, hs), (n, shape) in zip(left.items(), rest)):
        return {}
    out.update((n, h) for (h, _hs), (n, _shape) in zip(left.items(), rest))
    return out


class _OffPlan(Exception):
    """A check asked for a request other than the next one it had planned (see _Ahead)."""


class _Ahead:
    """Requests for a check, sent ahead in sequences (one round trip each) and handed out in order: the check is
    written as if it sent them one by one (`ask`), and says beforehand which it will probably ask next (`plan`).
    A request off the plan raises _OffPlan: the check then starts over with _OneByOne, on a fresh module, so its
    verdict is the one its requests sent one by one give. A failure is raised where the check takes it."""

    def __init__(self, sub):
        self.sub, self.m, self.queue = sub, None, []
        self.roles: list = []  # the requests of _expect_attention_roles

    def build(self, cls: str, args: tuple, seed: int, plan: list) -> None:
        steps = list(plan)
        # Through build, so a renamed keyword (head_num) is retried by position: only the signature check charges
        # it. The student's misspelt head class (CasualAttention) is built as a head, its arguments in its own order.
        self.m, res = build_then(self.sub, cls, *args, seed=seed, steps=steps, lenient=True) \
            if cls in SIGNATURES else self.sub.new_seq(cls, *_misspelt_head_args(self.sub, cls, args), seed=seed,
                                                       steps=steps, lenient=True)
        self.queue = list(zip(steps, res))

    def plan(self, *steps) -> None:
        self.queue = list(zip(steps, self.m.seq(*steps, lenient=True)))

    def ask(self, st) -> Any:
        if not self.queue or self.queue[0][0] is not st:
            raise _OffPlan
        return taken(self.queue.pop(0)[1])


def _misspelt_head_args(sub, cls: str, args: tuple) -> tuple:
    """The evidence gate's CausalAttention arguments (d_in, d_out, context_length, dropout) for the student's head
    class under another name, placed as its __init__ takes them (_in_own_order). Passed in the notebook's order, a
    CasualAttention(d_in, d_out, dropout, context_length) got dropout=context_length and raised, and the wrapper's
    note said its heads did not work yet, though its wrapper built them right (learners' round, session 16)."""
    return _in_own_order(sub, cls, HEAD_ARGS[:len(args)], args)


class _OneByOne(_Ahead):
    """The same, one request at a time."""

    def build(self, cls: str, args: tuple, seed: int, plan: list) -> None:
        self.m = build(self.sub, cls, *args, seed=seed) if cls in SIGNATURES \
            else self.sub.new(cls, *_misspelt_head_args(self.sub, cls, args), seed=seed)

    def plan(self, *steps) -> None:
        pass

    def ask(self, st) -> Any:
        return self.m.seq(st)[0]


MAX_ROLE_GUESSES = 12  # units tried as the values where names do not tell (each costs 5 requests)
MAX_FUSED_ROWS = 3 * 1024  # the gate's modules are small: a layer of more rows is no fused q/k/v projection of one


def _role_guesses(weights: dict) -> list[tuple[dict, dict]]:
    """Which weights are the values and which the queries and keys, as ({name: rows}, {name: rows}) pairs (rows: a
    list of a layer's row indices, or None for all of it), each a guess the role tests may try:
    - by name (W_value, v_proj, values...; a matrix, with its bias): one guess; the queries and keys by name too, or
      else every other matrix;
    - else, in turn, every unnamed layer (a raw nn.Parameter too, whatever its name ends in; the same layer of
      every head together), then each third of a layer whose rows come in threes and which no other layer's shape
      shares (a fused projection, split in any order), as the values, the rest as the queries and keys (at most
      MAX_ROLE_GUESSES).
    [] where there is no matrix. Without the last, a module whose projections the names did not tell skipped the
    role tests (red team: a running mean of gated projections in a fused c_attn, in lin_a, lin_b, lin_c, or in raw
    parameters P_a, P_b, P_c, earned the property checks); a scalar named value_scale passed as the values."""
    def bias(n: str) -> list[str]:
        b = n[:-len("weight")] + "bias" if n.endswith("weight") else ""
        return [b] if b in weights and weights[b].dim() == 1 and len(weights[b]) == len(weights[n]) else []
    # A matrix without elements holds no projection: the red team's unused nn.Parameter(torch.empty(3 * N, 0)) was
    # taken for a fused layer of 3N rows, and listing its rows took the grader minutes to hours (no limit of the
    # submission's covers the grader's own time).
    mats = [n for n, t in weights.items() if t.dim() == 2 and t.numel()]
    roles = {n: _role(n) for n in mats}
    values = [n for n in mats if roles[n] == "value"]
    if values:
        named = [n for n in mats if roles[n] in ("query", "key")]
        scores = named or [n for n in mats if n not in values]
        return [({m: None for v in values for m in [v, *bias(v)]}, {m: None for o in scores for m in [o, *bias(o)]})]
    # The same layer of every head is one unit (heads.0.c_attn and heads.1.c_attn: the wrapper's values are all its
    # heads' values). A layer with rows in threes and no other of its shape may be a fused projection: its thirds
    # are the units (zeroing all of it zeroes queries, keys and values at once, which proves nothing).
    def local(n: str) -> str:
        parts = n.split(".")
        at = next((j for j, part in enumerate(parts[:-1]) if part.isdigit()), None)
        return ".".join(parts[at + 1:]) if at is not None else n
    groups: dict[str, list[str]] = {}
    for n in mats:
        groups.setdefault(local(n), []).append(n)
    shapes = collections.Counter(tuple(weights[g[0]].shape) for g in groups.values())
    units: list[tuple[list[str], list[int] | None]] = []
    for members in groups.values():
        rows = len(weights[members[0]])
        if rows % 3 == 0 and rows <= MAX_FUSED_ROWS and shapes[tuple(weights[members[0]].shape)] == 1:
            units += [(members, list(range(i * rows // 3, (i + 1) * rows // 3))) for i in range(3)]
        else:
            units.append((members, None))
    units.sort(key=lambda u: u[1] is not None)  # whole layers first, then thirds
    guesses = []
    for members, r in units[:MAX_ROLE_GUESSES]:
        taken_rows = set(r or ())
        rest = None if r is None else [i for i in range(len(weights[members[0]])) if i not in taken_rows]
        values = {m: r for n in members for m in [n, *bias(n)]}
        scores = {m: None for o in mats if o not in members for m in [o, *bias(o)]}
        if rest:
            scores.update({m: rest for n in members for m in [n, *bias(n)]})
        guesses.append((values, scores))
    return guesses


def _set_rows(t: torch.Tensor, rows, value: torch.Tensor) -> torch.Tensor:
    """`t` with `rows` (a list of row indices; None: all) replaced by the same rows of `value`."""
    if rows is None:
        return value.clone()
    out = t.clone()
    idx = torch.tensor(rows, dtype=torch.long)
    out[idx] = value[idx]
    return out


def _expect_attention_roles(req: _Ahead, y, weights: dict, cls: str) -> None:
    """Where the projections can be told apart (by their names, else by trying each guess of _role_guesses), the
    output must be attention's: weights from the queries and keys applied to the values. Without values (all value
    weights and biases zero) every token's output is the same (an out_proj bias at most), and other query or key
    weights change the output. A module that adds something besides the weighted values, or whose weights ignore
    the queries and keys, is not attention (seen: a running mean of gated projections passed the other tests and
    earned 36 points). Where the values are a guess among three, one guess must pass both."""
    guesses = _role_guesses(weights)
    if not guesses:
        return
    asked = iter(req.roles)
    failure = None
    # Guessed (names did not tell): zeroing an output layer (MultiHeadAttention's out_proj, which no test tells from
    # the values) passes the value test whatever comes before it, so there it takes two passing guesses: the values
    # and the output layer (red team: a gated running mean behind unnamed projections and an out_proj earned 8).
    need = 1 if len(guesses) == 1 else 2 if cls == "MultiHeadAttention" else 1
    passed = 0
    for values, scores in guesses:
        req.ask(next(asked))
        y0 = expect_tensor(req.ask(next(asked))["out"], f"{cls}(...)(x)")
        req.ask(next(asked))
        moved = expect_tensor(req.ask(next(asked))["out"], f"{cls}(...)(x)")
        req.ask(next(asked))  # (the weights as they were)
        flat = y0.reshape(-1, y0.shape[-1]).double() if y0.dim() >= 1 else y0.double()
        if y0.dim() >= 2 and bool(torch.isfinite(flat).all()) and float((flat - flat[:1]).abs().max()) > 1e-5:
            if type(y) is torch.Tensor and y.shape == y0.shape and torch.allclose(y.double(), y0.double()):
                # Nothing changed at all: the values come from another weight (seen: `x @ self.W_key` typed twice).
                failure = failure or Message(
                    f"`{cls}`: its output did not change when W_value was set to zero, so forward does not use "
                    "W_value: compute the values with it (values = x @ self.W_value, or self.W_value(x)), not "
                    "with W_key or W_query. This check counts only for a working class.",
                    f"`{cls}`: W_value를 0으로 해도 출력이 전혀 바뀌지 않았습니다. 즉 forward가 W_value를 쓰지 "
                    "않습니다: 값(value)은 W_key나 W_query가 아니라 W_value로 계산하세요 (values = x @ "
                    "self.W_value 또는 self.W_value(x)). 이 검사는 동작하는 클래스에만 점수를 줍니다.")
            # Learners round rl14: `values = self.W_query(x)` and `queries = self.W_value(x)` (the two swapped) were
            # told only that forward adds something besides the weighted values.
            failure = failure or Message(
                f"`{cls}`: with W_value zero its output still differs from token to token, so its values do not come "
                "from W_value alone: forward computes them with another projection (check that values = "
                "self.W_value(x) and queries = self.W_query(x), not swapped) or adds something besides the "
                "attention-weighted values. This check counts only for a working class.",
                f"`{cls}`: W_value를 0으로 해도 출력이 토큰마다 다릅니다. 즉 값(value)이 W_value에서만 나오지 않습니다: "
                "forward가 다른 투영으로 값을 계산하거나(values = self.W_value(x), queries = self.W_query(x)인지, "
                "서로 바뀌지 않았는지 확인하세요) 어텐션 가중치를 곱한 값(value) 외에 다른 것을 더합니다. 이 검사는 "
                "동작하는 클래스에만 점수를 줍니다.")
            continue
        if not scores or not _differs(y, moved):  # (a guess that leaves no queries and keys proves nothing)
            failure = failure or Message(
                f"`{cls}`'s output does not change when W_query and W_key change: the attention weights must come "
                "from the scores of queries and keys. This check counts only for a working class.",
                f"W_query와 W_key를 바꿔도 `{cls}`의 출력이 바뀌지 않습니다: 어텐션 가중치는 쿼리와 키의 점수에서 "
                "나와야 합니다. 이 검사는 동작하는 클래스에만 점수를 줍니다.")
            continue
        passed += 1
        if passed >= need:
            return
    raise CheckFailure(failure or Message(
        f"`{cls}`: the grader could not find its value projection (names that say query, key and value tell them): "
        "no projection, set to zero, leaves every token the same output. This check counts only for a working class.",
        f"`{cls}`: 값(value) 투영을 찾을 수 없습니다 (query, key, value를 나타내는 이름이면 구별됩니다): 0으로 둘 때 모든 "
        "토큰의 출력이 같아지는 투영이 없습니다. 이 검사는 동작하는 클래스에만 점수를 줍니다."))


def _role_steps(x, weights: dict, g: torch.Generator) -> list:
    """The requests of _expect_attention_roles, in its order, drawing from `g` what it draws: for each guess, the
    values zero, a call, the values back with other queries and keys, a call; then the weights as they were."""
    steps = []
    for values, scores in _role_guesses(weights):
        steps += [step("load_state", {n: _set_rows(weights[n], r, torch.zeros_like(weights[n]))
                                      for n, r in values.items()}), step("call", x)]
        other = {n: torch.randn(tuple(weights[n].shape), generator=g).to(weights[n].dtype) for n in scores}
        moved = {n: _set_rows(weights[n], r, other[n]) for n, r in scores.items()}
        steps += [step("load_state", {**{n: weights[n] for n in values}, **moved}), step("call", x),
                  step("load_state", {n: weights[n] for n in {**values, **scores}})]  # as they were, for the next
    return steps


def _token_changed(x, t: int, seed: int):
    """x with token t replaced (the mixing test)."""
    x2 = x.clone()
    x2[..., t, :] = randn(seed + 2 + t, *x.shape[:-2], x.shape[-1])
    return x2


def _other_tokens_change(y, y2, t: int, cls: str) -> bool:
    """Whether the output y2 for x with token t replaced differs from y in some other token (finite values)."""
    y2 = expect_tensor(y2, f"{cls}(...)(x)")
    if y2.shape != y.shape or y.dim() < 2:
        return False
    keep = [i for i in range(y.shape[-2]) if i != t]
    return _differs(y[..., keep, :], y2[..., keep, :])


def _expect_working(sub, cls: str, seed: int) -> None:
    """The gate's tests, in two round trips where the module works (a dozen one by one). MultiHeadAttention's first
    show that a watched call gives what the same call unwatched gives (_expect_own_heads), and then run watched, as
    every later call of the class does (proxy.Submission.watched; see expect_working)."""
    if cls == "MultiHeadAttention":
        _expect_own_heads(sub, cls, seed)
        sub.watched[cls] = (LIBRARY_ATTENTION, OWN_HEADS)
    try:
        _gate(_Ahead(sub), cls, seed)
    except _OffPlan:  # a test that only a module that does not work needs: all again, one request at a time
        _gate(_OneByOne(sub), cls, seed)


GATE_MAX_PARAMS, GATE_MAX_ELEMENTS = 256, 1 << 20  # what the gate sets, at its small shapes (the lab's: a few dozen)


def _gate_params(params: dict) -> dict:
    """The floating-point parameters the gate sets and reads back, in the module's order, up to GATE_MAX_PARAMS
    tensors and GATE_MAX_ELEMENTS elements in all; the rest are left as they are. The role tests send every one of
    them some 25 times in one sequence: an unused 4096 x 4096 parameter took that past the message limit and read
    as a crash of the student's, 20,000 unused parameters as a malformed reply (red team, round 12)."""
    kept, total = {}, 0
    for n, t in params.items():
        if type(t) is not torch.Tensor or not t.is_floating_point() or total + t.numel() > GATE_MAX_ELEMENTS:
            continue
        kept[n] = t
        total += t.numel()
        if len(kept) >= GATE_MAX_PARAMS:
            break
    return kept


def _returns_values(params: dict, x: torch.Tensor, y: torch.Tensor) -> Message:
    """Said beside a module that mixes no tokens where its output is its own values, W_value(x) (an nn.Linear) or
    x @ W_value (a matrix): forward computed the weights and returned `values` (learners round rl12: told only that
    the tokens are not mixed)."""
    w, b = params.get("W_value.weight"), params.get("W_value.bias")
    if any(type(t) is torch.Tensor and t.numel() > GATE_MAX_ELEMENTS for t in (w, b, params.get("W_value"))):
        return Message("", "")  # (the gate's modules are small: a larger one is no projection of its input)
    try:
        if type(w) is torch.Tensor and w.dim() == 2:
            v = x.double() @ w.double().T + (b.double() if type(b) is torch.Tensor else 0)
        elif type(params.get("W_value")) is torch.Tensor and params["W_value"].dim() == 2:
            v = x.double() @ params["W_value"].double()
        else:
            return Message("", "")
        same = type(y) is torch.Tensor and v.shape == y.shape and torch.allclose(v, y.double(), rtol=1e-4, atol=1e-5)
    except RuntimeError:  # (weights of other shapes than the input's)
        return Message("", "")
    if not same:
        return Message("", "")
    return Message(" Its output is exactly its values, W_value applied to the input: forward returns `values` "
                   "instead of the context vectors, attn_weights @ values.",
                   " 출력이 값(value) 그 자체, 즉 입력에 W_value를 적용한 것과 정확히 같습니다: forward가 문맥 벡터 "
                   "attn_weights @ values 대신 `values`를 반환합니다.")


def _gate(req: _Ahead, cls: str, seed: int) -> None:
    args, shape = gate_args(cls if cls in SIGNATURES else HEAD)
    x = randn(seed, *shape)
    last = x.shape[-2] - 1
    on_x, on_other, on_first, on_mid, state = (step("call", x), step("call", x * 2 + 1),
                                               step("call", _token_changed(x, 0, seed), seed=seed + 3),
                                               step("call", x * 1.5 + 0.5), step("state"))
    # The third call once more, first and alone on a module of its own built alike just before the gate's (so that
    # both are built after the same requests), in a request of its own made once the gate's tests have passed: what
    # it gives must be what the gate's module gave after its other calls. Red team, round 13: a per-token map that attended only once it had seen an input equal to 2 * (the one before) + 1, or once
    # the pending requests it found up the call stack held such a pair, passed the gate on its later calls and
    # earned 10 of CausalAttention's points as a per-token map everywhere else. With a batch, its two inputs are
    # swapped (each is attended to on its own): other bytes than the gate's, so that a module that keeps every output
    # it gave, keyed by its input and weights, cannot hand the same one back. (One that keys them by each batch
    # input still can: it sees every request the worker gets, and no replay is out of its reach.)
    swap = [1, 0] if x.dim() == 3 and x.shape[0] == 2 else None
    x_alone = _token_changed(x, 0, seed) if swap is None else _token_changed(x, 0, seed)[swap]
    alone, alone_req = step("call", x_alone, seed=seed + 3), _OneByOne(req.sub)
    alone_req.build(cls, args, seed, plan=[])
    req.build(cls, args, seed, plan=[on_x, on_other, on_first, on_mid, state])
    y = expect_tensor(req.ask(on_x)["out"], f"{cls}(...)(x)")
    y_in = expect_tensor(req.ask(on_other)["out"], f"{cls}(...)(x)")
    if not _differs(y, y_in):
        fail(f"`{cls}` gave the same output for two different inputs: its output does not depend on the input "
             "(does forward return a constant or zeros?). This check counts only for a working class.",
             f"서로 다른 두 입력에 대해 `{cls}`의 출력이 같습니다: 출력이 입력에 의존하지 않습니다 (forward가 상수나 "
             "0을 반환하나요?). 이 검사는 동작하는 클래스에만 점수를 줍니다.")
    # Attention mixes tokens (an output is a weighted sum over the tokens it sees) through a softmax of scores (not
    # an affine function of the input). A per-token linear map, which the structural checks below would otherwise
    # pay, is neither. Mixing: changing the first token (which every later token of a causal module sees), or else
    # the last one (seen by the others where a mask is upside down, a bug named elsewhere), changes another
    # token's output.
    y_first = None
    if y.dim() >= 2:
        y_first = req.ask(on_first)["out"]
        if not _other_tokens_change(y, y_first, 0, cls) \
                and not _other_tokens_change(y, req.ask(step("call", _token_changed(x, last, seed)))["out"], last, cls):
            values = _returns_values(req.m.state()["params"], x, y)
            fail(f"`{cls}`: changing one token never changed the other tokens' outputs, so the tokens are not mixed: "
                 "each output must be a weighted sum of the values of the tokens it attends to." + values.en +
                 " This check counts only for a working class.",
                 f"`{cls}`: 한 토큰을 바꿔도 다른 토큰의 출력이 바뀌지 않습니다. 즉 토큰이 섞이지 않습니다: 각 출력은 "
                 "주목하는 토큰들의 값(value)의 가중합이어야 합니다." + values.ko +
                 " 이 검사는 동작하는 클래스에만 점수를 줍니다.")
    y_mid = expect_tensor(req.ask(on_mid)["out"], f"{cls}(...)(x)")  # halfway between x and 2x + 1
    if y.shape == y_in.shape == y_mid.shape and not _differs(y_mid, (y.double() + y_in.double()) / 2):
        fail(f"`{cls}`'s output is an affine function of its input (halfway between two inputs it gives halfway "
             "between their outputs): there is no softmax over attention scores. This check counts only for a "
             "working class.",
             f"`{cls}`의 출력이 입력의 아핀 함수입니다 (두 입력의 중간에서 두 출력의 중간을 냅니다): 어텐션 점수에 "
             "대한 softmax가 없습니다. 이 검사는 동작하는 클래스에만 점수를 줍니다.")
    every = req.ask(state)["params"]
    params = _gate_params(every)
    if len(params) < sum(type(t) is torch.Tensor and t.is_floating_point() for t in every.values()):
        try:
            _gate_weights(req, x, y, params, seed, cls)
        except CheckFailure as e:  # say what the gate left out, which may be why
            raise CheckFailure(Message(
                f"(`{cls}` has more parameters than the grader sets in this test: it set the first "
                f"{len(params)}, at most {GATE_MAX_PARAMS} tensors of {GATE_MAX_ELEMENTS} values in all; the "
                "lab's modules have a handful. Remove parameters that forward does not use.) ",
                f"(`{cls}`의 파라미터가 채점기가 이 검사에서 설정하는 것보다 많습니다: 처음 {len(params)}개만 "
                f"설정했습니다(최대 텐서 {GATE_MAX_PARAMS}개, 값 {GATE_MAX_ELEMENTS}개). 이 실습의 모듈은 몇 개뿐입니다. "
                "forward에서 쓰지 않는 파라미터를 없애세요.) ") + e.message, e.staff) from None
    else:
        _gate_weights(req, x, y, params, seed, cls)
    if y_first is not None:
        _replay_alone(alone_req, alone, x_alone, seed, swap, y_first, cls)


def _replay_alone(alone_req: "_OneByOne", alone, x_alone, seed: int, swap, y_first, cls: str) -> None:
    """The gate's lone replay of its third call (see _gate), made in train mode with gradients on, as training runs
    a module: with dropout 0.0 that gives what eval mode without gradients gave (every other call of the gate, and
    of the checks but the dropout and gradient ones). Red team, round 16: a per-token map whenever `self.training`
    or `torch.is_grad_enabled()`, attention otherwise, passed the gate and lost only the dropout and gradient checks
    (20 of CausalAttention's 25, 17 of MultiHeadAttention's 20). A train-mode output that changes with the seed is
    randomness in train mode (a dropout that ignores its argument, charged by the dropout checks): then the replay is
    judged in eval mode, as before; so is one whose train-mode call or backward pass raises."""
    def unswapped(out):
        y = expect_tensor(out, f"{cls}(...)(x)")
        return y if swap is None or y.dim() == 0 else y[swap]

    if type(y_first) is not torch.Tensor or not y_first.is_floating_point():
        _same_alone(unswapped(alone_req.ask(alone)["out"]), y_first, cls)
        return
    g = torch.zeros(tuple(y_first.shape), dtype=y_first.dtype)
    try:
        train = unswapped(alone_req.ask(step("call", x_alone, seed=seed + 3, mode="train", grad_output=g))["out"])
    except CheckFailure:
        train = None
    if train is not None and _close(train, y_first):
        return
    _same_alone(unswapped(alone_req.ask(alone)["out"]), y_first, cls)  # a module that keeps something between calls
    if train is None:
        return
    try:
        again = unswapped(alone_req.ask(step("call", x_alone, seed=seed + 4, mode="train", grad_output=g))["out"])
    except CheckFailure:
        return
    if _close(again, train):
        fail(f"`{cls}` gives another output in train mode, with gradients on, than in eval mode without them, "
             "with dropout=0.0 and the same input and weights: forward must compute the same attention whether or "
             "not the module is training (only self.dropout follows model.train()). This check counts only for a "
             "working class.",
             f"dropout=0.0이고 입력과 가중치가 같은데 `{cls}`의 출력이 train 모드(그래디언트 계산 켬)와 eval "
             "모드(그래디언트 끔)에서 다릅니다: forward는 학습 중이든 아니든 같은 어텐션을 계산해야 합니다 "
             "(model.train()을 따르는 것은 self.dropout뿐입니다). 이 검사는 동작하는 클래스에만 점수를 줍니다.")


def _close(a, b) -> bool:
    """Whether two outputs agree as _same_alone asks (same shape, close, NaN where the other has NaN)."""
    return type(a) is torch.Tensor and type(b) is torch.Tensor and a.shape == b.shape and bool(
        torch.allclose(a.double(), b.double(), rtol=1e-5, atol=1e-6, equal_nan=True))


def _same_alone(got, y_first, cls: str) -> None:
    """The gate's third call made first and alone on a module of its own gave what the gate's module gave (see
    _gate): a module's output depends on its input and weights only, not on the calls made before."""
    got, want = expect_tensor(got, f"{cls}(...)(x)"), expect_tensor(y_first, f"{cls}(...)(x)")
    if got.shape != want.shape or not torch.allclose(got.double(), want.double(), rtol=1e-5, atol=1e-6,
                                                     equal_nan=True):
        fail(f"`{cls}` gave another output for the same input and the same weights when a new module was called "
             "with it alone than after the grader's other calls: the output must depend only on the input and the "
             "weights (does forward keep something from one call to the next?). This check counts only for a "
             "working class.",
             f"`{cls}`: 같은 입력과 같은 가중치인데, 새로 만든 모듈을 그 입력 하나로 호출했을 때와 채점기의 다른 호출 "
             "뒤에 호출했을 때 출력이 다릅니다. 출력은 입력과 가중치에만 의존해야 합니다 (forward가 호출 사이에 무언가를 "
             "기억하나요?). 이 검사는 동작하는 클래스에만 점수를 줍니다.")


def _gate_weights(req: _Ahead, x, y, params: dict, seed: int, cls: str) -> None:
    """The gate's last tests: other weights change the output, and the projections play attention's roles."""
    if params:
        g = torch.Generator().manual_seed(seed + 1)
        weights = {n: torch.randn(tuple(t.shape), generator=g).to(t.dtype) for n, t in params.items()}
        load, again = step("load_state", weights), step("call", x)
        # The role tests' requests are drawn now (from g, as they would be) and planned with the rest: sent
        # whether or not they are needed (a module whose output ignores its weights fails before them).
        req.roles = _role_steps(x, weights, g)
        req.plan(load, again, *req.roles)
        req.ask(load)
        y_w = expect_tensor(req.ask(again)["out"], f"{cls}(...)(x)")
        if _differs(y, y_w):
            _expect_attention_roles(req, y_w, weights, cls)
            return
    fail(f"`{cls}`'s output does not change when its weights change" +
         ("" if params else " (it has no registered parameters)") +
         ": forward must compute with W_query, W_key, W_value (returning the input, zeros or a constant earns "
         "nothing). This check counts only for a working class.",
         f"가중치를 바꿔도 `{cls}`의 출력이 바뀌지 않습니다" + ("" if params else " (등록된 파라미터가 없습니다)") +
         ": forward는 W_query, W_key, W_value로 계산해야 합니다 (입력, 0, 상수를 그대로 반환하면 점수가 없습니다). "
         "이 검사는 동작하는 클래스에만 점수를 줍니다.")


# ---------------------------------------------------------------------------------------------- signature

# Small arguments that every class accepts, to see that the class is implemented at all.
SMOKE = {"SelfAttention_v1": (3, 2), "SelfAttention_v2": (3, 2), "CausalAttention": (3, 2, 4, 0.0),
         "MultiHeadAttentionWrapper": (3, 2, 4, 0.0, 2), "MultiHeadAttention": (3, 2, 4, 0.0, 2)}


def projection_names(params: set[str], prefix: str = "") -> Message | None:
    """Where W_query, W_key or W_value are missing under the notebook's names (`W_keys`, `w_query`): the words
    that say so, so that a bias check blames the names rather than qkv_bias."""
    missing = [w for w in ("W_query", "W_key", "W_value") if f"{prefix}{w}.weight" not in params]
    if not missing:
        return None
    mine = sorted({n[len(prefix):].split(".")[0] for n in params if n.startswith(prefix) and n.endswith(".weight")})
    return Message(f"the projections are not named {', '.join(missing)} as in the notebook (yours: "
                   f"{', '.join(mine) or 'none'}); the grader finds the weights and biases by those names",
                   f"투영의 이름이 노트북처럼 {', '.join(missing)}이(가) 아닙니다 (현재: {', '.join(mine) or '없음'}); "
                   "채점기는 그 이름으로 가중치와 bias를 찾습니다")


def no_qkv_bias(sub, cls: str) -> Message | None:
    """Where `cls.__init__` takes no qkv_bias (nor **kwargs, nor an argument in its place that a call by position
    would reach, such as a renamed `bias`): the words that say so, for the checks that build it with
    qkv_bias=True (instead of the TypeError of the call)."""
    params = sub.signature(cls)
    placed = [p for p in params if p.get("kind") == "POSITIONAL_OR_KEYWORD"]
    if any(p.get("name") == "qkv_bias" or p.get("kind") == "VAR_KEYWORD" for p in params) \
            or len(placed) > SIGNATURES[cls].index("qkv_bias"):
        return None
    heads = cls == "MultiHeadAttentionWrapper"
    return Message(f"`{cls}.__init__` takes no `qkv_bias`, so `qkv_bias=True` cannot give the projections a bias: add "
                   "`qkv_bias=False` to its arguments and " + ("pass it on to every CausalAttention head." if heads
                                                             else "pass it to nn.Linear(..., bias=qkv_bias)."),
                   f"`{cls}.__init__`에 `qkv_bias` 인자가 없어서 `qkv_bias=True`로 투영에 bias를 줄 수 없습니다: 인자에 "
                   "`qkv_bias=False`를 추가하고 " + ("모든 CausalAttention 헤드에 넘기세요." if heads else
                                                   "nn.Linear(..., bias=qkv_bias)에 넘기세요."))


def check_signature(sub, cls: str) -> None:
    """Argument names as in the notebook; earns nothing until the class can be constructed."""
    want = SIGNATURES[cls]
    spelling = sub.misspelt(cls, "__init__")
    if spelling is not None:  # (its signature is nn.Module's: "takes (); ... Add d_in, ..." told the wrong fix)
        raise CheckFailure(spelling)
    params = [p for p in sub.signature(cls) if p["kind"] in ("POSITIONAL_OR_KEYWORD", "KEYWORD_ONLY")]
    got = [p["name"] for p in params]
    # Extra arguments, each with a default (`verbose=False`), after the ones the notebook's calls place change no call
    # of the notebook: after all of them, or among those it passes by name (is_causal=True between num_heads and
    # qkv_bias, learners round rl15: told "Rename: `is_causal` -> `qkv_bias`", which it also had).
    placed = BY_POSITION[cls]
    if got[:placed] == want[:placed] and set(want) <= set(got) \
            and all(p.get("default") is not None for p in params if p["name"] not in want):
        if "qkv_bias" in want and any(p["name"] == "qkv_bias" and p.get("default") == "True" for p in params):
            fail(f"`{cls}.__init__` defaults `qkv_bias` to True; the notebook's default is False, so that "
                 f"`{cls}({', '.join(want[:want.index('qkv_bias')])})` makes projections without a bias. (The other "
                 "checks pass qkv_bias=False and judge the rest.)",
                 f"`{cls}.__init__`의 `qkv_bias` 기본값이 True입니다. 노트북의 기본값은 False라서 "
                 f"`{cls}({', '.join(want[:want.index('qkv_bias')])})`는 bias 없는 투영을 만듭니다. (다른 검사는 "
                 "qkv_bias=False를 넘겨서 나머지를 평가합니다.)")
        # the signature earns its point once the class can be built and works (a wrapper with the grader's heads
        # where the student's do not work: their fault is CausalAttention's)
        spec = stand_in(sub) if cls == "MultiHeadAttentionWrapper" else None
        try:
            sub.new(cls, *SMOKE[cls], seed=0, stand_in=spec or None)
            expect_working(sub, cls)
        except CheckFailure as e:  # (the signature itself is right: say so, and why it earns nothing yet)
            raise CheckFailure(Message(f"`{cls}.__init__` has the notebook's signature; it earns this point once "
                                       "the class works: ",
                                       f"`{cls}.__init__`의 시그니처는 노트북과 같습니다. 클래스가 동작하면 이 점수를 "
                                       "받습니다: ") + e.message, e.staff) from None
        return
    # the notebook's names (or renames of them: (d_in, context_len, d_out, droupout)) in another order
    role = {g: w for w in want if (g := w if w in got else _rename_of(w, got, want))}
    # Only the order of what the notebook's calls place matters (BY_POSITION): qkv_bias before num_heads, both passed
    # by name, is no other order, and an argument renamed beyond recognition in its place (`inp_emb_dim` for d_in) is
    # a rename (learners round rl15: such a wrapper was told only "another order", not the renames it lost the point for).
    placed = BY_POSITION[cls]
    where = {w: i for i, g in enumerate(got) if (w := role.get(g)) in want[:placed]}
    if list(where) != [w for w in want[:placed] if w in where] or any(i >= placed for i in where.values()):
        guess = [f"`{_rename_of(m, got, want)}` -> `{m}`" for m in want if m not in got and _rename_of(m, got, want)]
        en = f" Rename: {', '.join(guess)}." if guess else ""
        ko = f" 이름 바꾸기: {', '.join(guess)}." if guess else ""
        fail(f"`{cls}.__init__` takes ({', '.join(got)}): the notebook's arguments in another order; the "
             f"notebook's signature is ({', '.join(want)}), and its calls pass them by position.{en} (The other "
             "checks pass each argument by its name.)",
             f"`{cls}.__init__`의 인자가 ({', '.join(got)})입니다: 노트북의 인자가 다른 순서로 있습니다. 노트북의 "
             f"시그니처는 ({', '.join(want)})이고, 노트북의 호출은 위치로 넘깁니다.{ko} (다른 검사는 각 인자를 이름으로 "
             "넘깁니다.)")
    renames = []
    for w, g in zip(want, got):
        # (never one of the notebook's own names into another: (d_in, d_out, num_heads, qkv_bias) lacks
        # context_length and dropout; its num_heads is no rename of context_length)
        if w != g and g not in want:
            renames.append(f"`{g}` -> `{w}`")
    missing = [w for w in want if w not in got]
    guess = [f"`{_rename_of(m, got, want)}` -> `{m}`" for m in missing if _rename_of(m, got, want)]
    todo = ", ".join(dict.fromkeys(guess or renames))
    if not todo and missing:
        names = ", ".join(f"`{m}`" for m in missing)
        fail(f"`{cls}.__init__` takes ({', '.join(got)}); the notebook's signature is ({', '.join(want)}). "
             f"Add {names}.",
             f"`{cls}.__init__`의 인자가 ({', '.join(got)})입니다. 노트북의 시그니처는 ({', '.join(want)})입니다. "
             f"{names}을(를) 추가하세요.")
    if not todo:  # the notebook's names in its order, then more arguments without a default
        extra = ", ".join(f"`{p['name']}`" for p in params[len(want):] if p.get("default") is None)
        fail(f"`{cls}.__init__` takes ({', '.join(got)}); the notebook's signature is ({', '.join(want)}). "
             f"Give {extra} a default value or remove it: the notebook's calls do not pass it.",
             f"`{cls}.__init__`의 인자가 ({', '.join(got)})입니다. 노트북의 시그니처는 ({', '.join(want)})입니다. "
             f"{extra}에 기본값을 주거나 없애세요: 노트북의 호출은 이 인자를 넘기지 않습니다.")
    # What no rename above gives (a missing qkv_bias beside head_num for num_heads): to add.
    renamed_to = {w for w, g in zip(want, got) if w != g and g not in want} if not guess \
        else {m for m in missing if _rename_of(m, got, want)}
    unguessed = ", ".join(f"`{m}`" for m in missing if m not in renamed_to)
    fail(f"`{cls}.__init__` takes ({', '.join(got)}); the notebook's signature is ({', '.join(want)}). "
         f"Rename: {todo}." + (f" Add {unguessed}." if unguessed else ""),
         f"`{cls}.__init__`의 인자가 ({', '.join(got)})입니다. 노트북의 시그니처는 ({', '.join(want)})입니다. "
         f"이름 바꾸기: {todo}." + (f" {unguessed}을(를) 추가하세요." if unguessed else ""))


# ---------------------------------------------------------------------------------------------- mask

def check_mask_buffer(sub, cls: str) -> None:
    ctx = 5
    m, (state,) = build_then(sub, cls, 3, 4, ctx, 0.0, 2, seed=0, steps=[step("state")])
    buffers = state["buffers"]
    if "mask" not in buffers:
        if re.search(r"self\.mask\s*=\s*self\.register_buffer\(", sub.source_text()):
            # Seen: the buffer is made, then replaced by None (register_buffer returns nothing).
            fail(f"`self.mask = self.register_buffer(...)` in `{cls}` stores None: register_buffer returns "
                 "nothing, so the assignment replaces the buffer it just made with None. Call "
                 "self.register_buffer('mask', ...) on its own, without `self.mask =`.",
                 f"`{cls}`의 `self.mask = self.register_buffer(...)`는 None을 저장합니다: register_buffer는 아무것도 "
                 "반환하지 않아서, 방금 만든 버퍼를 None으로 바꿉니다. `self.mask =` 없이 "
                 "self.register_buffer('mask', ...)만 호출하세요.")
        square = sorted(n for n, t in buffers.items() if type(t) is torch.Tensor and t.dim() >= 2
                        and tuple(t.shape[-2:]) == (ctx, ctx) and all(d == 1 for d in t.shape[:-2]))
        if len(square) == 1:  # registered (it moves with .to(device)), under another name than the notebook's
            fail(f"`{cls}` registers its mask as the buffer `{square[0]}`; the notebook (and everything that reads "
                 f"the mask by name, such as a saved state_dict) calls it `mask`: "
                 "self.register_buffer('mask', ...).",
                 f"`{cls}`가 마스크를 `{square[0]}`라는 버퍼로 등록합니다. 노트북(그리고 저장된 state_dict처럼 이름으로 "
                 "마스크를 읽는 모든 것)은 `mask`라고 부릅니다: self.register_buffer('mask', ...).")
        if not square:
            # No mask to keep: forward makes it on the input's device, scaled_dot_product_attention(is_causal=True)
            # with nothing mask-shaped left as a plain attribute (the README's "none at all"). Whether it then
            # masks the future is the causality checks'.
            x_shape = (2, ctx, 3)
            probe = m.probe_devices(x_shape, mask=True)
            plain = [n for n, shape in m.describe().get("tensors", []) if len(shape) >= 2
                     and tuple(shape[-2:]) == (ctx, ctx)]
            # Likewise a causal mask that forward makes on the input's device and fills the scores with
            # (`torch.triu(torch.ones(T, T, device=x.device), diagonal=1)`: a study repo's MultiHeadAttention with a
            # KV cache lost this point, learners round rl14).
            made = probe.get("causal_sdpa") is True or probe.get("forward_mask") is True
            if made and not probe.get("mixed") and not plain:
                expect_working(sub, cls)  # (a forward that calls it and returns something else earns nothing)
                return
        extra = f" (it has buffers {sorted(buffers)})" if buffers else ""
        extra_ko = f" (등록된 버퍼: {sorted(buffers)})" if buffers else ""
        fail(f"`{cls}` has no registered buffer named `mask`{extra}. Create it in __init__ with "
             "self.register_buffer('mask', torch.triu(torch.ones(context_length, context_length), diagonal=1)) "
             "so it moves with .to(device).",
             f"`{cls}`에 `mask`라는 버퍼가 등록되어 있지 않습니다{extra_ko}. __init__에서 "
             "self.register_buffer('mask', torch.triu(torch.ones(context_length, context_length), diagonal=1))로 "
             "만들어야 .to(device)와 함께 이동합니다.")
    mask = expect_tensor(buffers["mask"], f"{cls}.mask")
    want = torch.triu(torch.ones(ctx, ctx), diagonal=1)
    while mask.dim() > 2 and mask.shape[0] == 1:  # stored ready to broadcast, e.g. (1, 1, T, T) as in GPT-2
        mask = mask[0]
    if tuple(mask.shape) != (ctx, ctx):
        fail(f"`{cls}.mask` has shape {tuple(mask.shape)}; with context_length={ctx} it should be ({ctx}, {ctx}).",
             f"`{cls}.mask`의 shape이 {tuple(mask.shape)}입니다. context_length={ctx}이면 ({ctx}, {ctx})여야 합니다.")
    mask = mask.to(torch.float32)
    if torch.equal(mask, want):
        expect_working(sub, cls)
        return
    keep = torch.equal(mask, torch.tril(torch.ones(ctx, ctx))) or torch.equal(mask, 1 - want)
    additive = torch.equal(mask, torch.zeros(ctx, ctx).masked_fill(want.bool(), -torch.inf))
    if keep and _hides_each_tokens_past(m, ctx):
        # The positions to keep, used as the positions to hide (`masked_fill(mask.bool(), -inf)`): each token sees
        # only its future, and the last one nothing.
        fail(f"`{cls}.mask` marks the positions to keep (tril); the -inf fill needs the positions to hide: "
             "torch.triu(torch.ones(n, n), diagonal=1).",
             f"`{cls}.mask`가 남길 위치(tril)를 표시합니다. -inf로 채울 위치, 즉 "
             "torch.triu(torch.ones(n, n), diagonal=1)이어야 합니다.")
    if keep or additive:
        # The same mask stored the other common ways: the positions to keep (tril, filled where `mask == 0`) or an
        # additive -inf/0 mask. Judged as the notebook's triu is: a bug elsewhere in forward is charged where it
        # lives (a keep mask was charged, and told to become triu, for a softmax masked afterwards).
        expect_working(sub, cls)
        return
    if torch.equal(mask, torch.triu(torch.ones(ctx, ctx), diagonal=0)):
        fail(f"`{cls}.mask` also hides the diagonal (diagonal=0): a token must be able to attend to itself. "
             "Use diagonal=1.",
             f"`{cls}.mask`가 대각선까지 가립니다(diagonal=0). 토큰은 자기 자신을 볼 수 있어야 하므로 diagonal=1을 쓰세요.")
    if torch.equal(mask, torch.tril(torch.ones(ctx, ctx), diagonal=1)):
        # Learners round rl14: triu swapped for tril, diagonal=1 kept (twice, in two study repos); this check said
        # only that the mask is not triu, beside a forward whose masked_fill result was thrown away.
        fail(f"`{cls}.mask` is torch.tril(..., diagonal=1) (tril for triu): it marks each token, the next one and "
             "every earlier one, so the -inf fill would hide the past and show the future. Use "
             "torch.triu(torch.ones(context_length, context_length), diagonal=1).",
             f"`{cls}.mask`가 torch.tril(..., diagonal=1)입니다(triu 대신 tril): 각 토큰 자신과 다음 토큰, 앞의 모든 "
             "토큰을 표시하므로 -inf로 채우면 과거를 가리고 미래를 보게 됩니다. "
             "torch.triu(torch.ones(context_length, context_length), diagonal=1)을 쓰세요.")
    fail(f"`{cls}.mask` is not torch.triu(torch.ones({ctx}, {ctx}), diagonal=1).",
         f"`{cls}.mask`가 torch.triu(torch.ones({ctx}, {ctx}), diagonal=1)과 다릅니다.")


def _hides_each_tokens_past(m, ctx: int) -> bool:
    """Whether the module's last token gets no output at all (NaN): what a mask of the positions to keep does when
    the -inf fill uses it as the positions to hide. False when the call fails (the other checks say why)."""
    try:
        out = m(randn(424242, 2, ctx, 3))
    except CheckFailure:
        return False
    return type(out) is torch.Tensor and out.dim() == 3 and out.shape[1] == ctx and bool(torch.isnan(out[:, -1]).all())


def permuted_features(weights: dict, d_in: int, perm: torch.Tensor) -> dict:
    """The weights of the same function for inputs whose features are permuted by `perm`: x[..., perm] with
    these weights gives what x gives with the originals (an nn.Linear weight is (out, in), a raw matrix (in, out)).
    An nn.Linear weight (`....weight`) takes its input along its columns only: one whose rows number d_in is a
    layer whose output is d_in wide (an out_proj written nn.Linear(d_out, d_in)), and permuting its rows made a
    causal module read as not causal (a learner's notebook)."""
    out = {}
    for n, t in weights.items():
        if t.dim() == 2 and t.shape[1] == d_in:
            t = t[:, perm]
        elif t.dim() == 2 and t.shape[0] == d_in and not n.endswith(".weight"):
            t = t[perm]
        out[n] = t.contiguous()
    return out


def _causal_at_length(sub, cls: str, m, moved: dict, perm, shape: tuple, ctx: int, heads: int, seed: int,
                      off) -> bool:
    """Whether, at one length, changing the tokens from each position on leaves every earlier token's output as it
    was: the module is causal at this length, even where its outputs differ from those of a shorter input (they
    depend on how many tokens there are, not on what the later tokens are).

    Each pair compares inputs never seen before that share their first tokens: one given to the student's module
    `m`, the other, with its later tokens changed, to a fresh build holding the weights permuted to match its
    permuted features (`moved`, as check_causality's truth), so no output remembered from another call can be
    replayed (a module that replays the rows of a prefix it has seen, its mask left out, passed a comparison of two
    calls of the same module)."""
    b, T, d_in, d_out = shape
    firsts, seconds = [], []
    for j in range(1, T):
        z = randn(seed + 100 + j, b, T, d_in)
        firsts.append(z)
        later = z.clone()
        later[:, j:, :] = randn(seed + 200 + j, b, T - j, d_in) * 3
        seconds.append(later[:, :, perm])
    try:
        _fresh, values = build_then(sub, cls, d_in, d_out, ctx, 0.0, heads, seed=seed, lenient=True,
                                    steps=[step("load_state", moved), *(step("call", z) for z in seconds)])
        taken(values[0])
        theirs = [taken(v)["out"] for v in values[1:]]
    except CheckFailure:
        return False
    mine = m.calls(*((z,) for z in firsts), lenient=True)
    for j, (y, want) in enumerate(zip(mine, theirs), start=1):
        if type(y) is not torch.Tensor or type(want) is not torch.Tensor or y.shape != want.shape \
                or y.dim() != 3 or y.shape[:2] != (b, T) or off(y[:, :j], want[:, :j]) > 1e-5:
            return False
    # Every earlier row must follow its own tokens (the last two inputs share none): rows that never move at all
    # never move when later tokens change either, which shows nothing. A module that attended for its last token
    # only and left every earlier row zero passed here (red team, round 27).
    if T > 2:
        moved_rows = (mine[-1][:, :T - 1].double() - mine[-2][:, :T - 1].double()).abs().amax(dim=(0, 2))
        if not bool((moved_rows > 1e-6).all()):
            return False
    return True


def check_causality(sub, cls: str, seed: int, b: int = 2, T: int = 6, d_in: int = 5, d_out: int = 4,
                    heads: int = 2, ctx: int | None = None) -> None:
    """Each token's output must equal what the same function gives when the input ends at that token.

    The expected rows come from fresh calls whose input holds no future at all, with the input's features
    permuted and the weights permuted to match (the same function, but inputs the module has never seen, so
    outputs remembered from other calls cannot be replayed); then the whole sequence and a copy with its later
    tokens changed must reproduce them. A module that does nothing earns nothing (expect_working).
    """
    expect_working(sub, cls)
    ctx = ctx or T
    x = randn(seed, b, T, d_in)
    k = T // 2
    x2 = x.clone()
    x2[:, k:, :] = randn(seed + 1, b, T - k, d_in) * 3
    m, (state,) = build_then(sub, cls, d_in, d_out, ctx, 0.0, heads, seed=seed, steps=[step("state")])
    weights = {n: t for n, t in state["params"].items() if type(t) is torch.Tensor}
    perm = torch.roll(torch.arange(d_in), 2)
    moved = permuted_features(weights, d_in, perm)
    truth = []
    # context_length = t + 1, so the mask fits the shorter input exactly (every build in one round trip, each
    # reply taken in order as if sent alone).
    builds = [(d_in, d_out, t + 1, 0.0, heads, seed, [step("load_state", moved), step("call", x[:, :t + 1, perm])])
              for t in range(T)]
    for t, (_mt, values) in enumerate(build_each_then(sub, cls, builds)):
        taken(values[0])
        yt = expect_tensor(taken(values[1])["out"], f"{cls}(...)(x[:, :{t + 1}])")
        # Every row the same width as the first (red team: an output that dropped a feature where context_length < 3
        # made torch.stack below raise, read as the grader's internal error).
        width = truth[0].shape[-1] if truth else (yt.shape[-1] if yt.dim() else 0)
        if yt.dim() != 3 or tuple(yt.shape[:2]) != (b, t + 1) or yt.shape[-1] != width:
            expect_shape(yt, (b, t + 1, width), f"{cls}(...)(x[:, :{t + 1}])")
        truth.append(yt[:, t])
    truth_t = torch.stack(truth, dim=1)
    outs = m.calls((x,), (x2,), lenient=True)
    y1 = expect_shape(taken(outs[0]), tuple(truth_t.shape), f"{cls}(...)(x)")
    y2 = expect_shape(taken(outs[1]), tuple(truth_t.shape), f"{cls}(...)(x)")
    if not bool(torch.isfinite(truth_t).all()):
        bad = int((~torch.isfinite(truth_t)).nonzero()[0][1])
        fail(f"`{cls}` gives NaN or inf for token {bad}, so its causality cannot be shown: the mask must leave "
             "each token able to see itself (torch.triu(..., diagonal=1)).",
             f"`{cls}`가 토큰 {bad}에 대해 NaN이나 inf를 냅니다. 그래서 코잘(causal)임을 보일 수 없습니다: 마스크는 각 토큰이 "
             "자기 자신을 볼 수 있게 두어야 합니다 (torch.triu(..., diagonal=1)).")

    def off(a: torch.Tensor, want: torch.Tensor) -> float:
        diff = (a.double() - want.double()).abs() - 1e-4 * want.double().abs()
        diff = torch.where(torch.isfinite(diff), diff, torch.full_like(diff, float("inf")))
        return float(diff.max())

    leak = max(off(y1[:, :k], y2[:, :k]), 0.0)
    if leak <= 1e-5 and (off(y1, truth_t) > 1e-5 or off(y2[:, :k], truth_t[:, :k]) > 1e-5) \
            and _causal_at_length(sub, cls, m, moved, perm, (b, T, d_in, d_out), ctx, heads, seed, off):
        # No later token's value reaches an earlier output; only the number of tokens does (scores scaled by
        # sqrt(num_tokens)). That is a wrong value, charged by the value checks that name it, not a leak from the
        # future: this check said "it depends on later tokens", a wrong cause (learners' round, session 16).
        return
    if off(y1, truth_t) > 1e-5 or off(y2[:, :k], truth_t[:, :k]) > 1e-5 or leak > 1e-5:
        if leak > 1e-5:
            what = Message(f"`{cls}` is not causal: changing tokens {k}..{T - 1} changed the outputs of tokens "
                           f"0..{k - 1} (by up to {leak:.3g}).",
                           f"`{cls}`는 코잘(causal)이 아닙니다: 토큰 {k}..{T - 1}을 바꾸자 토큰 0..{k - 1}의 출력이 최대 "
                           f"{leak:.3g} 바뀌었습니다.")
        else:
            worst = max(off(y1, truth_t), off(y2[:, :k], truth_t[:, :k]))
            what = Message(f"`{cls}` is not causal: a token's output differs (by up to {worst:.3g}) from what the "
                           "same weights give when the input ends at that token, so it depends on later tokens.",
                           f"`{cls}`는 코잘(causal)이 아닙니다: 어떤 토큰의 출력이, 입력이 그 토큰에서 끝날 때 같은 가중치가 "
                           f"내는 출력과 최대 {worst:.3g} 다릅니다. 즉 뒤의 토큰에 의존합니다.")
        named = explain(sub, m, x)(y1)
        if named is not None:
            raise CheckFailure(named + what)
        line = dropped_masked_fill(sub, (cls, "forward"))
        if line is not None:  # not named by the table where the module has weights of its own (an unused W_out)
            raise CheckFailure(what + Message(
                f"Line {line} of your forward calls .masked_fill(...) and drops its result: masked_fill returns a "
                "new tensor and leaves the scores as they were. Keep it: scores = scores.masked_fill(...), or use "
                "masked_fill_ (in place).",
                f"forward의 {line}번째 줄이 .masked_fill(...)을 호출하고 결과를 버립니다: masked_fill은 새 텐서를 "
                "반환하고 점수는 그대로 둡니다. 결과를 저장하거나(scores = scores.masked_fill(...)) masked_fill_"
                "(제자리 연산)을 쓰세요."))
        raise CheckFailure(what + Message(
            "Look for: a mask that does not reach the softmax (`scores.masked_fill(...)` returns a new tensor: "
            "assign it, or use masked_fill_), the future filled with 0 instead of -inf (a score of 0 still gets "
            "weight), weights masked after the softmax (the visible ones then no longer sum to 1), a softmax over "
            "another axis than the keys (dim=-1), or tokens mixed by a reshape.",
            "확인할 것: softmax에 닿지 않는 마스크(`scores.masked_fill(...)`은 새 텐서를 반환하므로 대입하거나 "
            "masked_fill_을 쓰세요), -inf 대신 0으로 채운 미래 위치(점수 0도 가중치를 받음), softmax 뒤에 가린 "
            "가중치(보이는 가중치의 합이 더 이상 1이 아님), 키 축(dim=-1)이 아닌 축에 대한 softmax, reshape로 섞인 "
            "토큰."))


def expect_responds(y1, y2, cls: str, what: str) -> None:
    """Properties that a constant output satisfies (causality, eval-mode dropout) also need an output that
    follows its input; otherwise hard-coded tensors would pass them."""
    if y1.shape == y2.shape and bool(torch.isfinite(y1).all()) and (y1 - y2).abs().max().item() <= 1e-7:
        fail(f"`{cls}` gave the same output after {what} of the input changed: the output does not depend on "
             "the input (hard-coded values?).",
             f"입력의 {what}을(를) 바꿔도 `{cls}`의 출력이 같습니다: 출력이 입력에 의존하지 않습니다 (값을 고정했나요?).")


def check_short_sequence(sub, cls: str, seed: int) -> None:
    """A batch shorter than context_length must work (the mask is sliced to num_tokens)."""
    expect_working(sub, cls)
    ctx, T, b, d_in, d_out, heads = 8, 5, 2, 3, 4, 2
    x = randn(seed, b, T, d_in)
    m, (res,) = build_then(sub, cls, d_in, d_out, ctx, 0.0, heads, seed=seed, steps=[step("call", x)], lenient=True)
    width = d_out * heads if cls == "MultiHeadAttentionWrapper" else d_out
    try:
        y = taken(res)["out"]
    except CheckFailure as e:
        if "[:num_tokens, :num_tokens]" in e.message.en:  # (the failure says so already: proxy._mask_hint)
            raise
        raise CheckFailure(e.message + Message(
            f"(Input had {T} tokens with context_length={ctx}: slice the mask with [:num_tokens, :num_tokens].)",
            f"(입력 토큰 {T}개, context_length={ctx}: 마스크를 [:num_tokens, :num_tokens]로 잘라 쓰세요.)")) from None
    expect_shape(y, (b, T, width), call_text(cls, d_in, d_out, ctx, 0.0, heads))
    check_lengths_reused(m, x, y, ctx, call_text(cls, d_in, d_out, ctx, 0.0, heads))


def check_lengths_reused(m, x: torch.Tensor, y, ctx: int, what: str) -> None:
    """The module `m`, already called once on `x` (fewer tokens than context_length) with output `y`, called next on
    context_length tokens and then on `x` again, must work and give `y` again. Red team, round 16: a mask made for the
    first input's length and kept (`if not hasattr(self, "_m"): self.register_buffer("_m", mask[:T, :T])`) fails on
    any later input of another length, as text generation makes, and kept full marks: every check called each module
    at one length only."""
    T = x.shape[-2]
    if T >= ctx:
        return
    full = randn(4711, *x.shape[:-2], ctx, x.shape[-1])
    outs = m.calls((full,), (x,), lenient=True)
    for n, o in zip((ctx, T), outs):
        if isinstance(o, CheckFailure):
            raise CheckFailure(Message(
                f"`{what}` worked on {T} tokens, but the same module called next on {n} tokens failed: ",
                f"`{what}`이(가) 토큰 {T}개에서는 동작했지만, 같은 모듈을 이어서 토큰 {n}개로 호출하자 실패했습니다: ")
                + o.message + Message(
                " Does forward make its mask for the first input's length and keep it? Slice the registered mask "
                "with [:num_tokens, :num_tokens] in every call.",
                " forward가 첫 입력의 길이에 맞춘 마스크를 만들어 계속 쓰나요? 호출할 때마다 등록된 마스크를 "
                "[:num_tokens, :num_tokens]로 잘라 쓰세요."), o.staff) from None
    expect_close(expect_tensor(outs[1], what), y,
                 described(what, f"on the same {T} tokens again, after a call on {ctx} tokens",
                           f"(토큰 {ctx}개로 호출한 뒤 같은 토큰 {T}개로 다시 호출)"),
                 hint=Message("Each call must depend only on its own input: slice the registered mask with "
                              "[:num_tokens, :num_tokens] in every call instead of keeping one made for an earlier "
                              "input's length.",
                              "각 호출은 자기 입력에만 의존해야 합니다: 이전 입력의 길이에 맞춘 마스크를 계속 쓰지 말고 "
                              "호출할 때마다 등록된 마스크를 [:num_tokens, :num_tokens]로 잘라 쓰세요."))


def _close_enough(a, b) -> bool:
    """Whether two outputs are the same tensor within expect_close's default tolerance (shapes alike, finite)."""
    if type(a) is not torch.Tensor or type(b) is not torch.Tensor or a.shape != b.shape or not a.is_floating_point():
        return False
    a, b = a.detach().double(), b.detach().double()
    return bool(torch.isfinite(a).all()) and bool(((a - b).abs() <= 1e-4 + 1e-4 * b.abs()).all())


def check_eval_no_dropout(sub, cls: str, seed: int) -> None:
    """In eval mode dropout is the identity: p=0.5 and p=0.0 with the same weights give the same output."""
    expect_working(sub, cls)
    b, T, d_in, d_out, heads = 2, 5, 5, 4, 2  # d_in != d_out: the input's features can be permuted (below)
    x = randn(seed, b, T, d_in)
    # (both built and the dropout=0.0 one called in one round trip, then the other's two calls in one: the same
    # requests in the same order as one by one, each reply taken in order)
    (with_p, _none), (without, (want,)) = _each_taken(build_each_then(sub, cls, [
        (d_in, d_out, T, 0.5, heads, seed, []),
        (d_in, d_out, T, 0.0, heads, seed, [step("call", x, mode="eval", seed=1)])]))
    want = want["out"]
    calls = with_p.calls((x,), (x * 2 + 1,), mode="eval", seed=1, lenient=True)
    got = expect_tensor(taken(calls[0]), f"{call_text(cls, d_in, d_out, T, 0.5, heads)}")
    expect_responds(got, expect_tensor(taken(calls[1]), f"{cls}(...)(x)"), cls, "all")
    # Once more with the input's features permuted and the weights to match, where that is shown to be the same
    # function (dropout=0.0, a third input): inputs the module has never seen, so that an output kept from the
    # dropout=0.0 call cannot stand in for the dropout=0.5 one (red team s17: a forward that dropped in eval mode and
    # handed back the first output it gave for each input and weights passed this check).
    perm = torch.roll(torch.arange(d_in), 2)
    state = {n: v for n, v in without.state()["params"].items() if type(v) is torch.Tensor and v.is_floating_point()}
    moved = permuted_features(state, d_in, perm)
    x3 = randn(seed + 1, b, T, d_in)
    # (each module's calls in one round trip, the same requests in the same order as one by one; the weights are put
    # back whatever happens, as a `finally` would: the diagnosis below reads them)
    try:
        e, _, twin, _ = without.seq(step("call", x3, mode="eval", seed=1), step("load_state", moved),
                                    step("call", x3[..., perm], mode="eval", seed=1), step("load_state", state))
    except CheckFailure as failure:
        if getattr(failure, "step", None) == 2:
            without.load_state(state)
        raise
    same = _close_enough(twin["out"], e["out"])
    if same:  # (the two modules were built alike: the dropout=0.5 one gets the same weights back afterwards)
        try:
            _, res, _ = with_p.seq(step("load_state", moved), step("call", x[..., perm], mode="eval", seed=1),
                                   step("load_state", state))
        except CheckFailure as failure:
            if getattr(failure, "step", None) == 1:
                with_p.load_state(state)
            raise
        got = expect_tensor(res["out"], f"{call_text(cls, d_in, d_out, T, 0.5, heads)}")
    expect_close(got, want,
                 described(call_text(cls, d_in, d_out, T, 0.5, heads), "in eval mode", "(eval 모드)"),
                 explain=explain(sub, with_p, x, seed=1),
                 hint=Message("In eval mode dropout must do nothing: use the nn.Dropout module (self.dropout), "
                              "which follows model.eval(), not F.dropout(..., training=True).",
                              "eval 모드에서는 dropout이 아무 일도 하지 않아야 합니다. F.dropout(..., training=True) "
                              "대신 model.eval()을 따르는 nn.Dropout 모듈(self.dropout)을 쓰세요."))


# ---------------------------------------------------------------------------------------------- heads
#
# The wrapper is judged relative to the student's own CausalAttention: a fault that a single head shows on its
# own (a misspelt class name, an unsliced mask, a broken mask, ...) is charged to CausalAttention only.

HEAD = "CausalAttention"


def head_class(sub) -> str:
    """The student's head class: CausalAttention, or the misspelling their wrapper uses consistently (e.g.
    CasualAttention; the CausalAttention checks already say to rename it). Call after building something."""
    if HEAD in sub.names:
        return HEAD
    own = [n for n, k in sub.names.items() if k == "class" and n not in SIGNATURES
           and n.isidentifier() and not keyword.iskeyword(n)]
    # With the classes whose `class` statement raised (`class CasualAttention(nn.module):`): the wrapper still
    # builds that name, so the stand-in must go under it (learners round rl16: the stand-in went under
    # CausalAttention, the wrapper raised NameError on its CasualAttention and lost its 15 points to the heads'
    # fault, beside a note saying it had been graded with stand-in heads).
    raised = [e["defines"] for e in getattr(sub, "load_errors", ()) if e.get("defines") and not e.get("rerun")
              and str((e.get("where") or {}).get("code", "")).startswith("class ")]
    own += [n for n in raised if type(n) is str and n not in sub.names and n not in SIGNATURES and n.isidentifier()
            and not keyword.iskeyword(n)]
    near = near_miss(HEAD, own)
    wrapper = "MultiHeadAttentionWrapper" if "MultiHeadAttentionWrapper" in sub.names \
        else rename_hint("MultiHeadAttentionWrapper", own, SIGNATURES)
    body = re.search(rf"^class[ \t]+{re.escape(wrapper)}\b.*?(?=^\S|\Z)", sub.source_text(), re.M | re.S) \
        if wrapper else None
    calls = set(re.findall(r"\b([A-Za-z_]\w*)[ \t]*\(", body.group(0))) if body else set()
    # The misspelling, unless the wrapper builds the notebook's name and not it: then its heads are the notebook's
    # CausalAttention, which the file does not define, and the wrapper is judged with the stand-in heads under that
    # name (the misspelling is charged under CausalAttention; the wrapper raised NameError in every check and lost its
    # 15 points, learners' round, session 16)
    if near and HEAD in calls and near not in calls:
        return HEAD
    if near:
        return near
    # Else the one class of the student's own that the wrapper's code builds (learners round rl14: a study repo's
    # heads are its MaskedAttention; the wrapper was judged against stand-in heads it never built, and lost 10 of
    # its 15 points for a head class that CausalAttention's question already charges). The wrapper under its own
    # misspelling too (MultiHeadAttentionWraper, MultiheadAttentionWrapper: its checks say to rename it): its heads'
    # class was told only that CausalAttention is not defined (learners' round, session 16).
    built = {n for n in calls if n in own and n != wrapper}
    return built.pop() if len(built) == 1 else HEAD


def build_head(sub, d_in: int, d_out: int, ctx: int, dropout: float = 0.0, seed: int | None = None, *more):
    """One of the wrapper's heads built alone: the student's CausalAttention, or the stand-in that the wrapper
    is judged with where that does not work."""
    spec = stand_in(sub)
    if spec:
        return sub.new(spec["name"], *head_args(sub, spec, d_in, d_out, ctx, dropout, *more), seed=seed,
                       stand_in=spec)
    return sub.new(head_class(sub), *head_args(sub, None, d_in, d_out, ctx, dropout, *more), seed=seed)


def _in_own_order(sub, cls: str, names: tuple, values: tuple) -> tuple:
    """`values` (for `names`, in the notebook's order) placed as `cls.__init__` takes them, where its first
    arguments are the notebook's names in another order (dropout before context_length): the heads the grader
    builds beside a wrapper are then the heads the wrapper builds. Else as given."""
    own = _own_names(sub, cls, names, HEAD_ARGS)  # (renames too: (d_in, context_len, d_out, droupout))
    if not own:
        return tuple(values)
    got = [p.get("name") for p in sub.signature(cls) if p.get("kind") == "POSITIONAL_OR_KEYWORD"][:len(names)]
    role = {g: w for w, g in own.items()}
    if got == [own[w] for w in names] or sorted(got) != sorted(own.values()):
        return tuple(values)
    by_name = dict(zip(names, values))
    return tuple(by_name[role[g]] for g in got)


def head_args(sub, spec: dict | None, d_in: int, d_out: int, ctx: int, dropout: float, *more) -> tuple:
    """A head's constructor arguments: in the notebook's order, or, for the stand-in (spec), in the order of the
    student's own head, which the stand-in takes (see _stand_in_for)."""
    given = (d_in, d_out, ctx, dropout, *more)
    if not spec:
        return _in_own_order(sub, head_class(sub), HEAD_ARGS[:len(given)], given)
    names = _stand_in_names(sub, head_class(sub))
    if not names:
        return given
    by_role = dict(zip(HEAD_ARGS, given))
    return tuple(by_role[r] for r in names if r in by_role)


# The grader's stand-in head. Where the student's CausalAttention does not work (it raises, returns a constant, is
# missing), the wrapper is built with this class in place of theirs, so that the wrapper is judged on its own code
# (its heads in a ModuleList, built in order with the arguments it was given, concatenated on the last axis): a
# fault of the heads is charged to CausalAttention only, and the wrapper still earns nothing it did not compute.
# It is deliberately NOT the lab's answer (causal weights from a sigmoid of the raw scores, normalised by their sum:
# no softmax, no scaling, no -inf fill): it runs in the student's process, where code can read it and print it, and
# a class there can hand out its instances. It passes the evidence gate a wrapper's heads must pass.
# It has the notebook's constructor, parameter names and mask buffer, so every check of the wrapper can run on it.
STAND_IN_SOURCE = '''
class CausalAttention(nn.Module):
    """The grader's stand-in head (not the lab's answer): causal weights from a sigmoid of the scores."""

    def __init__(self, d_in, d_out, context_length, dropout, qkv_bias=False):
        super().__init__()
        self.d_out = d_out
        self.W_query = nn.Linear(d_in, d_out, bias=qkv_bias)
        self.W_key = nn.Linear(d_in, d_out, bias=qkv_bias)
        self.W_value = nn.Linear(d_in, d_out, bias=qkv_bias)
        self.dropout = nn.Dropout(dropout)
        self.register_buffer("mask", torch.triu(torch.ones(context_length, context_length), diagonal=1))

    def forward(self, x):
        T = x.shape[1]
        keep = 1 - self.mask[:T, :T].to(x.dtype)
        w = torch.sigmoid(self.W_query(x) @ self.W_key(x).transpose(1, 2)) * keep
        return self.dropout(w / w.sum(dim=-1, keepdim=True)) @ self.W_value(x)
'''

# Registered by the hidden checks (grading only): `fn(sub, m, x, what)` fails unless `m`, built as the notebook
# builds it, also gives the reference's output on an input of x's shape that it has never seen. A file could
# return the notebook's printed figures for the notebook's own input, which the public checks alone cannot tell.
CONFIRM: dict[str, Callable] = {}


def confirm_figures(sub, m, x, what: str) -> None:
    """After a module matched the notebook's printed figures: the same on a fresh input (where graded)."""
    fn = CONFIRM.get("module")
    if fn is not None:
        fn(sub, m, x, what)
_STAND_IN_USED: "weakref.WeakKeyDictionary[object, bool]" = weakref.WeakKeyDictionary()


def stand_in(sub) -> dict[str, str] | None:
    """The stand-in for this submission's heads, or None where its own CausalAttention works (or where there is
    none to offer). Decided once per submission, from the head class's evidence check."""
    if sub not in _STAND_IN_USED:
        sub.require("MultiHeadAttentionWrapper")  # loads the names; a missing wrapper fails here as in build
        head = head_class(sub)
        try:
            expect_working(sub, head)
            _STAND_IN_USED[sub] = False
            if _wrapper_misplaces_head_args(sub, head):
                _STAND_IN_USED[sub] = True
                sub.notes.append(Message(
                    f"MultiHeadAttentionWrapper was graded with the grader's stand-in heads in place of your `{head}`, "
                    "which takes its arguments in another order than the notebook's, the order your wrapper passes "
                    "them in: the wrapper's own code earns its points, and the order costs points under "
                    "CausalAttention only.",
                    f"MultiHeadAttentionWrapper는 `{head}` 대신 채점기의 대체 헤드로 채점했습니다. `{head}`는 인자를 "
                    "노트북과 다른 순서로 받는데, 래퍼는 노트북의 순서로 넘깁니다: 래퍼는 자기 코드로 점수를 받고, "
                    "순서는 CausalAttention에서만 감점됩니다."))
                sub.taint({"MultiHeadAttentionWrapper"}, needless=_gate_failed_of(sub))
                return _stand_in_spec(sub)
        except CheckFailure:
            _STAND_IN_USED[sub] = True
            if not unfinished(sub, "MultiHeadAttentionWrapper") and head != HEAD:
                # Under another name its checks say only to rename it (learners' round, session 16): "see its
                # checks" sent the student to messages that never say why the heads do not work.
                sub.notes.append(Message(
                    f"MultiHeadAttentionWrapper was graded with the grader's stand-in heads in place of your `{head}`, "
                    f"which does not work yet: rename it to `{HEAD}`, and the checks of {HEAD} will say why. The "
                    f"wrapper's own code earns its points, and the heads' fault costs points under {HEAD} only.",
                    f"MultiHeadAttentionWrapper는 아직 동작하지 않는 `{head}` 대신 채점기의 대체 헤드로 채점했습니다: "
                    f"`{head}`의 이름을 `{HEAD}`(으)로 바꾸면 {HEAD}의 검사가 이유를 알려 줍니다. 래퍼는 자기 코드로 "
                    f"점수를 받고, 헤드의 잘못은 {HEAD}에서만 감점됩니다."))
            elif HEAD not in sub.names and not unfinished(sub, "MultiHeadAttentionWrapper"):
                # (the wrapper builds the notebook's name, which the file does not define: see head_class)
                sub.notes.append(Message(
                    f"MultiHeadAttentionWrapper builds `{HEAD}` heads, and your file does not define `{HEAD}`: it was "
                    "graded with the grader's stand-in heads under that name. The wrapper's own code earns its "
                    f"points, and the missing name costs points under {HEAD} only (see its checks).",
                    f"MultiHeadAttentionWrapper는 `{HEAD}` 헤드를 만드는데, 파일에 `{HEAD}`가 정의되어 있지 "
                    "않습니다: 그 이름의 채점기 대체 헤드로 채점했습니다. 래퍼는 자기 코드로 점수를 받고, 빠진 "
                    f"이름은 {HEAD}에서만 감점됩니다 (해당 검사 참고)."))
            elif not unfinished(sub, "MultiHeadAttentionWrapper"):  # (of a skeleton's wrapper, the note misleads)
                sub.notes.append(Message(
                    f"MultiHeadAttentionWrapper was graded with the grader's stand-in heads in place of your `{head}`, "
                    "which does not work yet (see its checks): the wrapper's own code earns its points, and the heads' "
                    "fault costs points under CausalAttention only.",
                    f"MultiHeadAttentionWrapper는 아직 동작하지 않는 `{head}` 대신 채점기의 대체 헤드로 채점했습니다 "
                    "(해당 검사 참고): 래퍼는 자기 코드로 점수를 받고, 헤드의 잘못은 CausalAttention에서만 감점됩니다."))
    if not _STAND_IN_USED[sub]:
        return None
    sub.taint({"MultiHeadAttentionWrapper"}, needless=_gate_failed_of(sub))
    return _stand_in_spec(sub)


HEAD_ARGS = ("d_in", "d_out", "context_length", "dropout", "qkv_bias")


def _gate_failed_of(sub) -> Callable[[str], bool]:
    """_gate_failed for this submission, holding it weakly (the submission keeps the function)."""
    ref = weakref.ref(sub)
    return lambda question: ref() is not None and _gate_failed(ref(), question)


def _gate_failed(sub, question: str) -> bool:
    """Whether `question` is a class whose evidence gate has already failed: none of its checks can earn anything,
    so they need no fresh worker after a stand-in (Submission.taint)."""
    return (_EVIDENCE.get(sub) or {}).get(question) is not None


def _wrapper_misplaces_head_args(sub, head: str) -> bool:
    """Whether the student's head takes the notebook's arguments in another order (the grader builds it by name,
    so it works) while their wrapper passes them in the notebook's order: the wrapper is right for the notebook's
    head, and its own heads get the wrong numbers (the heads' fault, CausalAttention's signature)."""
    try:
        params = sub.signature(head)
    except CheckFailure:
        return False
    got = [p.get("name") for p in params if p.get("kind") == "POSITIONAL_OR_KEYWORD"][:4]
    return sorted(got) == sorted(HEAD_ARGS[:4]) and got != list(HEAD_ARGS[:4]) and not _stand_in_names(sub, head)


def _stand_in_spec(sub) -> dict[str, str]:
    """new()'s stand_in: the grader's heads, under the name the student's wrapper builds, taking the arguments in
    the order and under the names of the student's own head (a learner's CausalAttention(d_in, d_out, dropout,
    context_length) is built by their wrapper in that order: the notebook's order crashed the stand-in, and the
    wrapper, right for its own heads, got 0/15)."""
    head = head_class(sub)  # (an identifier: no line of the stand-in's source is made from anything else)
    alias = "" if head == HEAD else f"\n{head} = {HEAD}\n"  # the wrapper builds the student's (misspelt) name
    source = _stand_in_for(sub, head) + alias
    if _wrapper_takes_pairs(sub, head, source):
        source = source.replace(STAND_IN_RETURN, STAND_IN_RETURN_PAIR)
    return {"name": head, "source": source}


STAND_IN_RETURN = "        return self.dropout(w / w.sum(dim=-1, keepdim=True)) @ self.W_value(x)\n"
STAND_IN_RETURN_PAIR = ("        weights = self.dropout(w / w.sum(dim=-1, keepdim=True))\n"
                        "        return weights @ self.W_value(x), weights\n")


def head_value(sub, out: Any) -> Any:
    """A head's output as the wrapper takes it: the context of the stand-in's (context, weights) where the stand-in
    returns that pair (_wrapper_takes_pairs); anything else as it is."""
    if type(out) is tuple and len(out) == 2 and sub.memo.get(("wrapper_takes_pairs", head_class(sub))):
        return out[0]
    return out


def _wrapper_takes_pairs(sub, head: str, source: str) -> bool:
    """Whether the student's head returns (context, weights) and their wrapper takes its heads' outputs so
    (`head(x)[0]`): where it fails with the stand-in returning a tensor and works with one returning that pair, the
    stand-in returns the pair. The pair is CausalAttention's fault, charged there; the wrapper fitted to it lost 9
    of 15 to the stand-in's tensor (learners round 8). Decided once per submission."""
    key = ("wrapper_takes_pairs", head)
    if key not in sub.memo:
        sub.memo[key] = False
        x = torch.ones(2, 4, 3)
        try:
            own = sub.new(head, *head_args(sub, None, 3, 2, 4, 0.0), seed=0)(x)
            pair = type(own) in (tuple, list) and len(own) == 2 and type(own[0]) is torch.Tensor \
                and tuple(own[0].shape) == (2, 4, 2)
        except CheckFailure:
            pair = False
        if pair:
            def wrapper_shape(spec) -> tuple | None:
                try:
                    y = sub.new("MultiHeadAttentionWrapper", 3, 2, 4, 0.0, 2, seed=0, stand_in=spec)(x)
                except CheckFailure:
                    return None
                return tuple(y.shape) if type(y) is torch.Tensor else None
            pair_source = source.replace(STAND_IN_RETURN, STAND_IN_RETURN_PAIR)
            sub.memo[key] = wrapper_shape({"name": head, "source": source}) != (2, 4, 4) and \
                wrapper_shape({"name": head, "source": pair_source}) == (2, 4, 4)
    return sub.memo[key]


def _stand_in_names(sub, head: str) -> dict[str, str]:
    """The notebook's argument -> the student's head's name for it, in the student's order; {} where the
    arguments are the notebook's, cannot be told apart, or the student's wrapper does not build its heads that way
    (a wrapper that follows the notebook beside a head that does not: the head's fault, charged there only). Then
    the stand-in takes the notebook's. Decided once per submission."""
    key = ("stand_in_names", head)
    if key not in sub.memo:
        named = _head_names(sub, head)
        if named:
            alias = "" if head == HEAD else f"\n{head} = {HEAD}\n"
            # (a wrapper that takes its own arguments in another order too is built by their names)
            own = _reordered_names(sub, "MultiHeadAttentionWrapper", 4, {"num_heads": 2}) or {}
            call = dict(zip(SIGNATURES["MultiHeadAttentionWrapper"], (3, 2, 4, 0.0, 2)))
            args, kw = ((), {own[k]: v for k, v in call.items()}) if own else (tuple(call.values()), {})
            try:  # the wrapper builds such heads (the call the notebook's wrapper makes)
                sub.new("MultiHeadAttentionWrapper", *args, seed=0, **kw,
                        stand_in={"name": head, "source": _reordered(named) + alias})
            except CheckFailure:
                named = {}
        sub.memo[key] = named
    return sub.memo[key]


def _source_init_args(sub, head: str) -> list[str] | None:
    """The parameters of `class head`'s __init__ as the submission's source writes them (the last definition),
    read in the grader: a signature asked of the worker is the submission's to forge (__signature__)."""
    init = method_node(sub, head, "__init__")
    return [a.arg for a in init.args.posonlyargs + init.args.args][1:] if init is not None else None


def _head_names(sub, head: str) -> dict[str, str]:
    params = _source_init_args(sub, head)
    if not params:
        return {}
    roles: list[str] = []
    for name in params:
        role = name if name in HEAD_ARGS else next((w for w in HEAD_ARGS if _renamed(w, name)), "")
        if not role or role in roles or not name.isidentifier() or keyword.iskeyword(name) or name == "self":
            return {}  # (names from a forged __signature__ could not be parameters of the stand-in)
        roles.append(role)
    if roles == list(HEAD_ARGS[:len(roles)]) and params == roles or not set(HEAD_ARGS[:4]) <= set(roles):
        return {}
    return dict(zip(roles, params))


def _stand_in_for(sub, head: str) -> str:
    named = _stand_in_names(sub, head)
    return _reordered(named) if named else STAND_IN_SOURCE


def _reordered(named: dict[str, str]) -> str:
    """The stand-in's source, taking the arguments in the order and under the names of `named`."""
    own = ", ".join(f"{n}=False" if r == "qkv_bias" else n for r, n in named.items())
    take = ", ".join(named.get(r, "False") for r in HEAD_ARGS)
    return STAND_IN_SOURCE.replace(
        "    def __init__(self, d_in, d_out, context_length, dropout, qkv_bias=False):\n        super().__init__()\n",
        f"    def __init__(self, {own}):\n        super().__init__()\n"
        f"        d_in, d_out, context_length, dropout, qkv_bias = {take}\n")


def _changed_tensor(a: torch.Tensor, b: torch.Tensor) -> bool:
    return a.shape != b.shape or not torch.allclose(a.double(), b.double(), atol=1e-6, rtol=1e-6, equal_nan=True)


def fault_of(e: CheckFailure) -> str:
    """The exception and the student's line in a failure message, without the call that led there; a failure
    that is not an exception from the student's code (e.g. "not implemented yet") keeps its whole text."""
    text = e.message.en
    return text.split("` raised ", 1)[1] if "` raised " in text else text


def head_fails_alike(sub, err: CheckFailure, x: torch.Tensor, d_in: int, d_out: int, ctx: int) -> bool:
    """Whether one of the student's own heads, built alone with these arguments, fails on x with the same
    exception at the same line as the wrapper did (so the fault lies in CausalAttention)."""
    try:
        expect_tensor(build_head(sub, d_in, d_out, ctx, seed=0)(x), "CausalAttention(...)(x)")
    except CheckFailure as e:
        return fault_of(e) == fault_of(err)
    return False


def run_wrapper(sub, x: torch.Tensor, d_in: int, d_out: int, ctx: int, heads: int, seed: int,
                **kw) -> tuple[dict, int]:
    """Build the wrapper and run it on x: (reply, context_length used).

    When it fails with the same fault as one of the student's own heads (e.g. an unsliced mask on a short
    input), that fault is CausalAttention's and is charged there; the wrapper is then judged on the same input
    with context_length = number of tokens, where such a head works. A failure that remains earns nothing:
    the wrapper gets its points only from an output it actually produced.
    """
    try:
        _m, (res,) = build_then(sub, "MultiHeadAttentionWrapper", d_in, d_out, ctx, 0.0, heads, seed=seed,
                                steps=[step("call", x, **kw)])
        return res, ctx
    except CheckFailure as e:
        T = x.shape[1]
        if e.step == 0 or ctx == T or not head_fails_alike(sub, e, x, d_in, d_out, ctx):
            raise  # (the constructor's failure as build() would give it)
        first = e
    try:
        _m, (res,) = build_then(sub, "MultiHeadAttentionWrapper", d_in, d_out, T, 0.0, heads, seed=seed,
                                steps=[step("call", x, **kw)])
        return res, T
    except CheckFailure:
        raise CheckFailure(Message("The wrapper could not be judged because its heads fail (charged to "
                                   "CausalAttention): ", "헤드가 실패해서 래퍼를 평가할 수 없습니다 (CausalAttention에서 "
                                   "감점): ") + first.message) from None


def check_heads_structure(sub, heads: int = 3) -> None:
    m = build(sub, "MultiHeadAttentionWrapper", 3, 2, 4, 0.0, heads, seed=0)
    info = m.describe("heads")
    h = info["attrs"].get("heads")
    if h is None:
        held = sorted(n for n, kind in info.get("modules", []) if "." not in n
                      and kind in ("ModuleList", "Sequential", "ModuleDict"))
        if len(held) == 1:  # the heads, registered, under another name
            fail(f"`MultiHeadAttentionWrapper` keeps its heads in `self.{held[0]}`; the notebook calls the list "
                 "`self.heads` (what code that reads the heads, and a saved state_dict, use).",
                 f"`MultiHeadAttentionWrapper`가 헤드를 `self.{held[0]}`에 둡니다. 노트북은 이 리스트를 `self.heads`라고 "
                 "부릅니다 (헤드를 읽는 코드와 저장된 state_dict가 쓰는 이름).")
        fail("`MultiHeadAttentionWrapper` has no attribute `heads`.",
             "`MultiHeadAttentionWrapper`에 `heads` 속성이 없습니다.")
    if h["type"] not in ("ModuleList", "Sequential", "ModuleDict"):  # (nn.Sequential, nn.ModuleDict register them too)
        fail(f"`self.heads` is a {h['type']}, so PyTorch does not see the heads' weights (no .parameters(), "
             "no .to(device), nothing in state_dict). Wrap the list: nn.ModuleList([...]).",
             f"`self.heads`가 {h['type']}이라서 PyTorch가 헤드의 가중치를 보지 못합니다 (.parameters(), .to(device), "
             "state_dict 모두 누락). nn.ModuleList([...])로 감싸세요.")
    if h.get("len") != heads:
        fail(f"With num_heads={heads}, `self.heads` holds {h.get('len')} modules.",
             f"num_heads={heads}인데 `self.heads`에 모듈이 {h.get('len')}개 있습니다.")
    if h.get("same_object"):
        fail("`self.heads` holds the same module several times (e.g. [head] * num_heads), so every head shares "
             "one set of weights. Build a new CausalAttention for each head.",
             "`self.heads`에 같은 모듈이 여러 번 들어 있습니다 (예: [head] * num_heads). 모든 헤드가 가중치를 "
             "공유하게 됩니다. 헤드마다 새 CausalAttention을 만드세요.")
    # Each a CausalAttention: that class, the student's own under another name, or a subclass of either.
    kinds = h.get("kinds") or [[t] for t in h.get("items", [])]
    if any(not {HEAD, head_class(sub)} & set(k) for k in kinds):
        fail(f"Each head should be a CausalAttention; found {sorted(set(h.get('items', [])))}.",
             f"각 헤드는 CausalAttention이어야 합니다. 현재: {sorted(set(h.get('items', [])))}.")
    expect_working(sub, "MultiHeadAttentionWrapper")


def side_by_side(outs: list) -> torch.Tensor:
    """The heads' outputs joined on the last axis, as the wrapper must join them; heads whose outputs cannot be
    joined (other shapes, dtypes or devices) fail as CausalAttention's fault, not as the grader's error."""
    got = [expect_tensor(o, "CausalAttention(...)(x)") for o in outs]
    if any(t.shape[:-1] != got[0].shape[:-1] or t.dtype != got[0].dtype or t.device != got[0].device for t in got):
        fail("CausalAttention heads built one after another give outputs that cannot be put side by side: "
             + ", ".join(f"{tuple(t.shape)} {str(t.dtype).replace('torch.', '')}" for t in got) + ".",
             "차례로 만든 CausalAttention 헤드들의 출력을 나란히 이어 붙일 수 없습니다: "
             + ", ".join(f"{tuple(t.shape)} {str(t.dtype).replace('torch.', '')}" for t in got) + ".")
    return torch.cat(got, dim=-1)


def check_wrapper_matches_heads(sub, seed: int, b: int, T: int, d_in: int, d_out: int, heads: int,
                                ctx: int | None = None, figure: torch.Tensor | None = None) -> None:
    """The wrapper must equal the concatenation of `heads` CausalAttentions built one after another.

    Judged against the student's own CausalAttention, so a bug there is not charged twice.
    """
    expect_working(sub, "MultiHeadAttentionWrapper")
    ctx = ctx or T
    x = randn(seed, b, T, d_in) if figure is None else BATCH
    res, ctx = run_wrapper(sub, x, d_in, d_out, ctx, heads, seed)
    what = call_text("MultiHeadAttentionWrapper", d_in, d_out, ctx, 0.0, heads)
    # The diagnosis needs a wrapper of its own (built only if a comparison fails).
    named = lambda got: explain(sub, build(sub, "MultiHeadAttentionWrapper", d_in, d_out, ctx, 0.0, heads,  # noqa: E731
                                           seed=seed), x)(got)
    got = expect_shape(res["out"], (b, T, heads * d_out), what, explain=named)
    if figure is not None:
        try:
            expect_close(got, figure, what)
            confirm_figures(sub, build(sub, "MultiHeadAttentionWrapper", d_in, d_out, ctx, 0.0, heads, seed=seed),
                            x, what)
            return  # the notebook's printed figures, and the same function elsewhere: evidence by itself
        except CheckFailure:
            # Maybe CausalAttention is off: judge the wrapper against its own heads, on an input it has not seen.
            x = randn(seed + 1, *x.shape)
            res, ctx = run_wrapper(sub, x, d_in, d_out, ctx, heads, seed)
            got = expect_shape(res["out"], (b, T, heads * d_out), what, explain=named)
    try:
        # One after another, then each called (one round trip): as build_head and h(x) one by one would.
        spec = stand_in(sub)
        _singles, outs = sub.new_all(spec["name"] if spec else head_class(sub),
                                     [(head_args(sub, spec, d_in, d_out, ctx, 0.0), seed if i == 0 else None)
                                      for i in range(heads)],
                                     [(i, step("call", x)) for i in range(heads)], stand_in=spec or None)
        want = side_by_side([head_value(sub, taken(o)["out"]) for o in outs])
    except CheckFailure as e:
        raise CheckFailure(Message("The wrapper could not be judged because CausalAttention fails: ",
                                   "CausalAttention이 실패해서 래퍼를 평가할 수 없습니다: ") + e.message) from None
    expect_close(got, want, what, explain=named, hint=Message(
        "Expected torch.cat([head(x) for head in self.heads], dim=-1), with one new CausalAttention per head "
        "(created in order, nothing else drawing random numbers in between).",
        "torch.cat([head(x) for head in self.heads], dim=-1)이어야 하며, 헤드마다 새 CausalAttention을 순서대로 "
        "만들어야 합니다 (그 사이에 다른 난수 사용 없이)."))


def check_wrapper_dropout(sub, seed: int, b: int, T: int, d_in: int, d_out: int, heads: int, p: float = 0.5) -> None:
    """In train mode the wrapper's heads drop out with the wrapper's `dropout`: its output equals that of its heads,
    built one after another with that dropout and called in train mode in turn from the same seed. Judged against
    the student's own CausalAttention (or the grader's stand-in where that does not work), so a dropout bug of the
    heads is not charged here. Seen: heads built with dropout 0.0, or with qkv_bias and dropout swapped, kept
    every wrapper point (no check ran the wrapper in train mode)."""
    expect_working(sub, "MultiHeadAttentionWrapper")
    x = randn(seed, b, T, d_in)
    what = described(call_text("MultiHeadAttentionWrapper", d_in, d_out, T, p, heads), "in train mode",
                     "(train 모드)")

    def wrapper_and_heads(spec: dict | None, forced: bool = False) -> tuple[Any, torch.Tensor, torch.Tensor,
                                                                               torch.Tensor]:
        """The wrapper in train mode, its heads built alone and called in turn in train mode, and the first head
        in eval mode: over the student's own heads, or the grader's (`spec`, new()'s stand_in; build() passes it
        itself where stand_in(sub) says so, `forced` here)."""
        kw = {"stand_in": spec} if forced else {}
        m, (res,) = build_then(sub, "MultiHeadAttentionWrapper", d_in, d_out, T, p, heads, seed=seed,
                                steps=[step("call", x, mode="train", seed=seed + 7)], **kw)
        got = expect_shape(res["out"], (b, T, heads * d_out), what)
        try:
            _singles, outs = sub.new_all(
                spec["name"] if spec else head_class(sub), [(head_args(sub, spec, d_in, d_out, T, p),
                                                             seed if i == 0 else None) for i in range(heads)],
                [(0, step("call", x, mode="train", seed=seed + 7))] + [(i, step("call", x, mode="train"))
                                                                       for i in range(1, heads)]
                + [(0, step("call", x, mode="eval"))], stand_in=spec or None)
            want = side_by_side([head_value(sub, taken(o)["out"]) for o in outs[:heads]])
            calm = expect_tensor(head_value(sub, taken(outs[heads])["out"]), "CausalAttention(...)(x)")
        except CheckFailure as e:
            raise CheckFailure(Message("The wrapper could not be judged because CausalAttention fails: ",
                                       "CausalAttention이 실패해서 래퍼를 평가할 수 없습니다: ") + e.message) from None
        return m, got, want, calm

    def in_another_order(spec: dict | None) -> bool:
        """Whether the wrapper's train-mode output is its heads' called in another order from the same seed: the
        same dropout in every head, drawn head after head in the order the forward calls them (variants round 4:
        a wrapper that called its heads last to first and concatenated them in order lost this point)."""
        if heads > 4 or not (type(got) is torch.Tensor and tuple(got.shape) == (b, T, heads * d_out)):
            return False
        for order in itertools.permutations(range(heads)):
            if order == tuple(range(heads)):
                continue
            try:
                _singles, outs = sub.new_all(
                    spec["name"] if spec else head_class(sub), [(head_args(sub, spec, d_in, d_out, T, p),
                                                                 seed if i == 0 else None) for i in range(heads)],
                    [(order[0], step("call", x, mode="train", seed=seed + 7))]
                    + [(i, step("call", x, mode="train")) for i in order[1:]], stand_in=spec or None)
                by_head = dict(zip(order, outs))
                other = side_by_side([head_value(sub, taken(by_head[i])["out"]) for i in range(heads)])
            except CheckFailure:
                return False
            if _close(got, other):
                return True
        return False

    def in_a_later_pass(spec: dict | None) -> bool:
        """Whether the wrapper's train-mode output is its heads' from a second or third pass over them, in order,
        from the same seed: a forward that calls every head once more before it concatenates them (`for head in
        self.heads: print(head(x))`, learners round rl13) draws each head's dropout again, and such a right wrapper
        was told to pass dropout on to its heads."""
        if heads > 4 or not (type(got) is torch.Tensor and tuple(got.shape) == (b, T, heads * d_out)):
            return False
        for passes in (2, 3):
            try:
                _singles, outs = sub.new_all(
                    spec["name"] if spec else head_class(sub), [(head_args(sub, spec, d_in, d_out, T, p),
                                                                 seed if i == 0 else None) for i in range(heads)],
                    [(0, step("call", x, mode="train", seed=seed + 7))]
                    + [(i % heads, step("call", x, mode="train")) for i in range(1, passes * heads)],
                    stand_in=spec or None)
                last = side_by_side([head_value(sub, taken(o)["out"]) for o in outs[-heads:]])
            except CheckFailure:
                return False
            if _close(got, last):
                return True
        return False

    spec = stand_in(sub)
    m, got, want, calm = wrapper_and_heads(spec)
    if spec is None and not _changed_tensor(want[..., :d_out], calm):
        # The student's heads ignore dropout (charged under CausalAttention): over them, a wrapper that does not
        # pass dropout on looks right. Judged over the grader's heads instead.
        spec = _stand_in_spec(sub)
        m, got, want, _calm = wrapper_and_heads(spec, forced=True)
    if not _close(got, want) and (in_another_order(spec) or in_a_later_pass(spec)):
        return
    # (the diagnosis names what else makes the wrapper differ: learners round rl11, a wrapper that projects the
    # concatenated heads with an out_proj of its own was told to pass dropout on to its heads)
    expect_close(got, want, what, explain=explain(sub, m, x, mode="train", seed=seed + 7), hint=Message(
        "In train mode each head must drop out with the wrapper's dropout: pass dropout on to every head, in the "
        "notebook's order of arguments: CausalAttention(d_in, d_out, context_length, dropout, qkv_bias).",
        "train 모드에서는 각 헤드가 래퍼의 dropout으로 dropout해야 합니다: 노트북의 인자 순서대로 모든 헤드에 dropout을 "
        "넘기세요: CausalAttention(d_in, d_out, context_length, dropout, qkv_bias)."))


def raised(e: CheckFailure, *types: str) -> bool:
    """Whether the student's code really raised one of the builtin exception `types` (or a subclass); the
    worker reports the exception's class hierarchy, so a message that merely names ValueError does not count."""
    return any(f"builtins.{t}" in getattr(e, "raised", ()) for t in types)


def check_rejects_bad_heads(sub) -> None:
    """Valid arguments construct a working module; d_out=5 with 2 heads raises AssertionError or ValueError."""
    expect_working(sub, "MultiHeadAttention")
    build(sub, "MultiHeadAttention", 3, 4, 4, 0.0, 2, seed=0)
    try:
        build(sub, "MultiHeadAttention", 3, 5, 4, 0.0, 2, seed=0)
    except CheckFailure as e:
        if raised(e, "AssertionError", "ValueError"):
            return
        fail(f"`MultiHeadAttention(3, 5, 4, 0.0, num_heads=2)` should raise AssertionError (or ValueError), but: "
             f"{e.message.en}",
             f"`MultiHeadAttention(3, 5, 4, 0.0, num_heads=2)`는 AssertionError(또는 ValueError)를 발생시켜야 "
             f"합니다. 실제: {e.message.ko}")
    if _tuple_assert(sub, "MultiHeadAttention"):
        fail("`MultiHeadAttention(3, 5, 4, 0.0, num_heads=2)` was accepted, but d_out=5 cannot be split into 2 heads: "
             "`assert (d_out % num_heads == 0, \"...\")` in __init__ asserts a tuple, which is always true, so it "
             "never fails. Drop the parentheses: assert d_out % num_heads == 0, \"...\".",
             "`MultiHeadAttention(3, 5, 4, 0.0, num_heads=2)`가 만들어졌지만 d_out=5는 헤드 2개로 나눌 수 없습니다: "
             "__init__의 `assert (d_out % num_heads == 0, \"...\")`는 튜플을 검사하는데, 튜플은 항상 참이라서 절대 "
             "실패하지 않습니다. 괄호를 빼세요: assert d_out % num_heads == 0, \"...\".")
    fail("`MultiHeadAttention(3, 5, 4, 0.0, num_heads=2)` was accepted, but d_out=5 cannot be split into 2 heads. "
         "Check `assert d_out % num_heads == 0` in __init__.",
         "`MultiHeadAttention(3, 5, 4, 0.0, num_heads=2)`가 만들어졌지만 d_out=5는 헤드 2개로 나눌 수 없습니다. "
         "__init__에서 `assert d_out % num_heads == 0`으로 확인하세요.")


def _tuple_assert(sub, cls: str) -> bool:
    """Whether `cls.__init__` (as the source writes it, never run) asserts a parenthesised (condition, message)
    tuple: always true, so it never raises."""
    return asserts_tuple(sub, cls)
