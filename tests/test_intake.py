"""What instructors hand in (autograder/intake/uploads.py and collect): zips, Canvas exports, browser
duplicates, a roster; hostile archives refused with a reason and never extracted outside the work dir.

The last test grades a Canvas-style zip end to end through the CLI.
"""

from __future__ import annotations

import csv
import io
import os
import shutil
import stat
import zipfile
from datetime import datetime, timezone
from pathlib import Path

import nbformat
import pytest

from autograder import config
from autograder.grading.late import Lateness, parse_policy
from autograder.intake.collect import collect
from autograder.intake.lms import read_roster
from autograder.intake.names import released_name
from autograder.intake.uploads import prepare
from conftest import NOTEBOOK
from coursetools.samples import implementations, make_submission, untouched_release
from helpers import POINTS, TOTAL, notebook_bytes, run_cli

RELEASED = ["01_soft_lookup", NOTEBOOK]


def make_zip(path: Path, members: dict[str, bytes], links: dict[str, str] | None = None) -> Path:
    with zipfile.ZipFile(path, "w") as zf:
        for name, data in members.items():
            zf.writestr(name, data)
        for name, target in (links or {}).items():
            info = zipfile.ZipInfo(name)
            info.external_attr = (stat.S_IFLNK | 0o777) << 16
            zf.writestr(info, target)
    return path


@pytest.mark.parametrize(
    "file_name, expected",
    [
        (f"{NOTEBOOK}.ipynb", (NOTEBOOK, False)),
        (f"{NOTEBOOK} (1).ipynb", (NOTEBOOK, True)),
        (f"{NOTEBOOK}-1.ipynb", (NOTEBOOK, True)),
        (f"{NOTEBOOK}-2 (3).ipynb", (NOTEBOOK, True)),
        ("02_Dot_Product_Attention.ipynb", (NOTEBOOK, True)),
        (f"Copy of {NOTEBOOK}.ipynb", (NOTEBOOK, True)),
        ("01_soft_lookup.ipynb", ("01_soft_lookup", False)),
        ("homework.ipynb", (None, False)),
        (f"{NOTEBOOK}.py", (None, False)),
        ("02_dot_product.ipynb", (None, False)),
    ],
)
def test_released_name(file_name, expected):
    assert released_name(file_name, RELEASED) == expected


def test_a_student_folder_beside_a_moodle_folder_is_named_not_dropped(tmp_path):
    """One Moodle-named folder makes a folder an unzipped LMS export, whose plain subfolders are not read: each is
    named in the intake's notes (found grading a class through the CLI: eight students vanished without a word)."""
    source = tmp_path / "class"
    (source / "Ada Lovelace_12345_assignsubmission_file_").mkdir(parents=True)
    (source / "Ada Lovelace_12345_assignsubmission_file_" / f"{NOTEBOOK}.ipynb").write_bytes(notebook_bytes())
    (source / "bob").mkdir()
    (source / "bob" / f"{NOTEBOOK}.ipynb").write_bytes(notebook_bytes())
    intake = prepare(source, tmp_path / "work", RELEASED, out=io.StringIO())
    assert list(intake.students) == ["Ada-Lovelace-12345"]
    assert any(note.startswith("refused folder 'bob':") for note in intake.notes), intake.notes


def test_canvas_zip_is_laid_out_by_student_with_notes(tmp_path):
    late_upload = notebook_bytes(untouched_release(NOTEBOOK))
    archive = make_zip(
        tmp_path / "submissions.zip",
        {
            f"doejohn_12345_67890_{NOTEBOOK}.ipynb": notebook_bytes(),
            f"doejohn_late_12345_67999_{NOTEBOOK}-1.ipynb": late_upload,  # re-uploaded after the due date: wins
            f"roesmith_23456_67001_{NOTEBOOK} (1).ipynb": notebook_bytes(),
            f"lee_34567_67002_{NOTEBOOK}.ipynb": notebook_bytes(),
            f"anon_45678_67003_{NOTEBOOK}.ipynb": notebook_bytes(),
        },
    )
    intake = prepare(archive, tmp_path / "work", RELEASED, out=io.StringIO())
    folder = intake.folder
    assert folder == tmp_path / "work" / "intake" / "submissions"
    assert sorted(p.name for p in folder.iterdir() if p.is_dir()) == [
        "anon-45678",
        "doejohn-12345",
        "lee-34567",
        "roesmith-23456",
    ]
    subs = {s.student: s for s in collect(intake, [NOTEBOOK])}
    john = subs["doejohn-12345"]
    assert john.path.read_bytes() == late_upload, "the latest upload (highest attachment id) is graded"
    assert john.lms_late is True and "latest of 2 uploads" in john.note and f"{NOTEBOOK}-1.ipynb" in john.note
    assert (
        subs["roesmith-23456"].note == f"submitted as '{NOTEBOOK} (1).ipynb'" and subs["roesmith-23456"].problem is None
    )
    assert subs["lee-34567"].note == "" and subs["lee-34567"].lms_late is False
    # preparing again gives the same folder, byte for byte
    before = {p.relative_to(folder): p.read_bytes() for p in folder.rglob("*") if p.is_file()}
    prepare(archive, tmp_path / "work", RELEASED)
    assert {p.relative_to(folder): p.read_bytes() for p in folder.rglob("*") if p.is_file()} == before


def test_hostile_and_odd_archive_members_are_refused_with_a_reason(tmp_path, monkeypatch):
    monkeypatch.setattr(config, "MAX_SUBMISSION_BYTES", 200_000)
    work = tmp_path / "work"
    archive = make_zip(
        tmp_path / "evil.zip",
        {
            "../escaped.ipynb": notebook_bytes(),
            f"../../doejohn_12345_1_{NOTEBOOK}.ipynb": notebook_bytes(),
            "/tmp/absolute.ipynb": notebook_bytes(),
            "C:/Users/x/drive.ipynb": notebook_bytes(),
            f"doejane_777_2_{NOTEBOOK}.zip": make_zip(
                tmp_path / "inner.zip", {f"{NOTEBOOK}.ipynb": notebook_bytes()}
            ).read_bytes(),
            "doejane_777_3_notes.txt": b"my notes",
            f"bigfile_888_4_{NOTEBOOK}.ipynb": b'{"cells": []' + b" " * 300_000 + b"}",
            "homework.ipynb": notebook_bytes(),
            f"__MACOSX/._doejane_777_5_{NOTEBOOK}.ipynb": b"resource fork",
        },
        links={f"linker_999_6_{NOTEBOOK}.ipynb": "/etc/passwd"},
    )
    out = io.StringIO()
    intake = prepare(archive, work, RELEASED, out=out)
    said = out.getvalue()
    assert "'../escaped.ipynb': its path leaves the submissions folder" in said
    assert "'/tmp/absolute.ipynb': its path leaves the submissions folder" in said
    assert "'C:/Users/x/drive.ipynb': its path leaves the submissions folder" in said
    assert "archives inside the archive are not opened" in said
    assert "'doejane_777_3_notes.txt': not a Jupyter notebook" in said
    assert "over the limit of 0.190735 MiB" in said or "over the limit" in said
    assert "a link, not a file" in said
    assert "'homework.ipynb': whose is it?" in said
    written = sorted(str(p.relative_to(tmp_path)) for p in tmp_path.rglob("*") if p.is_file())
    assert written == ["evil.zip", "inner.zip", "work/intake/state.json"], written
    # a student whose only notebook was refused still gets a row, with the reason
    subs = {s.student: s for s in collect(intake, [NOTEBOOK])}
    assert "over the limit" in subs["bigfile-888"].problem and subs["bigfile-888"].path is None
    assert "a link, not a file" in subs["linker-999"].problem
    assert "no file named" in subs["doejane-777"].problem


def test_not_a_zip_is_a_clear_error(tmp_path):
    fake = tmp_path / "submissions.zip"
    fake.write_text("not a zip")
    with pytest.raises(ValueError, match="not a readable zip file"):
        prepare(fake, tmp_path / "work", RELEASED)


def test_roster_names_the_students_and_lists_who_submitted_nothing(tmp_path):
    roster = tmp_path / "roster.csv"
    roster.write_text("id,student\n12345,jdoe\n23456,asmith\n99999,absent\n")
    archive = make_zip(
        tmp_path / "s.zip",
        {f"doejohn_12345_1_{NOTEBOOK}.ipynb": notebook_bytes(), f"smithann_23456_2_{NOTEBOOK}.ipynb": notebook_bytes()},
    )
    out = io.StringIO()
    intake = prepare(archive, tmp_path / "work", RELEASED, roster, out)
    subs = {s.student: s for s in collect(intake, [NOTEBOOK])}
    assert sorted(subs) == ["absent", "asmith", "jdoe"]
    assert subs["absent"].problem == f"no file named {NOTEBOOK}.ipynb was submitted"
    assert "roster: absent submitted nothing" in out.getvalue()
    # Canvas's gradebook export as the roster: ID and SIS Login ID, and a "Points Possible" row
    canvas = tmp_path / "gradebook.csv"
    canvas.write_text(
        'Student,ID,SIS User ID,SIS Login ID,Section\n    Points Possible,,,,\n"Doe, John",12345,s1,jdoe,A\n'
    )
    assert read_roster(canvas) == {"12345": "jdoe"}
    bad = tmp_path / "bad.csv"
    bad.write_text("name,email\nx,y\n")
    with pytest.raises(ValueError, match="needs the columns id and student"):
        read_roster(bad)


WRONG_NAME = (
    f"no file named {NOTEBOOK}.ipynb (found homework.ipynb, holding no released notebook's cells); notebooks must "
    "keep their released name"
)


def test_student_folders_with_browser_duplicates(tmp_path):
    subs_dir = tmp_path / "subs"
    (subs_dir / "ann").mkdir(parents=True)
    older = subs_dir / "ann" / f"{NOTEBOOK}.ipynb"
    older.write_bytes(notebook_bytes(untouched_release(NOTEBOOK)))
    newer = subs_dir / "ann" / f"{NOTEBOOK} (1).ipynb"
    newer.write_bytes(notebook_bytes())
    os.utime(older, (1_700_000_000, 1_700_000_000))
    os.utime(newer, (1_700_000_100, 1_700_000_100))
    (subs_dir / "bob").mkdir()
    (subs_dir / "bob" / "homework.ipynb").write_bytes(notebook_bytes(nbformat.v4.new_notebook()))  # no exercise's
    (subs_dir / "dee").mkdir()
    (subs_dir / "dee" / "homework.ipynb").write_bytes(notebook_bytes())  # exercise 02, renamed: its cells say so
    assert prepare(subs_dir, tmp_path / "work", RELEASED).folder == subs_dir, (
        "a folder of student folders is used in place"
    )
    subs = {s.student: s for s in collect(subs_dir, [NOTEBOOK])}
    assert subs["ann"].path == newer and "latest of 2 files" in subs["ann"].note
    assert subs["bob"].problem == WRONG_NAME
    assert subs["dee"].problem is None and subs["dee"].path == subs_dir / "dee" / "homework.ipynb"
    assert f"recognised as {NOTEBOOK} by its cells" in subs["dee"].note
    # graded for two notebooks: a file of the other notebook is graded as that one, not offered as a misnamed copy
    (subs_dir / "bob" / "01_soft_lookup.ipynb").write_bytes(notebook_bytes(untouched_release("01_soft_lookup")))
    (subs_dir / "cy").mkdir()
    (subs_dir / "cy" / "01_soft_lookup.ipynb").write_bytes(notebook_bytes(untouched_release("01_soft_lookup")))
    both = {(s.student, s.notebook): s for s in collect(subs_dir, RELEASED)}
    assert both[("cy", NOTEBOOK)].problem == f"no file named {NOTEBOOK}.ipynb was submitted"
    assert both[("cy", "01_soft_lookup")].problem is None
    assert both[("bob", NOTEBOOK)].problem == WRONG_NAME
    assert both[("dee", "01_soft_lookup")].problem == "no file named 01_soft_lookup.ipynb was submitted"


def test_lms_late_mark_stands_in_for_a_missing_time():
    deadline = datetime(2026, 12, 1, 23, 59, tzinfo=timezone.utc)
    lateness = Lateness(deadline, parse_policy("10%/day, max 3 days"))
    record, warnings = lateness.assess("jdoe", NOTEBOOK, None, 10, lms_late=True)
    assert (record.late_days, record.penalty, record.final_score) == (1, 0.1, 9.0)
    assert record.source == "LMS export: marked late" and "give --timestamps" in warnings[0]
    record, warnings = lateness.assess("jdoe", NOTEBOOK, None, 10, lms_late=False)
    assert (record.late_days, record.final_score, warnings) == (0, 10, [])
    with_csv = Lateness(
        deadline, parse_policy("10%/day, max 3 days"), {("jdoe", None): datetime(2026, 12, 4, 12, tzinfo=timezone.utc)}
    )
    record, _ = with_csv.assess("jdoe", NOTEBOOK, None, 10, lms_late=True)
    assert (record.late_days, record.source) == (3, "timestamps CSV"), "a real time beats the mark"


@pytest.mark.grading
def test_grade_a_canvas_zip_end_to_end(tmp_path):
    wrong = next(i for i in implementations(NOTEBOOK, "wrong") if i.name == "mask_after_softmax")
    other = implementations(NOTEBOOK, "correct")[1]
    archive = make_zip(
        tmp_path / "canvas.zip",
        {
            f"doejohn_12345_67890_{NOTEBOOK}.ipynb": notebook_bytes(untouched_release(NOTEBOOK)),
            f"doejohn_late_12345_67999_{NOTEBOOK}-1.ipynb": notebook_bytes(),
            f"roesmith_23456_67001_{NOTEBOOK} (1).ipynb": notebook_bytes(make_submission(NOTEBOOK, other.cells)),
            f"leeann_34567_67002_{NOTEBOOK}.ipynb": notebook_bytes(make_submission(NOTEBOOK, wrong.cells)),
            "../../escape.ipynb": notebook_bytes(),
        },
    )
    work = tmp_path / "grading"
    graded = run_cli("grade", str(archive), "--workdir", str(work), "--deadline", "2026-12-01T23:59Z")
    assert graded.returncode == 0, graded.stdout + graded.stderr
    assert "refused '../../escape.ipynb'" in graded.stdout
    assert not (tmp_path.parent / "escape.ipynb").exists() and not (work.parent / "escape.ipynb").exists()
    out_csv = tmp_path / "grades.csv"
    assert run_cli("export", "--workdir", str(work), "--out", str(out_csv)).returncode == 0
    with out_csv.open(newline="") as handle:
        rows = {row["student"]: row for row in csv.DictReader(handle)}
    assert sorted(rows) == ["doejohn-12345", "leeann-34567", "roesmith-23456"]
    john, ann, smith = rows["doejohn-12345"], rows["leeann-34567"], rows["roesmith-23456"]
    assert float(john["score"]) == TOTAL and "latest of 2 uploads" in john["repairs"]
    assert (john["late_days"], john["penalty"], float(john["final_score"])) == ("1", "0.1", round(TOTAL * 0.9, 4))
    assert float(smith["score"]) == TOTAL and "submitted as" in smith["repairs"] and smith["late_days"] == "0"
    assert float(ann["score"]) < TOTAL and ann["late_days"] == "0"
    # feedback accepts the same zip and writes a page per student
    feedback = run_cli("feedback", str(archive), "--workdir", str(work), "--out", str(tmp_path / "feedback"))
    assert feedback.returncode == 0, feedback.stderr
    assert sorted(p.name for p in (tmp_path / "feedback").iterdir()) == sorted(rows)
    assert set(POINTS) <= set(john)
    # the same gradebook in Canvas's import layout: the header Canvas's importer accepts, its
    # "Points Possible" row, one column per notebook holding the score after the late penalty
    canvas_csv = tmp_path / "canvas.csv"
    exported = run_cli(
        "export",
        "--workdir",
        str(work),
        "--out",
        str(canvas_csv),
        "--format",
        "canvas",
        "--assignment-id",
        f"{NOTEBOOK}=4242",
    )
    assert exported.returncode == 0, exported.stdout + exported.stderr
    assert "Wrote 3 student(s)" in exported.stdout and "without a Canvas user id" not in exported.stdout
    table = list(csv.reader(canvas_csv.open(newline="")))
    assert canvas_header_accepted(table[0])
    assert table[0][5:] == [f"{NOTEBOOK} (4242)"]
    assert table[1] == ["Points Possible", "", "", "", "", f"{TOTAL:g}"]
    by_id = {row[1]: row for row in table[2:]}
    assert sorted(by_id) == ["12345", "23456", "34567"]
    assert float(by_id["12345"][5]) == round(TOTAL * 0.9, 4)  # late: the penalised score goes to Canvas
    assert float(by_id["23456"][5]) == TOTAL and float(by_id["34567"][5]) == float(ann["score"])
    wrong_flag = run_cli("export", "--workdir", str(work), "--out", str(canvas_csv), "--assignment-id", "x=1")
    assert wrong_flag.returncode == 2 and "go with --format canvas" in wrong_flag.stderr


def canvas_header_accepted(row: list[str]) -> bool:
    """Canvas's own header check (canvas-lms lib/gradebook_importer.rb: row_has_student_headers?,
    update_column_count and the 'Section' test), transcribed: Student, ID, then the optional SIS
    User ID + SIS Login ID pair, and the last student column must be Section."""
    if not (len(row) > 3 and "Student" in row[0] and "ID" in row[1]):
        return False
    columns = 3
    if "SIS Login ID" in row[2]:
        columns += 1
    elif "SIS User ID" in row[2] and "SIS Login ID" in row[3]:
        columns += 2
    return "Section" in row[columns - 1]


def test_canvas_export_takes_ids_from_the_roster_and_warns_without_them(tmp_path):
    from autograder.model.notebooks import read, source_notebook
    from autograder.model.records import CellResult, Result
    from autograder.reporting.export import canvas_rows
    from autograder.store.gradebook import Writer

    work = tmp_path / "grading"
    with Writer(work) as writer:
        writer.register_notebook(NOTEBOOK, read(source_notebook(NOTEBOOK)))
        for student, points in (("jdoe", 1.0), ("asmith", 0.0)):
            writer.record(
                Result(
                    student,
                    NOTEBOOK,
                    points,
                    TOTAL,
                    [CellResult(next(iter(POINTS)), points, POINTS[next(iter(POINTS))])],
                )
            )
    roster = tmp_path / "gradebook.csv"
    roster.write_text(
        'Student,ID,SIS User ID,SIS Login ID,Section\n    Points Possible,,,,\n"Doe, John",12345,s1,jdoe,A\n'
    )
    table, warnings = canvas_rows(work, roster=roster)
    assert canvas_header_accepted(table[0]) and table[0][5:] == [NOTEBOOK]
    assert not canvas_header_accepted(["student", "notebook", "score", "max_score"])  # our plain CSV's header
    assert not canvas_header_accepted(["Student", "ID", "SIS User ID", "SIS Login ID", "Notes"])
    assert {row[0]: row[1] for row in table[2:]} == {"jdoe": "12345", "asmith": ""}
    assert any("1 student(s) without a Canvas user id (asmith)" in w for w in warnings)
    assert any("no --assignment-id" in w for w in warnings)
    with pytest.raises(ValueError, match="not in the gradebook"):
        canvas_rows(work, assignment_ids={"03_masked_attention": "7"})


def test_one_file_costs_only_its_own_submission(tmp_path):
    """Each step of the intake (reading, unzipping, decoding, naming) fails one submission with its reason, never
    the run: before, each of these raised out of `grade` (RecursionError, BadZipFile, "rename '+1+1'")."""
    folder = tmp_path / "subs"
    files = {
        "ada": notebook_bytes(),
        "deep": b"[" * 100_000 + b"]" * 100_000,
        "+1+1": notebook_bytes(),
        "1+1": notebook_bytes(),  # the name +1+1 maps to is taken: told apart by a number
        "big": b" " * (config.MAX_SUBMISSION_BYTES + 1),
    }
    for student, data in files.items():
        (folder / student).mkdir(parents=True)
        (folder / student / f"{NOTEBOOK}.ipynb").write_bytes(data)
    out = io.StringIO()
    intake = prepare(folder, tmp_path / "work", RELEASED, out=out)
    assert intake.folder == folder, "a folder of student folders is read in place"
    assert "student folder '+1+1' is graded as '1+1-2'" in out.getvalue()
    subs = {s.student: s for s in collect(intake, [NOTEBOOK])}
    assert sorted(subs) == ["1+1", "1+1-2", "ada", "big", "deep"]
    assert subs["1+1-2"].problem is None and subs["1+1-2"].path == folder / "+1+1" / f"{NOTEBOOK}.ipynb"
    assert subs["ada"].problem is None and subs["1+1"].problem is None
    assert "nests its JSON more than 100 levels deep" in subs["deep"].problem
    assert "over the limit of 20 MiB" in subs["big"].problem and subs["big"].sha256 == "", "refused unread"
    # a zip: one member's bytes damaged, one whose header lies about its CRC
    archive = make_zip(
        tmp_path / "s.zip", {f"ada/{NOTEBOOK}.ipynb": notebook_bytes(), f"eve/{NOTEBOOK}.ipynb": notebook_bytes()}
    )
    raw = bytearray(archive.read_bytes())
    at = raw.find(b'"cells"', raw.find(b"eve/"))
    raw[at + 2] ^= 0x20
    archive.write_bytes(bytes(raw))
    zipped = {s.student: s for s in collect(prepare(archive, tmp_path / "work2", RELEASED), [NOTEBOOK])}
    assert zipped["ada"].problem is None
    assert "damaged (BadZipFile: Bad CRC-32 for file 'eve/" in zipped["eve"].problem


def test_twenty_thousand_uploads_make_one_short_note(tmp_path):
    members = {f"doejohn_12345_{100_000 + n}_{NOTEBOOK}-{n}.ipynb": b"{}" for n in range(20_000)}
    members[f"doejohn_12345_999999_{NOTEBOOK}.ipynb"] = notebook_bytes()
    out = io.StringIO()
    intake = prepare(make_zip(tmp_path / "s.zip", members), tmp_path / "work", RELEASED, out=out)
    (sub,) = collect(intake, [NOTEBOOK])
    assert sub.note == "20,001 uploads; the latest kept (20,000 earlier ones not graded)"
    assert sub.problem is None and len(out.getvalue()) < 1000


def test_the_intake_record_is_typed_atomic_and_refused_when_corrupt(tmp_path):
    from autograder.intake.state import IntakeStateError, load, state_path

    archive = make_zip(tmp_path / "s.zip", {f"doejohn_12345_1_{NOTEBOOK}.ipynb": notebook_bytes()})
    work = tmp_path / "work"
    laid = prepare(archive, work, RELEASED)
    record = state_path(work)
    assert [p.name for p in record.parent.iterdir() if p.suffix == ".tmp"] == [], "no half-written file is left"
    again = load(work)
    assert again == laid, "what was written reads back as it was"
    assert again.lms_ids == {"doejohn-12345": "12345"} and again.source == archive.resolve()
    again.check_input(archive, "feedback")
    again.check_input(None, "feedback")
    with pytest.raises(IntakeStateError, match=r"feedback was given .*other.zip, but this work dir holds the grading"):
        again.check_input(make_zip(tmp_path / "other.zip", {"x": b""}), "feedback")
    archive.write_bytes(archive.read_bytes() + b"\0")
    with pytest.raises(IntakeStateError, match="changed since it was graded"):
        again.check_input(archive, "feedback")
    # a copied work dir finds its own laid-out folder
    copied = tmp_path / "copy"
    shutil.copytree(work, copied)
    assert load(copied).folder == copied / "intake" / "submissions"
    for corrupt in ("{", "[]", '{"format": 1}', ""):
        record.write_text(corrupt, encoding="utf-8")
        with pytest.raises(IntakeStateError, match="cannot be read|another format"):
            load(work)


def test_a_zip_of_too_many_members_is_refused_before_it_is_read(tmp_path, monkeypatch):
    """The count comes from the zip's end record, before Python parses its directory; the whole export is refused
    (it is the instructor's file: no student's submission is in question yet)."""
    monkeypatch.setattr(config, "MAX_ZIP_MEMBERS", 10)
    small = make_zip(tmp_path / "small.zip", {f"s{n}/{NOTEBOOK}.ipynb": notebook_bytes() for n in range(3)})
    assert len(collect(prepare(small, tmp_path / "work", RELEASED), [NOTEBOOK])) == 3
    many = make_zip(tmp_path / "many.zip", {f"x{n}.ipynb": b"{}" for n in range(11)})
    with pytest.raises(ValueError, match="more than the 10 an export of a class can have"):
        prepare(many, tmp_path / "work", RELEASED)
    lying = bytearray(many.read_bytes())  # an end record that says 1 member: the directory's size still counts
    at = lying.rfind(b"PK\x05\x06")
    lying[at + 8 : at + 12] = b"\x01\x00\x01\x00"
    many.write_bytes(bytes(lying))
    with pytest.raises(ValueError, match="more than the 10"):
        prepare(many, tmp_path / "work", RELEASED)
