r"""TeX to MathML for the feedback pages: formulas a browser lays out itself, with nothing fetched (no MathJax).

A formula latex2mathml cannot convert (malformed, an error, a command it does not know) is shown as its TeX
source in a `<code>` element instead: never as half-converted markup. So is a formula longer than
`config.FEEDBACK_MAX_FORMULA_CHARS`: latex2mathml takes about 0.2 CPU s for 10,000 characters and 43 s for 500,000,
and a page has one time budget for all its conversions (feedback_page).

TeX is student data, and latex2mathml turns some of it into attributes: `\style{CSS}{x}` into `<mrow style="CSS">`,
`\class{jp-Dialog}{x}` into a class of the page's own style sheet, `\href{url}{x}` into a link, `\color`,
`\colorbox`, `\rule` into colours and backgrounds, `\hspace{-100em}`, `\lower`, `\llap` into negative spaces and
offsets. A formula could then cover the grader's score. So `tex_to_mathml` itself keeps only the MathML elements
and attributes of the sanitiser's allow-list (`sanitize.mathml_attributes`: no style, class, id, href, colour,
background or negative length; any other element becomes a plain `<mrow>`), whoever calls it; and the page
passes the result through `sanitize.clean_html` all the same. Every text it puts in the page is escaped here
(ElementTree, html.escape).
"""

from __future__ import annotations

import html
import re

from autograder import config
from autograder.reporting.sanitize import MATHML_TAGS, mathml_attributes

_CHAR_REF = re.compile(r"&#x([0-9A-Fa-f]+);")
_TEX_COMMAND = re.compile(r"\\[A-Za-z]+")
# latex2mathml puts an unknown command verbatim into a token element (`<mi>\foo</mi>`).
_TOKEN_ELEMENTS = {"mi", "mo", "mn", "ms"}


def _tex_source(tex: str, display: bool, why: str = "formula not rendered") -> str:
    """What is shown for a formula that is not converted: its TeX, as code."""
    kind = "tex-source tex-display" if display else "tex-source"
    return f'<code class="{kind}" title="{html.escape(why)}">{html.escape(tex.strip())}</code>'


def too_long(tex: str) -> bool:
    """A formula this long is shown as its source, not converted (see the module)."""
    return len(tex) > config.FEEDBACK_MAX_FORMULA_CHARS


def tex_to_mathml(tex: str, display: bool = False) -> str:
    """MathML (rendered natively by browsers) for one TeX formula, without its delimiters, with only the
    allow-listed elements and attributes (see the module): no caller has to remember to clean it.

    Falls back to the TeX source in a <code> element when the formula is too long, when latex2mathml cannot
    convert it, reports an error, or leaves a command it does not know as text."""
    from xml.etree.ElementTree import tostring

    from latex2mathml.converter import convert_to_element

    source = tex.strip()
    if not source:
        return _tex_source(tex, display)
    if too_long(source):
        limit = config.FEEDBACK_MAX_FORMULA_CHARS
        return _tex_source(tex, display, f"formula not rendered: longer than {limit:,} characters")
    try:
        root = convert_to_element(source, display="block" if display else "inline")
    except Exception:  # noqa: BLE001 - latex2mathml raises many kinds of error on malformed TeX
        return _tex_source(tex, display)
    # latex2mathml stores character references (`&#x0003D;`) and the raw text of \text{}
    # in the tree and serialises it unescaped; decode the references and let
    # ElementTree escape everything, so `\text{a<b}` cannot break (or inject into) the page.
    for element in root.iter():
        if element.tag == "merror":
            return _tex_source(tex, display)
        for attr in ("text", "tail"):
            value = getattr(element, attr)
            if value:
                setattr(element, attr, _CHAR_REF.sub(lambda m: chr(int(m.group(1), 16)), value))
        if element.tag in _TOKEN_ELEMENTS and element.text and _TEX_COMMAND.search(element.text):
            return _tex_source(tex, display)
        # the allow-list: an element it does not know (`mpadded`, which moves its content) groups its content
        # and nothing more; an attribute it does not allow (style, class, href, mathcolor, a negative width) goes
        if element.tag not in MATHML_TAGS:
            element.tag = "mrow"
        kept = mathml_attributes(element.tag, dict(element.attrib))
        element.attrib.clear()
        element.attrib.update(kept)
    return tostring(root, encoding="unicode", short_empty_elements=False)


def markdown_renderer_class():
    from nbconvert.filters.markdown_mistune import IPythonRenderer

    class MathMLRenderer(IPythonRenderer):
        """nbconvert's markdown renderer, with math converted to MathML instead of being
        left as `$...$` for MathJax. Only what mistune parsed as math is converted, so
        dollar signs in inline code, fenced code and code cells are left alone. Counts the formulas
        it showed as source for being too long (`formulas_too_long`: the page says so)."""

        formulas_too_long = 0

        def _counted(self, tex: str) -> str:
            if too_long(tex.strip()):
                self.formulas_too_long += 1
            return tex

        def block_math(self, body: str) -> str:
            return tex_to_mathml(self._counted(body), display=True)

        def inline_math(self, body: str) -> str:
            return tex_to_mathml(self._counted(body), display=False)

        def latex_environment(self, name: str, body: str) -> str:
            return tex_to_mathml(self._counted(f"\\begin{{{name}}}{body}\\end{{{name}}}"), display=True)

        def multiline_math(self, text: str) -> str:  # mistune 2 only: a whole `$$...$$` paragraph
            return latex_output_to_mathml(self._counted(text))

    return MathMLRenderer


_DISPLAY_MATH = re.compile(r'<math\b[^>]*\bdisplay="block"[^>]*>.*?</math>', re.S)


def scrolling_formulas(html_text: str) -> str:
    """Each display formula in a box that scrolls sideways and takes keyboard focus (tabindex): a formula wider
    than a phone's screen can then be read with the arrow keys too (WCAG 2.1.1; axe's scrollable-region-focusable).
    Applied to HTML after it is sanitised (which keeps no tabindex of a student's), to formulas only."""
    return _DISPLAY_MATH.sub(lambda m: f'<div class="ag-formula" tabindex="0">{m.group(0)}</div>', html_text)


def latex_output_to_mathml(latex: str) -> str:
    """A `text/latex` output (`$...$`, `$$...$$`, `\\[...\\]` or an environment) as MathML."""
    text = latex.strip()
    for left, right, display in (("$$", "$$", True), ("\\[", "\\]", True), ("$", "$", False), ("\\(", "\\)", False)):
        if text.startswith(left) and text.endswith(right) and len(text) > len(left) + len(right):
            inner = text[len(left) : -len(right)]
            if left.startswith("$") and re.search(r"(?<!\\)\$", inner):  # several formulas, or text and math
                return _tex_source(text, display=True)
            return tex_to_mathml(inner, display=display)
    return tex_to_mathml(text, display=True)
