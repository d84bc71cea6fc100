"""The fork server (part of the runner, which runs inside the sandbox: standard library and the
notebook's packages only).

One warm process per worker sandbox: it imports torch, numpy, matplotlib and IPython once, then
forks one child per submission. The child is what `main` would have been for that submission:
before any student code it becomes the submission's uid (the fork server is root in the sandbox
with only CAP_SETUID and CAP_SETGID; the child keeps no capability), takes its rlimits, and gets
namespaces of its own (isolation.py: user, mount, IPC, UTS, network, cgroup, and a new tmpfs on
/tmp), so that nothing it leaves behind is there for the next child: its files, IPC objects and
keyrings go, whole, with its namespaces. It then seeds, snapshots the Guard and serves the cells on
the same pipes. When it is gone, every process of that uid is killed (processes are the one thing
that outlives a namespace), the server waits until the kernel has freed that uid's keys, drains
says "idle". A wall-clock overrun is handled outside: the grader kills the whole sandbox and starts
another.

The channels are what keeps one child from speaking for the server or for the next child (docs/sandbox.md's threat
model). The server's own frames ("zygote", "exited", "idle") go on its stdout, and it reads requests from a Unix
socket of its own (`requests`, from the grader); each request brings, as SCM_RIGHTS descriptors, the read end of
a command pipe and the write end of a result pipe that the grader made for that one child. The child closes every
other descriptor before anything else, so it holds only its own two pipes: fork copies the server's memory, token
included, but no descriptor of the server's, and the next child's pipes do not exist yet.

The messages are in protocol.py.
"""

from __future__ import annotations

import json
import os
import signal
import socket
import time

from . import protocol
from .isolation import IsolationError, isolate, keys_of, wait_for_keys
from .kernel import Runner
from .priming import pre_warm, prepare_for_forks, seed_everything

ISOLATION_FAILED = 71  # a child's exit code: it could not get namespaces of its own, and ran nothing
FIRST_PID = 1000  # every child's pid (_same_pids_for_each_child)


def _run_forked_as(uid: int, action) -> None:
    """Run `action` in a forked helper that has become `uid` (so it can touch only that uid's things)."""
    pid = os.fork()
    if pid == 0:
        try:
            os.setgroups([])
            os.setresgid(uid, uid, uid)
            os.setresuid(uid, uid, uid)
            action()
        finally:
            os._exit(0)
    os.waitpid(pid, 0)


def _processes_of(uid: int, zombies: bool = False) -> list[int]:
    """Live processes of `uid` (zombies are dead already: the sandbox's init reaps them), and with `zombies` the
    dead ones not yet reaped too (they still hold their pids)."""
    found = []
    for entry in os.listdir("/proc"):
        if entry.isdigit():
            try:
                if os.stat(f"/proc/{entry}").st_uid != uid:
                    continue
                with open(f"/proc/{entry}/stat", "rb") as handle:
                    state = handle.read().rsplit(b")", 1)[1].split()[0]
                if zombies or state not in (b"Z", b"X"):
                    found.append(int(entry))
            except (OSError, IndexError):
                pass
    return found


def _kill_everything_of(uid: int) -> None:
    """Every process of `uid` is killed (kill(-1) from that uid reaches exactly those), repeatedly,
    until none is left (a fork bomb keeps forking while the first kill lands)."""
    for _ in range(50):
        if not _processes_of(uid):
            return
        _run_forked_as(uid, lambda: os.kill(-1, signal.SIGKILL))
        time.sleep(0.01)
        try:
            while os.waitpid(-1, os.WNOHANG)[0]:
                pass
        except ChildProcessError:
            pass
    raise RuntimeError(f"processes of uid {uid} survived 50 kills")


def _same_pids_for_each_child(uid: int) -> None:
    """The next child gets the pid every child gets (FIRST_PID), and its own forks the pids after it, as a
    fresh sandbox's kernel would: otherwise its pid tells it how many processes the students before it made
    (a number one student could send the next). Needs CAP_CHECKPOINT_RESTORE (command.py); where the server
    has not got it, pids keep counting."""
    deadline = time.monotonic() + 2
    while _processes_of(uid, zombies=True) and time.monotonic() < deadline:  # their pids are taken until reaped
        time.sleep(0.002)
    try:
        with open("/proc/sys/kernel/ns_last_pid", "w") as handle:
            handle.write(str(FIRST_PID - 1))
    except OSError:
        pass


def _hold_only(keep: tuple[int, ...]) -> None:
    """In the forked child, first of all: close every descriptor but stdin, stdout and stderr (all /dev/null) and
    `keep` (the child's own pipes). What the server holds (its result channel, its stdin, its request socket,
    whatever a library opened before the fork, a pipe or socket whose other end another child would inherit) is
    then nothing the child or its student code can read, write or pass on."""
    for entry in os.listdir("/proc/self/fd"):  # the listing's own descriptor is closed by then: EBADF, ignored
        fd = int(entry)
        if fd > 2 and fd not in keep:
            try:
                os.close(fd)
            except OSError:
                pass


def _receive(requests: socket.socket) -> tuple[dict, int, int] | None:
    """The next request and the child's two descriptors (command pipe to read, result pipe to write); None when
    the grader has closed the socket, sent something else, or not exactly two descriptors."""
    try:
        data, fds, _flags, _address = socket.recv_fds(requests, 1 << 20, 2)
    except OSError:
        return None
    try:
        request = json.loads(data).get(protocol.FORK) if data else None
    except ValueError:
        request = None
    if not request or len(fds) != 2:
        for fd in fds:
            os.close(fd)
        return None
    return request, fds[0], fds[1]


def _become_submission(request: dict) -> None:
    """In the forked child, before any student code: the submission's uid, limits, namespaces and scratch
    space (a new, empty /tmp, as a fresh sandbox's)."""
    import resource

    uid = int(request["uid"])
    os.setgroups([])
    os.setresgid(uid, uid, uid)
    os.setresuid(uid, uid, uid)  # from here on: no capability left (isolate drops those of its own namespaces)
    if os.getuid() != uid or os.geteuid() != uid:
        os._exit(70)
    for name, value in request.get("rlimits", {}).items():
        limit = getattr(resource, f"RLIMIT_{name.upper()}")
        resource.setrlimit(limit, (value, value) if value >= 0 else (resource.RLIM_INFINITY, resource.RLIM_INFINITY))
    try:
        isolate(int(request[protocol.ISOLATE]))
    except (IsolationError, OSError):
        os._exit(ISOLATION_FAILED)
    scratch = "/tmp"
    os.environ.update(HOME=scratch, TMPDIR=scratch, MPLCONFIGDIR=f"{scratch}/.matplotlib")
    os.setsid()


def serve_forks(channel: int, commands, hello: dict) -> None:
    """Fork one child per request read from the request socket, until the grader closes it. `channel` (stdout)
    carries the server's own frames only; `commands` (stdin) held the hello and is not read again."""
    token, pid = hello["token"], os.getpid()
    requests = socket.socket(fileno=int(hello[protocol.REQUESTS]))
    pre_warm()
    seed_everything()  # before the fork: every child starts from this state
    prepare_for_forks()
    devnull = os.open(os.devnull, os.O_RDWR)
    for fd in (0, 1, 2):  # as in main: student code never gets the real stdin/stdout
        os.dup2(devnull, fd)
    os.close(devnull)
    protocol.write_frame(channel, {"type": protocol.ZYGOTE, "token": token, "pid": pid})
    while True:
        received = _receive(requests)
        if received is None:
            return
        request, child_commands, child_results = received
        uid = int(request["uid"])
        keys_before = keys_of(uid)
        _same_pids_for_each_child(uid)
        child = os.fork()
        if child == 0:
            try:
                _hold_only((child_commands, child_results))
                _become_submission(request)
                seed_everything()
                runner = Runner(child_results, os.fdopen(child_commands, "r", encoding="utf-8"), request)
                runner.serve()
            finally:
                os._exit(0)
        os.close(child_commands)  # the child's alone: its result pipe ends when the child and its forks are gone
        os.close(child_results)
        _, status = os.waitpid(child, 0)
        # the grader may be waiting for a cell that will never finish: say at once how the child ended
        protocol.write_frame(
            channel, {"type": protocol.EXITED, "code": os.waitstatus_to_exitcode(status), "token": token, "pid": pid}
        )
        _kill_everything_of(uid)
        if not wait_for_keys(uid, keys_before):
            return  # keys the kernel does not free: no next child here (the grader starts a new server)
        protocol.write_frame(channel, {"type": protocol.IDLE, "token": token, "pid": pid})
