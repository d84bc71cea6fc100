"""Execute a notebook's cells, one at a time, inside the sandbox: the grader's kernel.

This folder runs as a standalone program (`python .../runner`) in the sandbox, which sees
none of this repository: it imports only the standard library, IPython and, when they
are installed, torch, numpy and matplotlib. It never reads a file of the course. The
messages it exchanges with the grader are defined once, in protocol.py.

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
replaced while the test ran. See docs/sandbox.md's threat model for what this does not stop.

Files: `protocol.py` (the messages, shared with the grader), `kernel.py` (the cells), `shell.py` (the
IPython shell of student cells), `priming.py` (imports and seeds before any cell), `guard.py` (what tests
rely on), `isolation.py` (the namespaces and /tmp of one submission), `forks.py` (the fork server),
`plain.py` (a probe's data as plain JSON for the judge). It runs as `python .../runner` (this folder) and
its modules import each other by the package name `runner`, so the same files are the package `runner` in
the sandbox and `autograder.runner` for the grader, which imports only `protocol`, `plain` and
`isolation`'s wait for a submission's keys (tests/test_layout.py holds it to that).
"""

from __future__ import annotations

import json
import os
import sys

# Run as `python .../runner` (a folder): its modules are the package `runner`, found next to the folder.
sys.path[0] = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))

from runner import protocol  # noqa: E402
from runner.forks import ISOLATION_FAILED, serve_forks  # noqa: E402
from runner.isolation import IsolationError, isolate  # noqa: E402
from runner.kernel import Runner  # noqa: E402
from runner.priming import pre_warm, seed_everything  # noqa: E402


def main() -> None:
    # The result channel is the stdout we were given; from now on fd 1 and 2 (C-level
    # output, writes to sys.__stdout__) go to /dev/null, and stdin is private.
    channel = os.dup(1)
    commands = os.fdopen(os.dup(0), "r", encoding="utf-8")
    hello = json.loads(commands.readline())
    if hello.get(protocol.ZYGOTE):
        serve_forks(channel, commands, hello)
        os._exit(0)
    if hello.get(protocol.ISOLATE):  # in a sandbox: namespaces of its own, before anything else (one thread)
        try:
            isolate(int(hello[protocol.ISOLATE]))
        except (IsolationError, OSError) as exc:
            print(f"the sandbox could not isolate the notebook: {exc}", file=sys.stderr, flush=True)
            os._exit(ISOLATION_FAILED)
    pre_warm()
    seed_everything()  # before the snapshot and before any cell: grading again gives the same grade
    runner = Runner(channel, commands, hello)
    # Until here, errors went to stderr for the grader to report; from now on fd 0, 1
    # and 2 are /dev/null for the notebook (C-level prints, input()): the channel is private.
    devnull = os.open(os.devnull, os.O_RDWR)
    for fd in (0, 1, 2):
        os.dup2(devnull, fd)
    runner.serve()
    os._exit(0)  # skip interpreter teardown (and atexit hooks a student may have registered)


if __name__ == "__main__":
    main()
