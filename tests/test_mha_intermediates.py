"""The mha_intermediates assignment grades itself correctly.

One batch grades the reference, the skeleton (.py and .ipynb), the notebook filled in with the reference, the
example submissions and every variant of the table of known bugs (assignments/mha_intermediates/hidden/bugs.py).
Every bug must lose points on the question it breaks and on no other question, and be named where it loses them
(the grader's diagnosis, or the table's words). A second, small batch grades with the `scale` option switched to
"head" (the paper's convention; "full", the notes' one, is the default), and `grade check` must recognise the
file by its name.
"""
from __future__ import annotations

import json
import re
import shutil
import subprocess
import sys
from dataclasses import replace
from pathlib import Path

import pytest

from assignments.mha_intermediates.hidden import bugs
from autograder import assignment, batch, bugtable
from autograder.messages import korean
from autograder.results import SubmissionResult
from conftest import ROOT, assert_table_well_formed, by_question, failed_messages, grade_sources

NAME = "mha_intermediates"
REF = ROOT / "reference" / "mha_intermediates.py"
SKEL = ROOT / "student_template" / "mha_intermediates.py"
NB = ROOT / "student_template" / "mha_intermediates.ipynb"
EXAMPLES = ROOT / "examples" / "mha_intermediates"
DOCS = ROOT / "tests" / "documents"
QUESTIONS = {"sdpa": 20, "mha_init": 10, "projections": 10, "split": 15, "scores": 15, "attention": 10,
             "merge": 10, "output": 10}

# The known learner bugs are a table in the assignment's hidden folder (the reference plus stated find/replace
# changes, the questions each breaks, what the feedback must say); the same table is the grader's diagnosis library.
BUGS = [v.name for v in bugs.VARIANTS if v.breaks]
CORRECT = [v.name for v in bugs.VARIANTS if not v.breaks]
DIAGNOSIS = "exactly what the reference gives"


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


# lin_K named W_K: the reference's weights cannot be copied in, and every value check says why.
RENAMED = REF.read_text(encoding="utf-8").replace("self.lin_K", "self.W_K")

# Learners round C (m23): the right layers, and a forward (and SDPA) that returns zeros of the right shapes for every
# entry. Zeros split, merged or weighted are zeros: it earned 51/100 from "this step on your own inputs" and the
# demo shapes.
STUB_ZEROS = REF.read_text(encoding="utf-8").replace(
    "        d_K = K.size(-1)\n",
    "        return torch.zeros(*Q.shape[:-1], V.shape[-1]), torch.zeros(*Q.shape[:-1], K.shape[-2])\n"
    "        d_K = K.size(-1)\n").replace(
    "        Q_feat = self.lin_Q(Q)  # (n_batch, n_Q, d_feat)\n",
    "        b, nq, d = Q.shape\n        nk, h, dh, z = K.shape[1], self.n_head, self.d_head, torch.zeros\n"
    "        return {'Q_feat': z(b, nq, d), 'K_feat': z(b, nk, d), 'V_feat': z(b, nk, d), 'Q_split': z(b, h, nq, dh),\n"
    "                'K_split': z(b, h, nk, dh), 'V_split': z(b, h, nk, dh), 'scores': z(b, h, nq, nk),\n"
    "                'attention': z(b, h, nq, nk), 'x_raw': z(b, h, nq, dh), 'x_rsh1': z(b, nq, h, dh),\n"
    "                'x_rsh2': z(b, nq, d), 'x': z(b, nq, d)}\n"
    "        Q_feat = self.lin_Q(Q)  # (n_batch, n_Q, d_feat)\n")

# Red team, round 13: the same with torch.rand in place of zeros: the SDPA demo's two calls (unseeded) gave other
# random tensors for the other input, read as computed from it (4 points).
STUB_RANDOM = STUB_ZEROS.replace("torch.zeros(", "torch.rand(").replace("z = K.shape[1], self.n_head, self.d_head, "
                                                                       "torch.zeros", "z = K.shape[1], self.n_head, "
                                                                       "self.d_head, torch.rand")

# Red team, round 14: every entry (and SDPA's pair) a tensor of ones of the right shape times the input's sum: it
# changes from input to input, which was all the shape checks asked, and earned 19 points of them.
STUB_SUM = STUB_ZEROS.replace("torch.zeros(*Q.shape[:-1], V.shape[-1]), torch.zeros(*Q.shape[:-1], K.shape[-2])",
                              "torch.ones(*Q.shape[:-1], V.shape[-1]) * V.sum(), "
                              "torch.ones(*Q.shape[:-1], K.shape[-2]) * Q.sum()").replace(
    "z = K.shape[1], self.n_head, self.d_head, torch.zeros",
    "z = K.shape[1], self.n_head, self.d_head, lambda *s: torch.ones(*s) * (Q.sum() + K.sum() + V.sum())")

# Red team, round 25: credit for what a class that does nothing satisfies. An __init__ of the docstring's signature
# that only calls super().__init__() and raises ValueError for an indivisible n_head (and a forward returning {})
# earned the signature's 2 points, "no layer has a bias" (1) and the rejection of n_head (2); one holding only its dropout, with a forward returning {"x": Q}, earned those, the dropout's and the
# device argument's points and the output's demo shape (2); the right layers with the projections and lin_O left out
# (every entry computed from the input alone) earned the projections' and the output's demo shapes (4).
STUB_EMPTY = """import torch.nn as nn
import torch.nn.functional as F


class ScaledDotProductAttention(nn.Module):
    def forward(self, Q, K, V, mask=None):
        return Q, Q


class MultiHeadedAttention(nn.Module):
    def __init__(self, d_feat=128, n_head=5, actv=F.relu, USE_BIAS=True, dropout_p=0.1, device=None):
        super().__init__()
        if d_feat % n_head:
            raise ValueError("n_head must divide d_feat")

    def forward(self, Q, K, V, mask=None):
        return {}
"""
STUB_DROPOUT_ONLY = STUB_EMPTY.replace("        super().__init__()\n",
                                       "        super().__init__()\n        self.dropout = nn.Dropout(dropout_p)\n").replace(
    "return {}", 'return {"x": Q}')
STUB_NO_WEIGHTS = REF.read_text(encoding="utf-8")
for _layer, _arg in (("lin_Q", "Q"), ("lin_K", "K"), ("lin_V", "V"), ("lin_O", "x_rsh2")):
    STUB_NO_WEIGHTS = STUB_NO_WEIGHTS.replace(f"= self.{_layer}({_arg})", f"= {_arg}", 1)


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
    files.update({f"{v.name}.py": v.source() for v in bugs.VARIANTS})
    files["layer_renamed.py"] = RENAMED
    files["stub_zeros.py"] = STUB_ZEROS
    files["stub_random.py"] = STUB_RANDOM
    files["stub_sum.py"] = STUB_SUM
    files["stub_empty.py"] = STUB_EMPTY
    files["stub_dropout_only.py"] = STUB_DROPOUT_ONLY
    files["stub_no_weights.py"] = STUB_NO_WEIGHTS
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


@pytest.mark.parametrize("student", BUGS)
def test_bug_loses_points_only_on_its_question(graded, student):
    v = bugs.BY_NAME[student]
    r = graded[student]
    assert r.error is None, r.error
    per_q = by_question(r)
    lost = {q for q, full in QUESTIONS.items() if per_q[q] < full}
    assert lost == set(v.breaks), f"{v.why or v.cause}: lost on {sorted(lost)}; failures: {failures(r)}"
    # every failing check says something specific, in both languages
    for c in r.checks:
        if c.status != "passed":
            assert c.message.en and c.message.ko and "internal error" not in c.message.en, c.staff


def test_bug_messages_name_the_cause(graded):
    def text(student):
        return " ".join(c.message.en for c in graded[student].checks if c.status != "passed")
    assert "sqrt(d_feat)" in text("scores_head_scale") and "sqrt(d_head)" in text("scores_head_scale")
    assert "order differs" in text("init_argument_order")
    # the missing `device` is named (and charged) once, by the check that it is accepted, not by the signature's too
    assert "accept `device`" in text("init_no_actv_no_device") and "missing device" not in text("init_no_actv_no_device")
    assert "d_feat=64 (notes: 128)" in text("init_other_defaults")
    assert "-1e9" in text("scores_neg_inf")
    assert "ValueError" in text("init_assert")


# ---------------------------------------------------------------------------------------------- the table of bugs

def test_table_is_well_formed():
    assert len(BUGS) >= 20 and CORRECT, (BUGS, CORRECT)
    assert_table_well_formed(bugs, QUESTIONS)
    with pytest.raises(ValueError, match="does not occur"):
        bugtable.apply(bugs.REFERENCE_SOURCE, (bugtable.ch("split_heads", "permute(0, 3, 1, 2)", "x"),))


def test_a_bug_is_tried_where_its_change_reaches():
    """A bug in a helper reaches the class that calls it; a module-level constant reaches everything."""
    reaches = bugs.TABLE.reaches
    assert reaches(bugs.BY_NAME["split_interleaved"], "MultiHeadedAttention")  # split_heads is a helper
    assert not reaches(bugs.BY_NAME["split_interleaved"], "ScaledDotProductAttention")
    assert not reaches(bugs.BY_NAME["sdpa_no_sqrt"], "MultiHeadedAttention")
    assert reaches(bugs.BY_NAME["scores_head_scale"], "ScaledDotProductAttention")


def test_the_library_is_what_the_diagnosis_names():
    """Every bug that changes a compared value names its cause through the diagnosis, not only the checks' words:
    at least these, which real learners write."""
    assert {v.name for v in bugs.LIBRARY} >= {
        "sdpa_mask_inverted", "sdpa_no_sqrt", "sdpa_softmax_queries", "proj_activation", "proj_self_only",
        "proj_key_uses_lin_Q", "split_heads_first", "split_interleaved", "scores_no_scaling", "scores_neg_inf",
        "scores_mask_ignored", "attention_softmax_queries", "attention_no_dropout", "merge_skips_permute",
        "output_no_projection", "output_uses_lin_V", "output_residual"}


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


# A forward that raises part way -> the entry whose line raised (bugs.py rows; lost == breaks is asserted above).
RAISES_AT = {"attention_remask_raises": "attention", "split_view_raises": "Q_split",
             "merge_view_not_contiguous": "x_rsh2", "merge_length_of_K": "x_rsh2"}


@pytest.mark.parametrize("student", sorted(RAISES_AT))
def test_a_forward_that_raises_is_judged_on_what_it_computed(graded, student):
    """The steps done before the line that raised keep their points (the table's `breaks`); each failed check says
    either the exception, with the student's line, or that its step was not computed because of it, charged to
    the step of that line, in English and Korean."""
    r, step = graded[student], RAISES_AT[student]
    failed = [c for c in r.checks if c.status == "failed"]
    raised = [c for c in failed if "` raised " in c.message.en and "예외 발생" in c.message.ko]
    later = [c for c in failed if f"the exception is charged to out['{step}']" in c.message.en
             and f"예외는 out['{step}'] 단계에서 감점됩니다" in c.message.ko]
    assert raised and later and sorted(c.name for c in raised + later) == sorted(c.name for c in failed), failures(r)
    assert all(re.search(r"line \d+", c.message.en) and re.search(r"\d+번째 줄", c.message.ko)
               for c in raised + later), failures(r)
    if student == "split_view_raises":  # only the projections, computed before the split, earn their points
        assert {c.question for c in r.checks if c.status == "passed" and c.points > 0} == {"sdpa", "mha_init",
                                                                                           "projections"}


def test_attention_after_dropout_is_named_in_both_languages(graded):
    r = graded["attention_after_dropout"]
    failed = [c for c in r.checks if c.status == "failed"]
    assert [c.nodeid.split("::")[-1] for c in failed] == ["test_attention_before_dropout"], failures(r)
    assert "the weights AFTER dropout" in failed[0].message.en
    assert "dropout을 적용한 뒤의 가중치" in failed[0].message.ko


def test_a_later_bug_is_named_beside_the_other_scale(graded):
    """The example scales by sqrt(d_head) (charged in `scores`) and merges without the permute: the merge is still
    named, since the diagnosis also tries the other scale convention."""
    merge = failed_messages(graded["example_partly_wrong"], ("merge",))
    assert any(bugs.BY_NAME["merge_skips_permute"].cause.en in m for m in merge), merge


@pytest.mark.parametrize("student", CORRECT)
def test_correct_variant_gets_full_marks(graded, student):
    assert graded[student].score == 100, failures(graded[student])


def test_right_code_is_never_diagnosed(graded):
    named = {s: [m for m in failed_messages(graded[s]) if DIAGNOSIS in m]
             for s in CORRECT + ["reference", "example_correct", "doc_seed001", "doc_seed003"]}
    assert not any(named.values()), named


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
    r = graded["split_interleaved"]
    names = [c.name for c in r.checks if c.question == "split" and c.status == "passed"]
    assert any("[128, 5, 32, 40]" in n for n in names)  # right shape, wrong values: the shape points stay


def test_scale_option_head(tmp_path):
    """With scale = "head" the paper's convention earns full marks and the notes' one loses the scores only."""
    per_head = bugs.BY_NAME["scores_head_scale"].source()
    res = grade_with_options(tmp_path, {"full_feature.py": REF, "per_head.py": per_head,
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


def test_a_file_under_the_blogs_class_name_is_recognised_as_this_lab(tmp_path):
    """The class under its accepted alias (the blog's MultiHeadAttention), in a file named after the student: the
    alias counts for its question. Without it the midterm (which has a MultiHeadAttention) matched more of its
    questions, and a whole class of such files was graded as the midterm: 19/100."""
    from autograder import assignment
    text = REF.read_text(encoding="utf-8")
    assert text.count("class MultiHeadedAttention(") == 1
    f = tmp_path / "kim_lab2.py"
    f.write_text(text.replace("class MultiHeadedAttention(", "class MultiHeadAttention("), encoding="utf-8")
    assert assignment.for_source(f).name == "mha_intermediates"
    f.write_text(text, encoding="utf-8")
    assert assignment.for_source(f).name == "mha_intermediates"
    # The midterm's answer matches all 3 of its questions, and both of this lab's (its MultiHeadAttention through
    # the alias): the one with more questions matched, not a tie that names neither.
    assert assignment.for_source(ROOT / "reference" / "midterm.py").name == "midterm"


def test_the_alias_alone_does_not_make_an_attention_lab_file_this_labs(tmp_path):
    """Learners round rl14: a file named after the student with CausalAttention and the book's MultiHeadAttention
    (d_in, d_out, context_length, dropout, num_heads), the attention lab's classes, matched 1 of this lab's 2
    questions through the alias alone and was graded as this lab (a batch of such files was refused as mixing
    assignments). The alias counts beside a name of this lab's own (ScaledDotProductAttention)."""
    from autograder import assignment
    from autograder.bugtable import scope
    from conftest import REFERENCE
    text = REFERENCE.read_text(encoding="utf-8")
    keep = "".join(text[slice(*scope(text, c))] for c in ("CausalAttention", "MultiHeadAttention"))
    f = tmp_path / "lee_ch3.py"
    f.write_text("import torch\nimport torch.nn as nn\n\n" + keep, encoding="utf-8")
    assert assignment.for_source(f) is None or assignment.for_source(f).name != "mha_intermediates"
    f.write_text(REF.read_text(encoding="utf-8").replace("class MultiHeadedAttention(", "class MultiHeadAttention("),
                 encoding="utf-8")
    assert assignment.for_source(f).name == "mha_intermediates"


def test_weights_that_cannot_be_copied_are_named_in_both_languages(graded):
    """A layer under another name: the value checks fail saying which parameters are missing, in English and in
    Korean with no English prose (the list used to be English inside the Korean message)."""
    from test_korean import english_words
    r = graded["layer_renamed"]
    failed = [c for c in r.checks if c.status == "failed" and "could not be copied" in c.message.en]
    assert failed, failures(r)
    for c in failed:
        assert "no parameter named lin_K.bias; no parameter named lin_K.weight" in c.message.en, c.message.en
        assert "lin_K.weight 파라미터가 없음" in c.message.ko and english_words(c.message.ko) == [], c.message.ko


def test_a_missing_bias_is_charged_once_in_the_constructor(graded):
    """bias=False hard-coded: the weights are still copied in and the value checks judge the forward (they all
    pass); the constructor's layer check says USE_BIAS is ignored, in both languages, and never blames the names."""
    from test_korean import english_words
    r = graded["init_bias_false"]
    failed = [c for c in r.checks if c.status == "failed"]
    assert [c.nodeid.split("::")[-1] for c in failed] == ["test_mha_layers"], failures(r)
    assert "USE_BIAS is ignored" in failed[0].message.en
    assert "USE_BIAS를 무시하고 있습니다" in failed[0].message.ko and english_words(failed[0].message.ko) == []


def test_dropout_that_runs_in_eval_mode_is_charged_to_the_attention(graded):
    """F.dropout(attention, p) without training= gives the reference's values with dropout_p=0 (every other case),
    and random ones in eval mode with dropout_p > 0: the x_raw check's eval case catches it and names it."""
    r = graded["attention_dropout_in_eval"]
    failed = [c for c in r.checks if c.status == "failed"]
    assert [c.nodeid.split("::")[-1] for c in failed] == ["test_x_raw_values"], failures(r)
    assert "dropout_p=0.5).eval()" in failed[0].message.en and "training=" in failed[0].message.ko


def test_a_module_that_returns_zeros_earns_only_its_constructor(graded):
    """Zeros for every entry: no value check pays "this step on your own inputs" (split, merge, x_raw), since zeros
    carry no evidence of a step, and no shape check pays an output that is the same for two different inputs."""
    r = graded["stub_zeros"]
    earned = sorted((c.question, c.name) for c in r.checks if c.score > 0)
    assert {q for q, _ in earned} == {"mha_init"}, earned
    assert r.score == 10, failures(r)
    shapes = [c.message.en for c in r.checks if "demo" in c.name.lower() and c.status == "failed"]
    assert shapes and all("the same for two different inputs" in m for m in shapes), shapes


def test_a_module_that_returns_random_tensors_earns_only_its_constructor(graded):
    """torch.rand of the right shapes for every entry and for SDPA's pair: the demos' calls are seeded alike, so the
    output is the same for two different inputs and no shape check pays."""
    r = graded["stub_random"]
    assert "torch.rand(" in STUB_RANDOM and "torch.zeros" not in STUB_RANDOM
    earned = sorted((c.question, c.name) for c in r.checks if c.score > 0)
    assert {q for q, _ in earned} == {"mha_init"}, earned
    assert r.score == 10, failures(r)


def test_a_module_that_returns_a_constant_times_the_inputs_sum_earns_only_its_constructor(graded):
    """Ones of the right shapes times the input's sum, for every entry and for SDPA's pair: it differs from input to
    input, but changing the first example of the batch changes every example's output: no shape check pays."""
    r = graded["stub_sum"]
    assert "* V.sum()" in STUB_SUM and "torch.zeros" not in STUB_SUM
    earned = sorted((c.question, c.name) for c in r.checks if c.score > 0)
    assert {q for q, _ in earned} == {"mha_init"}, earned
    assert r.score == 10, failures(r)
    shapes = [c.message.en for c in r.checks if "demo" in c.name.lower() and c.status == "failed"]
    assert shapes and all("changed out" in m and "in the other examples too" in m for m in shapes), shapes


def test_a_class_without_layers_earns_no_constructor_or_shape_points(graded):
    """An empty __init__ of the right signature earns nothing; one holding only its dropout earns the dropout's point
    alone: the signature, "no layer has a bias" and the device argument pay a class that makes its layers, and the
    output {"x": Q} (the input itself) earns no demo shape."""
    scores = {s: graded[s].score for s in ("stub_empty", "stub_dropout_only")}
    assert scores == {"stub_empty": 0, "stub_dropout_only": 1}, {s: failures(graded[s]) for s in scores}
    earned = [c.nodeid.split("::")[-1] for c in graded["stub_dropout_only"].checks if c.score > 0]
    assert earned == ["test_mha_dropout_module"], earned
    said = {c.nodeid.split("::")[-1]: c.message for c in graded["stub_empty"].checks if c.status == "failed"}
    for name in ("test_mha_signature", "test_mha_no_bias", "test_mha_rejects_indivisible"):
        assert "no parameters" in said[name].en and "파라미터" in said[name].ko, said[name]


def test_entries_computed_without_the_layers_earn_no_demo_shape_of_the_layers_steps(graded):
    """Q_feat = Q, K_feat = K, V_feat = V and x = x_rsh2 (no layer applied): the steps between are right on those
    inputs and keep their points, the projections and the output earn nothing, their demo shapes included."""
    r = graded["stub_no_weights"]
    assert "= self.lin_" not in STUB_NO_WEIGHTS.split("def forward(self, Q, K, V, mask=None):")[-1]
    got = {q: sum(c.score for c in r.checks if c.question == q) for q in QUESTIONS}
    assert got == {**QUESTIONS, "projections": 0, "output": 0}, failures(r)
    shapes = [c.message for c in r.checks if "demo" in c.name.lower() and c.status == "failed"]
    assert len(shapes) == 2 and all("with other weights loaded" in m.en and "다른 가중치" in m.ko for m in shapes), \
        shapes


def test_no_diagnosis_of_a_step_is_made_from_zeros(graded):
    """Zeros for every entry: the scores were said to be "divided by sqrt(d_head)" (0 = 0 / anything) and the
    attention "the weights AFTER dropout" (every weight zeroed, none kept): neither is said of zeros."""
    said = [c.message.text(lang) for c in graded["stub_zeros"].checks if c.status == "failed" for lang in ("en", "ko")]
    for words in ("sqrt(d_head)", "AFTER dropout", "dropout을 적용한 뒤의 가중치"):
        assert not [m for m in said if words in m], words


def test_signature_defaults_are_shown_readably():
    from assignments.mha_intermediates.common import readable_default
    assert readable_default("<function relu at 0x7f3a2b1c0d60>") == "relu"
    assert readable_default("<built-in method tanh of type object at 0x7f00>") == "<built-in method tanh of type object>"
    assert readable_default("ReLU()") == "ReLU()" and readable_default(None) is None
