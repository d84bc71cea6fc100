"""Verdicts from the judge: hidden tests decided where student code never ran.

A hidden test written as inputs, probe and judge (model.notebooks.split_test) runs in two processes. The
sandboxed kernel runs the visible checks and the probe next to the student's code, and hands over the
probe's plain data (runner.plain). The judge, a clean interpreter (autograder.judge), rebuilds the inputs,
computes the references and compares. A cell earns its points only if both passed: student code can fail
its own cell (a visible check, an exception, data that is not plain), never pass one, because nothing
it can change in its own process decides the verdict.

One judge process per grading process stays warm for the process's life (torch is imported once), shared by
its grading threads (a verdict takes milliseconds; a judge per thread cost each run another second and a half
of start-up), like the kernel's fork server; a judge that dies or hangs is replaced.
"""

from __future__ import annotations

import atexit
import json
import os
import select
import subprocess
import sys
import tempfile
import threading
import time
from dataclasses import dataclass
from pathlib import Path

from nbformat import NotebookNode

from autograder import config
from autograder.model.notebooks import grade_id, is_test_cell, judge_context, split_test
from autograder.runner import protocol
from autograder.sandbox import Report

PACKAGE_ROOT = Path(__file__).resolve().parents[2]  # the folder that holds autograder/ (and course/)


class JudgeFailed(RuntimeError):
    """The judge process itself failed (not the submission): the grade is retried, never stored."""


@dataclass(frozen=True)
class Verdict:
    error: dict | None  # None: passed; else {"ename", "evalue"}, the cell's failure
    seconds: float = 0.0


class Judge:
    """One judge process, started on first use and restarted when it dies."""

    def __init__(self) -> None:
        self.lock = threading.Lock()  # one verdict at a time: the process's grading threads share it
        self.proc: subprocess.Popen | None = None
        self.ready = False  # the process has said READY (torch imported)
        self.started = 0.0
        self.buffer = b""
        self.errors = tempfile.TemporaryFile()

    def start_soon(self) -> None:
        """Start the process now and return at once: it imports torch while the caller does other work, and the
        first verdict waits only for what is left of its start."""
        with self.lock:
            if self.proc is None or self.proc.poll() is not None:
                self._spawn()

    def _spawn(self) -> subprocess.Popen:
        # The kernels' environment: one thread (a judge's tensors are tiny; two threads per judge on a busy
        # machine made a verdict six times slower), deterministic hashing.
        env = {**os.environ, **config.KERNEL_ENV}
        env["PYTHONPATH"] = os.pathsep.join(filter(None, [str(PACKAGE_ROOT), env.get("PYTHONPATH", "")]))
        env["CUDA_VISIBLE_DEVICES"] = ""  # references are computed on the CPU, whatever the kernel used
        self.errors.seek(0)
        self.errors.truncate()
        self.buffer = b""
        proc = subprocess.Popen(
            [sys.executable, "-m", "autograder.judge"],
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=self.errors,
            env=env,
            cwd=PACKAGE_ROOT,
        )
        self.proc, self.ready, self.started = proc, False, time.monotonic()
        return proc

    def _wait_ready(self) -> None:
        if not self.ready:
            if self._read(self.started + config.JUDGE_START_TIMEOUT_S).get("type") != protocol.READY:
                raise JudgeFailed(f"the judge did not start: {self._tail()}")
            self.ready = True

    def _tail(self) -> str:
        self.errors.seek(0)
        return self.errors.read()[-2000:].decode("utf-8", "replace").strip() or "no message"

    def _read(self, deadline: float) -> dict:
        """The judge's next message, or {} at the deadline or when it is gone."""
        assert self.proc is not None and self.proc.stdout is not None
        fd = self.proc.stdout.fileno()
        while b"\n" not in self.buffer:
            remaining = deadline - time.monotonic()
            if remaining <= 0 or not select.select([fd], [], [], remaining)[0]:
                return {}
            chunk = os.read(fd, 1 << 16)
            if not chunk:
                return {}
            self.buffer += chunk
        line, self.buffer = self.buffer.split(b"\n", 1)
        return json.loads(line)

    def verdict(self, name: str, source: str, probe: object, context: str = "") -> Verdict:
        """The judge's verdict on one test cell. A judge that hangs on the data it was given is replaced
        and the cell fails; one that cannot start or dies is a failure of the grader (JudgeFailed)."""
        with self.lock:
            return self._verdict(name, source, probe, context)

    def _verdict(self, name: str, source: str, probe: object, context: str) -> Verdict:
        try:
            request = protocol.encode({"name": name, "context": context, "source": source, "probe": probe})
        except (ValueError, TypeError, RecursionError) as exc:  # data made to break the encoder: the cell fails
            return Verdict({"ename": "ProbeError", "evalue": f"the test's data could not be read: {exc}"})
        for _attempt in (1, 2):
            proc = self.proc if self.proc is not None and self.proc.poll() is None else self._spawn()
            self._wait_ready()
            assert proc.stdin is not None
            try:
                proc.stdin.write(request)
                proc.stdin.flush()
            except (BrokenPipeError, OSError):
                self.close()
                continue
            answer = self._read(time.monotonic() + config.JUDGE_VERDICT_TIMEOUT_S)
            if answer.get("type") == protocol.VERDICT:
                return Verdict(answer.get("error"), float(answer.get("seconds", 0.0)))
            timed_out = proc.poll() is None
            self.close()
            if timed_out:
                return Verdict(
                    {
                        "ename": "JudgeTimeout",
                        "evalue": f"judging this test's data took longer than {config.JUDGE_VERDICT_TIMEOUT_S} s",
                    }
                )
        raise JudgeFailed(f"the judge died twice: {self._tail()}")

    def close(self) -> None:
        if self.proc is not None:
            if self.proc.poll() is None:
                self.proc.kill()
            self.proc.wait()
            for pipe in (self.proc.stdin, self.proc.stdout):
                if pipe is not None:
                    pipe.close()
            self.proc = None


_shared: Judge | None = None
_shared_lock = threading.Lock()


def shared_judge() -> Judge:
    """This process's warm judge (started on its first verdict)."""
    global _shared
    with _shared_lock:
        if _shared is None:
            _shared = Judge()
        return _shared


@atexit.register
def _close_shared() -> None:
    with _shared_lock:
        if _shared is not None:
            _shared.close()


def judge_report(nb: NotebookNode, report: Report, judge: Judge | None = None) -> None:
    """Decide every test cell of `nb` that has a judge and passed in the kernel: its verdict becomes the
    cell's error (and an error output) when the judge fails it. Raises JudgeFailed if the judge breaks.
    The judge starts from the notebook's setup and provided cells and its judge helpers
    (model.notebooks.judge_context)."""
    context = judge_context(nb)
    for index, cell in enumerate(nb.cells):
        if not is_test_cell(cell):
            continue
        run = report.cells.get(index)
        parts = split_test(cell.source)
        if not parts.has_judge or run is None or run.error is not None:
            continue
        if run.probe is None:
            error: dict | None = {"ename": "ProbeError", "evalue": "the test's probe handed over nothing"}
        else:
            name = grade_id(cell) or str(index)
            error = (judge or shared_judge()).verdict(name, parts.judge, run.probe, context).error
        if error is not None:
            run.error = {
                "ename": str(error.get("ename", "Error")),
                "evalue": str(error.get("evalue", "")),
                "traceback": [],
            }
            run.outputs.append({"output_type": "error", **run.error})
