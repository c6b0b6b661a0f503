"""Exams (issue 11): papers, per-student grading, windows, exam-mode grade check, Gradescope, audit.

Every command is driven through the installed `grade` from a temporary folder outside the repository. The
secret was chosen so that ada's and bo's variants differ in every key the checks depend on (asserted).
"""
from __future__ import annotations

import ast
import csv
import datetime as dt
import json
import os
import re
import subprocess
from pathlib import Path

import pytest

from autograder import assignment, exam
from autograder.results import SubmissionResult

ROOT = Path(__file__).resolve().parent.parent
GRADE = str(Path(os.environ.get("VIRTUAL_ENV", ROOT / ".venv")) / "bin" / "grade")
SECRET = "test-secret-005-0123456789abcdef"
ROSTER = "id,extra_minutes\nada,0\nbo,0\nchen@uni.example,30\ndana,\n"
END = dt.datetime.fromisoformat("2026-11-20T11:30:00+09:00")  # [exam] end of assignments/midterm


def grade(*args: str, cwd: Path, env: dict | None = None) -> subprocess.CompletedProcess:
    return subprocess.run([GRADE, *args], cwd=cwd, capture_output=True, text=True, timeout=900,
                          env={**os.environ, **(env or {})})


def solved(student: str, variant: dict) -> str:
    """The reference with the student's constants: a correct answer to that student's paper."""
    return exam.render((ROOT / "reference" / "midterm.py").read_text(encoding="utf-8"), variant, student)


def renamed(code: str) -> str:
    """A copy disguised by renaming, recommenting and reformatting."""
    for old, new in (("scores", "logits"), ("weights", "probs"), ("context", "merged"), ("split", "to_heads"),
                     ("window", "width"), ("attention", "att")):
        code = re.sub(rf"\b{old}\b", new, code)
    code = re.sub(r"  # .*", "", code)
    return code.replace("\n\n\n", "\n\n# my own work\n\n")


def write_export(subs: Path, files: dict[str, tuple]) -> None:
    """A Gradescope-export-like folder: per submission folder (email or tuple of emails, midterm.py's code, time),
    and the submission_metadata.yml that names them."""
    meta = []
    for folder, (emails, code, when) in files.items():
        (subs / folder).mkdir(parents=True)
        (subs / folder / "midterm.py").write_text(code, encoding="utf-8")
        people = "".join(f"  - :name: x\n    :sid: '1'\n    :email: \"{e}\"\n"
                         for e in ((emails,) if isinstance(emails, str) else emails))
        meta.append(f"{folder}:\n  :submitters:\n{people}"
                    f"  :created_at: {when.strftime('%Y-%m-%d %H:%M:%S.123456000 %z')}\n")
    (subs / "submission_metadata.yml").write_text("".join(meta), encoding="utf-8")


def graded_export(work: Path, folder: str, roster: str) -> dict[str, SubmissionResult]:
    """`grade batch FOLDER --assignment midterm --roster ROSTER` in `work`, and its results by id."""
    p = grade("batch", folder, "--assignment", "midterm", "--roster", roster, "--secret-file", "exam.secret",
              "--out", f"{folder}_results", cwd=work)
    assert p.returncode == 0, p.stderr
    return {f.stem: SubmissionResult.from_dict(json.loads(f.read_text())["extra_data"]["internal"])
            for f in (work / f"{folder}_results").glob("*.json")}


@pytest.fixture(scope="module")
def work(tmp_path_factory) -> Path:
    w = tmp_path_factory.mktemp("exam")
    (w / "exam.secret").write_text(SECRET + "\n")
    (w / "roster.csv").write_text(ROSTER)
    return w


@pytest.fixture(scope="module")
def variants() -> dict[str, dict]:
    a = assignment.load("midterm")
    c = exam.require(a)
    return {s: exam.variant_for(SECRET.encode(), "midterm", s, c.variants) for s in ("ada", "bo", "chen", "dana")}


@pytest.fixture(scope="module")
def papers(work) -> Path:
    p = grade("exam", "papers", "midterm", "--roster", "roster.csv", "-o", "papers", "--secret-file", "exam.secret",
              cwd=work)
    assert p.returncode == 0, p.stderr
    return work / "papers"


@pytest.fixture(scope="module")
def graded(work, papers, variants) -> dict:
    """One Gradescope-export-like batch: ada answers her paper on time; bo submits ada's answer renamed;
    chen and dana submit their untouched papers, chen 40 minutes after the end (30 extra); frank is not listed."""
    subs = work / "export"
    files = {"submission_1": ("ada@uni.example", solved("ada", variants["ada"]), END - dt.timedelta(minutes=5)),
             "submission_2": ("bo@uni.example", renamed(solved("ada", variants["ada"])), END - dt.timedelta(minutes=1)),
             "submission_3": ("chen@uni.example", (papers / "chen" / "midterm.py").read_text(),
                              END + dt.timedelta(minutes=39, seconds=30)),
             "submission_4": ("dana@uni.example", (papers / "dana" / "midterm.py").read_text(),
                              END - dt.timedelta(minutes=1)),
             "submission_5": ("frank@uni.example", solved("ada", variants["ada"]), END - dt.timedelta(minutes=1))}
    write_export(subs, files)
    p = grade("batch", "export", "--assignment", "midterm", "--roster", "roster.csv", "--secret-file",
              "exam.secret", "--out", "results", cwd=work)
    assert p.returncode == 0, p.stderr
    out = work / "results"
    results = {f.stem: SubmissionResult.from_dict(json.loads(f.read_text())["extra_data"]["internal"])
               for f in out.glob("*.json")}
    return {"results": results, "out": out, "csv": list(csv.DictReader((out / "scores.csv").open()))}


def passed(r: SubmissionResult) -> dict[str, bool]:
    return {c.nodeid.rsplit("::", 1)[-1]: c.status == "passed" for c in r.checks}


# ---------------------------------------------------------------------------------------------- papers

def test_papers_are_deterministic_and_personal(work, papers, variants):
    """Are papers a pure function of (secret, exam, id), different across students and across secrets?"""
    again = grade("exam", "papers", "midterm", "--roster", "roster.csv", "-o", "again", "--secret-file",
                  "exam.secret", cwd=work)
    assert again.returncode == 0, again.stderr
    for s in ("ada", "bo", "chen", "dana"):
        for name in ("midterm.py", "midterm.ipynb"):
            assert (papers / s / name).read_bytes() == (work / "again" / s / name).read_bytes()
    assert (papers / "manifest.csv").read_bytes() == (work / "again" / "manifest.csv").read_bytes()
    rows = {r["id"]: r for r in csv.DictReader((papers / "manifest.csv").open())}
    assert sorted(rows) == ["ada", "bo", "chen", "dana"] and rows["chen"]["extra_minutes"] == "30"
    assert len({r["fingerprint"] for r in rows.values()}) == 4
    assert json.loads(rows["bo"]["num_heads"]) == variants["bo"]["num_heads"]
    assert f"NUM_HEADS = {variants['bo']['num_heads']}\n" in (papers / "bo" / "midterm.py").read_text()
    nb = json.loads((papers / "bo" / "midterm.ipynb").read_text())
    assert any(f"NORM_FIRST = {variants['bo']['norm_first']}" in "".join(c["source"]) for c in nb["cells"])
    # another secret gives other papers
    (work / "other.secret").write_text("another-secret-0123456789abcdef")
    other = grade("exam", "papers", "midterm", "--roster", "roster.csv", "-o", "other", "--secret-file",
                  "other.secret", cwd=work)
    assert other.returncode == 0
    assert sum((papers / s / "midterm.py").read_bytes() != (work / "other" / s / "midterm.py").read_bytes()
               for s in rows) >= 3


def test_papers_refuse_without_a_secret(work, papers):
    """Without --secret-file or GRADE_EXAM_SECRET, does the command refuse and say how to make a secret?"""
    env = {k: v for k, v in os.environ.items() if k != exam.SECRET_ENV}
    p = subprocess.run([GRADE, "exam", "papers", "midterm", "--roster", "roster.csv", "-o", "nosecret"], cwd=work,
                       capture_output=True, text=True, env=env)
    assert p.returncode == 2 and "secrets.token_hex" in p.stderr and not (work / "nosecret").exists()
    p = grade("exam", "papers", "midterm", "--roster", "roster.csv", "-o", "envsecret", cwd=work,
              env={exam.SECRET_ENV: SECRET})
    assert p.returncode == 0
    assert (work / "envsecret" / "ada" / "midterm.py").read_bytes() == \
        (work / "papers" / "ada" / "midterm.py").read_bytes()


def test_the_published_demo_secret_is_refused_for_a_real_exam(work, papers):
    """The demo's secret is in the repository, so every variant made with it is public: `grade exam papers`, `grade
    batch --roster` and the Gradescope zip refuse it (exit 2, nothing written) unless GRADE_DEMO_SECRET_OK=1, which
    only `make demo` sets."""
    demo = ROOT / "examples" / "exam" / "demo-only.secret"
    env = {k: v for k, v in os.environ.items() if k not in (exam.SECRET_ENV, exam.DEMO_OK_ENV)}
    runs = {"papers": ["exam", "papers", "midterm", "--roster", "roster.csv", "-o", "demo_papers"],
            "batch": ["batch", "papers", "--assignment", "midterm", "--roster", "roster.csv", "--out", "demo_results"],
            "gradescope": ["gradescope", "--assignment", "midterm", "--roster", "roster.csv", "-o", "demo.zip"]}
    for what, args in runs.items():
        p = subprocess.run([GRADE, *args, "--secret-file", str(demo)], cwd=work, capture_output=True, text=True,
                           env=env, timeout=600)
        assert p.returncode == 2, (what, p.stdout, p.stderr)
        assert "demo-only.secret" in p.stderr and "secrets.token_hex" in p.stderr, (what, p.stderr)
    assert not (work / "demo_papers").exists() and not (work / "demo_results").exists() \
        and not (work / "demo.zip").exists()
    # as `make demo` runs it
    p = subprocess.run([GRADE, *runs["papers"], "--secret-file", str(demo)], cwd=work, capture_output=True,
                       text=True, env={**env, exam.DEMO_OK_ENV: "1"}, timeout=600)
    assert p.returncode == 0, p.stderr
    assert (work / "demo_papers" / "ada" / "midterm.py").exists()


def test_a_demo_zip_built_with_the_consent_grades_on_gradescope(tmp_path, monkeypatch):
    """Red team, round 22: `grade gradescope` with the demo's secret and GRADE_DEMO_SECRET_OK=1 built the zip, and on
    Gradescope, where nothing sets that variable, the zip's own secret was refused for every submission. The zip's
    secret was judged when the zip was built; the same refusal still stands for a real exam's commands (above)."""
    private = tmp_path / exam.PRIVATE_DIR
    private.mkdir()
    (private / "roster.csv").write_bytes((ROOT / "examples" / "exam" / "roster.csv").read_bytes())
    (private / "secret").write_bytes((ROOT / "examples" / "exam" / "demo-only.secret").read_bytes())
    monkeypatch.setattr(exam, "PROJECT_ROOT", tmp_path)
    monkeypatch.delenv(exam.DEMO_OK_ENV, raising=False)
    p = exam.gradescope_plan(assignment.load("midterm"), {})
    assert p is not None and p.secret.startswith(exam.DEMO_SECRET_MARK)
    with pytest.raises(exam.ExamError, match="demo-only.secret"):
        exam.read_secret(private / "secret")


# ---------------------------------------------------------------------------------------------- batch

def test_each_student_is_graded_against_their_own_variant(graded, variants):
    """Does a correct answer get 100, and the same answer under another student's id lose exactly the
    points that depend on the variant?"""
    va, vb = variants["ada"], variants["bo"]
    assert all(va[k] != vb[k] for k in ("num_heads", "qkv_bias", "mask_window", "norm_first", "ff_mult"))
    r = graded["results"]
    assert r["ada"].score == 100 and r["ada"].exam["variant"] == va
    bo = passed(r["bo"])
    assert r["bo"].exam["variant"] == vb
    for name in ("test_mha_uses_constants", "test_mha_values_full_context", "test_mha_values_other_width",
                 "test_window_mask", "test_block_values", "test_block_values_other_size"):
        assert not bo[name], name
    for name in ("test_sdpa_values", "test_sdpa_values_masked", "test_mha_shapes", "test_block_shapes"):
        assert bo[name], name  # what does not depend on the variant still counts
    assert r["bo"].score == 26
    assert r["dana"].score == 0 and r["chen"].score == 0


def test_window_mask_earns_nothing_by_replaying_a_mask_the_grader_sent(work, papers, variants):
    """Red team: ada's correct answer, except that SDPA keeps every mask it is given and window_mask(T) ignores
    MASK_WINDOW and rebuilds the band of the kept mask. The masked SDPA check used to send the paper's own window mask, so the
    replay earned test_window_mask's 10 points; a mask sent to the worker now says nothing about the paper."""
    code = solved("ada", variants["ada"])
    keep = "        if mask is not None:\n            scores = scores.masked_fill"
    assert code.count(keep) == 1 and code.count("def window_mask(T, window=None):") == 1
    code = code.replace(keep, "        if mask is not None:\n            _SEEN[mask.shape[-1]] = (mask != 0).long()\n"
                                "            scores = scores.masked_fill")
    code = code.replace("def window_mask(T, window=None):",
                        "_SEEN = {}\n\n\ndef window_mask(T, window=None):\n"
                        "    kept = next(iter(_SEEN.values()), torch.ones(1, 1))\n"
                        "    w = int(kept[-1].sum())  # the band's width, read off the last row\n"
                        "    i, j = torch.arange(T).unsqueeze(1), torch.arange(T).unsqueeze(0)\n"
                        "    return ((j <= i) & (i - j < w)).long()\n\n\ndef _unused(T, window=None):")
    subs = work / "replay"
    subs.mkdir()
    (subs / "ada.py").write_text(code, encoding="utf-8")
    p = grade("batch", "replay", "--assignment", "midterm", "--roster", "roster.csv", "--secret-file",
              "exam.secret", "--out", "replay_results", cwd=work)
    assert p.returncode == 0, p.stderr
    r = SubmissionResult.from_dict(json.loads((work / "replay_results" / "ada.json").read_text())["extra_data"]["internal"])
    ok = passed(r)
    assert ok["test_sdpa_values"] and ok["test_sdpa_values_masked"], ok  # its SDPA is right
    assert not ok["test_window_mask"], ok


def test_not_on_roster_gets_a_clear_error(graded):
    frank = graded["results"]["frank"]
    assert frank.error is not None and "roster" in frank.error.en and "명단" in frank.error.ko
    assert frank.score == 0


def test_late_submission_with_extra_time(graded):
    """Is chen (end + 30 extra minutes, submitted at end + 39.5 min) 10 minutes late, and the others not?"""
    r = graded["results"]
    assert r["chen"].exam["late"] == 10 and r["chen"].exam["extra_minutes"] == 30
    assert r["ada"].exam["late"] == 0 and r["dana"].exam["late"] == 0
    rows = {row["student"]: row for row in graded["csv"]}
    assert rows["chen"]["late"] == "10" and rows["ada"]["late"] == "0"
    data = json.loads((graded["out"] / "chen.json").read_text())
    assert data["extra_data"]["late"] == 10


def test_window_arithmetic_and_policies():
    assert exam.minutes_late(END + dt.timedelta(minutes=30), END, 30) == 0
    assert exam.minutes_late(END + dt.timedelta(minutes=30, seconds=1), END, 30) == 1
    assert exam.minutes_late(END - dt.timedelta(hours=1), END, 0) == 0
    t = exam.parse_time("2026-11-20 02:45:12.519522000 +0000")
    assert t == dt.datetime(2026, 11, 20, 2, 45, 12, 519522, tzinfo=dt.timezone.utc)
    assert exam.parse_time("2026-11-20T11:30:00") is None  # no zone: refused, never guessed
    assert exam.penalty("flag", 1.0, 10, 80) == 0
    assert exam.penalty("zero", 1.0, 10, 80) == 80 and exam.penalty("zero", 1.0, 0, 80) == 0
    assert exam.penalty("per_minute", 2.0, 10, 80) == 20 and exam.penalty("per_minute", 2.0, 50, 80) == 80
    r = SubmissionResult("x", "x.py", "midterm", exam={"late": 10, "penalty": 20})
    assert r.score == 0 and r.late == 10


def test_scores_csv_has_both_the_reason_and_the_late_column():
    """The exam's `late` column and the reason for a zero live side by side in scores.csv (two merged features:
    one must not replace the other)."""
    from autograder.messages import Message
    from autograder.results import csv_text
    zero = SubmissionResult("bo", "bo.py", "midterm", exam={"late": 12.5},
                            reason=Message("Syntax error in bo.py, line 3.\nmore", "문법 오류"))
    ok = SubmissionResult("ada", "ada.py", "midterm", exam={"late": 0})
    rows = {r["student"]: r for r in csv.DictReader(csv_text([zero, ok], []).splitlines())}
    assert rows["bo"]["reason"] == "Syntax error in bo.py, line 3." and rows["bo"]["late"] == "12.5"
    assert rows["ada"]["reason"] == "" and rows["ada"]["late"] == "0"


def test_reference_and_skeleton_without_roster(tmp_path):
    """Without a roster: the default variant; the reference gets 100, the untouched notebook 0, and a mask
    sized by a hard-coded 12 instead of CONTEXT_LENGTH costs the one check that grades the mask."""
    subs = tmp_path / "subs"
    subs.mkdir()
    reference = (ROOT / "reference" / "midterm.py").read_text(encoding="utf-8")
    (subs / "ref.py").write_text(reference, encoding="utf-8")
    (subs / "skel.ipynb").write_bytes((ROOT / "student_template" / "midterm.ipynb").read_bytes())
    bug = reference.replace("torch.ones(context_length, context_length)", "torch.ones(12, 12)")
    assert bug != reference
    (subs / "bug_context.py").write_text(bug, encoding="utf-8")
    # nn.Dropout(DROP_RATE) built as the paper says and never applied: every check ran in eval mode, 100/100
    unused = reference.replace("weights = self.dropout(torch.softmax(scores / self.head_dim ** 0.5, dim=-1))",
                               "weights = torch.softmax(scores / self.head_dim ** 0.5, dim=-1)")
    assert unused != reference
    (subs / "bug_dropout_unused.py").write_text(unused, encoding="utf-8")
    # a forward that never runs is charged by the value checks, not again by the dropout's (9 of 35 as before)
    raises = reference.replace("        b, n, _ = x.shape\n", "        raise RuntimeError('unfinished')\n", 1)
    assert raises != reference
    (subs / "bug_forward_raises.py").write_text(raises, encoding="utf-8")
    (subs / "alt.py").write_bytes((ROOT / "tests" / "exam_corpus" / "alt_correct.py").read_bytes())
    p = grade("batch", "subs", "--assignment", "midterm", "--out", "res", cwd=tmp_path)
    assert p.returncode == 0 and "default variant" in p.stderr
    rows = {row["student"]: row for row in csv.DictReader((tmp_path / "res" / "scores.csv").open())}
    assert float(rows["ref"]["score"]) == 100 and float(rows["skel"]["score"]) == 0
    assert float(rows["bug_context"]["score"]) == 92 and float(rows["bug_context"]["MultiHeadAttention"]) == 27
    assert float(rows["alt"]["score"]) == 100  # written another way: still full marks
    assert float(rows["bug_dropout_unused"]["score"]) == 92 and float(rows["bug_dropout_unused"]["MultiHeadAttention"]) == 27
    r = SubmissionResult.from_dict(json.loads((tmp_path / "res" / "bug_dropout_unused.json").read_text())
                                   ["extra_data"]["internal"])
    lost = [c.message for c in r.checks if c.status != "passed"]
    assert len(lost) == 1 and "never applies it" in lost[0].en and "적용하지 않습니다" in lost[0].ko, lost
    assert float(rows["bug_forward_raises"]["MultiHeadAttention"]) == 9


def test_mha_dropout_must_act_on_the_attention_weights_not_just_change_train_mode(tmp_path):
    """Red team s18: the constants check asked only that train mode differ from eval mode; a forward that scaled its
    output by 1.001 while self.training (nn.Dropout(DROP_RATE) built, never applied) got 100 where the honest one
    without dropout gets 92, and dropout on the output instead of the weights got 100 too. Both now lose the same
    8 points; correct forwards that draw the weights' dropout otherwise (a loop over heads, PyTorch's
    scaled_dot_product_attention with dropout_p, F.dropout) keep 100."""
    reference = (ROOT / "reference" / "midterm.py").read_text(encoding="utf-8")
    body = """        scores = q @ k.transpose(2, 3)  # (b, h, n, n)
        scores = scores.masked_fill(self.mask.bool()[:n, :n], -torch.inf)
        weights = self.dropout(torch.softmax(scores / self.head_dim ** 0.5, dim=-1))
        context = (weights @ v).transpose(1, 2).reshape(b, n, self.d_out)  # heads side by side again
        return self.out_proj(context)
"""
    assert body in reference
    plain = body.replace("self.dropout(torch.softmax(scores / self.head_dim ** 0.5, dim=-1))",
                         "torch.softmax(scores / self.head_dim ** 0.5, dim=-1)")
    subs = tmp_path / "subs"
    subs.mkdir()
    answers = {
        "fake": plain.replace("return self.out_proj(context)",
                              "out = self.out_proj(context)\n        return out * 1.001 if self.training else out"),
        "on_output": plain.replace("return self.out_proj(context)", "return self.dropout(self.out_proj(context))"),
        "ok_loop": """        heads = []
        for i in range(self.num_heads):
            s = q[:, i] @ k[:, i].transpose(1, 2) / self.head_dim ** 0.5
            s = s.masked_fill(self.mask[:n, :n] == 1, -1e9)
            heads.append(self.dropout(torch.softmax(s, dim=-1)) @ v[:, i])
        return self.out_proj(torch.cat(heads, dim=-1))
""",
        "ok_sdpa": """        context = F.scaled_dot_product_attention(q, k, v, attn_mask=~self.mask.bool()[:n, :n],
                                                 dropout_p=self.dropout.p if self.training else 0.0)
        return self.out_proj(context.transpose(1, 2).reshape(b, n, self.d_out))
""",
    }
    # and a forward wrong in eval mode (no mask: the first token sees the others) is the value checks' to charge, not
    # told by this check that its dropout is misplaced
    answers["no_mask"] = body.replace("        scores = scores.masked_fill(self.mask.bool()[:n, :n], -torch.inf)\n", "")
    for name, forward in answers.items():
        (subs / f"{name}.py").write_text(reference.replace(body, forward), encoding="utf-8")
    p = grade("batch", "subs", "--assignment", "midterm", "--out", "res", cwd=tmp_path)
    assert p.returncode == 0, p.stderr
    rows = {row["student"]: row for row in csv.DictReader((tmp_path / "res" / "scores.csv").open())}
    for name in ("ok_loop", "ok_sdpa"):
        assert float(rows[name]["score"]) == 100, (name, rows[name])
    for name in ("fake", "on_output"):
        assert float(rows[name]["score"]) == 92 and float(rows[name]["MultiHeadAttention"]) == 27, (name, rows[name])
        r = SubmissionResult.from_dict(json.loads((tmp_path / "res" / f"{name}.json").read_text())
                                       ["extra_data"]["internal"])
        lost = [c.message for c in r.checks if c.status != "passed"]
        assert len(lost) == 1 and "not on the attention weights" in lost[0].en and "가중치에 적용되지" in lost[0].ko
    r = SubmissionResult.from_dict(json.loads((tmp_path / "res" / "no_mask.json").read_text())["extra_data"]
                                   ["internal"])
    lost = {c.nodeid.rsplit("::", 1)[-1] for c in r.checks if c.status != "passed"}
    assert "test_mha_uses_constants" not in lost and lost, lost


def test_a_block_whose_dropout_modules_forward_never_applies_loses_the_drop_rate_check(tmp_path):
    """Red team s18: Q3's DROP_RATE check read only the p of the block's nn.Dropout modules; built as the paper says
    and never applied in forward it earned the check's 2 points (100/100), which the honest block without them
    loses (98). Now both lose them, told that forward never applies them."""
    reference = (ROOT / "reference" / "midterm.py").read_text(encoding="utf-8")
    used = """    def _sa(self, x):
        return self.dropout1(self.self_attn(x, x, x, need_weights=False)[0])

    def _ff(self, x):
        return self.dropout2(self.linear2(self.dropout(F.relu(self.linear1(x)))))
"""
    assert used in reference
    unused = reference.replace(used, """    def _sa(self, x):
        return self.self_attn(x, x, x, need_weights=False)[0]

    def _ff(self, x):
        return self.linear2(F.relu(self.linear1(x)))
""")
    subs = tmp_path / "subs"
    subs.mkdir()
    (subs / "unused.py").write_text(unused, encoding="utf-8")
    p = grade("batch", "subs", "--assignment", "midterm", "--out", "res", cwd=tmp_path)
    assert p.returncode == 0, p.stderr
    r = SubmissionResult.from_dict(json.loads((tmp_path / "res" / "unused.json").read_text())["extra_data"]["internal"])
    lost = {c.nodeid.rsplit("::", 1)[-1]: c.message for c in r.checks if c.status != "passed"}
    assert set(lost) == {"test_block_uses_drop_rate"} and r.score == 98, lost
    msg = lost["test_block_uses_drop_rate"]
    assert "never applies them" in msg.en and "적용하지 않습니다" in msg.ko, msg.en


# Q3 handed to PyTorch (red team, round 17): the block subclasses nn.TransformerEncoderLayer, the layer the hidden
# checks compare it with, and earned all 35 points with a one-line __init__; or it borrows the layer's methods.
_BLOCK = "class TransformerBlock(nn.Module):"
LIBRARY_BLOCKS = {
    "subclass": """class TransformerBlock(nn.TransformerEncoderLayer):
    def __init__(self, d_model, n_heads):
        super().__init__(d_model, n_heads, FF_MULT * d_model, DROP_RATE, batch_first=True, norm_first=NORM_FIRST)
""",
    "borrowed": """class TransformerBlock(nn.Module):
    def __init__(self, d_model, n_heads):
        super().__init__()
        layer = nn.TransformerEncoderLayer(d_model, n_heads, FF_MULT * d_model, DROP_RATE, batch_first=True,
                                           norm_first=NORM_FIRST)
        for k, v in vars(layer).items():
            if k != "training":
                self.__dict__[k] = v
    forward = nn.TransformerEncoderLayer.forward
    _sa_block = nn.TransformerEncoderLayer._sa_block
    _ff_block = nn.TransformerEncoderLayer._ff_block
""",
    # (red team, round 18) the layer's code copied, not borrowed: its code objects rebuilt at other line numbers,
    # or the text of its forward compiled again as the student's own (as pasting it into the class does)
    "cloned": """import types as _types


def _clone(f):
    code = f.__code__.replace(co_firstlineno=f.__code__.co_firstlineno + 1000)
    return _types.FunctionType(code, f.__globals__, f.__name__, f.__defaults__, f.__closure__)


class TransformerBlock(nn.TransformerEncoderLayer):
    def __init__(self, d_model, n_heads):
        super().__init__(d_model, n_heads, FF_MULT * d_model, DROP_RATE, batch_first=True, norm_first=NORM_FIRST)
    forward = _clone(nn.TransformerEncoderLayer.forward)
    _sa_block = _clone(nn.TransformerEncoderLayer._sa_block)
    _ff_block = _clone(nn.TransformerEncoderLayer._ff_block)
""",
    "pasted": """import inspect as _inspect
import textwrap as _textwrap

_pasted: dict = {}
for _f in (nn.TransformerEncoderLayer.forward, nn.TransformerEncoderLayer._sa_block,
           nn.TransformerEncoderLayer._ff_block):
    exec(compile(_textwrap.dedent(_inspect.getsource(_f)), "pasted", "exec"), dict(vars(nn.modules.transformer)),
         _pasted)


class TransformerBlock(nn.TransformerEncoderLayer):
    def __init__(self, d_model, n_heads):
        super().__init__(d_model, n_heads, FF_MULT * d_model, DROP_RATE, batch_first=True, norm_first=NORM_FIRST)
    forward, _sa_block, _ff_block = _pasted["forward"], _pasted["_sa_block"], _pasted["_ff_block"]
""",
    # (red team, round 18) the layer's fused kernel called with the block's own parts, the torch function modes off
    "kernel": """class TransformerBlock(nn.Module):
    def __init__(self, d_model, n_heads):
        super().__init__()
        self.self_attn = nn.MultiheadAttention(d_model, n_heads, dropout=DROP_RATE, batch_first=True)
        self.linear1 = nn.Linear(d_model, FF_MULT * d_model)
        self.linear2 = nn.Linear(FF_MULT * d_model, d_model)
        self.norm1, self.norm2 = nn.LayerNorm(d_model), nn.LayerNorm(d_model)
        self.dropout = nn.Dropout(DROP_RATE)

    def forward(self, x):
        a = self.self_attn
        with torch.no_grad(), torch._C.DisableTorchFunction():
            return torch.ops.aten._transformer_encoder_layer_fwd.default(
                x, a.embed_dim, a.num_heads, a.in_proj_weight, a.in_proj_bias, a.out_proj.weight, a.out_proj.bias,
                False, NORM_FIRST, self.norm1.eps, self.norm1.weight, self.norm1.bias, self.norm2.weight,
                self.norm2.bias, self.linear1.weight, self.linear1.bias, self.linear2.weight, self.linear2.bias,
                None, None)
""",
    # (red team, round 21) the layer run in a thread, where the profile function that watches for its code is not
    # set: started in forward and joined, or a thread of a pool started at import (100/100 before)
    "thread": """import threading


class TransformerBlock(nn.TransformerEncoderLayer):
    def __init__(self, d_model, n_heads):
        super().__init__(d_model, n_heads, FF_MULT * d_model, DROP_RATE, batch_first=True, norm_first=NORM_FIRST)

    def forward(self, x):
        box = []
        t = threading.Thread(target=lambda: box.append(nn.TransformerEncoderLayer.forward(self, x)))
        t.start()
        t.join()
        return box[0]
""",
    "pool": """from concurrent.futures import ThreadPoolExecutor

POOL = ThreadPoolExecutor(1)
POOL.submit(int).result()


class TransformerBlock(nn.TransformerEncoderLayer):
    def __init__(self, d_model, n_heads):
        super().__init__(d_model, n_heads, FF_MULT * d_model, DROP_RATE, batch_first=True, norm_first=NORM_FIRST)

    def forward(self, x):
        return POOL.submit(nn.TransformerEncoderLayer.forward, self, x).result()
""",
    # (the same round) the layer run in another process: a server started at import that reads the block's weights
    # and input from a pipe, as a child of the worker, or left behind by a launcher that ended (100/100 before)
    "server": '''import io as _io
import os as _os
import subprocess as _sp
import sys as _sys

_SERVER = """
import io, sys, torch, torch.nn as nn
inp, out = sys.stdin.buffer, sys.stdout.buffer
while True:
    n = inp.readline()
    if not n:
        break
    a = torch.load(io.BytesIO(inp.read(int(n))), weights_only=False)
    layer = nn.TransformerEncoderLayer(*a["ctor"], batch_first=True, norm_first=a["nf"])
    layer.load_state_dict(a["state"])
    layer.train(a["training"])
    with torch.no_grad():
        y = layer(a["x"])
    buf = io.BytesIO()
    torch.save(y, buf)
    out.write(str(len(buf.getvalue())).encode() + b"\\\\n" + buf.getvalue())
    out.flush()
"""
_r1, _w1 = _os.pipe()
_r2, _w2 = _os.pipe()
if ORPHAN:
    _LAUNCH = ("import subprocess, sys; subprocess.Popen([sys.executable, '-c', sys.argv[1]], stdin=%d, stdout=%d, "
               "start_new_session=True)" % (_r1, _w2))
    _sp.run([_sys.executable, "-c", _LAUNCH, _SERVER], pass_fds=(_r1, _w2))
else:
    _sp.Popen([_sys.executable, "-c", _SERVER], stdin=_r1, stdout=_w2)
_os.close(_r1)
_os.close(_w2)
_TO, _FROM = _os.fdopen(_w1, "wb"), _os.fdopen(_r2, "rb")


class TransformerBlock(nn.TransformerEncoderLayer):
    def __init__(self, d_model, n_heads):
        super().__init__(d_model, n_heads, FF_MULT * d_model, DROP_RATE, batch_first=True, norm_first=NORM_FIRST)
        self._ctor = (d_model, n_heads, FF_MULT * d_model, DROP_RATE)

    def forward(self, x):
        buf = _io.BytesIO()
        torch.save({"ctor": self._ctor, "nf": NORM_FIRST, "state": self.state_dict(), "training": self.training,
                    "x": x.detach()}, buf)
        _TO.write(str(len(buf.getvalue())).encode() + b"\\n" + buf.getvalue())
        _TO.flush()
        return torch.load(_io.BytesIO(_FROM.read(int(_FROM.readline()))), weights_only=False)
''',
}
# (the same round) the layer compiled by TorchScript, whose code runs out of the watch's sight: scripted, traced, or
# scripted after turning TorchScript on again in the worker (100/100 before)
_COMPILED = """class TransformerBlock(nn.Module):
    def __init__(self, d_model, n_heads):
        super().__init__()
        layer = nn.TransformerEncoderLayer(d_model, n_heads, FF_MULT * d_model, DROP_RATE, batch_first=True,
                                           norm_first=NORM_FIRST)
        self.self_attn, self.linear1, self.linear2 = layer.self_attn, layer.linear1, layer.linear2
        self.norm1, self.norm2 = layer.norm1, layer.norm2
        self.dropout, self.dropout1, self.dropout2 = layer.dropout, layer.dropout1, layer.dropout2
        object.__setattr__(self, "_run", COMPILE(layer))

    def forward(self, x):
        self._run.train(self.training)
        return self._run(x)
"""
LIBRARY_BLOCKS["script"] = "COMPILE = torch.jit.script\n\n\n" + _COMPILED
LIBRARY_BLOCKS["trace"] = ("COMPILE = lambda m: torch.jit.trace(m.eval(), torch.randn(2, 5, m.self_attn.embed_dim), "
                           "check_trace=False)\n\n\n" + _COMPILED)
LIBRARY_BLOCKS["script_on_again"] = ("import torch.jit._state\n\ntorch.jit._state.enable()\nCOMPILE = torch.jit.script"
                                     "\n\n\n" + _COMPILED)
# (red team, round 26) the layer run before the watch begins: the worker set the block's mode (its train(), the
# submission's code) before it entered the watch, and a train() that found the call's input up the stack ran the
# layer on it there; forward handed back what it got (100/100 before, every value of Q3 PyTorch's)
LIBRARY_BLOCKS["train_precomputes"] = """import sys as _sys


class TransformerBlock(nn.Module):
    def __init__(self, d_model, n_heads):
        super().__init__()
        self.n_heads = n_heads
        self.self_attn = nn.MultiheadAttention(d_model, n_heads, dropout=DROP_RATE, batch_first=True)
        self.linear1 = nn.Linear(d_model, FF_MULT * d_model)
        self.linear2 = nn.Linear(FF_MULT * d_model, d_model)
        self.norm1, self.norm2 = nn.LayerNorm(d_model), nn.LayerNorm(d_model)
        self.dropout, self.dropout1, self.dropout2 = (nn.Dropout(DROP_RATE) for _ in range(3))

    def train(self, mode=True):
        super().train(mode)
        f = _sys._getframe(1)
        while f is not None and f.f_code.co_name != "op_call":
            f = f.f_back
        x = f.f_locals["args"][0] if f is not None and f.f_locals.get("args") else None
        if isinstance(x, torch.Tensor) and x.dim() == 3 and x.shape[-1] == self.linear1.in_features:
            d = x.shape[-1]
            layer = nn.TransformerEncoderLayer(d, self.n_heads, FF_MULT * d, DROP_RATE, batch_first=True,
                                               norm_first=NORM_FIRST)
            layer.load_state_dict(self.state_dict())
            with torch.no_grad():
                self.__dict__["_ready"] = (x.clone(), layer.train(mode)(x))
        return self

    def forward(self, x):
        ready = self.__dict__.pop("_ready", None)
        if ready is not None and ready[0].shape == x.shape and torch.equal(ready[0], x):
            return ready[1].clone()
        return x * 0
"""
# (red team, round 26) the layer run in a child made with libc's fork() through ctypes, which is not among the
# process starts the watch knows: it wrote its output to a pipe and exited, and forward reaped it before returning,
# so no process of the submission's was left to be seen at the call's end (100/100 before)
LIBRARY_BLOCKS["ctypes_fork"] = """import ctypes as _ct
import io as _io
import os as _os

_LIBC = _ct.CDLL(None, use_errno=True)


class TransformerBlock(nn.TransformerEncoderLayer):
    def __init__(self, d_model, n_heads):
        super().__init__(d_model, n_heads, FF_MULT * d_model, DROP_RATE, batch_first=True, norm_first=NORM_FIRST)

    def forward(self, x):
        r, w = _os.pipe()
        pid = _LIBC.fork()
        if pid == 0:
            try:
                _os.close(r)
                with torch.no_grad():
                    y = nn.TransformerEncoderLayer.forward(self, x)
                buf = _io.BytesIO()
                torch.save(y, buf)
                data = buf.getvalue()
                while data:
                    data = data[_os.write(w, data):]
            finally:
                _os._exit(0)
        _os.close(w)
        chunks = []
        while True:
            c = _os.read(r, 1 << 16)
            if not c:
                break
            chunks.append(c)
        _os.close(r)
        _os.waitpid(pid, 0)
        return torch.load(_io.BytesIO(b"".join(chunks)))
"""
# (red team, round 26) the layer run while the worker decoded the call's input: torch.from_numpy (and frombuffer),
# rebound at import, saw every tensor of a request before the call it was for began, out of the call's watch; forward
# handed back what was computed for its own input (100/100 before)
LIBRARY_BLOCKS["decoded"] = """import weakref as _weakref

_BLOCKS = _weakref.WeakSet()
_READY = {}


def _precompute(t):
    # (each tensor the worker decodes passes here before any call of ours is watched)
    if isinstance(t, torch.Tensor) and t.dim() == 3 and t.is_floating_point():
        for b in list(_BLOCKS):
            d = b.linear1.in_features
            if t.shape[-1] == d:
                layer = nn.TransformerEncoderLayer(d, b.n_heads, FF_MULT * d, DROP_RATE, batch_first=True,
                                                   norm_first=NORM_FIRST)
                layer.load_state_dict(b.state_dict(), strict=False)
                with torch.no_grad():
                    _READY[(id(b), t.numpy().tobytes())] = layer.eval()(t.clone())
    return t


_real_from_numpy, _real_frombuffer = torch.from_numpy, torch.frombuffer
torch.from_numpy = lambda a: _precompute(_real_from_numpy(a))
torch.frombuffer = lambda *a, **k: _precompute(_real_frombuffer(*a, **k))


class TransformerBlock(nn.Module):
    def __init__(self, d_model, n_heads):
        super().__init__()
        self.self_attn = nn.MultiheadAttention(d_model, n_heads, dropout=DROP_RATE, batch_first=True)
        self.linear1 = nn.Linear(d_model, FF_MULT * d_model)
        self.linear2 = nn.Linear(FF_MULT * d_model, d_model)
        self.norm1 = nn.LayerNorm(d_model)
        self.norm2 = nn.LayerNorm(d_model)
        self.dropout = nn.Dropout(DROP_RATE)
        self.dropout1 = nn.Dropout(DROP_RATE)
        self.dropout2 = nn.Dropout(DROP_RATE)
        self.n_heads = n_heads
        _BLOCKS.add(self)

    def forward(self, x):
        got = _READY.pop((id(self), x.detach().numpy().tobytes()), None)
        if got is not None and not self.training:
            return got.clone()
        d = x.shape[-1]
        layer = nn.TransformerEncoderLayer(d, self.n_heads, FF_MULT * d, DROP_RATE, batch_first=True,
                                           norm_first=NORM_FIRST)
        layer.load_state_dict(self.state_dict(), strict=False)
        return layer.train(self.training)(x)
"""
LIBRARY_BLOCKS["orphan"] = "ORPHAN = True\n" + LIBRARY_BLOCKS["server"]
LIBRARY_BLOCKS["server"] = "ORPHAN = False\n" + LIBRARY_BLOCKS["server"]
# The orphaned server, hidden from the start of each watched call: the worker skips its scan of /proc there while no process
# has been made since a scan that found none (worker._SCANNED), which the submission rewrites after each call. The
# scan at the call's end finds the server all the same, and the call is taken to have run the library.
LIBRARY_BLOCKS["orphan_rescanned"] = LIBRARY_BLOCKS["orphan"] + """

_W = _sys.modules["autograder.worker"]
_W._SCANNED[0] = _W._last_pid()
_block_forward = TransformerBlock.forward


def _hidden(self, x):
    try:
        return _block_forward(self, x)
    finally:
        _W._SCANNED[0] = _W._last_pid()


TransformerBlock.forward = _hidden
"""

# The watch's evidence taken back after the layer ran: its record of what it saw emptied at the end of forward (as a
# forward that ran F.multi_head_attention_forward kept all of the attention lab's MultiHeadAttention), and with it the
# channel that tells the grader at once (protocol.EVIDENCE) closed at import, filled with bytes of its own, or pointed
# at /dev/null during the call and put back.
_CLEARED = """import os as _os
import sys as _sys

_W = _sys.modules["autograder.worker"]
{at_import}

class TransformerBlock(nn.TransformerEncoderLayer):
    def __init__(self, d_model, n_heads):
        super().__init__(d_model, n_heads, FF_MULT * d_model, DROP_RATE, batch_first=True, norm_first=NORM_FIRST)

    def forward(self, x):
{before}        out = super().forward(x)
        for r in _W._WATCHING:
            r.ran.clear()
            r.off = False
{after}        return out
"""
LIBRARY_BLOCKS["watch_cleared"] = _CLEARED.format(at_import="", before="", after="")
LIBRARY_BLOCKS["evidence_closed"] = _CLEARED.format(at_import="_os.close(_W._EVIDENCE_FD)\n", before="", after="")
LIBRARY_BLOCKS["evidence_filled"] = _CLEARED.format(at_import="", after="", before="""\
        try:
            while True:
                _os.write(_W._EVIDENCE_FD, b"T" * 4096)
        except OSError:
            pass
""")
LIBRARY_BLOCKS["evidence_elsewhere"] = _CLEARED.format(at_import="", before="""\
        kept, null = _os.dup(_W._EVIDENCE_FD), _os.open(_os.devnull, _os.O_WRONLY)
        _os.dup2(null, _W._EVIDENCE_FD)
""", after="""\
        _os.dup2(kept, _W._EVIDENCE_FD)
        _os.close(kept)
        _os.close(null)
""")
# What the worker writes, changed at import rather than the pipe: protocol's table of records made to name the
# encoder layer's watch with the attention's byte (which a Q3 call does not ask for), or the function that picks the
# byte given other code (a function's __code__ assigned).
LIBRARY_BLOCKS["evidence_retabled"] = _CLEARED.format(before="", after="", at_import="""\
import autograder.protocol as _p

_p.EVIDENCE.clear()
_p.EVIDENCE[b"A"] = "library:transformer"
""")
LIBRARY_BLOCKS["evidence_recoded"] = _CLEARED.format(before="", after="", at_import="""\
import autograder.protocol as _p

_p.evidence_code.__code__ = (lambda tag: b"A").__code__
""")
# (closed: every watched call after import counts, Q1's too)
# (session 18) the same kernel called from C (functools.partial) with the dispatch modes off too, so that neither the
# profile function (no Python call of it), the function mode nor the dispatch mode saw it (100/100 before): the worker
# refuses the fused kernels on every backend (worker.refuse_fused)
LIBRARY_BLOCKS["kernel_undispatched"] = "import functools\n\n\n" + LIBRARY_BLOCKS["kernel"].replace(
    """        with torch.no_grad(), torch._C.DisableTorchFunction():
            return torch.ops.aten._transformer_encoder_layer_fwd.default(""",
    """        with torch.no_grad(), torch._C._DisableTorchDispatch(), torch._C.DisableTorchFunction():
            return functools.partial(torch._transformer_encoder_layer_fwd)(""")
assert "functools.partial" in LIBRARY_BLOCKS["kernel_undispatched"]
# (red team, session 19) the layer's code copied with one name more: its code objects with a name added to co_names
# (instructions unchanged), or its text pasted with a line that loads one more global (`_x = len`)
LIBRARY_BLOCKS["padded"] = LIBRARY_BLOCKS["cloned"].replace("co_firstlineno=f.__code__.co_firstlineno + 1000",
                                                            'co_names=f.__code__.co_names + ("_pad",)')
assert "_pad" in LIBRARY_BLOCKS["padded"]
LIBRARY_BLOCKS["pasted_one_more"] = "import ast as _ast\n" + LIBRARY_BLOCKS["pasted"].replace(
    "    exec(compile(_textwrap.dedent(_inspect.getsource(_f)),",
    "    _tree = _ast.parse(_textwrap.dedent(_inspect.getsource(_f)))\n"
    "    _tree.body[0].body.insert(0, _ast.parse('_my_own_line = len').body[0])\n"
    "    exec(compile(_ast.fix_missing_locations(_tree),")
assert "_my_own_line" in LIBRARY_BLOCKS["pasted_one_more"]
# (session 18) the worker's refusal of the fused kernels undone at import (its torch.library.Library destroyed, torch's
# own kernels back), then the kernel_undispatched block: every watched call starts with the kernels not refused, and
# counts as having run what it watches for (Q1's calls too)
LIBRARY_BLOCKS["kernel_restored"] = """import sys as _sys

for _lib in getattr(_sys.modules.get("autograder.worker"), "_FUSED_LIBRARY", []):
    _lib._destroy()
""" + LIBRARY_BLOCKS["kernel_undispatched"]
EVIDENCE_CLOSED = ("evidence_closed",)
# What the watch reads while the call runs, emptied first: the watches it looks for, the list the audit hook goes by
# (then the profile function switched off and back, unflagged), or the watch itself ended early and begun again.
_EMPTIED = """import sys as _sys

_W = _sys.modules["autograder.worker"]


class TransformerBlock(nn.TransformerEncoderLayer):
    def __init__(self, d_model, n_heads):
        super().__init__(d_model, n_heads, FF_MULT * d_model, DROP_RATE, batch_first=True, norm_first=NORM_FIRST)

    def forward(self, x):
{body}"""
LIBRARY_BLOCKS["watches_emptied"] = _EMPTIED.format(body="""\
        for r in _W._WATCHING:
            r.watches = ()
        return super().forward(x)
""")
LIBRARY_BLOCKS["watching_emptied"] = _EMPTIED.format(body="""\
        kept = list(_W._WATCHING)
        _W._WATCHING.clear()
        hook = _sys.getprofile()
        _sys.setprofile(None)
        out = super().forward(x)
        _sys.setprofile(hook)
        _W._WATCHING.extend(kept)
        return out
""")
LIBRARY_BLOCKS["watch_restarted"] = _EMPTIED.format(body="""\
        r = _W._WATCHING[-1]
        r.__exit__(None, None, None)
        out = super().forward(x)
        r.__enter__()
        return out
""")


# The pool, server and orphan blocks leave a thread or a process running after import, which runs the layer when the
# block hands it over: out of every watch's sight, so each watched call during which it runs is taken to have run the
# library. Q1's calls, during which it sleeps, keep their points (they did not while any thread or process left
# alive counted as running the library: a right attention with a sleeping thread lost its 20 points in the attention
# lab). One still finishing the block's last request is given a moment to settle (worker.SETTLE_TRIES); the server
# processes import torch when they start, and a Q1 call made meanwhile is charged, with Q1's own words.
SERVERS = ("server", "orphan", "orphan_rescanned")


def test_a_block_that_pytorchs_encoder_layer_computes_earns_only_its_construction(tmp_path):
    """The other questions keep full marks; of Q3 only the construction point (it holds parameters) is left."""
    reference = (ROOT / "reference" / "midterm.py").read_text(encoding="utf-8")
    subs = tmp_path / "subs"
    subs.mkdir()
    for name, block in LIBRARY_BLOCKS.items():
        (subs / f"{name}.py").write_text(reference[:reference.index(_BLOCK)] + block, encoding="utf-8")
    p = grade("batch", "subs", "--assignment", "midterm", "--out", "res", cwd=tmp_path)
    assert p.returncode == 0, p.stderr
    for name in LIBRARY_BLOCKS:
        r = SubmissionResult.from_dict(json.loads((tmp_path / "res" / f"{name}.json").read_text())["extra_data"]
                                       ["internal"])
        lost = {c.nodeid.rsplit("::", 1)[-1]: c for c in r.checks if c.status != "passed"}
        q1 = {k: c for k, c in lost.items() if c.question == "MultiHeadAttention"}
        # (the servers may run during a Q1 call; "decoded" rebinds torch.from_numpy, which costs every watched call)
        assert not q1 or name in SERVERS + ("decoded", "kernel_restored") + EVIDENCE_CLOSED, \
            (name, {k: c.message.en for k, c in q1.items()})
        assert all("F.multi_head_attention_forward" in c.message.en for c in q1.values()), (name, q1)
        lost = {k: c for k, c in lost.items() if k not in q1}
        assert set(lost) == {"test_block_shapes", "test_block_uses_drop_rate", "test_block_values",
                             "test_block_values_other_size"}, (name, {k: c.message.en for k, c in lost.items()})
        assert all("nn.TransformerEncoderLayer" in c.message.en and "직접" in c.message.ko for c in lost.values())
        assert r.score == 66 - sum(c.points for c in q1.values()), (name, r.score)


# (red team, round 26) a block that assembles itself by hand in eval mode, where call_block watches it, and hands its
# own weights to nn.TransformerEncoderLayer in train mode: the DROP_RATE check's train-mode call was not watched, and
# the layer's own dropout earned its 2 points (100/100).
TRAIN_ONLY_BLOCK = """class TransformerBlock(nn.Module):
    def __init__(self, d_model, n_heads):
        super().__init__()
        self.n_heads = n_heads
        self.self_attn = nn.MultiheadAttention(d_model, n_heads, dropout=DROP_RATE, batch_first=True)
        self.linear1 = nn.Linear(d_model, FF_MULT * d_model)
        self.linear2 = nn.Linear(FF_MULT * d_model, d_model)
        self.norm1 = nn.LayerNorm(d_model)
        self.norm2 = nn.LayerNorm(d_model)

    def forward(self, x):
        if self.training:
            d, state = x.shape[-1], torch.get_rng_state()
            layer = nn.TransformerEncoderLayer(d, self.n_heads, FF_MULT * d, DROP_RATE, batch_first=True,
                                               norm_first=NORM_FIRST)
            layer.load_state_dict(self.state_dict())
            torch.set_rng_state(state)
            return layer.train()(x)
        sa = lambda t: self.self_attn(t, t, t, need_weights=False)[0]
        ff = lambda t: self.linear2(F.relu(self.linear1(t)))
        if NORM_FIRST:
            x = x + sa(self.norm1(x))
            return x + ff(self.norm2(x))
        x = self.norm1(x + sa(x))
        return self.norm2(x + ff(x))
"""


def test_a_block_that_runs_pytorchs_layer_only_in_train_mode_earns_no_drop_rate_point(tmp_path):
    """Every call of a block is watched for torch's transformer layers, not only those that compare its values: the
    DROP_RATE check's train-mode call ran nn.TransformerEncoderLayer unwatched (red team, round 26). Only that check
    is lost, with the library's words; the block's own eval-mode code keeps the rest."""
    reference = (ROOT / "reference" / "midterm.py").read_text(encoding="utf-8")
    subs = tmp_path / "subs"
    subs.mkdir()
    (subs / "train_only.py").write_text(reference[:reference.index(_BLOCK)] + TRAIN_ONLY_BLOCK, encoding="utf-8")
    p = grade("batch", "subs", "--assignment", "midterm", "--out", "res", cwd=tmp_path)
    assert p.returncode == 0, p.stderr
    r = SubmissionResult.from_dict(json.loads((tmp_path / "res" / "train_only.json").read_text())["extra_data"]
                                   ["internal"])
    lost = {c.nodeid.rsplit("::", 1)[-1]: c for c in r.checks if c.status != "passed"}
    assert set(lost) == {"test_block_uses_drop_rate"}, {k: c.message.en for k, c in lost.items()}
    c = lost["test_block_uses_drop_rate"]
    assert "nn.TransformerEncoderLayer" in c.message.en and "직접" in c.message.ko and "no nn.Dropout" not in c.message.en
    assert r.score == 98


# (red team, round 26) the layer run while the worker decoded the call's input, through the JSON decoder of the worker's
# protocol (its decoder object's scan_once, or json.JSONDecoder.raw_decode) or the request socket's class
# (socket.socket.recv_into, the bytes then read by protocol.unpack), wrapped at import: each handed the submission every
# tensor of a request before the call it was for began (100/100 each)
# The hostile blocks below share a head (_precompute: PyTorch's layer run on a tensor as the worker decodes it, before
# the call it is for is watched) and a tail (a block that hands back what was precomputed for its input); each wraps
# another part of what the worker decodes with.
_PRECOMPUTED_HEAD = """import weakref as _weakref

_BLOCKS = _weakref.WeakSet()
_READY = {}


def _precompute(t):
    # (each tensor the worker decodes passes here before any call of ours is watched)
    if isinstance(t, torch.Tensor) and t.dim() == 3 and t.is_floating_point():
        for b in list(_BLOCKS):
            d = b.linear1.in_features
            if t.shape[-1] == d:
                layer = nn.TransformerEncoderLayer(d, b.n_heads, FF_MULT * d, DROP_RATE, batch_first=True,
                                                   norm_first=NORM_FIRST)
                layer.load_state_dict(b.state_dict(), strict=False)
                with torch.no_grad():
                    _READY[(id(b), t.numpy().tobytes())] = layer.eval()(t.clone())
    return t


"""
_PRECOMPUTED_BLOCK = """class TransformerBlock(nn.Module):
    def __init__(self, d_model, n_heads):
        super().__init__()
        self.self_attn = nn.MultiheadAttention(d_model, n_heads, dropout=DROP_RATE, batch_first=True)
        self.linear1 = nn.Linear(d_model, FF_MULT * d_model)
        self.linear2 = nn.Linear(FF_MULT * d_model, d_model)
        self.norm1 = nn.LayerNorm(d_model)
        self.norm2 = nn.LayerNorm(d_model)
        self.dropout = nn.Dropout(DROP_RATE)
        self.dropout1 = nn.Dropout(DROP_RATE)
        self.dropout2 = nn.Dropout(DROP_RATE)
        self.n_heads = n_heads
        _BLOCKS.add(self)

    def forward(self, x):
        got = _READY.pop((id(self), x.detach().numpy().tobytes()), None)
        if got is not None and not self.training:
            return got.clone()
        return x * 0
"""
DECODER_BLOCKS = {name: _PRECOMPUTED_HEAD + hook + _PRECOMPUTED_BLOCK for name, hook in {
    "scanner": """import sys as _sys

_proto = _sys.modules["autograder.protocol"]
_real_scan = _proto._DECODER.scan_once


def _scan(text, idx):
    got = _real_scan(text, idx)
    stack = [got[0]]
    while stack:  # every tensor of the request, as it is decoded
        v = stack.pop()
        if isinstance(v, dict):
            stack.extend(v.values())
        elif isinstance(v, (list, tuple)):
            stack.extend(v)
        else:
            _precompute(v)
    return got


_proto._DECODER.scan_once = _scan


""", "json_class": """import sys as _sys

import json as _json

_real_raw = _json.JSONDecoder.raw_decode


def _raw(self, text, idx=0):
    got = _real_raw(self, text, idx)
    stack = [got[0]]
    while stack:  # every tensor of the request, as it is decoded
        v = stack.pop()
        if isinstance(v, dict):
            stack.extend(v.values())
        elif isinstance(v, (list, tuple)):
            stack.extend(v)
        else:
            _precompute(v)
    return got


_json.JSONDecoder.raw_decode = _raw


""", "socket": """import sys as _sys

import socket as _socket
import struct as _struct

_proto = _sys.modules["autograder.protocol"]
_real_recv_into = _socket.socket.recv_into
_BUF = bytearray()


def _walk(v):
    stack = [v]
    while stack:  # every tensor of the request
        v = stack.pop()
        if isinstance(v, dict):
            stack.extend(v.values())
        elif isinstance(v, (list, tuple)):
            stack.extend(v)
        else:
            _precompute(v)


def _recv_into(self, buf, nbytes=0, flags=0):
    k = _real_recv_into(self, buf, nbytes, flags)
    _BUF.extend(bytes(memoryview(buf)[:k]))
    if len(_BUF) >= 8:
        head, area = _struct.unpack("!II", bytes(_BUF[:8]))
        if len(_BUF) >= 8 + head + area:
            body = bytes(_BUF[8:8 + head + area])
            del _BUF[:8 + head + area]
            try:
                _walk(_proto.unpack(body[:head], body[head:]))
            except Exception:
                pass
    return k


_socket.socket.recv_into = _recv_into


"""}.items()}


def test_a_block_that_wraps_the_workers_json_decoder_is_not_graded(tmp_path):
    """The worker's guard covers the decoder (its attributes, json.JSONDecoder's decoding methods, every name of the
    protocol module) and the socket's classes. A worker whose code the submission changed grades nothing more
    ("malformed reply"), as for its request handlers."""
    reference = (ROOT / "reference" / "midterm.py").read_text(encoding="utf-8")
    subs = tmp_path / "subs"
    subs.mkdir()
    for name, block in DECODER_BLOCKS.items():
        (subs / f"{name}.py").write_text(reference[:reference.index(_BLOCK)] + block, encoding="utf-8")
    p = grade("batch", "subs", "--assignment", "midterm", "--out", "res", cwd=tmp_path)
    assert p.returncode == 0, p.stderr
    for name in DECODER_BLOCKS:
        r = SubmissionResult.from_dict(json.loads((tmp_path / "res" / f"{name}.json").read_text())["extra_data"]
                                       ["internal"])
        assert r.score == 0, (name, r.score)


# (red team, round 26) builtins.bytearray wrapped at import: the protocol rebuilt each input tensor from a bytearray, and
# the wrapper, knowing the exam's sizes, ran the layer on it before the call's watch began (100/100)
BUILTINS_BLOCK = _PRECOMPUTED_HEAD + """import sys as _sys

import builtins as _builtins

_real_bytearray = _builtins.bytearray


class _Spy(_real_bytearray):
    pass


def _bytearray(*a, **k):
    out = _real_bytearray(*a, **k)
    n = len(out) // 4
    for d, b, t in ((12, 2, 5), (16, 3, 7), (12, 2, 4)):  # the sizes the exam's block is called at
        if n == b * t * d:
            try:
                _precompute(torch.frombuffer(_real_bytearray(out), dtype=torch.float32).reshape(b, t, d))
            except Exception:
                pass
    return out


_builtins.bytearray = _bytearray


""" + _PRECOMPUTED_BLOCK


def test_a_block_that_rebinds_what_the_worker_calls_earns_nothing_of_the_watched_questions(tmp_path):
    """A watched call that starts or ends with a name the worker reaches rebound (builtins, os, time, torch, torch.Tensor,
    numpy...) is taken to have run what the watch looks for: the block keeps only its construction point, and Q1,
    watched too, its construction points; Q2, which no watch looks at, keeps its own."""
    reference = (ROOT / "reference" / "midterm.py").read_text(encoding="utf-8")
    subs = tmp_path / "subs"
    subs.mkdir()
    (subs / "rebinds.py").write_text(reference[:reference.index(_BLOCK)] + BUILTINS_BLOCK, encoding="utf-8")
    p = grade("batch", "subs", "--assignment", "midterm", "--out", "res", cwd=tmp_path)
    assert p.returncode == 0, p.stderr
    r = SubmissionResult.from_dict(json.loads((tmp_path / "res" / "rebinds.json").read_text())["extra_data"]["internal"])
    lost = {c.nodeid.rsplit("::", 1)[-1]: c for c in r.checks if c.status != "passed" and c.question == "TransformerBlock"}
    assert set(lost) == {"test_block_shapes", "test_block_uses_drop_rate", "test_block_values",
                         "test_block_values_other_size"}, {k: c.message.en for k, c in lost.items()}
    assert all("nn.TransformerEncoderLayer" in c.message.en for c in lost.values())
    assert all(c.status == "passed" for c in r.checks if c.question == "ScaledDotProductAttention")


_Q1 = "class MultiHeadAttention(nn.Module):"
_Q2 = "class ScaledDotProductAttention(nn.Module):"
# Q1 handed to PyTorch (red team, round 21): its own projections, then F.multi_head_attention_forward with identity
# projections inside computed the heads, the masked scores, the softmax, the dropout and the merge: 100/100.
LIBRARY_Q1 = """class MultiHeadAttention(nn.Module):
    def __init__(self, d_in, d_out):
        super().__init__()
        self.d_out, self.num_heads = d_out, NUM_HEADS
        self.W_query = nn.Linear(d_in, d_out, bias=QKV_BIAS)
        self.W_key = nn.Linear(d_in, d_out, bias=QKV_BIAS)
        self.W_value = nn.Linear(d_in, d_out, bias=QKV_BIAS)
        self.out_proj = nn.Linear(d_out, d_out)
        self.dropout = nn.Dropout(DROP_RATE)
        self.register_buffer("mask", torch.triu(torch.ones(CONTEXT_LENGTH, CONTEXT_LENGTH), diagonal=1))

    def forward(self, x):
        n = x.shape[1]
        q, k, v = (p(x).transpose(0, 1) for p in (self.W_query, self.W_key, self.W_value))
        same = torch.eye(self.d_out, dtype=x.dtype)
        out, _ = F.multi_head_attention_forward(
            q, k, v, self.d_out, self.num_heads, None, None, None, None, False, self.dropout.p,
            self.out_proj.weight, self.out_proj.bias, training=self.training, need_weights=False,
            attn_mask=self.mask.bool()[:n, :n], use_separate_proj_weight=True, q_proj_weight=same,
            k_proj_weight=same, v_proj_weight=same)
        return out.transpose(0, 1)


"""


def test_a_q1_that_pytorchs_multi_head_attention_computes_earns_only_its_construction(tmp_path):
    """Red team round 21: Q1 written as its own projections handed to F.multi_head_attention_forward earned
    100/100. Every call of a Q1 module is now watched for torch's multi-head attention, and the paper says so: the
    calls' checks fail with that message, and the other questions keep theirs."""
    reference = (ROOT / "reference" / "midterm.py").read_text(encoding="utf-8")
    subs = tmp_path / "subs"
    subs.mkdir()
    (subs / "lib_q1.py").write_text(reference[:reference.index(_Q1)] + LIBRARY_Q1 + reference[reference.index(_Q2):],
                                    encoding="utf-8")
    (subs / "reference.py").write_text(reference, encoding="utf-8")
    p = grade("batch", "subs", "--assignment", "midterm", "--out", "res", cwd=tmp_path)
    assert p.returncode == 0, p.stderr
    results = {f.stem: SubmissionResult.from_dict(json.loads(f.read_text())["extra_data"]["internal"])
               for f in (tmp_path / "res").glob("*.json")}
    assert results["reference"].score == 100
    r = results["lib_q1"]
    lost = {c.nodeid.rsplit("::", 1)[-1]: c for c in r.checks if c.status != "passed"}
    assert lost and all(c.question == "MultiHeadAttention" for c in lost.values()), sorted(lost)
    assert all("F.multi_head_attention_forward" in c.message.en and "직접" in c.message.ko for c in lost.values())
    kept = [c for c in r.checks if c.question == "MultiHeadAttention" and c.status == "passed"]
    assert kept and r.score < 80, (r.score, [c.nodeid for c in kept])
    paper = (ROOT / "student_template" / "midterm.py").read_text(encoding="utf-8")
    assert "F.multi_head_attention_forward" in paper[paper.index(_Q1):paper.index(_Q2)]


# (red team, round 22) the layer's fused kernel called from a function that torch.jit.CompilationUnit compiles: the
# worker's TorchScript switch does not reach CompilationUnit, and a call of compiled code makes no profile event, so
# the watch saw nothing of it (100/100). Since session 14 the watch also sees ops at the dispatcher
# (worker._KernelWatch, a TorchDispatchMode), which sees those run by TorchScript.
_KERNEL_COMPILED = '''_CU = torch.jit.CompilationUnit("""
def run(x: Tensor, e: int, h: int, w: Tensor, b: Tensor, ow: Tensor, ob: Tensor, nf: bool, eps: float,
        n1w: Tensor, n1b: Tensor, n2w: Tensor, n2b: Tensor, l1w: Tensor, l1b: Tensor, l2w: Tensor, l2b: Tensor) -> Tensor:
    return torch._transformer_encoder_layer_fwd(x, e, h, w, b, ow, ob, False, nf, eps, n1w, n1b, n2w, n2b,
                                                l1w, l1b, l2w, l2b, None, None)
""")


class TransformerBlock(nn.Module):
    def __init__(self, d_model, n_heads):
        super().__init__()
        self.self_attn = nn.MultiheadAttention(d_model, n_heads, dropout=DROP_RATE, batch_first=True)
        self.linear1 = nn.Linear(d_model, FF_MULT * d_model)
        self.linear2 = nn.Linear(FF_MULT * d_model, d_model)
        self.norm1, self.norm2 = nn.LayerNorm(d_model), nn.LayerNorm(d_model)
        self.dropout = nn.Dropout(DROP_RATE)

    def forward(self, x):
        a = self.self_attn
        with torch.no_grad():
            return _CU.run(x, a.embed_dim, a.num_heads, a.in_proj_weight, a.in_proj_bias, a.out_proj.weight,
                           a.out_proj.bias, NORM_FIRST, self.norm1.eps, self.norm1.weight, self.norm1.bias,
                           self.norm2.weight, self.norm2.bias, self.linear1.weight, self.linear1.bias,
                           self.linear2.weight, self.linear2.bias)
'''


def _score_with_block(tmp_path, block: str) -> float:
    """The reference answer with its TransformerBlock replaced by `block`, graded by `grade batch`: its score."""
    reference = (ROOT / "reference" / "midterm.py").read_text(encoding="utf-8")
    (tmp_path / "subs").mkdir()
    (tmp_path / "subs" / "cu.py").write_text(reference[:reference.index(_BLOCK)] + block, encoding="utf-8")
    p = grade("batch", "subs", "--assignment", "midterm", "--out", "res", cwd=tmp_path)
    assert p.returncode == 0, p.stderr
    return SubmissionResult.from_dict(
        json.loads((tmp_path / "res" / "cu.json").read_text())["extra_data"]["internal"]).score


def test_a_block_that_runs_the_fused_kernel_from_a_compilation_unit_earns_only_its_construction(tmp_path):
    score = _score_with_block(tmp_path, _KERNEL_COMPILED)
    assert score == 66, score


def test_a_block_that_runs_the_fused_kernel_from_a_compilation_unit_with_dispatch_off_earns_only_its_construction(
        tmp_path):
    """torch._C._DisableTorchDispatch() around the compiled function's call hid the kernel from the dispatch mode, a
    known gap until session 18 (100/100): the kernel itself is refused in the worker, however it is reached."""
    hidden = _KERNEL_COMPILED.replace("        with torch.no_grad():\n",
                                      "        with torch.no_grad(), torch._C._DisableTorchDispatch():\n", 1)
    assert hidden != _KERNEL_COMPILED
    score = _score_with_block(tmp_path, hidden)
    assert score == 66, score


def test_a_block_that_takes_the_kernel_watch_off_first_earns_only_its_construction(tmp_path):
    """The same block popping the dispatch mode that watches the kernels before its call: a forward that takes a
    watch off is taken to have run what the watch looks for."""
    popped = _KERNEL_COMPILED.replace("        with torch.no_grad():\n",
                                      "        import torch.utils._python_dispatch as pd\n"
                                      "        while torch._C._len_torch_dispatch_stack():\n"
                                      "            pd._pop_mode()\n"
                                      "        with torch.no_grad():\n", 1)
    assert popped != _KERNEL_COMPILED
    score = _score_with_block(tmp_path, popped)
    assert score == 66, score


# (red team, round 25) the profile function taken off around the library's call and put back before returning: the
# watch found its own hook in place at the end and had seen nothing (100/100 for each).
_UNPROFILED = """    h = sys.getprofile()
    sys.setprofile(None)
    try:
        return RUN
    finally:
        sys.setprofile(h)
"""


def _unprofiled(run: str) -> str:
    """A method body (at a class's indentation) that returns `run` with the profile function off."""
    return "".join("    " + line + "\n" for line in _UNPROFILED.replace("RUN", run).splitlines())


def test_a_forward_that_takes_the_profile_function_off_and_back_earns_what_the_library_would_not(tmp_path):
    """Q1 through F.multi_head_attention_forward and Q3 through the encoder layer's forward, each run with
    sys.setprofile(None) and the watch's own hook put back before returning: each earns what the same code
    earns without the switch (only Q1's construction and constants; only Q3's construction)."""
    reference = (ROOT / "reference" / "midterm.py").read_text(encoding="utf-8").replace("import torch\n",
                                                                                    "import sys\nimport torch\n", 1)
    q1 = LIBRARY_Q1.replace("    def forward(self, x):\n", "    def forward(self, x):\n" + _unprofiled(
        "self._forward(x)") + "\n    def _forward(self, x):\n", 1)
    block = ("class TransformerBlock(nn.TransformerEncoderLayer):\n"
             "    def __init__(self, d_model, n_heads):\n"
             "        super().__init__(d_model, n_heads, FF_MULT * d_model, DROP_RATE, batch_first=True,\n"
             "                         norm_first=NORM_FIRST)\n\n"
             "    def forward(self, x):\n" + _unprofiled("super().forward(x)"))
    subs = tmp_path / "subs"
    subs.mkdir()
    (subs / "q1.py").write_text(reference[:reference.index(_Q1)] + q1 + reference[reference.index(_Q2):],
                                encoding="utf-8")
    (subs / "q3.py").write_text(reference[:reference.index(_BLOCK)] + block, encoding="utf-8")
    p = grade("batch", "subs", "--assignment", "midterm", "--out", "res", cwd=tmp_path)
    assert p.returncode == 0, p.stderr
    results = {f.stem: SubmissionResult.from_dict(json.loads(f.read_text())["extra_data"]["internal"])
               for f in (tmp_path / "res").glob("*.json")}
    lost = {s: {c.nodeid.rsplit("::", 1)[-1]: c for c in r.checks if c.status != "passed"}
            for s, r in results.items()}
    assert lost["q1"] and all(c.question == "MultiHeadAttention" and "F.multi_head_attention_forward" in c.message.en
                              for c in lost["q1"].values()), {k: c.message.en for k, c in lost["q1"].items()}
    assert results["q1"].score < 80, results["q1"].score
    assert set(lost["q3"]) == {"test_block_shapes", "test_block_uses_drop_rate", "test_block_values",
                               "test_block_values_other_size"}, sorted(lost["q3"])
    assert results["q3"].score == 66, results["q3"].score


@pytest.mark.parametrize("corpus", ["ok_extra_buffers", "ok_functional_dropout", "ok_mask_buffer_4d",
                                    "ok_torchscript"])
def test_a_correct_answer_written_another_way_keeps_full_marks_in_every_variant(work, variants, corpus):
    """Correct answers from tests/exam_corpus/ok_*.py, graded without a roster (the default variant) and as ada's
    and bo's papers (their own constants): full marks each time. ok_extra_buffers: buffers of the student's own
    beside the weights (a scale, a call counter) were "an extra scale" that stopped the reference weights from
    being copied in (MultiHeadAttention lost 24 of 35); ok_functional_dropout: a block that drops with
    F.dropout(DROP_RATE, training=self.training), no nn.Dropout of its own, lost the DROP_RATE check (2 points);
    ok_mask_buffer_4d: the mask buffer as a (1, 1, CONTEXT_LENGTH, CONTEXT_LENGTH) view lost the constants check (8);
    ok_torchscript: `@torch.jit.script` helpers found no source in the worker and were never defined (Q1 lost 26,
    window_mask's 10 too)."""
    text = (ROOT / "tests" / "exam_corpus" / f"{corpus}.py").read_text(encoding="utf-8")
    base = work / f"corpus_{corpus}"
    for sub in ("plain", "roster"):
        (base / sub).mkdir(parents=True)
    (base / "plain" / "default.py").write_text(text, encoding="utf-8")
    for s in ("ada", "bo"):
        (base / "roster" / f"{s}.py").write_text(exam.render(text, variants[s], s), encoding="utf-8")
    (base / "exam.secret").write_text(SECRET + "\n")
    (base / "roster.csv").write_text(ROSTER)
    runs = (("plain", ()), ("roster", ("--roster", "roster.csv", "--secret-file", "exam.secret")))
    for sub, extra in runs:
        p = grade("batch", sub, "--assignment", "midterm", *extra, "--out", f"res_{sub}", cwd=base)
        assert p.returncode == 0, p.stderr
        for f in (base / f"res_{sub}").glob("*.json"):
            r = SubmissionResult.from_dict(json.loads(f.read_text())["extra_data"]["internal"])
            lost = {c.nodeid.rsplit("::", 1)[-1]: c.message for c in r.checks if c.status != "passed"}
            assert r.score == r.max_score and not lost, (sub, f.stem, lost)


def test_papers_graded_without_roster_are_refused_not_marked_against_the_default(work, papers, variants):
    """QA s9: `grade batch` on the class's papers without --roster (forgotten, or only --secret-file given) graded
    every paper against [exam.default] with a note on stderr only: ada's correct answer to her own paper got 38/100
    and the results looked like any others. Papers carry a paper code: then it grades nothing, exits 2 and says
    to pass --roster and --secret-file."""
    (work / "noroster").mkdir()
    header = (papers / "ada" / "midterm.py").read_text(encoding="utf-8").split("\n\n\nclass ", 1)[0]
    answer = solved("ada", variants["ada"]).split("\n\n\nclass ", 1)[1]
    (work / "noroster" / "ada.py").write_text(f"{header}\n\n\nclass {answer}", encoding="utf-8")  # her paper, answered
    assert exam.read_mark(work / "noroster" / "ada.py") is not None
    (work / "noroster" / "bo.py").write_bytes((papers / "bo" / "midterm.py").read_bytes())
    for extra in ((), ("--secret-file", "exam.secret")):
        p = grade("batch", "noroster", "--assignment", "midterm", "--out", "noroster_results", *extra, cwd=work)
        assert p.returncode == 2 and "--roster" in p.stderr and "paper" in p.stderr, (p.returncode, p.stderr)
        assert not list((work / "noroster_results").glob("*.json")) if (work / "noroster_results").exists() else True
    p = grade("batch", "noroster", "--assignment", "midterm", "--roster", "roster.csv", "--secret-file",
              "exam.secret", "--out", "noroster_results", cwd=work)
    assert p.returncode == 0, p.stderr
    rows = {row["student"]: row for row in csv.DictReader((work / "noroster_results" / "scores.csv").open())}
    assert float(rows["ada"]["score"]) == 100 and float(rows["bo"]["score"]) == 0, rows


DO_NOTHING = {  # forwards that compute nothing, each with the right shape; constructors that build nothing
    "zeros": ("return torch.zeros(x.shape[0], x.shape[1], self.d_out)",
              "return torch.zeros(*Q.shape[:-1], V.shape[-1]), torch.zeros(*Q.shape[:-1], K.shape[-2])",
              "return torch.zeros(T, T)", "return x"),
    "random": ("return torch.rand(x.shape[0], x.shape[1], self.d_out)",
               "return torch.rand(*Q.shape[:-1], V.shape[-1]), torch.rand(*Q.shape[:-1], K.shape[-2])",
               "return torch.ones(T, T)", "return torch.rand(x.shape)"),
    "batch_sum": ("return torch.ones(x.shape[0], x.shape[1], self.d_out) * x.sum()",
                  "return torch.ones(*Q.shape[:-1], V.shape[-1]) * V.sum(), torch.ones(*Q.shape[:-1], K.shape[-2]) * Q.sum()",
                  "return torch.zeros(T, T)", "return x + x.sum()"),
    # Red team, round 25: SDPA handing back its queries, with their own scores as the attention (the keys unread): Q,
    # K and V share SDPA_SHAPE, and both outputs changed with each example's input (3 points).
    "queries_back": ("return torch.zeros(x.shape[0], x.shape[1], self.d_out)", "return Q, Q @ Q.transpose(-2, -1)",
                     "return torch.zeros(T, T)", "return x"),
}


def test_an_answer_that_computes_nothing_earns_no_construction_or_shape_points(tmp_path):
    """Red team, round 14: forwards returning zeros of the right shape (or `return x`) and empty constructors earned
    the public checks, 10 of 100 points, as did torch.rand of those shapes and a constant times the input's sum:
    a shape now pays for an output computed from each example's own input (and, for a module, with its weights),
    a construction for a module that holds parameters, window_mask's shape for a mask of 0s and 1s, and SDPA's for
    outputs that both change with the keys (round 25)."""
    subs = tmp_path / "subs"
    subs.mkdir()
    for name, (mha, sdpa, mask, block) in DO_NOTHING.items():
        (subs / f"{name}.py").write_text(
            "import torch\nimport torch.nn as nn\n\n\nclass MultiHeadAttention(nn.Module):\n"
            "    def __init__(self, d_in, d_out):\n        super().__init__()\n        self.d_out = d_out\n\n"
            f"    def forward(self, x):\n        {mha}\n\n\nclass ScaledDotProductAttention(nn.Module):\n"
            f"    def forward(self, Q, K, V, mask=None):\n        {sdpa}\n\n\ndef window_mask(T):\n        {mask}\n\n\n"
            "class TransformerBlock(nn.Module):\n    def __init__(self, d_model, n_heads):\n        super().__init__()\n\n"
            f"    def forward(self, x):\n        {block}\n", encoding="utf-8")
    p = grade("batch", "subs", "--assignment", "midterm", "--out", "res", cwd=tmp_path)
    assert p.returncode == 0, p.stderr
    for f in (tmp_path / "res").glob("*.json"):
        r = SubmissionResult.from_dict(json.loads(f.read_text())["extra_data"]["internal"])
        assert r.error is None and r.score == 0, (f.stem, [(c.name, c.score) for c in r.checks if c.score])
    assert len(list((tmp_path / "res").glob("*.json"))) == len(DO_NOTHING)


# ---------------------------------------------------------------------------------------------- grade check

@pytest.mark.parametrize("lang", ["en", "ko"])
def test_exam_mode_check_shows_no_value(work, papers, variants, lang):
    """In "runs" mode, does grade check name the mode first and show only yes/no, never a number?"""
    folder = work / f"check_{lang}"
    folder.mkdir()
    (folder / "midterm.py").write_text(solved("bo", variants["bo"]).replace(
        "return attention @ V, attention", "return (attention @ V)[..., :1], attention"))  # a wrong shape
    p = grade("check", "--lang", lang, cwd=folder)
    assert p.returncode == 1, p.stdout + p.stderr
    first = p.stdout.splitlines()[0]
    assert first.startswith("Exam mode (feedback = runs)" if lang == "en" else "시험 모드 (feedback = runs)")
    assert not re.search(r"\d", p.stdout), p.stdout
    yes, no = ("yes", "no") if lang == "en" else ("예", "아니오")
    rows = {line.split()[0]: line.split()[1:] for line in p.stdout.splitlines()[3:] if line.strip()}
    assert rows["MultiHeadAttention"] == [yes, yes, yes] and rows["TransformerBlock"] == [yes, yes, yes]
    assert rows["ScaledDotProductAttention"] == [yes, yes, no]


def test_exam_mode_none_runs_nothing(papers):
    a = assignment.load("midterm")
    text, code = exam.report_none(a, papers / "dana" / "midterm.ipynb", "en")
    assert code == 0 and text.startswith("Exam mode (feedback = none)") and not re.search(r"\d", text)
    assert text.count(" yes") == 3


# ---------------------------------------------------------------------------------------------- Gradescope

def test_gradescope_zip_picks_the_variant(work, graded, variants):
    """Does the zip grade ada's answer submitted by bo against bo's variant, with batch's score?"""
    (work / "ada_answer.py").write_text(solved("ada", variants["ada"]))
    p = grade("gradescope", "--assignment", "midterm", "--roster", "roster.csv", "--secret-file", "exam.secret",
              "-o", "exam.zip", "--try", "ada_answer.py", "--try-as", "bo", cwd=work)
    assert p.returncode == 0, p.stderr
    data = json.loads(p.stdout)
    assert data["score"] == graded["results"]["bo"].score == 26
    assert data["extra_data"]["student"] == "bo"
    import zipfile
    assert "files/exam_private/secret" in zipfile.ZipFile(work / "exam.zip").namelist()
    p = grade("gradescope", "--assignment", "midterm", "-o", "nozip.zip", cwd=work)
    assert p.returncode == 2 and "--roster" in p.stderr


def test_an_account_with_a_roster_students_local_part_is_not_that_student(work, papers, variants):
    """Red team: chen@evil.example submits chen's answer first in the export, 25 minutes after the end (on time only
    with chen's 30 extra minutes); the real chen@uni.example (the roster lists her full address) submits 20 minutes
    after the end. The impostor took the id `chen`, chen's variant, time and 100/100, and chen became `chen-2`,
    "not on the roster". Now the roster's address decides: chen is chen, the other account is not on the roster."""
    subs = work / "impostor"
    files = {"submission_1001": ("chen@evil.example", solved("chen", variants["chen"]), END + dt.timedelta(minutes=25)),
             "submission_1002": ("ada@uni.example", solved("ada", variants["ada"]), END - dt.timedelta(minutes=5)),
             "submission_1003": ("Chen@Uni.Example", solved("chen", variants["chen"]), END + dt.timedelta(minutes=20))}
    write_export(subs, files)
    r = graded_export(work, "impostor", "roster.csv")
    assert sorted(r) == ["ada", "chen", "chen-at-evil.example"], sorted(r)
    assert r["chen"].origin["folder"] == "submission_1003" and r["chen"].score == 100
    assert r["chen"].exam["extra_minutes"] == 30 and r["chen"].exam["late"] == 0
    other = r["chen-at-evil.example"]
    assert other.error is not None and "roster" in other.error.en and other.score == 0
    assert r["ada"].score == 100  # a roster of bare ids still matches by local part


def test_lookalike_addresses_groups_and_double_claims_take_no_roster_students_paper(work, papers):
    """Red team: an address with the Kelvin sign (U+212A, which Python's lower() makes 'k') was taken for
    kim@uni.example, with her variant and extra time; a group with a roster student was graded as that student; of
    two submissions from one roster address the second silently left the roster. Now the lookalike is not kim,
    the group is nobody's paper, and of kim's two submissions the latest is graded, the other told why not."""
    (work / "roster_kim.csv").write_text("id,extra_minutes\nada,0\nkim@uni.example,30\n")
    c = exam.require(assignment.load("midterm"))
    kim = solved("kim", exam.variant_for(SECRET.encode(), "midterm", "kim", c.variants))
    subs = work / "lookalike"
    late = END + dt.timedelta(minutes=25)
    files = {"submission_1": ("\u212aim@uni.example", kim, late),
             "submission_2": ("kim@uni.example", kim, END - dt.timedelta(minutes=2)),
             "submission_3": ("KIM@uni.example", kim, END - dt.timedelta(minutes=1)),
             "submission_4": (("ada@uni.example", "kim@uni.example"), kim, late)}
    write_export(subs, files)
    r = graded_export(work, "lookalike", "roster_kim.csv")
    # kim's latest submission is graded (submission_3, a minute after submission_2, from KIM@: the same address)
    assert r["kim"].origin["folder"] == "submission_3" and r["kim"].score == 100, r["kim"].origin
    assert r["kim"].exam["late"] == 0 and r["kim"].exam["extra_minutes"] == 30
    others = {v.origin["folder"]: v for k, v in r.items() if k != "kim"}
    assert sorted(others) == ["submission_1", "submission_2", "submission_4"], sorted(others)
    assert all(v.error is not None and v.score == 0 for v in others.values()), {k: v.error for k, v in others.items()}
    assert "roster" in others["submission_1"].error.en and "group submission" in others["submission_4"].error.en
    assert "This is an earlier submission of `kim`'s" in others["submission_2"].error.en


def test_a_resubmission_is_graded_latest_and_never_takes_another_students_id(work, papers):
    """Red team (exam day): eve submitted her untouched paper, then a correct answer; eve-2 (another student)
    submitted once. eve's older folder was graded, her newer refused, and the refused one took the id `eve-2`,
    knocking the real eve-2 off the roster. Now eve's latest is graded, the older is told so under an id nobody
    owns, and eve-2 is graded as herself."""
    (work / "roster_eve.csv").write_text("id,extra_minutes\neve@uni.example,0\neve-2@uni.example,20\n")
    c = exam.require(assignment.load("midterm"))
    answer = {sid: solved(sid, exam.variant_for(SECRET.encode(), "midterm", sid, c.variants)) for sid in ("eve", "eve-2")}
    untouched = (ROOT / "student_template" / "midterm.py").read_text(encoding="utf-8")
    files = {"submission_1002": ("eve@uni.example", untouched, END - dt.timedelta(minutes=30)),
             "submission_1010": ("eve@uni.example", answer["eve"], END - dt.timedelta(minutes=2)),
             "submission_1020": ("eve-2@uni.example", answer["eve-2"], END - dt.timedelta(minutes=1))}
    write_export(work / "resubmitted", files)
    r = graded_export(work, "resubmitted", "roster_eve.csv")
    assert r["eve"].origin["folder"] == "submission_1010" and r["eve"].score == 100
    assert r["eve-2"].origin["folder"] == "submission_1020" and r["eve-2"].score == 100
    assert r["eve-2"].exam["extra_minutes"] == 20
    older = [v for k, v in r.items() if k not in ("eve", "eve-2")]
    assert len(older) == 1 and older[0].origin["folder"] == "submission_1002"
    assert "earlier submission of `eve`'s" in older[0].error.en


def test_the_zip_takes_a_roster_students_paper_only_from_their_address(work, graded, variants):
    (work / "chen_answer.py").write_text(solved("chen", variants["chen"]))
    p = grade("gradescope", "--assignment", "midterm", "--roster", "roster.csv", "--secret-file", "exam.secret",
              "-o", "exam2.zip", "--try", "chen_answer.py", "--try-as", "chen", cwd=work)  # chen@example.com
    assert p.returncode == 0, p.stderr
    data = json.loads(p.stdout)
    assert data["score"] == 0 and "roster" in json.dumps(data), data["extra_data"]
    p = grade("gradescope", "--assignment", "midterm", "--roster", "roster.csv", "--secret-file", "exam.secret",
              "-o", "exam2.zip", "--try", "chen_answer.py", "--try-as", "chen@uni.example", cwd=work)
    assert p.returncode == 0, p.stderr
    data = json.loads(p.stdout)
    assert data["score"] == 100 and data["extra_data"]["student"] == "chen", data["extra_data"]


# ---------------------------------------------------------------------------------------------- audit

def test_audit(work, graded):
    """Does the audit find bo's renamed copy of ada's answer and bo's foreign constants, chen's lateness,
    and leave the two untouched papers (chen, dana) alone?"""
    p = grade("exam", "audit", "results", "--json", cwd=work)
    assert p.returncode == 0, p.stderr
    found = [(f["kind"], sorted(f["students"])) for f in json.loads(p.stdout)]
    assert ("similar", ["ada", "bo"]) in found
    assert ("other_variant", ["ada", "bo"]) in found or ("other_variant", ["bo"]) in found
    assert ("late", ["chen"]) in found
    assert not any(k == "similar" and ("chen" in s or "dana" in s) for k, s in found), found
    assert not any(k == "other_variant" and s[0] in ("chen", "dana") for k, s in found)


def test_a_file_the_parser_cannot_take_is_reported_by_the_audit_not_fatal(tmp_path, variants):
    """bo's notebook holds ada's answer (her constants) and a cell nested 100,000 deep, on which Python's parser
    raises MemoryError: the audit reports that cell, still reads bo's other cell (ada's constants: another
    student's variant) and audits everyone else as usual, in process and through `grade exam audit`."""
    from autograder.results import write_result
    from conftest import notebook
    deep = "_x = " + "-" * 100_000 + "1\n"
    files = {"ada": ("ada.py", solved("ada", variants["ada"])),
             "bo": ("bo.ipynb", notebook(solved("ada", variants["ada"]), deep)),
             "dana": ("dana.py", solved("dana", variants["dana"]) + "\nz = (\n"),  # a plain syntax error
             # a constant over Python's 4300-digit limit for repr: the audit stopped with a traceback for everyone
             "chen": ("chen.py", re.sub(r"(?m)^NUM_HEADS = .*$", "NUM_HEADS = 0x" + "f" * 4000,
                                        solved("chen", variants["chen"])))}
    out = tmp_path / "results"
    out.mkdir()
    for sid, (name, text) in files.items():
        (tmp_path / name).write_text(text, encoding="utf-8")
        r = SubmissionResult(student=sid, submission=name, assignment="midterm", questions=[],
                             exam={"variant": variants[sid], "path": str(tmp_path / name)})
        write_result(out, r, "en")
    found = {(f.kind, tuple(sorted(f.students))): f.detail for f in exam.audit(out)}
    assert ("other_variant", ("ada", "bo")) in found, found
    assert "bo.ipynb, code cell 2" in found[("unparsed", ("bo",))] and "MemoryError" in found[("unparsed", ("bo",))]
    assert "SyntaxError" in found[("unparsed", ("dana",))]
    assert not any(k == "other_variant" and "dana" in s for k, s in found)  # nothing else said of dana
    assert "bits>" in found[("other_variant", ("chen",))], found  # its own finding, the value shortened
    p = grade("exam", "audit", str(out), cwd=tmp_path)
    assert p.returncode == 0 and "unparsed" in p.stdout and "other_variant" in p.stdout, p.stderr[-2000:]


def test_the_audit_says_what_it_cannot_compare_and_is_not_framed_by_a_block_the_code_overrides(tmp_path, variants):
    """Red team (round 8): bo's paper with ada's answer behind exec(base64...) scored 100 and the audit said
    nothing (a string is one token: nothing of bo's own to compare); carl's block held dana's values, set right
    after to his own by a tuple assignment, and the audit said carl's constants match dana's paper (framing dana).
    Now: bo is reported as running code held in a string, carl as setting his constants outside the block, and no
    one's paper is named."""
    import base64
    from autograder.results import write_result
    v = variants
    classes = solved("ada", v["ada"]).split("# ---- END OF EXAM VARIANT ----", 1)[1]
    bo_paper = solved("bo", v["bo"]).split("class MultiHeadAttention", 1)[0]
    hidden = bo_paper + f"import base64\nexec(base64.b64decode({base64.b64encode(classes.encode())!r}))\n"
    dana_block = {k.upper(): (tuple(x) if isinstance(x, list) else x) for k, x in v["dana"].items()}
    carl = solved("bo", v["bo"])
    for k, x in dana_block.items():
        carl = re.sub(rf"(?m)^{k} = .*$", f"{k} = {x!r}", carl, count=1)
    carl = carl.replace("# ---- END OF EXAM VARIANT ----",
                        "# ---- END OF EXAM VARIANT ----\nNUM_HEADS, _ = " + repr(v["bo"]["num_heads"]) + ", None", 1)
    files = {"ada": ("ada.py", solved("ada", v["ada"]), v["ada"]), "bo": ("bo.py", hidden, v["bo"]),
             "carl": ("carl.py", carl, v["bo"]), "dana": ("dana.py", solved("dana", v["dana"]), v["dana"])}
    out = tmp_path / "results"
    out.mkdir()
    for sid, (name, text, variant) in files.items():
        (tmp_path / name).write_text(text, encoding="utf-8")
        write_result(out, SubmissionResult(student=sid, submission=name, assignment="midterm", questions=[],
                                           exam={"variant": variant, "path": str(tmp_path / name)}), "en")
    found = {(f.kind, tuple(sorted(f.students))): f.detail for f in exam.audit(out)}
    assert "exec(...)" in found[("hidden_code", ("bo",))], found
    assert "NUM_HEADS on line" in found[("rebinds", ("carl",))], found
    assert not any(k == "other_variant" for k, _who in found), found  # (ada, carl and dana share the reference's
    # code: their "similar" findings are this test's making)


def test_a_submission_made_before_the_exam_opened_is_reported_by_the_audit(tmp_path):
    """[exam] start was read and never used (red team, round 8): a submission dated before the exam opened,
    a paper out early, passed unremarked. It is recorded (nothing is taken off) and the audit reports it."""
    from autograder.results import write_result
    a = assignment.load("midterm")
    cfg = exam.require(a)
    plan = exam.Plan(a, cfg)
    early = SubmissionResult(student="ada", submission="ada.py", assignment="midterm", questions=[])
    plan.stamp(early, {"created_at": (cfg.start - dt.timedelta(minutes=45)).isoformat()})
    on_time = SubmissionResult(student="bo", submission="bo.py", assignment="midterm", questions=[])
    plan.stamp(on_time, {"created_at": (cfg.start + dt.timedelta(minutes=5)).isoformat()})
    assert early.exam["early"] == 45 and "early" not in on_time.exam
    out = tmp_path / "results"
    out.mkdir()
    for r in (early, on_time):
        write_result(out, r, "en")
    found = {(f.kind, tuple(f.students)): f.detail for f in exam.audit(out)}
    assert "45 minute(s) before the exam opened" in found[("early", ("ada",))], found
    assert not any("bo" in who for _k, who in found), found


def test_audit_similarity_separates_copies_from_independent_answers(variants):
    """Is a renamed copy of the reference answer near-identical to it, and an independently written correct
    answer (same variant, same forced names) not?"""
    a = assignment.load("midterm")
    v = variants["ada"]
    base = exam.winnow(exam.tokens(exam.paper(a, v, "ada")))
    own = exam.winnow(exam.tokens(solved("ada", v))) - base
    copy = exam.winnow(exam.tokens(renamed(solved("ada", v)))) - base
    alt_text = exam.render((ROOT / "tests" / "exam_corpus" / "alt_correct.py").read_text(encoding="utf-8"), v, "x")
    alt = exam.winnow(exam.tokens(alt_text)) - base
    share = lambda x, y: len(x & y) / min(len(x), len(y))  # noqa: E731
    assert share(own, copy) >= 0.8 > share(own, alt)
    # A copy with a `pass` (or `; pass`) after every statement is the same copy (red team: it went unreported).
    padded = "\n".join(line + ("; pass" if line.strip() and not line.rstrip().endswith((":", ",", "(", "[", "\\"))
                                and line.startswith("    ") else "") for line in renamed(solved("ada", v)).splitlines())
    assert padded.count("pass") > 20
    compile(padded, "padded", "exec")
    assert share(own, exam.winnow(exam.tokens(padded)) - base) >= 0.8


def _padded_with_dead_statements(code: str) -> str:
    """After every statement of every function body, statements that do nothing: a store to a name or attribute
    never read (`_u3 = 3`, `self._p3 = x`, chained: `_v3 = _u3`) or a bare expression (`3`)."""
    tree = ast.parse(code)
    n = 0
    for node in ast.walk(tree):
        if isinstance(node, (ast.FunctionDef, ast.If, ast.For, ast.With)):
            body = []
            for stmt in node.body:
                n += 1
                pad = [f"_u{n} = {n}", f"_v{n} = _u{n} + 1", f"{n}"]
                if isinstance(node, ast.FunctionDef) and node.args.args and node.args.args[0].arg == "self":
                    pad.append(f"self._p{n} = _v{n}")
                body += ([] if isinstance(stmt, ast.Return) else [ast.parse(x).body[0] for x in pad]) + [stmt]
            node.body = body
    return ast.unparse(ast.fix_missing_locations(tree))


def test_a_copy_padded_with_statements_that_do_nothing_is_still_a_copy(work, variants):
    """Red team s19: bo handed in ada's answer with his own constants and `_uN = N` after every statement: 100/100,
    and neither `grade exam audit` nor `grade report` listed the pair (every k-gram was broken; ada and dana, with
    the same answer unpadded, shared 100%). Statements that change nothing (stores never read, bare expressions)
    are dropped from the comparison as `pass` is."""
    a = assignment.load("midterm")
    v = variants["ada"]
    base = exam.winnow(exam.tokens(exam.paper(a, v, "ada")))
    own = exam.winnow(exam.tokens(solved("ada", v))) - base
    padded = _padded_with_dead_statements(renamed(solved("ada", v)))
    assert padded.count("_u") > 30
    compile(padded, "padded", "exec")
    share = lambda x, y: len(x & y) / min(len(x), len(y))  # noqa: E731
    assert share(own, exam.winnow(exam.tokens(padded)) - base) >= 0.8
    # grade report's comparison (the same tokens, its own k-gram length) lists the pair too
    from autograder import similarity
    pairs, _fps, _base = similarity.similar_pairs({"ada": [solved("ada", v)], "bo": [padded]},
                                                  [exam.paper(a, v, "ada")])
    assert [(p.a, p.b) for p in pairs] == [("ada", "bo")], pairs
    # ... and an independently written answer is still not a copy, padded or not
    alt_text = exam.render((ROOT / "tests" / "exam_corpus" / "alt_correct.py").read_text(encoding="utf-8"), v, "x")
    assert share(own, exam.winnow(exam.tokens(alt_text)) - base) < 0.8


def _padded_with_inert_calls(code: str) -> str:
    """After every statement of every function body, calls that do nothing: `print(end="")`, `len("N")`, `abs(N)`."""
    tree = ast.parse(code)
    n = 0
    for node in ast.walk(tree):
        if isinstance(node, (ast.FunctionDef, ast.If, ast.For, ast.With)):
            body = []
            for stmt in node.body:
                n += 1
                pad = ['print(end="")', f'len("{n}")', f"abs({n})", f"print(sep='', end='', flush=True)"]
                body += ([] if isinstance(stmt, ast.Return) else [ast.parse(x).body[0] for x in pad]) + [stmt]
            node.body = body
    return ast.unparse(ast.fix_missing_locations(tree))


def test_a_copy_padded_with_calls_that_do_nothing_is_still_a_copy(variants):
    """Left by red team s19: a copy with `print(end='')` after every statement shared nothing with its source (a
    call might do something, so it was kept). Calls of builtins that change nothing (len, abs, a print() with
    nothing to print), on arguments that call nothing else, are dropped like `pass`; where the file binds the
    name to its own function, or a print() prints something, the statement is kept."""
    from autograder import similarity
    a = assignment.load("midterm")
    v = variants["ada"]
    base = exam.winnow(exam.tokens(exam.paper(a, v, "ada")))
    own = exam.winnow(exam.tokens(solved("ada", v))) - base
    padded = _padded_with_inert_calls(renamed(solved("ada", v)))
    assert padded.count('print(end="")') + padded.count("print(end='')") > 20
    compile(padded, "padded", "exec")
    share = lambda x, y: len(x & y) / min(len(x), len(y))  # noqa: E731
    assert share(own, exam.winnow(exam.tokens(padded)) - base) >= 0.8
    pairs, _fps, _base = similarity.similar_pairs({"ada": [solved("ada", v)], "bo": [padded]},
                                                  [exam.paper(a, v, "ada")])
    assert [(p.a, p.b) for p in pairs] == [("ada", "bo")], pairs
    # what is kept: a call of the file's own `len`, a print of something, a call with a call inside, print(end=x)
    kept = ('def len(x):\n    return x\nlen(3)\n', 'print("hi")\n', 'abs(f(3))\n', 'x = "-"\nprint(end=x)\n',
            'print(1, end="")\n', 'print(file=f)\n')
    for code in kept:  # (the last line is the call in question)
        assert len(code.splitlines()) not in {start[0] for start, _ in similarity._dead(code)}, code
    assert similarity._dead('print()\nprint(end="", sep=" ")\nlen("abc")\n') == \
        [((1, 0), (1, 7)), ((2, 0), (2, 22)), ((3, 0), (3, 10))]


def _padded_with(code: str, pad: str) -> str:
    """After every statement of every function body, the statement `pad` (the same each time)."""
    tree = ast.parse(code)
    for node in ast.walk(tree):
        if isinstance(node, (ast.FunctionDef, ast.If, ast.For, ast.With)):
            node.body = [x for stmt in node.body
                         for x in ([] if isinstance(stmt, ast.Return) else [ast.parse(pad).body[0]]) + [stmt]]
    return ast.unparse(ast.fix_missing_locations(tree))


@pytest.mark.parametrize("pad", ['print("", end="")', "assert True", "if 0:\n    pass", "sorted(())",
                                 "try:\n    pass\nexcept Exception:\n    pass", "import math"])
def test_a_copy_padded_with_one_statement_over_and_over_is_still_a_copy(variants, pad):
    """Red team, round 22: the statements dropped as doing nothing are a list, and a copy padded after every
    statement with one not on it (`print("", end="")`, `assert True`, `if 0: pass`, `sorted(())`) shared about 5%
    with its source. A statement written alike many times over, binding nothing and leaving nothing, is dropped as
    padding; the independent answer stays apart."""
    from autograder import similarity
    a = assignment.load("midterm")
    v = variants["ada"]
    base = exam.winnow(exam.tokens(exam.paper(a, v, "ada")))
    own = exam.winnow(exam.tokens(solved("ada", v))) - base
    padded = _padded_with(renamed(solved("ada", v)), pad)
    assert padded.count(ast.unparse(ast.parse(pad)).split("\n")[0]) > 20
    compile(padded, "padded", "exec")
    share = lambda x, y: len(x & y) / min(len(x), len(y))  # noqa: E731
    assert share(own, exam.winnow(exam.tokens(padded)) - base) >= 0.8
    pairs, _fps, _base = similarity.similar_pairs({"ada": [solved("ada", v)], "bo": [padded]},
                                                  [exam.paper(a, v, "ada")])
    assert [(p.a, p.b) for p in pairs] == [("ada", "bo")], pairs
    alt_text = exam.render((ROOT / "tests" / "exam_corpus" / "alt_correct.py").read_text(encoding="utf-8"), v, "x")
    assert share(own, exam.winnow(exam.tokens(alt_text)) - base) < 0.8


def test_a_roster_reads_as_instructors_write_it_and_refuses_what_would_stop_grading(tmp_path):
    """Red team (exam day): `ID,Extra Minutes` lost bo's extra time without a word; a semicolon roster was refused
    with no hint why; extra_minutes of nan, inf or 1e12 stopped `grade batch` part way with a traceback."""
    def roster(text: str):
        (tmp_path / "r.csv").write_text(text, encoding="utf-8")
        return exam.read_roster(tmp_path / "r.csv")
    assert roster("ID,Extra Minutes,Name\nbo,15,Bo\n")["bo"].extra_minutes == 15
    assert roster("id,extra_time\nbo,5\n")["bo"].extra_minutes == 5
    with pytest.raises(exam.ExamError, match="separated by ';'"):
        roster("id;extra_minutes\nbo;15\n")
    for bad in ("nan", "inf", "1e12", "-5"):
        with pytest.raises(exam.ExamError, match="line 2: extra_minutes .* is not between 0 and"):
            roster(f"id,extra_minutes\nbo,{bad}\n")


def test_a_roster_saved_by_korean_excel_or_as_unicode_text_is_read(tmp_path):
    """QA s9: Excel on Korean Windows saves "CSV" in CP949 and "Unicode text" as UTF-16; both were refused with a raw
    codec error ("'utf-8' codec can't decode byte 0xb1"), so `grade exam papers` and `grade batch --roster` stopped.
    They read as the same roster as its UTF-8 form (the Korean name keeps its one id); bytes that are no text are
    refused with the fix."""
    text = "id,extra_minutes\r\n김철수,10\r\nada,0\r\n"
    want = exam.read_roster(_written_roster(tmp_path / "utf8.csv", text.encode("utf-8")))
    assert want[exam.normalize_id("김철수")].extra_minutes == 10
    for name, data in (("cp949.csv", text.encode("cp949")), ("utf16.csv", text.encode("utf-16")),
                       ("bom.csv", b"\xef\xbb\xbf" + text.encode("utf-8"))):
        got = exam.read_roster(_written_roster(tmp_path / name, data))
        assert got == want, name
    with pytest.raises(exam.ExamError, match="CSV UTF-8"):
        exam.read_roster(_written_roster(tmp_path / "bin.csv", b"id\n\xff\xfe\x00\xd8\x81\n"))
    # UX s13: what Excel writes as "Unicode text" is UTF-16 with tabs between the columns (it was refused with
    # "save it as comma-separated CSV", though the README names it as read); a Korean-Windows CSV of tabs too
    tabs = text.replace(",", "\t")
    for name, data in (("unicode_text.txt", tabs.encode("utf-16")), ("tabs.csv", tabs.encode("cp949"))):
        assert exam.read_roster(_written_roster(tmp_path / name, data)) == want, name


def _written_roster(path: Path, data: bytes) -> Path:
    path.write_bytes(data)
    return path


def test_an_account_named_like_a_resubmission_is_not_that_student(work, papers):
    """eve-2@other.example (not on the roster) submitted after eve: with a roster of bare ids, its export id `eve-2`
    must not be taken for eve's second folder, which would grade it, the later one, as eve."""
    (work / "roster_bare.csv").write_text("id,extra_minutes\neve,0\n")
    c = exam.require(assignment.load("midterm"))
    answer = solved("eve", exam.variant_for(SECRET.encode(), "midterm", "eve", c.variants))
    untouched = (ROOT / "student_template" / "midterm.py").read_text(encoding="utf-8")
    files = {"submission_1": ("eve@uni.example", answer, END - dt.timedelta(minutes=10)),
             "submission_2": ("eve-2@other.example", untouched, END - dt.timedelta(minutes=1))}
    write_export(work / "named_like", files)
    r = graded_export(work, "named_like", "roster_bare.csv")
    assert r["eve"].origin["folder"] == "submission_1" and r["eve"].score == 100
    assert r["eve-2"].error is not None and "roster" in r["eve-2"].error.en


def test_a_korean_roster_id_is_one_id_everywhere_and_never_anyone_elses(work):
    """Audit D #1: a roster id in Korean became `submission` (two of them refused `grade exam papers`; one got
    papers/submission/), while its file `김철수.py` was `student-<hash>`, "not on this exam's roster", and a file
    named submission.py (on Gradescope, any Korean email) was graded against that student's paper. One id now, the
    same from the roster, the papers, a file name (UTF-8, NFD, CP949), an export and the zip's entry point."""
    import unicodedata
    from autograder import discover, gradescope
    (work / "roster_ko.csv").write_text("id,extra_minutes\nada,0\n김철수,20\n이영희@uni.example,0\n", encoding="utf-8")
    p = grade("exam", "papers", "midterm", "--roster", "roster_ko.csv", "-o", "papers_ko", "--secret-file",
              "exam.secret", cwd=work)
    assert p.returncode == 0, p.stderr
    kim, lee = exam.normalize_id("김철수"), exam.normalize_id("이영희@uni.example")
    assert kim != lee and "submission" not in (kim, lee) and kim.isascii() and lee.isascii()
    assert sorted(x.name for x in (work / "papers_ko").iterdir()) == sorted(["ada", kim, lee, "manifest.csv"])
    assert f"응시자: 김철수 ({kim})" in (work / "papers_ko" / kim / "midterm.py").read_text(encoding="utf-8")
    rows = {r["id"]: r for r in csv.DictReader((work / "papers_ko" / "manifest.csv").open(encoding="utf-8"))}
    assert rows[kim]["name"] == "김철수" and rows[lee]["name"] == "이영희" and rows["ada"]["name"] == ""
    # a file name as a macOS zip (NFD) or a Korean Windows zip (CP949) writes it; an export's or the zip's submitter
    assert discover.entry_id("김철수") == discover.entry_id(unicodedata.normalize("NFD", "김철수")) == kim
    assert discover.entry_id(os.fsdecode("김철수".encode("cp949"))) == kim
    assert discover.export_id({"submitters": [{"email": "이영희@uni.example"}]}) == lee
    a = assignment.load("midterm")
    plan = exam.Plan(a, exam.require(a), exam.read_roster(work / "roster_ko.csv"), SECRET.encode())
    for email, whose in (("이영희@uni.example", lee), ("박지성@uni.example", None), ("김철수@uni.example", kim)):
        meta = {"users": [{"name": "x", "sid": "1", "email": email}]}
        sid = plan.bound_id(gradescope._student(meta), exam.submitter_emails({"submitters": gradescope._people(meta)}))
        assert (sid if sid in plan.students else None) == whose, (email, sid)
    # grade batch: 김철수.py is graded as 김철수 (her paper, her extra time); submission.py is nobody on the roster
    answer = solved(kim, exam.variant_for(SECRET.encode(), "midterm", kim, exam.require(a).variants))
    (work / "ko").mkdir()
    for name in ("김철수.py", "submission.py"):
        (work / "ko" / name).write_text(answer, encoding="utf-8")
    r = graded_export(work, "ko", "roster_ko.csv")
    assert sorted(r) == sorted([kim, "submission"]), sorted(r)
    assert r[kim].score == 100 and r[kim].error is None, r[kim].error
    assert r["submission"].error is not None and "roster" in r["submission"].error.en


def test_a_wrong_secret_is_the_instructors_error_and_never_the_students(work, papers, variants):
    """Audit D #2: `grade batch --secret-file wrong.secret` exited 0, ada's 100 became 26 with "your paper sets
    QKV_BIAS = True" (it says False), and the audit flagged everyone; the zip did the same. Papers now carry a code
    made from the secret: most files carrying another code stop the batch (exit 2, nothing graded) and the zip's
    --try, as the instructor's error, without the secret in any output; one such file is that student's (audit)."""
    a = assignment.load("midterm")
    right, wrong = exam.paper_mark(SECRET.encode(), "midterm"), exam.paper_mark(b"a-wrong-secret-0123456789", "midterm")
    assert right != wrong and right in (papers / "ada" / "midterm.py").read_text()
    (work / "wrong.secret").write_text("a-wrong-secret-0123456789\n")
    answer = lambda sid, mark: exam.render((ROOT / "reference" / "midterm.py").read_text(encoding="utf-8"),  # noqa: E731
                                           variants[sid], sid, mark)
    subs = work / "marked"
    subs.mkdir()
    (subs / "ada.py").write_text(answer("ada", right), encoding="utf-8")
    (subs / "dana.py").write_bytes((papers / "dana" / "midterm.py").read_bytes())
    (subs / "bo.py").write_text(answer("bo", wrong), encoding="utf-8")  # a paper of another secret: bo's own finding
    p = grade("batch", "marked", "--assignment", "midterm", "--roster", "roster.csv", "--secret-file", "wrong.secret",
              "--out", "marked_wrong", cwd=work)
    assert p.returncode == 2 and "not the one the papers were made with" in p.stderr, p.stderr
    assert "2 of the 3 submissions" in p.stderr and not list((work / "marked_wrong").glob("*.json"))
    assert SECRET not in p.stdout + p.stderr and "a-wrong-secret" not in p.stdout + p.stderr
    r = graded_export(work, "marked", "roster.csv")  # the right secret: graded, bo's paper is his finding
    assert r["ada"].score == 100 and "paper_code" not in r["ada"].exam and "paper_code" not in r["dana"].exam
    assert r["bo"].exam["paper_code"] == "other" and r["bo"].score == 100
    found = {(f.kind, tuple(f.students)) for f in exam.audit(work / "marked_results")}
    assert ("other_secret", ("bo",)) in found and not any(k == "other_secret" and w != ("bo",) for k, w in found)
    # papers of an older release carry no code: graded as before, whatever the secret
    (work / "unmarked").mkdir()
    (work / "unmarked" / "ada.py").write_text(solved("ada", variants["ada"]), encoding="utf-8")
    p = grade("batch", "unmarked", "--assignment", "midterm", "--roster", "roster.csv", "--secret-file",
              "wrong.secret", "--out", "unmarked_results", cwd=work)
    assert p.returncode == 0, p.stderr
    # the zip: --try with a paper stops the build and keeps no zip
    p = grade("gradescope", "--assignment", "midterm", "--roster", "roster.csv", "--secret-file", "wrong.secret",
              "-o", "wrong.zip", "--try", "marked/ada.py", "--try-as", "ada", cwd=work)
    assert p.returncode == 2 and "another exam secret" in p.stderr and not (work / "wrong.zip").exists(), p.stderr
    assert SECRET not in p.stdout + p.stderr and "a-wrong-secret" not in p.stdout + p.stderr
    plan = exam.Plan(a, exam.require(a), exam.read_roster(work / "roster.csv"), b"a-wrong-secret-0123456789")
    from autograder.jobs import Job
    with pytest.raises(exam.WrongSecret):  # what the entry point meets on Gradescope for each student
        plan.check_marks([Job("ada", subs / "ada.py")])


def test_paper_codes_that_students_made_up_do_not_stop_the_batch(work, papers, variants):
    """A wrong secret gives one other code, the same on every paper. Codes that students made up or edited differ
    from one another: two such files of three coded ones stopped `grade batch` for the whole sitting as a wrong
    secret (red team s10). They are now those students' findings (other_secret), and the batch is graded; the same
    other code on most coded files still stops it."""
    from autograder.jobs import Job
    a = assignment.load("midterm")
    right = exam.paper_mark(SECRET.encode(), "midterm")
    subs = work / "forged"
    subs.mkdir()
    for sid, mark in (("ada", right), ("bo", "0123456789ab"), ("dana", "ba9876543210")):
        (subs / f"{sid}.py").write_text(exam.render((ROOT / "reference" / "midterm.py").read_text(encoding="utf-8"),
                                                    variants[sid], sid, mark), encoding="utf-8")
    plan = exam.Plan(a, exam.require(a), exam.read_roster(work / "roster.csv"), SECRET.encode())
    plan.check_marks([Job(sid, subs / f"{sid}.py") for sid in ("ada", "bo", "dana")])
    assert plan.foreign == {"bo", "dana"}
    (subs / "dana.py").write_text((subs / "dana.py").read_text(encoding="utf-8").replace("ba9876543210",
                                                                                        "0123456789ab"),
                                  encoding="utf-8")
    with pytest.raises(exam.WrongSecret):
        plan.check_marks([Job(sid, subs / f"{sid}.py") for sid in ("ada", "bo", "dana")])


def test_files_of_ids_off_the_roster_cannot_outvote_the_roster_on_the_secret(work, papers, variants):
    """Red team s17: four files of ids the roster does not list (other accounts, files added to the folder), carrying
    one made-up code, were "most of the coded files" beside three students' papers and stopped the whole batch as a
    wrong secret. Only roster students' own submissions vote, one each; the others are still recorded as foreign."""
    from autograder.jobs import Job
    a = assignment.load("midterm")
    right = exam.paper_mark(SECRET.encode(), "midterm")
    subs = work / "outvoted"
    subs.mkdir()
    ref = (ROOT / "reference" / "midterm.py").read_text(encoding="utf-8")
    for sid in ("ada", "bo", "dana"):
        (subs / f"{sid}.py").write_text(exam.render(ref, variants[sid], sid, right), encoding="utf-8")
    intruders = [f"x{i}" for i in range(4)]
    for sid in intruders:
        (subs / f"{sid}.py").write_text(exam.render(ref, variants["ada"], "ada", "0123456789ab"), encoding="utf-8")
    plan = exam.Plan(a, exam.require(a), exam.read_roster(work / "roster.csv"), SECRET.encode())
    plan.check_marks([Job(sid, subs / f"{sid}.py") for sid in ("ada", "bo", "dana", *intruders)])
    assert plan.foreign == set(intruders)
    with pytest.raises(exam.WrongSecret):  # no roster student in the batch (the zip's --try as local.try): all vote
        plan.check_marks([Job("local.try", subs / "x0.py")])
    p = grade("batch", "outvoted", "--assignment", "midterm", "--roster", "roster.csv", "--secret-file", "exam.secret",
              "--out", "outvoted_results", cwd=work)
    assert p.returncode == 0, p.stderr
    scores = {f.stem: json.loads(f.read_text())["score"] for f in (work / "outvoted_results").glob("*.json")}
    assert scores["ada"] == scores["bo"] == scores["dana"] == 100, scores


def test_the_audit_reads_only_the_files_that_were_graded(tmp_path, variants):
    """Audit D #3: the audit read whatever was at the stored path: with the folder moved away it said "no findings",
    and with chen's copy of ada's file overwritten by chen's own paper the copy's findings were gone. The results
    store each file's sha256: a file not there any more, or not the one graded, is reported as such."""
    import hashlib
    from autograder.results import write_result
    out = tmp_path / "results"
    out.mkdir()
    copy = renamed(solved("ada", variants["ada"]))
    for sid, text in (("ada", solved("ada", variants["ada"])), ("chen", copy), ("dana", copy)):
        (tmp_path / f"{sid}.py").write_text(text, encoding="utf-8")
        write_result(out, SubmissionResult(student=sid, submission=f"{sid}.py", assignment="midterm", questions=[],
                                           sha256=hashlib.sha256(text.encode()).hexdigest(),
                                           exam={"variant": variants[sid], "path": str(tmp_path / f"{sid}.py")}), "en")
    found = {(f.kind, tuple(sorted(f.students))) for f in exam.audit(out)}
    assert ("similar", ("chen", "dana")) in found and ("other_variant", ("ada", "chen")) in found, found
    (tmp_path / "chen.py").write_text(solved("chen", variants["chen"]), encoding="utf-8")  # overwritten since
    (tmp_path / "dana.py").unlink()  # moved away
    found = {(f.kind, tuple(sorted(f.students))): f.detail for f in exam.audit(out)}
    assert "changed since it was graded" in found[("changed", ("chen",))], found
    assert "is not there now" in found[("missing", ("dana",))], found
    assert not any(k == "not_compared" or ("chen" in w and k not in ("changed",)) for k, w in found), found
    p = grade("exam", "audit", str(out), cwd=tmp_path)
    assert p.returncode == 0 and "no findings" not in p.stdout and "missing" in p.stdout, p.stdout


def test_the_audit_reads_a_graded_file_whose_name_is_not_utf8(work, variants):
    """QA s9: `김철수.py` as a Korean Windows zip names it (CP949 bytes) was graded, but its result's path came back
    from JSON with U+FFFD for those bytes, and `grade exam audit` called the file "not there now (no such file)":
    that student was never audited. The result keeps the path's bytes; the audit reads the file."""
    (work / "roster_cp949.csv").write_text("id,extra_minutes\n김철수,0\n", encoding="utf-8")
    kim = exam.normalize_id("김철수")
    (work / "cp949").mkdir()
    (work / "cp949" / os.fsdecode("김철수".encode("cp949") + b".py")).write_text(solved(kim, variants["ada"]),
                                                                                 encoding="utf-8")
    r = graded_export(work, "cp949", "roster_cp949.csv")
    assert sorted(r) == [kim] and r[kim].error is None, r
    found = {f.kind: f.detail for f in exam.audit(work / "cp949_results")}
    assert "missing" not in found and "other_variant" in found, found  # ada's constants in kim's file: read


def test_the_audit_of_a_batch_graded_without_roster_blames_nobody_for_their_paper(tmp_path, variants):
    """QA s9: `grade batch` without --roster grades everyone against [exam.default] (with a note); its audit then
    said of each student answering their own paper "constants differ from their paper", though no paper was
    compared. Without a roster there is no paper to differ from; the copies are still found."""
    import hashlib
    from autograder.results import write_result
    out = tmp_path / "results"
    out.mkdir()
    default = dict(exam.require(assignment.load("midterm")).default)
    for sid in ("ada", "bo"):
        text = solved(sid, variants[sid])
        (tmp_path / f"{sid}.py").write_text(text, encoding="utf-8")
        write_result(out, SubmissionResult(student=sid, submission=f"{sid}.py", assignment="midterm", questions=[],
                                           sha256=hashlib.sha256(text.encode()).hexdigest(),
                                           exam={"variant": default, "roster": False,
                                                 "path": str(tmp_path / f"{sid}.py")}), "en")
    found = {(f.kind, tuple(sorted(f.students))) for f in exam.audit(out)}
    assert not any(k in ("other_variant", "rebinds") for k, _ in found), found
    assert ("similar", ("ada", "bo")) in found, found


def test_an_earlier_submission_is_judged_in_its_students_own_window(work, papers, variants):
    """Audit D #4: chen (30 extra minutes) submitted 20 minutes after the end and again 31.5 minutes after it. The
    latest was graded as chen, 2 minutes late; the earlier (`chen-2`, inside chen's window) read 20 minutes late in
    scores.csv, in its note, in the audit and in the report's late list. It is chen's: 0 minutes late."""
    from autograder import report
    answer = solved("chen", variants["chen"])
    write_export(work / "twice", {
        "submission_1": ("chen@uni.example", answer, END + dt.timedelta(minutes=20)),
        "submission_2": ("chen@uni.example", answer, END + dt.timedelta(minutes=31, seconds=30))})
    r = graded_export(work, "twice", "roster.csv")
    assert sorted(r) == ["chen", "chen-2"] and r["chen"].origin["folder"] == "submission_2"
    assert r["chen"].exam["late"] == 2 and r["chen"].exam["extra_minutes"] == 30
    early = r["chen-2"]
    assert early.exam["late"] == 0 and early.exam["extra_minutes"] == 30, early.exam
    assert not any("after your end time" in n.en for n in early.notes)
    rows = {row["student"]: row for row in csv.DictReader((work / "twice_results" / "scores.csv").open())}
    assert rows["chen-2"]["late"] == "0" and rows["chen"]["late"] == "2"
    assert not any(f.kind == "late" and "chen-2" in f.students for f in exam.audit(work / "twice_results"))
    loaded, bad = report.load(work / "twice_results")
    assert [x["id"] for x in report.compute(loaded, bad, {})["late"]] == ["chen"]


def test_the_report_shows_the_variants_of_a_real_exam_batch(graded, variants):
    """Audit D #5: the report looked for `extra_data.variant`; grade batch stores it in the result's `exam`, so the
    "Exam variants" section was empty on every real exam (test_report's results were made up). From real output:"""
    from autograder import report
    loaded, bad = report.load(graded["out"])
    data = report.compute(loaded, bad, {})
    by_id = {s["id"]: s for s in data["students"]}
    assert by_id["ada"]["variant"] == report._variant_key(variants["ada"]) and by_id["frank"]["variant"] is None
    assert sorted(s for v in data["variants"] for s in v["students"]) == ["ada", "bo", "chen", "dana"], data["variants"]
    assert data["variants"][0]["mean_fraction"] == 0  # worst first: an untouched paper
    assert "Exam variants (worst first)" in report.render_index(data, report.plots(data, loaded), "midterm")


def test_gradescope_records_a_submission_made_before_the_exam_opened(tmp_path, monkeypatch, work, variants):
    """Audit D #6: the README promises that a submission dated before [exam] start is recorded (`early`); grade batch
    did, but on Gradescope results.json has no `internal` copy and its extra_data only had `late`. The zip's entry
    point, with the zip's roster and secret (here the test's), and a submission 90 minutes before the start:"""
    from autograder import gradescope
    a = assignment.load("midterm")
    start = exam.require(a).start
    monkeypatch.setattr(exam, "gradescope_plan", lambda a, times: exam.Plan(
        a, exam.require(a), exam.read_roster(work / "roster.csv"), SECRET.encode()))
    root = tmp_path / "autograder"
    (root / "submission").mkdir(parents=True)
    (root / "submission" / "midterm.py").write_text(solved("ada", variants["ada"]), encoding="utf-8")
    (root / "submission_metadata.json").write_text(json.dumps({
        "id": 1, "created_at": (start - dt.timedelta(minutes=90)).isoformat(),
        "users": [{"name": "Ada", "sid": "1", "email": "ada@uni.example"}]}), encoding="utf-8")
    data = gradescope.run_submission(root, assignment_name="midterm", echo=lambda _m: None)
    assert data["score"] == 100 and data["extra_data"]["student"] == "ada", data["extra_data"]
    assert data["extra_data"]["early"] == 90 and data["extra_data"]["late"] == 0
    assert json.loads((root / "results" / "results.json").read_text())["extra_data"]["early"] == 90


def test_on_gradescope_an_exam_score_is_held_back_with_its_hidden_checks(tmp_path, monkeypatch, work, variants):
    """Exam audit s9: results.json set the whole result `visible`, so the total (hidden checks' points included)
    could show to a student during the exam. An exam's result takes its hidden checks' visibility; a lab's stays
    visible."""
    from autograder import gradescope
    a = assignment.load("midterm")
    monkeypatch.setattr(exam, "gradescope_plan", lambda a, times: exam.Plan(
        a, exam.require(a), exam.read_roster(work / "roster.csv"), SECRET.encode()))
    root = tmp_path / "autograder"
    (root / "submission").mkdir(parents=True)
    (root / "submission" / "midterm.py").write_text(solved("ada", variants["ada"]), encoding="utf-8")
    (root / "submission_metadata.json").write_text(json.dumps({
        "id": 1, "created_at": exam.require(a).start.isoformat(),
        "users": [{"name": "Ada", "sid": "1", "email": "ada@uni.example"}]}), encoding="utf-8")
    data = gradescope.run_submission(root, assignment_name="midterm", echo=lambda _m: None)
    assert data["score"] == 100, data
    held = {t["visibility"] for t in data["tests"] if "staff" not in t["tags"]}
    assert held == {"visible", "after_published"}, held
    assert data["visibility"] == "after_published"
    from autograder import results
    lab = SubmissionResult(student="s", submission="attention.py", assignment="attention",
                                   questions=["CausalAttention"])
    assert results.to_gradescope(lab)["visibility"] == "visible"


@pytest.mark.parametrize("policy", ["zero", "per_minute"])
def test_a_late_note_on_gradescope_does_not_tell_the_held_back_score(tmp_path, monkeypatch, work, variants, policy):
    """Red team s19: the score of an exam is held back (after_published) with its hidden checks, but the note of a
    late submission, visible with the result, said how many points were taken off: the whole score under "zero",
    min(score, minutes x rate) under "per_minute". ada, 200 minutes late, read "100 point(s) off". The note now
    says the rule, which the paper already states; the points taken off stay in the staff's results."""
    import dataclasses
    from autograder import gradescope
    a = assignment.load("midterm")
    cfg = dataclasses.replace(exam.require(a), late_policy=policy, late_penalty=1.0)
    monkeypatch.setattr(exam, "gradescope_plan", lambda a, times: exam.Plan(
        a, cfg, exam.read_roster(work / "roster.csv"), SECRET.encode()))
    root = tmp_path / "autograder"
    (root / "submission").mkdir(parents=True)
    (root / "submission" / "midterm.py").write_text(solved("ada", variants["ada"]), encoding="utf-8")
    (root / "submission_metadata.json").write_text(json.dumps({
        "id": 1, "created_at": (cfg.end + dt.timedelta(minutes=200)).isoformat(),
        "users": [{"name": "Ada", "sid": "1", "email": "ada@uni.example"}]}), encoding="utf-8")
    for lang in ("en", "ko"):
        data = gradescope.run_submission(root, assignment_name="midterm", lang=lang, echo=lambda _m: None)
        assert data["visibility"] == "after_published" and data["score"] == 0
        assert "200" in data["output"], data["output"]  # the minutes late: the student's own, and known to them
        shown = data["output"] + " ".join(t["output"] for t in data["tests"] if t["visibility"] == "visible")
        assert not re.search(r"(?<![\d.])100(?![\d.])", shown), shown  # ada's score before the penalty


def test_an_exam_result_that_is_an_error_is_reused_by_a_rerun(work, papers):
    """Audit D #7: "not on this exam's roster" and "earlier submission" results stored an empty sha256, so every
    rerun regraded them as "file changed". They store the file's hash now, and a rerun reuses them."""
    import hashlib
    subs = work / "rerun"
    subs.mkdir()
    (subs / "dana.py").write_bytes((papers / "dana" / "midterm.py").read_bytes())
    (subs / "frank.py").write_text("x = 1\n", encoding="utf-8")  # not on the roster
    r = graded_export(work, "rerun", "roster.csv")
    assert r["frank"].error is not None and "roster" in r["frank"].error.en
    assert r["frank"].sha256 == hashlib.sha256(b"x = 1\n").hexdigest()
    p = grade("batch", "rerun", "--assignment", "midterm", "--roster", "roster.csv", "--secret-file", "exam.secret",
              "--out", "rerun_results", cwd=work)
    assert p.returncode == 0 and "graded 0, reused 2" in p.stdout, p.stdout + p.stderr
    assert "file changed" not in p.stdout + p.stderr
