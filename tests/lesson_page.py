"""Fixtures for the tests of one lesson page: the built book, the page's HTML and its visible text.

A test module sets `LESSON = "chapters/NN_name.html"` and imports what it uses:

    from lesson_page import book, lesson_html, number, text  # noqa: F401 - fixtures
"""

from __future__ import annotations

import html
import re

import pytest

from book_build import BookBuild, build_book


@pytest.fixture(scope="module")
def book() -> BookBuild:
    build = build_book()
    assert build.returncode == 0, f"jupyter-book build failed (exit {build.returncode}):\n{build.log[-6000:]}"
    return build


@pytest.fixture(scope="module")
def lesson_html(book, request) -> str:
    lesson = request.module.LESSON
    path = book.html_dir / lesson
    assert path.is_file(), f"{lesson} was not built (is {lesson.removesuffix('.html')} in _toc.yml?)"
    return path.read_text(encoding="utf8")


@pytest.fixture(scope="module")
def text(lesson_html) -> str:
    """The page's visible text, tags removed, entities decoded, whitespace collapsed."""
    return " ".join(html.unescape(re.sub(r"<[^>]+>", "", lesson_html)).split())


def number(text: str, pattern: str) -> list[float]:
    """The numbers captured by `pattern` (groups of the form (\\S+)) in the page's text: trailing
    punctuation and a percent sign dropped, thousands separators removed ("1,024" -> 1024, "33%" -> 33)."""
    match = re.search(pattern, text)
    assert match, f"the lesson does not say: {pattern}"
    return [float(g.rstrip(".,:;)%").replace(",", "")) for g in match.groups()]
