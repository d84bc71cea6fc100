"""Grading on a Dask cluster (`grade --scheduler`): a real LocalCluster of worker processes gives
the gradebook a local run gives; a dead worker costs one submission, never the run; an
unreachable scheduler is a clear error; concurrent grading processes never share a sandbox uid."""

from __future__ import annotations

import io
import os
import subprocess
import sys
from pathlib import Path

import cloudpickle
import pytest

from autograder.cli import main
from autograder.grading.execute import execute_submission
from autograder.grading.grade import Options, grade
from autograder.model.records import Job, Result
from autograder.reporting.export import export_csv
from coursetools.samples import catalogue_submissions, write_demo_class, write_submission

pytestmark = [pytest.mark.grading, pytest.mark.dask, pytest.mark.slow]

NOTEBOOK = "02_dot_product_attention"


@pytest.fixture(scope="module")
def a_class(tmp_path_factory) -> Path:
    """The demo class (one student per outcome) and chapter 02's catalogue: 20-odd submissions."""
    root = tmp_path_factory.mktemp("cluster-class")
    write_demo_class(root)
    for label, nb, _ in catalogue_submissions(NOTEBOOK):
        write_submission(nb, root / f"cat-{label}" / f"{NOTEBOOK}.ipynb")
    return root


def _graded_csv(submissions: Path, workdir: Path, **options) -> tuple[list[Result], str, str]:
    out = io.StringIO()
    results = grade(submissions, Options(workdir=workdir, **options), out=out)
    export_csv(workdir / "grades.csv", workdir)
    return results, (workdir / "grades.csv").read_text(), out.getvalue()


def test_local_cluster_gives_the_gradebook_of_a_local_run(a_class, tmp_path):
    local, local_csv, _ = _graded_csv(a_class, tmp_path / "local", workers=2)
    dask, dask_csv, out = _graded_csv(a_class, tmp_path / "dask", scheduler="local:3")
    assert "with 3 Dask worker(s) of local:3" in out
    assert dask_csv == local_csv
    assert [(r.student, r.score, [c.points for c in r.cells], r.reason) for r in dask] == [
        (r.student, r.score, [c.points for c in r.cells], r.reason) for r in local
    ]
    assert len({r.student for r in dask}) > 15 and not any(r.internal_error for r in dask)
    # a second run on the cluster grades nothing again: the records are the client's
    _, again_csv, out = _graded_csv(a_class, tmp_path / "dask", scheduler="local:2")
    assert "Grading 0 submission(s)" in out and again_csv == local_csv


def test_a_cluster_started_elsewhere_is_reached_by_its_address(tmp_path):
    """`--scheduler tcp://HOST:PORT`: a scheduler and two worker processes started outside `grade`, as an
    instructor would with `dask scheduler` and `dask worker`."""
    from distributed import LocalCluster

    class_dir = tmp_path / "class"
    write_demo_class(class_dir)
    local, local_csv, _ = _graded_csv(class_dir, tmp_path / "local", workers=2)
    with LocalCluster(
        n_workers=2, threads_per_worker=1, processes=True, dashboard_address=None, silence_logs=40
    ) as cluster:
        address = cluster.scheduler_address
        assert address.startswith("tcp://")
        remote, remote_csv, out = _graded_csv(class_dir, tmp_path / "remote", scheduler=address)
        assert len(cluster.scheduler.workers) == 2, "grade must leave the instructor's cluster running"
    assert f"with 2 Dask worker(s) of {address}" in out
    assert remote_csv == local_csv and [r.score for r in remote] == [r.score for r in local]


def _dies_for_grace(job: Job) -> Result:
    """A worker process that dies (as an out-of-memory kill would) while grading grace's notebook."""
    if job.submission.student == "grace":
        os._exit(3)
    return execute_submission(job)


def test_a_dead_worker_costs_one_submission_and_is_graded_on_the_next_run(tmp_path):
    class_dir = tmp_path / "class"
    write_demo_class(class_dir)
    cloudpickle.register_pickle_by_value(sys.modules[__name__])  # the workers cannot import tests/
    out = io.StringIO()
    results = grade(class_dir, Options(workdir=tmp_path / "w", scheduler="local:2"), runner=_dies_for_grace, out=out)
    by_student = {r.student: r for r in results}
    assert by_student["grace"].internal_error and "Dask" in by_student["grace"].internal_error
    assert not any(r.internal_error for s, r in by_student.items() if s != "grace")
    assert by_student["ada"].score == by_student["ada"].max_score
    assert "NOT graded because the grader failed" in out.getvalue()
    assert not (tmp_path / "w" / "results" / "grace").exists(), "a grader failure must not be stored"
    rerun = grade(class_dir, Options(workdir=tmp_path / "w", workers=1), out=io.StringIO())
    assert {r.student: r.score for r in rerun}["grace"] == 10


def test_an_unreachable_scheduler_is_a_clear_error(tmp_path, capsys, monkeypatch):
    from autograder import config

    monkeypatch.setattr(config, "DASK_CONNECT_TIMEOUT_S", 2)
    class_dir = tmp_path / "class"
    write_demo_class(class_dir)
    code = main(["grade", str(class_dir), "--workdir", str(tmp_path / "w"), "--scheduler", "tcp://127.0.0.1:9"])
    assert code == 2
    assert "could not reach the Dask scheduler at tcp://127.0.0.1:9" in capsys.readouterr().err
    assert main(["grade", str(class_dir), "--workdir", str(tmp_path / "w"), "--scheduler", "local:many"]) == 2
    assert "local:N takes a number of workers" in capsys.readouterr().err


def test_grading_processes_on_one_machine_never_share_a_slot():
    """Each slot is a uid whose processes are all killed when a submission ends: a second
    grading process (another Dask worker, another run) must get other slots."""
    from autograder.sandbox.slots import slot

    code = (
        "from autograder.sandbox.slots import slot\n"
        "with slot() as a, slot() as b:\n    print(a, b, flush=True)\n    input()\n"
    )
    other = subprocess.Popen([sys.executable, "-c", code], stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True)
    try:
        theirs = set(map(int, other.stdout.readline().split()))
        with slot() as first, slot() as second:
            mine = {first, second}
        assert len(theirs) == 2 and len(mine) == 2 and not mine & theirs, (mine, theirs)
    finally:
        other.communicate("\n", timeout=30)


def _report_tasks_held(job: Job) -> Result:
    """A stand-in grader that says how many tasks its worker holds (running or waiting to run) while it runs."""
    import time

    from distributed import get_worker

    from autograder.grading.execute import zero_result

    state = get_worker().state
    time.sleep(0.3)  # long enough for the scheduler to hand out whatever it would queue behind this task
    held = sum(1 for task in state.tasks.values() if task.state in ("ready", "executing", "constrained"))
    return zero_result(job, f"held {held}")


def test_a_worker_holds_only_the_submission_it_grades(tmp_path):
    """A task queued on a worker behind one that kills it is counted as killing it too: Dask's default saturation
    (1.1) queued a second task on each one-thread worker, and a clean-clone run lost an innocent submission that way
    (the test above). Every task must find itself alone on its worker."""
    class_dir = tmp_path / "class"
    write_demo_class(class_dir)
    cloudpickle.register_pickle_by_value(sys.modules[__name__])
    results = grade(
        class_dir, Options(workdir=tmp_path / "w", scheduler="local:2"), runner=_report_tasks_held, out=io.StringIO()
    )
    assert len(results) > 4
    assert {r.reason for r in results} == {"held 1"}, sorted(r.reason for r in results)
