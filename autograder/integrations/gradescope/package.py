"""The autograder zip of one notebook, built on the instructor's machine.

The zip holds no more than this notebook needs: `grader/autograder/` (the grader's .py files), `notebook/<name>.ipynb`
(the source notebook with its solution regions emptied and its outputs cleared: its tests, hidden ones included,
and its locked cells; an answer put back for a missing one comes from the released version, which is the same
for both), `requirements.txt` (the pins of pyproject.toml the grader needs), `gradescope.json` (the notebook,
limits, visibility) and the two scripts.
"""

from __future__ import annotations

import json
import os
import zipfile
from pathlib import Path

import nbformat
from nbformat import NotebookNode

import autograder
from autograder import config
from autograder.errors import InputError
from autograder.integrations.gradescope.settings import SETTINGS, VISIBILITY, Settings, gradescope_limits
from autograder.model.files import pinned_requirements
from autograder.model.notebooks import (
    SOLUTION_BEGIN,
    SOLUTION_END,
    is_solution_cell,
    marker,
    read,
    release_notebook,
    source_notebook,
)
from autograder.model.records import Limits

# What the grader's process needs on Gradescope's image (the pins of pyproject.toml).
REQUIREMENTS = ("torch", "numpy", "matplotlib", "ipykernel", "nbformat", "nbgrader")
TORCH_CPU_INDEX = "https://download.pytorch.org/whl/cpu"

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
    return pinned_requirements(REQUIREMENTS, "autograder gradescope", root)


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
    grader = Path(autograder.__file__).resolve().parent
    for path in sorted(grader.rglob("*.py")):
        if "__pycache__" not in path.parts:
            members[f"grader/autograder/{path.relative_to(grader).as_posix()}"] = (path.read_bytes(), 0o644)
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
