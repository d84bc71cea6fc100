"""Namespaces of one submission's own (part of the runner, which runs inside the sandbox: standard library only).

`isolate` runs in the process that will run a submission, before any of its code: it unshares a new user, mount,
IPC, UTS, network and cgroup namespace, mounts a new size-limited tmpfs on /tmp and drops every capability. So
nothing one submission leaves behind reaches the next, whatever it is, without a clean-up that has to find it:

- files anywhere it can write (/tmp is its only writable place: the rest of the sandbox is read-only, and /dev
  and /dev/shm belong to root) are in a tmpfs of its own that goes, whole, with its mount namespace;
- System V IPC objects and POSIX message queues live in its IPC namespace (whose message-queue filesystem is
  its own too);
- keys: the user and user-session keyrings, named keyrings and the persistent keyring are per user namespace,
  and it starts in a new anonymous session keyring (a fork server's children would otherwise share its session
  keyring). A key can still be read by serial number until the kernel's key collector frees it, so the next
  submission waits for that (`wait_for_keys`); and keys the uid holds outside (left by a process that ran
  without namespaces of its own) are cleared first;
- sockets (abstract unix ones included) live in its network namespace, which has only a loopback.

Processes are the one thing that outlives a namespace: whoever starts the next submission first kills every
process of the submission's uid (forks.py for a fork server; the sandbox's pid namespace ends with its process).

A fork server's children call it after becoming the submission's uid (forks.py); a fresh sandbox's runner calls it
first thing (__main__.py). It needs a single-threaded process and user namespaces (as bubblewrap does); the uid
inside is the uid outside, mapped to itself.
"""

from __future__ import annotations

import ctypes
import fcntl
import os
import re
import socket
import struct
import time

CLONE_NEWNS = 0x00020000
CLONE_NEWCGROUP = 0x02000000
CLONE_NEWUTS = 0x04000000
CLONE_NEWIPC = 0x08000000
CLONE_NEWUSER = 0x10000000
CLONE_NEWNET = 0x40000000
NAMESPACES = CLONE_NEWUSER | CLONE_NEWNS | CLONE_NEWIPC | CLONE_NEWUTS | CLONE_NEWNET | CLONE_NEWCGROUP

MS_NOSUID, MS_NODEV, MS_BIND, MS_REC, MS_PRIVATE = 2, 4, 4096, 0x4000, 1 << 18
PR_GET_DUMPABLE, PR_SET_DUMPABLE, PR_CAPBSET_DROP, PR_SET_NO_NEW_PRIVS, PR_CAP_AMBIENT = 3, 4, 24, 38, 47
PR_CAP_AMBIENT_CLEAR_ALL = 4
KEYCTL_JOIN_SESSION_KEYRING, KEYCTL_CLEAR, KEYCTL_INVALIDATE, KEYCTL_GET_PERSISTENT = 1, 7, 21, 22
KEY_SPEC_PROCESS_KEYRING, KEY_SPEC_USER_KEYRING, KEY_SPEC_USER_SESSION_KEYRING = -2, -4, -5
SYS_KEYCTL = {"x86_64": 250, "aarch64": 219, "i686": 288, "armv7l": 311, "ppc64le": 271, "s390x": 280}
SIOCGIFFLAGS, SIOCSIFFLAGS, IFF_UP = 0x8913, 0x8914, 0x1
SCRATCH = "/tmp"
SCRATCH_FILES = 65536  # files and dirs in it: each costs kernel memory that its byte size does not count

_libc = ctypes.CDLL(None, use_errno=True)


class IsolationError(RuntimeError):
    """A namespace, mount or capability step failed: the submission must not run."""


def _check(result: int, what: str) -> None:
    if result != 0:
        errno = ctypes.get_errno()
        raise IsolationError(f"{what}: {os.strerror(errno)}")


def isolate(scratch_bytes: int) -> None:
    """New namespaces for this process and a new tmpfs of `scratch_bytes` on /tmp; then no capability left."""
    uid, gid = os.getuid(), os.getgid()
    _clear_outer_keyrings()
    dumpable = _libc.prctl(PR_GET_DUMPABLE, 0, 0, 0, 0)
    _check(_libc.prctl(PR_SET_DUMPABLE, 1, 0, 0, 0), "prctl(PR_SET_DUMPABLE)")  # to write our own id maps
    _check(_libc.unshare(NAMESPACES), "unshare")
    _write("/proc/self/uid_map", f"{uid} {uid} 1")
    _write("/proc/self/setgroups", "deny")
    _write("/proc/self/gid_map", f"{gid} {gid} 1")
    _check(_libc.prctl(PR_SET_DUMPABLE, dumpable, 0, 0, 0), "prctl(PR_SET_DUMPABLE)")
    _check(_libc.mount(None, b"/", None, MS_REC | MS_PRIVATE, None), "mount --make-rprivate /")
    _new_scratch(scratch_bytes)
    _loopback_up()
    _new_session_keyring()
    _drop_capabilities()


def _write(path: str, text: str) -> None:
    try:
        with open(path, "w") as handle:
            handle.write(text)
    except OSError as exc:
        raise IsolationError(f"writing {path}: {exc}") from exc


def _mounts_under(top: str) -> list[str]:
    """Mount points below `top` (a venv in a CI checkout under /tmp is bound read-only there), outermost first."""
    points = []
    with open("/proc/self/mountinfo") as handle:
        for line in handle:
            point = re.sub(r"\\([0-7]{3})", lambda m: chr(int(m.group(1), 8)), line.split()[4])
            if point.startswith(top + "/"):
                points.append(point)
    return sorted(set(points), key=lambda p: p.count("/"))


def _new_scratch(scratch_bytes: int) -> None:
    """A new tmpfs on /tmp, with the read-only binds that were under the old one bound again at their places."""
    kept: list[tuple[str, int]] = []
    for point in _mounts_under(SCRATCH):
        if not any(point.startswith(outer + "/") for outer, _ in kept):  # MS_REC below brings the inner ones
            kept.append((point, os.open(point, os.O_PATH)))
    options = f"size={scratch_bytes},mode=1777,nr_inodes={SCRATCH_FILES}".encode()
    _check(_libc.mount(b"tmpfs", SCRATCH.encode(), b"tmpfs", MS_NOSUID | MS_NODEV, options), "mount tmpfs /tmp")
    for point, fd in kept:
        if os.path.isdir(f"/proc/self/fd/{fd}"):
            os.makedirs(point, mode=0o755, exist_ok=True)
        else:
            os.makedirs(os.path.dirname(point), mode=0o755, exist_ok=True)
            os.close(os.open(point, os.O_CREAT | os.O_WRONLY, 0o644))
        source = f"/proc/self/fd/{fd}".encode()
        _check(_libc.mount(source, point.encode(), None, MS_BIND | MS_REC, None), f"bind {point}")
        os.close(fd)
    os.chdir(SCRATCH)  # the new one: a working dir still in the old /tmp would be a way into it


def _loopback_up() -> None:
    """The new network namespace's loopback, up (as bubblewrap leaves its own): a student may use 127.0.0.1."""
    with socket.socket(socket.AF_INET, socket.SOCK_DGRAM) as sock:
        request = struct.pack("16sH14x", b"lo", 0)
        flags = struct.unpack("16sH14x", fcntl.ioctl(sock, SIOCGIFFLAGS, request))[1]
        fcntl.ioctl(sock, SIOCSIFFLAGS, struct.pack("16sH14x", b"lo", flags | IFF_UP))


def _keyctl(*args: int | None) -> int:
    """keyctl(2) (glibc has no wrapper); -1 where this machine has no keyrings (ENOSYS, or EPERM: a seccomp
    filter forbids them to everyone, the submission included)."""
    number = SYS_KEYCTL.get(os.uname().machine)
    if number is None:
        return -1
    _libc.syscall.restype = ctypes.c_long
    return int(_libc.syscall(number, *[None if a is None else ctypes.c_long(a) for a in args]))


def _new_session_keyring() -> None:
    """A new, empty session keyring (a fork server's children would otherwise all share the server's)."""
    if _keyctl(KEYCTL_JOIN_SESSION_KEYRING, None) < 0 and ctypes.get_errno() not in (1, 38):  # EPERM, ENOSYS
        raise IsolationError(f"a new session keyring: {os.strerror(ctypes.get_errno())}")


class _CapHeader(ctypes.Structure):
    _fields_ = [("version", ctypes.c_uint32), ("pid", ctypes.c_int)]


class _CapData(ctypes.Structure):
    _fields_ = [("effective", ctypes.c_uint32), ("permitted", ctypes.c_uint32), ("inheritable", ctypes.c_uint32)]


def _drop_capabilities() -> None:
    """Everything the new user namespace gave this process, gone for good (bounding set and all), and no way to
    gain any back (no_new_privs; the uid inside is not 0)."""
    with open("/proc/sys/kernel/cap_last_cap") as handle:
        last = int(handle.read())
    for cap in range(last + 1):
        _check(_libc.prctl(PR_CAPBSET_DROP, cap, 0, 0, 0), f"dropping capability {cap} from the bounding set")
    _libc.prctl(PR_CAP_AMBIENT, PR_CAP_AMBIENT_CLEAR_ALL, 0, 0, 0)
    header, data = _CapHeader(0x20080522, 0), (_CapData * 2)()  # _LINUX_CAPABILITY_VERSION_3: all zero
    _check(_libc.capset(ctypes.byref(header), data), "capset")
    _check(_libc.prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0), "prctl(PR_SET_NO_NEW_PRIVS)")
    with open("/proc/self/status") as handle:
        caps = [line for line in handle if line.startswith(("CapEff", "CapPrm", "CapBnd", "CapAmb"))]
    left = [line.strip() for line in caps if line.split()[1].strip("0")]
    if left:
        raise IsolationError(f"capabilities left after dropping them: {left}")


def keys_of(uid: int) -> int:
    """How many keys `uid` owns on this machine, in every namespace (/proc/key-users: "uid: usage nkeys/...")."""
    try:
        with open("/proc/key-users") as handle:
            for line in handle:
                owner, _, rest = line.partition(":")
                if owner.strip() == str(uid):
                    return int(rest.split()[1].split("/")[0])
    except (OSError, ValueError, IndexError):
        pass
    return 0


def wait_for_keys(uid: int, at_most: int, timeout: float = 10.0) -> bool:
    """Until `uid` owns at most `at_most` keys (what it owned before a submission started): the keyrings of a
    finished submission's namespaces go with them, but only once the kernel's key collector has run, and until
    then a key can be read by its serial number. False if more are left after `timeout` seconds."""
    deadline = time.monotonic() + timeout
    while keys_of(uid) > at_most:
        if time.monotonic() > deadline:
            return False
        time.sleep(0.002)
    return True


def _clear_outer_keyrings() -> None:
    """Keys this uid holds outside any namespace of a submission's (left by a process that ran without one: an
    older grader, or a run without bubblewrap) are reachable by serial number from inside one: empty the user and
    user-session keyrings and drop the persistent keyring, where they exist (looking them up would make them)."""
    uid = os.getuid()
    try:
        with open("/proc/keys") as handle:
            held = {line.split()[8].rstrip(":") for line in handle if len(line.split()) > 8}
    except OSError:
        return
    if f"_uid.{uid}" in held or f"_uid_ses.{uid}" in held:
        _keyctl(KEYCTL_CLEAR, KEY_SPEC_USER_KEYRING)
        _keyctl(KEYCTL_CLEAR, KEY_SPEC_USER_SESSION_KEYRING)
    if f"_persistent.{uid}" in held:
        persistent = _keyctl(KEYCTL_GET_PERSISTENT, -1, KEY_SPEC_PROCESS_KEYRING)
        if persistent > 0:
            _keyctl(KEYCTL_CLEAR, persistent)
            _keyctl(KEYCTL_INVALIDATE, persistent)
