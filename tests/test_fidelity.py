"""Faithful to the course documents, and not copied from them.

The documents' own answers (tests/documents/, reconstructed from /work/shared/seeds/) score full marks under the
default options; the project's prose, headings, comments and messages are written anew: no heading, commented
line or Korean message of the documents appears verbatim in what students or instructors get.
"""
from __future__ import annotations

import json
import re
from pathlib import Path

import pytest

from conftest import ROOT, by_question, grade_sources

# shared/ sits beside the repository (a CI clone included); /work/shared is where developers have it.
SEEDS = next((p for p in (ROOT.parent / "shared" / "seeds", Path("/work/shared/seeds")) if p.is_dir()),
             ROOT.parent / "shared" / "seeds")
DOCS = ROOT / "tests" / "documents"
SHAPE_FACT = re.compile(r"\[\d+(, \d+)*\]")  # a printed shape such as Q[3, 30, 128] is a fact, not prose
HANGUL = re.compile(r"[\uac00-\ud7a3]")

# Only the copied-text checks read the documents; the rest (tests/documents/ is in the repository) always run.
needs_seeds = pytest.mark.skipif(not SEEDS.is_dir(), reason="the course documents are not on this machine")


def seed_lines() -> list[tuple[str, str]]:
    return [(p.name, line) for p in sorted(SEEDS.glob("0*.txt"))
            for line in p.read_text(encoding="utf-8", errors="replace").splitlines()]


def headings() -> set[str]:
    """Markdown headings of the documents (a '#' line at the start of the line), long enough to be prose."""
    out = set()
    for _name, line in seed_lines():
        m = re.match(r"^#{1,6}\s+(.+?)\s*$", line)
        if m:
            text = m.group(1).replace("\\", "")
            if len(text) >= 8 and "\ufffd" not in text and not SHAPE_FACT.search(text):
                out.add(text)
    return out


def code_comments() -> set[str]:
    """Comments inside the documents' code (an indented '#'), e.g. the commented-out `# self.d_out = d_out`."""
    out = set()
    for _name, line in seed_lines():
        m = re.match(r"^\s+#+\s*(.+?)\s*$", line)
        if m and len(m.group(1)) >= 12 and "\ufffd" not in m.group(1) and not SHAPE_FACT.search(m.group(1)):
            out.add(m.group(1))
    return out


def korean_strings() -> set[str]:
    """Korean string literals in the documents' code long enough to be a sentence, e.g. an assert message (a
    short label of printed output, such as the one before the printed attention weights, is output: it stays)."""
    return {s for _name, line in seed_lines() for s in re.findall(r'"([^"\n]{12,})"', line)
            if HANGUL.search(s) and "\ufffd" not in s}


def shipped_texts() -> dict[str, str]:
    """Everything students or instructors read: templates, notebooks, reference, checks, engine messages."""
    files = [*ROOT.glob("student_template/*"), *ROOT.glob("reference/*.py"), *ROOT.glob("assignments/**/*.py"),
             *ROOT.glob("assignments/**/*.toml"), *ROOT.glob("autograder/*.py"), *ROOT.glob("examples/**/*.py"),
             ROOT / "README.md"]
    out = {}
    for p in files:
        text = p.read_text(encoding="utf-8")
        if p.suffix == ".ipynb":
            text = "\n".join("".join(c["source"]) for c in json.loads(text)["cells"])
        out[str(p.relative_to(ROOT))] = text
    return out


@needs_seeds
def test_the_documents_have_what_these_checks_look_for():
    """The checks below can fail: the documents hold the headings, the comment and the message in question."""
    assert "3.5.1 코잘 어텐션 마스크 적용하기" in headings()
    assert "self.d_out = d_out" in code_comments()
    assert "d_out은 num_heads로 나누어 떨어져야 합니다" in korean_strings()


@needs_seeds
def test_no_heading_of_the_documents_appears_verbatim():
    hits = [(f, h) for f, text in shipped_texts().items() for h in headings() if h in text]
    assert not hits, hits


@needs_seeds
def test_no_commented_line_of_the_documents_is_copied():
    hits = [(f, c) for f, text in shipped_texts().items() for c in code_comments()
            if re.search(r"#\s*" + re.escape(c), text)]
    assert not hits, hits


@needs_seeds
def test_no_korean_message_of_the_documents_is_copied():
    hits = [(f, s) for f, text in shipped_texts().items() for s in korean_strings() if s in text]
    assert not hits, hits


# ---------------------------------------------------------------------------------------------- the lab's answers

@pytest.fixture(scope="module")
def graded(tmp_path_factory):
    return grade_sources(tmp_path_factory.mktemp("documents"), {"seed002.py": DOCS / "seed002_attention.py"})


def test_the_labs_own_answers_get_full_marks(graded):
    """Seed 002's blanks filled as the book fills them (masked_fill_ in place, the notebook's given lines kept)."""
    r = graded["seed002"]
    assert r.error is None, r.error
    assert r.score == 100, [(c.name, c.message.en if c.message else "") for c in r.checks if c.status != "passed"]
    assert by_question(r)["steps"] == 10


# ---------------------------------------------------------------------------------------------- Korean

def test_korean_particles_follow_the_word_before_them():
    from autograder.messages import josa, korean
    assert josa("`CausalAttention`", "이") == "`CausalAttention`이"
    assert josa("`MultiHeadAttentionWrapper`", "이") == "`MultiHeadAttentionWrapper`가"
    assert josa("list", "이라서") == "list라서" and josa("파일", "으로") == "파일로" and josa("값", "으로") == "값으로"
    shown = korean("`CausalAttention`가 코잘(causal)이 아닙니다: 토큰 3..5을 바꾸자; `self.heads`가 list이라서; "
                   "`SelfAttentionV1`이(가) 있습니다; 첫 위치 at index (0, 1); attention.ipynb, code cell 3")
    assert "`CausalAttention`이 코잘" in shown and "토큰 3..5를" in shown and "list라서" in shown
    assert "`SelfAttentionV1`이 있습니다" in shown and "인덱스 (0, 1)" in shown and "코드 셀 3" in shown
    assert "at index" not in shown and "code cell" not in shown
    # A buffer name the student chose, before 라는/라고 (learners round s9: "`causal`라는 버퍼").
    shown = korean("`causal`라는 버퍼; `mask`라는 버퍼; `self.head_list`라고 부릅니다; `self.heads`라고 부릅니다")
    assert "`causal`이라는 버퍼" in shown and "`mask`라는 버퍼" in shown
    assert "`self.head_list`라고" in shown and "`self.heads`라고" in shown


def test_one_glossary_for_feedback_and_notebook():
    """The lab notebook's word for causal attention is the glossary's, and the feedback uses no other word."""
    from autograder.messages import GLOSSARY
    word = GLOSSARY["causal attention"][1]
    nb = shipped_texts()["student_template/attention.ipynb"]
    assert word in nb and "인과" not in nb
    for f, text in shipped_texts().items():
        if f.startswith(("assignments/", "autograder/")):
            assert "인과" not in text, f


@pytest.mark.parametrize("name", ["attention", "mha_intermediates", "transformer_block", "midterm"])
def test_every_check_has_a_korean_name(name):
    import ast
    import tomllib

    from autograder import assignment
    folder = ROOT / "assignments" / name
    ko = tomllib.loads((folder / "ko.toml").read_text(encoding="utf-8"))
    names = {n.name for p in folder.glob("*/test_*.py") for n in ast.walk(ast.parse(p.read_text(encoding="utf-8")))
             if isinstance(n, ast.FunctionDef) and n.name.startswith("test_")}
    assert names <= set(ko["checks"]), sorted(names - set(ko["checks"]))
    assert all(HANGUL.search(v) for v in ko["checks"].values()) and HANGUL.search(ko["title"])
    assert set(ko["questions"]) == set(assignment.load(name).question_ids)


def test_grade_check_in_korean_reads_korean(tmp_path):
    """Title, table headers, check names and positions in Korean; particles fit their words."""
    import subprocess
    import sys
    from assignments.attention.hidden import bugs  # the bug table (tests/variants/ became it)
    # Two bugs: the misspelt class (all its checks fail alike and are shown once, as a group) and W_key created
    # before W_query (only the figure check fails, shown under its own name, with the first differing index).
    both = bugs.BY_NAME["misnamed_CasualAttention"].changes + bugs.BY_NAME["v1_key_before_query"].changes
    (tmp_path / "attention.py").write_text(bugs.apply(bugs.REFERENCE_SOURCE, both), encoding="utf-8")
    p = subprocess.run([sys.executable, str(ROOT / "cli.py"), "check", "--lang", "ko"], cwd=tmp_path,
                       capture_output=True, text=True, timeout=300)
    out = p.stdout
    assert p.returncode == 1, out + p.stderr
    assert out.startswith("Lec 27: 어텐션 메커니즘 구현하기 실습 - attention.py 공개 검사"), out[:200]
    assert "문항" in out and "합계" in out and "\nquestion" not in out and "\ntotal" not in out
    assert "torch.manual_seed(123)로 만든 SelfAttention_v1(3, 2)가 노트북의 값을 출력" in out, out
    assert "CausalAttention의 검사 6개" in out and " 인덱스 (" in out, out
    assert "`CausalAttention`이 정의되어 있지 않고 `CasualAttention`이 있습니다" in out, out
    assert "at index" not in out and "이(가)" not in out


def test_release_in_korean_writes_a_korean_readme(tmp_path):
    import subprocess
    import sys
    p = subprocess.run([sys.executable, str(ROOT / "cli.py"), "release", "-o", "bundle", "--lang", "ko"],
                       cwd=tmp_path, capture_output=True, text=True, timeout=120)
    assert p.returncode == 0, p.stdout + p.stderr
    readme = (tmp_path / "bundle" / "README.md").read_text(encoding="utf-8")
    assert readme.startswith("# Lec 27: 어텐션 메커니즘 구현하기 실습") and "공개 검사" in readme
    assert "These are the public checks only" not in readme and "이(가)" not in readme
    assert (tmp_path / "bundle" / "assignments" / "attention" / "ko.toml").is_file()


def test_the_shared_reference_is_what_a_fresh_build_gives_and_each_output_is_a_copy():
    """seeded and equivalent read one reference per configuration, built once per grader process: it must equal a
    fresh build, and a check that writes to its expected output must not change the next submission's."""
    import importlib.util
    import sys
    import torch
    if str(ROOT) not in sys.path:  # the hidden checks import the reference from the project's root
        sys.path.insert(0, str(ROOT))
    spec = importlib.util.spec_from_file_location("hidden_for_test", ROOT / "assignments/attention/hidden/test_hidden.py")
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    for cls, cfgs in mod.CONFIGS.items():
        seed, b, T, d_in, d_out, heads, ctx = cfgs[0]
        first = mod.ref_output(cls, d_in, d_out, ctx, heads, seed, seed + 10, b, T)
        first.add_(1.0)  # a caller that writes to its copy
        again = mod.ref_output(cls, d_in, d_out, ctx, heads, seed, seed + 10, b, T)
        with torch.no_grad():
            fresh = mod.ref_build(cls, d_in, d_out, ctx, 0.0, heads, seed=seed).eval()(
                mod.make_input(cls, seed + 10, b, T, d_in))
        assert torch.equal(again, fresh), cls
        assert not mod.shared_ref(cls, d_in, d_out, ctx, heads, seed).training
