"""The notebook formats the course uses: nbgrader's metadata (which cells are solutions, tests, locked;
names and points), its markers and the regions they enclose, the student version of a source notebook
(nbgrader's own generate_assignment steps), and the code a MyST Markdown lesson shows.

The bottom of the package: it imports only the settings (autograder.config), nbformat and nbgrader."""

from __future__ import annotations

import ast
import re
from dataclasses import dataclass
from pathlib import Path

import nbformat
from nbformat import NotebookNode
from nbgrader.preprocessors import (
    CheckCellMetadata,
    ClearHiddenTests,
    ClearMarkScheme,
    ClearOutput,
    ClearSolutions,
    ComputeChecksums,
    LockCells,
)

from autograder import config
from autograder.errors import MissingInput

HIDDEN_BEGIN = "### BEGIN HIDDEN TESTS"
HIDDEN_END = "### END HIDDEN TESTS"
SOLUTION_BEGIN = "### BEGIN SOLUTION"
SOLUTION_END = "### END SOLUTION"
# nbgrader's own rule for its markers (ClearSolutions, ClearHiddenTests): a line that *contains* the delimiter,
# anywhere, is a marker, so "# BEGIN HIDDEN TESTS" or "x = 1  # END SOLUTION" strips a region from the release
# as surely as the project's "### ..." lines. Every scanner of the project reads regions with `marker`, so that
# what nbgrader hides is what the project calls secret; `near_miss_markers` finds the lines that nbgrader reads
# as markers but are not written as the project's (validate_sources refuses them).
NBGRADER_DELIMITERS = (
    (SOLUTION_BEGIN, "BEGIN SOLUTION"),
    (SOLUTION_END, "END SOLUTION"),
    (HIDDEN_BEGIN, "BEGIN HIDDEN TESTS"),
    (HIDDEN_END, "END HIDDEN TESTS"),
)
# Inside a hidden-test region: what follows PROBE runs with the student's code, what follows JUDGE only in
# the judge; what comes before PROBE (the test's inputs, built from seeds) runs in both.
PROBE_MARK = "### PROBE"
JUDGE_MARK = "### JUDGE"
# The first line of a locked cell that holds the course's own code (coursetools.release fills it in).
PROVIDED_HEADER = "# Provided by the course:"
# The first line of a notebook's one locked, ungraded cell of judge helpers: code that several judges of the
# notebook share (references computed from torch's own modules). Its body is all hidden: the student notebook
# keeps only its comments, the kernel runs only those, and every judge of the notebook starts with the body.
JUDGE_HELPERS_HEADER = "# Judge helpers (hidden):"


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


def marker(line: str) -> str | None:
    """The marker (SOLUTION_BEGIN, SOLUTION_END, HIDDEN_BEGIN or HIDDEN_END) nbgrader reads this line as, or None."""
    for canonical, delimiter in NBGRADER_DELIMITERS:
        if delimiter in line:
            return canonical
    return None


def near_miss_markers(source: str) -> list[str]:
    """Lines that nbgrader reads as a marker but that are not exactly one of the project's marker lines."""
    return [line for line in source.splitlines() if (found := marker(line)) and line.strip() != found]


def region_lines(source: str, begin: str, end: str, inside: bool = True) -> list[str]:
    """The lines of ``source`` inside the ``begin`` ... ``end`` regions (or outside them, ``inside=False``),
    the marker lines themselves left out; markers found by nbgrader's rule (`marker`)."""
    lines, within = [], False
    for line in source.splitlines():
        found = marker(line)
        if found == begin:
            within = True
        elif found == end:
            within = False
        elif within == inside:
            lines.append(line)
    return lines


def is_protected_cell(cell: NotebookNode) -> bool:
    """Cells whose source the grader restores from the source notebook: tests and locked cells."""
    meta = nbgrader_meta(cell)
    return is_test_cell(cell) or (bool(meta.get("locked")) and not meta.get("solution"))


def is_judge_helpers_cell(cell: NotebookNode) -> bool:
    """The notebook's cell of judge helpers (JUDGE_HELPERS_HEADER): locked, code, neither a test nor a solution."""
    meta = nbgrader_meta(cell)
    return (
        cell.get("cell_type") == "code"
        and bool(meta.get("locked"))
        and not meta.get("grade")
        and not meta.get("solution")
        and cell.get("source", "").lstrip().startswith(JUDGE_HELPERS_HEADER)
    )


def test_cells(nb: NotebookNode) -> list[NotebookNode]:
    return [c for c in nb.cells if is_test_cell(c)]


def max_points(nb: NotebookNode) -> dict[str, float]:
    """grade_id -> points of every test cell, in notebook order."""
    return {grade_id(c) or "": float(nbgrader_meta(c).get("points", 0)) for c in test_cells(nb)}


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
        known = ", ".join(notebook_names(solutions_dir)) or "none"
        raise MissingInput(f"no source notebook {path} (the notebooks are {known})")
    return path


# --- MyST Markdown notebooks (the lessons): the code a page shows ------------------------------

_FENCE = re.compile(
    r"^```(\{code-cell\}[^\n]*|python[^\n]*|ipython3?[^\n]*)\n(.*?)^```[ \t]*$", re.MULTILINE | re.DOTALL
)
_CELL_OPTION = re.compile(r"^:[\w-]+:.*$|^---$")
_INCLUDE = re.compile(r"^```\{literalinclude\}[ \t]+(\S+)[ \t]*\n((?::[\w-]+:.*\n)*)", re.MULTILINE)


def without_magics(code: str) -> str:
    """IPython magics and shell lines blanked out (they are not Python)."""
    return "\n".join("" if line.lstrip().startswith(("%", "!")) else line for line in code.splitlines())


def _included(text: str, folder: Path) -> list[str]:
    """The code a page shows with ```{literalinclude}: the named `:pyobject:` of the file, or all of it."""
    shown = []
    for match in _INCLUDE.finditer(text):
        path = (folder / match.group(1)).resolve()
        if not path.is_file():
            continue
        code = path.read_text(encoding="utf-8")
        name = re.search(r"^:pyobject:\s*(\w+)", match.group(2), re.MULTILINE)
        if name is None:
            shown.append(code)
            continue
        try:
            tree = ast.parse(code)
        except SyntaxError:
            continue
        shown += [
            ast.get_source_segment(code, node) or ""
            for node in tree.body
            if getattr(node, "name", None) == name.group(1)
        ]
    return shown


def myst_code(text: str, folder: Path | None = None) -> str:
    """The code a MyST Markdown page shows, as one program: its code cells and Python code blocks in
    order (cell options and magics removed), after the code it includes from files (`folder`: the page's)."""
    blocks = _included(text, folder) if folder is not None else []
    for match in _FENCE.finditer(text):
        body = match.group(2)
        if match.group(1).startswith("{code-cell}"):
            lines = body.splitlines()
            while lines and _CELL_OPTION.match(lines[0]):  # `:tags: [...]` or a `---` option block
                lines.pop(0)
            body = "\n".join(lines)
        blocks.append(without_magics(body))
    return "\n\n".join(blocks)


# --- regions and the student version ---------------------------------------------------------


def _pipeline():
    # The order of nbgrader's GenerateAssignment, without IncludeHeaderFooter,
    # InstantiateTests and SaveCells (they need a course directory and a database).
    return [
        LockCells(),
        ClearSolutions(),
        ClearOutput(),
        CheckCellMetadata(),
        ComputeChecksums(),
        ClearHiddenTests(enforce_metadata=False),  # release_notebook checks instead
        ClearMarkScheme(),
        ComputeChecksums(),
        CheckCellMetadata(),
    ]


def release_notebook(solution: NotebookNode) -> NotebookNode:
    """The student version of one source notebook (the input is not modified)."""
    for index, cell in enumerate(solution.cells):
        # nbgrader's own check, which the pipeline's ClearHiddenTests leaves to us so that the judge-helpers
        # cell, locked and ungraded, may have a hidden body
        hidden = any(marker(line) == HIDDEN_BEGIN for line in cell.get("source", "").splitlines())
        if hidden and not nbgrader_meta(cell).get("grade") and not is_judge_helpers_cell(cell):
            raise RuntimeError(
                f"cell {index}: a hidden test region outside a test cell and the judge-helpers cell "
                f"({JUDGE_HELPERS_HEADER!r}, locked, ungraded)"
            )
    nb = nbformat.from_dict(solution)
    resources: dict = {}
    for preprocessor in _pipeline():
        nb, resources = preprocessor.preprocess(nb, resources)
    return nb


def hidden_test_lines(cell: NotebookNode) -> list[str]:
    """The lines between the hidden-test markers of a test cell or of the judge-helpers cell (what students
    never see)."""
    return region_lines(cell.source, HIDDEN_BEGIN, HIDDEN_END)


def without_hidden_tests(source: str) -> str:
    """A cell's source without its hidden-test regions (markers included): what students see of it, and what
    the kernel runs of the judge-helpers cell."""
    return "\n".join(region_lines(source, HIDDEN_BEGIN, HIDDEN_END, inside=False))


def has_hidden_tests(cell: NotebookNode) -> bool:
    """Test cells and the judge-helpers cell: the cells whose hidden-test regions are secret."""
    return is_test_cell(cell) or is_judge_helpers_cell(cell)


def secret_lines(source: NotebookNode, min_length: int = 12) -> set[str]:
    """Hidden test lines (stripped) that students never see anywhere in their notebook.

    Short lines and lines that also appear in the visible part (a shared seed line,
    say) are left out: finding those in a feedback page proves nothing.
    """
    visible = {line.strip() for cell in release_notebook(source).cells for line in cell.source.splitlines()}
    hidden = {line.strip() for cell in source.cells if has_hidden_tests(cell) for line in hidden_test_lines(cell)}
    return {line for line in hidden if len(line) >= min_length and line not in visible}


@dataclass(frozen=True)
class TestParts:
    """A test cell's source, split between the two processes that run it.

    kernel: what runs in the sandboxed kernel, next to the student's code: the visible checks, the hidden
        test's inputs and its probe (which ends by setting `probe` to plain data), markers removed.
    judge: what runs in the judge, a clean interpreter that never sees student code: the same inputs,
        rebuilt there, then the judge's comparisons of `probe` against references it computes itself.
        Empty for a test written in one piece (all of it runs in the kernel, as nbgrader does)."""

    kernel: str
    judge: str

    @property
    def has_judge(self) -> bool:
        return bool(self.judge)


def split_test(source: str) -> TestParts:
    """Split a test cell's source at its PROBE and JUDGE markers (see TestParts)."""
    if PROBE_MARK not in source and JUDGE_MARK not in source:
        return TestParts(source, "")
    kernel: list[str] = []
    judge: list[str] = []
    part = "visible"
    for line in source.splitlines():
        mark = marker(line) or line.strip()
        if mark == HIDDEN_BEGIN:
            part = "inputs"
        elif mark == PROBE_MARK and part == "inputs":
            part = "probe"
        elif mark == JUDGE_MARK and part == "probe":
            part = "judge"
        elif mark == HIDDEN_END:
            part = "visible"
        elif mark in (PROBE_MARK, JUDGE_MARK):
            raise ValueError(f"{mark!r} out of order: a hidden test is inputs, {PROBE_MARK}, then {JUDGE_MARK}")
        else:
            if part in ("visible", "inputs", "probe"):
                kernel.append(line)
            if part in ("inputs", "judge"):
                judge.append(line)
            continue
        # a marker line: keep the line numbers of both parts close to the source's
        kernel.append("")
    if part != "visible" or not any(line.strip() for line in judge):
        raise ValueError(f"a hidden test with {PROBE_MARK} needs {JUDGE_MARK} and {HIDDEN_END} after it")
    return TestParts("\n".join(kernel), "\n".join(judge))


def judge_context(nb: NotebookNode) -> str:
    """The course's code a judge starts from: the notebook's setup cell (its first code cell: imports, device)
    and its provided cells (`# Provided by the course: ...`), when locked, then the hidden body of its
    judge-helpers cell (`# Judge helpers (hidden): ...`, from solutions/). Never a student's cell, and never
    a locked cell that calls the student's code."""
    code_cells = [cell for cell in nb.cells if cell.get("cell_type") == "code"]
    chosen = [
        cell.source
        for position, cell in enumerate(code_cells)
        if is_protected_cell(cell)
        and not is_test_cell(cell)
        and (position == 0 or cell.source.lstrip().startswith(PROVIDED_HEADER))
    ]
    chosen += ["\n".join(hidden_test_lines(cell)) for cell in code_cells if is_judge_helpers_cell(cell)]
    return "\n\n".join(chosen)


def solution_region_lines(cell: NotebookNode) -> list[str]:
    """The lines between the solution markers of a solution cell."""
    return region_lines(cell.source, SOLUTION_BEGIN, SOLUTION_END)
