"""Shared fixtures: grading runs are expensive (a kernel per submission), so each
set of submissions is graded once per test session and inspected by many tests."""

from __future__ import annotations

import io
import os
from pathlib import Path

import pytest

from autograder.grading.grade import Options, grade
from autograder.store.gradebook import ensure_tools_on_path
from book_build import BookBuild, build_book
from chromium import CHROMIUM_ARGS, chromium_or_skip
from coursetools import samples
from coursetools.samples import catalogue_submissions, untouched_release, write_submission
from lesson_page import visible_text

# nbgrader runs `alembic` by name; tests may be started without activating the venv.
ensure_tools_on_path()

NOTEBOOK = "02_dot_product_attention"


def grade_quietly(submissions: Path, **options) -> tuple[dict, str]:
    """Grade a folder; return ({student: Result}, the progress output)."""
    out = io.StringIO()
    results = grade(submissions, Options(**options), out=out)
    return {r.student: r for r in results}, out.getvalue()


def catalogued_notebooks() -> list[str]:
    """Notebooks that have a catalogue of implementations (tests/implementations/<notebook>/).

    CATALOGUES=07,08 in the environment keeps only the notebooks whose names start with those
    prefixes (a maintainer working on one chapter); CI sets nothing and grades every catalogue.
    """
    only = [prefix.strip() for prefix in os.environ.get("CATALOGUES", "").split(",") if prefix.strip()]
    return samples.catalogued_notebooks(only)


def catalogue_student(notebook: str, label: str) -> str:
    """One student per (notebook, implementation), so that every chapter is graded in one run."""
    return f"{notebook.split('_')[0]}-{label}"


@pytest.fixture(scope="session")
def catalogue_dir(tmp_path_factory) -> Path:
    """One student per implementation file of every catalogued notebook, plus each notebook's
    reference solution and untouched release."""
    root = tmp_path_factory.mktemp("catalogue")
    for notebook in catalogued_notebooks():
        for label, nb, _ in catalogue_submissions(notebook):
            write_submission(nb, root / catalogue_student(notebook, label) / f"{notebook}.ipynb")
        write_submission(
            untouched_release(notebook), root / catalogue_student(notebook, "released") / f"{notebook}.ipynb"
        )
    return root


def _by_notebook(results: list) -> dict:
    """{notebook: {label: Result}} keeping only each student's own notebook."""
    out: dict = {}
    for result in results:
        prefix, label = result.student.split("-", 1)
        if result.notebook.split("_")[0] == prefix:
            out.setdefault(result.notebook, {})[label] = result
    return out


@pytest.fixture(scope="session")
def catalogue_workdir(tmp_path_factory) -> Path:
    """The work dir of the `catalogues` run (records and executed notebooks, for the report)."""
    return tmp_path_factory.mktemp("grading-full")


@pytest.fixture(scope="session")
def catalogues(catalogue_dir, catalogue_workdir) -> dict:
    """Every catalogue submission graded with the hidden tests, all chapters in one run."""
    results = grade(
        catalogue_dir, Options(workdir=catalogue_workdir, notebooks=catalogued_notebooks()), out=io.StringIO()
    )
    return _by_notebook(results)


@pytest.fixture(scope="session")
def catalogues_visible_only(catalogue_dir, tmp_path_factory) -> dict:
    """The same submissions graded against the released notebooks: visible self-checks only."""
    visible_source = tmp_path_factory.mktemp("visible-source")
    for notebook in catalogued_notebooks():
        write_submission(untouched_release(notebook), visible_source / f"{notebook}.ipynb")
    results = grade(
        catalogue_dir,
        Options(
            workdir=tmp_path_factory.mktemp("grading-visible"),
            solutions_dir=visible_source,
            notebooks=catalogued_notebooks(),
        ),
        out=io.StringIO(),
    )
    return _by_notebook(results)


@pytest.fixture(scope="session")
def catalogue(catalogues) -> dict:
    """Chapter 02's catalogue results, {label: Result} (used by the grading tests)."""
    return catalogues[NOTEBOOK]


# --- the built book, a lesson page, the browser: shared by the book, lesson and browser tests ---------


@pytest.fixture(scope="module")
def book() -> BookBuild:
    """The website, built once per test session (tests/support/book_build.py)."""
    build = build_book()
    assert build.returncode == 0, build.failure()
    return build


@pytest.fixture(scope="module")
def lesson_html(book, request) -> str:
    """The HTML of the page the test module names in `LESSON` ("chapters/NN_name.html")."""
    lesson = request.module.LESSON
    path = book.html_dir / lesson
    assert path.is_file(), f"{lesson} was not built (is {lesson.removesuffix('.html')} in _toc.yml?)"
    return path.read_text(encoding="utf8")


@pytest.fixture(scope="module")
def text(lesson_html) -> str:
    """The page's visible text, tags removed, entities decoded, whitespace collapsed."""
    return visible_text(lesson_html)


@pytest.fixture(scope="module")
def browser():
    """Debian's Chromium driven by Playwright (never `playwright install`), one per test module."""
    executable = chromium_or_skip()
    sync_api = pytest.importorskip("playwright.sync_api", reason="playwright is not installed (pip install -e .[dev])")
    with sync_api.sync_playwright() as playwright:
        launched = playwright.chromium.launch(executable_path=str(executable), args=CHROMIUM_ARGS, headless=True)
        try:
            yield launched
        finally:
            launched.close()


# --- markers: what a test needs, so a maintainer can run a part (`make test-fast`) -------------------
# Declared in pyproject.toml (--strict-markers). Each test module marks what its own tests run (`pytestmark` at
# module level, or a mark on the tests that grade); the marks that follow from a fixture are given here, in one
# place: a test that uses the built book is `book`, one that drives Chromium is `browser`.
FIXTURE_MARKERS = {"book": "book", "lesson_html": "book", "public_site": "book", "browser": "browser"}


def pytest_collection_modifyitems(items):
    for item in items:
        fixtures = getattr(item, "fixturenames", ())
        for name in sorted({mark for fixture, mark in FIXTURE_MARKERS.items() if fixture in fixtures}):
            item.add_marker(getattr(pytest.mark, name))
