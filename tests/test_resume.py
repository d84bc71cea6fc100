"""`autograder grade` killed with SIGKILL mid-run and started again ends with exactly the
gradebook and export of a run that was never interrupted, and leaves no process behind."""

from __future__ import annotations

import subprocess
import time

import pytest

from autograder import config
from helpers import cli, export, grade_until_killed, gradebook_rows, make_class, sandbox_processes

pytestmark = [pytest.mark.grading, pytest.mark.slow]


def test_killed_and_resumed_run_equals_an_uninterrupted_one(tmp_path):
    subs = tmp_path / "submissions"
    make_class(subs)
    whole = subprocess.run(
        cli("grade", str(subs), "--workdir", str(tmp_path / "whole"), "--workers", "2"),
        capture_output=True,
        text=True,
        cwd=config.REPO_ROOT,
        timeout=600,
    )
    assert whole.returncode == 0, whole.stdout + whole.stderr

    resumed = tmp_path / "resumed"
    grade_until_killed(subs, resumed, after_lines=1)
    deadline = time.monotonic() + 15
    while sandbox_processes() and time.monotonic() < deadline:
        time.sleep(0.5)
    assert sandbox_processes() == [], "the sandboxes of a killed grader must die with it"
    grade_until_killed(subs, resumed, after_lines=2)
    last = subprocess.run(
        cli("grade", str(subs), "--workdir", str(resumed), "--workers", "2"),
        capture_output=True,
        text=True,
        cwd=config.REPO_ROOT,
        timeout=600,
    )
    assert last.returncode == 0, last.stdout + last.stderr
    assert "already graded and unchanged" in last.stdout
    assert not last.stdout.startswith("Grading 0 "), "the kills should have left work to do"

    assert export(resumed, tmp_path / "resumed.csv") == export(tmp_path / "whole", tmp_path / "whole.csv")
    assert gradebook_rows(resumed) == gradebook_rows(tmp_path / "whole")
    assert len(gradebook_rows(resumed)) == 8 * 9  # 8 students x 9 graded cells
