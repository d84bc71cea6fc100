"""Build submissions from implementation files, for tests, benchmarks and the README demo.

An implementation file (tests/implementations/<notebook>/{wrong,correct}/*.py) holds
the code of one or more solution cells, each introduced by `# cell: <grade_id>`;
solution cells it does not mention get the reference solution. Its docstring may say
`expect-fail: a, b` (the graded cells that must lose their points).

    python -m coursetools.samples OUT   # a demo class: correct, partial, blank, broken, empty, renamed
"""

from __future__ import annotations

import ast
import re
import sys
from dataclasses import dataclass
from pathlib import Path

import nbformat
from nbformat import NotebookNode

from autograder.model.notebooks import (
    SOLUTION_BEGIN,
    SOLUTION_END,
    grade_id,
    is_solution_cell,
    marker,
    read,
    release_notebook,
    source_notebook,
)
from coursetools.layout import IMPLEMENTATIONS_DIR

_CELL_MARK = re.compile(r"^# cell: *([A-Za-z0-9_.-]+) *$", re.MULTILINE)


@dataclass(frozen=True)
class Implementation:
    name: str
    kind: str  # "wrong" or "correct"
    description: str
    cells: dict[str, str]  # grade_id of a solution cell -> its code
    expect_fail: frozenset[str]


def load_implementation(path: Path) -> Implementation:
    text = Path(path).read_text(encoding="utf-8")
    doc = ast.get_docstring(ast.parse(text)) or ""
    expect = re.search(r"^expect-fail:(.*)$", doc, re.MULTILINE)
    parts = _CELL_MARK.split(text)
    cells = {parts[i]: parts[i + 1].strip("\n") for i in range(1, len(parts), 2)}
    if not cells:
        raise ValueError(f"{path}: no '# cell: <grade_id>' line")
    return Implementation(
        name=Path(path).stem,
        kind=Path(path).parent.name,
        description=doc.split("\n\n")[0].replace("\n", " "),
        cells=cells,
        expect_fail=frozenset(s.strip() for s in expect.group(1).split(",") if s.strip()) if expect else frozenset(),
    )


def catalogued_notebooks(prefixes: list[str] | None = None) -> list[str]:
    """Notebooks that have a catalogue of implementations (tests/implementations/<notebook>/{wrong,correct}/),
    sorted; only those whose names start with one of `prefixes` when given ("07" for chapter 07's)."""
    found = sorted(p.name for p in IMPLEMENTATIONS_DIR.iterdir() if (p / "wrong").is_dir() or (p / "correct").is_dir())
    return [name for name in found if not prefixes or name.startswith(tuple(prefixes))]


def implementations(notebook: str, kind: str) -> list[Implementation]:
    folder = IMPLEMENTATIONS_DIR / notebook / kind
    return [load_implementation(p) for p in sorted(folder.glob("*.py"))]


def solution_code(cell: NotebookNode) -> str:
    """A solution cell's source as a perfect student would leave it (markers removed)."""
    keep = [line for line in cell.source.splitlines() if marker(line) not in (SOLUTION_BEGIN, SOLUTION_END)]
    return "\n".join(keep)


def make_submission(
    notebook: str, cells: dict[str, str] | None = None, solutions_dir: Path | None = None
) -> NotebookNode:
    """The released notebook with its solution cells filled in (reference code unless given)."""
    source = read(source_notebook(notebook, solutions_dir))
    cells = dict(cells or {})
    unknown = set(cells) - {grade_id(c) for c in source.cells if is_solution_cell(c)}
    if unknown:
        raise ValueError(f"{notebook} has no solution cell {sorted(unknown)}")
    reference = {grade_id(c): solution_code(c) for c in source.cells if is_solution_cell(c)}
    nb = release_notebook(source)
    for cell in nb.cells:
        if is_solution_cell(cell):
            gid = grade_id(cell) or ""
            cell.source = cells.get(gid, reference[gid])
    return nb


def untouched_release(notebook: str) -> NotebookNode:
    """The student notebook exactly as released: what a student who did nothing hands in."""
    return release_notebook(read(source_notebook(notebook)))


def catalogue_submissions(notebook: str) -> list[tuple[str, NotebookNode, frozenset[str]]]:
    """(label, submission, cells that must fail) for the reference solution and every
    catalogued implementation; labels are 'solution', 'wrong-<name>', 'correct-<name>'."""
    cases: list[tuple[str, NotebookNode, frozenset[str]]] = [("solution", make_submission(notebook), frozenset())]
    for kind in ("wrong", "correct"):
        cases += [
            (f"{kind}-{i.name}", make_submission(notebook, i.cells), i.expect_fail)
            for i in implementations(notebook, kind)
        ]
    return cases


def write_submission(nb: NotebookNode, path: Path) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    nbformat.write(nb, str(path))
    return path


def write_demo_class(out_dir: Path, notebook: str = "02_dot_product_attention") -> list[Path]:
    """A small class covering every outcome the grader must handle."""
    out_dir = Path(out_dir)
    partial = next(i for i in implementations(notebook, "wrong") if i.name == "mask_after_softmax")
    written = [
        write_submission(make_submission(notebook), out_dir / "ada" / f"{notebook}.ipynb"),
        write_submission(make_submission(notebook, partial.cells), out_dir / "grace" / f"{notebook}.ipynb"),
        write_submission(untouched_release(notebook), out_dir / "linus" / f"{notebook}.ipynb"),
    ]
    broken = out_dir / "barbara" / f"{notebook}.ipynb"
    broken.parent.mkdir(parents=True, exist_ok=True)
    broken.write_text(nbformat.writes(make_submission(notebook))[:-200], encoding="utf-8")  # truncated upload
    empty = out_dir / "edsger" / f"{notebook}.ipynb"
    empty.parent.mkdir(parents=True, exist_ok=True)
    empty.write_bytes(b"")
    # downloaded twice by a browser, so saved as "<name> (1).ipynb": graded, with a note (another correct answer)
    other = implementations(notebook, "correct")[0]
    renamed = write_submission(make_submission(notebook, other.cells), out_dir / "alan" / f"{notebook} (1).ipynb")
    return written + [broken, empty, renamed]


if __name__ == "__main__":
    target = Path(sys.argv[1] if len(sys.argv) > 1 else "grading/samples")
    for path in write_demo_class(target):
        print(f"wrote {path}")
