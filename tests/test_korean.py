"""Korean output is Korean (issue 9, item 9): no English prose in what a student reads with --lang ko.

The installed `grade` runs from a folder outside the repository: `grade check --lang ko` on the skeleton, a buggy
file and the reference of each lab, `grade batch --lang ko` on the attention lab's whole bug table plus the bundled
examples (every visible Gradescope test), and `grade release --lang ko`. What may stay in Latin letters is what a
Korean course writes in Latin letters too: code (in backticks, calls, argument lists, `a.b`, snake_case and
CamelCase names), identifiers of the reference and skeleton sources, a short list of PyTorch/Python words, platform
names and units, single-letter symbols (b, T, d), Python's own exception text, what the student's code printed, and a glossary term's English in
parentheses right after its Korean (코잘(causal)). Any other word is English prose that was not translated.
"""
from __future__ import annotations

import builtins
import io
import keyword
import json
import re
import shutil
import tempfile
import tokenize
from pathlib import Path

import pytest

from conftest import ROOT
from test_as_user import GRADE, grade

from autograder.messages import GLOSSARY, bilingual
from autograder.results import CheckResult, SubmissionResult, table

LABS = ("attention", "mha_intermediates", "transformer_block")

# Words a Korean text about PyTorch keeps in Latin letters: API names, devices, Python types, platforms, units.
CODE_WORDS = {
    "torch", "nn", "softmax", "sqrt", "sum", "mean", "triu", "tril", "view", "reshape", "transpose", "contiguous",
    "super", "forward", "shape", "dtype", "bias", "eval", "train", "device", "meta", "cpu", "cuda", "inf", "nan",
    "list", "dict", "tuple", "int", "float", "str", "bool", "none", "true", "false", "layernorm", "relu", "linear",
    "gpu", "mps", "cuda", "pytorch", "python", "linux", "windows", "macos", "wsl", "colab", "powershell", "pip",
    "venv", "grade", "check", "lang", "ko", "file", "name", "mb", "gb", "kb", "lec",
    "sdpa",  # ScaledDotProductAttention, as the mha_intermediates notebook abbreviates it
}
# English that joins code inside one backtick span, as the old messages wrote it (`qkv_weights(3, 2) after ...`).
PROSE_IN_CODE = {"after", "before", "the", "of", "on", "by", "using", "then", "when", "where"}
_SIGNAL = re.compile(r"[_=.\d\[\]/*<>+@^~-]")  # what marks a chunk of text as code or a number
_PARENS = re.compile(r"\([^()]*\)")
_HANGUL = re.compile(r"[\uac00-\ud7a3]")


def identifiers() -> set[str]:
    """Every name in the reference implementations and skeletons (NAME tokens only, never strings or comments)."""
    names: set[str] = set()
    for lab in (*LABS, "midterm"):
        for path in (ROOT / "reference" / f"{lab}.py", ROOT / "student_template" / f"{lab}.py"):
            for tok in tokenize.generate_tokens(io.StringIO(path.read_text(encoding="utf-8")).readline):
                if tok.type == tokenize.NAME:
                    names.add(tok.string.lower())
    return names


ALLOWED = CODE_WORDS | identifiers() | set(keyword.kwlist) | {n.lower() for n in dir(builtins)}


def english_words(text: str) -> list[str]:
    """The words of `text` that are English prose (see the module docstring for what is not)."""
    text = text.split("코드 출력:")[0]  # what the student's code printed (results.py puts it last) is theirs
    for _key, (en, ko) in GLOSSARY.items():
        text = text.replace(f"{ko}({en})", ko)
    found = []
    for span in re.findall(r"`([^`\n]*)`", text):  # code, unless English joins it ("`f(x) after seed(1)`")
        span = re.sub(r"'[^'\n]*'|\"[^\"\n]*\"|#.*$", " ", span)  # the student's strings and comments
        found += [w for w in re.findall(r"(?<![\w.])[A-Za-z]+(?![\w(.])", span) if w.lower() in PROSE_IN_CODE]
    t = re.sub(r"`[^`\n]*`", " ", text)
    t = re.sub(r"'[^'\n]*'|\"[^\"\n]*\"", " ", t)
    # Python's own messages: an exception (to the first Hangul, which is ours again) and a compiler message
    t = re.sub(r"\b[A-Z]\w*(?:Error|Exception|Warning|Interrupt|Exit)\b:[^\n\uac00-\ud7a3]*", " ", t)
    t = re.sub(r"(문법 오류 \([^)\n]*\):)[^\n\uac00-\ud7a3]*", r"\1 ", t)
    def code(inner: str) -> bool:  # an argument list or expression, not words in parentheses
        return bool(_SIGNAL.search(inner)) and not re.search(r"[A-Za-z]{2,} [A-Za-z]{2,}", inner)
    while True:
        n = _PARENS.sub(lambda m: " " if code(m.group(0)[1:-1]) else f" {m.group(0)[1:-1]} ", t)
        if n == t:
            break
        t = n
    for chunk in t.split():
        core = re.sub(r"[\uac00-\ud7a3]+$", "", chunk.strip(",;:!?·()[]{}<>\"'…"))  # drop a particle: 모드의
        core = core.strip(",;:!?·()[]{}<>\"'…")
        if not re.search(r"[A-Za-z]", core) or _SIGNAL.search(core) or _HANGUL.search(core):
            continue
        if re.search(r"[a-z][A-Z]", core) or len(core) == 1 or core.lower() in ALLOWED:
            continue
        found.append(core)
    return found


def test_the_detector_finds_what_the_old_grader_printed():
    """The texts the grader printed in Korean before this fix: each must be caught (this test is the check on
    the checker), and the Korean that replaced them must pass."""
    old = ["[FAIL] steps: 쿼리 x^(2)의 점수에 대한 softmax_naive (0/1)",
           "`softmax_naive(...)`가 아직 구현되지 않았습니다 (softmax_naive: see notebook section 3.3.1 / 노트북 3.3.1 참고).",
           "건너뜀: There is no GPU on the grading machine, so device handling was checked by simulation only.",
           "`qkv_weights(3, 2) after torch.manual_seed(123)`이 아직 구현되지 않았습니다",
           "`CausalAttention(5, 4, 9, 0.0)(x) with the reference's weights`의 값이 84개 중 84개 다릅니다.",
           "`MultiHeadAttention`이 .to(device)를 따르지 않습니다: masked_fill got tensors on cpu and meta.",
           "코드를 불러오는 중 오류 (chen.ipynb, section \"Lec 27 lab\", code cell 3, 1번째 줄: `x`)",
           "steps                      0/11  --", "note: Checking attention.py, not attention.ipynb"]
    for text in old:
        assert english_words(text), text
    new = ["[실패] 단계별 연습 (3.3, 3.4.1, 3.5.1 - 3.5.2): 쿼리 x^(2)의 점수에 대한 softmax_naive (0/1)",
           "`CausalAttention(5, 4, 9, 0.0)(x)` (참조 구현의 가중치를 넣음)의 값이 84개 중 84개 다릅니다.",
           "`CausalAttention`은 코잘(causal)이 아닙니다: 토큰 3..5를 바꾸자",
           "`m(x)`에서 예외 발생: RuntimeError: view size is not compatible. Use .reshape(...) instead. 다음",
           "문법 오류 (a.py, 3번째 줄): `class A(torch.nn.Module)` expected ':'. a.py의 코드가 전혀 실행되지 않았습니다."]
    for text in new:
        assert english_words(text) == [], (text, english_words(text))


# ---------------------------------------------------------------------------------------------- the commands


@pytest.fixture(scope="module")
def course():
    """Per lab: ref/, skel/ and bug/ folders (a buggy file from the examples), and submissions/ for the batch."""
    folder = Path(tempfile.mkdtemp(prefix="grade-korean-"))
    from assignments.attention.hidden import bugs  # the learner bug table: the reference plus one change each
    for lab in LABS:
        buggy = ROOT / "examples" / ("submissions/bo_partly_wrong.py" if lab == "attention" else f"{lab}/partly_wrong.py")
        for kind, src in (("ref", ROOT / "reference" / f"{lab}.py"), ("skel", ROOT / "student_template" / f"{lab}.py"),
                          ("bug", buggy)):
            (folder / lab / kind).mkdir(parents=True)
            shutil.copy(src, folder / lab / kind / f"{lab}.py")
    subs = folder / "submissions"
    subs.mkdir()
    for v in bugs.VARIANTS:
        (subs / f"{v.name}.py").write_text(v.source(), encoding="utf-8")
    for p in (ROOT / "examples" / "submissions").iterdir():
        shutil.copy(p, subs / p.name)
    yield folder
    shutil.rmtree(folder, ignore_errors=True)


@pytest.mark.parametrize("lab", LABS)
def test_grade_check_in_korean_has_no_english_prose(course, lab):
    for kind in ("ref", "skel", "bug"):
        p = grade("check", "--lang", "ko", cwd=course / lab / kind)
        assert p.returncode in (0, 1) and "Traceback" not in p.stderr, p.stderr[-3000:]
        assert english_words(p.stdout) == [], (lab, kind, english_words(p.stdout), p.stdout)
        if kind != "ref":
            assert "[실패]" in p.stdout and "[FAIL]" not in p.stdout, p.stdout


def test_check_table_names_questions_by_their_korean_titles(course):
    p = grade("check", "--lang", "ko", cwd=course / "attention" / "bug")
    assert "\nsteps " not in p.stdout and "단계별 연습 (3.3, 3.4.1, 3.5.1 - 3.5.2)" in p.stdout, p.stdout
    assert re.search(r"^ *0/5  0점   3\.4\.2 SelfAttention_v2$", p.stdout, re.M), p.stdout
    assert "[실패] 3.5.3 CausalAttention: " in p.stdout, p.stdout
    en = grade("check", cwd=course / "attention" / "bug")
    assert re.search(r"^SelfAttention_v2 +0/5  --$", en.stdout, re.M), en.stdout  # English unchanged


@pytest.fixture(scope="module")
def korean_batch(course):
    return grade("batch", "submissions", "--lang", "ko", "--assignment", "attention", cwd=course)


def test_batch_results_in_korean_have_no_english_prose(course, korean_batch):
    p = korean_batch
    assert p.returncode == 0, p.stderr[-3000:]
    seen = 0
    for path in sorted((course / "results").glob("*.json")):
        data = json.loads(path.read_text(encoding="utf-8"))
        texts = [data["output"]] + [f"{t['name']}\n{t['output']}" for t in data["tests"] if t["visibility"] != "hidden"]
        for text in texts:
            assert english_words(text) == [], (path.name, english_words(text), text)
            seen += 1
    assert seen > 1000  # every visible test of every submission was read


def test_batch_terminal_output_in_korean_has_no_english_prose(course, korean_batch):
    """The instructor's side of `grade batch --lang ko`: the summary table, the closing lines and the progress
    lines, with the questions named by their Korean titles and the columns aligned for wide characters."""
    p = korean_batch
    assert english_words(p.stdout) == [], (english_words(p.stdout), p.stdout)
    assert english_words(p.stderr) == [], (english_words(p.stderr), p.stderr[-3000:])
    head = p.stdout.splitlines()[0]
    assert head.startswith("학생") and "총점" in head and "3.4.2 SelfAttention_v2" in head, head
    from autograder.results import columns as _width  # terminal columns: a Hangul syllable takes two
    col = _width(head[:head.index("총점")])
    rows = [line for line in p.stdout.splitlines()[1:] if "/100" in line]
    assert len(rows) > 50, p.stdout
    for r in rows:  # every total starts in the column where the heading's "총점" starts
        assert _width(r[:r.index(r.split()[1], len(r.split()[0]))]) == col, (head, r)
    assert "채점 " in p.stdout and "재사용" in p.stdout and "남은 시간" in p.stderr
    again = grade("batch", "submissions", "--lang", "ko", "--assignment", "attention", cwd=course)  # all reused
    assert again.returncode == 0 and "재사용" in again.stderr and "--force" in again.stderr, again.stderr[-3000:]
    assert english_words(again.stderr) == [] and english_words(again.stdout) == [], (again.stderr, again.stdout)


def test_report_in_korean_has_korean_headings(course, korean_batch):
    """The class page of `grade report --lang ko` reads in Korean (the figures' axis labels stay English)."""
    p = grade("report", "results", "--lang", "ko", "-o", "report_ko", cwd=course)
    assert p.returncode == 0, p.stderr[-2000:]
    page = (course / "report_ko" / "index.html").read_text(encoding="utf-8")
    for heading in ("문항", "채점하지 못한 제출물", "비슷한 제출물", "검사", "문항별 실패 이유", "학생"):
        assert f"<h2>{heading}</h2>" in page, heading
    visible = re.sub(r"<head>.*?</head>|<svg.*?</svg>|<img[^>]*>|<pre>.*?</pre>|<[^>]+>", " ", page, flags=re.S)
    visible = re.sub(r"&\w+;", " ", visible)
    assert english_words(visible) == [], english_words(visible)
    en = grade("report", "results", "-o", "report_en", cwd=course)
    assert "<h2>Questions</h2>" in (course / "report_en" / "index.html").read_text(encoding="utf-8"), en.stderr


def test_release_readme_in_korean_has_no_english_prose(course):
    p = grade("release", "--lang", "ko", "-o", "bundle", cwd=course)
    assert p.returncode == 0, p.stderr
    text = (course / "bundle" / "README.md").read_text(encoding="utf-8")
    prose = re.sub(r"```.*?```|<br>", " ", text, flags=re.S)  # the commands block: commands and their comments
    assert english_words(prose) == [], english_words(prose)
    assert "| Windows (PowerShell) |" in text and "샌드박스 없이 실행" in text


# ---------------------------------------------------------------------------------------------- units


def test_skip_reasons_and_skeleton_messages_are_split_by_language():
    m = bilingual("softmax_naive: see notebook section 3.3.1 / 노트북 3.3.1 참고")
    assert m.en == "softmax_naive: see notebook section 3.3.1" and m.ko == "노트북 3.3.1 참고"
    assert bilingual("a / b").ko == "a / b"  # only English / Korean is split


def test_table_tags_and_marks_are_korean():
    r = SubmissionResult("s", "attention.py", "attention", questions=["q"], checks=[
        CheckResult("c", "n1", "q", 1.0, 0.0, "failed", True, "visible"),
        CheckResult("d", "n2", "q", 1.0, 0.0, "skipped", True, "visible")])
    ko = table(r, "ko", labels={"q": "문항 하나"})
    assert "[실패] 문항 하나: c (0/1)" in ko and "[건너뜀]" in ko and "0점" in ko, ko
    assert "FAIL" not in ko and "SKIP" not in ko and "--" not in ko


def test_exam_check_in_korean_has_no_english_prose(tmp_path):
    """The midterm's `grade check` (runs mode: loads, builds, shape, no values) in Korean, on the reference and on
    the paper as handed out."""
    for kind, src in (("ref", ROOT / "reference" / "midterm.py"), ("skel", ROOT / "student_template" / "midterm.py")):
        folder = tmp_path / kind
        folder.mkdir()
        shutil.copy(src, folder / "midterm.py")
        p = grade("check", "--lang", "ko", "midterm.py", cwd=folder)
        assert p.returncode in (0, 1) and "Traceback" not in p.stderr, p.stderr[-3000:]
        assert "시험 모드" in p.stdout and english_words(p.stdout) == [], (kind, english_words(p.stdout), p.stdout)
