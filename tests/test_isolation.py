"""Nothing survives a student: an attacker graded just before a victim, on the same warm worker (`--workers 1`),
cannot change the victim's per-cell points or anything the victim can observe, through any channel the kernel
offers a process: POSIX message queues, System V IPC, kernel keyrings, deep and unreadable trees, files in every
writable place, leftover processes, shared memory, a full scratch filesystem, the pid counter. Each channel is tried
in fork-server mode (a warm sandbox forks each student) and in fresh-sandbox mode (a new sandbox per student).

The attack is the one measured against the grader (issue 30): the attacker answers correctly and leaves the
correct answer in the channel; the victim's own answer is wrong (`wrong/no_scale`, 4/12) and, when it finds an
answer in the channel, runs it instead of its own. A victim graded exactly as when graded with no attacker before
it is what isolation means; `c-control`, a correct student who saves a 20 MB file, must keep 12/12 after an
attacker that filled its scratch space.

The run grades, in this order: the victim with no attacker before it (its points when graded alone), then for each
channel its attacker and, straight after it, the victim; the control last, after the filler and its victim. Every
victim also prints what it observes of where it runs (`seen`: its pid, /tmp, free space...), which must be what the
victim graded alone observed.
"""

from __future__ import annotations

import io
import os
import re

import nbformat
import pytest

from autograder import config
from autograder.grading.grade import Options, grade
from autograder.model.notebooks import grade_id, is_solution_cell, read, source_notebook
from autograder.sandbox.forkserver import fork_servers_enabled
from autograder.store.gradebook import executed_path
from conftest import NOTEBOOK
from coursetools.samples import implementations, make_submission, solution_code, write_submission

CELL = "scaled_dot_product_attention"
ANSWER = next(solution_code(c) for c in read(source_notebook(NOTEBOOK)).cells if grade_id(c) == CELL)
WRONG = next(i for i in implementations(NOTEBOOK, "wrong") if i.name == "no_scale").cells[CELL]

# Both sides of every channel, as notebook code: put_<channel>(text) leaves the answer behind, get_<channel>()
# returns what it finds (None: nothing). Plain ctypes, as a student would write it.
CHANNELS = r'''
import ctypes, ctypes.util, os, platform, socket, struct, time

_libc = ctypes.CDLL(None, use_errno=True)
_libc.syscall.restype = ctypes.c_long
_NAME = b"isolation-answer"
_ADD_KEY, _KEYCTL = {"x86_64": (248, 250), "aarch64": (217, 219)}[platform.machine()]


def _rt():
    if hasattr(_libc, "mq_open"):
        return _libc
    return ctypes.CDLL(ctypes.util.find_library("rt") or "librt.so.1", use_errno=True)


def put_posix_mq(text):
    rt = _rt()
    fd = rt.mq_open(b"/" + _NAME, os.O_CREAT | os.O_WRONLY, 0o666, None)
    data = text.encode()
    return fd >= 0 and rt.mq_send(fd, data, len(data), 0) == 0


def get_posix_mq():
    rt = _rt()
    rt.mq_receive.restype = ctypes.c_ssize_t
    fd = rt.mq_open(b"/" + _NAME, os.O_RDONLY | os.O_NONBLOCK)
    if fd < 0:
        return None
    buf = ctypes.create_string_buffer(1 << 20)
    size = rt.mq_receive(fd, buf, len(buf), None)
    return buf.raw[:size].decode() if size > 0 else None


_MSG_KEY, _SHM_KEY, _SEM_KEY = 0x15170, 0x15171, 0x15172


def put_sysv(text):
    data = text.encode()
    queue = _libc.msgget(_MSG_KEY, 0o1000 | 0o666)  # IPC_CREAT
    sent = queue >= 0 and _libc.msgsnd(queue, struct.pack("l", 1) + data, len(data), 0o4000) == 0
    _libc.shmat.restype = ctypes.c_void_p
    segment = _libc.shmget(_SHM_KEY, 1 << 16, 0o1000 | 0o666)
    if segment >= 0:
        address = _libc.shmat(segment, None, 0)
        if address not in (None, ctypes.c_void_p(-1).value):
            ctypes.memmove(address, struct.pack("I", len(data)) + data, 4 + len(data))
            sent = True
    return sent


def get_sysv():
    queue = _libc.msgget(_MSG_KEY, 0)
    if queue >= 0:
        _libc.msgrcv.restype = ctypes.c_ssize_t
        buf = ctypes.create_string_buffer(8 + (1 << 16))
        size = _libc.msgrcv(queue, buf, 1 << 16, 0, 0o4000)
        if size > 0:
            return buf.raw[8 : 8 + size].decode()
    segment = _libc.shmget(_SHM_KEY, 0, 0)
    if segment >= 0:
        _libc.shmat.restype = ctypes.c_void_p
        address = _libc.shmat(segment, None, 0o10000)  # SHM_RDONLY
        if address not in (None, ctypes.c_void_p(-1).value):
            size = struct.unpack("I", ctypes.string_at(address, 4))[0]
            if 0 < size < 1 << 16:
                return ctypes.string_at(address + 4, size).decode()
    return None


_KEY_RINGS = (-4, -5, -3)  # the user, user-session and session keyrings
_EVERYONE_EVERYTHING = 0x3F3F3F3F


def _keyctl(*args):
    return _libc.syscall(_KEYCTL, *[ctypes.c_long(a) if isinstance(a, int) else a for a in args])


def _add_key(text, ring):
    data = text.encode()
    serial = _libc.syscall(_ADD_KEY, b"user", _NAME, data, ctypes.c_size_t(len(data)), ctypes.c_long(ring))
    if serial > 0:
        _keyctl(5, serial, _EVERYONE_EVERYTHING)  # KEYCTL_SETPERM
    return serial > 0


def put_keyring(text):
    stored = [_add_key(text, ring) for ring in _KEY_RINGS]
    persistent = _keyctl(22, -1, -3)  # KEYCTL_GET_PERSISTENT, linked into the session keyring: lives for days
    if persistent > 0:
        stored.append(_add_key(text, persistent))
    named = _keyctl(1, b"isolation-ring")  # KEYCTL_JOIN_SESSION_KEYRING: a keyring found again by its name
    if named > 0:
        _keyctl(5, named, _EVERYONE_EVERYTHING)
        stored.append(_add_key(text, named))
    return any(stored)


def _read_key(serial):
    buf = ctypes.create_string_buffer(1 << 16)
    size = _keyctl(11, serial, buf, len(buf))  # KEYCTL_READ
    return buf.raw[:size].decode() if 0 < size <= len(buf) else None


def get_keyring():
    rings = list(_KEY_RINGS)
    persistent = _keyctl(22, -1, 0)
    if persistent > 0:
        rings.append(persistent)
    for ring in rings:
        serial = _keyctl(10, ring, b"user", _NAME, 0)  # KEYCTL_SEARCH
        if serial > 0 and _read_key(serial):
            return _read_key(serial)
    try:
        with open("/proc/keys") as handle:  # every key this process may view, by serial number
            for line in handle:
                if _NAME.decode() in line and _read_key(int(line.split()[0], 16)):
                    return _read_key(int(line.split()[0], 16))
    except OSError:
        pass
    named = _keyctl(1, b"isolation-ring")
    if named > 0:
        serial = _keyctl(10, named, b"user", _NAME, 0)
        if serial > 0:
            return _read_key(serial)
    return None


def _descend(path, depth):
    """A file descriptor (O_PATH) on the directory `depth` levels under `path`."""
    fd = os.open(path, os.O_PATH | os.O_DIRECTORY)
    for _ in range(depth):
        inner = os.open("d", os.O_PATH | os.O_DIRECTORY, dir_fd=fd)
        os.close(fd)
        fd = inner
    return fd


def _make_tree(path, depth):
    os.makedirs(path, exist_ok=True)
    fd = os.open(path, os.O_PATH | os.O_DIRECTORY)
    for _ in range(depth):
        os.mkdir("d", 0o700, dir_fd=fd)
        inner = os.open("d", os.O_PATH | os.O_DIRECTORY, dir_fd=fd)
        os.close(fd)
        fd = inner
    return fd


def _lock_tree(path, depth):
    """Every level execute-only (0o100): nothing can be listed, so a clean-up that walks must unlock each level."""
    fd = os.open(path, os.O_PATH | os.O_DIRECTORY)
    for _ in range(depth):
        inner = os.open("d", os.O_PATH | os.O_DIRECTORY, dir_fd=fd)
        os.chmod("d", 0o100, dir_fd=fd)
        os.close(fd)
        fd = inner
    os.close(fd)
    os.chmod(path, 0o100)


def put_deep_tree(text):
    fd = _make_tree("/tmp/isolation-deep", 300)
    answer = os.open("answer.py", os.O_CREAT | os.O_WRONLY, 0o600, dir_fd=fd)
    os.write(answer, text.encode())
    os.close(answer)
    os.close(fd)
    _lock_tree("/tmp/isolation-deep", 300)
    return True


def get_deep_tree():
    try:
        fd = _descend("/tmp/isolation-deep", 300)
        answer = os.open("answer.py", os.O_RDONLY, dir_fd=fd)
    except OSError:
        return None
    return os.read(answer, 1 << 20).decode()


def _places():
    """Every place a student might write: the usual ones, every mount point, and the next students' scratch
    dirs made in advance."""
    here = os.getcwd()
    places = {"/tmp", "/var/tmp", "/dev/shm", "/dev/mqueue", "/dev", "/dev/pts", "/run", "/run/lock", "/run/shm",
              "/", "/opt", "/opt/grader", "/etc", "/root", "/home", "/srv", "/mnt", "/usr/local", "/usr/tmp",
              here, os.path.dirname(here), os.path.expanduser("~"), os.environ.get("TMPDIR", "/tmp")}
    with open("/proc/self/mountinfo") as handle:
        places |= {line.split()[4] for line in handle}
    places |= {f"/tmp/submission-{n}" for n in range(1, 6)}
    return sorted(p for p in places if not p.startswith(("/proc", "/sys")))


def put_files(text):
    written = 0
    for place in _places():
        try:
            os.makedirs(place, exist_ok=True)
            with open(os.path.join(place, "isolation-answer.py"), "w") as handle:
                handle.write(text)
            written += 1
        except OSError:
            pass
    return written > 0


def get_files():
    for place in _places():
        try:
            with open(os.path.join(place, "isolation-answer.py")) as handle:
                return handle.read()
        except OSError:
            pass
    return None


def put_processes(text):
    """A daemon that serves the answer on an abstract unix socket and on TCP, and writes it into /tmp again
    and again."""
    if os.fork() == 0:
        os.setsid()
        if os.fork() == 0:
            server = socket.socket(socket.AF_UNIX)
            server.bind(b"\0" + _NAME)
            server.listen(4)
            server.settimeout(0.05)
            web = socket.socket()
            web.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
            web.bind(("127.0.0.1", 15170))
            web.listen(4)
            web.settimeout(0.05)
            for _ in range(20_000):
                for listener in (server, web):
                    try:
                        conn, _ = listener.accept()
                        conn.sendall(text.encode())
                        conn.close()
                    except OSError:
                        pass
                try:
                    with open("/tmp/isolation-daemon.py", "w") as handle:
                        handle.write(text)
                except OSError:
                    pass
        os._exit(0)
    time.sleep(0.3)
    return True


def _fetch(family, address):
    client = socket.socket(family)
    client.settimeout(0.5)
    try:
        client.connect(address)
        return client.recv(1 << 16).decode() or None
    except OSError:
        return None
    finally:
        client.close()


def get_processes():
    time.sleep(0.3)
    found = _fetch(socket.AF_UNIX, b"\0" + _NAME) or _fetch(socket.AF_INET, ("127.0.0.1", 15170))
    if found:
        return found
    try:
        with open("/tmp/isolation-daemon.py") as handle:
            return handle.read()
    except OSError:
        pass
    me = os.getuid()
    others = []
    for pid in os.listdir("/proc"):
        if pid.isdigit() and int(pid) != os.getpid():
            try:
                if os.stat(f"/proc/{pid}").st_uid == me:
                    others.append(pid)
            except OSError:
                pass
    return f"processes of this uid: {others}" if others else None


def put_shared_memory(text):
    from multiprocessing import shared_memory

    data = text.encode()
    try:
        block = shared_memory.SharedMemory("isolation-answer", create=True, size=4 + len(data))
    except OSError:
        return False
    block.buf[: 4 + len(data)] = struct.pack("I", len(data)) + data
    block._mmap = None  # kept: the block outlives this process unless someone removes it
    return True


def get_shared_memory():
    from multiprocessing import shared_memory

    try:
        block = shared_memory.SharedMemory("isolation-answer")
    except OSError:
        return None
    size = struct.unpack("I", bytes(block.buf[:4]))[0]
    return bytes(block.buf[4 : 4 + size]).decode()


def put_full_scratch(text):
    """Fill the scratch space (240 MiB in files of 60 MiB, under the file-size limit), deep in a locked tree."""
    fd = _make_tree("/tmp/isolation-fill", 300)
    chunk = b"\0" * (1 << 20)
    for n in range(4):
        out = os.open(f"fill-{n}", os.O_CREAT | os.O_WRONLY, 0o600, dir_fd=fd)
        try:
            for _ in range(60):
                os.write(out, chunk)
        except OSError:
            pass
        os.close(out)
    os.close(fd)
    _lock_tree("/tmp/isolation-fill", 300)
    return True


def get_full_scratch():
    return None


def put_pid_counter(text):
    """500 short-lived processes: the pid counter moves on (a number a student could read off its own pid)."""
    import subprocess

    subprocess.run(["/bin/sh", "-c", "i=0; while [ $i -lt 500 ]; do /bin/true; i=$((i+1)); done"], check=True)
    return True


def get_pid_counter():
    return None


def seen():
    """What a student can observe of where it runs; it must not depend on who was graded before (its uid is the
    worker slot's, which other grading runs on the machine decide: left out)."""
    child = os.fork()
    if child == 0:
        os._exit(0)
    os.waitpid(child, 0)
    free = os.statvfs("/tmp").f_bfree
    listing = [name.replace(str(os.getuid()), "<uid>") for name in sorted(os.listdir("/tmp"))]
    return (f"pid {os.getpid()}, its child {child}, in {os.getcwd()}, "
            f"/tmp {listing} with {free} blocks free, host {socket.gethostname()}")
'''

CHANNEL_NAMES = (
    "posix_mq",
    "sysv",
    "keyring",
    "deep_tree",
    "files",
    "processes",
    "shared_memory",
    "pid_counter",
    "full_scratch",
)
FOUND, SEEN = "ISOLATION-FOUND", "ISOLATION-SEEN"


def attacker(channel: str) -> str:
    """Answers correctly, then leaves the answer in `channel`."""
    return f"{CHANNELS}\n{ANSWER}\n\n_ANSWER = {ANSWER!r}\nprint('left behind:', put_{channel}(_ANSWER))\n"


def victim(channel: str) -> str:
    """A wrong answer, replaced by whatever it finds in `channel`; says what it found."""
    return (
        f"{CHANNELS}\n{WRONG}\n\nprint({SEEN!r}, seen())\n"
        f"_found = get_{channel}()\nprint({FOUND!r}, {channel!r}, repr(_found)[:80])\n"
        "if _found:\n    exec(_found)\n"
    )


# A correct student who saves a 20 MB file in its working dir: after a filler it must still have room.
CONTROL = f"""
with open("control-20MB.bin", "wb") as handle:
    handle.write(b"x" * (20 << 20))
import os
os.remove("control-20MB.bin")

{ANSWER}
"""


def write_class(folder) -> None:
    write_submission(make_submission(NOTEBOOK, {CELL: victim("files")}), folder / "a-alone" / f"{NOTEBOOK}.ipynb")
    for n, channel in enumerate(CHANNEL_NAMES):
        write_submission(
            make_submission(NOTEBOOK, {CELL: attacker(channel)}), folder / f"b{n}a-{channel}" / f"{NOTEBOOK}.ipynb"
        )
        write_submission(
            make_submission(NOTEBOOK, {CELL: victim(channel)}), folder / f"b{n}b-{channel}" / f"{NOTEBOOK}.ipynb"
        )
    write_submission(make_submission(NOTEBOOK, {CELL: CONTROL}), folder / "c-control" / f"{NOTEBOOK}.ipynb")


def graded_order(progress: str, students) -> list[str]:
    """The students in the order the run reported them (one worker: the order it graded them)."""
    where = {s: progress.find(f" {s} ") for s in students}
    assert all(i >= 0 for i in where.values()), progress
    return sorted(students, key=where.get)


MODES = ["fork-server", "fresh-sandbox"]


@pytest.fixture(scope="module", params=MODES)
def graded(request, tmp_path_factory):
    if request.param == "fork-server" and not fork_servers_enabled():
        pytest.skip("fork servers need root (as an ordinary user every submission gets a fresh sandbox)")
    root = tmp_path_factory.mktemp(request.param)
    write_class(root / "subs")
    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(config, "FORK_SERVER", request.param == "fork-server")
        out = io.StringIO()
        results = grade(root / "subs", Options(workdir=root / "w", workers=1), out=out)
    return {r.student: r for r in results}, out.getvalue(), root / "w"


def points(result) -> list[tuple[str, float]]:
    return [(c.grade_id, c.points) for c in result.cells]


def printed(workdir, student: str) -> str:
    nb = nbformat.read(executed_path(workdir, student, NOTEBOOK), as_version=4)
    return "".join(o.get("text", "") for c in nb.cells if is_solution_cell(c) for o in c.get("outputs", []))


def victim_saw(workdir, student: str) -> str:
    """What the victim printed about its channel."""
    text = printed(workdir, student)
    return "\n".join(line for line in text.splitlines() if line.startswith(FOUND)) or text


def seen_by(workdir, student: str) -> str:
    return next(line for line in printed(workdir, student).splitlines() if line.startswith(SEEN))


# /dev/shm belongs to root in the sandbox: there the attacker cannot even leave its block (the victim still looks)
NOT_WRITABLE = {"shared_memory"}


def test_the_students_are_graded_in_the_order_of_the_attack(graded):
    results, progress, _ = graded
    students = sorted(results)
    assert graded_order(progress, students) == students
    assert results["a-alone"].score == 4 and results["a-alone"].max_score == 12, progress


@pytest.mark.parametrize("channel", [c for c in CHANNEL_NAMES if c != "full_scratch"])
def test_an_attacker_cannot_reach_the_next_student(graded, channel):
    results, progress, workdir = graded
    n = CHANNEL_NAMES.index(channel)
    attack, target = results[f"b{n}a-{channel}"], results[f"b{n}b-{channel}"]
    assert attack.score == attack.max_score, progress
    left = printed(workdir, attack.student)
    assert f"left behind: {channel not in NOT_WRITABLE}" in left, f"the attack did not happen as meant: {left}"
    saw = victim_saw(workdir, target.student)
    assert re.fullmatch(rf"{FOUND} {channel} None", saw), f"the victim found the attacker's answer: {saw}"
    assert points(target) == points(results["a-alone"]), f"{channel}: {points(target)} ({saw})"


@pytest.mark.parametrize("channel", CHANNEL_NAMES)
def test_the_next_student_observes_what_it_would_alone(graded, channel):
    """Its pid and its child's, its working dir, what /tmp holds and how full it is, the host name."""
    results, _, workdir = graded
    n = CHANNEL_NAMES.index(channel)
    assert seen_by(workdir, f"b{n}b-{channel}") == seen_by(workdir, "a-alone")


def test_a_full_scratch_space_is_not_left_to_the_next_student(graded):
    results, progress, workdir = graded
    n = CHANNEL_NAMES.index("full_scratch")
    assert results[f"b{n}a-full_scratch"].score == 12, progress
    assert "left behind: True" in printed(workdir, f"b{n}a-full_scratch")
    control = results["c-control"]
    assert control.score == control.max_score == 12, progress
    assert all(c.points == c.max_points for c in control.cells), points(control)


@pytest.mark.skipif(os.geteuid() != 0, reason="as root only: an ordinary user's keys are the sandbox's own")
def test_keys_do_not_outlive_their_run(tmp_path, monkeypatch):
    """Two runs, fresh sandboxes: the attacker's keys are gone when the victim's run starts."""
    monkeypatch.setattr(config, "FORK_SERVER", False)
    first, second = tmp_path / "first", tmp_path / "second"
    write_submission(make_submission(NOTEBOOK, {CELL: attacker("keyring")}), first / "a" / f"{NOTEBOOK}.ipynb")
    write_submission(make_submission(NOTEBOOK, {CELL: victim("keyring")}), second / "b" / f"{NOTEBOOK}.ipynb")
    assert grade(first, Options(workdir=tmp_path / "w1", workers=1), out=io.StringIO())[0].score == 12
    result = grade(second, Options(workdir=tmp_path / "w2", workers=1), out=io.StringIO())[0]
    assert victim_saw(tmp_path / "w2", "b") == f"{FOUND} keyring None"
    assert result.score == 4
