"""Execute a notebook's cells, one at a time, inside the sandbox: the grader's kernel.

This file runs as a standalone script (`python runner.py`) in the sandbox, which sees
none of this repository: it imports only the standard library, IPython and, when they
are installed, torch, numpy and matplotlib. It never reads a file of the course.

Protocol (one JSON object per line):
- parent -> runner, on stdin: first {"token", "harden", "cell_timeout", "max_output"},
  then one cell at a time {"index", "kind", "name", "source"} (kind is "student",
  "locked" or "test"), then {"end": true}. A cell is sent only after the previous one
  is done, so hidden tests reach this process one test cell at a time, when they run.
- runner -> parent, on the result channel (the original stdout): {"type": "ready"},
  then {"type": "done", "index", "outputs", "error", "seconds", "tamper"} per cell.
  Every frame carries this process's pid and the token, so output written by student
  code or by a forked child is not taken for the runner's.

Student cells run through IPython (magics, display, inline figures, `In`/`Out`), like
a Jupyter kernel. Locked and test cells are the course's code: they are compiled and
run by this file directly (not through IPython, not stored in `In`), so that a student
who patches IPython's error display cannot hide a failed test, and the verdict of a
test cell is simply "did it run to the end without raising".

Before each test cell the `Guard` puts back what student code may have replaced
(attributes of torch, numpy, math, builtins and their testing modules, methods of
torch.Tensor, names defined by locked cells, torch's default dtype/device and grad
mode, trace functions) and refuses to run tests next to things it cannot put back
(tensor subclasses or __torch_function__ classes defined by student code, background
threads, torch function/dispatch modes). After the cell it checks that nothing was
replaced while the test ran. See the README's threat model for what this does not stop.
"""

from __future__ import annotations

import builtins
import json
import os
import signal
import sys
import threading
import time

# Modules whose attributes tests rely on; snapshotted before any student code runs.
GUARDED_MODULES = (
    "builtins", "math", "operator", "functools",
    "torch", "torch.testing", "torch.testing._comparison", "torch.nn", "torch.nn.functional",
    "torch.nn.modules.module", "torch.linalg", "torch.autograd",
    "numpy", "numpy.testing", "numpy.testing._private.utils", "numpy.linalg", "numpy.random",
)
# Python-level classes whose methods tests use implicitly (comparisons, reductions).
GUARDED_CLASSES = ("torch.Tensor", "torch.nn.Module", "torch.nn.Parameter")
# Hooks through which an object can impersonate a tensor or an array.
IMPERSONATION_HOOKS = ("__torch_function__", "__torch_dispatch__", "__array_function__", "__array_ufunc__")
TRUSTED_PACKAGES = ("torch", "numpy", "matplotlib", "IPython", "PIL", "scipy", "sympy", "functorch", "typing", "abc")


class CellTimeout(BaseException):
    """Raised in the cell when its time is up (BaseException: `except Exception` does not swallow it)."""


def _resolve(dotted: str):
    module, _, attr = dotted.rpartition(".")
    return getattr(sys.modules[module], attr)


class CappedStream:
    """sys.stdout/sys.stderr for one cell: keeps the first `limit` characters."""

    def __init__(self, name: str, limit: int, sink: list):
        self.name, self.limit, self.sink = name, limit, sink
        self.kept = 0
        self.dropped = 0
        self.encoding = "utf-8"

    def write(self, text) -> int:
        text = str(text)
        room = self.limit - self.kept
        if room > 0:
            piece = text[:room]
            self.kept += len(piece)
            if self.sink and self.sink[-1].get("output_type") == "stream" and self.sink[-1]["name"] == self.name:
                self.sink[-1]["text"] += piece
            elif piece:
                self.sink.append({"output_type": "stream", "name": self.name, "text": piece})
        self.dropped += max(0, len(text) - max(room, 0))
        return len(text)

    def writelines(self, lines) -> None:
        for line in lines:
            self.write(line)

    def flush(self) -> None:
        pass

    def isatty(self) -> bool:
        return False

    def fileno(self) -> int:
        raise OSError("output of a graded notebook has no file descriptor")


class Guard:
    """The state tests depend on, captured before any student code runs."""

    def __init__(self, enabled: bool):
        self.enabled = enabled
        self.modules = {name: sys.modules[name] for name in GUARDED_MODULES if name in sys.modules}
        self.module_attrs = {name: dict(vars(mod)) for name, mod in self.modules.items()}
        self.classes = {}
        for dotted in GUARDED_CLASSES:
            try:
                cls = _resolve(dotted)
            except (KeyError, AttributeError):
                continue
            self.classes[dotted] = (cls, dict(vars(cls)))
        self.known_classes = {id(c) for c in self._all_classes()}
        self.threads = self._thread_count()
        self.trusted: dict[str, object] = {}  # names bound by locked cells
        self.suspects: list[type] = []  # classes made by the notebook that imitate tensors
        self.torch = sys.modules.get("torch")
        if self.torch is not None:
            self.default_dtype = self.torch.get_default_dtype()
            self.default_device = self._default_device()

    @staticmethod
    def _thread_count() -> int:
        import _thread

        return _thread._count()

    def _default_device(self):
        getter = getattr(self.torch, "get_default_device", None)
        return getter() if getter else None

    @staticmethod
    def _all_classes() -> list[type]:
        seen, out, stack = set(), [], [object]
        while stack:
            cls = stack.pop()
            try:
                subclasses = type.__subclasses__(cls)
            except TypeError:
                continue
            for sub in subclasses:
                if id(sub) not in seen:
                    seen.add(id(sub))
                    out.append(sub)
                    stack.append(sub)
        return out

    # -- what student code may have changed -------------------------------------------------

    def changed(self) -> list[str]:
        """Guarded names whose value is not the one captured (identity)."""
        found = []
        for name, mod in self.modules.items():
            if sys.modules.get(name) is not mod:
                found.append(f"sys.modules[{name!r}]")
            current = vars(mod)
            for attr, value in self.module_attrs[name].items():
                if current.get(attr, _MISSING) is not value:
                    found.append(f"{name}.{attr}")
        for dotted, (cls, attrs) in self.classes.items():
            current = vars(cls)
            for attr in set(current) | set(attrs):
                if current.get(attr, _MISSING) is not attrs.get(attr, _MISSING):
                    found.append(f"{dotted}.{attr}")
        return found

    def restore_builtins(self) -> list[str]:
        if not self.enabled or "builtins" not in self.module_attrs:
            return []
        current, saved = vars(builtins), self.module_attrs["builtins"]
        fixed = [f"builtins.{name}" for name, value in saved.items() if current.get(name, _MISSING) is not value]
        current.update({name: saved[name] for name in saved if current.get(name, _MISSING) is not saved[name]})
        return fixed

    def restore(self, namespace: dict) -> list[str]:
        """Put every guarded name back; return what had to be put back."""
        fixed = self.changed()
        for name, mod in self.modules.items():
            sys.modules[name] = mod
            current = vars(mod)
            for attr, value in self.module_attrs[name].items():
                if current.get(attr, _MISSING) is not value:
                    current[attr] = value  # module __dict__ is a plain dict: no __setattr__ to fool
        for dotted, (cls, attrs) in self.classes.items():
            for attr in list(vars(cls)):
                if attr not in attrs:
                    type.__delattr__(cls, attr)
            for attr, value in attrs.items():
                if vars(cls).get(attr, _MISSING) is not value:
                    type.__setattr__(cls, attr, value)
        for name, value in self.trusted.items():
            if namespace.get(name, _MISSING) is not value:
                fixed.append(f"the name {name!r} defined by a provided cell")
                namespace[name] = value
        if self.torch is not None:
            torch = self.torch
            if torch.get_default_dtype() != self.default_dtype:
                fixed.append("torch's default dtype")
                torch.set_default_dtype(self.default_dtype)
            if self.default_device is not None and self._default_device() != self.default_device:
                fixed.append("torch's default device")
                torch.set_default_device(self.default_device)
            if not torch.is_grad_enabled():
                torch.set_grad_enabled(True)
        if sys.gettrace() is not None or sys.getprofile() is not None:
            fixed.append("a trace or profile function")
        fixed += _clear_global_module_hooks()
        sys.settrace(None)
        sys.setprofile(None)
        threading.settrace(None)
        threading.setprofile(None)
        return fixed

    def unfixable(self) -> list[str]:
        """Things that could make a test lie and that cannot simply be put back."""
        problems = []
        if self._thread_count() > self.threads:
            problems.append("a background thread started by the notebook is still running")
        torch = self.torch
        if torch is not None:
            if torch._C._len_torch_function_stack() > 0:
                problems.append("a torch function mode (TorchFunctionMode) is active")
                while torch._C._len_torch_function_stack() > 0:
                    torch._C._pop_torch_function_stack()
            try:
                from torch.utils._python_dispatch import _get_current_dispatch_mode_stack

                if _get_current_dispatch_mode_stack():
                    problems.append("a torch dispatch mode (TorchDispatchMode) is active")
            except Exception:  # noqa: BLE001 - private API; absent in some versions
                pass
        for cls in self._all_classes():
            if id(cls) in self.known_classes:
                continue
            self.known_classes.add(id(cls))
            if self._impersonates(cls):
                self.suspects.append(cls)
        if self.suspects:
            names = ", ".join(sorted({c.__qualname__ for c in self.suspects}))
            problems.append(f"the notebook defines a class that imitates tensors or arrays ({names}); graded code must return plain tensors")
        return problems

    def _impersonates(self, cls: type) -> bool:
        bases = [_resolve(name) for name in ("torch.Tensor", "numpy.ndarray") if name.split(".")[0] in sys.modules]
        relevant = any(issubclass(cls, base) for base in bases if isinstance(base, type)) or any(
            hook in vars(cls) for hook in IMPERSONATION_HOOKS
        )
        if not relevant:
            return False
        return not _defined_by_trusted_package(cls)


_MISSING = object()


def _clear_global_module_hooks() -> list[str]:
    """torch.nn's global hooks run on every module call: one could rewrite every output."""
    module = sys.modules.get("torch.nn.modules.module")
    found = []
    for name, value in vars(module).items() if module else ():
        if name.startswith("_global_") and name.endswith("hooks") and isinstance(value, dict) and value:
            found.append(f"torch.nn global hooks ({name})")
            value.clear()
    return found


def _defined_by_trusted_package(cls: type) -> bool:
    """A class of an installed package (torch creates tensor subclasses lazily), not of a cell."""
    module = getattr(cls, "__module__", "") or ""
    if module.split(".")[0] not in TRUSTED_PACKAGES:
        return False
    roots = {os.path.realpath(p) for p in (sys.prefix, sys.base_prefix)}
    for value in vars(cls).values():
        code = getattr(getattr(value, "__func__", value), "__code__", None)
        if code is not None and not any(os.path.realpath(code.co_filename).startswith(r) for r in roots):
            return False
    return True


class Runner:
    def __init__(self, channel, commands, hello: dict):
        self.channel = channel
        self.commands = commands
        self.token = hello["token"]
        self.cell_timeout = float(hello.get("cell_timeout", 60))
        self.max_output = int(hello.get("max_output", 100_000))
        self.pid = os.getpid()
        self.shell = _make_shell()
        self.outputs: list = []
        self.shell.display_pub.sink = self
        self.shell.displayhook.sink = self
        self.guard = Guard(bool(hello.get("harden", True)))
        self.count = 0

    # -- channel ----------------------------------------------------------------------------

    def send(self, message: dict) -> None:
        if os.getpid() != self.pid:  # a fork of this process (student code) must not speak for it
            os._exit(0)
        message.update(pid=self.pid, token=self.token)
        _frame(self.channel, message)

    def add_output(self, output: dict) -> None:
        size = sum(len(str(v)) for v in output.get("data", {}).values())
        if size > self.max_output * 20:  # a figure is allowed to be bigger than text
            output = {"output_type": "stream", "name": "stderr", "text": f"[output of {size} characters not kept]\n"}
        self.outputs.append(output)

    # -- cells ------------------------------------------------------------------------------

    def serve(self) -> None:
        self.send({"type": "ready"})
        while True:
            line = self.commands.readline()
            if not line:
                return
            cell = json.loads(line)
            if cell.get("end"):
                return
            started = time.monotonic()
            try:
                result = self.run_cell(cell)
            except BaseException as exc:  # noqa: BLE001 - student code broke the runner itself
                if os.getpid() != self.pid:
                    os._exit(0)
                error = _error(exc)
                result = {"outputs": [{"output_type": "error", **error}], "error": error, "tamper": [],
                          "execution_count": self.count}
            result.update(type="done", index=cell["index"], seconds=round(time.monotonic() - started, 3))
            self.send(result)

    def run_cell(self, cell: dict) -> dict:
        self.outputs = []
        self.count += 1
        stdout = CappedStream("stdout", self.max_output, self.outputs)
        stderr = CappedStream("stderr", self.max_output, self.outputs)
        tamper: list[str] = []
        error = None
        saved = sys.stdout, sys.stderr
        sys.stdout, sys.stderr = stdout, stderr
        signal.signal(signal.SIGALRM, _on_alarm)
        try:
            if cell["kind"] == "test":
                error, tamper = self.run_test(cell)
            elif cell["kind"] == "locked":
                error = self.run_trusted(cell, track_names=True)
            else:
                error = self.run_student(cell)
                # builtins are the runner's too: a student who replaced isinstance would
                # break the grader, not just their notebook. Put them back after every cell.
                repaired = self.guard.restore_builtins()
                if repaired:
                    tamper.append("put back after this cell: " + ", ".join(repaired[:8]))
        finally:
            signal.setitimer(signal.ITIMER_REAL, 0)
            sys.stdout, sys.stderr = saved
        if os.getpid() != self.pid:
            os._exit(0)
        for stream in (stdout, stderr):
            if stream.dropped:
                self.outputs.append({"output_type": "stream", "name": "stderr",
                                     "text": f"\n[{stream.dropped} more characters of {stream.name} not kept]\n"})
        if error is not None:
            self.outputs.append({"output_type": "error", **error})
        return {"outputs": self.outputs, "error": error, "tamper": tamper, "execution_count": self.count}

    def _alarm(self) -> None:
        signal.setitimer(signal.ITIMER_REAL, self.cell_timeout)

    def run_student(self, cell: dict) -> dict | None:
        self.shell.last_error = None
        self._alarm()
        try:
            self.shell.run_cell(cell["source"], store_history=True)
        except BaseException as exc:  # noqa: BLE001 - IPython itself failed (e.g. a timeout in a hook)
            return _error(exc)
        finally:
            signal.setitimer(signal.ITIMER_REAL, 0)
        return self.shell.last_error

    def run_trusted(self, cell: dict, track_names: bool = False) -> dict | None:
        namespace = self.shell.user_ns
        before = dict(namespace) if track_names else None
        self._alarm()
        try:
            exec(compile(cell["source"], f"<{cell['kind']} cell {cell.get('name') or cell['index']}>", "exec"), namespace)
        except BaseException as exc:  # noqa: BLE001 - any exception fails the cell, whatever its type
            return _error(exc)
        finally:
            signal.setitimer(signal.ITIMER_REAL, 0)
        if track_names:
            for name, value in namespace.items():
                if before.get(name, _MISSING) is not value and not name.startswith("_"):
                    self.guard.trusted[name] = value
        return None

    def run_test(self, cell: dict) -> tuple[dict | None, list[str]]:
        guard, namespace = self.guard, self.shell.user_ns
        notes: list[str] = []
        if guard.enabled:
            restored = guard.restore(namespace)
            if restored:
                notes.append("put back before this test: " + ", ".join(restored[:8]) + (" ..." if len(restored) > 8 else ""))
            problems = guard.unfixable()
            if problems:
                return {"ename": "GraderIntegrityError", "evalue": "; ".join(problems), "traceback": []}, notes
        error = self.run_trusted(cell)
        if guard.enabled and error is None:
            during = guard.changed() + [p for p in guard.unfixable()]
            if sys.gettrace() is not None or sys.getprofile() is not None:
                during.append("a trace or profile function")
            if during:
                guard.restore(namespace)
                error = {"ename": "GraderIntegrityError",
                         "evalue": "the code under test changed the test environment while the test ran: " + ", ".join(during[:8]),
                         "traceback": []}
        return error, notes


def _on_alarm(signum, frame):
    raise CellTimeout("this cell ran longer than its time limit")


def _error(exc: BaseException) -> dict:
    try:
        evalue = str(exc)
    except BaseException:  # noqa: BLE001 - a student exception whose __str__ fails
        evalue = "(unprintable)"
    return {"ename": type(exc).__name__, "evalue": evalue[:2000], "traceback": []}


def _make_shell():
    """An IPython shell whose outputs, figures and errors are collected as notebook outputs."""
    from IPython.core.displayhook import DisplayHook
    from IPython.core.displaypub import DisplayPublisher
    from IPython.core.interactiveshell import InteractiveShell

    class Publisher(DisplayPublisher):
        sink = None

        def publish(self, data, metadata=None, source=None, *, transient=None, update=False, **kwargs):
            self.sink.add_output({"output_type": "display_data", "data": _jsonable(data), "metadata": _jsonable(metadata or {})})

        def clear_output(self, wait=False):
            self.sink.outputs.clear()

    class Hook(DisplayHook):
        sink = None

        def write_output_prompt(self):
            pass

        def write_format_data(self, format_dict, md_dict=None):
            self.sink.add_output({"output_type": "execute_result", "data": _jsonable(format_dict),
                                  "metadata": _jsonable(md_dict or {}), "execution_count": self.sink.count})

    class Shell(InteractiveShell):
        last_error = None

        def _showtraceback(self, etype, evalue, stb):
            try:
                text = str(evalue)
            except BaseException:  # noqa: BLE001
                text = "(unprintable)"
            self.last_error = {"ename": getattr(etype, "__name__", "Error"), "evalue": text[:2000], "traceback": list(stb)[-50:]}

        displayhook_class = Hook
        display_pub_class = Publisher

        def ask_exit(self):  # `exit()` in a cell ends nothing
            pass

    from traitlets.config import Config

    # No history database and so no history thread: IPython stops and restarts that thread
    # around every fork, and a fork bomb that used up the process limit would then fail
    # the next cell for a thread the student never asked for.
    settings = Config()
    settings.HistoryManager.enabled = False
    settings.HistoryManager.hist_file = ":memory:"
    shell = Shell.instance(colors="NoColor", config=settings)
    if "matplotlib" in sys.modules:
        try:
            shell.enable_matplotlib("inline")
        except Exception:  # noqa: BLE001 - no matplotlib-inline: figures are just not shown
            pass
    return shell


def _jsonable(data):
    try:
        json.dumps(data)
        return data
    except (TypeError, ValueError):
        return {str(k): str(v) for k, v in dict(data).items()}


def _seed_everything(seed: int = 0) -> None:
    """Every kernel starts from the same random state, with torch's deterministic algorithms
    on where the platform has them (warn_only: an op without one still runs)."""
    import random

    random.seed(seed)
    numpy = sys.modules.get("numpy")
    if numpy is not None:
        numpy.random.seed(seed)
    torch = sys.modules.get("torch")
    if torch is not None:
        torch.manual_seed(seed)  # CPU and every CUDA device
        try:
            torch.use_deterministic_algorithms(True, warn_only=True)
        except Exception:  # noqa: BLE001 - an old or partial torch: seeded is still better than nothing
            pass


# Imported once, before any notebook runs (and, in a fork server, before the fork).
PRE_WARMED = ("numpy", "torch", "matplotlib", "matplotlib.pyplot", "IPython.core.interactiveshell",
              "matplotlib_inline.backend_inline", "traitlets.config")


def _pre_warm() -> None:
    for name in (*PRE_WARMED, *GUARDED_MODULES):
        try:
            __import__(name)
        except Exception:  # noqa: BLE001 - exercises that do not need it
            pass


def main() -> None:
    # The result channel is the stdout we were given; from now on fd 1 and 2 (C-level
    # output, writes to sys.__stdout__) go to /dev/null, and stdin is private.
    channel = os.dup(1)
    commands = os.fdopen(os.dup(0), "r", encoding="utf-8")
    hello = json.loads(commands.readline())
    if hello.get("zygote"):
        serve_forks(channel, commands, hello)
        os._exit(0)
    started = time.monotonic()
    _pre_warm()
    _seed_everything()  # before the snapshot and before any cell: grading again gives the same grade
    runner = Runner(channel, commands, hello)
    runner.import_seconds = time.monotonic() - started
    # Until here, errors went to stderr for the grader to report; from now on fd 0, 1
    # and 2 are /dev/null for the notebook (C-level prints, input()): the channel is private.
    devnull = os.open(os.devnull, os.O_RDWR)
    for fd in (0, 1, 2):
        os.dup2(devnull, fd)
    runner.serve()
    os._exit(0)  # skip interpreter teardown (and atexit hooks a student may have registered)


# -- the fork server ---------------------------------------------------------------------------------
#
# One warm process per worker sandbox: it imports torch, numpy, matplotlib and IPython once, then
# forks one child per submission. The child is what `main` would have been for that submission:
# before any student code it becomes the submission's uid (the fork server is root in the sandbox
# with only CAP_SETUID and CAP_SETGID; the child keeps no capability), takes its rlimits and a
# fresh private scratch dir, seeds, snapshots the Guard and serves the cells on the same pipes.
# When it is gone, every process of that uid is killed and its files in /tmp are removed (by a
# helper running as that uid), stdin is drained, and the server says "idle". A wall-clock
# overrun is handled outside: the grader kills the whole sandbox and starts another.
#
# Protocol: parent -> server {"zygote": true, "token"}; server -> parent {"type": "zygote"}; then per
# submission parent -> server {"fork": {<the hello of main>, "uid", "rlimits": {name: value}}},
# the child's frames exactly as in main, and server -> parent {"type": "idle"} when it is done.


def _frame(channel: int, message: dict) -> None:
    """Write one JSON frame to the result channel, whole (os.write may write less than asked)."""
    data = (json.dumps(message) + "\n").encode()
    view = memoryview(data)
    while view:
        view = view[os.write(channel, view):]


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
        except Exception:  # noqa: BLE001 - one odd entry must not stop the cleanup of the others
            pass


def _clean_up_after_uid() -> None:
    """As the submission's uid: its files in /tmp, and its System V IPC objects (they outlive their
    process, and the next child of this server shares the sandbox's IPC namespace and uid)."""
    import subprocess

    _remove_files_of_uid("/tmp")
    try:
        subprocess.run(["ipcrm", "--all"], stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL,
                       stderr=subprocess.DEVNULL, timeout=10, env={"PATH": "/usr/bin:/bin"})
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
    _seed_everything()  # its first call costs ~1 s (torch.use_deterministic_algorithms imports more): pay it here
    devnull = os.open(os.devnull, os.O_RDWR)
    for fd in (0, 1, 2):  # as in main: student code never gets the real stdin/stdout
        os.dup2(devnull, fd)
    _frame(channel, {"type": "zygote", "token": token, "pid": pid})
    served = 0
    while True:
        line = commands.readline()
        if not line:
            return
        request = json.loads(line).get("fork")
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
        _frame(channel, {"type": "exited", "code": os.waitstatus_to_exitcode(status), "token": token, "pid": pid})
        uid = int(request["uid"])
        _kill_everything_of(uid)
        _as_uid(uid, _clean_up_after_uid)
        _drain(commands.fileno())
        _frame(channel, {"type": "idle", "token": token, "pid": pid})


if __name__ == "__main__":
    main()
