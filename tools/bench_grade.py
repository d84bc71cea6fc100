"""Time plain serial `nbgrader autograde` against `autograder grade` on the same 30 submissions.

    make bench-grade        (or: .venv/bin/python tools/bench_grade.py [N] [--dask 1,2,4])

The class is a mix of the reference solution and every catalogued wrong and correct
implementation of exercise 02. Both graders start from a fresh course/work dir, so
both times include creating the gradebook. The per-student totals of the two are
compared as a cross-check; they may differ only where nbgrader zeroes a cell for
output on stderr, which ours does not. Ours is timed with a fresh sandbox per submission,
with warm fork servers (the default as root) and with --no-sandbox: the sandbox's cost is
fresh sandboxes against --no-sandbox (both start a process per submission: like with like),
and what the fork servers save is fresh sandboxes against fork servers. Then on a Dask
LocalCluster (`--scheduler local:N`) of as many worker processes as the default run has
workers; `--dask 1,2,4` sweeps sizes (each size is one more whole run of the class: with
three sizes, a loaded machine ran the bench past 20 minutes).
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import sqlite3
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from autograder import config  # noqa: E402
from autograder.model.notebooks import source_notebook  # noqa: E402
from autograder.store.gradebook import ensure_tools_on_path  # noqa: E402
from coursetools.samples import catalogue_submissions, write_submission  # noqa: E402

NOTEBOOK = "02_dot_product_attention"
ASSIGNMENT = "ch02"


def make_class(folder: Path, n: int) -> list[str]:
    pool = catalogue_submissions(NOTEBOOK)
    students = []
    for index in range(n):
        label, nb, _ = pool[index % len(pool)]
        student = f"s{index:02d}-{label}"
        write_submission(nb, folder / student / f"{NOTEBOOK}.ipynb")
        students.append(student)
    return students


def run_nbgrader(course: Path, submissions: Path, students: list[str], env: dict) -> tuple[float, dict]:
    (course / "source" / ASSIGNMENT).mkdir(parents=True)
    shutil.copy(source_notebook(NOTEBOOK), course / "source" / ASSIGNMENT / f"{NOTEBOOK}.ipynb")
    (course / "nbgrader_config.py").write_text(
        "c = get_config()\n"
        f"c.CourseDirectory.root = {str(course)!r}\n"
        f"c.CourseDirectory.db_assignments = [dict(name={ASSIGNMENT!r})]\n"
    )
    nbgrader = [sys.executable, "-m", "nbgrader"]
    subprocess.run(
        [*nbgrader, "generate_assignment", ASSIGNMENT, "--force"], cwd=course, env=env, check=True, capture_output=True
    )
    for student in students:
        target = course / "submitted" / student / ASSIGNMENT
        target.mkdir(parents=True)
        shutil.copy(submissions / student / f"{NOTEBOOK}.ipynb", target / f"{NOTEBOOK}.ipynb")
    started = time.monotonic()
    proc = subprocess.run(
        [*nbgrader, "autograde", ASSIGNMENT, "--create"], cwd=course, env=env, capture_output=True, text=True
    )
    seconds = time.monotonic() - started
    if proc.returncode != 0:
        print(proc.stdout[-3000:], proc.stderr[-3000:])
        raise SystemExit("nbgrader autograde failed")
    with sqlite3.connect(course / "gradebook.db") as db:
        scores = dict(
            db.execute(
                "select s.student_id, sum(coalesce(g.auto_score, 0)) from grade g "
                "join submitted_notebook n on g.notebook_id = n.id join submitted_assignment s on n.assignment_id = "
                "s.id "
                "group by s.student_id"
            ).fetchall()
        )
    return seconds, scores


def run_ours(work: Path, submissions: Path, env: dict, *extra: str) -> tuple[float, dict]:
    started = time.monotonic()
    proc = subprocess.run(
        [sys.executable, "-m", "autograder", "grade", str(submissions), "--workdir", str(work), *extra],
        cwd=ROOT,
        env=env,
        capture_output=True,
        text=True,
    )
    seconds = time.monotonic() - started
    if proc.returncode != 0:
        print(proc.stdout[-3000:], proc.stderr[-3000:])
        raise SystemExit("autograder grade failed")
    records = [json.loads(p.read_text()) for p in (work / config.RESULTS_DIR).glob("*/*.json")]
    scores = {r["student"]: r["score"] for r in records}
    cell_seconds.clear()
    cell_seconds.append(sum(r.get("cells_seconds", 0.0) for r in records))
    cell_seconds.append(sum(r.get("seconds", 0.0) for r in records))
    cell_seconds.append(statistics.median(r.get("seconds", 0.0) - r.get("cells_seconds", 0.0) for r in records))
    return seconds, scores


cell_seconds: list[float] = []  # of the last run_ours: time spent in the notebooks' own cells


def main() -> int:
    parser = argparse.ArgumentParser(description="time plain nbgrader against autograder grade")
    parser.add_argument("n", nargs="?", type=int, default=30, help="submissions (default: %(default)s)")
    parser.add_argument(
        "--dask",
        default=str(config.default_workers()),
        help="Dask LocalCluster sizes to time, comma-separated (default: %(default)s, the default workers)",
    )
    args = parser.parse_args()
    n = args.n
    dask_sizes = [int(size) for size in args.dask.split(",") if size.strip()]
    ensure_tools_on_path()  # both graders run alembic by name
    env = dict(os.environ)
    with tempfile.TemporaryDirectory(prefix="bench-grade-") as tmp:
        tmp = Path(tmp)
        students = make_class(tmp / "submissions", n)
        print(f"{n} submissions of {NOTEBOOK} ({os.cpu_count()} cores)")
        plain_s, plain_scores = run_nbgrader(tmp / "course", tmp / "submissions", students, env)
        print(f"plain nbgrader autograde (serial): {plain_s:6.1f} s  ({plain_s / n:.2f} s per submission)")
        workers = config.default_workers()
        fresh_s, fresh_scores = run_ours(
            tmp / "work-fresh", tmp / "submissions", {**env, "AUTOGRADER_FORK_SERVER": "0"}
        )
        print(
            f"autograder grade ({workers} workers, a fresh sandbox per submission): {fresh_s:6.1f} s  "
            f"({fresh_s / n:.2f} s per submission)"
        )
        ours_s, our_scores = run_ours(tmp / "work", tmp / "submissions", env)
        server = (
            "warm fork servers"
            if os.geteuid() == 0 and config.FORK_SERVER
            else "fresh sandboxes (not root: no fork server)"
        )
        print(
            f"autograder grade ({workers} workers, sandboxed, {server}): {ours_s:6.1f} s  ({ours_s / n:.2f} s per "
            "submission)"
        )
        own, each, median = cell_seconds
        print(
            f"overhead over executing the notebooks' own cells ({own:.1f} s in all): "
            f"{(each - own) / n:.2f} s per submission in its worker (align, fork, collect, judge; the first "
            f"submission of each worker also waits for its warm processes to start), median {median:.3f} s; "
            f"{(ours_s * workers - own) / n:.2f} s of worker time per submission with the run's start-up "
            "(command, gradebook, one server per worker, the judge) spread over the class"
        )
        bare_s, bare_scores = run_ours(tmp / "work-bare", tmp / "submissions", env, "--no-sandbox")
        print(
            f"autograder grade ({workers} workers, --no-sandbox):  {bare_s:6.1f} s  ({bare_s / n:.2f} s per submission)"
        )
        print(
            f"cost of the sandbox (a fresh sandbox per submission against --no-sandbox, both a new process each): "
            f"{(fresh_s - bare_s) / n:+.2f} s per submission"
        )
        print(f"saved by the fork servers (against a fresh sandbox per submission): {(fresh_s - ours_s) / n:+.2f} s")
        print(f"speed-up over plain nbgrader: {plain_s / ours_s:.2f}x")
        if bare_scores != our_scores or fresh_scores != our_scores:
            print("WARNING: totals differ between fork servers, fresh sandboxes and --no-sandbox")
        else:
            print("fork servers, fresh sandboxes and --no-sandbox give identical totals")
        for count in dask_sizes:  # the same run on a Dask LocalCluster of `count` worker processes
            dask_s, dask_scores = run_ours(
                tmp / f"work-dask{count}", tmp / "submissions", env, "--scheduler", f"local:{count}"
            )
            same = "identical totals" if dask_scores == our_scores else "TOTALS DIFFER"
            print(
                f"autograder grade --scheduler local:{count} (Dask, {count} worker process(es), cluster start-up "
                "included): "
                f"{dask_s:6.1f} s  ({dask_s / n:.2f} s per submission; {same})"
            )
        differ = {
            s: (plain_scores.get(s), our_scores.get(s)) for s in students if plain_scores.get(s) != our_scores.get(s)
        }
        if differ:
            print("scores that differ (nbgrader, ours):")
            for student, pair in sorted(differ.items()):
                print(f"  {student}: {pair}")
        else:
            print(f"all {n} totals agree between nbgrader and autograder")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
