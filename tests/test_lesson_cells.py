"""Every code cell a lesson page shows runs on its own, after the cells shown before it (issue 29, item 13).

Chapter 00 tells students that any code cell of a lesson can be copied and run. A lesson also has cells the page
does not show: `remove-cell` (set-up, the numbers glued into the text, some figures) and `remove-input` (a figure
whose code is hidden). A shown cell that reads a name defined only in one of those (chapter 01 once plotted
`hard_out` and `crossover`, both computed in hidden cells) works on the website, whose build ran every cell, and
fails with a NameError for the reader who copies the shown cells in order. So each lesson's shown cells are run
here in a fresh kernel, in order, without its hidden cells, and every one must run without an error.

The kernel starts in chapters/, as the book's build does, with the course's package importable (the lessons that
import `course.provided` need it, as the website's readers need the repository or the Colab set-up cell).
Figures are drawn with Agg: nothing is displayed, and a figure costs no PNG encoding.

The run over the lessons is marked slow (and book, as every lesson test): it runs the lessons' code, training
included, about as long as their share of a book build (5 minutes for 00-06 and 6 for 07-11 on a busy 2-core machine).
`LESSON_CELLS=01,03` in the environment keeps only the lessons whose numbers are listed.

Run: PATH=.venv/bin:$PATH .venv/bin/python -m pytest tests/test_lesson_cells.py -q
"""

from __future__ import annotations

import os
from dataclasses import dataclass
from pathlib import Path

import nbformat
import pytest

from book_build import ROOT
from coursetools.manifest import load
from coursetools.pages import public_markdown

# Tags whose cell's code is not on the page: myst-nb removes the whole cell, or its input (the output stays).
# `hide-input` and `hide-cell` are not here: the page keeps that code, folded, and a reader can open and copy it.
HIDDEN_TAGS = frozenset({"remove-cell", "remove-input"})
CELL_TIMEOUT_S = 900  # chapter 09's training cell takes about a minute on a quiet machine; a busy one, far longer


@dataclass(frozen=True)
class ShownCell:
    number: int  # its place among the lesson's code cells, from 1, counting the hidden ones
    source: str

    def label(self) -> str:
        first = next((line for line in self.source.splitlines() if line.strip()), "")
        return f"code cell {self.number} (it starts {first.strip()[:70]!r})"


def lesson_paths() -> list[Path]:
    """The lesson pages of chapters.yml that hold code (MyST Markdown notebooks)."""
    only = [n.strip() for n in os.environ.get("LESSON_CELLS", "").split(",") if n.strip()]
    paths = [ROOT / f"{chapter.lesson}.md" for chapter in load().chapters if not only or chapter.number in only]
    return [path for path in paths if path.is_file() and "```{code-cell}" in path.read_text(encoding="utf8")]


def hidden(cell) -> bool:
    return bool(HIDDEN_TAGS & set(cell.metadata.get("tags", [])))


def shown_cells(path: Path) -> list[ShownCell]:
    """The code cells of a lesson (as published) whose code its page shows, in order."""
    from myst_nb.core.read import read_myst_markdown_notebook

    nb = read_myst_markdown_notebook(public_markdown(path.read_text(encoding="utf8")), path=str(path))
    code = [cell for cell in nb.cells if cell.cell_type == "code"]
    return [ShownCell(n, cell.source) for n, cell in enumerate(code, start=1) if not hidden(cell)]


def run_alone(cells: list[ShownCell], cwd: Path) -> list[tuple[ShownCell, str]]:
    """Run `cells` in order in a fresh kernel; return each cell that raised, with its error. A cell that fails is
    reported and the next ones still run (a later error may be the first one's consequence: the first is the one
    to fix)."""
    from nbclient import NotebookClient

    nb = nbformat.v4.new_notebook()
    nb.metadata["kernelspec"] = {"name": "python3", "display_name": "Python 3", "language": "python"}
    nb.cells = [nbformat.v4.new_code_cell(cell.source) for cell in cells]
    env = dict(os.environ, MPLBACKEND="Agg", PYTHONHASHSEED="0")
    env["PYTHONPATH"] = os.pathsep.join(filter(None, [str(ROOT / "tools" / "book_site"), env.get("PYTHONPATH", "")]))
    client = NotebookClient(
        nb, timeout=CELL_TIMEOUT_S, kernel_name="python3", allow_errors=True, resources={"metadata": {"path": str(cwd)}}
    )
    with pytest.MonkeyPatch.context() as patch:
        for name, value in env.items():
            patch.setenv(name, value)
        client.execute()
    failed = []
    for cell, ran in zip(cells, nb.cells, strict=True):
        errors = [out for out in ran.get("outputs", []) if out.get("output_type") == "error"]
        if errors:
            failed.append((cell, f"{errors[0]['ename']}: {errors[0]['evalue']}"))
    return failed


def test_the_lessons_have_hidden_and_shown_cells():
    """The check below means something: lessons do hide cells with these tags, and show others."""
    paths = lesson_paths()
    if os.environ.get("LESSON_CELLS"):
        pytest.skip("LESSON_CELLS keeps only some lessons")
    assert len(paths) >= 10, paths
    from myst_nb.core.read import read_myst_markdown_notebook

    tags = set()
    for path in paths:
        nb = read_myst_markdown_notebook(path.read_text(encoding="utf8"), path=str(path))
        tags |= {tag for cell in nb.cells for tag in cell.metadata.get("tags", [])}
        assert shown_cells(path), f"{path.name} shows no code cell"
    assert "remove-cell" in tags, tags


def test_a_cell_that_needs_a_hidden_one_is_caught(tmp_path):
    """The check fails on the mistake it is for: a shown cell reading a name that only a hidden cell defines."""
    page = tmp_path / "lesson.md"
    page.write_text(
        "---\njupytext:\n  text_representation:\n    format_name: myst\nkernelspec:\n  name: python3\n---\n\n"
        "```{code-cell} ipython3\nx = 1\n```\n\n"
        "```{code-cell} ipython3\n:tags: [remove-cell]\n\nhidden_value = x + 1\n```\n\n"
        "```{code-cell} ipython3\n---\ntags: [remove-input]\n---\nfigure_only = 3\n```\n\n"
        "```{code-cell} ipython3\nprint(x)\n```\n\n"
        "```{code-cell} ipython3\nprint(hidden_value, figure_only)\n```\n",
        encoding="utf8",
    )
    cells = shown_cells(page)
    assert [cell.number for cell in cells] == [1, 4, 5]
    failed = run_alone(cells, tmp_path)
    assert [(cell.number, error) for cell, error in failed] == [(5, "NameError: name 'hidden_value' is not defined")], (
        failed
    )


@pytest.mark.slow
@pytest.mark.parametrize("path", lesson_paths(), ids=lambda path: path.stem)
def test_every_shown_cell_runs_without_the_hidden_ones(path):
    cells = shown_cells(path)
    failed = run_alone(cells, path.parent)
    listed = "\n".join(f"- {cell.label()}: {error}" for cell, error in failed)
    assert not failed, f"{path.relative_to(ROOT)}: shown cells that fail after the shown cells before them:\n{listed}"


# The lessons' plumbing (glue, rounded bounds, figures, colours) is course/book.py, tested in tests/test_book_module.py.
