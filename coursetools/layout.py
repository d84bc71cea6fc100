"""Where the course's files are: the book's layout, in one place, for the course tooling.

`release` writes the student notebooks into `RELEASE_DIR` (the book shows them as pages) from the
nbgrader sources in `autograder.config.SOLUTIONS_DIR`, and puts the reference code of
`PROVIDED_MODULE` into their provided cells; `publish` reads the chapters of `MANIFEST_FILE`, ships
`COURSE_DIR` less the answers still due, and writes the public release into `PUBLISH_DIR` from the
templates in `PUBLIC_TEMPLATES_DIR`.

The grader knows none of this: it grades against the source notebooks (`SOLUTIONS_DIR`), and the
notebook a student was given is the one it derives from them (`release_notebook`), the same one
`release` writes here. So this module lives in `coursetools`, which may import the grader's bottom
(`autograder.config`), and never the reverse.
"""

from __future__ import annotations

from pathlib import Path

from autograder.config import REPO_ROOT

# Student notebooks generated from solutions/ by `release`, committed, and pages of the book.
RELEASE_DIR = REPO_ROOT / "chapters"
# The chapter manifest: every chapter (lesson, exercise, what it asks for) and the course calendar.
MANIFEST_FILE = REPO_ROOT / "chapters.yml"
# The course's own code (lessons import it; `publish` ships it, less the answers still due).
COURSE_DIR = REPO_ROOT / "course"
# Reference code that `release` copies into the provided (locked) cells of the notebooks.
PROVIDED_MODULE = COURSE_DIR / "provided.py"
# Wrong and correct implementations of each exercise, kept as grading fixtures (`make samples`, the catalogues).
IMPLEMENTATIONS_DIR = REPO_ROOT / "tests" / "implementations"
# The public release (`autograder publish`, coursetools/publish.py): where `make publish` writes
# it by default (git-ignored), and the templates of its README, Makefile and .gitignore. Its
# GitHub URL is `repository.url` in _config.yml, the one setting the site's buttons use too.
PUBLISH_DIR = REPO_ROOT / "_publish"
PUBLIC_TEMPLATES_DIR = REPO_ROOT / "tools" / "public"


def released_path(solution_path: Path, release_dir: Path | None = None) -> Path:
    """Where `release` writes the student version of a source notebook: the same name in `RELEASE_DIR`."""
    return Path(release_dir or RELEASE_DIR) / solution_path.name
