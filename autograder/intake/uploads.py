"""What instructors hand in: a folder, a zip, an LMS export or an nbgrader course, laid out once as students and
notebooks, and recorded in the work dir (`intake/state.json`, `state.py`) for every later command.

    grade submissions.zip --roster roster.csv

`prepare` turns any of these into the one layout `collect` reads:
- a folder of student folders (`alice/02_dot_product_attention.ipynb`): read in place;
- a zip of such folders, or a zip / a folder of flat LMS files (`lms.py`: Canvas, Moodle): unpacked
  (`archives.py`) into `<workdir>/intake/submissions/<student>/<notebook>.ipynb`;
- an nbgrader course directory (`nbgrader.py`): laid out the same way, with each notebook's assignment.

A name that is not a usable student id (`+1+1`, `@Mallory`, `Zoë`) is mapped to one (`1+1`, `Mallory`, `Zoe`)
with a note: a name an LMS produced is never the instructor's to fix by hand. The uploaded file name is
matched to a released notebook after removing what browsers and LMSs append (`-1`, ` (1)`, a different case),
with a note; of several uploads for one notebook the latest wins (Canvas: the highest attachment id, which
Canvas assigns in upload order; Moodle, nbgrader: the file's time in the zip or on disk). Moodle's zip holds
no submission time: its grading worksheet does, given as `--roster`. Canvas writes no submission time into the
zip (its entries carry the time the zip was made), only the `late` mark, computed against each student's own
due date: the time itself comes from `--timestamps`, and without it a file marked late counts as 1 day late,
with a warning.

A refused or damaged notebook of a known student still gives that student a row with 0 points and the reason.
"""

from __future__ import annotations

import shutil
from pathlib import Path, PurePosixPath
from typing import TextIO

from autograder.errors import MissingInput
from autograder.intake.archives import Entry, climbs_out, folder_entries, zip_entries
from autograder.intake.lms import MOODLE, is_lms_folder, lms_upload, read_roster, roster_times
from autograder.intake.names import (
    STUDENT_ID,
    Upload,
    choose_latest,
    duplicate_number,
    released_name,
    short,
    usable_student_id,
)
from autograder.intake.nbgrader import lay_out_nbgrader, nbgrader_submitted
from autograder.intake.recognise import recognised, recognised_note
from autograder.intake.state import IntakeState, NotebookIntake, save, state_path
from autograder.model.files import file_sha256

INTAKE_DIR = "intake"
PRINTED_NOTES = 40  # notes printed by grade; the rest are counted (all are in the record)


def prepare(
    source: Path, workdir: Path, released: list[str], roster_path: Path | None = None, out: TextIO | None = None
) -> IntakeState:
    """Lay `source` out, write the record into `workdir`, print the notes to `out`, and return the record."""
    source = Path(source)
    if not source.exists():
        raise MissingInput(f"submissions folder or zip {source} does not exist")
    roster = read_roster(roster_path) if roster_path else {}
    notes: list[str] = []
    submitted = nbgrader_submitted(source) if source.is_dir() else None
    if submitted is not None:
        folders = [p.name for p in submitted.iterdir() if p.is_dir() and not p.name.startswith(".")]
        ids = student_ids(folders, "nbgrader student", notes)
        state = lay_out_nbgrader(submitted, _fresh_target(workdir), released, roster, ids, notes)
    elif source.is_dir() and not is_lms_folder(source):
        state = _in_place(source, roster, notes)
    else:
        state = _lay_out_export(source, _fresh_target(workdir), released, roster, roster_path, notes)
    state.source = source.resolve()
    state.source_sha256 = file_sha256(source) if source.is_file() else ""
    state.roster = str(Path(roster_path).resolve()) if roster_path else ""
    save(state, workdir)
    _say(state.notes, out, state_path(workdir))
    return state


def student_ids(names: list[str], what: str, notes: list[str]) -> dict[str, str]:
    """{folder name: student id}: a usable name is kept, any other is mapped (and a note says so); two names that
    map to one id are told apart by a number (`1+1`, `1+1-2`)."""
    ids = {name: name for name in names if STUDENT_ID.match(name)}
    taken = set(ids.values())
    for name in sorted(set(names) - set(ids)):
        base = usable_student_id(name)
        student, number = base, 2
        while student in taken:
            student = usable_student_id(base, keep=str(number))
            number += 1
        ids[name] = student
        taken.add(student)
        notes.append(
            f"{what} {short(name)} is graded as {student!r} (a student id is letters, digits, . _ @ + -, "
            "starting with a letter or a digit)"
        )
    return ids


def _in_place(source: Path, roster: dict[str, str], notes: list[str]) -> IntakeState:
    """A folder of student folders, read where it is (nothing copied)."""
    folders = [p.name for p in source.iterdir() if p.is_dir() and not p.name.startswith(".")]
    students = {student: folder for folder, student in student_ids(folders, "student folder", notes).items()}
    missing = sorted(set(roster.values()) - set(students))
    if missing:
        notes.append(f"roster: {len(missing)} student(s) submitted nothing: {', '.join(missing)}")
    students.update({student: "" for student in missing})
    return IntakeState(
        source=source, source_sha256="", folder=source, students=dict(sorted(students.items())), notes=notes
    )


def _lay_out_export(
    source: Path,
    target: Path,
    released: list[str],
    roster: dict[str, str],
    roster_path: Path | None,
    notes: list[str],
) -> IntakeState:
    """A zip (of student folders, or Canvas's or Moodle's), or an unzipped LMS folder, unpacked into `target`."""
    entries = zip_entries(source) if source.is_file() else folder_entries(source, MOODLE)
    if source.is_dir():  # an unzipped export: a plain student folder beside its files is not read; say so
        notes += [
            f"refused folder {short(folder.name)}: a folder that is not Moodle's, beside an LMS export's files and "
            "folders, is not read (grade a folder of student folders on its own)"
            for folder in sorted(source.iterdir())
            if folder.is_dir() and not folder.name.startswith(".") and not MOODLE.match(folder.name)
        ]
    uploads: list[Upload] = []
    lms_ids: dict[str, str] = {}
    folder_ids = student_ids(
        sorted(
            {
                e.path.parts[-2]
                for e in entries
                if len(e.path.parts) >= 2 and not MOODLE.match(e.path.parts[0]) and not climbs_out(e.path)
            }
        ),
        "student folder",
        notes,
    )
    owners = _Owners({student: f"LMS user {lms_id}" for lms_id, student in roster.items()})
    for entry in entries:
        if climbs_out(entry.path):  # nobody's: never a folder named after a path that climbs out
            notes.append(entry.refused)
            continue
        found = lms_upload(entry, roster)
        if found is not None:
            upload, lms_id = found
            upload.student = owners.claim(upload.student, f"LMS user {lms_id}", lms_id, notes)
            lms_ids[upload.student] = lms_id
        elif len(entry.path.parts) >= 2:  # a zipped folder of student folders: the innermost folder is the student
            folder = entry.path.parts[-2]
            student = folder_ids.get(folder) or usable_student_id(folder)
            upload = _folder_upload(entry, owners.claim(student, f"folder {short(folder)}", "", notes))
        else:
            notes.append(
                f"refused {short(str(entry.path))}: whose is it? Neither in a student's folder nor named by the LMS "
                "(Canvas: name_userid_fileid_file; Moodle: Full Name_participantid_assignsubmission_file_)"
            )
            continue
        uploads.append(upload)
    notebooks: dict[str, NotebookIntake] = {}
    chosen: dict[tuple[str, str], list[Upload]] = {}
    refused: dict[str, list[str]] = {}  # student -> why each file of theirs that is no notebook was not taken
    students = {upload.student for upload in uploads} | set(roster.values())
    for upload in uploads:
        notebook, _ = released_name(upload.uploaded_as, released)
        if notebook is None and upload.data is not None and not upload.refused:
            notebook = recognised(upload.data, released)  # `homework.ipynb` holding exercise 02
        if notebook is None:
            refused.setdefault(upload.student, []).append(
                upload.refused or f"{short(upload.original)} is not a released notebook"
            )
            notes.append(
                f"{upload.student}: {upload.refused}"
                if upload.refused
                else f"{upload.student}: {short(upload.original)} is not a released notebook ({', '.join(released)}); "
                "not graded"
            )
            continue
        chosen.setdefault((upload.student, notebook), []).append(upload)
    times = {roster[lms_id]: when for lms_id, when in roster_times(roster_path).items() if lms_id in roster}
    for student in students:
        (target / student).mkdir()
    for (student, notebook), candidates in sorted(chosen.items()):
        latest, note = choose_latest(candidates, notebook)
        if released_name(latest.uploaded_as, released)[0] is None:
            note = "; ".join((note, recognised_note(notebook)))
        record = NotebookIntake(original=latest.original, late=latest.late, note=note, problem=latest.refused)
        if student in times:
            record.submitted_at, record.time_source = times[student], "Moodle grading worksheet"
        if latest.refused:
            notes.append(f"{student}/{notebook}: {latest.refused}")
        else:
            (target / student / f"{notebook}.ipynb").write_bytes(latest.data or b"")
        notebooks[f"{student}/{notebook}"] = record
    for student in sorted(set(roster.values()) - {u.student for u in uploads}):
        notes.append(f"roster: {student} submitted nothing")
    notes.append(f"Intake: {len(notebooks)} notebook(s) of {len(students)} student(s) from {source.name} into {target}")
    return IntakeState(
        source=source,
        source_sha256="",
        folder=target,
        students={student: student for student in sorted(students)},
        notebooks=notebooks,
        lms_ids=lms_ids,
        notes=notes,
        refused={student: why for student, why in refused.items() if student not in {s for s, _ in chosen}},
    )


class _Owners:
    """Whose each student id of one export is: a roster's LMS user, an LMS user of the export, a student folder.

    Each source makes ids that are distinct among themselves (`distinct_ids`, `student_ids`, `<name>-<LMS id>`),
    but not across sources: a Canvas upload of a user missing from the roster is `<name>-<user id>`, which a
    roster name or a zipped folder may also be. The first owner keeps the id; a later one is told apart (`-<LMS
    id>`, else a number), with a note, so two people are never graded as one."""

    def __init__(self, owners: dict[str, str]) -> None:
        self.owner_of = dict(owners)  # student id -> who it is ("LMS user 12", "folder 'ada'")
        self.id_of = {owner: student for student, owner in owners.items()}

    def claim(self, student: str, owner: str, lms_id: str, notes: list[str]) -> str:
        if owner in self.id_of:
            return self.id_of[owner]
        taken, number = student, 2
        if self.owner_of.get(taken, owner) != owner and lms_id:
            taken = usable_student_id(student, keep=lms_id)
        while self.owner_of.get(taken, owner) != owner:
            taken, number = usable_student_id(student, keep=str(number)), number + 1
        if taken != student:
            notes.append(f"{owner} is graded as {taken!r}: {student!r} is {self.owner_of[student]}")
        self.owner_of[taken], self.id_of[owner] = owner, taken
        return taken


def _folder_upload(entry: Entry, student: str) -> Upload:
    path = entry.path
    order = (0, duplicate_number(PurePosixPath(path.name).stem))
    return Upload(student, str(path), path.name, order, None, entry.data, entry.refused)


def _fresh_target(workdir: Path) -> Path:
    """`<workdir>/intake/submissions`, emptied and created: each intake starts from nothing."""
    target = Path(workdir) / INTAKE_DIR / "submissions"
    if target.exists():
        shutil.rmtree(target)
    target.mkdir(parents=True)
    return target


def _say(notes: list[str], out: TextIO | None, record: Path) -> None:
    """Print the notes, at most PRINTED_NOTES of them (20,000 refused files make one line, not 20,000)."""
    if out is None:
        return
    shown = notes if len(notes) <= PRINTED_NOTES else [*notes[: PRINTED_NOTES - 1], notes[-1]]
    for note in shown[:-1]:
        print(note, file=out, flush=True)
    if len(notes) > PRINTED_NOTES:
        print(f"... and {len(notes) - PRINTED_NOTES:,} more note(s), all in {record}", file=out, flush=True)
    if shown:
        print(shown[-1], file=out, flush=True)
