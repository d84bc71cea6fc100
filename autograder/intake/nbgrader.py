"""nbgrader's course directory, laid out as one folder per student.

nbgrader's course directory (`nbgrader collect`, `nbgrader zip_collect`) keeps one folder per student and
assignment, with the time of the submission in `timestamp.txt`:

    submitted/<student id>/<assignment>/<notebook>.ipynb

given as the course directory (the folder holding `submitted/`) or as `submitted/` itself. The student
keeps nbgrader's id (made usable, with a note, when it is not), each notebook is graded as the released
notebook of its name, and the assignment it came in is remembered (the gradebook files it there, as nbgrader
does). A notebook belongs to the assignment most students handed it in with: one student's copy in another
assignment's folder is that student's problem, not the run's.
"""

from __future__ import annotations

from collections import Counter
from dataclasses import dataclass
from datetime import timezone
from pathlib import Path

from autograder.intake.archives import refusal
from autograder.intake.lms import is_lms_folder
from autograder.intake.names import Upload, choose_latest, duplicate_number, released_name
from autograder.intake.state import IntakeState, NbgraderCourse, NotebookIntake

TIME_SOURCE = "nbgrader timestamp.txt"


def nbgrader_submitted(folder: Path) -> Path | None:
    """The `submitted/<student>/<assignment>/<notebook>.ipynb` folder of an nbgrader course, when `folder` is
    the course directory (it holds `submitted/`) or that folder itself; None for any other layout."""
    folder = Path(folder)
    if (folder / "submitted").is_dir():
        return folder / "submitted"
    nested = any(p.is_file() for p in folder.glob("*/*/*.ipynb"))
    flat = any(p.is_file() for p in folder.glob("*/*.ipynb"))
    return folder if nested and not flat and not is_lms_folder(folder) else None


def nbgrader_course(submitted: Path) -> Path | None:
    """The nbgrader course directory around a `submitted` folder (it has nbgrader's config, gradebook or source)."""
    parent = Path(submitted).resolve().parent
    markers = ("nbgrader_config.py", "gradebook.db", "source")
    return parent if Path(submitted).name == "submitted" and any((parent / m).exists() for m in markers) else None


def nbgrader_timestamp(text: str) -> str:
    """nbgrader's `timestamp.txt` as an ISO 8601 time in UTC (nbgrader reads a time without a zone as UTC)."""
    from nbgrader.utils import parse_utc

    return parse_utc(text.strip()).replace(tzinfo=timezone.utc).isoformat()


def lay_out_nbgrader(
    submitted: Path,
    target: Path,
    released: list[str],
    roster: dict[str, str],
    student_ids: dict[str, str],
    notes: list[str],
) -> IntakeState:
    """nbgrader's `submitted/<student>/<assignment>/<notebook>.ipynb` laid out in `target` as
    `<student>/<notebook>.ipynb`, with each notebook's assignment and each submission's `timestamp.txt` in the
    record. `student_ids` maps each student folder's name to its student id."""
    handed_in = _handed_in(submitted, released, student_ids, notes)
    found = [file for folder in handed_in for file in folder.found]
    assignments = _assignments(found)
    candidates = _candidates(found, assignments, submitted)
    notebooks = _missing_notebooks(handed_in, assignments, candidates)
    notebooks |= _copy_latest(candidates, assignments, target, notes)
    students = _students(student_ids, roster, target, notes)
    course = nbgrader_course(submitted)
    named = ", ".join(f"{nb} ({a})" for nb, a in sorted(assignments.items())) or "none"
    notes.append(
        f"Intake: {len(notebooks)} notebook(s) of {len(students)} student(s) from nbgrader's {submitted} (notebooks "
        f"and their assignments: {named}) into {target}"
    )
    return IntakeState(
        source=submitted,
        source_sha256="",
        folder=target,
        students=students,
        notebooks=notebooks,
        nbgrader=NbgraderCourse(str(course) if course else "", assignments),
        notes=notes,
    )


@dataclass(frozen=True)
class _Found:
    """A file that stands for a released notebook, in one student's assignment folder."""

    student: str
    assignment: str  # the folder it was in
    notebook: str  # the released notebook it stands for
    path: Path
    when: str  # the folder's timestamp.txt, as ISO 8601 ("" when none or unreadable)


@dataclass(frozen=True)
class _HandedIn:
    """One assignment folder of one student: the notebooks in it, and those of them that are released notebooks."""

    student: str
    assignment: str
    names: list[str]  # every .ipynb in it, to say what was there when an expected notebook is not
    when: str
    found: list[_Found]


@dataclass(frozen=True)
class _Candidate:
    """One file that may count for a (student, notebook): the choice between several is `choose_latest`'s."""

    upload: Upload
    path: Path
    when: str


def _handed_in(submitted: Path, released: list[str], student_ids: dict[str, str], notes: list[str]) -> list[_HandedIn]:
    """Every student's assignment folders (hidden folders skipped), in order of folder name; a notebook that is not a
    released one gets a note and is not graded."""
    handed_in = []
    for folder_name, student in sorted(student_ids.items()):
        for folder in sorted(
            p for p in (submitted / folder_name).iterdir() if p.is_dir() and not p.name.startswith(".")
        ):
            when = _timestamp(folder / "timestamp.txt", student, submitted, notes)
            files = sorted(folder.glob("*.ipynb"))
            found = []
            for path in files:
                notebook, _ = released_name(path.name, released)
                if notebook is None:
                    original = path.relative_to(submitted).as_posix()
                    notes.append(
                        f"{student}: {original!r} is not a released notebook ({', '.join(released)}); not graded"
                    )
                else:
                    found.append(_Found(student, folder.name, notebook, path, when))
            handed_in.append(_HandedIn(student, folder.name, [p.name for p in files], when, found))
    return handed_in


def _candidates(
    found: list[_Found], assignments: dict[str, str], submitted: Path
) -> dict[tuple[str, str], list[_Candidate]]:
    """{(student, notebook): the files that may count for it}. A link, a file over the limit, or a notebook handed in
    with another assignment than its own stays a candidate, refused with the reason: when it is the latest, the
    student is told why it was not graded instead of an earlier file being graded in its place."""
    chosen: dict[tuple[str, str], list[_Candidate]] = {}
    for file in found:
        original = file.path.relative_to(submitted).as_posix()
        size = 0 if file.path.is_symlink() else file.path.lstat().st_size
        refused = refusal(original, size, file.path.is_symlink(), in_archive=False)
        own = assignments[file.notebook]
        if file.assignment != own:
            refused = (
                f"{original!r} is in assignment {file.assignment}, but {file.notebook} is graded as part of "
                f"{own} (where the other students handed it in); move it to submitted/{file.student}/{own}"
            )
        order = (file.path.lstat().st_mtime, duplicate_number(file.path.stem))
        upload = Upload(file.student, original, file.path.name, order, None, None, refused)
        chosen.setdefault((file.student, file.notebook), []).append(_Candidate(upload, file.path, file.when))
    return chosen


def _missing_notebooks(
    handed_in: list[_HandedIn],
    assignments: dict[str, str],
    candidates: dict[tuple[str, str], list[_Candidate]],
) -> dict[str, NotebookIntake]:
    """A student who handed in an assignment without one of its notebooks gets that notebook's row (0 points, the
    reason); an assignment a student did not hand in has no row, as in nbgrader's gradebook."""
    notebooks = {}
    for folder in handed_in:
        for notebook in sorted(n for n, a in assignments.items() if a == folder.assignment):
            if (folder.student, notebook) not in candidates:
                others = f" (found {', '.join(folder.names)})" if folder.names else ""
                notebooks[f"{folder.student}/{notebook}"] = NotebookIntake(
                    problem=(
                        f"no file named {notebook}.ipynb in submitted/{folder.student}/{folder.assignment}{others}"
                    ),
                    assignment=folder.assignment,
                    submitted_at=folder.when,
                    time_source=TIME_SOURCE if folder.when else "",
                )
    return notebooks


def _copy_latest(
    candidates: dict[tuple[str, str], list[_Candidate]],
    assignments: dict[str, str],
    target: Path,
    notes: list[str],
) -> dict[str, NotebookIntake]:
    """The latest file of each (student, notebook) copied to `target/<student>/<notebook>.ipynb` unless it is
    refused or cannot be read (that student's file, not the run: a note and 0 points with the reason)."""
    notebooks = {}
    for (student, notebook), files in sorted(candidates.items()):
        latest, note = choose_latest([file.upload for file in files], notebook, kind="files")
        taken = next(file for file in files if file.upload is latest)
        if not latest.refused:
            try:
                data = taken.path.read_bytes()
            except OSError as exc:
                latest.refused = f"refused {latest.original!r}: it cannot be read ({exc.strerror})"
            else:
                (target / student).mkdir(exist_ok=True)
                (target / student / f"{notebook}.ipynb").write_bytes(data)
        if latest.refused:
            notes.append(f"{student}/{notebook}: {latest.refused}")
        notebooks[f"{student}/{notebook}"] = NotebookIntake(
            original=latest.original,
            note=note,
            problem=latest.refused,
            submitted_at=taken.when,
            time_source=TIME_SOURCE if taken.when else "",
            assignment=assignments[notebook],
        )
    return notebooks


def _students(student_ids: dict[str, str], roster: dict[str, str], target: Path, notes: list[str]) -> dict[str, str]:
    """{student id: its folder in `target`}, every one made: each student of `submitted/`, and each student of the
    roster who submitted nothing (folder "", and a note), so that the gradebook has their row too."""
    students = {student: student for student in student_ids.values()}
    for student in sorted(set(roster.values()) - set(students)):
        students[student] = ""
        notes.append(f"roster: {student} submitted nothing")
    for student in students:
        (target / student).mkdir(exist_ok=True)
    return students


def _timestamp(stamp: Path, student: str, submitted: Path, notes: list[str]) -> str:
    if not stamp.is_file():
        return ""
    try:
        return nbgrader_timestamp(stamp.read_text(encoding="utf-8", errors="replace")[:200])
    except (ValueError, OverflowError, OSError):
        notes.append(f"{student}: {stamp.relative_to(submitted)} is not a time nbgrader can read; ignored")
        return ""


def _assignments(found: list[_Found]) -> dict[str, str]:
    """{notebook: the assignment most students handed it in with (ties: the first by name)}."""
    votes: dict[str, Counter[str]] = {}
    for file in found:
        votes.setdefault(file.notebook, Counter())[file.assignment] += 1
    return {nb: min(count, key=lambda a: (-count[a], a)) for nb, count in votes.items()}
