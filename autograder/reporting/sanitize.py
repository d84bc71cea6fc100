"""Student text is data: what the grader writes into pages and spreadsheets, made inert.

Two places turn text a student wrote (or printed) into something active:
- an HTML page (feedback): Markdown cells and rich outputs are HTML. `clean_html` keeps an allow-list of
  elements and attributes (nh3, the Python binding of the Rust sanitizer ammonia, an HTML5 parser: no
  hand-written filter) and drops everything else: scripts, event handlers, `javascript:` and any other URL
  that is not a web link, `style` elements and attributes, forms, frames, SVG, CSS classes other than the
  code highlighter's. An image is kept only as an inline `data:` PNG or JPEG, so a page never fetches
  anything; a link is kept (a reader's click, not a load) with rel="noopener noreferrer nofollow".
  MathML (the course's formulas, rendered by latex2mathml) is allowed, without the attributes that move or
  colour it; `mathml.tex_to_mathml` applies the same MathML allow-list (`mathml_attributes`) to every formula it
  converts, so a formula is clean before any page sees it. Text outputs (streams, tracebacks, `text/plain`) and
  code come here too once nbconvert has coloured them: only the ANSI and highlighter classes survive, and no
  `style` attribute (nbconvert writes 256-colour escape codes as inline styles).
- a spreadsheet (CSV exports): a cell that starts with `=`, `+`, `-`, `@`, a tab or a carriage return is a
  formula in Excel, LibreOffice and Google Sheets (`=HYPERLINK(...)` runs when the file is opened).
  `csv_cell` prefixes such a cell with `'` (OWASP's "CSV injection" advice); a number stays a number.
"""

from __future__ import annotations

import base64
import binascii
import re
from collections.abc import Iterable

_HTML_TAGS = {
    "a", "abbr", "b", "blockquote", "br", "caption", "code", "col", "colgroup", "dd", "del", "details", "div",
    "dl", "dt", "em", "figcaption", "figure", "h1", "h2", "h3", "h4", "h5", "h6", "hr", "i", "img", "ins", "kbd",
    "li", "mark", "ol", "p", "pre", "q", "s", "samp", "small", "span", "strong", "sub", "summary", "sup", "table",
    "tbody", "td", "tfoot", "th", "thead", "tr", "u", "ul", "var",
}  # fmt: skip
MATHML_TAGS = {
    "math", "menclose", "mfrac", "mi", "mn", "mo", "mover", "mphantom", "mroot", "mrow", "ms", "mspace", "msqrt",
    "mstyle", "msub", "msubsup", "msup", "mtable", "mtd", "mtext", "mtr", "munder", "munderover", "none",
}  # fmt: skip
_ATTRIBUTES = {
    "*": {"title"},
    "a": {"href"},
    "img": {"src", "alt", "width", "height"},
    "td": {"colspan", "rowspan", "align"},
    "th": {"colspan", "rowspan", "align", "scope"},
    "ol": {"start"},
    "math": {"display", "xmlns"},
    "mo": {"stretchy", "fence", "separator", "form", "accent", "largeop", "movablelimits", "minsize", "maxsize"},
    "mi": {"mathvariant"},
    "mn": {"mathvariant"},
    "mtext": {"mathvariant"},
    "mfrac": {"linethickness"},
    "mover": {"accent"},
    "munder": {"accentunder"},
    "mspace": {"width"},
    "mstyle": {"displaystyle", "scriptlevel"},
    "mtable": {"columnalign", "rowspacing", "columnspacing", "displaystyle", "columnlines", "rowlines"},
    "mtd": {"columnalign"},
    "menclose": {"notation"},
}
# Classes that only colour code (the highlighter's) or hide nbconvert's heading anchors: a class of the
# page's own style sheet (a dialog, an overlay) could move student content over the score.
_CODE_CLASSES = {
    "highlight", "hll", "anchor-link", "tex-source", "tex-display",
    "bp", "c", "c1", "ch", "cm", "cp", "cpf", "cs", "dl", "err", "esc", "fm", "g", "gd", "ge", "ges", "gh", "gi",
    "go", "gp", "gr", "gs", "gt", "gu", "il", "k", "kc", "kd", "kn", "kp", "kr", "kt", "l", "ld", "m", "mb", "mf",
    "mh", "mi", "mo", "n", "na", "nb", "nc", "nd", "ne", "nf", "ni", "nl", "nn", "no", "nt", "nv", "nx", "o", "ow",
    "p", "pm", "py", "s", "s1", "s2", "sa", "sb", "sc", "sd", "se", "sh", "si", "sr", "ss", "sx", "vc", "vg", "vi",
    "vm", "w", "x",
}  # fmt: skip
# nbconvert's colours of text outputs (ansi2html); the page's style sheet gives each a colour that passes WCAG AA
_ANSI_CLASSES = {
    f"ansi-{name}{intense}-{layer}"
    for name in ("black", "red", "green", "yellow", "blue", "magenta", "cyan", "white")
    for intense in ("", "-intense")
    for layer in ("fg", "bg")
} | {"ansi-default-inverse-fg", "ansi-default-inverse-bg", "ansi-bold", "ansi-underline"}
_CLASSES = {tag: _CODE_CLASSES for tag in ("a", "code", "div", "pre")} | {"span": _CODE_CLASSES | _ANSI_CLASSES}
_IMAGE_DATA_URL = re.compile(r"^data:image/(png|jpeg);base64,([A-Za-z0-9+/=\s]*)$", re.ASCII)
_WEB_LINK = re.compile(r"^(https?://|mailto:)", re.IGNORECASE)
_LENGTH = re.compile(r"^(\d{1,3}(\.\d+)?)(em|ex|px|%)?$", re.ASCII)  # no sign: nothing moves up or left
_SIZE_ATTRIBUTES = {"width", "height", "minsize", "maxsize"}
_SPACING_ATTRIBUTES = {"rowspacing", "columnspacing"}  # one length per row or column
_SPACING = re.compile(r"^(\d{1,2}(\.\d+)?(em|ex|pt|px)?)( \d{1,2}(\.\d+)?(em|ex|pt|px)?)*$", re.ASCII)
MAX_IMAGE_PIXELS = 4000  # width or height of an image a page shows


def valid_base64(text: str) -> bool:
    try:
        base64.b64decode("".join(text.split()), validate=True)
    except (binascii.Error, ValueError):
        return False
    return True


def _attribute(tag: str, name: str, value: str) -> str | None:
    """nh3's attribute filter: None drops the attribute."""
    if tag == "img" and name == "src":
        match = _IMAGE_DATA_URL.match(value)
        return value if match and valid_base64(match.group(2)) else None
    if name == "href":
        return value if _WEB_LINK.match(value.strip()) else None
    if name in _SIZE_ATTRIBUTES:
        length = _LENGTH.match(value.strip())
        return value if length and float(length.group(1)) <= MAX_IMAGE_PIXELS else None
    if name in _SPACING_ATTRIBUTES:
        return value if _SPACING.match(value.strip()) else None
    return value


def mathml_attributes(tag: str, attributes: dict[str, str]) -> dict[str, str]:
    """The attributes of one MathML element that the allow-list keeps, with the values clean_html keeps: what
    `mathml.tex_to_mathml` leaves on each element it writes (no style, class, id, href, colour or negative length)."""
    allowed = (_ATTRIBUTES.get(tag, set()) | _ATTRIBUTES["*"]) if tag in MATHML_TAGS else set()
    kept = {}
    for name, value in attributes.items():
        if name in allowed and (clean := _attribute(tag, name, value)) is not None:
            kept[name] = clean
    return kept


def clean_html(text: str) -> str:
    """HTML a student wrote or printed, with only inert elements and attributes kept (see the module)."""
    import nh3  # here: the Gradescope grader imports this package without the feedback pages' dependencies

    return nh3.clean(
        text,
        tags=_HTML_TAGS | MATHML_TAGS,
        clean_content_tags={"script", "style", "template", "noscript", "textarea", "title", "xmp", "iframe"},
        attributes=_ATTRIBUTES,
        allowed_classes=_CLASSES,
        attribute_filter=_attribute,
        url_schemes={"http", "https", "mailto", "data"},
        url_relative="deny",
        link_rel="noopener noreferrer nofollow",
        strip_comments=True,
    )


# --- spreadsheets ---------------------------------------------------------------------------------
_FORMULA_START = ("=", "+", "-", "@", "\t", "\r")


def _is_number(text: str) -> bool:
    try:
        float(text)
    except ValueError:
        return False
    return text.strip() == text and text.lower().lstrip("+-") not in ("inf", "infinity", "nan")


def csv_cell(value: object) -> str:
    """One CSV cell that no spreadsheet reads as a formula: `'` before a text that starts like one."""
    text = "" if value is None else str(value)
    if text.lstrip(" ").startswith(_FORMULA_START) and not _is_number(text):
        return "'" + text
    return text


def csv_row(values: Iterable[object]) -> list[str]:
    return [csv_cell(value) for value in values]
