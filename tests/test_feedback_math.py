"""A formula a student prints cannot restyle, move or link anything on a feedback page, and converting a student's
text (Markdown, TeX) has one CPU budget per page (issue 39, items 2 and 3).

latex2mathml turns some TeX into attributes: `\\style{CSS}{x}` into `<mrow style="CSS">`, `\\class{jp-Dialog}{x}`
into a class of the page's own style sheet, `\\href`, `\\color`, `\\colorbox`, `\\hspace{-100em}`, `\\lower` into
links, colours, backgrounds and negative offsets. `text/latex` outputs reached the page without the sanitiser, and
the page's policy allowed inline styles: a student at 1/12 covered the real score with a forged "12 / 12". Here:
- `tex_to_mathml` never emits an attribute outside an allow-list written in this file (independently of the
  sanitiser's), over a list of hostile TeX, and the page sanitises what the `text/latex` converter returns too;
- in Chromium, the overlay and the dialog-class attacks, carried by a `text/latex` output, a Markdown cell and a
  `text/html` output, leave the element at the real score's position the real score;
- the page's Content-Security-Policy has no 'unsafe-inline': a style attribute that reached the page by any way
  (here written into the file after rendering) is inert, while the page's own style sheets (hashed) apply;
- a 500,000-character formula is shown as its source at once (it took latex2mathml 43 s), and the page's CPU
  budget covers `text/latex` outputs as it covers Markdown; the page says what it did not convert.

Uses the Debian Chromium at /usr/bin/chromium through Playwright (never `playwright install`), as
test_feedback_page.py does. Run: .venv/bin/python -m pytest tests/test_feedback_math.py -q
"""

from __future__ import annotations

import html
import re
import time
import xml.etree.ElementTree as ET
from pathlib import Path

import nbformat
import pytest

from autograder import config
from autograder.model.notebooks import max_points, read, release_notebook, source_notebook
from autograder.model.records import CellResult, Result
from autograder.reporting.feedback import feedback_notebook
from autograder.reporting.feedback_page import render_html
from autograder.reporting.mathml import tex_to_mathml
from coursetools.samples import make_submission
from helpers import offline_page

NOTEBOOK = "02_dot_product_attention"
FORGED = "12 / 12 points. Every test passed."
OVERLAY = (
    r"\style{position:fixed;top:0;left:0;width:100vw;height:100vh;background:white;z-index:2147483647}"
    r"{\text{" + FORGED + "}}"
)
DIALOG = r"\class{jp-Dialog}{\text{" + FORGED + "}}"

# What MathML may carry on a feedback page, written here rather than read from the sanitiser, so that a change
# to the sanitiser's list is checked against this one. Nothing that styles (style, class, mathcolor,
# mathbackground, mathsize), names (id), links (href) or moves (voffset, lspace, a negative length).
ALLOWED_ATTRIBUTES = {
    "display", "xmlns", "mathvariant", "stretchy", "fence", "separator", "form", "accent", "largeop",
    "movablelimits", "minsize", "maxsize", "linethickness", "accentunder", "width", "displaystyle", "scriptlevel",
    "columnalign", "rowspacing", "columnspacing", "columnlines", "rowlines", "notation",
}  # fmt: skip
ALLOWED_ELEMENTS = {
    "math", "menclose", "mfrac", "mi", "mn", "mo", "mover", "mphantom", "mroot", "mrow", "ms", "mspace", "msqrt",
    "mstyle", "msub", "msubsup", "msup", "mtable", "mtd", "mtext", "mtr", "munder", "munderover", "none",
}  # fmt: skip
# Each of these makes latex2mathml 3.81 emit an attribute or an element outside the lists above (measured: style,
# class, href, mathcolor, mathbackground, border-color, mathsize, negative widths, mpadded with voffset/lspace).
HOSTILE_TEX = [
    OVERLAY,
    DIALOG,
    r"\class{ag-summary}{x}",
    r"\href{javascript:alert(1)}{x}",
    r"\href{#ag-summary}{x}",
    r"\style{}{x}",
    r"\mathrm{\class{jp-Dialog}{y}}",
    r"\mathop{\style{position:fixed}{y}}",
    r"\boxed{\style{position:fixed}{b}}",
    r"\color{red;position:fixed}{x}",
    r"\textcolor{white}{x}",
    r"\colorbox{white;position:fixed}{x}",
    r"\fcolorbox{red}{blue}{x}",
    r"\rule{10em}{10em}",
    r"\hspace{-100em}x",
    r"\kern-100em x",
    r"\mkern-100mu x",
    r"\lower 10em x",
    r"\llap{x}",
    r"\mathclap{x}",
    r"\Huge x",
    r"\xrightarrow{a}",
]


def _attributes_outside_the_allow_list(mathml: str) -> list[str]:
    if mathml.startswith("<code"):  # shown as its source: one element, a class of the page's own
        assert re.fullmatch(r'<code class="tex-source( tex-display)?" title="[^"<>]*">[^<]*</code>', mathml), mathml
        return []
    found = []
    for element in ET.fromstring(mathml).iter():
        tag = element.tag.rsplit("}", 1)[-1]  # ElementTree names it with the MathML namespace
        if tag not in ALLOWED_ELEMENTS:
            found.append(f"<{tag}>")
        for name, value in element.attrib.items():
            if name not in ALLOWED_ATTRIBUTES:
                found.append(f"<{tag} {name}={value!r}>")
            elif value.strip().startswith("-"):
                found.append(f"<{tag} {name}={value!r}> (negative)")
    return found


@pytest.mark.parametrize("tex", HOSTILE_TEX)
@pytest.mark.parametrize("display", [False, True])
def test_tex_to_mathml_emits_no_attribute_outside_the_allow_list(tex, display):
    """The allow-list is enforced inside tex_to_mathml, so no caller (a latex output, Markdown math, a future
    page) can forget it."""
    out = tex_to_mathml(tex, display=display)
    assert not _attributes_outside_the_allow_list(out), f"{tex!r} -> {out}"


def test_a_forged_line_in_a_formula_is_still_shown_as_text():
    """The allow-list drops the style, not the student's text: what they printed is still on the page."""
    out = tex_to_mathml(OVERLAY)
    assert out.startswith("<math") and "12\u00a0/\u00a012\u00a0points." in html.unescape(out), out


def test_the_text_latex_converter_output_goes_through_the_sanitiser(monkeypatch):
    """One sanitiser on every path: even a converter that let markup through (here, a stand-in for a latex2mathml
    that emitted a script and a style) is cleaned before the page."""
    from autograder.reporting import feedback_page

    leaky = '<math><mrow style="position:fixed" class="jp-Dialog"><mi>x</mi></mrow></math><script>alert(1)</script>'
    monkeypatch.setattr(feedback_page, "latex_output_to_mathml", lambda latex: leaky)
    nb = nbformat.v4.new_notebook(
        cells=[
            nbformat.v4.new_code_cell("x", outputs=[nbformat.v4.new_output("display_data", data={"text/latex": "$x$"})])
        ]
    )
    body = render_html(nb).split("<body", 1)[1]
    assert "<math" in body and "<mi>x</mi>" in body, "the formula is not on the page"
    assert "<script" not in body and "position:fixed" not in body and "jp-Dialog" not in body, body[-2000:]


# ---------------------------------------------------------------- the real score stays on top, in Chromium


def _page_with(cells: list, score: float = 1.0) -> tuple[nbformat.NotebookNode, str]:
    """A graded chapter-02 notebook, at `score` points, with the student's `cells` before its first test cell."""
    source = read(source_notebook(NOTEBOOK))
    released = release_notebook(source)
    executed = make_submission(NOTEBOOK)
    executed.cells = cells + executed.cells
    points = max_points(source)
    ids = list(points)
    results = [CellResult(ids[0], score, points[ids[0]])] + [CellResult(g, 0.0, points[g], "failed") for g in ids[1:]]
    result = Result("alice", NOTEBOOK, score, sum(points.values()), results)
    return feedback_notebook(result, executed, source, released), f"{score:g} / {sum(points.values()):g}"


def _carried(carrier: str, tex: str) -> list:
    """`tex` as a student can put it on the page: a `text/latex` output, a Markdown cell, a `text/html` output."""
    if carrier == "text/latex":
        data = {"text/latex": f"${tex}$", "text/plain": "<IPython.core.display.Latex object>"}
        return [nbformat.v4.new_code_cell("show()", outputs=[nbformat.v4.new_output("display_data", data=data)])]
    if carrier == "markdown":
        return [nbformat.v4.new_markdown_cell(f"My answer: ${tex}$\n\n$${tex}$$")]
    # HTML output: the MathML latex2mathml makes of it, and the same as plain HTML
    from latex2mathml.converter import convert

    style = "position:fixed;top:0;left:0;width:100vw;height:100vh;background:white;z-index:2147483647"
    cls = "jp-Dialog" if "class" in tex else ""
    markup = convert(tex) + f'<div style="{style}" class="{cls}">{FORGED}</div>'
    return [
        nbformat.v4.new_code_cell(
            "show()", outputs=[nbformat.v4.new_output("display_data", data={"text/html": markup})]
        )
    ]


def _real_score_is_on_top(browser, path: Path, score: str) -> None:
    with offline_page(browser, path) as visit:
        page = visit.page
        real = page.locator("header.ag-summary .ag-score")
        assert real.is_visible() and score in real.inner_text(), "the real score is not visible"
        box = real.bounding_box()
        assert box and box["width"] > 0 and box["height"] > 0
        points = [(box["x"] + dx * box["width"], box["y"] + box["height"] / 2) for dx in (0.1, 0.5, 0.9)]
        drawn = page.evaluate(
            """(points) => points.map(([x, y]) => {
                   const e = document.elementFromPoint(x, y);
                   if (e && e.closest('header.ag-summary .ag-score')) return null;
                   return e ? e.outerHTML.slice(0, 120) : 'nothing';
               })""",
            points,
        )
        assert drawn == [None, None, None], f"something covers the real score: {drawn}"
        forged = page.get_by_text(FORGED).first
        forged_box = forged.bounding_box()
        header_box = page.locator("header.ag-summary").bounding_box()
        assert forged_box and header_box and forged_box["y"] >= header_box["y"] + header_box["height"], (
            "the forged line is drawn over or above the grader's summary"
        )
        assert not visit.others and not visit.errors, (visit.others, visit.errors)


@pytest.mark.parametrize("attack", ["overlay", "dialog class"])
@pytest.mark.parametrize("carrier", ["text/latex", "markdown", "text/html"])
def test_a_formula_cannot_cover_the_real_score_in_chromium(browser, tmp_path, carrier, attack):
    nb, score = _page_with(_carried(carrier, OVERLAY if attack == "overlay" else DIALOG))
    path = tmp_path / "alice" / f"{NOTEBOOK}.html"
    path.parent.mkdir(parents=True)
    path.write_text(render_html(nb, trusted_header=True), encoding="utf-8")
    _real_score_is_on_top(browser, path, score)


def test_the_policy_makes_any_inline_style_inert_in_chromium(browser, tmp_path):
    """The second line behind the sanitiser: the page's policy allows its own <style> elements (by their sha256)
    and no 'unsafe-inline', so an overlay written into the page's body past the sanitiser (here, into the file
    after rendering) is not applied, while the page's own style sheets are."""
    nb, score = _page_with([nbformat.v4.new_markdown_cell("Before the overlay.")])
    text = render_html(nb, trusted_header=True)
    head = text[: text.index("<body")]
    meta = re.search(r'<meta\b[^>]*http-equiv="Content-Security-Policy"[^>]*>', head)
    policy = meta and re.search(r'\bcontent="([^"]*)"', meta.group(0))
    assert policy and "'unsafe-inline'" not in policy.group(1) and "'sha256-" in policy.group(1), head[-3000:]
    overlay = (
        '<div style="position:fixed;top:0;left:0;width:100vw;height:100vh;background:white;z-index:2147483647">'
        f"{FORGED}</div>"
    )
    text = text.replace("<p>Before the overlay.</p>", f"<p>Before the overlay.</p>{overlay}", 1)
    assert overlay in text
    path = tmp_path / "alice" / f"{NOTEBOOK}.html"
    path.parent.mkdir(parents=True)
    path.write_text(text, encoding="utf-8")
    with offline_page(browser, path) as visit:
        page = visit.page
        position = page.get_by_text(FORGED).first.evaluate("e => getComputedStyle(e).position")
        assert position == "static", f"an inline style was applied (position: {position})"
        border = page.locator("header.ag-summary").evaluate("e => getComputedStyle(e).borderBottomWidth")
        assert border == "3px", f"the page's own style sheet was not applied (its hash is wrong?): {border}"
        box = page.locator("header.ag-summary .ag-score").bounding_box()
        assert box and score in page.locator("header.ag-summary .ag-score").inner_text()
        on_top = page.evaluate(
            "([x, y]) => !!document.elementFromPoint(x, y)?.closest('header.ag-summary .ag-score')",
            [box["x"] + box["width"] / 2, box["y"] + box["height"] / 2],
        )
        assert on_top, "the overlay covers the real score"
        # the one console error: Chromium refusing the inline style
        assert visit.errors and all("Content Security Policy" in e for e in visit.errors), visit.errors


# ---------------------------------------------------------------- one CPU budget for every conversion


def _header(text: str) -> str:
    return html.unescape(text[text.index('<header class="ag-summary"') : text.index("</header>")])


def test_huge_latex_outputs_are_shown_as_source_at_once_and_the_page_says_so():
    """Issue 39: a three-line cell displaying two 500,000-character `text/latex` outputs cost 93 CPU seconds and
    865 MB to write the pages (latex2mathml: 43 s each). A formula over FEEDBACK_MAX_FORMULA_CHARS is not converted."""
    big = "$" + "x" * 499_998 + "$"
    outputs = [nbformat.v4.new_output("display_data", data={"text/latex": big}) for _ in range(2)]
    small = {"text/latex": r"$\frac{a}{b}$"}
    outputs.append(nbformat.v4.new_output("display_data", data=small))
    nb, _ = _page_with([nbformat.v4.new_code_cell("big = ...\ndisplay(big)\ndisplay(big)", outputs=outputs)])
    started = time.process_time()
    text = render_html(nb, trusted_header=True)
    seconds = time.process_time() - started
    assert seconds < 20, f"{seconds:.1f} CPU s for one page"
    assert "<mfrac>" in text, "the short formula after the long ones is not converted"
    assert text.count('title="formula not rendered: longer than') == 2, "the long formulas are not shown as source"
    assert "x" * 1000 in text, "the long formula's source is not on the page"
    limit = f"{config.FEEDBACK_MAX_FORMULA_CHARS:,}"
    assert f"2 formula(s) longer than {limit} characters are shown as their TeX source." in _header(text)


def test_markdown_and_latex_outputs_share_one_budget(monkeypatch):
    """One budget per page, in CPU seconds, for every conversion of student text: a Markdown cell that spends it
    (mistune: 33 s on `\\begin{x}` * 10,000) leaves nothing for the `text/latex` output after it, which is shown
    as its text; the page says so."""
    monkeypatch.setattr(config, "FEEDBACK_CONVERT_CPU_SECONDS", 2)
    after = nbformat.v4.new_output("display_data", data={"text/latex": r"$$\frac{p}{q}$$"})
    cells = [
        nbformat.v4.new_markdown_cell("Before: $e^{x_i}$"),
        nbformat.v4.new_markdown_cell("\\begin{x}" * 10_000),
        nbformat.v4.new_code_cell("show()", outputs=[after]),
    ]
    nb, _ = _page_with(cells)
    started = time.process_time()
    text = render_html(nb, trusted_header=True)
    seconds = time.process_time() - started
    assert seconds < 25, f"{seconds:.1f} CPU s for one page"
    body = text[text.index("</header>") :]
    assert "<msub><mi>x</mi><mi>i</mi></msub>" in body, "the first formula, within the budget, is not converted"
    assert "<mfrac><mrow><mi>p</mi>" not in body, f"a latex output after the cut was converted: {_header(text)}"
    assert "<pre>$$\\frac{p}{q}$$</pre>" in body, "the latex output left unconverted is not shown as its text"
    # once the budget is spent, nothing after it is converted: the cell that spent it, every Markdown cell of the
    # exercise after it and the latex output
    spender = next(i for i, c in enumerate(nb.cells) if c.source.startswith("\\begin{x}"))
    left = sum(c.cell_type == "markdown" for c in nb.cells[spender:]) + 1
    assert left > 2, "the exercise has no Markdown cell after the student's: the count below checks nothing more"
    assert f"{left} Markdown cell(s), formula(s) or output(s) are shown as plain text" in _header(text), _header(text)
    assert "this page had 2 CPU seconds to convert Markdown and formulas" in _header(text)


def test_many_formulas_under_the_length_bound_stop_at_the_budget(monkeypatch):
    """Formulas just under FEEDBACK_MAX_FORMULA_CHARS cost about 0.2 CPU s each: forty of them cannot add up past
    the page's budget; those left are shown as their text, and the page counts them."""
    monkeypatch.setattr(config, "FEEDBACK_CONVERT_CPU_SECONDS", 2)
    near = "$" + "x" * (config.FEEDBACK_MAX_FORMULA_CHARS - 10) + "$"
    latex = [nbformat.v4.new_output("display_data", data={"text/latex": near}) for _ in range(40)]
    nb, _ = _page_with([nbformat.v4.new_code_cell("for _ in range(40): show()", outputs=latex)])
    started = time.process_time()
    text = render_html(nb, trusted_header=True)
    seconds = time.process_time() - started
    body = text[text.index("</header>") :]
    unconverted = body.count("<pre>$xxxxxxxxxx")
    assert unconverted >= 20, f"only {unconverted} of 40 formulas were left unconverted by a 2 s budget"
    assert unconverted < 40, "no formula was converted: the test's formulas are too slow for it"
    assert seconds < 20, f"{seconds:.1f} CPU s for one page"
    shower = next(i for i, c in enumerate(nb.cells) if c.source.startswith("for _ in range(40)"))
    later_markdown = sum(c.cell_type == "markdown" for c in nb.cells[shower:])
    left = unconverted + later_markdown
    assert f"{left} Markdown cell(s), formula(s) or output(s) are shown as plain text" in _header(text), _header(text)


# ---------------------------------------------------------------- through the CLI, as an instructor runs it


@pytest.mark.grading
def test_grade_and_feedback_through_the_cli_keep_the_real_score_on_top(browser, tmp_path):
    """The case as measured: a student who did nothing adds one code cell that displays the overlay as a
    `text/latex` output (it runs while the grader executes the notebook) and one Markdown cell with the dialog
    class; `grade` then `feedback`, as docs/grading.md says, and the page opened in Chromium."""
    from coursetools.samples import untouched_release, write_submission
    from helpers import run_cli

    nb = untouched_release(NOTEBOOK)
    show = (
        "from IPython.display import display\n"
        f"display({{'text/latex': {'$' + OVERLAY + '$'!r}, 'text/plain': 'x'}}, raw=True)"
    )
    nb.cells[1:1] = [nbformat.v4.new_code_cell(show), nbformat.v4.new_markdown_cell(f"${DIALOG}$")]
    subs = tmp_path / "subs"
    write_submission(nb, subs / "mallory" / f"{NOTEBOOK}.ipynb")
    work, out = tmp_path / "work", tmp_path / "feedback"
    graded = run_cli("grade", str(subs), "--workdir", str(work), "--workers", "1")
    assert graded.returncode == 0, graded.stdout[-3000:] + graded.stderr[-3000:]
    written = run_cli("feedback", str(subs), "--workdir", str(work), "--out", str(out))
    assert written.returncode == 0, written.stdout[-3000:] + written.stderr[-3000:]
    page = out / "mallory" / f"{NOTEBOOK}.html"
    text = page.read_text(encoding="utf-8")
    assert FORGED.replace(" ", "\u00a0") in html.unescape(text), "the student's output is not on the page"
    real = re.search(r'class="ag-score">Student <strong>mallory</strong>: <strong>([^<]*)</strong>', text)
    assert real and not real.group(1).startswith("12 "), text[:3000]
    _real_score_is_on_top(browser, page, real.group(1))


def test_a_conversion_cut_by_the_timer_spends_the_budget():
    """Whatever time.process_time reads after a cut (a CI run converted the formula after the cell the timer had
    cut): once one conversion ran out of time, the page converts nothing more."""
    from autograder.reporting.feedback_page import ConversionBudget, _RenderTimeout

    def cut():
        raise _RenderTimeout

    budget = ConversionBudget(600)
    assert budget.convert(str.upper, "before") == "BEFORE"
    assert budget.convert(cut) is None
    assert budget.convert(str.upper, "after") is None, "a conversion after the cut was run"
    assert budget.late == 2
