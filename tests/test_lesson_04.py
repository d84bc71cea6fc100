"""The self- and cross-attention lesson (chapter 04) shows the numbers it claims, checked here
against their definitions (sizes, machine precision, symmetry) rather than against the page's own code.

Run: PATH=.venv/bin:$PATH .venv/bin/python -m pytest tests/test_lesson_04.py -q
"""

from __future__ import annotations

import re

import numpy as np

from lesson_page import number

LESSON = "chapters/04_self_and_cross_attention.html"
D_MODEL, D_K = 16, 8  # the lesson's sizes; d_v = d_k
SOURCE = "the cat sat on the mat".split()
TARGET = "le chat s'est assis sur le tapis".split()


def test_no_glue_leftovers(text):
    for leftover in ["glue:", "np.float64", "{glue"]:
        assert leftover not in text, f"unrendered glue on the lesson page: {leftover!r}"


def test_parameter_count(text):
    # w_q and w_k: d_model x d_k each; w_v: d_model x d_v, with d_v = d_k.
    assert f"{D_MODEL * (2 * D_K + D_K)} for" in text


def test_separate_projections_learn_the_cycle_and_a_shared_one_cannot(text):
    (separate_min,) = number(text, r"separate matrices put at least (\S+) of every word.s weight on its partner")
    (shared,) = number(text, r"A single shared matrix trained the same way puts only (\S+) there")
    assert separate_min >= 0.95
    # A Gram matrix cannot have every word of a cycle prefer its partner to itself.
    assert shared < 0.5


def test_the_gram_matrix_is_defined_and_its_inequality_proved(text):
    """Issue 21: 'Gram matrix' was used undefined, and its inequality without the one-line proof."""
    assert "Gram matrix, a matrix of dot products: \\(s_{ij} = u_i \\cdot u_j\\) with \\(u_i = W^\\top x_i\\)" in text
    assert "because \\(0 \\le \\lVert u_i - u_j \\rVert^2 = s_{ii} - 2 s_{ij} + s_{jj}\\)" in text


def test_no_unnamed_source_and_heads_are_forward_referenced(text):
    assert "widely" not in text and "circulates" not in text
    assert "A common mistake passes the wrong tensors to cross-attention" in text
    body = text[text.index("In chapter 02 the queries, keys and values were given to us") :]  # not the navigation
    first = body.index("head")
    assert "which chapter 05 introduces" in body[first - 200 : first + 200]


def test_cross_attention_shapes_and_the_indistinguishable_articles(text):
    assert f"The weights form a {len(TARGET)} × {len(SOURCE)} alignment" in text
    first, second = number(text, r"Both le split their weight equally between the two the, (\S+) and (\S+):")
    # The two "the" have the same embedding, hence the same key: their weights are equal, at most 1/2 each.
    assert first == second <= 0.5


def test_swapped_query_and_value(text):
    assert "RuntimeError:" in text, "the swapped version must be shown failing on sequences of different lengths"
    assert "moves 1 output row of the right cross-attention" in text
    assert f"and all {len(TARGET)} rows of the swapped one" in text


def test_permutation_equivariance_to_machine_precision(text):
    gap32, gap64, size = number(
        text, r"The largest difference is (\S+) in float32 and (\S+) in float64, for outputs of size up to (\S+)"
    )
    eps32, eps64 = np.finfo(np.float32).eps, np.finfo(np.float64).eps
    assert f"{eps32:.1e} for float32 and {eps64:.1e} for float64" in text
    # "outputs of size up to" a bound: rounded up (issue 29), so it is at least the size the float32 gap is judged by
    assert re.search(r"for outputs of size up to \d+\.\d\d:", text)
    # A sum of a few dozen rounded products: within a small multiple of epsilon times the size.
    assert gap32 <= 64 * eps32 * size and gap64 <= 64 * eps64 * size


def test_order_is_invisible_until_positions_are_added(text):
    (gap,) = number(text, r"The output for cat differs by (\S+) between")
    (with_positions,) = number(text, r"the same output then differs by (\S+)")
    assert gap < 1e-5 and with_positions > 0.05


def test_figures(book, lesson_html):
    images = re.findall(r'<img[^>]+src="([^"]+\.png)"', lesson_html)
    assert len(images) >= 2, "the lesson should show the self- and cross-attention heatmaps"
    for src in images:
        assert (book.html_dir / "chapters" / src).resolve().is_file(), f"missing image {src}"


def body_of(text: str) -> str:
    return text[text.index("In chapter 02 the queries, keys and values were given to us") :]  # not the navigation


def test_terms_are_taught_where_they_are_first_used(text):
    """Issue 29: cross-entropy (the trained example rests on it), bilinear form and machine epsilon were undefined."""
    body = body_of(text).replace("’", "'")
    for term, definition in [
        ("cross-entropy", "\\(-\\sum_j t_j \\ln w_j\\) per query: chapter 01's loss"),
        ("bilinear form", "a function of two vectors that is linear in each of them when the other is held fixed"),
        ("machine epsilon", "the gap between 1 and the next number the type can represent"),
        ("permutation matrix", "the identity matrix with its rows reordered"),
    ]:
        first, at = body.index(term), body.index(definition)
        assert first <= at <= first + 400, f"{term!r} is not defined where it is first used"


def test_lower_bounds_are_rounded_down(text):
    """Issue 29, item 2: an "at least" shown as 1.000 for weights below 1. The page's bounds end in digits that a
    rounding down of a weight below 1 can give, and the partner weights are probabilities."""
    (separate_min,) = number(text, r"separate matrices put at least (\S+) of every word.s weight on its partner")
    (moved,) = number(text, r"each by at least (\S+)\)")
    (keeps,) = number(text, r"each word that occurs once keeps at least (\S+) of its weight for itself")
    assert separate_min < 1 and 0 < moved and 0.5 < keeps < 1
