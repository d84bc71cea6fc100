"""Run a notebook's cells in a sandbox: one process per submission, limits, no network.

The process is the runner (`autograder/runner/`, the grader's kernel) started under Debian's bubblewrap (or, as
root, forked per submission by a warm runner in such a sandbox: `ForkServer`, below):

- no network (`--unshare-net`: only a loopback of its own), own pid/ipc/uts/cgroup namespaces,
  so it cannot see or signal any process outside (`os.kill(os.getppid(), ...)` reaches
  only the sandbox's own init, which ignores it);
- a new, read-only root holding only the system (/usr, /etc without shadow files), the
  Python installation and the venv; the course repository, `solutions/`, the work dir,
  the gradebook and the submissions folder do not exist in it;
- nothing survives a student: before any of its code, the kernel of each submission unshares a user, mount,
  IPC, UTS, network and cgroup namespace of its own and mounts a new size-limited tmpfs on /tmp, its one
  writable place and its HOME and working dir (`autograder/runner/isolation.py`; in a fresh sandbox and in a
  fork server's child alike). Its files, System V and POSIX IPC objects, keyrings and sockets go, whole, with
  those namespaces: no clean-up has to find them. Its processes are killed (the sandbox's pid namespace ends
  with it; a fork server kills every process of the uid), and the next submission starts only once the
  kernel has freed its keys. As root, bubblewrap itself does not unshare the user namespace: it would map the
  sandbox to uid 0 outside, which reads every root-only file of the bound folders; the kernel unshares it as
  its own unprivileged uid instead;
- an unprivileged uid (when the grader runs as root, `setpriv` drops to a uid of its own per worker slot, so
  RLIMIT_NPROC stops a fork bomb: root ignores it);
- rlimits on address space, CPU time, processes, file size and open files;
- wall-clock limits per cell and per notebook, enforced from outside (kill), and a cap
  on the output kept per cell.

The notebook never touches the disk: cells go in on stdin, one at a time; results
come back on a pipe. `--no-sandbox` runs the same runner as a plain subprocess with
the same rlimits and time limits but no isolation (the instructor asked for it).

Modules: `command` (the bubblewrap command line, limits, environment), `slots` (one uid per concurrent
sandbox), `framing` (the conversation with one kernel, in the messages of `autograder.runner.protocol`),
`forkserver` (warm sandboxes), `run` (run_cells, the entry point).
"""

from autograder.model.records import Limits, default_memory_bytes
from autograder.sandbox.command import SandboxUnavailable, check_available
from autograder.sandbox.forkserver import shutdown_servers
from autograder.sandbox.framing import Cell, CellRun, Report
from autograder.sandbox.run import run_cells

__all__ = [
    "Cell",
    "CellRun",
    "Limits",
    "Report",
    "SandboxUnavailable",
    "check_available",
    "default_memory_bytes",
    "run_cells",
    "shutdown_servers",
]
