"""The fork server (part of the runner, which runs inside the sandbox: standard library and the
notebook's packages only).

One warm process per worker sandbox: it imports torch, numpy, matplotlib and IPython once, then
forks one child per submission. The child is what `main` would have been for that submission:
before any student code it becomes the submission's uid (the fork server is root in the sandbox
with only CAP_SETUID and CAP_SETGID; the child keeps no capability), takes its rlimits and a
fresh private scratch dir, seeds, snapshots the Guard and serves the cells on the same pipes.
When it is gone, every process of that uid is killed and its files in /tmp are removed (by a
helper running as that uid), stdin is drained, and the server says "idle". A wall-clock
overrun is handled outside: the grader kills the whole sandbox and starts another.

The messages are in protocol.py.
"""

from __future__ import annotations

import json
import os
import signal
import time

from . import protocol
from .kernel import Runner, _pre_warm, _seed_everything, prepare_for_forks


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


def _processes_of(uid: int) -> list[int]:
    """Live processes of `uid` (zombies are dead already: the sandbox's init reaps them)."""
    found = []
    for entry in os.listdir("/proc"):
        if entry.isdigit():
            try:
                if os.stat(f"/proc/{entry}").st_uid != uid:
                    continue
                with open(f"/proc/{entry}/stat", "rb") as handle:
                    state = handle.read().rsplit(b")", 1)[1].split()[0]
                if state not in (b"Z", b"X"):
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


def _remove_files_of_uid(root: str) -> None:
    """As the submission's uid: remove what it left in /tmp (its own entries only: the
    read-only binds under /tmp, such as a venv in a CI checkout, belong to root)."""
    import shutil

    uid = os.getuid()
    for entry in os.scandir(root):
        try:
            if entry.stat(follow_symlinks=False).st_uid != uid:
                continue
            if entry.is_dir(follow_symlinks=False):
                os.chmod(entry.path, 0o700)  # a directory made unreadable (chmod 000) must still go
                for top, dirs, _ in os.walk(entry.path):
                    for name in dirs:
                        path = os.path.join(top, name)
                        if not os.path.islink(path):
                            os.chmod(path, 0o700)
                shutil.rmtree(entry.path, ignore_errors=True)
            else:
                os.unlink(entry.path)
        except Exception:  # noqa: BLE001, S110 - one odd entry must not stop the cleanup of the others
            pass


def _clean_up_after_uid() -> None:
    """As the submission's uid: its files in /tmp, and its System V IPC objects (they outlive their
    process, and the next child of this server shares the sandbox's IPC namespace and uid)."""
    import subprocess

    _remove_files_of_uid("/tmp")
    try:
        subprocess.run(
            ["ipcrm", "--all"],
            stdin=subprocess.DEVNULL,
            stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL,
            timeout=10,
            env={"PATH": "/usr/bin:/bin"},
        )
    except (OSError, subprocess.TimeoutExpired):
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


def _become_submission(request: dict, number: int) -> None:
    """In the forked child, before any student code: the submission's uid, limits, scratch dir."""
    import resource

    uid = int(request["uid"])
    os.setgroups([])
    os.setresgid(uid, uid, uid)
    os.setresuid(uid, uid, uid)  # from here on: no capability left, and no way back
    if os.getuid() != uid or os.geteuid() != uid:
        os._exit(70)
    for name, value in request.get("rlimits", {}).items():
        limit = getattr(resource, f"RLIMIT_{name.upper()}")
        resource.setrlimit(limit, (value, value) if value >= 0 else (resource.RLIM_INFINITY, resource.RLIM_INFINITY))
    scratch = f"/tmp/submission-{number}"
    os.mkdir(scratch, 0o700)
    os.chdir(scratch)
    os.environ.update(HOME=scratch, TMPDIR=scratch, MPLCONFIGDIR=f"{scratch}/.matplotlib")
    os.setsid()


def serve_forks(channel: int, commands, hello: dict) -> None:
    token, pid = hello["token"], os.getpid()
    _pre_warm()
    _seed_everything()  # before the fork: every child starts from this state
    prepare_for_forks()
    devnull = os.open(os.devnull, os.O_RDWR)
    for fd in (0, 1, 2):  # as in main: student code never gets the real stdin/stdout
        os.dup2(devnull, fd)
    protocol.write_frame(channel, {"type": protocol.ZYGOTE, "token": token, "pid": pid})
    served = 0
    while True:
        line = commands.readline()
        if not line:
            return
        request = json.loads(line).get(protocol.FORK)
        if not request:
            return
        served += 1
        child = os.fork()
        if child == 0:
            try:
                _become_submission(request, served)
                _seed_everything()
                runner = Runner(channel, commands, request)
                runner.serve()
            finally:
                os._exit(0)
        _, status = os.waitpid(child, 0)
        # the grader may be waiting for a cell that will never finish: say at once how the child ended
        protocol.write_frame(
            channel, {"type": protocol.EXITED, "code": os.waitstatus_to_exitcode(status), "token": token, "pid": pid}
        )
        uid = int(request["uid"])
        _kill_everything_of(uid)
        _as_uid(uid, _clean_up_after_uid)
        _drain(commands.fileno())
        protocol.write_frame(channel, {"type": protocol.IDLE, "token": token, "pid": pid})
