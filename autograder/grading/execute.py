"""Execute one submission with its hidden tests and score it: one input, one result.

This is the only stage that runs student code, and it runs it only in the sandbox
(`sandbox.run_cells`). `execute_submission` is a pure function of a `Job` (picklable)
to a `Result` (picklable), so the grade stage runs it the same way in a worker thread here
(a fresh sandbox, or a fork of a warm one as root) and on a Dask worker (`grading/pools.py`).

1. align (`align.align`): match the submission with the released notebook whatever
   happened to its metadata; test and locked cells come from solutions/ (hidden tests
   included), anything put back for a missing answer comes from the released notebook
   (it raises NotImplementedError). Every repair is recorded on the Result.
2. run it top to bottom in a sandboxed process of its own (`sandbox`: started for it, or forked
   for it from a warm runner), in namespaces and a /tmp that go with it: errors do not stop
   the run; a cell that hangs, or a process that dies, stops it and costs the tests
   after that point, with the reason recorded. A hidden test written as probe and judge
   sends only its probe there; the judge (`judging`) decides it from the probe's data
   (the judge-helpers cell runs there without its hidden body, which only judges use).
3. score: a test cell earns its points when it ran to the end without raising and the
   runner's integrity checks found nothing (stderr output never costs points). The
   message kept for feedback is the exception's name and text, never a traceback (it
   would quote hidden test source).

A failure of the grading machinery itself (the sandbox did not start, a bug here) is
returned as a Result with `internal_error` set: the grade stage retries it and never
stores it as a grade.
"""

from __future__ import annotations

import json
import time
from functools import lru_cache
from pathlib import Path

import nbformat
from nbformat import NotebookNode

from autograder import config
from autograder.grading.align import align
from autograder.grading.judging import JudgeFailed, judge_report
from autograder.model.files import file_sha256
from autograder.model.notebooks import (
    grade_id,
    is_judge_helpers_cell,
    is_protected_cell,
    is_test_cell,
    max_points,
    nbgrader_meta,
    read,
    split_test,
    without_hidden_tests,
)
from autograder.model.records import CellResult, Job, Result
from autograder.sandbox import Cell, Report, run_cells


def zero_result(job: Job, reason: str, source: NotebookNode | None = None, internal_error: str = "") -> Result:
    """0 points on every test cell, with one reason: for submissions that cannot run at all."""
    source = source if source is not None else read(job.source_path)
    cells = [CellResult(gid, 0.0, pts, reason) for gid, pts in max_points(source).items()]
    return Result(
        job.submission.student,
        job.submission.notebook,
        0.0,
        sum(c.max_points for c in cells),
        cells,
        reason=reason,
        submission_sha256=job.submission.sha256,
        source_sha256=file_sha256(job.source_path),
        internal_error=internal_error,
    )


@lru_cache(maxsize=32)
def _released(source_path: Path, source_sha: str) -> NotebookNode:
    """The student version of a source notebook, as `release` writes it (cached per content)."""
    from autograder.model.notebooks import release_notebook

    return release_notebook(read(source_path))


def cells_to_run(nb: NotebookNode) -> list[Cell]:
    """The code cells of an aligned notebook, each marked as the course's code or the student's."""
    cells = []
    for index, cell in enumerate(nb.cells):
        if cell.cell_type != "code":
            continue
        if is_test_cell(cell):
            parts = split_test(cell.source)  # the judge's part never reaches the student's process
            cells.append(Cell(index, "test", parts.kernel, grade_id(cell) or "", probe=parts.has_judge))
            continue
        if is_judge_helpers_cell(cell):  # its hidden body is the judges' (judge_context), never the kernel's
            cells.append(Cell(index, "locked", without_hidden_tests(cell.source), grade_id(cell) or ""))
            continue
        kind = "locked" if is_protected_cell(cell) else "student"
        cells.append(Cell(index, kind, cell.source, grade_id(cell) or ""))
    return cells


NOT_RUN = "this test did not run (the notebook stopped before it)"


def score_cell(cell: NotebookNode, not_run: str = NOT_RUN) -> CellResult:
    """Points of one executed test cell: all of them when it ran without raising, else none.

    No partial credit, and no output can earn or cost points: stderr (a warning) is not a
    failure, and nothing a test cell prints is read as a score.
    """
    gid, points_max = grade_id(cell) or "", float(nbgrader_meta(cell).get("points", 0))
    if cell.get("execution_count") is None:
        return CellResult(gid, 0.0, points_max, not_run)
    for output in cell.outputs:
        if output.output_type == "error":
            message = f"{output.ename}: {output.evalue}".strip().rstrip(":")
            return CellResult(gid, 0.0, points_max, message)
    return CellResult(gid, points_max, points_max, "")


def _fill_outputs(nb: NotebookNode, report: Report) -> list[str]:
    """Write the runner's outputs into the notebook, within what is kept (`_OutputBudget`); return the integrity
    notes it made."""
    notes = []
    budget = _OutputBudget()
    for index, cell in enumerate(nb.cells):
        if cell.cell_type != "code":
            continue
        run = report.cells.get(index)
        cell.outputs = []
        cell.execution_count = None
        if run is None:
            continue
        cell.execution_count = run.execution_count
        for output in run.outputs:
            try:
                cell.outputs.append(nbformat.from_dict(budget.keep(_clean_output(output))))
            except Exception:  # noqa: BLE001 - an output the notebook format cannot hold
                continue
        if run.error is not None and not any(output.output_type == "error" for output in cell.outputs):
            # the cell failed (in the kernel or at the judge) even if no error output says so: score_cell reads
            # the outputs, and an error frame without its output must not read as a pass
            cell.outputs.append(nbformat.from_dict({"output_type": "error", **run.error}))
        notes += [f"cell {grade_id(cell) or index + 1}: {note}" for note in run.tamper]
    return notes


# An output that is not kept becomes a note that says so, marked for the feedback page (reporting/feedback.py).
NOT_KEPT_KEY = "autograder_not_kept"


def _chars(value: object) -> int:
    return len(value) if isinstance(value, str) else len(json.dumps(value, default=str))


class _OutputBudget:
    """What the executed notebook keeps of the runner's outputs. The runner caps each stream per cell
    (config.MAX_OUTPUT_CHARS), but it runs beside student code: here, where student code never ran, one display
    output is kept up to config.MAX_DISPLAY_OUTPUT_CHARS and a notebook's outputs up to MAX_NOTEBOOK_OUTPUT_CHARS
    (60 figures of 1.9 MB made a 108 MiB notebook). An error output is always kept (it fails its cell), its
    text shortened."""

    def __init__(self) -> None:
        self.kept = 0

    def keep(self, output: dict) -> dict:
        if output["output_type"] == "error":
            limit = config.MAX_OUTPUT_CHARS
            output["evalue"] = _shorten(output["evalue"], limit)
            output["traceback"] = [_shorten(line, limit) for line in output["traceback"][-50:]]
            self.kept += len(output["evalue"]) + sum(len(line) for line in output["traceback"])
            return output
        if output["output_type"] == "stream":
            size = len(output["text"])
        else:
            size = sum(_chars(v) for v in output["data"].values()) + _chars(output["metadata"])
        if size > config.MAX_DISPLAY_OUTPUT_CHARS:
            why = f"the grader keeps {config.MAX_DISPLAY_OUTPUT_CHARS:,} characters per output"
        elif self.kept + size > config.MAX_NOTEBOOK_OUTPUT_CHARS:
            why = f"the grader keeps {config.MAX_NOTEBOOK_OUTPUT_CHARS:,} characters of output per notebook"
        else:
            self.kept += size
            return output
        return {
            "output_type": "display_data",
            "data": {"text/plain": f"[an output of {size:,} characters was not kept: {why}]"},
            "metadata": {NOT_KEPT_KEY: size},
        }


def _shorten(text: str, limit: int) -> str:
    return text if len(text) <= limit else text[:limit] + f" [{len(text) - limit:,} more characters not kept]"


def _clean_output(output: dict) -> dict:
    kind = output.get("output_type")
    if kind == "stream":
        return {"output_type": "stream", "name": output.get("name", "stdout"), "text": str(output.get("text", ""))}
    if kind == "error":
        return {
            "output_type": "error",
            "ename": str(output.get("ename", "Error")),
            "evalue": str(output.get("evalue", "")),
            "traceback": [str(t) for t in output.get("traceback", [])],
        }
    out = {"output_type": kind, "data": output.get("data", {}), "metadata": output.get("metadata", {})}
    if kind == "execute_result":
        out["execution_count"] = output.get("execution_count")
    return out


def execute_submission(job: Job) -> Result:
    """Grade one submission. Never raises for anything the student did."""
    started = time.monotonic()
    source = read(job.source_path)
    sub = job.submission
    if sub.problem or sub.path is None:
        return zero_result(job, sub.problem or "nothing submitted", source)
    try:
        submitted = read(sub.path)
    except Exception as exc:  # noqa: BLE001 - collect checked it; a file changed since is the student's
        return zero_result(job, f"the notebook could not be read: {type(exc).__name__}: {exc}", source)
    released = _released(job.source_path, file_sha256(job.source_path))
    aligned = align(submitted, released, source)
    if aligned.recognised == 0:
        result = zero_result(
            job, f"none of the cells of {sub.notebook}.ipynb were found in this file: is it another notebook?", source
        )
        result.repairs = aligned.repairs
        return result
    nb = aligned.notebook
    report = run_cells(
        cells_to_run(nb), job.limits, sandboxed=job.sandboxed, harden=job.harden, unprivileged=job.unprivileged
    )
    if report.machinery_error:
        return zero_result(
            job, "not graded: the grader failed (it will retry)", source, internal_error=report.machinery_error
        )
    try:
        judge_report(nb, report)
    except JudgeFailed as exc:
        return zero_result(job, "not graded: the grader failed (it will retry)", source, internal_error=str(exc))
    integrity = _fill_outputs(nb, report)
    cells = [score_cell(c, report.stopped or NOT_RUN) for c in nb.cells if is_test_cell(c)]
    return Result(
        sub.student,
        sub.notebook,
        sum(c.points for c in cells),
        sum(c.max_points for c in cells),
        cells,
        reason=report.stopped,
        repairs=aligned.repairs + integrity + report.protocol,
        submission_sha256=sub.sha256,
        source_sha256=file_sha256(job.source_path),
        seconds=round(time.monotonic() - started, 2),
        cells_seconds=round(sum(run.seconds for run in report.cells.values()), 3),
        executed=nb,
    )
