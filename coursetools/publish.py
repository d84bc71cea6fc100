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
from dataclasses import dataclass, replace
from datetime import datetime
from pathlib import Path

import nbformat
import yaml

from autograder import config
from autograder.errors import InputError
from autograder.model.files import pinned_requirements
from autograder.model.notebooks import marker
from coursetools import layout
from coursetools.course_code import CourseCode, CourseCodeError
from coursetools.lesson_notebook import imports_module, lesson_notebook, lesson_notebook_path
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
from coursetools.site import BookSettings, PublishError, read_settings

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


@dataclass(frozen=True)
class Publication:
    """What `publish` wrote, and for which moment of the term."""

    written: list[str]  # paths relative to the output folder, sorted
    moment: Moment
    chapters: list[str]  # the numbers of the chapters published
    held: dict[str, str]  # chapters opened but held back -> why
    warnings: list[str]
    exercises: frozenset[str]  # the chapters that have an exercise


@dataclass(frozen=True)
class Plan:
    """What one publication holds, decided before anything is written: a mistake in the course (a
    broken manifest, a lesson that gives away its own exercise) then leaves the output folder as it was."""

    manifest: Manifest
    moment: Moment
    warnings: list[str]
    code: CourseCode  # every course module, and the exercises each definition answers
    ready: list[Chapter]  # the opened chapters published now
    held: dict[str, str]  # chapters opened but held back -> why
    toc: dict  # the course's _toc.yml, as parsed
    docnames: list[str]  # the pages published: _toc.yml's less the private ones and the chapters not published now
    titles: dict[str, str]  # docname -> title, for every page of _toc.yml but the private ones

    @property
    def chapter_numbers(self) -> list[str]:
        return [chapter.number for chapter in self.ready]


@dataclass(frozen=True)
class PublishedPage:
    """One page of the book as published, for the README's table of pages."""

    docname: str
    source: Path  # the page in the course repository (.md lesson, or .ipynb student notebook)
    lesson: str | None = None  # its lesson notebook (path in the tree), when the page is a text notebook
    uses_course: bool = False  # that lesson notebook imports course/


class _Tree:
    """The output folder, and every file written into it: `Publication.written` reports exactly what is
    on disk, and a path written twice (two pages with one lesson notebook) can be refused."""

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


# --- the steps of `publish`, in order -------------------------------------------------------


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
        refuse_stale_notebooks(root)
    settings = read_settings(root, on_github=True)
    plan = plan_publication(root, settings, manifest, through, at, everything)
    tree = start_tree(out)
    write_book_settings(tree, root, settings, plan)
    pages = [write_page(tree, root, settings, plan, docname) for docname in plan.docnames]
    copy_extensions(tree, root)
    uses_course = any(page.uses_course for page in pages)
    if uses_course:
        ship_course_code(tree, root, plan)
    copy_tools(tree, root)
    write_from_templates(tree, root, settings, pages, uses_course)
    _check_tree(tree.out, settings.private_pages)
    return Publication(
        sorted(tree.written),
        plan.moment,
        plan.chapter_numbers,
        plan.held,
        plan.warnings,
        frozenset(c.number for c in plan.manifest.chapters if c.exercise),
    )


def refuse_stale_notebooks(root: Path) -> None:
    """Refuse to publish student notebooks older than solutions/ (`release --check`): students would
    get an exercise that the grader no longer grades."""
    try:
        stale = release(check=True)
    except SourceError as exc:
        raise PublishError(str(exc)) from exc
    if stale:
        names = ", ".join(str(s.path.relative_to(root)) if s.path.is_relative_to(root) else str(s.path) for s in stale)
        raise PublishError(f"the student notebooks are out of date with solutions/ ({names}): run `make release` first")


def plan_publication(
    root: Path,
    settings: BookSettings,
    manifest: Manifest | None,
    through: str | None,
    at: datetime | None,
    everything: bool,
) -> Plan:
    """Decide the moment, the chapters published or held back and the pages, reading the course only:
    every refusal comes before the output folder is touched."""
    try:
        manifest = manifest or load(root / layout.MANIFEST_FILE.name)
        moment, warnings = choose_moment(manifest, through, at, everything)
    except ManifestError as exc:
        raise PublishError(str(exc)) from exc
    code = CourseCode(manifest, root / "course")
    ready, held = chapters_to_publish(root, manifest, moment, code)
    chapter_pages = {page for chapter in manifest.chapters for page in chapter.pages}
    published_pages = {page for chapter in ready for page in chapter.pages}
    toc = yaml.safe_load((root / "_toc.yml").read_text(encoding="utf-8"))
    listed = [d for d in toc_files(toc) if d not in settings.private_pages]
    docnames = [d for d in listed if d not in chapter_pages or d in published_pages]
    titles = {d: page_title(page_source(root, d)) for d in listed}
    return Plan(manifest, moment, warnings, code, ready, held, toc, docnames, titles)


def start_tree(out: Path) -> _Tree:
    """Empty the output folder (keeping a clone's `.git`) and mark it as written by `publish` first, so
    that a run that fails half-way leaves a folder the next run may empty again, and nothing else is."""
    _clear_output(out)
    tree = _Tree(out)
    tree.write(PUBLISHED_MARKER, MARKER_TEXT)
    return tree


def _clear_output(out: Path) -> None:
    """Empty `out`, only if it is empty already or holds `PUBLISHED_MARKER`: a folder of someone's own
    work given by mistake is refused, never emptied."""
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


def write_book_settings(tree: _Tree, root: Path, settings: BookSettings, plan: Plan) -> None:
    """The book's `_config.yml` as it is (its repository URL is the public one already) and a `_toc.yml`
    without the instructors' pages and the chapters not published yet: the tree builds its own site."""
    tree.write("_config.yml", _header("#", (root / "_config.yml").read_text(encoding="utf-8")))
    toc = public_toc(plan.toc, settings.private_pages, frozenset(plan.docnames))
    tree.write(
        "_toc.yml",
        "# Written by `autograder publish` from the course repository's _toc.yml "
        "(without its pages for instructors, and the chapters not open yet).\n"
        + yaml.safe_dump(toc, sort_keys=False, allow_unicode=True),
    )


def write_page(tree: _Tree, root: Path, settings: BookSettings, plan: Plan, docname: str) -> PublishedPage:
    """One page of the book: a student notebook as `release` wrote it; a Markdown page without its
    private lines, links to unpublished pages and with its chapters' status of this moment, then its
    lesson notebook (what the page's Colab button opens) and the images beside it."""
    source = page_source(root, docname)
    relative = source.relative_to(root).as_posix()
    if source.suffix == ".ipynb":
        tree.copy(root, relative)
        return PublishedPage(docname, source)
    text = source.read_text(encoding="utf-8")
    folder = Path(docname).parent.as_posix()
    folder = "" if folder == "." else folder
    page = unpublished_references(public_markdown(text), folder, set(plan.docnames), plan.titles)
    page = chapter_statuses(page, plan.manifest, plan.moment, plan.chapter_numbers, plan.held)
    tree.write(relative, page)
    published = PublishedPage(docname, source)
    if is_text_notebook(text):
        published = write_lesson_notebook(tree, settings, plan, published, folder, page)
    copy_assets(tree, root, source)
    return published


def write_lesson_notebook(
    tree: _Tree, settings: BookSettings, plan: Plan, page: PublishedPage, folder: str, text: str
) -> PublishedPage:
    """The lesson as a notebook (`lessons/NN_name.ipynb`, made from the page's public text) with the
    set-up cell that lets it run outside the book; whether it imports course/ decides if course/ ships."""
    nb = lesson_notebook(page.source, settings, plan.titles, folder, text)
    lesson = lesson_notebook_path(page.docname, settings)
    if lesson in tree.written:
        raise PublishError(f"two pages would both write {lesson}: rename one")
    tree.write(lesson, nbformat.writes(nb) + "\n")
    uses_course = imports_module("\n".join(c.source for c in nb.cells if c.cell_type == "code"), "course")
    return replace(page, lesson=lesson, uses_course=uses_course)


def copy_assets(tree: _Tree, root: Path, source: Path) -> None:
    """The images beside a page (`ASSET_SUFFIXES`), each once: the pages may display them."""
    for asset in sorted(source.parent.iterdir()):
        rel = asset.relative_to(root).as_posix()
        if asset.is_file() and asset.suffix.lower() in ASSET_SUFFIXES and rel not in tree.written:
            tree.copy(root, rel)


def copy_extensions(tree: _Tree, root: Path) -> None:
    """`_ext/`, the book's Sphinx extensions: the public site must look and check like the course's."""
    for path in sorted((root / "_ext").rglob("*")):
        if path.is_file() and "__pycache__" not in path.parts:
            tree.copy(root, path.relative_to(root).as_posix())


def ship_course_code(tree: _Tree, root: Path, plan: Plan) -> None:
    """course/*.py as students may see it now: a definition that answers an exercise not yet past its
    deadline is replaced by a comment (`CourseCode.published_text`); and the data files lessons read."""
    for path in sorted((root / "course").glob("*.py")):
        try:
            tree.write(path.relative_to(root).as_posix(), plan.code.published_text(path.stem, plan.moment.past_due))
        except CourseCodeError as exc:
            raise PublishError(str(exc)) from exc
    for path in sorted((root / "course").iterdir()):
        if path.is_file() and path.suffix in COURSE_DATA_SUFFIXES:
            tree.copy(root, path.relative_to(root).as_posix())


def copy_tools(tree: _Tree, root: Path) -> None:
    """The scripts the public Makefile runs (`TOOLS`): the site builds from the tree alone."""
    for relative in TOOLS:
        tree.copy(root, relative)


def write_from_templates(
    tree: _Tree, root: Path, settings: BookSettings, pages: list[PublishedPage], uses_course: bool
) -> None:
    """What a student's clone needs around the book, from `tools/public/`: requirements.txt (pyproject.toml's
    pins), the Makefile that builds the site, .gitignore, the Pages workflow, and a README listing the pages."""
    templates = layout.PUBLIC_TEMPLATES_DIR
    tree.write("requirements.txt", requirements(root))
    tree.write("Makefile", (templates / "Makefile").read_text(encoding="utf-8"))
    tree.write(".gitignore", (templates / "gitignore").read_text(encoding="utf-8"))
    tree.write(PAGES_WORKFLOW, (templates / "pages.yml").read_text(encoding="utf-8"))
    tree.write("README.md", student_readme(root, settings, pages, uses_course))


def _check_tree(out: Path, private: frozenset[str]) -> None:
    """Refuse a tree with nbgrader's solution or hidden-test markers, or a reference to a private page:
    the last guard, on what was actually written, whatever step let it through."""
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


# --- the files around the book: requirements.txt and the README ---------------------------


def requirements(root: Path = config.REPO_ROOT) -> str:
    """requirements.txt of the public release: pyproject.toml's pins for what it needs."""
    try:
        return pinned_requirements(PUBLIC_REQUIREMENTS, "autograder publish", root)
    except InputError as error:
        raise PublishError(str(error)) from error


def pages_url(settings: BookSettings) -> str:
    """Where GitHub Pages serves the public repository's site (a project site; a `<owner>.github.io` repository
    is the owner's site)."""
    owner, name = settings.github
    if name.lower() == f"{owner.lower()}.github.io":
        return f"https://{owner.lower()}.github.io/"
    return f"https://{owner.lower()}.github.io/{name}/"


def student_readme(root: Path, settings: BookSettings, pages: list[PublishedPage], uses_course: bool) -> str:
    """README.md of the public release, from tools/public/README.md."""
    rows = ["| page | open in Colab |", "|---|---|"]
    for page in pages:
        if page.docname == "intro":
            continue
        path = page.source.relative_to(root).as_posix()
        if page.source.suffix == ".ipynb":
            rows.append(
                f"| exercise: `{path}`, {page_title(page.source)} | [open `{path}`]({settings.colab_url(path)}) |"
            )
        else:
            colab = f"[open `{page.lesson}`]({settings.colab_url(page.lesson)})" if page.lesson else "—"
            rows.append(f"| lesson: `{path}`, {page_title(page.source)} | {colab} |")
    files = [
        "| path | what |",
        "|---|---|",
        "| `intro.md`, `chapters/*.md` | the lessons: the pages of the course website (MyST Markdown notebooks, run "
        "when the site is built) |",
        "| `chapters/*.ipynb` | the exercise notebooks: fill them in and submit them |",
        f"| `{settings.lesson_dir}/*.ipynb` | each lesson as a notebook, to run and change its code (on Colab or "
        "locally) |",
    ]
    if uses_course:
        files.append(
            "| `course/` | the course's code: `book.py`, every lesson's set-up (figures, glue, colours); "
            "`provided.py`, the reference code used by later lessons and given to later exercises; the models and "
            "data the lessons use (answers to exercises still open are left out) |"
        )
    files += [
        "| `_config.yml`, `_toc.yml`, `_ext/` | the website's settings, table of contents and Sphinx extensions |",
        "| `tools/vendor_mathjax.py` | downloads MathJax once, so the website renders math offline |",
        "| `Makefile`, `requirements.txt` | `make book` builds the website into `_build/html` |",
        f"| `{PAGES_WORKFLOW}` | GitHub Actions: `make book` on every push, deployed to GitHub Pages |",
    ]
    text = (layout.PUBLIC_TEMPLATES_DIR / "README.md").read_text(encoding="utf-8")
    replacements = {
        "{{title}}": settings.title,
        "{{repository_url}}": settings.repository_url,
        "{{repository_name}}": settings.github[1],
        "{{chapters}}": "\n".join(rows),
        "{{layout}}": "\n".join(files),
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
