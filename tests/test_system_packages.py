"""`make test` on a machine without the system packages: it installs them when it can (root or passwordless
sudo, as CI runs it), and otherwise stops in its first seconds with one line naming the command to run,
never with hundreds of test errors (tools/system_packages.sh, called first by `make test` and `make bench-grade`).

The tools are hidden from it: it runs with a PATH that holds only the basic commands, as an unprivileged user
without sudo (`nobody`, through setpriv, when the tests run as root).
"""

from __future__ import annotations

import os
import shutil
import subprocess
import tempfile
import time
from pathlib import Path

import pytest

from book_build import ROOT

SCRIPT = ROOT / "tools" / "system_packages.sh"
BASICS = ["bash", "sh", "env", "id", "make", "apt-get", "cat", "dirname"]


@pytest.fixture
def bare_path():
    """A PATH with the basic commands and nothing else (no bwrap, chromium, prlimit, sudo), in a folder the
    unprivileged user can read (pytest's tmp_path is private to the user running the tests)."""
    top = Path(tempfile.mkdtemp(prefix="bare-path-"))
    top.chmod(0o755)
    bin_dir = top / "bin"
    bin_dir.mkdir(mode=0o755)
    for name in BASICS:
        found = shutil.which(name)
        if found:
            (bin_dir / name).symlink_to(found)
    yield str(bin_dir)
    shutil.rmtree(top, ignore_errors=True)


def as_unprivileged(command: list[str], path: str, cwd: Path) -> subprocess.CompletedProcess:
    command = ["env", "-i", f"PATH={path}", "HOME=/tmp", *command]
    if os.geteuid() == 0:
        command = [shutil.which("setpriv") or "setpriv", "--reuid=65534", "--regid=65534", "--clear-groups", *command]
    elif shutil.which("sudo") and subprocess.run(["sudo", "-n", "true"], capture_output=True).returncode == 0:
        pytest.skip("this user has passwordless sudo: the script would install instead of stopping")
    return subprocess.run(command, cwd=cwd, capture_output=True, text=True, timeout=60)


def test_without_root_or_sudo_it_stops_with_the_command_to_run(bare_path):
    started = time.monotonic()
    result = as_unprivileged(
        ["bash", str(SCRIPT), "bwrap:bubblewrap", "chromium:chromium", "id:coreutils"], bare_path, Path("/")
    )
    assert result.returncode == 1, result
    lines = result.stderr.strip().splitlines()
    assert len(lines) == 1, result.stderr
    assert lines[0] == (
        "error: missing system packages: bubblewrap chromium; install them first: "
        "sudo sh -c 'apt-get update && apt-get install -y bubblewrap chromium'"
    )
    assert time.monotonic() - started < 5


def test_make_test_stops_before_building_anything(bare_path):
    """The README's test command itself, from the repository: one line, in seconds, before the venv or pytest."""
    started = time.monotonic()
    result = as_unprivileged(["make", "--no-print-directory", "test"], bare_path, ROOT)
    assert result.returncode != 0
    errors = [line for line in result.stderr.splitlines() if line.startswith("error:")]
    assert len(errors) == 1 and "bubblewrap" in errors[0] and "chromium" in errors[0], result.stderr
    assert "apt-get install -y" in errors[0]
    assert "pytest" not in result.stdout and "pip" not in result.stdout, result.stdout
    assert time.monotonic() - started < 10


def test_present_packages_need_nothing(tmp_path):
    result = subprocess.run(
        ["bash", str(SCRIPT), "bash:bash", "id:coreutils"], capture_output=True, text=True, timeout=30
    )
    assert result.returncode == 0 and result.stdout == "" and result.stderr == ""
