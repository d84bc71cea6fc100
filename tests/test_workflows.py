"""The grading workflows (docs/grading.md), end to end through the CLI, each with the files a hostile student
or a careless LMS hands in (autograder/intake/): grade, feedback, export and report, and what each writes.

- a plain folder of student folders, a zip of one, Canvas's zip with its gradebook as the roster, Moodle's zip
  with (and without) its grading worksheet, an nbgrader course directory;
- in each, files that used to stop the whole run: a notebook nested 100,000 levels deep, zip members whose bytes or
  header lie (size, CRC), folder and participant names that are no usable student id (`+1+1`, `@Mallory`), a
  folder notebook over the 20 MiB limit, a probe handing the judge a 20 MiB string, 20,000 uploads of one notebook,
  two Moodle participants of one long name, non-ASCII names;
- one control student in every run, whose per-cell points must be exactly those it gets when graded alone.

The work dir's intake record (intake/state.json) is what feedback, export, verify and report read: `feedback` on the
input `grade` was given writes a page per graded submission (the Canvas workflow with a roster wrote none),
on another input it says so, and a corrupt record is refused loudly rather than read as nothing.
"""

from __future__ import annotations

import csv
import html
import json
import struct
import subprocess
import zipfile
from datetime import datetime
from pathlib import Path

import pytest

from autograder.intake.lms import moodle_time
from autograder.runner import plain
from autograder.store.gradebook import load_results
from conftest import NOTEBOOK
from coursetools.samples import implementations, make_submission, untouched_release
from helpers import TOTAL, notebook_bytes, run_cli
from test_moodle import moodle_import, worksheet

FILE = "assignsubmission_file_"
CONTROL_CELLS = next(i for i in implementations(NOTEBOOK, "wrong") if i.name == "mask_after_softmax").cells
DEEP = b"[" * 100_000 + b"]" * 100_000  # json: RecursionError while decoding a JSON array
# a softmax right on the visible checks' inputs, and a 20 MiB string where a hidden test's probe hands it to the judge
BIG_STRING = """def softmax(x, dim=-1):
    if tuple(x.shape) == (5, 7):
        return "x" * (20 << 20)
    e = torch.exp(x - x.max(dim=dim, keepdim=True).values)
    return e / e.sum(dim=dim, keepdim=True)
"""
# a full name longer than a student id may be (100 characters): the id was cut, two participants became one
LONG_NAME = "Maximiliane Alexandra Konstantina von Hohenzollern-Sigmaringen und Wittelsbach-Schwarzenberg-Lichtenstein"


def control() -> bytes:
    """The control student's notebook: partly right, so a changed grade shows in its per-cell points."""
    return notebook_bytes(make_submission(NOTEBOOK, CONTROL_CELLS))


def points(work: Path) -> dict[str, dict[str, float]]:
    """{student: {cell: points}} of every graded submission in the work dir."""
    return {r.student: {c.grade_id: c.points for c in r.cells} for r in load_results(work) if r.notebook == NOTEBOOK}


def results(work: Path) -> dict:
    return {r.student: r for r in load_results(work) if r.notebook == NOTEBOOK}


def cli_ok(*args: str) -> subprocess.CompletedProcess:
    done = run_cli(*args)
    assert done.returncode == 0, f"{args}: rc {done.returncode}\n{done.stdout[-3000:]}\n{done.stderr[-3000:]}"
    return done


def grade(source: Path, work: Path, *extra: str) -> subprocess.CompletedProcess:
    return cli_ok("grade", str(source), "--workdir", str(work), "--workers", "2", *extra)


def after_grading(source: Path | None, work: Path, root: Path, *export_extra: str) -> dict[str, dict[str, str]]:
    """feedback, export and report, as docs/grading.md runs them after `grade`; checks each wrote what it says
    and returns the export's rows by student."""
    graded = results(work)
    feedback = root / "feedback"
    given = [str(source)] if source is not None else []
    said = cli_ok("feedback", *given, "--workdir", str(work), "--out", str(feedback))
    pages = sorted(p.relative_to(feedback).as_posix() for p in feedback.rglob("*.html"))
    assert pages == sorted(f"{s}/{NOTEBOOK}.html" for s in graded), said.stdout + said.stderr
    assert f"Wrote {len(graded)} feedback file(s)" in said.stdout and "not graded yet" not in said.stderr
    progress = [line for line in said.stdout.splitlines() if line.startswith("[")]  # issue 37: one line a page
    assert len(progress) == len(graded) and all(line.endswith(".html") for line in progress), said.stdout
    out_csv = root / "grades.csv"
    said = cli_ok("export", "--workdir", str(work), "--out", str(out_csv), *export_extra)
    assert f"[1/1] {NOTEBOOK}: {len(graded)} submission(s) read" in said.stdout, said.stdout  # issue 37
    with out_csv.open(newline="", encoding="utf-8") as handle:
        rows = {row["student"]: row for row in csv.DictReader(handle)}
    assert sorted(rows) == sorted(graded)
    for student, result in graded.items():
        assert float(rows[student]["score"]) == result.score, student
    report = root / "report"
    said = cli_ok("report", "--workdir", str(work), "--out", str(report))
    assert f"[1/1] {report / f'{NOTEBOOK}.html'} ({len(graded)} submission(s))" in said.stdout, said.stdout
    page = (report / f"{NOTEBOOK}.html").read_text(encoding="utf-8")
    assert f"<p>{len(graded)} submission(s), mean " in page
    reasons = page.split("<h2>Submissions not graded normally</h2>", 1)[1].split("<h2>", 1)[0]
    for student, result in graded.items():
        assert (f"<td>{html.escape(student)}</td>" in reasons) == bool(result.reason), student
    return rows


@pytest.fixture(scope="module")
def alone(tmp_path_factory) -> dict[str, float]:
    """The control student's per-cell points, graded alone."""
    root = tmp_path_factory.mktemp("alone")
    (root / "subs" / "ada").mkdir(parents=True)
    (root / "subs" / "ada" / f"{NOTEBOOK}.ipynb").write_bytes(control())
    grade(root / "subs", root / "grading")
    cells = points(root / "grading")["ada"]
    assert 0 < sum(cells.values()) < TOTAL
    return cells


def lie(archive: Path, member: str, field: str, value: int) -> None:
    """Make the zip's two headers of `member` (local and central) say `value` for `field` (crc, size)."""
    data = bytearray(archive.read_bytes())
    name = member.encode()
    local = {"crc": 14, "size": 22}[field]
    central = {"crc": 16, "size": 24}[field]
    for signature, offset, name_at in ((b"PK\x03\x04", local, 30), (b"PK\x01\x02", central, 46)):
        start = 0
        while (start := data.find(signature, start)) >= 0:
            if data[start + name_at : start + name_at + len(name)] == name:
                struct.pack_into("<I", data, start + offset, value)
            start += 4
    archive.write_bytes(bytes(data))


def test_a_folder_of_student_folders(tmp_path, alone):
    subs, work = tmp_path / "subs", tmp_path / "grading"
    for student, data in {
        "ada": control(),
        "deep": DEEP,
        "+1+1": notebook_bytes(),
        "big": notebook_bytes()[:-2] + b', "metadata_x": "' + b"x" * (21 << 20) + b'"}',
        "prober": notebook_bytes(make_submission(NOTEBOOK, {"softmax": BIG_STRING})),
    }.items():
        (subs / student).mkdir(parents=True)
        (subs / student / f"{NOTEBOOK}.ipynb").write_bytes(data)
    graded = grade(subs, work)
    assert "student folder '+1+1' is graded as '1+1'" in graded.stdout
    assert points(work)["ada"] == alone, "the control student is graded as when graded alone"
    found = results(work)
    assert sorted(found) == ["1+1", "ada", "big", "deep", "prober"]
    assert found["1+1"].score == TOTAL, "an unusable folder name is mapped, and graded"
    assert found["deep"].score == 0 and "nests its JSON more than 100 levels deep" in found["deep"].reason
    assert found["big"].score == 0 and "over the limit of 20 MiB" in found["big"].reason, found["big"].reason
    failed = " ".join(c.message for c in found["prober"].cells if not c.passed)
    assert "more than 8 MiB of tensor data, strings and numbers" in failed, failed[:500]
    rows = after_grading(subs, work, tmp_path)
    assert "nests its JSON" in rows["deep"]["reason"]
    # another input than the one graded, a corrupt record: said, loudly
    other = run_cli("feedback", str(tmp_path), "--workdir", str(work), "--out", str(tmp_path / "fb2"))
    assert other.returncode == 2 and f"holds the grading of {subs.resolve()}" in other.stderr, other.stderr
    record = work / "intake" / "state.json"
    record.write_text(record.read_text()[:-20], encoding="utf-8")
    corrupt = run_cli("feedback", "--workdir", str(work), "--out", str(tmp_path / "fb3"))
    assert corrupt.returncode == 2 and "state.json cannot be read" in corrupt.stderr, corrupt.stderr
    assert not (tmp_path / "fb3").exists()


def test_a_zip_of_student_folders(tmp_path, alone):
    archive = tmp_path / "submissions.zip"
    with zipfile.ZipFile(archive, "w") as zf:  # stored: each member's bytes are as written
        zf.writestr(f"ada/{NOTEBOOK}.ipynb", control())
        zf.writestr(f"flipped/{NOTEBOOK}.ipynb", notebook_bytes())
        zf.writestr(f"crc/{NOTEBOOK}.ipynb", notebook_bytes())
        zf.writestr(f"sized/{NOTEBOOK}.ipynb", notebook_bytes(), compress_type=zipfile.ZIP_DEFLATED)
        zf.writestr(f"+1+1/{NOTEBOOK}.ipynb", notebook_bytes())
    data = bytearray(archive.read_bytes())
    at = data.find(b'"cells"', data.find(f"flipped/{NOTEBOOK}".encode()))
    data[at + 2] ^= 0x20  # one byte of the member's data: its CRC no longer matches
    archive.write_bytes(bytes(data))
    lie(archive, f"crc/{NOTEBOOK}.ipynb", "crc", 0x12345678)
    lie(archive, f"sized/{NOTEBOOK}.ipynb", "size", 100)
    work = tmp_path / "grading"
    graded = grade(archive, work)
    assert points(work)["ada"] == alone
    found = results(work)
    assert sorted(found) == ["1+1", "ada", "crc", "flipped", "sized"]
    assert found["1+1"].score == TOTAL
    for student in ("flipped", "crc", "sized"):  # its bytes, its CRC, its size: each lie caught when it is read
        assert found[student].score == 0, student
        assert "damaged (BadZipFile: Bad CRC-32" in found[student].reason, found[student].reason
    assert "refused" in graded.stdout
    after_grading(archive, work, tmp_path)


def test_canvas_with_its_gradebook_as_roster(tmp_path, alone):
    archive = tmp_path / "submissions.zip"
    with zipfile.ZipFile(archive, "w") as zf:
        zf.writestr(f"doejohn_12345_67890_{NOTEBOOK}.ipynb", control())
        for attachment in range(20_000):  # 20,000 uploads of one notebook, the latest a correct one
            zf.writestr(f"smithann_23456_{100_000 + attachment}_{NOTEBOOK}-{attachment}.ipynb", b"{}")
        zf.writestr(f"smithann_23456_200000_{NOTEBOOK}.ipynb", notebook_bytes())
    roster = tmp_path / "gradebook.csv"
    roster.write_text(
        "Student,ID,SIS User ID,SIS Login ID,Section\n    Points Possible,,,,\n"
        '"Doe, John",12345,s1,jdoe,A\n"Smith, Ann",23456,s2,asmith,A\n"Absent, Al",99999,s3,aabsent,A\n'
    )
    work = tmp_path / "grading"
    graded = grade(archive, work, "--roster", str(roster))
    assert len(graded.stdout) < 20_000, "20,000 uploads make a short intake, not a list of their names"
    assert points(work)["jdoe"] == alone
    assert sorted(results(work)) == ["aabsent", "asmith", "jdoe"]
    rows = after_grading(archive, work, tmp_path)  # docs/grading.md's `ag feedback submissions.zip`: no --roster
    assert float(rows["asmith"]["score"]) == TOTAL
    assert "20,001 uploads; the latest kept (20,000 earlier ones not graded)" in rows["asmith"]["repairs"]
    assert len(rows["asmith"]["repairs"]) < 300
    canvas = tmp_path / "canvas.csv"
    cli_ok("export", "--workdir", str(work), "--format", "canvas", "--roster", str(roster), "--out", str(canvas))
    ids = {row[0]: row[1] for row in list(csv.reader(canvas.open(newline="")))[2:]}
    assert ids == {"aabsent": "99999", "asmith": "23456", "jdoe": "12345"}


def moodle_class(tmp_path: Path) -> tuple[Path, Path]:
    """Moodle's zip and worksheet: the control, `@Mallory`, two participants of one long name, non-ASCII names, and
    one who handed in nothing."""
    assert len(LONG_NAME) > 100
    at = (2026, 11, 30, 10, 0, 0)
    archive = tmp_path / "moodle.zip"
    members = {
        f"Ada Lovelace_3001_{FILE}/{NOTEBOOK}.ipynb": control(),
        f"@Mallory_3002_{FILE}/{NOTEBOOK}.ipynb": notebook_bytes(),
        f"{LONG_NAME}_2101_{FILE}/{NOTEBOOK}.ipynb": notebook_bytes(),
        f"{LONG_NAME}_2102_{FILE}/{NOTEBOOK}.ipynb": notebook_bytes(untouched_release(NOTEBOOK)),
        f"Zoë Ødegård_3003_{FILE}/{NOTEBOOK}.ipynb": notebook_bytes(),
        f"王小明_3004_{FILE}/{NOTEBOOK}.ipynb": notebook_bytes(),
    }
    with zipfile.ZipFile(archive, "w") as zf:
        for name, data in members.items():
            zf.writestr(zipfile.ZipInfo(name, date_time=at), data)
    on_time = moodle_time(datetime(2026, 11, 30, 10, 0).astimezone())
    sheet = worksheet(
        tmp_path / "worksheet.csv",
        [
            ("3001", "Ada Lovelace", "Submitted for grading", on_time),
            ("3002", "@Mallory", "Submitted for grading", on_time),
            ("2101", LONG_NAME, "Submitted for grading", on_time),
            ("2102", LONG_NAME, "Submitted for grading", on_time),
            ("3003", "Zoë Ødegård", "Submitted for grading", on_time),
            ("3004", "王小明", "Submitted for grading", on_time),
            ("3009", "Edsger Dijkstra", "No submission", "-"),
        ],
    )
    return archive, sheet


@pytest.mark.parametrize("with_roster", [True, False], ids=["worksheet", "no-roster"])
def test_moodle(tmp_path, alone, with_roster):
    archive, sheet = moodle_class(tmp_path)
    work = tmp_path / "grading"
    roster = ["--roster", str(sheet)] if with_roster else []
    grade(archive, work, *roster)
    assert points(work)["Ada-Lovelace-3001"] == alone
    found = results(work)
    long_a, long_b = (next(s for s in found if s.endswith(f"-{pid}")) for pid in ("2101", "2102"))
    assert long_a != long_b and len(long_a) <= 100 and long_a.startswith("Maximiliane-Alexandra")
    assert (found[long_a].score, found[long_b].score) == (TOTAL, 0), "two students of one long name stay two"
    assert found["Mallory-3002"].score == TOTAL and found["Zoe-degard-3003"].score == TOTAL
    assert found["Participant-3004"].score == TOTAL
    assert ("Edsger-Dijkstra-3009" in found) == with_roster
    after_grading(archive, work, tmp_path)
    out = tmp_path / "worksheet-out.csv"
    cli_ok("export", "--workdir", str(work), "--format", "moodle", *roster, "--out", str(out))
    participants = {"3001", "3002", "2101", "2102", "3003", "3004", "3009"}
    taken = moodle_import(out.read_text(encoding="utf-8"), participants)
    assert taken["2101"]["grade"] == TOTAL and taken["2102"]["grade"] == 0
    assert taken["3001"]["grade"] == sum(alone.values()) and taken["3002"]["grade"] == TOTAL
    assert set(taken) == participants - ({"3009"} if not with_roster else set())


def test_an_nbgrader_course_directory(tmp_path, alone):
    course = tmp_path / "course"
    (course / "nbgrader_config.py").parent.mkdir()
    (course / "nbgrader_config.py").write_text("c = get_config()\n")
    for student, data in {"ada": control(), "+1+1": notebook_bytes(), "deep": DEEP}.items():
        folder = course / "submitted" / student / "ps1"
        folder.mkdir(parents=True)
        (folder / f"{NOTEBOOK}.ipynb").write_bytes(data)
        (folder / "timestamp.txt").write_text("2026-11-30 10:00:00.000000 UTC\n")
    work = tmp_path / "grading"
    db = f"sqlite:///{course / 'gradebook.db'}"
    graded = grade(course, work, "--db", db)
    assert "nbgrader student '+1+1' is graded as '1+1'" in graded.stdout
    assert points(work)["ada"] == alone
    found = results(work)
    assert found["1+1"].score == TOTAL and "nests its JSON" in found["deep"].reason
    after_grading(course, work, tmp_path, "--db", db)
    assert (course / "autograded" / "ada" / "ps1" / f"{NOTEBOOK}.ipynb").is_file()


def test_probe_data_counts_every_kind():
    """The probe's 8 MiB: strings and keys count their bytes, as tensors do; a forged frame is refused in the
    judge's decode too."""
    for value in ("x" * (9 << 20), {"k" * (9 << 20): 1}, ["é" * (5 << 20)], [1.5] * 90_000 + ["y" * (8 << 20)]):
        with pytest.raises(plain.NotPlain, match="more than 8 MiB"):
            plain.encode(value)
    with pytest.raises(plain.NotPlain, match="more than 8 MiB"):
        plain.decode({plain.LIST: ["x" * (9 << 20)]})
    small = {"a": ["é" * 1000, 1, 2.5, None]}
    assert plain.decode(plain.encode(small)) == small
    assert json.loads(json.dumps(plain.encode("é" * (3 << 20)))) is not None  # 6 MiB of UTF-8: within the limit
