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
    notebooks: dict[str, NotebookIntake] = {}
    found: list[tuple[str, str, str, Path, str]] = []  # (student, assignment, notebook, path, time)
    handed_in: list[tuple[str, str, list[str], str]] = []  # (student, assignment folder, its notebooks, time)
    for folder_name, student in sorted(student_ids.items()):
        for folder in sorted(
            p for p in (submitted / folder_name).iterdir() if p.is_dir() and not p.name.startswith(".")
        ):
            when = _timestamp(folder / "timestamp.txt", student, submitted, notes)
            files = sorted(folder.glob("*.ipynb"))
            handed_in.append((student, folder.name, [p.name for p in files], when))
            for path in files:
                notebook, _ = released_name(path.name, released)
                if notebook is None:
                    original = path.relative_to(submitted).as_posix()
                    notes.append(
                        f"{student}: {original!r} is not a released notebook ({', '.join(released)}); not graded"
                    )
                else:
                    found.append((student, folder.name, notebook, path, when))
    assignments = _assignments(found)
    chosen: dict[tuple[str, str], list[tuple[Upload, Path, str]]] = {}
    for student, assignment, notebook, path, when in found:
        original = path.relative_to(submitted).as_posix()
        size = 0 if path.is_symlink() else path.lstat().st_size
        refused = refusal(original, size, path.is_symlink(), in_archive=False)
        if assignment != assignments[notebook]:
            refused = (
                f"{original!r} is in assignment {assignment}, but {notebook} is graded as part of "
                f"{assignments[notebook]} (where the other students handed it in); move it to "
                f"submitted/{student}/{assignments[notebook]}"
            )
        upload = Upload(
            student, original, path.name, (path.lstat().st_mtime, duplicate_number(path.stem)), None, None, refused
        )
        chosen.setdefault((student, notebook), []).append((upload, path, when))
    # a student who handed in an assignment without one of its notebooks gets that notebook's row (0 points, the
    # reason); an assignment a student did not hand in has no row, as in nbgrader's gradebook
    for student, folder_name, names, when in handed_in:
        for notebook in sorted(n for n, a in assignments.items() if a == folder_name):
            if (student, notebook) not in chosen:
                others = f" (found {', '.join(names)})" if names else ""
                notebooks[f"{student}/{notebook}"] = NotebookIntake(
                    problem=f"no file named {notebook}.ipynb in submitted/{student}/{folder_name}{others}",
                    assignment=folder_name,
                    submitted_at=when,
                    time_source=TIME_SOURCE if when else "",
                )
    for (student, notebook), candidates in sorted(chosen.items()):
        latest, note = choose_latest([upload for upload, _, _ in candidates], notebook, kind="files")
        path, when = next((p, w) for u, p, w in candidates if u is latest)
        if not latest.refused:
            try:
                data = path.read_bytes()
            except OSError as exc:  # that student's file, not the run
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
            submitted_at=when,
            time_source=TIME_SOURCE if when else "",
            assignment=assignments[notebook],
        )
    students = {student: student for student in student_ids.values()}
    for student in sorted(set(roster.values()) - set(students)):
        students[student] = ""
        notes.append(f"roster: {student} submitted nothing")
    for student in students:
        (target / student).mkdir(exist_ok=True)
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


def _timestamp(stamp: Path, student: str, submitted: Path, notes: list[str]) -> str:
    if not stamp.is_file():
        return ""
    try:
        return nbgrader_timestamp(stamp.read_text(encoding="utf-8", errors="replace")[:200])
    except (ValueError, OverflowError, OSError):
        notes.append(f"{student}: {stamp.relative_to(submitted)} is not a time nbgrader can read; ignored")
        return ""


def _assignments(found: list[tuple[str, str, str, Path, str]]) -> dict[str, str]:
    """{notebook: the assignment most students handed it in with (ties: the first by name)}."""
    votes: dict[str, Counter[str]] = {}
    for _, assignment, notebook, _, _ in found:
        votes.setdefault(notebook, Counter())[assignment] += 1
    return {nb: min(count, key=lambda a: (-count[a], a)) for nb, count in votes.items()}
