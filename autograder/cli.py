"""Command line: a thin layer over the pipeline's functions.

python -m autograder release [--check]
python -m autograder grade SUBMISSIONS|EXPORT.zip [--roster CSV] [--workdir DIR]
        [--workers N | --scheduler tcp://HOST:8786|local:N] [--force] [--replace] [--no-sandbox]
python -m autograder feedback [SUBMISSIONS] --out DIR [--workdir DIR]
python -m autograder export --out grades.csv [--workdir DIR] [--format canvas [--roster CSV] [--assignment-id NB=ID]]
python -m autograder export --out worksheet.csv --format moodle [--notebook NB] [--roster WORKSHEET]
python -m autograder report --out DIR [--workdir DIR]
python -m autograder publish [--out DIR]
python -m autograder gradescope NOTEBOOK --out autograder.zip [--visibility V]
"""

from __future__ import annotations

import argparse
import sys
from collections.abc import Callable
from dataclasses import replace
from pathlib import Path
from typing import TYPE_CHECKING, Any, TypeAlias

from autograder import config, interrupt
from autograder.errors import InputError, NothingDone, UsageError
from autograder.grading.late import parse_policy, parse_time

if TYPE_CHECKING:
    from autograder.model.records import Limits


class Parser(argparse.ArgumentParser):
    """argparse, and the checks it cannot declare: an option that goes only with another (`refuse`). Subcommands'
    parsers are of this class too, so a refusal shows the subcommand's usage, as argparse's own errors do."""

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self.rules: list[tuple[Callable[[argparse.Namespace], Any], str]] = []

    def refuse(self, when: Callable[[argparse.Namespace], Any], message: str) -> None:
        self.rules.append((when, message))

    def parse_known_args(self, args: Any = None, namespace: Any = None) -> Any:
        parsed, extras = super().parse_known_args(args, namespace)
        for when, message in self.rules:
            if when(parsed):
                self.error(message)
        return parsed, extras


def _argument(parse: Callable[[str], Any]) -> Callable[[str], Any]:
    """One of the package's parsers as an argparse `type`: a bad value is refused with that parser's message."""

    def convert(text: str) -> Any:
        try:
            return parse(text)
        except InputError as exc:
            raise argparse.ArgumentTypeError(str(exc)) from None

    return convert


def _number(kind: type, least: float, what: str) -> Callable[[str], Any]:
    def convert(text: str) -> Any:
        try:
            value = kind(text)
        except ValueError:
            raise argparse.ArgumentTypeError(f"{text!r} is not a number") from None
        if value < least:
            raise argparse.ArgumentTypeError(f"{text} is not {what}")
        return value

    return convert


POSITIVE = _number(float, 1e-9, "more than 0")
AT_LEAST_ONE = _number(int, 1, "a whole number of at least 1")
NOT_NEGATIVE = _number(float, 0, "0 or more")


def _assignment_id(text: str) -> tuple[str, str]:
    notebook, sep, number = text.partition("=")
    if not sep or not notebook.strip() or not number.strip().isdigit():
        raise argparse.ArgumentTypeError(
            f"takes NOTEBOOK=CANVAS_ASSIGNMENT_ID, e.g. 02_dot_product_attention=1234, not {text!r}"
        )
    return notebook.strip(), number.strip()


def _fraction(text: str) -> float:
    from autograder.grading.verify import sample_fraction

    try:
        return sample_fraction(float(text))
    except InputError as exc:
        raise argparse.ArgumentTypeError(str(exc)) from None
    except ValueError:
        raise argparse.ArgumentTypeError(f"{text!r} is not a number") from None


def _with_limits(p: argparse.ArgumentParser, notebook_timeout: str, memory: str) -> None:
    """One submission's limits, the same options for `grade` and `gradescope` (`_limits` applies them). Each
    default is the command's own (`notebook_timeout`, `memory` say it), so an option left out changes nothing."""
    p.add_argument("--timeout", type=POSITIVE, help=f"wall-clock seconds per cell (default: {config.CELL_TIMEOUT_S:g})")
    p.add_argument(
        "--notebook-timeout", type=POSITIVE, help=f"wall-clock seconds per notebook (default: {notebook_timeout})"
    )
    p.add_argument(
        "--memory", type=NOT_NEGATIVE, help=f"address-space limit per submission in GiB, 0 for none (default: {memory})"
    )
    p.add_argument(
        "--processes",
        type=AT_LEAST_ONE,
        help=f"processes per submission (default: {config.SANDBOX_PROCESSES})",
    )


def _limits(args: argparse.Namespace, defaults: Limits) -> Limits:
    """`defaults` with the limits given on the command line (`_with_limits`)."""
    given = {
        "cell_timeout_s": args.timeout,
        "notebook_timeout_s": args.notebook_timeout,
        "memory_bytes": None if args.memory is None else int(args.memory * (1 << 30)),
        "processes": args.processes,
    }
    return replace(defaults, **{name: value for name, value in given.items() if value is not None})


def _release(args: argparse.Namespace) -> int:
    from coursetools.release import release

    stale = release(check=args.check)
    if args.check:
        if stale:
            print("Out of date with solutions/ (run `make release` and commit):", file=sys.stderr)
            for file in stale:
                print(f"  {file.path.relative_to(config.REPO_ROOT)}", file=sys.stderr)
                for reason in file.reasons:
                    print(f"    {reason}", file=sys.stderr)
            return 1
        print("Student notebooks are in sync with solutions/.")
        return 0
    for file in stale:
        print(f"wrote {file.path.relative_to(config.REPO_ROOT)}")
    print(f"{len(stale)} notebook(s) updated." if stale else "Nothing to do: student notebooks are up to date.")
    return 0


def _grade(args: argparse.Namespace) -> int:
    from autograder.grading.grade import Options, claim_workdir, grade, workdir_lock
    from autograder.grading.late import Lateness, read_timestamps
    from autograder.grading.verify import verify
    from autograder.intake.uploads import prepare
    from autograder.model.notebooks import notebook_names
    from autograder.sandbox import Limits

    lateness = None
    if args.deadline:
        lateness = Lateness(
            args.deadline,
            args.late_policy or parse_policy(config.LATE_POLICY),
            read_timestamps(args.timestamps) if args.timestamps else None,
        )
    options = Options(
        lateness=lateness,
        workdir=args.workdir,
        db_url=args.db,
        workers=args.workers,
        force=args.force,
        notebooks=args.notebook or None,
        limits=_limits(args, Limits()),
        sandboxed=not args.no_sandbox,
        roster=args.roster,
        students=args.student or None,
        scheduler=args.scheduler,
        dry_run=args.dry_run,
    )
    # one run at a time writes a work dir, and a work dir is one class: both settled before the intake touches it
    with workdir_lock(args.workdir):
        claim_workdir(args.submissions, args.workdir, args.replace, args.db, sys.stdout)
        # laid out once, and recorded in the work dir: grade, verify, feedback and export read this one intake
        intake = prepare(args.submissions, args.workdir, notebook_names(), args.roster, sys.stdout)
        results = grade(intake, options)
        if args.dry_run:
            return 0
        checked = verify(intake, options, args.verify, args.verify_seed) if args.verify else []
    if any(r.internal_error for r in results):
        return 1
    return 3 if any(c.differences for c in checked) else 0


def _feedback(args: argparse.Namespace) -> int:
    from autograder.reporting.feedback import write_feedback

    written = write_feedback(args.submissions, args.out, args.workdir, out=sys.stdout, db_url=args.db)
    print(f"Wrote {len(written)} feedback file(s) under {args.out}")
    if not written:
        raise NothingDone(f"no feedback page written: the work dir {args.workdir} holds no graded submission")
    return 0


def _export(args: argparse.Namespace) -> int:
    from autograder.reporting.export import export_canvas, export_csv, export_moodle

    if args.format == "csv":
        rows = export_csv(args.out, args.workdir, args.db, out=sys.stdout)
        print(f"Wrote {rows} row(s) to {args.out}")
        if not rows:
            raise NothingDone(f"{args.out} holds no grade: the gradebook of {args.workdir} has no graded submission")
        return 0
    if args.format == "moodle":
        students, warnings = export_moodle(args.out, args.workdir, args.db, args.notebook, args.roster, sys.stdout)
        layout = "as Moodle's grading worksheet (the assignment: Grading action > Upload grading worksheet)"
    else:
        ids = dict(args.assignment_id or [])
        students, warnings = export_canvas(args.out, args.workdir, args.db, args.roster, ids, sys.stdout)
        layout = "in Canvas's gradebook import layout (Canvas: Grades > Import)"
    for warning in warnings:
        print(f"warning: {warning}")
    print(f"Wrote {students} student(s) to {args.out} {layout}")
    if not students:
        raise NothingDone(
            f"{args.out} holds no student's grade: importing it would change nothing (the warnings above say why; "
            "is it the roster and work dir of this assignment?)"
        )
    return 0


def _publish(args: argparse.Namespace) -> int:
    from coursetools.layout import PUBLISH_DIR
    from coursetools.publish import publish
    from coursetools.site import read_settings

    out = args.out or PUBLISH_DIR
    done = publish(out, through=args.through, at=args.at)
    for warning in done.warnings:
        print(f"warning: {warning}", file=sys.stderr)
    lessons = [p for p in done.written if p.startswith(read_settings().lesson_dir + "/")]
    answered = sorted(n for n in done.moment.past_due if n in done.exercises)
    print(
        f"Published {done.moment.label}: chapters {', '.join(done.chapters) or 'none (no chapter has opened yet)'}; "
        f"the course code answering exercises {', '.join(answered) or 'none'} (past their deadline)."
    )
    for number, why in sorted(done.held.items()):
        print(f"Chapter {number} has opened but is held back: {why}.")
    print(f"Wrote the public release into {out}: {len(done.written)} files, {len(lessons)} lesson notebook(s).")
    print(
        f"Its repository is {read_settings().repository_url} (repository.url in _config.yml); "
        "commit the folder's content there. `make book` in it builds the website."
    )
    return 0


def _gradescope(args: argparse.Namespace) -> int:
    from autograder.integrations.gradescope import build_zip, gradescope_limits

    members = build_zip(args.notebook, args.out, _limits(args, gradescope_limits()), args.visibility)
    what = f"setup.sh, run_autograder, the grader, notebook/{args.notebook}.ipynb"
    print(f"Wrote {args.out}: {len(members)} files ({what})")
    print(
        "Upload it as the assignment's autograder (Gradescope: Programming Assignment > Configure Autograder > Zip "
        "file upload); give it at least 2 GB of memory (Autograder Settings): torch needs more than the default 768 MB."
    )
    return 0


def _report(args: argparse.Namespace) -> int:
    import time

    from autograder.reporting.report import write_report

    started = time.monotonic()
    written = write_report(args.out, args.workdir, db_url=args.db, out=sys.stdout)
    print(f"Wrote {len(written)} report page(s) under {args.out} in {time.monotonic() - started:.1f} s")
    return 0


def build_parser() -> argparse.ArgumentParser:
    """The parser of every subcommand, each added by its own `_add_*`, in the order `--help` lists them."""
    parser = Parser(prog="autograder", description="Release, grade and give feedback on the course's notebooks.")
    subparsers = parser.add_subparsers(dest="command", required=True)
    for add in (_add_release, _add_grade, _add_feedback, _add_export, _add_report, _add_gradescope, _add_publish):
        add(subparsers)
    return parser


# `build_parser`'s subparsers, to which each `_add_*` adds its subcommand (a type argparse gives no public name).
Subcommands: TypeAlias = "argparse._SubParsersAction[Parser]"


def _with_workdir(p: argparse.ArgumentParser) -> None:
    p.add_argument("--workdir", type=Path, default=config.DEFAULT_WORKDIR, help="grading state (default: grading/)")


def _with_db(p: argparse.ArgumentParser) -> None:
    p.add_argument("--db", help="gradebook SQLAlchemy URL (default: SQLite in the work dir)")


def _with_out(p: argparse.ArgumentParser, what: str | None = None) -> None:
    """The required `--out` of a command that writes something (`what` it is, if not obvious)."""
    p.add_argument("--out", type=Path, required=True, help=what)


def _add_release(subparsers: Subcommands) -> None:
    p = subparsers.add_parser("release", help="generate the student notebooks in chapters/ from solutions/")
    p.add_argument(
        "--check", action="store_true", help="only check that the committed student notebooks are up to date"
    )
    p.set_defaults(func=_release)


def _add_grade(subparsers: Subcommands) -> None:
    p = subparsers.add_parser("grade", help="grade SUBMISSIONS/<student>/<notebook>.ipynb with the hidden tests")
    p.add_argument(
        "submissions",
        type=Path,
        help="a folder SUBMISSIONS/<student>/<notebook>.ipynb, a zip of one, an LMS export (Canvas's or "
        "Moodle's submissions zip or its unzipped folder), or an nbgrader course directory (its "
        "submitted/<student>/<assignment>/<notebook>.ipynb)",
    )
    _with_workdir(p)
    p.add_argument(
        "--roster",
        type=Path,
        help="CSV mapping LMS user ids to students (columns id, student; Canvas's gradebook export; or a "
        "Moodle assignment's grading worksheet, which also gives submission times): names the LMS files and lists "
        "who submitted nothing",
    )
    _with_db(p)
    p.add_argument(
        "--workers",
        type=AT_LEAST_ONE,
        default=config.default_workers(),
        help="parallel kernels (default: one per core)",
    )
    p.add_argument(
        "--scheduler",
        metavar="ADDRESS",
        help="grade on a Dask cluster: tcp://HOST:8786 (workers need this repository "
        "installed and bubblewrap), or local:N for N worker processes on this machine (default: local threads)",
    )
    p.add_argument("--force", action="store_true", help="grade again even what is already graded and unchanged")
    p.add_argument(
        "--replace",
        action="store_true",
        help="the work dir holds the grading of another input: delete that grading (its results, intake record and "
        "SQLite gradebook) and grade SUBMISSIONS there from scratch. Without it, grade refuses another input than "
        "the one graded in the work dir (the same input again resumes)",
    )
    p.add_argument("--notebook", action="append", help="grade only this notebook (repeatable; default: those found)")
    p.add_argument(
        "--dry-run",
        action="store_true",
        help="lay the input out and print who handed in what, which file counts, what is refused, late or already "
        "graded, and run nothing",
    )
    p.add_argument(
        "--student",
        action="append",
        help="grade only this student (repeatable); with --force, regrade them and change nothing else",
    )
    _with_limits(
        p,
        notebook_timeout=f"{config.NOTEBOOK_TIMEOUT_S:g}",
        memory=f"{config.SANDBOX_MEMORY_BYTES >> 30}, none on a machine with an NVIDIA GPU",
    )
    p.add_argument(
        "--no-sandbox",
        action="store_true",
        help="run student code WITHOUT isolation, as this user (only if bubblewrap cannot be installed)",
    )
    _with_verify(p)
    _with_lateness(p)
    p.set_defaults(func=_grade)


def _with_verify(p: argparse.ArgumentParser) -> None:
    """`grade --verify`: grade a sample again, to show that the grades repeat."""
    p.add_argument(
        "--verify",
        type=_fraction,
        metavar="FRACTION",
        help="then grade this fraction of the submissions again in fresh sandboxes and report any per-cell "
        "difference (exit status 3 if there is one)",
    )
    p.add_argument("--verify-seed", type=int, default=0, help="seed of the --verify sample (default: %(default)s)")


def _with_lateness(p: Parser) -> None:
    """`grade --deadline`, and the options that only go with it."""
    p.add_argument(
        "--deadline",
        type=_argument(parse_time),
        help="ISO time, e.g. 2026-12-01T23:59 (local time unless a zone is given): count late work",
    )
    p.add_argument(
        "--late-policy",
        type=_argument(parse_policy),
        help=f"with --deadline: e.g. '10%%/day, max 3 days' (default: {config.LATE_POLICY.replace('%', '%%')})",
    )
    p.add_argument(
        "--timestamps",
        type=Path,
        help="with --deadline: CSV of submission times: student, submitted_at[, notebook] "
        "(default: the file's modification time, with a warning)",
    )
    p.refuse(
        lambda a: (a.late_policy or a.timestamps) and not a.deadline, "--late-policy and --timestamps need --deadline"
    )


def _add_feedback(subparsers: Subcommands) -> None:
    p = subparsers.add_parser("feedback", help="write DIR/<student>/<notebook>.html without hidden test source")
    p.add_argument(
        "submissions",
        type=Path,
        nargs="?",
        help="what `grade` was given (checked: another input is refused); default: the work dir's graded intake",
    )
    _with_out(p)
    _with_workdir(p)
    _with_db(p)
    p.set_defaults(func=_feedback)


def _add_export(subparsers: Subcommands) -> None:
    p = subparsers.add_parser(
        "export",
        help="write the gradebook as CSV: one row per student and notebook, or for Canvas's or Moodle's import",
    )
    _with_out(p)
    p.add_argument(
        "--format",
        choices=["csv", "canvas", "moodle"],
        default="csv",
        help="csv (default): every test cell, reasons, late columns; canvas: one column per notebook, "
        "the layout Canvas's gradebook import reads; moodle: one notebook as a Moodle assignment's grading "
        "worksheet (grade and feedback comment per participant)",
    )
    p.add_argument(
        "--roster",
        type=Path,
        help="with --format canvas or moodle: the roster given to grade (fills Canvas's ID column; Moodle's "
        "worksheet fills names and e-mail addresses)",
    )
    p.add_argument("--notebook", help="with --format moodle: the notebook to export (needed when there are several)")
    p.add_argument(
        "--assignment-id",
        action="append",
        type=_assignment_id,
        metavar="NOTEBOOK=ID",
        help="with --format canvas: the Canvas assignment id of a notebook (repeatable)",
    )
    _with_workdir(p)
    _with_db(p)
    p.refuse(
        lambda a: a.format == "moodle" and a.assignment_id,
        "--assignment-id goes with --format canvas (a Moodle worksheet is one assignment)",
    )
    p.refuse(lambda a: a.format != "moodle" and a.notebook, "--notebook goes with --format moodle")
    p.refuse(
        lambda a: a.format == "csv" and (a.roster or a.assignment_id),
        "--roster and --assignment-id go with --format canvas (--roster also with --format moodle)",
    )
    p.set_defaults(func=_export)


def _add_report(subparsers: Subcommands) -> None:
    p = subparsers.add_parser("report", help="write DIR/<notebook>.html: the class report (no grading again)")
    _with_out(p)
    _with_workdir(p)
    _with_db(p)
    p.set_defaults(func=_report)


def _add_gradescope(subparsers: Subcommands) -> None:
    p = subparsers.add_parser(
        "gradescope", help="write Gradescope's autograder zip of one notebook (setup.sh, run_autograder)"
    )
    p.add_argument("notebook", help="the notebook, e.g. 02_dot_product_attention")
    _with_out(p, "the zip to write, e.g. autograder.zip")
    p.add_argument(
        "--visibility",
        choices=["visible", "after_due_date", "after_published", "hidden"],
        default="visible",
        help="when students see each test's result (Gradescope's setting; default: %(default)s)",
    )
    _with_limits(
        p,
        notebook_timeout="420, under Gradescope's default 10 minutes per run",
        memory=f"{config.SANDBOX_MEMORY_BYTES >> 30}",
    )
    p.set_defaults(func=_gradescope)


def _add_publish(subparsers: Subcommands) -> None:
    p = subparsers.add_parser("publish", help="write the public release (no solutions, no hidden tests) into DIR")
    p.add_argument("--out", type=Path, help="folder to write (default: _publish/)")
    when = p.add_mutually_exclusive_group()
    when.add_argument(
        "--through",
        metavar="NN",
        help="the tree as it stands the moment chapter NN opens "
        "(chapters up to NN open, the exercises before NN past their deadline)",
    )
    when.add_argument(
        "--at",
        metavar="TIME",
        type=_argument(parse_time),
        help="the tree at this time of the calendar in chapters.yml (ISO 8601; default: now)",
    )
    p.set_defaults(func=_publish)


INTERRUPTED = 130  # a shell's status for a command ended by Ctrl-C (128 + SIGINT)


def main(argv: list[str] | None = None) -> int:
    """Run one command. Exit status: 0 done; 1 `release --check` found stale notebooks, or `grade` left
    submissions ungraded because the grader failed; 2 a usage error (argparse's, or a `UsageError`: its message,
    no traceback: another class in the work dir, a work dir another run is grading); 3 `grade --verify` found a
    grade that did not repeat; 4 the command did nothing (`NothingDone`: no notebook in the input, no student or
    row written); 130 interrupted (Ctrl-C): what was recorded stays, and the same command finishes the rest. Any
    other exception is a bug: its traceback is shown."""
    args = build_parser().parse_args(argv)
    interrupt.catch()
    try:
        return args.func(args)
    except NothingDone as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 4
    except UsageError as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 2
    except KeyboardInterrupt:  # the instructor's Ctrl-C: not a bug, and each result is recorded as it arrives
        print("\ninterrupted; run the same command again to finish", file=sys.stderr, flush=True)
        return INTERRUPTED
