"""The conversation with one kernel: frames read with deadlines and a size cap, cells sent one at a
time, results collected (the messages themselves are autograder.runner.protocol's)."""

from __future__ import annotations

import json
import os
import select
import signal
import subprocess
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import IO

from autograder import config
from autograder.model.records import Limits
from autograder.runner import protocol


@dataclass(frozen=True)
class Cell:
    index: int  # position in the notebook being graded
    kind: str  # "student", "locked" or "test"
    source: str
    name: str = ""  # grade_id, for messages
    probe: bool = False  # a test whose probe hands data to the judge (the source holds no judge)


@dataclass
class CellRun:
    index: int
    outputs: list
    error: dict | None
    seconds: float
    execution_count: int
    tamper: list[str] = field(default_factory=list)
    probe: object = None  # the probe's plain data, encoded (runner.plain), for the judge


@dataclass
class Report:
    cells: dict[int, CellRun]
    stopped: str = ""  # why the run ended before the last cell (student's doing)
    machinery_error: str = ""  # the grader failed, not the submission: retry, never cache
    startup_seconds: float = 0.0
    protocol: list[str] = field(default_factory=list)  # what the notebook wrote to the grader's channel, said once


class Channel:
    """Line-framed JSON read from one descriptor (a kernel's result channel, or a fork server's own), with deadlines
    and a size cap.

    A frame counts only if it carries a token this channel listens to and the pid that first spoke with that token
    (the runner's "ready", or the fork server's "zygote"). Anything else is counted in `rejected` (reported in the
    submission's notes: a kernel's own process writes nothing else there, so student code did)."""

    def __init__(self, fd: int, pid_token: str, max_bytes: int):
        self.fd, self.max_bytes = fd, max_bytes
        self.buffer = b""
        self.pids: dict[str, int | None] = {pid_token: None}
        self.eof = False
        self.rejected = 0

    def listen(self, token: str, pid: int | None = None) -> None:
        self.pids[token] = pid

    def forget(self, token: str) -> None:
        self.pids.pop(token, None)

    def next_frame(self, deadline: float) -> dict | None:
        """The next frame from the runner, or None at the deadline or when the process is gone."""
        while True:
            while b"\n" in self.buffer:
                line, self.buffer = self.buffer.split(b"\n", 1)
                frame = self._parse(line)
                if frame is not None:
                    return frame
            if self.eof:
                return None
            remaining = deadline - time.monotonic()
            if remaining <= 0:
                return None
            ready, _, _ = select.select([self.fd], [], [], min(remaining, 1.0))
            if not ready:
                continue
            chunk = os.read(self.fd, 1 << 20)
            if not chunk:
                self.eof = True
                continue
            self.buffer += chunk
            if len(self.buffer) > self.max_bytes and b"\n" not in self.buffer:
                self.buffer = b""  # a flood without frames: drop it
                self.rejected += 1

    def _parse(self, line: bytes) -> dict | None:
        if not line.strip():
            return None
        try:
            frame = json.loads(line)
        except (ValueError, RecursionError):  # not JSON, or nested to break the parser
            frame = None
        if not isinstance(frame, dict) or frame.get("token") not in self.pids:
            self.rejected += 1
            return None
        token = frame["token"]
        if self.pids[token] is None and frame.get("type") in (protocol.READY, protocol.ZYGOTE):
            self.pids[token] = frame.get("pid")
        if frame.get("pid") != self.pids[token]:
            self.rejected += 1
            return None
        return frame

    def protocol_notes(self) -> list[str]:
        """The submission's note about what it wrote that its kernel did not (none when nothing was rejected)."""
        if not self.rejected:
            return []
        return [
            f"the notebook's code wrote {self.rejected} line(s) to the grader's channel that its kernel did not "
            "send; they were ignored"
        ]


def tail(errors) -> str:
    """The end of what a runner wrote to its stderr file before it could answer."""
    errors.seek(0)
    return errors.read()[-2000:].decode("utf-8", "replace").strip() or "no message"


def describe_exit(proc: subprocess.Popen) -> str:
    return describe_code(proc.poll())


def describe_code(code: int | None) -> str:
    """How the notebook's process ended, from its exit code (negative: killed by that signal)."""
    if code is None:
        return "the notebook's process stopped answering"
    if code < 0:
        name = signal.Signals(-code).name if -code in signal.Signals._value2member_map_ else str(-code)
        if -code == signal.SIGKILL:
            return f"the notebook's process was killed ({name}: out of memory, or killed by the notebook's own code)"
        if -code == signal.SIGXCPU:
            return "the notebook used up its CPU-time limit"
        return f"the notebook's process died ({name})"
    return f"the notebook's code ended the Python process (exit code {code})"


def kill(proc: subprocess.Popen) -> None:
    try:
        os.killpg(proc.pid, signal.SIGKILL)
    except (ProcessLookupError, PermissionError):
        pass
    try:
        proc.kill()
    except ProcessLookupError:
        pass
    try:
        proc.wait(timeout=30)
    except subprocess.TimeoutExpired:
        pass


def serve_cells(
    stream: IO[bytes] | None,
    channel: Channel,
    cells: list[Cell],
    limits: Limits,
    report: Report,
    describe_exit: Callable[[], str],
    gone: Callable[[], bool],
) -> str:
    """Send the cells one at a time on `stream` and collect their results from `channel` into `report`. Returns
    "done" if every cell ran and the runner was told to end, "stopped" otherwise (report.stopped says why).
    `describe_exit` says how the notebook's process ended; `gone` whether it is known to have ended."""
    notebook_deadline = time.monotonic() + limits.notebook_timeout_s
    unexpected = 0
    for cell in cells:
        message = {"index": cell.index, "kind": cell.kind, "name": cell.name, "source": cell.source}
        if cell.probe:
            message[protocol.PROBE] = True
        if not send(stream, message):
            report.stopped = describe_exit() + f", before cell {cell.index + 1}"
            return "stopped"
        cell_deadline = min(time.monotonic() + limits.cell_timeout_s + config.CELL_KILL_GRACE_S, notebook_deadline)
        while True:
            frame = channel.next_frame(cell_deadline)
            if frame is None or (frame.get("type") == protocol.DONE and frame.get("index") == cell.index):
                break
            unexpected += 1  # the kernel's token and pid, but not the frame the kernel sends now
        if frame is None:
            if time.monotonic() >= notebook_deadline:
                report.stopped = (
                    f"the notebook ran longer than {limits.notebook_timeout_s:g} s in all "
                    f"(stopped in cell {cell.index + 1})"
                )
            elif channel.eof or gone():
                report.stopped = describe_exit() + f", in cell {cell.index + 1}"
            else:
                report.stopped = (
                    f"cell {cell.index + 1} ran longer than {limits.cell_timeout_s:g} s and did not stop; "
                    "the notebook was stopped"
                )
            break
        report.cells[cell.index] = cell_run(cell.index, frame)
    channel.rejected += unexpected
    if report.stopped:
        return "stopped"
    send(stream, {protocol.END: True})
    return "done"


def cell_run(index: int, frame: dict) -> CellRun:
    """A DONE frame read as a CellRun, whatever its fields hold. The runner writes its frames from the process
    where student code runs, and student code can write frames too (README, threat model): a field of the wrong
    type is read as the failing value, never the passing one, and never breaks the grader."""
    outputs = frame.get("outputs")
    error = frame.get("error")
    if error is not None:
        if not isinstance(error, dict):
            error = {"ename": "Error", "evalue": str(error)[:2000]}
        traceback = error.get("traceback")
        error = {
            "ename": str(error.get("ename") or "Error"),
            "evalue": str(error.get("evalue", ""))[:2000],
            "traceback": [str(line) for line in traceback] if isinstance(traceback, list) else [],
        }
    seconds, count, tamper = frame.get("seconds"), frame.get("execution_count"), frame.get("tamper")
    return CellRun(
        index,
        [output for output in outputs if isinstance(output, dict)] if isinstance(outputs, list) else [],
        error,
        float(seconds) if isinstance(seconds, (int, float)) else 0.0,
        count if type(count) is int else 0,
        [str(note) for note in tamper] if isinstance(tamper, list) else [],
        frame.get(protocol.PROBE),
    )


def wait_briefly(proc: subprocess.Popen) -> subprocess.Popen:
    try:
        proc.wait(timeout=2)
    except subprocess.TimeoutExpired:
        pass
    return proc


def send(stream: IO[bytes] | None, message: dict) -> bool:
    """One frame to a kernel (its stdin, or a fork server's child's command pipe); False if it is gone."""
    if stream is None:
        return False
    try:
        stream.write(protocol.encode(message))
        stream.flush()
        return True
    except (BrokenPipeError, OSError, ValueError):
        return False
