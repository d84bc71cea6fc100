"""Chapter 02 (dot-product attention by hand): the built lesson shows the numbers it claims, recomputed here from
their definitions with the standard library and numpy, not with the page's code.

Run: PATH=.venv/bin:$PATH .venv/bin/python -m pytest tests/test_lesson_02.py -q
"""

from __future__ import annotations

import math
import re

import numpy as np
import pytest

from lesson_page import number

LESSON = "chapters/02_attention_by_hand.html"
TOKENS = ["the", "cat", "sat", "on", "the", "mat"]  # the heatmap's sentence
HEAT_D_MODEL = 16


def softmax(scores: list[float]) -> list[float]:
    top = max(scores)
    exps = [math.exp(s - top) for s in scores]
    return [e / sum(exps) for e in exps]


def body_of(text: str) -> str:
    """The lesson's own text, without the navigation before it (which names later chapters)."""
    return text[text.index("This chapter takes apart the one formula") :]


def test_no_glue_leftovers(text):
    for leftover in ["glue:", "np.float64", "{glue"]:
        assert leftover not in text, f"unrendered glue on the lesson page: {leftover!r}"


def test_worked_example_1(text):
    """q = [1, 0], K = I, values 10 and 20: scaled and unscaled weights and outputs."""
    scaled = softmax([1 / math.sqrt(2), 0.0])
    unscaled = softmax([1.0, 0.0])
    shown = number(text, r"dividing by the sum gives the weights \[(\S+), (\S+)\]")
    assert shown == [round(w, 3) for w in scaled] == [0.67, 0.33]
    (output,) = number(text, r"the weighted average of the values, \S+ × 10 \+ \S+ × 20 = (\S+):")
    assert output == round(10 * scaled[0] + 20 * scaled[1], 2) == 13.3
    weights_u, output_u = number(
        text, r"Without the scale, the weights would be .{0,40}?\[(\S+), \S+\] and the output (\S+)\."
    )
    assert weights_u == round(unscaled[0], 3) == 0.731 and output_u == round(10 * unscaled[0] + 20 * unscaled[1], 2)


def test_worked_example_2_and_torch(text):
    """Q = K = I, V = 10 I: weights [[0.6698, 0.3302], [0.3302, 0.6698]], output ten times the weights."""
    own, other = softmax([1 / math.sqrt(2), 0.0])
    assert f"Each query puts {own:.4f} of its weight on its own key and {other:.4f} on the other" in text
    assert f"[{10 * own:.4f}, {10 * other:.4f}] and [{10 * other:.4f}, {10 * own:.4f}]" in text
    agreement = re.search(r"and PyTorch agrees (exactly|to within (\S+))\.", text)
    assert agreement, "the page should say how closely PyTorch agrees"
    if agreement.group(2):
        assert float(agreement.group(2)) < 1e-12  # float64 arithmetic: rounding only


def test_the_diagonal_bound_is_rounded_down(text):
    """Issue 29: "at least 0.58" for a smallest weight of 0.5758. The page's heatmap uses numpy's seeded generator,
    so its weights are recomputed here; the bound shown must not exceed the smallest one."""
    (bound,) = number(text, r"every word that occurs once gives at least (\S+) of its weight to itself")
    vocab = sorted(set(TOKENS))
    table = np.random.default_rng(0).standard_normal((len(vocab), HEAT_D_MODEL))
    x = np.stack([table[vocab.index(t)] for t in TOKENS])
    scores = x @ x.T / math.sqrt(HEAT_D_MODEL)
    weights = np.exp(scores - scores.max(axis=1, keepdims=True))
    weights /= weights.sum(axis=1, keepdims=True)
    once = [i for i, t in enumerate(TOKENS) if TOKENS.count(t) == 1]
    smallest = weights[once, once].min()
    assert bound <= smallest < bound + 0.01, f"{bound} is not {smallest} rounded down to 2 decimals"
    assert smallest > 0.5, "the figure's alt text says each such word gives most of its weight to itself"


def test_softmax_overflow_numbers(text):
    f32_max = float(np.finfo(np.float32).max)
    assert f"about {f32_max:.2e}, so \\(e^x\\) becomes inf as soon as \\(x\\) exceeds {math.log(f32_max):.2f}" in text
    low, high = softmax([1000.0, 1001.0])
    assert f"the stable version returns [{low:.4f}, {high:.4f}]" in text


def test_variance_grows_with_d_k_and_the_scale_removes_it(text):
    v4, v1024 = number(text, r"grows in proportion to \\\(d_k\\\): (\S+) at .{0,30}? and (\S+) at")
    s4, s1024 = number(text, r"it stays near 1 \((\S+) and (\S+)\)")
    # 20,000 pairs: the variance of a sample variance of N(0, d) numbers is 2 d^2 / n, so a few percent
    assert v4 == pytest.approx(4, rel=0.1) and v1024 == pytest.approx(1024, rel=0.1)
    assert s4 == pytest.approx(1, abs=0.1) and s1024 == pytest.approx(1, abs=0.1)


def test_the_scale_of_multi_head_attention(text):
    d_model, heads = 512, 8
    d_k = d_model // heads
    assert f"\\(d_k =\\) {d_k} and the scale is \\(\\sqrt{{d_k}} =\\) {math.sqrt(d_k):.0f}" in text
    assert f"would make every score {math.sqrt(d_model) / math.sqrt(d_k):.2f} times too small" in text


def test_check_your_understanding_numbers(text):
    w0, w1 = softmax([2 / math.sqrt(2), 0.0])
    assert f"the weights [{w0:.3f}, {w1:.3f}], with an output of {10 * w0 + 20 * w1:.2f}" in text
    assert f"Each row sums to \\(1/\\sqrt{{64}}\\) = {1 / 8:.3f}" in text


def test_broadcasting_is_linked_where_the_exercise_needs_it(text):
    body = body_of(text)
    first = body.index("broadcastable")
    assert "broadcasting, whose rules chapter 03 spells out" in body[first : first + 200]


def test_figures(book, lesson_html):
    images = re.findall(r'<img[^>]+src="([^"]+\.png)"', lesson_html)
    assert len(images) >= 4, f"the graph, the heatmap, the variance and the saturation figures: {images}"
    for src in images:
        assert (book.html_dir / "chapters" / src).resolve().stat().st_size > 5_000, f"{src} is missing or empty"
