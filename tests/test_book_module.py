"""course/book.py, the lessons' shared plumbing (issue 33): its glue rounds so that the text stays true, its colours are
told apart with the common colour-vision deficiencies and its text colours keep 4.5:1 contrast (WCAG 2.1 AA), and the
lessons use it instead of copies of their own.

Colour-vision deficiencies are simulated with Machado, Oliveira and Fernandes (2009), "A Physiologically-based Model
for Simulation of Color Vision Deficiency", IEEE TVCG 15(6), 1291-1298: their matrices for severity 1.0 (dichromacy:
protanopia, deuteranopia, tritanopia), applied to linear sRGB. Colours are compared in CIELAB (D65) with the 1976
distance, ΔE*ab: about 2.3 is a just-noticeable difference; two series of a chart must be far apart, not just
noticeably different, so the bar for them is 15 (Okabe and Ito's colours are at least 16 apart under all three).
"""

from __future__ import annotations

import itertools
import math
import re
import sys
import types
from pathlib import Path

import matplotlib
import numpy as np
import pytest
import torch
from matplotlib.colors import to_rgb

from book_build import ROOT
from course import book

# --- colour science, independent of course/book.py -----------------------------------------------------------------

MACHADO_2009 = {  # severity 1.0, from the paper's supplementary table; linear sRGB in, linear sRGB out
    "protanopia": ((0.152286, 1.052583, -0.204868), (0.114503, 0.786281, 0.099216), (-0.003882, -0.048116, 1.051998)),
    "deuteranopia": ((0.367322, 0.860646, -0.227968), (0.280085, 0.672501, 0.047413), (-0.011820, 0.042940, 0.968881)),
    "tritanopia": ((1.255528, -0.076749, -0.178779), (-0.078411, 0.930809, 0.147602), (0.004733, 0.691367, 0.303900)),
}
VISION = [None, *MACHADO_2009]  # typical colour vision, then the three dichromacies
SERIES_APART = 15.0  # ΔE*ab between any two series colours, whatever the vision
DIVERGING_ENDS_APART = 30.0  # ΔE*ab between the two ends of the diverging map: they mean opposite signs


def _linear(channel: float) -> float:
    return channel / 12.92 if channel <= 0.04045 else ((channel + 0.055) / 1.055) ** 2.4


def seen(colour, vision: str | None) -> tuple[float, float, float]:
    """CIELAB (D65) of `colour` as seen with `vision` (None: typical colour vision)."""
    rgb = [_linear(c) for c in to_rgb(colour)]
    if vision is not None:
        matrix = MACHADO_2009[vision]
        rgb = [min(1.0, max(0.0, sum(matrix[i][j] * rgb[j] for j in range(3)))) for i in range(3)]
    x = (0.4124 * rgb[0] + 0.3576 * rgb[1] + 0.1805 * rgb[2]) / 0.95047
    y = 0.2126 * rgb[0] + 0.7152 * rgb[1] + 0.0722 * rgb[2]
    z = (0.0193 * rgb[0] + 0.1192 * rgb[1] + 0.9505 * rgb[2]) / 1.08883

    def f(t: float) -> float:
        return t ** (1 / 3) if t > (6 / 29) ** 3 else t / (3 * (6 / 29) ** 2) + 4 / 29

    return 116 * f(y) - 16, 500 * (f(x) - f(y)), 200 * (f(y) - f(z))


def delta_e(a, b, vision: str | None) -> float:
    return math.dist(seen(a, vision), seen(b, vision))


def wcag_contrast(a, b) -> float:
    """WCAG 2.1's contrast ratio, written here again so that book.contrast_ratio is checked against it."""

    def luminance(colour) -> float:
        r, g, b = (_linear(c) for c in to_rgb(colour))
        return 0.2126 * r + 0.7152 * g + 0.0722 * b

    high, low = sorted((luminance(a), luminance(b)), reverse=True)
    return (high + 0.05) / (low + 0.05)


def closest_pair(colours, vision):
    return min((delta_e(a, b, vision), a, b) for a, b in itertools.combinations(colours, 2))


def test_the_simulation_is_machados():
    """Checks on the matrices as typed: each keeps white white (rows sum to 1, to the paper's 6 decimals), and
    deuteranopia merges what it is known to merge, a red and a green of the same lightness."""
    for matrix in MACHADO_2009.values():
        assert all(abs(sum(row) - 1) < 2e-6 for row in matrix)
    assert delta_e("#d62728", "#2ca02c", None) > 100  # matplotlib's red and green: far apart for most readers
    assert delta_e("#d62728", "#2ca02c", "deuteranopia") < SERIES_APART  # and not for a deuteranope


# --- the palette ---------------------------------------------------------------------------------------------------


def test_the_palette_is_okabe_and_itos_and_the_reports():
    from autograder.reporting import report

    okabe_ito = {"#000000", "#E69F00", "#56B4E9", "#009E73", "#F0E442", "#0072B2", "#D55E00", "#CC79A7"}
    palette = {book.BLACK, book.ORANGE, book.SKY_BLUE, book.GREEN, book.YELLOW, book.BLUE, book.VERMILION, book.PURPLE}
    assert palette == okabe_ito
    assert set(book.SERIES) <= okabe_ito and len(set(book.SERIES)) == len(book.SERIES)
    assert {report.BLUE, report.VERMILLION} <= palette, "the class report and the lessons use one palette"


@pytest.mark.parametrize("vision", VISION, ids=lambda v: v or "typical")
def test_series_colours_are_told_apart(vision):
    distance, a, b = closest_pair(book.SERIES, vision)
    assert distance >= SERIES_APART, f"{a} and {b} are {distance:.1f} apart with {vision or 'typical vision'}"


def test_the_series_check_catches_a_red_green_pair():
    """matplotlib's own default colours, tab10, hold a red and a green that a deuteranope confuses."""
    tab10 = [matplotlib.colors.to_hex(c) for c in matplotlib.colormaps["tab10"].colors]
    distance, a, b = closest_pair(tab10, "deuteranopia")
    assert distance < SERIES_APART, (a, b, distance)


def test_set_up_makes_the_series_matplotlibs_default_colours():
    saved = matplotlib.rcParams.copy()
    try:
        book.set_up()  # outside IPython: the style only
        assert [matplotlib.colors.to_hex(f"C{i}").upper() for i in range(len(book.SERIES))] == list(book.SERIES)
        assert matplotlib.rcParams["image.cmap"] == book.SEQUENTIAL
        assert matplotlib.rcParams["figure.dpi"] == 110 and matplotlib.rcParams["font.size"] == 10
    finally:
        matplotlib.rcParams.update(saved)


# --- colour maps ---------------------------------------------------------------------------------------------------


def lightness(cmap_name: str, vision: str | None) -> list[float]:
    cmap = matplotlib.colormaps[cmap_name]
    return [seen(cmap(i / 255)[:3], vision)[0] for i in range(256)]


# The sequential maps lesson figures may use: the declared one, and three of the same kind (chapter 08's heatmap
# shows "no change" as magma's black; Greys draws True/False masks).
SEQUENTIAL_MAPS = (book.SEQUENTIAL, "cividis", "magma", "Greys")


def ordered_by_lightness(cmap_name: str, vision: str | None) -> bool:
    """A reader who cannot use the hue still orders the values: lightness rises (or falls) all along."""
    values = lightness(cmap_name, vision)
    steps = [b - a for a, b in itertools.pairwise(values)]
    return all(step > 0 for step in steps) or all(step < 0 for step in steps)


@pytest.mark.parametrize("cmap_name", SEQUENTIAL_MAPS)
@pytest.mark.parametrize("vision", VISION, ids=lambda v: v or "typical")
def test_the_sequential_maps_are_ordered_by_lightness(cmap_name, vision):
    assert ordered_by_lightness(cmap_name, vision)


def test_the_lightness_check_catches_a_rainbow():
    assert not ordered_by_lightness("jet", None)


def diverging_ok(cmap_name: str, vision: str | None) -> bool:
    """Lightness rises to the middle (0) and falls after it, and the two ends (opposite signs) stay far apart."""
    values = lightness(cmap_name, vision)
    peak = values.index(max(values))
    rises = all(b >= a for a, b in itertools.pairwise(values[: peak + 1]))
    falls = all(b <= a for a, b in itertools.pairwise(values[peak:]))
    cmap = matplotlib.colormaps[cmap_name]
    ends = delta_e(cmap(0.0)[:3], cmap(1.0)[:3], vision)
    return 118 <= peak <= 137 and rises and falls and ends >= DIVERGING_ENDS_APART


@pytest.mark.parametrize("vision", VISION, ids=lambda v: v or "typical")
def test_the_diverging_map_keeps_its_two_signs_apart(vision):
    assert diverging_ok(book.DIVERGING, vision)


def test_the_diverging_check_catches_red_yellow_green():
    """RdYlGn's red and green ends, -1 and +1, come out 18 apart for a deuteranope."""
    assert diverging_ok("RdYlGn", None) and not diverging_ok("RdYlGn", "deuteranopia")


# --- text contrast -------------------------------------------------------------------------------------------------


def test_contrast_ratio_is_wcags():
    assert book.contrast_ratio("black", "white") == pytest.approx(21)
    assert book.contrast_ratio("#777777", "white") == pytest.approx(4.48, abs=0.01)  # the classic just-fails grey
    for a, b in [(book.BLUE, "white"), (book.ORANGE, "#333333"), ((0.2, 0.5, 0.1), book.LIGHT_BLUE)]:
        assert book.contrast_ratio(a, b) == pytest.approx(wcag_contrast(a, b))


def heatmap_cells() -> list:
    """Every colour a cell of the lessons' heatmaps can take, and a spread of others."""
    rng = np.random.default_rng(0)
    colours = [matplotlib.colormaps[name](x) for name in (*SEQUENTIAL_MAPS, book.DIVERGING)
               for x in np.linspace(0, 1, 257)]  # fmt: skip
    return colours + [tuple(c) for c in rng.random((500, 3))] + ["#777777", "#767676", "#757575"]


def test_text_on_a_cell_has_4_5_to_1():
    for cell in heatmap_cells():
        assert wcag_contrast(book.text_on(cell), cell) >= 4.5, cell


def test_a_threshold_on_the_value_does_not():
    """The rule chapter 03 had, "white text below 0.5, else black", puts white on viridis(0.45) at 4.4:1."""
    cmap = matplotlib.colormaps["viridis"]
    worst = min(wcag_contrast("white" if x < 0.5 else "black", cmap(x)) for x in np.linspace(0, 1, 101))
    assert worst < 4.5


def test_ink_keeps_the_hue_and_reaches_4_5_to_1():
    for colour in [*book.SERIES, book.YELLOW, book.GREY]:
        dark = book.ink(colour)
        assert wcag_contrast(dark, "white") >= 4.5, colour
        assert wcag_contrast(dark, "white") < 5.0 or dark.upper() == colour.upper(), "darkened more than needed"
    assert book.ink(book.BLUE).upper() == book.BLUE  # 5.2:1 already
    assert wcag_contrast(book.ink(book.BLUE, background="black"), "black") >= 4.5  # lightened on a dark background


def test_diagram_text_reads_on_every_box_fill():
    fills = [book.LIGHT_BLUE, book.LIGHT_ORANGE, book.LIGHT_GREEN, book.LIGHT_PURPLE, book.LIGHT_VERMILION]
    fills += [book.LIGHT_YELLOW, book.LIGHT_GREY, "white"]
    for fill in fills:
        for text in ("black", book.NOTE, book.EDGE, book.GREY):
            assert wcag_contrast(text, fill) >= 4.5, (text, fill)


# --- glue ----------------------------------------------------------------------------------------------------------


@pytest.fixture
def glued(monkeypatch) -> dict:
    """myst_nb replaced by a stand-in that keeps what is glued (as a lesson notebook on Colab does)."""
    found: dict = {}
    stand_in = types.ModuleType("myst_nb")
    stand_in.glue = lambda name, value, display=True: found.__setitem__(name, value)  # type: ignore[attr-defined]
    monkeypatch.setitem(sys.modules, "myst_nb", stand_in)
    return found


BOUNDS = [  # value, decimals, side, the bound glued
    (0.4549, 2, "upper", 0.46),
    (0.5758, 2, "lower", 0.57),
    (0.99999994, 3, "lower", 0.999),
    (1.0, 2, "upper", 1.0),
    (6.27, 1, "lower", 6.2),
    (0.1, 1, "upper", 0.1),  # already at the precision shown: not pushed up to 0.2
]
WITHIN = [  # difference, digits, phrase
    (2.4e-07, 1, "to within 3e-07"),
    (1.19e-07, 1, "to within 2e-07"),
    (9.6e-08, 1, "to within 1e-07"),
    (4.47e-16, 2, "to within 4.5e-16"),
    (0.0, 1, "exactly"),
    (1e-07, 1, "to within 1e-07"),
]


def check_glue(glue_bound, glue_within, glued):
    for value, decimals, side, expected in BOUNDS:
        glue_bound("x", value, decimals, side)
        assert glued["x"] == pytest.approx(expected), (value, side, glued["x"])
        shown = float(f"{glued['x']:.{decimals}f}")
        assert (shown >= value) if side == "upper" else (shown <= value), (value, side, shown)
    for difference, digits, phrase in WITHIN:
        glue_within("x", difference, digits=digits)
        assert glued["x"] == phrase, (difference, glued["x"])
    for tiny in [1.234e-7, 3.0000001e-16, 9.99e-3, 5e-324, np.float32(2.4e-07), torch.tensor(9.6e-08).item()]:
        glue_within("x", tiny)
        assert float(glued["x"].removeprefix("to within ")) >= tiny, (tiny, glued["x"])


def test_bounds_are_rounded_outwards(glued):
    """A "within 2e-07" above a printed 2.4e-07, "at least 0.58" for 0.5758: a bound the text states must stay true
    of the unrounded number, so an upper bound is rounded up and a lower one down, and a zero difference is
    "exactly"."""
    check_glue(book.glue_bound, book.glue_within, glued)


def test_the_glue_check_catches_rounding_to_nearest(glued):
    def nearest_bound(name, value, decimals, side):
        book.glue(name, round(float(value), decimals), display=False)

    def nearest_within(name, difference, digits=1):
        book.glue(name, "exactly" if difference == 0 else f"to within {difference:.{digits - 1}e}", display=False)

    with pytest.raises(AssertionError):
        check_glue(nearest_bound, book.glue_within, glued)
    with pytest.raises(AssertionError):
        check_glue(book.glue_bound, nearest_within, glued)


def test_glue_bound_refuses_an_unknown_side(glued):
    with pytest.raises(ValueError, match="upper"):
        book.glue_bound("x", 0.5, 2, "up")


def test_glue_number_glues_plain_python_numbers(glued):
    for value, expected in [(np.float64(0.5), 0.5), (torch.tensor(3), 3), (np.int64(7), 7), (2.5, 2.5)]:
        book.glue_number("x", value)
        assert glued["x"] == expected and type(glued["x"]) is type(expected), (value, glued["x"])
        assert repr(glued["x"]) == repr(expected)


def test_glue_table_and_figure_are_markdown(glued):
    book.glue_table("t", ["a", "b"], [[1, "x"], [2, "y"]])
    assert glued["t"].data == "| a | b |\n|---|---|\n| 1 | x |\n| 2 | y |"
    book.glue_figure("f", "the figure", "A curve\n   that falls.")
    assert glued["f_image"] == "the figure"
    assert glued["f"].data == "```{glue:figure} f_image\n:alt: A curve that falls.\n```"


def test_plural():
    assert [book.plural(n, "step", "steps") for n in (0, 1, 2, 1000)] == ["0 steps", "1 step", "2 steps", "1,000 steps"]


# --- diagrams ------------------------------------------------------------------------------------------------------


def test_box_and_arrow_draw_on_the_axes_they_are_given():
    matplotlib.use("Agg", force=True)
    import matplotlib.pyplot as plt

    fig, ax = plt.subplots()
    a = book.box(ax, 1, 1, 1, 0.5, "title", "note", book.LIGHT_BLUE)
    b = book.box(ax, 3, 1, 1, 0.5, "alone")
    book.arrow(ax, a, b)
    book.arrow(ax, (0, 0), (1, 1), color=book.VERMILION)
    assert ax.patches[:2] == [a, b] and a.get_facecolor()[:3] == pytest.approx(to_rgb(book.LIGHT_BLUE))
    assert [t.get_text() for t in ax.texts] == ["title", "note", "alone", "", ""]
    assert ax.texts[1].get_color() == book.NOTE and ax.texts[1].get_fontsize() == 10.5 - 1.5
    book.box(ax, 0, 0, 1, 1, "small title", "its note", fontsize=9.5)
    assert ax.texts[-1].get_fontsize() == book.SMALLEST_TEXT == 9  # tests/test_book.py's smallest legible size
    with pytest.raises(TypeError):
        book.arrow(ax, a, (0, 0))
    plt.close(fig)


# --- the lessons use it --------------------------------------------------------------------------------------------


def lesson_paths() -> list[Path]:
    from coursetools.manifest import load

    paths = [ROOT / f"{chapter.lesson}.md" for chapter in load().chapters]
    return [path for path in paths if path.is_file() and "```{code-cell}" in path.read_text(encoding="utf8")]


def code_cells(text: str, path: str = "lesson.md") -> list:
    from myst_nb.core.read import read_myst_markdown_notebook

    return [cell for cell in read_myst_markdown_notebook(text, path=path).cells if cell.cell_type == "code"]


def redefined(text: str) -> list[str]:
    """Names of course/book.py that a lesson's code defines again."""
    code = "\n".join(cell.source for cell in code_cells(text))
    return sorted(set(re.findall(r"^\s*(?:def|class)\s+(\w+)", code, re.MULTILINE)) & set(book.__all__))


COLOUR_WORD = re.compile(r"\b(?:colou?r|fc|ec|facecolors?|edgecolors?|c)\s*=\s*f?[\"']([^\"']+)[\"']")
CMAP_WORD = re.compile(r"(?:cmap\s*=\s*|get_cmap\()\s*[\"']([^\"']+)[\"']")
HEX = re.compile(r"[\"']#[0-9a-fA-F]{6}[\"']")
NEUTRAL = {"black", "k", "white", "w", "none"}  # and greys: "0.3", "grey", "gray", "lightgrey", ...
COLOUR_MAPS = {*SEQUENTIAL_MAPS, book.DIVERGING}


def ad_hoc_colours(text: str) -> list[str]:
    """Colours a lesson names instead of taking them from course/book.py: hex codes, colour names other than
    black, white and greys, and colour maps other than the declared ones. "C0", "C1", ... are the palette's (after
    set_up), so they are allowed."""
    found = []
    for cell in code_cells(text):
        for line in cell.source.splitlines():
            found += HEX.findall(line)
            for word in COLOUR_WORD.findall(line):
                grey = re.fullmatch(r"0?\.\d+|(light|dark)?gr[ae]y", word) is not None
                if not (word in NEUTRAL or grey or word.startswith("#") or re.fullmatch(r"C(\d|\{\w+\})", word)):
                    found.append(word)
            found += [name for name in CMAP_WORD.findall(line) if name not in COLOUR_MAPS]
    return found


TEXT_CALL = re.compile(r"\.(?:text|annotate|set_title|suptitle)\(")


def faint_text(text: str) -> list[str]:
    """Text in a lesson's figures given a colour with less than 4.5:1 on white: a literal ("0.5", "C1") or a colour
    of course/book.py (ORANGE), on the line of the call (ink(ORANGE) and text_on(...) pass)."""
    found = []
    for cell in code_cells(text):
        for line in cell.source.splitlines():
            if not TEXT_CALL.search(line):
                continue
            for word in re.findall(r"\bcolou?r\s*=\s*(\"[^\"]+\"|'[^']+'|[A-Z_]+\b)", line):
                colour = getattr(book, word) if word.isupper() else word.strip("\"'")
                if re.fullmatch(r"C\d", colour):
                    colour = book.SERIES[int(colour[1])]
                if wcag_contrast(colour, "white") < 4.5:
                    found.append(f"{word}: {line.strip()}")
    return found


FAKE_LESSON = """---
jupytext:
  text_representation:
    format_name: myst
kernelspec:
  name: python3
---

```{code-cell} ipython3
def glue_number(name, value):
    pass


ax.plot(x, y, color="red")
ax.imshow(w, cmap="jet")
ax.text(0, 0, "note", color="0.6")
ax.text(0, 1, "warm", color=ORANGE)
box = dict(fc="#dde8f6")
```
"""


def test_the_lesson_scans_catch_what_they_are_for():
    assert redefined(FAKE_LESSON) == ["glue_number"]
    assert ad_hoc_colours(FAKE_LESSON) == ["red", "jet", '"#dde8f6"']
    assert [line.split(":")[0] for line in faint_text(FAKE_LESSON)] == ['"0.6"', "ORANGE"]


@pytest.mark.parametrize("path", lesson_paths(), ids=lambda path: path.stem)
def test_lessons_use_the_shared_module(path):
    text = path.read_text(encoding="utf8")
    cells = code_cells(text, str(path))
    names = set(book.__all__)
    code = "\n".join(cell.source for cell in cells)
    uses = {name for name in names if re.search(rf"\b{name}\b", code)} - {"box", "arrow"}  # common words
    if uses or "myst_nb" in code:
        first = cells[0]
        assert "remove-cell" in first.metadata.get("tags", []), f"{path.name}: its first code cell is its set-up"
        assert "from course.book import *" in first.source and "set_up()" in first.source, path.name
    assert "from myst_nb import" not in code, f"{path.name}: glue comes from course.book"
    assert redefined(text) == [], f"{path.name} defines again what course/book.py provides"


@pytest.mark.parametrize("path", lesson_paths(), ids=lambda path: path.stem)
def test_lesson_figures_take_their_colours_from_the_module(path):
    text = path.read_text(encoding="utf8")
    assert ad_hoc_colours(text) == [], f"{path.name}: colours not from course/book.py"
    assert faint_text(text) == [], f"{path.name}: figure text under 4.5:1 on white"


def test_the_lesson_notebook_gets_glue_through_the_module():
    """A lesson that imports course.book and never myst_nb still gets the notebook's stand-in for myst_nb (on Colab
    there is no myst_nb) and fetches course/book.py."""
    from coursetools.lesson_notebook import ADDED_TAG, lesson_notebook
    from coursetools.site import read_settings

    path = ROOT / "chapters" / "02_attention_by_hand.md"
    settings = read_settings(ROOT)
    nb = lesson_notebook(path, settings, {})
    setup = next(cell for cell in nb.cells if ADDED_TAG in cell.metadata.get("tags", []) and cell.cell_type == "code")
    assert 'sys.modules["myst_nb"]' in setup.source and "'book'" in setup.source, setup.source
