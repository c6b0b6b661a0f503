"""`grade report`: do its figures follow from the result files, does each student page show exactly what
Gradescope shows, is student text inert, are copies found and given code ignored, does the page render?"""
from __future__ import annotations

import csv
import hashlib
import json
import math
import os
import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from autograder import report, similarity, source
from autograder.messages import Message
from autograder.results import CheckResult, SubmissionResult, grades_csv_text, write_result
from conftest import REFERENCE, ROOT, SKELETON

GRADE = Path(sys.executable).parent / "grade"
ARTIFACTS = ROOT / "build" / "test-artifacts"
HOSTILE = "<script>document.title='pwned'</script><img src=x onerror=alert(1)>"


def renamed_copy(code: str) -> str:
    """What a copier does: other names, no comments or docstrings, different spacing."""
    names = {"queries": "q_mat", "keys": "k_mat", "values": "v_mat", "attn_scores": "raw", "attn_weights": "w",
             "context_vec": "result", "inputs": "data", "x": "inp", "b": "bsz", "num_tokens": "n_tok"}
    code = re.sub(r'"""[\s\S]*?"""', '""', code)
    code = re.sub(r"#[^\n]*", "", code)
    code = re.sub(r"\b(" + "|".join(names) + r")\b", lambda m: names[m.group(1)], code)
    return code.replace(" = ", "  =  ").replace(", ", " , ")


# ---------------------------------------------------------------------------------------------- synthetic class

def check(nodeid, question, points, passed, message=None, public=True, staff=""):
    return CheckResult(name=nodeid.split("::")[-1], nodeid=nodeid, question=question, points=points,
                       score=points if passed else 0.0, status="passed" if passed else "failed", public=public,
                       visibility="visible" if public else "after_published",
                       message=None if passed or message is None else Message(*message), staff=staff)


def differs(n: int, exp: float, got: float) -> tuple[str, str]:
    return (f"`CausalAttention(3, 2, 6, 0.0)(x)` differs in {n} of 24 entries: expected {exp}, got {got}.",
            f"`CausalAttention(3, 2, 6, 0.0)(x)`의 24개 중 {n}개 값이 다릅니다: 기댓값 {exp}, 실제 {got}.")


UNDEFINED = ("`softmax_naive` is not defined in your submission.", "제출물에 `softmax_naive`이(가) 정의되어 있지 않습니다.")
# Who passes what: (public steps check, hidden steps check, public causal check, hidden causal check)
CLASS = {
    "ana": (True, True, True, True),
    "ben": (True, True, differs(3, -0.4519, 0.12), True),
    "cho": (True, False, differs(17, 1.5, 2.0), True),
    "dev": (UNDEFINED, False, True, False),
    "eve": (UNDEFINED, False, differs(24, 0.25, float("nan")), False),
    "mallory": (True, True, (HOSTILE + " differs in 2 entries", HOSTILE), True),
}
SOURCES = {  # what each student submitted, for the similarity section
    "ana": REFERENCE.read_text(),
    "ben": renamed_copy(REFERENCE.read_text()),
    "cho": SKELETON.read_text(),
    "dev": SKELETON.read_text(),
    "eve": SKELETON.read_text().replace("raise NotImplementedError", "raise NotImplementedError  # todo"),
    "mallory": "# </pre><script>alert('code')</script>\n"
               "access = 'user'  # \u202e \u2066 if access == 'admin': \u2069 \u2066  (Trojan Source)\n"
               + REFERENCE.read_text(),
    "zed": REFERENCE.read_text(),
}


def synthetic_result(sid: str, plan, sha: str) -> SubmissionResult:
    steps_pub, steps_hid, causal_pub, causal_hid = plan
    fail = lambda x: x if isinstance(x, tuple) else ("wrong", "틀림")  # noqa: E731
    checks = [
        check("public/test_public.py::test_softmax", "steps", 1.0, steps_pub is True, fail(steps_pub)),
        check("hidden/test_hidden.py::test_softmax_hidden", "steps", 2.0, steps_hid is True,
              ("softmax_naive differs on hidden input 3 by 0.5", "숨은 입력 3에서 0.5만큼 다릅니다"), public=False),
        check("public/test_public.py::test_causal", "CausalAttention", 3.0, causal_pub is True, fail(causal_pub),
              staff="" if causal_pub is True else "Traceback: staff only"),
        check("hidden/test_hidden.py::test_causal_hidden", "CausalAttention", 2.0, causal_hid is True,
              ("CausalAttention differs on hidden seed 7", "숨은 시드 7에서 다릅니다"), public=False),
    ]
    return SubmissionResult(student=sid, submission=f"{sid}.py", assignment="attention", checks=checks,
                            questions=["steps", "CausalAttention"], sha256=sha, duration=1.0,
                            notes=[Message(f"note for {sid} <b>bold</b>", f"{sid} 메모 <b>굵게</b>")])


@pytest.fixture(scope="module")
def synthetic(tmp_path_factory):
    """Result files for a small class (one crashed, one late, two exam variants) and their submissions; the
    report written from them."""
    tmp = tmp_path_factory.mktemp("report")
    results, subs = tmp / "results", tmp / "submissions"
    subs.mkdir()
    for sid, code in SOURCES.items():
        (subs / f"{sid}.py").write_text(code)
    sha = {sid: hashlib.sha256((subs / f"{sid}.py").read_bytes()).hexdigest() for sid in SOURCES}
    for sid, plan in CLASS.items():
        write_result(results, synthetic_result(sid, plan, sha[sid]), "ko" if sid in ("ben", "eve") else "en")
    crashed = SubmissionResult(student="zed", submission="zed.py", assignment="attention", sha256=sha["zed"],
                               questions=["steps", "CausalAttention"], staff="grader process exited with -9",
                               error=Message("The autograder itself failed.", "채점기 자체에 오류가 발생했습니다."))
    write_result(results, crashed, "en")
    for sid, extra in {"cho": {"late": 42, "variant": {"seed": 2, "d": 4}},
                       "ana": {"late": 0, "variant": {"seed": 1, "d": 4}},
                       "dev": {"variant": {"seed": 2, "d": 4}}}.items():
        p = results / f"{sid}.json"
        data = json.loads(p.read_text())
        data["extra_data"].update(extra)
        p.write_text(json.dumps(data))
    (results / "notes.json").write_text("[1, 2]")  # not a result: listed, never a crash
    out = tmp / "report"
    rep = report.main(results=results, out=out, submissions=subs, echo=lambda _m: None)
    return {"results": results, "out": out, "data": json.loads((out / "report.json").read_text()), "rep": rep}


def test_report_json_figures_equal_a_computation_from_the_result_files(synthetic):
    """Pass rates, item analysis and question means: recomputed here from the JSON files, they agree."""
    rs = [json.loads(p.read_text())["extra_data"]["internal"] for p in synthetic["results"].glob("*.json")
          if p.name != "notes.json"]
    graded = [r for r in rs if r["error"] is None]
    assert len(graded) == 6
    d = synthetic["data"]
    assert (d["n_students"], d["n_graded"]) == (7, 6)
    assert [c["id"] for c in d["checks"]] == [c["nodeid"] for c in graded[0]["checks"]]
    for c in d["checks"]:
        mine = [next(x for x in r["checks"] if x["nodeid"] == c["id"]) for r in graded]
        frac = [x["score"] / x["points"] for x in mine]
        rest = [r["score"] - x["score"] for r, x in zip(graded, mine)]
        assert c["n"] == 6 and 0 <= c["pass_rate"] <= 1
        assert c["pass_rate"] == pytest.approx(sum(x["status"] == "passed" for x in mine) / 6, abs=1e-4)
        assert c["difficulty"] == pytest.approx(sum(frac) / 6, abs=1e-4)
        assert c["points"] == mine[0]["points"] and c["question"] == mine[0]["question"]
        mf, mr = sum(frac) / 6, sum(rest) / 6
        cov = sum((f - mf) * (r - mr) for f, r in zip(frac, rest))
        var = math.sqrt(sum((f - mf) ** 2 for f in frac) * sum((r - mr) ** 2 for r in rest))
        assert c["discrimination"] == (pytest.approx(cov / var, abs=1e-4) if var > 0 else None)
    by_id = {c["id"]: c for c in d["checks"]}
    assert by_id["public/test_public.py::test_causal"]["pass_rate"] == pytest.approx(2 / 6, abs=1e-4)
    assert by_id["hidden/test_hidden.py::test_softmax_hidden"]["pass_rate"] == pytest.approx(3 / 6, abs=1e-4)
    for q in d["questions"]:
        per = [sum(x["score"] for x in r["checks"] if x["question"] == q["id"]) for r in graded]
        top = sum(x["points"] for x in graded[0]["checks"] if x["question"] == q["id"])
        assert q["mean"] == pytest.approx(sum(per) / 6, abs=1e-4) and q["max"] == top
    assert d["scores"]["mean"] == pytest.approx(sum(r["score"] for r in graded) / 6, abs=1e-4)


def test_failures_differing_only_in_numbers_are_one_group(synthetic):
    groups = [g for g in synthetic["data"]["groups"] if g["check"] == "public/test_public.py::test_causal"]
    top = groups[0]
    assert top["count"] == 3 and sorted(top["students"]) == ["ben", "cho", "eve"]  # 3, 17, 24 entries; nan
    assert top["pattern"] == "`CausalAttention(#, #, #, #)(x)` differs in # of # entries: expected #, got #."
    assert [g["students"] for g in groups[1:]] == [["mallory"]]
    steps = [g for g in synthetic["data"]["groups"] if g["check"] == "public/test_public.py::test_softmax"]
    assert [(g["count"], g["students"]) for g in steps] == [(2, ["dev", "eve"])]
    assert report.normalise_message("v2 got 1e-05 at (0, 3)") == "v2 got # at (#, #)"  # names keep digits


def test_ungraded_late_and_variants(synthetic):
    d = synthetic["data"]
    assert [(u["id"], u["reason"]) for u in d["ungraded"]] == [("zed", "The autograder itself failed.")]
    assert [u["file"] for u in d["unreadable"]] == ["notes.json"]
    assert [(x["id"], x["minutes"]) for x in d["late"]] == [("cho", 42.0)]  # 0 minutes is on time
    assert [(v["variant"], v["n"]) for v in d["variants"]] == [("d=4, seed=2", 2), ("d=4, seed=1", 1)]  # worst first
    page = (synthetic["out"] / "index.html").read_text()
    assert 'id="late"' in page and 'id="variants"' in page and "grader process exited with -9" in page


def test_student_page_is_what_gradescope_shows(synthetic):
    """Visible tests shown, after_published ones marked, hidden (staff) ones absent; in the graded language."""
    page = (synthetic["out"] / "students" / "cho.html").read_text()
    gs = json.loads((synthetic["results"] / "cho.json").read_text())
    for t in gs["tests"]:
        shown = f'data-visibility="{t["visibility"]}"><b>{t["name"]}</b>' in page
        assert shown == (t["visibility"] != "hidden"), t["name"]
    assert "Traceback: staff only" in json.dumps(gs) and "Traceback: staff only" not in page
    assert page.count("shown after grades are published") == 2
    assert "differs in 17 of 24 entries: expected 1.5, got 2.0" in page
    ko = (synthetic["out"] / "students" / "ben.html").read_text()
    assert "성적 공개 후 표시" in ko and "24개 중 3개 값이 다릅니다" in ko and "통과" in ko
    assert "differs in 3 of 24" not in ko
    nothing_passed = (synthetic["out"] / "students" / "eve.html").read_text()  # no "통과" to go by
    assert "성적 공개 후 표시" in nothing_passed and 'lang="ko"' in nothing_passed


def test_student_text_is_escaped_everywhere(synthetic):
    out = synthetic["out"]
    pages = [p for p in out.rglob("*.html")]
    assert len(pages) >= 9
    for p in pages:
        text = p.read_text()
        assert "<script" not in text and "<img src=x" not in text and "<b>bold" not in text, p
        assert "Content-Security-Policy" in text
    assert "&lt;script&gt;document.title" in (out / "students" / "mallory.html").read_text()
    assert "&lt;script&gt;document.title" in (out / "index.html").read_text()


def test_renamed_copy_is_flagged_and_untouched_skeletons_are_not(synthetic):
    pairs = {(p["a"], p["b"]): p for p in synthetic["data"]["similar"]}
    assert ("ana", "ben") in pairs and pairs[("ana", "ben")]["score"] > 0.9
    assert ("ana", "zed") in pairs  # not graded, but its code is still compared
    assert not any({"cho", "dev", "eve"} & {a, b} for a, b in pairs)  # skeletons (edited comments too)
    side = (synthetic["out"] / pairs[("ana", "ben")]["page"]).read_text()
    assert "<mark>" in side and "q_mat" in side and "queries" in side
    hostile = (synthetic["out"] / pairs[("ana", "mallory")]["page"]).read_text()
    assert "# &lt;/pre&gt;&lt;script&gt;alert(&#x27;code&#x27;)&lt;/script&gt;" in hostile
    # A bidi override in a line of code is shown, not obeyed (it would reorder what the instructor reads).
    assert "\u202e" not in hostile and "\u2066" not in hostile and "⟨U+202E⟩" in hostile and "⟨U+2066⟩" in hostile


def test_similarity_is_linear_in_a_padded_file_and_says_what_it_cannot_compare(tmp_path):
    """Red team (round 8): a 2 MB list of zeros in one student's file kept `grade report` busy for the class over
    an hour (each position was looked up in a list); ids holding "--" gave two pairs one page (x with y--z, x--y
    with z); a copy run from exec(base64...) had nothing of its own to compare and was passed over in silence."""
    import base64
    code = "_PAD = [" + ", ".join(["0"] * 300_000) + "]\n"
    fp = similarity.fingerprint([code])
    assert len(fp.tokens) == similarity.MAX_TOKENS
    assert max(len(at) for at in fp.hashes.values()) <= similarity.MAX_PLACES
    assert similarity.hidden_code("model.eval()\nx = eval('1')\n") == "eval(...) on line 2"
    assert similarity.hidden_code("m.eval()\nimport builtins\nbuiltins.exec('pass')\n") == "exec(...) on line 3"
    assert similarity.hidden_code(REFERENCE.read_text()) is None
    ref = REFERENCE.read_text()
    other = renamed_copy(SKELETON.read_text().replace("raise NotImplementedError", "return None  # mine")) + ref
    sources = {"x": ref, "y--z": renamed_copy(ref), "x--y": other, "z": other,
               "hid": f"import base64\nexec(base64.b64decode({base64.b64encode(ref.encode())!r}))\n"}
    results, subs = tmp_path / "results", tmp_path / "subs"
    subs.mkdir()
    for sid, text in sources.items():
        (subs / f"{sid}.py").write_text(text)
        sha = hashlib.sha256((subs / f"{sid}.py").read_bytes()).hexdigest()
        write_result(results, synthetic_result(sid, (True, True, True, True), sha), "en")
    report.main(results=results, out=tmp_path / "out", submissions=subs, echo=lambda _m: None)
    data = json.loads((tmp_path / "out" / "report.json").read_text())
    pages = [p["page"] for p in data["similar"]]
    assert {("x", "y--z"), ("x--y", "z")} <= {(p["a"], p["b"]) for p in data["similar"]}
    assert len(set(pages)) == len(pages)
    flagged = {f["id"]: f["reason"] for f in data["similarity"]["flagged"]}
    assert set(flagged) == {"hid"} and "exec(...) on line 2" in flagged["hid"], flagged
    assert "Not compared as code" in (tmp_path / "out" / "index.html").read_text()


def test_given_notebook_cells_are_the_base_too():
    """A notebook that only ran the given cells is not a copy of another such notebook."""
    nb = ROOT / "student_template" / "attention.ipynb"
    cells = [c.code for c in source.read(nb).cells]
    base = report._given_code("attention")
    pairs, _fps, _base = similarity.similar_pairs({"a": cells, "b": list(cells), "c": [SKELETON.read_text()]}, base)
    assert pairs == []
    pairs, _fps, _base = similarity.similar_pairs({"a": cells, "b": list(cells)}, [])  # without the base: a pair
    assert [(p.a, p.b) for p in pairs] == [("a", "b")]


def test_grades_csv_one_row_per_group_member():
    r = SubmissionResult(student="bo+chen", submission="attention.py", assignment="attention",
                         checks=[check("p::a", "steps", 2.0, True), check("p::b", "CausalAttention", 3.0, False)],
                         questions=["steps", "CausalAttention"],
                         origin={"folder": "submission_1", "submitters": [
                             {"name": "Bo", "sid": "2024001", "email": "bo@uni.example"},
                             {"name": "Chen", "sid": "2024002", "email": "chen@uni.example"}]})
    lone = SubmissionResult(student="dana", submission="dana.py", assignment="attention",
                            error=Message("could not be graded"), questions=["steps", "CausalAttention"])
    rows = list(csv.DictReader(grades_csv_text([r, lone], ["steps", "CausalAttention"]).splitlines()))
    assert [(x["sid"], x["email"], x["name"], x["total"], x["steps"], x["CausalAttention"]) for x in rows] == [
        ("2024001", "bo@uni.example", "Bo", "2.0", "2.0", "0.0"),
        ("2024002", "chen@uni.example", "Chen", "2.0", "2.0", "0.0"),
        ("", "", "", "", "", "")]
    assert rows[2]["student"] == "dana" and rows[2]["status"].startswith("not graded")


def test_results_written_before_cleaning_existed_are_cleaned_when_read(tmp_path):
    """A result file holding bidi controls, zero-width characters or escape codes (written by an older version, or
    by hand) gives a report with none of them: the text is cleaned when the file is read."""
    import unicodedata
    results = tmp_path / "results"
    r = SubmissionResult(student="old", submission="old.py", assignment="attention", questions=["steps"],
                         checks=[check("p::a", "steps", 2.0, False, ("placeholder", "자리"))])
    write_result(results, r, "en")
    raw = (results / "old.json").read_text(encoding="utf-8")
    evil = "\u202eDEIFIREV 001/001 :edarg\u202c\u2066\u200b\u2028x\ufeff\x1b[31m"
    (results / "old.json").write_text(raw.replace("placeholder", json.dumps(evil)[1:-1]), encoding="utf-8")
    assert "\u202e" in json.dumps(json.loads((results / "old.json").read_text(encoding="utf-8")), ensure_ascii=False)
    report.main(results=results, out=tmp_path / "report", echo=lambda _m: None)
    pages = list((tmp_path / "report").rglob("*.html")) + [tmp_path / "report" / "report.json"]
    assert any("DEIFIREV" in p.read_text(encoding="utf-8") for p in pages)
    for p in pages:
        text = json.loads(p.read_text(encoding="utf-8")) if p.suffix == ".json" else p.read_text(encoding="utf-8")
        text = json.dumps(text, ensure_ascii=False)
        bad = {hex(ord(ch)) for ch in text if unicodedata.category(ch) in ("Cf", "Zl", "Zp") or ch == "\x1b"}
        assert not bad, (p.name, bad)


# ---------------------------------------------------------------------------------------------- in a browser

def chromium() -> str | None:
    return shutil.which("chromium") or shutil.which("chromium-browser") or shutil.which("google-chrome")


def render(page: Path, tmp: Path, name: str) -> tuple[str, str]:
    """The DOM after loading and the browser's log; a screenshot is kept in build/test-artifacts/."""
    browser = chromium()
    if browser is None:
        pytest.skip("no chromium here (Debian: apt-get install chromium)")
    ARTIFACTS.mkdir(parents=True, exist_ok=True)
    base = [browser, "--headless", "--disable-gpu", "--no-sandbox", f"--user-data-dir={tmp / 'chromium'}",
            "--enable-logging=stderr", "--v=0", "--window-size=1280,2000", "--no-first-run",
            "--virtual-time-budget=5000"]
    shot = subprocess.run(base + [f"--screenshot={ARTIFACTS / name}", page.as_uri()], capture_output=True,
                          text=True, timeout=180)
    dom = subprocess.run(base + ["--dump-dom", page.as_uri()], capture_output=True, text=True, timeout=180)
    assert (ARTIFACTS / name).stat().st_size > 10_000, shot.stderr[-2000:]
    return dom.stdout, shot.stderr + dom.stderr


def assert_renders(page: Path, tmp: Path, name: str) -> str:
    dom, log = render(page, tmp, name)
    console = [line for line in log.splitlines() if ":CONSOLE" in line]
    assert console == [], console  # a CSP violation (a script or a fetch) would be logged here
    assert dom.count('src="data:image/svg+xml;base64,') == 2
    for table in ("questions", "checks", "students"):
        assert f'id="{table}"' in dom
    from PIL import Image
    img = Image.open(ARTIFACTS / name).convert("RGB")
    top = img.crop((0, 0, img.width, 700))  # the two plots: the histogram's and the full-marks bars' colours
    colours = top.getcolors(maxcolors=1 << 20)
    assert sum(n for n, c in colours if abs(c[0] - 0x3b) < 12 and abs(c[2] - 0xa5) < 12) > 500
    assert sum(n for n, c in colours if abs(c[0] - 0x2e) < 12 and abs(c[1] - 0x8b) < 12) > 500
    return dom


def test_index_renders_in_chromium_with_plots_and_no_console_errors(synthetic, tmp_path):
    dom = assert_renders(synthetic["out"] / "index.html", tmp_path, "report-synthetic.png")
    assert "pwned" not in dom.split("</title>")[0]  # the hostile message never ran
    assert "<script" not in dom


# ---------------------------------------------------------------------------------------------- as a user does

def grade(args: list[str], cwd: Path) -> subprocess.CompletedProcess:
    cmd = [str(GRADE)] if GRADE.exists() else [sys.executable, str(ROOT / "cli.py")]
    return subprocess.run(cmd + args, cwd=cwd, capture_output=True, text=True, timeout=600)


def test_batch_then_report_on_the_bundled_examples(tmp_path):
    """grade batch, then grade report, from a folder outside the repository with relative paths; then
    --only regrades one student in place and rewrites both CSVs."""
    subs = tmp_path / "submissions"
    shutil.copytree(ROOT / "examples" / "submissions", subs)
    (subs / "fay_renamed.py").write_text(renamed_copy((subs / "ada_correct.py").read_text()))
    shutil.copy(SKELETON, subs / "gus_untouched.py")
    p = grade(["batch", "submissions", "--out", "results"], tmp_path)
    assert p.returncode == 0, p.stderr[-3000:]
    grades = list(csv.DictReader((tmp_path / "results" / "grades.csv").open()))
    assert {g["student"]: g["total"] for g in grades}["fay_renamed"] == "100.0"

    p = grade(["report", "results", "--submissions", "submissions"], tmp_path)
    assert p.returncode == 0, p.stderr[-3000:]
    assert "results/report/index.html" in p.stdout
    assert "report in results/report/index.html" in p.stdout  # as typed, like grade batch's last line (UX s13)
    out = tmp_path / "results" / "report"
    d = json.loads((out / "report.json").read_text())
    pairs = {(x["a"], x["b"]) for x in d["similar"]}
    assert ("ada_correct", "fay_renamed") in pairs
    assert not any({"dana_untouched", "gus_untouched"} & set(x) for x in pairs)
    scores = {s["id"]: s["score"] for s in d["students"]}
    # bo: SelfAttention_v2 misnamed (15), CausalAttention's softmax over dim=1 (18: every check that needs its
    # output, the -inf fill included, which cannot be shown from outputs while the softmax is wrong), and
    # MultiHeadAttention's mask made in forward (buffer and devices, 2): 100 - 35.
    assert scores["bo_partly_wrong"] == 66 and scores["gus_untouched"] == 0
    assert sorted(p.name for p in (out / "students").glob("*.html")) == sorted(f"{s}.html" for s in scores)
    assert_renders(out / "index.html", tmp_path, "report-examples.png")

    (subs / "gus_untouched.py").write_text((subs / "ada_correct.py").read_text())  # gus fixed the file
    before = (tmp_path / "results" / "ada_correct.json").stat().st_mtime_ns
    p = grade(["batch", "submissions", "--out", "results", "--only", "gus_untouched"], tmp_path)
    assert p.returncode == 0, p.stderr[-3000:]
    assert "graded 1, reused 6" in p.stdout
    assert (tmp_path / "results" / "ada_correct.json").stat().st_mtime_ns == before
    rows = {r["student"]: r for r in csv.DictReader((tmp_path / "results" / "scores.csv").open())}
    assert len(rows) == 7 and rows["gus_untouched"]["score"] == "100.0"
    grades = {r["student"]: r for r in csv.DictReader((tmp_path / "results" / "grades.csv").open())}
    assert grades["gus_untouched"]["total"] == "100.0" and grades["bo_partly_wrong"]["total"] == "66.0"
    p = grade(["batch", "submissions", "--out", "results", "--only", "gus_untouchd"], tmp_path)
    assert p.returncode == 2 and "gus_untouched" in p.stderr and "Traceback" not in p.stderr


def test_page_lists_the_commonest_failure_groups_and_sums_the_rest(tmp_path):
    """Nine students failing one check nine different ways: six groups shown, three summed, all in report.json."""
    for i in range(9):
        c = CheckResult(name="c", nodeid="p::c", question="steps", points=1.0, score=0.0, status="failed",
                        public=True, visibility="visible", message=Message(f"`name_{'abcdefghi'[i]}` is wrong"))
        write_result(tmp_path / "r", SubmissionResult(student=f"s{i}", submission="x.py", assignment="attention",
                                                      checks=[c], questions=["steps"]), "en")
    rep = report.main(results=tmp_path / "r", out=tmp_path / "o", echo=lambda _m: None)
    page = (tmp_path / "o" / "index.html").read_text()
    assert len(rep.data["groups"]) == 9 and "3 other messages" in page
    assert page.count("is wrong</summary>") == 6 and "s8.html" in page


def test_korean_pages_keep_words_whole_in_table_cells():
    """UX s13 (screenshot of `grade report --lang ko`): Hangul may break between any two syllables, so narrow
    columns split their headings and labels mid-word (배/점, 실/패, 공개 검/사). Korean pages keep words whole in
    table cells; English pages are as they were."""
    from autograder import report
    ko = report.page("t", "<table><tr><th>배점</th></tr></table>", lang="ko")
    assert '<html lang="ko">' in ko and ":lang(ko) th,:lang(ko) td{word-break:keep-all}" in ko
    assert '<html lang="en">' in report.page("t", "", lang="en")


def test_a_submissions_folder_that_holds_none_of_the_results_files_is_said_on_the_terminal(synthetic, tmp_path):
    """UX s13: `grade report results --submissions WRONG_FOLDER` compared nothing and said "0 similar pair(s)" as if
    the class had no pair; a note on the terminal now says that nothing was found there, and which folder to pass.
    Files left out of a comparison that did run (a file changed since it was graded) are counted there too."""
    (tmp_path / "elsewhere").mkdir()
    p = grade(["report", str(synthetic["results"]), "--submissions", "elsewhere", "-o", "rep"], tmp_path)
    assert p.returncode == 0, p.stderr[-2000:]
    assert "note: none of these results' submissions was found in elsewhere, so nothing was compared" in p.stderr
    assert "pass the folder given to grade batch as --submissions" in p.stderr
    subs = tmp_path / "subs"
    shutil.copytree(synthetic["results"].parent / "submissions", subs)
    (subs / "ana.py").write_text((subs / "ana.py").read_text() + "\nx = 1\n")
    p = grade(["report", str(synthetic["results"]), "--submissions", "subs", "-o", "rep2", "--lang", "ko"], tmp_path)
    assert p.returncode == 0 and "참고: 제출물 1개는 비교하지 않았습니다 (ana: ana.py changed" in p.stderr, p.stderr


def test_a_report_is_not_written_among_results(tmp_path):
    """Red team, round 23: `grade report results --out results` wrote report.json over the result of a student
    whose id is `report` (and the next report listed the report itself as a file that is not a result). A folder
    holding results is refused for --out, the results folder itself or another; the default folder is fine."""
    c = CheckResult(name="c", nodeid="p::c", question="steps", points=1.0, score=1.0, status="passed",
                    public=True, visibility="visible")
    for sid in ("ada", "report"):
        write_result(tmp_path / "r", SubmissionResult(student=sid, submission=f"{sid}.py", assignment="attention",
                                                      checks=[c], questions=["steps"]), "en")
    write_result(tmp_path / "other", SubmissionResult(student="report", submission="report.py",
                                                      assignment="attention", checks=[c], questions=["steps"]), "en")
    before = {p: p.read_bytes() for p in (tmp_path / "r" / "report.json", tmp_path / "other" / "report.json")}
    for out in ("r", "other", "r/../r"):
        p = grade(["report", "r", "--out", out], tmp_path)
        assert p.returncode == 2 and "holds grade batch results" in p.stderr, (out, p.stdout, p.stderr)
    assert all(p.read_bytes() == b for p, b in before.items())
    p = grade(["report", "r"], tmp_path)
    assert p.returncode == 0 and (tmp_path / "r" / "report" / "index.html").is_file(), p.stderr
    p = grade(["report", "r"], tmp_path)  # again: its own report.json is not a result
    assert p.returncode == 0, p.stderr


def test_a_fifo_among_the_results_hangs_nothing(tmp_path):
    """Red team, round 23: a FIFO named <id>.json in the results folder hung `grade batch` (its check for another
    assignment's results opened it and waited for a writer) and `grade report`. Only regular files are read."""
    c = CheckResult(name="c", nodeid="p::c", question="steps", points=1.0, score=1.0, status="passed",
                    public=True, visibility="visible")
    write_result(tmp_path / "r", SubmissionResult(student="ada", submission="ada.py", assignment="attention",
                                                  checks=[c], questions=["steps"]), "en")
    os.mkfifo(tmp_path / "r" / "zz.json")
    (tmp_path / "subs").mkdir()
    (tmp_path / "subs" / "bo.py").write_text(REFERENCE.read_text())
    cmd = [str(GRADE)] if GRADE.exists() else [sys.executable, str(ROOT / "cli.py")]

    def grade(args):  # (a hang fails in two minutes, not in grade()'s ten)
        return subprocess.run(cmd + args, cwd=tmp_path, capture_output=True, text=True, timeout=120)
    p = grade(["report", "r"])
    assert p.returncode == 0 and "1 results" in p.stdout, (p.stdout, p.stderr)
    data = json.loads((tmp_path / "r" / "report" / "report.json").read_text())
    assert [u for u in data["ungraded"] if "zz" in json.dumps(u)] or "zz.json" in json.dumps(data), data["ungraded"]
    p = grade(["batch", "subs", "--out", "r"])
    assert p.returncode == 0 and (tmp_path / "r" / "bo.json").is_file(), (p.stdout, p.stderr[-2000:])
