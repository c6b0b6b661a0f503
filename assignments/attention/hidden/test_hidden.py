"""Hidden checks for the attention lab: hidden seeds and shapes against the reference, weight transplants,
the -inf fill, dropout, devices and gradients. Never shipped to students."""
import pytest
import torch

from assignments.attention.common import (ORDER_HINT, build, build_head, call_text, check_wrapper_matches_heads,
                                          explain, fault_of, randn, run_wrapper)
from assignments.attention.hidden import diagnose  # noqa: F401  (registers the grader's bug diagnosis)
from autograder.checks import CheckFailure, check, expect_close, expect_shape, expect_tensor, fail
from autograder.messages import Message
from reference import attention as R

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


def ref_build(cls, d_in, d_out, ctx=0, dropout=0.0, heads=0, seed=None):
    if seed is not None:
        torch.manual_seed(seed)
    if cls in SA:
        return getattr(R, cls)(d_in, d_out)
    if cls == "CausalAttention":
        return R.CausalAttention(d_in, d_out, ctx, dropout)
    return getattr(R, cls)(d_in, d_out, ctx, dropout, num_heads=heads)


def make_input(cls, seed, b, T, d_in):
    return randn(seed, T, d_in) if cls in SA else randn(seed, b, T, d_in)


def transplant(m, ref, cls):
    """Copy the reference's parameters into the student's module by name and shape; fail if any is missing."""
    report = m.load_state({k: v for k, v in ref.state_dict().items()})
    needed = {n for n, _ in ref.named_parameters()}
    missing = sorted(needed & set(report["missing"]))
    shapes = [(n, s, r) for n, s, r in report["mismatched"] if n in needed]
    if missing or shapes:
        have = ", ".join(f"{n} {tuple(shape)}" for n, shape, _ in m.describe()["params"])
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


def seeded(sub, cls):
    """Same seed, same shapes: the student's module must reproduce the reference output exactly."""
    for seed, b, T, d_in, d_out, heads, ctx in CONFIGS[cls]:
        x = make_input(cls, seed, b, T, d_in)
        m = build(sub, cls, d_in, d_out, ctx, 0.0, heads, seed=seed)
        ref = ref_build(cls, d_in, d_out, ctx, 0.0, heads, seed=seed).eval()
        with torch.no_grad():
            want = ref(x)
        got = m(x)
        try:
            expect_close(got, want, call_text(cls, d_in, d_out, ctx, 0.0, heads) + f" (seed {seed})",
                         explain=explain(sub, m, x))
        except CheckFailure as e:
            try:  # the right function with other initial weights only needs a hint about the order
                transplant(m, ref, cls)
                expect_close(m(x), want, cls)
            except CheckFailure:
                raise e from None
            raise CheckFailure(e.message + ORDER_HINT) from None


def equivalent(sub, cls):
    """With the reference's weights copied in, outputs match: credit that does not depend on creation order."""
    for seed, b, T, d_in, d_out, heads, ctx in CONFIGS[cls]:
        ref = ref_build(cls, d_in, d_out, ctx, 0.0, heads, seed=seed + 1).eval()
        m = build(sub, cls, d_in, d_out, ctx, 0.0, heads, seed=seed)
        transplant(m, ref, cls)
        for k in range(2):
            x = make_input(cls, seed + 10 + k, b, T, d_in)
            with torch.no_grad():
                want = ref(x)
            expect_close(m(x), want, call_text(cls, d_in, d_out, ctx, 0.0, heads) + " with the reference's weights",
                         explain=explain(sub, m, x))


def neg_inf_fill(sub, cls, seed=5, b=2, T=5, d_in=4, d_out=4, heads=2):
    """What goes into the softmax: -inf strictly above the diagonal, finite elsewhere."""
    m = build(sub, cls, d_in, d_out, T, 0.0, heads, seed=seed)
    res = m.run(randn(seed, b, T, d_in), record=["softmax", "exp"])
    recs = [r for r in res["records"] if type(r.get("input")) is torch.Tensor and r["input"].dim() >= 2
            and tuple(r["input"].shape[-2:]) == (T, T)]
    recs = [r for r in recs if r["fn"] == "softmax"] or recs
    if not recs:
        fail(f"No softmax over a ({T}, {T}) score matrix was seen in `{cls}.forward`; compute the attention "
             "weights with torch.softmax(..., dim=-1).",
             f"`{cls}.forward`에서 ({T}, {T}) 점수 행렬에 대한 softmax가 보이지 않습니다. "
             "torch.softmax(..., dim=-1)로 어텐션 가중치를 계산하세요.")
    s = recs[-1]["input"]
    upper = torch.triu(torch.ones(T, T, dtype=torch.bool), diagonal=1)
    above, rest = s[..., upper], s[..., ~upper]
    if not bool((above == -torch.inf).all()):
        if bool((above < -1e4).all()):
            fail(f"In `{cls}` the future positions hold a large negative number ({above.max().item():.3g}) "
                 "instead of -inf. Fill with -torch.inf, as in the notebook.",
                 f"`{cls}`에서 미래 위치가 -inf 대신 큰 음수({above.max().item():.3g})로 채워져 있습니다. "
                 "노트북처럼 -torch.inf로 채우세요.")
        fail(f"In `{cls}` the scores above the diagonal reach the softmax unmasked. Fill them with -inf before "
             "the softmax (masking after it, or dropping the result of masked_fill, does not count).",
             f"`{cls}`에서 대각선 위의 점수가 가려지지 않은 채 softmax에 들어갑니다. softmax 전에 -inf로 채우세요 "
             "(softmax 뒤에 가리거나 masked_fill 결과를 버리면 안 됩니다).")
    if not bool(torch.isfinite(rest).all()):
        fail(f"In `{cls}` the diagonal or positions below it are -inf too: the mask hides more than the future "
             "(tril or diagonal=0?).",
             f"`{cls}`에서 대각선이나 그 아래도 -inf입니다. 마스크가 미래보다 더 많이 가립니다 (tril 또는 diagonal=0?).")


def dropout_train(sub, cls):
    """Train mode with p=0.5 and the same seed: dropout on the attention weights, drawn like the reference."""
    for seed, b, T, d_in, d_out, heads, ctx in CONFIGS[cls][:2]:
        ref = ref_build(cls, d_in, d_out, ctx, 0.5, heads, seed=seed)
        m = build(sub, cls, d_in, d_out, ctx, 0.5, heads, seed=seed)
        transplant(m, ref, cls)
        x = make_input(cls, seed, b, T, d_in)
        got = m(x, mode="train", seed=seed + 7)
        ref.train()
        torch.manual_seed(seed + 7)
        with torch.no_grad():
            want = ref(x)
        expect_close(got, want, call_text(cls, d_in, d_out, ctx, 0.5, heads) + " in train mode",
                     explain=explain(sub, m, x, mode="train", seed=seed + 7), hint=Message(
            "Apply self.dropout once, to the attention weights right after the softmax (not to the scores, "
            "the values or the output), and create it as nn.Dropout(dropout).",
            "self.dropout은 softmax 직후의 어텐션 가중치에 한 번만 적용하세요 (점수, value, 출력에 적용하면 안 됨). "
            "nn.Dropout(dropout)으로 만드세요."))


def devices(sub, cls, seed=3, b=2, T=5, d_in=4, d_out=4, heads=2, head=False):
    m = build_head(sub, d_in, d_out, T, seed=seed) if head else build(sub, cls, d_in, d_out, T, 0.0, heads, seed=seed)
    shape = (T, d_in) if cls in SA else (b, T, d_in)
    res = m.probe_devices(shape)
    return res


def device_report(sub, cls, head=False):
    """What goes wrong when the module is moved: a forward that raises over mixed devices counts as a problem."""
    try:
        return device_problems(devices(sub, cls, head=head))
    except CheckFailure as e:
        if "device" not in e.message.en:
            raise
        return [e.message.en]


def head_device_report(sub):
    """(device problems, None) of one of the student's own heads, or ([], fault) when it raises otherwise."""
    try:
        return device_report(sub, "CausalAttention", head=True), None
    except CheckFailure as e:
        return [], fault_of(e)


def device_problems(res):
    problems = [f"{op} got tensors on {' and '.join(devs)}" for op, devs in res["mixed"]]
    problems += [f"{s} was not moved by .to(device)" for s in res["stay_behind"]]
    if res["out_device"] not in (None, "meta"):
        problems.append(f"the output stayed on {res['out_device']}")
    return problems


def fail_devices(cls, problems):
    fail(f"`{cls}` does not follow .to(device): {'; '.join(problems[:3])}. Register constant tensors such as "
         "the mask with register_buffer, and create new tensors on x.device.",
         f"`{cls}`가 .to(device)를 따르지 않습니다: {'; '.join(problems[:3])}. 마스크 같은 상수 텐서는 "
         "register_buffer로 등록하고, 새 텐서는 x.device 위에 만드세요.")


def gradients(sub, cls):
    seed, b, T, d_in, d_out, heads, ctx = CONFIGS[cls][0]
    ref = ref_build(cls, d_in, d_out, ctx, 0.0, heads, seed=seed)
    m = build(sub, cls, d_in, d_out, ctx, 0.0, heads, seed=seed)
    transplant(m, ref, cls)
    x = make_input(cls, seed, b, T, d_in)
    out = ref(x)
    g = randn(seed + 3, *out.shape)
    out.backward(g)
    res = m.run(x, grad_output=g)
    expect_shape(res["out"], tuple(out.shape), call_text(cls, d_in, d_out, ctx, 0.0, heads))
    grads = res.get("grads")
    if grads is None:
        fail(f"The output of `{cls}` is not connected to the parameters (no grad_fn): do not use .detach(), "
             "torch.no_grad() or .data in forward.",
             f"`{cls}`의 출력이 파라미터와 연결되어 있지 않습니다 (grad_fn 없음). forward에서 .detach(), "
             "torch.no_grad(), .data를 쓰지 마세요.")
    for name, p in ref.named_parameters():
        got = grads.get(name)
        if got is None:
            fail(f"No gradient reached `{cls}.{name}`: it is not used in forward, or it is not a trainable "
                 "parameter.",
                 f"`{cls}.{name}`에 그래디언트가 전달되지 않았습니다: forward에서 쓰이지 않거나 학습 가능한 "
                 "파라미터가 아닙니다.")
        expect_close(got, p.grad, f"gradient of {cls}.{name}", atol=1e-4, rtol=1e-3,
                     explain=explain(sub, m, x, out=res["out"]))


# ------------------------------------------------------------------------------- 3.3 steps

@check(question="steps", points=2)
def test_softmax_naive_random(sub):
    """softmax_naive on hidden 1-D score vectors"""
    for seed, n in ((91, 4), (92, 9), (93, 1)):
        x = randn(seed, n) * 2
        expect_close(sub.call("softmax_naive", x), R.softmax_naive(x), f"softmax_naive(x) for {n} scores")


@check(question="steps", points=2)
def test_attention_scores_random(sub):
    """attention_scores on hidden inputs"""
    for seed, (n, d) in ((94, (5, 4)), (95, (8, 2))):
        x = randn(seed, n, d)
        expect_close(sub.call("attention_scores", x), R.attention_scores(x), f"attention_scores(x) for x {n}x{d}",
                     explain=explain(sub, "attention_scores", x))


@check(question="steps", points=3)
def test_context_vectors_random(sub):
    """context_vectors on hidden inputs (rows of the weights must sum to 1)"""
    for seed, (n, d) in ((96, (5, 4)), (97, (7, 3))):
        x = randn(seed, n, d)
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


@check(question="SelfAttention_v2", points=4)
def test_v2_equivalent(sub):
    """SelfAttention_v2 with the reference's weights copied in"""
    equivalent(sub, "SelfAttention_v2")


@check(question="SelfAttention_v2", points=2)
def test_v2_gradients(sub):
    """SelfAttention_v2: gradients reach every weight"""
    gradients(sub, "SelfAttention_v2")


@check(question="CausalAttention", points=3)
def test_causal_seeded(sub):
    """CausalAttention on hidden seeds and shapes (some shorter than context_length)"""
    seeded(sub, "CausalAttention")


@check(question="CausalAttention", points=3)
def test_causal_equivalent(sub):
    """CausalAttention with the reference's weights copied in"""
    equivalent(sub, "CausalAttention")


@check(question="CausalAttention", points=2)
def test_causal_neg_inf(sub):
    """CausalAttention fills future scores with -inf before the softmax"""
    neg_inf_fill(sub, "CausalAttention")


@check(question="CausalAttention", points=3)
def test_causal_dropout(sub):
    """CausalAttention applies dropout to the attention weights in train mode"""
    dropout_train(sub, "CausalAttention")


@check(question="CausalAttention", points=2)
def test_causal_devices(sub):
    """CausalAttention keeps every tensor on the input's device"""
    problems = device_report(sub, "CausalAttention")
    if problems:
        fail_devices("CausalAttention", problems)


@check(question="CausalAttention", points=2)
def test_causal_gradients(sub):
    """CausalAttention: gradients reach every weight"""
    gradients(sub, "CausalAttention")


@check(question="MultiHeadAttentionWrapper", points=3)
def test_wrapper_seeded(sub):
    """MultiHeadAttentionWrapper on hidden seeds and shapes equals its heads side by side"""
    for seed, b, T, d_in, d_out, heads, ctx in CONFIGS["MultiHeadAttentionWrapper"]:
        check_wrapper_matches_heads(sub, seed, b, T, d_in, d_out, heads, ctx)


@check(question="MultiHeadAttentionWrapper", points=2)
def test_wrapper_state_names(sub):
    """MultiHeadAttentionWrapper's weights are named and shaped like the reference's"""
    for seed, b, T, d_in, d_out, heads, ctx in CONFIGS["MultiHeadAttentionWrapper"][:2]:
        ref = ref_build("MultiHeadAttentionWrapper", d_in, d_out, ctx, 0.0, heads, seed=seed)
        transplant(build(sub, "MultiHeadAttentionWrapper", d_in, d_out, ctx, 0.0, heads, seed=seed), ref,
                   "MultiHeadAttentionWrapper")


@check(question="MultiHeadAttentionWrapper", points=1)
def test_wrapper_shapes(sub):
    """MultiHeadAttentionWrapper outputs num_heads * d_out features"""
    for seed, b, T, d_in, d_out, heads, ctx in CONFIGS["MultiHeadAttentionWrapper"]:
        m = build(sub, "MultiHeadAttentionWrapper", d_in, d_out, ctx, 0.0, heads, seed=seed)
        res = run_wrapper(sub, m, randn(seed, b, T, d_in), d_in, d_out, ctx)
        if res is None:
            continue  # a single CausalAttention fails on this input too: charged there
        expect_shape(res["out"], (b, T, heads * d_out),
                     call_text("MultiHeadAttentionWrapper", d_in, d_out, ctx, 0.0, heads))


@check(question="MultiHeadAttentionWrapper", points=1)
def test_wrapper_devices(sub):
    """MultiHeadAttentionWrapper moves all its heads with .to(device)"""
    try:
        problems = device_report(sub, "MultiHeadAttentionWrapper")
    except CheckFailure as e:
        if head_device_report(sub)[1] == fault_of(e):  # a single head fails alike: charged to CausalAttention
            return
        raise
    if problems and not head_device_report(sub)[0]:  # a device bug inside CausalAttention is charged there
        fail_devices("MultiHeadAttentionWrapper", problems)


@check(question="MultiHeadAttentionWrapper", points=2)
def test_wrapper_gradients(sub):
    """MultiHeadAttentionWrapper: gradients reach every head's weights"""
    seed, b, T, d_in, d_out, heads, ctx = CONFIGS["MultiHeadAttentionWrapper"][0]
    m = build(sub, "MultiHeadAttentionWrapper", d_in, d_out, ctx, 0.0, heads, seed=seed)
    ref = ref_build("MultiHeadAttentionWrapper", d_in, d_out, ctx, 0.0, heads, seed=seed)
    x, g_out = randn(seed, b, T, d_in), randn(seed + 3, b, T, heads * d_out)
    res = run_wrapper(sub, m, x, d_in, d_out, ctx, grad_output=g_out)
    if res is None:
        return  # a single CausalAttention fails on this input too: charged there

    def reached(g):  # a gradient arrived (NaN from a broken mask counts: that is CausalAttention's fault)
        return type(g) is torch.Tensor and not bool((g == 0).all())

    grads = res.get("grads") or {}
    missing = [name for name, _ in ref.named_parameters() if not reached(grads.get(name))]
    head_grads = None
    if missing:
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


@check(question="MultiHeadAttention", points=3)
def test_mha_equivalent(sub):
    """MultiHeadAttention with the reference's weights copied in"""
    equivalent(sub, "MultiHeadAttention")


@check(question="MultiHeadAttention", points=1)
def test_mha_neg_inf(sub):
    """MultiHeadAttention fills future scores with -inf before the softmax"""
    neg_inf_fill(sub, "MultiHeadAttention")


@check(question="MultiHeadAttention", points=2)
def test_mha_dropout(sub):
    """MultiHeadAttention applies dropout to the attention weights in train mode"""
    dropout_train(sub, "MultiHeadAttention")


@check(question="MultiHeadAttention", points=1)
def test_mha_shapes(sub):
    """MultiHeadAttention keeps d_out features for 1 to 4 heads and short sequences"""
    for seed, b, T, d_in, d_out, heads, ctx in CONFIGS["MultiHeadAttention"]:
        m = build(sub, "MultiHeadAttention", d_in, d_out, ctx, 0.0, heads, seed=seed)
        expect_shape(m(randn(seed, b, T, d_in)), (b, T, d_out),
                     call_text("MultiHeadAttention", d_in, d_out, ctx, 0.0, heads))


@check(question="MultiHeadAttention", points=1)
def test_mha_devices(sub):
    """MultiHeadAttention keeps every tensor on the input's device"""
    problems = device_report(sub, "MultiHeadAttention")
    if problems:
        fail_devices("MultiHeadAttention", problems)


@check(question="MultiHeadAttention", points=2)
def test_mha_gradients(sub):
    """MultiHeadAttention: gradients reach every weight"""
    gradients(sub, "MultiHeadAttention")


# ------------------------------------------------------------------------------- CUDA (informational, 0 points)

def _cuda_check(cls):
    @check(question=cls, points=0, name=f"{cls} runs on CUDA (informational; only where a GPU is present)")
    def run_on_cuda(sub):
        if not sub.env().get("cuda"):
            pytest.skip("no CUDA device on this machine")
        seed, b, T, d_in, d_out, heads, ctx = CONFIGS[cls][0]
        # Seed and build on the CPU, then move: CUDA's generator draws different numbers.
        m = build(sub, cls, d_in, d_out, ctx, 0.0, heads, seed=seed).to("cuda")
        ref = ref_build(cls, d_in, d_out, ctx, 0.0, heads, seed=seed).eval()
        x = make_input(cls, seed, b, T, d_in)
        out = m(x, device="cuda")
        with torch.no_grad():
            expect_close(out, ref(x), call_text(cls, d_in, d_out, ctx, 0.0, heads) + " on CUDA")
    return run_on_cuda


for _cls in CONFIGS:
    globals()[f"test_cuda_{_cls}"] = _cuda_check(_cls)
