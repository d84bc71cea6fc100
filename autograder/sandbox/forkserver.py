"""Fork servers: one warm sandbox per worker slot, forking a fresh kernel per submission."""

from __future__ import annotations

import os
import secrets
import socket
import subprocess
import tempfile
import threading
import time

from autograder import config
from autograder.model.records import Limits
from autograder.runner import protocol
from autograder.sandbox.command import bwrap_command, environment
from autograder.sandbox.framing import (
    Cell,
    Channel,
    Report,
    describe_code,
    describe_exit,
    kill,
    send,
    serve_cells,
    tail,
)
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
        self.exit_code: int | None = None  # how its last child ended, once the server has said so
        # requests go on a socket of the server's own, each with the two pipes of one child (runner/forks.py)
        self.requests, theirs = socket.socketpair(socket.AF_UNIX, socket.SOCK_SEQPACKET)
        try:
            self.proc = subprocess.Popen(
                bwrap_command(limits, number, fork_server=True),
                stdin=subprocess.PIPE,
                stdout=subprocess.PIPE,
                stderr=self.errors,
                env=environment(),
                start_new_session=True,
                pass_fds=(theirs.fileno(),),
            )
        finally:
            descriptor = theirs.fileno()
            theirs.close()
        assert self.proc.stdout is not None, "the server's stdout is a pipe"
        self.channel = Channel(self.proc.stdout.fileno(), self.token, max_bytes=64 << 20)
        send(self.proc.stdin, {protocol.ZYGOTE: True, "token": self.token, protocol.REQUESTS: descriptor})

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
        self.requests.close()
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
        self.exit_code = None
        reusable = False
        pipes = _ChildPipes()
        try:
            if not pipes.hand_over(self.requests, {protocol.FORK: request}):
                report.machinery_error = f"the grader's fork server is gone ({describe_exit(self.proc)})"
                return report
            channel = Channel(pipes.results, child, max_bytes=64 << 20)
            frame = channel.next_frame(started + config.STARTUP_TIMEOUT_S)
            if frame is None or frame.get("type") != protocol.READY:
                if frame is None and self._child_ended(time.monotonic() + 2):
                    why = f"its child ended first: {describe_code(self.exit_code)}"
                else:
                    why = str(frame or describe_exit(self.proc))
                report.machinery_error = f"the grader's kernel did not start (fork server: {why})"
                return report
            report.startup_seconds = round(time.monotonic() - started, 2)
            describe = self._describe_child_exit
            ended = serve_cells(pipes.commands, channel, cells, limits, report, describe, lambda: False)
            report.protocol = channel.protocol_notes()
            # the child said "end" or is gone: the server cleans up after it while this submission is judged and
            # recorded (settled() waits for it before the next fork); a child still running (over its time, or
            # silent without having ended) is stopped with the whole sandbox
            reusable = self.cleaning = ended == "done" or self.exit_code is not None
        finally:
            pipes.close()
            if not reusable:
                self.close()
        return report

    def _child_ended(self, deadline: float) -> bool:
        """Wait, until `deadline`, for the server's word that its child has ended (its exit code in exit_code)."""
        while self.exit_code is None:
            frame = self.channel.next_frame(deadline)
            if frame is None:
                return False
            if frame.get("type") == protocol.EXITED:
                code = frame.get("code")
                self.exit_code = code if type(code) is int else 1
        return True

    def _describe_child_exit(self) -> str:
        """How the child ended, as the server saw it (its result pipe closed: it is gone, or about to be)."""
        if self._child_ended(time.monotonic() + config.CELL_KILL_GRACE_S):
            return describe_code(self.exit_code)
        return describe_code(None)

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
            if frame.get("type") == protocol.IDLE:
                return True


class _ChildPipes:
    """The two pipes of one forked child, made here: the grader keeps the write end of its commands and the read
    end of its results, and hands the other two ends to the server with the request (SCM_RIGHTS), which passes them
    to the child alone. A child can thus read only its own cells and write only its own channel."""

    def __init__(self) -> None:
        self.results, results_end = os.pipe()
        commands_end, commands = os.pipe()
        self.commands = os.fdopen(commands, "wb")
        self._child_ends: tuple[int, int] | None = (commands_end, results_end)

    def hand_over(self, requests: socket.socket, message: dict) -> bool:
        """Send the request with the child's ends; this process then closes its copies of them (so that the result
        pipe ends when the child and its forks are gone). False if the server is not there to take them."""
        assert self._child_ends is not None, "a child's pipes are handed over once"
        try:
            socket.send_fds(requests, [protocol.encode(message)], list(self._child_ends))
            return True
        except OSError:
            return False
        finally:
            self._close_child_ends()

    def _close_child_ends(self) -> None:
        for fd in self._child_ends or ():
            os.close(fd)
        self._child_ends = None

    def close(self) -> None:
        self._close_child_ends()
        try:
            self.commands.close()
        except OSError:  # the child is gone with bytes unread: nothing to flush to
            pass
        os.close(self.results)


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
