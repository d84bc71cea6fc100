"""Chapter 01 (why attention): the built lesson shows the numbers it claims, its figures and its
exercise link; the exercise is numpy only.

The soft-lookup numbers are recomputed here with the standard library, independently of the
lesson's code. The GRU experiment is not re-trained here (the lesson asserts its own claims at
build time, so a build that contradicts the prose fails); we check that its numbers were glued.

Run: PATH=.venv/bin:$PATH .venv/bin/python -m pytest tests/test_lesson_01.py -q
"""

from __future__ import annotations

import json
import math
import re

import pytest

from book_build import ROOT

LESSON = "chapters/01_why_attention.html"
EXERCISE = "01_soft_lookup"


@pytest.fixture(scope="module")
def html(book) -> str:
    path = book.html_dir / LESSON
    assert path.is_file(), f"{LESSON} was not built (is chapters/01_why_attention in _toc.yml?)"
    return path.read_text(encoding="utf8")


def text_of(html: str) -> str:
    return re.sub(r"\s+", " ", re.sub(r"<[^>]+>", " ", html))


def soft_lookup(query, keys, values, temperature):
    """The lesson's example, by hand: softmax of dot products / T, weighted average of values."""
    sims = [sum(q * k for q, k in zip(query, key, strict=False)) / temperature for key in keys]
    top = max(sims)
    exps = [math.exp(s - top) for s in sims]
    weights = [e / sum(exps) for e in exps]
    return sum(w * v for w, v in zip(weights, values, strict=False)), weights


KEYS = [(1.0, 0.0), (0.8, 0.6), (0.0, 1.0), (-1.0, 0.0)]
VALUES = [10.0, 20.0, 30.0, 40.0]
QUERY = (1.0, 0.2)


def test_lesson_shows_the_soft_lookup_numbers(html):
    text = text_of(html)
    out, w = soft_lookup(QUERY, KEYS, VALUES, 1.0)
    expected = [f"{x:.3f}" for x in w] + [f"{out:.2f}"]
    out_cold, w_cold = soft_lookup(QUERY, KEYS, VALUES, 0.01)
    expected += [f"{w_cold[0]:.4f}", f"{out_cold:.3f}"]
    out_cool, w_cool = soft_lookup(QUERY, KEYS, VALUES, 0.1)
    expected += [f"{w_cool[0]:.2f}", f"{out_cool:.2f}"]
    out_hot, w_hot = soft_lookup(QUERY, KEYS, VALUES, 100.0)
    expected += [f"{out_hot:.2f}", f"{min(w_hot):.3f}", f"{max(w_hot):.3f}"]
    expected += [f"{math.log(1.7976931348623157e308):.0f}"]  # float64's exp overflows above ~710
    for number in expected:
        assert number in text, f"{number} (recomputed here) is not on the lesson page"


def test_lesson_shows_the_bottleneck_experiment(html):
    text = text_of(html)
    # the glued percentages of the experiment, and the shapes printed by the tokens-to-outputs cell
    percentages = re.findall(r"\b\d{1,3}%", text)
    assert len(percentages) >= 10, f"the experiment's percentages are missing: {percentages}"
    for shape in ["(6, 8)", "(6, 4)", "(6, 3)", "(6, 6)"]:
        assert shape in text, f"shape {shape} of the tokens-to-outputs example is not on the page"
    for leftover in ["glue:", "np.float64", "{glue", "tensor("]:
        assert leftover not in text, f"unrendered glue on the lesson page: {leftover!r}"


def test_lesson_has_its_figures(book, html):
    pngs = re.findall(r'<img[^>]+src="([^"]+\.png)"', html)
    # accuracy vs length, attention heatmap, temperature sweep, tokens-to-outputs diagram
    assert len(pngs) >= 4, f"expected at least 4 figures on the lesson page, found {pngs}"
    for src in pngs:
        image = (book.html_dir / "chapters" / src).resolve()
        assert image.is_file() and image.stat().st_size > 5_000, f"{src} is missing or empty"


def test_lesson_links_to_the_exercise(html):
    links = re.findall(r'<a[^>]+href="([^"]+)"', html)
    assert any(link.split("#")[0] == f"{EXERCISE}.html" for link in links), links


@pytest.mark.parametrize("where", ["solutions", "chapters"])
def test_exercise_is_numpy_only(where):
    nb = json.loads((ROOT / where / f"{EXERCISE}.ipynb").read_text(encoding="utf8"))
    code = "\n".join("".join(c["source"]) for c in nb["cells"] if c["cell_type"] == "code")
    assert re.search(r"^\s*import numpy as np", code, re.MULTILINE)
    assert not re.search(r"^\s*(import|from)\s+torch\b", code, re.MULTILINE), f"{where}/{EXERCISE}.ipynb imports torch"


def test_softmax_over_the_wrong_axis_is_visible(html):
    """Issue 21: for a 1-D query there is no mistake; for a (1, n) batch a softmax over axis 0 gives all ones."""
    text = text_of(html)
    assert "for a single query the mistake is invisible" not in text
    sims = [sum(q * k for q, k in zip(QUERY, key, strict=False)) for key in KEYS]
    ones = [math.exp(s - s) / math.exp(s - s) for s in sims]         # each column holds one number
    shown = re.search(r"Every weight is 1, \[ ?([^\]]*?) ?\], and the output is (\S+) ,? ?the sum of the values", text)
    assert shown, "the page should show the weights and the output of the softmax over axis 0"
    assert shown.group(1) == ", ".join(f"{w:g}" for w in ones) and float(shown.group(2).rstrip(",")) == sum(VALUES)
    assert "the sum of the values instead of an average" in text


def test_logits_are_defined_where_they_are_first_used(html):
    text = text_of(html)
    first = text.lower().index("logits")
    assert "are called logits" in text[:first + 200], "the page uses 'logits' before saying what they are"


def test_digit_and_string_accuracies_are_reconciled(html):
    """Issue 21: per-digit accuracy to the power of the length is the string accuracy only if errors are independent."""
    text = text_of(html)
    shown = re.search(r"with the measured probability (\S+) , a string of 20 digits would be right with probability "
                      r"(\S+) \\\(\^\{20\}\\\) = (\S+) , not (\S+) : a string that goes wrong has (\S+) wrong digits", text)
    assert shown, "the page should compare the string accuracy with digit accuracy ** length"
    digit, again, independent, string, per_failed = (float(g) for g in shown.groups())
    assert digit == again and independent == pytest.approx(digit ** 20, abs=0.002) and string > independent
    # mean wrong digits per failed string = length * (1 - digit accuracy) / (1 - string accuracy)
    assert per_failed == pytest.approx(20 * (1 - digit) / (1 - string), abs=0.1)


def test_exact_zeros_are_reported_as_they_are(html):
    """Issue 21 (the same kind): at T = 0.001 the stable softmax is not an exact one-hot vector; the tie's other keys are 0."""
    text = text_of(html)
    assert "returns a clean one-hot vector" not in text
    _, w = soft_lookup(QUERY, KEYS, VALUES, 0.001)
    shown = re.search(r"its second weight is (\S+) , tiny but not 0", text)
    assert shown and float(shown.group(1)) == float(f"{w[1]:.1e}") and w[1] > 0
    assert re.search(r"the two other keys get exactly 0\.0 : their exponentials underflow", text)
