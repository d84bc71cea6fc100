"""A cell's final points: the grader's, then any change an instructor made by hand in the gradebook.

`grade` writes each test cell's points twice: into the result record (`grading/results/...json`, with the
messages, repairs and lateness) and into nbgrader's gradebook as the cell's `auto_score`. An instructor who
changes a cell's points, in nbgrader's formgrader or through its API, sets the grade's `manual_score` (and may
add `extra_credit`); nbgrader's score of the cell is then `manual_score` (else `auto_score`) + `extra_credit`.
That is the one source of truth for what a cell is worth: the export reads it from the gradebook, and feedback
and the report read their results through `with_changes`, so the three never disagree. Grading again
(`--force`) rewrites `auto_score` only, so a change by hand survives it. nbgrader records no author or time of
a change; the feedback page says that the points were changed by hand, and from what.
"""

from __future__ import annotations

from dataclasses import dataclass, replace
from pathlib import Path

from autograder import config
from autograder.grading.late import final_score
from autograder.model.records import CellResult, Result
from autograder.store.gradebook import missing_sqlite_file, open_gradebook

Key = tuple[str, str]  # (student, notebook)


@dataclass(frozen=True)
class HandChange:
    """One cell whose points an instructor changed in the gradebook: what the grader gave, what it is now."""

    automatic: float  # the grader's points (auto_score)
    final: float  # manual_score (else auto_score) + extra_credit


def hand_changes(workdir: Path = config.DEFAULT_WORKDIR, db_url: str | None = None) -> dict[Key, dict[str, HandChange]]:
    """{(student, notebook): {cell: change}} for every cell with a manual score or extra credit. No gradebook
    (nothing graded yet), no changes."""
    from nbgrader.api import Grade

    url = config.gradebook_url(workdir, db_url)
    if missing_sqlite_file(url) is not None:
        return {}
    changes: dict[Key, dict[str, HandChange]] = {}
    with open_gradebook(url) as gb:
        changed = gb.db.query(Grade).filter((Grade.manual_score.isnot(None)) | (Grade.extra_credit.isnot(None)))
        for grade in changed:
            automatic = float(grade.auto_score or 0.0)
            given = float(grade.manual_score) if grade.manual_score is not None else automatic
            total = given + float(grade.extra_credit or 0.0)
            if total != automatic:
                key = (grade.student.id, grade.notebook.name)
                changes.setdefault(key, {})[grade.name] = HandChange(automatic, total)
    return changes


def with_changes(result: Result, changes: dict[Key, dict[str, HandChange]]) -> Result:
    """The result with the gradebook's changes by hand: each changed cell's points, a note in its message, the
    score summed again and the late penalty applied to it. A result with no change is returned as it is."""
    cells = changes.get((result.student, result.notebook))
    if not cells:
        return result
    new_cells = []
    for cell in result.cells:
        change = cells.get(cell.grade_id)
        if change is None:
            new_cells.append(cell)
            continue
        said = f"points changed by hand in the gradebook: {change.automatic:g} from the tests, now {change.final:g}"
        message = f"{cell.message} ({said})" if cell.message else said
        new_cells.append(CellResult(cell.grade_id, change.final, cell.max_points, message))
    score = round(sum(cell.points for cell in new_cells), 4)
    late = replace(result.late, final_score=final_score(score, result.late.penalty)) if result.late else None
    return replace(result, cells=new_cells, score=score, late=late)
