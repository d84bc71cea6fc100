"""The one writer of grading state: result records in the work dir and nbgrader's gradebook.

Only the main process of a grading run writes here (workers only compute), so SQLite
never sees two writers. Every write is an upsert, so writing the same result twice
(a resumed run re-records cached results) changes nothing.
"""

from __future__ import annotations

import json
import os
import sys
import warnings
from pathlib import Path

import nbformat
from nbformat import NotebookNode
from sqlalchemy.exc import SAWarning

from autograder import config
from autograder.model.notebooks import grade_id, is_solution_cell, max_points
from autograder.model.records import Result


def ensure_tools_on_path() -> None:
    """nbgrader runs `alembic` by name: make this interpreter's bin/ findable even
    when the CLI is called as `.venv/bin/python -m autograder` without activating."""
    bin_dir = str(Path(sys.executable).parent)
    if bin_dir not in os.environ.get("PATH", "").split(os.pathsep):
        os.environ["PATH"] = bin_dir + os.pathsep + os.environ.get("PATH", "")


def result_path(workdir: Path, student: str, notebook: str) -> Path:
    return Path(workdir) / config.RESULTS_DIR / student / f"{notebook}.json"


def executed_path(workdir: Path, student: str, notebook: str) -> Path:
    return Path(workdir) / config.EXECUTED_DIR / student / f"{notebook}.ipynb"


def atomic_write(path: Path, text: str) -> None:
    """Readers see the old file or the new one, never half of it (a run killed mid-write)."""
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_name(path.name + ".tmp")
    tmp.write_text(text, encoding="utf-8", newline="")  # exactly these bytes (CSV ends lines with \r\n)
    os.replace(tmp, path)


def load_result(workdir: Path, student: str, notebook: str) -> Result | None:
    path = result_path(workdir, student, notebook)
    try:
        return Result.from_json(json.loads(path.read_text(encoding="utf-8")))
    except (OSError, ValueError, TypeError, KeyError):
        return None  # missing or unreadable: grade it again


def load_results(workdir: Path) -> list[Result]:
    results = []
    for path in sorted((Path(workdir) / config.RESULTS_DIR).glob("*/*.json")):
        result = load_result(workdir, path.parent.name, path.stem)
        if result is not None:
            results.append(result)
    return results


def open_gradebook(url: str):
    """nbgrader's Gradebook at `url` (SQLite file or any SQLAlchemy URL, e.g. PostgreSQL), or a
    ConnectionError that names the database (password hidden) and says what went wrong."""
    from nbgrader.api import Gradebook
    from sqlalchemy.engine import make_url
    from sqlalchemy.exc import SQLAlchemyError

    ensure_tools_on_path()
    try:
        return Gradebook(url, course_id=config.COURSE_ID)
    except (SQLAlchemyError, ImportError) as exc:
        shown = make_url(url).render_as_string(hide_password=True)
        first = str(getattr(exc, "orig", None) or exc).strip().splitlines()[0]
        raise ConnectionError(f"could not open the gradebook {shown}: {first}") from None


class Writer:
    """Stores results as they arrive. Use as a context manager."""

    def __init__(self, workdir: Path, db_url: str | None = None):
        self.workdir = Path(workdir)
        self.workdir.mkdir(parents=True, exist_ok=True)
        self.gradebook = open_gradebook(config.gradebook_url(self.workdir, db_url))

    def __enter__(self) -> Writer:
        return self

    def __exit__(self, *exc) -> None:
        self.gradebook.close()

    def register_notebook(self, name: str, source: NotebookNode) -> None:
        """Assignment `name` with one notebook `name`, its test cells and solution cells."""
        gb = self.gradebook
        gb.update_or_create_assignment(name)
        gb.update_or_create_notebook(name, name)
        for gid, points in max_points(source).items():
            gb.update_or_create_grade_cell(gid, name, name, max_score=points, cell_type="code")
        for cell in source.cells:
            if is_solution_cell(cell):
                gb.update_or_create_solution_cell(grade_id(cell), name, name)

    def record(self, result: Result) -> None:
        """Write the record file (atomically) and the gradebook rows of one result."""
        if result.executed is not None:
            path = executed_path(self.workdir, result.student, result.notebook)
            atomic_write(path, nbformat.writes(nbformat.from_dict(result.executed)))
        atomic_write(result_path(self.workdir, result.student, result.notebook), json.dumps(result.to_json(), indent=1))
        self.record_in_gradebook(result)

    def record_in_gradebook(self, result: Result) -> None:
        from nbgrader.api import MissingEntry

        gb = self.gradebook
        gb.update_or_create_student(result.student)
        try:
            gb.find_submission(result.notebook, result.student)
        except MissingEntry:
            with warnings.catch_warnings():
                # nbgrader's add_submission trips SQLAlchemy 2's autoflush warnings; harmless.
                warnings.simplefilter("ignore", SAWarning)
                gb.add_submission(result.notebook, result.student)
        for cell in result.cells:
            grade = gb.find_grade(cell.grade_id, result.notebook, result.notebook, result.student)
            grade.auto_score = cell.points
            grade.needs_manual_grade = False
        gb.db.commit()
