"""Find the submissions of a laid-out intake (`uploads.prepare`) or of a folder `SUBMISSIONS/<student>/<notebook>`.

Every student yields one Submission per released notebook. Problems that make a notebook ungradable before
running anything (file missing, wrong name, too large, empty, not JSON, nested too deep, not a notebook,
unreadable) are recorded on the Submission as `problem`, so the student still appears in the gradebook with 0
points and a reason instead of vanishing or stopping the run. Each submission is read under its own guard, with
its bounds checked before the expensive step: the size before reading, the nesting depth before decoding JSON.
"""

from __future__ import annotations

import hashlib
import itertools
import json
import os
from pathlib import Path

import nbformat

from autograder import config
from autograder.errors import MissingInput
from autograder.intake.archives import over_the_limit
from autograder.intake.names import Upload, choose_latest, duplicate_number, released_name
from autograder.intake.recognise import recognised, recognised_note
from autograder.intake.state import IntakeState, NotebookIntake
from autograder.intake.uploads import student_ids
from autograder.model.records import Submission

# what reading and decoding one file can raise, whatever its bytes: the file's problem, not the run's
UNREADABLE = (OSError, ValueError, RecursionError, MemoryError, UnicodeError)


def json_depth(value: object) -> int:
    """How deep decoded JSON nests, walked without recursion."""
    deepest, todo = 0, [(value, 1)]
    while todo:
        item, depth = todo.pop()
        if isinstance(item, dict | list):
            deepest = max(deepest, depth)
            todo.extend((child, depth + 1) for child in (item.values() if isinstance(item, dict) else item))
    return deepest


def notebook_problem(data: bytes) -> str | None:
    """Why these bytes cannot be graded as a notebook, or None."""
    if not data.strip():
        return "the submitted file is empty"
    try:
        text = data.decode("utf-8")
    except UnicodeDecodeError:
        return "the submitted file is not UTF-8 text (is it really a .ipynb notebook?)"
    too_deep = (
        f"the submitted file nests its JSON more than {config.MAX_NOTEBOOK_DEPTH} levels deep, deeper than any "
        "notebook; was it edited outside Jupyter?"
    )
    try:
        decoded = json.loads(text)  # json refuses past the recursion limit (~1,000 levels) with RecursionError
    except json.JSONDecodeError as exc:
        return (
            f"the submitted file is not valid JSON (line {exc.lineno}, column {exc.colno}: {exc.msg}); "
            "was it edited outside Jupyter?"
        )
    except RecursionError:
        return too_deep
    if json_depth(decoded) > config.MAX_NOTEBOOK_DEPTH:  # before nbformat, which parses and validates recursively
        return too_deep
    invalid: dict[str, Exception] = {}
    try:  # read and validated once (validating a 50,000-cell notebook takes seconds)
        nbformat.reads(text, as_version=4, capture_validation_error=invalid)
    except Exception as exc:  # noqa: BLE001 - nbformat raises several unrelated types
        invalid["ValidationError"] = exc
    if invalid:
        error = invalid["ValidationError"]
        first_line = str(error).strip().splitlines()[0][:300] if str(error).strip() else type(error).__name__
        return f"the submitted file is JSON but not a valid Jupyter notebook: {first_line}"
    return None


def notebooks_present(intake: IntakeState | Path, released: list[str]) -> list[str]:
    """The released notebooks that at least one student handed in (by name, or by its cells).

    A folder collected for one assignment should not report every other chapter as missing. If nobody handed in
    any released notebook, none is expected: the run has nothing to grade and says so (`grade.NothingDone`),
    rather than give every student a zero row for each of the course's notebooks."""
    state = _state(intake)
    names: set[str | None] = {key.split("/", 1)[1] for key in state.notebooks}
    for folder in state.students.values():
        if folder:
            names |= set(standing_for(_files(state.folder / folder), released).values())
    return [name for name in released if name in names]


def standing_for(files: list[Path], released: list[str]) -> dict[Path, str]:
    """{file: the released notebook it stands for}: by its name (`02_x (1).ipynb`), else, for a notebook file of
    no released notebook's name, by its cells (`recognise.py`). A file too large to be a submission is not read."""
    found = {}
    for path in files:
        notebook = released_name(path.name, released)[0]
        if notebook is None and path.suffix.lower() == ".ipynb":
            try:
                if not over_the_limit(path.name, path.stat().st_size):
                    notebook = recognised(path.read_bytes(), released)
            except OSError:
                notebook = None  # unreadable: its row says so when it is graded by its name, or the name is wrong
        if notebook is not None:
            found[path] = notebook
    return found


def collect(intake: IntakeState | Path, notebooks: list[str]) -> list[Submission]:
    """One Submission per (student, notebook in `notebooks`), sorted by student then notebook. `intake` is the
    record `prepare` wrote, or a folder of student folders read as it is."""
    state = _state(intake)
    # nbgrader's layout: a student has a row for the notebooks of the assignments they handed in, no other
    nbgrader = state.nbgrader is not None
    found: list[Submission] = []
    for student, folder in sorted(state.students.items()):
        files, too_many = _student_files(state.folder, folder)
        standing = standing_for(files, notebooks)
        for name in notebooks:
            entry = state.entry(student, name)
            if nbgrader and entry is None:
                continue
            entry = entry or NotebookIntake(problem=_refused(state.refused.get(student, []), name))
            try:
                found.append(_submission(student, name, entry, files, too_many, standing))
            except UNREADABLE as exc:  # the file's problem: a row with the reason, and the run goes on
                problem = f"the submitted file could not be read ({type(exc).__name__}: {str(exc)[:200]})"
                found.append(Submission(student, name, None, problem))
    return found


def _refused(refused: list[str], name: str) -> str:
    """The row of a student none of whose files is a notebook: what they handed in, and why it was not taken."""
    if not refused:
        return ""
    shown = "; ".join(refused[:3]) + (f"; and {len(refused) - 3} more" if len(refused) > 3 else "")
    return f"no file named {name}.ipynb, nor a notebook with its cells, was submitted ({shown})"


def _state(intake: IntakeState | Path) -> IntakeState:
    """The record, or a folder of student folders read as `prepare` would read it in place (nothing written)."""
    if isinstance(intake, IntakeState):
        return intake
    folder = Path(intake)
    if not folder.is_dir():
        raise MissingInput(f"submissions folder {folder} does not exist")
    names = [p.name for p in folder.iterdir() if p.is_dir() and not p.name.startswith(".")]
    students = {student: name for name, student in student_ids(names, "student folder", []).items()}
    return IntakeState(source=folder.resolve(), source_sha256="", folder=folder, students=students)


def _files(folder: Path) -> list[Path]:
    """The first MAX_FILES_PER_STUDENT + 1 visible files of a student's folder, sorted (a folder of a million files
    is not listed whole)."""
    with os.scandir(folder) as listing:
        visible = (e for e in listing if not e.name.startswith("."))
        entries = list(itertools.islice(visible, config.MAX_FILES_PER_STUDENT + 1))
    return sorted(Path(e.path) for e in entries if e.is_file())


def _student_files(root: Path, folder: str) -> tuple[list[Path], bool]:
    if not folder:
        return [], False
    try:
        files = _files(root / folder)
    except OSError:
        return [], False
    return files[: config.MAX_FILES_PER_STUDENT], len(files) > config.MAX_FILES_PER_STUDENT


def _submission(
    student: str, name: str, entry: NotebookIntake, files: list[Path], too_many: bool, standing: dict[Path, str]
) -> Submission:
    def refused(problem: str, note: str = entry.note) -> Submission:
        return Submission(student, name, None, problem, "", note, entry.late, entry.submitted_at, entry.time_source)

    if entry.problem:
        return refused(entry.problem)
    if too_many:
        limit = config.MAX_FILES_PER_STUDENT
        return refused(f"the student's folder holds over {limit:,} files; hand in the notebooks only")
    path, note = _the_file(student, name, files, standing)
    if path is None:
        # files that are no notebook being graded (another notebook's file is graded as that notebook)
        others = [p.name for p in files if p not in standing]
        if others:
            shown = ", ".join(others[:5]) + (f" and {len(others) - 5} more" if len(others) > 5 else "")
            problem = (
                f"no file named {name}.ipynb (found {shown}, holding no released notebook's cells); notebooks must "
                "keep their released name"
            )
        else:
            problem = f"no file named {name}.ipynb was submitted"
        return Submission(student, name, None, problem)
    note = "; ".join(n for n in (entry.note, note) if n)
    too_large = over_the_limit(path.name, path.stat().st_size)  # the one limit, before the file is read
    if too_large:
        return refused(too_large, note)
    data = path.read_bytes()
    digest = hashlib.sha256(data).hexdigest()
    why = notebook_problem(data)
    return Submission(student, name, path, why, digest, note, entry.late, entry.submitted_at, entry.time_source)


def _the_file(student: str, name: str, files: list[Path], standing: dict[Path, str]) -> tuple[Path | None, str]:
    """The student's file for notebook `name`, and a note when it is not simply `<name>.ipynb`.

    Browser downloads and re-uploads add ` (1)` or `-1` to a name, editors change its case, students rename it
    `homework.ipynb` (recognised by its cells): such a file still counts, with a note. Of several files for one
    notebook, the one modified last wins (the name's number breaks a tie)."""
    candidates = [
        Upload(student, p.name, p.name, (p.stat().st_mtime, duplicate_number(p.stem)), None)
        for p in files
        if standing.get(p) == name
    ]
    if not candidates:
        return None, ""
    latest, note = choose_latest(candidates, name, kind="files")
    path = next(p for p in files if p.name == latest.original)
    if released_name(path.name, [name])[0] is None:
        note = "; ".join((note, recognised_note(name)))
    return path, note
