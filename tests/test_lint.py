"""The code is linted and type-checked by the test command, with the settings in pyproject.toml:
`ruff check` (rules and the reason for each ignore there), `ruff format --check` on the packages and
tools, and `mypy` on the grader (`autograder`), the course's tooling (`coursetools`) and its code (`course`).

Run the same by hand:

    .venv/bin/ruff check autograder coursetools course tools _ext tests
    .venv/bin/ruff format --check autograder coursetools tools _ext tests
    .venv/bin/mypy
"""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

from book_build import ROOT

pytestmark = pytest.mark.slow

BIN = Path(sys.executable).parent
LINTED = ["autograder", "coursetools", "course", "tools", "_ext", "tests"]
FORMATTED = ["autograder", "coursetools", "tools", "_ext", "tests"]


def run(*command: str) -> subprocess.CompletedProcess:
    return subprocess.run([str(BIN / command[0]), *command[1:]], cwd=ROOT, capture_output=True, text=True, timeout=600)


def test_ruff_finds_nothing():
    result = run("ruff", "check", "--no-cache", *LINTED)
    assert result.returncode == 0, result.stdout[-6000:] + result.stderr[-2000:]


def test_the_packages_are_formatted():
    result = run("ruff", "format", "--no-cache", "--check", *FORMATTED)
    assert result.returncode == 0, "run `.venv/bin/ruff format " + " ".join(FORMATTED) + "`:\n" + result.stdout[-4000:]


def test_mypy_finds_nothing():
    result = run("mypy")
    assert result.returncode == 0, result.stdout[-6000:] + result.stderr[-2000:]
