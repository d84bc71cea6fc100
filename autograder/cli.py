"""Command line: a thin layer over the pipeline's functions.

python -m autograder release [--check]
python -m autograder grade SUBMISSIONS|EXPORT.zip [--roster CSV] [--workdir DIR]
        [--workers N | --scheduler tcp://HOST:8786|local:N] [--force] [--no-sandbox]
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
from pathlib import Path

from autograder import config


def _release(args: argparse.Namespace) -> int:
    from coursetools.release import SourceError, release

    try:
        stale = release(check=args.check)
    except SourceError as exc:
        print(f"solutions/ has problems:\n{exc}", file=sys.stderr)
        return 1
    if args.check:
        if stale:
            print("Out of date with solutions/ (run `make release` and commit):", file=sys.stderr)
            for path in stale:
                print(f"  {path.relative_to(config.REPO_ROOT)}", file=sys.stderr)
                for reason in getattr(stale, "reasons", {}).get(path, []):
                    print(f"    {reason}", file=sys.stderr)
            return 1
        print("Student notebooks are in sync with solutions/.")
        return 0
    for path in stale:
        print(f"wrote {path.relative_to(config.REPO_ROOT)}")
    print(f"{len(stale)} notebook(s) updated." if stale else "Nothing to do: student notebooks are up to date.")
    return 0


def _grade(args: argparse.Namespace) -> int:
    from autograder.grading.grade import Options, grade, verify
    from autograder.intake.uploads import prepare
    from autograder.model.notebooks import notebook_names
    from autograder.sandbox import Limits, SandboxUnavailable, default_memory_bytes

    limits = Limits(
        cell_timeout_s=args.timeout,
        notebook_timeout_s=args.notebook_timeout,
        memory_bytes=default_memory_bytes() if args.memory is None else int(args.memory * (1 << 30)),
        processes=args.processes,
    )
    lateness = None
    if args.deadline:
        from autograder.grading.late import Lateness, parse_policy, parse_time, read_timestamps

        lateness = Lateness(
            parse_time(args.deadline),
            parse_policy(args.late_policy or config.LATE_POLICY),
            read_timestamps(args.timestamps) if args.timestamps else None,
        )
    elif args.late_policy or args.timestamps:
        raise ValueError("--late-policy and --timestamps need --deadline")
    options = Options(
        lateness=lateness,
        workdir=args.workdir,
        db_url=args.db,
        workers=args.workers,
        force=args.force,
        notebooks=args.notebook or None,
        limits=limits,
        sandboxed=not args.no_sandbox,
        roster=args.roster,
        students=args.student or None,
        scheduler=args.scheduler,
    )
    # laid out once, and recorded in the work dir: grade, verify, feedback and export read this one intake
    intake = prepare(args.submissions, args.workdir, notebook_names(), args.roster, sys.stdout)
    try:
        results = grade(intake, options)
        checked = verify(intake, options, args.verify, args.verify_seed) if args.verify else []
    except (SandboxUnavailable, ConnectionError) as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 2
    if any(r.internal_error for r in results):
        return 1
    return 3 if any(c["differences"] for c in checked) else 0


def _feedback(args: argparse.Namespace) -> int:
    from autograder.reporting.feedback import write_feedback

    written = write_feedback(args.submissions, args.out, args.workdir)
    print(f"Wrote {len(written)} feedback file(s) under {args.out}")
    return 0


def _export(args: argparse.Namespace) -> int:
    from autograder.reporting.export import export_canvas, export_csv, export_moodle

    if args.format == "moodle":
        if args.assignment_id:
            raise ValueError("--assignment-id goes with --format canvas (a Moodle worksheet is one assignment)")
        students, warnings = export_moodle(args.out, args.workdir, args.db, args.notebook, args.roster)
        for warning in warnings:
            print(f"warning: {warning}")
        print(
            f"Wrote {students} student(s) to {args.out} as Moodle's grading worksheet (the assignment: Grading action "
            "> Upload grading worksheet)"
        )
        return 0
    if args.notebook:
        raise ValueError("--notebook goes with --format moodle")
    if args.format == "canvas":
        ids = {}
        for pair in args.assignment_id or []:
            notebook, sep, number = pair.partition("=")
            if not sep or not number.strip().isdigit():
                raise ValueError(
                    f"--assignment-id takes NOTEBOOK=CANVAS_ASSIGNMENT_ID, e.g. 02_dot_product_attention=1234, not "
                    f"{pair!r}"
                )
            ids[notebook.strip()] = number.strip()
        students, warnings = export_canvas(args.out, args.workdir, args.db, args.roster, ids)
        for warning in warnings:
            print(f"warning: {warning}")
        print(
            f"Wrote {students} student(s) to {args.out} in Canvas's gradebook import layout (Canvas: Grades > Import)"
        )
        return 0
    if args.roster or args.assignment_id:
        raise ValueError("--roster and --assignment-id go with --format canvas (--roster also with --format moodle)")
    rows = export_csv(args.out, args.workdir, args.db)
    print(f"Wrote {rows} row(s) to {args.out}")
    return 0


def _publish(args: argparse.Namespace) -> int:
    from autograder.grading.late import parse_time
    from coursetools.publish import publish
    from coursetools.site import PublishError, read_settings

    try:
        at = parse_time(args.at) if args.at else None
    except ValueError:
        print(f"error: --at {args.at!r} is not an ISO 8601 time such as 2027-02-01T09:00", file=sys.stderr)
        return 2
    try:
        done = publish(args.out, through=args.through, at=at)
    except PublishError as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 1
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
    print(f"Wrote the public release into {args.out}: {len(done.written)} files, {len(lessons)} lesson notebook(s).")
    print(
        f"Its repository is {read_settings().repository_url} (repository.url in _config.yml); "
        "commit the folder's content there. `make book` in it builds the website."
    )
    return 0


def _gradescope(args: argparse.Namespace) -> int:
    from autograder.integrations.gradescope import NOTEBOOK_TIMEOUT_S, build_zip
    from autograder.sandbox import Limits

    limits = Limits(
        cell_timeout_s=args.timeout,
        notebook_timeout_s=args.notebook_timeout or NOTEBOOK_TIMEOUT_S,
        memory_bytes=int(args.memory * (1 << 30)),
    )
    members = build_zip(args.notebook, args.out, limits, args.visibility)
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
    written = write_report(args.out, args.workdir)
    for path in written:
        print(f"wrote {path}")
    print(f"Wrote {len(written)} report page(s) under {args.out} in {time.monotonic() - started:.1f} s")
    return 0


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="autograder", description="Release, grade and give feedback on the course's notebooks."
    )
    sub = parser.add_subparsers(dest="command", required=True)

    def with_workdir(p: argparse.ArgumentParser) -> None:
        p.add_argument("--workdir", type=Path, default=config.DEFAULT_WORKDIR, help="grading state (default: grading/)")

    p = sub.add_parser("release", help="generate the student notebooks in chapters/ from solutions/")
    p.add_argument(
        "--check", action="store_true", help="only check that the committed student notebooks are up to date"
    )
    p.set_defaults(func=_release)

    p = sub.add_parser("grade", help="grade SUBMISSIONS/<student>/<notebook>.ipynb with the hidden tests")
    p.add_argument(
        "submissions",
        type=Path,
        help="a folder SUBMISSIONS/<student>/<notebook>.ipynb, a zip of one, an LMS export (Canvas's or "
        "Moodle's submissions zip or its unzipped folder), or an nbgrader course directory (its "
        "submitted/<student>/<assignment>/<notebook>.ipynb)",
    )
    with_workdir(p)
    p.add_argument(
        "--roster",
        type=Path,
        help="CSV mapping LMS user ids to students (columns id, student; Canvas's gradebook export; or a "
        "Moodle assignment's grading worksheet, which also gives submission times): names the LMS files and lists "
        "who submitted nothing",
    )
    p.add_argument("--db", help="gradebook SQLAlchemy URL (default: SQLite in the work dir)")
    p.add_argument(
        "--workers", type=int, default=config.default_workers(), help="parallel kernels (default: one per core)"
    )
    p.add_argument(
        "--scheduler",
        metavar="ADDRESS",
        help="grade on a Dask cluster: tcp://HOST:8786 (workers need this repository "
        "installed and bubblewrap), or local:N for N worker processes on this machine (default: local threads)",
    )
    p.add_argument("--force", action="store_true", help="grade again even what is already graded and unchanged")
    p.add_argument("--notebook", action="append", help="grade only this notebook (repeatable; default: those found)")
    p.add_argument(
        "--student",
        action="append",
        help="grade only this student (repeatable); with --force, regrade them and change nothing else",
    )
    p.add_argument(
        "--timeout",
        type=float,
        default=config.CELL_TIMEOUT_S,
        help="wall-clock seconds per cell (default: %(default)s)",
    )
    p.add_argument(
        "--notebook-timeout",
        type=float,
        default=config.NOTEBOOK_TIMEOUT_S,
        help="wall-clock seconds per notebook (default: %(default)s)",
    )
    p.add_argument(
        "--memory",
        type=float,
        default=None,
        help=f"address-space limit per submission in GiB, 0 for none (default: {config.SANDBOX_MEMORY_BYTES >> 30}, "
        "none on a machine with an NVIDIA GPU)",
    )
    p.add_argument(
        "--processes",
        type=int,
        default=config.SANDBOX_PROCESSES,
        help="processes per submission (default: %(default)s)",
    )
    p.add_argument(
        "--no-sandbox",
        action="store_true",
        help="run student code WITHOUT isolation, as this user (only if bubblewrap cannot be installed)",
    )
    p.add_argument(
        "--verify",
        type=float,
        metavar="FRACTION",
        help="then grade this fraction of the submissions again in fresh sandboxes and report any per-cell "
        "difference (exit status 3 if there is one)",
    )
    p.add_argument("--verify-seed", type=int, default=0, help="seed of the --verify sample (default: %(default)s)")
    p.add_argument(
        "--deadline", help="ISO time, e.g. 2026-12-01T23:59 (local time unless a zone is given): count late work"
    )
    p.add_argument(
        "--late-policy", help=f"e.g. '10%%/day, max 3 days' (default: {config.LATE_POLICY.replace('%', '%%')})"
    )
    p.add_argument(
        "--timestamps",
        type=Path,
        help="CSV of submission times: student, submitted_at[, notebook] "
        "(default: the file's modification time, with a warning)",
    )
    p.set_defaults(func=_grade)

    p = sub.add_parser("feedback", help="write DIR/<student>/<notebook>.html without hidden test source")
    p.add_argument(
        "submissions",
        type=Path,
        nargs="?",
        help="what `grade` was given (checked: another input is refused); default: the work dir's graded intake",
    )
    p.add_argument("--out", type=Path, required=True)
    with_workdir(p)
    p.set_defaults(func=_feedback)

    p = sub.add_parser(
        "export",
        help="write the gradebook as CSV: one row per student and notebook, or for Canvas's or Moodle's import",
    )
    p.add_argument("--out", type=Path, required=True)
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
        metavar="NOTEBOOK=ID",
        help="with --format canvas: the Canvas assignment id of a notebook (repeatable)",
    )
    with_workdir(p)
    p.add_argument("--db", help="gradebook SQLAlchemy URL (default: SQLite in the work dir)")
    p.set_defaults(func=_export)

    p = sub.add_parser("report", help="write DIR/<notebook>.html: the class report (no grading again)")
    p.add_argument("--out", type=Path, required=True)
    with_workdir(p)
    p.set_defaults(func=_report)

    p = sub.add_parser(
        "gradescope", help="write Gradescope's autograder zip of one notebook (setup.sh, run_autograder)"
    )
    p.add_argument("notebook", help="the notebook, e.g. 02_dot_product_attention")
    p.add_argument("--out", type=Path, required=True, help="the zip to write, e.g. autograder.zip")
    p.add_argument(
        "--visibility",
        choices=["visible", "after_due_date", "after_published", "hidden"],
        default="visible",
        help="when students see each test's result (Gradescope's setting; default: %(default)s)",
    )
    p.add_argument(
        "--timeout",
        type=float,
        default=config.CELL_TIMEOUT_S,
        help="wall-clock seconds per cell (default: %(default)s)",
    )
    p.add_argument(
        "--notebook-timeout",
        type=float,
        default=None,
        help="wall-clock seconds per notebook (default: 420, under Gradescope's default 10 minutes per run)",
    )
    p.add_argument(
        "--memory",
        type=float,
        default=config.SANDBOX_MEMORY_BYTES / (1 << 30),
        help="address-space limit of the notebook's process in GiB, 0 for none (default: %(default)g)",
    )
    p.set_defaults(func=_gradescope)

    p = sub.add_parser("publish", help="write the public release (no solutions, no hidden tests) into DIR")
    p.add_argument("--out", type=Path, default=config.PUBLISH_DIR, help="folder to write (default: _publish/)")
    when = p.add_mutually_exclusive_group()
    when.add_argument(
        "--through",
        metavar="NN",
        help="the tree as it stands the moment chapter NN opens "
        "(chapters up to NN open, the exercises before NN past their deadline)",
    )
    when.add_argument(
        "--at", metavar="TIME", help="the tree at this time of the calendar in chapters.yml (ISO 8601; default: now)"
    )
    p.set_defaults(func=_publish)
    return parser


def main(argv: list[str] | None = None) -> int:
    args = build_parser().parse_args(argv)
    try:
        return args.func(args)
    except (FileNotFoundError, ValueError, ConnectionError) as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 2
