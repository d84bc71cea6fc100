"""The judge program: one verdict per request, for as long as the grading process that started it lives
(one warm judge per process, shared by its threads: grading/judging.py).

grader -> judge, on stdin, one JSON line per test cell: {"name", "context", "source", "probe"} (context: the
notebook's setup and provided cells and its judge helpers, the course's own code; source: the test's inputs and
judge; never student code; probe: runner.plain's encoding of what the probe handed over).
judge -> grader, on the original stdout: {"type": READY} once torch is imported, then per request
{"type": VERDICT, "error": null | {"ename", "evalue"}, "seconds"}. What the judge's code prints goes to
stderr, never to the channel."""

from __future__ import annotations

import json
import math
import os
import random
import sys
import time
from typing import Any

import numpy
import torch

from autograder.runner import plain, protocol


def namespace(probe: Any) -> dict[str, Any]:
    """What a judge's code starts with: the probe's data and the modules hidden tests use, on the CPU."""
    return {
        "__name__": "__judge__",
        "probe": probe,
        "torch": torch,
        "nn": torch.nn,
        "F": torch.nn.functional,
        "math": math,
        "np": numpy,
        "numpy": numpy,
        "random": random,
        "device": torch.device("cpu"),
    }


_compiled: dict[tuple[str, str], Any] = {}  # (source, file name) -> code: each piece is compiled once per judge


def _compile(source: str, filename: str) -> Any:
    key = (source, filename)
    if key not in _compiled:
        if len(_compiled) > 256:
            _compiled.clear()
        _compiled[key] = compile(source, filename, "exec")
    return _compiled[key]


def verdict(request: dict) -> dict | None:
    """None when the test passes, else the error that fails it (name and message, never a traceback)."""
    try:
        data = plain.decode(request.get("probe"))
    except Exception as exc:  # noqa: BLE001 - whatever the data, the judge answers (NotPlain says why)
        return {"ename": "ProbeError", "evalue": f"the test's data could not be read: {exc}"}
    random.seed(0)
    numpy.random.seed(0)
    # The CPU generator only (the judge computes on the CPU): torch.manual_seed also queues a lazy seeding of
    # every accelerator with a stack trace each time, which cost more than many verdicts.
    torch.random.default_generator.manual_seed(0)
    torch.set_grad_enabled(True)
    try:
        code = _compile(request["source"], f"<judge of {request.get('name') or 'a test'}>")
        scope = namespace(data)
        context = _compile(request.get("context") or "", "<the notebook's setup and provided cells>")
        exec(context, scope)  # noqa: S102 - the course's code, from solutions/
        scope["probe"] = data
        exec(code, scope)  # noqa: S102 - the course's own test code, from solutions/
    except Exception as exc:  # noqa: BLE001 - every failure of a comparison fails the cell
        return {"ename": type(exc).__name__, "evalue": str(exc)[:2000]}
    return None


def serve() -> None:
    channel = os.dup(1)
    os.dup2(2, 1)  # prints of the judge's code go to stderr
    sys.stdout = sys.stderr

    def answer(message: dict) -> None:
        protocol.write_frame(channel, message)

    # the first comparison imports sympy (through torch.fx): half a second, paid before READY, not in a verdict
    torch.testing.assert_close(torch.zeros(1), torch.zeros(1))
    answer({"type": protocol.READY})
    for line in sys.stdin:
        request = json.loads(line)
        started = time.monotonic()
        error = verdict(request)
        answer({"type": protocol.VERDICT, "error": error, "seconds": round(time.monotonic() - started, 4)})


if __name__ == "__main__":
    serve()
