"""Reading numbers out of a lesson page's text, for the lesson tests.

A lesson test module sets `LESSON = "chapters/NN_name.html"`; the fixtures `book`, `lesson_html` and `text`
(tests/conftest.py) then give the built book, that page's HTML and its visible text.
"""

from __future__ import annotations

import html
import re


def number(text: str, pattern: str) -> list[float]:
    """The numbers captured by `pattern` (groups of the form (\\S+)) in the page's text: trailing
    punctuation and a percent sign dropped, thousands separators removed ("1,024" -> 1024, "33%" -> 33)."""
    match = re.search(pattern, text)
    assert match, f"the lesson does not say: {pattern}"
    return [float(g.rstrip(".,:;)%").replace(",", "")) for g in match.groups()]


def visible_text(page_html: str) -> str:
    """A page's visible text: tags removed, entities decoded, whitespace collapsed."""
    return " ".join(html.unescape(re.sub(r"<[^>]+>", "", page_html)).split())
