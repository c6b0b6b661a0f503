"""The transformer_block assignment grades itself correctly.

One batch grades the reference, the skeleton (.py and .ipynb), the notebook filled in with the reference, the
example submissions and one variant of the reference per realistic bug; every bug must lose points on the
question it breaks and on no other. `grade check` must recognise the file by its name.
"""
from __future__ import annotations

import json
import shutil
import subprocess
import sys

import pytest

from conftest import ROOT, by_question, grade_sources

NAME = "transformer_block"
REF = ROOT / "reference" / "transformer_block.py"
SKEL = ROOT / "student_template" / "transformer_block.py"
NB = ROOT / "student_template" / "transformer_block.ipynb"
EXAMPLES = ROOT / "examples" / "transformer_block"
QUESTIONS = {"MultiHeadSelfAttention": 20, "FeedForward": 12, "TransformerBlock": 36, "nn_transformer": 12,
             "ablation": 12, "transformer_shapes": 8}
SWITCHED = "keep = z if self.use_residual else 0"

POST_ATTN = "x = self.norm1(x + self.dropout1(self.attn(x, causal)))"
PRE_ATTN = "x = x + self.dropout1(self.attn(self.norm1(x), causal))"
PRE_FF = "x = x + self.dropout2(self.ff(self.norm2(x)))"

# student id -> (the question it breaks, [(text in the reference, replacement)], what the bug is)
BUGS = {
    "bug_attn_scale_by_d_model": ("MultiHeadSelfAttention", [("/ math.sqrt(self.d_head)", "/ math.sqrt(self.d_model)")],
                                  "scales the scores by sqrt(d_model)"),
    "bug_attn_mask_hides_diagonal": ("MultiHeadSelfAttention", [("diagonal=1)", "diagonal=0)")],
                                     "the causal mask also hides the token itself (NaN in row 0)"),
    "bug_attn_heads_not_transposed": ("MultiHeadSelfAttention", [
        ("return t.view(b, n, self.n_heads, self.d_head).transpose(1, 2)", "return t.view(b, self.n_heads, n, self.d_head)")],
        "views straight to (b, heads, n, d_head)"),
    "bug_attn_no_out_proj": ("MultiHeadSelfAttention", [("return self.W_o(context)", "return context")],
                             "never applies W_o"),
    "bug_ffn_gelu": ("FeedForward", [("F.relu(self.linear1(x))", "F.gelu(self.linear1(x))")], "GELU instead of ReLU"),
    "bug_ffn_dropout_at_output": ("FeedForward", [("return self.linear2(self.dropout(F.relu(self.linear1(x))))",
                                                   "return self.dropout(self.linear2(F.relu(self.linear1(x))))")],
                                  "dropout after linear2"),
    "bug_block_no_attn_residual": ("TransformerBlock", [
        (POST_ATTN, "x = self.norm1(self.dropout1(self.attn(x, causal)))"),
        (PRE_ATTN, "x = self.dropout1(self.attn(self.norm1(x), causal))")], "no residual around the attention"),
    "bug_block_norm_first_ignored": ("TransformerBlock", [("if self.norm_first:", "if False:")],
                                     "always post-norm"),
    "bug_block_pre_norm_ends_with_norm": ("TransformerBlock", [(PRE_FF, "x = self.norm2(x + self.dropout2(self.ff(x)))")],
                                          "pre-norm block with a post-norm feed-forward sub-layer"),
    "bug_block_causal_not_passed": ("TransformerBlock", [
        (POST_ATTN, "x = self.norm1(x + self.dropout1(self.attn(x)))"),
        (PRE_ATTN, "x = x + self.dropout1(self.attn(self.norm1(x)))")], "causal flag dropped"),
    "bug_block_functional_dropout": ("TransformerBlock", [
        (POST_ATTN, "x = self.norm1(x + F.dropout(self.attn(x, causal), self.dropout1.p))"),
        (PRE_ATTN, "x = x + F.dropout(self.attn(self.norm1(x), causal), self.dropout1.p)")],
        "F.dropout, which keeps dropping in eval mode"),
    "bug_nn_batch_first_missing": ("nn_transformer", [("dim_feedforward=32,\n                          batch_first=True)",
                                                      "dim_feedforward=32)")], "batch_first left out"),
    "bug_nn_wrong_heads": ("nn_transformer", [("nhead=4, num_encoder_layers=2", "nhead=2, num_encoder_layers=2")],
                           "two heads instead of four"),
    "bug_ablation_residual_kept": ("ablation", [(SWITCHED, "keep = z")],
                                   "use_residual=False still adds the input back"),
    "bug_ablation_norm_still_applied": ("ablation", [("            if not self.use_norm:\n                return keep + dropout(layer(z))\n", "")],
                                        "use_norm=False still applies the LayerNorms"),
    "bug_ablation_ffn_ignored": ("ablation", [("        if self.use_ffn:  # without it", "        if True:  # without it")],
                                 "use_ffn=False still runs the feed-forward sub-layer"),
    "bug_shapes_layers_ignored": ("transformer_shapes", [("num_encoder_layers=num_layers,\n                          num_decoder_layers=num_layers,",
                                                          "num_encoder_layers=2,\n                          num_decoder_layers=2,")],
                                  "make_transformer always builds 2 + 2 layers"),
    "bug_shapes_source_length": ("transformer_shapes", [("torch.rand(batch, tgt_len, d_model))\n    return tuple(out.shape)",
                                                          "torch.rand(batch, tgt_len, d_model))\n    return (batch, src_len, d_model)")],
                                 "transformer_shape answers with the source length"),
}


def variant(edits) -> str:
    src = REF.read_text(encoding="utf-8")
    for old, new in edits:
        assert src.count(old) == 1, f"the bug's anchor is not unique in the reference: {old!r}"
        src = src.replace(old, new)
    return src


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
    files.update({f"{sid}.py": variant(edits) for sid, (_q, edits, _why) in BUGS.items()})
    return grade_sources(tmp_path_factory.mktemp(NAME), files, name=NAME)


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


@pytest.mark.parametrize("student", sorted(BUGS))
def test_bug_loses_points_only_on_its_question(graded, student):
    question, _edits, why = BUGS[student]
    r = graded[student]
    assert r.error is None, r.error
    assert lost(r) == {question}, f"{why}: lost on {sorted(lost(r))}; failures: {failures(r)}"
    for c in r.checks:
        if c.status != "passed":
            assert c.message.en and c.message.ko and "internal error" not in c.message.en, c.staff


def test_block_messages_name_what_is_missing(graded):
    def text(student):
        return " ".join(c.message.en for c in graded[student].checks if c.status != "passed")
    assert "residual connection around the self-attention is missing" in text("bug_block_no_attn_residual")
    assert "residual connection around the self-attention is missing" in text("example_partly_wrong")
    ignored = text("bug_block_norm_first_ignored")
    assert "post-norm" in ignored and "norm_first=True" in ignored
    assert "feed-forward one is post-norm" in text("bug_block_pre_norm_ends_with_norm")
    assert "causal=causal" in text("bug_block_causal_not_passed")
    assert "F.dropout" in text("bug_block_functional_dropout")


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
