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
stdin and says "idle". A wall-clock overrun is handled outside: the grader kills the whole sandbox
and starts another.

The messages are in protocol.py.
"""

from __future__ import annotations

import json
import os
import signal
import time

from . import protocol
from .isolation import IsolationError, isolate, keys_of, wait_for_keys
from .kernel import Runner
from .priming import pre_warm, prepare_for_forks, seed_everything

ISOLATION_FAILED = 71  # a child's exit code: it could not get namespaces of its own, and ran nothing
FIRST_PID = 1000  # every child's pid (_same_pids_for_each_child)


def _as_uid(uid: int, action) -> None:
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
        _as_uid(uid, lambda: os.kill(-1, signal.SIGKILL))
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


def _drain(fd: int) -> None:
    """Whatever the last submission left unread on stdin is not a command for the server."""
    import fcntl

    flags = fcntl.fcntl(fd, fcntl.F_GETFL)
    fcntl.fcntl(fd, fcntl.F_SETFL, flags | os.O_NONBLOCK)
    try:
        while os.read(fd, 1 << 16):
            pass
    except BlockingIOError:
        pass
    finally:
        fcntl.fcntl(fd, fcntl.F_SETFL, flags)


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
    token, pid = hello["token"], os.getpid()
    pre_warm()
    seed_everything()  # before the fork: every child starts from this state
    prepare_for_forks()
    devnull = os.open(os.devnull, os.O_RDWR)
    for fd in (0, 1, 2):  # as in main: student code never gets the real stdin/stdout
        os.dup2(devnull, fd)
    protocol.write_frame(channel, {"type": protocol.ZYGOTE, "token": token, "pid": pid})
    while True:
        line = commands.readline()
        if not line:
            return
        request = json.loads(line).get(protocol.FORK)
        if not request:
            return
        uid = int(request["uid"])
        keys_before = keys_of(uid)
        _same_pids_for_each_child(uid)
        child = os.fork()
        if child == 0:
            try:
                _become_submission(request)
                seed_everything()
                runner = Runner(channel, commands, request)
                runner.serve()
            finally:
                os._exit(0)
        _, status = os.waitpid(child, 0)
        # the grader may be waiting for a cell that will never finish: say at once how the child ended
        protocol.write_frame(
            channel, {"type": protocol.EXITED, "code": os.waitstatus_to_exitcode(status), "token": token, "pid": pid}
        )
        _kill_everything_of(uid)
        if not wait_for_keys(uid, keys_before):
            return  # keys the kernel does not free: no next child here (the grader starts a new server)
        _drain(commands.fileno())
        protocol.write_frame(channel, {"type": protocol.IDLE, "token": token, "pid": pid})
