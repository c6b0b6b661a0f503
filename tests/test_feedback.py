"""Feedback names the right cause (issue 9 item 8) where the bug table cannot show it: file size, fatal errors.

The table-driven cases (wrong rename hints, misspelt __init__, renamed keywords, softmax axis, scaling, merged
heads) are rows of assignments/attention/hidden/bugs.py, checked by tests/test_variants.py.
"""
from __future__ import annotations

import subprocess
import time
import sys
from pathlib import Path

import pytest

from conftest import grade_sources, notebook

GRADE = Path(sys.executable).parent / "grade"


@pytest.fixture(scope="module")
def graded(tmp_path_factory):
    big = b"# " + b"x" * (21 * 1024 * 1024) + b"\n"
    return grade_sources(tmp_path_factory.mktemp("feedback"), {
        "huge_py.py": big,
        "huge_notebook.ipynb": notebook("x = 1\n" + "# " + "y" * (21 * 1024 * 1024)),
    })


def test_a_huge_py_file_is_not_told_to_clear_notebook_outputs(graded):
    err = graded["huge_py"].error
    assert err is not None and "21 MB" in err.en and "notebook" not in err.en, err
    assert "Code alone is never this large" in err.en and "코드만으로는" in err.ko, err


def test_a_huge_notebook_is_still_told_to_clear_its_outputs(graded):
    err = graded["huge_notebook"].error
    assert err is not None and "Clear the notebook outputs" in err.en, err


def test_a_fatal_error_is_shown_once_with_the_count(tmp_path):
    """`grade check` on a file that ends its own process while loading: one line for all the checks it stopped."""
    (tmp_path / "attention.py").write_text("import os\nos._exit(3)\n", encoding="utf-8")
    run = subprocess.run([str(GRADE), "check"], cwd=tmp_path, capture_output=True, text=True, timeout=300)
    out = run.stdout
    assert run.returncode == 1, out + run.stderr
    assert "exited with code 3" in out, out
    assert out.count("Not graded") == 1, out
    assert out.count("[FAIL]") == 1 and "31 checks of every question (0/44)" in out, out


def test_misspelt_special_methods_are_named_from_the_source():
    from autograder.proxy import misspelt_method
    from autograder.source import Cell, Source
    code = ("class A:\n    def __int__(self, d_in):\n        pass\n    def foward(self, x):\n        pass\n"
            "class B:\n    def __iter__(self):\n        pass\n")
    src = Source("attention.py", "py", [Cell("x = (", "cell 1"), Cell(code, "cell 2")])
    assert "`A` defines `__int__`, not `__init__`" in misspelt_method(src, "A", "__init__").en
    assert "`foward`" in misspelt_method(src, "A", "forward").ko
    assert misspelt_method(src, "B", "__init__") is None  # a real special method is not a misspelling
    assert misspelt_method(src, "C", "__init__") is None


def test_a_cell_the_parser_cannot_take_is_skipped_by_the_source_readers():
    """Python's parser raises MemoryError (100,000 unary minuses), RecursionError, ValueError (NUL bytes, older
    Pythons) as well as SyntaxError: source.parse turns each into Unparsable, and misspelt_method skips that cell."""
    from autograder.proxy import misspelt_method
    from autograder.source import Cell, Source, Unparsable, parse
    deep = "_x = " + "-" * 100_000 + "1\n"
    for bad in (deep, "x = (", "x = 1\x00\n", "x = " + "(" * 300 + ")" * 300):
        with pytest.raises(Unparsable):
            parse(bad)
    assert "nested too deeply" in str(pytest.raises(Unparsable, parse, deep).value)
    assert "line 1" in str(pytest.raises(Unparsable, parse, "x = (").value)
    assert parse("x = 1").body
    # each text is parsed once (the checks read a submission's cells many times over): the tree is shared, and a
    # refusal is remembered with its reason
    tree = parse("y = 2\n", "cell 9")
    assert parse("y = 2\n", "cell 9") is tree and parse("y = 3\n", "cell 9") is not tree
    assert "line 1" in str(pytest.raises(Unparsable, parse, "x = (").value)
    code = "class A:\n    def __int__(self, d_in):\n        pass\n"
    src = Source("attention.ipynb", "ipynb", [Cell(deep, "cell 1"), Cell("y = 1\x00", "cell 2"), Cell(code, "cell 3")])
    assert "`A` defines `__int__`, not `__init__`" in misspelt_method(src, "A", "__init__").en


def test_a_diagnosis_never_fails_a_check_and_its_time_is_given_back():
    import time
    from types import SimpleNamespace

    from autograder import checks
    from autograder.messages import Message
    calls = []

    def slow_then_broken(**ctx):
        calls.append(ctx)
        time.sleep(0.05)
        raise RuntimeError("a bug in the diagnoser")

    checks.DIAGNOSERS["_test"] = slow_then_broken
    try:
        sub = SimpleNamespace(fatal=None, deadline=100.0, diagnosis_s=0.0)
        assert checks.diagnosis("_test", sub, got=1) is None  # swallowed: the check keeps its own message
        assert sub.deadline >= 100.05 and sub.diagnosis_s >= 0.05  # grader time is not the student's
        sub.diagnosis_s = checks.DIAGNOSIS_BUDGET_S
        assert checks.diagnosis("_test", sub, got=1) is None and len(calls) == 1  # over budget: not even asked
        checks.DIAGNOSERS["_test"] = lambda **ctx: Message("named", "이름")
        sub.diagnosis_s = 0.0
        with pytest.raises(checks.CheckFailure) as e:
            checks.expect_close(torch_tensor([1.0]), torch_tensor([2.0]), "f(x)", hint=Message("generic advice"),
                                explain=lambda got: checks.diagnosis("_test", sub, got=got))
        assert e.value.message.en.startswith("named") and "generic advice" not in e.value.message.en
    finally:
        del checks.DIAGNOSERS["_test"]


def torch_tensor(values):
    import torch
    return torch.tensor(values)


def test_grade_check_never_diagnoses(tmp_path):
    """The bug versions are hidden reference code: the student's own `grade check` has none of them."""
    from assignments.attention.hidden import bugs
    (tmp_path / "attention.py").write_text(bugs.BY_NAME["causal_softmax_dim1"].source(), encoding="utf-8")
    run = subprocess.run([str(GRADE), "check"], cwd=tmp_path, capture_output=True, text=True, timeout=300)
    assert "CausalAttention            5/10" in run.stdout, run.stdout + run.stderr
    assert "exactly what the reference gives" not in run.stdout and "dim=1 (the query axis" not in run.stdout


@pytest.mark.parametrize("got,want,passes", [
    ([1.0, float("-inf")], [1.0, float("-inf")], True),  # exactly equal, -inf included: the torch.equal path
    ([1.0, 2.0], [1.0, 2.00001], True),  # within tolerance: the general path
    ([float("nan"), 1.0], [float("nan"), 1.0], True),  # NaN where the reference has NaN (torch.equal says no)
    ([float("inf"), 1.0], [float("-inf"), 1.0], False),  # the wrong infinity
    ([0.0, float("-inf")], [0.0, 0.0], False),  # a fill where there should be none
    ([1.0, 2.0], [1.0, 2.1], False),
])
def test_expect_close_passes_exactly_when_values_agree(got, want, passes):
    """The exact-equality shortcut in checks._compare changes no outcome, and a float16 answer to a float32
    reference fails on its dtype even when the values are equal."""
    import torch
    from autograder import checks
    g, w = torch.tensor(got), torch.tensor(want)
    if passes:
        checks.expect_close(g, w, "f(x)")
    else:
        with pytest.raises(checks.CheckFailure):
            checks.expect_close(g, w, "f(x)")
    with pytest.raises(checks.CheckFailure, match="dtype"):
        checks.expect_close(g.half(), w, "f(x)")


def test_a_demo_line_that_fails_inside_forward_is_named_with_the_line_that_raised(tmp_path):
    """A notebook-style file whose top-level demo line calls a module that raises: the load note quoted the
    line inside forward (`b, num_tokens, d_in = x.shape`) as the one that did not run; it names the demo line,
    which is what did not run, and where the exception came from."""
    from conftest import REFERENCE
    src = REFERENCE.read_text() + "\n\nca = CausalAttention(3, 2, 6, 0.0)\nprint(ca(torch.rand(6, 3)))  # no batch dim\n"
    demo_line = src.splitlines().index("print(ca(torch.rand(6, 3)))  # no batch dim") + 1
    r = grade_sources(tmp_path, {"ada.py": src})["ada"]
    assert r.score == 100
    (note,) = [n for n in r.notes if "While loading your code" in n.en]
    assert f"line {demo_line}: `print(ca(torch.rand(6, 3)))" in note.en, note.en
    assert "raised in `forward`" in note.en and "b, num_tokens, d_in = x.shape" in note.en, note.en
    assert f"{demo_line}번째 줄" in note.ko and "`forward`의" in note.ko, note.ko


def test_an_import_the_grader_cannot_serve_is_said_to_be_skipped_not_wrong(tmp_path):
    """Learners round rl14: study files start with `import tiktoken` (or import a helper module of their repository).
    The load note read like an error in the student's code; it says that the module cannot be imported where the
    code is graded, that the statement was skipped, and that the graded classes must not need it."""
    from conftest import REFERENCE
    src = "import tiktoken\nimport my_helpers as mh\n" + REFERENCE.read_text()
    r = grade_sources(tmp_path, {"ada.py": src})["ada"]
    assert r.score == 100
    notes = [n for n in r.notes if "While loading your code" in n.en]
    assert len(notes) == 2, [n.en for n in notes]
    for note, top in zip(notes, ("tiktoken", "my_helpers")):
        assert f"`{top}` cannot be imported where your code is graded" in note.en, note.en
        assert "statement was skipped" in note.en and f"`{top}`을(를) import할 수 없어서" in note.ko, note


def test_an_import_of_a_name_no_installation_has_is_the_students_own_error():
    """`import torch.nn.functional.softmax` (a function, not a module), `import os.fake`, `import sys.getsizeof`:
    no installation has such a module, so the failure is the submission's own. They passed for the grader's
    failure (the first part is installed), and a skeleton with such a line avoided its 0."""
    from autograder.proxy import _env_failure
    for name in ("torch.nn.functional.softmax", "os.fake", "sys.getsizeof", "torch.nope", "no_such_module"):
        assert _env_failure({"type": "ModuleNotFoundError", "message": f"No module named '{name}'"}) is None, name
    for name in ("torch.nn.functional", "numpy", "torch._inductor"):  # installed: a failure to import is probed
        assert _env_failure({"type": "ModuleNotFoundError", "message": f"No module named '{name}'"}) == name


def test_import_probes_are_bounded_and_charged_to_the_submission():
    """Each raised ModuleNotFoundError of an installed module started a fresh worker to see whether it is the
    grader's failure, without limit and at the grader's expense (30 such lines: 16 s of grading). At most
    proxy.MAX_IMPORT_PROBES now, the rest the submission's own, and their time counts against its allowance."""
    from autograder import proxy
    from autograder.sandbox import Limits, WorkerLost
    from autograder.source import Cell, Source
    started = []

    class Probe:
        def request(self, *a, **k):
            time.sleep(0.01)
            raise WorkerLost("no answer")

        def kill(self, **k):
            pass

    def spawn():
        started.append(1)
        return Probe()
    sub = proxy.Submission(Source("s.py", "py", [Cell("x = 1", "s.py")]), spawn, Limits())
    answers = [sub._student_made(f"torch._inductor.m{i}") for i in range(6)]
    assert len(started) == proxy.MAX_IMPORT_PROBES and all(answers)
    assert sub.waited >= 0.01 * proxy.MAX_IMPORT_PROBES


def test_a_huge_gap_is_written_in_scientific_notation(monkeypatch):
    """Correct variants round 5: a gap of float32's largest value was written out in full ("off by
    340282346638528859811704183484516925440.0000"); huge values are now written in scientific notation, ordinary
    ones keep four decimals. (Both forms of the message: a hidden check's gap, a public check's values.)"""
    import torch
    from autograder.checks import CheckFailure, Reveal, expect_close
    monkeypatch.setattr(Reveal, "expected_values", False)
    with pytest.raises(CheckFailure) as e:
        expect_close(torch.tensor([torch.finfo(torch.float32).min]), torch.tensor([0.0]), "m(x)")
    assert "off by 3.4028e+38" in e.value.message.en and "차이 3.4028e+38" in e.value.message.ko
    monkeypatch.setattr(Reveal, "expected_values", True)
    with pytest.raises(CheckFailure) as e:
        expect_close(torch.tensor([torch.finfo(torch.float32).min]), torch.tensor([0.0]), "m(x)")
    assert "got -3.4028e+38" in e.value.message.en and "실제 -3.4028e+38" in e.value.message.ko
    assert "340282" not in e.value.message.en
    with pytest.raises(CheckFailure) as e:
        expect_close(torch.tensor([0.5]), torch.tensor([0.25]), "m(x)")
    assert "expected 0.2500, got 0.5000" in e.value.message.en
