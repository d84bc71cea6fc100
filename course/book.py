"""What every lesson page sets up before its first line of prose, written once: figures, glue, colours, diagrams.

A lesson (chapters/NN_name.md) starts with one hidden cell:

    import sys
    from pathlib import Path

    sys.path.insert(0, str(Path.cwd().resolve().parent))  # course/ is beside chapters/ (and lessons/)
    from course.book import *

    set_up()

The page runs in chapters/ when the book is built (from the course repository or from the public release) and
in lessons/ as a downloaded lesson notebook: both have course/ one level up, and that copy is the one wanted even
where another copy of the course is installed. On Colab the lesson notebook's first cell fetches course/ into the
working folder, which Python searches already.

- Figures (`set_up`): inline PNGs at one size and font, whatever MPLBACKEND says where the book is built, drawn in
  Okabe and Ito's colours (matplotlib's "C0", "C1", ... become BLUE, ORANGE, ...).
- Glue (`glue_number`, `glue_bound`, `glue_within`, ...): a number the page's code computes is handed to its prose,
  and rounded so that the sentence around it stays true of the unrounded number: training is not bit-identical
  across machines, so the text must read right for whatever value a build measures.
- Colours: one palette, light tints of it for the boxes of diagrams, one sequential and one diverging colour map,
  and the text colours that keep 4.5:1 contrast (WCAG 2.1 AA) on white and on a heatmap's cells.
- Diagrams (`box`, `arrow`): the two pieces every block diagram of the lessons is drawn with.

It holds no exercise's answer: it is published to students with the rest of course/.
"""

from __future__ import annotations

import decimal
import math
from collections.abc import Sequence
from typing import Any

import matplotlib
from cycler import cycler
from matplotlib.colors import to_hex, to_rgb
from matplotlib.patches import FancyBboxPatch

__all__ = [
    "BLACK",
    "BLUE",
    "DIVERGING",
    "EDGE",
    "GREEN",
    "GREY",
    "LIGHT_BLUE",
    "LIGHT_GREEN",
    "LIGHT_GREY",
    "LIGHT_ORANGE",
    "LIGHT_PURPLE",
    "LIGHT_VERMILION",
    "LIGHT_YELLOW",
    "NOTE",
    "ORANGE",
    "PURPLE",
    "SEQUENTIAL",
    "SERIES",
    "SKY_BLUE",
    "VERMILION",
    "YELLOW",
    "arrow",
    "box",
    "contrast_ratio",
    "glue",
    "glue_bound",
    "glue_figure",
    "glue_md",
    "glue_number",
    "glue_table",
    "glue_text",
    "glue_within",
    "ink",
    "plural",
    "set_up",
    "text_on",
    "tint",
]

# --- colours ---------------------------------------------------------------------------------------------------------

# Okabe and Ito's palette ("Color Universal Design", 2008): eight colours told apart by readers with any of the common
# colour-vision deficiencies. The same hex values as the grader's feedback pages and class report.
BLACK, ORANGE, SKY_BLUE, GREEN = "#000000", "#E69F00", "#56B4E9", "#009E73"
YELLOW, BLUE, VERMILION, PURPLE = "#F0E442", "#0072B2", "#D55E00", "#CC79A7"
GREY = "#555555"  # neutral, for reference lines and a baseline; 7.5:1 on white, so it may also colour text
# The colours of a figure's series, in order: matplotlib's "C0" to "C5" after set_up(). Yellow is left out (1.1:1 on
# white: a line nobody sees) and black is kept for reference lines. Never the only distinction between two series
# that a reader must tell apart: give them different line styles or markers too, and a legend.
SERIES = (BLUE, ORANGE, GREEN, VERMILION, PURPLE, SKY_BLUE)
# Colour maps: perceptually uniform (equal steps of the data look like equal steps of colour) and readable with a
# colour-vision deficiency, since their lightness alone orders the values. Diverging: signed data around 0.
SEQUENTIAL = "viridis"
DIVERGING = "RdBu_r"  # ColorBrewer's red-blue, marked colour-blind safe: no red/green pair, lightness peaks at 0
# Diagrams: outlines and arrows, and the smaller grey text under a box's title (9.7:1 on white, 8:1 on any tint)
EDGE, NOTE = "0.3", "0.25"


def tint(colour: str, amount: float = 0.2) -> str:
    """`colour` mixed with white (`amount` of the colour): the fill of a diagram's box, pale enough for black and
    NOTE text on it to keep far more than 4.5:1, and still the hue of the palette colour it comes from."""
    red, green, blue = (amount * c + (1 - amount) for c in to_rgb(colour))
    return to_hex((red, green, blue))


LIGHT_BLUE, LIGHT_ORANGE, LIGHT_GREEN = tint(BLUE, 0.15), tint(ORANGE), tint(GREEN)
LIGHT_PURPLE, LIGHT_VERMILION, LIGHT_YELLOW = tint(PURPLE), tint(VERMILION), tint(YELLOW, 0.3)
LIGHT_GREY = "#eeeeee"


def relative_luminance(colour: Any) -> float:
    """WCAG 2.1's relative luminance of any matplotlib colour (a name, "#rrggbb", an RGB(A) tuple from a colour map)."""
    linear = [c / 12.92 if c <= 0.04045 else ((c + 0.055) / 1.055) ** 2.4 for c in to_rgb(colour)]
    return 0.2126 * linear[0] + 0.7152 * linear[1] + 0.0722 * linear[2]


def contrast_ratio(a: Any, b: Any) -> float:
    """WCAG 2.1's contrast ratio of two colours, from 1 (the same) to 21 (black on white). Text needs 4.5 (AA)."""
    high, low = sorted((relative_luminance(a), relative_luminance(b)), reverse=True)
    return (high + 0.05) / (low + 0.05)


def text_on(background: Any) -> str:
    """Black or white, whichever reads better on `background` (a heatmap's cell: `text_on(image.cmap(image.norm(v)))`).
    The better of the two always has at least 4.58:1 (the square root of 21), whatever the background: a fixed
    threshold on the data value instead ("white below 0.5") breaks as soon as the colour map or its range changes."""
    return "black" if contrast_ratio(background, "black") >= contrast_ratio(background, "white") else "white"


def ink(colour: Any, background: Any = "white", ratio: float = 4.5) -> str:
    """`colour` as text on `background`: the colour itself where it has `ratio` contrast already (BLUE on white),
    else the same hue darkened (or, on a dark background, lightened) just enough. ORANGE text on white has 2.2:1."""
    towards = (0.0, 0.0, 0.0) if relative_luminance(background) > 0.18 else (1.0, 1.0, 1.0)
    rgb = to_rgb(colour)
    for step in range(101):
        red, green, blue = ((1 - step / 100) * c + step / 100 * t for c, t in zip(rgb, towards, strict=True))
        shade = to_hex((red, green, blue))  # rounded to 8 bits a channel: the colour drawn, so the one measured
        if contrast_ratio(shade, background) >= ratio:
            return shade
    return to_hex(towards)


# --- figures ---------------------------------------------------------------------------------------------------------

# No figure text below 9 points: shown at 390 px, such text is still 9 px high (tests/test_book.py reads the lessons).
SMALLEST_TEXT = 9.0
# 110 dpi: a 4.4-inch figure is 484 px, so on a 390 px phone its 10-point text is still about 8 px high.
FIGURE_STYLE: dict[Any, Any] = {  # rcParams
    "figure.dpi": 110,
    "savefig.dpi": 110,
    "font.size": 10,
    "axes.prop_cycle": cycler(color=SERIES),
    "image.cmap": SEQUENTIAL,
}


def set_up() -> None:
    """A lesson page's figures: inline PNGs (the `%matplotlib inline` magic: the book's build may set MPLBACKEND to
    something else), then FIGURE_STYLE (after the magic, which sets rcParams of its own). Outside IPython (a test,
    a script) only the style."""
    try:
        from IPython import get_ipython
    except ImportError:  # plain Python without IPython
        shell = None
    else:
        shell = get_ipython()
    if shell is not None:
        shell.run_line_magic("matplotlib", "inline")
    matplotlib.rcParams.update(FIGURE_STYLE)


# --- glue: numbers computed by the page, shown in its prose ----------------------------------------------------------


def glue(name: str, value: Any, display: bool = True) -> None:
    """myst_nb's `glue`: `{glue:text}`name`` in the page's Markdown shows `value`. Imported when called, not when this
    module is: a lesson notebook run outside the book (Colab) puts a stand-in for myst_nb in `sys.modules` first."""
    from myst_nb import glue as myst_glue

    myst_glue(name, value, display=display)


def glue_number(name: str, value: Any) -> None:
    """Glue a number for the text, as a plain Python int or float: a tensor's or numpy 2's scalar would show as
    `np.float64(0.5)` in the page instead of 0.5."""
    glue(name, value.item() if hasattr(value, "item") else value, display=False)


def glue_text(name: str, text: str) -> None:
    """Glue a phrase the code chose (a verdict, a name) for the text: `{glue:text}`name`` shows it as it is."""
    glue(name, text, display=False)


def glue_bound(name: str, value: Any, decimals: int, side: str) -> None:
    """Glue a bound that the text shows with `decimals` decimals, rounded outwards so that the sentence stays true of
    the unrounded number: side "upper" ("up to", "at most") rounds up, "lower" ("at least") rounds down. Rounding
    to nearest would print "at least 0.58" for 0.5758, false of the number it describes."""
    if side not in ("upper", "lower"):
        raise ValueError(f'glue_bound: side is "upper" or "lower", not {side!r}')
    scaled = float(value) * 10**decimals
    glue(name, (math.ceil(scaled) if side == "upper" else math.floor(scaled)) / 10**decimals, display=False)


def glue_within(name: str, difference: Any, digits: int = 1) -> None:
    """Glue how closely two results agree, for "they agree {glue:text}`name`": "exactly" when the largest difference
    is 0, else "to within" it rounded up to `digits` significant digits (2.4e-07 -> "to within 3e-07"): rounded to
    nearest, "to within 2e-07" would be false of 2.4e-07."""
    if difference == 0:
        glue(name, "exactly", display=False)
        return
    exact = decimal.Decimal(float(difference))  # the float's exact value: nothing rounded on the way
    exponent = exact.adjusted() - (digits - 1)
    mantissa = math.ceil(exact.scaleb(-exponent))
    if mantissa == 10**digits:  # 9.6e-08 rounded up to one digit: 1e-07
        mantissa, exponent = 10 ** (digits - 1), exponent + 1
    glue(name, f"to within {mantissa / 10 ** (digits - 1):.{digits - 1}f}e{exponent + digits - 1:+03d}", display=False)


def glue_md(name: str, markdown: str) -> None:
    """Glue Markdown the code wrote (`{glue:md}`name``): a sentence whose wording or formatting depends on what
    this build measured ("Each row is right" or "3 of the 4 rows are right"), rendered as the page's own text."""
    from IPython.display import Markdown

    glue(name, Markdown(markdown), display=False)


def glue_table(name: str, header: Sequence[str], rows: Sequence[Sequence[Any]]) -> None:
    """Glue a Markdown table (`{glue:md}`name``): header, the column titles; rows, lists of cells already formatted.
    A table of measured numbers has as many rows as the build measured, which a table typed in the page cannot."""
    lines = ["| " + " | ".join(header) + " |", "|" + "---|" * len(header)]
    lines += ["| " + " | ".join(str(cell) for cell in row) + " |" for row in rows]
    glue_md(name, "\n".join(lines))


def glue_figure(name: str, fig: Any, alt: str) -> None:
    """Glue a figure whose alt text states what this build measured: `{glue:md}`name`` shows it. A figure's `alt:`
    option written in the page is fixed text, true of one build only; this alt text is computed with the figure."""
    glue(f"{name}_image", fig, display=False)
    glue_md(name, f"```{{glue:figure}} {name}_image\n:alt: {' '.join(alt.split())}\n```")


def plural(count: int, one: str, many: str) -> str:
    """ "1 step", "2 steps", "1,000 steps": a count in the text reads right whatever the build counted."""
    return f"{count:,} {one if count == 1 else many}"


# --- diagrams --------------------------------------------------------------------------------------------------------


def box(
    ax: Any,
    x: float,
    y: float,
    w: float,
    h: float,
    title: str = "",
    note: str = "",
    fill: str = LIGHT_GREY,
    *,
    fontsize: float = 10.5,
    bold: bool = False,
    ls: str = "-",
    lw: float = 1.2,
) -> FancyBboxPatch:
    """A rounded box of a block diagram, centred at (x, y), w by h in data units, with a title and under it an
    optional note (a shape, say) in NOTE grey, 1.5 points smaller but never below SMALLEST_TEXT. The title and note
    are placed in points from the centre, so they sit the same in every figure whatever its data scale. Returns the
    box, which `arrow` can clip at."""
    patch = FancyBboxPatch(
        (x - w / 2, y - h / 2),
        w,
        h,
        boxstyle=f"round,pad=0.02,rounding_size={min(0.08, h / 5):.3f}",
        fc=fill,
        ec=EDGE,
        lw=lw,
        ls=ls,
    )
    ax.add_patch(patch)
    weight = "bold" if bold else "normal"
    if title and note:
        ax.annotate(title, (x, y), xytext=(0, 1), textcoords="offset points", ha="center", va="bottom",
                    fontsize=fontsize, weight=weight)  # fmt: skip
        ax.annotate(note, (x, y), xytext=(0, -1.5), textcoords="offset points", ha="center", va="top",
                    fontsize=max(SMALLEST_TEXT, fontsize - 1.5), color=NOTE)  # fmt: skip
    elif title or note:
        ax.text(x, y, title or note, ha="center", va="center", fontsize=fontsize, weight=weight)
    return patch


def arrow(
    ax: Any, start: tuple[float, float] | FancyBboxPatch, end: tuple[float, float] | FancyBboxPatch, **style: Any
) -> None:
    """An arrow of a block diagram, from `start` to `end`: two points, or two boxes from `box`, in which case it runs
    between their centres, clipped where it leaves the one and enters the other. `style` overrides the arrow's
    properties (color, lw, shrinkA, ...)."""
    props: dict[str, Any] = {"arrowstyle": "-|>", "color": EDGE, "lw": 1.2, "shrinkA": 0, "shrinkB": 0}
    if isinstance(start, FancyBboxPatch) and isinstance(end, FancyBboxPatch):
        props |= {"patchA": start, "patchB": end, "shrinkA": 2, "shrinkB": 2}
        start, end = _centre(start), _centre(end)
    elif isinstance(start, FancyBboxPatch) or isinstance(end, FancyBboxPatch):
        raise TypeError("arrow: give two points or two boxes")
    ax.annotate("", xy=end, xytext=start, arrowprops=props | style)


def _centre(patch: FancyBboxPatch) -> tuple[float, float]:
    bounds = patch.get_bbox()  # in data units, as the box was drawn
    return (bounds.x0 + bounds.x1) / 2, (bounds.y0 + bounds.y1) / 2
