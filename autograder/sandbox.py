"""Run a notebook's cells in a sandbox: one process per submission, limits, no network.

The process is `runner.py` (the grader's kernel) started under Debian's bubblewrap (or, as
root, forked per submission by a warm runner in such a sandbox: `ForkServer`, below):

- no network (`--unshare-net`: only a loopback of its own), own pid/ipc/uts namespaces,
  so it cannot see or signal any process outside (`os.kill(os.getppid(), ...)` reaches
  only the sandbox's own init, which ignores it);
- a new, read-only root holding only the system (/usr, /etc without shadow files), the
  Python installation and the venv; the course repository, `solutions/`, the work dir,
  the gradebook and the submissions folder do not exist in it;
- one writable place, a private size-limited tmpfs at /tmp (its HOME and working dir),
  which vanishes with the process;
- an unprivileged uid (when the grader runs as root, `setpriv` drops to a uid of its
  own per worker slot, so RLIMIT_NPROC stops a fork bomb: root ignores it);
- rlimits on address space, CPU time, processes, file size and open files;
- wall-clock limits per cell and per notebook, enforced from outside (kill), and a cap
  on the output kept per cell.

The notebook never touches the disk: cells go in on stdin, one at a time; results
come back on a pipe. `--no-sandbox` runs the same runner as a plain subprocess with
the same rlimits and time limits but no isolation (the instructor asked for it).
"""

from __future__ import annotations

import fcntl
import json
import os
import secrets
import select
import shutil
import signal
import subprocess
import sys
import tempfile
import threading
import time
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path

from autograder import config

RUNNER = Path(__file__).resolve().with_name("runner.py")
RUNNER_IN_SANDBOX = "/opt/grader/runner.py"
SCRATCH = "/tmp"


class SandboxUnavailable(RuntimeError):
    """bubblewrap is missing or cannot create a sandbox on this machine."""


@dataclass(frozen=True)
class Limits:
    """Resource limits of one submission's process (see config for the defaults and why)."""

    memory_bytes: int = field(default_factory=lambda: default_memory_bytes())
    cpu_seconds: int = config.SANDBOX_CPU_SECONDS
    processes: int = config.SANDBOX_PROCESSES
    file_bytes: int = config.SANDBOX_FILE_BYTES
    scratch_bytes: int = config.SANDBOX_SCRATCH_BYTES
    cell_timeout_s: float = config.CELL_TIMEOUT_S
    notebook_timeout_s: float = config.NOTEBOOK_TIMEOUT_S
    max_output_chars: int = config.MAX_OUTPUT_CHARS


def default_memory_bytes() -> int:
    """The address-space limit: none on a machine with an NVIDIA GPU (CUDA reserves tens of
    GB of address space at initialisation, so any useful RLIMIT_AS would make it fail)."""
    return 0 if os.path.exists("/dev/nvidiactl") else config.SANDBOX_MEMORY_BYTES


@dataclass(frozen=True)
class Cell:
    index: int  # position in the notebook being graded
    kind: str  # "student", "locked" or "test"
    source: str
    name: str = ""  # grade_id, for messages


@dataclass
class CellRun:
    index: int
    outputs: list
    error: dict | None
    seconds: float
    execution_count: int
    tamper: list[str] = field(default_factory=list)


@dataclass
class Report:
    cells: dict[int, CellRun]
    stopped: str = ""  # why the run ended before the last cell (student's doing)
    machinery_error: str = ""  # the grader failed, not the submission: retry, never cache
    startup_seconds: float = 0.0


# -- worker slots: one unprivileged uid per concurrent sandbox ---------------------------------

_slots_lock = threading.Lock()
_slots_used: set[int] = set()
_slots_owned: dict[int, int] = {}  # slot number -> open file descriptor holding its lock


def _own(number: int) -> bool:
    """Claim a slot number for this process for the rest of its life, host-wide.

    Several grading processes can share a machine (Dask workers, two instructors' runs), and
    a slot's uid is killed wholesale when a submission ends: two processes must never hand
    out the same uid. An flock on /tmp/autograder-slots-<euid>/<n>.lock does it; the kernel
    releases it when the process dies, however it dies."""
    if number in _slots_owned:
        return True
    folder = Path(tempfile.gettempdir()) / f"autograder-slots-{os.geteuid()}"
    folder.mkdir(mode=0o700, exist_ok=True)
    fd = os.open(folder / f"{number}.lock", os.O_RDWR | os.O_CREAT | os.O_CLOEXEC, 0o600)
    try:
        fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
    except OSError:
        os.close(fd)
        return False
    _slots_owned[number] = fd
    return True


@contextmanager
def slot():
    """A slot number unused by the other sandboxes of this process and by every other grading
    process on this machine (uid = base + slot)."""
    with _slots_lock:
        number = next(i for i in range(10_000) if i not in _slots_used and _own(i))
        _slots_used.add(number)
    try:
        yield number
    finally:
        with _slots_lock:
            _slots_used.discard(number)


# -- the command ----------------------------------------------------------------------------------

def _environment() -> dict[str, str]:
    env = {
        "PATH": f"{Path(sys.executable).parent}:/usr/local/bin:/usr/bin:/bin",
        "HOME": SCRATCH,
        "TMPDIR": SCRATCH,
        "MPLCONFIGDIR": f"{SCRATCH}/.matplotlib",
        "LANG": "C.UTF-8",
        "PYTHONDONTWRITEBYTECODE": "1",
        "PYTHONNOUSERSITE": "1",
    }
    env.update(config.KERNEL_ENV)
    return env


def _bind_points() -> list[Path]:
    """Read-only binds: the Python installation and the venv, at their own paths."""
    points = {Path(sys.prefix), Path(sys.base_prefix), Path(os.path.realpath(sys.executable)).parent.parent}
    return sorted(p for p in points if p.exists() and str(p) not in ("/", "/usr"))


def _processes_of_this_user() -> int:
    uid, count = os.getuid(), 0
    for entry in os.scandir("/proc"):
        if entry.name.isdigit():
            try:
                count += entry.stat().st_uid == uid
            except OSError:
                pass
    return count


def _limits_prefix(limits: Limits) -> list[str]:
    prlimit = shutil.which("prlimit")
    if prlimit is None:
        raise SandboxUnavailable("`prlimit` (util-linux) is needed to set resource limits")
    # RLIMIT_NPROC counts every process of the real uid. As root the sandbox gets a uid of
    # its own (setpriv); as an ordinary user it shares the user's uid, so the limit is the
    # user's current processes plus the allowance (a desktop session has hundreds).
    processes = limits.processes if os.geteuid() == 0 else _processes_of_this_user() + limits.processes
    return [
        prlimit,
        f"--as={limits.memory_bytes}" if limits.memory_bytes else "--as=unlimited",
        f"--cpu={limits.cpu_seconds}",
        f"--nproc={processes}",
        f"--fsize={limits.file_bytes}",
        "--core=0",
        "--nofile=256",
        "--",
    ]


def bwrap_command(limits: Limits, slot_number: int = 0, fork_server: bool = False) -> list[str]:
    """The full command line of one sandboxed runner."""
    bwrap = shutil.which("bwrap")
    if bwrap is None:
        raise SandboxUnavailable(
            "bubblewrap is not installed, so student code cannot be sandboxed. Install it "
            "(Debian/Ubuntu: sudo apt-get install bubblewrap), or pass --no-sandbox to run "
            "student code unisolated, as the user running the grader."
        )
    as_root = os.geteuid() == 0
    cmd = [bwrap, "--unshare-net", "--unshare-pid", "--unshare-ipc", "--unshare-uts", "--unshare-cgroup-try",
           "--die-with-parent", "--new-session",
           # The scratch tmpfs first: a venv that lives under /tmp (a CI checkout) is bound on top of it.
           "--size", str(limits.scratch_bytes), "--perms", "1777", "--tmpfs", SCRATCH,
           "--ro-bind", "/usr", "/usr"]
    if not as_root:
        cmd.append("--unshare-user")
    for top in ("/bin", "/sbin", "/lib", "/lib32", "/lib64", "/libx32"):
        if os.path.islink(top):
            cmd += ["--symlink", os.readlink(top), top]
        elif os.path.isdir(top):
            cmd += ["--ro-bind", top, top]
    cmd += ["--ro-bind", "/etc", "/etc"]
    for secret in ("/etc/shadow", "/etc/gshadow", "/etc/shadow-", "/etc/gshadow-", "/etc/sudoers"):
        if os.path.exists(secret):
            cmd += ["--ro-bind", "/dev/null", secret]
    made = {"/", "/usr", "/etc", SCRATCH}
    for point in [*_bind_points(), Path(RUNNER_IN_SANDBOX)]:
        for parent in reversed(point.parents):
            if str(parent) not in made:
                cmd += ["--perms", "0755", "--dir", str(parent)]
                made.add(str(parent))
        made.add(str(point))
        if point != Path(RUNNER_IN_SANDBOX):
            cmd += ["--ro-bind", str(point), str(point)]
    cmd += ["--ro-bind", str(RUNNER), RUNNER_IN_SANDBOX]
    cmd += ["--proc", "/proc", "--dev", "/dev"]
    for device in ("/dev/nvidiactl", "/dev/nvidia-uvm", "/dev/nvidia-uvm-tools", "/dev/nvidia0", "/dev/nvidia1"):
        cmd += ["--dev-bind-try", device, device]
    cmd += ["--chdir", SCRATCH, "--remount-ro", "/", "--"]
    if as_root:
        uid = config.SANDBOX_UID_BASE + slot_number
        setpriv = shutil.which("setpriv")
        if setpriv is None:
            raise SandboxUnavailable("`setpriv` (util-linux) is needed to drop root privileges in the sandbox")
        if fork_server:  # stays uid 0 with two capabilities, to make each forked child the slot's uid
            cmd += [setpriv, "--clear-groups", "--inh-caps=-all", "--bounding-set=-all,+setuid,+setgid", "--no-new-privs", "--"]
        else:
            cmd += [setpriv, f"--reuid={uid}", f"--regid={uid}", "--clear-groups", "--inh-caps=-all",
                    "--bounding-set=-all", "--no-new-privs", "--"]
    return _limits_prefix(limits) + cmd + [sys.executable, RUNNER_IN_SANDBOX]


def unsandboxed_command(limits: Limits) -> list[str]:
    return _limits_prefix(limits) + [sys.executable, str(RUNNER)]


_checked: dict[str, str] = {}


def check_available() -> None:
    """Raise SandboxUnavailable, with how to fix it, unless a sandbox can start here."""
    if "ok" in _checked:
        return
    limits = Limits()
    cmd = bwrap_command(limits)
    probe = cmd[: cmd.index(sys.executable)] + [sys.executable, "-c", "import os; print(os.getuid())"]
    try:
        proc = subprocess.run(probe, capture_output=True, text=True, timeout=60, env=_environment())
    except (OSError, subprocess.TimeoutExpired) as exc:
        raise SandboxUnavailable(f"the sandbox could not start: {exc}. Pass --no-sandbox to grade without it.") from exc
    if proc.returncode != 0:
        raise SandboxUnavailable(
            "the sandbox (bubblewrap) could not start on this machine: "
            f"{(proc.stderr or proc.stdout).strip()[-500:]}\n"
            "It needs user namespaces (or root). Pass --no-sandbox to grade without isolation."
        )
    _checked["ok"] = proc.stdout.strip()


# -- running ---------------------------------------------------------------------------------------

class _Channel:
    """Line-framed JSON from the runner, read with deadlines and a size cap.

    A frame counts only if it carries a token this channel listens to and the pid that first
    spoke with that token (the runner's "ready", or the fork server's "zygote"): output of
    student code, of its forks, or of an earlier submission's child is ignored."""

    def __init__(self, proc: subprocess.Popen, pid_token: str, max_bytes: int):
        self.proc, self.max_bytes = proc, max_bytes
        self.fd = proc.stdout.fileno()
        self.buffer = b""
        self.pids: dict[str, int | None] = {pid_token: None}
        self.eof = False

    def listen(self, token: str, pid: int | None = None) -> None:
        self.pids[token] = pid

    def forget(self, token: str) -> None:
        self.pids.pop(token, None)

    def next_frame(self, deadline: float) -> dict | None:
        """The next frame from the runner, or None at the deadline or when the process is gone."""
        while True:
            while b"\n" in self.buffer:
                line, self.buffer = self.buffer.split(b"\n", 1)
                frame = self._parse(line)
                if frame is not None:
                    return frame
            if self.eof:
                return None
            remaining = deadline - time.monotonic()
            if remaining <= 0:
                return None
            ready, _, _ = select.select([self.fd], [], [], min(remaining, 1.0))
            if not ready:
                continue
            chunk = os.read(self.fd, 1 << 20)
            if not chunk:
                self.eof = True
                continue
            self.buffer += chunk
            if len(self.buffer) > self.max_bytes and b"\n" not in self.buffer:
                self.buffer = b""  # a flood without frames: drop it

    def _parse(self, line: bytes) -> dict | None:
        try:
            frame = json.loads(line)
        except ValueError:
            return None
        if not isinstance(frame, dict) or frame.get("token") not in self.pids:
            return None
        token = frame["token"]
        if self.pids[token] is None and frame.get("type") in ("ready", "zygote"):
            self.pids[token] = frame.get("pid")
        if frame.get("pid") != self.pids[token]:
            return None
        return frame


def _tail(errors) -> str:
    """The end of what a runner wrote to its stderr file before it could answer."""
    errors.seek(0)
    return errors.read()[-2000:].decode("utf-8", "replace").strip() or "no message"


def _describe_exit(proc: subprocess.Popen) -> str:
    return _describe_code(proc.poll())


def _describe_code(code: int | None) -> str:
    """How the notebook's process ended, from its exit code (negative: killed by that signal)."""
    if code is None:
        return "the notebook's process stopped answering"
    if code < 0:
        name = signal.Signals(-code).name if -code in signal.Signals._value2member_map_ else str(-code)
        if -code == signal.SIGKILL:
            return f"the notebook's process was killed ({name}: out of memory, or killed by the notebook's own code)"
        if -code == signal.SIGXCPU:
            return "the notebook used up its CPU-time limit"
        return f"the notebook's process died ({name})"
    return f"the notebook's code ended the Python process (exit code {code})"


def _kill(proc: subprocess.Popen) -> None:
    try:
        os.killpg(proc.pid, signal.SIGKILL)
    except (ProcessLookupError, PermissionError):
        pass
    try:
        proc.kill()
    except ProcessLookupError:
        pass
    try:
        proc.wait(timeout=30)
    except subprocess.TimeoutExpired:
        pass


def run_cells(cells: list[Cell], limits: Limits | None = None, sandboxed: bool = True, harden: bool = True) -> Report:
    """Run `cells` in order in one fresh process (a fork of a warm sandboxed server where one
    runs, see ForkServer; else a new sandbox); one CellRun per cell that finished."""
    limits = limits or Limits()
    if sandboxed and fork_servers_enabled():
        with slot() as number:
            return _server_for(number, limits).run(cells, limits, harden)
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
            proc = subprocess.Popen(cmd, stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=errors,
                                    env=_environment(), cwd=cwd, start_new_session=True)
        except OSError as exc:
            report.machinery_error = f"could not start the notebook's process: {exc}"
            return report
        channel = _Channel(proc, token, max_bytes=64 << 20)
        try:
            _send(proc, {"token": token, "harden": harden, "cell_timeout": limits.cell_timeout_s,
                         "max_output": limits.max_output_chars})
            frame = channel.next_frame(started + config.STARTUP_TIMEOUT_S)
            if frame is None or frame.get("type") != "ready":
                report.machinery_error = f"the grader's kernel did not start ({_describe_exit(proc)}): {_tail(errors)}"
                return report
            report.startup_seconds = round(time.monotonic() - started, 2)
            _serve_cells(proc, channel, cells, limits, report, lambda: _describe_exit(_wait_briefly(proc)))
        finally:
            _kill(proc)
            if scratch_dir:
                shutil.rmtree(scratch_dir, ignore_errors=True)
    return report


def _serve_cells(proc: subprocess.Popen, channel: _Channel, cells: list[Cell], limits: Limits, report: Report,
                 describe_exit) -> str:
    """Send the cells one at a time and collect their results into `report`. Returns "done" if
    every cell ran and the runner was told to end, "exited" if a fork server said its child
    ended, "stopped" otherwise (report.stopped says why in each case but "done")."""
    notebook_deadline = time.monotonic() + limits.notebook_timeout_s
    exited: list[int] = []

    def next_frame(deadline: float) -> dict | None:
        frame = channel.next_frame(deadline)
        if frame is not None and frame.get("type") == "exited":  # from a fork server: its child is gone
            exited.append(int(frame.get("code", 0)))
        return frame

    for cell in cells:
        if not _send(proc, {"index": cell.index, "kind": cell.kind, "name": cell.name, "source": cell.source}):
            report.stopped = describe_exit() + f", before cell {cell.index + 1}"
            return "stopped"
        cell_deadline = min(time.monotonic() + limits.cell_timeout_s + config.CELL_KILL_GRACE_S, notebook_deadline)
        while True:
            frame = next_frame(cell_deadline)
            if frame is None or exited or (frame.get("type") == "done" and frame.get("index") == cell.index):
                break
        if exited:
            report.stopped = _describe_code(exited[0]) + f", in cell {cell.index + 1}"
            return "exited"
        if frame is None:
            if time.monotonic() >= notebook_deadline:
                report.stopped = f"the notebook ran longer than {limits.notebook_timeout_s:g} s in all (stopped in cell {cell.index + 1})"
            elif channel.eof or proc.poll() is not None:
                report.stopped = describe_exit() + f", in cell {cell.index + 1}"
            else:
                report.stopped = f"cell {cell.index + 1} ran longer than {limits.cell_timeout_s:g} s and did not stop; the notebook was stopped"
            return "stopped"
        report.cells[cell.index] = CellRun(
            cell.index, frame.get("outputs") or [], frame.get("error"), float(frame.get("seconds", 0)),
            int(frame.get("execution_count", 0)), list(frame.get("tamper") or []),
        )
    _send(proc, {"end": True})
    return "done"


# -- the fork server: one warm sandbox per worker slot -------------------------------------------------

def fork_servers_enabled() -> bool:
    """Fork servers need root to give each submission a uid of its own inside the sandbox
    (runner.py: serve_forks); as an ordinary user every submission gets a fresh sandbox."""
    return config.FORK_SERVER and os.geteuid() == 0


class ForkServer:
    """A sandboxed runner that has imported torch, numpy, matplotlib and IPython once and forks a
    fresh child per submission (see runner.py). The sandbox is the same as a single runner's
    (bwrap_command); only the server keeps root, with CAP_SETUID and CAP_SETGID alone, to hand
    each child the slot's uid. Anything unusual (a cell over its time, a server that does not
    come back idle) kills the whole sandbox; the next submission starts a new one."""

    def __init__(self, limits: Limits, number: int):
        self.number, self.scratch_bytes = number, limits.scratch_bytes
        self.token = secrets.token_hex(16)
        self.errors = tempfile.TemporaryFile()
        started = time.monotonic()
        self.proc = subprocess.Popen(bwrap_command(limits, number, fork_server=True), stdin=subprocess.PIPE,
                                     stdout=subprocess.PIPE, stderr=self.errors, env=_environment(), start_new_session=True)
        self.channel = _Channel(self.proc, self.token, max_bytes=64 << 20)
        _send(self.proc, {"zygote": True, "token": self.token})
        frame = self.channel.next_frame(started + config.STARTUP_TIMEOUT_S)
        if frame is None or frame.get("type") != "zygote":
            why = f"the grader's fork server did not start ({_describe_exit(self.proc)}): {_tail(self.errors)}"
            self.close()  # after describing the exit: the kill would otherwise be reported as its cause
            raise RuntimeError(why)

    @property
    def alive(self) -> bool:
        return self.proc.poll() is None

    def close(self) -> None:
        _kill(self.proc)
        self.errors.close()

    def run(self, cells: list[Cell], limits: Limits, harden: bool) -> Report:
        report = Report(cells={})
        child = secrets.token_hex(16)
        uid = config.SANDBOX_UID_BASE + self.number
        request = {"token": child, "harden": harden, "cell_timeout": limits.cell_timeout_s,
                   "max_output": limits.max_output_chars, "uid": uid, "rlimits": _rlimits(limits)}
        started = time.monotonic()
        self.channel.listen(child)
        reusable = False
        try:
            if not _send(self.proc, {"fork": request}):
                report.machinery_error = f"the grader's fork server is gone ({_describe_exit(self.proc)})"
                return report
            frame = self.channel.next_frame(started + config.STARTUP_TIMEOUT_S)
            if frame is None or frame.get("type") != "ready":
                report.machinery_error = f"the grader's kernel did not start (fork server: {frame or _describe_exit(self.proc)})"
                return report
            report.startup_seconds = round(time.monotonic() - started, 2)
            ended = _serve_cells(self.proc, self.channel, cells, limits, report, lambda: "the notebook's process stopped answering")
            # the child said "end" or died: the server cleans up after it; a child still running
            # (over its time) is stopped with the whole sandbox
            reusable = ended in ("done", "exited") and self._wait_idle()
        finally:
            self.channel.forget(child)
            if not reusable:
                self.close()
        return report

    def _wait_idle(self) -> bool:
        """The server cleaned up after its child and waits for the next one (False: it did not)."""
        deadline = time.monotonic() + 30
        while True:
            frame = self.channel.next_frame(deadline)
            if frame is None:
                return False
            if frame.get("type") == "idle" and frame.get("token") == self.token:
                return True


def _rlimits(limits: Limits) -> dict[str, int]:
    """What prlimit sets on a single runner (_limits_prefix), for a fork server's child to set on itself."""
    return {"as": limits.memory_bytes or -1, "cpu": limits.cpu_seconds, "nproc": limits.processes,
            "fsize": limits.file_bytes, "core": 0, "nofile": 256}


_servers_lock = threading.Lock()
_servers: dict[int, ForkServer] = {}


def _server_for(number: int, limits: Limits) -> ForkServer:
    """The slot's warm server, started (again) if it is missing, dead or made for other limits."""
    with _servers_lock:
        server = _servers.get(number)
    if server is not None and (not server.alive or server.scratch_bytes != limits.scratch_bytes):
        server.close()
        server = None
    if server is None:
        server = ForkServer(limits, number)
        with _servers_lock:
            _servers[number] = server
    return server


def shutdown_servers() -> None:
    """Stop every fork server (grade() calls this when its run ends: nothing outlives a run)."""
    with _servers_lock:
        servers = list(_servers.values())
        _servers.clear()
    for server in servers:
        server.close()


def _wait_briefly(proc: subprocess.Popen) -> subprocess.Popen:
    try:
        proc.wait(timeout=2)
    except subprocess.TimeoutExpired:
        pass
    return proc


def _send(proc: subprocess.Popen, message: dict) -> bool:
    try:
        proc.stdin.write((json.dumps(message) + "\n").encode())
        proc.stdin.flush()
        return True
    except (BrokenPipeError, OSError, ValueError):
        return False
