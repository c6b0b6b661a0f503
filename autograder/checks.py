"""What a check file uses: the @check decorator, CheckFailure, and tensor comparisons that explain themselves."""
from __future__ import annotations

import math
import time
import traceback
from dataclasses import dataclass
from typing import Any, Callable

from .messages import Message

VISIBILITIES = ("hidden", "after_due_date", "after_published", "visible")


@dataclass(frozen=True)
class CheckMeta:
    question: str
    points: float
    visibility: str | None = None  # None: the assignment's default for the folder the check lives in
    name: str | None = None
    name_ko: str | None = None  # None: the assignment's ko.toml [checks], else the English name
    section: str | None = None  # the notebook section it checks ("3.4.1"), for a checkpoint that checks only that


def check(*, question: str, points: float, visibility: str | None = None,
          name: str | None = None, name_ko: str | None = None,
          section: str | None = None) -> Callable[[Callable], Callable]:
    """Mark a pytest function as a graded check; it only sets an attribute (like gradescope-utils' @weight)."""
    if visibility is not None and visibility not in VISIBILITIES:
        raise ValueError(f"visibility must be one of {VISIBILITIES}, not {visibility!r}")

    def mark(fn: Callable) -> Callable:
        fn.__grade__ = CheckMeta(question, float(points), visibility, name, name_ko, section)
        return fn
    return mark


class CheckFailure(AssertionError):
    """A check found something wrong with the submission; `message` is what the student reads."""

    # From a sequence of requests (proxy.Remote.seq): the index of the step that failed (0 as well for a failure
    # before any step ran) and the values of the steps before it, where known.
    step: int = 0
    done: list | None = None
    # From a call that raised on a mask of another size than its scores (proxy._mask_hint): the mask is made for
    # context_length tokens and not cut to the input's. A check of another property may judge it again on an input
    # of context_length tokens (the attention lab's hidden checks), so the bug costs only the checks of shorter inputs.
    mask_not_sliced: bool = False
    # From a call that raised: the watches for torch's own layers (worker.LIBRARY, LIBRARY_ATTENTION) whose code ran in
    # it first (the fused kernels, which the worker refuses, raise once the watch has noted them): proxy.Remote.run
    # then fails with the watch's words rather than the error's.
    library_ran: frozenset = frozenset()

    def __init__(self, message: Message, staff: str = "", base: Message | None = None):
        super().__init__(message.en)
        self.message = message
        self.staff = staff
        self.base = base or message  # the message without generic advice, for a diagnosis to complete


class Reveal:
    """Whether messages may show expected values: true for public checks, false for hidden ones.

    Set by the pytest plugin before each check; hidden expected values never reach a student's screen.
    """
    expected_values = True


def fail(en: str, ko: str = "", staff: str = "") -> None:
    raise CheckFailure(Message(en, ko), staff)


def each(*parts: Callable[[], Any]) -> None:
    """Run every part of a check that judges several functions, and fail with all their failures together: the
    first bug no longer hides the next (learners round 8: a check of simple_mask, apply_simple_mask and renormalize
    stopped at simple_mask, and a renormalize without keepdim was never named). The check's points are lost
    once either way."""
    failures: list[CheckFailure] = []
    for part in parts:
        try:
            part()
        except CheckFailure as e:
            if all(e.message != f.message for f in failures):
                failures.append(e)
    if len(failures) == 1:
        raise failures[0]
    if failures:
        raise CheckFailure(Message(" ".join(f.message.en for f in failures),
                                   " ".join(f.message.ko or f.message.en for f in failures)),
                           "\n".join(f.staff for f in failures if f.staff))


# ---------------------------------------------------------------------------------------------- diagnosis
#
# An assignment's hidden side may register a diagnoser: given what a failed comparison saw, it names a known bug
# (e.g. by running bug versions of the reference). Only the grader has one; where only public checks run (grade
# check) nothing is registered and checks give their generic message.

DIAGNOSERS: dict[str, Callable[..., Message | None]] = {}
# An assignment may also say whether a class of the student's could be the graded class it is named like
# (RENAME_FITS[assignment](sub, wanted, guess) -> bool), so that a rename hint is not offered for a class that cannot be
# it: a learner's causal head `Attention_v1(d_in, d_out, context_length, dropout)` was offered as the rename of
# `SelfAttention_v1(d_in, d_out)` (learners round rl15). Public: `grade check` gives the same hints.
RENAME_FITS: dict[str, Callable[[Any, str, str], bool]] = {}


# And which class of the student's is the graded one where the names tell nothing (RENAME_GUESS[assignment](sub,
# wanted) -> a name or None): a wrapper's heads built from the student's own `MaskedAttention` (learners rounds rl14,
# rl15) are its CausalAttention, told only that CausalAttention is not defined.
RENAME_GUESS: dict[str, Callable[[Any, str], str | None]] = {}


def rename_guess(sub: Any, wanted: str) -> str | None:
    """RENAME_GUESS' class for `wanted` in `sub`, or None (none registered, none found, or it cannot tell)."""
    fn = RENAME_GUESS.get(getattr(sub, "assignment_name", ""))
    if fn is None:
        return None
    try:
        guess = fn(sub, wanted)
    except Exception:  # noqa: BLE001
        return None
    return guess if isinstance(guess, str) and guess != wanted else None


def rename_fits(sub: Any, wanted: str, guess: str) -> bool:
    """RENAME_FITS' verdict for `sub`'s assignment; True where none is registered or it cannot tell."""
    fn = RENAME_FITS.get(getattr(sub, "assignment_name", ""))
    if fn is None:
        return True
    try:
        return bool(fn(sub, wanted, guess))
    except Exception:  # noqa: BLE001 - (a class that cannot be inspected) the hint stays as the names give it
        return True
DIAGNOSIS_BUDGET_S = 5.0  # grader time per submission; it is given back to the submission's own time budget


def diagnosis(kind: str, sub: Any, **context: Any) -> Message | None:
    """The registered diagnoser's verdict on a failed comparison, or None (none registered, over budget, unsure).

    A diagnosis only adds words to a failure: whatever goes wrong in it is swallowed, never turned into an error.
    """
    fn = DIAGNOSERS.get(kind)
    spent = getattr(sub, "diagnosis_s", 0.0)
    if fn is None or getattr(sub, "fatal", None) is not None or spent >= DIAGNOSIS_BUDGET_S:
        return None
    start = time.monotonic()
    try:
        return fn(sub=sub, until=start + DIAGNOSIS_BUDGET_S - spent, **context)
    except Exception:  # the grader's own bug: the check keeps its plain message; staff see the traceback
        notes = getattr(sub, "staff_notes", None)
        if isinstance(notes, list) and len(notes) < 3:
            notes.append(f"diagnosis ({kind}) failed:\n" + traceback.format_exc()[-2000:])
        return None
    finally:
        took = time.monotonic() - start
        if hasattr(sub, "deadline"):
            sub.diagnosis_s = spent + took
            sub.deadline += took  # the grader's own work does not count against the student's time


def _fmt(x: float) -> str:
    """A value in a message: four decimals, or scientific notation with four decimals where four decimals
    would run to dozens of digits (a gap of float32's largest, 3.4e+38, was printed in full: correct variants
    round 5)."""
    if x != x:
        return "nan"
    if x in (math.inf, -math.inf):
        return "inf" if x > 0 else "-inf"
    return f"{x:.4e}" if abs(x) >= 1e6 else f"{x:.4f}"


def described(code: str, en: str, ko: str) -> Message:
    """What a comparison is about: code, then how it was run, in words of each language (`what` of expect_*):
    described("m(x)", "in train mode", "(train 모드)") reads "`m(x)` in train mode" / "`m(x)` (train 모드)"."""
    return Message(f"`{code}` {en}", f"`{code}` {ko}")


def _what(what: "str | Message") -> tuple[str, str]:
    """`what` as it appears in English and Korean text: code in backticks, or a described() Message as written."""
    return (what.en, what.ko) if isinstance(what, Message) else (f"`{what}`", f"`{what}`")


def expect_tensor(got: Any, what: "str | Message") -> Any:
    import torch
    if type(got) is not torch.Tensor:
        desc = getattr(got, "description", None) or type(got).__name__
        w_en, w_ko = _what(what)
        fail(f"{w_en} should return a torch.Tensor, but returned {desc}.",
             f"{w_ko}는 torch.Tensor를 반환해야 하는데 {desc}을(를) 반환했습니다.")
    return got


def expect_shape(got: Any, shape: tuple[int, ...], what: "str | Message",
                 explain: Callable[[Any], Message | None] | None = None) -> Any:
    def compare() -> None:
        expect_tensor(got, what)
        if tuple(got.shape) != tuple(shape):
            w_en, w_ko = _what(what)
            fail(f"{w_en} has shape {tuple(got.shape)}; expected {tuple(shape)}.",
                 f"{w_ko}의 shape이 {tuple(got.shape)}입니다. {tuple(shape)}이어야 합니다.")
    explained(compare, explain, got)
    return got


def explained(compare: Callable[[], None], explain: Callable[[Any], Message | None] | None, got: Any) -> None:
    """Run a comparison; when it fails and `explain(got)` names the bug, its words replace the generic advice."""
    try:
        compare()
    except CheckFailure as e:
        named = explain(got) if explain is not None else None
        if named is None:
            raise
        raise CheckFailure(named + e.base, e.staff) from None


def expect_close(got: Any, want: Any, what: "str | Message", *, atol: float = 1e-4, rtol: float = 1e-4,
                 hint: Message | None = None, explain: Callable[[Any], Message | None] | None = None) -> None:
    """Same shape, same -inf/nan positions, values within tolerance; the message says where and by how much.

    On a failure `explain(got)` (see `diagnosis`) may name the bug; its words then replace the generic `hint`.
    """
    explained(lambda: _compare(got, want, what, atol, rtol, hint), explain, got)


def _compare(got: Any, want: Any, what: "str | Message", atol: float, rtol: float, hint: Message | None) -> None:
    import torch
    # Most comparisons of a working submission are exact (same seed, same operations): one torch.equal then
    # decides, where the general path below costs a dozen small tensor operations. torch.equal is False for
    # any NaN, so a NaN always takes the general path (which says where it is).
    if type(got) is torch.Tensor and type(want) is torch.Tensor and got.dtype == want.dtype \
            and got.shape == want.shape and got.device == want.device and torch.equal(got, want):
        return
    expect_shape(got, tuple(want.shape), what)
    w_en, w_ko = _what(what)
    if got.dtype != want.dtype:  # e.g. float16 results could otherwise pass a float32 tolerance
        fail(f"{w_en} returned a tensor of dtype {got.dtype}; expected {want.dtype}.",
             f"{w_ko}가 dtype {got.dtype} 텐서를 반환했습니다. {want.dtype}이어야 합니다.")
    got = got.to(torch.float64)
    want = want.detach().to(torch.float64)
    same_special = (torch.isnan(got) == torch.isnan(want)) & (torch.isinf(got) == torch.isinf(want))
    finite = torch.isfinite(want) & torch.isfinite(got)
    close = torch.where(finite, (got - want).abs() <= atol + rtol * want.abs(),
                        (got == want) | (torch.isnan(got) & torch.isnan(want)))
    bad = ~(close & same_special)
    if not bool(bad.any()):
        return
    idx = tuple(int(i) for i in bad.nonzero()[0])
    where = f" at index {idx}" if idx else ""
    n_bad, n = int(bad.sum()), bad.numel()
    if Reveal.expected_values:
        detail_en = f"expected {_fmt(float(want[idx]))}, got {_fmt(float(got[idx]))}"
        detail_ko = f"기댓값 {_fmt(float(want[idx]))}, 실제 {_fmt(float(got[idx]))}"
    else:
        diff = float((got - want)[idx].abs()) if bool(finite[idx]) else math.inf
        detail_en = f"off by {_fmt(diff)}"
        detail_ko = f"차이 {_fmt(diff)}"
    where_ko = f" 인덱스 {idx}" if idx else ""
    msg = Message(f"{w_en} differs from the expected values in {n_bad} of {n} entries; first{where}: {detail_en}.",
                  f"{w_ko}의 값이 {n}개 중 {n_bad}개 다릅니다. 첫 위치{where_ko}: {detail_ko}.")
    raise CheckFailure(msg + hint if hint else msg, base=msg)
