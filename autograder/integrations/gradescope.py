"""Gradescope: the autograder zip of one notebook, and what runs in Gradescope's container for each submission.

    autograder gradescope 02_dot_product_attention --out autograder.zip     # upload it to the assignment

Gradescope's autograder specification (gradescope-autograders.readthedocs.io, "Autograder Specifications";
docs/specs.md of github.com/gradescope/autograder_samples): the zip holds `setup.sh` and `run_autograder` at its
root. Gradescope unpacks it into /autograder/source and runs setup.sh once, as root, when it builds the image
(Ubuntu); for each submission it puts the student's files in /autograder/submission and runs
/autograder/run_autograder (a copy of ours) as root in /autograder; what the student gets is
/autograder/results/results.json (score, and one test per graded cell), what run_autograder prints goes to the
instructor only (/autograder/results/stdout).

The zip holds no more than this notebook needs: `grader/autograder/` (this package's .py files), `notebook/<name>.ipynb`
(the source notebook with its solution regions emptied and its outputs cleared: its tests, hidden ones included,
and its locked cells; an answer put back for a missing one comes from the released version, which is the same
for both), `requirements.txt` (the pins of pyproject.toml the grader needs), `gradescope.json` (the notebook,
limits, visibility) and the two scripts.

Each submission is graded by the same grader as `autograder grade` (`grading.execute`: alignment, limits, the
runner's guard, per-cell results; hidden tests sent over the pipe one cell at a time). Student code runs:
- in bubblewrap's sandbox when it can start in the container (it needs user namespaces, which Docker's default
  profile refuses: on Gradescope expect the other case);
- else as a uid of its own (`config.SANDBOX_UID_BASE` + slot, no capability, no_new_privs) under the same
  rlimits and time limits, while /autograder/source (the grader and the notebook's tests) and
  /autograder/results are root's only (0700) and submission_metadata.json root's (0600).
The README's "Using it with Gradescope" says what holds in each case.

results.json: `score` (the total), `output` (why the notebook could not run to the end, what the grader
repaired: plain text), `tests` (per graded cell: name = its grade_id, score, max_score, status, output = "passed"
or the failed property's message, never a line of a hidden test), the visibility chosen when the zip was built
(`visible` by default: every message is written for students and is on their feedback page anyway), and
`stdout_visibility` `hidden` (the grader's log is for the instructor). A failure of the grader itself writes no
results.json (the project's rule: a grader error is never a grade) and exits 1; Gradescope then reports that the
autograder failed, and "Regrade" runs it again.
"""

from __future__ import annotations

import argparse
import json
import os
import re
import shutil
import subprocess
import sys
import tempfile
import time
import zipfile
from dataclasses import dataclass, field
from pathlib import Path

import nbformat
from nbformat import NotebookNode

from autograder import config
from autograder.errors import InputError
from autograder.grading.execute import execute_submission
from autograder.intake.collect import collect
from autograder.model.notebooks import (
    SOLUTION_BEGIN,
    SOLUTION_END,
    is_solution_cell,
    marker,
    max_points,
    read,
    release_notebook,
    secret_lines,
    source_notebook,
)
from autograder.model.records import Job, Limits, Result
from autograder.reporting.feedback import MAX_MESSAGE_CHARS, student_message
from autograder.reporting.redact import redact
from autograder.sandbox import SandboxUnavailable, check_available, shutdown_servers
from autograder.store.gradebook import atomic_write

ROOT = Path("/autograder")  # Gradescope's; AUTOGRADER_ROOT or --root elsewhere (the course's tests)
SETTINGS = "gradescope.json"
VISIBILITY = ("visible", "after_due_date", "after_published", "hidden")  # the specification's values
# What the grader's process needs on Gradescope's image (the pins of pyproject.toml).
REQUIREMENTS = ("torch", "numpy", "matplotlib", "ipykernel", "nbformat", "nbgrader")
TORCH_CPU_INDEX = "https://download.pytorch.org/whl/cpu"
# Gradescope stops a run after 10 minutes by default: the notebook gets less, so results.json is always written.
NOTEBOOK_TIMEOUT_S = 420
ISOLATION_ENV = "AUTOGRADER_ISOLATION"  # "bwrap" or "uid" forces one (tests, diagnosis); default: bwrap if it starts

SETUP_SH = """#!/usr/bin/env bash
# Written by `autograder gradescope`. Gradescope runs it once, as root, when it builds the autograder's image.
# It installs what the grader needs on Gradescope's Ubuntu image (bubblewrap, util-linux's setpriv and prlimit,
# Python and the pinned packages of requirements.txt, torch's CPU build), then checks: the grader imports, the
# notebook's tests are there and readable by root only, a uid of its own can import torch, and whether
# bubblewrap can run (if not, student code runs as that uid). AUTOGRADER_SKIP_INSTALL=1: the checks alone.
set -euo pipefail
ROOT="${AUTOGRADER_ROOT:-/autograder}"
VENV=/opt/autograder/venv
PYTHON="${AUTOGRADER_PYTHON:-$VENV/bin/python}"
if [ -z "${AUTOGRADER_SKIP_INSTALL:-}" ]; then
    export DEBIAN_FRONTEND=noninteractive
    apt-get update
    apt-get install -y --no-install-recommends bubblewrap util-linux ca-certificates
    SYSTEM_PYTHON=""
    for version in 3.11 3.12 3.10; do
        if apt-get install -y --no-install-recommends "python$version" "python$version-venv"; then
            SYSTEM_PYTHON="python$version"
            break
        fi
    done
    test -n "$SYSTEM_PYTHON" || { echo "no Python 3.10 to 3.12 on this image" >&2; exit 1; }
    "$SYSTEM_PYTHON" -m venv "$VENV"
    "$VENV/bin/python" -m pip install --quiet --upgrade pip
    "$VENV/bin/python" -m pip install --quiet -r "$ROOT/source/requirements.txt" --extra-index-url __TORCH_INDEX__
    chmod -R a+rX /opt/autograder
fi
cd "$ROOT" && PYTHONPATH="$ROOT/source/grader" "$PYTHON" -m autograder.integrations.gradescope check --root "$ROOT"
"""

RUN_AUTOGRADER = """#!/usr/bin/env bash
# Written by `autograder gradescope`. Gradescope runs it, as root in /autograder, for every submission: it grades
# the notebook in /autograder/submission with the course's grader and writes /autograder/results/results.json.
ROOT="${AUTOGRADER_ROOT:-/autograder}"
PYTHON="${AUTOGRADER_PYTHON:-/opt/autograder/venv/bin/python}"
cd "$ROOT" && PYTHONPATH="$ROOT/source/grader" exec "$PYTHON" -m autograder.integrations.gradescope run --root "$ROOT"
"""


def gradescope_limits() -> Limits:
    """A zip's limits unless told otherwise: the notebook stops before Gradescope stops the run, and the memory
    limit is the grader's (Gradescope's containers have no GPU, whatever the machine that builds the zip has)."""
    return Limits(notebook_timeout_s=NOTEBOOK_TIMEOUT_S, memory_bytes=config.SANDBOX_MEMORY_BYTES)


@dataclass(frozen=True)
class Settings:
    """gradescope.json: what `autograder gradescope` was told when it built the zip (the notebook, when students
    see each test's result, the limits), read back in the container for every submission."""

    notebook: str
    visibility: str = "visible"  # one of VISIBILITY
    limits: Limits = field(default_factory=lambda: gradescope_limits())
    grader_version: str = config.GRADER_VERSION  # of the grader that built the zip

    def to_json(self) -> dict:
        return {
            "notebook": self.notebook,
            "visibility": self.visibility,
            "grader_version": self.grader_version,
            "limits": {
                "cell_timeout_s": self.limits.cell_timeout_s,
                "notebook_timeout_s": self.limits.notebook_timeout_s,
                "memory_bytes": self.limits.memory_bytes,
                "processes": self.limits.processes,
            },
        }

    @classmethod
    def from_json(cls, data: dict) -> Settings:
        given = data.get("limits", {})
        limits = Limits(
            cell_timeout_s=float(given.get("cell_timeout_s", config.CELL_TIMEOUT_S)),
            notebook_timeout_s=float(given.get("notebook_timeout_s", NOTEBOOK_TIMEOUT_S)),
            memory_bytes=int(given.get("memory_bytes", config.SANDBOX_MEMORY_BYTES)),
            processes=int(given.get("processes", config.SANDBOX_PROCESSES)),
        )
        return cls(
            str(data["notebook"]), str(data.get("visibility", "visible")), limits, str(data.get("grader_version", ""))
        )


# --- the zip --------------------------------------------------------------------------------------------


def grading_notebook(source: NotebookNode) -> NotebookNode:
    """The source notebook as the zip carries it: every solution region emptied (its markers kept), a solution
    cell without markers emptied, outputs cleared. Its released version is the source's, cell for cell."""
    nb = nbformat.from_dict(source)
    for cell in nb.cells:
        if cell.cell_type == "code":
            cell.outputs, cell.execution_count = [], None
        if not is_solution_cell(cell):
            continue
        lines, inside, regions = [], False, 0
        for line in cell.source.splitlines():
            if marker(line) == SOLUTION_BEGIN:
                inside, regions = True, regions + 1
                lines.append(line)
            elif marker(line) == SOLUTION_END:
                inside = False
                lines.append(line)
            elif not inside:
                lines.append(line)
        cell.source = "\n".join(lines) if regions else ""
    released, expected = release_notebook(nb), release_notebook(source)
    if [(c.cell_type, c.source, c.metadata) for c in released.cells] != [
        (c.cell_type, c.source, c.metadata) for c in expected.cells
    ]:
        raise InputError("the notebook without its solutions releases differently: check its solution markers")
    return nb


def requirements(root: Path = config.REPO_ROOT) -> str:
    """requirements.txt of the zip: pyproject.toml's pins of what the grader needs in Gradescope's image."""
    if sys.version_info >= (3, 11):
        import tomllib
    else:  # Python 3.10: the copy pip carries
        from pip._vendor import tomli as tomllib
    project = tomllib.loads((root / "pyproject.toml").read_text(encoding="utf-8"))["project"]
    pins = {re.split(r"[^A-Za-z0-9_.-]", spec, maxsplit=1)[0].lower(): spec for spec in project["dependencies"]}
    missing = [name for name in REQUIREMENTS if name not in pins]
    if missing:
        raise InputError(f"pyproject.toml has no dependency {', '.join(missing)}")
    head = "# Written by `autograder gradescope` from the course repository's pyproject.toml."
    return "\n".join([head] + [pins[name] for name in REQUIREMENTS]) + "\n"


def build_zip(
    notebook: str,
    out: Path,
    limits: Limits | None = None,
    visibility: str = "visible",
    solutions_dir: Path | None = None,
) -> list[str]:
    """Write Gradescope's autograder zip for `notebook` (reproducible: fixed times, sorted); returns its members."""
    if visibility not in VISIBILITY:
        raise InputError(f"visibility {visibility!r}: one of {', '.join(VISIBILITY)}")
    settings = Settings(notebook, visibility, limits or gradescope_limits())
    source = read(source_notebook(notebook, solutions_dir))
    members: dict[str, tuple[bytes, int]] = {
        "setup.sh": (SETUP_SH.replace("__TORCH_INDEX__", TORCH_CPU_INDEX).encode(), 0o755),
        "run_autograder": (RUN_AUTOGRADER.encode(), 0o755),
        "requirements.txt": (requirements().encode(), 0o644),
        SETTINGS: (json.dumps(settings.to_json(), indent=1, sort_keys=True).encode() + b"\n", 0o644),
        f"notebook/{notebook}.ipynb": (nbformat.writes(grading_notebook(source)).encode(), 0o644),
    }
    package = Path(__file__).resolve().parent.parent
    for path in sorted(package.rglob("*.py")):
        if "__pycache__" not in path.parts:
            members[f"grader/autograder/{path.relative_to(package).as_posix()}"] = (path.read_bytes(), 0o644)
    out = Path(out)
    out.parent.mkdir(parents=True, exist_ok=True)
    tmp = out.with_name(out.name + ".tmp")
    with zipfile.ZipFile(tmp, "w", zipfile.ZIP_DEFLATED) as zf:
        for name in sorted(members):
            data, mode = members[name]
            info = zipfile.ZipInfo(name, date_time=(2020, 1, 1, 0, 0, 0))
            info.external_attr = (0o100000 | mode) << 16
            info.compress_type = zipfile.ZIP_DEFLATED
            zf.writestr(info, data)
    os.replace(tmp, out)
    return sorted(members)


# --- in Gradescope's container ----------------------------------------------------------------------------


def _settings(root: Path) -> Settings:
    return Settings.from_json(json.loads((root / "source" / SETTINGS).read_text(encoding="utf-8")))


def lock_down(root: Path) -> list[str]:
    """The grader's files and the results readable and writable by root only; returns what was done."""
    done = []
    for name in ("source", "results"):
        path = root / name
        path.mkdir(parents=True, exist_ok=True)
        os.chown(path, 0, 0)
        path.chmod(0o700)
        done.append(f"{path}: 0700, root's")
    metadata = root / "submission_metadata.json"
    if metadata.exists():
        metadata.chmod(0o600)
        done.append(f"{metadata}: 0600")
    return done


def isolation() -> str:
    """How student code runs here: "bwrap" (the sandbox) when bubblewrap starts, else "uid" (a uid of its own)."""
    forced = os.environ.get(ISOLATION_ENV, "")
    if forced == "uid":
        return "uid"
    try:
        check_available()
    except SandboxUnavailable:
        if forced == "bwrap":
            raise
        return "uid"
    return "bwrap"


def results_json(result: Result, source: NotebookNode, settings: Settings, seconds: float, mode: str) -> dict:
    """Gradescope's results.json of one graded submission."""
    hidden = secret_lines(source)
    visibility = settings.visibility
    tests = []
    for number, cell in enumerate(result.cells, 1):
        message = "passed" if cell.passed else redact(cell.message or "failed", hidden, MAX_MESSAGE_CHARS)
        tests.append(
            {
                "name": cell.grade_id,
                "number": str(number),
                "score": cell.points,
                "max_score": cell.max_points,
                "status": "passed" if cell.passed else "failed",
                "output": message,
                "visibility": visibility,
            }
        )
    return {
        "score": result.score,
        "execution_time": round(seconds),
        "output": "\n".join(
            [
                f"{result.score:g} / {result.max_score:g} points: "
                + ("every test passed." if result.score >= result.max_score else "each failed test says what failed.")
            ]
            + student_message(result, hidden, tests=False)
        ),
        "output_format": "text",
        "test_output_format": "text",
        "test_name_format": "text",
        "visibility": visibility,
        "stdout_visibility": "hidden",
        "extra_data": {
            "notebook": result.notebook,
            "grader_version": result.grader_version,
            "isolation": mode,
            "reason": result.reason,
        },
        "tests": tests,
    }


def _gather(submission: Path, into: Path) -> None:
    """Every file the student uploaded (in folders too, as Gradescope unpacks a zip), side by side in `into`;
    of two files of one name, the later one."""
    files = [
        p
        for p in submission.rglob("*")
        if p.is_file()
        and not p.is_symlink()
        and not any(part.startswith(".") or part == "__MACOSX" for part in p.relative_to(submission).parts)
    ]
    for path in sorted(files, key=lambda p: p.stat().st_mtime):
        target = into / path.name
        shutil.copyfile(path, target)
        os.utime(target, (path.stat().st_mtime, path.stat().st_mtime))


def run(root: Path = ROOT, out=sys.stdout) -> int:
    """Grade the submission in `root`/submission and write `root`/results/results.json; 0, or 1 when the grader
    itself failed (no results.json then)."""
    started = time.monotonic()
    root = Path(root)
    settings = _settings(root)
    notebook = settings.notebook
    for line in lock_down(root):
        print(line, file=out)
    source_path = root / "source" / "notebook" / f"{notebook}.ipynb"
    try:
        mode = isolation()
    except SandboxUnavailable as exc:
        print(f"error: {exc}", file=out)
        return 1
    print(f"student code runs {'in the bubblewrap sandbox' if mode == 'bwrap' else 'as a uid of its own'}", file=out)
    private = Path(tempfile.mkdtemp(prefix="gradescope-"))  # root's only: the student's copy, never the original
    try:
        (private / "student").mkdir()
        submission = root / "submission"
        if submission.is_dir():
            _gather(submission, private / "student")
        sub = collect(private, [notebook])[0]
        job = Job(sub, source_path, settings.limits, sandboxed=mode == "bwrap", unprivileged=mode == "uid")
        result = execute_submission(job)
        if result.internal_error:
            print(f"the grader failed ({result.internal_error}); trying once more", file=out)
            result = execute_submission(job)
    finally:
        shutdown_servers()
        shutil.rmtree(private, ignore_errors=True)
    if result.internal_error:
        print(f"error: the grader failed, not the submission: {result.internal_error}. No results.json.", file=out)
        return 1
    if sub.note:
        result.repairs.insert(0, f"file: {sub.note}")
    results = results_json(result, read(source_path), settings, time.monotonic() - started, mode)
    atomic_write(root / "results" / "results.json", json.dumps(results, indent=1) + "\n")
    why = f" ({result.reason})" if result.reason else ""
    print(f"{notebook}: {result.score:g}/{result.max_score:g}{why}", file=out)
    for cell in result.cells:
        print(f"  {cell.grade_id:<32} {cell.points:g}/{cell.max_points:g}  {cell.message[:200]}", file=out)
    return 0


def check(root: Path = ROOT, out=sys.stdout) -> int:
    """setup.sh's checks: 0 when the grader can grade here (and says how it will isolate student code)."""
    root = Path(root)
    problems = []
    import autograder

    print(f"grader: {Path(autograder.__file__).parent}", file=out)
    if os.geteuid() != 0:
        problems.append("run_autograder must run as root (Gradescope runs it as root)")
    try:
        settings = _settings(root)
        source = read(root / "source" / "notebook" / f"{settings.notebook}.ipynb")
        points = max_points(source)
        print(
            f"notebook {settings.notebook}: {len(points)} graded cells, {sum(points.values()):g} points, "
            f"visibility {settings.visibility}",
            file=out,
        )
    except (OSError, KeyError, ValueError) as exc:
        problems.append(f"the notebook's tests are missing or unreadable: {exc}")
    for tool in ("prlimit", "setpriv"):
        if shutil.which(tool) is None:
            problems.append(f"`{tool}` (util-linux) is missing")
    if not problems:
        for line in lock_down(root):
            print(line, file=out)
        probe = [
            "setpriv",
            f"--reuid={config.SANDBOX_UID_BASE}",
            f"--regid={config.SANDBOX_UID_BASE}",
            "--clear-groups",
            "--",
            sys.executable,
            "-c",
            "import torch, numpy, matplotlib, IPython; print(torch.__version__)",
        ]
        done = subprocess.run(probe, capture_output=True, text=True, cwd="/", timeout=300)
        if done.returncode != 0:
            problems.append(f"a uid of its own cannot import the notebook's packages: {done.stderr.strip()[-500:]}")
        else:
            print(f"a uid of its own imports torch {done.stdout.strip()}, numpy, matplotlib, IPython", file=out)
        try:
            mode = isolation()
        except SandboxUnavailable as exc:
            problems.append(str(exc))
        else:
            print(
                "bubblewrap works here: student code runs in its sandbox"
                if mode == "bwrap"
                else "bubblewrap cannot run here: student code runs as a uid of its own, without the grader's files",
                file=out,
            )
    for problem in problems:
        print(f"error: {problem}", file=out)
    return 1 if problems else 0


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m autograder.integrations.gradescope")
    parser.add_argument("step", choices=["run", "check"], help="run: grade the submission; check: setup.sh's checks")
    parser.add_argument("--root", type=Path, default=Path(os.environ.get("AUTOGRADER_ROOT", str(ROOT))))
    args = parser.parse_args(argv)
    return run(args.root) if args.step == "run" else check(args.root)


if __name__ == "__main__":
    sys.exit(main())
