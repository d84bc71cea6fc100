"""An instructor's graded class is never lost or silently mixed (issue 39, cases 4 and 5), each case through the CLI:

- ids made from names are distinct by construction: a Canvas roster of `Zoe 12`, `Zoe` and `Zoë` is three
  students, and none of their notebooks is dropped as "an earlier upload";
- `grade` of another input into a work dir holding a graded class is refused (exit 2, naming what it holds) unless
  `--replace` says to start over; the same input again resumes as before;
- two `grade` runs on one work dir: the second is refused, naming who holds the lock;
- a run that did nothing (a zip of zips, 0 students written to a worksheet) exits non-zero with the reason;
- a class that handed in one notebook is graded on that notebook only: a renamed copy is recognised by its cells
  (with a note), an unrecognisable file is one row with the reason, not a zero row for every released notebook;
- Ctrl-C says how to finish (exit 130, no traceback), and the run resumed equals an uninterrupted one.

Grading here runs `--no-sandbox` where isolation is not what is tested (the machine's cores are few); the Ctrl-C
test runs in the sandbox, as an instructor's run does.
"""

from __future__ import annotations

import csv
import subprocess
import zipfile
from pathlib import Path

import pytest

from autograder.intake.lms import read_roster
from autograder.store.gradebook import load_results
from conftest import NOTEBOOK
from coursetools.samples import implementations, make_submission, untouched_release
from helpers import TOTAL, notebook_bytes, run_cli

pytestmark = [pytest.mark.grading]

WRONG = next(i for i in implementations(NOTEBOOK, "wrong") if i.name == "mask_after_softmax").cells


def wrong() -> bytes:
    return notebook_bytes(make_submission(NOTEBOOK, WRONG))


def grade(source: Path, work: Path, *extra: str) -> subprocess.CompletedProcess:
    return run_cli("grade", str(source), "--workdir", str(work), "--workers", "2", "--no-sandbox", *extra)


def scores(work: Path) -> dict[tuple[str, str], float]:
    return {(r.student, r.notebook): r.score for r in load_results(work)}


def said(done: subprocess.CompletedProcess) -> str:
    return f"rc {done.returncode}\n{done.stdout[-4000:]}\n{done.stderr[-4000:]}"


# --- 4. ids made from names -----------------------------------------------------------------------------------


def test_a_roster_of_look_alike_names_is_three_students(tmp_path):
    roster = tmp_path / "gradebook.csv"
    roster.write_text(
        "Student,ID,SIS User ID,Section\n    Points Possible,,,\nZoe 12,11,,A\nZoe,12,,A\nZoë,13,,A\n", encoding="utf-8"
    )
    ids = read_roster(roster)
    assert len(set(ids.values())) == 3, ids
    archive = tmp_path / "canvas.zip"
    with zipfile.ZipFile(archive, "w") as zf:
        zf.writestr(f"zoe_11_1001_{NOTEBOOK}.ipynb", notebook_bytes())  # user 11: correct
        zf.writestr(f"zoe_12_1002_{NOTEBOOK}.ipynb", notebook_bytes(untouched_release(NOTEBOOK)))
        zf.writestr(f"zoe_13_1003_{NOTEBOOK}.ipynb", wrong())
    work = tmp_path / "grading"
    done = grade(archive, work, "--roster", str(roster))
    assert done.returncode == 0, said(done)
    assert "earlier" not in done.stdout and "latest of" not in done.stdout, done.stdout
    graded = {student: score for (student, _), score in scores(work).items()}
    assert sorted(graded) == sorted(ids.values()), graded
    assert graded[ids["11"]] == TOTAL and graded[ids["12"]] == 0 and 0 < graded[ids["13"]] < TOTAL
    canvas = tmp_path / "canvas.csv"
    assert run_cli("export", "--workdir", str(work), "--format", "canvas", "--out", str(canvas)).returncode == 0
    rows = list(csv.reader(canvas.open(newline="", encoding="utf-8")))[2:]
    assert sorted(row[1] for row in rows) == ["11", "12", "13"], "each Canvas user gets their own row back"


def test_a_canvas_user_missing_from_the_roster_is_not_a_roster_student(tmp_path):
    """Every source at once: user 12 is not in the roster; `<name>-<user id>` of their upload is the plain form of
    a roster student's name. Two people, two rows."""
    roster = tmp_path / "roster.csv"
    roster.write_text("id,student\n11,zoe-12\n", encoding="utf-8")
    archive = tmp_path / "canvas.zip"
    with zipfile.ZipFile(archive, "w") as zf:
        zf.writestr(f"zoe_11_1001_{NOTEBOOK}.ipynb", notebook_bytes())
        zf.writestr(f"zoe_12_1002_{NOTEBOOK}.ipynb", notebook_bytes(untouched_release(NOTEBOOK)))
    work = tmp_path / "grading"
    done = grade(archive, work, "--roster", str(roster))
    assert done.returncode == 0, said(done)
    graded = {student: score for (student, _), score in scores(work).items()}
    assert len(graded) == 2 and graded["zoe-12"] == TOTAL, graded
    assert "LMS user 12 is graded as" in done.stdout, done.stdout
