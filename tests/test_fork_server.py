"""The fork server (autograder/sandbox/forkserver.py ForkServer, autograder/runner/forks.py serve_forks): one warm
sandbox per worker forks a child per submission. The children of one server follow each other, so what one
submission leaves behind (a daemon process, files in /tmp or in its scratch dir) must be gone
before the next one starts; and grades must be those of a fresh sandbox per submission.
"""

from __future__ import annotations

import io
import os

import pytest

from autograder import config
from autograder.grading.grade import Options, grade
from autograder.model.notebooks import grade_id, is_solution_cell, read, source_notebook
from autograder.sandbox.forkserver import fork_servers_enabled
from conftest import NOTEBOOK
from coursetools.samples import make_submission, solution_code, write_demo_class, write_submission

pytestmark = [
    pytest.mark.grading,
    pytest.mark.skipif(
        os.geteuid() != 0, reason="fork servers need root (as an ordinary user each submission gets a fresh sandbox)"
    ),
]

REFERENCE = {grade_id(c): solution_code(c) for c in read(source_notebook(NOTEBOOK)).cells if is_solution_cell(c)}

LEAVER = """
import os, time
with open("/tmp/left-behind.txt", "w") as handle:
    handle.write("the previous student's secret")
with open("left-in-scratch.txt", "w") as handle:
    handle.write("x")
os.makedirs("/tmp/hidden-dir/inner", exist_ok=True)
os.symlink("/usr", "/tmp/hidden-dir/inner/usr-link")
os.chmod("/tmp/hidden-dir/inner", 0o000)
os.chmod("/tmp/hidden-dir", 0o000)
import ctypes
ctypes.CDLL(None).msgget(4242, 0o1000 | 0o600)  # a System V message queue (IPC_CREAT): outlives its process
if os.fork() == 0:  # a daemon that outlives the notebook
    os.setsid()
    if os.fork() == 0:
        time.sleep(600)
    os._exit(0)
""" + REFERENCE["softmax"]

OBSERVER = """
import os

def _leftovers():
    found = [name for name in os.listdir("/tmp") if name in ("left-behind.txt", "hidden-dir")]
    here = os.path.basename(os.getcwd())
    found += [name for name in os.listdir("/tmp") if name.startswith("submission-") and name != here]
    me = os.getuid()
    with open("/proc/sysvipc/msg") as handle:
        found += [f"message queue {line.split()[0]}" for line in list(handle)[1:]]
    with open("/proc/self/status") as handle:
        found += [line.strip() for line in handle if line.startswith("CapEff") and line.split()[1].strip("0")]
    found += ["root"] if me == 0 else []
    for pid in os.listdir("/proc"):
        if pid.isdigit() and int(pid) != os.getpid():
            try:
                if os.stat(f"/proc/{pid}").st_uid == me:
                    found.append(f"process {pid}")
            except OSError:
                pass
    return found

LEFT = _leftovers()
if LEFT:
    raise RuntimeError(f"the previous submission left {LEFT}")

import torch
if not (torch.are_deterministic_algorithms_enabled() and torch.is_deterministic_algorithms_warn_only_enabled()):
    raise RuntimeError("a kernel starts with torch's deterministic algorithms on (warn only)")
""" + REFERENCE["softmax"]


def test_fork_servers_are_used_as_root():
    assert fork_servers_enabled() == config.FORK_SERVER


def test_nothing_of_one_submission_reaches_the_next(tmp_path):
    subs = tmp_path / "subs"
    write_submission(make_submission(NOTEBOOK, {"softmax": LEAVER}), subs / "a-leaver" / f"{NOTEBOOK}.ipynb")
    write_submission(make_submission(NOTEBOOK, {"softmax": OBSERVER}), subs / "b-observer" / f"{NOTEBOOK}.ipynb")
    out = io.StringIO()
    results = {r.student: r for r in grade(subs, Options(workdir=tmp_path / "w", workers=1), out=out)}
    leaver, observer = results["a-leaver"], results["b-observer"]
    assert leaver.score == leaver.max_score, out.getvalue()
    assert observer.score == observer.max_score, f"the observer saw what the leaver left: {out.getvalue()}"


def test_grades_equal_those_of_a_fresh_sandbox_per_submission(tmp_path, monkeypatch):
    subs = tmp_path / "subs"
    write_demo_class(subs)
    forked = grade(subs, Options(workdir=tmp_path / "forked"), out=io.StringIO())
    monkeypatch.setattr(config, "FORK_SERVER", False)
    fresh = grade(subs, Options(workdir=tmp_path / "fresh"), out=io.StringIO())

    def points(results):
        return {(r.student, r.notebook): ([(c.grade_id, c.points) for c in r.cells], r.reason) for r in results}

    assert points(forked) == points(fresh)
