"""Build the Jupyter Book once per test session; shared by test_book.py and test_browser.py.

The build runs in place (``_build/``) so that the lessons' execution results come from
the jupyter cache (``_build/.jupyter_cache``) after the first build. ``--all`` forces
Sphinx to re-read every page, so warnings of unchanged pages are reported again
instead of being hidden by an incremental build, and ``_build/html`` is removed first,
so that the site holds only what this build wrote (a page or asset left by an earlier
build would escape the leak and size checks, or be tested in place of the real one).

With pytest-xdist, workers are separate processes: a file lock serialises them and a
marker keyed on the run's ``PYTEST_XDIST_TESTRUNUID`` lets the workers that come second
reuse the first one's build instead of rebuilding under its feet.
"""

from __future__ import annotations

import fcntl
import json
import os
import re
import resource
import shutil
import subprocess
import sys
import time
from dataclasses import dataclass
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
BUILD_DIR = ROOT / "_build"
HTML_DIR = BUILD_DIR / "html"
# A guard against a hung build, not a speed target (tests/test_book.py checks the build's CPU time): a cold build
# takes several minutes of wall clock on 2 cores, and many more while other work runs beside it.
BUILD_TIMEOUT_S = 1800
ERROR_LINE = re.compile(r"Error\b|Exception\b|Traceback|WARNING|CRITICAL")
# `make book`'s command: jupyter-book build, its lessons executed in parallel processes (tools/build_book.py)
BUILD_COMMAND = [sys.executable, "tools/build_book.py", ".", "-W", "-n", "--keep-going", "--all"]


@dataclass(frozen=True)
class BookBuild:
    returncode: int
    log: str
    seconds: float
    html_dir: Path
    cpu_seconds: float = 0.0  # the build's processes and the kernels they ran, user + system

    def failure(self) -> str:
        """Why the build failed, for a test's message: the log around its first error (the first cause; a
        failed parallel read ends in the tracebacks of the kernels it stopped) and the log's end."""
        lines = self.log.splitlines()
        first = next(
            (i for i, line in enumerate(lines) if ERROR_LINE.search(line) and "NbParserConfig" not in line),
            None,
        )
        head = "" if first is None else "\n".join(lines[max(0, first - 20) : first + 20]) + "\n[...]\n"
        return f"jupyter-book build failed (exit {self.returncode}):\n{head}{self.log[-4000:]}"


_session_build: BookBuild | None = None


def _env() -> dict[str, str]:
    """The environment of the build: the interpreter's bin dir (the venv) first on PATH."""
    env = dict(os.environ)
    env["PATH"] = str(Path(sys.executable).parent) + os.pathsep + env.get("PATH", "")
    env.setdefault("PYTHONHASHSEED", "0")
    env.pop("MPLBACKEND", None)  # the lessons' figures come from the kernel's inline backend
    return env


def vendor_mathjax() -> None:
    result = subprocess.run(
        [sys.executable, str(ROOT / "tools" / "vendor_mathjax.py")],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=300,
    )
    if result.returncode != 0:
        raise RuntimeError(f"tools/vendor_mathjax.py failed:\n{result.stdout}\n{result.stderr}")


def _run_build() -> BookBuild:
    vendor_mathjax()
    shutil.rmtree(HTML_DIR, ignore_errors=True)
    env = _env()
    start, cpu_start = time.monotonic(), _children_cpu_seconds()
    result = subprocess.run(
        BUILD_COMMAND,
        cwd=ROOT,
        env=env,
        capture_output=True,
        text=True,
        timeout=BUILD_TIMEOUT_S,
    )
    seconds, cpu_seconds = time.monotonic() - start, _children_cpu_seconds() - cpu_start
    return BookBuild(result.returncode, result.stdout + result.stderr, seconds, HTML_DIR, cpu_seconds)


def _children_cpu_seconds() -> float:
    """CPU time of this process's finished children and of everything they waited for (the kernels)."""
    usage = resource.getrusage(resource.RUSAGE_CHILDREN)
    return usage.ru_utime + usage.ru_stime


def build_book() -> BookBuild:
    """Build the book once per pytest session (and once per xdist run); return the result."""
    global _session_build
    if _session_build is not None:
        return _session_build

    run_id = os.environ.get("PYTEST_XDIST_TESTRUNUID")
    BUILD_DIR.mkdir(exist_ok=True)
    with open(BUILD_DIR / ".book-build.lock", "w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        try:
            marker = BUILD_DIR / ".book-build-result.json"
            if run_id and marker.is_file():
                saved = json.loads(marker.read_text())
                if saved.get("run_id") == run_id:
                    _session_build = BookBuild(
                        saved["returncode"], saved["log"], saved["seconds"], HTML_DIR, saved.get("cpu_seconds", 0.0)
                    )
                    return _session_build
            build = _run_build()
            marker.write_text(
                json.dumps(
                    {
                        "run_id": run_id,
                        "returncode": build.returncode,
                        "log": build.log,
                        "seconds": build.seconds,
                        "cpu_seconds": build.cpu_seconds,
                    }
                )
            )
            _session_build = build
            return build
        finally:
            fcntl.flock(lock, fcntl.LOCK_UN)
