"""Build the notebook to grade by aligning a submission with the released notebook.

A submission's nbgrader metadata is written by the student's tools and can be lost
(some editors drop it), copied (copy-paste keeps it), or edited by hand. So it is a
hint, never the truth: every submitted cell is matched against the *released*
notebook, the one the student started from, and the notebook to execute is that
notebook's skeleton filled in with what the student wrote.

Two guarantees follow from where each cell comes from:

- test and locked cells always come from the source (solutions/) notebook, with their
  hidden tests and the source's nbgrader metadata, so a student can neither weaken a
  test nor change its points;
- anything put back in place of an answer comes from the *released* notebook (the
  `raise NotImplementedError()` stub): the instructor's solution is never run on a
  student's behalf, so deleting an answer cell cannot earn its points.

How a submitted cell is recognised, in order (each pass only sees what the earlier
passes left):

1. by nbgrader grade_id (unique across the course, so a cell from another notebook never
   matches);
2. by cell id, for cells that carry no grade_id at all (ids are not unique across
   notebooks, and a cell whose grade_id names no cell of this notebook comes from
   elsewhere or was relabelled);
3. by content: a test, locked or prompt cell whose whitespace-normalised source equals
   the released one;
4. by position, for answer cells only (their content is the student's own): the
   student's cells between the recognised neighbours of the answer slot.

The output follows the released order. Everything the student wrote that matches
nothing is kept and run where it stood, after the recognised cell before it; copies of
an answer run right after that answer; a repeated test or locked cell with nothing of
the student's in it is dropped. Kept cells lose all their metadata (no nbgrader role,
no tags that change how a cell runs). `align` is pure: no execution, no I/O, and the
same input always gives the same notebook and the same repairs.
"""

from __future__ import annotations

import ast
import copy
import re
from dataclasses import dataclass, field

import nbformat
from nbformat import NotebookNode

from autograder import config
from autograder.errors import UsageError

ANSWER, TEST, LOCKED, PROMPT = "answer", "test", "locked", "prompt"
CELL_TYPES = ("code", "markdown", "raw")
# Lines of a released answer stub that say nothing about which answer it is.
STUB_FILLER = {"# YOUR CODE HERE", "raise NotImplementedError()", "raise NotImplementedError"}
_VALID_ID = re.compile(r"^[a-zA-Z0-9_-]{1,64}$")  # nbformat 4.5's pattern for cell ids

NOTHING_RECOGNISED = "no cell of the released notebook was recognised in this submission (is it another notebook?)"
REORDERED = "cells were reordered; graded in the released order"


@dataclass
class Aligned:
    """The notebook to execute and what had to be done to the submission to get it."""

    notebook: NotebookNode  # nbformat v4.5, outputs cleared, valid
    repairs: list[str]  # one sentence each, for the instructor and the student
    recognised: int  # released cells found in the submission; 0: not this notebook at all


@dataclass(frozen=True)
class _Slot:
    """One cell of the released notebook, with its source counterpart."""

    index: int
    kind: str  # ANSWER, TEST, LOCKED or PROMPT (decided by the source's metadata)
    released: NotebookNode
    source: NotebookNode
    grade_id: str | None
    cell_id: str | None
    visible: str  # normalised released source: what a student who did not touch it has

    @property
    def protected(self) -> bool:
        """Test and locked cells: always run as the source has them."""
        return self.kind in (TEST, LOCKED)

    @property
    def name(self) -> str:
        """How repairs name the cell: by grade_id (every nbgrader cell has one)."""
        return repr(self.grade_id or self.cell_id or f"#{self.index + 1}")

    @property
    def label(self) -> str:
        return f"{self.kind} cell {self.name}" if self.kind != PROMPT else f"cell {self.name}"


@dataclass(frozen=True)
class _Cell:
    """One submitted cell, read defensively: any field may be missing or malformed."""

    index: int
    cell_type: str
    source: str
    cell_id: str | None
    nbgrader: dict
    normalised: str

    @property
    def grade_id(self) -> str | None:
        gid = self.nbgrader.get("grade_id")
        return gid if isinstance(gid, str) and gid else None


@dataclass
class _Matching:
    """Which submitted cell fills which released slot, and how it was found."""

    cell_of: dict[int, int] = field(default_factory=dict)  # slot index -> cell index
    slot_of: dict[int, int] = field(default_factory=dict)  # cell index -> slot index
    how: dict[int, str] = field(default_factory=dict)  # slot index -> grade_id, id, content, position
    duplicate_of: dict[int, int] = field(default_factory=dict)  # cell index -> slot it also claimed

    def claim(self, slot: _Slot, cell: _Cell, how: str) -> None:
        self.cell_of[slot.index] = cell.index
        self.slot_of[cell.index] = slot.index
        self.how[slot.index] = how

    def taken(self, cell: _Cell) -> bool:
        return cell.index in self.slot_of or cell.index in self.duplicate_of


def normalise(text: str) -> str:
    """Source compared modulo trailing spaces and surrounding blank lines (editors add both)."""
    lines = [line.rstrip() for line in text.replace("\r\n", "\n").replace("\r", "\n").split("\n")]
    while lines and not lines[0]:
        lines.pop(0)
    while lines and not lines[-1]:
        lines.pop()
    return "\n".join(lines)


def _nbgrader(cell: dict) -> dict:
    metadata = cell.get("metadata")
    meta = metadata.get("nbgrader") if isinstance(metadata, dict) else None
    return meta if isinstance(meta, dict) else {}


def _kind(cell: NotebookNode) -> str:
    meta = _nbgrader(cell)
    if meta.get("solution"):
        return ANSWER
    if meta.get("grade") and cell.get("cell_type") == "code":
        return TEST
    if meta.get("locked") or meta.get("grade") or meta.get("task"):
        return LOCKED
    return PROMPT


class ReleaseMismatch(UsageError, ValueError):
    """The released notebook is not the release of its solutions/ source (a source edited since `make release`,
    or a released file edited by hand): a problem of the course's sources, never of a submission."""


def _slots(released: NotebookNode, source: NotebookNode) -> list[_Slot]:
    """Pair released and source cells; they must be the same cells in the same order."""
    if len(released.cells) != len(source.cells):
        raise ReleaseMismatch(
            f"the released notebook has {len(released.cells)} cells, its source {len(source.cells)}: run make release"
        )
    slots = []
    for index, (rel, src) in enumerate(zip(released.cells, source.cells, strict=True)):
        gid = _nbgrader(src).get("grade_id")
        if _nbgrader(rel).get("grade_id") != gid or rel.get("id") != src.get("id"):
            raise ReleaseMismatch(f"released cell {index + 1} is not the source's (grade_id {gid!r}): run make release")
        cid = rel.get("id")
        slots.append(_Slot(index, _kind(src), rel, src, gid or None, cid or None, normalise(rel.source)))
    return slots


def _read_cell(index: int, cell: object) -> _Cell:
    if not isinstance(cell, dict):
        cell = {}
    cell_type = cell.get("cell_type")
    source = cell.get("source", "")
    if isinstance(source, list):  # a notebook that did not go through nbformat.read
        source = "".join(str(part) for part in source)
    elif not isinstance(source, str):
        source = "" if source is None else str(source)
    cell_id = cell.get("id")
    return _Cell(
        index=index,
        cell_type=cell_type if cell_type in CELL_TYPES else "raw",
        source=source,
        cell_id=cell_id if isinstance(cell_id, str) and cell_id else None,
        nbgrader=_nbgrader(cell),
        normalised=normalise(source),
    )


def _submitted_cells(submitted: NotebookNode) -> list[_Cell]:
    cells = submitted.get("cells") if isinstance(submitted, dict) else None
    return [_read_cell(i, c) for i, c in enumerate(cells if isinstance(cells, list) else [])]


def _preferred(slot: _Slot, group: list[_Cell]) -> _Cell:
    """The one of several cells naming the same slot that fills it; the others are copies.

    For a test or locked cell the untouched copy wins (then the one with the original
    id): a copy the student filled with code is then kept and run, not overwritten.
    For an answer the first cell of the right type wins, and the copies run right after
    it in the submitted order: what the student defined last is what the tests use, as
    when they run the notebook top to bottom.
    """
    if slot.protected:
        for good in (lambda c: c.normalised == slot.visible, lambda c: c.cell_id == slot.cell_id):
            hits = [c for c in group if good(c)]
            if hits:
                return hits[0]
        return group[0]
    right_type = [c for c in group if c.cell_type == slot.source.cell_type]
    return (right_type or group)[0]


def _claim_groups(matching: _Matching, slots: list[_Slot], groups: dict[int, list[_Cell]], how: str) -> None:
    for slot_index in sorted(groups):
        slot, group = slots[slot_index], groups[slot_index]
        winner = None if slot_index in matching.cell_of else _preferred(slot, group)
        if winner is not None:
            matching.claim(slot, winner, how)
        for cell in group:
            if cell is not winner:
                matching.duplicate_of[cell.index] = slot_index


def _stub_signature(slot: _Slot) -> set[str]:
    """Lines of the released stub that identify the answer (its def line, its docstring)."""
    lines = {line.strip() for line in slot.released.source.splitlines()}
    return {line for line in lines if line and line not in STUB_FILLER}


def _match(slots: list[_Slot], cells: list[_Cell]) -> _Matching:
    """Recognise the submitted cells; each pass only sees what the earlier ones left."""
    matching = _Matching()
    _match_grade_ids(matching, slots, cells)
    _match_cell_ids(matching, slots, cells)
    _match_content(matching, slots, cells)
    # Position only once something else ties the submission to this notebook: in a
    # foreign notebook any code cell would "fit" an answer slot.
    if matching.cell_of:
        _match_positions(matching, slots, cells)
    return matching


def _known_grade_ids(slots: list[_Slot]) -> dict[str, _Slot]:
    return {s.grade_id: s for s in slots if s.grade_id}


def _match_grade_ids(matching: _Matching, slots: list[_Slot], cells: list[_Cell]) -> None:
    """First, by grade_id: the one name unique across the whole course."""
    by_grade_id = _known_grade_ids(slots)
    groups: dict[int, list[_Cell]] = {}
    for cell in cells:
        if cell.grade_id in by_grade_id:
            groups.setdefault(by_grade_id[cell.grade_id].index, []).append(cell)
    _claim_groups(matching, slots, groups, "grade_id")


def _match_cell_ids(matching: _Matching, slots: list[_Slot], cells: list[_Cell]) -> None:
    """Then by cell id, for cells with no grade_id (a foreign grade_id means another cell).

    Markdown prompts are left to their content: ids like "intro" recur across
    notebooks, and a prompt is never run anyway.
    """
    by_id = {s.cell_id: s for s in slots if s.cell_id and (s.kind != PROMPT or s.released.cell_type == "code")}
    groups: dict[int, list[_Cell]] = {}
    for cell in cells:
        if not matching.taken(cell) and cell.grade_id is None and cell.cell_id in by_id:
            groups.setdefault(by_id[cell.cell_id].index, []).append(cell)
    _claim_groups(matching, slots, groups, "id")


def _match_content(matching: _Matching, slots: list[_Slot], cells: list[_Cell]) -> None:
    """Then test, locked and prompt cells by their text (an answer's text is the student's).

    A cell repeating a test or locked cell that is already filled is a duplicate.
    """
    by_grade_id = _known_grade_ids(slots)
    by_content: dict[str, list[_Slot]] = {}
    for slot in slots:
        if slot.kind != ANSWER and slot.visible:
            by_content.setdefault(slot.visible, []).append(slot)
    for cell in cells:
        if matching.taken(cell) or cell.grade_id in by_grade_id or not cell.normalised:
            continue
        same = by_content.get(cell.normalised, [])
        free = [s for s in same if s.index not in matching.cell_of]
        protected = [s for s in same if s.protected]
        if free:
            matching.claim(free[0], cell, "content")
        elif protected:
            matching.duplicate_of[cell.index] = protected[0].index


def _match_positions(matching: _Matching, slots: list[_Slot], cells: list[_Cell]) -> None:
    """Last, each empty answer slot takes a cell lying between its recognised neighbours.

    Among the cells there, the one of the answer's type sharing most lines with the
    released stub (its def line, its docstring) is the answer; the others stay
    ordinary cells around it. A cell of another type (an answer toggled to markdown)
    only counts when it shares such a line.
    """
    by_grade_id = _known_grade_ids(slots)
    released_ids = {s.cell_id for s in slots if s.cell_id}
    for slot in slots:
        if slot.kind != ANSWER or slot.index in matching.cell_of:
            continue
        before = [matching.cell_of[i] for i in range(slot.index) if i in matching.cell_of]
        after = [matching.cell_of[i] for i in range(slot.index + 1, len(slots)) if i in matching.cell_of]
        low, high = (before[-1] if before else -1), (after[0] if after else len(cells))
        signature = _stub_signature(slot)

        def score(cell: _Cell) -> int:
            return len(signature & {line.strip() for line in cell.source.splitlines()})  # noqa: B023 - used in this iteration only

        def candidate(cell: _Cell) -> bool:
            if cell.index in matching.slot_of:
                return False
            if cell.index in matching.duplicate_of:
                # A copy of another answer that now holds this answer's def line: the
                # student pasted a cell (metadata and all) and rewrote it as this answer.
                return slots[matching.duplicate_of[cell.index]].kind == ANSWER and score(cell) > 0
            return cell.grade_id not in by_grade_id and (
                cell.cell_id not in released_ids or cell.cell_id == slot.cell_id  # noqa: B023 - this iteration only
            )

        candidates = [c for c in cells[low + 1 : high] if candidate(c)]
        pool = [c for c in candidates if c.cell_type == slot.source.cell_type] or [
            c for c in candidates if score(c) > 0
        ]
        if pool:
            best = max(score(c) for c in pool)
            chosen = next(c for c in pool if score(c) == best)
            matching.duplicate_of.pop(chosen.index, None)
            matching.claim(slot, chosen, "position")


def _flags(meta: dict) -> tuple:
    """The nbgrader fields that decide grading; checksums and schema versions are ignored."""
    grade = bool(meta.get("grade"))
    try:
        points = float(meta.get("points") or 0) if grade else 0.0
    except (TypeError, ValueError):
        points = float("nan")  # never equal: an unreadable points value is a change
    flags = tuple(bool(meta.get(key)) for key in ("solution", "locked", "task"))
    return (meta.get("grade_id"), grade, points, *flags)


def _metadata_changed(slot: _Slot, cell: _Cell) -> bool:
    """Grading metadata edited (not merely lost: tools that drop metadata are no offence)."""
    return bool(cell.nbgrader) and _flags(cell.nbgrader) != _flags(_nbgrader(slot.released))


def _new_cell(
    cell_type: str, source: str, metadata: dict, cell_id: str, like: NotebookNode | None = None
) -> NotebookNode:
    """A fresh cell: code without outputs or execution count.

    Attachments are copied only from our own notebooks (`like`): a student's could be
    malformed and make the notebook invalid, and markdown is not graded anyway.
    """
    make = {
        "code": nbformat.v4.new_code_cell,
        "markdown": nbformat.v4.new_markdown_cell,
        "raw": nbformat.v4.new_raw_cell,
    }
    cell = make[cell_type](source=source, metadata=copy.deepcopy(metadata))
    cell["id"] = cell_id
    if like is not None and cell_type != "code" and like.get("cell_type") == cell_type and like.get("attachments"):
        cell["attachments"] = copy.deepcopy(like["attachments"])
    return cell


def _copy_of(cell: NotebookNode, cell_id: str) -> NotebookNode:
    return _new_cell(cell["cell_type"], cell.source, cell.get("metadata", {}), cell_id, like=cell)


def _fill(slot: _Slot, cell: _Cell | None, how: str | None, cell_id: str) -> tuple[NotebookNode, list[str]]:
    """The cell that goes in one released slot, and the repairs that says so."""
    if slot.protected:
        restored = _copy_of(slot.source, cell_id)
        did = "run" if slot.source.cell_type == "code" else "put back"
        if cell is None:
            return restored, [f"{slot.label} was missing and was put back"]
        if cell.normalised != slot.visible:
            return restored, [f"{slot.label} was modified; the original was {did}"]
        if cell.cell_type != slot.source.cell_type:
            return restored, [f"{slot.label} was changed to {cell.cell_type}; the original was {did}"]
        if _metadata_changed(slot, cell):
            return restored, [f"{slot.label} had its grading metadata changed; the original was {did}"]
        return restored, []

    if slot.kind == ANSWER:
        if cell is None:
            stub = _copy_of(slot.released, cell_id)
            stub.metadata = copy.deepcopy(slot.source.get("metadata", {}))
            return stub, [
                f"{slot.label} was missing; the released stub was run (it raises NotImplementedError), "
                "so the tests that need it lose their points"
            ]
        repairs = []
        if how == "position" and cell.grade_id:
            other = f"carried the grader metadata of cell {cell.grade_id!r}"
            repairs.append(f"{slot.label} {other}; the cell in its place was taken as the answer")
        elif how == "position":
            repairs.append(f"{slot.label} had lost its grader metadata; the cell in its place was taken as the answer")
        elif _metadata_changed(slot, cell):
            repairs.append(f"{slot.label} had its grading metadata changed; the original metadata was used")
        if cell.cell_type != slot.source.cell_type:
            repairs.append(f"{slot.label} had been turned into {cell.cell_type}; it was run as {slot.source.cell_type}")
        # The student's code, the source's metadata (so the cell's role cannot be edited).
        return _new_cell(slot.source.cell_type, cell.source, slot.source.get("metadata", {}), cell_id), repairs

    # A prompt: text, or (rarely) an unlocked code cell the student may edit.
    if cell is None:
        restored = _copy_of(slot.released, cell_id)
        runs = slot.released.cell_type == "code"
        return restored, ([f"{slot.label} was missing; the released version was run"] if runs else [])
    if slot.released.cell_type == "code":
        metadata = slot.source.get("metadata", {})
        return _new_cell(cell.cell_type, cell.source, metadata, cell_id), []
    return _copy_of(slot.released, cell_id), []  # matched by content: the same text


def _defined_names(code: str) -> set[str]:
    """Top-level functions and classes a cell defines (none if it is not valid Python)."""
    try:
        tree = ast.parse(code)
    except (SyntaxError, ValueError):
        return set()
    return {node.name for node in tree.body if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef))}


def _defined_elsewhere(
    slot: _Slot, stub: NotebookNode, repairs: list[str], kept: list[_Cell]
) -> tuple[NotebookNode, list[str]]:
    """An answer slot left empty because the student wrote the answer in a cell of their own.

    Running the released stub there would redefine the student's function with one that
    raises NotImplementedError, so the slot gets a comment instead and the student's cell
    is what the tests use (wherever it stands: if it comes after the tests, they fail as
    they would in the student's own top-to-bottom run).
    """
    wanted = _defined_names(slot.released.source)
    if not wanted:
        return stub, repairs
    owners = [c for c in kept if wanted & _defined_names(c.source)]
    if not owners:
        return stub, repairs
    names = ", ".join(sorted(wanted & set().union(*(_defined_names(c.source) for c in owners))))
    stub.source = f"# {slot.label} was not found here; {names} from another cell of the submission is used"
    return stub, [
        f"{slot.label} was missing, but the submission defines {names} in another cell, which was run instead"
    ]


def _duplicate_repairs(slot: _Slot, copies: list[_Cell]) -> tuple[set[int], list[str]]:
    """Rule for a second cell claiming a slot: (cells to drop, repairs)."""
    if not copies:
        return set(), []
    if slot.kind != ANSWER and not slot.protected:
        return set(), []  # a copied prompt is harmless text
    if slot.kind == ANSWER:
        times = len(copies) + 1
        return set(), [
            f"{slot.label} appears {times} times; the copies were run right after it, in the submitted order"
        ]
    drop = {c.index for c in copies if c.normalised in (slot.visible, "")}  # nothing of the student's in them
    repairs = []
    if drop:
        repairs.append(f"a copy of {slot.label} was removed" + ("; the test runs once" if slot.kind == TEST else ""))
    if len(drop) < len(copies):
        repairs.append(f"a copy of {slot.label} holding other code was run as an ordinary cell (not graded)")
    return drop, repairs


class _Ids:
    """Unique, valid, deterministic cell ids: the given one when possible, else cell-<n>."""

    def __init__(self) -> None:
        self.used: set[str] = set()
        self.counter = 0

    def take(self, wanted: str | None) -> str:
        if wanted and _VALID_ID.match(wanted) and wanted not in self.used:
            self.used.add(wanted)
            return wanted
        while True:
            self.counter += 1
            candidate = f"cell-{self.counter}"
            if candidate not in self.used:
                self.used.add(candidate)
                return candidate


def align(submitted: NotebookNode, released: NotebookNode, source: NotebookNode) -> Aligned:
    """The notebook to grade: the released skeleton, filled with the student's cells.

    `source` is the solutions/ notebook, `released` the student version made from it by
    `autograder.model.notebooks.release_notebook`. Never raises for anything in `submitted`;
    raises ReleaseMismatch (a UsageError) when `released` is not the release of `source` (run `make release`).
    """
    slots = _slots(released, source)
    cells = _submitted_cells(submitted)
    matching = _match(slots, cells)
    recognised = len(matching.cell_of)

    copies: dict[int, list[_Cell]] = {}
    for cell in cells:
        if cell.index in matching.duplicate_of:
            copies.setdefault(matching.duplicate_of[cell.index], []).append(cell)
    dropped: set[int] = set()
    duplicate_repairs: dict[int, list[str]] = {}
    for slot in slots:
        drop, slot_repairs = _duplicate_repairs(slot, copies.get(slot.index, []))
        dropped |= drop
        duplicate_repairs[slot.index] = slot_repairs

    # Every unmatched cell follows the recognised cell that preceded it in the submission,
    # except copies of an answer: they follow the answer itself, so that what the student
    # defined last is what the answer's tests use.
    following: dict[int | None, list[_Cell]] = {}
    anchor: int | None = None
    for cell in cells:
        if cell.index in matching.slot_of:
            anchor = matching.slot_of[cell.index]
        elif cell.index in matching.duplicate_of and slots[matching.duplicate_of[cell.index]].kind == ANSWER:
            following.setdefault(matching.duplicate_of[cell.index], []).append(cell)
        elif cell.index not in dropped:
            following.setdefault(anchor, []).append(cell)

    ids = _Ids()
    slot_ids = [ids.take(slot.cell_id) for slot in slots]  # released ids first: they name the graded cells

    def ordinary(cell: _Cell) -> NotebookNode:
        # No student metadata at all: no nbgrader role, no tags that change how it runs.
        return _new_cell(cell.cell_type, cell.source, {}, ids.take(cell.cell_id))

    out = [ordinary(c) for c in following.get(None, [])]
    repairs: list[str] = []
    claimed_order = [matching.slot_of[c.index] for c in cells if c.index in matching.slot_of]
    if recognised and claimed_order != sorted(claimed_order):
        repairs.append(REORDERED)
    kept_code = [c for group in following.values() for c in group if c.cell_type == "code"]
    for slot in slots:
        index = matching.cell_of.get(slot.index)
        found = None if index is None else cells[index]
        filled, slot_repairs = _fill(slot, found, matching.how.get(slot.index), slot_ids[slot.index])
        if found is None and slot.kind == ANSWER:
            filled, slot_repairs = _defined_elsewhere(slot, filled, slot_repairs, kept_code)
        out.append(filled)
        out.extend(ordinary(c) for c in following.get(slot.index, []))
        repairs += slot_repairs + duplicate_repairs[slot.index]
    if not recognised:
        repairs = [NOTHING_RECOGNISED]  # rather than "... was missing" for every cell of the notebook

    nb = nbformat.v4.new_notebook(cells=out, metadata=copy.deepcopy(source.get("metadata", {})))
    nb.metadata["kernelspec"] = {"display_name": "Python 3", "language": "python", "name": config.KERNEL_NAME}
    return Aligned(notebook=nb, repairs=repairs, recognised=recognised)
