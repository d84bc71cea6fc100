"""Fork servers: one warm sandbox per worker slot, forking a fresh kernel per submission."""

from __future__ import annotations

import os
import secrets
import subprocess
import tempfile
import threading
import time

from autograder import config
from autograder.model.records import Limits
from autograder.runner import protocol
from autograder.sandbox.command import bwrap_command, environment
from autograder.sandbox.framing import Cell, Channel, Report, describe_exit, kill, send, serve_cells, tail
from autograder.sandbox.slots import free_slots


def fork_servers_enabled() -> bool:
    """Fork servers need root to give each submission a uid of its own inside the sandbox
    (runner/forks.py: serve_forks); as an ordinary user every submission gets a fresh sandbox."""
    return config.FORK_SERVER and os.geteuid() == 0


class ForkServer:
    """A sandboxed runner that has imported torch, numpy, matplotlib and IPython once and forks a
    fresh child per submission (see runner/forks.py). The sandbox is the same as a single runner's
    (bwrap_command); only the server keeps root, with CAP_SETUID and CAP_SETGID alone, to hand
    each child the slot's uid. Anything unusual (a cell over its time, a server that does not
    come back idle) kills the whole sandbox; the next submission starts a new one."""

    def __init__(self, limits: Limits, number: int):
        self.number, self.scratch_bytes = number, limits.scratch_bytes
        self.cleaning = False  # its last child is gone and it is cleaning up after it (see settled)
        self.token = secrets.token_hex(16)
        self.errors = tempfile.TemporaryFile()
        self.started = time.monotonic()
        self.ready = False  # it has said "zygote" (wait_ready): torch and the rest imported, forks on request
        self.proc = subprocess.Popen(
            bwrap_command(limits, number, fork_server=True),
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=self.errors,
            env=environment(),
            start_new_session=True,
        )
        self.channel = Channel(self.proc, self.token, max_bytes=64 << 20)
        send(self.proc, {protocol.ZYGOTE: True, "token": self.token})

    def wait_ready(self) -> None:
        """Until the server has started (it imports while the caller does other things: start_servers);
        RuntimeError, with the server's own words, if it does not."""
        if self.ready:
            return
        frame = self.channel.next_frame(self.started + config.STARTUP_TIMEOUT_S)
        if frame is None or frame.get("type") != protocol.ZYGOTE:
            why = f"the grader's fork server did not start ({describe_exit(self.proc)}): {tail(self.errors)}"
            self.close()  # after describing the exit: the kill would otherwise be reported as its cause
            raise RuntimeError(why)
        self.ready = True

    @property
    def alive(self) -> bool:
        return self.proc.poll() is None

    def close(self) -> None:
        kill(self.proc)
        self.errors.close()

    def run(self, cells: list[Cell], limits: Limits, harden: bool) -> Report:
        report = Report(cells={})
        child = secrets.token_hex(16)
        uid = config.SANDBOX_UID_BASE + self.number
        request = {
            "token": child,
            "harden": harden,
            "cell_timeout": limits.cell_timeout_s,
            "max_output": limits.max_output_chars,
            "uid": uid,
            "rlimits": _rlimits(limits),
            protocol.ISOLATE: limits.scratch_bytes,
        }
        started = time.monotonic()
        self.channel.listen(child)
        reusable = False
        try:
            if not send(self.proc, {protocol.FORK: request}):
                report.machinery_error = f"the grader's fork server is gone ({describe_exit(self.proc)})"
                return report
            frame = self.channel.next_frame(started + config.STARTUP_TIMEOUT_S)
            if frame is None or frame.get("type") != protocol.READY:
                report.machinery_error = (
                    f"the grader's kernel did not start (fork server: {frame or describe_exit(self.proc)})"
                )
                return report
            report.startup_seconds = round(time.monotonic() - started, 2)
            ended = serve_cells(
                self.proc, self.channel, cells, limits, report, lambda: "the notebook's process stopped answering"
            )
            # the child said "end" or died: the server cleans up after it while this submission is judged and
            # recorded (settled() waits for it before the next fork); a child still running (over its time)
            # is stopped with the whole sandbox
            reusable = self.cleaning = ended in ("done", "exited")
        finally:
            self.channel.forget(child)
            if not reusable:
                self.close()
        return report

    def settled(self) -> bool:
        """The server has cleaned up after its last child and waits for the next one (False: it did not say so
        in time, and must not be used again)."""
        if not self.cleaning:
            return True
        self.cleaning = False
        return self._wait_idle()

    def _wait_idle(self) -> bool:
        deadline = time.monotonic() + 30
        while True:
            frame = self.channel.next_frame(deadline)
            if frame is None:
                return False
            if frame.get("type") == protocol.IDLE and frame.get("token") == self.token:
                return True


def _rlimits(limits: Limits) -> dict[str, int]:
    """What prlimit sets on a single runner (_limits_prefix), for a fork server's child to set on itself."""
    return {
        "as": limits.memory_bytes or -1,
        "cpu": limits.cpu_seconds,
        "nproc": limits.processes,
        "fsize": limits.file_bytes,
        "core": 0,
        "nofile": 256,
    }


_servers_lock = threading.Lock()
_servers: dict[int, ForkServer] = {}


def server_for(number: int, limits: Limits) -> ForkServer:
    """The slot's warm server, started (again) if it is missing, dead, made for other limits or not back from
    cleaning up after its last child."""
    with _servers_lock:
        server = _servers.get(number)
    if server is not None and (
        not server.alive or server.scratch_bytes != limits.scratch_bytes or not server.settled()
    ):
        server.close()
        server = None
    if server is None:
        server = ForkServer(limits, number)
        with _servers_lock:
            _servers[number] = server
    server.wait_ready()
    return server


def start_servers(count: int, limits: Limits) -> None:
    """Start the servers of the first `count` free slots now, without waiting for them: they import torch while
    the grading run reads its submissions and gradebook (one core idle otherwise), and the slots' first
    submissions find them warm (server_for). A slot another process takes meanwhile leaves its server unused
    until shutdown_servers."""
    for number in free_slots(count):
        with _servers_lock:
            if number in _servers:
                continue
        server = ForkServer(limits, number)
        with _servers_lock:
            _servers[number] = server


def shutdown_servers() -> None:
    """Stop every fork server (grade() calls this when its run ends: nothing outlives a run)."""
    with _servers_lock:
        servers = list(_servers.values())
        _servers.clear()
    for server in servers:
        server.close()
