"""Exercise 12 carries its own text (it runs on Colab with nothing downloaded): the play in its cell ch12_play must
be the course's text, course/shakespeare.txt, whose provenance is recorded beside it, and the student notebook
must carry the same cell. tools/exercise_12_play.py writes the cell."""

from __future__ import annotations

import base64
import hashlib
import importlib.util
import re
import zlib

from autograder import config
from autograder.model.notebooks import read
from coursetools.layout import RELEASE_DIR

SPEC = importlib.util.spec_from_file_location("exercise_12_play", config.REPO_ROOT / "tools" / "exercise_12_play.py")
assert SPEC and SPEC.loader
TOOL = importlib.util.module_from_spec(SPEC)
SPEC.loader.exec_module(TOOL)


def play_in(notebook) -> tuple[str, str]:
    """(the play decoded from the cell's base64 lines, the checksum the cell states), read without running it."""
    source = TOOL.play_cell(notebook).source
    packed = "".join(re.findall(r'^    "([A-Za-z0-9+/=]+)"$', source, re.MULTILINE))
    stated = re.search(r'^PLAY_SHA256 = "([0-9a-f]{64})"$', source, re.MULTILINE)
    assert stated, "the cell states no PLAY_SHA256"
    return zlib.decompress(base64.b64decode(packed)).decode("ascii"), stated.group(1)


def test_the_notebook_carries_the_courses_play_with_its_checksum():
    solution = read(config.SOLUTIONS_DIR / "12_language_model.ipynb")
    assert TOOL.play_cell(solution).source == TOOL.cell_source(), (
        "the cell ch12_play differs from course/shakespeare.txt's play: run `python tools/exercise_12_play.py`, "
        "then `python -m autograder release`"
    )
    play, stated = play_in(solution)
    assert play == TOOL.play_text() and play.startswith("THESEUS:\nNow, fair Hippolyta")
    assert hashlib.sha256(play.encode("ascii")).hexdigest() == stated
    assert len(set(play)) == 61, "the notebook's question and text say the play has 61 different characters"


def test_the_student_notebook_has_the_same_cell():
    released = read(RELEASE_DIR / "12_language_model.ipynb")
    solution = read(config.SOLUTIONS_DIR / "12_language_model.ipynb")
    assert TOOL.play_cell(released).source == TOOL.play_cell(solution).source
