"""Write the public release: the repository students clone, open on Colab and build the site from.

    python -m autograder publish [--out DIR]      # make publish: DIR defaults to _publish/

This course repository holds the solutions and hidden tests (`solutions/`), the catalogues of
implementations (`tests/`) and the grader; none of that may reach students. The public release
is a separate repository (its URL is `repository.url` in `_config.yml`, the one setting the site's
repository and Colab buttons use). `publish` writes its whole tree:

- the book: `_config.yml`, `_toc.yml` and `intro.md` (without the pages and paragraphs for
  instructors, see below), every page `_toc.yml` lists (lessons `.md`, student notebooks `.ipynb`)
  and the images beside them, `_ext/` (the book's Sphinx extensions) and `tools/vendor_mathjax.py`;
- `course/`, the course's reference code, when a lesson imports it (`release` already refuses a
  line of it that repeats a solution line), with the data files beside it that lessons read
  (`COURSE_DATA_SUFFIXES`: chapter 11's corpus, `course/corpus.txt`);
- `lessons/NN_name.ipynb`: every lesson converted to a notebook (the Colab button of a lesson page
  opens it), with a first code cell that lets it run outside the book's build (`SETUP_*` below) and
  its MyST roles and directives turned into plain Markdown (`notebook_markdown`);
- a README for students, a Makefile that builds the site, `requirements.txt` (pins taken from
  `pyproject.toml`), `.gitignore`, from the templates in `tools/public/`;
- `.github/workflows/pages.yml` (`tools/public/pages.yml`): GitHub Actions builds the site with that
  Makefile's `make book` on every push (torch's CPU build, the executed lessons cached) and deploys it to
  GitHub Pages from the default branch; the README says the one setting to switch on.

What is for instructors only: the pages named in `course_private_pages` (`_config.yml`, the grading
guide: it runs the grader at build time) are left out together with their `_toc.yml` entries, and
in the Markdown pages the lines between `% BEGIN PRIVATE` and `% END PRIVATE` are dropped while a
line `% PUBLIC: text` becomes `text` (both are MyST comments, invisible on the course's own site).

Before writing anything, `publish` refuses to go on if the student notebooks are out of date with
`solutions/` (`release --check`), and after writing it refuses a tree that contains an nbgrader
solution or hidden-test marker or names a private page (the tests go further: no line of a solution
region or of a hidden test may appear in the tree or the built site).

DIR is emptied first (a `.git` folder is kept, so DIR may be a clone of the public repository),
but only if it is empty or was written by `publish` before (it holds `PUBLISHED_MARKER`).
"""

from __future__ import annotations

import re
import shutil
import sys
from dataclasses import dataclass
from datetime import datetime
from pathlib import Path

import nbformat
import yaml

from autograder import config
from autograder.model.notebooks import marker
from coursetools.course_code import CourseCode, CourseCodeError
from coursetools.lesson_notebook import _imports, lesson_notebook, lesson_notebook_path
from coursetools.manifest import Chapter, Manifest, ManifestError, Moment, load
from coursetools.pages import (
    PRIVATE_BEGIN,
    PRIVATE_END,
    chapter_statuses,
    is_text_notebook,
    page_source,
    page_title,
    public_markdown,
    public_toc,
    toc_files,
    unpublished_references,
    when,
)
from coursetools.release import SourceError, provided_names, release
from coursetools.site import PublishError, Settings, read_settings

PUBLISHED_MARKER = ".published-by-autograder"
MARKER_TEXT = (
    "This tree was written by `python -m autograder publish` from the course repository.\n"
    "Do not edit it here: change the course repository and publish again.\n"
)
# Files beside the pages that the book may display.
ASSET_SUFFIXES = {".png", ".jpg", ".jpeg", ".gif", ".svg"}
# Distributions of pyproject.toml's dependencies that the public release needs: the exercises
# and lessons (torch, numpy, matplotlib) and the book (jupyter-book, ipykernel runs the lessons).
PUBLIC_REQUIREMENTS = ("torch", "numpy", "matplotlib", "ipykernel", "jupyter-book")
# Data files of course/ that lessons read (course.provided's folder), published with the course's code.
COURSE_DATA_SUFFIXES = (".txt",)
# Copied as they are (besides the pages, _ext/ and course/).
TOOLS = ("tools/vendor_mathjax.py", "tools/build_book.py")
# The workflow that builds the site and deploys it to GitHub Pages (from tools/public/pages.yml).
PAGES_WORKFLOW = ".github/workflows/pages.yml"


# --- the tree ----------------------------------------------------------------------------


def requirements(root: Path = config.REPO_ROOT) -> str:
    """requirements.txt of the public release: pyproject.toml's pins for what it needs."""
    if sys.version_info >= (3, 11):
        import tomllib
    else:  # Python 3.10: the copy pip carries
        from pip._vendor import tomli as tomllib
    project = tomllib.loads((root / "pyproject.toml").read_text(encoding="utf-8"))["project"]
    pins = {}
    for spec in project["dependencies"]:
        name = re.split(r"[^A-Za-z0-9_.-]", spec, maxsplit=1)[0]
        pins[name.lower()] = spec
    missing = [name for name in PUBLIC_REQUIREMENTS if name not in pins]
    if missing:
        raise PublishError(f"pyproject.toml has no dependency {', '.join(missing)}")
    lines = ["# Written by `autograder publish` from the course repository's pyproject.toml."]
    return "\n".join(lines + [pins[name] for name in PUBLIC_REQUIREMENTS]) + "\n"


def _prepare(out: Path) -> None:
    out = Path(out)
    if out.exists() and not out.is_dir():
        raise PublishError(f"{out} exists and is not a folder")
    if out.exists():
        entries = [p for p in out.iterdir() if p.name != ".git"]
        if entries and not (out / PUBLISHED_MARKER).is_file():
            raise PublishError(
                f"{out} is not empty and was not written by `autograder publish` (no {PUBLISHED_MARKER}); "
                "choose an empty folder or a clone of the public repository"
            )
        for entry in entries:
            if entry.is_dir() and not entry.is_symlink():
                shutil.rmtree(entry)
            else:
                entry.unlink()
    out.mkdir(parents=True, exist_ok=True)


class _Tree:
    def __init__(self, out: Path):
        self.out = Path(out)
        self.written: list[str] = []

    def write(self, relative: str, text: str | bytes) -> None:
        target = self.out / relative
        target.parent.mkdir(parents=True, exist_ok=True)
        if isinstance(text, bytes):
            target.write_bytes(text)
        else:
            target.write_text(text, encoding="utf-8")
        self.written.append(relative)

    def copy(self, root: Path, relative: str) -> None:
        self.write(relative, (root / relative).read_bytes())


def _header(comment: str, text: str) -> str:
    return f"{comment} Copied by `autograder publish` from the course repository: edit it there.\n{text}"


def _check_tree(out: Path, private: frozenset[str]) -> None:
    """Refuse a tree with nbgrader's solution or hidden-test markers, or a reference to a private page."""
    problems = []
    for path in sorted(out.rglob("*")):
        if not path.is_file() or ".git" in path.relative_to(out).parts:
            continue
        text = path.read_text(encoding="utf-8", errors="replace")
        found = next((line.strip() for line in text.splitlines() if marker(line)), None)
        if found is not None:  # nbgrader's rule: a line containing a delimiter anywhere
            problems.append(f"{path.relative_to(out)} has a line nbgrader reads as a marker: {found[:80]!r}")
        if path.suffix in (".md", ".ipynb") or path.name == "_toc.yml":
            for page in private:
                if re.search(rf"(?<![\w/-]){re.escape(page)}(?![\w-])", text):
                    problems.append(
                        f"{path.relative_to(out)} names the private page {page!r} (wrap it in {PRIVATE_BEGIN} / "
                        f"{PRIVATE_END})"
                    )
    if problems:
        raise PublishError("the public release would contain what students must not get:\n" + "\n".join(problems))


@dataclass(frozen=True)
class Publication:
    """What `publish` wrote, and for which moment of the term."""

    written: list[str]  # paths relative to the output folder, sorted
    moment: Moment
    chapters: list[str]  # the numbers of the chapters published
    held: dict[str, str]  # chapters opened but held back -> why
    warnings: list[str]
    exercises: frozenset[str]  # the chapters that have an exercise


# --- the calendar: which chapters and which course code students may see ---------------------


def choose_moment(
    manifest: Manifest, through: str | None = None, at: datetime | None = None, everything: bool = False
) -> tuple[Moment, list[str]]:
    """The moment to publish (and warnings): `--through NN`, a time of the calendar (now by default), or
    every chapter at once for a course without a calendar (or when asked: `everything`)."""
    if everything:
        return manifest.everything(), []
    if through is not None:
        return manifest.through(through), []
    if not manifest.has_calendar:
        if at is not None:
            raise PublishError("chapters.yml sets no calendar: publish --at needs `opens` and `due` dates")
        return manifest.everything(), [
            "chapters.yml sets no calendar: publishing every chapter and all course code at once. The answers of "
            "exercises still open are then public (course/*.py, the provided cells of later notebooks). Give each "
            "chapter `opens` and `due` dates to publish the term week by week."
        ]
    return manifest.at(at or datetime.now().astimezone()), []


_INCLUDED = re.compile(
    r"^```\{literalinclude\}\s+\S*course/(\w+)\.py\s*\n(?::[\w-]+:.*\n)*?:pyobject:\s*(\w+)", re.MULTILINE
)


def _chapter_needs(root: Path, chapter: Chapter, code: CourseCode) -> dict[str, frozenset[str]]:
    """The course definitions a chapter's pages use ({name: exercises it answers}): what its lesson
    imports from course/ and what the provided cells of its exercise notebook hold."""
    text = page_source(root, chapter.lesson).read_text(encoding="utf-8")
    needs = code.needs(text)
    for module, name in _INCLUDED.findall(text):  # ```{literalinclude} ../course/M.py with :pyobject: NAME
        if code.gate(module, name):
            needs[name] = code.gate(module, name)
    if chapter.exercise_page:
        notebook = nbformat.read(str(page_source(root, chapter.exercise_page)), as_version=4)
        for cell in notebook.cells:
            names = provided_names(cell)
            if names:
                needs.update(code.provided_needs(names))
    return needs


def chapters_to_publish(
    root: Path, manifest: Manifest, moment: Moment, code: CourseCode
) -> tuple[list[Chapter], dict[str, str]]:
    """The opened chapters that can be published now, and those held back with the reason.

    A chapter whose pages use course code answering its *own* exercise can never be published
    before its deadline: that is a mistake in the course, refused outright.
    """
    ready, held = [], {}
    for chapter in manifest.chapters:
        if chapter.number not in moment.opened:
            continue
        needs = _chapter_needs(root, chapter, code)
        own = sorted(name for name, numbers in needs.items() if chapter.number in numbers - moment.past_due)
        if own:
            raise PublishError(
                f"chapter {chapter.number}'s lesson or notebook uses {', '.join(own)} from course/, which "
                f"answers its own exercise: students would get the answer with the chapter. Write the "
                "lesson's code in another form, or leave that code out of course/"
            )
        waiting = {
            name: sorted(numbers - moment.past_due) for name, numbers in needs.items() if not numbers <= moment.past_due
        }
        if waiting:
            reasons = []
            for name, numbers in sorted(waiting.items()):
                dues = ", ".join(f"{n} (due {when(manifest.chapter(n).due)})" for n in numbers)
                reasons.append(f"{name} answers exercise {dues}")
            held[chapter.number] = "its pages use course code that " + "; ".join(reasons)
            continue
        ready.append(chapter)
    return ready, held


def publish(
    out: Path,
    root: Path = config.REPO_ROOT,
    check_release: bool = True,
    through: str | None = None,
    at: datetime | None = None,
    everything: bool = False,
    manifest: Manifest | None = None,
) -> Publication:
    """Write the public release into `out` as students may see it at one moment of the term (now by
    default, the calendar of chapters.yml deciding; `through="07"`: the moment chapter 07 opens;
    `everything`: every chapter and all course code; `manifest`: another calendar than chapters.yml's)."""
    root = Path(root)
    if check_release:
        try:
            stale = release(check=True)
        except SourceError as exc:
            raise PublishError(str(exc)) from exc
        if stale:
            names = ", ".join(
                str(s.path.relative_to(root)) if s.path.is_relative_to(root) else str(s.path) for s in stale
            )
            raise PublishError(
                f"the student notebooks are out of date with solutions/ ({names}): run `make release` first"
            )
    settings = read_settings(root)
    settings.github  # noqa: B018 - fails early on a repository URL Colab cannot open
    try:
        manifest = manifest or load(root / config.MANIFEST_FILE.name)
        moment, warnings = choose_moment(manifest, through, at, everything)
    except ManifestError as exc:
        raise PublishError(str(exc)) from exc
    code = CourseCode(manifest, root / "course")
    ready, held = chapters_to_publish(root, manifest, moment, code)
    chapter_pages = {page for chapter in manifest.chapters for page in chapter.pages}
    toc = yaml.safe_load((root / "_toc.yml").read_text(encoding="utf-8"))
    listed = [d for d in toc_files(toc) if d not in settings.private_pages]
    published_pages = {page for chapter in ready for page in chapter.pages}
    docnames = [d for d in listed if d not in chapter_pages or d in published_pages]
    templates = config.PUBLIC_TEMPLATES_DIR

    _prepare(out)
    tree = _Tree(out)
    tree.write(PUBLISHED_MARKER, MARKER_TEXT)
    tree.write("_config.yml", _header("#", (root / "_config.yml").read_text(encoding="utf-8")))
    toc_text = yaml.safe_dump(
        public_toc(toc, settings.private_pages, frozenset(docnames)), sort_keys=False, allow_unicode=True
    )
    tree.write(
        "_toc.yml",
        "# Written by `autograder publish` from the course repository's _toc.yml "
        "(without its pages for instructors, and the chapters not open yet).\n" + toc_text,
    )

    titles = {d: page_title(page_source(root, d)) for d in listed}
    numbers_published = [c.number for c in ready]
    chapters: list[tuple[str, Path, str | None]] = []
    uses_course = False
    for docname in docnames:
        source = page_source(root, docname)
        relative = source.relative_to(root).as_posix()
        if source.suffix == ".ipynb":
            tree.copy(root, relative)
            chapters.append((docname, source, None))
            continue
        text = source.read_text(encoding="utf-8")
        folder = Path(docname).parent.as_posix()
        folder = "" if folder == "." else folder
        page = unpublished_references(public_markdown(text), folder, set(docnames), titles)
        page = chapter_statuses(page, manifest, moment, numbers_published, held)
        tree.write(relative, page)
        lesson = None
        if is_text_notebook(text):
            nb = lesson_notebook(source, settings, titles, folder, page)
            lesson = lesson_notebook_path(docname, settings)
            if lesson in tree.written:
                raise PublishError(f"two pages would both write {lesson}: rename one")
            tree.write(lesson, nbformat.writes(nb) + "\n")
            uses_course = uses_course or _imports(
                "\n".join(c.source for c in nb.cells if c.cell_type == "code"), "course"
            )
        chapters.append((docname, source, lesson))
        for asset in sorted(source.parent.iterdir()):
            rel = asset.relative_to(root).as_posix()
            if asset.is_file() and asset.suffix.lower() in ASSET_SUFFIXES and rel not in tree.written:
                tree.copy(root, rel)

    for path in sorted((root / "_ext").rglob("*")):
        if path.is_file() and "__pycache__" not in path.parts:
            tree.copy(root, path.relative_to(root).as_posix())
    if uses_course:
        for path in sorted((root / "course").glob("*.py")):
            try:
                tree.write(path.relative_to(root).as_posix(), code.published_text(path.stem, moment.past_due))
            except CourseCodeError as exc:
                raise PublishError(str(exc)) from exc
        for path in sorted((root / "course").iterdir()):
            if path.is_file() and path.suffix in COURSE_DATA_SUFFIXES:
                tree.copy(root, path.relative_to(root).as_posix())
    for relative in TOOLS:
        tree.copy(root, relative)

    tree.write("requirements.txt", requirements(root))
    tree.write("Makefile", (templates / "Makefile").read_text(encoding="utf-8"))
    tree.write(".gitignore", (templates / "gitignore").read_text(encoding="utf-8"))
    tree.write(PAGES_WORKFLOW, (templates / "pages.yml").read_text(encoding="utf-8"))
    tree.write("README.md", student_readme(root, settings, chapters, uses_course))
    _check_tree(Path(out), settings.private_pages)
    return Publication(
        sorted(tree.written),
        moment,
        numbers_published,
        held,
        warnings,
        frozenset(c.number for c in manifest.chapters if c.exercise),
    )


def pages_url(settings: Settings) -> str:
    """Where GitHub Pages serves the public repository's site (a project site; a `<owner>.github.io` repository
    is the owner's site)."""
    owner, name = settings.github
    if name.lower() == f"{owner.lower()}.github.io":
        return f"https://{owner.lower()}.github.io/"
    return f"https://{owner.lower()}.github.io/{name}/"


def student_readme(
    root: Path, settings: Settings, chapters: list[tuple[str, Path, str | None]], uses_course: bool
) -> str:
    """README.md of the public release, from tools/public/README.md."""
    rows = ["| page | open in Colab |", "|---|---|"]
    for docname, source, lesson in chapters:
        if docname == "intro":
            continue
        if source.suffix == ".ipynb":
            path = source.relative_to(root).as_posix()
            rows.append(f"| exercise: `{path}`, {page_title(source)} | [open `{path}`]({settings.colab_url(path)}) |")
        else:
            path = source.relative_to(root).as_posix()
            colab = f"[open `{lesson}`]({settings.colab_url(lesson)})" if lesson else "—"
            rows.append(f"| lesson: `{path}`, {page_title(source)} | {colab} |")
    layout = [
        "| path | what |",
        "|---|---|",
        "| `intro.md`, `chapters/*.md` | the lessons: the pages of the course website (MyST Markdown notebooks, run "
        "when the site is built) |",
        "| `chapters/*.ipynb` | the exercise notebooks: fill them in and submit them |",
        f"| `{settings.lesson_dir}/*.ipynb` | each lesson as a notebook, to run and change its code (on Colab or "
        "locally) |",
    ]
    if uses_course:
        layout.append(
            "| `course/provided.py` | the course's reference code, used by later lessons and given to later exercises |"
        )
    layout += [
        "| `_config.yml`, `_toc.yml`, `_ext/` | the website's settings, table of contents and Sphinx extensions |",
        "| `tools/vendor_mathjax.py` | downloads MathJax once, so the website renders math offline |",
        "| `Makefile`, `requirements.txt` | `make book` builds the website into `_build/html` |",
        f"| `{PAGES_WORKFLOW}` | GitHub Actions: `make book` on every push, deployed to GitHub Pages |",
    ]
    text = (config.PUBLIC_TEMPLATES_DIR / "README.md").read_text(encoding="utf-8")
    replacements = {
        "{{title}}": settings.title,
        "{{repository_url}}": settings.repository_url,
        "{{repository_name}}": settings.github[1],
        "{{chapters}}": "\n".join(rows),
        "{{layout}}": "\n".join(layout),
        "{{lesson_dir}}": settings.lesson_dir,
        "{{pages_url}}": pages_url(settings),
        "{{pages_workflow}}": PAGES_WORKFLOW,
    }
    for key, value in replacements.items():
        text = text.replace(key, value)
    leftover = re.findall(r"\{\{\w+\}\}", text)
    if leftover:
        raise PublishError(f"tools/public/README.md: unknown placeholders {leftover}")
    return text
