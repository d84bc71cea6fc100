"""The instructor's Ctrl-C, remembered until the run has stopped.

Python turns SIGINT into a KeyboardInterrupt wherever the main thread happens to be. When that is a finaliser or a
weakref callback (SQLAlchemy's `InstanceState._cleanup`, in a CI run), the interpreter prints "Exception ignored in"
and carries on: that `grade` then graded the whole class and exited 0 instead of 130. `catch` installs a handler
that also remembers the interrupt, and the grading loop calls `check` after each result, so a Ctrl-C swallowed that
way still stops the run at the next submission.

The bottom of the package with `config` and `errors`: only the standard library.
"""

from __future__ import annotations

import signal
import threading

_requested = threading.Event()


def _on_sigint(signum, frame) -> None:
    _requested.set()
    raise KeyboardInterrupt


def catch() -> None:
    """Remember every Ctrl-C from now on (the CLI calls it once, before its command; signals: main thread only)."""
    _requested.clear()
    if threading.current_thread() is threading.main_thread():
        signal.signal(signal.SIGINT, _on_sigint)


def check() -> None:
    """KeyboardInterrupt if Ctrl-C was pressed since `catch`, even if the one it raised was swallowed."""
    if _requested.is_set():
        raise KeyboardInterrupt
