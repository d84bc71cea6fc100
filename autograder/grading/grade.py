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

`grade --verify` is grading/verify.py, which grades a sample of these results again.

A work dir is one class: `claim_workdir` refuses another input than the one graded there unless `--replace` says
to start over, and `workdir_lock` lets one run at a time write it (the second is told who holds it).
"""

from __future__ import annotations

import fcntl
import os
import shutil
import socket
import sys
import time
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field, replace
from datetime import datetime
from pathlib import Path
from typing import TextIO

from autograder import config, interrupt
from autograder.errors import InputError, NothingDone, UsageError
from autograder.grading import dry_run
from autograder.grading.execute import execute_submission
from autograder.grading.judging import shared_judge
from autograder.grading.late import Lateness, final_score
from autograder.grading.pools import GradeJob, Pool, open_pool
from autograder.intake.collect import collect, notebooks_present
from autograder.intake.state import IntakeState, IntakeStateError, load
from autograder.intake.uploads import prepare
from autograder.model.files import file_sha256
from autograder.model.notebooks import notebook_names, read, source_notebook
from autograder.model.records import Job, LateRecord, Result, Submission
from autograder.sandbox import Limits, check_available, shutdown_servers
from autograder.sandbox.forkserver import fork_servers_enabled, start_servers
from autograder.store.gradebook import Writer, load_result, load_results

LOCK_FILE = ".grade.lock"  # in the work dir: held (flock) by the one run writing it, with who that is


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
    dry_run: bool = False  # --dry-run: lay the input out, print what would be done (grading/dry_run.py), run nothing


Key = tuple[str, str]  # (student, notebook): one submission, one result


def key_of(item: Submission | Result) -> Key:
    return (item.student, item.notebook)


def say(out: TextIO, *lines: str) -> None:
    """Print to the instructor's terminal at once (flushed): a long run is watched line by line."""
    for line in lines:
        print(line, file=out, flush=True)


def job_for(sub: Submission, source: Path, options: Options) -> Job:
    """What a worker needs to grade `sub` as `options` say (grading and verifying build it the same way)."""
    return Job(sub, source, options.limits, sandboxed=options.sandboxed, harden=options.harden)


def _is_current(result: Result, sub: Submission, source_sha: str) -> bool:
    """A stored result still stands when nothing it was computed from changed: the submitted bytes, the source
    notebook (its hidden tests) and the grader itself."""
    return (
        result.submission_sha256 == sub.sha256
        and result.source_sha256 == source_sha
        and result.grader_version == config.GRADER_VERSION
    )


def _kept_late(previous: Result | None, sub: Submission) -> LateRecord | None:
    """The lateness an earlier grading of the same file recorded: its submission time stands."""
    return previous.late if previous is not None and previous.submission_sha256 == sub.sha256 else None


def _with_late(
    result: Result, sub: Submission, previous: Result | None, lateness: Lateness | None, warnings: list[str]
) -> Result:
    """Set result.late. The submission time of an earlier grading of the same file is kept,
    so grading again (even without --deadline) gives the same penalty."""
    kept = _kept_late(previous, sub)
    if lateness is not None:
        result.late, notes = lateness.assess(
            sub.student, sub.notebook, sub.path, result.score, kept, sub.lms_late, sub.lms_time, sub.lms_time_source
        )
        warnings += notes
    elif kept is not None:
        result.late = replace(kept, final_score=final_score(result.score, kept.penalty))
    return result


class WorkdirInUse(UsageError):
    """Another `grade` is writing this work dir now: two runs would grade everything twice and race each other."""


class OtherClass(UsageError):
    """The work dir holds the grading of another input: grading this one there would mix two classes."""


_held: dict[Path, int] = {}  # work dirs whose lock this process holds, and how many times (nested takes)


@contextmanager
def workdir_lock(workdir: Path) -> Iterator[None]:
    """Hold the work dir's lock for a run: an exclusive `flock` on `<workdir>/.grade.lock`, which the kernel drops
    when the process ends however it ends (SIGKILL too), so a stale lock cannot outlive its run. The file says who
    holds it (pid, host, start time), for the run that is refused. Taken again in the same process (`cli` around
    the intake, then `grade` itself), it is the same lock."""
    workdir = Path(workdir).resolve()
    if workdir in _held:
        _held[workdir] += 1
        try:
            yield
        finally:
            _held[workdir] -= 1
        return
    workdir.mkdir(parents=True, exist_ok=True)
    path = workdir / LOCK_FILE
    handle = path.open("a+", encoding="utf-8")
    try:
        try:
            fcntl.flock(handle, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            handle.seek(0)
            holder = handle.read().strip() or "another process"
            raise WorkdirInUse(
                f"the work dir {workdir} is being graded by {holder}: wait for that run to end (or stop it), "
                "or grade in another --workdir"
            ) from None
        handle.seek(0)
        handle.truncate()
        started = datetime.now().astimezone().isoformat(timespec="seconds")
        handle.write(f"pid {os.getpid()} on host {socket.gethostname()}, started {started}\n")
        handle.flush()
        _held[workdir] = 1
        try:
            yield
        finally:
            del _held[workdir]
    finally:
        handle.close()  # the lock goes with the descriptor; the file stays (removing it would race a new run)


def _same_input(given: Path, state: IntakeState) -> bool:
    resolved = Path(given).resolve()
    return resolved in (state.source, state.folder.resolve())


def claim_workdir(given: Path, workdir: Path, start_over: bool, db_url: str | None, out: TextIO) -> None:
    """Refuse to grade `given` into a work dir that holds the grading of another input, naming what it holds,
    unless `start_over` (`--replace`): then the work dir's grading is removed first, and the instructor is told.

    The same input again is a resume (or a regrade of a new download of it) and goes on as before. A work dir
    whose record exists but holds no result has nothing to lose. Before this, another input silently replaced
    the intake record, turned stored grades into "not submitted" rows and mixed two classes' students."""
    try:
        state = load(workdir)
    except IntakeStateError as exc:  # what its message says to do is to grade again: the intake is laid out anew
        say(out, f"warning: {exc}")
        return _start_over(workdir, db_url, len(load_results(workdir)), out) if start_over else None
    stored = load_results(workdir)
    if state is None and not stored or state is not None and (_same_input(given, state) or not stored):
        if start_over and stored:
            _start_over(workdir, db_url, len(stored), out)
        return
    if not start_over:
        holds = f"the grading of {state.source}" if state is not None else "grades of an earlier input"
        students = len({r.student for r in stored})
        raise OtherClass(
            f"the work dir {Path(workdir)} holds {holds} ({len(stored)} graded submission(s) of {students} "
            f"student(s)); grading {given} there would mix two classes. Grade {given} in another --workdir, or "
            f"give --replace to delete that grading and start this work dir over with {given}"
        )
    _start_over(workdir, db_url, len(stored), out)


def _start_over(workdir: Path, db_url: str | None, graded: int, out: TextIO) -> None:
    """`--replace`: remove what the work dir holds of its class (intake record, results, executed notebooks,
    verify record, its SQLite gradebook). A gradebook elsewhere (`--db`) is not this command's to empty."""
    if db_url is not None:
        raise OtherClass(
            "--replace starts over the work dir's own gradebook; with --db, empty that gradebook yourself (or give "
            "a new database), then grade without --replace in a new --workdir"
        )
    workdir = Path(workdir)
    for name in ("intake", config.RESULTS_DIR, config.EXECUTED_DIR):
        shutil.rmtree(workdir / name, ignore_errors=True)
    for name in (config.VERIFY_FILE, config.GRADEBOOK_FILE):
        (workdir / name).unlink(missing_ok=True)
    say(out, f"--replace: removed the work dir's grading of {graded} submission(s); starting over")


def grade(
    submissions: Path | IntakeState,
    options: Options | None = None,
    runner: GradeJob = execute_submission,
    out: TextIO = sys.stdout,
) -> list[Result]:
    """Grade every submission of an intake (`uploads.prepare`; a folder, zip or export is laid out first, once);
    returns one Result per (student, notebook). One run at a time per work dir (`workdir_lock`); an intake with
    no notebook file to grade is `NothingDone`, not a run that exits 0 having graded nothing."""
    options = options or Options()
    with workdir_lock(options.workdir):
        return _grade_run(submissions, options, runner, out)


def _grade_run(submissions: Path | IntakeState, options: Options, runner: GradeJob, out: TextIO) -> list[Result]:
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
    if not any(sub.path is not None for sub in found):
        raise NothingDone(_nothing_to_grade(intake, found))
    say(out, found_line(found, names))
    sources = {name: source_notebook(name, options.solutions_dir) for name in names}
    source_sha = {name: file_sha256(path) for name, path in sources.items()}
    if options.dry_run:
        _dry_run(found, source_sha, options, out)
        return []

    if options.sandboxed:
        check_available()  # refuse now, with how to fix it, rather than fail 300 times
    else:
        say(out, "WARNING: --no-sandbox: student code runs as this user, with its files and network.")
    if runner is execute_submission and not options.scheduler and found:
        # the warm processes start importing torch now, while this one reads the gradebook and the records
        if options.sandboxed and fork_servers_enabled():
            servers = min(options.workers, len(found))
            say(out, f"Starting {servers} warm sandbox(es); the first result comes once they have imported torch ...")
            start_servers(servers, options.limits)
        shared_judge().start_soon()
    try:
        return _grade(found, sources, source_sha, intake, options, runner, out)
    finally:
        shutdown_servers()  # the warm sandboxes of this run end with it


def _dry_run(found: list[Submission], source_sha: dict[str, str], options: Options, out: TextIO) -> None:
    """Print what `grade` would do with each submission, deciding it exactly as `_split` and `_with_late` do, and
    write nothing: no sandbox, no gradebook, no result file."""
    planned, warnings = [], []
    for sub in found:
        stored = load_result(options.workdir, sub.student, sub.notebook)
        current = stored is not None and _is_current(stored, sub, source_sha[sub.notebook])
        notes = [sub.note]
        if sub.path is None:
            action, notes = dry_run.MISSING, [dry_run.shorten(sub.problem or "no file"), *notes]
        elif current and not options.force:
            action = dry_run.SKIP
        else:
            action = dry_run.GRADE if sub.problem is None else dry_run.ZERO
            notes = [dry_run.shorten(sub.problem or ""), *notes]
            if current:
                notes.append("graded before, unchanged: --force grades it again")
        note = "; ".join(n for n in notes if n)
        late = ""
        if options.lateness is not None and sub.path is not None:
            record, late_warnings = options.lateness.assess(
                sub.student,
                sub.notebook,
                sub.path,
                0.0,
                _kept_late(stored, sub),
                sub.lms_late,
                sub.lms_time,
                sub.lms_time_source,
            )
            warnings += late_warnings
            late = f"{record.late_days} day(s), -{record.penalty:.0%}" if record.late_days else "on time"
        file = sub.path.name if sub.path is not None else ""
        planned.append(dry_run.Planned(sub.student, sub.notebook, file, action, late, note))
    say(out, *dry_run.table(planned, options.lateness is not None), "", *warnings)
    if options.sandboxed:
        try:
            check_available()
        except UsageError as exc:  # the real run would stop before its first submission: say so now
            say(out, f"warning: a real run would stop here: {exc}")
    say(out, dry_run.summary(planned))


def _nothing_to_grade(intake: IntakeState, found: list[Submission]) -> str:
    """Why a run grades nothing: the input holds no file that is one of the course's notebooks."""
    students = len({sub.student for sub in found}) or len(intake.students)
    reasons = sorted({sub.problem for sub in found if sub.problem})[:3]
    why = f" ({'; '.join(reasons)})" if reasons else ""
    return (
        f"nothing to grade: {intake.source} holds {students} student(s) and no notebook of this course{why}; the "
        "intake's notes above say what was refused (a zip inside the zip is not opened: give the .ipynb files)"
    )


@dataclass
class Worklist:
    """One run's submissions, split before anything is executed: the results already current (kept, their
    records written again) and the jobs still to grade. Each result that arrives joins `results`."""

    submissions: dict[Key, Submission]
    results: dict[Key, Result] = field(default_factory=dict)
    todo: list[Job] = field(default_factory=list)
    # every stored record, current or not: a submission graded again keeps the submission time it had
    previous: dict[Key, Result | None] = field(default_factory=dict)
    warnings: list[str] = field(default_factory=list)  # the lateness of the current results, said before grading


def _grade(
    submissions: list[Submission],
    sources: dict[str, Path],
    source_sha: dict[str, str],
    intake: IntakeState,
    options: Options,
    runner: GradeJob,
    out: TextIO,
) -> list[Result]:
    """The run, with this process the one writer: what is current is recorded again, the rest graded and each
    result recorded as it arrives, so that a run killed at any moment keeps everything it finished."""
    started = time.monotonic()
    with _open_writer(intake, options, out) as writer:
        _register_notebooks(writer, sources, options.lateness)
        work = _split(submissions, sources, source_sha, options, writer)
        say(out, *work.warnings)
        pool = _open_pool_and_announce(work, len(submissions), options, out)
        width = _name_width(submissions)
        grading_started = time.monotonic()
        try:
            for done, result in enumerate(pool.run(work.todo, runner, options.retries), 1):
                _record_finished(result, work, options.lateness, writer, out)
                interrupt.check()  # a Ctrl-C that a finaliser swallowed stops the run here, with this result kept
                left = eta(time.monotonic() - grading_started, done, len(work.todo))
                say(out, _progress_line(done, len(work.todo), width, result) + (f"  [{left}]" if left else ""))
        finally:
            pool.close()
    ordered = [work.results[key_of(sub)] for sub in submissions]
    say(out, summary(ordered, time.monotonic() - started))
    return ordered


def _open_writer(intake: IntakeState, options: Options, out: TextIO) -> Writer:
    """The run's one writer. An intake in nbgrader's course layout also gets nbgrader's autograded/ folder
    (its formgrader shows a submission as autograded only from there), and the instructor is told where."""
    nbgrader = intake.nbgrader
    assignments = nbgrader.assignments if nbgrader else {}
    course = Path(nbgrader.course) if nbgrader and nbgrader.course else None
    if course is not None:
        say(out, f"nbgrader course {course}: executed notebooks also go to {course / 'autograded'}")
    return Writer(options.workdir, options.db_url, assignments, course)


def _register_notebooks(writer: Writer, sources: dict[str, Path], lateness: Lateness | None) -> None:
    """The gradebook knows each notebook's test cells (and the deadline, as nbgrader's due date) before any grade."""
    deadline = lateness.deadline if lateness else None
    for name, path in sources.items():
        writer.register_notebook(name, read(path), deadline)


def _split(
    submissions: list[Submission],
    sources: dict[str, Path],
    source_sha: dict[str, str],
    options: Options,
    writer: Writer,
) -> Worklist:
    """Grade only what is missing or changed: a stored result of the same submission bytes, source notebook and
    grader version is kept (unless `force`) and recorded again; everything else becomes a job."""
    work = Worklist({key_of(sub): sub for sub in submissions})
    for sub in submissions:
        stored = load_result(options.workdir, sub.student, sub.notebook)
        work.previous[key_of(sub)] = stored
        if stored is not None and not options.force and _is_current(stored, sub, source_sha[sub.notebook]):
            _record_current(stored, sub, options.lateness, writer, work.warnings)
            work.results[key_of(sub)] = stored
        else:
            work.todo.append(job_for(sub, sources[sub.notebook], options))
    return work


def _record_current(
    result: Result, sub: Submission, lateness: Lateness | None, writer: Writer, warnings: list[str]
) -> None:
    """A current result is written again: whole when a deadline given now changes its lateness, else only its
    gradebook rows, which is idempotent and repairs a run killed between the record file and the gradebook."""
    before = result.late
    _with_late(result, sub, result, lateness, warnings)
    if result.late != before:
        writer.record(result, sub.lms_time)
    else:
        writer.record_in_gradebook(result, sub.lms_time)


def _open_pool_and_announce(work: Worklist, total: int, options: Options, out: TextIO) -> Pool:
    """Where the jobs run, and the line saying how many of how many run there. With nothing to grade no cluster
    is contacted: a run that only records again must not fail for want of a scheduler."""
    if options.scheduler and work.todo:
        say(out, f"Connecting to the Dask cluster {options.scheduler} ...")
    pool = open_pool(options.scheduler if work.todo else None, options.workers)
    say(
        out,
        f"Grading {len(work.todo)} submission(s) of {total} "
        f"({total - len(work.todo)} already graded and unchanged) with {pool.where}"
        + ("" if options.sandboxed else ", NOT sandboxed"),
    )
    return pool


def _record_finished(result: Result, work: Worklist, lateness: Lateness | None, writer: Writer, out: TextIO) -> None:
    """Keep a result as soon as it arrives, with how its file was matched and its lateness (decided here, in the
    one writer, from the stored record's submission time). A grader failure joins this run's summary but is never
    stored: the next run grades that submission again."""
    work.results[key_of(result)] = result
    if result.internal_error:
        return
    sub = work.submissions[key_of(result)]
    if sub.note:
        result.repairs.insert(0, f"file: {sub.note}")
    late_warnings: list[str] = []
    _with_late(result, sub, work.previous.get(key_of(result)), lateness, late_warnings)
    say(out, *late_warnings)
    writer.record(result, sub.lms_time)


def _progress_line(done: int, total: int, width: int, result: Result) -> str:
    """`[n/N] student notebook score time (reason)`: what the instructor watches, one line per submission as it
    finishes, in columns that long names do not shift."""
    if result.internal_error:
        status, extra = "ERROR", f"  (grader error, not stored; run grade again: {result.internal_error})"
    else:
        status = f"{result.score:g}/{result.max_score:g}"
        extra = f"  ({result.reason})" if result.reason else ""
    return (
        f"[{done:>{len(str(total))}}/{total}] {result.student:<{width}} {result.notebook:<28} "
        f"{status:>7}  {result.seconds:5.1f}s{extra}"
    )


def found_line(found: list[Submission], names: list[str]) -> str:
    """What the intake holds, said before anything slow starts: an instructor checks it against the class."""
    files = [sub for sub in found if sub.path is not None]
    students = len({sub.student for sub in found})
    line = (
        f"Found {len(files)} notebook file(s) from {len({sub.student for sub in files})} of {students} student(s), "
        f"for {', '.join(names)}"
    )
    missing = len(found) - len(files)
    if missing:
        line += f"; {missing} notebook(s) not handed in (scored 0, with the reason)"
    return line


def eta(elapsed: float, done: int, total: int, at_least: int = 3) -> str:
    """About how long the rest takes, at the rate so far (workers in parallel included), once `at_least`
    submissions are done: a rate from one or two is mostly the warm-up. "" before that and at the end."""
    if done < at_least or done >= total:
        return ""
    seconds = round(elapsed / done * (total - done))
    minutes, rest = divmod(seconds, 60)
    return f"about {minutes} min {rest:02d} s left" if minutes else f"about {rest} s left"


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
