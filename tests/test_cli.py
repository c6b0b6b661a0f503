"""`grade check` for students: exit status, the per-question table, and the note about hidden tests."""
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
