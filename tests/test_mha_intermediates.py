"""The mha_intermediates assignment grades itself correctly.

One batch grades the reference, the skeleton (.py and .ipynb), the notebook filled in with the reference, the
example submissions and one variant of the reference per realistic bug. Every bug must lose points on the
question it breaks and on no other question. A second, small batch grades with the `scale` option switched to
"head" (the paper's convention; "full", the notes' one, is the default), and `grade check` must recognise the
file by its name.
"""
from __future__ import annotations

import json
import shutil
import subprocess
import sys
from dataclasses import replace
from pathlib import Path

import pytest

from autograder import assignment, batch
from autograder.results import SubmissionResult
from conftest import ROOT, by_question, grade_sources

NAME = "mha_intermediates"
REF = ROOT / "reference" / "mha_intermediates.py"
SKEL = ROOT / "student_template" / "mha_intermediates.py"
NB = ROOT / "student_template" / "mha_intermediates.ipynb"
EXAMPLES = ROOT / "examples" / "mha_intermediates"
DOCS = ROOT / "tests" / "documents"
QUESTIONS = {"sdpa": 20, "mha_init": 10, "projections": 10, "split": 15, "scores": 15, "attention": 10,
             "merge": 10, "output": 10}

# student id -> (the question it breaks, [(text in the reference, replacement)], what the bug is)
BUGS = {
    "bug_sdpa_transpose_1_2": ("sdpa", [("K.transpose(-2, -1)) / math.sqrt(d_K)", "K.transpose(1, 2)) / math.sqrt(d_K)")],
                               "transposes axes 1 and 2 of K: right for 3-D inputs only"),
    "bug_sdpa_mask_inverted": ("sdpa", [("            scores = scores.masked_fill(mask == 0, MASK_FILL)",
                                         "            scores = scores.masked_fill(mask == 1, MASK_FILL)")],
                               "fills where mask == 1"),
    "bug_init_assert": ("mha_init", [("        if d_feat % n_head != 0:\n            raise ValueError(",
                                      "        assert d_feat % n_head == 0, (")],
                        "assert instead of ValueError"),
    "bug_proj_activation": ("projections", [("Q_feat = self.lin_Q(Q)", "Q_feat = self.actv(self.lin_Q(Q))"),
                                            ("K_feat = self.lin_K(K)", "K_feat = self.actv(self.lin_K(K))"),
                                            ("V_feat = self.lin_V(V)", "V_feat = self.actv(self.lin_V(V))")],
                            "applies actv after each projection"),
    "bug_proj_self_only": ("projections", [("K_feat = self.lin_K(K)", "K_feat = self.lin_K(Q)"),
                                           ("V_feat = self.lin_V(V)", "V_feat = self.lin_V(Q)")],
                           "projects Q for keys and values (self-attention only)"),
    "bug_split_heads_first": ("split", [("feat.view(n_batch, n_tok, n_head, d_feat // n_head).permute(0, 2, 1, 3)",
                                         "feat.view(n_batch, n_head, n_tok, d_feat // n_head)")],
                              "views straight to (n_batch, n_head, n, d_head)"),
    "bug_split_interleaved": ("split", [("feat.view(n_batch, n_tok, n_head, d_feat // n_head).permute(0, 2, 1, 3)",
                                         "feat.view(n_batch, n_tok, d_feat // n_head, n_head).permute(0, 3, 1, 2)")],
                              "heads take every n_head-th feature"),
    "bug_scores_head_scale": ("scores", [('SCALE = "full"', 'SCALE = "head"')],
                              "divides by sqrt(d_head), the paper's convention, while the option says full"),
    "bug_init_argument_order": ("mha_init", [
        ("def __init__(self, d_feat=128, n_head=5, actv=F.relu, USE_BIAS=True, dropout_p=0.1, device=None):",
         "def __init__(self, d_feat=128, n_head=5, dropout_p=0.1, USE_BIAS=True, actv=F.relu, device=None):")],
        "another argument order"),
    "bug_init_no_actv_no_device": ("mha_init", [
        ("def __init__(self, d_feat=128, n_head=5, actv=F.relu, USE_BIAS=True, dropout_p=0.1, device=None):",
         "def __init__(self, d_feat=128, n_head=5, USE_BIAS=True, dropout_p=0.1, actv=None):"),
        ("        self.device = device\n", "")],
        "drops device and moves actv (with another default) to the end"),
    "bug_init_other_defaults": ("mha_init", [
        ("def __init__(self, d_feat=128, n_head=5, actv=F.relu, USE_BIAS=True, dropout_p=0.1, device=None):",
         "def __init__(self, d_feat=64, n_head=4, actv=F.relu, USE_BIAS=False, dropout_p=0.1, device=None):")],
        "other defaults than the notes"),
    "bug_scores_neg_inf": ("scores", [("        scores = scores.masked_fill(mask == 0, MASK_FILL)\n    return scores",
                                       "        scores = scores.masked_fill(mask == 0, -torch.inf)\n    return scores")],
                           "masks the multi-head scores with -inf"),
    "bug_scores_mask_ignored": ("scores", [("    if mask is not None:\n        scores = scores.masked_fill(mask == 0, "
                                            "MASK_FILL)\n    return scores", "    return scores")],
                                "never applies the mask in the multi-head layer"),
    "bug_attention_softmax_queries": ("attention", [("attention = torch.softmax(scores, dim=-1)  # (n_batch",
                                                     "attention = torch.softmax(scores, dim=-2)  # (n_batch")],
                                      "multi-head softmax over the queries"),
    "bug_attention_no_dropout": ("attention", [("return torch.matmul(dropout(attention), V_split)",
                                                "return torch.matmul(attention, V_split)")],
                                 "never applies dropout"),
    "bug_merge_skips_permute": ("merge", [("x_rsh2 = merge_heads(x_rsh1, self.d_feat)",
                                           "x_rsh2 = merge_heads(x_raw, self.d_feat)")],
                                "glues x_raw instead of x_rsh1"),
    "bug_output_no_projection": ("output", [("x = self.lin_O(x_rsh2)", "x = x_rsh2")], "forgets lin_O"),
    "bug_output_residual": ("output", [("x = self.lin_O(x_rsh2)", "x = self.lin_O(x_rsh2) + Q")],
                            "adds the query as a residual"),
}


def variant(edits) -> str:
    src = REF.read_text(encoding="utf-8")
    for old, new in edits:
        assert src.count(old) == 1, f"the bug's anchor is not unique in the reference: {old!r}"
        src = src.replace(old, new)
    return src


def filled_notebook(code_by_class: dict[str, str]) -> str:
    """The student notebook with its class cells replaced by `code_by_class` (as a student would fill it in)."""
    nb = json.loads(NB.read_text(encoding="utf-8"))
    for cell in nb["cells"]:
        text = "".join(cell["source"])
        for cls, code in code_by_class.items():
            if cell["cell_type"] == "code" and text.startswith(f"class {cls}("):
                cell["source"] = code
    return json.dumps(nb)


def grade_with_options(tmp: Path, files: dict[str, str | Path], **options) -> dict[str, SubmissionResult]:
    """Like conftest.grade_sources, but with the assignment's [options] overridden (what an instructor edits)."""
    subs = tmp / "submissions"
    subs.mkdir(parents=True)
    for rel, content in files.items():
        if isinstance(content, Path):
            shutil.copy(content, subs / rel)
        else:
            (subs / rel).write_text(content, encoding="utf-8")
    a = assignment.load(NAME)
    a = replace(a, options={**a.options, **options})
    out = tmp / "results"
    batch.main(submissions=subs, out=out, assignment=a, echo=lambda _m: None)
    return {p.stem: SubmissionResult.from_dict(json.loads(p.read_text())["extra_data"]["internal"])
            for p in out.glob("*.json")}


@pytest.fixture(scope="module")
def graded(tmp_path_factory):
    files: dict[str, str | Path] = {
        "reference.py": REF,
        "skeleton.py": SKEL,
        "skeleton_nb/mha_intermediates.ipynb": NB,
        "reference_nb/mha_intermediates.ipynb": filled_notebook({
            # the reference module (both classes and their helpers) goes into the first class cell
            "ScaledDotProductAttention": REF.read_text(encoding="utf-8"),
            "MultiHeadedAttention": "pass  # defined in the cell above\n"}),
        "example_correct.py": EXAMPLES / "correct.py",
        "example_partly_wrong.py": EXAMPLES / "partly_wrong.py",
        "example_broken.py": EXAMPLES / "broken.py",
    }
    files.update({f"{sid}.py": variant(edits) for sid, (_q, edits, _why) in BUGS.items()})
    files.update({"doc_seed001.py": DOCS / "seed001_mha_intermediates.py",
                  "doc_seed003.py": DOCS / "seed003_mha_intermediates.py"})
    return grade_sources(tmp_path_factory.mktemp(NAME), files, name=NAME)


def failures(r: SubmissionResult) -> list[tuple[str, str, str]]:
    return [(c.question, c.name, c.message.en if c.message else "") for c in r.checks if c.status != "passed"]


def test_reference_gets_full_marks(graded):
    r = graded["reference"]
    assert r.error is None, r.error
    assert r.max_score == 100
    assert r.score == 100, failures(r)
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
    assert r.submission == "mha_intermediates.ipynb"
    assert r.score == 100, failures(r)


def test_examples(graded):
    assert graded["example_correct"].score == 100, failures(graded["example_correct"])
    partly = graded["example_partly_wrong"]
    per_q = by_question(partly)
    lost = {q for q, full in QUESTIONS.items() if per_q[q] < full}
    assert lost == {"scores", "merge"}, failures(partly)
    assert 0 < partly.score < 100
    broken = graded["example_broken"]
    assert broken.score == 0
    assert any("Syntax error" in n.en and "line 8" in n.en for n in broken.notes), [n.en for n in broken.notes]


@pytest.mark.parametrize("student", sorted(BUGS))
def test_bug_loses_points_only_on_its_question(graded, student):
    question, _edits, why = BUGS[student]
    r = graded[student]
    assert r.error is None, r.error
    per_q = by_question(r)
    lost = {q for q, full in QUESTIONS.items() if per_q[q] < full}
    assert lost == {question}, f"{why}: lost on {sorted(lost)}; failures: {failures(r)}"
    # every failing check says something specific, in both languages
    for c in r.checks:
        if c.status != "passed":
            assert c.message.en and c.message.ko and "internal error" not in c.message.en, c.staff


def test_bug_messages_name_the_cause(graded):
    def text(student):
        return " ".join(c.message.en for c in graded[student].checks if c.status != "passed")
    assert "sqrt(d_feat)" in text("bug_scores_head_scale") and "sqrt(d_head)" in text("bug_scores_head_scale")
    assert "order differs" in text("bug_init_argument_order")
    assert "missing device" in text("bug_init_no_actv_no_device")
    assert "d_feat=64 (notes: 128)" in text("bug_init_other_defaults")
    assert "-1e9" in text("bug_scores_neg_inf")
    assert "ValueError" in text("bug_init_assert")


@pytest.mark.parametrize("student", ["doc_seed001", "doc_seed003"])
def test_the_documents_own_solution_gets_full_marks(graded, student):
    """Seed 001's classes as the document writes them (sqrt of the unsplit K.size(-1), positional USE_BIAS,
    device accepted and unused), under its own class name and under the blog notes' MultiHeadAttention."""
    r = graded[student]
    assert r.error is None, r.error
    assert r.score == 100, failures(r)
    notes = " ".join(n.en for n in r.notes)
    if student == "doc_seed003":
        assert "`MultiHeadAttention` is graded as `MultiHeadedAttention`" in notes, notes
        assert "rename" not in notes.lower(), notes
    else:
        assert not notes, notes


def test_demo_shape_check_uses_the_notes_exact_shapes(graded):
    r = graded["bug_split_interleaved"]
    names = [c.name for c in r.checks if c.question == "split" and c.status == "passed"]
    assert any("[128, 5, 32, 40]" in n for n in names)  # right shape, wrong values: the shape points stay


def test_scale_option_head(tmp_path):
    """With scale = "head" the paper's convention earns full marks and the notes' one loses the scores only."""
    res = grade_with_options(tmp_path, {"full_feature.py": REF, "per_head.py": variant(BUGS["bug_scores_head_scale"][1]),
                                        "example_partly_wrong.py": EXAMPLES / "partly_wrong.py"}, scale="head")
    assert res["per_head"].score == 100, failures(res["per_head"])
    full = by_question(res["full_feature"])
    assert {q for q, top in QUESTIONS.items() if full[q] < top} == {"scores"}
    msgs = " ".join(c.message.en for c in res["full_feature"].checks if c.status != "passed")
    assert "This assignment divides the scores by sqrt(d_head)" in msgs
    partly = by_question(res["example_partly_wrong"])  # its scaling is now right; only the merge is still wrong
    assert {q for q, top in QUESTIONS.items() if partly[q] < top} == {"merge"}


def test_default_option_and_template_agree():
    """The default is the documents' own convention, and template and notebook say plainly that it is graded."""
    a = assignment.load(NAME)
    assert a.options == {"scale": "full"}
    assert a.aliases == {"MultiHeadAttention": "MultiHeadedAttention"}
    nb_text = "".join("".join(c["source"]) for c in json.loads(NB.read_text(encoding="utf-8"))["cells"])
    for text in (SKEL.read_text(encoding="utf-8"), nb_text):
        assert "sqrt(d_head)" in text and '"head"' in text and "sqrt(d_feat)" in text
        assert "GRADED: the scores of every head are divided by sqrt(d_feat)" in text.replace("**", "") or \
            "Graded: the scores are divided by `sqrt(d_feat)`" in text.replace("**", ""), text[:300]
        assert "K.size(-1)" in text


@pytest.mark.parametrize("filename, source, code", [
    ("mha_intermediates.py", REF, 0),
    ("mha_intermediates.ipynb", NB, 1),
])
def test_grade_check_recognises_the_file(tmp_path, filename, source, code):
    shutil.copy(source, tmp_path / filename)
    p = subprocess.run([sys.executable, str(ROOT / "cli.py"), "check", filename], cwd=tmp_path,
                       capture_output=True, text=True, timeout=300)
    assert p.returncode == code, p.stdout + p.stderr
    assert "Multi-headed attention" in p.stdout
    if code == 0:
        assert "31/31" in p.stdout
