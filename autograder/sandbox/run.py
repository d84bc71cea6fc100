"""Run a notebook's cells in a sandbox: the one entry point of this package."""

from __future__ import annotations

import secrets
import shutil
import subprocess
import tempfile
import time

from autograder import config
from autograder.model.records import Limits
from autograder.runner import protocol
from autograder.sandbox.command import bwrap_command, environment, unsandboxed_command
from autograder.sandbox.forkserver import fork_servers_enabled, server_for
from autograder.sandbox.framing import Cell, Channel, Report, describe_exit, kill, send, serve_cells, tail, wait_briefly
from autograder.sandbox.slots import slot


def run_cells(cells: list[Cell], limits: Limits | None = None, sandboxed: bool = True, harden: bool = True) -> Report:
    """Run `cells` in order in one fresh process (a fork of a warm sandboxed server where one
    runs, see ForkServer; else a new sandbox); one CellRun per cell that finished."""
    limits = limits or Limits()
    if sandboxed and fork_servers_enabled():
        with slot() as number:
            return server_for(number, limits).run(cells, limits, harden)
    token = secrets.token_hex(16)
    report = Report(cells={})
    with slot() as number, tempfile.TemporaryFile() as errors:
        cmd = bwrap_command(limits, number) if sandboxed else unsandboxed_command(limits)
        cwd = None
        scratch_dir = None
        if not sandboxed:
            scratch_dir = tempfile.mkdtemp(prefix="autograder-scratch-")
            cwd = scratch_dir
        started = time.monotonic()
        try:
            proc = subprocess.Popen(
                cmd,
                stdin=subprocess.PIPE,
                stdout=subprocess.PIPE,
                stderr=errors,
                env=environment(),
                cwd=cwd,
                start_new_session=True,
            )
        except OSError as exc:
            report.machinery_error = f"could not start the notebook's process: {exc}"
            return report
        channel = Channel(proc, token, max_bytes=64 << 20)
        try:
            send(
                proc,
                {
                    "token": token,
                    "harden": harden,
                    "cell_timeout": limits.cell_timeout_s,
                    "max_output": limits.max_output_chars,
                },
            )
            frame = channel.next_frame(started + config.STARTUP_TIMEOUT_S)
            if frame is None or frame.get("type") != protocol.READY:
                report.machinery_error = f"the grader's kernel did not start ({describe_exit(proc)}): {tail(errors)}"
                return report
            report.startup_seconds = round(time.monotonic() - started, 2)
            serve_cells(proc, channel, cells, limits, report, lambda: describe_exit(wait_briefly(proc)))
        finally:
            kill(proc)
            if scratch_dir:
                shutil.rmtree(scratch_dir, ignore_errors=True)
    return report
