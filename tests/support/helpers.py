"""Helpers shared by several test modules (not fixtures: those are in conftest.py).

- running the CLI as a newcomer would (`run_cli`, `cli`) and the demo notebook's points;
- a grading run killed midway and what it leaves (`grade_until_killed`, `gradebook_rows`, `export`,
  `sandbox_processes`), for the resume and PostgreSQL tests;
- two answers that are one renamed copy of the other (`ORIGINAL`, `RENAMED_COPY`), for the report and
  similarity tests;
- a self-contained HTML file opened in Chromium with every other request aborted (`offline_page`).
"""

from __future__ import annotations

import os
import signal
import sqlite3
import subprocess
import sys
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path

import nbformat

from autograder import config
from autograder.model.notebooks import max_points, read, source_notebook
from autograder.sandbox.command import RUNNER, RUNNER_IN_SANDBOX
from chromium import new_context
from conftest import NOTEBOOK
from coursetools.samples import implementations, make_submission, untouched_release, write_submission

POINTS = max_points(read(source_notebook(NOTEBOOK)))
TOTAL = sum(POINTS.values())


def run_cli(*args: str) -> subprocess.CompletedProcess:
    """`.venv/bin/python -m autograder ...` with the venv NOT on PATH, as a newcomer would call it."""
    venv_bin = str(Path(sys.executable).parent)
    env = dict(os.environ)
    env["PATH"] = os.pathsep.join(p for p in env.get("PATH", "").split(os.pathsep) if p != venv_bin)
    env.pop("VIRTUAL_ENV", None)
    return subprocess.run(
        [sys.executable, "-m", "autograder", *args],
        capture_output=True,
        text=True,
        env=env,
        cwd=config.REPO_ROOT,
        timeout=600,
    )


def make_class(folder: Path) -> None:
    write_submission(make_submission(NOTEBOOK), folder / "ada" / f"{NOTEBOOK}.ipynb")
    write_submission(untouched_release(NOTEBOOK), folder / "linus" / f"{NOTEBOOK}.ipynb")
    for impl in implementations(NOTEBOOK, "wrong")[:5]:
        write_submission(make_submission(NOTEBOOK, impl.cells), folder / impl.name / f"{NOTEBOOK}.ipynb")
    (folder / "edsger").mkdir()
    (folder / "edsger" / f"{NOTEBOOK}.ipynb").write_bytes(b"")


def cli(*args: str) -> list[str]:
    return [sys.executable, "-m", "autograder", *args]


def grade_until_killed(subs: Path, work: Path, after_lines: int, *extra: str) -> None:
    """Start `grade` (with `extra` arguments), SIGKILL it once `after_lines` submissions have been reported."""
    proc = subprocess.Popen(
        cli("grade", str(subs), "--workdir", str(work), "--workers", "2", *extra),
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        text=True,
        cwd=config.REPO_ROOT,
    )
    seen = 0
    for line in proc.stdout:
        if line.startswith("["):
            seen += 1
            if seen >= after_lines:
                break
    proc.send_signal(signal.SIGKILL)  # the grader only: its sandboxes must die with it
    proc.wait(timeout=30)
    proc.stdout.close()
    assert proc.returncode == -signal.SIGKILL, "the run ended before it could be killed"


def gradebook_rows(work: Path) -> list[tuple]:
    with sqlite3.connect(work / config.GRADEBOOK_FILE) as db:
        return sorted(
            db.execute(
                "select s.student_id, gc.name, g.auto_score from grade g "
                "join base_cell gc on g.cell_id = gc.id "
                "join submitted_notebook n on g.notebook_id = n.id join submitted_assignment s on n.assignment_id = "
                "s.id"
            ).fetchall()
        )


def export(work: Path, out: Path, *extra: str) -> bytes:
    proc = subprocess.run(
        cli("export", "--workdir", str(work), "--out", str(out), *extra),
        capture_output=True,
        text=True,
        cwd=config.REPO_ROOT,
        timeout=300,
    )
    assert proc.returncode == 0, proc.stderr
    return out.read_bytes()


def sandbox_processes() -> list[str]:
    """Processes of this checkout's sandboxes still alive: bwrap started with this checkout's
    runner, or a process whose environment names this checkout's venv (what the sandbox gets).
    Sandboxes of another checkout grading on the same machine are not ours to count."""
    runner, venv_bin = str(RUNNER), f"PATH={Path(sys.executable).parent}:".encode()
    found = []
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit() or int(entry.name) == os.getpid():
            continue
        try:
            cmdline = (entry / "cmdline").read_bytes().replace(b"\0", b" ").decode(errors="replace")
            environ = (entry / "environ").read_bytes()
        except OSError:
            continue
        if runner in cmdline or (b"\0" + venv_bin in b"\0" + environ and RUNNER_IN_SANDBOX in cmdline):
            found.append(f"{entry.name} {cmdline[:100]}")
    return found


# trudy's answer: a correct attention with two helper functions of her own.
ORIGINAL = '''def _flatten(t, n):
    return t.reshape(-1, *t.shape[-n:])

def _merge_heads(scores, lead, lq, lk):
    return scores.reshape(*lead, lq, lk)

def scaled_dot_product_attention(q, k, v, mask=None):
    """My attention."""
    lead = q.shape[:-2]
    lq, dk = q.shape[-2:]
    lk = k.shape[-2]
    qf, kf, vf = _flatten(q, 2), _flatten(k, 2), _flatten(v, 2)
    s = torch.bmm(qf, kf.transpose(1, 2)) * (1.0 / math.sqrt(dk))
    s = _merge_heads(s, lead, lq, lk)
    if mask is not None:
        s = torch.where(mask, s, torch.full_like(s, float("-inf")))
    w = softmax(s, dim=-1)
    out = torch.bmm(_flatten(w, 2), vf).reshape(*lead, lq, v.shape[-1])
    return out, w
'''
# mallory's: the same, renamed, commented, helpers moved below and swapped.
RENAMED_COPY = '''def scaled_dot_product_attention(query, key, value, mask=None):
    # attention, see lecture 2
    batch_dims = query.shape[:-2]
    n_q, depth = query.shape[-2:]
    n_k = key.shape[-2]
    a, b, c = flat(query, 2), flat(key, 2), flat(value, 2)
    raw = torch.bmm(a, b.transpose(1, 2)) * (1.0 / math.sqrt(depth))   # the scores
    raw = unflatten(raw, batch_dims, n_q, n_k)
    if mask is not None:
        raw = torch.where(mask, raw, torch.full_like(raw, float("-inf")))
    probs = softmax(raw, dim=-1)
    result = torch.bmm(flat(probs, 2), c).reshape(*batch_dims, n_q, value.shape[-1])
    return result, probs

def unflatten(x, batch_dims, n_q, n_k):
    return x.reshape(*batch_dims, n_q, n_k)

def flat(tensor, keep):
    """Merge the leading dimensions."""
    return tensor.reshape(-1, *tensor.shape[-keep:])
'''


def notebook_bytes(nb=None) -> bytes:
    """A notebook as a file's bytes (the demo notebook's reference submission by default)."""
    return nbformat.writes(nb if nb is not None else make_submission(NOTEBOOK)).encode()


@dataclass
class OfflinePage:
    page: object  # playwright's Page
    others: list[str] = field(default_factory=list)  # requests for anything but the file itself (all aborted)
    errors: list[str] = field(default_factory=list)  # console errors and page errors


@contextmanager
def offline_page(browser, path: Path, width: int = 1280, **options) -> Iterator[OfflinePage]:
    """`path` opened in Chromium with every request but itself (and data: URLs) aborted, after the page and
    its late console messages have settled; `options` go to Playwright's new_context (color_scheme, ...)."""
    url = Path(path).as_uri()
    context = new_context(browser, width, **options)
    try:
        page = context.new_page()
        requests: list[str] = []
        blocked: list[str] = []
        visit = OfflinePage(page)

        def route(r):
            if r.request.url == url or r.request.url.startswith("data:"):
                r.continue_()
            else:
                blocked.append(r.request.url)
                r.abort()

        page.route("**/*", route)
        page.on("request", lambda req: requests.append(req.url))
        page.on(
            "console",
            lambda msg: visit.errors.append(f"console.{msg.type}: {msg.text}") if msg.type == "error" else None,
        )
        page.on("pageerror", lambda exc: visit.errors.append(f"pageerror: {exc}"))
        page.goto(url, wait_until="load")
        page.wait_for_load_state("networkidle")
        page.wait_for_timeout(300)  # late console messages
        visit.others = sorted({u for u in requests + blocked if u != url and not u.startswith("data:")})
        yield visit
    finally:
        context.close()
