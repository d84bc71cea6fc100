"""The sandbox's command line: bubblewrap, the limits, the environment, and whether it can start here."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path

from autograder import config
from autograder.errors import UsageError
from autograder.model.records import Limits

RUNNER = Path(__file__).resolve().parent.parent / "runner"  # the kernel program, a folder run with `python RUNNER`
RUNNER_IN_SANDBOX = "/opt/grader/runner"
SCRATCH = "/tmp"


class SandboxUnavailable(UsageError, RuntimeError):
    """bubblewrap is missing or cannot create a sandbox on this machine."""


def environment(scratch: str = SCRATCH) -> dict[str, str]:
    env = {
        "PATH": f"{Path(sys.executable).parent}:/usr/local/bin:/usr/bin:/bin",
        "HOME": scratch,
        "TMPDIR": scratch,
        "MPLCONFIGDIR": f"{scratch}/.matplotlib",
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


# What the sandbox sees of the host, besides /usr, /etc, the Python installation and the runner: the top-level
# program and library folders (symlinks on a merged-/usr host, kept as symlinks), the secrets of /etc (each hidden
# under /dev/null) and the NVIDIA devices (bound where they exist, so that CUDA works and nothing else changes).
TOP_LEVEL_DIRS = ("/bin", "/sbin", "/lib", "/lib32", "/lib64", "/libx32")
SECRETS = ("/etc/shadow", "/etc/gshadow", "/etc/shadow-", "/etc/gshadow-", "/etc/sudoers")
GPU_DEVICES = ("/dev/nvidiactl", "/dev/nvidia-uvm", "/dev/nvidia-uvm-tools", "/dev/nvidia0", "/dev/nvidia1")
NAMESPACES = (
    "--unshare-net",
    "--unshare-pid",
    "--unshare-ipc",
    "--unshare-uts",
    "--unshare-cgroup-try",
    "--die-with-parent",
    "--new-session",
)


def bwrap_command(limits: Limits, slot_number: int = 0, fork_server: bool = False) -> list[str]:
    """The full command line of one sandboxed runner: the limits (prlimit), bubblewrap with its namespaces and a
    read-only view of the host, root dropped where the grader runs as root, then the runner. Each step is a helper
    below, in the order of the command line (bubblewrap applies its mounts in order)."""
    bwrap = _bwrap()
    as_root = os.geteuid() == 0
    # The scratch tmpfs first: a venv that lives under /tmp (a CI checkout) is bound on top of it.
    cmd = [bwrap, *NAMESPACES, *_scratch(limits), "--ro-bind", "/usr", "/usr"]
    if not as_root:  # as root, bubblewrap's user namespace would be uid 0 outside: the kernel unshares its own
        cmd.append("--unshare-user")  # (runner/isolation.py), as every user, whatever bubblewrap did
    cmd += _system_binds() + _python_binds() + _devices()
    cmd += ["--chdir", SCRATCH, "--remount-ro", "/", "--"]
    if as_root:
        cmd += _drop_root(slot_number, fork_server)
    return _limits_prefix(limits) + cmd + [sys.executable, RUNNER_IN_SANDBOX]


def _bwrap() -> str:
    bwrap = shutil.which("bwrap")
    if bwrap is None:
        raise SandboxUnavailable(
            "bubblewrap is not installed, so student code cannot be sandboxed. Install it "
            "(Debian/Ubuntu: sudo apt-get install bubblewrap), or pass --no-sandbox to run "
            "student code unisolated, as the user running the grader."
        )
    return bwrap


def _scratch(limits: Limits) -> list[str]:
    """The only writable place: a tmpfs of `limits.scratch_bytes`, sticky and world-writable as /tmp is."""
    return ["--size", str(limits.scratch_bytes), "--perms", "1777", "--tmpfs", SCRATCH]


def _system_binds() -> list[str]:
    """The host's programs and libraries read-only (a top-level symlink stays a symlink, as on a merged-/usr host),
    /etc read-only with its secrets hidden under /dev/null."""
    binds = []
    for top in TOP_LEVEL_DIRS:
        if os.path.islink(top):
            binds += ["--symlink", os.readlink(top), top]
        elif os.path.isdir(top):
            binds += ["--ro-bind", top, top]
    binds += ["--ro-bind", "/etc", "/etc"]
    for secret in SECRETS:
        if os.path.exists(secret):
            binds += ["--ro-bind", "/dev/null", secret]
    return binds


def _python_binds() -> list[str]:
    """The Python installation and the venv read-only at their own paths, and the runner at RUNNER_IN_SANDBOX. Their
    parent folders do not exist on the tmpfs root: each is made once (0755), before the first bind under it."""
    binds = []
    made = {"/", "/usr", "/etc", SCRATCH}
    for point in [*_bind_points(), Path(RUNNER_IN_SANDBOX)]:
        for parent in reversed(point.parents):
            if str(parent) not in made:
                binds += ["--perms", "0755", "--dir", str(parent)]
                made.add(str(parent))
        made.add(str(point))
        if point != Path(RUNNER_IN_SANDBOX):
            binds += ["--ro-bind", str(point), str(point)]
    return binds + ["--ro-bind", str(RUNNER), RUNNER_IN_SANDBOX]


def _devices() -> list[str]:
    """The sandbox's own /proc (of its pid namespace) and a minimal /dev, with the GPU devices where they exist."""
    devices = ["--proc", "/proc", "--dev", "/dev"]
    for device in GPU_DEVICES:
        devices += ["--dev-bind-try", device, device]
    return devices


def _drop_root(slot_number: int, fork_server: bool) -> list[str]:
    """setpriv between bubblewrap and the runner when the grader runs as root: the runner becomes the slot's uid, a
    uid that owns nothing; a fork server instead stays uid 0 with only the capabilities it needs to make each forked
    child the slot's uid."""
    setpriv = shutil.which("setpriv")
    if setpriv is None:
        raise SandboxUnavailable("`setpriv` (util-linux) is needed to drop root privileges in the sandbox")
    if not fork_server:
        return _setpriv_as(setpriv, config.SANDBOX_UID_BASE + slot_number)
    # two capabilities, to make each forked child the slot's uid, and a third where setpriv knows it, to give every
    # child the same pid (runner/forks.py _same_pids_for_each_child)
    same_pids = ",+checkpoint_restore" if _knows_checkpoint_restore(setpriv) else ""
    return [
        setpriv,
        "--clear-groups",
        "--inh-caps=-all",
        "--bounding-set=-all,+setuid,+setgid" + same_pids,
        "--no-new-privs",
        "--",
    ]


def _setpriv_as(setpriv: str, uid: int) -> list[str]:
    """setpriv's command that runs the rest as `uid` (user and group), with no supplementary groups, no capabilities
    it could inherit or regain, and no way to gain privileges (setuid programs) again."""
    return [
        setpriv,
        f"--reuid={uid}",
        f"--regid={uid}",
        "--clear-groups",
        "--inh-caps=-all",
        "--bounding-set=-all",
        "--no-new-privs",
        "--",
    ]


_caps_known: dict[str, bool] = {}


def _knows_checkpoint_restore(setpriv: str) -> bool:
    """Whether this setpriv (util-linux 2.36 and later) and kernel (5.9 and later) know CAP_CHECKPOINT_RESTORE."""
    name = "checkpoint_restore"
    if name not in _caps_known:
        try:
            listed = subprocess.run([setpriv, "--list-caps"], capture_output=True, text=True, timeout=10).stdout
        except (OSError, subprocess.TimeoutExpired):
            listed = ""
        try:
            with open("/proc/sys/kernel/cap_last_cap") as handle:
                kernel_knows = int(handle.read()) >= 40  # CAP_CHECKPOINT_RESTORE is 40
        except (OSError, ValueError):
            kernel_knows = False
        _caps_known[name] = name in listed.split() and kernel_knows
    return _caps_known[name]


def unsandboxed_command(limits: Limits) -> list[str]:
    return _limits_prefix(limits) + [sys.executable, str(RUNNER)]


def unprivileged_command(limits: Limits, uid: int, runner: Path) -> list[str]:
    """The runner without bubblewrap, as `uid` (a uid that owns nothing: it reads only what any user may, writes
    only its own scratch dir) with the same limits; `runner` is a copy of the runner that uid can read. For a
    grader that runs as root where bubblewrap cannot (a container without user namespaces: Gradescope's)."""
    setpriv = shutil.which("setpriv")
    if os.geteuid() != 0 or setpriv is None:
        raise SandboxUnavailable("running student code as a uid of its own needs root and `setpriv` (util-linux)")
    return _limits_prefix(limits) + _setpriv_as(setpriv, uid) + [sys.executable, str(runner)]


_checked: dict[str, str] = {}


def check_available() -> None:
    """Raise SandboxUnavailable, with how to fix it, unless a sandbox can start here."""
    if "ok" in _checked:
        return
    limits = Limits()
    cmd = bwrap_command(limits)
    # the sandbox starts, and the kernel in it can unshare namespaces of its own (runner/isolation.py: a host that
    # restricts user namespaces, an AppArmor policy say, lets bubblewrap start as root but not this)
    isolate = (
        f"import os, sys; sys.path.insert(0, {os.path.dirname(RUNNER_IN_SANDBOX)!r}); "
        "from runner.isolation import isolate\n"
        "try:\n    isolate(1 << 20)\n"
        "except Exception as exc:\n    sys.exit(f'it could not isolate the notebook ({exc})')\n"
        "print(os.getuid())"
    )
    probe = cmd[: cmd.index(sys.executable)] + [sys.executable, "-c", isolate]
    try:
        proc = subprocess.run(probe, capture_output=True, text=True, timeout=60, env=environment())
    except (OSError, subprocess.TimeoutExpired) as exc:
        raise SandboxUnavailable(f"the sandbox could not start: {exc}. Pass --no-sandbox to grade without it.") from exc
    if proc.returncode != 0:
        raise SandboxUnavailable(
            "the sandbox (bubblewrap) could not start on this machine: "
            f"{(proc.stderr or proc.stdout).strip()[-500:]}\n"
            "It needs user namespaces (bubblewrap's, or, as root, the ones each submission's kernel unshares "
            "for itself). Pass --no-sandbox to grade without isolation."
        )
    _checked["ok"] = proc.stdout.strip()
