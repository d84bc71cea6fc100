"""A feedback page is one self-contained HTML file: it loads nothing from any other host
(no require.js, MathJax, fonts or styles from a CDN), and its math is rendered to MathML
when the page is written, so it reads the same offline as online.

Built without running the grader: a Result is made up and the reference submission
stands in for the executed notebook. The browser test uses the Debian Chromium at
/usr/bin/chromium through Playwright (never `playwright install`), as test_browser.py does.
Run: .venv/bin/python -m pytest tests/test_feedback_page.py -q
"""

from __future__ import annotations

import re
from html.parser import HTMLParser
from pathlib import Path

import nbformat
import pytest

from autograder.model.notebooks import grade_id, is_test_cell, max_points, read, release_notebook, source_notebook
from autograder.model.records import CellResult, Result
from autograder.reporting.feedback import feedback_notebook, render_html, tex_to_mathml
from coursetools.samples import make_submission
from helpers import offline_page

NOTEBOOK = "02_dot_product_attention"
# Every formula of the course's notebooks, and the macros the issue asks about.
COURSE_FORMULAS = [
    (
        r"\text{weights} = \text{softmax}\left(\frac{QK^\top}{\sqrt{d_k}}\right), \qquad \text{output} = "
        r"\text{weights}\, V .",
        True,
    ),
    (r"\text{softmax}(x)_i = \dfrac{e^{x_i}}{\sum_j e^{x_j}}", False),
    (r"e^{x_i}", False),
    (r"\text{softmax}(x) = \text{softmax}(x - c)", False),
    (r"e^0 = 1", False),
    (r"QK^\top / \sqrt{d_k}", False),
    (r"d_k", False),
    (r"-\infty", False),
]
# A failure message with dollar signs: text, not a formula.
MESSAGE = "AssertionError: weights do not sum to 1 (cost $5, not $6)"


# ---------------------------------------------------------------- building the page


def _feedback_nb() -> nbformat.NotebookNode:
    """What `autograder feedback` renders for one student: one test passed, one failed."""
    source = read(source_notebook(NOTEBOOK))
    released = release_notebook(source)
    executed = make_submission(NOTEBOOK)
    # An executed notebook has the test cells' full source (hidden tests included).
    full_source = {grade_id(c): c.source for c in source.cells if is_test_cell(c)}
    for cell in executed.cells:
        if is_test_cell(cell):
            cell.source = full_source[grade_id(cell)]
    points = max_points(source)
    ids = list(points)
    assert len(ids) >= 2, f"{NOTEBOOK} has fewer than two test cells"
    cells = [CellResult(ids[0], points[ids[0]], points[ids[0]])]
    cells += [CellResult(gid, 0.0, points[gid], MESSAGE) for gid in ids[1:]]
    result = Result(
        student="alice",
        notebook=NOTEBOOK,
        score=points[ids[0]],
        max_score=sum(points.values()),
        cells=cells,
    )
    return feedback_notebook(result, executed, source, released)


@pytest.fixture(scope="module")
def page_html() -> str:
    return render_html(_feedback_nb())


@pytest.fixture(scope="module")
def page_file(page_html, tmp_path_factory) -> Path:
    path = tmp_path_factory.mktemp("feedback") / "alice" / f"{NOTEBOOK}.html"
    path.parent.mkdir(parents=True)
    path.write_text(page_html, encoding="utf-8")
    return path


class _Elements(HTMLParser):
    """Tags with their attributes, and the text outside <code>, <pre> and <math>."""

    def __init__(self) -> None:
        super().__init__(convert_charrefs=True)
        self.tags: list[tuple[str, dict[str, str]]] = []
        self.prose: list[str] = []
        self._skip: list[str] = []

    def handle_starttag(self, tag, attrs):
        self.tags.append((tag, {k: v or "" for k, v in attrs}))
        if tag in ("code", "pre", "math", "style", "script"):
            self._skip.append(tag)

    def handle_endtag(self, tag):
        if self._skip and self._skip[-1] == tag:
            self._skip.pop()

    def handle_data(self, data):
        if not self._skip:
            self.prose.append(data)


def _parse(text: str) -> _Elements:
    parser = _Elements()
    parser.feed(text)
    parser.close()
    return parser


# ---------------------------------------------------------------- fast checks, no browser


def test_page_loads_no_script_stylesheet_or_font_from_anywhere(page_html):
    tags = _parse(page_html).tags
    remote = re.compile(r"^\s*(https?:)?//", re.I)
    off_page = [
        (tag, attrs)
        for tag, attrs in tags
        if tag in ("script", "link", "img", "iframe", "source", "embed", "object")
        for key in ("src", "href", "data")
        if remote.match(attrs.get(key, ""))
    ]
    assert not off_page, f"elements that fetch from another host: {off_page}"
    scripts = [attrs for tag, attrs in tags if tag == "script" and "src" in attrs]
    assert not scripts, f"the page loads scripts from files: {scripts}"
    assert not [attrs for tag, attrs in tags if tag == "link" and "stylesheet" in attrs.get("rel", "")], (
        "external stylesheet"
    )
    for needle in ("cdnjs", "unpkg.com", "jsdelivr", "mathjax", "require.min.js", "@import", "url(http", "url(//"):
        assert needle not in page_html.lower(), f"{needle!r} in the feedback page"


def test_math_is_mathml_and_no_tex_is_left_in_the_prose(page_html):
    assert page_html.count("<math") >= len(COURSE_FORMULAS)
    assert re.search(r'<math[^>]*display="block"', page_html), "the intro formula is not display MathML"
    prose = "".join(_parse(page_html).prose)
    for raw in ("$$", "\\frac", "\\text", "\\sqrt", "\\top", "tex-source"):
        assert raw not in prose, f"raw TeX {raw!r} in the feedback page's text"
    assert 'class="tex-source' not in page_html, "a course formula was not converted"


def test_page_still_says_what_failed(page_html):
    text = "".join(_parse(page_html).prose)
    assert "Feedback: " + NOTEBOOK in text
    assert MESSAGE in text, "the failure message is missing from the summary, or was rendered as math"


@pytest.mark.parametrize("tex,display", COURSE_FORMULAS)
def test_every_course_formula_converts(tex, display):
    mathml = tex_to_mathml(tex, display=display)
    assert mathml.startswith("<math") and mathml.endswith("</math>"), mathml
    assert "\\" not in mathml, f"TeX left in the MathML: {mathml}"
    assert f'display="{"block" if display else "inline"}"' in mathml


def test_macros_the_course_uses():
    mathml = tex_to_mathml(COURSE_FORMULAS[0][0], display=True)
    for fragment in (
        "<mtext>weights</mtext>",
        "<mfrac>",
        "<msqrt>",
        "\u22a4",
        'stretchy="true"',
        '<mspace width="2em"',
    ):
        assert fragment in mathml, f"{fragment!r} missing from {mathml}"
    mathml = tex_to_mathml(r"\dfrac{e^{x_i}}{\sum_j e^{x_j}}")
    assert 'displaystyle="true"' in mathml and "\u2211" in mathml


def test_unconvertible_math_shows_its_tex_as_code():
    for tex in (r"\frac{1}{", r"\notamacro{x}"):
        out = tex_to_mathml(tex)
        assert out.startswith("<code") and "<math" not in out, out
        assert tex.replace("<", "&lt;") in out


def test_text_in_math_cannot_inject_markup():
    out = tex_to_mathml(r"\text{a<b & </math><script>alert(1)</script>}")
    assert "<script>" not in out and "&lt;script&gt;" in out and "&amp;" in out


def test_dollars_outside_math_are_left_alone():
    nb = nbformat.v4.new_notebook(
        cells=[
            nbformat.v4.new_markdown_cell(
                "Inline `$HOME` and `$$x$$`; it costs $5.\n\n```bash\necho $$ $PATH\n```\n\nMath: $e^{x_i}$"
            ),
            nbformat.v4.new_code_cell(
                "print('$$a$$ and $b$')",
                outputs=[
                    nbformat.v4.new_output("stream", name="stdout", text="$$a$$ and $b$\n"),
                ],
            ),
        ]
    )
    out = render_html(nb)
    assert "<code>$HOME</code>" in out and "<code>$$x$$</code>" in out
    assert "costs $5." in out
    assert "$PATH" in out
    assert "<pre>$$a$$ and $b$\n</pre>" in out, "a code cell's output was changed"
    assert "&#x27;$$a$$ and $b$&#x27;" in out or "'$$a$$ and $b$'" in out, "a code cell's source was changed"
    assert out.count("<math") == 1


def test_latex_outputs_are_mathml_too():
    nb = nbformat.v4.new_notebook(
        cells=[
            nbformat.v4.new_code_cell(
                "x",
                outputs=[
                    nbformat.v4.new_output(
                        "display_data", data={"text/latex": r"$$\frac{a}{b}$$", "text/plain": "a/b"}
                    ),
                ],
            )
        ]
    )
    out = render_html(nb)
    assert "<mfrac>" in out and "$$" not in out


# ---------------------------------------------------------------- in a real browser


def test_feedback_page_in_chromium(browser, page_file):
    with offline_page(browser, page_file) as visit:
        page = visit.page
        assert not visit.others, f"the feedback page made requests besides itself: {visit.others}"
        assert not visit.errors, "console errors:\n" + "\n".join(visit.errors)

        assert page.locator("math").count() >= len(COURSE_FORMULAS)
        intro = page.locator('math[display="block"]').filter(has_text="weights").first
        assert intro.count() == 1, "the intro formula is not on the page as MathML"
        box = intro.bounding_box()
        assert box and box["width"] > 100 and box["height"] > 20, f"the intro formula is not laid out as math: {box}"
        # Chromium renders MathML natively: the fraction is laid out as one (numerator above denominator).
        num, den = (intro.locator("mfrac > *").nth(i).bounding_box() for i in (0, 1))
        assert num and den and num["y"] + num["height"] <= den["y"] + 1, f"the fraction is not stacked: {num} {den}"

        body = page.inner_text("body")
        for raw in ("$$", "\\frac", "\\text", "\\sqrt"):
            assert raw not in body, f"raw TeX {raw!r} visible on the feedback page"
        assert MESSAGE in body
