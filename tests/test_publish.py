"""The public release (`autograder publish`) holds what students need and nothing of the answers.

- the tree has exactly the student-facing files: the book, the lessons (also as notebooks), the
  student notebooks as released, the README, Makefile and requirements, no solutions, hidden tests,
  catalogues, grader or instructor pages;
- no line of a solution region or of a hidden test of any `solutions/` notebook appears in the tree,
  in the site built here (`_build/html`, `_sources` and downloads included) or in the site built from
  the tree (policy for trivial lines: tests/support/leaks.py);
- the tree builds its own site with `-W -n` (the build `make book` and its GitHub Actions workflow run:
  tests/test_pages_workflow.py), and its lesson notebooks run outside the book;
- publishing is repeatable, keeps a clone's `.git`, and never empties a folder it did not write.

Run: PATH=.venv/bin:$PATH .venv/bin/python -m pytest tests/test_publish.py -q
"""

from __future__ import annotations

import os
import re
import shutil
import subprocess
import sys
from pathlib import Path

import nbformat
import pytest
import yaml

import axe
from autograder.cli import main as autograder_main
from autograder.model.notebooks import read, release_notebook, solution_paths
from book_build import ROOT
from chromium import new_context, served
from coursetools import layout
from coursetools.lesson_notebook import ADDED_TAG
from coursetools.pages import toc_files
from coursetools.publish import COURSE_DATA_SUFFIXES, PUBLISHED_MARKER, publish
from coursetools.site import PublishError, read_settings
from leaks import find_leaks, secret_lines
from publish_tree import LAST_CHAPTER, PUBLIC_BUILD, published

pytestmark = [pytest.mark.book, pytest.mark.slow]

SETTINGS = read_settings()
TOC = yaml.safe_load((ROOT / "_toc.yml").read_text(encoding="utf-8"))
PUBLIC_DOCNAMES = [d for d in toc_files(TOC) if d not in SETTINGS.private_pages]
# Lesson notebooks executed outside the book (each starts a kernel): one that uses both glue and
# course/provided.py, the two things its set-up cell replaces, and chapter 11's, which also reads course/corpus.txt.
EXECUTED_LESSONS = ["04_self_and_cross_attention", "11_tokens_and_families"]


@pytest.fixture(scope="module")
def tree() -> tuple[Path, list[str]]:
    return published()


@pytest.fixture(scope="module")
def secrets() -> dict[str, str]:
    found = secret_lines()
    assert len(found) > 100, f"only {len(found)} secret lines: is solutions/ read?"
    return found


def build_public_site(out: Path) -> tuple[subprocess.CompletedProcess, Path]:
    """A public tree's own site, built as its Makefile does; the lessons' executions come from this
    repository's jupyter cache (the same notebooks), MathJax from its _vendor folder."""
    shutil.rmtree(out / "_build", ignore_errors=True)
    shutil.copytree(ROOT / "_build" / ".jupyter_cache", out / "_build" / ".jupyter_cache")
    shutil.copytree(ROOT / "_vendor", out / "_vendor", dirs_exist_ok=True)
    env = dict(os.environ, PATH=str(Path(sys.executable).parent) + os.pathsep + os.environ.get("PATH", ""))
    env.pop("MPLBACKEND", None)
    result = subprocess.run(
        [sys.executable, *PUBLIC_BUILD], cwd=out, env=env, capture_output=True, text=True, timeout=600
    )
    return result, out / "_build" / "html"


@pytest.fixture(scope="module")
def public_site(tree, book) -> tuple[subprocess.CompletedProcess, Path]:
    """The site of the term's last week, built from its public tree."""
    return build_public_site(tree[0])


def test_the_site_of_an_early_week_shows_only_the_open_chapters(book, tmp_path):
    """The week chapter 03 opens: the public tree builds its own site without warnings (links to chapters not
    open yet are plain titles), with pages for chapters 00-03 only and the intro saying when 04 opens."""
    out = tmp_path / "week"
    publish(out, through="03", check_release=False)
    result, html_dir = build_public_site(out)
    assert result.returncode == 0, result.stdout[-3000:] + result.stderr[-3000:]
    assert "WARNING" not in result.stdout + result.stderr
    pages = sorted(p.stem for p in (html_dir / "chapters").glob("*.html"))
    assert pages == sorted(Path(d).name for d in PUBLIC_DOCNAMES if d.startswith("chapters/0") and d[9:11] <= "03")
    intro = re.sub(r"\s+", " ", re.sub(r"<[^>]+>", " ", (html_dir / "intro.html").read_text(encoding="utf-8")))
    assert re.search(r"03 Masks .*? open: exercise due \w{3} \d\d \w{3} \d{4}, \d\d:\d\d 04 ", intro), intro[:3000]
    assert re.search(r"04 Self-attention and cross-attention .*? opens \w{3} \d\d \w{3} \d{4}", intro)


def public_files(out: Path) -> set[str]:
    return {
        p.relative_to(out).as_posix()
        for p in out.rglob("*")
        if p.is_file() and "_build" not in p.parts and "_vendor" not in p.parts
    }


def test_tree_holds_exactly_the_student_files(tree):
    out, written = tree
    files = set(written)
    assert public_files(out) == files, "files on disk that publish did not report (or the reverse)"
    pages = set()
    for docname in PUBLIC_DOCNAMES:
        pages |= {f"{docname}{suffix}" for suffix in (".md", ".ipynb") if (ROOT / f"{docname}{suffix}").is_file()}
    lessons = {
        f"{SETTINGS.lesson_dir}/{d.rsplit('/', 1)[-1]}.ipynb"
        for d in PUBLIC_DOCNAMES
        if (ROOT / f"{d}.md").is_file() and "kernelspec" in (ROOT / f"{d}.md").read_text(encoding="utf-8")
    }
    ext = {
        p.relative_to(ROOT).as_posix()
        for p in (ROOT / "_ext").rglob("*")
        if p.is_file() and "__pycache__" not in p.parts
    }
    course = {
        p.relative_to(ROOT).as_posix()
        for p in (ROOT / "course").iterdir()
        if p.is_file() and p.suffix in (".py", *COURSE_DATA_SUFFIXES)
    }
    expected = (
        pages
        | lessons
        | ext
        | course
        | {
            PUBLISHED_MARKER,
            ".gitignore",
            "Makefile",
            "README.md",
            "requirements.txt",
            "_config.yml",
            "_toc.yml",
            "tools/vendor_mathjax.py",
            "tools/build_book.py",
            ".github/workflows/pages.yml",
        }
    )
    assert files == expected, f"unexpected: {sorted(files - expected)}; missing: {sorted(expected - files)}"
    for forbidden in ("solutions/", "tests/", "autograder/", "grading/", "pyproject.toml"):
        assert not any(f.startswith(forbidden) or f == forbidden for f in files), forbidden
    for page in SETTINGS.private_pages:
        assert not any(Path(f).with_suffix("").as_posix() == page for f in files), (
            f"the private page {page} was published"
        )


def test_student_notebooks_are_the_released_ones(tree):
    out, written = tree
    notebooks = [f for f in written if f.startswith("chapters/") and f.endswith(".ipynb")]
    assert notebooks, "no student notebook was published"
    by_name = {p.stem: p for p in solution_paths()}
    for relative in notebooks:
        source = by_name[Path(relative).stem]
        assert (out / relative).read_text(encoding="utf-8") == nbformat.writes(release_notebook(read(source))) + "\n", (
            relative
        )
        assert (out / relative).read_bytes() == (ROOT / relative).read_bytes(), relative


def test_public_toc_lists_every_public_page_and_no_private_one(tree):
    out, _ = tree
    public = yaml.safe_load((out / "_toc.yml").read_text(encoding="utf-8"))
    assert toc_files(public) == PUBLIC_DOCNAMES
    intro = (out / "intro.md").read_text(encoding="utf-8")
    assert "% BEGIN PRIVATE" not in intro and "% PUBLIC:" not in intro
    assert "**Instructors.**" in intro, "the public intro lost its line for instructors"


def test_no_solution_or_hidden_test_line_in_the_public_release(tree, secrets):
    out, _ = tree
    leaks = find_leaks(out, secrets)
    assert not leaks, "the public release contains lines of solutions or hidden tests:\n" + "\n".join(leaks)


def test_no_solution_or_hidden_test_line_in_the_built_site(book, secrets):
    leaks = find_leaks(book.html_dir, secrets)
    assert not leaks, "the site (_build/html) contains lines of solutions or hidden tests:\n" + "\n".join(leaks)


def test_the_leak_check_finds_a_leak(tmp_path, secrets):
    """The check itself: a solution line pasted into a page (as HTML, and in a notebook) is found."""
    line, origin = next((line, origin) for line, origin in secrets.items() if "(solution)" in origin and '"' in line)
    (tmp_path / "page.html").write_text(
        "<pre>" + "".join(f'<span class="n">{c}</span>' for c in line.replace('"', "&quot;")) + "</pre>"
    )
    nb = nbformat.v4.new_notebook(cells=[nbformat.v4.new_code_cell("x = 1\n    " + line)])
    nbformat.write(nb, str(tmp_path / "copy.ipynb"))
    assert len(find_leaks(tmp_path, {line: origin})) == 2


def test_public_release_builds_its_site_without_warnings(public_site, secrets):
    result, html_dir = public_site
    log = result.stdout + result.stderr
    assert result.returncode == 0, log[-6000:]
    assert not [line for line in log.splitlines() if "WARNING" in line], log[-6000:]
    built = {
        p.relative_to(html_dir).with_suffix("").as_posix() for p in html_dir.rglob("*.html") if "_static" not in p.parts
    }
    assert built - {"genindex", "search", "index"} == set(PUBLIC_DOCNAMES)
    leaks = find_leaks(html_dir, secrets)
    assert not leaks, "the public release's site contains lines of solutions or hidden tests:\n" + "\n".join(leaks)


def test_public_site_passes_wcag_2_1_aa_in_both_modes(public_site, browser):
    """Every page of the public release's own site, opened in Chromium: axe-core finds no WCAG 2.1 A/AA violation
    in the light or the dark mode (the site built here is checked at both widths in tests/test_browser.py)."""
    _, html_dir = public_site
    problems = []
    with served(html_dir) as base_url:
        context = new_context(browser, 1280)
        page = context.new_page()
        try:
            for docname in PUBLIC_DOCNAMES:  # index.html only redirects to the intro
                page.goto(f"{base_url}{docname}.html", wait_until="load")
                problems += [f"{docname}: {line}" for line in axe.in_both_modes(page)]
        finally:
            context.close()
    assert not problems, "\n".join(problems)


def lesson_path(docname: str) -> str:
    return f"{SETTINGS.lesson_dir}/{docname.rsplit('/', 1)[-1]}.ipynb"


def test_public_site_colab_links_open_notebooks_of_the_release(tree, public_site):
    out, written = tree
    _, html_dir = public_site
    prefix = f"https://colab.research.google.com/github/{'/'.join(SETTINGS.github)}/blob/{SETTINGS.branch}/"
    for docname in PUBLIC_DOCNAMES:
        links = re.findall(
            r'href="(https://colab\.research\.google\.com/[^"]+)"',
            (html_dir / f"{docname}.html").read_text(encoding="utf-8"),
        )
        for link in links:
            assert link.startswith(prefix) and (out / link.removeprefix(prefix)).is_file(), f"{docname}: {link}"
        notebook = f"{docname}.ipynb" if (ROOT / f"{docname}.ipynb").is_file() else lesson_path(docname)
        assert len(links) == (1 if notebook in written else 0), f"{docname}: Colab links {links}"


def test_lesson_notebooks_have_the_lessons_code(tree):
    from myst_nb.core.read import read_myst_markdown_notebook

    out, written = tree
    lessons = {lesson_path(d): ROOT / f"{d}.md" for d in PUBLIC_DOCNAMES if (ROOT / f"{d}.md").is_file()}
    published_lessons = [f for f in written if f.startswith(SETTINGS.lesson_dir + "/")]
    assert published_lessons
    for relative in published_lessons:
        nb = nbformat.read(str(out / relative), as_version=4)
        nbformat.validate(nb)
        md = lessons[relative]
        lesson = read_myst_markdown_notebook(md.read_text(encoding="utf-8"), path=md)
        code = [c.source for c in nb.cells if c.cell_type == "code" and ADDED_TAG not in c.metadata.get("tags", [])]
        assert code == [c.source for c in lesson.cells if c.cell_type == "code"], relative
        text = "\n".join(c.source for c in nb.cells if c.cell_type == "markdown")
        assert not re.search(r"\{(glue|doc|ref)[:}]", text), f"{relative}: MyST roles left for Colab to show raw"
        assert not re.search(r"^:::\{", text, re.MULTILINE), f"{relative}: a MyST dropdown left for Colab to show raw"
        used = set(re.findall(r"^\s*(?:from|import)\s+course\.(\w+)", "\n".join(code), re.MULTILINE))
        setup = nb.cells[[c.cell_type for c in nb.cells].index("code")].source
        for module in used:  # on Colab the set-up cell fetches every course module the lesson imports
            assert f"'{module}'" in setup and SETTINGS.raw_url("course/") in setup, (
                f"{relative}: course/{module}.py not fetched"
            )
            assert (out / "course" / f"{module}.py").is_file(), f"course/{module}.py is not in the public tree"
        for data in re.findall(r"""["']([\w.-]+\.txt)["']""", "\n".join(code)):  # a data file it reads, e.g. corpus.txt
            assert f"'{data}'" in setup and (out / "course" / data).is_file(), f"{relative}: course/{data} not fetched"


@pytest.mark.parametrize("name", EXECUTED_LESSONS)
def test_lesson_notebook_runs_outside_the_book(tree, name):
    """As a student runs it from a clone: a fresh kernel, in lessons/, myst_nb not used."""
    from nbclient import NotebookClient

    out, _ = tree
    path = out / SETTINGS.lesson_dir / f"{name}.ipynb"
    nb = nbformat.read(str(path), as_version=4)
    NotebookClient(nb, timeout=120, kernel_name="python3", resources={"metadata": {"path": str(path.parent)}}).execute()
    errors = [
        o for c in nb.cells if c.cell_type == "code" for o in c.get("outputs", []) if o.get("output_type") == "error"
    ]
    assert not errors, errors


def test_readme_links_every_notebook_on_colab(tree):
    out, written = tree
    readme = (out / "README.md").read_text(encoding="utf-8")
    assert SETTINGS.repository_url in readme
    for relative in written:
        if relative.endswith(".ipynb"):
            assert SETTINGS.colab_url(relative) in readme, f"README.md: no Colab link to {relative}"
    assert "{{" not in readme
    requirements = (out / "requirements.txt").read_text(encoding="utf-8")
    assert "torch==" in requirements and "jupyter-book" in requirements and "nbgrader" not in requirements


def test_publishing_again_writes_the_same_tree_and_keeps_git(tree, tmp_path):
    out, written = tree
    clone = tmp_path / "clone"
    (clone / ".git").mkdir(parents=True)
    (clone / ".git" / "HEAD").write_text("ref: refs/heads/main\n")
    assert autograder_main(["publish", "--out", str(clone), "--through", LAST_CHAPTER]) == 0
    (clone / "stale.txt").write_text("left over from an older release\n")
    assert autograder_main(["publish", "--out", str(clone), "--through", LAST_CHAPTER]) == 0
    assert (clone / ".git" / "HEAD").is_file(), "publish removed the clone's .git"
    assert not (clone / "stale.txt").exists(), "a file of an older release survived"
    assert public_files(clone) - {p for p in public_files(clone) if p.startswith(".git/")} == set(written)
    for relative in written:
        assert (clone / relative).read_bytes() == (out / relative).read_bytes(), (
            f"{relative} differs between two publishes"
        )


def test_publish_refuses_a_folder_it_did_not_write(tmp_path):
    (tmp_path / "notes.txt").write_text("mine\n")
    with pytest.raises(PublishError, match="not written by"):
        publish(tmp_path, check_release=False)
    assert (tmp_path / "notes.txt").read_text() == "mine\n"


def test_make_publish_default_folder_is_ignored_by_git():
    assert layout.PUBLISH_DIR == ROOT / "_publish"
    assert "_publish/" in (ROOT / ".gitignore").read_text().splitlines()
