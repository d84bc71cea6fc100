"""Execute one submission with its hidden tests and score it: one input, one result.

This is the only stage that runs student code. `execute_submission` is a pure
function of a `Job` (picklable) to a `Result` (picklable), so the grade stage can
run it in a process pool today and a sandbox, a pool of pre-warmed interpreters or a
cluster backend can replace the way it runs later without touching the rest.

What happens, as in `nbgrader autograde`:
1. assemble: the submitted notebook keeps the student's solution and scratch cells,
   but test cells and locked cells get their source back from solutions/ (hidden
   tests included), so students can neither weaken tests nor read hidden ones.
   Test cells the student deleted are put back after the cell that preceded them.
2. run it top to bottom in a fresh kernel with nbgrader's Execute preprocessor
   (errors do not stop the run; per-cell timeout).
3. score each test cell with nbgrader's `determine_grade`, except that stderr output
   alone does not zero a cell (a torch warning is not a failed test); the message
   kept for feedback is the exception's name and text, never its traceback (which
   would quote hidden test source).
"""

from __future__ import annotations

import copy
import hashlib
import os
import tempfile
import time
from dataclasses import asdict, dataclass, field
from pathlib import Path

import nbformat
from nbformat import NotebookNode

from autograder import config
from autograder.collect import Submission
from autograder.notebooks import (
    grade_id,
    is_protected_cell,
    is_solution_cell,
    is_test_cell,
    max_points,
    nbgrader_meta,
    read,
)


@dataclass(frozen=True)
class Job:
    submission: Submission
    source_path: Path  # solutions/<notebook>.ipynb
    cell_timeout_s: int = config.CELL_TIMEOUT_S


@dataclass
class CellResult:
    grade_id: str
    points: float
    max_points: float
    message: str = ""  # why it lost points: the assertion message, never test source

    @property
    def passed(self) -> bool:
        return self.points >= self.max_points


@dataclass
class Result:
    student: str
    notebook: str
    score: float
    max_score: float
    cells: list[CellResult]
    reason: str = ""  # why the whole submission scored what it did, if not plain tests
    notes: list[str] = field(default_factory=list)  # things the grader fixed (restored cells...)
    submission_sha256: str = ""
    source_sha256: str = ""
    grader_version: str = config.GRADER_VERSION
    seconds: float = 0.0
    executed: dict | None = None  # the executed notebook (contains hidden tests: instructor only)

    def to_json(self) -> dict:
        data = asdict(self)
        data.pop("executed")
        return data

    @classmethod
    def from_json(cls, data: dict) -> "Result":
        data = dict(data)
        data["cells"] = [CellResult(**c) for c in data["cells"]]
        return cls(**data)


def file_sha256(path: Path) -> str:
    return hashlib.sha256(Path(path).read_bytes()).hexdigest()


def zero_result(job: Job, reason: str, source: NotebookNode | None = None) -> Result:
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
    )


def assemble(submitted: NotebookNode, source: NotebookNode) -> tuple[NotebookNode, list[str]]:
    """The notebook to execute: the student's cells with tests and locked cells from the source."""
    source_by_id = {grade_id(c): c for c in source.cells if grade_id(c)}
    notes: list[str] = []
    cells: list[NotebookNode] = []
    seen: set[str] = set()
    for cell in submitted.cells:
        cell = copy.deepcopy(cell)
        gid = grade_id(cell)
        if gid is not None and (gid not in source_by_id or gid in seen):
            # A copied cell, or metadata edited by hand: it grades nothing, but the
            # student's code in it may be needed, so keep it as an ordinary cell.
            notes.append(f"cell {gid!r} is a duplicate or unknown grader cell; run as an ordinary cell")
            cell.metadata.pop("nbgrader", None)
            gid = None
        if gid is not None:
            seen.add(gid)
            original = source_by_id[gid]
            if is_protected_cell(original):
                cell = copy.deepcopy(original)
            else:  # a solution cell: the student's code, the source's metadata (points cannot be edited)
                cell.metadata["nbgrader"] = copy.deepcopy(original.metadata["nbgrader"])
                if cell.cell_type != original.cell_type:
                    notes.append(f"cell {gid!r} was changed to {cell.cell_type}; changed back to {original.cell_type}")
                    cell = nbformat.from_dict({**original, "source": cell.source})
        if cell.cell_type == "code":
            cell.outputs = []
            cell.execution_count = None
        cells.append(cell)
    # Put back graded or locked cells the student deleted, after the source cell before them.
    for index, original in enumerate(source.cells):
        gid = grade_id(original)
        if gid is None or gid in seen or not (is_protected_cell(original) or is_solution_cell(original)):
            continue
        notes.append(f"cell {gid!r} was missing from the submission and was restored")
        position = 0
        for previous in reversed(source.cells[:index]):
            ids = [grade_id(c) for c in cells]
            if grade_id(previous) in ids:
                position = ids.index(grade_id(previous)) + 1
                break
        cells.insert(position, copy.deepcopy(original))
        seen.add(gid)
    nb = nbformat.v4.new_notebook(cells=cells, metadata=copy.deepcopy(source.metadata))
    nb.metadata["kernelspec"] = {"display_name": "Python 3", "language": "python", "name": config.KERNEL_NAME}
    return nb, notes


NOT_RUN = "this test did not run (the notebook stopped before it)"


def score_cell(cell: NotebookNode, not_run: str = NOT_RUN) -> CellResult:
    """Points of one executed test cell: nbgrader's rule, with stderr not counted as failure."""
    from nbgrader.utils import determine_grade

    gid, points_max = grade_id(cell), float(nbgrader_meta(cell).get("points", 0))
    if cell.get("execution_count") is None and not cell.get("outputs"):
        return CellResult(gid, 0.0, points_max, not_run)
    for output in cell.outputs:
        if output.output_type == "error":
            message = f"{output.ename}: {output.evalue}".strip().rstrip(":")
            return CellResult(gid, 0.0, points_max, message)
    judged = copy.deepcopy(cell)
    judged.outputs = [o for o in judged.outputs if not (o.output_type == "stream" and o.name == "stderr")]
    points, _ = determine_grade(judged)
    points = float(points or 0.0)
    return CellResult(gid, points, points_max, "" if points >= points_max else "partial credit")


def _run(nb: NotebookNode, timeout: int) -> str:
    """Execute in place; return '' or why the run stopped early (kernel death, time limit)."""
    from nbclient.exceptions import CellTimeoutError, DeadKernelError
    from nbgrader.preprocessors import Execute

    os.environ.update(config.KERNEL_ENV)
    with tempfile.TemporaryDirectory(prefix="autograde-") as scratch:
        from traitlets.config import Config

        # IPC sockets in the scratch dir instead of TCP on localhost: nothing listens on
        # the network, and the kernel does not warn about unencrypted TCP on stderr.
        kernel_config = Config({"KernelManager": {"transport": "ipc", "ip": str(Path(scratch) / "kernel")}})
        executor = Execute(timeout=timeout, kernel_name=config.KERNEL_NAME, startup_timeout=120, config=kernel_config)
        try:
            executor.preprocess(nb, {"metadata": {"path": scratch}})
        except DeadKernelError:
            return "the kernel died while running the notebook (out of memory, or the code crashed Python); tests after that point score 0"
        except CellTimeoutError:
            return f"a cell ran longer than {timeout} s; tests after that point score 0"
        except Exception as exc:  # anything else from the kernel machinery must not lose the run
            return f"the notebook could not be run: {type(exc).__name__}: {exc}"
    return ""


def execute_submission(job: Job) -> Result:
    """Grade one submission. Never raises for anything the student did."""
    started = time.monotonic()
    source = read(job.source_path)
    sub = job.submission
    if sub.problem or sub.path is None:
        return zero_result(job, sub.problem or "nothing submitted", source)
    try:
        submitted = read(sub.path)
        nb, notes = assemble(submitted, source)
    except Exception as exc:
        return zero_result(job, f"the notebook could not be read: {type(exc).__name__}: {exc}", source)
    reason = _run(nb, job.cell_timeout_s)
    cells = [score_cell(c, reason or NOT_RUN) for c in nb.cells if is_test_cell(c)]
    return Result(
        sub.student,
        sub.notebook,
        sum(c.points for c in cells),
        sum(c.max_points for c in cells),
        cells,
        reason=reason,
        notes=notes,
        submission_sha256=sub.sha256,
        source_sha256=file_sha256(job.source_path),
        seconds=round(time.monotonic() - started, 2),
        executed=nb,
    )
