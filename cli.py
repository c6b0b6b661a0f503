"""The `grade` command line. It only parses options; each command is a keyword-only main() in autograder/."""
from __future__ import annotations

import os
import sys
from pathlib import Path

import click

from autograder.errors import GraderError

LANG = click.option("--lang", type=click.Choice(["en", "ko"]), default="en", show_default=True,
                    help="Language of the feedback (English or Korean).")
# grade report and grade release write no feedback: their --lang is that of what they write.
LANG_PAGE = click.option("--lang", type=click.Choice(["en", "ko"]), default="en", show_default=True,
                         help="Language of the report's pages and of its terminal lines (the figures' axis labels "
                              "stay English).")
LANG_BUNDLE = click.option("--lang", type=click.Choice(["en", "ko"]), default="en", show_default=True,
                           help="Language of the bundle's README.md and of the line this command prints.")


class _Path(click.Path):
    """click.Path whose refusals (no such file, a file where a folder is wanted) say it in Korean too: click parses
    paths before --lang is known, and a typo in a path was the one error of `grade` told in English only."""

    def convert(self, value, param, ctx):  # type: ignore[override]
        try:
            return super().convert(value, param, ctx)
        except click.BadParameter as e:
            shown = os.fsdecode(value)
            if not os.path.lexists(value):
                ko = f"'{shown}' 경로가 없습니다."
            elif os.path.isdir(value) and not self.dir_okay:
                ko = f"'{shown}'은(는) 파일이 아니라 폴더입니다."
            elif not os.path.isdir(value) and not self.file_okay:
                ko = f"'{shown}'은(는) 폴더가 아니라 파일입니다."
            else:
                ko = f"'{shown}'을(를) 쓰거나 읽을 수 없습니다."
            from autograder.messages import korean
            e.message = f"{e.message}\n오류: {korean(ko)}"
            raise


def _here(p: Path | None) -> Path | None:
    """A path as the user typed it, made absolute against their working directory.

    Grader processes run elsewhere (the repository, a temporary folder); a relative path must never reach them.
    """
    return None if p is None else Path(os.path.abspath(p))


def _stop_on_term() -> list:
    """SIGTERM and SIGHUP end `grade batch` as Ctrl-C does (KeyboardInterrupt: its graders stopped, both CSVs
    written, what to do next said). By default they ended this process alone: no CSV, and each grader process
    then printed an INTERNALERROR traceback (a broken pipe) on the terminal. Returns [name, number] once one came.
    A signal the caller ignores (nohup) stays ignored. Only the first of them (Ctrl-C among them) stops it: a second
    one, Ctrl-C pressed again or SIGTERM then Ctrl-C, came while the graders were being stopped and the CSVs
    written, and left no scores.csv or grades.csv, graders unstopped printing INTERNALERROR tracebacks, and no word
    of what to do next (red team, round 23)."""
    import signal
    got: list = []
    stopping: list = []

    def stop(signum: int, _frame: object) -> None:
        if not stopping:
            stopping.append(signum)
            if signum != signal.SIGINT:  # Ctrl-C says nothing of itself, as before
                got.extend([signal.Signals(signum).name, signum])
            raise KeyboardInterrupt

    for sig in (signal.SIGTERM, signal.SIGHUP):
        if signal.getsignal(sig) is signal.SIG_DFL:
            signal.signal(sig, stop)
    if signal.getsignal(signal.SIGINT) is signal.default_int_handler:
        signal.signal(signal.SIGINT, stop)
    return got


def _fail(e: GraderError, lang: str = "en") -> None:
    click.echo(f"{'오류' if lang == 'ko' else 'error'}: {e.message.text(lang)}", err=True)
    sys.exit(2)


@click.group()
@click.version_option(package_name="attention-grader")
def grade() -> None:
    """Auto-grading for PyTorch attention labs: student self-checks and isolated batch grading."""


@grade.command()
@click.argument("path", required=False, type=_Path(path_type=Path))
@click.option("--assignment", "assignment_name", help="Assignment name (default: recognised from the file).")
@click.option("--question", "questions", multiple=True, metavar="ID_OR_SECTION",
              help="Check only this question: its id (CausalAttention) or its section number (3.4); repeatable. "
                   "The notebook's checkpoints use it to check their own section.")
@LANG
def check(path: Path | None, assignment_name: str | None, lang: str, questions: tuple[str, ...]) -> None:
    """Run the public checks on PATH (default: attention.py or attention.ipynb here).

    With both attention.py and attention.ipynb here, the more recently modified one is checked (it says which).

    \b
    Examples:
      grade check                          # in the folder with your file
      grade check attention.ipynb --lang ko
      grade check attention.ipynb --question 3.4    # only section 3.4 (a notebook checkpoint)
    """
    # Without Linux process controls (Windows, macOS) the public checks run unsandboxed, labelled as such
    # (autograder/plainworker.py); batch grading and the Gradescope zip always use the sandbox.
    try:
        from autograder import cmd_check
        code = cmd_check.main(path=_here(path), assignment_name=assignment_name, lang=lang, echo=click.echo,
                              questions=questions)
    except GraderError as e:
        _fail(e, lang)
    except KeyboardInterrupt:  # Ctrl-C: nothing to keep; said in the student's language, not click's "Aborted!"
        click.echo("\n중단됨: 확인을 끝내지 않았습니다." if lang == "ko" else "\ninterrupted: the check did not finish.",
                   err=True)
        sys.stdout.flush()
        sys.stderr.flush()
        os._exit(130)
    # Everything is written and cleaned up; skip the interpreter's teardown of torch (about half a second).
    sys.stdout.flush()
    sys.stderr.flush()
    os._exit(code)


@grade.command()
@click.argument("submissions_dir", type=_Path(exists=True, file_okay=False, path_type=Path))
@click.option("--out", "out_dir", default="results", show_default=True, type=_Path(path_type=Path),
              help="Folder for <student>.json results and scores.csv.")
@click.option("--timeout", type=click.FloatRange(min=1), default=None,
              help="CPU seconds each submission's code may use in all: loading it and the calls into it (the "
                   "grader's own start-up and checks, and the machine's load, are not counted). A single call is stopped after the assignment's "
                   "call_timeout; a call that hangs costs only its class. Default: the assignment's total_timeout.")
@click.option("--workers", type=click.IntRange(min=1, max=64), default=2, show_default=True,
              help="Submissions graded at the same time.")
@click.option("--assignment", "assignment_name", default=None,
              help="Assignment name (default: recognised from the files; a folder that mixes assignments is refused).")
@click.option("--force", is_flag=True, help="Regrade submissions that already have a result in --out.")
@click.option("--only", "only", multiple=True, metavar="ID[,ID...]",
              help="Regrade only these students (result file names) in place; the CSVs are rewritten with everyone.")
@click.option("--roster", type=_Path(exists=True, dir_okay=False, path_type=Path), default=None,
              help="Exams: ROSTER.csv (id, extra_minutes); each student is graded against their own variant.")
@click.option("--secret-file", type=_Path(dir_okay=False, path_type=Path), default=None,
              help="Exams: the secret the papers were made with (default: $GRADE_EXAM_SECRET).")
@LANG
def batch(submissions_dir: Path, out_dir: Path, timeout: float | None, workers: int, assignment_name: str,
          force: bool, only: tuple[str, ...], roster: Path | None, secret_file: Path | None, lang: str) -> None:
    """Grade every submission in SUBMISSIONS_DIR with the hidden checks.

    Each entry is one student (a .py, an .ipynb, or a folder holding one). Paths are relative to the folder you
    are in. A re-run reuses a result only for the same file, checks, options, limits, language and exam variant.

    \b
    Examples:
      grade batch submissions/                        # results/<student>.json, scores.csv and grades.csv
      grade batch submissions/ --out results/ --timeout 60 --lang ko
      grade batch submissions/ --only ada,chen        # regrade two students in place
      grade batch submissions/ --assignment midterm --roster roster.csv --secret-file secret.txt
    """
    from autograder import assignment, batch as batch_cmd, exam
    stopped_by = _stop_on_term()
    try:
        if assignment_name:
            a = assignment.load(assignment_name)
        else:
            from autograder import discover
            notes: list = []
            a = discover.recognise(_here(submissions_dir), assignment.names(), notes)
            click.echo(f"과제: {a.name} (파일을 보고 알아냄; 직접 고르려면 --assignment NAME)" if lang == "ko" else
                       f"assignment: {a.name} (recognised from the files; --assignment NAME to choose)", err=True)
            for n in notes:
                click.echo(("참고: " if lang == "ko" else "note: ") + n.text(lang), err=True)
        plan = exam.plan(a, _here(roster), _here(secret_file))
        if plan is not None and plan.students is None and plan.cfg.variants:
            click.echo(f"참고: {a.name}은(는) 변형이 있는 시험인데 --roster가 없어서 모든 제출물을 기본 변형으로 "
                       "채점합니다." if lang == "ko" else
                       f"note: {a.name} is an exam with variants but no --roster was given: every submission is "
                       "graded against the default variant.", err=True)
        s = batch_cmd.main(submissions=_here(submissions_dir), out=_here(out_dir), assignment=a, workers=workers,
                           timeout=timeout, lang=lang, force=force, tty=sys.stderr.isatty(), exam=plan,
                           only=[i.strip() for o in only for i in o.split(",") if i.strip()] or None,
                           echo=lambda m: click.echo(m, err=True, nl=not sys.stderr.isatty()), details=False)
    except GraderError as e:
        _fail(e, lang)
    except KeyboardInterrupt:  # Ctrl-C: click said only "Aborted!", not that the finished results are kept
        by = f" ({stopped_by[0]})" if stopped_by else ""  # SIGTERM or SIGHUP: `kill`, `timeout`, a closed terminal
        click.echo(f"\n중단됨{by}: 지금까지 끝난 결과는 {out_dir}/에 있습니다 (scores.csv와 grades.csv도). 같은 명령을 "
                   "다시 실행하면 나머지를 채점합니다 (끝난 결과는 재사용합니다)." if lang == "ko" else
                   f"\ninterrupted{by}: the results finished so far are in {out_dir}/ (scores.csv and grades.csv list "
                   "them); run the same command again to grade the rest (finished results are reused).", err=True)
        sys.exit(128 + stopped_by[1] if stopped_by else 130)
    click.echo(batch_cmd.summary_table(s.results, a, lang))
    if lang == "ko":
        click.echo(f"채점 {s.graded}개, 재사용 {s.reused}개, {s.seconds:.1f}초; 결과: {out_dir}/ "
                   f"(학생마다 JSON 하나, scores.csv, grades.csv)")
    else:
        click.echo(f"graded {s.graded}, reused {s.reused}, in {s.seconds:.1f} s; results in {out_dir}/ "
                   f"(one JSON per student, scores.csv, grades.csv)")
    if s.reused or s.graded:
        click.echo(s.reuse_note(lang))
    if s.graded and s.grader_failed == s.graded:  # nothing was graded: the machine or the grader, not the students
        click.echo(f"오류: 채점한 {s.graded}개가 모두 채점기 자체의 오류로 끝났습니다. 원인은 {out_dir}/의 결과 파일에 "
                   "있습니다 (staff 항목)." if lang == "ko" else
                   f"error: all {s.graded} submissions graded ended in a failure of the grader itself, not of the "
                   f"students' code; the cause is in the result files in {out_dir}/ (their staff entries).", err=True)
        sys.exit(1)


@grade.command()
@click.option("--assignment", "assignment_name", default="attention", show_default=True)
@click.option("-o", "--output", type=_Path(dir_okay=False, path_type=Path), default=None,
              help="Where to write the zip (default: autograder.zip; with --try, a temporary file).")
@click.option("--hidden-visibility", type=click.Choice(["hidden", "after_due_date", "after_published", "visible"]),
              default=None, help="When students see the hidden checks (default: the assignment's "
                                 "hidden_visibility, normally after_published). Public checks are always visible.")
@click.option("--try", "try_path", type=_Path(exists=True, path_type=Path), default=None,
              help="Then grade this submission (file or folder) with the zip in a local /autograder-like "
                   "layout and print its results.json.")
@click.option("--roster", type=_Path(exists=True, dir_okay=False, path_type=Path), default=None,
              help="Exams: ROSTER.csv; it and the secret go into the zip (which is then staff-only).")
@click.option("--secret-file", type=_Path(dir_okay=False, path_type=Path), default=None,
              help="Exams: the secret the papers were made with (default: $GRADE_EXAM_SECRET).")
@click.option("--try-as", default=None, help="With --try: the submitter's id (their email's local part), or their full email where the roster "
                   "lists full emails.")
@LANG
def gradescope(assignment_name: str, output: Path | None, hidden_visibility: str | None, try_path: Path | None,
               roster: Path | None, secret_file: Path | None, try_as: str | None, lang: str) -> None:
    """Build the Gradescope autograder zip (otter-grader layout, graded by this engine).

    \b
    Examples:
      grade gradescope -o autograder.zip
      grade gradescope --try submissions/ada.py      # build, grade one file as Gradescope would, print results.json
    """
    import json
    from autograder import gradescope as gs
    try:
        built = gs.main(assignment_name=assignment_name, output=_here(output), hidden_visibility=hidden_visibility,
                        lang=lang, try_path=_here(try_path), echo=lambda m: click.echo(m, err=True),
                        roster=_here(roster), secret_file=_here(secret_file), try_as=try_as)
    except GraderError as e:
        _fail(e, lang)
    if built.results is not None:
        click.echo(json.dumps(built.results, ensure_ascii=False, indent=1))


@grade.command()
@click.option("--assignment", "assignment_name", default="attention", show_default=True)
@click.option("-o", "--out", "out_dir", required=True, type=_Path(file_okay=False, path_type=Path),
              help="Empty or new folder for the student bundle.")
@LANG_BUNDLE
def release(assignment_name: str, out_dir: Path, lang: str) -> None:
    """Write the student bundle: skeleton, notebook, public checks and the engine to run them (no hidden material).

    \b
    Example:
      grade release -o student_bundle/               # then share student_bundle/ (or a zip of it)
    """
    from autograder import release as release_cmd
    try:
        files = release_cmd.main(assignment_name=assignment_name, out=_here(out_dir), lang=lang)
    except GraderError as e:
        _fail(e, lang)
    import shlex
    folder = shlex.quote(str(out_dir))  # a folder name with a space was shown unquoted in the command to copy
    click.echo(f"{out_dir}/에 파일 {len(files)}개를 썼습니다 (학생: pip install {folder} && grade check)" if lang == "ko"
               else f"wrote {len(files)} files to {out_dir}/ (students: pip install {folder} && grade check)")


@grade.command()
@click.argument("results_dir", type=_Path(exists=True, file_okay=False, path_type=Path))
@click.option("-o", "--out", "out_dir", default=None, type=_Path(file_okay=False, path_type=Path),
              help="Folder for index.html, report.json and the per-student pages (default: RESULTS_DIR/report).")
@click.option("--submissions", "submissions_dir", default=None,
              type=_Path(exists=True, file_okay=False, path_type=Path),
              help="The folder given to grade batch: its files are compared for near-identical code.")
@click.option("--threshold", type=click.FloatRange(0, 1), default=0.8, show_default=True,
              help="Similarity (0 to 1) from which a pair of submissions is listed.")
@LANG_PAGE
def report(results_dir: Path, out_dir: Path | None, submissions_dir: Path | None, threshold: float,
           lang: str) -> None:
    """Write the instructor report on a folder of grade batch results (open index.html in a browser)."""
    from autograder import report as report_cmd
    try:
        r = report_cmd.main(results=_here(results_dir), out=_here(out_dir), submissions=_here(submissions_dir), lang=lang,
                            threshold=threshold)
    except GraderError as e:
        _fail(e, lang)
    d = r.data
    page = (out_dir or results_dir / "report") / "index.html"  # as the user typed it, like grade batch's last line
    click.echo(f"결과 {d['n_students']}개, 채점 {d['n_graded']}개, 비슷한 쌍 {len(d['similar'])}개; 보고서: {page}"
               if lang == "ko" else f"{d['n_students']} results, {d['n_graded']} graded, {len(d['similar'])} similar "
               f"pair(s); report in {page}")
    # Files the comparison could not find or read: a wrong --submissions folder compared nothing, and the line
    # above said "0 similar pair(s)" as if the class had none.
    sim = d.get("similarity") or {}
    skipped, compared = sim.get("skipped") or [], sim.get("compared", 0)
    if sim.get("computed") and skipped:
        first = f"{skipped[0]['id']}: {skipped[0]['reason']}"
        if not compared:
            click.echo(f"참고: {submissions_dir}에서 이 결과들의 제출물을 하나도 찾지 못해 아무것도 비교하지 않았습니다 "
                       f"({first}). grade batch에 준 폴더를 --submissions로 지정하세요." if lang == "ko" else
                       f"note: none of these results' submissions was found in {submissions_dir}, so nothing was "
                       f"compared ({first}); pass the folder given to grade batch as --submissions.", err=True)
        else:
            more = " ..." if len(skipped) > 1 else ""
            click.echo(f"참고: 제출물 {len(skipped)}개는 비교하지 않았습니다 ({first}{more}); 보고서에 목록이 있습니다."
                       if lang == "ko" else f"note: {len(skipped)} submission(s) not compared ({first}{more}); the "
                       "report lists them.", err=True)


@grade.group()
def exam() -> None:
    """Exams: per-student papers from a secret, and the integrity audit of a graded exam."""


@exam.command()
@click.argument("assignment_name")
@click.option("--roster", required=True, type=_Path(exists=True, dir_okay=False, path_type=Path),
              help="ROSTER.csv with a column id (as grade batch names students) and optional extra_minutes.")
@click.option("-o", "--out", "out_dir", required=True, type=_Path(file_okay=False, path_type=Path),
              help="Folder for <id>/<exam>.py, <id>/<exam>.ipynb and manifest.csv.")
@click.option("--secret-file", type=_Path(dir_okay=False, path_type=Path), default=None,
              help="The exam secret (default: $GRADE_EXAM_SECRET); the same one grades the exam.")
def papers(assignment_name: str, roster: Path, out_dir: Path, secret_file: Path | None) -> None:
    """Write one paper per student on ROSTER (their own variant) and a manifest."""
    from autograder import assignment, exam as exam_cmd
    try:
        rows = exam_cmd.write_papers(assignment=assignment.load(assignment_name), roster=_here(roster), out=_here(out_dir),
                                     secret_file=_here(secret_file))
    except GraderError as e:
        _fail(e)
    click.echo(f"wrote {len(rows)} paper{'' if len(rows) == 1 else 's'} to {out_dir}/ and {out_dir}/manifest.csv")


@exam.command()
@click.argument("results_dir", type=_Path(exists=True, file_okay=False, path_type=Path))
@click.option("--threshold", type=click.FloatRange(0, 1), default=0.8, show_default=True,
              help="Share of fingerprints two submissions must have in common to be reported.")
@click.option("--json", "as_json", is_flag=True, help="Print the findings as JSON.")
def audit(results_dir: Path, threshold: float, as_json: bool) -> None:
    """Report other students' variants, near-identical files and late submissions in a graded exam."""
    import json
    from autograder import exam as exam_cmd
    try:
        findings = exam_cmd.audit(_here(results_dir), threshold=threshold)
    except GraderError as e:
        _fail(e)
    click.echo(json.dumps([f.to_dict() for f in findings], ensure_ascii=False, indent=1) if as_json
               else exam_cmd.audit_text(findings))


def main() -> None:
    from autograder import stdio
    stdio.prepare()
    grade(prog_name="grade")


if __name__ == "__main__":
    main()
