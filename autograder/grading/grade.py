"""Grade a folder of submissions: collect, execute in parallel workers, record, summarise.

Workers are threads, each waiting on one sandboxed process (`execute.execute_submission`);
this process is the one writer. Student code never runs in this process or in a
process it depends on, so a submission that kills, exits or exhausts its own process
costs only itself.

A result is recorded as soon as it arrives (atomically), so a run killed at any moment
keeps what it finished, and the next run grades only what is missing or changed (the
record holds the hashes of the submission and of the source notebook it was graded
against). A failure of the grader itself is retried once and, if it persists, reported
and left ungraded: it is never stored, so the next run grades that submission again.
"""

from __future__ import annotations

import sys
import time
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import TextIO

from autograder import config
from autograder.errors import InputError
from autograder.grading.execute import execute_submission, file_sha256
from autograder.grading.judging import shared_judge
from autograder.grading.late import Lateness, final_score
from autograder.grading.pools import GradeJob, LocalPool, open_pool
from autograder.intake.collect import collect, notebooks_present
from autograder.intake.state import IntakeState, load
from autograder.intake.uploads import prepare
from autograder.model.notebooks import notebook_names, read, source_notebook
from autograder.model.records import CellDifference, Job, Regrade, Result, Submission
from autograder.sandbox import Limits, check_available, shutdown_servers
from autograder.sandbox.forkserver import fork_servers_enabled, start_servers
from autograder.store.gradebook import Writer, load_result


@dataclass
class Options:
    workdir: Path = config.DEFAULT_WORKDIR
    db_url: str | None = None
    workers: int = config.default_workers()
    force: bool = False  # grade again even when an up-to-date record exists
    notebooks: list[str] | None = None  # default: the released notebooks found in the folder
    limits: Limits = field(default_factory=Limits)
    sandboxed: bool = True  # False: student code runs unisolated (only when asked for)
    harden: bool = True
    solutions_dir: Path | None = None
    retries: int = 1  # attempts more for a submission the grader itself failed on
    lateness: Lateness | None = None  # --deadline (and --late-policy, --timestamps)
    roster: Path | None = None  # --roster CSV: LMS ids -> student names; who submitted nothing
    students: list[str] | None = None  # --student: grade only these (with force: regrade one student, nothing else)
    scheduler: str | None = None  # --scheduler: a Dask scheduler address, or local:N (autograder/grading/pools.py)


def _is_current(result: Result | None, sub: Submission, source_sha: str) -> bool:
    return (
        result is not None
        and result.submission_sha256 == sub.sha256
        and result.source_sha256 == source_sha
        and result.grader_version == config.GRADER_VERSION
    )


def _with_late(
    result: Result, sub: Submission, previous: Result | None, lateness: Lateness | None, warnings: list[str]
) -> Result:
    """Set result.late. The submission time of an earlier grading of the same file is kept,
    so grading again (even without --deadline) gives the same penalty."""
    kept = previous.late if previous is not None and previous.submission_sha256 == sub.sha256 else None
    if lateness is not None:
        result.late, notes = lateness.assess(
            sub.student, sub.notebook, sub.path, result.score, kept, sub.lms_late, sub.lms_time, sub.lms_time_source
        )
        warnings += notes
    elif kept is not None:
        result.late = replace(kept, final_score=final_score(result.score, kept.penalty))
    return result


def grade(
    submissions: Path | IntakeState,
    options: Options | None = None,
    runner: GradeJob = execute_submission,
    out: TextIO = sys.stdout,
) -> list[Result]:
    """Grade every submission of an intake (`uploads.prepare`; a folder, zip or export is laid out first, once);
    returns one Result per (student, notebook)."""
    options = options or Options()
    released = notebook_names(options.solutions_dir)
    intake = (
        submissions
        if isinstance(submissions, IntakeState)
        else prepare(submissions, options.workdir, released, options.roster, out)
    )
    names = options.notebooks or notebooks_present(intake, released)
    unknown = sorted(set(names) - set(released))
    if unknown:
        raise InputError(f"no source notebook for {', '.join(unknown)} (known: {', '.join(released)})")
    found = collect(intake, names)
    if options.students:
        unknown_students = sorted(set(options.students) - {s.student for s in found})
        if unknown_students:
            raise InputError(f"no submissions of {', '.join(unknown_students)} in {intake.source}")
        found = [s for s in found if s.student in options.students]
    sources = {name: source_notebook(name, options.solutions_dir) for name in names}
    source_sha = {name: file_sha256(path) for name, path in sources.items()}

    if options.sandboxed:
        check_available()  # refuse now, with how to fix it, rather than fail 300 times
    else:
        print(
            "WARNING: --no-sandbox: student code runs as this user, with its files and network.", file=out, flush=True
        )
    if runner is execute_submission and not options.scheduler and found:
        # the warm processes start importing torch now, while this one reads the gradebook and the records
        if options.sandboxed and fork_servers_enabled():
            start_servers(min(options.workers, len(found)), options.limits)
        shared_judge().start_soon()
    try:
        return _grade(found, sources, source_sha, intake, options, runner, out)
    finally:
        shutdown_servers()  # the warm sandboxes of this run end with it


def _grade(
    submissions: list[Submission],
    sources: dict[str, Path],
    source_sha: dict[str, str],
    intake: IntakeState,
    options: Options,
    runner: GradeJob,
    out: TextIO,
) -> list[Result]:
    results: dict[tuple[str, str], Result] = {}
    started = time.monotonic()
    nbgrader = intake.nbgrader  # an nbgrader course: its assignments and folder
    assignments = nbgrader.assignments if nbgrader else {}
    course = Path(nbgrader.course) if nbgrader and nbgrader.course else None
    if course is not None:
        print(f"nbgrader course {course}: executed notebooks also go to {course / 'autograded'}", file=out, flush=True)
    deadline = options.lateness.deadline if options.lateness else None
    with Writer(options.workdir, options.db_url, assignments, course) as writer:
        for name, path in sources.items():
            writer.register_notebook(name, read(path), deadline)
        todo: list[Job] = []
        previous: dict[tuple[str, str], Result | None] = {}
        warnings: list[str] = []
        for sub in submissions:
            stored = load_result(options.workdir, sub.student, sub.notebook)
            previous[(sub.student, sub.notebook)] = stored
            cached = None if options.force else stored
            if cached is not None and _is_current(cached, sub, source_sha[sub.notebook]):
                before = cached.late
                _with_late(cached, sub, stored, options.lateness, warnings)
                if cached.late != before:
                    writer.record(cached, sub.lms_time)  # a deadline given now: the record gets its lateness
                else:
                    writer.record_in_gradebook(cached, sub.lms_time)  # idempotent; repairs a run killed mid-write
                results[(sub.student, sub.notebook)] = cached
            else:
                todo.append(
                    Job(sub, sources[sub.notebook], options.limits, sandboxed=options.sandboxed, harden=options.harden)
                )
        for warning in warnings:
            print(warning, file=out, flush=True)
        if options.scheduler and todo:
            print(f"Connecting to the Dask cluster {options.scheduler} ...", file=out, flush=True)
        pool = open_pool(options.scheduler if todo else None, options.workers)
        print(
            f"Grading {len(todo)} submission(s) of {len(submissions)} "
            f"({len(submissions) - len(todo)} already graded and unchanged) with {pool.where}"
            + ("" if options.sandboxed else ", NOT sandboxed"),
            file=out,
            flush=True,
        )

        width = _name_width(submissions)
        by_key = {(s.student, s.notebook): s for s in submissions}

        def record(done: int, result: Result) -> None:
            results[(result.student, result.notebook)] = result
            if result.internal_error:
                status, extra = "ERROR", f"  (grader error, not stored; run grade again: {result.internal_error})"
            else:
                sub = by_key[(result.student, result.notebook)]
                if sub.note:
                    result.repairs.insert(0, f"file: {sub.note}")
                late_warnings: list[str] = []
                _with_late(
                    result, sub, previous.get((result.student, result.notebook)), options.lateness, late_warnings
                )
                for warning in late_warnings:
                    print(warning, file=out, flush=True)
                writer.record(result, sub.lms_time)
                status = f"{result.score:g}/{result.max_score:g}"
                extra = f"  ({result.reason})" if result.reason else ""
            print(
                f"[{done:>{len(str(len(todo)))}}/{len(todo)}] {result.student:<{width}} {result.notebook:<28} "
                f"{status:>7}  {result.seconds:5.1f}s{extra}",
                file=out,
                flush=True,
            )

        try:
            for done, result in enumerate(pool.run(todo, runner, options.retries), 1):
                record(done, result)
        finally:
            pool.close()
    ordered = [results[(s.student, s.notebook)] for s in submissions]
    print(summary(ordered, time.monotonic() - started), file=out, flush=True)
    return ordered


def _name_width(rows: list[Submission] | list[Result]) -> int:
    """Width of the student column, so that long names do not shift the columns."""
    return max([len("student"), *(len(r.student) for r in rows)])


def summary(results: list[Result], seconds: float | None = None) -> str:
    """A per-student table: score, and the reason or the failed tests."""
    width = _name_width(results)
    lines = ["", "Summary", f"{'student':<{width}} {'notebook':<28} {'score':>9}  notes"]
    for r in results:
        failed = [c.grade_id for c in r.cells if not c.passed]
        note = r.reason or (f"failed: {', '.join(failed)}" if failed else "all tests passed")
        if r.repairs:
            note += (
                f"; {len(r.repairs)} repair(s): " + "; ".join(r.repairs[:3]) + (" ..." if len(r.repairs) > 3 else "")
            )
        if r.late is not None and r.late.late_days:
            note += f"; LATE {r.late.late_days} day(s), penalty {100 * r.late.penalty:g}%: final {r.late.final_score:g}"
        score = "ERROR" if r.internal_error else f"{r.score:>4g}/{r.max_score:<4g}"
        if r.internal_error:
            note = f"not graded, the grader failed: {r.internal_error} (run grade again)"
        lines.append(f"{r.student:<{width}} {r.notebook:<28} {score:>9}  {note}")
    if seconds is not None:
        lines.append(f"{len(results)} submission(s) in {seconds:.1f} s")
    failures = sum(1 for r in results if r.internal_error)
    if failures:
        lines.append(
            f"{failures} submission(s) NOT graded because the grader failed; run the same command again to grade them."
        )
    return "\n".join(lines)


def sample_fraction(fraction: float) -> float:
    """The share of graded submissions `verify` grades again: more than none, at most all."""
    if not 0 < fraction <= 1:
        raise InputError(f"the share of submissions to grade again is in (0, 1], such as 0.1, not {fraction:g}")
    return fraction


def verify(
    submissions: Path | IntakeState | None,
    options: Options | None = None,
    fraction: float = 0.1,
    seed: int = 0,
    runner: GradeJob = execute_submission,
    out: TextIO = sys.stdout,
) -> list[Regrade]:
    """Grade a seeded random sample of the already graded submissions again, each in a fresh
    sandbox, and compare per-cell points with the stored results (which are not changed). The submissions are
    the intake `grade` laid out in the work dir (`submissions`, when given, must be the input it was given).

    Returns one Regrade per submission graded again (by notebook, then student); also written to
    `<workdir>/verify.json` for the report."""
    import json
    import random

    from autograder.store.gradebook import atomic_write

    fraction = sample_fraction(fraction)
    options = options or Options()
    released = notebook_names(options.solutions_dir)
    intake = submissions if isinstance(submissions, IntakeState) else load(options.workdir)
    if intake is None:
        print(f"Verifying: nothing was graded in {options.workdir}; nothing to verify", file=out, flush=True)
        return []
    if not isinstance(submissions, IntakeState):
        intake.check_input(submissions, "verify")
    names = options.notebooks or notebooks_present(intake, released)
    sources = {name: source_notebook(name, options.solutions_dir) for name in names}
    stored = {}
    for sub in collect(intake, names):
        result = load_result(options.workdir, sub.student, sub.notebook)
        # only what ran and is graded as it is now: a file that could not run repeats trivially
        if (
            sub.problem is None
            and sub.path is not None
            and result is not None
            and result.submission_sha256 == sub.sha256
        ):
            stored[(sub.student, sub.notebook)] = (sub, result)
    keys = sorted(stored)
    sample = sorted(random.Random(seed).sample(keys, max(1, round(fraction * len(keys))))) if keys else []
    print(
        f"Verifying: grading {len(sample)} of {len(keys)} graded submission(s) again in fresh sandboxes "
        f"(fraction {fraction:g}, seed {seed})",
        file=out,
        flush=True,
    )
    if options.sandboxed:
        check_available()
    checked: list[Regrade] = []
    shutdown_servers()  # graded again by children of new servers, not of those that graded the first time
    jobs = [
        Job(stored[k][0], sources[k[1]], options.limits, sandboxed=options.sandboxed, harden=options.harden)
        for k in sample
    ]
    for again in LocalPool(options.workers).run(jobs, runner, options.retries):
        first = stored[(again.student, again.notebook)][1]
        points = {c.grade_id: c.points for c in again.cells}
        differences = (
            ()
            if again.internal_error
            else tuple(
                CellDifference(cell.grade_id, cell.points, points.get(cell.grade_id, 0.0))
                for cell in first.cells
                if points.get(cell.grade_id) != cell.points
            )
        )
        checked.append(Regrade(again.student, again.notebook, differences, again.internal_error))
    shutdown_servers()
    checked.sort(key=lambda e: (e.notebook, e.student))
    differ = [e for e in checked if e.differences]
    lines = [
        "",
        f"Verify: {len(checked)} submission(s) graded again; "
        + (f"{len(differ)} with DIFFERENT per-cell points:" if differ else "every grade repeated exactly."),
    ]
    for e in differ:
        cells = ", ".join(f"{d.cell} {d.first:g} -> {d.second:g}" for d in e.differences)
        lines.append(f"  {e.student} {e.notebook}: {cells}")
    errors = [e for e in checked if e.error]
    if errors:
        lines.append(
            f"  {len(errors)} could not be graded again (grader failure): {', '.join(e.student for e in errors)}"
        )
    print("\n".join(lines), file=out, flush=True)
    record = {
        "when": time.strftime("%Y-%m-%d %H:%M:%S"),
        "fraction": fraction,
        "seed": seed,
        "checked": [e.to_json() for e in checked],
    }
    atomic_write(Path(options.workdir) / config.VERIFY_FILE, json.dumps(record, indent=1))
    return checked
