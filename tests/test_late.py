"""Late work (autograder/grading/late.py): the policy's arithmetic, and `grade --deadline` end to end
on three submissions (on time, 2 days late by the LMS's CSV, and one with only a file time)."""

from __future__ import annotations

import csv
import html
import os
from datetime import datetime, timedelta, timezone

import pytest

from autograder.grading.late import Policy, final_score, late_days, parse_policy, parse_time
from autograder.reporting.report import write_report
from conftest import NOTEBOOK
from coursetools.samples import implementations, make_submission, write_submission
from helpers import run_cli

DEADLINE = datetime(2026, 12, 1, 23, 59, tzinfo=timezone.utc)


def test_policy_parsing():
    assert parse_policy("10%/day, max 3 days") == Policy(0.10, 3, "10%/day, max 3 days")
    assert parse_policy("5 % per day") == Policy(0.05, None, "5 % per day")
    with pytest.raises(ValueError, match="not understood"):
        parse_policy("ten percent")


@pytest.mark.parametrize(
    "late_by, days, penalty, final",
    [
        (timedelta(0), 0, 0.0, 10),  # exactly at the deadline: on time
        (-timedelta(days=2), 0, 0.0, 10),  # early
        (timedelta(seconds=1), 1, 0.1, 9),  # a second late is a started day
        (timedelta(hours=23, minutes=59), 1, 0.1, 9),
        (timedelta(days=1, seconds=1), 2, 0.2, 8),
        (timedelta(days=3), 3, 0.3, 7),  # the last day accepted
        (timedelta(days=3, seconds=1), 4, 1.0, 0),  # beyond the maximum: no points
        (timedelta(days=30), 30, 1.0, 0),
    ],
)
def test_late_policy_arithmetic(late_by, days, penalty, final):
    policy = parse_policy("10%/day, max 3 days")
    assert late_days(DEADLINE + late_by, DEADLINE) == days
    assert policy.penalty(days) == pytest.approx(penalty)
    assert final_score(10, policy.penalty(days)) == pytest.approx(final)


def test_times_without_a_zone_are_local_and_zones_are_respected():
    assert parse_time("2026-12-01T23:59Z") == DEADLINE
    assert parse_time("2026-12-02T00:59+01:00") == DEADLINE
    assert parse_time("2026-12-01T23:59").tzinfo is not None


@pytest.fixture(scope="module")
def late_class(tmp_path_factory):
    root = tmp_path_factory.mktemp("late")
    subs, work = root / "submissions", root / "grading"
    write_submission(make_submission(NOTEBOOK), subs / "ontime" / f"{NOTEBOOK}.ipynb")
    mistake = next(i for i in implementations(NOTEBOOK, "wrong") if i.name == "mask_after_softmax")
    write_submission(make_submission(NOTEBOOK, mistake.cells), subs / "tardy" / f"{NOTEBOOK}.ipynb")
    nomtime = write_submission(make_submission(NOTEBOOK), subs / "filetime" / f"{NOTEBOOK}.ipynb")
    late_stamp = (DEADLINE + timedelta(days=5)).timestamp()  # only its file time says when: 5 days late
    os.utime(nomtime, (late_stamp, late_stamp))
    stamps = root / "times.csv"
    stamps.write_text("student,submitted_at\nontime,2026-12-01T20:00Z\ntardy,2026-12-03T10:00Z\n")
    args = ["--deadline", "2026-12-01T23:59Z", "--late-policy", "10%/day, max 3 days"]
    graded = run_cli("grade", str(subs), "--workdir", str(work), *args, "--timestamps", str(stamps))
    assert graded.returncode == 0, graded.stdout + graded.stderr
    return root, subs, work, graded.stdout


def export(root, work, name="grades.csv"):
    out = root / name
    made = run_cli("export", "--workdir", str(work), "--out", str(out))
    assert made.returncode == 0, made.stderr
    with out.open(newline="") as handle:
        reader = csv.DictReader(handle)
        return reader.fieldnames, {row["student"]: row for row in reader}


def test_export_has_late_days_penalty_and_final_score_next_to_the_raw_score(late_class):
    root, _, work, out = late_class
    header, rows = export(root, work)
    assert header[-4:] == ["submitted_at", "late_days", "penalty", "final_score"]
    assert (rows["ontime"]["late_days"], rows["ontime"]["penalty"], rows["ontime"]["final_score"]) == ("0", "0", "12")
    tardy = rows["tardy"]  # 1 day 10 h late: 2 started days, 20% of 10 points
    assert (tardy["score"], tardy["late_days"], tardy["penalty"], tardy["final_score"]) == ("10", "2", "0.2", "8")
    assert (rows["filetime"]["late_days"], rows["filetime"]["final_score"]) == ("5", "0")
    assert "modification time" in out and "filetime" in out.split("modification time")[0].rsplit("\n", 1)[-1]
    assert "LATE 2 day(s), penalty 20%: final 8" in out


def test_grading_again_gives_the_same_penalty(late_class):
    root, subs, work, _ = late_class
    _, before = export(root, work, "before.csv")
    os.utime(subs / "filetime" / f"{NOTEBOOK}.ipynb")  # a copy or unzip touched the file: now it looks on time
    again = run_cli("grade", str(subs), "--workdir", str(work), "--force", "--deadline", "2026-12-01T23:59Z")
    assert again.returncode == 0, again.stdout + again.stderr
    _, after = export(root, work, "after.csv")
    for student in before:
        for column in ("score", "submitted_at", "late_days", "penalty", "final_score"):
            assert after[student][column] == before[student][column], (student, column)


def test_report_lists_late_submissions(late_class):
    root, _, work, _ = late_class
    page = html.unescape(write_report(root / "report", work)[0].read_text())
    late = page.split("<h2>Late work</h2>", 1)[1].split("<h2>", 1)[0]
    assert "2 of 3 submission(s) late" in late
    assert "tardy" in late and "filetime" in late and "ontime" not in late
    assert "20%" in late and "100%" in late
