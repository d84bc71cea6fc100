"""The messages between the grader and its kernel (the runner), defined once for both sides.

This module is imported by the runner, inside the sandbox, as `runner.protocol` (the runner is a program
of the standard library and the notebook's own packages, with no import of the grader), and by the
grader as `autograder.runner.protocol`. It imports only the standard library.

Every message is one JSON object on one line (a frame).

A kernel (`python .../runner`):
- grader -> runner, on stdin: first the hello {"token", "harden", "cell_timeout", "max_output"}, with
  {ISOLATE: <bytes of its /tmp>} when it runs in a sandbox (isolation.py, before anything else), then one
  cell at a time {"index", "kind", "name", "source"} (kind: CELL_STUDENT, CELL_LOCKED or CELL_TEST), then
  {END: true}. A cell is sent only after the previous one is done, so hidden tests reach the process one
  test cell at a time, when they run. A test cell with {PROBE: true} carries only its visible checks and its
  probe (never its judge); its DONE frame carries {PROBE: <the probe's plain data>} (runner.plain).
- runner -> grader, on the result channel (the original stdout): {"type": READY}, then per cell
  {"type": DONE, "index", "outputs", "error", "seconds", "tamper"}. Every frame carries the process's pid
  and the token, so output written by student code or by a forked child is not taken for the runner's.

A fork server (one warm process per worker sandbox, forking one kernel per submission):
- grader -> server, on stdin: {ZYGOTE: true, "token", REQUESTS: <a Unix socket's descriptor number>};
  server -> grader, on its stdout: {"type": ZYGOTE};
- per submission grader -> server, on that socket: {FORK: {<the hello above, ISOLATE included>, "uid",
  "rlimits": {name: value}}} with two descriptors (SCM_RIGHTS): the read end of the child's command pipe and the
  write end of its result pipe. The child's frames are exactly a kernel's, on those pipes; server -> grader, on
  the server's stdout, {"type": EXITED, "code"} when the child is gone, and {"type": IDLE} once everything of its
  uid is cleaned up. No child holds the server's stdout, stdin or socket (forks.py), so those frames are the
  server's alone.
"""

from __future__ import annotations

import json
import os

# runner -> grader: the "type" of a frame
READY = "ready"  # a kernel is up: torch imported, state snapshotted, waiting for cells
DONE = "done"  # one cell ran
ZYGOTE = "zygote"  # a fork server is up (also the key of the request that starts one)
EXITED = "exited"  # a fork server's child is gone
VERDICT = "verdict"  # the judge decided one test cell (autograder.judge)
IDLE = "idle"  # a fork server has cleaned up after its child and takes the next request
# grader -> runner: keys of a message
END = "end"  # no more cells
FORK = "fork"  # fork a kernel for one submission
ISOLATE = "isolate"  # namespaces of its own and a new /tmp of this many bytes before any cell (runner.isolation)
REQUESTS = "requests"  # the descriptor of a fork server's request socket (in the grader's hello to it)
PROBE = "probe"  # a test cell whose probe hands plain data to the judge (grader -> runner), and that data (back)
# the kinds of cell
CELL_STUDENT, CELL_LOCKED, CELL_TEST = "student", "locked", "test"


def encode(message: dict) -> bytes:
    """One frame: the message as one line of JSON."""
    return (json.dumps(message) + "\n").encode()


def write_frame(channel: int, message: dict) -> None:
    """Write one frame to a file descriptor, whole (os.write may write less than asked)."""
    view = memoryview(encode(message))
    while view:
        view = view[os.write(channel, view) :]
