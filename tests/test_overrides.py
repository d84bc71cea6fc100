"""A cell's points changed by hand in nbgrader's gradebook (what formgrader does: the grade's manual_score) reach
every page (issue 37). Measured before: the export said 12/12, her feedback page 10/12 and the report's mean
ignored it. Now feedback, report and export read the one final score (autograder/reporting/final.py), and
grading again with --force keeps the change."""

from __future__ import annotations

import csv
import html
import re

import pytest

from autograder import config
from autograder.model.notebooks import max_points, read, source_notebook
from coursetools.samples import implementations, make_submission, untouched_release, write_submission
from helpers import TOTAL, run_cli

pytestmark = pytest.mark.grading

NOTEBOOK = "02_dot_product_attention"
CELL = "sdpa_mask"  # the cell grace's mistake (the mask after the softmax) fails


def ok(done):
    assert done.returncode == 0, done.stdout + done.stderr
    return done


@pytest.fixture(scope="module")
def changed(tmp_path_factory):
    """ada right, grace failing CELL, linus the untouched release; then CELL of grace raised by hand to full."""
    from nbgrader.api import Gradebook

    root = tmp_path_factory.mktemp("override")
    subs, work = root / "submissions", root / "grading"
    mistake = next(i for i in implementations(NOTEBOOK, "wrong") if i.name == "mask_after_softmax")
    write_submission(make_submission(NOTEBOOK), subs / "ada" / f"{NOTEBOOK}.ipynb")
    write_submission(make_submission(NOTEBOOK, mistake.cells), subs / "grace" / f"{NOTEBOOK}.ipynb")
    write_submission(untouched_release(NOTEBOOK), subs / "linus" / f"{NOTEBOOK}.ipynb")
    ok(run_cli("grade", str(subs), "--workdir", str(work), "--workers", "2"))
    full = max_points(read(source_notebook(NOTEBOOK)))[CELL]
    with Gradebook(config.gradebook_url(work), course_id=config.COURSE_ID) as gb:
        grade = gb.find_grade(CELL, NOTEBOOK, NOTEBOOK, "grace")
        automatic = grade.auto_score
        grade.manual_score = full
        gb.db.commit()
    assert automatic < full, "grace's mistake should cost this cell its points"
    return root, subs, work, full, automatic


def grace_score(work, root) -> float:
    out = root / "grades.csv"
    ok(run_cli("export", "--workdir", str(work), "--out", str(out)))
    with out.open(newline="", encoding="utf-8") as handle:
        return float(next(r for r in csv.DictReader(handle) if r["student"] == "grace")["score"])


def test_feedback_export_and_report_agree_on_the_changed_score(changed):
    root, _, work, full, automatic = changed
    expected = TOTAL  # the mistake costs this cell only (its catalogue file expects sdpa_mask alone), now given
    assert grace_score(work, root) == expected

    ok(run_cli("feedback", "--workdir", str(work), "--out", str(root / "feedback")))
    page = html.unescape(re.sub(r"<[^>]+>", " ", (root / "feedback" / "grace" / f"{NOTEBOOK}.html").read_text()))
    assert re.search(rf"\b{expected:g} / {TOTAL:g}\s+points", page), page[:2000]
    assert f"points changed by hand in the gradebook: {automatic:g} from the tests, now {full:g}" in page

    ok(run_cli("report", "--workdir", str(work), "--out", str(root / "report")))
    report = html.unescape(re.sub(r"<[^>]+>", " ", (root / "report" / f"{NOTEBOOK}.html").read_text()))
    mean = (TOTAL + expected + 0) / 3  # ada full, grace changed, linus 0
    assert f"mean {mean:.2f} / {TOTAL:g}" in report, report[:3000]


def test_grading_again_keeps_the_change(changed):
    root, subs, work, _, _ = changed
    ok(run_cli("grade", str(subs), "--workdir", str(work), "--student", "grace", "--force"))
    assert grace_score(work, root) == TOTAL
    ok(run_cli("feedback", "--workdir", str(work), "--out", str(root / "again")))
    assert "points changed by hand" in (root / "again" / "grace" / f"{NOTEBOOK}.html").read_text()
