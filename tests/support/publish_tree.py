"""The public release written once per test process (autograder publish into a temporary folder);
shared by test_publish.py and test_browser.py (its Colab links must open files of this tree).

It is the tree of the term's last week (`publish --through <last chapter>`): every chapter open, every
exercise but the last past its deadline."""

from __future__ import annotations

import atexit
import shutil
import tempfile
from pathlib import Path

from coursetools.manifest import load
from coursetools.publish import publish

LAST_CHAPTER = load().chapters[-1].number
# What the public Makefile's `make book` runs with the venv's python once its venv is there, and so what the public
# release's GitHub Actions workflow runs (tests/test_pages_workflow.py checks both against this command).
PUBLIC_BUILD = ["tools/build_book.py", ".", "-W", "-n", "--keep-going"]

_tree: tuple[Path, list[str]] | None = None


def published() -> tuple[Path, list[str]]:
    """(the folder, the paths written) of the public release, published on first use."""
    global _tree
    if _tree is None:
        parent = Path(tempfile.mkdtemp(prefix="public-release-"))
        atexit.register(shutil.rmtree, parent, ignore_errors=True)
        out = parent / "attention-course"
        _tree = (out, publish(out, through=LAST_CHAPTER).written)
    return _tree
