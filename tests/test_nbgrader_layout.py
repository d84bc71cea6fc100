"""JupyterHub / nbgrader: `grade` reads an nbgrader course directory as nbgrader's own tools leave it, and what it
stores is what nbgrader shows.

The course is made by nbgrader itself: `nbgrader release_assignment` and `nbgrader submit` (one per student, as
students do on the hub) then `nbgrader collect` for one assignment; for another, an LMS download placed in
`downloaded/<assignment>/archive/` and `nbgrader zip_collect` with a `FileNameCollectorPlugin.named_regexp`
(nbgrader's documented way in for files downloaded from an LMS). Both leave
`submitted/<student>/<assignment>/<notebook>.ipynb` and `timestamp.txt`. `autograder grade COURSE --db
sqlite:///COURSE/gradebook.db` grades it; then nbgrader's own API reads the gradebook back (`nbgrader.api.Gradebook`,
and `NbGraderAPI.get_submissions`, what the formgrader's pages show), and `nbgrader export` writes its CSV from it.
"""

from __future__ import annotations

import csv
import os
import subprocess
import sys
import zipfile
from datetime import datetime, timedelta, timezone
from pathlib import Path

import pytest

from autograder.intake.collect import collect
from autograder.intake.uploads import prepare
from conftest import NOTEBOOK
from coursetools.samples import implementations, make_submission, untouched_release, write_submission
from helpers import TOTAL, run_cli

pytestmark = [pytest.mark.grading, pytest.mark.slow]

COURSE_ID = "attention-course"
OTHER = "01_soft_lookup"  # the notebook of the second assignment, collected with zip_collect
RELEASED = [OTHER, NOTEBOOK]
# the times in the LMS download's file names (zip_collect's `timestamp` group), before the deadline of the test
ZIP_TIMES = {
    name: (datetime.now(timezone.utc) - timedelta(days=days)).replace(microsecond=0)
    for name, days in (("dave", 3), ("alice", 2), ("erin", 4))
}


def zip_name(student: str, file: str) -> str:
    return f"{student}_{ZIP_TIMES[student].strftime('%Y%m%dT%H%M%S')}_{file}"


def nbgrader(*args: str, cwd: Path) -> subprocess.CompletedProcess:
    env = dict(os.environ, PATH=str(Path(sys.executable).parent) + os.pathsep + os.environ.get("PATH", ""))
    done = subprocess.run(["nbgrader", *args], cwd=cwd, env=env, capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, f"nbgrader {' '.join(args)}:\n{done.stdout}\n{done.stderr}"
    return done


@pytest.fixture(scope="module")
def course(tmp_path_factory) -> Path:
    """An nbgrader course after `nbgrader collect` (ps1: chapter 02) and `nbgrader zip_collect` (ps2: chapter 01)."""
    root = tmp_path_factory.mktemp("nbgrader")
    course, exchange, home = root / "course", root / "exchange", root / "home"
    (exchange / COURSE_ID / "inbound").mkdir(parents=True)
    (course / "nbgrader_config.py").parent.mkdir()
    (course / "nbgrader_config.py").write_text(
        "c = get_config()\n"
        f"c.CourseDirectory.course_id = {COURSE_ID!r}\n"
        f"c.Exchange.root = {str(exchange)!r}\n"
        # zip_collect: files named <student>_<time>_<notebook> by the LMS download (matched on the whole path)
        r"c.FileNameCollectorPlugin.named_regexp = "
        r"r'.*/(?P<student_id>[a-z]+)_(?P<timestamp>\d{8}T\d{6})_(?P<file_id>.+)'"
        "\n"
    )
    write_submission(untouched_release(NOTEBOOK), course / "release" / "ps1" / f"{NOTEBOOK}.ipynb")
    write_submission(untouched_release(OTHER), course / "release" / "ps2" / f"{OTHER}.ipynb")
    nbgrader("release_assignment", "ps1", cwd=course)
    wrong = next(i for i in implementations(NOTEBOOK, "wrong") if i.name == "mask_after_softmax")
    for student, nb in (
        ("alice", make_submission(NOTEBOOK)),
        ("bob", make_submission(NOTEBOOK, wrong.cells)),
        ("carol", untouched_release(NOTEBOOK)),
    ):
        work = home / student
        write_submission(nb, work / "ps1" / f"{NOTEBOOK}.ipynb")
        nbgrader(
            "submit", "ps1", f"--student={student}", f"--course={COURSE_ID}", f"--Exchange.root={exchange}", cwd=work
        )
    nbgrader("collect", "ps1", cwd=course)
    archive = course / "downloaded" / "ps2" / "archive" / "lms-download.zip"
    archive.parent.mkdir(parents=True)
    with zipfile.ZipFile(archive, "w") as zf:
        zf.writestr(zip_name("dave", f"{OTHER}.ipynb"), nbformat_bytes(make_submission(OTHER)))
        zf.writestr(zip_name("alice", f"{OTHER}.ipynb"), nbformat_bytes(untouched_release(OTHER)))
        zf.writestr(zip_name("erin", "homework.ipynb"), nbformat_bytes(make_submission(OTHER)))  # renamed
    nbgrader("zip_collect", "ps2", cwd=course)
    return course


def nbformat_bytes(nb) -> bytes:
    import nbformat

    return nbformat.writes(nb).encode()


def test_nbgraders_layout_is_read_as_it_comes(course, tmp_path):
    submitted = course / "submitted"
    assert sorted(p.relative_to(submitted).as_posix() for p in submitted.glob("*/*/*.ipynb")) == [
        f"alice/ps1/{NOTEBOOK}.ipynb",
        f"alice/ps2/{OTHER}.ipynb",
        f"bob/ps1/{NOTEBOOK}.ipynb",
        f"carol/ps1/{NOTEBOOK}.ipynb",
        f"dave/ps2/{OTHER}.ipynb",
        "erin/ps2/homework.ipynb",
    ], "nbgrader's own tools wrote this layout"
    for source in (course, submitted):  # the course directory, or its submitted/ folder
        intake = prepare(source, tmp_path / "work", RELEASED)
        assert intake.nbgrader is not None
        assert intake.nbgrader.assignments == {NOTEBOOK: "ps1", OTHER: "ps2"}
        assert intake.nbgrader.course == str(course.resolve())
        subs = {(s.student, s.notebook): s for s in collect(intake, RELEASED)}
        # a row for each notebook of each assignment a student handed in (nbgrader's gradebook has no other)
        assert sorted(subs) == [
            ("alice", OTHER),
            ("alice", NOTEBOOK),
            ("bob", NOTEBOOK),
            ("carol", NOTEBOOK),
            ("dave", OTHER),
            ("erin", OTHER),
        ]
        dave = subs[("dave", OTHER)]
        assert dave.lms_time == ZIP_TIMES["dave"].isoformat() and dave.lms_time_source == "nbgrader timestamp.txt"
        stamp = (submitted / "bob" / "ps1" / "timestamp.txt").read_text().strip()  # "2026-... UTC", from collect
        assert datetime.fromisoformat(subs[("bob", NOTEBOOK)].lms_time) == datetime.strptime(
            stamp, "%Y-%m-%d %H:%M:%S.%f %Z"
        ).replace(tzinfo=timezone.utc)
        assert (
            subs[("erin", OTHER)].problem == f"no file named {OTHER}.ipynb in submitted/erin/ps2 (found homework.ipynb)"
        )
        assert subs[("erin", OTHER)].lms_time == ZIP_TIMES["erin"].isoformat()


def test_grades_are_the_ones_nbgrader_shows(course, tmp_path):
    from nbgrader.api import Gradebook
    from nbgrader.apps.api import NbGraderAPI
    from nbgrader.coursedir import CourseDirectory
    from nbgrader.utils import parse_utc
    from traitlets.config import Config

    db = f"sqlite:///{course / 'gradebook.db'}"
    deadline = datetime.now(timezone.utc) - timedelta(hours=1)  # ps1 was submitted minutes ago: 1 day late
    work = tmp_path / "grading"
    graded = run_cli("grade", str(course), "--workdir", str(work), "--db", db, "--deadline", deadline.isoformat())
    assert graded.returncode == 0, graded.stdout + graded.stderr
    assert f"executed notebooks also go to {course.resolve() / 'autograded'}" in graded.stdout
    ours_csv = tmp_path / "grades.csv"
    assert run_cli("export", "--workdir", str(work), "--db", db, "--out", str(ours_csv)).returncode == 0
    with ours_csv.open(newline="") as handle:
        ours = {(row["student"], row["notebook"]): row for row in csv.DictReader(handle)}
    assert float(ours[("alice", NOTEBOOK)]["score"]) == TOTAL and float(ours[("carol", NOTEBOOK)]["score"]) == 0
    assert 0 < float(ours[("bob", NOTEBOOK)]["score"]) < TOTAL
    assert ours[("alice", NOTEBOOK)]["late_days"] == "1" and ours[("dave", OTHER)]["late_days"] == "0"
    assert sorted(ours) == [
        ("alice", OTHER),
        ("alice", NOTEBOOK),
        ("bob", NOTEBOOK),
        ("carol", NOTEBOOK),
        ("dave", OTHER),
        ("erin", OTHER),
    ]
    assignment_of = {NOTEBOOK: "ps1", OTHER: "ps2"}
    pages = run_cli("feedback", str(course), "--workdir", str(work), "--out", str(tmp_path / "feedback"))
    assert pages.returncode == 0, pages.stdout + pages.stderr
    assert sorted(p.relative_to(tmp_path / "feedback").as_posix() for p in (tmp_path / "feedback").rglob("*.html")) == [
        f"{student}/{notebook}.html" for student, notebook in sorted(ours)
    ]

    # nbgrader's Gradebook: assignments named as in the course, per-cell scores, timestamps, late penalties
    with Gradebook(db, COURSE_ID) as gb:
        assert sorted(a.name for a in gb.assignments) == ["ps1", "ps2"]
        assert [n.name for n in gb.find_assignment("ps1").notebooks] == [NOTEBOOK]
        assert gb.find_assignment("ps1").duedate == parse_utc(deadline.isoformat())
        for (student, notebook), row in ours.items():
            sub = gb.find_submission(assignment_of[notebook], student)
            assert sub.score == pytest.approx(float(row["score"])), (student, notebook)
            assert sub.max_score == pytest.approx(float(row["max_score"]))
            stamp = (course / "submitted" / student / assignment_of[notebook] / "timestamp.txt").read_text()
            assert sub.timestamp == parse_utc(stamp.strip()), "the timestamp is nbgrader's own"
            assert sub.score - sub.late_submission_penalty == pytest.approx(float(row["final_score"]))
            nb = gb.find_submission_notebook(notebook, assignment_of[notebook], student)
            cells = {g.name: g.score for g in nb.grades}
            assert {c: f"{v:g}" for c, v in cells.items()} == {c: row[c] for c in cells}

    # what the formgrader shows: NbGraderAPI.get_submissions, autograded (its executed notebook is where
    # `nbgrader autograde` puts it, and the timestamps agree), with our scores
    config = Config()
    config.CourseDirectory.root = str(course)
    config.CourseDirectory.course_id = COURSE_ID
    config.Exchange.root = str(course.parent / "exchange")
    api = NbGraderAPI(coursedir=CourseDirectory(config=config), config=config)
    shown = {s["student"]: s for s in api.get_submissions("ps1")}
    assert sorted(shown) == ["alice", "bob", "carol"]
    for student, submission in shown.items():
        assert submission["autograded"] and submission["submitted"], student
        assert submission["score"] == pytest.approx(float(ours[(student, NOTEBOOK)]["score"]))
    notebooks = {s["student"]: s for s in api.get_notebook_submissions("ps1", NOTEBOOK)}
    assert notebooks["bob"]["score"] == pytest.approx(float(ours[("bob", NOTEBOOK)]["score"]))
    assert (course / "autograded" / "bob" / "ps1" / f"{NOTEBOOK}.ipynb").is_file()
    erin = {s["student"]: s for s in api.get_submissions("ps2")}["erin"]
    assert erin["autograded"] and erin["score"] == 0, "a submission without its notebook: graded, 0, as nbgrader does"

    # `nbgrader export` on our gradebook: its raw_score is our score, its score (less nbgrader's late penalty) our
    # final score
    nbgrader("export", "--to", str(tmp_path / "nbgrader.csv"), cwd=course)
    with (tmp_path / "nbgrader.csv").open(newline="") as handle:
        exported = {(row["student_id"], row["assignment"]): row for row in csv.DictReader(handle)}
    assert len(exported) == 5 * 2, "every student of the gradebook, for both assignments (0 where none)"
    for (student, notebook), row in ours.items():
        theirs = exported[(student, assignment_of[notebook])]
        assert float(theirs["raw_score"]) == pytest.approx(float(row["score"])), (student, notebook)
        assert float(theirs["score"]) == pytest.approx(float(row["final_score"])), (student, notebook)
        assert float(theirs["max_score"]) == pytest.approx(float(row["max_score"]))
