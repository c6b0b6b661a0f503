"""Hidden checks for the attention lab: hidden seeds and shapes against the reference, weight transplants,
the -inf fill, dropout, devices and gradients. Never shipped to students."""
import functools
import itertools
import tomllib
import weakref
from pathlib import Path

import pytest
import torch

from assignments.attention.common import (ORDER_HINT, build, build_each_then, build_head, build_then, call_text,
                                          check_eval_no_dropout, check_lengths_reused, check_wrapper_dropout,
                                          check_wrapper_matches_heads, expect_working, explain, match_params, piece,
                                          projection_names, randn, run_wrapper, target)
from assignments.attention import common
from assignments.attention.hidden import diagnose  # noqa: F401  (registers the grader's bug diagnosis)
from autograder.checks import CheckFailure, check, described, expect_close, expect_shape, expect_tensor, fail
from autograder.messages import Message
from autograder.proxy import function_call, step, taken
from autograder.sourcecode import created_twice
from autograder.rng import manual_seed
from reference import attention as R


def confirm_figures(sub, m, x, what):
    """The module that printed the notebook's figures, on an input of the same shape it has never seen: the
    reference built the same way (same arguments, same seed) gives the expected output."""
    name, args, kwargs, seed = m.ctor
    manual_seed(seed)
    ref = getattr(R, name)(*args, **kwargs).eval()
    fresh = randn(90210, *x.shape)
    with torch.no_grad():
        want = ref(fresh)
    try:
        expect_close(m(fresh), want, described(what.replace("(inputs)", "(x)").replace("(batch)", "(x)"),
                                               "on another input of the same shape", "(같은 shape의 다른 입력)"),
                     explain=explain(sub, m, fresh))
    except CheckFailure as e:
        raise CheckFailure(Message("It prints the notebook's values for the notebook's own input, but not the "
                                   "reference's for another input of the same shape: ",
                                   "노트북 입력에서는 노트북의 값을 출력하지만, 같은 shape의 다른 입력에서는 참조 "
                                   "구현과 다릅니다: ") + e.message, e.staff) from None


common.CONFIRM.setdefault("module", confirm_figures)
# The evidence gate at shapes the public checks do not show (common.GATE_SHAPES), for every check of the grading run.
# No width a multiple of 3 but the fused projections' (3 * d_out rows): the role guesses split such a layer in thirds,
# and an out_proj of 6 rows split so could not pass as the output layer (a fused q/k/v MultiHeadAttention lost 20).
# Nor any d_in, d_out, context_length, token count or head count that a public check of the class shows (they build
# with d_in 3 to 5, d_out 2 and 4, context_length up to 6 and 8, 2 or 3 heads): the gate was (5, 4) on 7 tokens,
# SelfAttention_v1's public shape check, and CausalAttention(5, 4, ...), the public causality check's, so a class that
# attended only for public arguments and mapped each token alone elsewhere passed it and earned 15 points of the two
# SelfAttention classes and 12 of CausalAttention's as a per-token map (red team, round 16).
common.GATE_SHAPES.update(single=((7, 5), (8, 7)), causal=((7, 5, 7, 0.0), (2, 7, 7)),
                          heads=((7, 8, 7, 0.0, 4), (2, 7, 7)))
common.GATE_SEED[0] = 20_260_613


def with_ref_weights(code: str) -> Message:
    return described(code, "with the reference's weights", "(참조 구현의 가중치를 넣음)")

SA = ("SelfAttention_v1", "SelfAttention_v2")
# (seed, batch, tokens, d_in, d_out, heads, context_length); batch is ignored by the unbatched classes.
CONFIGS = {
    "SelfAttention_v1": [(2024, 0, 7, 5, 4, 0, 0), (31337, 0, 3, 8, 2, 0, 0), (4242, 0, 10, 3, 6, 0, 0)],
    "SelfAttention_v2": [(2024, 0, 7, 5, 4, 0, 0), (31337, 0, 3, 8, 2, 0, 0), (4242, 0, 10, 3, 6, 0, 0)],
    "CausalAttention": [(2024, 3, 7, 5, 4, 0, 9), (31337, 1, 4, 8, 6, 0, 4), (4242, 4, 10, 3, 2, 0, 12)],
    "MultiHeadAttentionWrapper": [(2024, 3, 7, 5, 3, 2, 9), (31337, 2, 5, 4, 2, 3, 5), (4242, 1, 6, 3, 4, 4, 8)],
    "MultiHeadAttention": [(2024, 3, 7, 5, 8, 2, 9), (31337, 2, 5, 6, 6, 3, 5), (4242, 1, 9, 4, 8, 4, 12),
                           (77, 2, 6, 3, 4, 1, 6)],
}


# How many points each question's device check is worth; where the grader has a GPU, `[gpu] points` in
# assignment.toml moves some of them to a real CUDA run (see the end of this file).
DEVICE_POINTS = {"CausalAttention": 2, "MultiHeadAttentionWrapper": 1, "MultiHeadAttention": 1}
GPU_POINTS = {q: float(v) for q, v in tomllib.loads((Path(__file__).resolve().parent.parent / "assignment.toml")
                                                     .read_text(encoding="utf-8")).get("gpu", {}).get("points", {}).items()}
if any(q not in DEVICE_POINTS or not 0 <= v <= DEVICE_POINTS[q] for q, v in GPU_POINTS.items()):
    raise ValueError(f"assignment.toml [gpu] points {GPU_POINTS}: each may take at most {DEVICE_POINTS}")
HAS_CUDA = torch.cuda.is_available()
SIMULATED = ("There is no GPU on the grading machine, so device handling was checked by simulation only (the meta "
             "device and a buffer test), not on a real GPU. / 채점 컴퓨터에 GPU가 없어서 장치 처리는 실제 GPU가 아니라 "
             "시뮬레이션(meta 장치와 버퍼 검사)으로만 검사했습니다.")


def device_points(question):
    return DEVICE_POINTS[question] - (GPU_POINTS.get(question, 0.0) if HAS_CUDA else 0.0)


def at_full_length(judge, sub, cls) -> None:
    """judge(sub, cls), a check of one property on CONFIGS[cls]; where a call raised because the mask is not cut
    to the number of tokens (CheckFailure.mask_not_sliced: shorter inputs only), judged again with context_length
    equal to each input's number of tokens, and the check goes by that. Learners' round, session 16: an unsliced
    mask cost 12 of CausalAttention's 25 points and 10 of MultiHeadAttention's 20, every check whose first input is
    shorter than context_length saying to slice it (dropout, qkv_bias, gradients, the reference's weights); it is
    charged by the checks of shorter inputs (the public one, the hidden seeds and shapes, the short sequences)."""
    try:
        judge(sub, cls)
    except CheckFailure as e:
        if not e.mask_not_sliced:
            raise
        judge(sub, cls, configs=[(seed, b, T, d_in, d_out, heads, T)
                                 for seed, b, T, d_in, d_out, heads, _ctx in CONFIGS[cls]])


def ref_build(cls, d_in, d_out, ctx=0, dropout=0.0, heads=0, seed=None, **kw):
    if seed is not None:
        manual_seed(seed)
    if cls in SA:
        return getattr(R, cls)(d_in, d_out, **kw)
    if cls == "CausalAttention":
        return R.CausalAttention(d_in, d_out, ctx, dropout, **kw)
    return getattr(R, cls)(d_in, d_out, ctx, dropout, num_heads=heads, **kw)


@functools.cache
def shared_ref(cls, d_in, d_out, ctx, heads, seed):
    """The reference in eval mode without dropout, built once per grader process and shared by the checks that
    only read it (its weights, to transplant them; its outputs): the same for every submission, so it is not
    built again for each (about 30 builds per submission)."""
    return ref_build(cls, d_in, d_out, ctx, 0.0, heads, seed=seed).eval()


@functools.cache
def _ref_output(cls, d_in, d_out, ctx, heads, seed, x_seed, b, T):
    with torch.no_grad():
        return shared_ref(cls, d_in, d_out, ctx, heads, seed)(make_input(cls, x_seed, b, T, d_in))


def ref_output(cls, d_in, d_out, ctx, heads, seed, x_seed, b, T):
    """shared_ref(...)(make_input(cls, x_seed, b, T, d_in)), computed once; each caller gets its own copy."""
    return _ref_output(cls, d_in, d_out, ctx, heads, seed, x_seed, b, T).clone()


def make_input(cls, seed, b, T, d_in):
    return randn(seed, T, d_in) if cls in SA else randn(seed, b, T, d_in)


def transplant(m, ref, cls):
    """Copy the reference's parameters into the student's module by name and shape; fail if any is missing.
    Projections named otherwise (W_q, q_proj, last_layer for out_proj) get them through param_map.

    Parameters only: the student's buffers (their own mask) stay as they built them. A mask is code, not a
    weight: a correct module may store it another way (tril and `== 0`, a bool or additive mask), and copying the
    reference's `mask` over it would break that module, or mend a wrong one and blame its initialisation."""
    report = m.load_state(ref_params(ref, known_map(m.sub, cls, ref)))
    if unnamed(report, ref) and param_map(m.sub, cls, m, ref):
        report = m.load_state(ref_params(ref, param_map(m.sub, cls, m, ref)))
    transplant_report(m, ref, cls, report)


_SHAPES: "weakref.WeakKeyDictionary[torch.nn.Module, tuple]" = weakref.WeakKeyDictionary()


def ref_shapes(ref) -> tuple:
    """((name, shape), ...) of a reference module's parameters, read once per module (the transplant asks for them
    several times a check; a reference's parameters are never added or reshaped)."""
    got = _SHAPES.get(ref)
    if got is None:
        got = _SHAPES[ref] = tuple((n, tuple(p.shape)) for n, p in ref.named_parameters())
    return got


def ref_params(ref, names: dict[str, str] | None = None) -> dict:
    """The reference's parameters, under the student's names where param_map found them other."""
    return as_student(names, {k: v.detach() for k, v in ref.named_parameters()})


def as_student(names: dict[str, str] | None, tensors: dict) -> dict:
    """{reference name: tensor} under the student's names (param_map); the pieces of a fused projection joined in
    their order (query, key, value)."""
    names = names or {}
    out, fused = {}, {}
    for k, v in tensors.items():
        to = names.get(k, k)
        if "#" in to:
            fused.setdefault(target(to), []).append((int(to.split("#", 1)[1].split("/")[0]), v))
        else:
            out[to] = v
    for to, parts in fused.items():
        out[to] = torch.cat([v for _i, v in sorted(parts, key=lambda t: t[0])])
    return out


def unnamed(report, ref) -> bool:
    """Whether a load_state report says some reference parameter has no parameter of that name."""
    return bool({n for n, _ in ref_shapes(ref)} & set(report.get("missing") or ()))


def _map_key(cls, ref) -> tuple:
    return ("param_map", cls, tuple(ref_shapes(ref)))


def known_map(sub, cls, ref) -> dict[str, str]:
    """param_map as found before for this class and these shapes, without asking the worker: {} if never found."""
    return sub.memo.get(_map_key(cls, ref)) or {}


def param_map(sub, cls, m, ref) -> dict[str, str]:
    """match_params for the student's module `m` (built like `ref`), asked of the worker once per class and shapes."""
    key = _map_key(cls, ref)
    if key not in sub.memo:
        have = [(n, tuple(shape)) for n, shape, _grad in m.describe()["params"]]
        sub.memo[key] = match_params(have, list(ref_shapes(ref)))
    return sub.memo[key]


def transplant_report(m, ref, cls, report) -> None:
    """transplant's verdict on the worker's load_state report."""
    names = known_map(m.sub, cls, ref)
    needed = {target(names.get(n, n)) for n, _ in ref_shapes(ref)}
    missing = sorted(needed & set(report["missing"]))
    shapes = [(n, s, r) for n, s, r in report["mismatched"] if n in needed]
    if missing or shapes:
        listed = [n for n, _shape, _ in m.describe()["params"]]
        have = ", ".join(f"{n} {tuple(shape)}" for n, shape, _ in m.describe()["params"])
        if missing and all(f"{n}.weight" in listed for n in missing):
            # (W_query is an nn.Parameter in the notebook's SelfAttention_v1; W_query.weight is a layer's)
            fail(f"`{cls}` keeps {', '.join(missing)} as nn.Linear layers ({', '.join(f'{n}.weight' for n in missing)}); "
                 f"the notebook's {cls} keeps each as one nn.Parameter(torch.rand(d_in, d_out)) matrix and computes "
                 "x @ W_query (the layers are SelfAttention_v2's step).",
                 f"`{cls}`가 {', '.join(missing)}을(를) nn.Linear 층으로 둡니다 "
                 f"({', '.join(f'{n}.weight' for n in missing)}). 노트북의 {cls}는 각각을 nn.Parameter(torch.rand(d_in, "
                 "d_out)) 행렬 하나로 두고 x @ W_query를 계산합니다 (층은 SelfAttention_v2의 단계입니다).")
        parts_en, parts_ko = [], []
        if missing:
            parts_en.append(f"no parameter named {', '.join(missing)}")
            parts_ko.append(f"{', '.join(missing)} 파라미터가 없습니다")
        for n, s, r in shapes:
            parts_en.append(f"{n} has shape {tuple(s)}, expected {tuple(r)}")
            parts_ko.append(f"{n}의 shape이 {tuple(s)}입니다 (기대: {tuple(r)})")
        fail(f"The reference weights could not be copied into your `{cls}`: {'; '.join(parts_en)}. "
             f"Use the notebook's attribute names and shapes (yours: {have or 'no parameters'}).",
             f"참조 가중치를 `{cls}`에 복사할 수 없습니다: {'; '.join(parts_ko)}. 노트북의 속성 이름과 shape을 "
             f"쓰세요 (현재: {have or '파라미터 없음'}).")


def built_with(sub, cls, ref, calls, d_in, d_out, ctx, dropout, heads, seed, **kw):
    """build(...), transplant(m, ref, cls), then the `calls` (proxy.step("call", ...)), in one round trip:
    (m, the calls' replies, each to be taken with proxy.taken in order). Fails where they would one by one: the
    constructor, a weight that could not be copied in, then each call as it is taken."""
    m, res = build_then(sub, cls, d_in, d_out, ctx, dropout, heads, seed=seed,
                        steps=[step("load_state", ref_params(ref, known_map(sub, cls, ref))), *calls], lenient=True,
                        **kw)
    if unnamed(taken(res[0]), ref) and param_map(sub, cls, m, ref):  # layers named otherwise: again, by that map
        m, res = build_then(sub, cls, d_in, d_out, ctx, dropout, heads, seed=seed,
                            steps=[step("load_state", ref_params(ref, param_map(sub, cls, m, ref))), *calls],
                            lenient=True, **kw)
    transplant_report(m, ref, cls, taken(res[0]))
    return m, res[1:]


def built_each_with(sub, cls, builds: list[tuple]):
    """built_with(sub, cls, ref, calls, d_in, d_out, ctx, dropout, heads, seed) for each (ref, calls, d_in, d_out,
    ctx, dropout, heads, seed) of `builds`, in order: yields (m, the calls' replies) for each, as built_with returns
    them. Every build goes in one round trip first (common.build_each_then); a build whose layers are named otherwise
    is then built again alone with that map, as built_with would; the values are taken in order, each as it is
    yielded, so a failure is raised where it would have been with the builds one by one."""
    built = build_each_then(sub, cls, [(d_in, d_out, ctx, dropout, heads, seed,
                                        [step("load_state", ref_params(ref, known_map(sub, cls, ref))), *calls])
                                       for ref, calls, d_in, d_out, ctx, dropout, heads, seed in builds])
    for (ref, calls, d_in, d_out, ctx, dropout, heads, seed), (m, res) in zip(builds, built):
        if unnamed(taken(res[0]), ref) and param_map(sub, cls, m, ref):  # layers named otherwise: again, by that map
            m, res = build_then(sub, cls, d_in, d_out, ctx, dropout, heads, seed=seed,
                                steps=[step("load_state", ref_params(ref, param_map(sub, cls, m, ref))), *calls],
                                lenient=True)
        transplant_report(m, ref, cls, taken(res[0]))
        yield m, res[1:]


def seeded(sub, cls):
    """Same seed, same shapes: the student's module must reproduce the reference output exactly.

    Like every check of a class, only for a class that passed its evidence gate, which is decided once, at the
    first check that asks: code that changes its behaviour later (say, once the grader has sent the wrapper's
    stand-in heads into the worker, or after some number of calls) cannot earn what it failed to show then."""
    expect_working(sub, cls)
    xs = [make_input(cls, seed, b, T, d_in) for seed, b, T, d_in, _d_out, _heads, _ctx in CONFIGS[cls]]
    # (every build and its call in one round trip, each reply taken in order as if sent alone)
    built = build_each_then(sub, cls, [(d_in, d_out, ctx, 0.0, heads, seed, [step("call", x)])
                                       for (seed, _b, _T, d_in, d_out, heads, ctx), x in zip(CONFIGS[cls], xs)])
    for (seed, b, T, d_in, d_out, heads, ctx), x, (m, values) in zip(CONFIGS[cls], xs, built):
        res = taken(values[0])
        ref = shared_ref(cls, d_in, d_out, ctx, heads, seed)
        want = ref_output(cls, d_in, d_out, ctx, heads, seed, seed, b, T)
        got = res["out"]
        try:
            expect_close(got, want, described(call_text(cls, d_in, d_out, ctx, 0.0, heads), f"(seed {seed})", f"(시드 {seed})"),
                         explain=explain(sub, m, x, seeded=cls))
        except CheckFailure as e:
            try:  # the right function with other initial weights only needs a hint about the order
                transplant(m, ref, cls)
                expect_close(m(x), want, cls)
            except CheckFailure:
                raise e from None
            # (a layer created twice is named by explain: the order hint would tell it to do what it does)
            raise CheckFailure(e.message + (ORDER_HINT if not created_twice(sub, cls) else Message("", ""))) from None


def equivalent(sub, cls, configs=None):
    """With the reference's weights copied in, outputs match: credit that does not depend on creation order.
    configs: CONFIGS[cls] unless given (at_full_length)."""
    expect_working(sub, cls)
    configs = configs or CONFIGS[cls]
    refs = [shared_ref(cls, d_in, d_out, ctx, heads, seed + 1) for seed, _b, _T, d_in, d_out, heads, ctx in configs]
    inputs = [[make_input(cls, seed + 10 + k, b, T, d_in) for k in range(2)]
              for seed, b, T, d_in, _d_out, _heads, _ctx in configs]
    built = built_each_with(sub, cls, [(ref, [step("call", x) for x in xs], d_in, d_out, ctx, 0.0, heads, seed)
                                       for (seed, _b, _T, d_in, d_out, heads, ctx), ref, xs
                                       in zip(configs, refs, inputs)])
    for (seed, b, T, d_in, d_out, heads, ctx), xs, (m, outs) in zip(configs, inputs, built):
        for k, (x, res) in enumerate(zip(xs, outs)):
            want = ref_output(cls, d_in, d_out, ctx, heads, seed + 1, seed + 10 + k, b, T)
            expect_close(taken(res)["out"], want, with_ref_weights(call_text(cls, d_in, d_out, ctx, 0.0, heads)),
                         explain=explain(sub, m, x))


def neg_inf_fill(sub, cls, seed=5, b=2, T=5, d_in=4, d_out=4, heads=2):
    """The future is filled with -inf, decided by outputs: with weights that make every score far below -1e9
    (queries and keys point in opposite directions, the input is large), a finite fill such as -1e9 sends the
    weight to the masked positions while -inf keeps it on the visible ones; the reference computes the answer.

    Judged only for a module that matches the reference on ordinary inputs with the reference's weights: any
    other difference (a softmax over the wrong axis, heads merged wrongly, ...) is charged by the checks with
    the reference's weights, under its own name, and says nothing about the fill."""
    expect_working(sub, cls)
    what = call_text(cls, d_in, d_out, T, 0.0, heads)
    ref = ref_build(cls, d_in, d_out, T, 0.0, heads, seed=seed).eval()
    x0 = randn(seed, b, T, d_in)
    m, (res,) = built_with(sub, cls, ref, [step("call", x0)], d_in, d_out, T, 0.0, heads, seed)  # own mask stays
    with torch.no_grad():
        plain = ref(x0)
    try:
        expect_close(taken(res)["out"], plain, with_ref_weights(what))
    except CheckFailure:
        fail(f"The -inf fill of `{cls}` could not be judged: with the reference's weights it does not give the "
             "reference's output on ordinary inputs yet (the checks with the reference's weights say why). This "
             "check counts once the rest of forward is right.",
             f"`{cls}`의 -inf 채우기를 평가할 수 없습니다: 참조 가중치를 넣어도 보통 입력에서 참조 구현과 출력이 아직 "
             "다릅니다 (이유는 참조 가중치 검사를 보세요). 나머지 forward가 맞으면 이 검사가 점수를 줍니다.")
    scale = 1e6
    with torch.no_grad():
        ref.W_query.weight.fill_(1.0)   # every query is +sum(x) * ones
        ref.W_key.weight.fill_(-1.0)    # every key is -sum(x) * ones, so q . k = -(sum x_i)(sum x_j) d < -1e12
        ref.W_value.weight.mul_(1.0 / scale)  # keeps the output near 1
    g = torch.Generator().manual_seed(seed)
    x = (0.5 + torch.rand(b, T, d_in, generator=g)) * scale
    report, res = m.seq(step("load_state", ref_params(ref, known_map(sub, cls, ref))), step("call", x))  # as above
    transplant_report(m, ref, cls, report)
    with torch.no_grad():
        want = ref(x)
    got = expect_shape(res["out"], tuple(want.shape), f"{what} with large scores")
    got = got.double()  # another dtype is for the value checks to charge; this one judges the fill
    want = want.double()
    if torch.allclose(got, want, atol=1e-4, rtol=1e-4):
        return
    if bool((torch.isfinite(want) & ~torch.isfinite(got)).any()):
        if _own_exp_softmax(sub, cls):
            # (variants round: a right fill before a softmax written as exp / sum was told to fill before the softmax)
            fail(f"`{cls}` computes its softmax as exp(scores) / sum without subtracting each row's maximum: with "
                 "very large scores (the grader copied such weights in) every exp underflows or overflows and "
                 "0/0 or inf/inf gives NaN. Use torch.softmax, or subtract the row's maximum before exp.",
                 f"`{cls}`가 softmax를 각 행의 최댓값을 빼지 않고 exp(scores) / sum으로 계산합니다: 점수가 매우 크면"
                 " (채점기가 그런 가중치를 넣었습니다) exp가 모두 0이 되거나 넘쳐서 0/0 또는 inf/inf로 NaN이 됩니다. "
                 "torch.softmax를 쓰거나 exp 전에 행의 최댓값을 빼세요.")
        # Right on ordinary inputs, NaN here: the softmax saw the future (all its weight went to a hidden
        # position) and a mask applied afterwards left nothing to renormalise.
        fail(f"In `{cls}` the scores above the diagonal reach the softmax unmasked: the output is right on "
             "ordinary inputs, but when a future score is the largest the softmax gives it all the weight and "
             "masking afterwards leaves NaN. Fill the scores above the diagonal with -inf before the softmax.",
             f"`{cls}`에서 대각선 위의 점수가 가려지지 않은 채 softmax에 들어갑니다: 보통 입력에서는 출력이 맞지만, "
             "미래 위치의 점수가 가장 크면 softmax가 그 위치에 가중치를 모두 주고 그 뒤에 가리면 NaN이 남습니다. "
             "softmax 전에 대각선 위의 점수를 -inf로 채우세요.")
    if bool(torch.allclose(got[:, -1], want[:, -1], atol=1e-4, rtol=1e-4)):
        fail(f"`{cls}` fills the future positions with a finite number instead of -inf: when every visible score is "
             "far below -1e9 (the grader copied such weights in), the masked positions still got attention weight. "
             "Fill with -torch.inf, as in the notebook.",
             f"`{cls}`가 미래 위치를 -inf 대신 유한한 수로 채웁니다: 보이는 점수가 모두 -1e9보다 훨씬 작을 때 "
             "(채점기가 그런 가중치를 넣었습니다) 가려진 위치가 여전히 어텐션 가중치를 받았습니다. "
             "노트북처럼 -torch.inf로 채우세요.")
    expect_close(got, want, f"{what} with very negative scores", explain=explain(sub, m, x),
                 hint=Message("Fill the scores above the diagonal with -inf before the softmax (masking after it, "
                              "or dropping the result of masked_fill, does not count).",
                              "softmax 전에 대각선 위의 점수를 -inf로 채우세요 (softmax 뒤에 가리거나 masked_fill "
                              "결과를 버리면 안 됩니다)."))


def dropout_train(sub, cls, configs=None):
    """Train mode with the same seed: dropout on the attention weights, drawn like the reference; with p=0.5, then
    p=0.3 (a dropout made as nn.Dropout(0.5) whatever the argument passed every check at 0.5). configs:
    CONFIGS[cls] unless given (at_full_length)."""
    expect_working(sub, cls)
    for (seed, b, T, d_in, d_out, heads, ctx), p in zip((configs or CONFIGS[cls])[:2], (0.5, 0.3)):
        ref = ref_build(cls, d_in, d_out, ctx, p, heads, seed=seed)
        x = make_input(cls, seed, b, T, d_in)
        m, (res,) = built_with(sub, cls, ref, [step("call", x, mode="train", seed=seed + 7)], d_in, d_out, ctx, p,
                               heads, seed)
        got = taken(res)["out"]
        ref.train()
        manual_seed(seed + 7)
        with torch.no_grad():
            want = ref(x)
        what = described(call_text(cls, d_in, d_out, ctx, p, heads), "in train mode", "(train 모드)")
        if type(got) is torch.Tensor and got.shape == want.shape and got.dtype == want.dtype \
                and not torch.allclose(got, want, atol=1e-4, rtol=1e-4) \
                and drawn_otherwise(got, ref, x, seed + 7, cls):
            continue  # the same dropout on the same weights, its random draws made in another order
        named: list = []
        name_it = explain(sub, m, x, mode="train", seed=seed + 7)
        try:
            expect_close(got, want, what, explain=lambda out: named.append(name_it(out)) or named[-1])
        except CheckFailure as e:
            if any(named):  # the diagnosis named the bug: its words say what to fix
                raise
            raise CheckFailure(e.message + dropout_hint(sub, m, ref, x, cls, (d_in, d_out, ctx, heads, seed)),
                               e.staff, base=e.base) from None


class _HeadByHead(torch.nn.Module):
    """Dropout on (b, heads, T, T) weights one head at a time, as a forward that loops over its heads applies it:
    the same dropout, with its random draws made head by head instead of in one call."""

    def __init__(self, p: float):
        super().__init__()
        self.p = p

    def forward(self, weights: torch.Tensor) -> torch.Tensor:
        return torch.stack([torch.nn.functional.dropout(weights[:, h], self.p, self.training)
                            for h in range(weights.shape[1])], dim=1)


class _Laid(torch.nn.Module):
    """Dropout on the attention weights kept in memory with their axes in another order (`perm`), as a forward
    that computes them that way applies it (einsum "bqhk", scores (b, T, heads, T)): the same dropout, each random
    draw landing on the element that sits at its place in that layout."""

    def __init__(self, p: float, perm: tuple[int, ...]):
        super().__init__()
        self.p, self.perm = p, perm

    def forward(self, weights: torch.Tensor) -> torch.Tensor:
        back = [self.perm.index(i) for i in range(len(self.perm))]
        laid = weights.permute(self.perm).contiguous()
        return torch.nn.functional.dropout(laid, self.p, self.training).permute(back)


def drawn_otherwise(got, ref, x, seed, cls) -> bool:
    """Whether `got` is the reference's train-mode output on x with its dropout drawn in another order a correct
    forward may draw it in: head by head (a loop over the heads), or over the weights laid out with their axes in
    any other order (variants round 4: a MultiHeadAttention that computed its weights as (b, T, heads, T) with
    einsum lost the dropout point, every draw landing elsewhere). Tried one at a time, only where the reference's
    own order failed."""
    if cls == "MultiHeadAttention" and torch.allclose(got, head_by_head_dropout(ref, x, seed), atol=1e-4, rtol=1e-4):
        return True
    own = ref.dropout
    axes = 4 if cls == "MultiHeadAttention" else 3
    try:
        for perm in itertools.permutations(range(axes)):
            if perm == tuple(range(axes)):
                continue
            ref.dropout = _Laid(own.p, perm).train()
            manual_seed(seed)
            with torch.no_grad():
                if torch.allclose(got, ref(x), atol=1e-4, rtol=1e-4):
                    return True
        return False
    finally:
        ref.dropout = own


def head_by_head_dropout(ref, x, seed):
    """The reference MultiHeadAttention's train-mode output on x with its dropout drawn head by head (a correct
    forward written as a loop over the heads lost the dropout point: every draw landed elsewhere)."""
    own = ref.dropout
    ref.dropout = _HeadByHead(own.p).train()
    try:
        manual_seed(seed)
        with torch.no_grad():
            return ref(x)
    finally:
        ref.dropout = own


def dropout_hint(sub, m, ref, x, cls, shape) -> Message:
    """What to look at when train mode differs: dropout itself where eval mode is right, or where eval mode is
    right only once dropout is 0 (dropout that stays on in eval mode: seen as `if not self.training:`)."""
    ref.eval()
    with torch.no_grad():
        want = ref(x)
    try:
        expect_close(m(x, mode="eval"), want, cls)
    except CheckFailure:
        d_in, d_out, ctx, heads, seed = shape
        try:
            _m0, (res,) = built_with(sub, cls, ref, [step("call", x, mode="eval")], d_in, d_out, ctx, 0.0, heads,
                                     seed)
            expect_close(taken(res)["out"], want, cls)
        except CheckFailure:
            return Message("The output differs in eval mode too, so dropout cannot be judged until that is fixed: "
                           "see the checks with the reference's weights (then make sure self.dropout is applied to "
                           "the attention weights).",
                           "eval 모드에서도 출력이 달라서 그것을 고치기 전에는 dropout을 판단할 수 없습니다: 참조 "
                           "가중치를 넣은 검사를 보세요 (그다음 self.dropout이 어텐션 가중치에 적용되는지 확인하세요).")
        return Message("In eval mode the output is right only with dropout=0: dropout is applied in eval mode. It "
                       "must follow model.train() and model.eval(): apply self.dropout (nn.Dropout(dropout), made in "
                       "__init__) to the attention weights, without a condition of your own on self.training.",
                       "eval 모드에서는 dropout=0일 때만 출력이 맞습니다: eval 모드에서 dropout이 적용됩니다. dropout은 "
                       "model.train()과 model.eval()을 따라야 합니다: 직접 self.training 조건을 달지 말고 "
                       "self.dropout(__init__에서 만든 nn.Dropout(dropout))을 어텐션 가중치에 적용하세요.")
    return Message("Apply self.dropout once, to the attention weights right after the softmax (not to the scores, "
                   "the values or the output), and create it as nn.Dropout(dropout).",
                   "self.dropout은 softmax 직후의 어텐션 가중치에 한 번만 적용하세요 (점수, 값, 출력에 적용하면 안 됨). "
                   "nn.Dropout(dropout)으로 만드세요.")


def qkv_bias_used(sub, cls):
    """With qkv_bias=True, forward uses the biases: other bias values give another output. Only where the biases
    exist (whether they do is the public check's, for SelfAttention_v2)."""
    expect_working(sub, cls)
    if common.no_qkv_bias(sub, cls) is not None:
        return  # no qkv_bias to pass: charged by the signature check and the check that the biases exist
    seed, b, T, d_in, d_out, heads, ctx = CONFIGS[cls][0]
    what = call_text(cls, d_in, d_out, ctx, 0.0, heads).replace(")(x)", ", qkv_bias=True)(x)")
    ref = ref_build(cls, d_in, d_out, ctx, 0.0, heads, seed=seed, qkv_bias=True).eval()
    m, (listed,) = build_then(sub, cls, d_in, d_out, ctx, 0.0, heads, seed=seed, qkv_bias=True,
                              steps=[step("describe")])
    have, names = _params_and_names(m, ref, listed)
    biases = [n for n, _ in ref.named_parameters() if n.endswith(".bias") and "out_proj" not in n]
    if any(target(names.get(n, n)) not in have for n in biases):
        return  # no such biases: charged by the check that they exist
    _bias_changes_output(m, ref, biases, cls, seed, b, T, d_in, what, names,
                         plain=lambda steps: build_then(sub, cls, d_in, d_out, ctx, 0.0, heads, seed=seed,
                                                        steps=steps, lenient=True))


def _params_and_names(m, ref, described=None) -> tuple[dict[str, tuple], dict[str, str]]:
    """The student's parameters (name -> shape, as created), and match_params for them (projections named
    otherwise). described: m.describe(), where the check asked for it with the constructor (build_then)."""
    listed = {n: tuple(shape) for n, shape, _grad in (described or m.describe())["params"]}
    return listed, match_params(list(listed.items()), [(n, tuple(p.shape)) for n, p in ref.named_parameters()])


def _bias_changes_output(m, ref, biases, cls, seed, b, T, d_in, what, names, plain=None) -> None:
    """Other bias values give another output; and with the biases zero, the output is that of the same class built
    with qkv_bias=False and given the same weights (`plain(steps)` builds it and runs the steps on it, as
    build_then). The second is the class compared with itself, so a bug elsewhere in forward is not charged here.
    Red team, round 16: classes that attended with qkv_bias=False and mapped each token alone with qkv_bias=True (no
    check compared them with anything) kept 100/100."""
    x = make_input(cls, seed + 20, b, T, d_in)
    g = torch.Generator().manual_seed(seed)
    loads = [as_student(names, {n: torch.randn(tuple(ref.get_parameter(n).shape), generator=g) * scale
                                for n in biases}) for scale in (0.0, 1.0)]
    if m.renamed or m.own_work is not None:  # (their weights and calls go one request at a time: Remote.seq)
        outs = []
        for tensors in loads:
            m.load_state(tensors)
            outs.append(expect_tensor(m(x), what))
    else:  # the same four requests in one round trip, each taken in order as if sent alone
        done = m.seq(step("load_state", loads[0]), step("call", x), step("load_state", loads[1]), step("call", x),
                     lenient=True)
        outs = []
        for k in (0, 2):
            taken(done[k])
            outs.append(expect_tensor(taken(done[k + 1])["out"], what))
    if not _changed(*outs):
        fail(f"`{what}` gives the same output whatever its W_query, W_key, W_value biases are: forward does not "
             "use them. Compute queries, keys and values with the nn.Linear layers (self.W_query(x), ...).",
             f"`{what}`의 출력이 W_query, W_key, W_value의 bias 값과 상관없이 같습니다: forward가 bias를 쓰지 "
             "않습니다. 쿼리, 키, 값을 nn.Linear 층으로 계산하세요 (self.W_query(x), ...).")
    if plain is None:
        return
    # Built, given m's weights (its names; the biases it lacks are left out) and called, in one round trip.
    _without, done = plain([step("load_state", m.state()["params"]), step("call", x)])
    taken(done[0])
    want = expect_tensor(taken(done[1])["out"], what.replace(", qkv_bias=True)", ")"))
    got = outs[0]
    if got.shape != want.shape or not torch.allclose(got.double(), want.double(), rtol=1e-4, atol=1e-5,
                                                     equal_nan=True):
        fail(f"`{what}` with its W_query, W_key, W_value biases all zero does not give what the same weights give "
             "with qkv_bias=False: qkv_bias must only add a bias to the three projections, and forward compute the "
             "same attention either way.",
             f"W_query, W_key, W_value의 bias를 모두 0으로 둔 `{what}`의 출력이 같은 가중치에 qkv_bias=False일 때와 "
             "다릅니다: qkv_bias는 세 투영에 bias를 더하기만 해야 하고, forward는 어느 쪽이든 같은 어텐션을 계산해야 "
             "합니다.")


def with_qkv_bias(sub, cls, configs=None):
    """qkv_bias=True gives the query, key and value projections a bias (of every head), used in forward: other
    bias values give another output. Judged on its own: a bug elsewhere in forward is charged elsewhere. configs:
    CONFIGS[cls] unless given (at_full_length)."""
    expect_working(sub, cls)
    missing_argument = common.no_qkv_bias(sub, cls)
    if missing_argument is not None:  # (said in these words, not as the TypeError of an argument passed by name)
        raise CheckFailure(missing_argument)
    seed, b, T, d_in, d_out, heads, ctx = (configs or CONFIGS[cls])[0]
    what = call_text(cls, d_in, d_out, ctx, 0.0, heads).replace(")(x)", ", qkv_bias=True)(x)")
    ref = ref_build(cls, d_in, d_out, ctx, 0.0, heads, seed=seed, qkv_bias=True).eval()
    m, (listed,) = build_then(sub, cls, d_in, d_out, ctx, 0.0, heads, seed=seed, qkv_bias=True,
                              steps=[step("describe")])
    have, names = _params_and_names(m, ref, listed)
    missing = [n for n, _ in ref.named_parameters()
               if n.endswith(".bias") and "out_proj" not in n and target(names.get(n, n)) not in have]
    if cls == "MultiHeadAttentionWrapper":
        # The wrapper's part is passing qkv_bias on; what the heads do with it is CausalAttention's (judged there,
        # against the reference). A head built alone with qkv_bias=True and no bias: nothing to tell here.
        # Nor a head whose projections have other names (CausalAttention's question says so).
        if missing:
            alone = {n for n, _shape, _grad in build_head(sub, d_in, d_out, ctx, 0.0, seed, True).describe()["params"]}
            if not any(n.endswith(".bias") for n in alone) or projection_names(alone) is not None:
                return
        else:
            return
    unnamed_ = None if cls == "MultiHeadAttentionWrapper" else projection_names(have)
    if unnamed_ is not None and match_params(
            [(n, shape) for n, shape in have.items() if n.endswith(".weight")],
            [(n, tuple(p.shape)) for n, p in ref.named_parameters() if n.endswith(".weight")]):
        unnamed_ = None  # named otherwise, but the grader finds them (match_params): the bias is what is missing
    if missing and unnamed_ is not None:
        fail(f"`{what}` has no bias in W_query, W_key, W_value: {unnamed_.en}.",
             f"`{what}`의 W_query, W_key, W_value에 bias가 없습니다: {unnamed_.ko}.")
    if missing:
        where = "its heads' " if cls == "MultiHeadAttentionWrapper" else ""
        fail(f"`{what}` has no bias in {where}W_query, W_key, W_value (no parameter {', '.join(missing[:3])}): "
             "qkv_bias is ignored. Create the projections with nn.Linear(d_in, d_out, bias=qkv_bias)" +
             (" and pass qkv_bias on to every CausalAttention head." if where else "."),
             f"`{what}`의 {'헤드의 ' if where else ''}W_query, W_key, W_value에 bias가 없습니다 "
             f"(파라미터 {', '.join(missing[:3])} 없음): qkv_bias가 무시됩니다. 투영을 "
             "nn.Linear(d_in, d_out, bias=qkv_bias)로 만드세요" +
             (". 그리고 모든 CausalAttention 헤드에 qkv_bias를 넘기세요." if where else "."))
    biases = [n for n, _ in ref.named_parameters() if n.endswith(".bias") and "out_proj" not in n]
    _bias_changes_output(m, ref, biases, cls, seed, b, T, d_in, what, names,
                         plain=lambda steps: build_then(sub, cls, d_in, d_out, ctx, 0.0, heads, seed=seed,
                                                        steps=steps, lenient=True))


def _changed(a, b) -> bool:
    """Whether two outputs differ: in a finite value or in where NaN/inf appear."""
    if type(a) is not torch.Tensor or type(b) is not torch.Tensor or a.shape != b.shape:
        return True
    a, b = a.double(), b.double()
    if not torch.equal(torch.isfinite(a), torch.isfinite(b)):
        return True
    both = torch.isfinite(a)
    return bool(both.any()) and float((a - b)[both].abs().max()) > 1e-6


def device_problems(sub, cls, seed=3, b=2, T=5, d_in=4, d_out=4, heads=2, head=False) -> list[Message]:
    """What keeps `cls` from following .to(device), decided where it can be, never from a probe that failed.

    1. A simulated device (worker.DeviceSim: a CPU run in which what .to(device) moves, the input and what is
       computed from them are tagged as moved): ops that mix devices, or tensors .to() did not move, count. A
       forward that fails there for another reason decides nothing and costs nothing.
    2. A real GPU, where the worker has one: the moved module must run and give the CPU's output.
    3. Values on the CPU: the mask that forward uses must be a registered buffer, the tensor .to() moves:
       replacing the module's (T, T) buffers must change its output. Not asked of a forward that the simulation
       saw make its mask itself (scaled_dot_product_attention(is_causal=True)) with nothing left behind.
    """
    def make(s=sub):  # (s: sub.gpu() for the real GPU)
        if head:
            return build_head(s, d_in, d_out, T, seed=seed)
        return build(s, cls, d_in, d_out, T, 0.0, heads, seed=seed)

    def make_then(*steps):  # make() and then the steps, in one round trip
        if head:
            spec = common.stand_in(sub)
            name = spec["name"] if spec else common.head_class(sub)
            return sub.new_seq(name, *common.head_args(sub, spec, d_in, d_out, T, 0.0), steps=list(steps),
                               seed=seed, stand_in=spec or None, lenient=True)
        return build_then(sub, cls, d_in, d_out, T, 0.0, heads, seed=seed, steps=list(steps), lenient=True)

    shape = (b, T, d_in)
    problems: list[Message] = []
    internal_mask = False  # forward makes its causal mask itself, on the input's device (SDPA is_causal=True)
    simulated = False  # the simulation ran forward through: nothing mixed devices, nothing stayed behind
    try:
        res = taken(make_then(step("probe_devices", shape))[1][0])
        internal_mask = res.get("causal_sdpa") is True and not res["mixed"] and not res["stay_behind"]
        simulated = not res["mixed"] and not res["stay_behind"] and res["out_device"] in (None, "meta")
        if res.get("to_cpu") is True and res["mixed"]:  # the cause of the mix, in the student's own terms
            problems.append(Message("forward moves a tensor back to the CPU (.cpu() or .to('cpu')); keep every "
                                    "tensor on x.device",
                                    "forward가 텐서를 CPU로 되돌립니다(.cpu() 또는 .to('cpu')). 모든 텐서를 x.device에 "
                                    "두세요"))
        problems += [Message(f"{op} got tensors on {' and '.join(devs)}",
                             f"{op}에 {', '.join(devs)} 장치의 텐서가 섞여 들어감") for op, devs in res["mixed"]]
        problems += [Message(f"{s} was not moved by .to(device)", f"{s}이(가) .to(device)로 옮겨지지 않음")
                     for s in res["stay_behind"]]
        if res["out_device"] not in (None, "meta"):
            problems.append(Message(f"the output stayed on {res['out_device']}",
                                    f"출력이 {res['out_device']} 장치에 남음"))
    except CheckFailure as e:
        text = e.message.en
        if "device" in text and "meta tensor" not in text:
            problems.append(e.message)
        # anything else: this forward fails on the simulated device for a reason that says nothing about devices
    x = randn(seed, *shape)
    m, outs = make_then(step("call", x), step("describe"))
    y = expect_tensor(common.head_value(sub, taken(outs[0])["out"]) if head else taken(outs[0])["out"],
                      f"{cls}(...)(x)")
    if HAS_CUDA:  # in the worker that sees the GPU (sub's sees none: Submission.gpu)
        try:
            gpu = sub.gpu()
            if gpu.env().get("cuda"):
                on_gpu = make(gpu).to("cuda")(x, device="cuda")
                if _changed(y, expect_tensor(on_gpu, f"{cls}(...)(x) on CUDA")):
                    problems.append(Message("on a real GPU the output differs from the CPU's",
                                            "실제 GPU에서 출력이 CPU와 다름"))
        except CheckFailure as e:
            problems.append(Message(f"on a real GPU: {e.message.en}", f"실제 GPU에서: {e.message.ko}"))
    if internal_mask:
        return problems  # no mask tensor to move: the simulation (or a real GPU) has said all there is
    # Values on the CPU (what a module that behaves differently under the simulation cannot escape): the mask
    # that forward uses must be a registered buffer, the tensor .to() moves (a (T, T) buffer, or one with
    # leading 1s, e.g. (1, 1, T, T)). Asked only of a module that keeps a mask-shaped tensor as a plain attribute,
    # which .to() leaves behind: a forward that does not use its buffer because it does not mask at all (a
    # masked_fill whose result is dropped, charged by the value checks) or makes its mask on x.device (the
    # simulation ran it through) has no device fault.
    plain = sorted(n for n, shape in taken(outs[1]).get("tensors", [])
                   if len(shape) >= 2 and tuple(shape[-2:]) == (T, T) and all(d == 1 for d in shape[:-2]))
    if not plain:
        return problems
    masks = {n: t for n, t in m.state()["buffers"].items()
             if type(t) is torch.Tensor and t.dim() >= 2 and tuple(t.shape[-2:]) == (T, T)
             and all(d == 1 for d in t.shape[:-2])}
    if not masks and simulated:
        # A plain mask that forward moves to x.device itself (`self.mask.to(x.device)`) works on every device: the
        # mask-buffer check charges the missing register_buffer, once (learners round 8: charged here again).
        return problems
    if not masks:
        problems.append(Message(f"the causal mask is not a registered buffer but a plain attribute "
                                f"({', '.join(plain)}), so .to(device) leaves it behind",
                                f"코잘 마스크가 등록된 버퍼가 아니라 일반 속성({', '.join(plain)})이어서 "
                                ".to(device)가 옮기지 않음"))
    else:
        used = False
        for fill in (torch.zeros_like, torch.ones_like):
            m.load_state({n: fill(t) for n, t in masks.items()})
            if _changed(y, expect_tensor(m(x), f"{cls}(...)(x)")):
                used = True
                break
        if not used:
            problems.append(Message(f"forward does not use the registered buffer ({', '.join(sorted(masks))}) but "
                                    f"a plain tensor attribute ({', '.join(plain)}), which .to(device) does not move",
                                    f"forward가 등록된 버퍼({', '.join(sorted(masks))}) 대신 .to(device)가 옮기지 "
                                    f"않는 일반 텐서 속성({', '.join(plain)})을 씀"))
    return problems


def _own_exp_softmax(sub, cls: str) -> bool:
    """Whether the last definition of class `cls` in the source calls exp and no softmax (read, not run; only for
    choosing the words of a failure)."""
    import ast
    body = common.class_node(sub, cls)
    if body is None:
        return False
    called = {n.func.attr if isinstance(n.func, ast.Attribute) else getattr(n.func, "id", "")
              for n in ast.walk(body) if isinstance(n, ast.Call)}
    return "exp" in called and not called & {"softmax", "log_softmax", "scaled_dot_product_attention"}


def fail_devices(cls, problems):
    fail(f"`{cls}` does not follow .to(device): {'; '.join(p.en for p in problems[:3])}. Register constant "
         "tensors such as the mask with register_buffer, and create new tensors on x.device.",
         f"`{cls}`가 .to(device)를 따르지 않습니다: {'; '.join(p.ko for p in problems[:3])}. 마스크 같은 상수 텐서는 "
         "register_buffer로 등록하고, 새 텐서는 x.device 위에 만드세요.")


def gradients(sub, cls, configs=None):
    """configs: CONFIGS[cls] unless given (at_full_length)."""
    expect_working(sub, cls)
    seed, b, T, d_in, d_out, heads, ctx = (configs or CONFIGS[cls])[0]
    ref = ref_build(cls, d_in, d_out, ctx, 0.0, heads, seed=seed)
    x = make_input(cls, seed, b, T, d_in)
    out = ref(x)
    g = randn(seed + 3, *out.shape)
    # The same gradients as out.backward(g) (1.0 * g is exact), without the first call's import of torch's
    # symbolic-shapes machinery (sympy: over a second per grader process).
    (out * g).sum().backward()
    m, (res,) = built_with(sub, cls, ref, [step("call", x, grad_output=g)], d_in, d_out, ctx, 0.0, heads, seed)
    res = taken(res)
    expect_shape(res["out"], tuple(out.shape), call_text(cls, d_in, d_out, ctx, 0.0, heads))
    grads = res.get("grads")
    if grads is None:
        fail(f"The output of `{cls}` is not connected to the parameters (no grad_fn): do not use .detach(), "
             "torch.no_grad() or .data in forward.",
             f"`{cls}`의 출력이 파라미터와 연결되어 있지 않습니다 (grad_fn 없음). forward에서 .detach(), "
             "torch.no_grad(), .data를 쓰지 마세요.")
    names = known_map(sub, cls, ref)
    for name, p in ref.named_parameters():
        got = piece(grads.get(target(names.get(name, name))), names.get(name, name))
        if got is None:
            fail(f"No gradient reached `{cls}.{name}`: it is not used in forward, it is not a trainable "
                 "parameter, or the part of forward that uses it runs under torch.no_grad() (a helper decorated "
                 "with @torch.no_grad()), .detach() or .data.",
                 f"`{cls}.{name}`에 그래디언트가 전달되지 않았습니다: forward에서 쓰이지 않거나, 학습 가능한 "
                 "파라미터가 아니거나, 그것을 쓰는 forward 부분이 torch.no_grad()(@torch.no_grad()를 붙인 도우미 "
                 "함수), .detach(), .data 아래에서 실행됩니다.")
        expect_close(got, p.grad, f"{cls}.{name}.grad", atol=1e-4, rtol=1e-3,
                     explain=explain(sub, m, x, out=res["out"]))


# ------------------------------------------------------------------------------- 3.3 steps

@check(question="steps", points=2)
def test_softmax_naive_random(sub):
    """softmax_naive on hidden 1-D score vectors"""
    xs = [(n, randn(seed, n) * 2) for seed, n in ((91, 4), (92, 9), (93, 1))]
    with sub.ahead([function_call("softmax_naive", x) for _n, x in xs]):
        for n, x in xs:
            expect_close(sub.call("softmax_naive", x), R.softmax_naive(x), f"softmax_naive(x) for {n} scores")


@check(question="steps", points=2)
def test_attention_scores_random(sub):
    """attention_scores on hidden inputs"""
    xs = [(n, d, randn(seed, n, d)) for seed, (n, d) in ((94, (5, 4)), (95, (8, 2)))]
    with sub.ahead([function_call("attention_scores", x) for _n, _d, x in xs]):
        for n, d, x in xs:
            expect_close(sub.call("attention_scores", x), R.attention_scores(x), f"attention_scores(x) for x {n}x{d}",
                         explain=explain(sub, "attention_scores", x))


@check(question="steps", points=3)
def test_context_vectors_random(sub):
    """context_vectors on hidden inputs (rows of the weights must sum to 1)"""
    xs = [(n, d, randn(seed, n, d)) for seed, (n, d) in ((96, (5, 4)), (97, (7, 3)))]
    with sub.ahead([function_call("context_vectors", x) for _n, _d, x in xs]):
        for n, d, x in xs:
            expect_close(sub.call("context_vectors", x), R.context_vectors(x), f"context_vectors(x) for x {n}x{d}",
                         explain=explain(sub, "context_vectors", x),
                         hint=Message("Normalise each row of the scores: torch.softmax(scores, dim=-1).",
                                      "점수의 각 행을 정규화하세요: torch.softmax(scores, dim=-1)."))


# ------------------------------------------------------------------------------- per class

@check(question="SelfAttention_v1", points=4)
def test_v1_seeded(sub):
    """SelfAttention_v1 on hidden seeds and shapes"""
    seeded(sub, "SelfAttention_v1")


@check(question="SelfAttention_v1", points=4)
def test_v1_equivalent(sub):
    """SelfAttention_v1 with the reference's weights copied in"""
    equivalent(sub, "SelfAttention_v1")


@check(question="SelfAttention_v1", points=2)
def test_v1_gradients(sub):
    """SelfAttention_v1: gradients reach every weight"""
    gradients(sub, "SelfAttention_v1")


@check(question="SelfAttention_v2", points=4)
def test_v2_seeded(sub):
    """SelfAttention_v2 on hidden seeds and shapes"""
    seeded(sub, "SelfAttention_v2")


@check(question="SelfAttention_v2", points=3)  # (4 until the bias check below took one: the question stays 15)
def test_v2_equivalent(sub):
    """SelfAttention_v2 with the reference's weights copied in"""
    equivalent(sub, "SelfAttention_v2")


@check(question="SelfAttention_v2", points=1)
def test_v2_qkv_bias_used(sub):
    """SelfAttention_v2(..., qkv_bias=True) uses its projections' biases in forward"""
    qkv_bias_used(sub, "SelfAttention_v2")


@check(question="SelfAttention_v2", points=2)
def test_v2_gradients(sub):
    """SelfAttention_v2: gradients reach every weight"""
    gradients(sub, "SelfAttention_v2")


@check(question="CausalAttention", points=3)
def test_causal_seeded(sub):
    """CausalAttention on hidden seeds and shapes (some shorter than context_length)"""
    seeded(sub, "CausalAttention")


@check(question="CausalAttention", points=2)
def test_causal_equivalent(sub):
    """CausalAttention with the reference's weights copied in"""
    at_full_length(equivalent, sub, "CausalAttention")


@check(question="CausalAttention", points=2)
def test_causal_neg_inf(sub):
    """CausalAttention fills future scores with -inf before the softmax"""
    neg_inf_fill(sub, "CausalAttention")


@check(question="CausalAttention", points=3)
def test_causal_dropout(sub):
    """CausalAttention applies dropout to the attention weights in train mode"""
    at_full_length(dropout_train, sub, "CausalAttention")


@check(question="CausalAttention", points=device_points("CausalAttention"))
def test_causal_devices(sub):
    """CausalAttention keeps every tensor on the input's device"""
    expect_working(sub, "CausalAttention")
    problems = device_problems(sub, "CausalAttention")
    if problems:
        fail_devices("CausalAttention", problems)


@check(question="CausalAttention", points=1)
def test_causal_qkv_bias(sub):
    """CausalAttention(..., qkv_bias=True) gives W_query, W_key, W_value a bias"""
    at_full_length(with_qkv_bias, sub, "CausalAttention")


@check(question="CausalAttention", points=2)
def test_causal_gradients(sub):
    """CausalAttention: gradients reach every weight"""
    at_full_length(gradients, sub, "CausalAttention")


@check(question="MultiHeadAttentionWrapper", points=3)
def test_wrapper_seeded(sub):
    """MultiHeadAttentionWrapper on hidden seeds and shapes equals its heads side by side"""
    for seed, b, T, d_in, d_out, heads, ctx in CONFIGS["MultiHeadAttentionWrapper"]:
        check_wrapper_matches_heads(sub, seed, b, T, d_in, d_out, heads, ctx)


@check(question="MultiHeadAttentionWrapper", points=1)
def test_wrapper_state_names(sub):
    """MultiHeadAttentionWrapper's weights are named and shaped like the reference's"""
    for seed, b, T, d_in, d_out, heads, ctx in CONFIGS["MultiHeadAttentionWrapper"][:2]:
        ref = ref_build("MultiHeadAttentionWrapper", d_in, d_out, ctx, 0.0, heads, seed=seed)
        transplant(build(sub, "MultiHeadAttentionWrapper", d_in, d_out, ctx, 0.0, heads, seed=seed), ref,
                   "MultiHeadAttentionWrapper")
    expect_working(sub, "MultiHeadAttentionWrapper")


@check(question="MultiHeadAttentionWrapper", points=1)
def test_wrapper_shapes(sub):
    """MultiHeadAttentionWrapper outputs num_heads * d_out features"""
    for seed, b, T, d_in, d_out, heads, ctx in CONFIGS["MultiHeadAttentionWrapper"]:
        res, ctx = run_wrapper(sub, randn(seed, b, T, d_in), d_in, d_out, ctx, heads, seed)
        expect_shape(res["out"], (b, T, heads * d_out),
                     call_text("MultiHeadAttentionWrapper", d_in, d_out, ctx, 0.0, heads))
    expect_working(sub, "MultiHeadAttentionWrapper")


@check(question="MultiHeadAttentionWrapper", points=device_points("MultiHeadAttentionWrapper"))
def test_wrapper_devices(sub):
    """MultiHeadAttentionWrapper moves all its heads with .to(device)"""
    # The wrapper's own part: its heads are registered submodules (weights loaded through the wrapper's
    # state_dict change its output, part of the evidence gate) and, where a single head follows .to(device),
    # so does the wrapper. A device bug that one head shows on its own is charged to CausalAttention.
    expect_working(sub, "MultiHeadAttentionWrapper")
    problems = device_problems(sub, "MultiHeadAttentionWrapper")
    if problems and not device_problems(sub, "CausalAttention", head=True):
        seed, b, T, d_in, d_out, heads, ctx = CONFIGS["MultiHeadAttentionWrapper"][0]
        held = build(sub, "MultiHeadAttentionWrapper", d_in, d_out, ctx, 0.0, heads, seed=seed).describe("heads")
        kind = (held["attrs"].get("heads") or {}).get("type")
        if kind in ("list", "tuple", "dict"):  # the cause, in the student's terms (the structure check's too)
            fail(f"`MultiHeadAttentionWrapper` does not follow .to(device): `self.heads` is a plain {kind}, which "
                 ".to(device) does not move (nor .parameters() or state_dict see). Wrap it: nn.ModuleList([...]).",
                 f"`MultiHeadAttentionWrapper`가 .to(device)를 따르지 않습니다: `self.heads`가 일반 {kind}이라서 "
                 ".to(device)가 옮기지 않습니다 (.parameters()와 state_dict도 보지 못함). nn.ModuleList([...])로 "
                 "감싸세요.")
        fail_devices("MultiHeadAttentionWrapper", problems)


@check(question="MultiHeadAttentionWrapper", points=1)
def test_wrapper_dropout(sub):
    """MultiHeadAttentionWrapper passes dropout to its heads: in train mode it drops out as they do"""
    seed, b, T, d_in, d_out, heads, _ctx = CONFIGS["MultiHeadAttentionWrapper"][0]
    check_wrapper_dropout(sub, seed, b, T, d_in, d_out, heads)


@check(question="MultiHeadAttentionWrapper", points=1)
def test_wrapper_qkv_bias(sub):
    """MultiHeadAttentionWrapper(..., qkv_bias=True) passes qkv_bias to its heads"""
    with_qkv_bias(sub, "MultiHeadAttentionWrapper")


@check(question="MultiHeadAttentionWrapper", points=1)  # (2 until the dropout check took one: still 15)
def test_wrapper_gradients(sub):
    """MultiHeadAttentionWrapper: gradients reach every head's weights"""
    seed, b, T, d_in, d_out, heads, ctx = CONFIGS["MultiHeadAttentionWrapper"][0]
    expect_working(sub, "MultiHeadAttentionWrapper")
    ref = ref_build("MultiHeadAttentionWrapper", d_in, d_out, ctx, 0.0, heads, seed=seed)
    x, g_out = randn(seed, b, T, d_in), randn(seed + 3, b, T, heads * d_out)
    res, ctx = run_wrapper(sub, x, d_in, d_out, ctx, heads, seed, grad_output=g_out)
    # An output of another shape cannot take the gradient: say so (the shape check charges it) rather than blame
    # the heads' registration.
    expect_shape(res["out"], (b, T, heads * d_out), call_text("MultiHeadAttentionWrapper", d_in, d_out, ctx, 0.0,
                                                              heads))

    def reached(g):  # a gradient arrived (NaN from a broken mask counts: that is CausalAttention's fault)
        return type(g) is torch.Tensor and not bool((g == 0).all())

    grads = res.get("grads") or {}
    # By the student's names where they are others (heads kept as self.attention_heads, W_q): match_params.
    names = match_params([(n, tuple(g.shape)) for n, g in grads.items() if type(g) is torch.Tensor],
                         [(n, tuple(p.shape)) for n, p in ref.named_parameters()])
    missing = [name for name, _ in ref.named_parameters()
               if not reached(piece(grads.get(target(names.get(name, name))), names.get(name, name)))]
    head_grads = None
    # (Not over the grader's stand-in heads, which pass every gradient: red team, round 12, a wrapper detaching
    # the first of its stand-in heads' (context, weights) pairs was excused by the pair having no gradients.)
    if missing and not common.stand_in(sub):
        try:  # the same gradient missing in one head built alone is CausalAttention's fault, not the wrapper's
            head_grads = build_head(sub, d_in, d_out, ctx, seed=seed).run(x, grad_output=g_out[..., :d_out])
            head_grads = head_grads.get("grads") or {}
        except CheckFailure:
            pass  # the wrapper ran where a single head does not: judge the wrapper alone
    for name in missing:
        if head_grads is None or reached(head_grads.get(name.split(".", 2)[-1])):
            fail(f"No gradient reached `MultiHeadAttentionWrapper.{name}`: every head must be a registered "
                 "submodule (nn.ModuleList) that is used in forward.",
                 f"`MultiHeadAttentionWrapper.{name}`에 그래디언트가 전달되지 않았습니다. 모든 헤드는 forward에서 "
                 "쓰이는 등록된 서브모듈(nn.ModuleList)이어야 합니다.")


@check(question="MultiHeadAttention", points=3)
def test_mha_seeded(sub):
    """MultiHeadAttention on hidden seeds, shapes and head counts"""
    seeded(sub, "MultiHeadAttention")


@check(question="MultiHeadAttention", points=2)
def test_mha_equivalent(sub):
    """MultiHeadAttention with the reference's weights copied in"""
    at_full_length(equivalent, sub, "MultiHeadAttention")


@check(question="MultiHeadAttention", points=1)
def test_mha_neg_inf(sub):
    """MultiHeadAttention fills future scores with -inf before the softmax"""
    neg_inf_fill(sub, "MultiHeadAttention")


@check(question="MultiHeadAttention", points=1)
def test_mha_dropout(sub):
    """MultiHeadAttention applies dropout to the attention weights in train mode"""
    at_full_length(dropout_train, sub, "MultiHeadAttention")


@check(question="MultiHeadAttention", points=1)
def test_mha_eval_ignores_dropout(sub):
    """MultiHeadAttention in eval mode ignores dropout"""
    check_eval_no_dropout(sub, "MultiHeadAttention", seed=21)


@check(question="MultiHeadAttention", points=1)
def test_mha_shapes(sub):
    """MultiHeadAttention keeps d_out features for 1 to 4 heads and short sequences"""
    for seed, b, T, d_in, d_out, heads, ctx in CONFIGS["MultiHeadAttention"]:
        x = randn(seed, b, T, d_in)
        m, (res,) = build_then(sub, "MultiHeadAttention", d_in, d_out, ctx, 0.0, heads, seed=seed,
                               steps=[step("call", x)])
        what = call_text("MultiHeadAttention", d_in, d_out, ctx, 0.0, heads)
        check_lengths_reused(m, x, expect_shape(res["out"], (b, T, d_out), what), ctx, what)
    expect_working(sub, "MultiHeadAttention")


@check(question="MultiHeadAttention", points=device_points("MultiHeadAttention"))
def test_mha_devices(sub):
    """MultiHeadAttention keeps every tensor on the input's device"""
    expect_working(sub, "MultiHeadAttention")
    problems = device_problems(sub, "MultiHeadAttention")
    if problems:
        fail_devices("MultiHeadAttention", problems)


@check(question="MultiHeadAttention", points=1)
def test_mha_qkv_bias(sub):
    """MultiHeadAttention(..., qkv_bias=True) gives W_query, W_key, W_value a bias"""
    at_full_length(with_qkv_bias, sub, "MultiHeadAttention")


@check(question="MultiHeadAttention", points=2)
def test_mha_gradients(sub):
    """MultiHeadAttention: gradients reach every weight"""
    at_full_length(gradients, sub, "MultiHeadAttention")


# ------------------------------------------------------------------------------- a real GPU
#
# Where the grading machine has a GPU, `[gpu] points` in assignment.toml moves that many of a question's device
# points to running it on CUDA against the reference (the total stays 100). Without one (Gradescope's image is
# CPU-only), device handling is judged by the simulated device and the buffer test above, and one visible
# 0-point line says so.

def _cuda_check(cls):
    @check(question=cls, points=GPU_POINTS.get(cls, 0), name=f"{cls} runs on a real GPU (CUDA)",
           name_ko=f"{cls}: 실제 GPU(CUDA)에서 실행")
    def run_on_cuda(sub):
        expect_working(sub, cls)  # (a module that does nothing runs on CUDA as it does on the CPU)
        gpu = sub.gpu()  # a worker of its own that sees the GPU (sub's sees none)
        if not gpu.env().get("cuda"):  # the grader sees a GPU that the sandboxed worker cannot use: our fault
            raise RuntimeError("the grading machine has CUDA but the worker process cannot use it: "
                               + (gpu.env().get("cuda_error") or "it sees no GPU"))
        at_full_length(functools.partial(on_cuda, gpu), sub, cls)
    return run_on_cuda


def on_cuda(gpu, sub, cls, configs=None):
    """`cls` built with the same seed in `sub`'s worker (the CPU) and in `gpu` (a worker of its own that sees the
    GPU), moved to CUDA there, and called on the same input: the output on CUDA must be the CPU's. configs:
    CONFIGS[cls] unless given (at_full_length).

    Against the class's own output, not the reference's: the GPU part of a question's device points is for
    running on a GPU. A wrong value is the value checks' to charge, once; compared with the reference here, a
    softmax over dim=1 lost 2 more points on a GPU server than on a CPU-only machine (found on an H200, session
    19)."""
    seed, b, T, d_in, d_out, heads, ctx = (configs or CONFIGS[cls])[0]
    what = call_text(cls, d_in, d_out, ctx, 0.0, heads)
    x = make_input(cls, seed, b, T, d_in)
    _m, (res,) = build_then(sub, cls, d_in, d_out, ctx, 0.0, heads, seed=seed, steps=[step("call", x)])
    on_cpu = expect_tensor(taken(res)["out"], what)
    out = build(gpu, cls, d_in, d_out, ctx, 0.0, heads, seed=seed).to("cuda")(x, device="cuda")
    expect_close(out, on_cpu, Message(f"{what} on CUDA, against its own output on the CPU",
                                      f"CUDA에서의 {what} (같은 모듈의 CPU 출력과 비교)"))


if HAS_CUDA:
    for _cls in CONFIGS:
        globals()[f"test_cuda_{_cls}"] = _cuda_check(_cls)
else:
    @check(question="MultiHeadAttention", points=0, visibility="visible",
           name="GPU: not checked on a real GPU (no GPU on the grading machine)")
    def test_gpu_simulated_only(sub):
        """GPU: not checked on a real GPU (no GPU on the grading machine)"""
        pytest.skip(SIMULATED)
