"""The `grade` command line. It only parses options; each command is a keyword-only main() in autograder/."""
from __future__ import annotations

import os
import sys
from pathlib import Path

import click

from autograder.errors import GraderError

LANG = click.option("--lang", type=click.Choice(["en", "ko"]), default="en", show_default=True,
                    help="Language of the feedback (English or Korean).")


def _fail(e: GraderError, lang: str = "en") -> None:
    click.echo(f"error: {e.message.text(lang)}", err=True)
    sys.exit(2)


@click.group()
@click.version_option(package_name="attention-grader")
def grade() -> None:
    """Auto-grading for PyTorch attention labs: student self-checks and isolated batch grading."""


@grade.command()
@click.argument("path", required=False, type=click.Path(path_type=Path))
@click.option("--assignment", "assignment_name", help="Assignment name (default: recognised from the file name).")
@LANG
def check(path: Path | None, assignment_name: str | None, lang: str) -> None:
    """Run the public checks on PATH (default: attention.py or attention.ipynb here)."""
    from autograder import cmd_check
    try:
        code = cmd_check.main(path=path, assignment_name=assignment_name, lang=lang, echo=click.echo)
    except GraderError as e:
        _fail(e, lang)
    # Everything is written and cleaned up; skip the interpreter's teardown of torch (about half a second).
    sys.stdout.flush()
    sys.stderr.flush()
    os._exit(code)


@grade.command()
@click.argument("submissions_dir", type=click.Path(exists=True, file_okay=False, path_type=Path))
@click.option("--out", "out_dir", default="results", show_default=True, type=click.Path(path_type=Path),
              help="Folder for <student>.json results and scores.csv.")
@click.option("--timeout", type=click.FloatRange(min=1), default=None,
              help="Wall-clock seconds per submission (default: the assignment's limit).")
@click.option("--workers", type=click.IntRange(min=1, max=64), default=2, show_default=True,
              help="Submissions graded at the same time.")
@click.option("--assignment", "assignment_name", default="attention", show_default=True)
@click.option("--force", is_flag=True, help="Regrade submissions that already have a result in --out.")
@click.option("--only", "only", multiple=True, metavar="ID[,ID...]",
              help="Regrade only these students (result file names) in place; the CSVs are rewritten with everyone.")
@LANG
def batch(submissions_dir: Path, out_dir: Path, timeout: float | None, workers: int, assignment_name: str,
          force: bool, only: tuple[str, ...], lang: str) -> None:
    """Grade every submission in SUBMISSIONS_DIR with the hidden checks."""
    from autograder import assignment, batch as batch_cmd
    try:
        a = assignment.load(assignment_name)
        # Absolute: the grader processes run in the project folder, where a relative path means nothing.
        s = batch_cmd.main(submissions=submissions_dir.absolute(), out=out_dir, assignment=a, workers=workers,
                           timeout=timeout, lang=lang, force=force, tty=sys.stderr.isatty(),
                           only=[i.strip() for o in only for i in o.split(",") if i.strip()] or None,
                           echo=lambda m: click.echo(m, err=True, nl=not sys.stderr.isatty()))
    except GraderError as e:
        _fail(e, lang)
    click.echo(batch_cmd.summary_table(s.results, a))
    click.echo(f"graded {s.graded}, reused {s.reused}, in {s.seconds:.1f} s; results in {out_dir}/ "
               f"(one JSON per student, scores.csv, grades.csv)")


@grade.command()
@click.option("--assignment", "assignment_name", default="attention", show_default=True)
@click.option("-o", "--output", type=click.Path(dir_okay=False, path_type=Path), default=None,
              help="Where to write the zip (default: autograder.zip; with --try, a temporary file).")
@click.option("--hidden-visibility", type=click.Choice(["hidden", "after_due_date", "after_published", "visible"]),
              default=None, help="When students see the hidden checks (default: the assignment's "
                                 "hidden_visibility, normally after_published). Public checks are always visible.")
@click.option("--try", "try_path", type=click.Path(exists=True, path_type=Path), default=None,
              help="Then grade this submission (file or folder) with the zip in a local /autograder-like "
                   "layout and print its results.json.")
@LANG
def gradescope(assignment_name: str, output: Path | None, hidden_visibility: str | None, try_path: Path | None,
               lang: str) -> None:
    """Build the Gradescope autograder zip (otter-grader layout, graded by this engine)."""
    import json
    from autograder import gradescope as gs
    try:
        built = gs.main(assignment_name=assignment_name, output=output, hidden_visibility=hidden_visibility,
                        lang=lang, try_path=try_path, echo=lambda m: click.echo(m, err=True))
    except GraderError as e:
        _fail(e, lang)
    if built.results is not None:
        click.echo(json.dumps(built.results, ensure_ascii=False, indent=1))


@grade.command()
@click.option("--assignment", "assignment_name", default="attention", show_default=True)
@click.option("-o", "--out", "out_dir", required=True, type=click.Path(file_okay=False, path_type=Path),
              help="Empty or new folder for the student bundle.")
@LANG
def release(assignment_name: str, out_dir: Path, lang: str) -> None:
    """Write the student bundle: skeleton, notebook, public checks and the engine to run them (no hidden material)."""
    from autograder import release as release_cmd
    try:
        files = release_cmd.main(assignment_name=assignment_name, out=out_dir, lang=lang)
    except GraderError as e:
        _fail(e, lang)
    click.echo(f"wrote {len(files)} files to {out_dir}/ (students: pip install {out_dir} && grade check)")


@grade.command()
@click.argument("results_dir", type=click.Path(exists=True, file_okay=False, path_type=Path))
@click.option("-o", "--out", "out_dir", default=None, type=click.Path(file_okay=False, path_type=Path),
              help="Folder for index.html, report.json and the per-student pages (default: RESULTS_DIR/report).")
@click.option("--submissions", "submissions_dir", default=None,
              type=click.Path(exists=True, file_okay=False, path_type=Path),
              help="The folder given to grade batch: its files are compared for near-identical code.")
@click.option("--threshold", type=click.FloatRange(0, 1), default=0.8, show_default=True,
              help="Similarity (0 to 1) from which a pair of submissions is listed.")
@LANG
def report(results_dir: Path, out_dir: Path | None, submissions_dir: Path | None, threshold: float,
           lang: str) -> None:
    """Write the instructor report on a folder of grade batch results (open index.html in a browser)."""
    from autograder import report as report_cmd
    try:
        r = report_cmd.main(results=results_dir, out=out_dir, submissions=submissions_dir, lang=lang,
                            threshold=threshold)
    except GraderError as e:
        _fail(e, lang)
    d = r.data
    click.echo(f"{d['n_students']} results, {d['n_graded']} graded, {len(d['similar'])} similar pair(s); "
               f"report in {r.out / 'index.html'}")


def main() -> None:
    grade(prog_name="grade")


if __name__ == "__main__":
    main()
