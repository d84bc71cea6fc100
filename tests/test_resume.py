"""`autograder grade` killed with SIGKILL mid-run and started again ends with exactly the
gradebook and export of a run that was never interrupted, and leaves no process behind."""

from __future__ import annotations

import signal
import sqlite3
import subprocess
import sys
import time
from pathlib import Path

from autograder import config
from conftest import NOTEBOOK
from coursetools.samples import implementations, make_submission, untouched_release, write_submission
from test_adversarial import sandbox_processes


def make_class(folder: Path) -> None:
    write_submission(make_submission(NOTEBOOK), folder / "ada" / f"{NOTEBOOK}.ipynb")
    write_submission(untouched_release(NOTEBOOK), folder / "linus" / f"{NOTEBOOK}.ipynb")
    for impl in implementations(NOTEBOOK, "wrong")[:5]:
        write_submission(make_submission(NOTEBOOK, impl.cells), folder / impl.name / f"{NOTEBOOK}.ipynb")
    (folder / "edsger").mkdir()
    (folder / "edsger" / f"{NOTEBOOK}.ipynb").write_bytes(b"")


def cli(*args: str) -> list[str]:
    return [sys.executable, "-m", "autograder", *args]


def grade_until_killed(subs: Path, work: Path, after_lines: int, *extra: str) -> None:
    """Start `grade` (with `extra` arguments), SIGKILL it once `after_lines` submissions have been reported."""
    proc = subprocess.Popen(cli("grade", str(subs), "--workdir", str(work), "--workers", "2", *extra),
                            stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True, cwd=config.REPO_ROOT)
    seen = 0
    for line in proc.stdout:
        if line.startswith("["):
            seen += 1
            if seen >= after_lines:
                break
    proc.send_signal(signal.SIGKILL)  # the grader only: its sandboxes must die with it
    proc.wait(timeout=30)
    proc.stdout.close()
    assert proc.returncode == -signal.SIGKILL, "the run ended before it could be killed"


def gradebook_rows(work: Path) -> list[tuple]:
    with sqlite3.connect(work / config.GRADEBOOK_FILE) as db:
        return sorted(db.execute(
            "select s.student_id, gc.name, g.auto_score from grade g "
            "join base_cell gc on g.cell_id = gc.id "
            "join submitted_notebook n on g.notebook_id = n.id join submitted_assignment s on n.assignment_id = s.id"
        ).fetchall())


def export(work: Path, out: Path, *extra: str) -> bytes:
    proc = subprocess.run(cli("export", "--workdir", str(work), "--out", str(out), *extra), capture_output=True, text=True,
                          cwd=config.REPO_ROOT, timeout=300)
    assert proc.returncode == 0, proc.stderr
    return out.read_bytes()


def test_killed_and_resumed_run_equals_an_uninterrupted_one(tmp_path):
    subs = tmp_path / "submissions"
    make_class(subs)
    whole = subprocess.run(cli("grade", str(subs), "--workdir", str(tmp_path / "whole"), "--workers", "2"),
                           capture_output=True, text=True, cwd=config.REPO_ROOT, timeout=600)
    assert whole.returncode == 0, whole.stdout + whole.stderr

    resumed = tmp_path / "resumed"
    grade_until_killed(subs, resumed, after_lines=1)
    deadline = time.monotonic() + 15
    while sandbox_processes() and time.monotonic() < deadline:
        time.sleep(0.5)
    assert sandbox_processes() == [], "the sandboxes of a killed grader must die with it"
    grade_until_killed(subs, resumed, after_lines=2)
    last = subprocess.run(cli("grade", str(subs), "--workdir", str(resumed), "--workers", "2"),
                          capture_output=True, text=True, cwd=config.REPO_ROOT, timeout=600)
    assert last.returncode == 0, last.stdout + last.stderr
    assert "already graded and unchanged" in last.stdout
    assert not last.stdout.startswith("Grading 0 "), "the kills should have left work to do"

    assert export(resumed, tmp_path / "resumed.csv") == export(tmp_path / "whole", tmp_path / "whole.csv")
    assert gradebook_rows(resumed) == gradebook_rows(tmp_path / "whole")
    assert len(gradebook_rows(resumed)) == 8 * 8  # 8 students x 8 graded cells
