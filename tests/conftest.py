"""Shared fixtures: grading runs are expensive (a kernel per submission), so each
set of submissions is graded once per test session and inspected by many tests."""

from __future__ import annotations

import io
import os
import sys
from pathlib import Path

import pytest

# nbgrader runs `alembic` by name; tests may be started without activating the venv.
os.environ["PATH"] = str(Path(sys.executable).parent) + os.pathsep + os.environ.get("PATH", "")

from autograder import config  # noqa: E402
from autograder.grade import Options, grade  # noqa: E402
from autograder.notebooks import read  # noqa: E402
from autograder.release import release_notebook  # noqa: E402
from autograder.samples import implementations, make_submission, write_submission  # noqa: E402

NOTEBOOK = "02_dot_product_attention"


def grade_quietly(submissions: Path, **options) -> tuple[dict, str]:
    """Grade a folder; return ({student: Result}, the progress output)."""
    out = io.StringIO()
    results = grade(submissions, Options(**options), out=out)
    return {r.student: r for r in results}, out.getvalue()


@pytest.fixture(scope="session")
def catalogue_dir(tmp_path_factory) -> Path:
    """One student per implementation file, plus the reference solution and the untouched release."""
    root = tmp_path_factory.mktemp("catalogue")
    for kind in ("wrong", "correct"):
        for impl in implementations(NOTEBOOK, kind):
            write_submission(make_submission(NOTEBOOK, impl.cells), root / f"{kind}-{impl.name}" / f"{NOTEBOOK}.ipynb")
    write_submission(make_submission(NOTEBOOK), root / "solution" / f"{NOTEBOOK}.ipynb")
    write_submission(release_notebook(read(config.SOLUTIONS_DIR / f"{NOTEBOOK}.ipynb")), root / "released" / f"{NOTEBOOK}.ipynb")
    return root


@pytest.fixture(scope="session")
def catalogue(catalogue_dir, tmp_path_factory) -> dict:
    """Every catalogue submission graded with the hidden tests."""
    results, _ = grade_quietly(catalogue_dir, workdir=tmp_path_factory.mktemp("grading-full"))
    return results


@pytest.fixture(scope="session")
def catalogue_visible_only(catalogue_dir, tmp_path_factory) -> dict:
    """The same submissions graded against the released notebook: visible self-checks only."""
    visible_source = tmp_path_factory.mktemp("visible-source")
    write_submission(release_notebook(read(config.SOLUTIONS_DIR / f"{NOTEBOOK}.ipynb")), visible_source / f"{NOTEBOOK}.ipynb")
    results, _ = grade_quietly(catalogue_dir, workdir=tmp_path_factory.mktemp("grading-visible"), solutions_dir=visible_source)
    return results
