"""`grade batch` at scale: results appear one by one, an interrupted batch resumes, reuse is never stale."""
from __future__ import annotations

import json
import os
import re
import signal
import shutil
import subprocess
import sys
import time
from dataclasses import replace
from pathlib import Path

import pytest

from autograder import assignment, batch
from autograder.sandbox import is_root
from conftest import REFERENCE, ROOT, SKELETON


def make(folder: Path, n: int) -> None:
    folder.mkdir(parents=True, exist_ok=True)
    for i in range(n):
        (folder / f"s{i:02d}.py").write_text((REFERENCE if i % 2 == 0 else SKELETON).read_text())


def test_interrupted_batch_resumes_and_leaves_no_partial_json(tmp_path):
    subs, out = tmp_path / "subs", tmp_path / "out"
    make(subs, 8)
    cmd = [sys.executable, str(ROOT / "cli.py"), "batch", str(subs), "--out", str(out), "--workers", "1"]
    p = subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE, start_new_session=True)
    deadline = time.monotonic() + 240
    while time.monotonic() < deadline and len(list(out.glob("s*.json"))) < 2:
        time.sleep(0.1)
    os.killpg(p.pid, signal.SIGKILL)  # as hard as an interruption gets
    p.wait()
    first = {f.name for f in out.glob("s*.json")}
    assert 2 <= len(first) < 8
    for f in out.glob("*.json"):
        json.loads(f.read_text())  # every file that exists is complete
    done = subprocess.run(cmd, capture_output=True, text=True, timeout=600)
    assert done.returncode == 0, done.stderr
    assert f"reused {len(first)}" in done.stdout
    assert sorted(f.name for f in out.glob("s*.json")) == [f"s{i:02d}.json" for i in range(8)]
    assert not list(out.glob(".*tmp"))
    scores = {f.stem: json.loads(f.read_text())["score"] for f in out.glob("s*.json")}
    assert scores == {f"s{i:02d}": (100.0 if i % 2 == 0 else 0.0) for i in range(8)}
    assert "/s" in done.stderr and "ETA" in done.stderr  # progress: count, rate, ETA


def test_reuse_only_when_file_checks_and_options_are_unchanged(tmp_path):
    subs, out = tmp_path / "subs", tmp_path / "out"
    make(subs, 2)
    a = assignment.load("attention")
    quiet = dict(echo=lambda _m: None)
    assert batch.main(submissions=subs, out=out, assignment=a, **quiet).graded == 2
    again = batch.main(submissions=subs, out=out, assignment=a, **quiet)
    assert (again.graded, again.reused) == (0, 2)
    (subs / "s01.py").write_text(REFERENCE.read_text())  # the student fixed the file
    changed = batch.main(submissions=subs, out=out, assignment=a, **quiet)
    assert (changed.graded, changed.reused) == (1, 1)
    assert {r.student: r.score for r in changed.results} == {"s00": 100, "s01": 100}
    other = replace(a, options={**a.options, "note": "instructor changed an option"})
    assert batch.main(submissions=subs, out=out, assignment=other, **quiet).graded == 2
    assert batch.main(submissions=subs, out=out, assignment=other, force=True, **quiet).graded == 2


def test_a_result_whose_submission_is_gone_is_moved_out_of_the_results_folder(tmp_path):
    """A student's file removed (or renamed) after a run into the same --out: their old result used to stay
    beside the new ones, and `grade report`, the exam audit and an upload of the folder counted it. It is moved to
    no_submission/ (never deleted), said on the terminal, and not moved back by a run that still lacks it; a file
    that is not a result stays where it is."""
    from autograder import report
    subs, out = tmp_path / "subs", tmp_path / "out"
    make(subs, 3)
    a = assignment.load("attention")
    said = []
    batch.main(submissions=subs, out=out, assignment=a, echo=said.append)
    assert not (out / batch.SET_ASIDE).exists()
    (out / "notes.json").write_text('{"not": "a result"}')
    (subs / "s01.py").unlink()  # withdrawn
    (subs / "s02.py").rename(subs / "s02b.py")  # renamed: graded under its new id
    said.clear()
    again = batch.main(submissions=subs, out=out, assignment=a, echo=said.append)
    assert again.set_aside == ["s01", "s02"]
    assert sorted(p.name for p in out.glob("*.json")) == ["notes.json", "s00.json", "s02b.json"]
    assert sorted(p.name for p in (out / batch.SET_ASIDE).iterdir()) == ["s01.json", "s02.json"]
    assert json.loads((out / batch.SET_ASIDE / "s01.json").read_text())["score"] == 0.0  # moved whole
    assert any("moved 2 results" in m and "s01, s02" in m and batch.SET_ASIDE in m for m in said), said
    loaded, not_results = report.load(out)
    assert sorted(x.r.student for x in loaded) == ["s00", "s02b"]
    assert [b["file"] for b in not_results] == ["notes.json"]
    rows = (out / "scores.csv").read_text().splitlines()[1:]
    assert sorted(r.split(",")[0] for r in rows) == ["s00", "s02b"]
    third = batch.main(submissions=subs, out=out, assignment=a, echo=lambda _m: None, only=["s00"])
    assert third.set_aside == [] and (out / batch.SET_ASIDE / "s01.json").exists()
    # Red team (round 10): kim.py (100) and kim_.py (graded as kim-2); kim.py removed, kim_.py is now `kim` and its
    # result was written over the removed student's 100. Both old results are set aside, none over another.
    for f in subs.iterdir():
        f.unlink()
    (subs / "kim.py").write_text(REFERENCE.read_text())
    (subs / "kim_.py").write_text(SKELETON.read_text())
    batch.main(submissions=subs, out=out, assignment=a, echo=lambda _m: None)
    assert json.loads((out / "kim.json").read_text())["score"] == 100 and (out / "kim-2.json").exists()
    (out / batch.SET_ASIDE / "kim.json").write_text((out / "kim.json").read_text())  # an older one set aside before
    (subs / "kim.py").unlink()
    again = batch.main(submissions=subs, out=out, assignment=a, echo=lambda _m: None)
    assert sorted(again.set_aside) == ["kim", "kim-2"], again.set_aside
    assert json.loads((out / "kim.json").read_text())["score"] == 0  # kim_.py's, under its new id
    kept = sorted(p.name for p in (out / batch.SET_ASIDE).glob("kim*.json"))
    assert kept == ["kim-1.json", "kim-2.json", "kim.json"], kept
    scores = sorted(json.loads((out / batch.SET_ASIDE / n).read_text())["score"] for n in kept)
    assert scores == [0.0, 100.0, 100.0], scores  # the removed kim's 100 (twice: the older copy kept) and kim-2's 0


def test_a_signal_during_the_csv_write_still_leaves_both_csvs(tmp_path, monkeypatch):
    """Red team rt23: a Ctrl-C or SIGTERM (a KeyboardInterrupt, cli.py) while the batch wrote scores.csv left the
    old one, or none, and no grades.csv, behind a message that both list what was finished. The write is done
    again and the interruption passed on after both."""
    subs, out = tmp_path / "subs", tmp_path / "out"
    make(subs, 2)
    real, calls = batch.write_atomic, []

    def interrupted_once(path, text):
        calls.append(path.name)
        if len(calls) == 1:
            raise KeyboardInterrupt
        real(path, text)

    monkeypatch.setattr(batch, "write_atomic", interrupted_once)
    with pytest.raises(KeyboardInterrupt):
        batch.main(submissions=subs, out=out, assignment=assignment.load("attention"), workers=1,
                   echo=lambda _m: None)
    for name in ("scores.csv", "grades.csv"):
        text = (out / name).read_text()
        assert "s00" in text and "s01" in text, (name, text)


def test_the_assignment_of_a_result_file_is_read_without_being_fooled_by_its_text(tmp_path):
    """batch.result_assignment finds the key in the file's text (a rerun reads every result): text a student
    controls (a note, a file name) that spells the key is escaped in the JSON and never read as it."""
    from autograder.messages import plain
    from autograder.results import SubmissionResult, write_result
    bait = '"assignment": "midterm"'
    r = SubmissionResult(student="ana", submission=f'{bait}.py', assignment="attention", notes=[plain(bait)])
    path = write_result(tmp_path, r, "en")
    assert bait in json.loads(path.read_text())["output"] and batch.result_assignment(path) == "attention"
    (tmp_path / "notes.json").write_text('{"not": "a result"}')
    assert batch.result_assignment(tmp_path / "notes.json") is None


def test_progress_line_has_count_rate_and_eta():
    lines = []
    p = batch.Progress(4, lines.append, tty=False)
    from autograder.results import SubmissionResult
    p.update(SubmissionResult(student="ana", submission="ana.py", assignment="attention"))
    assert lines[0].startswith("[1/4]") and "/s" in lines[0] and "ETA" in lines[0] and "ana" in lines[0]


# One grader process, two faults of the grader's own: reading one submission fails, and the bug diagnosis
# crashes. Injected by patching the grader in that process (nothing a submission can do); the results come back
# as JSON lines.
FAULTS = r'''
import json, sys
from pathlib import Path
from autograder import assignment, checks, plugin
from autograder.plugin import Job
from autograder.runner import grade

real_read = plugin.read
def read(path):
    if path.name == "trips_reader.py":
        raise RuntimeError("grader bug while reading")
    return real_read(path)
plugin.read = read

import assignments.attention.hidden.diagnose  # registers the real diagnoser, replaced below
def broken(**_kw):
    raise ZeroDivisionError("grader bug in the diagnosis")
checks.DIAGNOSERS["attention"] = broken
folder = Path(sys.argv[1])
jobs = [Job(p.stem, p) for p in sorted(folder.glob("*.py"))]
grade(assignment.load("attention"), jobs, lambda r: print("RESULT " + json.dumps(r.to_dict()), flush=True))
'''


def test_a_grader_failure_costs_one_result_and_never_the_next_or_the_students_message(tmp_path):
    from assignments.attention.hidden import bugs
    from autograder.results import SubmissionResult
    subs = tmp_path / "subs"
    subs.mkdir()
    (subs / "a_dim1.py").write_text(bugs.BY_NAME["causal_softmax_dim1"].source())
    (subs / "b_trips_reader.py").write_text(REFERENCE.read_text())
    (subs / "trips_reader.py").write_text(REFERENCE.read_text())
    (subs / "z_reference.py").write_text(REFERENCE.read_text())
    done = subprocess.run([sys.executable, "-c", FAULTS, str(subs)], capture_output=True, text=True, timeout=900,
                          cwd=ROOT)
    assert done.returncode == 0, done.stderr[-3000:]
    results = {r.student: r for r in (SubmissionResult.from_dict(json.loads(line[7:]))
                                      for line in done.stdout.splitlines() if line.startswith("RESULT "))}
    assert sorted(results) == ["a_dim1", "b_trips_reader", "trips_reader", "z_reference"], done.stdout[-2000:]
    tripped = results["trips_reader"]
    assert tripped.error is not None and "autograder itself failed" in tripped.error.en
    assert "grader bug while reading" in tripped.staff and "grader bug" not in tripped.error.en
    for sid in ("b_trips_reader", "z_reference"):  # before and after the failure: graded as usual
        assert results[sid].error is None and results[sid].score == 100, (sid, results[sid].error)
    dim1 = results["a_dim1"]  # the bug still costs its points, with the check's own words; staff see the crash
    assert dim1.error is None and dim1.score < 100
    shown = " ".join(c.message.en for c in dim1.checks if c.message)
    assert "ZeroDivisionError" not in shown and "grader bug" not in shown and "differs from" in shown
    assert "grader bug in the diagnosis" in dim1.staff


def _procs() -> dict[int, tuple[str, int]]:
    """pid -> (name, parent pid) of every process of this checkout's grader that has not ended (zombies left out).
    The zygote's command line names the checkout (its path in hex), and its graders, keepers and workers keep that
    command line: another checkout's batch running on the machine at the same time (a second test run, another
    worktree) is not this test's leftover."""
    mine = os.fsencode(str(ROOT)).hex().encode()
    out = {}
    for d in os.listdir("/proc"):
        try:
            with open(f"/proc/{d}/stat", "rb") as f:
                head, rest = f.read().rsplit(b")", 1)
            state, parent = rest.split()[:2]
            name = head.split(b"(", 1)[1].decode()
            if name.startswith("grade-"):
                with open(f"/proc/{d}/cmdline", "rb") as f:
                    if mine not in f.read():
                        continue
            if state not in (b"Z", b"X"):
                out[int(d)] = (name, int(parent))
        except (ValueError, OSError, IndexError):
            continue
    return out


def test_graders_are_forked_by_the_zygote_and_a_killed_one_costs_only_its_submission(tmp_path):
    """The batch's zygote imports torch once and forks the grader processes; a grader that dies (here: SIGKILL)
    is seen through its pidfd, costs the submission it was grading (with its exit status for staff), and is
    replaced for the rest. A batch this small does not move the zygote onto huge pages (batch.HUGE_PAGES_FROM)."""
    import threading
    subs, out = tmp_path / "subs", tmp_path / "out"
    subs.mkdir()
    slow = REFERENCE.read_text() + "\nimport time\ntime.sleep(3)\n"
    for name in ("a_slow", "b_slow"):
        (subs / f"{name}.py").write_text(slow)
    for i in range(3):
        (subs / f"c{i}.py").write_text(REFERENCE.read_text())
    done: dict = {}
    t = threading.Thread(target=lambda: done.update(summary=batch.main(
        submissions=subs, out=out, assignment=assignment.load("attention"), workers=2, echo=lambda *_: None)))
    t.start()
    graders: list[int] = []
    deadline = time.monotonic() + 240
    while time.monotonic() < deadline:
        procs = _procs()
        zygotes = [p for p, (name, parent) in procs.items() if name == "grade-zygote" and parent == os.getpid()]
        graders = [p for p, (name, parent) in procs.items() if name == "grade-grader" and parent in zygotes]
        keepers = [p for p, (name, parent) in procs.items() if name == "grade-keeper" and parent in zygotes]
        # this batch's own workers (another grading run on the machine must not hide them)
        workers = [p for p, (name, parent) in procs.items() if name == "grade-worker" and parent in keepers]
        if len(zygotes) == 1 and len(graders) == 2 and len(workers) == 2:  # both graders are on a slow one
            break
        time.sleep(0.05)
    assert len(graders) == 2, "the batch's zygote did not fork two grader processes"
    time.sleep(1.5)  # long enough for a zygote that moves onto huge pages to be well under way
    with open(f"/proc/{zygotes[0]}/smaps_rollup") as f:
        huge_kb = next(int(line.split()[1]) for line in f if line.startswith("AnonHugePages:"))
    with open("/sys/kernel/mm/transparent_hugepage/enabled") as f:
        thp_always = f.read().startswith("[always]")
    assert huge_kb == 0 or thp_always, "5 submissions: the move onto huge pages costs more than it saves"
    os.kill(graders[0], signal.SIGKILL)
    t.join(600)
    results = {r.student: r for r in done["summary"].results}
    assert sorted(results) == ["a_slow", "b_slow", "c0", "c1", "c2"]
    lost = [r for r in results.values() if r.error is not None]
    assert len(lost) == 1 and lost[0].student in ("a_slow", "b_slow"), [(r.student, r.error) for r in lost]
    assert "autograder itself failed" in lost[0].error.en and "exited with -9" in lost[0].staff
    assert all(r.score == 100 for r in results.values() if r is not lost[0])
    deadline = time.monotonic() + 30  # a keeper may still be sweeping up after its worker
    while [p for p, (name, _) in _procs().items() if name.startswith("grade-")] and time.monotonic() < deadline:
        time.sleep(0.1)
    assert not [p for p, (name, _) in _procs().items() if name.startswith("grade-")]  # nothing left behind


def test_without_pidfds_the_graders_are_started_as_processes_of_their_own(tmp_path, monkeypatch):
    """Where the zygote cannot hand its graders over (no pidfd: Linux < 5.3, other systems), `grade batch` starts
    them itself, each importing torch, and grades the same."""
    monkeypatch.delattr(os, "pidfd_open")
    subs = tmp_path / "subs"
    make(subs, 2)
    summary = batch.main(submissions=subs, out=tmp_path / "out", assignment=assignment.load("attention"), workers=2,
                         echo=lambda *_: None)
    assert {r.student: r.score for r in summary.results} == {"s00": 100.0, "s01": 0.0}


def test_without_details_the_batch_keeps_scores_and_reasons_in_memory_and_everything_on_disk(tmp_path):
    """`grade batch` (details=False) keeps per student only what the CSVs and the summary table need, so its memory
    stays flat over a class of any size; the CSVs, the table and the result files are the same as with details."""
    from autograder.results import read_result
    subs = tmp_path / "subs"
    make(subs, 2)
    (subs / "s02.py").write_text("def broken(:\n")
    a = assignment.load("attention")
    full = batch.main(submissions=subs, out=tmp_path / "full", assignment=a, echo=lambda *_: None)
    slim = batch.main(submissions=subs, out=tmp_path / "slim", assignment=a, echo=lambda *_: None, details=False)
    for name in ("scores.csv", "grades.csv"):
        assert (tmp_path / "full" / name).read_text() == (tmp_path / "slim" / name).read_text()
    assert batch.summary_table(full.results, a) == batch.summary_table(slim.results, a)
    assert all(c.message is None and not c.staff for r in slim.results for c in r.checks)
    assert any(c.message is not None for r in full.results for c in r.checks)
    on_disk = read_result(tmp_path / "slim" / "s01.json")
    assert on_disk is not None and any(c.message is not None for c in on_disk.checks)


def test_csv_cells_that_start_like_a_formula_are_defused():
    """A spreadsheet opening scores.csv or grades.csv must not run student-made text as a formula: a file named
    `=HYPERLINK(...).py`, a folder `+cmd`, a Gradescope name `@SUM(1)`; ordinary text stays as it is."""
    import csv as _csv
    import io as _io
    from autograder.messages import Message
    from autograder.results import SubmissionResult, csv_text, grades_csv_text

    evil = SubmissionResult(student="s1", submission='=HYPERLINK("http://x","y").py', assignment="attention",
                            questions=["q"], origin={"folder": "+cmd|calc", "submitters": [
                                {"sid": "-2+3", "email": "\tx@y", "name": "@SUM(1)"}]},
                            error=Message("=1+1 could not be read.", "=1+1 읽을 수 없음"))
    evil.reason = evil.error  # as the grading loop sets it
    plain = SubmissionResult(student="s2", submission="attention.py", assignment="attention", questions=["q"],
                             origin={"folder": "kim-minji"})
    rows = list(_csv.DictReader(_io.StringIO(csv_text([evil, plain], ["q"]))))
    assert rows[0]["submission"].startswith("'=") and rows[0]["folder"].startswith("'+")
    assert rows[0]["reason"].startswith("'=")
    assert rows[1]["submission"] == "attention.py" and rows[1]["folder"] == "kim-minji"
    grades = list(_csv.DictReader(_io.StringIO(grades_csv_text([evil, plain], ["q"]))))
    assert [grades[0][k][:2] for k in ("sid", "name", "status")] == ["'-", "'@", "no"]
    assert grades[0]["email"] == "x@y"  # the tab is removed with other control characters: no formula left


# ---------------------------------------------------------------------------------------------- result ids

def _ids(folder: Path) -> dict[str, str]:
    """{entry name: job id} as discover gives them."""
    a = assignment.load("attention")
    from autograder import discover
    return {origin["folder"]: job.student for job, origin in discover.entries(folder, a)}


def test_zip_archives_in_a_submissions_folder_are_named_with_the_fix(tmp_path):
    """UX s13: an LMS download (one zip per student) was refused as "Cannot tell which assignment" and, with
    --assignment, every zip got "is not a .py or .ipynb file": both now say they are zip archives and how to unzip
    them, in both languages. A folder with one stray zip among files is graded, the zip's result saying the same."""
    import zipfile
    from autograder import discover
    from autograder.errors import UsageError
    subs = tmp_path / "subs"
    subs.mkdir()
    for sid in ("ada", "bo"):
        with zipfile.ZipFile(subs / f"{sid}.zip", "w") as z:
            z.write(REFERENCE, "attention.py")
    with pytest.raises(UsageError) as e:
        discover.recognise(subs, assignment.names())
    assert "2 of the 2 entries" in e.value.message.en and "zip archives" in e.value.message.en
    assert "unzip -q -d" in e.value.message.en and "zip 압축 파일입니다" in e.value.message.ko
    # The loop offered, pasted in the folder (red team s23: it missed .ZIP, and read a name beginning with `-` as an
    # option of unzip's): every archive becomes a folder of its own.
    if shutil.which("unzip") and shutil.which("bash"):
        trial = tmp_path / "trial"
        trial.mkdir()
        for name in ("ada.zip", "-bo.ZIP", "chen dan.zip"):
            with zipfile.ZipFile(trial / name, "w") as z:
                z.write(REFERENCE, "attention.py")
        subprocess.run(["bash", "-c", discover.UNZIP_EACH], cwd=trial, check=True, capture_output=True)
        assert sorted(p.name for p in trial.iterdir()) == ["-bo", "ada", "chen dan"]
        assert all((trial / d / "attention.py").is_file() for d in ("-bo", "ada", "chen dan"))
    (subs / "chen.py").write_text(REFERENCE.read_text())
    (subs / "dan.py").write_text(REFERENCE.read_text())
    (subs / "eve.py").write_text(REFERENCE.read_text())
    a = discover.recognise(subs, assignment.names())
    jobs = {job.student: job for job, _origin in discover.entries(subs, a)}
    assert jobs["ada"].path is None and "ada.zip is a zip archive" in jobs["ada"].error.en
    assert "ada/" in jobs["ada"].error.en and "압축을 풀고" in jobs["ada"].error.ko
    assert jobs["chen"].error is None


def test_a_generated_id_never_takes_another_students_own_name(tmp_path):
    """kim-2.py, kim.py and kim_.py: kim_.py's id (kim, taken by kim.py) must not become kim-2, which is kim-2.py's
    own name; every id is distinct and a student whose file stem is a valid id keeps it."""
    subs = tmp_path / "subs"
    subs.mkdir()
    for name in ("kim-2.py", "kim.py", "kim_.py"):
        (subs / name).write_text("x = 1\n")
    assert _ids(subs) == {"kim-2.py": "kim-2", "kim.py": "kim", "kim_.py": "kim-3"}


def test_every_collision_gives_distinct_ids_that_do_not_depend_on_the_listing_order(tmp_path, monkeypatch):
    """a.py, a.ipynb and a folder a/ all claim `a`; a-2.py owns `a-2`; A.py clashes with `a` where the file system
    ignores case (result files must not overwrite each other there either); non-ASCII names that reduce to the same
    ASCII id (김a.py, 이a.py -> a) or to nothing (two Korean names -> student-<hash>); an export submitter."""
    subs = tmp_path / "subs"
    (subs / "a").mkdir(parents=True)
    (subs / "a" / "attention.py").write_text("x = 1\n")
    names = ["a.py", "a.ipynb", "a-2.py", "A.py", "김a.py", "이a.py", "김철수.py", "이영희.py", "a_.py", "b.py", "b-2.py",
             "b-2_.py", "b_.py", "c.txt", "c.py"]
    for name in names:
        (subs / name).write_text("x = 1\n")
    ids = _ids(subs)
    assert len(ids) == len(names) + 1
    assert len({i.lower() for i in ids.values()}) == len(ids), ids  # distinct, even ignoring case
    assert all(i.isascii() and "/" not in i for i in ids.values())
    # Own names stay their owners': a-2.py, b.py, b-2.py, c (the first of c.py, c.txt in order: both own it).
    assert (ids["a-2.py"], ids["b.py"], ids["b-2.py"], ids["c.py"]) == ("a-2", "b", "b-2", "c")
    assert ids["A.py"] == "A" and ids["c.txt"] == "c-2"  # A.py sorts first among the owners of `a`, A and a/
    assert {ids[n] for n in ("a.py", "a.ipynb", "A.py", "김a.py", "이a.py", "a_.py")}.isdisjoint({"a", "a-2"})
    assert ids["b-2_.py"] not in ("b-2", "b") and ids["b_.py"] not in ("b", "b-2")
    assert ids["김철수.py"].startswith("student-") and ids["이영희.py"].startswith("student-")
    # The same folder always gives the same ids, whatever order the file system lists it in.
    real = Path.iterdir
    monkeypatch.setattr(Path, "iterdir", lambda self: reversed(list(real(self))))
    assert _ids(subs) == ids


def test_batch_gives_each_of_kim_kim_and_kim_2_its_own_result(tmp_path):
    """End to end: kim-2.json is kim-2.py's (the reference), and each file has its own row in scores.csv."""
    import csv as _csv
    subs, out = tmp_path / "subs", tmp_path / "out"
    subs.mkdir()
    (subs / "kim-2.py").write_text(REFERENCE.read_text())
    (subs / "kim.py").write_text(REFERENCE.read_text())
    (subs / "kim_.py").write_text(SKELETON.read_text())
    a = assignment.load("attention")
    batch.main(submissions=subs, out=out, assignment=a, echo=lambda *_: None)
    got = {p.stem: (json.loads(p.read_text())["score"], json.loads(p.read_text())["extra_data"]["origin"]["folder"])
           for p in out.glob("*.json")}
    assert got == {"kim-2": (100.0, "kim-2.py"), "kim": (100.0, "kim.py"), "kim-3": (0.0, "kim_.py")}
    rows = list(_csv.DictReader((out / "scores.csv").open()))
    assert sorted((r["student"], r["folder"]) for r in rows) == [("kim", "kim.py"), ("kim-2", "kim-2.py"),
                                                                 ("kim-3", "kim_.py")]


def test_bidi_and_invisible_characters_reach_no_csv_table_or_json(tmp_path):
    """Text that reached a result another way than the worker protocol (a file name, a message made in the grader,
    a result written by an older version) is cleaned again on the way out: scores.csv, grades.csv, the summary
    table and the result JSON hold no format character (bidi controls, zero-width, BOM) and no line separator."""
    import unicodedata
    from autograder.messages import Message
    from autograder.results import SubmissionResult, csv_text, grades_csv_text, write_result
    evil = "\u202eDEIFIREV 001/001 :edarg\u202c \u2066\u200b\u2028x\ufeff"
    r = SubmissionResult(student="s1", submission=f"a{evil}.py", assignment="attention", questions=["q"],
                         origin={"folder": f"f{evil}", "submitters": [{"sid": "1", "email": "", "name": f"김{evil}"}]},
                         error=Message(f"Your file could not be loaded: RuntimeError: {evil}", f"불러올 수 없음: {evil}"))
    r.reason = r.error
    a = assignment.load("attention")
    write_result(tmp_path, r, "en")
    outputs = {"scores.csv": csv_text([r], ["q"]), "grades.csv": grades_csv_text([r], ["q"]),
               "table": batch.summary_table([r], a), "ko table": batch.summary_table([r], a, "ko"),
               "json": (tmp_path / "s1.json").read_text(encoding="utf-8")}
    for name, text in outputs.items():
        bad = {hex(ord(ch)) for ch in text if unicodedata.category(ch) in ("Cf", "Zl", "Zp")}
        assert not bad, (name, bad)
    assert "RuntimeError: DEIFIREV 001/001 :edarg  x" in outputs["scores.csv"]
    assert "김" in outputs["grades.csv"]


@pytest.mark.skipif(not is_root(), reason="workers run as other uids only when the grader is root")
def test_the_next_submissions_worker_started_ahead_is_out_of_reach_of_the_one_being_graded(tmp_path):
    """One grader process starts the next submission's worker while it grades this one, under its second uid:
    a submission that kills every process of its uid reaches neither that worker nor its uid, and consecutive
    submissions run as different uids."""
    subs = tmp_path / "subs"
    subs.mkdir()
    ref = REFERENCE.read_text()
    killer = "import os, signal\nos.kill(-1, signal.SIGKILL)\n"
    tell = "\nimport os\nraise RuntimeError(f'uid {os.getuid()}')\n"  # a note in the result, no points lost
    for name, text in (("a_killer", killer), ("b_ref", ref + tell), ("c_ref", ref + tell), ("d_killer", killer),
                       ("e_ref", ref + tell)):
        (subs / f"{name}.py").write_text(text)
    summary = batch.main(submissions=subs, out=tmp_path / "out", assignment=assignment.load("attention"),
                         workers=1, echo=lambda *_: None)
    scores = {r.student: r.score for r in summary.results}
    assert scores == {"a_killer": 0.0, "b_ref": 100.0, "c_ref": 100.0, "d_killer": 0.0, "e_ref": 100.0}, scores
    uids = {n: int(re.search(r"uid (\d+)", (tmp_path / "out" / f"{n}.json").read_text()).group(1))
            for n in ("b_ref", "c_ref", "e_ref")}
    assert uids["b_ref"] != uids["c_ref"] and os.getuid() not in uids.values(), uids
    deadline = time.monotonic() + 10
    while [p for p, (name, _) in _procs().items() if name.startswith("grade-")] and time.monotonic() < deadline:
        time.sleep(0.1)
    assert not [p for p, (name, _) in _procs().items() if name.startswith("grade-")]  # the spare one too


@pytest.mark.skipif(not is_root(), reason="workers are started ahead only when the grader is root")
def test_no_worker_is_started_ahead_after_the_last_of_a_known_list_of_jobs(tmp_path):
    """`grade check` and Gradescope grade a list of one: nothing comes after it, so no worker is started ahead
    (a fork, namespaces and a cgroup, then a teardown, for nothing). With two jobs, one worker is started ahead
    (the second's), not two; both are graded in full."""
    from autograder import runner
    from autograder.jobs import Job
    from autograder.sandbox import Zygote

    class Counting(Zygote):
        started = 0

        def start_spawn(self, *args, **kwargs):
            Counting.started += 1
            return super().start_spawn(*args, **kwargs)

    (tmp_path / "a.py").write_text(REFERENCE.read_text())
    (tmp_path / "b.py").write_text(REFERENCE.read_text())
    a = assignment.load("attention")
    for jobs, spawns in (([Job("a", tmp_path / "a.py")], 1),
                         ([Job("a", tmp_path / "a.py"), Job("b", tmp_path / "b.py")], 2)):
        Counting.started = 0
        results = []
        zygote = Counting(full_warm_up=False)
        try:
            runner.grade(a, jobs, results.append, public_only=True, zygote=zygote)
        finally:
            zygote.close()
        assert [r.score for r in results] == [r.max_score for r in results] and len(results) == len(jobs)
        assert Counting.started == spawns, (len(jobs), Counting.started)


def test_a_file_that_cannot_be_read_when_its_turn_comes_is_the_graders_failure_with_a_reason(tmp_path):
    """A submission found when grading started but unreadable when its turn comes (removed meanwhile, or a name
    this process cannot spell: a Korean folder under a Latin-1 locale did that to a whole class) used to read as
    the student's own error, "ada.py could not be read (No such file or directory)", and a result that is the
    grader's failure had an empty reason in scores.csv. Now: the autograder's failure, the path for staff, and its
    line in scores.csv says so."""
    import csv as _csv
    from autograder.runner import grade
    from autograder.jobs import Job
    from autograder.results import csv_text
    results = []
    gone = tmp_path / "ada.py"  # never written
    grade(assignment.load("attention"), [Job("ada", gone)], results.append)
    (r,) = results
    assert r.error is not None and "autograder itself failed" in r.error.en
    assert "could not read" in r.staff and "ada.py" in r.staff
    rows = list(_csv.DictReader(csv_text([r], ["steps"]).splitlines()))
    assert "autograder itself failed" in rows[0]["reason"]


def test_a_folder_with_an_upper_case_extension_or_a_link_is_told_so(tmp_path):
    """Audit D #8: a folder holding `Attention.PY`, or `attention.py` as a symbolic link (to the reference here),
    read "No .py or .ipynb file was found". The result names the file and the real problem, and the link is still
    not read; a folder with nothing like a submission keeps the old message."""
    from autograder import discover
    a = assignment.load("attention")
    subs = tmp_path / "subs"
    for d in ("upper", "linked", "empty"):
        (subs / d).mkdir(parents=True)
    (subs / "upper" / "Attention.PY").write_text(REFERENCE.read_text())
    (subs / "linked" / "attention.py").symlink_to(REFERENCE)
    (subs / "empty" / "notes.txt").write_text("nothing\n")
    jobs = {job.student: job for job in discover.find(subs, a)}
    assert all(job.path is None for job in jobs.values())
    upper, linked = jobs["upper"].error, jobs["linked"].error
    assert "Attention.PY ends in .PY, not .py" in upper.en and "Rename it to Attention.py" in upper.en
    assert ".PY" in upper.ko and "소문자" in upper.ko
    assert "attention.py is a symbolic link" in linked.en and "not followed" in linked.en and "심볼릭 링크" in linked.ko
    assert jobs["empty"].error.en.startswith("No .py or .ipynb file was found")


def test_a_folder_holding_only_a_zip_of_the_answer_is_told_it_is_a_zip(tmp_path):
    """Red team s19: a submission (a Gradescope upload, a folder of an export) holding only attention.zip read "No
    .py or .ipynb file was found", as if nothing had been handed in; it is told that the archive is not opened."""
    import zipfile
    from autograder import discover
    a = assignment.load("attention")
    (tmp_path / "subs" / "ada").mkdir(parents=True)
    with zipfile.ZipFile(tmp_path / "subs" / "ada" / "attention.zip", "w") as z:
        z.writestr("attention.py", REFERENCE.read_text())
    job = discover.find(tmp_path / "subs", a)[0]
    assert job.path is None
    assert "attention.zip is a zip archive" in job.error.en and "attention.py" in job.error.en, job.error.en
    assert "attention.zip" in job.error.ko and "압축" in job.error.ko


def deep_chain(top: Path, depth: int) -> Path:
    """`top`/d/d/.../d, `depth` folders down (os.makedirs would recurse once per level); the last folder."""
    p = top
    for _ in range(depth):
        p = p / "d"
        p.mkdir(parents=p.parent == top)
    return p


def remove_chain(top: Path) -> None:
    """Remove what deep_chain made, deepest first, without recursion (shutil.rmtree recurses once per level)."""
    folders = [top]
    while (folders[-1] / "d").is_dir():
        folders.append(folders[-1] / "d")
    for f in reversed(folders):
        for x in f.iterdir():
            if not x.is_dir():
                x.unlink()
        f.rmdir()


def test_one_students_folder_nested_a_thousand_deep_stops_nothing(tmp_path):
    """Red team s19: a submission folder holding folders nested 1,100 deep (a zip upload) made `grade batch` stop for
    the whole class with a RecursionError (rglob recursed once per level, while choosing the file to grade and
    recognising the assignment). The folder's own attention.py is graded; what lies deeper than MAX_DEPTH is not
    looked into."""
    from autograder import discover
    a = assignment.load("attention")
    subs = tmp_path / "subs"
    (subs / "ada").mkdir(parents=True)
    (subs / "ada" / "attention.py").write_text(REFERENCE.read_text())
    (subs / "bo").mkdir()
    (subs / "bo" / "attention.py").write_text(REFERENCE.read_text())
    try:
        (deep_chain(subs / "bo" / "deep", 1100) / "attention.py").write_text(SKELETON.read_text())
        (deep_chain(subs / "bo" / "shallow", 5) / "notes.py").write_text("x = 1\n")
        jobs = {job.student: job for job in discover.find(subs, a)}
        assert jobs["bo"].error is None and jobs["bo"].path == subs / "bo" / "attention.py", jobs["bo"].error
        assert jobs["ada"].path == subs / "ada" / "attention.py"
        assert discover.recognise(subs, assignment.names()).name == "attention"
        listed = discover.walk(subs / "bo")
        assert subs / "bo" / "shallow" / "d" / "d" / "d" / "d" / "d" / "notes.py" in listed
        assert max(len(p.relative_to(subs / "bo").parts) for p in listed) == discover.MAX_DEPTH
    finally:
        remove_chain(subs / "bo" / "deep")


def test_a_worked_file_beside_the_untouched_template_is_graded_whatever_the_times(tmp_path):
    """Variants round 3: a folder holding a solved mha_intermediates.py and the bundle's notebook as handed out (both
    uploaded at once: the same modification time, or the notebook touched last) graded the notebook, 0/100. The
    file that is not the untouched template is graded; an exam paper's notebook (its EXAM VARIANT block rendered
    for the student) counts as untouched; with both files worked on, or both untouched, the newer still wins."""
    import shutil

    from autograder import discover, exam
    templates = ROOT / "student_template"
    subs = tmp_path / "subs"
    a = assignment.load("mha_intermediates")
    cases = {"py_solved": ("mha_intermediates", ROOT / "reference" / "mha_intermediates.py", None),
             "nb_solved": ("mha_intermediates", None, "x = 1\n"),
             "both_untouched": ("mha_intermediates", None, None)}
    for folder, (name, py, nb_extra) in cases.items():
        (subs / folder).mkdir(parents=True)
        shutil.copy(py or templates / f"{name}.py", subs / folder / f"{name}.py")
        nb = json.loads((templates / f"{name}.ipynb").read_text(encoding="utf-8"))
        if nb_extra:
            nb["cells"].append({"cell_type": "code", "metadata": {}, "execution_count": None, "outputs": [],
                                "source": nb_extra})
        (subs / folder / f"{name}.ipynb").write_text(json.dumps(nb), encoding="utf-8")
        when = time.time() - 60
        os.utime(subs / folder / f"{name}.py", (when, when))
        os.utime(subs / folder / f"{name}.ipynb", (when, when))  # uploaded together: a tie
    picked = {job.student: job for job in discover.find(subs, a)}
    assert picked["py_solved"].path.name == "mha_intermediates.py"
    assert picked["nb_solved"].path.name == "mha_intermediates.ipynb"
    assert picked["both_untouched"].path.name == "mha_intermediates.ipynb"  # the tie, as before
    # An exam paper's notebook as handed out, beside the student's answer in the .py (the notebook newer).
    m = assignment.load("midterm")
    v = exam.require(m).default
    paper = subs.parent / "exam" / "ada"
    paper.mkdir(parents=True)
    (paper / "midterm.ipynb").write_text(exam.render_notebook((templates / "midterm.ipynb").read_text(encoding="utf-8"),
                                                              v, "ada"), encoding="utf-8")
    (paper / "midterm.py").write_text(exam.render((ROOT / "reference" / "midterm.py").read_text(encoding="utf-8"),
                                                  v, "ada"), encoding="utf-8")
    os.utime(paper / "midterm.py", (time.time() - 600, time.time() - 600))
    path, err, note = discover.choose_file(paper, m)
    assert err is None and path.name == "midterm.py" and "template as handed out" in note.en, note
    assert discover.untouched(paper / "midterm.ipynb") and not discover.untouched(paper / "midterm.py")


def test_a_notebook_that_imports_the_py_beside_it_is_graded_by_that_py(tmp_path):
    """Learners round rl14: a study notebook whose cells run `from attention import SelfAttention_v1` (and so on) of
    the attention.py beside it, as Jupyter lets them, was graded alone because it was modified last: every import
    failed and the answers in attention.py got 0/100. The .py is graded, with a note naming the import; a notebook
    that defines a class of its own beside its imports, or writes the module with %%writefile, keeps the old rule
    (the newer file)."""
    from autograder import discover
    a = assignment.load("attention")
    nb = lambda *cells: json.dumps({"cells": [{"cell_type": "code", "metadata": {}, "execution_count": None,
                                               "outputs": [], "source": c} for c in cells]})
    subs = tmp_path / "subs"
    cases = {"imports": nb("import torch\n", "from attention import SelfAttention_v1\nsa = SelfAttention_v1(3, 2)\n",
                           "import attention\nprint(attention.CausalAttention)\n"),
             "own_class": nb("from attention import SelfAttention_v1\n", "class Mine:\n    pass\n"),
             "writefile": nb("%%writefile attention.py\nclass SelfAttention_v1:\n    pass\n",
                             "from attention import SelfAttention_v1\n"),
             "no_import": nb("import torch\nx = torch.ones(2)\n")}
    for folder, text in cases.items():
        (subs / folder).mkdir(parents=True)
        shutil.copy(REFERENCE, subs / folder / "attention.py")
        (subs / folder / "attention.ipynb").write_text(text, encoding="utf-8")
        os.utime(subs / folder / "attention.py", (time.time() - 600, time.time() - 600))  # the notebook is newer
    path, err, note = discover.choose_file(subs / "imports", a)
    assert err is None and path.name == "attention.py", note
    assert "imports its code from attention.py" in note.en and "`from attention import ...`" in note.ko
    for folder in ("own_class", "writefile", "no_import"):
        path, err, note = discover.choose_file(subs / folder, a)
        assert path.name == "attention.ipynb" and "modified more recently" in note.en, folder
    # Neither file named as the lab asks: a study notebook and the module its cells import were "several candidate
    # files", 0/100; the module is graded. Two notebooks, or a module the notebook does not import, are still refused.
    (subs / "study").mkdir()
    shutil.copy(REFERENCE, subs / "study" / "SelfAttention.py")
    (subs / "study" / "03a.coding_attention.ipynb").write_text(
        nb("from SelfAttention import SelfAttention_v1, SelfAttention_v2\n"), encoding="utf-8")
    path, err, note = discover.choose_file(subs / "study", a)
    assert err is None and path.name == "SelfAttention.py", err
    assert "imports its code from SelfAttention.py" in note.en and "SelfAttention.py" in note.ko
    (subs / "study" / "03a.coding_attention.ipynb").write_text(nb("import torch\n"), encoding="utf-8")
    path, err, note = discover.choose_file(subs / "study", a)
    assert path is None and "several candidate files" in err.en


def test_work_under_a_name_of_ones_own_beside_the_untouched_template_is_graded(tmp_path):
    """Variants round 3: a folder holding the bundle's transformer_block.py as handed out and the student's solved
    notebook under a name of their own (Week7_kim.ipynb) graded the template: 0/100. The one other code file is
    graded, with a note; a template that was worked on, or two other candidates, keep the named file."""
    import shutil

    from autograder import discover
    a = assignment.load("transformer_block")
    template = ROOT / "student_template" / "transformer_block.py"
    solved = ROOT / "reference" / "transformer_block.py"
    subs = tmp_path / "subs"
    for folder, files in {"kim": {"transformer_block.py": template, "Week7_kim.py": solved},
                          "lee": {"transformer_block.py": solved, "Week7_lee.py": solved},
                          "park": {"transformer_block.py": template, "draft.py": solved, "final.py": solved}}.items():
        (subs / folder).mkdir(parents=True)
        for name, src in files.items():
            shutil.copy(src, subs / folder / name)
    jobs = {job.student: job for job in discover.find(subs, a)}
    assert jobs["kim"].path.name == "Week7_kim.py"
    path, err, note = discover.choose_file(subs / "kim", a)
    assert path.name == "Week7_kim.py" and err is None and "template as handed out" in note.en and note.ko
    assert jobs["lee"].path.name == "transformer_block.py"
    assert jobs["park"].path.name == "transformer_block.py"
