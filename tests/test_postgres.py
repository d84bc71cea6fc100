"""`grade --db postgresql://...`: the gradebook kept in a real PostgreSQL server (started by the
tests themselves) equals the SQLite one, and a run killed midway resumes with nothing lost or
counted twice."""

from __future__ import annotations

import subprocess
import time

import pytest
from sqlalchemy import create_engine, text

from autograder import config
from helpers import cli, export, grade_until_killed, gradebook_rows, make_class, sandbox_processes
from postgres import Server

pytestmark = [pytest.mark.grading, pytest.mark.postgres, pytest.mark.slow]


@pytest.fixture(scope="module")
def server():
    started = Server()
    yield started
    started.stop()


def postgres_rows(url: str) -> list[tuple]:
    """(student, cell, auto_score) of every grade row, as gradebook_rows reads them from SQLite."""
    engine = create_engine(url)
    with engine.connect() as db:
        rows = db.execute(
            text(
                "select s.student_id, gc.name, g.auto_score from grade g "
                "join base_cell gc on g.cell_id = gc.id "
                "join submitted_notebook n on g.notebook_id = n.id join submitted_assignment s on n.assignment_id = "
                "s.id"
            )
        ).fetchall()
    engine.dispose()
    return sorted(tuple(r) for r in rows)


def test_a_killed_run_against_postgresql_resumes_to_the_sqlite_gradebook(server, tmp_path):
    subs = tmp_path / "submissions"
    make_class(subs)
    whole = subprocess.run(
        cli("grade", str(subs), "--workdir", str(tmp_path / "sqlite"), "--workers", "2"),
        capture_output=True,
        text=True,
        cwd=config.REPO_ROOT,
        timeout=600,
    )
    assert whole.returncode == 0, whole.stdout + whole.stderr

    url = server.url()
    resumed = tmp_path / "postgres"
    grade_until_killed(subs, resumed, 2, "--db", url)
    deadline = time.monotonic() + 15
    while sandbox_processes() and time.monotonic() < deadline:
        time.sleep(0.5)
    partial = postgres_rows(url)
    assert 0 < len(partial) < 8 * 8, "the kill should leave some grades in PostgreSQL and some missing"
    last = subprocess.run(
        cli("grade", str(subs), "--workdir", str(resumed), "--workers", "2", "--db", url),
        capture_output=True,
        text=True,
        cwd=config.REPO_ROOT,
        timeout=600,
    )
    assert last.returncode == 0, last.stdout + last.stderr
    assert "already graded and unchanged" in last.stdout

    assert postgres_rows(url) == gradebook_rows(tmp_path / "sqlite")
    assert len(postgres_rows(url)) == 8 * 9  # 8 students x 9 graded cells: nothing lost, nothing twice
    assert not (resumed / config.GRADEBOOK_FILE).exists(), "with --db, no SQLite gradebook is written"
    assert export(resumed, tmp_path / "pg.csv", "--db", url) == export(tmp_path / "sqlite", tmp_path / "sqlite.csv")

    # graded again from scratch (--force) into the same database: still one row per grade
    again = subprocess.run(
        cli("grade", str(subs), "--workdir", str(resumed), "--workers", "2", "--db", url, "--force"),
        capture_output=True,
        text=True,
        cwd=config.REPO_ROOT,
        timeout=600,
    )
    assert again.returncode == 0, again.stdout + again.stderr
    assert postgres_rows(url) == gradebook_rows(tmp_path / "sqlite")


def test_an_unreachable_database_is_a_clear_error(server, tmp_path):
    subs = tmp_path / "submissions"
    make_class(subs)
    bad = server.url().rsplit("?", 1)[0] + f"?host={tmp_path}"  # no server listens there
    proc = subprocess.run(
        cli("grade", str(subs), "--workdir", str(tmp_path / "w"), "--db", bad),
        capture_output=True,
        text=True,
        cwd=config.REPO_ROOT,
        timeout=300,
    )
    assert proc.returncode == 2, proc.stdout + proc.stderr
    assert "could not open the gradebook" in proc.stderr and "Traceback" not in proc.stderr
