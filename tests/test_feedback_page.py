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

from autograder.model.notebooks import (
    grade_id,
    is_judge_helpers_cell,
    is_test_cell,
    max_points,
    read,
    release_notebook,
    source_notebook,
)
from autograder.model.records import CellResult, Result
from autograder.reporting.feedback import feedback_notebook
from autograder.reporting.feedback_page import render_html
from autograder.reporting.mathml import tex_to_mathml
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
    return render_html(_feedback_nb(), trusted_header=True)


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


# ---------------------------------------------------------------- student markup is data (issue 30)
# Each payload, if it ever ran, would add its name to window.__pwned; each beacon, if loaded, is a request to
# evil.example (offline_page records every request but the page's own).
def _ran(name: str) -> str:
    return f"window.__pwned=(window.__pwned||[]).concat(['{name}'])"


PNG_1PX = "iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mNk+M9QDwADhgGAWjR9awAAAABJRU5ErkJggg=="
FORGED = "Student alice: 12 / 12 points."
MARKDOWN_ATTACKS = {
    "md-script": f"<script>{_ran('md-script')}</script>",
    "md-onerror": f'<img src=x onerror="{_ran("md-onerror")}">',
    "md-link": f"[click me]({'javascript:' + _ran('md-link')})",
    "md-beacon": '<img src="http://evil.example/beacon-md-html.png">\n\n![beacon](http://evil.example/beacon-md.png)',
    # hides the real header and lays a forged score over the page
    "md-style": "<style>header, h1, .ag-score, table { display: none !important; }</style>\n\n"
    '<div class="jp-Dialog" style="position: fixed; top: 0; left: 0; width: 100%; height: 100%; '
    f'background: white; font-size: 40px; z-index: 9999">{FORGED}</div>',
    "md-iframe": '<iframe src="http://evil.example/frame"></iframe><form action="http://evil.example/f">'
    '<input name="q"><button>send</button></form><svg><script>' + _ran("svg") + "</script></svg>",
}
OUTPUT_ATTACKS = [
    {"text/html": f'<script>{_ran("html-script")}</script><img src=x onerror="{_ran("html-onerror")}">'},
    {
        "text/html": '<img src="http://evil.example/beacon-html.png"><link rel="stylesheet" href="http://evil.example/s.css">'
    },
    {"application/javascript": _ran("javascript"), "text/plain": "<IPython.core.display.Javascript object>"},
    {"text/markdown": f"<script>{_ran('markdown-script')}</script>\n\n[md link](javascript:{_ran('md-out-link')})"},
    {"image/svg+xml": f'<svg xmlns="http://www.w3.org/2000/svg"><script>{_ran("svg-output")}</script></svg>'},
    {"application/vnd.jupyter.widget-view+json": {"model_id": "</script><script>" + _ran("widget") + "</script>"}},
]
MESSAGE_ATTACK = (
    f"AssertionError: [click]({'javascript:' + _ran('message-link')}) "
    '![beacon](http://evil.example/beacon-message.png) <img src=x onerror="' + _ran("message-onerror") + '">'
)


def _attack_nb() -> tuple[nbformat.NotebookNode, str]:
    """A graded notebook whose Markdown cells, outputs and failure messages carry every attack of issue 30,
    all before the first test cell (where outputs are shown); every test failed. Returns it and the real score."""
    source = read(source_notebook(NOTEBOOK))
    released = release_notebook(source)
    executed = make_submission(NOTEBOOK)
    attacks = [nbformat.v4.new_markdown_cell(text) for text in MARKDOWN_ATTACKS.values()]
    outputs = [nbformat.v4.new_output("display_data", data=data) for data in OUTPUT_ATTACKS]
    # an image whose size metadata would be spliced into the <img> tag unquoted
    outputs.append(
        nbformat.v4.new_output(
            "display_data",
            data={"image/png": PNG_1PX},
            metadata={"image/png": {"width": f"1 onerror={_ran('png-width')}"}},
        )
    )
    outputs.append(
        nbformat.v4.new_output("error", ename="ValueError", evalue=MESSAGE_ATTACK, traceback=[MESSAGE_ATTACK])
    )
    attacks.append(nbformat.v4.new_code_cell("show()", outputs=outputs))
    attacks.append(nbformat.v4.new_raw_cell(f"<script>{_ran('raw-cell')}</script>"))
    tagged = nbformat.v4.new_markdown_cell(FORGED)
    tagged.metadata["tags"] = ["jp-Dialog"]  # nbconvert writes tags into the cell's class
    attacks.append(tagged)
    executed.cells = attacks + executed.cells
    points = max_points(source)
    result = Result(
        student="alice",
        notebook=NOTEBOOK,
        score=0.0,
        max_score=sum(points.values()),
        cells=[CellResult(gid, 0.0, pts, MESSAGE_ATTACK) for gid, pts in points.items()],
    )
    return feedback_notebook(result, executed, source, released), f"0 / {sum(points.values()):g}"


@pytest.fixture(scope="module")
def attack_page(tmp_path_factory) -> tuple[Path, str, str]:
    nb, score = _attack_nb()
    text = render_html(nb, trusted_header=True)
    path = tmp_path_factory.mktemp("attack") / "alice" / f"{NOTEBOOK}.html"
    path.parent.mkdir(parents=True)
    path.write_text(text, encoding="utf-8")
    return path, text, score


ACTIVE_TAGS = ("script", "style", "iframe", "frame", "object", "embed", "form", "input", "button", "svg", "link",
               "base", "meta", "template", "textarea", "select")  # fmt: skip


def _active(text: str) -> list[str]:
    """What could run, load or restyle in the page's <body> (the <head> is the grader's)."""
    body = text[text.index("<body") :]
    found = []
    for tag, attrs in _parse(body).tags:
        if tag in ACTIVE_TAGS:
            found.append(f"<{tag}>")
        for name, value in attrs.items():
            if name.startswith("on") or name in ("style", "srcset", "formaction", "ping", "background"):
                found.append(f"<{tag} {name}>")
            if name in ("href", "src", "action", "data") and not re.match(
                r"^(https?:|mailto:|data:image/(png|jpeg);)", value
            ):
                found.append(f"<{tag} {name}={value[:40]!r}>")
            if tag == "img" and name == "src" and not value.startswith("data:image/"):
                found.append(f"<img src={value[:40]!r}>")
        if tag not in ("header",) and "jp-Dialog" in attrs.get("class", ""):
            found.append(f"<{tag} class=jp-Dialog>")
    return found


def test_nothing_a_student_wrote_is_active_in_the_page(attack_page):
    _, text, _ = attack_page
    assert not _active(text), f"active student markup in the feedback page: {_active(text)}"
    assert "evil.example/beacon" not in text.replace("http://evil.example/beacon-message.png", ""), (
        "a remote image is in the page"
    )
    head = text[: text.index("<body")]
    assert "Content-Security-Policy" in head and "default-src 'none'" in head, "no Content-Security-Policy"


def test_the_score_and_messages_are_the_graders_text(attack_page):
    _, text, score = attack_page
    header = text[text.index('<header class="ag-summary"') : text.index("</header>")]
    assert score in "".join(_parse(header).prose), "the real score is not in the page's header"
    tags = [tag for tag, _ in _parse(header).tags]
    assert "a" not in tags and "img" not in tags, "a failure message became a link or an image"
    assert "[click](javascript:" in html_unescape(header), "the failure message is not shown as its text"


def html_unescape(text: str) -> str:
    import html

    return html.unescape(text)


def test_student_markup_does_not_run_load_or_cover_the_score_in_chromium(browser, attack_page):
    path, _, score = attack_page
    with offline_page(browser, path) as visit:
        page = visit.page
        dialogs: list[str] = []
        page.on("dialog", lambda d: (dialogs.append(d.message), d.dismiss()))
        assert not visit.others, f"the page made requests besides itself: {visit.others}"
        for link in ("click me", "md link"):
            anchors = page.get_by_text(link, exact=True)
            assert anchors.count() >= 1, f"the link text {link!r} is not on the page"
            anchors.first.click()
        page.wait_for_timeout(200)
        assert page.evaluate("window.__pwned === undefined"), f"student code ran: {page.evaluate('window.__pwned')}"
        assert not dialogs
        active = page.evaluate(
            """() => [...document.body.querySelectorAll('*')].filter(e =>
                   ['SCRIPT', 'STYLE', 'IFRAME', 'FORM', 'OBJECT', 'EMBED', 'svg', 'LINK'].includes(e.tagName) ||
                   [...e.attributes].some(a => a.name.startsWith('on') || a.name === 'style' ||
                                              /^\\s*javascript:/i.test(a.value))).map(e => e.outerHTML.slice(0, 80))"""
        )
        assert not active, f"active elements in the page: {active}"
        # the real score: visible, on top (what is drawn at its centre is the header), above the notebook
        real = page.locator("header.ag-summary .ag-score")
        real.scroll_into_view_if_needed()
        assert real.is_visible() and score in real.inner_text(), "the real score is not visible"
        box = real.bounding_box()
        assert box and box["width"] > 0 and box["height"] > 0
        on_top = page.evaluate(
            "([x, y]) => !!document.elementFromPoint(x, y)?.closest('header.ag-summary')",
            [box["x"] + box["width"] / 2, box["y"] + box["height"] / 2],
        )
        assert on_top, "something covers the real score"
        forged = page.get_by_text(FORGED).first
        forged_box = forged.bounding_box()
        header_box = page.locator("header.ag-summary").bounding_box()
        assert forged_box and header_box and forged_box["y"] >= header_box["y"] + header_box["height"], (
            "the forged score is drawn over or above the grader's summary"
        )
        assert (
            page.locator("header.ag-summary table tr").count() == len(max_points(read(source_notebook(NOTEBOOK)))) + 1
        )
        assert page.title() == f"Feedback: {NOTEBOOK}"
        assert not visit.errors, "console errors (a blocked load or script):\n" + "\n".join(visit.errors)


def test_math_still_renders_under_the_content_security_policy(browser, page_file):
    """The policy forbids scripts and loads: MathML needs neither."""
    with offline_page(browser, page_file) as visit:
        box = visit.page.locator('math[display="block"]').first.bounding_box()
        assert box and box["width"] > 100 and box["height"] > 20, box
        policy = visit.page.locator('meta[http-equiv="Content-Security-Policy"]').get_attribute("content")
        assert policy and "default-src 'none'" in policy


# ---------------------------------------------------------------- a page of bounded size and time (issue 30)


def _graded(extra_cells: list) -> tuple[nbformat.NotebookNode, nbformat.NotebookNode, nbformat.NotebookNode, Result]:
    source = read(source_notebook(NOTEBOOK))
    released = release_notebook(source)
    executed = make_submission(NOTEBOOK)
    executed.cells = extra_cells + executed.cells
    points = max_points(source)
    result = Result(
        "alice", NOTEBOOK, 0.0, sum(points.values()), [CellResult(g, 0.0, p, "failed") for g, p in points.items()]
    )
    return executed, source, released, result


def test_sixty_large_display_outputs_are_cut_and_the_page_says_so():
    """Issue 30: 60 display outputs of 1.9 MB each in three cells made a 109 MiB feedback page."""
    big = "A" * 1_900_000
    cells = [
        nbformat.v4.new_code_cell(
            "show()", outputs=[nbformat.v4.new_output("display_data", data={"text/html": big}) for _ in range(20)]
        )
        for _ in range(3)
    ]
    executed, source, released, result = _graded(cells)
    nb = feedback_notebook(result, executed, source, released)
    text = render_html(nb, trusted_header=True)
    from autograder import config

    assert len(text) < config.FEEDBACK_MAX_CHARS + 2_000_000, f"page of {len(text):,} characters"
    header = html_unescape(text[text.index('<header class="ag-summary"') : text.index("</header>")])
    assert "60 output(s) (114,000,000 characters) are not shown" in header, header
    assert text.count("[an output of 1,900,000 characters is not shown on this page]") == 60


@pytest.mark.slow
def test_a_page_of_fifty_thousand_cells_is_bounded_and_says_so():
    """Issue 30: the feedback page of a 50,000-cell notebook took 137 s to 6 min 41 s (about 10 ms a cell)."""
    import time

    from autograder import config

    cells = [nbformat.v4.new_code_cell(f"extra_{i} = {i}") for i in range(50_000)]
    executed, source, released, result = _graded(cells)
    started = time.monotonic()
    nb = feedback_notebook(result, executed, source, released)
    text = render_html(nb, trusted_header=True)
    seconds = time.monotonic() - started
    shown = [c.source for c in nb.cells if c.source.startswith("extra_")]
    assert shown == [f"extra_{i} = {i}" for i in range(config.FEEDBACK_MAX_CELLS)], "not the first cells, in order"
    assert sum(1 for c in nb.cells if is_test_cell(c)) == len(max_points(source)), "a test cell was cut"
    header = html_unescape(text[text.index('<header class="ag-summary"') : text.index("</header>")])
    students = [c for c in executed.cells if not (is_test_cell(c) or is_judge_helpers_cell(c))]
    assert f"{len(students) - config.FEEDBACK_MAX_CELLS:,} of your cells are not shown" in header, header
    assert seconds < 120, f"{seconds:.0f} s for one page"


def test_markdown_that_takes_minutes_to_render_is_shown_as_text(monkeypatch):
    """`\\begin{x}` 10,000 times takes mistune 33 s (a regular expression: quadratic): past the page's CPU budget
    for converting student text, a cell is shown as its text, and the header says so."""
    import time

    from autograder import config

    monkeypatch.setattr(config, "FEEDBACK_CONVERT_CPU_SECONDS", 3)
    slow = "\\begin{x}" * 10_000
    cells = [nbformat.v4.new_markdown_cell("Before: **bold**"), nbformat.v4.new_markdown_cell(slow)]
    cells.append(nbformat.v4.new_markdown_cell("After: **bold**"))
    executed, source, released, result = _graded(cells)
    started = time.monotonic()
    text = render_html(feedback_notebook(result, executed, source, released), trusted_header=True)
    assert time.monotonic() - started < 60
    assert "Before: <strong>bold</strong>" in text, "a cell before the slow one is rendered"
    assert "<pre>" + "\\begin{x}" * 10 in text, "the slow cell is shown as its text"
    header = html_unescape(text[text.index('<header class="ag-summary"') : text.index("</header>")])
    assert "are shown as plain text: this page had 3 CPU seconds to convert Markdown and formulas" in header, header


# ---------------------------------------------------------------- WCAG 2.1 A/AA in light and dark (issue 33)
# The page has a light and a dark colour scheme, chosen by the reader's system setting (prefers-color-scheme; it
# runs no script, so it has no mode button): axe-core runs on both, at desktop and phone width, through Playwright's
# color_scheme. axe is injected as an inline script, which the page's Content-Security-Policy forbids (no
# script-src): the test's browser context bypasses the policy (bypass_csp) for that alone. The policy itself stays in
# the page and is checked with it in force above (test_nothing_a_student_wrote..., test_math_still_renders...).
SCHEMES = ("light", "dark")
WIDTHS = (1280, 390)
# the 256-colour escape codes a real IPython traceback uses (keywords in green), the 16 colours and their
# backgrounds (the failing expression: black on yellow)
TRACEBACK = [
    "\x1b[31m---------------------------------------------------------------------------\x1b[39m",
    "\x1b[31mValueError\x1b[39m                                Traceback (most recent call last)",
    "\x1b[36mCell\x1b[39m\x1b[36m \x1b[39m\x1b[32mIn[4]\x1b[39m\x1b[32m, line 3\x1b[39m\n"
    "\x1b[32m      1\x1b[39m \x1b[38;5;28;01mdef\x1b[39;00m\x1b[38;5;250m \x1b[39m\x1b[34mf\x1b[39m(x):\n"
    "\x1b[32m----> \x1b[39m\x1b[32m3\x1b[39m \x1b[30;43mnp\x1b[39;49m\x1b[30;43m.\x1b[39;49m\x1b[30;43mones\x1b[39;49m"
    "(\x1b[32m3\x1b[39m) @ x\n",
    "\x1b[31mValueError\x1b[39m: matmul: Input operand 1 has a mismatch in its core dimension 0 "
    "\x1b[35mmagenta\x1b[39m \x1b[33myellow\x1b[39m \x1b[37mwhite\x1b[39m \x1b[90mbright black\x1b[39m",
]


def _rich_nb() -> nbformat.NotebookNode:
    """A failing notebook with what a student's page can hold before its tests: an output cut by the page's
    bound, stderr, an Out[n] result, a real traceback, Markdown with a link, a table, fenced code and a formula."""
    from autograder import config

    cells = [
        nbformat.v4.new_code_cell(
            "print('x' * 2_000_000)\n1 + 1",
            execution_count=4,
            outputs=[
                nbformat.v4.new_output("stream", name="stdout", text="x" * (config.MAX_DISPLAY_OUTPUT_CHARS + 1)),
                nbformat.v4.new_output("stream", name="stderr", text="UserWarning: something\n"),
                nbformat.v4.new_output("execute_result", data={"text/plain": "2"}, execution_count=4),
                nbformat.v4.new_output("error", ename="ValueError", evalue="matmul", traceback=TRACEBACK),
            ],
        ),
        nbformat.v4.new_markdown_cell(
            "## My notes\n\nSee [the docs](https://pytorch.org/docs/) and `torch.nn.functional."
            "scaled_dot_product_attention`.\n\n| n | time |\n|---|---|\n| 1 | 2 |\n\n"
            "```python\ndef f(x):\n    return x @ x.T  # square\n```\n\n"
            "$$\\text{softmax}\\left(\\frac{QK^\\top}{\\sqrt{d_k}}\\right) V = \\text{weights}\\, V "
            "\\quad\\text{for every query}$$"
        ),
    ]
    executed, source, released, result = _graded(cells)
    return feedback_notebook(result, executed, source, released)


@pytest.fixture(scope="module")
def rich_page(tmp_path_factory) -> Path:
    text = render_html(_rich_nb(), trusted_header=True)
    assert "[an output of " in text and "characters is not shown on this page]" in text, "the output was not cut"
    body = text[text.index("<body") :]
    assert "ansi-yellow-bg" in body and "ansi-green-fg" in body, "the traceback has no colours"
    # its 256-colour codes (nbconvert's inline styles) are dropped by the sanitiser: the page's policy would block them
    assert not re.search(r"<[^>]*\sstyle=", body), "an inline style in the page"
    path = tmp_path_factory.mktemp("rich") / "alice" / f"{NOTEBOOK}.html"
    path.parent.mkdir(parents=True)
    path.write_text(text, encoding="utf-8")
    return path


@pytest.mark.parametrize("width", WIDTHS)
@pytest.mark.parametrize("scheme", SCHEMES)
@pytest.mark.parametrize("which", ["failed tests", "cut output and traceback"])
def test_feedback_pages_pass_axe(browser, page_file, rich_page, which, scheme, width):
    import axe

    path = page_file if which == "failed tests" else rich_page
    with offline_page(browser, path, width=width, color_scheme=scheme, bypass_csp=True) as visit:
        page = visit.page
        found = axe.in_scheme(page, scheme)
        assert not found, f"{len(found)} WCAG 2.1 A/AA violation(s), {scheme} scheme, {width} px:\n" + "\n".join(
            found[:30]
        )
        assert not visit.others and not visit.errors


def test_on_a_phone_no_code_is_clipped_and_a_wide_formula_scrolls_by_keyboard(browser, rich_page):
    with offline_page(browser, rich_page, width=390) as visit:
        page = visit.page
        clipped = page.evaluate(
            """() => [...document.querySelectorAll('.jp-InputArea-editor, .jp-InputArea, .jp-OutputArea-output')]
                   .filter(e => getComputedStyle(e).overflowX === 'hidden' && e.scrollWidth > e.clientWidth + 1)
                   .map(e => e.className)"""
        )
        assert not clipped, f"code or output cut off at 390 px: {clipped}"
        assert page.evaluate("() => document.documentElement.scrollWidth") <= 390, "the page scrolls sideways"
        box = page.locator("div.ag-formula").filter(has_text="every query").first
        assert box.evaluate("e => e.scrollWidth > e.clientWidth"), "the test formula fits a phone: make it wider"
        box.focus()
        assert box.evaluate("e => document.activeElement === e"), "the formula's scroll box takes no focus"
        page.keyboard.press("ArrowRight")
        page.wait_for_function("() => document.activeElement.scrollLeft > 0")


def _luminance(colour: str) -> float:
    """WCAG 2.1's relative luminance of #rrggbb."""
    channels = [int(colour.lstrip("#")[i : i + 2], 16) / 255 for i in (0, 2, 4)]
    linear = [c / 12.92 if c <= 0.04045 else ((c + 0.055) / 1.055) ** 2.4 for c in channels]
    return 0.2126 * linear[0] + 0.7152 * linear[1] + 0.0722 * linear[2]


def _contrast(a: str, b: str) -> float:
    high, low = sorted((_luminance(a), _luminance(b)), reverse=True)
    return (high + 0.05) / (low + 0.05)


# What ANSI-coloured text can sit on: the scheme's own ANSI backgrounds, and the page's output and error backgrounds
# (nbconvert's themes: white and #fdd; #111 and rgba(244, 67, 54, 0.28) over #111, about #511f1b) and code cells.
PAGE_BACKGROUNDS = {"light": ["#ffffff", "#ffdddd"], "dark": ["#111111", "#511f1b"]}


@pytest.mark.parametrize("scheme", SCHEMES)
def test_every_ansi_colour_reads_on_every_background_of_its_scheme(scheme):
    """axe checks the colours a page happens to use; every pair a student's output can make is checked here."""
    from autograder.reporting.feedback_page import ANSI_BACKGROUND, ANSI_FOREGROUND, code_background

    backgrounds = list(ANSI_BACKGROUND[scheme]) + PAGE_BACKGROUNDS[scheme] + [code_background(scheme)]
    poor = [
        (fg, bg, round(_contrast(fg, bg), 2))
        for fg in ANSI_FOREGROUND[scheme]
        for bg in backgrounds
        if _contrast(fg, bg) < 4.5
    ]
    assert not poor, f"ANSI colours under 4.5:1 in the {scheme} scheme: {poor}"


@pytest.mark.parametrize("scheme", SCHEMES)
def test_every_code_colour_reads_on_the_code_background(scheme):
    from pygments.styles import get_style_by_name

    from autograder.reporting.feedback_page import CODE_STYLES, code_background

    style = get_style_by_name(CODE_STYLES[scheme])
    colours = {f"#{s['color']}" for _, s in style if s["color"]}
    poor = [
        (c, round(_contrast(c, code_background(scheme)), 2))
        for c in colours
        if _contrast(c, code_background(scheme)) < 4.5
    ]
    assert colours and not poor, f"{CODE_STYLES[scheme]}: code colours under 4.5:1 on its background: {poor}"
