"""Run a notebook's cells in a sandbox: the one entry point of this package."""

from __future__ import annotations

import os
import secrets
import shutil
import subprocess
import tempfile
import time
from pathlib import Path

from autograder import config
from autograder.model.records import Limits
from autograder.runner import protocol
from autograder.runner.isolation import keys_of, wait_for_keys
from autograder.sandbox.command import (
    RUNNER,
    SCRATCH,
    bwrap_command,
    environment,
    unprivileged_command,
    unsandboxed_command,
)
from autograder.sandbox.forkserver import fork_servers_enabled, server_for
from autograder.sandbox.framing import Cell, Channel, Report, describe_exit, kill, send, serve_cells, tail, wait_briefly
from autograder.sandbox.slots import slot


def _private_dirs(uid: int) -> tuple[str, Path]:
    """For a runner as `uid` without bubblewrap: its scratch dir (its own, 0700) and a copy of the runner's
    files that it can read (the grader's own folder may be readable by root only)."""
    scratch = tempfile.mkdtemp(prefix="autograder-scratch-")
    os.chown(scratch, uid, uid)
    os.chmod(scratch, 0o700)
    copy = Path(tempfile.mkdtemp(prefix="autograder-runner-"))
    os.chmod(copy, 0o755)
    runner = copy / "runner"
    runner.mkdir(mode=0o755)
    for path in RUNNER.glob("*.py"):
        (runner / path.name).write_bytes(path.read_bytes())
        (runner / path.name).chmod(0o644)
    return scratch, runner


def _end_everything_of(uid: int) -> None:
    """Kill every process of `uid` (what the notebook left running, daemons included): `kill -9 -1` as that uid
    reaches exactly its own processes."""
    for _ in range(20):
        alive = [e for e in os.scandir("/proc") if e.name.isdigit() and _owner(e.path) == uid]
        if not alive:
            return
        drop = ["setpriv", f"--reuid={uid}", f"--regid={uid}", "--clear-groups", "--", "/bin/sh", "-c", "kill -9 -1"]
        subprocess.run(drop, capture_output=True, timeout=30)
        time.sleep(0.05)


def _owner(path: str) -> int | None:
    try:
        return os.stat(path).st_uid
    except OSError:
        return None


def run_cells(
    cells: list[Cell],
    limits: Limits | None = None,
    sandboxed: bool = True,
    harden: bool = True,
    unprivileged: bool = False,
) -> Report:
    """Run `cells` in order in one fresh process (a fork of a warm sandboxed server where one
    runs, see ForkServer; else a new sandbox); one CellRun per cell that finished.

    `unprivileged` (with `sandboxed` False, as root): no bubblewrap, but the process runs as a uid of its own
    (command.unprivileged_command), in its own scratch dir; when it ends, every process of that uid is killed."""
    limits = limits or Limits()
    if sandboxed and fork_servers_enabled():
        with slot() as number:
            return server_for(number, limits).run(cells, limits, harden)
    token = secrets.token_hex(16)
    report = Report(cells={})
    with slot() as number, tempfile.TemporaryFile() as errors:
        uid = config.SANDBOX_UID_BASE + number
        cwd = None
        scratch_dir = None
        runner_copy = None
        if sandboxed:
            cmd = bwrap_command(limits, number)
        elif unprivileged:
            scratch_dir, runner_copy = _private_dirs(uid)
            cmd, cwd = unprivileged_command(limits, uid, runner_copy), scratch_dir
        else:
            cmd = unsandboxed_command(limits)
            scratch_dir = tempfile.mkdtemp(prefix="autograder-scratch-")
            cwd = scratch_dir
        keys_before = keys_of(uid)  # as root the uid is this sandbox's alone: none of its processes is alive
        started = time.monotonic()
        try:
            proc = subprocess.Popen(
                cmd,
                stdin=subprocess.PIPE,
                stdout=subprocess.PIPE,
                stderr=errors,
                env=environment(scratch_dir if unprivileged and scratch_dir else SCRATCH),
                cwd=cwd,
                start_new_session=True,
            )
        except OSError as exc:
            report.machinery_error = f"could not start the notebook's process: {exc}"
            if runner_copy is not None:
                shutil.rmtree(runner_copy.parent, ignore_errors=True)
            if scratch_dir:
                shutil.rmtree(scratch_dir, ignore_errors=True)
            return report
        assert proc.stdout is not None, "the kernel's stdout is a pipe"
        channel = Channel(proc.stdout.fileno(), token, max_bytes=64 << 20)
        try:
            hello = {
                "token": token,
                "harden": harden,
                "cell_timeout": limits.cell_timeout_s,
                "max_output": limits.max_output_chars,
            }
            if sandboxed:
                hello[protocol.ISOLATE] = limits.scratch_bytes
            send(proc.stdin, hello)
            frame = channel.next_frame(started + config.STARTUP_TIMEOUT_S)
            if frame is None or frame.get("type") != protocol.READY:
                report.machinery_error = f"the grader's kernel did not start ({describe_exit(proc)}): {tail(errors)}"
                return report
            report.startup_seconds = round(time.monotonic() - started, 2)
            serve_cells(
                proc.stdin,
                channel,
                cells,
                limits,
                report,
                lambda: describe_exit(wait_briefly(proc)),
                lambda: proc.poll() is not None,
            )
            report.protocol = channel.protocol_notes()
        finally:
            kill(proc)
            if unprivileged and not sandboxed:
                _end_everything_of(uid)
            if sandboxed and os.geteuid() == 0 and not wait_for_keys(uid, keys_before):
                report.machinery_error = report.machinery_error or f"the kernel kept keys of uid {uid}"
            if runner_copy is not None:
                shutil.rmtree(runner_copy.parent, ignore_errors=True)
            if scratch_dir:
                shutil.rmtree(scratch_dir, ignore_errors=True)
    return report
