"""Where submissions are graded: worker threads on this machine, or a Dask cluster, behind one interface.

`LocalPool` runs `workers` threads, each waiting on one sandboxed process. `DaskPool` sends the same
per-submission function to Dask workers: `grade --scheduler tcp://HOST:8786` sends each submission to a cluster
whose workers have this course repository installed and the sandbox available (bubblewrap; root for fork servers);
`--scheduler local:N` starts a LocalCluster of N worker processes on this machine.

What travels is plain data: the submission's bytes and the source notebook's bytes (so a worker
needs no access to the instructor's folders) and, back, a Result. The client stays the one
writer of grading state; a worker only computes. A worker that dies or a task that fails is
reported as a grader failure for that submission alone (never stored: the next run grades it
again), exactly like a failure of a local worker.
"""

from __future__ import annotations

import itertools
import tempfile
from collections.abc import Callable, Iterator
from concurrent.futures import ThreadPoolExecutor, as_completed
from dataclasses import replace
from pathlib import Path
from typing import Protocol

from autograder.errors import InputError, Unreachable
from autograder.grading.execute import execute_submission, zero_result
from autograder.model.records import Job, Result
from autograder.sandbox import shutdown_servers

GradeJob = Callable[[Job], Result]  # grades one job: execute_submission, or a test's stand-in


class Pool(Protocol):
    """What the grading loop needs: results of jobs in the order they finish, and an end."""

    where: str  # for the progress line: "2 worker(s)", "3 Dask worker(s) of tcp://..."

    def run(self, jobs: list[Job], runner: GradeJob, retries: int) -> Iterator[Result]: ...

    def close(self) -> None: ...


def safe_run(runner: GradeJob, job: Job, retries: int) -> Result:
    """A failure of the grading machinery costs this submission at most, never the run."""
    for _ in range(retries + 1):
        try:
            result = runner(job)
        except BaseException as exc:  # noqa: BLE001 - a worker must always answer
            result = zero_result(job, "not graded: the grader failed", internal_error=f"{type(exc).__name__}: {exc}")
        if not result.internal_error:
            return result
    return result


class LocalPool:
    """`workers` threads on this machine, each waiting on one sandbox."""

    def __init__(self, workers: int):
        self.workers = max(1, workers)
        self.where = f"{self.workers} worker(s)"

    def run(self, jobs: list[Job], runner: GradeJob, retries: int) -> Iterator[Result]:
        with ThreadPoolExecutor(max_workers=max(1, min(self.workers, len(jobs) or 1))) as pool:
            futures = [pool.submit(safe_run, runner, job, retries) for job in jobs]
            try:
                for future in as_completed(futures):
                    yield future.result()
            finally:  # the run ended early (Ctrl-C, an error): jobs not started never start, nobody reads them
                for future in futures:
                    future.cancel()

    def close(self) -> None:
        """Nothing of the threads outlives the run (the warm sandboxes end with the run: grade's job)."""


def _job_payload(job: Job) -> dict:
    sub = job.submission
    return {
        "job": replace(job, submission=replace(sub, path=None)),
        "submission": sub.path.read_bytes() if sub.path is not None and sub.problem is None else None,
        "source": Path(job.source_path).read_bytes(),
    }


def run_payload(payload: dict, runner: GradeJob = execute_submission, retries: int = 1) -> Result:
    """On a worker: lay the bytes out in a private temporary folder and grade them there."""
    job: Job = payload["job"]
    with tempfile.TemporaryDirectory(prefix="autograder-task-") as tmp:
        folder = Path(tmp)
        source = folder / "source" / Path(job.source_path).name
        source.parent.mkdir()
        source.write_bytes(payload["source"])
        submission = job.submission
        if payload["submission"] is not None:
            path = folder / "submission" / f"{submission.notebook}.ipynb"
            path.parent.mkdir()
            path.write_bytes(payload["submission"])
            submission = replace(submission, path=path)
        return safe_run(runner, replace(job, submission=submission, source_path=source), retries)


class DaskPool:
    """The grading loop's view of a cluster: submit jobs, iterate over results as they finish."""

    def __init__(self, scheduler: str):
        import dask
        from distributed import Client, LocalCluster

        from autograder import config

        # a scheduler reads this when it starts (local:N); a remote one has its own setting
        dask.config.set({"distributed.scheduler.allowed-failures": config.DASK_ALLOWED_FAILURES})
        self.cluster = None
        if scheduler.startswith("local:"):
            try:
                count = int(scheduler.split(":", 1)[1])
            except ValueError:
                raise InputError(f"--scheduler local:N takes a number of workers, not {scheduler!r}") from None
            if count < 1:
                raise InputError(f"--scheduler local:N needs N >= 1, got {count}")
            # one thread per worker process: each runs one sandbox at a time, like a local worker
            self.cluster = LocalCluster(
                n_workers=count, threads_per_worker=1, processes=True, dashboard_address=None, silence_logs=40
            )
            self.client = Client(self.cluster)
        else:
            try:
                self.client = Client(scheduler, timeout=config.DASK_CONNECT_TIMEOUT_S)
            except ValueError as exc:  # distributed's word for an address it cannot parse
                raise InputError(
                    f"--scheduler {scheduler!r} is not an address such as tcp://HOST:8786, or local:N ({exc})"
                ) from None
            except OSError as exc:
                raise Unreachable(
                    f"could not reach the Dask scheduler at {scheduler}: {exc} "
                    "(is `dask scheduler` running there, and the port open?)"
                ) from None
        self.workers = len(self.client.scheduler_info().get("workers", {}))
        self.where = f"{self.workers} Dask worker(s) of {scheduler}"

    def run(self, jobs: list[Job], runner: GradeJob, retries: int) -> Iterator[Result]:
        """Results in the order they finish; a task lost with its worker becomes a grader failure.

        No more tasks are in flight than the cluster has threads, the next one sent as each finishes. Sent all at
        once, a few of them wait on a worker behind the one it runs (Dask hands out tasks ahead), and when a
        submission kills its worker the scheduler counts every task that worker held as a suspect: an innocent
        submission queued twice behind a killer failed with it (a clean-clone run lost one that way)."""
        from distributed import as_completed

        waiting = iter(jobs)
        in_flight: dict = {}

        def send(job: Job):
            # `retries` is run_payload's (safe_run's, for a grader failure inside the task): a task that takes
            # its worker down is retried by the scheduler up to config.DASK_ALLOWED_FAILURES, and not again here
            future = self.client.submit(run_payload, _job_payload(job), runner, retries, pure=False)
            in_flight[future] = job
            return future

        finished = as_completed([send(job) for job in itertools.islice(waiting, self._threads())])
        for future in finished:
            job = in_flight.pop(future)
            following = next(waiting, None)
            if following is not None:
                finished.add(send(following))  # before this result is recorded: the freed thread starts at once
            try:
                yield future.result()
            except Exception as exc:  # noqa: BLE001 - a worker died or could not run the task
                yield zero_result(
                    job, "not graded: the grader failed", internal_error=f"Dask: {type(exc).__name__}: {exc}"
                )
            finally:
                future.release()  # its result leaves the worker: a worker that dies later loses nothing finished

    def _threads(self) -> int:
        """The cluster's threads now (a remote cluster may have grown or shrunk since it was reached); at least 1."""
        return max(1, sum(self.client.nthreads().values()))

    def close(self) -> None:
        try:
            self.client.run(shutdown_servers)  # the warm sandboxes of this run end with it
        except Exception:  # noqa: BLE001, S110 - workers already gone: nothing left to stop
            pass
        self.client.close()
        if self.cluster is not None:
            self.cluster.close()


def open_pool(scheduler: str | None, workers: int) -> Pool:
    """A Dask pool for `--scheduler` (local:N or tcp://HOST:PORT), else local threads."""
    return DaskPool(scheduler) if scheduler else LocalPool(workers)
