"""The one writer of grading state: result records in the work dir and nbgrader's gradebook.

Only the main process of a grading run writes here (workers only compute), so SQLite
never sees two writers. Every write is an upsert, so writing the same result twice
(a resumed run re-records cached results) changes nothing.
"""

from __future__ import annotations

import functools
import json
import os
import sys
import warnings
from datetime import datetime
from pathlib import Path

import nbformat
from nbformat import NotebookNode
from sqlalchemy.exc import SAWarning

from autograder import config
from autograder.errors import InputError, Unreachable
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


@functools.cache
def schema_version() -> str:
    """The alembic revision nbgrader stamps on a gradebook it creates, read from nbgrader's own migration scripts
    in this process. nbgrader learns it by running `alembic heads` in a subprocess (nbgrader.api.
    get_alembic_version), which cost every run that created a gradebook 1.5 s on a quiet machine and 6 s on a busy
    one; open_gradebook has nbgrader use this instead (tests/test_grading.py checks both give the same revision)."""
    import nbgrader
    from alembic.script import ScriptDirectory

    head = ScriptDirectory(str(Path(nbgrader.__file__).parent / "alembic")).get_current_head()
    if not head:
        raise RuntimeError("nbgrader's alembic scripts have no head revision")
    return head


def _commit_without_waiting_for_the_disk(engine) -> None:
    """SQLite in write-ahead-log mode with synchronous=NORMAL: a commit no longer waits for an fsync (about three
    commits per recorded result, 20 ms each in the default mode on this machine's disk). Still atomic, and nothing
    is lost when the grader is killed (the log is replayed on the next open); a power cut can lose the last
    commits, never corrupt the file, and the next `grade` writes them again from the result records. One host
    only (the grader is the gradebook's one writer; nbgrader's formgrader on the same host reads it as usual)."""
    from sqlalchemy import event

    if engine.dialect.name != "sqlite":
        return

    @event.listens_for(engine, "connect")
    def _pragmas(connection, _record) -> None:
        cursor = connection.cursor()
        cursor.execute("PRAGMA journal_mode=WAL")
        cursor.execute("PRAGMA synchronous=NORMAL")
        cursor.close()

    engine.dispose()  # the connections opened so far (nbgrader's checks) are replaced by ones with the pragmas


def missing_sqlite_file(url: str) -> Path | None:
    """The file of a SQLite gradebook URL when that file does not exist (nothing was graded there yet); None
    when it exists or the URL names another database. Opening a missing file would create an empty gradebook."""
    prefix = "sqlite:///"
    if url.startswith(prefix) and not Path(url[len(prefix) :]).exists():
        return Path(url[len(prefix) :])
    return None


def open_gradebook(url: str):
    """nbgrader's Gradebook at `url` (SQLite file or any SQLAlchemy URL, e.g. PostgreSQL); when it cannot be
    opened, `Unreachable` naming the database (password hidden) and what went wrong (`InputError` for no URL)."""
    import nbgrader.api
    from sqlalchemy.engine import make_url
    from sqlalchemy.exc import SQLAlchemyError

    ensure_tools_on_path()
    nbgrader.api.get_alembic_version = schema_version  # in this process, not `alembic heads` in a subprocess
    try:
        gradebook = nbgrader.api.Gradebook(url, course_id=config.COURSE_ID)
    except (SQLAlchemyError, ImportError) as exc:
        first = str(getattr(exc, "orig", None) or exc).strip().splitlines()[0]
        try:
            shown = make_url(url).render_as_string(hide_password=True)
        except SQLAlchemyError:  # not a URL at all: nothing to show that could not hold a password
            raise InputError(f"--db is not an SQLAlchemy URL such as postgresql://user@host/db ({first})") from None
        raise Unreachable(f"could not open the gradebook {shown}: {first}") from None
    gradebook.db.commit()
    _commit_without_waiting_for_the_disk(gradebook.engine)
    return gradebook


def gradebook_time(iso: str) -> datetime | None:
    """An ISO 8601 time as nbgrader's gradebook keeps times: naive, in UTC (nbgrader.utils.parse_utc)."""
    if not iso:
        return None
    from nbgrader.utils import parse_utc

    return parse_utc(iso)


class Writer:
    """Stores results as they arrive. Use as a context manager.

    In nbgrader's gradebook each notebook is an assignment of its own name, unless it came in nbgrader's
    course layout (`assignments`: notebook -> the nbgrader assignment it was submitted in). With `course`,
    an nbgrader course directory, each executed notebook is also written where `nbgrader autograde` puts
    it (`<course>/autograded/<student>/<assignment>/<notebook>.ipynb`, with the submission's timestamp.txt),
    which nbgrader's formgrader needs to show a submission as autograded."""

    def __init__(
        self,
        workdir: Path,
        db_url: str | None = None,
        assignments: dict[str, str] | None = None,
        course: Path | None = None,
    ):
        self.workdir = Path(workdir)
        self.workdir.mkdir(parents=True, exist_ok=True)
        self.gradebook = open_gradebook(config.gradebook_url(self.workdir, db_url))
        self.assignments = dict(assignments or {})
        self.course = Path(course) if course else None

    def __enter__(self) -> Writer:
        return self

    def __exit__(self, *exc) -> None:
        self.gradebook.close()

    def assignment(self, notebook: str) -> str:
        return self.assignments.get(notebook, notebook)

    def register_notebook(self, name: str, source: NotebookNode, duedate: datetime | None = None) -> None:
        """The notebook `name` of its assignment (by default one of the same name), its test cells and solution
        cells; `duedate` (the deadline given to `grade`) becomes the assignment's due date."""
        gb = self.gradebook
        assignment = self.assignment(name)
        if duedate is not None:
            gb.update_or_create_assignment(assignment, duedate=gradebook_time(duedate.isoformat()))
        else:
            gb.update_or_create_assignment(assignment)
        gb.update_or_create_notebook(name, assignment)
        for gid, points in max_points(source).items():
            gb.update_or_create_grade_cell(gid, name, assignment, max_score=points, cell_type="code")
        for cell in source.cells:
            if is_solution_cell(cell):
                gb.update_or_create_solution_cell(grade_id(cell), name, assignment)

    def record(self, result: Result, submitted_at: str = "") -> None:
        """Write the record file (atomically) and the gradebook rows of one result (`submitted_at`: the time the
        LMS recorded, ISO 8601, kept as the submission's timestamp)."""
        text = None
        if result.executed is not None:
            text = nbformat.writes(nbformat.from_dict(result.executed))
            atomic_write(executed_path(self.workdir, result.student, result.notebook), text)
        if self.course is not None:
            self._write_autograded(result, text, submitted_at)
        atomic_write(result_path(self.workdir, result.student, result.notebook), json.dumps(result.to_json(), indent=1))
        self.record_in_gradebook(result, submitted_at)

    def _write_autograded(self, result: Result, text: str | None, submitted_at: str) -> None:
        """The submission's folder in the course's autograded/ (as `nbgrader autograde` leaves it: the timestamp of
        the submission, and the executed notebook when it could run)."""
        assert self.course is not None
        folder = self.course / "autograded" / result.student / self.assignment(result.notebook)
        folder.mkdir(parents=True, exist_ok=True)
        if text is not None:
            atomic_write(folder / f"{result.notebook}.ipynb", text)
        submitted = self.course / "submitted" / result.student / self.assignment(result.notebook) / "timestamp.txt"
        if submitted.is_file():
            atomic_write(folder / "timestamp.txt", submitted.read_text(encoding="utf-8"))
        elif submitted_at:
            atomic_write(folder / "timestamp.txt", submitted_at)

    def record_in_gradebook(self, result: Result, submitted_at: str = "") -> None:
        """The submission's grades (auto_score per test cell), its timestamp (the LMS's time, else the time the
        late-work rules used) and, for late work, nbgrader's late_submission_penalty: the points the penalty
        takes, so that nbgrader's score (raw score less penalty) is the final score."""
        from nbgrader.api import MissingEntry

        gb = self.gradebook
        assignment = self.assignment(result.notebook)
        gb.update_or_create_student(result.student)
        try:
            gb.find_submission(assignment, result.student)
        except MissingEntry:
            with warnings.catch_warnings():
                # nbgrader's add_submission trips SQLAlchemy 2's autoflush warnings; harmless.
                warnings.simplefilter("ignore", SAWarning)
                gb.add_submission(assignment, result.student)
        submission = gb.find_submission(assignment, result.student)
        when = gradebook_time(submitted_at or (result.late.submitted_at if result.late else ""))
        if when is not None:
            submission.timestamp = when
        notebook = gb.find_submission_notebook(result.notebook, assignment, result.student)
        # One query for all of the notebook's grades (nbgrader's find_grade is one query per cell: half of the
        # time a result took to record).
        grades = {grade.name: grade for grade in notebook.grades}
        for cell in result.cells:
            grade = grades.get(cell.grade_id)
            if grade is None:  # nbgrader's own lookup, and its MissingEntry if the cell is not there
                grade = gb.find_grade(cell.grade_id, result.notebook, assignment, result.student)
            grade.auto_score = cell.points
            grade.needs_manual_grade = False
        late = result.late
        notebook.late_submission_penalty = round(result.score - late.final_score, 4) if late and late.deadline else None
        gb.db.commit()
