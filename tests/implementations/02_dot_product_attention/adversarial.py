"""Submissions of exercise 02 that real or sly students hand in, each with its expected grade.

`tests/test_adversarial.py` grades all of them in one `autograder grade` run, together
with the reference student, and checks every expectation. Three kinds:

- **structure**: what editors and copy-paste do to a notebook (cells deleted, emptied,
  duplicated, reordered, metadata gone, code turned into markdown, tests edited...);
- **isolation**: code that tries to leave its sandbox (read solutions/, the gradebook,
  another student's folder, /etc/shadow; write outside its scratch dir; reach a server
  on 127.0.0.1; kill the grader; fork, allocate, fill the disk, print without end).
  An attack cell prints `BLOCKED: ...` when the attempt fails and `LEAKED: ...` when it
  succeeds; a successful read also *uses* what it read (it swaps in a broken
  `scaled_dot_product_attention`), so a leak costs points and cannot pass unnoticed;
- **tamper**: a wrong implementation (`no_scale`: 4/12 on its own) plus a trick meant to
  make its tests pass. `gains_unguarded` marks the tricks that really do earn points in
  this runner when its guard is off (the test checks that, so each one is a real attack
  and not a straw man). The others (silencing IPython's error display, replacing
  builtins) aim at graders that read a kernel's error messages; here they must simply
  change nothing.

Every loop and allocation is bounded, so even if a limit of the sandbox failed the
machine would survive it (at most 512 processes, 8 GiB touched, 2 GiB written).
"""

from __future__ import annotations

import copy
import json
import random
import textwrap
from dataclasses import dataclass
from pathlib import Path
from typing import Callable

import nbformat
from nbformat import NotebookNode

from autograder.model.notebooks import grade_id, is_solution_cell, is_test_cell, read, source_notebook
from coursetools.samples import implementations, make_submission, untouched_release

NOTEBOOK = "02_dot_product_attention"
FULL = 12.0
SOFTMAX_ONLY = 3.0  # the three softmax test cells, which run before the attention answer cell
# ... and the conceptual question after it, which needs no attention code: the score of a wrong attention when the
# run goes on to the end (a run stopped at the answer cell gets SOFTMAX_ONLY)
NO_ATTENTION = SOFTMAX_ONLY + 1.0
WRONG = {i.name: i for i in implementations(NOTEBOOK, "wrong")}


@dataclass
class Context:
    """Host paths and resources the attacks aim at (the test creates them)."""

    solutions_dir: Path
    workdir: Path
    submissions_dir: Path
    marker: Path  # a file outside every sandbox that no submission may change
    listener_port: int  # a TCP server on 127.0.0.1 that no submission may reach
    host_tmp_target: Path  # a path in the host's /tmp that no submission may create


@dataclass
class Case:
    name: str
    kind: str  # structure, isolation, tamper
    description: str
    build: Callable[[Context], NotebookNode | bytes]
    score: float
    reason: str = ""  # a substring the result's reason must contain ('' = no reason)
    repairs: tuple[str, ...] = ()  # substrings that must appear among the result's repairs
    outputs: tuple[str, ...] = ()  # substrings that must appear in the executed notebook's outputs
    gains_unguarded: bool = False
    max_seconds: float = 60.0


# -- building blocks ------------------------------------------------------------------------------

def correct() -> NotebookNode:
    return make_submission(NOTEBOOK)


def wrong(name: str = "no_scale") -> NotebookNode:
    return make_submission(NOTEBOOK, WRONG[name].cells)


def insert_after(nb: NotebookNode, gid: str, code: str) -> NotebookNode:
    """A new cell without metadata (as a student adds it) after the cell `gid`."""
    nb = copy.deepcopy(nb)
    position = next(i for i, c in enumerate(nb.cells) if grade_id(c) == gid) + 1
    nb.cells.insert(position, nbformat.v4.new_code_cell(textwrap.dedent(code).strip("\n")))
    return nb


def attack(nb: NotebookNode, code: str, after: str = "scaled_dot_product_attention") -> NotebookNode:
    return insert_after(nb, after, code)


# On success, an attack replaces the student's correct answer by a broken one: a leak
# then shows up as lost points, whatever else happens.
SABOTAGE = """
def _sabotage(reason):
    global scaled_dot_product_attention
    print("LEAKED:", reason)
    scaled_dot_product_attention = lambda q, k, v, mask=None: (q * 0, q * 0)
"""


def read_attempt(path: Path, must_contain: str = "") -> str:
    return SABOTAGE + f"""
try:
    with open({str(path)!r}, "rb") as handle:
        data = handle.read(1 << 20)
    if {must_contain!r}.encode() in data and data:
        _sabotage("read " + {str(path)!r})
    else:
        print("BLOCKED: read gave nothing useful")
except OSError as exc:
    print("BLOCKED:", type(exc).__name__)
"""


def strip_metadata(nb: NotebookNode, new_ids: bool = False) -> NotebookNode:
    nb = copy.deepcopy(nb)
    rng = random.Random(0)
    for cell in nb.cells:
        cell.metadata = {}
        if new_ids:
            cell.id = "%08x" % rng.getrandbits(32)
    return nb


def without(nb: NotebookNode, keep: Callable[[NotebookNode], bool]) -> NotebookNode:
    nb = copy.deepcopy(nb)
    nb.cells = [c for c in nb.cells if keep(c)]
    return nb


def edit_tests(nb: NotebookNode, edit: Callable[[NotebookNode], None]) -> NotebookNode:
    nb = copy.deepcopy(nb)
    for cell in nb.cells:
        if is_test_cell(cell):
            edit(cell)
    return nb


def set_answer(nb: NotebookNode, gid: str, code: str) -> NotebookNode:
    nb = copy.deepcopy(nb)
    next(c for c in nb.cells if grade_id(c) == gid).source = textwrap.dedent(code).strip("\n")
    return nb


# -- structure ------------------------------------------------------------------------------------

def _answers_deleted(ctx):
    return without(untouched_release(NOTEBOOK), lambda c: not is_solution_cell(c))


def _answers_emptied(ctx):
    nb = copy.deepcopy(untouched_release(NOTEBOOK))
    for cell in nb.cells:
        if is_solution_cell(cell):
            cell.source = ""
    return nb


def _correct_answers_deleted(ctx):
    """The correct student deletes the attention cell after pasting its code into a cell of their own."""
    nb = correct()
    code = next(c for c in nb.cells if grade_id(c) == "scaled_dot_product_attention").source
    nb = without(nb, lambda c: grade_id(c) != "scaled_dot_product_attention")
    return insert_after(nb, "softmax_stable", code)


def _reordered(ctx):
    nb = correct()
    cell = next(c for c in nb.cells if grade_id(c) == "scaled_dot_product_attention")
    nb.cells.remove(cell)
    nb.cells.insert(2, cell)  # right after the setup cell
    tests = [c for c in nb.cells if grade_id(c) in ("softmax_dim", "softmax_values")]
    a, b = (nb.cells.index(t) for t in tests)
    nb.cells[a], nb.cells[b] = nb.cells[b], nb.cells[a]
    return nb


def _answer_duplicated(ctx):
    """A wrong first attempt kept above the corrected copy (same metadata twice)."""
    nb = wrong()
    first = next(i for i, c in enumerate(nb.cells) if grade_id(c) == "scaled_dot_product_attention")
    fixed = copy.deepcopy(correct().cells[first])
    fixed.id = "copy-of-answer"
    nb.cells.insert(first + 1, fixed)
    return nb


def _test_duplicated(ctx):
    nb = correct()
    index = next(i for i, c in enumerate(nb.cells) if grade_id(c) == "sdpa_mask")
    twin = copy.deepcopy(nb.cells[index])
    twin.id = "copy-of-test"
    nb.cells.insert(index + 1, twin)
    return nb


def _answer_to_markdown(ctx):
    nb = correct()
    cell = next(c for c in nb.cells if grade_id(c) == "scaled_dot_product_attention")
    cell.cell_type = "markdown"
    cell.pop("outputs", None)
    cell.pop("execution_count", None)
    return nb


def _toggled_and_back(ctx):
    """Code -> markdown -> code in an editor that drops metadata and gives a new id."""
    nb = correct()
    cell = next(c for c in nb.cells if grade_id(c) == "scaled_dot_product_attention")
    cell.metadata = {}
    cell.id = "toggled-cell"
    return nb


def _tests_deleted(ctx):
    return without(wrong(), lambda c: not is_test_cell(c))


def _tests_blanked(ctx):
    return edit_tests(wrong(), lambda c: setattr(c, "source", "pass"))


def _tests_relabelled(ctx):
    def relabel(cell):
        cell.metadata.nbgrader.update(solution=True, grade=False, locked=False)
        cell.source = "pass"
    return edit_tests(wrong(), relabel)


def _tests_1000_points(ctx):
    def inflate(cell):
        cell.metadata.nbgrader["points"] = 1000
    return edit_tests(wrong(), inflate)


def _other_chapter(ctx):
    nb = nbformat.v4.new_notebook()
    nb.cells = [
        nbformat.v4.new_markdown_cell("# Exercise 03: masks"),
        nbformat.v4.new_code_cell("import torch\n\ndef causal_mask(size):\n    return torch.tril(torch.ones(size, size, dtype=torch.bool))"),
        nbformat.v4.new_code_cell("assert causal_mask(3).shape == (3, 3)"),
    ]
    for index, cell in enumerate(nb.cells):
        cell.metadata["nbgrader"] = {"grade_id": f"ch03_cell_{index}", "grade": index == 2, "solution": index == 1,
                                     "locked": False, "points": 2 if index == 2 else 0, "schema_version": 3}
    return nb


def _nbformat_40(ctx):
    data = json.loads(nbformat.writes(correct()))
    data["nbformat_minor"] = 0
    for cell in data["cells"]:
        cell.pop("id", None)
    return json.dumps(data, indent=1).encode()


# -- isolation ------------------------------------------------------------------------------------

def _infinite_loop(ctx):
    return set_answer(correct(), "scaled_dot_product_attention", "while True:\n    pass")


def _loop_ignoring_alarm(ctx):
    return attack(correct(), """
import signal
signal.signal(signal.SIGALRM, signal.SIG_IGN)
signal.setitimer = lambda *args, **kwargs: None
while True:
    pass
""")


def _fork_bomb(ctx):
    # `while True: os.fork()`, bounded: depth 9 is at most 512 processes if NPROC failed.
    # Every process that is refused a fork says so on a pipe; the first process counts them.
    return attack(correct(), """
import os, time
me = os.getpid()
refused_r, refused_w = os.pipe()
try:
    for _ in range(9):
        os.fork()
except OSError:
    os.write(refused_w, b"x")
if os.getpid() != me:
    os._exit(0)
time.sleep(1)
os.set_blocking(refused_r, False)
try:
    refused = len(os.read(refused_r, 1 << 16))
except BlockingIOError:
    refused = 0
print(f"BLOCKED: {refused} fork(s) refused" if refused else "LEAKED: all 512 processes were created")
""", after="setup")


def _many_processes(ctx):
    return attack(correct(), """
import subprocess
children = []
try:
    for _ in range(300):
        children.append(subprocess.Popen(["sleep", "30"]))
    print("LEAKED: 300 processes")
except OSError as exc:
    print("BLOCKED:", type(exc).__name__, len(children))
""", after="setup")


def _allocate_20gb(ctx):
    return attack(correct(), """
import torch
try:
    big = torch.empty(20 * 2**30, dtype=torch.uint8)   # 20 GiB of address space, untouched
    print("LEAKED: 20 GiB reserved")
    del big
except (RuntimeError, MemoryError) as exc:
    print("BLOCKED:", type(exc).__name__)
chunks = []
try:
    for _ in range(16):                                   # then touch up to 8 GiB, 512 MiB at a time
        chunks.append(torch.ones(512 * 2**20, dtype=torch.uint8))
    print("LEAKED: 8 GiB touched")
except (RuntimeError, MemoryError) as exc:
    print("BLOCKED:", type(exc).__name__, len(chunks))
del chunks
""")


def _fill_disk(ctx):
    return attack(correct(), """
import os
written = 0
try:
    for i in range(32):                                   # at most 2 GiB, 64 MiB per write
        with open(f"fill-{i}.bin", "wb") as handle:
            handle.write(b"x" * (64 << 20))
        written += 64
    print("LEAKED: wrote", written, "MiB")
except OSError as exc:
    print("BLOCKED:", type(exc).__name__, written, "MiB")
finally:
    for i in range(32):
        try:
            os.remove(f"fill-{i}.bin")
        except OSError:
            pass
""")


def _print_1gb(ctx):
    return attack(correct(), """
import sys
chunk = "x" * (1 << 20)
for _ in range(1024):                                     # 1 GiB of output
    sys.stdout.write(chunk)
print("BLOCKED: printed 1 GiB")
""")


def _socket(ctx):
    return attack(correct(), SABOTAGE + f"""
import socket
try:
    with socket.create_connection(("127.0.0.1", {ctx.listener_port}), timeout=3) as conn:
        conn.sendall(b"hello from a submission")
    _sabotage("connected to 127.0.0.1:{ctx.listener_port}")
except OSError as exc:
    print("BLOCKED:", type(exc).__name__)
""")


def _read_solutions(ctx):
    return attack(correct(), read_attempt(ctx.solutions_dir / f"{NOTEBOOK}.ipynb", "BEGIN HIDDEN TESTS"))


def _read_gradebook(ctx):
    return attack(correct(), read_attempt(ctx.workdir / "gradebook.db", "SQLite"))


def _read_other_student(ctx):
    return attack(correct(), read_attempt(ctx.submissions_dir / "reference" / f"{NOTEBOOK}.ipynb", "nbformat"))


def _read_shadow(ctx):
    return attack(correct(), read_attempt(Path("/etc/shadow"), "root:"))


def _write_outside(ctx):
    targets = [ctx.marker, ctx.host_tmp_target, ctx.submissions_dir / "reference" / "planted.txt",
               ctx.workdir / "planted.txt", ctx.solutions_dir / "planted.txt"]
    return attack(correct(), f"""
import os
for target in {[str(t) for t in targets]!r}:
    try:
        with open(target, "w") as handle:
            handle.write("written by a submission")
        print("wrote (inside the sandbox's own file system, or leaked):", target)
    except OSError as exc:
        print("BLOCKED:", target, type(exc).__name__)
try:
    os.remove({str(ctx.marker)!r})
except OSError as exc:
    print("BLOCKED: remove", type(exc).__name__)
""")


def _kill_parent(ctx):
    return attack(correct(), """
import os, signal
try:
    os.kill(os.getppid(), signal.SIGKILL)
    print("BLOCKED: the parent survived")
except OSError as exc:
    print("BLOCKED:", type(exc).__name__)
""", after="setup")


def _sys_exit(ctx):
    return attack(correct(), "import sys\nsys.exit(0)", after="setup")


def _os_exit(ctx):
    return attack(correct(), "import os\nos._exit(0)")


# -- tamper ---------------------------------------------------------------------------------------

def _patch_assert_close(ctx):
    return attack(wrong(), """
import torch
torch.testing.assert_close = lambda *args, **kwargs: None
""")


def _patch_allclose_equal(ctx):
    return attack(wrong(), """
import torch
torch.allclose = lambda *args, **kwargs: True
torch.equal = lambda *args, **kwargs: True
torch.testing.assert_close = lambda *args, **kwargs: None
""")


def _patch_numpy_testing(ctx):
    return attack(wrong(), """
import numpy, numpy.testing, torch
for name in dir(numpy.testing):
    if name.startswith("assert"):
        setattr(numpy.testing, name, lambda *args, **kwargs: None)
numpy.allclose = lambda *args, **kwargs: True
torch.testing.assert_close = numpy.testing.assert_allclose
""")


def _patch_builtins(ctx):
    return attack(wrong(), """
import builtins, torch
class NeverRaised(Exception):
    pass
builtins.AssertionError = NeverRaised
builtins.isinstance = lambda obj, cls: True
""")


def _tensor_subclass(ctx):
    """Returns a tensor subclass whose comparisons all say 'equal'."""
    return set_answer(wrong(), "scaled_dot_product_attention", """
import math
import torch

class Agreeable(torch.Tensor):
    @classmethod
    def __torch_function__(cls, func, types, args=(), kwargs=None):
        kwargs = kwargs or {}
        name = getattr(func, "__name__", "")
        if name in ("isclose", "eq", "__eq__", "equal", "allclose"):
            first = next(a for a in args if isinstance(a, torch.Tensor))
            return torch.ones(first.shape, dtype=torch.bool, device=first.device) if name != "equal" and name != "allclose" else True
        with torch._C.DisableTorchFunctionSubclass():
            return func(*args, **kwargs)

def scaled_dot_product_attention(q, k, v, mask=None):
    scores = q @ k.transpose(-2, -1)
    if mask is not None:
        scores = scores.masked_fill(~mask, float("-inf"))
    weights = softmax(scores, dim=-1)
    return (weights @ v).as_subclass(Agreeable), weights.as_subclass(Agreeable)
""")


def _patch_tensor_methods(ctx):
    return attack(wrong(), """
import torch
_ones = torch.ones_like
torch.Tensor.__eq__ = lambda self, other: _ones(self, dtype=torch.bool)
torch.Tensor.sum = lambda self, *args, **kwargs: _ones(self).mean()
torch.testing.assert_close = lambda *args, **kwargs: None
""")


def _hide_errors(ctx):
    """Silences error display, which is how a kernel-based grader sees a failed test."""
    return attack(wrong(), """
import sys
ip = get_ipython()
ip.showtraceback = lambda *args, **kwargs: None
ip._showtraceback = lambda *args, **kwargs: None
sys.excepthook = lambda *args: None
""")


def _background_patcher(ctx):
    return attack(wrong(), """
import threading, time, torch
def keep_patching():
    while True:
        torch.testing.assert_close = lambda *args, **kwargs: None
        time.sleep(0.0005)
threading.Thread(target=keep_patching, daemon=True).start()
""")


def _torch_function_mode(ctx):
    return attack(wrong(), """
import torch
from torch.overrides import TorchFunctionMode

class AllClose(TorchFunctionMode):
    def __torch_function__(self, func, types, args=(), kwargs=None):
        kwargs = kwargs or {}
        if getattr(func, "__name__", "") == "isclose":
            return torch.ones(args[0].shape, dtype=torch.bool, device=args[0].device)
        return func(*args, **kwargs)

AllClose().__enter__()   # never left: every later torch call goes through it
""")


# The body of the wrong answer (no scaling) that the attacks below wrap in their own `scaled_dot_product_attention`.
UNSCALED_ATTENTION_BODY = """    scores = q @ k.transpose(-2, -1)
    if mask is not None:
        scores = scores.masked_fill(~mask, float("-inf"))
    weights = softmax(scores, dim=-1)
    return weights @ v, weights
"""


def _patch_inside_function(ctx):
    """The answer itself patches assert_close the first time a test calls it."""
    return set_answer(wrong(), "scaled_dot_product_attention", """
import torch

def scaled_dot_product_attention(q, k, v, mask=None):
    torch.testing.assert_close = lambda *args, **kwargs: None
""" + UNSCALED_ATTENTION_BODY)


# -- tamper, family 2: what no list of things to restore can catch (issue: verdicts outside the student's process).
# Each is a real attack on a test that compares in the student's process (the one-piece run of test_adversarial),
# guard on or off; the judge, which never runs student code, fails all of them.

def _code_swap_assert_close(ctx):
    """The function object stays the one the guard snapshots; only its code changes."""
    return attack(wrong(), """
import torch
torch.testing.assert_close.__code__ = (lambda *args, **kwargs: None).__code__
""")


def _code_swap_numpy(ctx):
    return attack(wrong(), """
import numpy, numpy.testing, torch
numpy.testing.assert_allclose.__code__ = (lambda *args, **kwargs: None).__code__
torch.testing.assert_close.__code__ = numpy.testing.assert_allclose.__code__
""")


def _patch_torch_testing_class(ctx):
    """A class deep inside torch.testing that assert_close uses to compare tensors."""
    return attack(wrong(), """
import torch.testing._comparison as comparison
comparison.TensorLikePair.compare = lambda self: None
""")


def _patch_numpy_testing_internals(ctx):
    return attack(wrong(), """
import numpy.testing._private.utils as utils, torch.testing._comparison as comparison
utils.assert_array_compare.__code__ = (lambda *args, **kwargs: None).__code__
comparison.TensorLikePair._compare_values = lambda self, actual, expected: None
""")


def _settrace_rewrites_arguments(ctx):
    """A trace function that hands assert_close the expected value as the actual one."""
    return attack(wrong(), """
import sys

def tracer(frame, event, arg):
    if event == "call" and frame.f_code.co_name == "assert_close":
        frame.f_locals["actual"] = frame.f_locals["expected"]
    return None

sys.settrace(tracer)
import threading
threading.settrace(tracer)
""")


def _frame_edits_test_globals(ctx):
    """The answer reaches the test's namespace through sys._getframe and gives it a torch whose
    assert_close does nothing."""
    return set_answer(wrong(), "scaled_dot_product_attention", """
import math, sys, types
import torch

class LenientTesting:
    @staticmethod
    def assert_close(*args, **kwargs):
        return None

REAL_TORCH = torch  # the notebook's globals are the test's: keep the real module under another name

class LenientTorch(types.ModuleType):
    def __getattr__(self, name):
        return LenientTesting if name == "testing" else getattr(REAL_TORCH, name)

def scaled_dot_product_attention(q, k, v, mask=None):
    torch = REAL_TORCH
    caller = sys._getframe(1)
    if caller.f_globals.get("torch") is torch:
        caller.f_globals["torch"] = LenientTorch("torch")
""" + UNSCALED_ATTENTION_BODY)


def _fake_torch_testing_module(ctx):
    """A fake torch.testing in sys.modules and on torch, with an import hook that serves it again."""
    return attack(wrong(), """
import importlib.abc, importlib.util, sys, types, torch
fake = types.ModuleType("torch.testing")
fake.assert_close = lambda *args, **kwargs: None
sys.modules["torch.testing"] = fake
torch.testing = fake

class Serve(importlib.abc.MetaPathFinder, importlib.abc.Loader):
    def find_spec(self, name, path=None, target=None):
        return importlib.util.spec_from_loader(name, self) if name == "torch.testing" else None
    def create_module(self, spec):
        return fake
    def exec_module(self, module):
        pass

sys.meta_path.insert(0, Serve())
""")


def _forge_verdicts_through_gc(ctx):
    """Finds the runner's own object through gc and makes every later test cell report success."""
    return attack(wrong(), """
import gc
for obj in gc.get_objects():
    if type(obj).__name__ == "Runner" and hasattr(obj, "run_test"):
        obj.run_test = lambda cell: (None, [])
""")


def _empty_the_probe(ctx):
    """A thread that keeps emptying what a probe hands over, so that a judge looping over it would check
    nothing (every judge zips with strict=True, and the guard fails tests while a thread runs)."""
    return attack(wrong(), """
import threading, time
namespace = globals()
def keep_emptying():
    while True:
        if "probe" in namespace:
            namespace["probe"] = type(namespace["probe"])()
        time.sleep(0.0002)
threading.Thread(target=keep_emptying, daemon=True).start()
""")


def _imitation_tensor(ctx):
    """Returns objects that answer every comparison with 'equal'."""
    return set_answer(wrong(), "scaled_dot_product_attention", """
import torch

class Imitation:
    def __init__(self, like):
        self.shape, self.dtype, self.device = like.shape, like.dtype, like.device
    def __eq__(self, other):
        return True
    def __getattr__(self, name):
        return lambda *args, **kwargs: self

def scaled_dot_product_attention(q, k, v, mask=None):
    scores = q @ k.transpose(-2, -1)
    weights = softmax(scores, dim=-1)
    return Imitation(weights @ v), Imitation(weights)
""")


def _setprofile_rewrites_arguments(ctx):
    """Like settrace-arguments, with a profile function (sys.setprofile and threading.setprofile): on the "call"
    event of assert_close it hands it the expected value as the actual one (CPython writes a profile function's
    changes to f_locals back into the frame, as it does a trace function's)."""
    return attack(wrong(), """
import sys, threading

def profiler(frame, event, arg):
    if event == "call" and frame.f_code.co_name == "assert_close":
        frame.f_locals["actual"] = frame.f_locals["expected"]

sys.setprofile(profiler)
threading.setprofile(profiler)
""")


# Finds the runner's result channel among the process's file descriptors (the one pipe open for writing only),
# the token it signs its frames with (on the runner's object, through gc) and the index of the cell that runs
# (the runner's `cell` in a frame up the stack); prints nothing: every line on the channel must be a frame.
FIND_CHANNEL = """
import fcntl, gc, json, os, sys

def result_channel():
    for name in sorted(os.listdir("/proc/self/fd"), key=int):
        try:
            target = os.readlink(f"/proc/self/fd/{name}")
            flags = fcntl.fcntl(int(name), fcntl.F_GETFL)
        except OSError:
            continue
        if target.startswith("pipe:") and flags & os.O_ACCMODE == os.O_WRONLY:
            return int(name)
    return None

def runner_token():
    for obj in gc.get_objects():
        if type(obj).__name__ == "Runner" and isinstance(getattr(obj, "token", None), str):
            return obj.token
    return None

def running_cell_index(frame):
    while frame is not None:
        cell = frame.f_locals.get("cell")
        if isinstance(cell, dict) and isinstance(cell.get("index"), int):
            return cell["index"]
        frame = frame.f_back
    return None

def forge(channel, frame):
    frame.update(pid=os.getpid(), token=TOKEN)
    os.write(channel, (json.dumps(frame) + "\\n").encode())

CHANNEL, TOKEN = result_channel(), runner_token()
"""


FIND_TEST_CELL = """
import sys

def calling_test_cell():  # the `<module>` frame of the test cell that called the caller, or None
    frame = sys._getframe(2)
    while frame is not None and frame.f_code.co_name != "<module>":
        frame = frame.f_back
    return frame
"""


def _forge_frames_through_fd(ctx):
    """The answer cell finds the result channel in /proc/self/fd and the token through gc, and writes a DONE
    frame that says "passed" (error None, no probe) for its own cell and for every cell after it (up to
    index 60), each followed by a forged "verdict" frame: the grader takes the first DONE frame whose index is
    the cell it sent, so every later test cell's result is the forgery."""
    return attack(wrong(), FIND_CHANNEL + """
first = running_cell_index(sys._getframe())
if CHANNEL is not None and TOKEN is not None and first is not None:
    for index in range(first, 61):
        note = [{"output_type": "stream", "name": "stdout", "text": f"FORGED: cells {first} to 60 on fd {CHANNEL}\\n"}]
        forge(CHANNEL, {"type": "done", "index": index, "error": None, "outputs": note if index == first else [],
                        "tamper": [], "execution_count": index, "seconds": 0.0})
        forge(CHANNEL, {"type": "verdict", "index": index, "error": None, "seconds": 0.0})
else:
    print("BLOCKED: no channel", CHANNEL, TOKEN is not None, first)
""")


def _forge_frames_with_probe(ctx):
    """A forged DONE that carries plausible plain data: the answer, each time a test calls it, installs a profile
    function that, when the test's frame returns (its visible checks or, in one piece, its comparisons failed or
    not), writes the test's DONE frame first: error None and the test's own `probe` (the wrong outputs) encoded
    with the runner's plain module, exactly as the runner would have handed them over."""
    return set_answer(wrong(), "scaled_dot_product_attention", FIND_CHANNEL + FIND_TEST_CELL + """
import torch

def scaled_dot_product_attention(q, k, v, mask=None):
    test = calling_test_cell()

    def forge_on_return(frame, event, arg):
        if event == "return" and frame is test:
            sys.setprofile(None)
            index, plain = running_cell_index(frame), sys.modules.get("runner.plain")
            if CHANNEL is None or TOKEN is None or index is None or plain is None:
                return
            done = {"type": "done", "index": index, "error": None, "outputs": [], "tamper": [],
                    "execution_count": index, "seconds": 0.0}
            if "probe" in frame.f_globals:
                try:
                    done["probe"] = plain.encode(frame.f_globals["probe"])
                except Exception:
                    pass
            forge(CHANNEL, done)

    if test is not None:
        sys.setprofile(forge_on_return)
""" + UNSCALED_ATTENTION_BODY)


def _patch_and_restore_in_call(ctx):
    """Each time a test calls the answer, it replaces torch.testing.assert_close and torch.allclose with no-ops
    and installs a profile function that puts the originals back (and removes itself) when the test cell's
    frame returns: the guard's check after the cell finds everything as it was."""
    return set_answer(wrong(), "scaled_dot_product_attention", FIND_TEST_CELL + """
import torch

ORIGINALS = (torch.testing.assert_close, torch.allclose)

def scaled_dot_product_attention(q, k, v, mask=None):
    test = calling_test_cell()

    def put_back_when_the_test_ends(frame, event, arg):
        if event == "return" and frame is test:
            torch.testing.assert_close, torch.allclose = ORIGINALS
            sys.setprofile(None)

    if test is not None:
        torch.testing.assert_close = lambda *args, **kwargs: None
        torch.allclose = lambda *args, **kwargs: True
        sys.setprofile(put_back_when_the_test_ends)
""" + UNSCALED_ATTENTION_BODY)


def _inputs_rescaled_in_call(ctx):
    """The unscaled (wrong) answer, after computing its output, multiplies `q` in place by sqrt(d_k): a reference
    computed afterwards from the same tensors (softmax(q k^T / sqrt(d_k)), F.scaled_dot_product_attention) then
    agrees with the unscaled output. A tensor that requires grad is left alone (an in-place change would break
    its backward pass)."""
    return set_answer(wrong(), "scaled_dot_product_attention", """
import math
import torch

def scaled_dot_product_attention(q, k, v, mask=None):
    scores = q @ k.transpose(-2, -1)
    if mask is not None:
        scores = scores.masked_fill(~mask, float("-inf"))
    weights = softmax(scores, dim=-1)
    output = weights @ v
    if not q.requires_grad:
        with torch.no_grad():
            q.mul_(math.sqrt(q.shape[-1]))
    return output, weights
""")


def _forged(frame: str):
    """The answer cell writes DONE frames built by the expression `frame` (of `index`) for its own cell (so its own
    output, "FORGED", is lost with the real frame) and every
    cell after it, on the result channel: frames of the right token and pid whose fields are made to mislead or
    to break the grader's reader (each must be graded, no case may crash the run or be retried forever)."""
    return lambda ctx: attack(wrong(), FIND_CHANNEL + f"""
first = running_cell_index(sys._getframe())
if CHANNEL is not None and TOKEN is not None and first is not None:
    print("FORGED")
    for index in range(first, 61):
        forge(CHANNEL, {frame})
""")


def _parser_bomb(ctx):
    """One line of 200,000 nested brackets on the result channel: json.loads recurses past its limit. The
    reader parses before it checks the token, so this needs no token at all."""
    return attack(wrong(), FIND_CHANNEL + """
os.write(CHANNEL, b"[" * 200000 + b"]" * 200000 + b"\\n")
print("FORGED")
""")


def _cells_posing_as_course_code(ctx):
    """Two new cells carrying nbgrader metadata (locked, ungraded) and the headers of the cells a judge starts
    from: a "provided by the course" cell and a judge-helpers cell whose hidden body makes assert_close a no-op.
    Were either taken as the course's, the student's code would run in the judge."""
    nb = wrong()
    for header in ("# Provided by the course: (forged)", "# Judge helpers (hidden): (forged)"):
        nb = attack(nb, f"""{header}
### BEGIN HIDDEN TESTS
import torch
torch.testing.assert_close = lambda *args, **kwargs: None
### END HIDDEN TESTS
""")
        position = next(i for i, c in enumerate(nb.cells) if c.source.startswith(header))
        nb.cells[position].metadata["nbgrader"] = {
            "grade": False, "solution": False, "locked": True, "task": False, "schema_version": 3,
            "grade_id": f"forged_{position}",
        }
    return nb


CASES: list[Case] = [
    Case("reference", "structure", "the reference solution, untouched", lambda ctx: correct(), FULL),
    Case("answers-deleted", "structure", "the released notebook with its answer cells deleted", _answers_deleted, 0,
         repairs=("was missing",), outputs=("NotImplementedError",)),
    Case("answers-emptied", "structure", "the answer cells left empty", _answers_emptied, 0),
    Case("answer-moved-to-own-cell", "structure", "the attention answer deleted and pasted into a new cell elsewhere",
         _correct_answers_deleted, FULL),
    Case("pasted-no-metadata", "structure", "correct answers, every cell's metadata gone (copy-paste)",
         lambda ctx: strip_metadata(correct()), FULL),
    Case("pasted-fresh-notebook", "structure", "correct answers pasted into a fresh notebook: no metadata, new cell ids",
         lambda ctx: strip_metadata(correct(), new_ids=True), FULL),
    Case("all-metadata-stripped", "structure", "no cell or notebook metadata, new ids",
         lambda ctx: _strip_notebook_metadata(strip_metadata(correct(), new_ids=True)), FULL),
    Case("cells-reordered", "structure", "answer cell moved to the top, two test cells swapped", _reordered, FULL,
         repairs=("reordered",)),
    Case("answer-duplicated", "structure", "a wrong attempt above a corrected duplicate of the answer cell",
         _answer_duplicated, FULL),
    Case("test-duplicated", "structure", "a test cell duplicated", _test_duplicated, FULL),
    Case("answer-turned-markdown", "structure", "the answer cell turned into markdown", _answer_to_markdown, FULL,
         repairs=("markdown",)),
    Case("answer-toggled-and-back", "structure", "code -> markdown -> code, metadata and id lost", _toggled_and_back, FULL),
    Case("tests-deleted", "structure", "wrong code, every test cell deleted", _tests_deleted, NO_ATTENTION,
         repairs=("missing",)),
    Case("tests-blanked", "structure", "wrong code, every test cell replaced by `pass`", _tests_blanked, NO_ATTENTION,
         repairs=("modified",)),
    Case("tests-relabelled", "structure", "wrong code, test cells relabelled as solution cells and blanked",
         _tests_relabelled, NO_ATTENTION),
    Case("tests-1000-points", "structure", "wrong code, every test cell given 1000 points", _tests_1000_points, NO_ATTENTION),
    Case("other-chapter", "structure", "the notebook of another chapter under this name", _other_chapter, 0,
         reason="another notebook"),
    Case("nbformat-4.0", "structure", "correct answers saved as nbformat 4.0 (no cell ids)", _nbformat_40, FULL),
    Case("infinite-loop", "isolation", "the attention answer is an infinite loop", _infinite_loop, NO_ATTENTION,
         outputs=("CellTimeout",)),
    Case("loop-ignoring-alarm", "isolation", "an infinite loop that disables the cell's alarm first",
         _loop_ignoring_alarm, SOFTMAX_ONLY, reason="ran longer than"),
    Case("fork-bomb", "isolation", "`os.fork()` in a loop (bounded to depth 9)", _fork_bomb, FULL, outputs=("BLOCKED",)),
    Case("300-processes", "isolation", "300 `sleep` subprocesses", _many_processes, FULL, outputs=("BLOCKED",)),
    Case("allocate-20gb", "isolation", "20 GiB reserved, then up to 8 GiB touched", _allocate_20gb, FULL,
         outputs=("BLOCKED",)),
    Case("fill-disk", "isolation", "writes up to 2 GiB to its working dir", _fill_disk, FULL, outputs=("BLOCKED",)),
    Case("print-1gb", "isolation", "prints 1 GiB", _print_1gb, FULL, outputs=("more characters of stdout not kept",)),
    Case("socket-listener", "isolation", "connects to a server the test runs on 127.0.0.1", _socket, FULL,
         outputs=("BLOCKED",)),
    Case("read-solutions", "isolation", "reads solutions/ (hidden tests and solutions)", _read_solutions, FULL,
         outputs=("BLOCKED",)),
    Case("read-gradebook", "isolation", "reads the gradebook", _read_gradebook, FULL, outputs=("BLOCKED",)),
    Case("read-other-student", "isolation", "reads another student's submission", _read_other_student, FULL,
         outputs=("BLOCKED",)),
    Case("read-etc-shadow", "isolation", "reads /etc/shadow", _read_shadow, FULL, outputs=("BLOCKED",)),
    Case("write-outside-scratch", "isolation", "writes to the host's /tmp, the submissions, the work dir, solutions/; deletes a marker",
         _write_outside, FULL),
    Case("kill-parent", "isolation", "`os.kill(os.getppid(), SIGKILL)`", _kill_parent, FULL, outputs=("BLOCKED",)),
    Case("sys-exit", "isolation", "`sys.exit(0)` in a cell", _sys_exit, FULL),
    Case("os-exit", "isolation", "`os._exit(0)` after the attention answer", _os_exit, SOFTMAX_ONLY, reason="exit code 0"),
    Case("patch-assert-close", "tamper", "torch.testing.assert_close replaced by a no-op", _patch_assert_close,
         NO_ATTENTION, repairs=("torch.testing.assert_close",), gains_unguarded=True),
    Case("patch-allclose-equal", "tamper", "torch.allclose, torch.equal and assert_close patched", _patch_allclose_equal,
         NO_ATTENTION, gains_unguarded=True),
    Case("patch-numpy-testing", "tamper", "numpy.testing.* and numpy.allclose patched (and assert_close aliased)",
         _patch_numpy_testing, NO_ATTENTION, gains_unguarded=True),
    Case("patch-builtins", "tamper", "builtins.AssertionError and isinstance replaced", _patch_builtins, NO_ATTENTION,
         repairs=("builtins.isinstance",)),
    # The next two: the class (or the mode's class) stays behind, so the guard fails every later cell, the question's
    # too. A loaded run once gave the question its point: the class was born at a freed known class's address and
    # passed for known (the guard remembered ids only; tests/test_guard.py keeps that fixed).
    Case("tensor-subclass", "tamper", "returns a tensor subclass whose comparisons say 'equal'", _tensor_subclass,
         SOFTMAX_ONLY, gains_unguarded=True),
    Case("patch-tensor-methods", "tamper", "torch.Tensor.__eq__ and .sum patched", _patch_tensor_methods, NO_ATTENTION,
         gains_unguarded=True),
    Case("hide-errors", "tamper", "IPython's error display and sys.excepthook silenced", _hide_errors, NO_ATTENTION),
    Case("background-patcher", "tamper", "a thread that keeps re-patching assert_close", _background_patcher,
         SOFTMAX_ONLY, gains_unguarded=True),
    Case("torch-function-mode", "tamper", "a TorchFunctionMode entered for good, making isclose always True",
         _torch_function_mode, SOFTMAX_ONLY, gains_unguarded=True),
    Case("patch-inside-answer", "tamper", "the answer patches assert_close when a test calls it",
         _patch_inside_function, NO_ATTENTION, gains_unguarded=True),
    Case("code-swap-assert-close", "tamper", "assert_close's code object replaced (the function object stays)",
         _code_swap_assert_close, NO_ATTENTION, gains_unguarded=True),
    Case("code-swap-numpy", "tamper", "numpy.testing.assert_allclose's code replaced, and assert_close's with it",
         _code_swap_numpy, NO_ATTENTION, gains_unguarded=True),
    Case("patch-torch-testing-class", "tamper", "torch.testing._comparison.TensorLikePair.compare replaced",
         _patch_torch_testing_class, NO_ATTENTION, gains_unguarded=True),
    Case("patch-testing-internals", "tamper", "numpy's assert_array_compare code and a TensorLikePair method replaced",
         _patch_numpy_testing_internals, NO_ATTENTION, gains_unguarded=True),
    Case("settrace-arguments", "tamper", "sys.settrace hook that hands assert_close the expected value",
         _settrace_rewrites_arguments, NO_ATTENTION, gains_unguarded=True),
    Case("frame-edits-test", "tamper", "the answer swaps the test's torch through sys._getframe",
         _frame_edits_test_globals, NO_ATTENTION, gains_unguarded=True),
    Case("fake-torch-testing", "tamper", "a fake torch.testing in sys.modules, on torch and behind an import hook",
         _fake_torch_testing_module, NO_ATTENTION, gains_unguarded=True),
    Case("forge-through-gc", "tamper", "the runner found through gc: every later test reports success",
         _forge_verdicts_through_gc, SOFTMAX_ONLY, gains_unguarded=True),
    Case("empty-the-probe", "tamper", "a thread that keeps emptying the probe's data before it is handed over",
         _empty_the_probe, SOFTMAX_ONLY),
    Case("imitation-tensor", "tamper", "returns objects that imitate tensors and say 'equal' to anything",
         _imitation_tensor, NO_ATTENTION),  # assert_close already refuses a non-tensor; the probe refuses it as data
    Case("setprofile-arguments", "tamper", "sys.setprofile hook that hands assert_close the expected value",
         _setprofile_rewrites_arguments, NO_ATTENTION, gains_unguarded=True),
    Case("forge-frames-through-fd", "tamper", "forged 'passed' DONE frames for every later cell, on the result "
         "channel found in /proc/self/fd", _forge_frames_through_fd, SOFTMAX_ONLY, outputs=("FORGED",),
         gains_unguarded=True),  # the question's check gets a forged frame too: no probe, no point
    Case("forge-frames-with-probe", "tamper", "forged 'passed' DONE frames carrying the test's own probe data",
         _forge_frames_with_probe, NO_ATTENTION, gains_unguarded=True),
    Case("patch-and-restore-in-call", "tamper", "the answer patches assert_close/allclose during each test and puts "
         "them back as the test ends", _patch_and_restore_in_call, NO_ATTENTION, gains_unguarded=True),
    Case("inputs-rescaled-in-call", "tamper", "the unscaled answer scales q in place by sqrt(d_k) after computing",
         _inputs_rescaled_in_call, NO_ATTENTION, gains_unguarded=True),
    # Frames forged to mislead or break the grader's reader. The first one earned full marks before the grader
    # read a cell's failure from the frame's error (it read only error outputs, and the judge skips a failed cell).
    Case("forged-failure-without-output", "tamper", "forged DONE frames that say 'failed' but carry no error output",
         _forged('{"type": "done", "index": index, "error": {"ename": "Forged", "evalue": ""}, "outputs": [], '
                 '"tamper": [], "execution_count": index}'), SOFTMAX_ONLY),
    Case("forged-error-string", "tamper", "forged DONE frames whose error is a string",
         _forged('{"type": "done", "index": index, "error": "x", "outputs": [], "execution_count": index}'),
         SOFTMAX_ONLY),
    Case("forged-field-types", "tamper", "forged DONE frames whose outputs, count, seconds and notes have other types",
         _forged('{"type": "done", "index": index, "error": None, "outputs": 5, "execution_count": "x", '
                 '"seconds": "x", "tamper": 7}'), SOFTMAX_ONLY),
    Case("forged-malformed-probe", "tamper", "forged DONE frames whose probe is a tensor of invalid base64",
         _forged('{"type": "done", "index": index, "error": None, "outputs": [], "execution_count": 1, '
                 '"probe": {"tensor": {"dtype": "float32", "shape": [1], "data": "!!!!"}}}'),
         SOFTMAX_ONLY),
    Case("cells-posing-as-course-code", "tamper", "new locked cells headed as provided code and as judge helpers",
         _cells_posing_as_course_code, NO_ATTENTION),
    Case("parser-bomb", "tamper", "one line of 200,000 nested brackets on the result channel", _parser_bomb,
         NO_ATTENTION, outputs=("FORGED",)),
]


def _strip_notebook_metadata(nb: NotebookNode) -> NotebookNode:
    nb.metadata = {}
    return nb


def write_case(case: Case, ctx: Context, folder: Path) -> Path:
    path = folder / case.name / f"{NOTEBOOK}.ipynb"
    path.parent.mkdir(parents=True, exist_ok=True)
    built = case.build(ctx)
    if isinstance(built, bytes):
        path.write_bytes(built)
    else:
        nbformat.write(built, str(path))
    return path


def source_path() -> Path:
    return source_notebook(NOTEBOOK)


def source() -> NotebookNode:
    return read(source_path())
