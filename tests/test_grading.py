"""The instructor's path, through the CLI: grade a class, export the gradebook, hand back feedback.

The demo class (coursetools.samples.write_demo_class) has one student per outcome:
ada (reference solution), grace (one realistic mistake), linus (the untouched release),
barbara (a truncated upload), edsger (an empty file), alan (a correct notebook a browser saved as
"<name> (1).ipynb": graded, with a note).
"""

from __future__ import annotations

import csv
import html
import io
import re

import pytest

from autograder import config
from autograder.model.notebooks import read, secret_lines, source_notebook
from conftest import NOTEBOOK
from coursetools.samples import implementations, make_submission, untouched_release, write_demo_class, write_submission
from helpers import POINTS, TOTAL, export, run_cli

pytestmark = pytest.mark.grading


@pytest.fixture(scope="module")
def demo(tmp_path_factory):
    root = tmp_path_factory.mktemp("demo")
    subs, work = root / "submissions", root / "grading"
    write_demo_class(subs)
    # grace: a mistake only the hidden tests see (one mask for the whole batch)
    mistake = next(i for i in implementations(NOTEBOOK, "wrong") if i.name == "mask_first_sequence_only")
    write_submission(make_submission(NOTEBOOK, mistake.cells), subs / "grace" / f"{NOTEBOOK}.ipynb")
    graded = run_cli("grade", str(subs), "--workdir", str(work))
    assert graded.returncode == 0, graded.stdout + graded.stderr
    return root, subs, work, graded.stdout


def test_a_dry_run_over_the_graded_class_would_skip_it_all_and_changes_nothing(demo):
    """Issue 37: `grade --dry-run` says what is already graded and unchanged, and writes nothing."""
    _, subs, work, _ = demo
    before = {
        p: p.read_bytes()
        for p in sorted(work.rglob("*"))
        if p.is_file() and "intake" not in p.parts and p.name != ".grade.lock"
    }
    done = run_cli("grade", str(subs), "--workdir", str(work), "--dry-run")
    assert done.returncode == 0, done.stdout + done.stderr
    assert "Dry run: 0 would be graded, 6 already graded and unchanged" in done.stdout, done.stdout
    assert done.stdout.count("skip: graded, unchanged") == 6
    after = {
        p: p.read_bytes()
        for p in sorted(work.rglob("*"))
        if p.is_file() and "intake" not in p.parts and p.name != ".grade.lock"
    }
    assert after == before, "a dry run changed the work dir"
    forced = run_cli("grade", str(subs), "--workdir", str(work), "--dry-run", "--force", "--student", "ada")
    assert "Dry run: 1 would be graded" in forced.stdout and "--force grades it again" in forced.stdout, forced.stdout


def test_grade_shows_progress_and_a_summary(demo):
    _, _, _, out = demo
    assert "[1/6]" in out and "[6/6]" in out
    # issue 37: what was found is said before the first result, and the rest's time once three are done
    found = re.search(r"Found (\d+) notebook file\(s\) from (\d+) of (\d+) student\(s\)", out)
    assert found and out.index(found.group(0)) < out.index("[1/6]"), out
    assert int(found.group(3)) == 6, found.group(0)
    assert re.search(r"\[3/6\].*\[about \d+", out) and not re.search(r"\[6/6\].*\[about", out), out
    summary = out.split("Summary", 1)[1]
    assert "ada" in summary and "all tests passed" in summary
    assert "the submitted file is empty" in summary
    assert "not valid JSON" in summary
    assert "file: submitted as '02_dot_product_attention (1).ipynb'" in summary.split("alan", 1)[1].split("\n", 1)[0]


def test_export_csv_cell_by_cell(demo):
    root, _, work, _ = demo
    out_csv = root / "grades.csv"
    exported = run_cli("export", "--workdir", str(work), "--out", str(out_csv))
    assert exported.returncode == 0, exported.stderr
    with out_csv.open(newline="") as handle:
        reader = csv.DictReader(handle)
        header = reader.fieldnames
        rows = {row["student"]: row for row in reader}
    assert header == ["student", "notebook", "score", "max_score", *POINTS, "reason", "repairs", "copied_from"]
    assert sorted(rows) == ["ada", "alan", "barbara", "edsger", "grace", "linus"]
    expected_cells = {
        "ada": dict(POINTS),
        "grace": {**POINTS, "sdpa_mask": 0},
        "linus": {c: 0 for c in POINTS},
        "barbara": {c: 0 for c in POINTS},
        "edsger": {c: 0 for c in POINTS},
        "alan": dict(POINTS),
    }
    for student, cells in expected_cells.items():
        row = rows[student]
        assert row["notebook"] == NOTEBOOK
        assert float(row["max_score"]) == TOTAL
        for cell, points in cells.items():
            assert float(row[cell]) == points, f"{student} {cell}: {row[cell]} != {points}"
        assert float(row["score"]) == sum(cells.values()), student
    assert rows["ada"]["reason"] == rows["grace"]["reason"] == rows["linus"]["reason"] == ""
    assert "not valid JSON" in rows["barbara"]["reason"]
    assert rows["edsger"]["reason"] == "the submitted file is empty"
    assert (
        rows["alan"]["reason"] == "" and "submitted as '02_dot_product_attention (1).ipynb'" in rows["alan"]["repairs"]
    )


def test_feedback_never_contains_hidden_tests_but_says_what_failed(demo):
    root, subs, work, _ = demo
    out = root / "feedback"
    made = run_cli("feedback", str(subs), "--workdir", str(work), "--out", str(out))
    assert made.returncode == 0, made.stderr
    hidden = secret_lines(read(source_notebook(NOTEBOOK)))
    assert len(hidden) > 50
    for student in ["ada", "alan", "barbara", "edsger", "grace", "linus"]:
        page = html.unescape((out / student / f"{NOTEBOOK}.html").read_text())
        leaked = [line for line in hidden if line in page]
        assert not leaked, f"{student}'s feedback shows hidden test source: {leaked[:3]}"
        assert "BEGIN HIDDEN TESTS" not in page
    grace = html.unescape((out / "grace" / f"{NOTEBOOK}.html").read_text())
    assert "weights where mask is True must be positive" in grace  # the failed property, in words
    assert f"{TOTAL - POINTS['sdpa_mask']:g} / {TOTAL:g}" in grace
    linus = html.unescape((out / "linus" / f"{NOTEBOOK}.html").read_text())
    assert "NotImplementedError" in linus and f"0 / {TOTAL:g}" in linus
    assert "the submitted file is empty" in html.unescape((out / "edsger" / f"{NOTEBOOK}.html").read_text())


def test_grading_again_reuses_results_and_forced_regrading_gives_the_same_scores(demo):
    _, subs, work, first = demo
    again = run_cli("grade", str(subs), "--workdir", str(work))
    assert "Grading 0 submission(s) of 6 (6 already graded and unchanged)" in again.stdout
    forced = run_cli("grade", str(subs), "--workdir", str(work), "--force")
    assert "Grading 6 submission(s)" in forced.stdout
    assert first.split("Summary", 1)[1].rsplit("\n", 2)[0] == forced.stdout.split("Summary", 1)[1].rsplit("\n", 2)[0]


def test_regrading_one_student_changes_only_that_students_rows(demo):
    root, subs, work, _ = demo
    results = work / config.RESULTS_DIR
    others_before = {p: p.read_bytes() for p in results.rglob("*.json") if p.parent.name != "grace"}
    grace = make_submission(NOTEBOOK)  # grace hands in a fixed notebook
    write_submission(grace, subs / "grace" / f"{NOTEBOOK}.ipynb")
    linus_file = subs / "linus" / f"{NOTEBOOK}.ipynb"
    write_submission(grace, linus_file)  # ... and so, unasked, does linus: not regraded by --student grace
    one = run_cli("grade", str(subs), "--workdir", str(work), "--student", "grace", "--force")
    assert one.returncode == 0, one.stdout + one.stderr
    assert "Grading 1 submission(s) of 1" in one.stdout and "linus" not in one.stdout
    assert {p: p.read_bytes() for p in results.rglob("*.json") if p.parent.name != "grace"} == others_before
    out_csv = root / "one-student.csv"
    assert run_cli("export", "--workdir", str(work), "--out", str(out_csv)).returncode == 0
    with out_csv.open(newline="") as handle:
        rows = {row["student"]: row for row in csv.DictReader(handle)}
    assert float(rows["grace"]["score"]) == TOTAL and float(rows["linus"]["score"]) == 0
    unknown = run_cli("grade", str(subs), "--workdir", str(work), "--student", "nobody")
    assert unknown.returncode == 2 and "no submissions of nobody" in unknown.stderr
    write_submission(untouched_release(NOTEBOOK), linus_file)  # as it was, for the tests after this one


def test_cli_reports_a_missing_folder_clearly(tmp_path):
    proc = run_cli("grade", str(tmp_path / "nope"), "--workdir", str(tmp_path / "w"))
    assert proc.returncode == 2 and "does not exist" in proc.stderr
    proc = run_cli("export", "--workdir", str(tmp_path / "w2"), "--out", str(tmp_path / "g.csv"))
    assert proc.returncode == 2 and "run `autograder grade` first" in proc.stderr


def test_cli_grades_every_student_folder_and_says_which_names_it_mapped(tmp_path):
    """A folder name an LMS or a browser produced is not the instructor's to fix at midnight (issue 30): it is
    mapped to a usable student id, said in the run's output, and every student is graded."""
    subs = tmp_path / "subs"
    for student in ("ok_student", "José García", "a|b"):
        write_submission(make_submission(NOTEBOOK), subs / student / f"{NOTEBOOK}.ipynb")
    proc = run_cli("grade", str(subs), "--workdir", str(tmp_path / "w"))
    assert proc.returncode == 0, proc.stdout + proc.stderr
    out = proc.stdout + proc.stderr
    assert "'José García' is graded as 'Jose-Garcia'" in out and "'a|b' is graded as 'a-b'" in out, out
    assert "'ok_student' is graded as" not in out
    table = export(tmp_path / "w", tmp_path / "grades.csv").decode("utf-8")
    rows = {row["student"]: row for row in csv.DictReader(io.StringIO(table))}
    assert set(rows) == {"ok_student", "Jose-Garcia", "a-b"}, rows
    assert {float(row["score"]) for row in rows.values()} == {TOTAL}, rows


def test_the_gradebook_gets_nbgraders_own_schema_version_without_a_subprocess():
    """open_gradebook has nbgrader read its schema revision in-process (store.gradebook.schema_version): it must be
    the revision nbgrader's `alembic heads` subprocess names, or nbgrader would migrate our gradebooks."""
    import subprocess

    from nbgrader.dbutil import _temp_alembic_ini

    from autograder.store.gradebook import ensure_tools_on_path, schema_version

    ensure_tools_on_path()
    with _temp_alembic_ini("sqlite:////tmp/unused.db") as ini:
        heads = subprocess.check_output(["alembic", "-c", ini, "heads"], text=True)
    assert schema_version() == heads.split()[0]


def test_the_gradebook_commits_without_waiting_for_the_disk_and_nbgrader_reads_it(demo):
    """Write-ahead log and synchronous=NORMAL (store.gradebook): nbgrader's own Gradebook, opened afresh as
    formgrader would, sees every student's grades."""
    from nbgrader.api import Gradebook
    from sqlalchemy import text

    from autograder.store.gradebook import open_gradebook

    _, _, work, _ = demo
    url = config.gradebook_url(work)
    ours = open_gradebook(url)
    try:
        assert ours.db.execute(text("PRAGMA journal_mode")).scalar() == "wal"
        assert ours.db.execute(text("PRAGMA synchronous")).scalar() == 1  # NORMAL
    finally:
        ours.close()
    with Gradebook(url, course_id=config.COURSE_ID) as plain:
        scores = {s.student.id: s.score for s in plain.assignment_submissions(NOTEBOOK)}
    assert scores["ada"] == TOTAL and scores["linus"] == 0
