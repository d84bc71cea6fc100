"""Grade a folder of submissions: collect, execute in parallel workers, record, summarise.

Workers only compute (`execute.execute_submission`); this process is the one writer.
A result is recorded as soon as it arrives, so a run killed midway keeps what it
finished, and the next run grades only what is missing or changed (the record holds
the hashes of the submission and of the source notebook it was graded against).
"""

from __future__ import annotations

import multiprocessing
import sys
import time
from concurrent.futures import ProcessPoolExecutor, as_completed
from dataclasses import dataclass
from pathlib import Path
from typing import Callable, TextIO

from autograder import config
from autograder.collect import Submission, collect, notebooks_present
from autograder.execute import Job, Result, execute_submission, file_sha256, zero_result
from autograder.gradebook import Writer, load_result
from autograder.notebooks import notebook_names, read, source_notebook

Runner = Callable[[Job], Result]


@dataclass
class Options:
    workdir: Path = config.DEFAULT_WORKDIR
    db_url: str | None = None
    workers: int = config.default_workers()
    force: bool = False  # grade again even when an up-to-date record exists
    notebooks: list[str] | None = None  # default: the released notebooks found in the folder
    cell_timeout_s: int = config.CELL_TIMEOUT_S
    solutions_dir: Path | None = None


def _is_current(result: Result | None, sub: Submission, source_sha: str) -> bool:
    return (
        result is not None
        and result.submission_sha256 == sub.sha256
        and result.source_sha256 == source_sha
        and result.grader_version == config.GRADER_VERSION
    )


def _safe_run(runner: Runner, job: Job) -> Result:
    """A failure of the grading machinery itself costs this submission, never the run."""
    try:
        return runner(job)
    except BaseException as exc:  # noqa: BLE001 - a worker must always answer
        return zero_result(job, f"internal grader error: {type(exc).__name__}: {exc}")


def _pool(workers: int) -> ProcessPoolExecutor:
    # fork: workers inherit the imported nbgrader/nbclient, no re-import per worker.
    method = "fork" if "fork" in multiprocessing.get_all_start_methods() else "spawn"
    return ProcessPoolExecutor(max_workers=workers, mp_context=multiprocessing.get_context(method))


def grade(
    submissions_dir: Path,
    options: Options | None = None,
    runner: Runner = execute_submission,
    out: TextIO = sys.stdout,
) -> list[Result]:
    """Grade every submission in `submissions_dir`; returns one Result per (student, notebook)."""
    options = options or Options()
    released = notebook_names(options.solutions_dir)
    names = options.notebooks or notebooks_present(submissions_dir, released)
    unknown = sorted(set(names) - set(released))
    if unknown:
        raise ValueError(f"no source notebook for {', '.join(unknown)} (known: {', '.join(released)})")
    submissions = collect(submissions_dir, names)
    sources = {name: source_notebook(name, options.solutions_dir) for name in names}
    source_sha = {name: file_sha256(path) for name, path in sources.items()}

    results: dict[tuple[str, str], Result] = {}
    started = time.monotonic()
    with Writer(options.workdir, options.db_url) as writer:
        for name, path in sources.items():
            writer.register_notebook(name, read(path))
        todo: list[Job] = []
        for sub in submissions:
            cached = None if options.force else load_result(options.workdir, sub.student, sub.notebook)
            if _is_current(cached, sub, source_sha[sub.notebook]):
                writer.record_in_gradebook(cached)  # idempotent; repairs a run killed mid-write
                results[(sub.student, sub.notebook)] = cached
            else:
                todo.append(Job(sub, sources[sub.notebook], options.cell_timeout_s))
        print(
            f"Grading {len(todo)} submission(s) of {len(submissions)} "
            f"({len(submissions) - len(todo)} already graded and unchanged) with {options.workers} worker(s)",
            file=out,
            flush=True,
        )

        width = _name_width(submissions)

        def record(done: int, result: Result) -> None:
            writer.record(result)
            results[(result.student, result.notebook)] = result
            status = f"{result.score:g}/{result.max_score:g}"
            extra = f"  ({result.reason})" if result.reason else ""
            print(f"[{done:>{len(str(len(todo)))}}/{len(todo)}] {result.student:<{width}} {result.notebook:<28} {status:>7}  {result.seconds:5.1f}s{extra}", file=out, flush=True)

        if options.workers <= 1 or len(todo) <= 1:
            for done, job in enumerate(todo, 1):
                record(done, _safe_run(runner, job))
        else:
            with _pool(min(options.workers, len(todo))) as pool:
                futures = {pool.submit(_safe_run, runner, job): job for job in todo}
                for done, future in enumerate(as_completed(futures), 1):
                    try:
                        result = future.result()
                    except BaseException as exc:  # noqa: BLE001 - a dead worker process
                        result = zero_result(futures[future], f"internal grader error: {type(exc).__name__}: {exc}")
                    record(done, result)
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
        lines.append(f"{r.student:<{width}} {r.notebook:<28} {r.score:>4g}/{r.max_score:<4g}  {note}")
    if seconds is not None:
        lines.append(f"{len(results)} submission(s) in {seconds:.1f} s")
    return "\n".join(lines)
