"""Shared fixtures: grading runs are expensive (a kernel per submission), so each
set of submissions is graded once per test session and inspected by many tests."""

from __future__ import annotations

import io
from pathlib import Path

import pytest

from autograder.grade import Options, grade
from autograder.gradebook import ensure_tools_on_path
from autograder.samples import catalogue_submissions, untouched_release, write_submission

# nbgrader runs `alembic` by name; tests may be started without activating the venv.
ensure_tools_on_path()

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
    for label, nb, _ in catalogue_submissions(NOTEBOOK):
        write_submission(nb, root / label / f"{NOTEBOOK}.ipynb")
    write_submission(untouched_release(NOTEBOOK), root / "released" / f"{NOTEBOOK}.ipynb")
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
    write_submission(untouched_release(NOTEBOOK), visible_source / f"{NOTEBOOK}.ipynb")
    results, _ = grade_quietly(catalogue_dir, workdir=tmp_path_factory.mktemp("grading-visible"), solutions_dir=visible_source)
    return results
