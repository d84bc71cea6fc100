"""`grade --dry-run`: what a run would do, said before anything runs.

An instructor who downloads an LMS export at midnight wants to know, before a run of an hour, that the export
holds the class: who handed in what, which file counts for each notebook (and why, when it was renamed or
uploaded twice), what is refused and why, what is late and by how much, and what is already graded and would
be skipped. `grade` decides all of that before it starts a sandbox; a dry run stops there and prints it. The
input is laid out in the work dir as `grade` lays it out (that is how the choices are made), and nothing else
is written: no sandbox starts, no gradebook row or result file changes.
"""

from __future__ import annotations

from collections import Counter
from dataclasses import dataclass

WIDEST_REASON = 100  # characters of a refusal's reason shown in the table (the summary of a real run has it all)


@dataclass(frozen=True)
class Planned:
    """One (student, notebook): the file that counts ("" when none), what the run would do with it, its lateness
    ("" without --deadline), and how the file was matched."""

    student: str
    notebook: str
    file: str
    action: str  # GRADE, SKIP, ZERO or MISSING
    late: str
    note: str  # for ZERO and MISSING the reason first


GRADE = "grade"
SKIP = "skip: graded, unchanged"
ZERO = "0 points"
MISSING = "nothing to grade"


def shorten(reason: str) -> str:
    return reason if len(reason) <= WIDEST_REASON else reason[: WIDEST_REASON - 3] + "..."


def table(rows: list[Planned], deadline: bool) -> list[str]:
    """The plan as aligned columns, one line per (student, notebook), in the order `grade` would take them."""
    header = ["student", "notebook", "file", "would", *(["late"] if deadline else []), "note"]
    cells = [
        [row.student, row.notebook, row.file or "-", row.action, *([row.late or "-"] if deadline else []), row.note]
        for row in rows
    ]
    widths = [max(len(line[i]) for line in [header, *cells]) for i in range(len(header) - 1)]
    lines = []
    for line in [header, *cells]:
        padded = [value.ljust(width) for value, width in zip(line, widths, strict=False)]
        lines.append("  ".join([*padded, line[-1]]).rstrip())
    return lines


def summary(rows: list[Planned]) -> str:
    """One line: how many of each, and that nothing ran."""
    kinds = Counter(row.action for row in rows)
    late = sum(1 for row in rows if row.late and row.late != "on time")
    parts = [
        f"{kinds[GRADE]} would be graded",
        f"{kinds[SKIP]} already graded and unchanged",
        f"{kinds[ZERO]} would get 0 with a reason",
        f"{kinds[MISSING]} with nothing to grade",
    ]
    if any(row.late for row in rows):
        parts.append(f"{late} late")
    return f"Dry run: {', '.join(parts)}. Nothing was run; the gradebook and the results are as they were."
