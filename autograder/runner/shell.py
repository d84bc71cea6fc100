"""The IPython shell that runs student cells (part of the runner, which runs inside the sandbox: standard
library and the notebook's packages only).

Student cells run through IPython, as in a Jupyter kernel (magics, display, inline figures, `In`/`Out`); what
the shell would print or display is handed to a sink (the kernel's Runner) as notebook outputs, and the error
of a failed cell is kept as `last_error` instead of printed. One shell per process, made on first use: in a
fork server before it forks (priming.prepare_for_forks), so each child starts from the same untouched shell.

IPython is imported only when the shell is made, never when this module is: __main__ imports the runner's
modules before it isolates the process (isolation.py), so until then they import the standard library only;
IPython comes with the other packages when the process is primed (priming.py).
"""

from __future__ import annotations

import json
import sys
from typing import Any

_shell: Any = None  # made once per process; in a fork server, before it forks (priming.prepare_for_forks)


def make_shell():
    """The process's IPython shell (made on first use): outputs, figures and errors collected as notebook outputs."""
    global _shell
    if _shell is None:
        _shell = _new_shell()
    return _shell


def shell_for(sink: Any):
    """The process's shell, its displays and results handed to `sink` (the kernel's Runner: its `add_output`,
    `outputs`, the outputs of the cell that runs now, which a display's clear_output empties, and `count`)."""
    shell = make_shell()
    shell.display_pub.sink = sink
    shell.displayhook.sink = sink
    return shell


def _new_shell():
    shell_class = _shell_class()
    from traitlets.config import Config

    # No history database and so no history thread: IPython stops and restarts that thread
    # around every fork, and a fork bomb that used up the process limit would then fail
    # the next cell for a thread the student never asked for.
    settings = Config()
    settings.HistoryManager.enabled = False
    settings.HistoryManager.hist_file = ":memory:"
    shell = shell_class.instance(colors="NoColor", config=settings)
    if "matplotlib" in sys.modules:
        try:
            shell.enable_matplotlib("inline")
        except Exception:  # noqa: BLE001, S110 - no matplotlib-inline: figures are just not shown
            pass
    return shell


def _shell_class() -> Any:
    """The shell's class (defined here, with its display hook and publisher: IPython is imported now)."""
    from IPython.core.interactiveshell import InteractiveShell

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

        displayhook_class = _hook_class()
        display_pub_class = _publisher_class()

        def ask_exit(self):  # `exit()` in a cell ends nothing
            pass

    return Shell


def _hook_class() -> Any:
    """The display hook: a cell's result (its last expression) as an execute_result output."""
    from IPython.core.displayhook import DisplayHook

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

    return Hook


def _publisher_class() -> Any:
    """The display publisher: `display()` and figures as display_data outputs."""
    from IPython.core.displaypub import DisplayPublisher

    class Publisher(DisplayPublisher):
        sink: Any = None  # the Runner, set once the shell exists

        def publish(self, data, metadata=None, source=None, *, transient=None, update=False, **kwargs):
            self.sink.add_output(
                {"output_type": "display_data", "data": _jsonable(data), "metadata": _jsonable(metadata or {})}
            )

        def clear_output(self, wait=False):
            self.sink.outputs.clear()

    return Publisher


def _jsonable(data):
    try:
        json.dumps(data)
        return data
    except (TypeError, ValueError):
        return {str(k): str(v) for k, v in dict(data).items()}
