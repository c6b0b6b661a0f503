"""Run an assignment's checks over a sequence of submissions in one pytest session (one grader process)."""
from __future__ import annotations

import os
import sys
import warnings
from typing import Callable, Iterable

from .assignment import PROJECT_ROOT, Assignment
from .plugin import GradingPlugin, Job, protect
from .results import SubmissionResult
from .sandbox import Zygote


def grade(assignment: Assignment, jobs: Iterable[Job], on_result: Callable[[SubmissionResult], None], *,
          public_only: bool = False, zygote: Zygote | None = None, only: list[str] | None = None,
          sections: list[str] | None = None) -> None:
    """Grade every job; `on_result` is called once per job, in order, as soon as that job is done."""
    import pytest

    if str(PROJECT_ROOT) not in sys.path:
        sys.path.insert(0, str(PROJECT_ROOT))  # hidden checks import the instructor reference from here
    protect(assignment.private)
    plugin = GradingPlugin(assignment, jobs, on_result=on_result, public_only=public_only, zygote=zygote, only=only,
                          sections=sections)
    args = [str(d) for d in assignment.check_dirs(public_only) if d.is_dir()]
    # No log capture and no warning capture: each wraps every phase of every check (about 9% of a grader's
    # time on ~200 tiny checks per submission), and checks report through their results, not logs or warnings.
    # No unraisable/thread exception hooks either: they run at every phase too, and a full gc.collect() of
    # torch's heap at the end; student code never runs in this process, so there is nothing for them to catch.
    args += ["-s", "-p", "no:terminal", "-p", "no:cacheprovider", "-p", "no:stepwise", "-p", "no:logging",
             "-p", "no:warnings", "-p", "no:unraisableexception", "-p", "no:threadexception",
             "-p", "no:metadata",  # pytest-metadata (pytest-json-report's dependency) runs `uname -p` at start-up
             "--import-mode=importlib", f"--rootdir={assignment.dir}",
             f"--confcutdir={assignment.dir.parent}", "-o", "addopts="]
    warnings.filterwarnings("ignore", category=pytest.PytestAssertRewriteWarning)
    # The user's pytest settings are for their own test runs, not this session: PYTEST_ADDOPTS=-v (an option that
    # does not exist here without the terminal plugin) stopped `grade check` with a traceback, `-k x` deselected
    # every check, and a plugin named in PYTEST_PLUGINS that is not installed crashed it.
    saved = {k: os.environ.pop(k) for k in ("PYTEST_ADDOPTS", "PYTEST_PLUGINS") if k in os.environ}
    try:
        code = pytest.main(args, plugins=[plugin])
    finally:
        os.environ.update(saved)
    if code == pytest.ExitCode.INTERRUPTED:  # Ctrl-C: pytest caught it; `grade check` showed a RuntimeError's traceback
        raise KeyboardInterrupt
    if code not in (0, 1):
        raise RuntimeError(f"the grading session ended with pytest exit code {int(code)}")
