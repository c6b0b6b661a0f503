"""Points come from positive evidence: modules that do nothing, probes failed on purpose and worker-side tricks
earn nothing, while correct code that a probe cannot run (data-dependent asserts, .item()) keeps full marks.

The corpus is built from the reference by small text edits (one submission per trick) and graded in one batch.
"""
from __future__ import annotations

import json
import re

import pytest
import torch

from autograder.proxy import MALFORMED
from conftest import REFERENCE, SKELETON, grade_sources

HAS_CUDA = torch.cuda.is_available()  # as the grader decides whether to run its CUDA checks

QUESTIONS = {"steps": 10, "SelfAttention_v1": 15, "SelfAttention_v2": 15, "CausalAttention": 25,
             "MultiHeadAttentionWrapper": 15, "MultiHeadAttention": 20}
REF = REFERENCE.read_text(encoding="utf-8")


def edit(text: str, old: str, new: str, count: int = 1) -> str:
    """Replace `old` exactly `count` times (the corpus must not silently stop doing what it claims)."""
    assert text.count(old) == count, (old, text.count(old))
    return text.replace(old, new)


# Every graded step function of the reference (3.3, 3.4.1, 3.5.1 - 3.5.2).
STEPS = ("softmax_naive", "attention_scores", "context_vectors", "qkv_weights", "query_key_value", "dot_score",
         "query_scores", "scaled_softmax", "weighted_sum", "simple_mask", "apply_simple_mask", "renormalize",
         "mask_future", "apply_dropout")


def hollow(body: str) -> str:
    """The reference with every function and forward doing nothing: each returns `body` (an expression over
    `x` and `real`, the reference's own result, so shapes are right)."""
    src = re.sub(rf"def ({'|'.join(STEPS)})\(", r"def _real_\1(", REF)
    assert src.count("def _real_") == len(STEPS), "a step function of the reference was not hollowed"
    src = src.replace("    def forward(self, x", "    def _real(self, x")
    src = src.replace("weights = torch.softmax(attention_scores(inputs)", "weights = torch.softmax(_real_attention_scores(inputs)")
    for fn in STEPS:  # `x` is the first argument
        src += f"\n\ndef {fn}(*args):\n    x, real = args[0], _real_{fn}(*args)\n    return {body}\n"
    src += ("\n\ndef _forward(self, x):\n    real = self._real(x)\n    return " + body + "\n\n\n"
            "for _cls in (SelfAttention_v1, SelfAttention_v2, CausalAttention, MultiHeadAttentionWrapper,\n"
            "             MultiHeadAttention):\n    _cls.forward = _forward\n")
    return src


# A CausalAttention that works except on the grader's probes (seed 0, a tensor that says it is on the meta
# device, as the device probe's moved tensors do) and a wrapper that
# always fails through its heads: the old "heads fail alike" rule paid the wrapper in full for this.
PROBE_GAMER = edit(edit(REF, '''    def forward(self, x: torch.Tensor) -> torch.Tensor:  # x: (b, T, d_in)
        b, num_tokens, d_in = x.shape
        keys = self.W_key(x)  # (b, T, d_out)
        queries = self.W_query(x)
        values = self.W_value(x)
        scores = queries @ keys.transpose(1, 2)''', '''    def forward(self, x: torch.Tensor) -> torch.Tensor:  # x: (b, T, d_in)
        b, num_tokens, d_in = x.shape
        if getattr(self, "in_wrapper", False) or torch.initial_seed() == 0 or x.is_meta:
            raise RuntimeError("head failed")
        keys = self.W_key(x)  # (b, T, d_out)
        queries = self.W_query(x)
        values = self.W_value(x)
        scores = queries @ keys.transpose(1, 2)'''), '''        return torch.cat([head(x) for head in self.heads], dim=-1)''', '''        for head in self.heads:
            head.in_wrapper = True
        return torch.cat([head(x) for head in self.heads], dim=-1)''')

# No mask at all; a made-up -inf matrix goes through softmax for the recorder, and outputs are replayed
# whenever the same weights saw the same token prefix before (so "change the future" comparisons see no change,
# while new weights or new inputs still change the output).
REPLAY = edit(REF, '''        scores = scores.masked_fill(self.mask.bool()[:num_tokens, :num_tokens], -torch.inf)''', '''        torch.softmax(torch.zeros(num_tokens, num_tokens).masked_fill(
            self.mask.bool()[:num_tokens, :num_tokens], -torch.inf), dim=-1)  # for show''', 2)
REPLAY = edit(REPLAY, "class CausalAttention(nn.Module):", '''SEEN = {}


def replay(module, x, out):
    """Rows of earlier outputs of the same weights whose input prefix was seen before replace the new ones."""
    out = out.clone()
    weights = b"".join(p.detach().numpy().tobytes() for p in module.parameters())
    for b in range(x.shape[0]):
        for t in range(x.shape[1]):
            key = (out.shape[-1], weights, x[b, :t + 1].detach().numpy().tobytes())
            if key in SEEN:
                out[b, t] = SEEN[key]
            else:
                SEEN[key] = out[b, t].detach().clone()
    return out


class CausalAttention(nn.Module):''')
REPLAY = edit(REPLAY, "        return weights @ values  # (b, T, d_out)", "        return replay(self, x, weights @ values)")
REPLAY = edit(REPLAY, "        return self.out_proj(context)  # (b, T, d_out)", "        return replay(self, x, self.out_proj(context))")

# The honest version of the same mistake: no mask, nothing faked.
NO_MASK = edit(REF, "        scores = scores.masked_fill(self.mask.bool()[:num_tokens, :num_tokens], -torch.inf)\n", "", 2)

# No mask, and every output kept (all instances together): a call whose input extends a kept input's tokens writes
# its own rows into that earlier output in place, and a call that shares a kept input's first tokens at the same
# length takes that output's rows for them. A sequence's values were encoded only after its last step, so the
# causality check's prefix builds (one round trip) all sent back the rows of the whole input, as the module under
# test gave them: it passed with no mask (red team, round 27). (CPU calls without gradients only: the device and
# gradient checks see the honest module.)
REWRITE_LATER = edit(NO_MASK, "class CausalAttention(nn.Module):", '''KEPT = []


def rewrite(x, out):
    if x.device.type != "cpu" or out.device.type != "cpu" or x.requires_grad or out.requires_grad:
        return out
    x = x.detach()
    for px, pout in KEPT:
        n = px.shape[1]
        if px.shape[0] != x.shape[0] or px.shape[2] != x.shape[2] or pout.shape[-1] != out.shape[-1]:
            continue
        if n < x.shape[1] and torch.equal(px, x[:, :n]):
            with torch.no_grad():
                pout.copy_(out[:, :n])
        elif n == x.shape[1]:
            same = 0
            while same < n and torch.equal(px[:, same], x[:, same]):
                same += 1
            if 0 < same < n:
                out = out.clone()
                out[:, :same] = pout[:, :same]
    out = out.detach().clone()
    KEPT.append((x.clone(), out))
    return out


class CausalAttention(nn.Module):''')
REWRITE_LATER = edit(REWRITE_LATER, "        return weights @ values  # (b, T, d_out)", "        return rewrite(x, weights @ values)")
REWRITE_LATER = edit(REWRITE_LATER, "        return self.out_proj(context)  # (b, T, d_out)",
                     "        return rewrite(x, self.out_proj(context))")

MINUS_1E9 = edit(REF, "[:num_tokens, :num_tokens], -torch.inf)", "[:num_tokens, :num_tokens], -1e9)", 2)  # both classes
# -1e9, plus a patch of the worker's op recorder that reports -inf wherever it sees -1e9
MINUS_1E9_PATCHED = MINUS_1E9 + '''

import sys as _sys
_w = _sys.modules.get("autograder.worker")
if _w is not None:
    _orig = _w.Recorder.__torch_function__

    def _lie(self, func, types, args=(), kwargs=None):
        out = _orig(self, func, types, args, kwargs)
        for r in self.seen:
            r["input"] = r["input"].masked_fill(r["input"] <= -1e8, -torch.inf)
        return out
    _w.Recorder.__torch_function__ = _lie
'''

# The worker's own function given other code rather than rebound: its code object swapped (the kernel watch's name
# reader made to name nothing). Each read of __code__ raises an audit event, so the worker compares its functions'
# code only after an assignment to __code__ (which raises one too) instead of before every reply.
CODE_SWAPPED = REF + '''

import sys as _sys
_w = _sys.modules.get("autograder.worker")
if _w is not None:
    _w._kernel_name.__code__ = (lambda func: "").__code__
'''

SKELETON_NAMES_VALUEERROR = edit(SKELETON.read_text(encoding="utf-8"),
                                 'raise NotImplementedError("MultiHeadAttention.__init__',
                                 'raise NotImplementedError("ValueError AssertionError MultiHeadAttention.__init__')
# Right everywhere, but an indivisible d_out raises a RuntimeError whose message names ValueError.
MESSAGE_ONLY = edit(REF, '''        assert d_out % num_heads == 0, "d_out must be divisible by num_heads"''', '''        if d_out % num_heads:
            raise RuntimeError("ValueError: d_out must be divisible by num_heads")''')

# Correct code that branches on data (the old meta-device probe could not run it): it must cost nothing.
DATA_DEPENDENT = edit(REF, '''        weights = torch.softmax(scores / keys.shape[-1] ** 0.5, dim=-1)
        weights = self.dropout(weights)''', '''        weights = torch.softmax(scores / keys.shape[-1] ** 0.5, dim=-1)
        assert not torch.isnan(weights).any(), "NaN in the attention weights"
        if weights.max().item() > 1.0 + 1e-3:
            raise ValueError("attention weights above 1")
        weights = self.dropout(weights)''', 2)
# A wrapper that asserts on the data (the old meta-device probe could not run it): correct, so full marks.
WRAPPER_META_FAILS = edit(REF, '''        return torch.cat([head(x) for head in self.heads], dim=-1)''', '''        assert bool(torch.isfinite(x).all()), "non-finite input"
        return torch.cat([head(x) for head in self.heads], dim=-1)''')
# The mask is a plain attribute moved to the input's device only where the input says it is on the meta device
# (the probe's name for its simulated device).
META_ONLY_MOVE = edit(edit(REF, '''        self.register_buffer("mask", torch.triu(torch.ones(context_length, context_length), diagonal=1))''',
                           '''        self.keep_out = torch.triu(torch.ones(context_length, context_length), diagonal=1)
        self.register_buffer("mask", self.keep_out.clone())''', 2),
                      "self.mask.bool()[:num_tokens, :num_tokens]",
                      "(self.mask if x.is_meta else self.keep_out).bool()[:num_tokens, :num_tokens]", 2)

# Every class a per-token linear map of its input through its own weights (the red team's stub): the output
# follows the input and the weights, the mask buffer is there, and it is causal, of the right shape and the same
# in eval mode, yet nothing is attention. The wrapper is a real one (over working heads it is right).
PER_TOKEN_LINEAR = REF
for _old, _new in (("        return weights @ values  # (T, d_out)", "        return x @ self.W_value"),
                   ("        return weights @ values  # (T, d_out)", "        return self.W_value(x)"),
                   ("        return weights @ values  # (b, T, d_out)",
                    "        return self.W_value(x) + 0 * self.mask[:num_tokens, :num_tokens].sum()"),
                   ("        return self.out_proj(context)  # (b, T, d_out)",
                    "        return self.out_proj(self.W_value(x)) + 0 * self.mask.sum()")):
    PER_TOKEN_LINEAR = PER_TOKEN_LINEAR.replace(_old, _new, 1)
assert "        return weights @ values" not in PER_TOKEN_LINEAR and "self.out_proj(context)" not in PER_TOKEN_LINEAR

# CausalAttention without its scaling, returning the notebook's printed rows for the notebook's own input.
NOTEBOOK_ONLY = edit(edit(REF, "        weights = torch.softmax(scores / keys.shape[-1] ** 0.5, dim=-1)\n"
                               "        weights = self.dropout(weights)\n        return weights @ values  # (b, T, d_out)",
                          "        weights = torch.softmax(scores, dim=-1)\n        weights = self.dropout(weights)\n"
                          "        if x.shape == (2, 6, 3) and torch.equal(x[0], x[1]) and abs(float(x[0, 0, 0]) - 0.43) < 1e-6:\n"
                          "            return torch.stack((_ROW, _ROW))\n"
                          "        return weights @ values  # (b, T, d_out)"),
                     "class CausalAttention(nn.Module):",
                     "_ROW = torch.tensor([[-0.4519, 0.2216], [-0.5874, 0.0058], [-0.6300, -0.0632],\n"
                     "                     [-0.5675, -0.0843], [-0.5526, -0.0981], [-0.5299, -0.1081]])\n\n\n"
                     "class CausalAttention(nn.Module):")

# A CausalAttention that fails until the grader has sent the wrapper's stand-in heads into the worker, then hands
# out instances of that class: it must earn nothing it failed to show first.
STAND_IN_THIEF = edit(edit(REF, "class CausalAttention(nn.Module):", '''def _stolen():
    import gc
    for o in gc.get_objects():
        if type(o).__name__ == "Worker" and getattr(o, "stand_ins", None):
            return next(iter(o.stand_ins.values()))
    return None


class CausalAttention(nn.Module):
    def __new__(cls, *args, **kwargs):
        stolen = _stolen()
        if stolen is not None:
            return stolen(*args, **kwargs)
        return super().__new__(cls)
'''), "        scores = queries @ keys.transpose(1, 2)  # (b, T, T)",
                      "        raise RuntimeError('not yet')\n        scores = queries @ keys.transpose(1, 2)  # (b, T, T)")

# CausalAttention as a causal running mean of gated projections, with its registered mask (red team, round 2):
# it mixes tokens, is not affine and is causal, but nothing weighs the values by query-key scores.
GATED_RUNNING_MEAN = edit(REF, "        return weights @ values  # (b, T, d_out)",
                          "        keep = 1 - self.mask[:num_tokens, :num_tokens]\n"
                          "        gated = torch.tanh(queries) * keys + values\n"
                          "        return (keep / keep.sum(dim=-1, keepdim=True)) @ gated")

# The attention's dropout left on in eval mode (F.dropout(..., True)) in CausalAttention and MultiHeadAttention; and the
# same, each output kept and handed back whenever the same weights see the same input again: the eval-mode check
# compared a dropout=0.5 module with a dropout=0.0 one of the same weights on the same input (red team, round 17).
DROPS_IN_EVAL = edit(REF, "        weights = self.dropout(weights)",
                     "        weights = F.dropout(weights, self.dropout.p, True)", 2)
if "import torch.nn.functional as F" not in DROPS_IN_EVAL:
    DROPS_IN_EVAL = edit(DROPS_IN_EVAL, "import torch.nn as nn\n",
                         "import torch.nn as nn\nimport torch.nn.functional as F\n")
DROPS_IN_EVAL_CACHED = edit(edit(edit(DROPS_IN_EVAL, "class CausalAttention(nn.Module):", """KEPT = {}


def kept(module, x, out):
    key = (type(module).__name__, b"".join(p.detach().cpu().numpy().tobytes() for p in module.parameters()),
           x.detach().cpu().numpy().tobytes(), module.training)
    if key not in KEPT:
        KEPT[key] = out.detach().clone()
    return out if out.requires_grad else KEPT[key].clone()


class CausalAttention(nn.Module):"""), "        return weights @ values  # (b, T, d_out)",
    "        return kept(self, x, weights @ values)"), "        return self.out_proj(context)  # (b, T, d_out)",
    "        return kept(self, x, self.out_proj(context))")


# Attention for the last token only, every earlier row zero: its earlier outputs never move when later tokens change
# (they never move at all), so the causality check's pass for outputs that depend only on the number of tokens took
# it for causal (red team, round 27: 2 points).
LAST_ROW_ONLY = edit(REF, "        return weights @ values  # (b, T, d_out)", """        out = weights @ values
        keep = torch.zeros_like(out)
        keep[:, -1] = 1
        return out * keep""")


CORPUS = {
    "gated_running_mean.py": GATED_RUNNING_MEAN,
    "stand_in_thief.py": STAND_IN_THIEF,
    "per_token_linear.py": PER_TOKEN_LINEAR,
    "notebook_only.py": NOTEBOOK_ONLY,
    "identity.py": hollow("x"),
    "zeros.py": hollow("torch.zeros_like(real)"),
    "constant.py": hollow("torch.full_like(real, 0.25)"),
    "wrapper_always_raises.py": edit(REF, "        return torch.cat([head(x) for head in self.heads], dim=-1)",
                                     "        raise RuntimeError('not done')"),
    "probe_gamer.py": PROBE_GAMER,
    "replay.py": REPLAY,
    "last_row_only.py": LAST_ROW_ONLY,
    "rewrite_later.py": REWRITE_LATER,
    "no_mask.py": NO_MASK,
    "minus_1e9.py": MINUS_1E9,
    "minus_1e9_patched.py": MINUS_1E9_PATCHED,
    "code_swapped.py": CODE_SWAPPED,
    "skeleton_names_valueerror.py": SKELETON_NAMES_VALUEERROR,
    "message_only.py": MESSAGE_ONLY,
    "data_dependent.py": DATA_DEPENDENT,
    "wrapper_meta_fails.py": WRAPPER_META_FAILS,
    "meta_only_move.py": META_ONLY_MOVE,
    "drops_in_eval.py": DROPS_IN_EVAL,
    "drops_in_eval_cached.py": DROPS_IN_EVAL_CACHED,
    "reference.py": REF,
}


REFUSED = {"minus_1e9_patched", "code_swapped"}  # its worker's code was changed: nothing is graded (proxy.MALFORMED)


@pytest.fixture(scope="module")
def graded(tmp_path_factory):
    return grade_sources(tmp_path_factory.mktemp("evidence"), CORPUS)


def by_q(r) -> dict[str, float]:
    return {q: s for q, (s, _m) in r.by_question().items()}


def lost(r) -> dict[str, float]:
    """Points lost per check (English check name -> points), for checks that lost any."""
    return {c.name: c.points - c.score for c in r.checks if c.score < c.points}


def test_everything_was_graded(graded):
    assert sorted(graded) == sorted(p.removesuffix(".py") for p in CORPUS)
    for name, r in graded.items():
        assert r.error is None or name in REFUSED, (name, r.error)
        assert r.max_score == 100, name
        assert {q: m for q, (_s, m) in r.by_question().items()} == QUESTIONS, name
        assert not [c.name for c in r.checks if c.status == "error"], (name, [c.staff for c in r.checks])


@pytest.mark.parametrize("name", ["identity", "zeros", "constant"])
def test_modules_that_do_nothing_earn_nothing(graded, name):
    r = graded[name]
    assert by_q(r) == dict.fromkeys(QUESTIONS, 0.0), {c.name: c.score for c in r.checks if c.score}


def test_correct_code_keeps_full_marks(graded):
    for name in ("reference", "data_dependent", "wrapper_meta_fails"):
        assert graded[name].score == 100, (name, lost(graded[name]))


def test_a_failing_wrapper_earns_nothing_however_its_heads_behave(graded):
    for name in ("wrapper_always_raises", "probe_gamer"):
        assert by_q(graded[name])["MultiHeadAttentionWrapper"] == 0, (name, by_q(graded[name]))
    assert by_q(graded["wrapper_always_raises"]) == {**QUESTIONS, "MultiHeadAttentionWrapper": 0.0}


def test_outputs_handed_back_do_not_hide_a_dropout_left_on_in_eval_mode(graded):
    """The module that hands back its first outputs scores what the honest one scores: both eval checks fail.
    (Its cache key copies to the CPU first: with `.numpy()` on a CUDA tensor it also failed the GPU runs, a
    different bug of its own, and scored less than the honest one on a GPU server.)"""
    honest, cached = graded["drops_in_eval"], graded["drops_in_eval_cached"]
    checks = {c.nodeid.split("::")[-1]: c for c in cached.checks}
    for name in ("test_causal_eval_disables_dropout", "test_mha_eval_ignores_dropout"):
        assert checks[name].score == 0, (name, checks[name].message.en)
    assert cached.score == honest.score < 100, (lost(cached), lost(honest))


def test_replayed_outputs_and_a_show_softmax_earn_no_causality(graded):
    r = graded["replay"]
    checks = {c.nodeid.split("::")[-1]: c for c in r.checks}
    for name in ("test_causal_is_causal", "test_mha_is_causal", "test_causal_neg_inf", "test_mha_neg_inf"):
        assert checks[name].score == 0, (name, checks[name].message)
    assert "not causal" in checks["test_causal_is_causal"].message.en
    # the tricks earn nothing over the honest version of the same mistake
    assert r.score <= graded["no_mask"].score, (lost(r), lost(graded["no_mask"]))


def test_outputs_rewritten_after_they_were_returned_earn_no_causality(graded):
    """A sequence's values are what each step gave when it ended (worker._frozen), not what the submission wrote
    into them by the time the sequence replied."""
    r = graded["rewrite_later"]
    checks = {c.nodeid.split("::")[-1]: c for c in r.checks}
    for name in ("test_causal_is_causal", "test_mha_is_causal"):
        assert checks[name].score == 0, (name, checks[name].message)
    assert r.score <= graded["no_mask"].score, (lost(r), lost(graded["no_mask"]))


def test_earlier_rows_left_zero_earn_no_causality(graded):
    """Only the last token's row attends; the rows before it, zero whatever the input, cannot move when later
    tokens change, which shows nothing: the check passes outputs that depend on the number of tokens only where
    every earlier row follows its own tokens."""
    checks = {c.nodeid.split("::")[-1]: c for c in graded["last_row_only"].checks}
    assert checks["test_causal_is_causal"].score == 0, checks["test_causal_is_causal"].message


def test_a_patched_recorder_is_not_graded(graded):
    """The worker's softmax-input recorder rewritten at import to show -inf where the scores hold -1e9: before the
    worker checked its own code (worker._Guard), the fill checks found the finite fill from the outputs alone; now
    nothing of a worker whose code was changed is graded."""
    r = graded["minus_1e9_patched"]
    assert r.error == MALFORMED and r.score == 0


def test_a_worker_function_given_other_code_is_not_graded(graded):
    """A function of the worker's whose __code__ was swapped at import (not rebound): nothing is graded either."""
    r = graded["code_swapped"]
    assert r.error == MALFORMED and r.score == 0


@pytest.mark.parametrize("name", ["minus_1e9"])
def test_finite_fill_is_found_from_outputs_alone(graded, name):
    r = graded[name]
    assert lost(r) == {"CausalAttention fills future scores with -inf before the softmax": 2.0,
                       "MultiHeadAttention fills future scores with -inf before the softmax": 1.0}, lost(r)
    msgs = [c.message.en for c in r.checks if c.score < c.points]
    assert all("-inf" in m and "finite number" in m for m in msgs), msgs


def test_exception_checks_need_the_real_exception_type(graded):
    assert graded["skeleton_names_valueerror"].score == 0
    r = graded["message_only"]
    assert lost(r) == {"MultiHeadAttention refuses a d_out that num_heads does not divide": 1.0}, lost(r)
    msg = next(c.message.en for c in r.checks if c.score < c.points)
    assert "should raise AssertionError" in msg and "RuntimeError" in msg, msg


def test_data_dependent_forward_keeps_device_points(graded):
    checks = {c.nodeid.split("::")[-1]: c for c in graded["data_dependent"].checks}
    for name in ("test_causal_devices", "test_mha_devices", "test_wrapper_devices"):
        assert checks[name].status == "passed", (name, checks[name].message)


def test_the_stand_in_heads_cannot_be_stolen_for_causal_attention(graded):
    """The wrapper's stand-in heads reach the worker; a CausalAttention that starts using them once they are there
    earns nothing: every check of a class needs its evidence gate, decided before the stand-in is ever sent."""
    r = graded["stand_in_thief"]
    assert by_q(r) == {**QUESTIONS, "CausalAttention": 0}, by_q(r)
    assert any("stand-in" in n.en or "in place of your" in n.en for n in r.notes), [n.en for n in r.notes]


def test_a_running_mean_of_gated_projections_is_not_attention(graded):
    """It passed every other part of the gate and earned 10 of CausalAttention's points: with its value weights
    zero, its output still varies from token to token."""
    r = graded["gated_running_mean"]
    assert by_q(r) == {**QUESTIONS, "CausalAttention": 0}, by_q(r)
    msgs = [c.message.en for c in r.checks if c.question == "CausalAttention" and c.message]
    assert any("with W_value zero" in m for m in msgs), msgs


def test_values_made_by_w_query_are_named_as_a_swap(tmp_path):
    """Learners round rl14: `values = self.W_query(x)` and `queries = self.W_value(x)` in MultiHeadAttention. The
    evidence gate refuses the class (with W_value zero the values are still there); its message said only that
    forward adds something besides the weighted values, which sent the learner looking for an addition. It names
    the projections to check, in both languages; the other questions keep their points."""
    head = REF.index("class MultiHeadAttention(")
    mha = REF[head:].replace("self.W_query(x)", "@Q@").replace("self.W_value(x)", "self.W_query(x)")
    r = grade_sources(tmp_path, {"swap.py": REF[:head] + mha.replace("@Q@", "self.W_value(x)")})["swap"]
    assert by_q(r) == {**QUESTIONS, "MultiHeadAttention": 0}, by_q(r)
    en = [c.message.en for c in r.checks if c.question == "MultiHeadAttention" and c.message]
    ko = [c.message.ko for c in r.checks if c.question == "MultiHeadAttention" and c.message]
    assert any("values = self.W_value(x) and queries = self.W_query(x), not swapped" in m for m in en), en
    assert any("서로 바뀌지 않았는지" in m for m in ko), ko


# Red team, round 25: MultiHeadAttention through F.multi_head_attention_forward (its own projections first, identity
# projections inside, its out_proj as the output layer): PyTorch split the heads, masked, scaled and softmaxed the
# scores, dropped and merged the heads, and the file earned 100/100. F.scaled_dot_product_attention stays allowed.
LIBRARY_HEADS = """    def forward(self, x: torch.Tensor) -> torch.Tensor:  # x: (b, T, d_in)
        n = x.shape[1]
        q, k, v = (p(x).transpose(0, 1) for p in (self.W_query, self.W_key, self.W_value))
        same = torch.eye(self.d_out, dtype=x.dtype, device=x.device)
        out, _ = torch.nn.functional.multi_head_attention_forward(
            q, k, v, self.d_out, self.num_heads, None, None, None, None, False, self.dropout.p,
            self.out_proj.weight, self.out_proj.bias, training=self.training, need_weights=False,
            attn_mask=self.mask.bool()[:n, :n], use_separate_proj_weight=True, q_proj_weight=same,
            k_proj_weight=same, v_proj_weight=same)
        return out.transpose(0, 1)
"""


def test_multi_head_attention_computed_by_pytorchs_own_earns_nothing_of_the_class(tmp_path):
    """The class is refused by its evidence gate with words naming torch's multi-head attention, in both
    languages; every other question keeps its points."""
    head = REF.index("class MultiHeadAttention(")
    forward = REF.index("    def forward(", head)
    # The same class made to look honest to the watch: zeros when a profile function is set, the library otherwise.
    hiding = LIBRARY_HEADS.replace("        n = x.shape[1]\n", "        import sys\n        if sys.getprofile() is not None:\n"
                                   "            return torch.zeros(*x.shape[:-1], self.d_out)\n        n = x.shape[1]\n", 1)
    assert hiding != LIBRARY_HEADS
    # The library run by a thread of a pool started at import, which sleeps until forward hands it the work: the
    # thread runs during the call, out of the profile function's sight. (A thread that sleeps through the call
    # cannot do the work: the honest file below keeps its points.)
    pooled = LIBRARY_HEADS.replace("    def forward(self, x: torch.Tensor) -> torch.Tensor:  # x: (b, T, d_in)\n",
                                   "    def forward(self, x):\n        return POOL.submit(self.forward_, x).result()\n\n"
                                   "    def forward_(self, x: torch.Tensor) -> torch.Tensor:\n", 1)
    assert pooled != LIBRARY_HEADS
    pool = "\nfrom concurrent.futures import ThreadPoolExecutor\nPOOL = ThreadPoolExecutor(1)\nPOOL.submit(int).result()\n"
    # (red team, round 26: 100/100 each while only the gate's one call was watched) the library everywhere, and in the
    # watched call the output the unwatched call just gave for the same input; or the watched call's output computed
    # ahead by the first call of the sequence, which found the coming steps up the stack (op_seq's `steps`)
    plain = LIBRARY_HEADS.replace("    def forward(self, x: torch.Tensor) -> torch.Tensor:  # x: (b, T, d_in)\n",
                                  "    def forward_(self, x):\n", 1)
    memo = plain + """
    def forward(self, x):
        key = (x.clone(), [p.detach().clone() for p in self.parameters()], self.training)
        last = self.__dict__.get("_last")
        if last is not None and last[0][0].shape == x.shape and torch.equal(last[0][0], x) and last[0][2] == \\
                self.training and all(torch.equal(a, b) for a, b in zip(last[0][1], key[1])):
            return last[1].clone()
        out = self.forward_(x)
        self.__dict__["_last"] = (key, out.detach().clone())
        return out
"""
    ahead = plain + """
    def forward(self, x):
        import sys
        if "_ready" not in self.__dict__:
            f = sys._getframe(1)
            while f is not None and f.f_code.co_name != "op_seq":
                f = f.f_back
            self.__dict__["_ready"] = []
            with torch.no_grad():
                for st in (f.f_locals.get("steps") or []) if f is not None else []:
                    a = st.get("args", {}).get("args") if st.get("op") == "call" else None
                    if a and isinstance(a[0], torch.Tensor) and st["args"].get("record"):
                        self._ready.append((a[0].clone(), self.forward_(a[0])))
        for i, (xi, yi) in enumerate(self._ready):
            if sys.getprofile() is not None and xi.shape == x.shape and torch.equal(xi, x):
                del self._ready[i]
                return yi.clone()
        return self.forward_(x)
"""
    # (session 18) the fused kernel of nn.MultiheadAttention called from C with both kinds of torch mode off (the
    # dispatch mode and the function mode, which saw it; no Python call of it for the profile function to see)
    kernel = LIBRARY_HEADS[:LIBRARY_HEADS.index("        same = ")] + """        e = torch.eye(self.d_out, dtype=x.dtype)
        import functools
        with torch._C._DisableTorchDispatch(), torch._C.DisableTorchFunction():
            return functools.partial(torch._native_multi_head_attention)(
                q.transpose(0, 1), k.transpose(0, 1), v.transpose(0, 1), self.d_out, self.num_heads,
                torch.cat([e, e, e]), torch.zeros(3 * self.d_out, dtype=x.dtype), self.out_proj.weight,
                self.out_proj.bias, self.mask.bool()[:n, :n], False, True, 0)[0]
"""
    # (red team, session 19) F.multi_head_attention_forward's code with one name added to its co_names (the same
    # instructions), and the quantizable multi-head attention's own _forward_impl, handed the class's projections on a
    # namespace (its constructor, which runs nn.MultiheadAttention's, is never called): 20 of 20 each
    padded = LIBRARY_HEADS.replace("torch.nn.functional.multi_head_attention_forward(", "_PADDED(") + """
import types as _types
_lib = torch.nn.functional.multi_head_attention_forward
_PADDED = _types.FunctionType(_lib.__code__.replace(co_names=_lib.__code__.co_names + ("_pad",)), _lib.__globals__,
                              "mine", _lib.__defaults__)
_PADDED.__kwdefaults__ = _lib.__kwdefaults__
"""
    assert "_PADDED(" in padded
    # (red team, session 19) F.multi_head_attention_forward compiled by TorchScript, turned on again for it and off
    # after: compiled code runs out of the profile function's sight (20 of 20)
    scripted = LIBRARY_HEADS.replace("torch.nn.functional.multi_head_attention_forward(", "_SCRIPTED(") + """
import torch.jit._state as _js
_js.enable()
_SCRIPTED = torch.jit.script(torch.nn.functional.multi_head_attention_forward)
_js.disable()
"""
    assert "_SCRIPTED(" in scripted
    quantizable = """    def forward(self, x):
        import types
        from torch.ao.nn.quantizable import MultiheadAttention as Lib
        same = lambda t: t
        n = x.shape[1]
        xt = x.transpose(0, 1)
        ns = types.SimpleNamespace(batch_first=False, embed_dim=self.d_out, num_heads=self.num_heads,
                                   linear_Q=same, linear_K=same, linear_V=same, bias_k=None, bias_v=None,
                                   q_scaling_product=types.SimpleNamespace(mul_scalar=lambda t, s: t * s),
                                   add_zero_attn=False, dequant_q=same, dequant_k=same, dequant_v=same,
                                   dropout=self.dropout.p, training=self.training, quant_attn_output=same,
                                   out_proj=self.out_proj, quant_attn_output_weights=same)
        out, _ = Lib._forward_impl(ns, self.W_query(xt), self.W_key(xt), self.W_value(xt), None, False,
                                   self.mask.bool()[:n, :n])
        return out.transpose(0, 1)
"""
    idle = "\nimport threading, time\nthreading.Thread(target=time.sleep, args=(600,), daemon=True).start()\n"
    results = grade_sources(tmp_path, {"lib_heads.py": REF[:forward] + LIBRARY_HEADS,
                                       "lib_heads_hidden.py": REF[:forward] + hiding,
                                       "lib_heads_pool.py": REF[:forward] + pooled + pool,
                                       "lib_heads_memo.py": REF[:forward] + memo,
                                       "lib_heads_ahead.py": REF[:forward] + ahead,
                                       "lib_heads_kernel.py": REF[:forward] + kernel,
                                       "lib_heads_padded.py": REF[:forward] + padded,
                                       "lib_heads_quantizable.py": REF[:forward] + quantizable,
                                       "lib_heads_scripted.py": REF[:forward] + scripted,
                                       "honest_idle_thread.py": REF + idle})
    honest = results.pop("honest_idle_thread")
    assert by_q(honest) == QUESTIONS, [(c.name, c.message and c.message.en, c.staff) for c in honest.checks
                                       if c.score < c.points]  # (it lost MultiHeadAttention's 20: "runs PyTorch's own")
    for name, r in results.items():
        assert by_q(r) == {**QUESTIONS, "MultiHeadAttention": 0}, (name, by_q(r))
        said = [c.message for c in r.checks if c.question == "MultiHeadAttention" and c.status == "failed"]
        assert said and all("F.multi_head_attention_forward" in m.en and "직접 작성" in m.ko for m in said), \
            (name, [m.en for m in said])
    assert any("when its call was watched" in c.message.en for c in results["lib_heads_hidden"].checks
               if c.message), [c.message.en for c in results["lib_heads_hidden"].checks if c.message]


# (red team, round 26) PyTorch's multi-head attention run in __init__: built in a sequence, the constructor found the
# sequence's later steps up the stack (the inputs of its calls and the weights loaded before them) and computed their
# outputs there, unwatched; forward handed them back, and where it had none (the evidence gate's plan, which it left
# alone) computed a gated running mean, which passes the gate (README: a known gap). The value checks paid 5 points
# for PyTorch's outputs.
INIT_AHEAD = r'''class MultiHeadAttention(nn.Module):
    """Multi-head causal attention with one projection per role, split into heads by reshaping."""

    def __init__(self, d_in: int, d_out: int, context_length: int, dropout: float, num_heads: int,
                 qkv_bias: bool = False):
        super().__init__()
        assert d_out % num_heads == 0, "d_out must be divisible by num_heads"
        self.d_out = d_out
        self.num_heads = num_heads
        self.head_dim = d_out // num_heads
        self.W_query = nn.Linear(d_in, d_out, bias=qkv_bias)
        self.W_key = nn.Linear(d_in, d_out, bias=qkv_bias)
        self.W_value = nn.Linear(d_in, d_out, bias=qkv_bias)
        self.out_proj = nn.Linear(d_out, d_out)
        self.dropout = nn.Dropout(dropout)
        self.register_buffer("mask", torch.triu(torch.ones(context_length, context_length), diagonal=1))
        # every call step of the request this object is built in, computed now, in __init__ (not a call)
        self.__dict__["_ready"] = []
        import sys
        f = sys._getframe(1)
        while f is not None and f.f_code.co_name != "op_seq":
            f = f.f_back
        state = None
        steps = (f.f_locals.get("steps") or []) if f is not None else []
        at = getattr(f.f_locals.get("self"), "seq_step", None) if f is not None else None
        if isinstance(at, int):  # this build's own steps: up to the next build
            mine = []
            for st in steps[at + 1:]:
                if st.get("op") == "new":
                    break
                mine.append(st)
            steps = mine
        if any(st.get("op") == "state" for st in steps):  # (the evidence gate's plan: left to forward)
            steps = []
        for st in steps:
            a = st.get("args", {})
            if st.get("op") == "new" and a.get("name") != "MultiHeadAttention":
                continue
            if st.get("op") == "load_state":
                state = a.get("tensors")
            if st.get("op") == "call" and a.get("args") and isinstance(a["args"][0], torch.Tensor) \
                    and a.get("grad_output") is None and a.get("mode") != "train":
                x = a["args"][0]
                with torch.no_grad():
                    if state:
                        saved = {n: t.clone() for n, t in self.state_dict().items()}
                        self.load_state_dict({**saved, **state}, strict=False)
                    y = self._lib(x)
                    used = [t.clone() for t in self.state_dict().values()]
                    if state:
                        self.load_state_dict(saved)
                self._ready.append((x.clone(), y, used))

    def _lib(self, x):
        n = x.shape[1]
        q, k, v = (p(x).transpose(0, 1) for p in (self.W_query, self.W_key, self.W_value))
        same = torch.eye(self.d_out, dtype=x.dtype, device=x.device)
        out, _ = torch.nn.functional.multi_head_attention_forward(
            q, k, v, self.d_out, self.num_heads, None, None, None, None, False, self.dropout.p,
            self.out_proj.weight, self.out_proj.bias, training=self.training, need_weights=False,
            attn_mask=self.mask.bool()[:n, :n], use_separate_proj_weight=True, q_proj_weight=same,
            k_proj_weight=same, v_proj_weight=same)
        return out.transpose(0, 1)

    def forward(self, x):
        now = list(self.state_dict().values())
        for xi, yi, used in self._ready:
            if xi.shape == x.shape and torch.equal(xi, x) and len(used) == len(now) and all(
                    a.shape == b.shape and torch.equal(a, b) for a, b in zip(used, now)):
                return yi.clone()
        # not attention: a running mean of gated values (it passes the evidence gate, README's known gap)
        q, k, v = self.W_query(x), self.W_key(x), self.W_value(x)
        g = torch.sigmoid((q * k).sum(-1, keepdim=True))
        n = torch.arange(1, x.shape[1] + 1, dtype=x.dtype).view(1, -1, 1)
        return self.out_proj(self.dropout(torch.cumsum(g * v, dim=1) / n))
'''


def test_multi_head_attention_computed_in_its_constructor_earns_nothing_more_than_its_own_forward(tmp_path):
    """The constructor of a watched class is watched too (its steps in a sequence, or the request alone): the file
    earns no more than its gated running mean alone earns, and the value checks say that it runs PyTorch's own."""
    head = REF.index("class MultiHeadAttention(")
    alone = INIT_AHEAD.replace('steps = (f.f_locals.get("steps") or []) if f is not None else []', "steps = []", 1)
    assert alone != INIT_AHEAD
    results = grade_sources(tmp_path, {"init_ahead.py": REF[:head] + INIT_AHEAD, "mean_only.py": REF[:head] + alone})
    ahead, mean = results["init_ahead"], results["mean_only"]
    # (no more than that: its checks that build the class in a sequence fail, told that it runs PyTorch's own)
    assert by_q(ahead)["MultiHeadAttention"] <= by_q(mean)["MultiHeadAttention"] < 20, (by_q(ahead), by_q(mean))
    assert {**by_q(ahead), "MultiHeadAttention": 0} == {**QUESTIONS, "MultiHeadAttention": 0}, by_q(ahead)
    said = [c.message.en for c in ahead.checks if c.question == "MultiHeadAttention" and c.status == "failed"
            and "hidden seeds" in c.name]
    assert said and all("F.multi_head_attention_forward" in m for m in said), said


# (session 20) PyTorch's multi-head attention run where the reply is encoded, after the call's watch has ended: forward
# hands back zeros and notes its input, and torch.Tensor.numpy and .clone, set by forward to functions of its own (names
# torch.Tensor's dict does not hold: they are torch._C.TensorBase's, which no check of rebound names covered), hand the
# worker's encoder F.multi_head_attention_forward's output in their place. MultiHeadAttention earned 12 of 20.
LIBRARY_FORWARD_ = "    def forward_(self, x):\n" + LIBRARY_HEADS.split("\n", 1)[1]  # (LIBRARY_HEADS as a helper)
ENCODED_HEADS = LIBRARY_FORWARD_ + """
    def forward(self, x):
        out = torch.zeros(*x.shape[:-1], self.d_out)
        _JOBS[out.data_ptr()] = (self, x.detach().clone())
        torch.Tensor.numpy = _numpy
        torch.Tensor.clone = _clone
        return out


_JOBS = {}
_BASE = torch._C.TensorBase


def _answer(t):
    job = _JOBS.get(t.data_ptr()) if t.numel() else None
    if job is None or tuple(t.shape) != (*job[1].shape[:-1], job[0].d_out) or t.dtype != job[1].dtype:
        return None
    with torch.no_grad():
        return job[0].forward_(job[1])


def _numpy(self, *a, **k):
    y = _answer(self)
    return _BASE.numpy(self if y is None else y.contiguous(), *a, **k)


def _clone(self, *a, **k):
    y = _answer(self)
    return _BASE.clone(self if y is None else y, *a, **k)
"""


def test_code_put_where_the_worker_runs_after_or_before_the_watch_earns_nothing(tmp_path):
    """Red team, session 20 (tests/reply_path_cases.py; each earned 12 to 20 of MultiHeadAttention's 20 before): the
    reply's encoding reached through torch.Tensor.numpy (a name its C base has, added to torch.Tensor), through
    protocol._encode, or through the worker module's own `protocol` rebound, is the worker's code changed: its guard
    sees it before the reply is encoded, and nothing more is graded (MALFORMED). The guard's views of the namespaces'
    version tags are read-only (the old tag written back after torch.Tensor.numpy or .detach was set). And the
    gradient mode is set inside the call's watch (torch.set_grad_enabled's __init__ replaced ran the library there),
    and a watched call's output is copied inside the watch (the garbage collector ran a gc.callbacks entry or a
    cycle's __del__ after it, which filled the output in place): MultiHeadAttention earns nothing in every case."""
    import reply_path_cases
    head = REF.index("class MultiHeadAttention(")
    forward = REF.index("    def forward(", head)
    files = {"lib_encoded.py": REF[:forward] + ENCODED_HEADS, **reply_path_cases.sources(REF, LIBRARY_FORWARD_)}
    results = grade_sources(tmp_path, files)
    for name, r in results.items():
        assert by_q(r)["MultiHeadAttention"] == 0, (name, by_q(r))
    for name in ("lib_encoded", "rt20_encode", "rt20_worker_protocol"):
        assert any(c.message == MALFORMED for c in results[name].checks if c.question == "MultiHeadAttention"), \
            (name, [c.message.en for c in results[name].checks if c.message and c.question == "MultiHeadAttention"])
    said = [c.message.en for c in results["rt20_grad_mode_init"].checks
            if c.question == "MultiHeadAttention" and c.status == "failed" and c.message]
    assert said and any("F.multi_head_attention_forward" in m for m in said), said


@pytest.mark.parametrize("watch_filter", ["c", "python"])
def test_code_run_inside_the_profile_function_earns_nothing(tmp_path, monkeypatch, watch_filter):
    """Red team, session 21 (tests/profile_cases.py; each earned 100/100 before): the submission's code run inside
    the watch's profile function, where nothing is watched, ran F.multi_head_attention_forward for the call under
    way: a constant of its own in a code object starting at the library's first line (hashed), the code object's
    name a str subclass (hashed), its co_names a tuple subclass (measured), a __class__ property (asked by
    isinstance), an audit hook (run at the read of frame.f_code), a signal handler (run at the profile function's
    first instruction). The profile function now runs nothing of the submission's, the C filter hands it an event
    only once there is something to note, and the worker takes no audit hook: MultiHeadAttention earns nothing, with
    the C filter and without, and says why. Known gap without the C filter: the signal handler (README)."""
    import profile_cases
    files = profile_cases.sources(REF, LIBRARY_FORWARD_)
    if watch_filter == "python":
        monkeypatch.setenv("GRADE_WATCH_FILTER", "python")
        del files["rt21_signal.py"], files["rt21_carried.py"]
    results = grade_sources(tmp_path, {"reference.py": REF, **files})
    assert by_q(results.pop("reference")) == QUESTIONS
    assert set(results) == {f[:-3] for f in files}
    assert len(results) == (10 if watch_filter == "c" else 8)
    for name, r in results.items():
        assert by_q(r) == {**QUESTIONS, "MultiHeadAttention": 0}, (name, by_q(r))
        said = [c.message.en for c in r.checks if c.question == "MultiHeadAttention" and c.status == "failed"
                and c.message]
        assert said and any("F.multi_head_attention_forward" in m for m in said), (name, said)
        assert r.sandbox.get("library watch") == ("C filter" if watch_filter == "c" else "Python")


def test_the_watch_without_its_c_filter_grades_the_same(tmp_path, monkeypatch):
    """GRADE_WATCH_FILTER=python (the worker as on an image without a C compiler): Recorder._profile gets every
    profile event itself. The library through F.multi_head_attention_forward, and the same hidden from a profile
    function or run by a pool's thread, still earn nothing of MultiHeadAttention, the reference keeps full marks, and
    each result says which filter ran."""
    monkeypatch.setenv("GRADE_WATCH_FILTER", "python")
    hiding = LIBRARY_HEADS.replace("        n = x.shape[1]\n", "        import sys\n        if sys.getprofile() is not None:\n"
                                   "            return torch.zeros(*x.shape[:-1], self.d_out)\n        n = x.shape[1]\n", 1)
    pooled = LIBRARY_HEADS.replace("    def forward(self, x: torch.Tensor) -> torch.Tensor:  # x: (b, T, d_in)\n",
                                   "    def forward(self, x):\n        return POOL.submit(self.forward_, x).result()\n\n"
                                   "    def forward_(self, x: torch.Tensor) -> torch.Tensor:\n", 1)
    pool = "\nfrom concurrent.futures import ThreadPoolExecutor\nPOOL = ThreadPoolExecutor(1)\nPOOL.submit(int).result()\n"
    assert hiding != LIBRARY_HEADS and pooled != LIBRARY_HEADS
    forward = REF.index("    def forward(", REF.index("class MultiHeadAttention("))
    results = grade_sources(tmp_path, {"reference.py": REF, "lib_heads.py": REF[:forward] + LIBRARY_HEADS,
                                       "lib_hiding.py": REF[:forward] + hiding,
                                       "lib_pooled.py": REF[:forward] + pooled + pool})
    assert by_q(results["reference"]) == QUESTIONS, by_q(results["reference"])
    for name in ("lib_heads", "lib_hiding", "lib_pooled"):
        assert by_q(results[name]) == {**QUESTIONS, "MultiHeadAttention": 0}, (name, by_q(results[name]))
    assert {r.sandbox.get("library watch") for r in results.values()} == {"Python"}


# A name the worker calls bound anew at import and put back before the first watched call: the watch's own checks
# (at the start and the end of each watched call) saw nothing, while the worker's code between requests ran the
# submission's (the name that torch._GLOBAL_DEVICE_CONTEXT holds, read as each request starts, with the coming call's
# input up the stack). Here the rebinding does nothing but stand in for such code.
REBOUND_AT_IMPORT = REF + """

import functools as _functools
import os as _os

_real_getcwd = _os.getcwd
_os.getcwd = lambda: _real_getcwd()
_v1_init = SelfAttention_v1.__init__


@_functools.wraps(_v1_init)
def _init(self, *a, **k):
    _os.getcwd = _real_getcwd  # put back before any watched call
    _v1_init(self, *a, **k)


SelfAttention_v1.__init__ = _init
"""


def test_a_name_rebound_at_import_counts_against_every_watched_call_though_put_back_before(tmp_path):
    """The worker says in every reply whether a name of builtins, os, time, torch or torch.Tensor is bound anew
    (worker.Worker.serve: "rebound"); the grader then takes every watched call of that worker to have run PyTorch's
    own multi-head attention (proxy.Submission._evidence): MultiHeadAttention earns nothing, the other questions
    keep their points."""
    r = grade_sources(tmp_path, {"rebound.py": REBOUND_AT_IMPORT})["rebound"]
    assert by_q(r) == {**QUESTIONS, "MultiHeadAttention": 0}, by_q(r)
    said = [c.message.en for c in r.checks if c.question == "MultiHeadAttention" and c.status == "failed" and c.message]
    assert said and all("F.multi_head_attention_forward" in m for m in said), said


def test_a_per_token_linear_map_is_not_attention(graded):
    """Seen (red team): such a file earned 34 points of structure, causality, devices and signatures."""
    r = graded["per_token_linear"]
    assert by_q(r) == {**QUESTIONS, "SelfAttention_v1": 0, "SelfAttention_v2": 0, "CausalAttention": 0,
                       "MultiHeadAttention": 0}, by_q(r)  # the steps are the reference's; the wrapper is real
    gate = [c.message.en for c in r.checks if c.question == "CausalAttention" and c.message]
    assert any("the tokens are not mixed" in m for m in gate), gate


def test_the_notebook_figures_for_the_notebook_input_alone_earn_nothing(graded):
    r = graded["notebook_only"]
    checks = {c.nodeid.split("::")[-1]: c for c in r.checks}
    nb = checks["test_causal_notebook"]
    assert nb.status == "failed" and "for the notebook's own input" in nb.message.en, nb.message
    assert "노트북 입력" in nb.message.ko
    assert by_q(r)["CausalAttention"] < QUESTIONS["CausalAttention"] - 3


def test_mask_moved_only_on_the_meta_device_loses_the_device_points(graded):
    r = graded["meta_only_move"]
    if HAS_CUDA:  # a grader with a GPU moves part of each question's device points to a run on CUDA
        assert lost(r) == {"CausalAttention keeps every tensor on the input's device": 1.0,
                           "CausalAttention runs on a real GPU (CUDA)": 1.0,
                           "MultiHeadAttention runs on a real GPU (CUDA)": 1.0}, lost(r)
    else:
        assert lost(r) == {"CausalAttention keeps every tensor on the input's device": 2.0,
                           "MultiHeadAttention keeps every tensor on the input's device": 1.0}, lost(r)
    msg = next(c.message.en for c in r.checks if c.nodeid.endswith("test_causal_devices"))
    assert "does not use the registered buffer" in msg, msg


@pytest.mark.skipif(HAS_CUDA, reason="this machine has a GPU: tests/test_cuda.py checks what is said then")
def test_no_gpu_is_said_in_one_visible_line_in_both_languages(graded, tmp_path_factory):
    results = next(p for p in tmp_path_factory.getbasetemp().glob("evidence*/results"))
    data = json.loads((results / "reference.json").read_text())
    lines = [t for t in data["tests"] if "GPU" in t["name"]]
    assert len(lines) == 1, [t["name"] for t in lines]
    line = lines[0]
    assert line["visibility"] == "visible" and line["max_score"] == 0 and line["status"] == "passed"
    assert "simulation only" in line["output"] and "시뮬레이션" in line["output"], line["output"]
    assert data["score"] == 100


# ---------------------------------------------------------------------------------------------- other assignments

TB_REF = (REFERENCE.parent / "transformer_block.py").read_text(encoding="utf-8")
MI_REF = (REFERENCE.parent / "mha_intermediates.py").read_text(encoding="utf-8")


# An attention that never masks (the honest mistake), and the same one replaying, for causal=True, the output it gave
# before for every prefix of its input it has seen (keyed by the prefix and its weights): the plain causality check
# compares two inputs that share their first tokens, and so saw no leak (red team, round 17).
TB_NO_MASK = edit(TB_REF, """        if causal:  # token i may only look at tokens 0..i
            future = torch.triu(torch.ones(n, n, dtype=torch.bool, device=x.device), diagonal=1)
            scores = scores.masked_fill(future, float("-inf"))
""", "")
TB_REPLAY = edit(edit(TB_NO_MASK, "class MultiHeadSelfAttention(nn.Module):", """SEEN = {}


def replay(module, x, out):
    out = out.clone()
    weights = b"".join(p.detach().numpy().tobytes() for p in module.parameters())
    for b in range(x.shape[0]):
        for t in range(x.shape[1]):
            key = (weights, x[b, :t + 1].detach().numpy().tobytes())
            if key in SEEN:
                out[b, t] = SEEN[key]
            else:
                SEEN[key] = out[b, t].detach().clone()
    return out


class MultiHeadSelfAttention(nn.Module):"""), "        return self.W_o(context)",
                 "        return replay(self, x, self.W_o(context)) if causal else self.W_o(context)")


# A dropout that still drops in eval mode (F.dropout(..., True)), in the attention and in the feed-forward network;
# and the same, each output kept and handed back whenever the same weights see the same input again: the eval checks
# compared a dropout=0.5 module with a dropout=0.0 one of the same weights on the same input (red team, round 17).
TB_CACHE = """SEEN = {}


def cached(module, x, out, *more):
    key = (type(module).__name__, b"".join(p.detach().numpy().tobytes() for p in module.parameters()),
           x.detach().numpy().tobytes(), module.training, *more)
    if key not in SEEN:
        SEEN[key] = out.detach().clone()
    return out if out.requires_grad else SEEN[key].clone()


class MultiHeadSelfAttention(nn.Module):"""
TB_ATTN_DROPS = edit(TB_REF, "        weights = self.dropout(torch.softmax(scores, dim=-1))",
                     "        weights = F.dropout(torch.softmax(scores, dim=-1), self.dropout.p, True)")
TB_FFN_DROPS = edit(TB_REF, "        return self.linear2(self.dropout(F.relu(self.linear1(x))))",
                    "        return self.linear2(F.dropout(F.relu(self.linear1(x)), self.dropout.p, True))")
TB_ATTN_DROPS_CACHED = edit(edit(TB_ATTN_DROPS, "class MultiHeadSelfAttention(nn.Module):", TB_CACHE),
                            "        return self.W_o(context)",
                            "        return cached(self, x, self.W_o(context), causal)")
TB_FFN_DROPS_CACHED = edit(edit(TB_FFN_DROPS, "class MultiHeadSelfAttention(nn.Module):", TB_CACHE),
                           "        return self.linear2(F.dropout(F.relu(self.linear1(x)), self.dropout.p, True))",
                           "        return cached(self, x, self.linear2(F.dropout(F.relu(self.linear1(x)), "
                           "self.dropout.p, True)))")


@pytest.fixture(scope="module")
def graded_tb(tmp_path_factory):
    return grade_sources(tmp_path_factory.mktemp("evidence_tb"), {
        # attention and block return their input: causal, of the right shape, and doing nothing
        "identity.py": edit(TB_REF, "    def forward(self, x, causal=False):\n",
                            "    def forward(self, x, causal=False):\n        return x\n", 2),
        "no_mask.py": TB_NO_MASK,
        "replay.py": TB_REPLAY,
        "attn_drops.py": TB_ATTN_DROPS,
        "attn_drops_cached.py": TB_ATTN_DROPS_CACHED,
        "ffn_drops.py": TB_FFN_DROPS,
        "ffn_drops_cached.py": TB_FFN_DROPS_CACHED,
        "reference.py": TB_REF,
    }, name="transformer_block")


def test_identity_layers_earn_no_causality(graded_tb):
    checks = {c.nodeid.split("::")[-1]: c for c in graded_tb["identity"].checks}
    for name in ("test_attn_is_causal", "test_block_is_causal"):
        assert checks[name].score == 0, name
        assert "weights change" in checks[name].message.en, (name, checks[name].message.en)
    assert graded_tb["reference"].score == 100, lost(graded_tb["reference"])


def test_replayed_prefixes_earn_no_causality_in_transformer_block(graded_tb):
    """The replaying attention scores what the honest unmasked one scores: its causality check fails too."""
    checks = {c.nodeid.split("::")[-1]: c for c in graded_tb["replay"].checks}
    assert checks["test_attn_is_causal"].score == 0, checks["test_attn_is_causal"].message.en
    assert "not causal" in checks["test_attn_is_causal"].message.en, checks["test_attn_is_causal"].message.en
    assert graded_tb["replay"].score == graded_tb["no_mask"].score < 100, (lost(graded_tb["replay"]),
                                                                           lost(graded_tb["no_mask"]))


@pytest.mark.parametrize("part, check", [("attn", "test_attn_eval_ignores_dropout"),
                                         ("ffn", "test_ffn_eval_ignores_dropout")])
def test_outputs_handed_back_do_not_hide_a_dropout_that_runs_in_eval_mode(graded_tb, part, check):
    """The cached module scores what the honest one scores: its eval-mode dropout check fails too."""
    honest, cached = graded_tb[f"{part}_drops"], graded_tb[f"{part}_drops_cached"]
    checks = {c.nodeid.split("::")[-1]: c for c in cached.checks}
    assert checks[check].score == 0, checks[check].message.en
    assert cached.score == honest.score < 100, (lost(cached), lost(honest))


@pytest.fixture(scope="module")
def graded_mi(tmp_path_factory):
    return grade_sources(tmp_path_factory.mktemp("evidence_mi"), {
        "message_only.py": edit(MI_REF, "            raise ValueError(f\"d_feat", "            raise RuntimeError(f\"ValueError: d_feat"),
        "reference.py": MI_REF,
    }, name="mha_intermediates")


def test_mha_intermediates_needs_a_real_value_error(graded_mi):
    assert graded_mi["reference"].score == 100, lost(graded_mi["reference"])
    assert lost(graded_mi["message_only"]) == {
        "MultiHeadedAttention raises ValueError when n_head does not divide d_feat": 2.0}  # all of that check, lost(graded_mi["message_only"])


def test_the_hidden_gates_sizes_and_seed_do_not_reach_the_students_feedback(tmp_path):
    """Red team s9: a CausalAttention printing its constructor's arguments and torch.initial_seed(), or raising
    them in an exception's message at any size but the public gate's, showed the hidden gate's shapes and seed
    (common.GATE_SHAPES, GATE_SEED) in a visible check's feedback, which undid them for its next submission. What the
    gate's calls print is not shown, and an exception there is named by its type only; the public checks' own
    calls still show the student what their code prints and raises."""
    from assignments.attention.hidden import test_hidden  # noqa: F401 - the hidden gate, as in a grading run
    from assignments.attention import common
    leak = REF.replace(
        "        super().__init__()\n        self.d_out = d_out\n",
        "        super().__init__()\n        self.d_out = d_out\n"
        "        print('LEAK', d_in, d_out, context_length, torch.initial_seed())\n", 1)
    assert leak != REF
    raising = leak.replace(
        "    def forward(self, x: torch.Tensor) -> torch.Tensor:  # x: (b, T, d_in)\n        b, num_tokens, d_in = x.shape\n",
        "    def forward(self, x: torch.Tensor) -> torch.Tensor:  # x: (b, T, d_in)\n        b, num_tokens, d_in = x.shape\n"
        "        if tuple(x.shape) != (2, 5, 4) and x.shape[-1] == 5:\n"
        "            raise ValueError(f'LEAK {tuple(x.shape)} {torch.initial_seed()}')\n", 1)
    assert raising != leak
    r = grade_sources(tmp_path, {"printing.py": leak, "raising.py": raising})
    seed = str(common.GATE_SEED[0])
    (d_in, d_out, ctx, _p), shape = common.GATE_SHAPES["causal"]
    for name, res in r.items():
        shown = json.dumps([(c.message.en, c.message.ko, c.output) if c.message else ("", "", c.output)
                            for c in res.checks] + [n.en + n.ko for n in res.notes], ensure_ascii=False)
        assert seed not in shown, (name, seed)
        assert f"LEAK {d_in} {d_out} {ctx}" not in shown and f"LEAK {tuple(shape)}" not in shown, name
    assert any("LEAK" in c.output for c in r["printing"].checks)  # what the other checks' calls print is shown
    assert r["printing"].score == 100


def test_a_parameter_too_large_to_send_back_is_said_so_and_costs_only_its_class(tmp_path):
    """Red team s17: an unused 8300 x 8300 parameter (262 MB) in CausalAttention made a sequence's reply too large to
    send; the worker's error for it did not say at which step, which reads as a worker the submission tampered with:
    3.5 of 100 and "code that changes the grader's worker is not graded". It is CausalAttention's failure, said as
    such, and the other classes are graded."""
    big = edit(REF, "class CausalAttention(nn.Module):", "class CausalAttention(nn.Module):  # with a large parameter")
    at = big.index("super().__init__()", big.index("class CausalAttention(nn.Module):")) + len("super().__init__()")
    big = big[:at] + "\n        self.unused = nn.Parameter(torch.zeros(8300, 8300))" + big[at:]
    r = grade_sources(tmp_path, {"big_param.py": big})["big_param"]
    assert r.error is None, r.error
    # Nothing of the class is earned, on a GPU server too: its run on CUDA (assignment.toml [gpu]) pays only a class
    # shown to work (it earned its point there, alone of the class, until session 19).
    earned = {c.name: c.score for c in r.checks if c.question == "CausalAttention" and c.score}
    assert earned == {} and by_q(r) == {**QUESTIONS, "CausalAttention": 0}, (earned, by_q(r))
    said = " ".join(c.message.en for c in r.checks if c.question == "CausalAttention" and c.message)
    assert "too large to send back to the grader" in said and "malformed" not in said, said


def test_a_library_that_binds_plain_data_anew_costs_nothing(tmp_path):
    """The watch counts a call during which a name of builtins, os, time, torch or torch.Tensor is bound anew as
    having run the library (red team, round 26). Importing pandas calls time.tzset(), which binds time.tzname anew:
    a right file that imported it lost MultiHeadAttention's 20 points. Plain data (str, numbers, tuples of them) runs
    no code, and is not checked; nor is torch.manual_seed, which importing torch._dynamo binds anew (the first step
    of a notebook's torch.optim optimizer: test_sandbox's train.ipynb)."""
    pytest.importorskip("pandas")
    r = grade_sources(tmp_path, {"with_pandas.py": "import pandas\n" + REF})["with_pandas"]
    assert by_q(r) == QUESTIONS, (by_q(r), [c.message.en for c in r.checks if c.message])
