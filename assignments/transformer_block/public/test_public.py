"""Public checks for transformer_block: shapes, parameter names, causality, the block's structure and the
nn.Transformer exercise from the notes.

These ship to students. Hidden checks copy the weights of torch.nn.TransformerEncoderLayer into your modules
and compare the outputs (post-norm and pre-norm, with and without the causal mask), and look for missing
residual connections and misplaced LayerNorms.
"""
from assignments.transformer_block.common import (attn_params, attn_text, block_text, build_attn, build_block,
                                                  build_ffn, call, causal_leak, check_params,
                                                  causal_stand_in, check_transformer_config, draws_in_eval,
                                                  fail_leak, fail_random_in_eval, ffn_params, ffn_text,
                                                  blame_part, expect_working, randn, takes_causal, transformer_out, SHAPE)
from autograder.checks import CheckFailure, check, expect_shape, fail
from autograder.messages import Message, near_miss

# ------------------------------------------------------------------------------- MultiHeadSelfAttention

@check(question="MultiHeadSelfAttention", points=2)
def test_attn_shape(sub):
    """MultiHeadSelfAttention(16, 4) keeps the shape (2, 5, 16), with and without causal=True"""
    m = build_attn(sub, 16, 4, seed=1)
    x = randn(1, 2, 5, 16)
    expect_shape(call(m, x, attn_text(16, 4)), (2, 5, 16), attn_text(16, 4))
    expect_shape(call(m, x, attn_text(16, 4, causal=True), causal=True), (2, 5, 16), attn_text(16, 4, causal=True))
    # Evidence: the output is computed from the input with the weights (`return x` keeps the shape too).
    expect_working(m, 16, 11, attn_text(16, 4), causal=False, mixes=False, earns=SHAPE)


@check(question="MultiHeadSelfAttention", points=3)
def test_attn_parameters(sub):
    """MultiHeadSelfAttention has W_q, W_k, W_v, W_o = nn.Linear(d_model, d_model) with biases"""
    check_params(build_attn(sub, 12, 3, seed=1), attn_params(12), "MultiHeadSelfAttention(12, 3)")


@check(question="MultiHeadSelfAttention", points=3)
def test_attn_is_causal(sub):
    """MultiHeadSelfAttention(..., causal=True): future tokens do not change earlier outputs"""
    what = attn_text(8, 2, causal=True)
    expect_working(build_attn(sub, 8, 2, seed=2), 8, 22, what)
    m = build_attn(sub, 8, 2, seed=2)
    leak = causal_leak(m, 8, 21, what)
    if leak > 1e-5:
        fail_leak("MultiHeadSelfAttention", leak, sub=sub, m=m, d=8, seed=21, what=what)


# ------------------------------------------------------------------------------- FeedForward

@check(question="FeedForward", points=2)
def test_ffn_shape(sub):
    """FeedForward(16, 32) keeps the shape (2, 5, 16)"""
    m = build_ffn(sub, 16, 32, seed=1)
    expect_shape(call(m, randn(2, 2, 5, 16), ffn_text(16, 32)), (2, 5, 16), ffn_text(16, 32))
    expect_working(m, 16, 12, ffn_text(16, 32), causal=None, mixes=False, earns=SHAPE)  # not `return x`


@check(question="FeedForward", points=2)
def test_ffn_parameters(sub):
    """FeedForward has linear1 = nn.Linear(d_model, d_ff) and linear2 = nn.Linear(d_ff, d_model)"""
    check_params(build_ffn(sub, 12, 20, seed=1), ffn_params(12, 20), "FeedForward(12, 20)")


# ------------------------------------------------------------------------------- TransformerBlock

@check(question="TransformerBlock", points=2)
def test_block_shape(sub):
    """TransformerBlock(16, 4, 32) keeps the shape (2, 5, 16) for norm_first False and True"""
    x = randn(3, 2, 5, 16)
    for nf in (False, True):
        what = block_text(16, 4, 32, norm_first=nf)
        m = build_block(sub, 16, 4, 32, norm_first=nf, seed=3)
        try:
            expect_shape(call(m, x, what), (2, 5, 16), what)
            # Evidence: the output is computed from the input with the block's weights (`return x` keeps the shape).
            expect_working(m, 16, 13, what, causal=None, mixes=False, earns=SHAPE)
        except CheckFailure as e:
            if blame_part(sub, e, 16, 4, 32):
                return  # the block fails because one of the student's parts fails: charged to that part
            raise


@check(question="TransformerBlock", points=3)
def test_block_structure(sub):
    """TransformerBlock holds attn (MultiHeadSelfAttention), ff (FeedForward), norm1 and norm2 (nn.LayerNorm)"""
    m = build_block(sub, 8, 2, 12, seed=4)
    info = m.describe()
    modules = dict(info.get("modules", []))
    want = {"attn": "MultiHeadSelfAttention", "ff": "FeedForward", "norm1": "LayerNorm", "norm2": "LayerNorm"}
    # A part under the student's misspelt name of it (MultiheadSelfAttention) is that part: the name is charged in
    # the part's question, where its rename hint is.
    classes = [n for n, kind in sub.names.items() if kind == "class"]
    own = {t: t if t in sub.names else near_miss(t, classes) for t in set(want.values()) if t != "LayerNorm"}
    norms = set(info.get("layer_norms") or [])  # a subclass of nn.LayerNorm is one
    # (a part under another name is said with it: its weights are copied in under that name, block_renames)
    wrong = [(n, t, modules.get(n), m.renamed.get(n)) for n, t in want.items()
             if modules.get(n) not in (t, own.get(t, t)) and not (t == "LayerNorm" and n in norms)]
    if wrong:
        en = "; ".join(f"self.{n} should be a {t} (found {found or 'nothing'}"
                       + (f"; yours is self.{mine}, so rename it" if mine else "") + ")" for n, t, found, mine in wrong)
        ko = "; ".join(f"self.{n}은(는) {t}이어야 합니다 (현재: {found or '없음'}"
                       + (f"; 여러분의 것은 self.{mine}이므로 이름을 바꾸세요" if mine else "") + ")"
                       for n, t, found, mine in wrong)
        fail(f"`TransformerBlock` is not built from the template's parts: {en}.",
             f"`TransformerBlock`이 템플릿의 구성 요소로 만들어지지 않았습니다: {ko}.")
    if m.renamed.get("norm1") == "norm2" and m.renamed.get("norm2") == "norm1":
        # (norms_used_the_other_way: the other checks gave each LayerNorm the weights of its role)
        fail("`TransformerBlock` uses norm1 and norm2 the other way round: your forward applies self.norm2 around the "
             "attention sub-layer and self.norm1 around the feed-forward one, while the template's norm1 belongs to "
             "the attention sub-layer and norm2 to the feed-forward one (PyTorch's weights are copied in by these "
             "names). The other checks gave each LayerNorm the weights of its role, so this check alone charges the "
             "names: swap them (norm1 for the attention, norm2 for the feed-forward network).",
             "`TransformerBlock`이 norm1과 norm2를 반대로 씁니다: forward가 어텐션 서브레이어에 self.norm2를, "
             "피드포워드 서브레이어에 self.norm1을 적용하지만, 템플릿에서 norm1은 어텐션 서브레이어, norm2는 피드포워드 "
             "서브레이어의 것입니다 (PyTorch의 가중치가 이 이름으로 복사됩니다). 다른 검사는 각 LayerNorm에 역할에 맞는 "
             "가중치를 넣었으므로 이 검사에서만 감점됩니다: 이름을 바꾸세요 (어텐션에 norm1, 피드포워드 네트워크에 norm2).")
    # Evidence: the parts are used (a forward that calls them and returns its input holds them all too).
    try:
        expect_working(m, 8, 14, block_text(8, 2, 12), causal=None, mixes=False, earns=STRUCTURE)
    except CheckFailure as e:
        if blame_part(sub, e, 8, 2, 12):
            return  # the block fails because its feed-forward fails: charged to that part
        raise


STRUCTURE = ("holding its parts earns nothing", "구성 요소를 가진 것만으로는 점수를 받을 수 없습니다")


@check(question="TransformerBlock", points=3)
def test_block_is_causal(sub):
    """TransformerBlock(..., causal=True): future tokens do not change earlier outputs"""
    # Where the student's own attention runs but leaks the future, the block is shown causal over the grader's causal
    # stand-in attention instead: excused, it kept these points whether or not it passed causal on.
    spec = causal_stand_in(sub)
    parts = ("ffn",) if spec else ("attn", "ffn")
    said = Message("(Checked over the grader's stand-in attention, which is causal, in place of your "
                   "MultiHeadSelfAttention, which is not: see its question.)",
                   "(여러분의 MultiHeadSelfAttention은 코잘(causal)이 아니므로 (그 문항 참고) 코잘인 채점기의 대체 "
                   "어텐션으로 검사했습니다.)") if spec else Message("", "")
    for nf in (False, True):
        what = block_text(8, 2, 12, norm_first=nf, causal=True)
        block = None
        try:
            block = build_block(sub, 8, 2, 12, norm_first=nf, seed=5, stand_in=spec)
            expect_working(block, 8, 52, what)
        except CheckFailure as e:
            if blame_part(sub, e, 8, 2, 12, causal=True, parts=parts):
                return  # the attention leaks (a mask that hides the past) or raises: charged there
            # (a block that cannot be built mixes nothing because it never ran: no word about its attention then)
            note = Message("", "") if spec or block is None else own_attention_mixes_nothing(sub)
            raise CheckFailure(e.message + said + note, e.staff) from None
        m = build_block(sub, 8, 2, 12, norm_first=nf, seed=5, stand_in=spec)
        try:
            leak = causal_leak(m, 8, 51, what)
        except CheckFailure as e:
            if blame_part(sub, e, 8, 2, 12, causal=True, parts=parts):
                return
            raise
        if leak > 1e-5:
            if blame_part(sub, None, 8, 2, 12, causal=True, parts=parts):
                return  # the feed-forward network fails: charged there
            if draws_in_eval(m, 8, 51, what):  # F.dropout(..., 0.1, True): not a flag left behind (learners s11)
                fail_random_in_eval(what)
            raise CheckFailure(Message(
                f"`TransformerBlock(..., norm_first={nf})(x, causal=True)` is not causal (outputs of earlier tokens "
                f"changed by up to {leak:.3g}) although its attention is: pass the flag on, "
                "self.attn(..., causal=causal).",
                f"어텐션은 코잘(causal)인데 `TransformerBlock(..., norm_first={nf})(x, causal=True)`는 코잘(causal)이 "
                f"아닙니다 (앞 토큰의 출력이 최대 {leak:.3g} 바뀜). 플래그를 넘기세요: self.attn(..., causal=causal).")
                + said)


def own_attention_mixes_nothing(sub) -> Message:
    """Said beside a block that mixes no tokens when the student's attention alone mixes none either (the block's
    causality has no evidence then; the attention's fault is named in its own question). Nothing where the attention
    cannot even be built (not defined, not written yet, another signature): it was said of a class that does not
    exist, beside a block refused at its constructor (learners round rl12)."""
    try:
        attn = build_attn(sub, 8, 2, seed=2)
    except CheckFailure:
        return Message("", "")
    causal = takes_causal(sub, attn.owner)  # (a forward without causal mixes the tokens without it)
    try:
        expect_working(attn, 8, 22, attn_text(8, 2, causal=causal), causal=causal)
    except CheckFailure:
        return Message("Your MultiHeadSelfAttention mixes no tokens on its own either (see its question): the block's "
                       "causality can only be shown through an attention that mixes the tokens.",
                       "MultiHeadSelfAttention도 그 자체로 토큰을 섞지 않습니다 (그 문항을 보세요): 블록의 코잘(causal) "
                       "여부는 토큰을 섞는 어텐션을 통해서만 보일 수 있습니다.")
    return Message("", "")


# ------------------------------------------------------------------------------- nn.Transformer (the notes' example)

@check(question="nn_transformer", points=4)
def test_build_transformer_config(sub):
    """build_transformer() is nn.Transformer(d_model=16, nhead=4, 2 + 2 layers, dim_feedforward=32, batch_first)"""
    check_transformer_config(sub)


@check(question="nn_transformer", points=3)
def test_transformer_demo_shape(sub):
    """The built model maps src (2, 5, 16) and tgt (2, 5, 16) to (2, 5, 16)"""
    out = transformer_out(sub, randn(6, 2, 5, 16), randn(7, 2, 5, 16))
    expect_shape(out, (2, 5, 16), "build_transformer()(src, tgt)")


@check(question="nn_transformer", points=3)
def test_transformer_output_shape(sub):
    """transformer_output_shape() returns (2, 5, 16) = (batch, target length, d_model)"""
    got = sub.call("transformer_output_shape")
    desc = getattr(got, "description", "")
    if "Size" in desc:
        fail("`transformer_output_shape()` returned a torch.Size; return a plain tuple: tuple(out.shape).",
             "`transformer_output_shape()`가 torch.Size를 반환했습니다. 일반 튜플을 반환하세요: tuple(out.shape).")
    if type(got) not in (list, tuple) or [x for x in got] != [2, 5, 16]:
        fail(f"`transformer_output_shape()` returned {got!r}; the output of nn.Transformer with batch_first=True "
             "has the shape (batch, target length, d_model).",
             f"`transformer_output_shape()`가 {got!r}을(를) 반환했습니다. batch_first=True인 nn.Transformer의 "
             "출력 shape은 (batch, 타깃 길이, d_model)입니다.")
