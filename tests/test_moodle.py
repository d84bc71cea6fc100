"""Moodle, both ways: its "Download all submissions" zip in (autograder/intake/lms.py), its grading worksheet out
(`export --format moodle`, autograder/reporting/export.py), tested against Moodle's own code, transcribed:

- the zip (mod/assign/locallib.php, download_submissions): one folder per student and submission plugin,
  `clean_filename(str_replace('_', ' ', fullname) . '_' . get_uniqueid_for_user($userid)) . '_' . $subtype . '_'
  . $type . '_'` (Moodle 3.1 and later; the same prefix on flat file names before, or with folders off), a blind
  marking prefix of `Participant`, the onlinetext plugin's `onlinetext.html` next to the file plugin's folder;
- the worksheet (mod/assign/gradingtable.php when downloading, and the offline grading worksheet's importer,
  mod/assign/feedback/offline/importgradeslib.php and locallib.php): the columns it finds by their English
  headers, `Participant <id>` in Identifier, and what makes it skip a row.

The same edge cases as Canvas's (test_intake.py): two students of one name, a late submission (Moodle's zip
has no time: its worksheet, given as the roster, does), a student of the roster who submitted nothing, and
hostile members refused.
"""

from __future__ import annotations

import csv
import io
import zipfile
from datetime import datetime
from pathlib import Path

import pytest

from autograder.intake.collect import collect
from autograder.intake.lms import moodle_time, read_roster, roster_times
from autograder.intake.uploads import prepare
from autograder.model.notebooks import read, secret_lines, source_notebook
from conftest import NOTEBOOK
from coursetools.samples import implementations, make_submission, untouched_release
from helpers import TOTAL, notebook_bytes, run_cli

RELEASED = ["01_soft_lookup", NOTEBOOK]
FILE = "assignsubmission_file_"  # the file submission plugin's folder suffix
ADA, JOHN_A, JOHN_B, GRACE, BLIND, ALAN, ABSENT = (
    "1000001",
    "1000002",
    "1000003",
    "1000004",
    "1000005",
    "1000006",
    "1000009",
)


def moodle_zip(path: Path, members: dict[str, tuple[bytes, tuple]]) -> Path:
    """A zip as Moodle's zip_packer writes one: each member with its own modification time."""
    with zipfile.ZipFile(path, "w") as zf:
        for name, (data, when) in members.items():
            zf.writestr(zipfile.ZipInfo(name, date_time=when), data)
    return path


def class_zip(path: Path) -> Path:
    wrong = next(i for i in implementations(NOTEBOOK, "wrong") if i.name == "mask_after_softmax")
    return moodle_zip(
        path,
        {
            f"Ada Lovelace_{ADA}_{FILE}/{NOTEBOOK}.ipynb": (notebook_bytes(), (2026, 11, 30, 10, 0, 0)),
            # two students named John Smith: their participant ids tell them apart
            f"John Smith_{JOHN_A}_{FILE}/{NOTEBOOK}.ipynb": (
                notebook_bytes(make_submission(NOTEBOOK, wrong.cells)),
                (2026, 12, 3, 9, 0, 0),
            ),
            f"John Smith_{JOHN_B}_{FILE}/{NOTEBOOK}.ipynb": (
                notebook_bytes(untouched_release(NOTEBOOK)),
                (2026, 11, 28, 9, 0, 0),
            ),
            f"John Smith_{JOHN_B}_{FILE}/{NOTEBOOK} (1).ipynb": (
                notebook_bytes(),
                (2026, 11, 29, 9, 0, 0),
            ),  # newer: wins
            # the onlinetext plugin's folder beside the file plugin's: not a notebook
            f"Grace Hopper_{GRACE}_assignsubmission_onlinetext_/onlinetext.html": (
                b"<p>see my notebook</p>",
                (2026, 11, 30, 9, 0, 0),
            ),
            f"Grace Hopper_{GRACE}_{FILE}/{NOTEBOOK}.ipynb": (notebook_bytes(), (2026, 11, 30, 9, 0, 0)),
            f"Participant_{BLIND}_{FILE}/{NOTEBOOK}.ipynb": (
                notebook_bytes(),
                (2026, 11, 30, 9, 0, 0),
            ),  # blind marking
            f"Alan Turing_{ALAN}_{FILE}{NOTEBOOK}.ipynb": (
                notebook_bytes(),
                (2026, 11, 30, 9, 0, 0),
            ),  # before Moodle 3.1
            f"Ada Lovelace_{ADA}_{FILE}/../../escape.ipynb": (notebook_bytes(), (2026, 11, 30, 9, 0, 0)),
            "notes.ipynb": (notebook_bytes(), (2026, 11, 30, 9, 0, 0)),
        },
    )


def worksheet(path: Path, rows: list[tuple[str, str, str, str]]) -> Path:
    """A grading worksheet as Moodle's "Download grading worksheet" writes it (gradingtable.php, downloading, no
    marking workflow): Identifier, Full name, the identity fields (e-mail), Status, Grade, Maximum grade, Grade can
    be changed, Last modified (submission), Last modified (grade), Feedback comments."""
    header = [
        "Identifier",
        "Full name",
        "Email address",
        "Status",
        "Grade",
        "Maximum grade",
        "Grade can be changed",
        "Last modified (submission)",
        "Last modified (grade)",
        "Feedback comments",
    ]
    with path.open("w", newline="", encoding="utf-8") as handle:
        writer = csv.writer(handle)
        writer.writerow(header)
        for participant, name, status, submitted in rows:
            email = name.lower().replace(" ", ".") + f"{participant[-1]}@uni.example"
            writer.writerow(
                [f"Participant {participant}", name, email, status, "", "100.00", "Yes", submitted, "-", ""]
            )
    return path


def class_worksheet(path: Path) -> Path:
    on_time = moodle_time(datetime(2026, 11, 30, 10, 0).astimezone())
    return worksheet(
        path,
        [
            (ADA, "Ada Lovelace", "Submitted for grading", on_time),
            (JOHN_A, "John Smith", "Submitted for grading", moodle_time(datetime(2026, 12, 3, 9, 0).astimezone())),
            (JOHN_B, "John Smith", "Submitted for grading", moodle_time(datetime(2026, 11, 29, 9, 0).astimezone())),
            (GRACE, "Grace Hopper", "Submitted for grading", on_time),
            (BLIND, "Barbara Liskov", "Submitted for grading", on_time),
            (ALAN, "Alan Turing", "Submitted for grading", on_time),
            (ABSENT, "Edsger Dijkstra", "No submission", "-"),
        ],
    )


def test_moodle_zip_is_laid_out_by_participant(tmp_path):
    out = io.StringIO()
    intake = prepare(class_zip(tmp_path / "moodle.zip"), tmp_path / "work", RELEASED, out=out)
    folder = intake.folder
    said = out.getvalue()
    students = sorted(p.name for p in folder.iterdir() if p.is_dir())
    assert students == [
        f"Ada-Lovelace-{ADA}",
        f"Alan-Turing-{ALAN}",
        f"Grace-Hopper-{GRACE}",
        f"John-Smith-{JOHN_A}",
        f"John-Smith-{JOHN_B}",
        f"Participant-{BLIND}",
    ]
    subs = {s.student: s for s in collect(intake, [NOTEBOOK])}
    john = subs[f"John-Smith-{JOHN_B}"]
    assert john.path.read_bytes() == notebook_bytes(), "of one student's files for a notebook, the newest is graded"
    assert "latest of 2 uploads" in john.note and f"submitted as '{NOTEBOOK} (1).ipynb'" in john.note
    assert subs[f"John-Smith-{JOHN_A}"].problem is None and subs[f"Alan-Turing-{ALAN}"].problem is None
    assert "onlinetext.html': not a Jupyter notebook" in said
    assert "escape.ipynb': its path leaves the submissions folder" in said
    assert "'notes.ipynb': whose is it?" in said and "Full Name_participantid_assignsubmission_file_" in said
    assert not (tmp_path / "escape.ipynb").exists() and not (tmp_path / "work" / "escape.ipynb").exists()
    assert all(s.lms_late is None and s.lms_time == "" for s in subs.values()), "Moodle's zip records no time"
    # the unzipped export, as a folder, gives the same intake
    unzipped = tmp_path / "unzipped"
    with zipfile.ZipFile(tmp_path / "moodle.zip") as zf:
        zf.extractall(unzipped, [m for m in zf.namelist() if ".." not in m])
    again = prepare(unzipped, tmp_path / "work2", RELEASED).folder
    assert sorted(p.name for p in again.iterdir() if p.is_dir()) == students


def test_the_grading_worksheet_is_a_roster_with_submission_times(tmp_path):
    sheet = class_worksheet(tmp_path / "worksheet.csv")
    roster = read_roster(sheet)
    assert roster[ADA] == f"Ada-Lovelace-{ADA}" and roster[ABSENT] == f"Edsger-Dijkstra-{ABSENT}"
    assert roster[JOHN_A] != roster[JOHN_B], "two students of one name stay two students"
    times = roster_times(sheet)
    assert ABSENT not in times, "'-': nothing submitted, no time"
    assert datetime.fromisoformat(times[JOHN_A]) == datetime(2026, 12, 3, 9, 0).astimezone()
    out = io.StringIO()
    intake = prepare(class_zip(tmp_path / "moodle.zip"), tmp_path / "work", RELEASED, sheet, out)
    subs = {s.student: s for s in collect(intake, [NOTEBOOK])}
    assert f"roster: Edsger-Dijkstra-{ABSENT} submitted nothing" in out.getvalue()
    assert subs[f"Edsger-Dijkstra-{ABSENT}"].problem == f"no file named {NOTEBOOK}.ipynb was submitted"
    # blind marking: the worksheet names the participant the zip does not
    assert subs[f"Barbara-Liskov-{BLIND}"].problem is None
    assert subs[f"John-Smith-{JOHN_A}"].lms_time == times[JOHN_A]
    assert subs[f"John-Smith-{JOHN_A}"].lms_time_source == "Moodle grading worksheet"
    # a plain roster with two students of one name: each keeps the name with the id appended
    plain = tmp_path / "roster.csv"
    plain.write_text(f"id,student\n{JOHN_A},jsmith\n{JOHN_B},jsmith\n{ADA},ada\n")
    assert read_roster(plain) == {JOHN_A: f"jsmith-{JOHN_A}", JOHN_B: f"jsmith-{JOHN_B}", ADA: "ada"}


def moodle_import(text: str, participants: set[str]) -> dict[str, dict]:
    """What Moodle's worksheet importer takes from a CSV, transcribed from importgradeslib.php (init, next) and
    locallib.php (process_import_grades): the columns are found by their English headers; Identifier, Grade and
    Last modified (grade) must all be there or the import is refused; the participant id is the Identifier after
    strlen("Participant "); a feedback column found at index 0 is ignored (`!empty($details['index'])`); a row
    whose participant is not one of the assignment's is skipped; an empty or negative grade is skipped."""
    rows = list(csv.reader(io.StringIO(text)))
    columns = rows[0]
    index = {name: columns.index(name) for name in ("Identifier", "Grade", "Last modified (grade)") if name in columns}
    if len(index) < 3:
        raise AssertionError(f"Moodle refuses the worksheet (invalidgradeimport): columns {columns}")
    feedback = columns.index("Feedback comments") if "Feedback comments" in columns else 0
    taken = {}
    for row in rows[1:]:
        participant = row[index["Identifier"]][len("Participant ") :]
        if participant not in participants:
            continue
        grade = row[index["Grade"]]
        modified = datetime.strptime(row[index["Last modified (grade)"]], "%A, %d %B %Y, %I:%M %p")  # strtotime
        if grade == "" or float(grade) < 0:
            continue
        taken[participant] = {
            "grade": float(grade),
            "modified": modified,
            "feedback": row[feedback] if feedback else None,
        }
    return taken


@pytest.mark.grading
def test_grade_a_moodle_zip_and_export_the_worksheet(tmp_path):
    archive = class_zip(tmp_path / "moodle.zip")
    sheet = class_worksheet(tmp_path / "worksheet.csv")
    work = tmp_path / "grading"
    graded = run_cli(
        "grade",
        str(archive),
        "--workdir",
        str(work),
        "--roster",
        str(sheet),
        "--deadline",
        datetime(2026, 12, 1, 23, 59).astimezone().isoformat(),
    )
    assert graded.returncode == 0, graded.stdout + graded.stderr
    assert "refused" in graded.stdout and "submitted nothing" in graded.stdout
    plain = tmp_path / "grades.csv"
    assert run_cli("export", "--workdir", str(work), "--out", str(plain)).returncode == 0
    with plain.open(newline="") as handle:
        ours = {row["student"]: row for row in csv.DictReader(handle)}
    john = ours[f"John-Smith-{JOHN_A}"]
    assert (john["late_days"], john["penalty"]) == ("2", "0.2"), "2 days late by the worksheet's time"
    assert ours[f"Ada-Lovelace-{ADA}"]["late_days"] == "0" and float(ours[f"Ada-Lovelace-{ADA}"]["score"]) == TOTAL

    out_csv = tmp_path / "moodle.csv"
    exported = run_cli(
        "export", "--workdir", str(work), "--out", str(out_csv), "--format", "moodle", "--roster", str(sheet)
    )
    assert exported.returncode == 0, exported.stdout + exported.stderr
    assert "Wrote 7 student(s)" in exported.stdout and f"maximum grade in Moodle to {TOTAL:g}" in exported.stdout
    text = out_csv.read_text(encoding="utf-8")
    participants = {ADA, JOHN_A, JOHN_B, GRACE, BLIND, ALAN, ABSENT}
    taken = moodle_import(text, participants)
    assert set(taken) == participants, "every student of the worksheet is matched by Moodle's importer"
    by_student = {f"{row['student']}": row for row in ours.values()}
    for participant, row in taken.items():
        student = next(s for s in by_student if s.endswith(f"-{participant}"))
        assert row["grade"] == float(by_student[student]["final_score"]), student
    assert taken[JOHN_A]["grade"] == round(float(john["score"]) * 0.8, 4), "the penalised score goes to Moodle"
    assert taken[ABSENT]["grade"] == 0 and "no file named" in taken[ABSENT]["feedback"]
    assert "2 day(s) late" in taken[JOHN_A]["feedback"] and "Tests that failed" in taken[JOHN_A]["feedback"]
    assert abs((taken[ADA]["modified"] - datetime.now()).total_seconds()) < 600, "Last modified (grade): now"
    # names and e-mail addresses come from the worksheet; never a line of a hidden test in a comment
    rows = list(csv.DictReader(io.StringIO(text)))
    assert {r["Identifier"]: r["Full name"] for r in rows}[f"Participant {BLIND}"] == "Barbara Liskov"
    for line in secret_lines(read(source_notebook(NOTEBOOK))):
        assert line not in text, line
    # Moodle's importer refuses a file without its required columns, and ignores a feedback column that comes first
    with pytest.raises(AssertionError, match="invalidgradeimport"):
        moodle_import(plain.read_text(), participants)
    first = (
        "Feedback comments,Identifier,Grade,Last modified (grade)\n"
        'ok,Participant 1000001,3,"Tuesday, 1 December 2026, 9:00 AM"\n'
    )
    assert moodle_import(first, participants)[ADA]["feedback"] is None

    wrong = run_cli("export", "--workdir", str(work), "--out", str(out_csv), "--notebook", NOTEBOOK)
    assert wrong.returncode == 2 and "--notebook goes with --format moodle" in wrong.stderr


@pytest.mark.parametrize("length", [95, 96, 150])
def test_long_and_non_ascii_names_keep_their_participant_ids(tmp_path, length):
    """Moodle writes the full name whole (download_submissions): the participant id is read from the whole folder
    name, and a student id cut to its 100 characters loses name, never id; with the worksheet or without it."""
    name = ("Maximiliane Konstantina " * 10)[: length - 1] + "x"
    assert len(name) == length
    members = {
        f"{name}_2101_{FILE}/{NOTEBOOK}.ipynb": (notebook_bytes(), (2026, 11, 30, 9, 0, 0)),
        f"{name}_2102_{FILE}/{NOTEBOOK}.ipynb": (notebook_bytes(untouched_release(NOTEBOOK)), (2026, 11, 30, 9, 0, 0)),
        f"Zoë Ødegård_2103_{FILE}/{NOTEBOOK}.ipynb": (notebook_bytes(), (2026, 11, 30, 9, 0, 0)),
        f"@Mallory_2104_{FILE}/{NOTEBOOK}.ipynb": (notebook_bytes(), (2026, 11, 30, 9, 0, 0)),
        f"王小明_2105_{FILE}/{NOTEBOOK}.ipynb": (notebook_bytes(), (2026, 11, 30, 9, 0, 0)),
    }
    archive = moodle_zip(tmp_path / "moodle.zip", members)
    on_time = moodle_time(datetime(2026, 11, 30, 10, 0).astimezone())
    people = [("2101", name), ("2102", name), ("2103", "Zoë Ødegård"), ("2104", "@Mallory"), ("2105", "王小明")]
    sheet = worksheet(tmp_path / "sheet.csv", [(p, n, "Submitted for grading", on_time) for p, n in people])
    for roster in (None, sheet):
        intake = prepare(archive, tmp_path / "work", RELEASED, roster)
        ids = {pid: student for student, pid in intake.lms_ids.items()}
        assert sorted(ids) == ["2101", "2102", "2103", "2104", "2105"], ids
        assert ids["2101"] != ids["2102"] and ids["2101"].endswith("-2101") and ids["2102"].endswith("-2102")
        assert all(len(student) <= 100 and student.isascii() for student in ids.values())
        assert (ids["2103"], ids["2104"], ids["2105"]) == ("Zoe-degard-2103", "Mallory-2104", "Participant-2105")
        subs = {s.student: s for s in collect(intake, [NOTEBOOK])}
        assert sorted(subs) == sorted(ids.values()) and all(s.problem is None for s in subs.values())
        if roster is not None:
            assert read_roster(roster) == {pid: student for pid, student in ids.items()}, "zip and worksheet agree"
