"""Find the submissions in a folder `SUBMISSIONS/<student>/<notebook>.ipynb`.

Every student folder yields one Submission per released notebook. Problems that
make a notebook ungradable before running anything (file missing, wrong name,
empty, not JSON, not a notebook) are recorded on the Submission as `problem`, so
the student still appears in the gradebook with 0 points and a reason instead of
vanishing or stopping the run.
"""

from __future__ import annotations

import hashlib
import json
import re
from pathlib import Path

import nbformat

from autograder.intake.uploads import (
    NBGRADER_KEY,
    Upload,
    choose_latest,
    duplicate_number,
    read_manifest,
    released_name,
)
from autograder.model.records import Submission

# Student ids become folder names and gradebook keys: keep them boring.
_STUDENT_ID = re.compile(r"^[A-Za-z0-9][A-Za-z0-9._@+-]{0,99}$")


def _problem_with(path: Path, data: bytes) -> str | None:
    if not data.strip():
        return "the submitted file is empty"
    try:
        text = data.decode("utf-8")
    except UnicodeDecodeError:
        return "the submitted file is not UTF-8 text (is it really a .ipynb notebook?)"
    try:
        json.loads(text)
    except json.JSONDecodeError as exc:
        return (
            f"the submitted file is not valid JSON (line {exc.lineno}, column {exc.colno}: {exc.msg}); "
            "was it edited outside Jupyter?"
        )
    try:
        nb = nbformat.reads(text, as_version=4)
        nbformat.validate(nb)
    except Exception as exc:  # noqa: BLE001 - nbformat raises several unrelated types
        first_line = str(exc).strip().splitlines()[0] if str(exc).strip() else type(exc).__name__
        return f"the submitted file is JSON but not a valid Jupyter notebook: {first_line}"
    return None


def notebooks_present(submissions_dir: Path, released: list[str]) -> list[str]:
    """The released notebooks that at least one student handed in.

    A folder collected for one assignment should not report every other chapter as
    missing; if nobody used a released name at all, every released notebook is
    expected (and each student gets a 'wrong name' reason).
    """
    names = {released_name(p.name, released)[0] for p in Path(submissions_dir).glob("*/*") if p.is_file()}
    present = [name for name in released if name in names]
    return present or list(released)


def collect(submissions_dir: Path, notebooks: list[str]) -> list[Submission]:
    """One Submission per (student folder, notebook in `notebooks`), sorted by student then notebook."""
    submissions_dir = Path(submissions_dir)
    if not submissions_dir.is_dir():
        raise FileNotFoundError(f"submissions folder {submissions_dir} does not exist")
    student_dirs = sorted(p for p in submissions_dir.iterdir() if p.is_dir() and not p.name.startswith("."))
    unusable = [p.name for p in student_dirs if not _STUDENT_ID.match(p.name)]
    if unusable:  # all of them at once: the instructor renames them before anything is graded
        names = ", ".join(repr(name) for name in unusable)
        raise ValueError(
            f"student folder names must be usable student ids (letters, digits, . _ @ + -); rename {names}"
        )
    manifest = read_manifest(submissions_dir)
    # nbgrader's layout: a student has a row for the notebooks of the assignments they handed in, no other
    nbgrader = NBGRADER_KEY in manifest
    found: list[Submission] = []
    for student_dir in student_dirs:
        student = student_dir.name
        files = sorted(p for p in student_dir.iterdir() if p.is_file() and not p.name.startswith("."))
        for name in notebooks:
            entry = manifest.get(f"{student}/{name}", {})
            if nbgrader and not entry:
                continue
            lms = {"note": entry.get("note", ""), "lms_late": entry.get("late")}
            when = {"lms_time": entry.get("submitted_at", ""), "lms_time_source": entry.get("time_source", "")}
            if entry.get("problem"):
                found.append(Submission(student, name, None, entry["problem"], **lms, **when))
                continue
            path, note = _the_file(student_dir, name, files, notebooks)
            if path is not None:
                data = path.read_bytes()
                note = "; ".join(n for n in (lms["note"], note) if n)
                found.append(
                    Submission(
                        student,
                        name,
                        path,
                        _problem_with(path, data),
                        hashlib.sha256(data).hexdigest(),
                        note,
                        lms["lms_late"],
                        **when,
                    )
                )
                continue
            # files that are no notebook being graded (another notebook's file is graded as that notebook)
            others = [p.name for p in files if released_name(p.name, notebooks)[0] is None]
            if others:
                problem = (
                    f"no file named {name}.ipynb (found {', '.join(others)}); notebooks must keep their released name"
                )
            else:
                problem = f"no file named {name}.ipynb was submitted"
            found.append(Submission(student, name, None, problem))
    return found


def _the_file(student_dir: Path, name: str, files: list[Path], notebooks: list[str]) -> tuple[Path | None, str]:
    """The student's file for notebook `name`, and a note when it is not simply `<name>.ipynb`.

    Browser downloads and re-uploads add ` (1)` or `-1` to a name, editors change its case:
    such a file still counts, with a note. Of several files for one notebook, the one modified
    last wins (the name's number breaks a tie)."""
    candidates = [
        Upload(student_dir.name, p.name, p.name, (p.stat().st_mtime, duplicate_number(p.stem)), None)
        for p in files
        if released_name(p.name, notebooks)[0] == name
    ]
    if not candidates:
        return None, ""
    latest, note = choose_latest(candidates, name, kind="files")
    return student_dir / latest.original, note
