"""The reporting modules' seams point one way (issue 33, "split along the existing seams"):

- the class report: `report` renders the records `statistics` computes; statistics knows no HTML, page or figure;
- the feedback: `feedback` decides what a student is shown and calls `feedback_page` to make it a page, which turns
  any notebook into one safe page and knows nothing of grades, results or hidden tests; `mathml` (TeX to MathML)
  is below both, and `sanitize` (the one allow-list of elements and attributes, MathML's included, which
  `mathml` applies to every formula it writes) is below everything: it imports no other reporting module.

Read from the code with `ast` (every import, lazy ones included), as tests/test_layout.py reads the layers.
"""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

from book_build import ROOT

REPORTING = ROOT / "autograder" / "reporting"


def imports(module: str, folder: Path = REPORTING) -> set[str]:
    """Every module `<folder>/<module>.py` imports (`from a.b import c`: `a.b` and `a.b.c`)."""
    tree = ast.parse((folder / f"{module}.py").read_text(encoding="utf-8"))
    found = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            found |= {alias.name for alias in node.names}
        elif isinstance(node, ast.ImportFrom) and node.module:
            found |= {node.module} | {f"{node.module}.{alias.name}" for alias in node.names}
    return found


def offending(module: str, forbidden: set[str], folder: Path = REPORTING) -> set[str]:
    """The imports of `module` that are, or are inside, a forbidden module."""
    return {name for name in imports(module, folder) if any(name == f or name.startswith(f + ".") for f in forbidden)}


PAGES = {"autograder.reporting.report", "autograder.reporting.feedback", "autograder.reporting.feedback_page"}
GRADES = {
    "autograder.reporting.feedback",
    "autograder.reporting.report",
    "autograder.reporting.statistics",
    "autograder.reporting.redact",
    "autograder.model.records",
    "autograder.grading",
    "autograder.store",
    "autograder.intake",
}


@pytest.mark.parametrize(
    "module, forbidden",
    [
        ("statistics", PAGES | {"autograder.reporting.sanitize", "autograder.reporting.mathml", "html", "matplotlib"}),
        ("feedback_page", GRADES),
        ("mathml", GRADES | PAGES),
        ("sanitize", GRADES | PAGES | {"autograder.reporting.mathml", "autograder.reporting.similarity"}),
    ],
)
def test_the_lower_module_never_imports_the_upper(module, forbidden):
    assert not offending(module, forbidden), f"{module} imports {offending(module, forbidden)}"


def test_the_upper_modules_do_use_the_lower():
    """The seams are real: the page is made from the records, the feedback by the page."""
    assert "autograder.reporting.statistics" in imports("report")
    assert "autograder.reporting.feedback_page" in imports("feedback")
    assert "autograder.reporting.mathml" in imports("feedback_page")
    assert "autograder.reporting.sanitize" in imports("mathml")


def test_the_check_reads_a_forbidden_import(tmp_path):
    """The checker itself finds a lazy `from x import y` inside a function (what a wrong split would add)."""
    (tmp_path / "probe.py").write_text("def f():\n    from autograder.reporting.report import render\n")
    assert offending("probe", PAGES, tmp_path) == {"autograder.reporting.report", "autograder.reporting.report.render"}
