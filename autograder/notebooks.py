"""Reading nbgrader metadata: which cells are solutions, tests, locked; names and points."""

from __future__ import annotations

from pathlib import Path

import nbformat
from nbformat import NotebookNode

from autograder import config


def nbgrader_meta(cell: NotebookNode) -> dict:
    return cell.get("metadata", {}).get("nbgrader", {}) or {}


def grade_id(cell: NotebookNode) -> str | None:
    return nbgrader_meta(cell).get("grade_id")


def is_test_cell(cell: NotebookNode) -> bool:
    """An autograded test cell: graded, not a solution, code."""
    meta = nbgrader_meta(cell)
    return bool(meta.get("grade")) and not meta.get("solution") and cell.get("cell_type") == "code"


def is_solution_cell(cell: NotebookNode) -> bool:
    return bool(nbgrader_meta(cell).get("solution"))


def is_protected_cell(cell: NotebookNode) -> bool:
    """Cells whose source the grader restores from the source notebook: tests and locked cells."""
    meta = nbgrader_meta(cell)
    return is_test_cell(cell) or (bool(meta.get("locked")) and not meta.get("solution"))


def test_cells(nb: NotebookNode) -> list[NotebookNode]:
    return [c for c in nb.cells if is_test_cell(c)]


def max_points(nb: NotebookNode) -> dict[str, float]:
    """grade_id -> points of every test cell, in notebook order."""
    return {grade_id(c): float(nbgrader_meta(c).get("points", 0)) for c in test_cells(nb)}


def solution_paths(solutions_dir: Path | None = None) -> list[Path]:
    return sorted(Path(solutions_dir or config.SOLUTIONS_DIR).glob("*.ipynb"))


def notebook_names(solutions_dir: Path | None = None) -> list[str]:
    """Names of the released notebooks (file stems), e.g. '02_dot_product_attention'."""
    return [p.stem for p in solution_paths(solutions_dir)]


def read(path: Path) -> NotebookNode:
    return nbformat.read(str(path), as_version=4)


def source_notebook(name: str, solutions_dir: Path | None = None) -> Path:
    path = Path(solutions_dir or config.SOLUTIONS_DIR) / f"{name}.ipynb"
    if not path.exists():
        raise FileNotFoundError(f"no source notebook {path}")
    return path
