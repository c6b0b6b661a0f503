"""`grade check` for students: exit status, the per-question table, and the note about hidden tests."""
import os
import shutil
import subprocess
import sys

from conftest import REFERENCE, ROOT, SKELETON

GRADE = [sys.executable, str(ROOT / "cli.py")]


def run(args, cwd):
    return subprocess.run(GRADE + args, cwd=cwd, capture_output=True, text=True, timeout=300)


def test_check_passes_reference_in_current_folder(tmp_path):
    shutil.copy(REFERENCE, tmp_path / "attention.py")
    p = run(["check"], tmp_path)
    assert p.returncode == 0, p.stdout + p.stderr
    assert "total" in p.stdout and "44/44" in p.stdout
    assert "hidden" in p.stdout.lower()


def test_check_fails_skeleton_in_korean(tmp_path):
    shutil.copy(SKELETON, tmp_path / "attention.py")
    p = run(["check", "--lang", "ko"], tmp_path)
    assert p.returncode == 1
    assert "0/44" in p.stdout and "구현되지 않았습니다" in p.stdout


def test_check_without_a_file_explains(tmp_path):
    p = run(["check"], tmp_path)
    assert p.returncode == 2
    assert "attention.py" in p.stderr and "Traceback" not in p.stderr


def test_check_unknown_file_name_asks_for_assignment(tmp_path):
    (tmp_path / "mywork.py").write_text("x = 1\n")
    p = run(["check", "mywork.py"], tmp_path)
    assert p.returncode == 2 and "--assignment" in p.stderr and "Traceback" not in p.stderr


def test_a_grader_failure_in_check_is_told_to_the_student_as_the_checkers_own_with_its_cause(tmp_path, monkeypatch):
    """On a student's own computer nobody will "regrade" anything: a failure of the checker itself says that it is
    not about their code and shows what went wrong, instead of the batch's "your instructor has the details"."""
    import autograder.runner
    from autograder import cmd_check
    from autograder.messages import GRADER_FAILED
    from autograder.results import SubmissionResult

    def broken(a, jobs, on_result, **_kw):
        (job,) = jobs
        on_result(SubmissionResult(student=job.student, submission=job.path.name, assignment=a.name,
                                   error=GRADER_FAILED, staff="Traceback ...\nModuleNotFoundError: No module named 'x'"))
    import autograder.sandbox
    monkeypatch.setattr(autograder.runner, "grade", broken)
    monkeypatch.setattr(autograder.sandbox, "Zygote", lambda **_kw: None)  # no worker is needed
    (tmp_path / "attention.py").write_text(REFERENCE.read_text())
    lines: list[str] = []
    code = cmd_check.main(path=tmp_path / "attention.py", echo=lines.append)
    out = "\n".join(lines)
    assert code == 1
    assert "checker itself failed on this computer" in out and "No module named 'x'" in out
    assert "will regrade" not in out


def test_hidden_checks_this_user_cannot_read_are_refused_before_grading(tmp_path, monkeypatch):
    """A run as root makes hidden/ readable by root only; a later run as another user then gave every student
    "the autograder itself failed" with exit status 0. It is refused first, naming the folder and the fix.
    (Root reads any folder, so the refusal is simulated here.)"""
    import os
    import pytest
    from autograder import assignment, batch
    from autograder.errors import UsageError
    a = assignment.load("attention")
    hidden = str(a.check_dirs(False)[-1])
    real = os.access
    monkeypatch.setattr(batch.os, "access", lambda p, mode: False if str(p) == hidden else real(p, mode))
    (tmp_path / "subs").mkdir()
    (tmp_path / "subs" / "ada.py").write_text(REFERENCE.read_text())
    with pytest.raises(UsageError) as e:
        batch.main(submissions=tmp_path / "subs", out=tmp_path / "out", assignment=a, echo=lambda *_: None)
    assert hidden in e.value.message.en and "chmod -R u+rX" in e.value.message.en
    assert not list((tmp_path / "out").glob("*.json"))


def test_a_batch_in_which_every_job_failed_in_the_grader_exits_with_an_error(tmp_path, monkeypatch):
    """When every submission graded ended in the grader's own failure, the batch says so and exits 1: before, it
    printed a table of zeros and exited 0, as if the class had submitted nothing that worked."""
    from click.testing import CliRunner
    import cli
    from autograder import batch
    from autograder.messages import GRADER_FAILED
    from autograder.results import SubmissionResult

    def all_failed(**kw):
        s = batch.Summary(graded=2, grader_failed=2)
        s.results = [SubmissionResult(student=n, submission=f"{n}.py", assignment="attention", error=GRADER_FAILED)
                     for n in ("ada", "bo")]
        return s
    monkeypatch.setattr(batch, "main", all_failed)
    (tmp_path / "subs").mkdir()
    (tmp_path / "subs" / "ada.py").write_text(REFERENCE.read_text())
    r = CliRunner().invoke(cli.grade, ["batch", str(tmp_path / "subs"), "--assignment", "attention", "--out",
                                       str(tmp_path / "out")])
    assert r.exit_code == 1, r.output
    assert "failure of the grader itself" in r.output


def test_check_on_a_zip_says_to_unzip_it(tmp_path):
    """QA s9: a student ran `grade check` on the zip they were about to upload. It said "Cannot tell which assignment
    sub.zip belongs to ... Rename it", and with --assignment graded the archive's bytes: "could not be decoded as
    UTF-8 or CP949/EUC-KR. Save the file as UTF-8" (0/44). The zip is named as such, with the fix, whatever its name."""
    import zipfile
    with zipfile.ZipFile(tmp_path / "sub.zip", "w") as z:
        z.write(REFERENCE, "attention.py")
    shutil.copy(tmp_path / "sub.zip", tmp_path / "attention.py")  # a zip saved under the code file's name
    for args in (["check", "sub.zip"], ["check", "sub.zip", "--assignment", "attention"], ["check"],
                 ["check", "sub.zip", "--lang", "ko"]):
        p = run(args, tmp_path)
        said = "압축을 풀고" if "ko" in args else "Unzip it"
        assert p.returncode == 2 and said in p.stderr and "Traceback" not in p.stderr, (args, p.stdout, p.stderr)
        assert "UTF-8" not in p.stdout + p.stderr and "Rename" not in p.stderr, (args, p.stderr)


def test_an_unknown_question_is_listed_in_korean_with_the_korean_titles():
    """Exam audit s9: the Korean refusal of an unknown --question listed the questions with their English titles."""
    from autograder import assignment, cmd_check
    from autograder.errors import UsageError
    a = assignment.load("midterm")
    try:
        cmd_check.select(a, ("NoSuchQuestion",))
    except UsageError as e:
        msg = e.message
    else:
        raise AssertionError("an unknown question was accepted")
    assert "configured by NUM_HEADS" in msg.en and "configured by NUM_HEADS" not in msg.ko, msg.ko
    assert "NUM_HEADS, QKV_BIAS, DROP_RATE, CONTEXT_LENGTH로 설정하는" in msg.ko, msg.ko


def test_a_folder_given_to_check_is_looked_in(tmp_path):
    """UX s13: `grade check lab/` (the folder that holds attention.py) said "lab does not exist or is not a file";
    it is looked in as `grade check` looks in the folder it runs in, and an empty one says what it looked for."""
    (tmp_path / "lab").mkdir()
    (tmp_path / "empty").mkdir()
    shutil.copy(REFERENCE, tmp_path / "lab" / "attention.py")
    p = run(["check", "lab"], tmp_path)
    assert p.returncode == 0 and "44/44" in p.stdout, p.stdout + p.stderr
    p = run(["check", "empty", "--lang", "ko"], tmp_path)
    assert p.returncode == 2 and "오류: " in p.stderr and "empty 폴더에 제출 파일이 없습니다" in p.stderr, p.stderr
    assert "attention.py" in p.stderr and "Traceback" not in p.stderr


def test_the_errors_a_user_makes_are_told_in_the_language_asked_for(tmp_path):
    """UX s13: with --lang ko, a mistyped path (click's own refusal), an unknown assignment, a results folder with
    no results, a missing exam secret and a roster of semicolons were told in English only (after "error:"); each
    is now told in Korean, exit 2, no traceback. A path click refuses has no --lang yet: it says both."""
    (tmp_path / "subs").mkdir()
    (tmp_path / "empty").mkdir()
    shutil.copy(REFERENCE, tmp_path / "subs" / "ada.py")
    (tmp_path / "roster.csv").write_text("id,extra_minutes\nada,0\n")
    (tmp_path / "semi.csv").write_text("id;extra_minutes\nada;0\n")
    (tmp_path / "exam.secret").write_text("0123456789abcdef0123456789abcdef\n")
    exam = ["--assignment", "midterm", "--roster"]
    for args, words in (
            (["batch", "nosuch"], ["Directory 'nosuch' does not exist.", "오류: 'nosuch' 경로가 없습니다."]),
            (["batch", "subs/ada.py"], ["is a file", "'subs/ada.py'는 폴더가 아니라 파일입니다."]),
            (["batch", "subs", "--roster", "empty"], ["is a directory", "'empty'는 파일이 아니라 폴더입니다."]),
            (["check", "subs/ada.py", "--assignment", "attn", "--lang", "ko"], ["오류: 알 수 없는 과제 'attn'"]),
            (["batch", "subs", "--assignment", "Attention", "--lang", "ko"], ["(attention인가요?)"]),
            (["report", "empty", "--lang", "ko"], ["오류: ", "grade batch의 결과 파일이 없습니다"]),
            (["batch", "subs", *exam, "roster.csv", "--lang", "ko"], ["오류: 시험 비밀 값이 없습니다", "--secret-file"]),
            (["batch", "subs", *exam, "semi.csv", "--secret-file", "exam.secret", "--lang", "ko"],
             ["명단에는 `id` 열이 있어야 합니다", "쉼표로 나눈 CSV로 저장하세요"]),
            (["batch", "subs", "--only", "adaa", "--lang", "ko"], ["이 id의 제출물이 없습니다: adaa (ada인가요?)"]),
            (["release", "-o", "subs", "--lang", "ko"], ["이미 있고 빈 폴더가 아닙니다"])):
        p = subprocess.run(GRADE + args, cwd=tmp_path, capture_output=True, text=True, timeout=300,
                           env={k: v for k, v in os.environ.items() if k != "GRADE_EXAM_SECRET"})
        assert p.returncode == 2, (args, p.stdout, p.stderr)
        assert all(w in p.stderr for w in words) and "Traceback" not in p.stderr, (args, p.stderr)
    assert not list(tmp_path.glob("results/*"))  # none of them graded anything


def test_check_without_a_known_file_names_the_code_files_that_are_there(tmp_path):
    """UX s13: a notebook or file saved under another name (a browser's "attention (1).py") got only the list of
    names looked for; the files that are there are named, with the command to check one (quoted for the shell)."""
    shutil.copy(REFERENCE, tmp_path / "attention (1).py")
    p = run(["check"], tmp_path)
    assert p.returncode == 2 and 'Here: attention (1).py (grade check "attention (1).py")' in p.stderr, p.stderr
    p = run(["check", 'attention (1).py'], tmp_path)
    assert p.returncode == 0 and "44/44" in p.stdout, p.stdout + p.stderr


def test_the_command_offered_for_a_file_here_is_safe_to_copy(tmp_path):
    """Red team rt23: a file named "attention $(touch PWNED).py" (a classmate's, from a shared folder or zip) was
    offered as grade check "attention $(touch PWNED).py": in double quotes a shell runs the command in the name.
    It is offered in single quotes; a name with a control character (a terminal escape, a newline that forges a
    line) is shown cleaned and offered as no command, since the cleaned name is not the file's; a name starting
    with '-' is not read as an option."""
    shutil.copy(REFERENCE, tmp_path / "attention $(touch PWNED).py")
    p = run(["check"], tmp_path)
    assert p.returncode == 2 and "(grade check 'attention $(touch PWNED).py')" in p.stderr, p.stderr
    probe = subprocess.run(["sh", "-c", "echo " + p.stderr.split("(grade check ")[1].rsplit(")", 1)[0]],
                           cwd=tmp_path, capture_output=True, text=True)
    assert probe.stdout == "attention $(touch PWNED).py\n" and not (tmp_path / "PWNED").exists()
    other = tmp_path / "other"
    other.mkdir()
    shutil.copy(REFERENCE, other / "a\x1b[31mRED\nerror: forged.py")
    p = run(["check"], other)
    assert p.returncode == 2 and "\x1b" not in p.stderr and "\nerror: forged" not in p.stderr, p.stderr
    assert "grade check a" not in p.stderr, p.stderr
    dash = tmp_path / "dash"
    dash.mkdir()
    shutil.copy(REFERENCE, dash / "-attention.py")
    p = run(["check"], dash)
    assert "(grade check ./-attention.py)" in p.stderr, p.stderr


def test_release_says_what_it_wrote_with_a_command_that_can_be_copied(tmp_path):
    """UX s13: `grade release -o "학생 번들"` said "pip install 학생 번들 && grade check": copied into a shell, that
    installs two things that do not exist. The folder is quoted where a shell needs it, and --lang ko says it in
    Korean."""
    p = run(["release", "-o", "학생 번들", "--lang", "ko"], tmp_path)
    assert p.returncode == 0, p.stderr
    assert "pip install '학생 번들' && grade check" in p.stdout and "파일" in p.stdout, p.stdout
    p = run(["release", "-o", "bundle"], tmp_path)
    assert "students: pip install bundle && grade check" in p.stdout, p.stdout


def test_each_commands_lang_says_what_it_changes():
    """UX s13: `grade report --help` and `grade release --help` said --lang was the "Language of the feedback";
    neither gives feedback (the report's pages, the bundle's README)."""
    from click.testing import CliRunner
    import cli
    for command, words in (("report", "report's pages"), ("release", "bundle's README.md"),
                           ("check", "of the feedback"), ("batch", "of the feedback")):
        out = " ".join(CliRunner().invoke(cli.grade, [command, "--help"]).output.split())
        assert words in out, (command, out)


def test_ctrl_c_as_the_zygote_starts_prints_no_traceback(tmp_path):
    """Session 14 (left by session 13): Ctrl-C in `grade check`'s first second or two, while the zygote's Python was
    still starting (before zygote_main ignores SIGINT), printed a KeyboardInterrupt traceback from its imports
    (site, pathlib, re ...) under the check's own "interrupted" line. The zygote now starts with SIGINT blocked
    until it ignores it. The signal is sent the moment the zygote's process appears, several times."""
    import signal
    import time
    (tmp_path / "attention.py").write_text(REFERENCE.read_text())
    for attempt in range(4):
        proc = subprocess.Popen(GRADE + ["check"], cwd=tmp_path, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                                text=True, start_new_session=True)
        deadline, seen = time.monotonic() + 60, False
        while time.monotonic() < deadline and proc.poll() is None and not seen:
            for e in os.listdir("/proc"):
                try:
                    with open(f"/proc/{e}/cmdline", "rb") as f:
                        cmd = f.read()
                    if b"zygote_main" in cmd and os.getsid(int(e)) == proc.pid:
                        seen = True
                        break
                except (OSError, ValueError):
                    pass
            else:
                time.sleep(0.002)
        assert seen, "the zygote never started"
        time.sleep(0.01 * attempt)  # a little later into its start-up each time
        os.killpg(proc.pid, signal.SIGINT)  # as the terminal does to the whole group
        out, err = proc.communicate(timeout=120)
        assert proc.returncode in (0, 130), (attempt, out, err[-3000:])
        assert "Traceback" not in err and "KeyboardInterrupt" not in err, (attempt, err[-3000:])


def test_ctrl_c_in_check_says_it_was_interrupted(tmp_path):
    """UX s13: Ctrl-C while `grade check` ran printed a traceback ending in "RuntimeError: the grading session
    ended with pytest exit code 2" (pytest had caught the KeyboardInterrupt), or click's "Aborted!": it now says the
    check did not finish, in the student's language, and exits 130."""
    import signal
    import time
    (tmp_path / "attention.py").write_text(REFERENCE.read_text() + "\nimport time\ntime.sleep(60)\n")
    proc = subprocess.Popen(GRADE + ["check", "--lang", "ko"], cwd=tmp_path, stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE, text=True, start_new_session=True)
    deadline = time.monotonic() + 120
    while time.monotonic() < deadline:  # until the check has started its zygote (workers are in their own sessions)
        ps = subprocess.run(["ps", "-s", str(proc.pid), "-o", "comm="], capture_output=True, text=True).stdout
        if "grade-zygote" in ps.split():
            break
        time.sleep(0.1)
    time.sleep(3)  # most often the student's code is running by now (its top level sleeps); either way it is Ctrl-C
    os.killpg(proc.pid, signal.SIGINT)  # as the terminal does to the whole group
    out, err = proc.communicate(timeout=120)
    assert proc.returncode == 130, (out, err[-3000:])
    assert "중단됨: 확인을 끝내지 않았습니다." in err, err[-3000:]
    assert "RuntimeError" not in err and "Aborted" not in err, err[-3000:]
