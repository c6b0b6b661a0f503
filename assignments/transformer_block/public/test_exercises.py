"""Public checks for the notes' exercises 1 and 3: nn.Transformer over several sizes, layer and head counts,
and the block with its feed-forward network, LayerNorm or residual connections switched off."""
import torch
import torch.nn as nn

from assignments.transformer_block.common import block_text, build_block, call, norm_first_name, randn
from autograder.checks import CheckFailure, check, expect_shape, fail

SWITCHES = (("use_ffn", "True"), ("use_norm", "True"), ("use_residual", "True"))
# d_model, nhead, num_layers, dim_feedforward: other sizes than the notes' 16 / 4 / 2 / 32
CONFIGS = ((8, 2, 1, 16), (24, 3, 3, 40))
# batch, src_len, tgt_len, d_model, nhead, num_layers
SHAPES = ((2, 5, 5, 16, 4, 2), (3, 7, 4, 12, 3, 1), (1, 2, 9, 8, 8, 3))


def transformer_config_text(d, h, n, d_ff):
    return f"make_transformer({d}, {h}, {n}, {d_ff})"


def check_make_transformer_structure(sub, d, h, n, d_ff):
    what = transformer_config_text(d, h, n, d_ff)
    m = sub.new("make_transformer", d, h, n, d_ff, seed=0)
    info = m.describe("batch_first")
    want = {k: tuple(v.shape) for k, v in nn.Transformer(d, h, n, n, d_ff, batch_first=True).state_dict().items()}
    have = {p: tuple(s) for p, s, _ in info.get("params", [])}
    missing = sorted(set(want) - set(have))[:3]
    extra = sorted(set(have) - set(want))[:3]
    wrong = [f"{k} is {have[k]}, expected {want[k]}" for k in want if k in have and have[k] != want[k]][:3]
    if info.get("type") != "Transformer" or missing or extra or wrong:
        found = "; ".join(filter(None, [f"type {info.get('type')}" if info.get("type") != "Transformer" else "",
                                        f"missing {', '.join(missing)}" if missing else "",
                                        f"unexpected {', '.join(extra)}" if extra else "", *wrong]))
        fail(f"`{what}` should be nn.Transformer(d_model={d}, nhead={h}, num_encoder_layers={n}, "
             f"num_decoder_layers={n}, dim_feedforward={d_ff}, batch_first=True); found {found}.",
             f"`{what}`는 nn.Transformer(d_model={d}, nhead={h}, num_encoder_layers={n}, num_decoder_layers={n}, "
             f"dim_feedforward={d_ff}, batch_first=True)여야 합니다. 현재: {found}.")
    if (info["attrs"].get("batch_first") or {}).get("value") is not True:
        fail(f"`{what}` is not batch first: pass batch_first=True so that inputs are (batch, sequence, feature).",
             f"`{what}`에 batch_first=True가 없습니다: 입력이 (배치, 시퀀스, 특징) 순서가 되도록 batch_first=True를 "
             "넘기세요.")
    return m


@check(question="transformer_shapes", points=2)
def test_make_transformer_sizes(sub):
    """make_transformer(d_model, nhead, num_layers, dim_feedforward) builds that nn.Transformer, batch first"""
    for cfg in CONFIGS:
        check_make_transformer_structure(sub, *cfg)


@check(question="transformer_shapes", points=2)
def test_transformer_shape_answers(sub):
    """transformer_shape(batch, src_len, tgt_len, d_model, nhead, num_layers) for three configurations"""
    for b, s, t, d, h, n in SHAPES:
        what = f"transformer_shape({b}, {s}, {t}, {d}, {h}, {n})"
        got = sub.call("transformer_shape", b, s, t, d, h, n)
        if type(got) not in (list, tuple) or [x for x in got] != [b, t, d]:
            fail(f"`{what}` returned {got!r}; a batch-first nn.Transformer returns one vector of size d_model for "
                 "every target position: (batch, tgt_len, d_model), whatever the source length, layers or heads.",
                 f"`{what}`가 {got!r}을(를) 반환했습니다. batch_first=True인 nn.Transformer는 타깃 위치마다 크기 d_model인 "
                 "벡터 하나를 내므로 소스 길이, 레이어 수, 헤드 수와 관계없이 (batch, tgt_len, d_model)입니다.")


# ------------------------------------------------------------------------------- exercise 3: switching parts off

@check(question="ablation", points=2)
def test_block_switches_signature(sub):
    """TransformerBlock takes use_ffn=True, use_norm=True, use_residual=True after norm_first"""
    build_block(sub, 8, 2, 12, 0.0, seed=0)  # earns nothing until the block can be built
    params = [(p["name"], p["default"]) for p in sub.signature("TransformerBlock")
              if p["kind"] in ("POSITIONAL_OR_KEYWORD", "KEYWORD_ONLY")]
    names = [n for n, _ in params]
    own = norm_first_name(sub)
    if own is not None:  # (the other checks pass it under the student's name: the name is charged here, once)
        fail(f"`TransformerBlock.__init__` calls its fifth argument `{own}`; the template names it norm_first, and "
             f"code that builds TransformerBlock(..., norm_first=True) fails with yours. Rename `{own}` to norm_first "
             "(the other checks passed it under your name).",
             f"`TransformerBlock.__init__`의 다섯 번째 인자 이름이 `{own}`입니다. 템플릿의 이름은 norm_first이며, "
             f"TransformerBlock(..., norm_first=True)로 만드는 코드는 여러분의 블록에서 실패합니다. `{own}`을(를) "
             "norm_first로 바꾸세요 (다른 검사들은 여러분의 이름으로 넘겼습니다).")
    got = ", ".join(n if d is None else f"{n}={d}" for n, d in params)
    if "norm_first" not in names:  # (the other checks build it without norm_first: the order it computes is judged)
        fail(f"`TransformerBlock.__init__` takes ({got}); the template's block takes norm_first=False (post-norm, or "
             "True for pre-norm) after dropout, then use_ffn=True, use_norm=True, use_residual=True (the switches of "
             "the notes' exercise 3).",
             f"`TransformerBlock.__init__`의 인자가 ({got})입니다. 템플릿의 블록은 dropout 다음에 norm_first=False"
             "(post-norm, pre-norm이면 True)를, 그 다음에 use_ffn=True, use_norm=True, use_residual=True(노트의 실습 "
             "과제 3의 스위치)를 받습니다.")
    if [p for p in params[names.index("norm_first") + 1:]][:3] != list(SWITCHES):
        fail(f"`TransformerBlock.__init__` takes ({got}); after norm_first it should take use_ffn=True, "
             "use_norm=True, use_residual=True (the switches of the notes' exercise 3).",
             f"`TransformerBlock.__init__`의 인자가 ({got})입니다. norm_first 다음에 use_ffn=True, use_norm=True, "
             "use_residual=True(노트의 실습 과제 3의 스위치)가 와야 합니다.")
    # Evidence: the template's own signature already holds the switches, so they earn the signature's points only
    # where one of them is more than a name (red team, round 17: a block that ignored all three earned 2 of 12).
    x = randn(72, 2, 5, 8)
    base = call(build_block(sub, 8, 2, 12, 0.0, seed=3), x, block_text(8, 2, 12))
    for name, _ in SWITCHES:
        what = block_text(8, 2, 12).replace(")(x)", f", {name}=False)(x)")
        try:
            got = call(build_block(sub, 8, 2, 12, 0.0, seed=3, **{name: False}), x, what)
        except CheckFailure:
            continue  # (a switch that raises is charged by the checks of that switch)
        if tuple(base.shape) != tuple(got.shape) or not torch.allclose(base, got, atol=1e-6, equal_nan=True):
            return
    fail("`TransformerBlock` takes use_ffn, use_norm and use_residual, but none of them changes its output: the "
         "template's signature holds them already, so it earns these points only once the switches take effect.",
         "`TransformerBlock`이 use_ffn, use_norm, use_residual을 받지만 어느 것도 출력을 바꾸지 않습니다: 템플릿의 "
         "시그니처에 이미 들어 있으므로, 스위치가 실제로 작동해야 이 점수를 받습니다.")


@check(question="ablation", points=1)
def test_block_switches_take_effect(sub):
    """Each switch changes the block's output (same seed, same input) and keeps its shape"""
    x = randn(71, 2, 5, 8)
    base_what = block_text(8, 2, 12)
    base = call(build_block(sub, 8, 2, 12, 0.0, seed=3), x, base_what)
    for name, _ in SWITCHES:
        what = base_what.replace(")(x)", f", {name}=False)(x)")
        try:
            got = call(build_block(sub, 8, 2, 12, 0.0, seed=3, **{name: False}), x, what)
        except CheckFailure:
            raise
        expect_shape(got, tuple(x.shape), what)
        if tuple(base.shape) == tuple(got.shape) and torch.allclose(base, got, atol=1e-6):
            fail(f"`{what}` gives the same output as the full block: the switch {name}=False has no effect.",
                 f"`{what}`의 출력이 전체 블록과 같습니다: {name}=False 스위치가 아무 효과가 없습니다.")
