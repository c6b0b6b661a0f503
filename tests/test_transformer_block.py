"""The transformer_block assignment grades itself correctly.

One batch grades the reference, the skeleton (.py and .ipynb), the notebook filled in with the reference, the
example submissions and every variant of the table of known bugs (assignments/transformer_block/hidden/bugs.py);
every bug must lose points on the question it breaks and on no other, and be named where it loses them (the
grader's diagnosis, or the table's words). `grade check` must recognise the file by its name.
"""
from __future__ import annotations

import json
import shutil
import subprocess
import sys

import pytest

from assignments.transformer_block.hidden import bugs
from autograder import bugtable
from autograder.messages import korean
from conftest import ROOT, assert_table_well_formed, by_question, failed_messages, grade_sources

NAME = "transformer_block"
REF = ROOT / "reference" / "transformer_block.py"
SKEL = ROOT / "student_template" / "transformer_block.py"
NB = ROOT / "student_template" / "transformer_block.ipynb"
EXAMPLES = ROOT / "examples" / "transformer_block"
QUESTIONS = {"MultiHeadSelfAttention": 20, "FeedForward": 12, "TransformerBlock": 36, "nn_transformer": 12,
             "ablation": 12, "transformer_shapes": 8}

# The known learner bugs are a table in the assignment's hidden folder (the reference plus stated find/replace
# changes, the questions each breaks, what the feedback must say); the same table is the grader's diagnosis library.
BUGS = [v.name for v in bugs.VARIANTS if v.breaks]
CORRECT = [v.name for v in bugs.VARIANTS if not v.breaks]
DIAGNOSIS = "exactly what the reference gives"


def filled_notebook() -> str:
    """The student notebook with its code to write replaced by the reference (the first such cell gets all)."""
    nb = json.loads(NB.read_text(encoding="utf-8"))
    first = True
    for cell in nb["cells"]:
        text = "".join(cell["source"])
        if cell["cell_type"] == "code" and text.startswith(("class ", "def build_transformer")):
            cell["source"] = REF.read_text(encoding="utf-8") if first else "pass  # defined above\n"
            first = False
    return json.dumps(nb)


@pytest.fixture(scope="module")
def graded(tmp_path_factory):
    files = {
        "reference.py": REF,
        "skeleton.py": SKEL,
        "skeleton_nb/transformer_block.ipynb": NB,
        "reference_nb/transformer_block.ipynb": filled_notebook(),
        "example_correct.py": EXAMPLES / "correct.py",
        "example_partly_wrong.py": EXAMPLES / "partly_wrong.py",
        "example_broken.py": EXAMPLES / "broken.py",
    }
    files.update({f"{v.name}.py": v.source() for v in bugs.VARIANTS})
    files.update({f"{name}.py": edit(REF.read_text(encoding="utf-8"), old, new) for name, (old, new) in FAKES.items()})
    for name, edits in STUBS.items():
        text = REF.read_text(encoding="utf-8")
        for old, new in edits:
            text = edit(text, old, new)
        files[f"{name}.py"] = text
    return grade_sources(tmp_path_factory.mktemp(NAME), files, name=NAME)


def edit(text: str, old: str, new: str) -> str:
    assert text.count(old) == 1, old
    return text.replace(old, new)


# Red team, round 7: parts that compute no attention, kept out of the property checks' points.
FAKES = {
    # no attention and no feed-forward: only the two LayerNorms, placed where the structural checks look
    "fake_block": ("        if self.norm_first:  # pre-norm: normalise what goes into each sub-layer\n",
                   "        if self.norm_first:\n            return x + self.norm2(self.norm1(x) + 1.0)\n"
                   "        return self.norm2(self.norm1(x * 2.0) + x)\n"
                   "        if self.norm_first:  # pre-norm: normalise what goes into each sub-layer\n"),
    # an attention that maps each token alone (with all four weights); the block around it is right
    "fake_attn": ("        b, n, _ = x.shape\n        q = self._heads(",
                  "        return self.W_o(torch.tanh(self.W_q(x)) * self.W_k(x) + self.W_v(x))\n"
                  "        b, n, _ = x.shape\n        q = self._heads("),
    # Round 9: the same, each with 1e-3 of the real thing added (any change at all used to count as evidence).
    "fake_block_eps": ("        if self.norm_first:  # pre-norm: normalise what goes into each sub-layer\n",
                       "        extra = 1e-3 * (self.attn(x, causal) + self.ff(x))\n"
                       "        if self.norm_first:\n            return x + self.norm2(self.norm1(x) + 1.0) + extra\n"
                       "        return self.norm2(self.norm1(x * 2.0) + x + extra)\n"
                       "        if self.norm_first:  # pre-norm: normalise what goes into each sub-layer\n"),
    "fake_attn_eps": ("        b, n, _ = x.shape\n        q = self._heads(",
                      "        v = self.W_v(x)\n        steps = torch.arange(1, x.shape[1] + 1, dtype=x.dtype)[:, None]\n"
                      "        run = torch.cumsum(v, dim=1) / steps\n"
                      "        return self.W_o(torch.tanh(self.W_q(x)) * self.W_k(x) + v + 1e-3 * run)\n"
                      "        b, n, _ = x.shape\n        q = self._heads("),
}


# Learners round C: placeholders. t28: the block is right, its attention and feed-forward `return x`; t29: the
# block returns its input too.
ATTN_IDENTITY = ("        b, n, _ = x.shape\n        q = self._heads(", "        return x\n        b, n, _ = x.shape\n"
                 "        q = self._heads(")
FFN_IDENTITY = ("        return self.linear2(self.dropout(F.relu(self.linear1(x))))",
                "        return x")
BLOCK_IDENTITY = ("        if not (self.use_ffn and self.use_norm and self.use_residual):\n",
                  "        return x\n        if not (self.use_ffn and self.use_norm and self.use_residual):\n")
# Red team, round 13: every forward returns torch.rand of its input's shape. Unseeded calls gave other outputs for
# other inputs and other weights, read as evidence, and the three classes earned 14.5 points of shape, eval-mode
# dropout, residual, LayerNorm and dropout-placement checks.
ATTN_RANDOM = (ATTN_IDENTITY[0], "        return torch.rand(x.shape) + 0 * self.W_q(x)\n        b, n, _ = x.shape\n"
                                 "        q = self._heads(")
FFN_RANDOM = (FFN_IDENTITY[0], "        return torch.rand(x.shape) + 0 * self.linear1(x).sum()")
BLOCK_RANDOM = (BLOCK_IDENTITY[0], "        return torch.rand(x.shape) + 0 * self.attn.W_q(x)\n" + BLOCK_IDENTITY[0])
# Red team, round 14: ones of the input's shape times the input's sum (plus the weights'): it changes with the input,
# the weights and token 0, and earned the parts' shape and eval-mode dropout checks and the block's shape (6.3 points).
SUM = "        return torch.ones_like(x) * (x.sum() + sum(p.sum() for p in self.parameters()))\n"
ATTN_SUM = (ATTN_IDENTITY[0], SUM + ATTN_IDENTITY[0])
FFN_SUM = (FFN_IDENTITY[0], SUM.rstrip("\n"))
BLOCK_SUM = (BLOCK_IDENTITY[0], SUM + BLOCK_IDENTITY[0])
STUBS = {"stub_parts_identity": (ATTN_IDENTITY, FFN_IDENTITY),
         "stub_all_sum": (ATTN_SUM, FFN_SUM, BLOCK_SUM),
         "stub_all_identity": (ATTN_IDENTITY, FFN_IDENTITY, BLOCK_IDENTITY),
         "stub_all_random": (ATTN_RANDOM, FFN_RANDOM, BLOCK_RANDOM),
         # learners round rl12: the book's FeedForward(cfg), one argument: not a part "without dropout"
         "ffn_from_config": (("def __init__(self, d_model, d_ff, dropout=0.1):",
                              "def __init__(self, cfg):\n        d_model, d_ff, dropout = cfg['d_model'], cfg['d_ff'], "
                              "cfg['dropout']"),
                             ("FeedForward(d_model, d_ff, dropout)",
                              "FeedForward({'d_model': d_model, 'd_ff': d_ff, 'dropout': dropout})")),
         # the template's signature with the switches taken and ignored (red team, round 17: 2 of the 12)
         "switches_ignored": ((BLOCK_IDENTITY[0] + "            return self._switched_off(x, causal)\n", ""),),
         # t25: nn.Transformer without batch_first warns from inside torch; this one also warns on its own
         "warns_itself": (("    return nn.Transformer(d_model=16, nhead=4, num_encoder_layers=2",
                           "    import warnings\n    warnings.warn(\"kim's own note\")\n"
                           "    return nn.Transformer(d_model=16, nhead=4, num_encoder_layers=2"),
                          ("num_decoder_layers=2, dim_feedforward=32,\n                          batch_first=True)",
                           "num_decoder_layers=2, dim_feedforward=32)"))}
# Red team, round 21: the block loads its own parts' weights into a fresh nn.TransformerEncoderLayer, the layer the
# checks compare it with, and runs that (its own dropouts lent to it): 34 of the block's 36 points before.
LIBRARY_BLOCK = """        if self.use_ffn and self.use_norm and self.use_residual:
            a = self.attn
            layer = nn.TransformerEncoderLayer(a.d_model, a.n_heads, self.ff.linear1.out_features,
                                               self.dropout1.p, batch_first=True, norm_first=self.norm_first)
            with torch.no_grad():
                layer.self_attn.in_proj_weight.copy_(torch.cat([a.W_q.weight, a.W_k.weight, a.W_v.weight]))
                layer.self_attn.in_proj_bias.copy_(torch.cat([a.W_q.bias, a.W_k.bias, a.W_v.bias]))
                layer.self_attn.out_proj.load_state_dict(a.W_o.state_dict())
            layer.linear1, layer.linear2, layer.norm1, layer.norm2 = self.ff.linear1, self.ff.linear2, self.norm1, \
                self.norm2
            layer.dropout1, layer.dropout2, layer.dropout = self.dropout1, self.dropout2, self.ff.dropout
            layer.train(self.training)
            n = x.shape[1]
            return layer(x, src_mask=torch.triu(torch.ones(n, n, dtype=torch.bool), 1) if causal else None)
"""
STUBS["library_block"] = ((BLOCK_IDENTITY[0], LIBRARY_BLOCK + BLOCK_IDENTITY[0]),)
# The same round: the attention hands its own W_q, W_k, W_v and W_o to F.multi_head_attention_forward, what
# nn.MultiheadAttention (the layer its checks compare it with) runs: 20 of 20 before.
LIBRARY_ATTENTION = """        n = x.shape[1]
        t = x.transpose(0, 1)
        out, _ = F.multi_head_attention_forward(
            t, t, t, self.d_model, self.n_heads, torch.cat([self.W_q.weight, self.W_k.weight, self.W_v.weight]),
            torch.cat([self.W_q.bias, self.W_k.bias, self.W_v.bias]), None, None, False, self.dropout.p,
            self.W_o.weight, self.W_o.bias, training=self.training, need_weights=False,
            attn_mask=torch.triu(torch.ones(n, n, dtype=torch.bool), 1) if causal else None)
        return out.transpose(0, 1)
"""
STUBS["library_attention"] = ((ATTN_IDENTITY[0], LIBRARY_ATTENTION + ATTN_IDENTITY[0]),)


def test_a_block_that_pytorchs_encoder_layer_computes_earns_nothing_of_the_block(graded):
    """A block that runs nn.TransformerEncoderLayer (here a fresh one holding its own parts' weights) has PyTorch
    compute the whole question: every check of the block says so; the parts, written by the student, keep theirs,
    and so do the switches it computes itself."""
    r = graded["library_block"]
    scores = by_question(r)
    assert scores["TransformerBlock"] == 0, scores
    assert all(scores[q] == QUESTIONS[q] for q in ("MultiHeadSelfAttention", "FeedForward", "nn_transformer",
                                                   "transformer_shapes")), scores
    block = [c for c in r.checks if c.question == "TransformerBlock"]
    assert block and all("nn.TransformerEncoderLayer" in c.message.en and "직접" in c.message.ko for c in block), \
        [c.message.en for c in block]


def test_an_attention_that_pytorchs_multi_head_attention_computes_earns_none_of_its_calls(graded):
    """MultiHeadSelfAttention through F.multi_head_attention_forward: every check of the question that calls it says
    so; the block around it, the student's own, keeps its points, and so does everything else."""
    r = graded["library_attention"]
    scores = by_question(r)
    assert scores["MultiHeadSelfAttention"] < 5, scores
    assert all(scores[q] == QUESTIONS[q] for q in QUESTIONS if q != "MultiHeadSelfAttention"), scores
    lost = [c for c in r.checks if c.question == "MultiHeadSelfAttention" and c.status != "passed"]
    assert lost and all("F.multi_head_attention_forward" in c.message.en and "직접" in c.message.ko for c in lost), \
        [c.message.en for c in lost]


def test_warnings_raised_inside_torch_are_not_the_students_output(graded):
    """nn.Transformer(...) without batch_first makes torch warn from its own file ("enable_nested_tensor is True,
    but ..."): that went under "Your code printed", with the grader's install path, though the student printed
    nothing. A warning that points into the student's code is still theirs, shown with their file's name."""
    leaked = {s: [c.output for c in r.checks if "site-packages" in c.output or "enable_nested_tensor" in c.output]
              for s, r in graded.items()}
    assert not any(leaked.values()), {s: v for s, v in leaked.items() if v}
    own = [c.output for c in graded["warns_itself"].checks if "kim's own note" in c.output]
    assert own and all("warns_itself.py:" in o and "UserWarning" in o for o in own), own


def test_korean_messages_say_with_pytorchs_weights_in_korean(graded):
    """The call compared with PyTorch's weights: the Korean message carried "with PyTorch's weights" in English."""
    ko = [m for r in graded.values() for m in failed_messages(r, lang="ko")]
    assert not [m for m in ko if "with PyTorch's weights" in m]
    assert any("PyTorch의 가중치를 넣은 `" in m for m in ko)


def test_a_module_that_returns_its_input_earns_no_shape_points(graded):
    """`return x` keeps the shape: the shape checks pay only an output computed from the input with the module's
    weights. A right block around such parts does compute (its LayerNorms) and keeps its shape points."""
    for student in ("stub_parts_identity", "stub_all_identity"):
        shapes = {c.question: c for c in graded[student].checks if "keeps the shape" in c.name}
        assert set(shapes) == {"MultiHeadSelfAttention", "FeedForward", "TransformerBlock"}, shapes
        for q in ("MultiHeadSelfAttention", "FeedForward"):
            assert shapes[q].score == 0 and "its shape earns nothing" in shapes[q].message.en, shapes[q].message
        assert (shapes["TransformerBlock"].score == 0) == (student == "stub_all_identity"), shapes["TransformerBlock"]


def test_a_block_that_returns_its_input_earns_no_dropout_placement(graded):
    """The dropout-placement check passed as soon as one of the student's parts failed its own dropout checks, and
    never asked for the evidence the other property checks ask for: a block (and parts) returning x earned it."""
    r = graded["stub_all_identity"]
    placement = [c for c in r.checks if c.name.startswith("TransformerBlock in train mode: dropout1 and dropout2")]
    assert len(placement) == 1 and placement[0].score == 0, placement
    assert "earn nothing" in placement[0].message.en and "받을 수 없습니다" in placement[0].message.ko
    assert by_question(r)["TransformerBlock"] <= 3, failures(r)


def test_random_outputs_earn_no_shape_or_property_points(graded):
    """torch.rand(x.shape) from every forward: the evidence's calls are seeded alike, so random numbers are the same
    output for every input and every weight, and no shape, eval-mode dropout, residual, LayerNorm or dropout-placement
    check pays. (What is left: the parts' parameter checks, which read __init__. The block's causality was excused
    because its attention leaks; since learners round s11 parts that give another output at each call in eval mode
    are stood in for, and a block over a leaking attention is checked over the causal stand-in, so it earns nothing
    either. The block's structure check asks for the same evidence as its shape since learners round s10.)"""
    r = graded["stub_all_random"]
    paid = sorted(c.name for c in r.checks if c.score > 0 and c.question in
                  ("MultiHeadSelfAttention", "FeedForward", "TransformerBlock"))
    kept = ("FeedForward has linear1", "MultiHeadSelfAttention has W_q")
    assert len(paid) == len(kept) and all(n.startswith(k) for n, k in zip(paid, kept)), paid
    assert by_question(r)["TransformerBlock"] == 0 and by_question(r)["MultiHeadSelfAttention"] <= 2.4 \
        and by_question(r)["FeedForward"] <= 1.6, failures(r)


def test_outputs_that_mix_the_examples_of_a_batch_earn_no_shape_or_eval_dropout_points(graded):
    """Ones times the input's sum: the evidence now changes only the first example of the batch, and the second
    example's output must stay as it was, so no shape or eval-mode dropout check of the parts pays, nor the block's
    shape."""
    r = graded["stub_all_sum"]
    paid = {c.name for c in r.checks if c.score > 0 and c.question in ("MultiHeadSelfAttention", "FeedForward")}
    assert all(n.startswith(("FeedForward has linear1", "MultiHeadSelfAttention has W_q")) for n in paid), paid
    shape = [c for c in r.checks if c.question == "TransformerBlock" and "keeps the shape" in c.name]
    assert len(shape) == 1 and shape[0].score == 0, shape
    assert "changing only the first example of the batch" in " ".join(c.message.en for c in r.checks if c.message)

def test_a_right_block_around_placeholder_parts_is_judged_with_them(graded):
    """t28: the block is right, its parts `return x`. The parts' faults are charged in their questions; the block is
    the right composition of the student's own parts, which is its evidence, so it keeps its residual, LayerNorm and
    dropout points. Only its causality, which no attention that mixes nothing can show, is lost, and no message says
    the block ignores its attention or its input (x * 2 + 1 was undone by the final LayerNorm)."""
    r = graded["stub_parts_identity"]
    lost_block = sorted(c.name for c in r.checks if c.question == "TransformerBlock" and c.score < c.points)
    assert lost_block == ["TransformerBlock(..., causal=True): future tokens do not change earlier outputs"], failures(r)
    said = " ".join(c.message.en for c in r.checks if c.status == "failed")
    assert "does not use its" not in said and "does not depend on its input" not in said, said
    causal = [c for c in r.checks if c.name.startswith("TransformerBlock(..., causal=True)")][0]
    assert "Your MultiHeadSelfAttention mixes no tokens on its own either" in causal.message.en, causal.message


@pytest.mark.parametrize("student", ["fake_block", "fake_block_eps"])
def test_a_block_without_attention_or_feed_forward_earns_only_its_shape_and_structure(graded, student):
    """x + norm2(norm1(x) + 1): it called norm1 and norm2 where the checks look and earned the residual, LayerNorm
    placement, causality and eval-mode dropout points (15.75 of 36) without any attention or feed-forward; with
    1e-3 of them added it earned them again (a change of 1e-6 counted as evidence)."""
    r = graded[student]
    block = {c.name: c for c in r.checks if c.question == "TransformerBlock"}
    earned = sorted(n for n, c in block.items() if c.score > 0)
    assert by_question(r)["TransformerBlock"] <= 3.75, earned
    assert all("shape" in n or "holds attn" in n for n in earned), earned
    msg = block["Both residual connections carry the input past their sub-layer"].message.en
    assert "does not use its self-attention" in msg, msg
    assert lost(r) == {"TransformerBlock"}, lost(r)


@pytest.mark.parametrize("student", ["fake_attn", "fake_attn_eps"])
def test_an_attention_that_maps_each_token_alone_earns_no_causality_or_eval_dropout(graded, student):
    """W_o(tanh(W_q x) * W_k x + W_v x) is trivially causal and drops nothing in eval mode: those points need
    tokens that mix (by more than 1e-3 of a running mean). The block around it is right, and keeps its residual,
    LayerNorm and dropout points."""
    r = graded[student]
    attn = {c.name: c for c in r.checks if c.question == "MultiHeadSelfAttention"}
    earned = sorted(n for n, c in attn.items() if c.score > 0)
    assert all("shape" in n or "has W_q" in n for n in earned), earned
    assert "changing token 0 changed no other token's output" in \
        attn["MultiHeadSelfAttention(..., causal=True): future tokens do not change earlier outputs"].message.en
    block = {c.name: c.score == c.points for c in r.checks if c.question == "TransformerBlock"}
    assert block["Both residual connections carry the input past their sub-layer"]
    assert block["LayerNorm placement: pre-norm normalises the sub-layer inputs; post-norm normalises the residual sums"]
    assert block["TransformerBlock(..., dropout=0.5) in eval mode gives what the same block with dropout=0.0 gives"]
    assert lost(r) <= {"MultiHeadSelfAttention", "TransformerBlock"}, lost(r)


def test_a_block_over_an_attention_that_raises_earns_only_what_it_computes(graded):
    """Learners round s10. A block's failure inside the student's own attention was excused as the attention's, and
    the block's other checks paid without evidence: an attention that always raises and a block that calls it and
    returns its input scored 24 of 36 (and the same through the feed-forward network). The block is now built over
    the grader's stand-in parts (not the lab's answer), said in a note: that block earns nothing, and a right block
    over a raising attention, feed-forward network or both keeps everything, in exercise 3 too."""
    fakes = [graded[s] for s in ("attn_raises_block_returns_input", "ffn_raises_block_returns_input")]
    rights = [graded[s] for s in ("attn_k_not_transposed", "ffn_raises", "parts_raise_block_right")]
    for fake in fakes:
        assert by_question(fake)["TransformerBlock"] == 0, failures(fake)
    for right in rights:
        assert by_question(right)["TransformerBlock"] == 36 and by_question(right)["ablation"] == 12, failures(right)
    for r in fakes + rights:
        assert any("stand-in parts" in n.en and "대체 구성 요소" in n.ko for n in r.notes), [n.en for n in r.notes]
    assert not any("stand-in" in n.en for n in graded["reference"].notes)


def test_switches_that_change_nothing_earn_nothing_of_the_ablation(graded):
    """The switches are in the template's own signature: a block that ignores all three earns none of the ablation's
    points (it is otherwise right)."""
    r = graded["switches_ignored"]
    assert by_question(r)["ablation"] == 0 and by_question(r)["TransformerBlock"] == 36, failures(r)
    assert any("none of them changes its output" in m for m in failed_messages(r, ("ablation",))), failures(r)


def test_norm_first_under_another_name_is_charged_once(graded):
    """Learners round s10: `pre_norm` for norm_first; passed as norm_first=..., it was refused, and a right block got
    0 of 36 and 1 of 12. It is passed under the student's name; the signature check alone charges the name."""
    r = graded["block_norm_first_renamed"]
    assert by_question(r)["TransformerBlock"] == 36 and by_question(r)["ablation"] == 10, failures(r)
    charged = [c for c in r.checks if c.status != "passed"]
    assert [c.name[:40] for c in charged] == ["TransformerBlock takes use_ffn=True, use"], failures(r)


def test_a_block_without_norm_first_keeps_its_post_norm_points(graded):
    """Learners round rl11: TransformerBlock(d_model, n_heads, d_ff, dropout), post-norm, without norm_first and the
    switches, got 0 of 36 ("unexpected keyword argument 'norm_first'" in every check). Built without the keyword, it
    loses exactly the pre-norm checks (norm_first=True, with and without causal=True, and the pre-norm placement)."""
    r = graded["block_without_norm_first"]
    assert by_question(r)["TransformerBlock"] == 36 - 5.25 - 3.75 - 3.75, failures(r)
    charged = sorted(c.name[:40] for c in r.checks if c.status != "passed" and c.question == "TransformerBlock")
    assert all("norm_first=True" in c.message.en or "pre-norm" in c.message.en for c in r.checks
               if c.status != "passed" and c.question == "TransformerBlock"), failures(r)
    assert len(charged) == 3, failures(r)


def test_an_encoder_without_causal_loses_only_the_causal_checks(graded):
    """Learners round rl13: an attention and a block written forward(self, x), without causal, as most tutorials
    write an encoder, were refused every call, causal=False included ("unexpected keyword argument 'causal'"): a
    right attention got 4 of 20 and its block 12 of 36. Called without the keyword where a check asks causal=False,
    they lose the checks that need causal=True, each saying that forward takes no causal, and nothing else."""
    r = graded["encoder_without_causal"]
    assert by_question(r)["FeedForward"] == 12 and by_question(r)["ablation"] == 12, failures(r)
    attn = [c for c in r.checks if c.status != "passed" and c.question == "MultiHeadSelfAttention"]
    assert attn and all("takes no `causal` argument" in c.message.en for c in attn), failures(r)
    assert by_question(r)["MultiHeadSelfAttention"] >= 20 - 1.6 - 2.4 - 3.2, failures(r)
    block = [c for c in r.checks if c.status != "passed" and c.question == "TransformerBlock"]
    assert block and all("causal" in c.name for c in block), failures(r)
    assert by_question(r)["TransformerBlock"] == 36 - 2.25 - 3.75 - 3.75, failures(r)


def test_an_einsum_that_sums_the_values_apart_is_not_blamed_on_the_softmax_alone(graded):
    """Learners round rl13: `torch.einsum("bhqk, bhvd -> bhqd", weights, v)` sums the keys and the values over
    different letters (every token gets the sum of all values). With 1 head a softmax over the heads gives the same
    numbers (every weight 1), and the check of 1 and 8 heads told the learner, whose softmax was right, that it ran
    over dim=1. Both are named where they agree, the einsum alone elsewhere."""
    one_head = [m for m in failed_messages(graded["attn_einsum_values_apart"], ("MultiHeadSelfAttention",))
                if "dim=1 (the heads)" in m]
    assert one_head and all("'bhqk, bhvd -> bhqd'" in m for m in one_head), one_head


def test_a_block_whose_parts_are_named_otherwise_loses_only_the_structure_check(graded):
    """Learners round rl13: self.attention, self.ffn, self.ln1, self.ln2 for the template's attn, ff, norm1, norm2
    (a right block) got 58.75 of 100: every check that copies PyTorch's weights in failed. They are copied in under
    the student's names; the structure check, which names the parts, is the one charged."""
    r = graded["block_parts_renamed"]
    charged = [c.name for c in r.checks if c.status != "passed" and c.points > 0]
    assert charged == ["TransformerBlock holds attn (MultiHeadSelfAttention), ff (FeedForward), norm1 and norm2 "
                       "(nn.LayerNorm)"], failures(r)


@pytest.mark.parametrize("student, question, check", [
    ("attn_layers_renamed", "MultiHeadSelfAttention", "MultiHeadSelfAttention has W_q, W_k, W_v, W_o"),
    ("attn_layers_renamed_key_first", "MultiHeadSelfAttention", "MultiHeadSelfAttention has W_q, W_k, W_v, W_o"),
    ("attn_fused_qkv", "MultiHeadSelfAttention", "MultiHeadSelfAttention has W_q, W_k, W_v, W_o"),
    ("attn_layers_in_list_out_first", "MultiHeadSelfAttention", "MultiHeadSelfAttention has W_q, W_k, W_v, W_o"),
    ("ffn_layers_in_sequential", "FeedForward", "FeedForward has linear1 = nn.Linear(d_model, d_ff)")])
def test_layers_named_otherwise_lose_only_the_names_check(graded, student, question, check):
    """Learners round rl13: a part's linear layers named otherwise (query/key/value/out; an nn.Sequential's net.0 and
    net.3) lost every check that copies PyTorch's weights in (the attention kept 4 of 20). They get the weights in
    the order made; the check of the template's names is the one charged."""
    r = graded[student]
    charged = [c.name for c in r.checks if c.status != "passed" and c.points > 0]
    assert len(charged) == 1 and charged[0].startswith(check), failures(r)


def test_an_attention_whose_key_is_made_before_its_query_gets_the_weights_by_their_names(tmp_path):
    """Red team, round 22: key, query, value, proj made in that order (nanoGPT's Head) were given PyTorch's weights in
    the order made, W_q's in the keys, and a right attention kept 5.6 of 20; each layer's name says its role. Graded
    on its own (the module's batch is the whole table): only the names check is charged."""
    r = grade_sources(tmp_path, {"kf.py": bugs.BY_NAME["attn_layers_renamed_key_first"].source()}, name=NAME)["kf"]
    charged = [c.name for c in r.checks if c.status != "passed" and c.points > 0]
    assert len(charged) == 1 and charged[0].startswith("MultiHeadSelfAttention has W_q, W_k, W_v, W_o"), failures(r)


def test_a_block_without_the_attention_residual_is_charged_whatever_its_layers_order(tmp_path):
    """Red team, round 22: a block without the attention's residual, its attention's projections made q, v, out, k
    under names that say no role (lin_a..lin_d): the residual check silenced the layer given W_o's weights in the
    order made, its keys, and each example's tokens came out as one vector, but the examples as different ones; the
    check looked for one vector in the whole batch and passed. Graded on its own."""
    text = edit(edit(REF.read_text(encoding="utf-8"), "x = self.norm1(x + self.dropout1(self.attn(x, causal)))",
                     "x = self.norm1(self.dropout1(self.attn(x, causal)))"),
                "x = x + self.dropout1(self.attn(self.norm1(x), causal))", "x = self.dropout1(self.attn(self.norm1(x), causal))")
    for old, new in (("self.W_q", "self.lin_a"), ("self.W_v", "self.lin_b"), ("self.W_o", "self.lin_c"),
                     ("self.W_k", "self.lin_d")):
        text = text.replace(old, new)
    text = edit(text, "self.lin_a = nn.Linear(d_model, d_model)\n        self.lin_d = nn.Linear(d_model, d_model)\n"
                      "        self.lin_b = nn.Linear(d_model, d_model)\n        self.lin_c = nn.Linear(d_model, d_model)",
                "self.lin_a = nn.Linear(d_model, d_model)\n        self.lin_b = nn.Linear(d_model, d_model)\n"
                "        self.lin_c = nn.Linear(d_model, d_model)\n        self.lin_d = nn.Linear(d_model, d_model)")
    r = grade_sources(tmp_path, {"nores.py": text}, name=NAME)["nores"]
    residual = [c for c in r.checks if c.name.startswith("Both residual connections")]
    assert residual and all(c.status != "passed" for c in residual), failures(r)


def test_a_layer_norm_eps_is_not_taken_for_norm_first(graded):
    """Learners round rl12: TransformerBlock(d_model, n_heads, d_ff, dropout=0.1, layer_norm_eps=1e-5), post-norm: the
    fifth argument holds "norm" and was passed the flag (LayerNorms with eps 0 and 1), and the student was told to
    rename it to norm_first. It is a block without norm_first, graded as one."""
    r, plain = graded["block_layer_norm_eps_fifth"], graded["block_without_norm_first"]
    assert by_question(r) == by_question(plain), failures(r)
    assert not [m for m in failed_messages(r) if "layer_norm_eps=False" in m or "Rename" in m], failures(r)


def test_an_attention_that_is_not_written_is_not_said_to_mix_nothing(graded):
    """Learners round rl12: beside a block refused at its constructor ("takes 3 positional arguments but 4 were
    given", a NameError), the causality check added "Your MultiHeadSelfAttention mixes no tokens on its own either"
    where there was no MultiHeadSelfAttention at all (not defined, or the template's stub)."""
    said = [m for m in failed_messages(graded["skeleton"]) if "mixes no tokens on its own" in m]
    assert not said, said


def test_a_part_built_from_a_config_is_not_said_to_lack_dropout(graded):
    """Learners round rl12: a part written without dropout ((d_model, d_ff)) is built without it; the book's
    FeedForward(cfg) takes one argument and is called by position as before, its TypeError showing what it takes."""
    r = graded["ffn_from_config"]
    said = failed_messages(r, ("FeedForward",))
    assert said and not [m for m in said if "takes no dropout argument" in m], said
    assert any("positional argument" in m for m in said), said


def failures(r):
    return [(c.question, c.name, c.message.en if c.message else "") for c in r.checks if c.status != "passed"]


def lost(r):
    per_q = by_question(r)
    return {q for q, full in QUESTIONS.items() if per_q[q] < full}


def test_reference_gets_full_marks(graded):
    r = graded["reference"]
    assert r.error is None, r.error
    assert r.score == 100 and r.max_score == 100, failures(r)
    assert by_question(r) == QUESTIONS


@pytest.mark.parametrize("student", ["skeleton", "skeleton_nb"])
def test_skeleton_gets_zero_without_crash(graded, student):
    r = graded[student]
    assert r.error is None, r.error
    assert r.score == 0 and r.max_score == 100
    assert all(c.status == "failed" for c in r.checks)
    texts = [c.message.en for c in r.checks]
    assert all("not implemented" in t for t in texts), [t for t in texts if "not implemented" not in t][:3]


def test_filled_notebook_gets_full_marks(graded):
    r = graded["reference_nb"]
    assert r.submission == "transformer_block.ipynb"
    assert r.score == 100, failures(r)


def test_examples(graded):
    assert graded["example_correct"].score == 100, failures(graded["example_correct"])
    partly = graded["example_partly_wrong"]
    assert lost(partly) == {"TransformerBlock", "nn_transformer"}, failures(partly)
    assert 0 < partly.score < 100
    broken = graded["example_broken"]
    assert broken.error is None and broken.score == 0
    assert any("my_helpers" in n.en for n in broken.notes), [n.en for n in broken.notes]


@pytest.mark.parametrize("student", BUGS)
def test_bug_loses_points_only_on_its_question(graded, student):
    v = bugs.BY_NAME[student]
    r = graded[student]
    assert r.error is None, r.error
    assert lost(r) == set(v.breaks), f"{v.why or v.cause}: lost on {sorted(lost(r))}; failures: {failures(r)}"
    for c in r.checks:
        if c.status != "passed":
            assert c.message.en and c.message.ko and "internal error" not in c.message.en, c.staff


def test_block_messages_name_what_is_missing(graded):
    def text(student):
        return " ".join(c.message.en for c in graded[student].checks if c.status != "passed")
    assert "residual connection around the self-attention is missing" in text("block_no_attn_residual")
    assert "residual connection around the self-attention is missing" in text("example_partly_wrong")
    ignored = text("block_norm_first_ignored")
    assert "post-norm" in ignored and "norm_first=True" in ignored
    assert "feed-forward one is post-norm" in text("block_pre_norm_ends_with_norm")
    assert "causal=causal" in text("block_causal_not_passed")
    assert "F.dropout" in text("block_functional_dropout")


# ---------------------------------------------------------------------------------------------- the table of bugs

def test_table_is_well_formed():
    assert len(BUGS) >= 20 and CORRECT, (BUGS, CORRECT)
    assert_table_well_formed(bugs, QUESTIONS)
    with pytest.raises(ValueError, match="does not occur"):
        bugtable.apply(bugs.REFERENCE_SOURCE, (bugtable.ch("FeedForward", "F.gelu(", "F.relu("),))


def test_a_bug_is_tried_where_its_change_reaches():
    """A bug in a part is a candidate for the block that uses the part, never for an unrelated class."""
    reaches = bugs.TABLE.reaches
    assert reaches(bugs.BY_NAME["attn_no_scaling"], "TransformerBlock")
    assert reaches(bugs.BY_NAME["ffn_gelu"], "TransformerBlock")
    assert not reaches(bugs.BY_NAME["block_no_ffn_residual"], "MultiHeadSelfAttention")
    assert not reaches(bugs.BY_NAME["ffn_gelu"], "MultiHeadSelfAttention")
    assert reaches(bugs.BY_NAME["shapes_layers_ignored"], "transformer_shape")  # it calls make_transformer
    assert not reaches(bugs.BY_NAME["nn_wrong_heads"], "transformer_shape")


def test_the_library_is_what_the_diagnosis_names():
    """Every bug that changes a compared value names its cause through the diagnosis, not only the checks' words:
    at least these, which real learners write."""
    assert {v.name for v in bugs.LIBRARY} >= {
        "attn_scale_by_d_model", "attn_no_scaling", "attn_softmax_queries", "attn_heads_not_transposed",
        "attn_no_transpose_back", "attn_no_out_proj", "ffn_gelu", "ffn_dropout_at_output", "block_no_ffn_residual",
        "block_pre_norm_residual_normalised", "block_post_norm_on_branch", "nn_batch_first_missing",
        "nn_wrong_heads", "ablation_residual_kept", "ablation_norm_still_applied", "ablation_ffn_ignored",
        "shapes_source_length"}


@pytest.mark.parametrize("student", BUGS)
def test_feedback_names_the_bug(graded, student):
    """The table's cause (the grader's diagnosis) or its words appear in a failed check of the question the bug
    breaks, in English and Korean; words of the wrong causes appear nowhere; no other bug is named."""
    v, r = bugs.BY_NAME[student], graded[student]
    en, ko = failed_messages(r, v.breaks), failed_messages(r, v.breaks, "ko")
    if v.cause is not None:
        assert any(DIAGNOSIS in m and v.cause.en in m for m in en), (student, en)
        assert any(korean(v.cause.ko) in m for m in ko), (student, ko)
    for words in v.says:
        assert any(words in m for m in en), (student, words, en)
    for words in v.never_says:
        assert not [m for m in failed_messages(r) if words in m], (student, words)
    own = [v.cause.en] if v.cause else []
    wrong = [m for m in failed_messages(r) if DIAGNOSIS in m and not any(w in m for w in own)]
    assert not wrong, (student, wrong)


@pytest.mark.parametrize("student", CORRECT)
def test_correct_variant_gets_full_marks(graded, student):
    assert graded[student].score == 100, failures(graded[student])


def test_right_code_is_never_diagnosed(graded):
    named = {s: [m for m in failed_messages(graded[s]) if DIAGNOSIS in m]
             for s in CORRECT + ["reference", "reference_nb", "example_correct"]}
    assert not any(named.values()), named


@pytest.mark.parametrize("filename, source, code", [
    ("transformer_block.py", REF, 0),
    ("transformer_block.ipynb", NB, 1),
])
def test_grade_check_recognises_the_file(tmp_path, filename, source, code):
    shutil.copy(source, tmp_path / filename)
    p = subprocess.run([sys.executable, str(ROOT / "cli.py"), "check", filename], cwd=tmp_path,
                       capture_output=True, text=True, timeout=300)
    assert p.returncode == code, p.stdout + p.stderr
    assert "transformer encoder block" in p.stdout
    if code == 0:
        assert "37/37" in p.stdout


def test_grade_batch_prints_no_warnings_of_the_graders_own(tmp_path):
    """The references built in the grader (nn.Transformer) made torch print its fast-path advice ("UserWarning:
    enable_nested_tensor is True, ...") on the instructor's terminal: nothing there is about a student."""
    subs = tmp_path / "subs"
    subs.mkdir()
    shutil.copy(REF, subs / "kim.py")
    p = subprocess.run([sys.executable, str(ROOT / "cli.py"), "batch", "subs", "--out", "res", "--workers", "1",
                        "--assignment", NAME], cwd=tmp_path, capture_output=True, text=True, timeout=300)
    assert p.returncode == 0, p.stdout + p.stderr
    assert "kim" in p.stdout + p.stderr and "Warning" not in p.stdout + p.stderr, p.stderr


def test_weight_copy_failure_is_korean_in_korean(graded):
    """--lang ko: the list of what PyTorch's weights could not be copied into (names missing, shapes that differ) is
    Korean too, not "no parameter named ..." / "PyTorch's is ..." inside the Korean sentence."""
    from test_korean import english_words
    copied = [c.message.ko for s in ("ffn_width_4x", "ffn_width_d_model", "attn_q_no_bias") for c in graded[s].checks
              if c.status == "failed" and c.message and "PyTorch의 가중치를" in c.message.ko]
    assert len(copied) >= 3, copied
    assert not [(m, english_words(m)) for m in copied if english_words(m)]
    assert any("이름이 W_q.bias인 파라미터가 없음" in m for m in copied), copied



def test_layers_named_otherwise_made_in_another_order_go_by_their_names():
    """Correct variants round 6: names that say their role in ways the role words missed, made in another order than
    the template's, went by the order made: Llama's wk, wq, wv, wo (and Wq, keyProj: a letter after w, camelCase),
    fc2 made before fc1, w_down before w_up, ln_2 before ln_1, ffn_norm before attention_norm. Each now goes by its
    name; without one, by the number it ends with, else the order made (lin_a..lin_d)."""
    from assignments.transformer_block.common import _by_role, by_number
    attn = ("W_q", "W_k", "W_v", "W_o")
    assert _by_role(attn, ["wk", "wq", "wv", "wo"]) == dict(zip(attn, ["wq", "wk", "wv", "wo"]))
    assert _by_role(attn, ["Wk", "Wq", "Wv", "Wo"]) == dict(zip(attn, ["Wq", "Wk", "Wv", "Wo"]))
    assert _by_role(attn, ["keyProj", "queryProj", "valueProj", "outProj"]) == dict(
        zip(attn, ["queryProj", "keyProj", "valueProj", "outProj"]))
    assert _by_role(("linear1", "linear2"), ["w_down", "w_up"]) == {"linear1": "w_up", "linear2": "w_down"}
    assert _by_role(("norm1", "norm2"), ["ffn_norm", "attention_norm"]) == {"norm1": "attention_norm",
                                                                          "norm2": "ffn_norm"}
    assert by_number(["fc2", "fc1"]) == ["fc1", "fc2"] and by_number(["ln_2", "ln_1"]) == ["ln_1", "ln_2"]
    assert by_number(["net.0", "net.3"]) == ["net.0", "net.3"]
    assert _by_role(attn, ["lin_a", "lin_d", "lin_b", "lin_c"]) is None and by_number(["lin_b", "lin_a"]) == [
        "lin_b", "lin_a"]


def test_a_right_answer_with_its_layers_named_otherwise_in_another_order_loses_only_the_names_checks(tmp_path):
    """Correct variants round 6, the whole submission: wk made before wq (attention 5.6 of 20), fc2 before fc1
    (feed-forward 1.6 of 12), ln_2 before ln_1 (block 13.5 of 36, ablation 6 of 12). Only the three checks of the
    template's names are charged."""
    text = REF.read_text(encoding="utf-8")
    text = edit(text, "self.W_q = nn.Linear(d_model, d_model)\n        self.W_k = nn.Linear(d_model, d_model)",
                "self.W_k = nn.Linear(d_model, d_model)\n        self.W_q = nn.Linear(d_model, d_model)")
    for old, new in (("self.W_q", "self.wq"), ("self.W_k", "self.wk"), ("self.W_v", "self.wv"), ("self.W_o", "self.wo"),
                     ("self.linear1", "self.fc1"), ("self.linear2", "self.fc2"), ("self.norm1", "self.ln_1"),
                     ("self.norm2", "self.ln_2")):
        text = text.replace(old, new)
    text = edit(text, "self.fc1 = nn.Linear(d_model, d_ff)\n        self.fc2 = nn.Linear(d_ff, d_model)",
                "self.fc2 = nn.Linear(d_ff, d_model)\n        self.fc1 = nn.Linear(d_model, d_ff)")
    text = edit(text, "self.ln_1 = nn.LayerNorm(d_model)\n        self.ln_2 = nn.LayerNorm(d_model)",
                "self.ln_2 = nn.LayerNorm(d_model)\n        self.ln_1 = nn.LayerNorm(d_model)")
    r = grade_sources(tmp_path, {"renamed.py": text}, name=NAME)["renamed"]
    charged = sorted(c.name.split(" ")[0] + " " + c.name.split(" ")[1] for c in r.checks
                     if c.status != "passed" and c.points > 0)
    assert charged == ["FeedForward has", "MultiHeadSelfAttention has", "TransformerBlock holds"], failures(r)


# Learners round tb16: the book's TransformerBlock(cfg) (one configuration dict: emb_dim, context_length, n_heads,
# drop_rate, qkv_bias; its FeedForward(cfg) too) and an attention written forward(query, key, value, mask=None), as the
# Annotated Transformer and the notes' MultiHeadedAttention write it.
BOOK_BLOCK = '''class TransformerBlock(nn.Module):
    def __init__(self, cfg):
        super().__init__()
        self.attn = MultiHeadSelfAttention(cfg["emb_dim"], cfg["n_heads"], cfg["drop_rate"])
        self.ff = FeedForward(cfg["emb_dim"], 4 * cfg["emb_dim"], cfg["drop_rate"])
        self.norm1 = nn.LayerNorm(cfg["emb_dim"])
        self.norm2 = nn.LayerNorm(cfg["emb_dim"])
        self.drop_shortcut = nn.Dropout(cfg["drop_rate"])

    def forward(self, x):
        shortcut = x
        x = self.drop_shortcut(self.attn(self.norm1(x)))
        x = x + shortcut
        shortcut = x
        x = self.drop_shortcut(self.ff(self.norm2(x)))
        return x + shortcut


def build_transformer():'''
QKV_FORWARD = (("    def forward(self, x, causal=False):\n        b, n, _ = x.shape\n        q = self._heads(self.W_q(x), b, n)\n"
                "        k = self._heads(self.W_k(x), b, n)\n        v = self._heads(self.W_v(x), b, n)",
                "    def forward(self, query, key, value, mask=None):\n        b, n, _ = query.shape\n"
                "        q = self._heads(self.W_q(query), b, n)\n        k = self._heads(self.W_k(key), b, n)\n"
                "        v = self._heads(self.W_v(value), b, n)\n        causal = False"),)


def book_block_source() -> str:
    text = REF.read_text(encoding="utf-8")
    start, end = text.index("class TransformerBlock(nn.Module):"), text.index("def build_transformer():")
    return text[:start] + BOOK_BLOCK + text[end + len("def build_transformer():"):]


def test_the_books_block_from_a_config_is_told_the_labs_signature(tmp_path):
    """TransformerBlock(cfg) got only "TransformerBlock.__init__() takes 2 positional arguments but 4 were given" in
    every check of the block and of exercise 3: each now says what the file's constructor takes and what the lab
    builds (the template's arguments, and which of cfg's entries they are), in English and Korean. An attention whose
    forward takes (query, key, value, mask=None) likewise, with the call the lab makes."""
    text = book_block_source()
    for old, new in QKV_FORWARD:
        text = edit(text, old, new)
    r = grade_sources(tmp_path, {"book.py": text}, name=NAME)["book"]
    block = [c for c in r.checks if c.question in ("TransformerBlock", "ablation") and c.status != "passed"]
    assert block and all("takes 1 positional argument, (cfg)" in c.message.en and "TransformerBlock(d_model, n_heads, "
                         "d_ff, dropout=0.1, norm_first=False" in c.message.en and 'cfg["emb_dim"]' in c.message.en
                         and "위치 인자 1개 (cfg)" in c.message.ko for c in block), failures(r)
    attn = [c for c in r.checks if c.question == "MultiHeadSelfAttention" and c.status != "passed"]
    told = [c for c in attn if "takes (query, key, value, mask=None)" in c.message.en]
    assert told and all("forward(x, causal=False)" in c.message.en and "forward(x, causal=False)로 호출" in c.message.ko
                        for c in told), failures(r)
    assert not [m for m in failed_messages(r) if "raised TypeError" in m], failures(r)
    assert by_question(r)["FeedForward"] == 12, failures(r)


def test_a_block_around_an_attention_of_query_key_value_is_judged_on_its_own_code(tmp_path):
    """The template's block calling self.attn(h, h, h), as its attention's forward(query, key, value, mask=None) asks:
    the attention does not run as the lab calls it (charged in its question, with the call the lab makes), and the
    block, built over the grader's stand-in attention, was refused there ("takes from 2 to 3 positional arguments but
    4 were given"): 0 of 36 and 0 of 12. The stand-in takes the same input three times as the self-attention it is,
    so the block loses only what it computes wrong itself: the causal flag it does not pass on."""
    text = REF.read_text(encoding="utf-8")
    for old, new in QKV_FORWARD + (
            ("x = x + self.dropout1(self.attn(self.norm1(x), causal))",
             "h = self.norm1(x)\n            x = x + self.dropout1(self.attn(h, h, h))"),
            ("x = self.norm1(x + self.dropout1(self.attn(x, causal)))",
             "x = self.norm1(x + self.dropout1(self.attn(x, x, x, None)))"),
            ("lambda z: self.attn(z, causal)", "lambda z: self.attn(z, z, z)")):
        text = edit(text, old, new)
    r = grade_sources(tmp_path, {"qkv.py": text}, name=NAME)["qkv"]
    assert by_question(r)["ablation"] == 12, failures(r)
    lost_block = [c.name for c in r.checks if c.question == "TransformerBlock" and c.score < c.points]
    assert lost_block and all("causal=True" in n for n in lost_block), failures(r)
    assert not [m for m in failed_messages(r) if "positional arguments but" in m], failures(r)


def test_a_fused_query_key_value_projection_is_charged_once_by_the_names_check(tmp_path):
    """Learners round tb16: one nn.Linear(d_model, 3 * d_model) split into q, k, v (nanoGPT's c_attn) beside c_proj,
    a right attention, kept 4.8 of 20 ("PyTorch's weights could not be copied ... no parameter named W_k.bias ..." in
    every value check). The fused layer gets W_q, W_k and W_v stacked in that order (its gradient is cut likewise), the
    names check alone is charged, saying what the layer holds; the same attention in a block under self.attention
    costs the block its structure check only, and a bug in it is still named."""
    fused = bugs.BY_NAME["attn_fused_qkv"].source()
    files = {"fused.py": fused,
             "in_block.py": fused.replace("self.attn", "self.attention"),
             "unscaled.py": edit(fused, " / math.sqrt(self.d_head)", "")}
    rs = grade_sources(tmp_path, files, name=NAME)
    r = rs["fused"]
    charged = [c for c in r.checks if c.status != "passed" and c.points > 0]
    assert len(charged) == 1 and charged[0].name.startswith("MultiHeadSelfAttention has W_q"), failures(r)
    assert "self.c_attn (36, 12)" in charged[0].message.en and "self.c_attn (36, 12)에" in charged[0].message.ko
    charged = [c.name for c in rs["in_block"].checks if c.status != "passed" and c.points > 0]
    assert len(charged) == 2 and charged[1].startswith("TransformerBlock holds"), failures(rs["in_block"])
    named = failed_messages(rs["unscaled"], ("MultiHeadSelfAttention",))
    assert any(DIAGNOSIS in m and "not scaled" in m for m in named), named


def test_layers_that_name_no_role_go_by_how_forward_uses_them(tmp_path):
    """Learners round tb16 (red team round 22's known gap): projections whose names say no role, made in another
    order than the template's, got PyTorch's weights in the order made (5.6 of 20): an nn.ModuleList used as out, q,
    k, v, and lin_a..lin_d made out, k, q, v. The variable each one's output is assigned to (q = ..., k = ...) and the
    one forward returns say their roles; only the names check is charged, and it says which layer was read as which.
    The Annotated Transformer's list, used in the order made through zip, still goes by that order; in a block under
    self.attention too."""
    listed = bugs.BY_NAME["attn_layers_in_list_out_first"].source()
    text = REF.read_text(encoding="utf-8")
    for old, new in (("self.W_q = nn.Linear(d_model, d_model)\n        self.W_k = nn.Linear(d_model, d_model)\n"
                      "        self.W_v = nn.Linear(d_model, d_model)\n        self.W_o = nn.Linear(d_model, d_model)",
                      "self.lin_a = nn.Linear(d_model, d_model)\n        self.lin_b = nn.Linear(d_model, d_model)\n"
                      "        self.lin_c = nn.Linear(d_model, d_model)\n        self.lin_d = nn.Linear(d_model, d_model)"),
                     ("q = self._heads(self.W_q(x), b, n)\n        k = self._heads(self.W_k(x), b, n)\n"
                      "        v = self._heads(self.W_v(x), b, n)",
                      "k = self._heads(self.lin_b(x), b, n)\n        q = self._heads(self.lin_c(x), b, n)\n"
                      "        v = self._heads(self.lin_d(x), b, n)"),
                     ("        return self.W_o(context)", "        out = self.lin_a(context)\n        return out")):
        text = edit(text, old, new)
    annotated = edit(edit(listed, "q = self._heads(self.linears[1](x), b, n)\n        k = self._heads(self.linears[2](x), "
                                  "b, n)\n        v = self._heads(self.linears[3](x), b, n)",
                          "q, k, v = [self._heads(lin(t), b, n) for lin, t in zip(self.linears, (x, x, x))]"),
                     "return self.linears[0](context)", "return self.linears[-1](context)")
    rs = grade_sources(tmp_path, {"listed.py": listed, "abcd.py": text, "annotated.py": annotated,
                                  "block.py": listed.replace("self.attn", "self.attention")}, name=NAME)
    for name, said in (("listed", "self.linears[1] as W_q"), ("abcd", "self.lin_c as W_q"),
                       ("annotated", "self.linears[0] as W_q")):
        r = rs[name]
        charged = [c for c in r.checks if c.status != "passed" and c.points > 0]
        assert len(charged) == 1 and charged[0].name.startswith("MultiHeadSelfAttention has W_q"), (name, failures(r))
        assert said in charged[0].message.en and said in charged[0].message.ko, charged[0].message
    charged = [c.name for c in rs["block"].checks if c.status != "passed" and c.points > 0]
    assert len(charged) == 2 and charged[1].startswith("TransformerBlock holds"), failures(rs["block"])


def test_norms_used_the_other_way_round_are_charged_once_by_the_structure_check(tmp_path):
    """Learners round tb16: norm2 around the attention sub-layer and norm1 around the feed-forward one, the block
    otherwise right: every comparison with PyTorch's layer (whose weights go in by name) said "norm1 and norm2 are
    swapped", 20.25 of 36 and 6 of 12 lost. The template fixes which is which, so it is a fault, once: the structure
    check says the names are the other way round; the other checks give each LayerNorm the weights of its role."""
    r = grade_sources(tmp_path, {"other_way.py": bugs.BY_NAME["block_norms_used_the_other_way"].source()},
                      name=NAME)["other_way"]
    charged = [c for c in r.checks if c.status != "passed" and c.points > 0]
    assert len(charged) == 1 and charged[0].name.startswith("TransformerBlock holds attn"), failures(r)
    assert "uses norm1 and norm2 the other way round" in charged[0].message.en
    assert "norm1과 norm2를 반대로" in charged[0].message.ko


def test_a_feed_forward_written_in_the_block_under_another_name_loses_only_the_structure_check(tmp_path):
    """Learners round rl16: tutorials write the block's feed-forward network in place, `self.ffn = nn.Sequential(
    nn.Linear(d_model, d_ff), nn.ReLU(), nn.Dropout(dropout), nn.Linear(d_ff, d_model))`, with no FeedForward class
    of its own. Named `ff`, such a right block kept 33.75 of 36; named `ffn` (or `mlp`), 3.75 of 36 and 6 of 12:
    PyTorch's weights had no ff.linear1 to go to. The one top-level nn.Sequential of two linear layers is the
    block's feed-forward network; the structure check alone charges the name."""
    text = REF.read_text(encoding="utf-8")
    text = edit(text, "self.ff = FeedForward(d_model, d_ff, dropout)",
                "self.ffn = nn.Sequential(nn.Linear(d_model, d_ff), nn.ReLU(), nn.Dropout(dropout),\n"
                "                                 nn.Linear(d_ff, d_model))")
    text = text.replace("self.ff(", "self.ffn(").replace("self.ff,", "self.ffn,")
    r = grade_sources(tmp_path, {"inline_ffn.py": text}, name=NAME)["inline_ffn"]
    charged = [c for c in r.checks if c.status != "passed" and c.points > 0]
    assert len(charged) == 1 and charged[0].name.startswith("TransformerBlock holds attn"), failures(r)
    assert "yours is self.ffn" in charged[0].message.en, charged[0].message.en
    assert by_question(r)["ablation"] == 12, failures(r)


BOOK_LAYER_NORM = '''class LayerNorm(nn.Module):
    def __init__(self, emb_dim):
        super().__init__()
        self.eps = 1e-5
        self.scale = nn.Parameter(torch.ones(emb_dim))
        self.shift = nn.Parameter(torch.zeros(emb_dim))

    def forward(self, x):
        mean = x.mean(dim=-1, keepdim=True)
        var = x.var(dim=-1, keepdim=True, unbiased=False)
        return self.scale * (x - mean) / torch.sqrt(var + self.eps) + self.shift


'''


def test_the_books_layer_norm_in_the_block_gets_pytorchs_weights(tmp_path):
    """Learners round rl16: a right block whose norm1 and norm2 are the book's chapter 4 LayerNorm (its parameters
    scale and shift, not weight and bias) got 6 of 36 and 6 of 12: every check that copies PyTorch's weights in said
    there was no norm1.weight. They go into scale and shift; only the placement check, which sees nn.LayerNorm calls
    alone and says so, is charged. Under other names (self.ln1, self.ln2) they were not found as the block's norms
    at all (only nn.LayerNorm modules were): they are, by the class's name."""
    text = REF.read_text(encoding="utf-8")
    text = edit(text, "class TransformerBlock(", BOOK_LAYER_NORM + "class TransformerBlock(")
    text = edit(text, "self.norm1 = nn.LayerNorm(d_model)", "self.norm1 = LayerNorm(d_model)")
    text = edit(text, "self.norm2 = nn.LayerNorm(d_model)", "self.norm2 = LayerNorm(d_model)")
    renamed = text.replace("self.norm1", "self.ln1").replace("self.norm2", "self.ln2")
    rs = grade_sources(tmp_path, {"book_norm.py": text, "book_norm_ln.py": renamed}, name=NAME)
    r = rs["book_norm"]
    charged = [c for c in r.checks if c.status != "passed" and c.points > 0]
    assert [c.name[:30] for c in charged] == ["LayerNorm placement: pre-norm "], failures(r)
    assert "your own LayerNorm class" in charged[0].message.en
    assert by_question(r)["ablation"] == 12, failures(r)
    # ... under other names (ln1, ln2): the names check is charged too, nothing else
    r = rs["book_norm_ln"]
    charged = [c for c in r.checks if c.status != "passed" and c.points > 0]
    assert [c.name[:30] for c in charged] == ["TransformerBlock holds attn (M", "LayerNorm placement: pre-norm "], \
        failures(r)
    assert by_question(r)["ablation"] == 12, failures(r)
