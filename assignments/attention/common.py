"""Check logic shared by the public and hidden attention checks. Public: it holds no reference code or hidden value."""
from __future__ import annotations

from typing import Any, Callable

import torch

from autograder.checks import CheckFailure, diagnosis, expect_close, expect_shape, expect_tensor, fail
from autograder.messages import Message, near_miss

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
            out: Any = None) -> Callable[[Any], Message | None]:
    """For expect_close(explain=...): the grader's name for the bug behind `target(*inputs)` (a module handle or
    a function name) having given `out` (by default, the value compared), from hidden/diagnose.py; None where
    only the public checks run. The student's code is not run again."""
    return lambda got: diagnosis("attention", sub, target=target, inputs=inputs, mode=mode, seed=seed,
                                 got=got if out is None else out)


def build(sub, cls: str, d_in: int, d_out: int, ctx: int = 0, dropout: float = 0.0, heads: int = 0,
          seed: int | None = None, **kw):
    """Construct a student class with the argument style of the notebook (positional, num_heads by keyword)."""
    if cls in ("SelfAttention_v1", "SelfAttention_v2"):
        args: tuple = (d_in, d_out)
    elif cls == "CausalAttention":
        args = (d_in, d_out, ctx, dropout)
    else:
        args, kw = (d_in, d_out, ctx, dropout), {"num_heads": heads, **kw}
    try:
        return sub.new(cls, *args, seed=seed, **kw)
    except CheckFailure as e:
        positional = by_position(sub, cls, args, kw, e)
        if positional is None:
            raise
        return sub.new(cls, *positional, seed=seed)


def by_position(sub, cls: str, args: tuple, kw: dict, err: CheckFailure) -> tuple | None:
    """All arguments by position, when a keyword was refused only because the student renamed that argument
    (`head_num` for `num_heads`) and kept the notebook's order: the signature check charges the rename, once."""
    refused = [k for k in kw if f"unexpected keyword argument '{k}'" in err.message.en]
    if not refused or cls not in SIGNATURES:
        return None
    want = SIGNATURES[cls]
    got = [p["name"] for p in sub.signature(cls) if p["kind"] == "POSITIONAL_OR_KEYWORD"]
    last = max(want.index(k) for k in kw)
    if len(got) <= last or any(got[want.index(k)] != k and got[want.index(k)] in want for k in kw):
        return None  # the student's order differs from the notebook's: no safe way to place the arguments
    values = dict(zip(want, args)) | kw
    if any(w not in values for w in want[:last + 1]):
        return None
    return tuple(values[w] for w in want[:last + 1])


def call_text(cls: str, d_in: int, d_out: int, ctx: int = 0, dropout: float = 0.0, heads: int = 0) -> str:
    if cls in ("SelfAttention_v1", "SelfAttention_v2"):
        return f"{cls}({d_in}, {d_out})(x)"
    if cls == "CausalAttention":
        return f"{cls}({d_in}, {d_out}, {ctx}, {dropout})(x)"
    return f"{cls}({d_in}, {d_out}, {ctx}, {dropout}, num_heads={heads})(x)"


# ---------------------------------------------------------------------------------------------- signature

# Small arguments that every class accepts, to see that the class is implemented at all.
SMOKE = {"SelfAttention_v1": (3, 2), "SelfAttention_v2": (3, 2), "CausalAttention": (3, 2, 4, 0.0),
         "MultiHeadAttentionWrapper": (3, 2, 4, 0.0, 2), "MultiHeadAttention": (3, 2, 4, 0.0, 2)}


def check_signature(sub, cls: str) -> None:
    """Argument names as in the notebook; earns nothing until the class can be constructed."""
    want = SIGNATURES[cls]
    sub.new(cls, *SMOKE[cls], seed=0)
    got = [p["name"] for p in sub.signature(cls) if p["kind"] in ("POSITIONAL_OR_KEYWORD", "KEYWORD_ONLY")]
    if got == want:
        return
    renames = []
    for w, g in zip(want, got):
        if w != g:
            renames.append(f"`{g}` -> `{w}`")
    missing = [w for w in want if w not in got]
    guess = [f"`{near_miss(m, got)}` -> `{m}`" for m in missing if near_miss(m, got)]
    todo = ", ".join(dict.fromkeys(guess or renames)) or "match the notebook"
    fail(f"`{cls}.__init__` takes ({', '.join(got)}); the notebook's signature is ({', '.join(want)}). "
         f"Rename: {todo}.",
         f"`{cls}.__init__`의 인자가 ({', '.join(got)})입니다. 노트북의 시그니처는 ({', '.join(want)})입니다. "
         f"이름 바꾸기: {todo}.")


# ---------------------------------------------------------------------------------------------- mask

def check_mask_buffer(sub, cls: str) -> None:
    ctx = 5
    m = build(sub, cls, 3, 4, ctx, 0.0, 2, seed=0)
    state = m.state()
    buffers = state["buffers"]
    if "mask" not in buffers:
        extra = f" (it has buffers {sorted(buffers)})" if buffers else ""
        fail(f"`{cls}` has no registered buffer named `mask`{extra}. Create it in __init__ with "
             "self.register_buffer('mask', torch.triu(torch.ones(context_length, context_length), diagonal=1)) "
             "so it moves with .to(device).",
             f"`{cls}`에 `mask`라는 버퍼가 등록되어 있지 않습니다{extra}. __init__에서 "
             "self.register_buffer('mask', torch.triu(torch.ones(context_length, context_length), diagonal=1))로 "
             "만들어야 .to(device)와 함께 이동합니다.")
    mask = expect_tensor(buffers["mask"], f"{cls}.mask")
    want = torch.triu(torch.ones(ctx, ctx), diagonal=1)
    if tuple(mask.shape) != (ctx, ctx):
        fail(f"`{cls}.mask` has shape {tuple(mask.shape)}; with context_length={ctx} it should be ({ctx}, {ctx}).",
             f"`{cls}.mask`의 shape이 {tuple(mask.shape)}입니다. context_length={ctx}이면 ({ctx}, {ctx})여야 합니다.")
    mask = mask.to(torch.float32)
    if torch.equal(mask, want):
        return
    if torch.equal(mask, torch.tril(torch.ones(ctx, ctx))) or torch.equal(mask, 1 - want):
        fail(f"`{cls}.mask` marks the positions to keep (tril); the -inf fill needs the positions to hide: "
             "torch.triu(torch.ones(n, n), diagonal=1).",
             f"`{cls}.mask`가 남길 위치(tril)를 표시합니다. -inf로 채울 위치, 즉 "
             "torch.triu(torch.ones(n, n), diagonal=1)이어야 합니다.")
    if torch.equal(mask, torch.triu(torch.ones(ctx, ctx), diagonal=0)):
        fail(f"`{cls}.mask` also hides the diagonal (diagonal=0): a token must be able to attend to itself. "
             "Use diagonal=1.",
             f"`{cls}.mask`가 대각선까지 가립니다(diagonal=0). 토큰은 자기 자신을 볼 수 있어야 하므로 diagonal=1을 쓰세요.")
    fail(f"`{cls}.mask` is not torch.triu(torch.ones({ctx}, {ctx}), diagonal=1).",
         f"`{cls}.mask`가 torch.triu(torch.ones({ctx}, {ctx}), diagonal=1)과 다릅니다.")


def check_causality(sub, cls: str, seed: int, b: int = 2, T: int = 6, d_in: int = 4, d_out: int = 4,
                    heads: int = 2, ctx: int | None = None) -> None:
    """Changing tokens k.. must leave the outputs of tokens ..k-1 unchanged."""
    ctx = ctx or T
    m = build(sub, cls, d_in, d_out, ctx, 0.0, heads, seed=seed)
    x = randn(seed, b, T, d_in)
    k = T // 2
    x2 = x.clone()
    x2[:, k:, :] = randn(seed + 1, b, T - k, d_in) * 3
    y1 = expect_tensor(m(x), f"{cls}(...)(x)")
    y2 = expect_tensor(m(x2), f"{cls}(...)(x)")
    if y1.shape != y2.shape or y1.dim() != 3:
        expect_shape(y1, (b, T, y1.shape[-1] if y1.dim() else 0), f"{cls}(...)(x)")
    expect_responds(y1, y2, cls, f"tokens {k}..{T - 1}")
    diff = (y1[:, :k] - y2[:, :k]).abs().max().item()
    if diff > 1e-5:
        what = Message(f"`{cls}` is not causal: changing tokens {k}..{T - 1} changed the outputs of tokens "
                       f"0..{k - 1} (by up to {diff:.3g}).",
                       f"`{cls}`가 인과적이지 않습니다: 토큰 {k}..{T - 1}을 바꾸자 토큰 0..{k - 1}의 출력이 최대 "
                       f"{diff:.3g} 바뀌었습니다.")
        named = explain(sub, m, x)(y1)
        if named is not None:
            raise CheckFailure(named + what)
        raise CheckFailure(what + Message(
            "Look for: a mask that does not reach the softmax (`scores.masked_fill(...)` returns a new tensor: "
            "assign it, or use masked_fill_), a softmax over another axis than the keys (dim=-1), or tokens mixed "
            "by a reshape.",
            "확인할 것: softmax에 닿지 않는 마스크(`scores.masked_fill(...)`은 새 텐서를 반환하므로 대입하거나 "
            "masked_fill_을 쓰세요), key 축(dim=-1)이 아닌 축에 대한 softmax, reshape로 섞인 토큰."))


def expect_responds(y1, y2, cls: str, what: str) -> None:
    """Properties that a constant output satisfies (causality, eval-mode dropout) also need an output that
    follows its input; otherwise hard-coded tensors would pass them."""
    if y1.shape == y2.shape and bool(torch.isfinite(y1).all()) and (y1 - y2).abs().max().item() <= 1e-7:
        fail(f"`{cls}` gave the same output after {what} of the input changed: the output does not depend on "
             "the input (hard-coded values?).",
             f"입력의 {what}을(를) 바꿔도 `{cls}`의 출력이 같습니다: 출력이 입력에 의존하지 않습니다 (값을 고정했나요?).")


def check_short_sequence(sub, cls: str, seed: int) -> None:
    """A batch shorter than context_length must work (the mask is sliced to num_tokens)."""
    ctx, T, b, d_in, d_out, heads = 8, 5, 2, 3, 4, 2
    m = build(sub, cls, d_in, d_out, ctx, 0.0, heads, seed=seed)
    x = randn(seed, b, T, d_in)
    width = d_out * heads if cls == "MultiHeadAttentionWrapper" else d_out
    try:
        y = m(x)
    except CheckFailure as e:
        raise CheckFailure(e.message + Message(
            f"(Input had {T} tokens with context_length={ctx}: slice the mask with [:num_tokens, :num_tokens].)",
            f"(입력 토큰 {T}개, context_length={ctx}: 마스크를 [:num_tokens, :num_tokens]로 잘라 쓰세요.)")) from None
    expect_shape(y, (b, T, width), call_text(cls, d_in, d_out, ctx, 0.0, heads))


def check_eval_no_dropout(sub, cls: str, seed: int) -> None:
    """In eval mode dropout is the identity: p=0.5 and p=0.0 with the same weights give the same output."""
    b, T, d_in, d_out, heads = 2, 5, 4, 4, 2
    x = randn(seed, b, T, d_in)
    with_p = build(sub, cls, d_in, d_out, T, 0.5, heads, seed=seed)
    without = build(sub, cls, d_in, d_out, T, 0.0, heads, seed=seed)
    got = expect_tensor(with_p(x, mode="eval", seed=1), f"{call_text(cls, d_in, d_out, T, 0.5, heads)}")
    expect_responds(got, expect_tensor(with_p(x * 2 + 1, mode="eval", seed=1), f"{cls}(...)(x)"), cls, "all")
    expect_close(got, without(x, mode="eval", seed=1),
                 f"{call_text(cls, d_in, d_out, T, 0.5, heads)} in eval mode", explain=explain(sub, with_p, x, seed=1),
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
    return near_miss(HEAD, [n for n, k in sub.names.items() if k == "class" and n not in SIGNATURES]) or HEAD


def build_head(sub, d_in: int, d_out: int, ctx: int, dropout: float = 0.0, seed: int | None = None):
    return sub.new(head_class(sub), d_in, d_out, ctx, dropout, seed=seed)


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


def run_wrapper(sub, wrapper, x: torch.Tensor, d_in: int, d_out: int, ctx: int, **kw) -> dict | None:
    """wrapper.run(x, **kw); None when it fails only because its heads fail on x: charged to CausalAttention."""
    try:
        return wrapper.run(x, **kw)
    except CheckFailure as e:
        if head_fails_alike(sub, e, x, d_in, d_out, ctx):
            return None
        raise


def check_heads_structure(sub, heads: int = 3) -> None:
    m = build(sub, "MultiHeadAttentionWrapper", 3, 2, 4, 0.0, heads, seed=0)
    info = m.describe("heads")
    h = info["attrs"].get("heads")
    if h is None:
        fail("`MultiHeadAttentionWrapper` has no attribute `heads`.",
             "`MultiHeadAttentionWrapper`에 `heads` 속성이 없습니다.")
    if h["type"] != "ModuleList":
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
    if any(t not in (HEAD, head_class(sub)) for t in h.get("items", [])):
        fail(f"Each head should be a CausalAttention; found {sorted(set(h.get('items', [])))}.",
             f"각 헤드는 CausalAttention이어야 합니다. 현재: {sorted(set(h.get('items', [])))}.")


def check_wrapper_matches_heads(sub, seed: int, b: int, T: int, d_in: int, d_out: int, heads: int,
                                ctx: int | None = None, figure: torch.Tensor | None = None) -> None:
    """The wrapper must equal the concatenation of `heads` CausalAttentions built one after another.

    Judged against the student's own CausalAttention, so a bug there is not charged twice.
    """
    ctx = ctx or T
    x = randn(seed, b, T, d_in) if figure is None else BATCH
    what = call_text("MultiHeadAttentionWrapper", d_in, d_out, ctx, 0.0, heads)
    wrapper = build(sub, "MultiHeadAttentionWrapper", d_in, d_out, ctx, 0.0, heads, seed=seed)
    res = run_wrapper(sub, wrapper, x, d_in, d_out, ctx)
    if res is None:
        return  # a single CausalAttention fails on this input too: charged there, not here
    got = expect_shape(res["out"], (b, T, heads * d_out), what, explain=explain(sub, wrapper, x))
    if figure is not None:
        try:
            expect_close(got, figure, what)
            return
        except CheckFailure:
            pass  # maybe CausalAttention is off; judge the wrapper on its own below
    try:
        singles = [build_head(sub, d_in, d_out, ctx, 0.0, seed=seed if i == 0 else None) for i in range(heads)]
        outs = [expect_tensor(h(x), "CausalAttention(...)(x)") for h in singles]
        want = torch.cat(outs, dim=-1)
    except CheckFailure as e:
        raise CheckFailure(Message("The wrapper could not be judged because CausalAttention fails: ",
                                   "CausalAttention이 실패해서 래퍼를 평가할 수 없습니다: ") + e.message) from None
    expect_close(got, want, what, explain=explain(sub, wrapper, x), hint=Message(
        "Expected torch.cat([head(x) for head in self.heads], dim=-1), with one new CausalAttention per head "
        "(created in order, nothing else drawing random numbers in between).",
        "torch.cat([head(x) for head in self.heads], dim=-1)이어야 하며, 헤드마다 새 CausalAttention을 순서대로 "
        "만들어야 합니다 (그 사이에 다른 난수 사용 없이)."))


def check_rejects_bad_heads(sub) -> None:
    try:
        build(sub, "MultiHeadAttention", 3, 5, 4, 0.0, 2, seed=0)
    except CheckFailure as e:
        text = e.message.en
        if "AssertionError" in text or "ValueError" in text:
            return
        raise
    fail("`MultiHeadAttention(3, 5, 4, 0.0, num_heads=2)` was accepted, but d_out=5 cannot be split into 2 heads. "
         "Check `assert d_out % num_heads == 0` in __init__.",
         "`MultiHeadAttention(3, 5, 4, 0.0, num_heads=2)`가 만들어졌지만 d_out=5는 헤드 2개로 나눌 수 없습니다. "
         "__init__에서 `assert d_out % num_heads == 0`으로 확인하세요.")
