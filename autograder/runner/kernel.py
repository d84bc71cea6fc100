"""The kernel: runs a notebook's cells one at a time and reports each on the result channel (part of the
runner, which runs inside the sandbox: standard library and the notebook's packages only).

Student cells go through the process's IPython shell (shell.py); locked and test cells are compiled and run
here, and test cells between the Guard's checks (guard.py). The process is primed before a Runner is made
(priming.py): the Guard's snapshot, taken when the Runner is made, is of modules already imported.
"""

from __future__ import annotations

import json
import os
import signal
import sys
import time
from typing import Any

from . import plain, protocol
from .guard import _MISSING, Guard
from .shell import shell_for


class CellTimeout(BaseException):
    """Raised in the cell when its time is up (BaseException: `except Exception` does not swallow it)."""


class CappedStream:
    """sys.stdout/sys.stderr for one cell: keeps the first `limit` characters."""

    def __init__(self, name: str, limit: int, sink: list):
        self.name, self.limit, self.sink = name, limit, sink
        self.kept = 0
        self.dropped = 0
        self.encoding = "utf-8"

    def write(self, text) -> int:
        text = str(text)
        room = self.limit - self.kept
        if room > 0:
            piece = text[:room]
            self.kept += len(piece)
            if self.sink and self.sink[-1].get("output_type") == "stream" and self.sink[-1]["name"] == self.name:
                self.sink[-1]["text"] += piece
            elif piece:
                self.sink.append({"output_type": "stream", "name": self.name, "text": piece})
        self.dropped += max(0, len(text) - max(room, 0))
        return len(text)

    def writelines(self, lines) -> None:
        for line in lines:
            self.write(line)

    def flush(self) -> None:
        pass

    def isatty(self) -> bool:
        return False

    def fileno(self) -> int:
        raise OSError("output of a graded notebook has no file descriptor")

    def dropped_note(self) -> dict | None:
        """The output that says how much of this stream was not kept, if any was not."""
        if not self.dropped:
            return None
        return {
            "output_type": "stream",
            "name": "stderr",
            "text": f"\n[{self.dropped} more characters of {self.name} not kept]\n",
        }


class Runner:
    """One notebook's run in this process: cells read from the grader one at a time, each run and its outputs,
    error and repairs reported on the channel."""

    def __init__(self, channel, commands, hello: dict):
        self.channel = channel
        self.commands = commands
        self.token = hello["token"]
        self.cell_timeout = float(hello.get("cell_timeout", 60))
        self.max_output = int(hello.get("max_output", 100_000))
        self.pid = os.getpid()
        self.outputs: list = []
        self.shell = shell_for(self)  # before the Guard: its snapshot is of the state the shell leaves
        self.guard = Guard(bool(hello.get("harden", True)))
        self.count = 0

    # -- channel ----------------------------------------------------------------------------

    def send(self, message: dict) -> None:
        if os.getpid() != self.pid:  # a fork of this process (student code) must not speak for it
            os._exit(0)
        message.update(pid=self.pid, token=self.token)
        protocol.write_frame(self.channel, message)

    def add_output(self, output: dict) -> None:
        size = sum(len(str(v)) for v in output.get("data", {}).values())
        if size > self.max_output * 20:  # a figure is allowed to be bigger than text
            output = {"output_type": "stream", "name": "stderr", "text": f"[output of {size} characters not kept]\n"}
        self.outputs.append(output)

    # -- cells ------------------------------------------------------------------------------

    def serve(self) -> None:
        self.send({"type": protocol.READY})
        while True:
            line = self.commands.readline()
            if not line:
                return
            cell = json.loads(line)
            if cell.get(protocol.END):
                return
            started = time.monotonic()
            try:
                result = self.run_cell(cell)
            except BaseException as exc:  # noqa: BLE001 - student code broke the runner itself
                if os.getpid() != self.pid:
                    os._exit(0)
                error = _error(exc)
                result = {
                    "outputs": [{"output_type": "error", **error}],
                    "error": error,
                    "tamper": [],
                    "execution_count": self.count,
                }
            result.update(type=protocol.DONE, index=cell["index"], seconds=round(time.monotonic() - started, 3))
            self.send(result)

    def run_cell(self, cell: dict) -> dict:
        self.outputs = []
        self.count += 1
        stdout = CappedStream("stdout", self.max_output, self.outputs)
        stderr = CappedStream("stderr", self.max_output, self.outputs)
        tamper: list[str] = []
        error = None
        self.probe: Any = None
        saved = sys.stdout, sys.stderr
        sys.stdout, sys.stderr = stdout, stderr
        signal.signal(signal.SIGALRM, _on_alarm)
        try:
            if cell["kind"] == protocol.CELL_TEST:
                error, tamper = self.run_test(cell)
            elif cell["kind"] == protocol.CELL_LOCKED:
                error = self.run_trusted(cell, track_names=True)
            else:
                error = self.run_student(cell)
                # builtins are the runner's too: a student who replaced isinstance would
                # break the grader, not just their notebook. Put them back after every cell.
                repaired = self.guard.restore_builtins()
                if repaired:
                    tamper.append("put back after this cell: " + ", ".join(repaired[:8]))
        finally:
            signal.setitimer(signal.ITIMER_REAL, 0)
            sys.stdout, sys.stderr = saved
        if os.getpid() != self.pid:
            os._exit(0)
        for stream in (stdout, stderr):
            note = stream.dropped_note()
            if note is not None:
                self.outputs.append(note)
        if error is not None:
            self.outputs.append({"output_type": "error", **error})
        result = {"outputs": self.outputs, "error": error, "tamper": tamper, "execution_count": self.count}
        if cell.get(protocol.PROBE):
            result[protocol.PROBE] = self.probe
        return result

    def _alarm(self) -> None:
        signal.setitimer(signal.ITIMER_REAL, self.cell_timeout)

    def run_student(self, cell: dict) -> dict | None:
        self.shell.last_error = None
        self._alarm()
        try:
            self.shell.run_cell(cell["source"], store_history=True)
        except BaseException as exc:  # noqa: BLE001 - IPython itself failed (e.g. a timeout in a hook)
            return _error(exc)
        finally:
            signal.setitimer(signal.ITIMER_REAL, 0)
        return self.shell.last_error

    def run_trusted(self, cell: dict, track_names: bool = False) -> dict | None:
        namespace = self.shell.user_ns
        before = dict(namespace) if track_names else {}
        self._alarm()
        try:
            exec(
                compile(cell["source"], f"<{cell['kind']} cell {cell.get('name') or cell['index']}>", "exec"), namespace
            )
        except BaseException as exc:  # noqa: BLE001 - any exception fails the cell, whatever its type
            return _error(exc)
        finally:
            signal.setitimer(signal.ITIMER_REAL, 0)
        if track_names:
            for name, value in namespace.items():
                if before.get(name, _MISSING) is not value and not name.startswith("_"):
                    self.guard.trusted[name] = value
        return None

    def run_test(self, cell: dict) -> tuple[dict | None, list[str]]:
        guard, namespace = self.guard, self.shell.user_ns
        notes: list[str] = []
        if guard.enabled:
            restored = guard.restore(namespace)
            if restored:
                notes.append(
                    "put back before this test: " + ", ".join(restored[:8]) + (" ..." if len(restored) > 8 else "")
                )
            # the walk over every class for new ones is left to the check after the test, which sees the
            # classes made before it too (most of the guard's cost was that walk, before and after each test)
            problems = guard.unfixable(new_classes=False)
            if problems:
                return _failure("GraderIntegrityError", "; ".join(problems)), notes
        if cell.get(protocol.PROBE):
            namespace.pop(protocol.PROBE, None)  # only what this cell's probe sets is handed over
        error = self.run_trusted(cell)
        if cell.get(protocol.PROBE) and error is None:
            error = self.take_probe(namespace)
        if guard.enabled and error is None:
            during = guard.changed()
            if sys.gettrace() is not None or sys.getprofile() is not None:
                during.append("a trace or profile function")
            problems = guard.unfixable()
            if during:
                guard.restore(namespace)
                error = _failure(
                    "GraderIntegrityError",
                    "the code under test changed the test environment while the test ran: "
                    + ", ".join((during + problems)[:8]),
                )
            elif problems:
                error = _failure("GraderIntegrityError", "; ".join(problems))
        return error, notes

    def take_probe(self, namespace: dict) -> dict | None:
        """The plain data the test's probe left in `probe`, encoded for the judge (self.probe), or the
        error that fails the cell: no data, or data that is not plain."""
        value = namespace.pop(protocol.PROBE, _MISSING)
        if value is _MISSING:
            return _failure("ProbeError", "the test's probe handed over nothing")
        try:
            self.probe = plain.encode(value)
        except plain.NotPlain as exc:
            return _failure("ProbeError", f"the test could not hand over its data: {exc}")
        return None


def _on_alarm(signum, frame):
    raise CellTimeout("this cell ran longer than its time limit")


def _error(exc: BaseException) -> dict:
    try:
        evalue = str(exc)
    except BaseException:  # noqa: BLE001 - a student exception whose __str__ fails
        evalue = "(unprintable)"
    return _failure(type(exc).__name__, evalue[:2000])


def _failure(ename: str, evalue: str) -> dict:
    """A cell's error, in the form of the DONE frame's "error" (no traceback)."""
    return {"ename": ename, "evalue": evalue, "traceback": []}
