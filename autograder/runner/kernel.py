"""The kernel: runs a notebook's cells one at a time and reports each on the result channel (part of the
runner, which runs inside the sandbox: standard library and the notebook's packages only)."""

from __future__ import annotations

import json
import os
import signal
import sys
import time
from typing import Any

from . import plain, protocol
from .guard import _MISSING, GUARDED_MODULES, Guard, remember_classes


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


class Runner:
    def __init__(self, channel, commands, hello: dict):
        self.channel = channel
        self.commands = commands
        self.token = hello["token"]
        self.cell_timeout = float(hello.get("cell_timeout", 60))
        self.max_output = int(hello.get("max_output", 100_000))
        self.pid = os.getpid()
        self.shell = _make_shell()
        self.outputs: list = []
        self.shell.display_pub.sink = self
        self.shell.displayhook.sink = self
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
            if stream.dropped:
                self.outputs.append(
                    {
                        "output_type": "stream",
                        "name": "stderr",
                        "text": f"\n[{stream.dropped} more characters of {stream.name} not kept]\n",
                    }
                )
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
                return {"ename": "GraderIntegrityError", "evalue": "; ".join(problems), "traceback": []}, notes
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
                error = {
                    "ename": "GraderIntegrityError",
                    "evalue": "the code under test changed the test environment while the test ran: "
                    + ", ".join((during + problems)[:8]),
                    "traceback": [],
                }
            elif problems:
                error = {"ename": "GraderIntegrityError", "evalue": "; ".join(problems), "traceback": []}
        return error, notes

    def take_probe(self, namespace: dict) -> dict | None:
        """The plain data the test's probe left in `probe`, encoded for the judge (self.probe), or the
        error that fails the cell: no data, or data that is not plain."""
        value = namespace.pop(protocol.PROBE, _MISSING)
        if value is _MISSING:
            return {"ename": "ProbeError", "evalue": "the test's probe handed over nothing", "traceback": []}
        try:
            self.probe = plain.encode(value)
        except plain.NotPlain as exc:
            return {"ename": "ProbeError", "evalue": f"the test could not hand over its data: {exc}", "traceback": []}
        return None


def _on_alarm(signum, frame):
    raise CellTimeout("this cell ran longer than its time limit")


def _error(exc: BaseException) -> dict:
    try:
        evalue = str(exc)
    except BaseException:  # noqa: BLE001 - a student exception whose __str__ fails
        evalue = "(unprintable)"
    return {"ename": type(exc).__name__, "evalue": evalue[:2000], "traceback": []}


_shell: Any = None  # made once per process; in a fork server, before it forks (prepare_for_forks)


def _make_shell():
    """The process's IPython shell (made on first use): outputs, figures and errors collected as notebook outputs."""
    global _shell
    if _shell is None:
        _shell = _new_shell()
    return _shell


def prepare_for_forks() -> None:
    """What every child of a fork server would otherwise redo: the shell, and the Guard's walk over all classes
    (together about 60 ms of each submission's start on a quiet machine, three times that on a busy one).
    Nothing of a submission runs before the fork, so each child starts from the same untouched shell."""
    _make_shell()
    remember_classes()


def _new_shell():
    from IPython.core.displayhook import DisplayHook
    from IPython.core.displaypub import DisplayPublisher
    from IPython.core.interactiveshell import InteractiveShell

    class Publisher(DisplayPublisher):
        sink: Any = None  # the Runner, set once the shell exists

        def publish(self, data, metadata=None, source=None, *, transient=None, update=False, **kwargs):
            self.sink.add_output(
                {"output_type": "display_data", "data": _jsonable(data), "metadata": _jsonable(metadata or {})}
            )

        def clear_output(self, wait=False):
            self.sink.outputs.clear()

    class Hook(DisplayHook):
        sink: Any = None  # the Runner, set once the shell exists

        def write_output_prompt(self):
            pass

        def write_format_data(self, format_dict, md_dict=None):
            self.sink.add_output(
                {
                    "output_type": "execute_result",
                    "data": _jsonable(format_dict),
                    "metadata": _jsonable(md_dict or {}),
                    "execution_count": self.sink.count,
                }
            )

    class Shell(InteractiveShell):
        last_error = None

        def _showtraceback(self, etype, evalue, stb):
            try:
                text = str(evalue)
            except BaseException:  # noqa: BLE001
                text = "(unprintable)"
            self.last_error = {
                "ename": getattr(etype, "__name__", "Error"),
                "evalue": text[:2000],
                "traceback": list(stb)[-50:],
            }

        displayhook_class = Hook
        display_pub_class = Publisher

        def ask_exit(self):  # `exit()` in a cell ends nothing
            pass

    from traitlets.config import Config

    # No history database and so no history thread: IPython stops and restarts that thread
    # around every fork, and a fork bomb that used up the process limit would then fail
    # the next cell for a thread the student never asked for.
    settings = Config()
    settings.HistoryManager.enabled = False
    settings.HistoryManager.hist_file = ":memory:"
    shell = Shell.instance(colors="NoColor", config=settings)
    if "matplotlib" in sys.modules:
        try:
            shell.enable_matplotlib("inline")
        except Exception:  # noqa: BLE001, S110 - no matplotlib-inline: figures are just not shown
            pass
    return shell


def _jsonable(data):
    try:
        json.dumps(data)
        return data
    except (TypeError, ValueError):
        return {str(k): str(v) for k, v in dict(data).items()}


def _seed_everything(seed: int = 0) -> None:
    """Every kernel starts from the same random state, with torch's deterministic algorithms
    on where the platform has them (warn_only: an op without one still runs)."""
    import random

    random.seed(seed)
    numpy = sys.modules.get("numpy")
    if numpy is not None:
        numpy.random.seed(seed)
    torch = sys.modules.get("torch")
    if torch is not None:
        torch.manual_seed(seed)  # CPU and every CUDA device
        try:
            torch.use_deterministic_algorithms(True, warn_only=True)  # free once torch._dynamo is imported
        except Exception:  # noqa: BLE001, S110 - an old or partial torch: seeded is still better than nothing
            pass


# Imported once, before any notebook runs (and, in a fork server, before the fork). torch._dynamo, before the
# guard's snapshot: when first imported (by an optimizer's first step, say) it rebinds torch.manual_seed and others,
# which the guard would report as changed by the code under test; it also brings what assert_close's first call
# imports (sympy) and what torch.use_deterministic_algorithms imports (Inductor's config, 1 s when done there).
PRE_WARMED = (
    "numpy",
    "torch",
    "torch._dynamo",
    "matplotlib",
    "matplotlib.pyplot",
    "IPython.core.interactiveshell",
    "matplotlib_inline.backend_inline",
    "traitlets.config",
)


def _pre_warm() -> None:
    for name in (*PRE_WARMED, *GUARDED_MODULES):
        try:
            __import__(name)
        except Exception:  # noqa: BLE001, S110 - exercises that do not need it
            pass
