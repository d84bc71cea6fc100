"""Build the website: `jupyter-book build` with the lessons executed in parallel.

    python tools/build_book.py [PATH] [jupyter-book build options...]     # make book; tests/support/book_build.py

Jupyter Book 1's command line reads (and so executes) the pages one after the other, although Sphinx can
read them in parallel processes and myst-nb, which executes the lessons, declares itself safe for that.
The lessons take most of a cold build (chapter 09 trains a model for a minute), so on two cores a
parallel read nearly halves it. This runs Jupyter Book's own `build` command, unchanged but for the
number of Sphinx processes (`BOOK_JOBS`, default: the number of cores, at most 8), which its `build_sphinx`
function accepts and its command line does not pass.

Sphinx hands each process a chunk of consecutive pages (alphabetical): chapter 09 (a third of the lessons' time)
shared a chunk with chapters 10, 11 and the grading guide, which ran one after the other for most of the build
while the other core idled (150 s of wall time for 184 s of CPU). So pages are read one per process, the slowest
first (READ_FIRST), and `BOOK_JOBS` processes (default: one per core) take the next page as each finishes.
"""

from __future__ import annotations

import functools
import hashlib
import os
import shutil
import sys
from pathlib import Path

# The pages whose lessons take longest, slowest first (seconds of a cold parallel build on 2 cores, 2026-11-24:
# 79, 40, 27, 27, 21, 17, 12). Any other page is read after these, in alphabetical order. A page missing here
# only makes the build slower; tests/test_book_tools.py checks that each one exists.
READ_FIRST = (
    "chapters/09_training",
    "chapters/01_why_attention",
    "chapters/10_beyond",
    "grading_guide",
    "chapters/04_self_and_cross_attention",
    "chapters/05_multi_head_attention",
    "chapters/11_tokens_and_families",
)


def jobs() -> int:
    """Sphinx processes: BOOK_JOBS, else one per core (each runs a kernel in its turn), at most 8."""
    if os.environ.get("BOOK_JOBS"):
        return max(1, int(os.environ["BOOK_JOBS"]))
    return max(1, min(8, os.cpu_count() or 1))


def reading_order(docnames: list[str]) -> list[str]:
    """READ_FIRST's pages in its order, then the others alphabetically."""
    rank = {name: index for index, name in enumerate(READ_FIRST)}
    return sorted(docnames, key=lambda name: (rank.get(name, len(rank)), name))


def task_order(pages: list[str], nproc: int) -> list[list[str]]:
    """One page per task, arranged so that Sphinx starts them in the order of `pages`. Its ParallelTasks starts
    the first `nproc` tasks as they are added and, as processes finish, the task added LAST of those waiting (a
    dict's popitem): so the rest are handed over in reverse."""
    return [[name] for name in pages[:nproc] + pages[nproc:][::-1]]


def read_slowest_first() -> None:
    """Sphinx's parallel read, given tasks of one page each in task_order instead of alphabetical chunks."""
    from sphinx import builders

    original = builders.Builder._read_parallel
    if getattr(original, "slowest_first", False):
        return

    def _read_parallel(self, docnames: list[str], nproc: int) -> None:
        tasks = task_order(reading_order(list(docnames)), nproc)
        chunks = builders.make_chunks
        builders.make_chunks = lambda arguments, nproc, maxbatch=10: tasks
        try:
            original(self, [name for task in tasks for name in task], nproc)
        finally:
            builders.make_chunks = chunks

    _read_parallel.slowest_first = True  # type: ignore[attr-defined]
    builders.Builder._read_parallel = _read_parallel


def book_dir(argv: list[str]) -> Path:
    """The book's folder: the first argument that is not an option (or the value of one)."""
    values = {argv[i + 1] for i, arg in enumerate(argv[:-1]) if arg == "--path-output"}
    return Path(next((arg for arg in argv if not arg.startswith("-") and arg not in values), "."))


def cache_dir(argv: list[str]) -> Path:
    """Where Jupyter Book keeps the lessons' execution cache: `_build/.jupyter_cache` under --path-output, or
    else under the book's folder."""
    if "--path-output" in argv[:-1]:
        return Path(argv[argv.index("--path-output") + 1]) / "_build" / ".jupyter_cache"
    return book_dir(argv) / "_build" / ".jupyter_cache"


# Beside the cache's database: the digest of course/ that the cached outputs were computed with.
COURSE_STAMP = "course.sha256"


def course_digest(book: Path) -> str:
    """SHA-256 over every file of the book's course/ folder (names and bytes; no bytecode). The cache keys each
    page on its own code cells only, and every lesson imports course/ (course/book.py's glue helpers, the models,
    the corpora): without this a change there left last build's outputs on the pages."""
    digest = hashlib.sha256()
    course = book / "course"
    for path in sorted(course.rglob("*")) if course.is_dir() else ():
        if path.is_file() and "__pycache__" not in path.parts:
            digest.update(path.relative_to(course).as_posix().encode() + b"\0")
            digest.update(hashlib.sha256(path.read_bytes()).digest())
    return digest.hexdigest()


def prepare_cache(path: Path, book: Path | None = None) -> bool:
    """Create the execution cache's database before the parallel read (on a fresh clone every Sphinx process
    would otherwise create it at once, and all but one fail on sqlite's `table settings already exists`), after
    emptying it when the book's course/ changed since its outputs were computed. True when it was emptied."""
    from jupyter_cache import get_cache

    emptied = False
    if book is not None:
        stamp, digest = path / COURSE_STAMP, course_digest(book)
        if (path / "global.db").is_file() and (not stamp.is_file() or stamp.read_text().strip() != digest):
            print(f"course/ changed since the cached lessons ran: emptying {path}", file=sys.stderr)
            shutil.rmtree(path)
            emptied = True
    get_cache(str(path)).list_cache_records()  # the first query creates the tables
    if book is not None:
        (path / COURSE_STAMP).write_text(digest + "\n")
    return emptied


BOOK_SITE = Path(__file__).resolve().with_name("book_site")  # its sitecustomize skips a slow optional import


def use_book_site() -> None:
    """Every process of the build, lesson kernels included, starts with tools/book_site/sitecustomize.py
    (this one too: it is already running, so it applies the same setting itself)."""
    os.environ["PYTHONPATH"] = os.pathsep.join(filter(None, [str(BOOK_SITE), os.environ.get("PYTHONPATH", "")]))
    try:
        from autograder import skip_slow_optional_imports
    except ImportError:  # the public release ships this script without the grader (or book_site/): just slower
        return
    skip_slow_optional_imports()


def main(argv: list[str]) -> int:
    use_book_site()
    from jupyter_book import sphinx

    prepare_cache(cache_dir(argv), book_dir(argv))
    read_slowest_first()
    from jupyter_book.cli import main as cli

    # `build` imports build_sphinx from jupyter_book.sphinx when it runs: give it the number of processes
    sphinx.build_sphinx = functools.partial(sphinx.build_sphinx, jobs=jobs())
    try:
        cli.main(["build", *argv], standalone_mode=False)
    except SystemExit as exc:  # jupyter-book exits with the build's status
        return int(exc.code or 0)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
