"""`grade --verify`: grade a seeded sample of the stored results again in fresh sandboxes and say which per-cell
points differ, without changing a grade (`verify.json`, which the class report shows). A grade that does not repeat
is a grader bug or a notebook that depends on chance: either way the instructor hears of it before the grades go out.
"""

from __future__ import annotations

import json
import random
import sys
import time
from dataclasses import dataclass
from pathlib import Path
from typing import TextIO

from autograder import config
from autograder.errors import InputError
from autograder.grading.execute import execute_submission
from autograder.grading.grade import Key, Options, job_for, key_of, say
from autograder.grading.pools import GradeJob, LocalPool
from autograder.intake.collect import collect, notebooks_present
from autograder.intake.state import IntakeState, load
from autograder.model.notebooks import notebook_names, source_notebook
from autograder.model.records import CellDifference, Regrade, Result, Submission
from autograder.sandbox import check_available, shutdown_servers
from autograder.store.gradebook import atomic_write, load_result


def sample_fraction(fraction: float) -> float:
    """The share of graded submissions `verify` grades again: more than none, at most all."""
    if not 0 < fraction <= 1:
        raise InputError(f"the share of submissions to grade again is in (0, 1], such as 0.1, not {fraction:g}")
    return fraction


@dataclass(frozen=True)
class Graded:
    """A submission and the result stored for it: what `verify` may grade again, and what it compares with."""

    submission: Submission
    result: Result


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
    fraction = sample_fraction(fraction)
    options = options or Options()
    released = notebook_names(options.solutions_dir)
    intake = submissions if isinstance(submissions, IntakeState) else load(options.workdir)
    if intake is None:
        say(out, f"Verifying: nothing was graded in {options.workdir}; nothing to verify")
        return []
    if not isinstance(submissions, IntakeState):
        intake.check_input(submissions, "verify")
    names = options.notebooks or notebooks_present(intake, released)
    sources = {name: source_notebook(name, options.solutions_dir) for name in names}
    graded = _graded_as_they_are(intake, names, options.workdir)
    sample = _sample(graded, fraction, seed)
    say(
        out,
        f"Verifying: grading {len(sample)} of {len(graded)} graded submission(s) again in fresh sandboxes "
        f"(fraction {fraction:g}, seed {seed})",
    )
    if options.sandboxed:
        check_available()
    checked = _grade_again(sample, sources, options, runner)
    say(out, _verify_report(checked))
    _write_verify_file(options.workdir, fraction, seed, checked)
    return checked


def _graded_as_they_are(intake: IntakeState, names: list[str], workdir: Path) -> dict[Key, Graded]:
    """The submissions worth grading again: those that ran and whose stored result is of the bytes there now
    (a file that could not run repeats trivially; a changed one would differ for the wrong reason)."""
    graded = {}
    for sub in collect(intake, names):
        result = load_result(workdir, sub.student, sub.notebook)
        if (
            sub.problem is None
            and sub.path is not None
            and result is not None
            and result.submission_sha256 == sub.sha256
        ):
            graded[key_of(sub)] = Graded(sub, result)
    return graded


def _sample(graded: dict[Key, Graded], fraction: float, seed: int) -> list[Graded]:
    """At least one, drawn from the sorted keys with `seed`: the same work dir and seed pick the same sample."""
    keys = sorted(graded)
    picked = sorted(random.Random(seed).sample(keys, max(1, round(fraction * len(keys))))) if keys else []
    return [graded[key] for key in picked]


def _grade_again(sample: list[Graded], sources: dict[str, Path], options: Options, runner: GradeJob) -> list[Regrade]:
    """Each sampled submission graded again by children of new fork servers (not of those that graded it the first
    time, whose state could hide a difference), compared with its stored result; by notebook, then student."""
    first = {key_of(graded.submission): graded.result for graded in sample}
    shutdown_servers()
    jobs = [job_for(graded.submission, sources[graded.submission.notebook], options) for graded in sample]
    checked = [
        _compare(first[key_of(again)], again) for again in LocalPool(options.workers).run(jobs, runner, options.retries)
    ]
    shutdown_servers()
    return sorted(checked, key=lambda e: (e.notebook, e.student))


def _compare(first: Result, again: Result) -> Regrade:
    """The cells whose points differ (a cell missing the second time counts 0); none compared when the grader
    failed the second time, since a failure says nothing about the student's grade."""
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
    return Regrade(again.student, again.notebook, differences, again.internal_error)


def _verify_report(checked: list[Regrade]) -> str:
    """What the instructor reads: whether every grade repeated, else each differing cell, and who could not be
    graded again."""
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
    return "\n".join(lines)


def _write_verify_file(workdir: Path, fraction: float, seed: int, checked: list[Regrade]) -> None:
    """`<workdir>/verify.json`, atomically: the class report shows the last verification, with its sample's
    fraction and seed so that it can be repeated."""
    record = {
        "when": time.strftime("%Y-%m-%d %H:%M:%S"),
        "fraction": fraction,
        "seed": seed,
        "checked": [e.to_json() for e in checked],
    }
    atomic_write(Path(workdir) / config.VERIFY_FILE, json.dumps(record, indent=1))
