"""A renamed notebook recognised by its cells: `homework.ipynb` holding exercise 02 is graded as exercise 02.

A file name is what students change most (a download, a rename to "homework"); the cells they keep: Jupyter and
Colab keep each cell's `id`, and nbgrader's `grade_id` travels in the cell's metadata. A file whose name is no
released notebook's is taken as the released notebook whose ids it holds: at least half of that notebook's own ids
(ids that several notebooks share, such as `setup`, count for none), and more of them than of any other notebook's.
The metadata is a hint, not a contract: a file whose ids were dropped is not recognised, and its student is told
that its name is wrong, as before.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from functools import lru_cache

from autograder import config
from autograder.model.notebooks import grade_id, notebook_names, read, source_notebook

ENOUGH = 0.5  # of a notebook's own ids that a file must hold to be taken as that notebook


@dataclass(frozen=True)
class Signature:
    """The ids only this released notebook's cells have."""

    notebook: str
    ids: frozenset[str]


@lru_cache(maxsize=1)
def signatures() -> tuple[Signature, ...]:
    """Each released notebook's own ids: its cells' ids and grade_ids, less those another notebook has too (read
    once per process, from the course's solutions/: the released notebooks have the same cells)."""
    found: dict[str, set[str]] = {}
    for name in notebook_names(config.SOLUTIONS_DIR):
        nb = read(source_notebook(name, config.SOLUTIONS_DIR))
        found[name] = {i for c in nb.cells for i in (c.get("id"), grade_id(c)) if isinstance(i, str) and i}
    shared = {i for name, ids in found.items() for other, more in found.items() if other != name for i in ids & more}
    return tuple(Signature(name, frozenset(ids - shared)) for name, ids in found.items() if ids - shared)


def cell_ids(data: bytes) -> set[str]:
    """The cell ids and grade_ids of a notebook's bytes ({} when they are no notebook: its problem is said
    elsewhere, when it is graded)."""
    try:
        nb = json.loads(data)
    except (ValueError, RecursionError, MemoryError):
        return set()
    cells = nb.get("cells") if isinstance(nb, dict) else None
    ids: set[str] = set()
    for cell in cells if isinstance(cells, list) else []:
        if not isinstance(cell, dict):
            continue
        meta = cell.get("metadata")
        nbgrader = meta.get("nbgrader") if isinstance(meta, dict) else None
        for value in (cell.get("id"), nbgrader.get("grade_id") if isinstance(nbgrader, dict) else None):
            if isinstance(value, str) and value:
                ids.add(value)
    return ids


def recognised(data: bytes, released: list[str]) -> str | None:
    """The notebook of `released` these bytes are, by their cells, or None (no notebook's, or two equally)."""
    ids = cell_ids(data)
    if not ids:
        return None
    shares = sorted(
        ((len(ids & s.ids) / len(s.ids), s.notebook) for s in signatures() if s.notebook in released), reverse=True
    )
    if not shares or shares[0][0] < ENOUGH or len(shares) > 1 and shares[1][0] == shares[0][0]:
        return None
    return shares[0][1]


def recognised_note(notebook: str) -> str:
    """The note of a file taken by its cells: the instructor sees why a file of another name was graded."""
    return f"recognised as {notebook} by its cells (its name is no released notebook's)"
