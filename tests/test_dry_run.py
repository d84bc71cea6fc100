"""`grade --dry-run` (issue 37): before a long run, the table of who handed in what, which file counts, what is
refused and why, what is late, and what would be skipped, with nothing run and nothing graded written. The dry
run over an already graded class is in tests/test_grading.py (it needs that class graded)."""

from __future__ import annotations

import re
import time

import pytest

from coursetools.samples import write_demo_class
from helpers import run_cli

NOTEBOOK = "02_dot_product_attention"


@pytest.fixture(scope="module")
def planned(tmp_path_factory):
    root = tmp_path_factory.mktemp("dry")
    subs, work = root / "submissions", root / "grading"
    write_demo_class(subs)
    (subs / "nobody").mkdir()
    (subs / "nobody" / "notes.txt").write_text("I did not finish", encoding="utf-8")
    started = time.monotonic()
    done = run_cli("grade", str(subs), "--workdir", str(work), "--dry-run", "--deadline", "2000-01-01T00:00")
    return done, work, time.monotonic() - started


def row(out: str, student: str) -> str:
    found = [line for line in out.splitlines() if line.startswith(student + " ")]
    assert len(found) == 1, out
    return found[0]


def test_the_table_says_what_each_submission_would_get(planned):
    done, _, _ = planned
    assert done.returncode == 0, done.stdout + done.stderr
    out = done.stdout
    assert re.search(r"^student +notebook +file +would +late +note", out, re.M), out
    for student in ("ada", "grace", "linus"):
        assert re.search(rf"{NOTEBOOK}\.ipynb +grade +\d+ day\(s\), -\d+%", row(out, student)), row(out, student)
    assert f"{NOTEBOOK} (1).ipynb" in row(out, "alan") and "grade" in row(out, "alan")  # the file that counts
    assert re.search(r" 0 points .*not valid JSON", row(out, "barbara")), row(out, "barbara")
    assert re.search(r" 0 points .*the submitted file is empty", row(out, "edsger")), row(out, "edsger")
    assert re.search(r" nothing to grade +- +no file named .*notes\.txt", row(out, "nobody")), row(out, "nobody")
    assert "Dry run: 4 would be graded, 0 already graded and unchanged, 2 would get 0 with a reason, 1 with" in out


def test_nothing_is_run_or_written(planned):
    done, work, seconds = planned
    assert "[1/" not in done.stdout and "Summary" not in done.stdout
    assert not list(work.rglob("*.json")) or all("intake" in p.parts for p in work.rglob("*.json")), sorted(
        str(p) for p in work.rglob("*")
    )
    assert not (work / "gradebook.db").exists(), "a dry run created the gradebook"
    assert seconds < 60, f"a dry run took {seconds:.0f} s: it should run nothing"
