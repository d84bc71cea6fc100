"""The positional-encoding lesson (chapter 06) shows the numbers it claims, checked here against
values recomputed from the formula (written independently of the page's code) and against
closed forms (row norms, dot products as sums of cosines, the single row of the buggy table).

Run: PATH=.venv/bin:$PATH .venv/bin/python -m pytest tests/test_lesson_06.py -q
"""

from __future__ import annotations

import math
import re

import numpy as np
import pytest

from lesson_page import number

LESSON = "chapters/06_positional_encoding.html"
D_FIG, LEN_FIG = 64, 100  # the heatmaps' table
D_RANGE, LEN_RANGE = 512, 5000  # the table whose range is measured


def table(length: int, width: int) -> np.ndarray:
    """PE through exp/log, entry by entry: PE[p, j] = sin or cos(p * exp(-(j - j % 2) * ln(10000) / width))."""
    p = np.arange(length, dtype=np.float64)[:, None]
    j = np.arange(width)[None, :]
    angle = p * np.exp(-(j - j % 2) * math.log(10000.0) / width)
    return np.where(j % 2 == 0, np.sin(angle), np.cos(angle))


def offset_dot(k: int, width: int) -> float:
    """PE[p] . PE[p + k] = sum over the pairs of cos(omega_i k), for any p."""
    return sum(math.cos(k * 10000.0 ** (-two_i / width)) for two_i in range(0, width, 2))


def test_no_glue_leftovers(text):
    for leftover in ["glue:", "np.float64", "{glue"]:
        assert leftover not in text, f"unrendered glue on the lesson page: {leftover!r}"


def test_range_is_minus_one_to_one(text):
    big = table(LEN_RANGE, D_RANGE)
    low, high, negative = number(
        text, r"The smallest value is (\S+), the largest (\S+), and (\S+) % of the entries are negative"
    )
    assert low == round(big.min(), 6) == -1.0 and high == round(big.max(), 6) == 1.0
    assert negative == pytest.approx(100 * np.mean(big < 0), abs=0.05) and negative > 30
    (norm,) = number(text, r"\\sqrt\{d_\{model\}/2\}\\\), here (\S+), at every position")
    assert norm == math.sqrt(D_RANGE / 2) and np.allclose(np.linalg.norm(big, axis=1), norm)


def test_floor_division_bug(text):
    """The bug as the notebook writes it: phase = (pos / 1e4) ** (dim // dim_model). The exponent is 0 for every
    column, so the phase is (pos / 1e4) ** 0 = 1 at every position and the table has one distinct row."""
    assert "phase = (pos / 1e4) ** (dim // dim_model)" in text, "the page must quote the notebook's line exactly"
    assert "pos / 1e4 ** (dim // d_model)" not in text, "the misquoted line (phase = pos) is back"
    good, n_positions, bad = number(
        text, r"The correct table has (\S+) distinct rows for (\S+) positions, the buggy one (\S+):"
    )
    assert (good, n_positions) == (LEN_FIG, LEN_FIG) and np.unique(table(LEN_FIG, D_FIG).round(12), axis=0).shape[
        0
    ] == LEN_FIG
    assert bad == len({(p / 1e4) ** (j // D_FIG) for p in range(LEN_FIG) for j in range(D_FIG)}) == 1
    (gap,) = number(text, r"two rows differ by at most (\S+)\)")
    assert gap == 0
    assert "no position information" in text and "loses most" not in text
    assert f"{math.sin(1):.4f}" in text and f"{math.cos(1):.4f}" in text
    # the side-by-side table of exponents for d_model = 8: column 7 (a cosine, i = 3) has exponent 6/8, the bug 0
    # and the value cos(1) at every position
    assert "exponent dim // dim_model" in text and "value at every position (bug)" in text
    assert f"7 cos {6 / 8:.3f} {2 * math.pi * 10000 ** (6 / 8):,.1f} 0 {math.cos(1):.4f}" in text


def test_rotation_and_offset_only_dot_products(text):
    n_offsets, k_max, error = number(
        text,
        r"For all (\S+) offsets up to \\\(k =\\\) (\S+), one matrix per offset maps every "
        r"position to the position \\\(k\\\) later, with a largest error of (\S+):",
    )
    assert n_offsets >= 3 and k_max >= 50 and error < 1e-10
    agree = re.search(r"Along each diagonal the dot products agree (exactly|to within (\S+))\.", text)
    assert agree and (agree.group(2) is None or float(agree.group(2)) < 1e-9)
    itself, at_1, at_20 = number(text, r"most similar to itself \((\S+) .*? \((\S+) at offset 1, (\S+) at offset 20\)")
    assert itself == offset_dot(0, D_FIG) == D_FIG / 2
    assert at_1 == pytest.approx(offset_dot(1, D_FIG), abs=0.005) and at_20 == pytest.approx(
        offset_dot(20, D_FIG), abs=0.005
    )


def test_buffer_against_plain_attribute(text):
    assert re.search(r"TableAsAttribute\S* torch\.float32 cpu no 0", text), (
        "the attribute must stay float32 on the CPU and be missing from state_dict"
    )
    assert re.search(r"TableAsBuffer\S* torch\.float64 (meta|cuda) yes 0", text), (
        "the buffer must follow .double() and .to(device) and be saved"
    )
    assert "RuntimeError: Tensor on device cpu is not on the expected device" in text


def test_inplace_add(text):
    change, twice = number(
        text, r"the caller.s embeddings have changed by up to (\S+); .*? the output is off by (\S+)\."
    )
    # x += pe adds the first rows of the table, whose largest entry is cos(0) = 1.
    assert change == twice == round(np.abs(table(5, 8)).max(), 2) == 1.0
    assert "RuntimeError: a leaf Variable that requires grad is being used in an in-place operation" in text
    # Autograd refuses leaves only: on emb(t) * s the in-place add runs and backpropagates (issue 21).
    assert "autograd refuses the in-place write outright" not in text
    grad_diff, model_change = number(
        text,
        r"the embedding.s gradient is the same as with x \+ pe \(largest difference "
        r"(\S+)\), while the caller.s tensor has changed by up to (\S+) and",
    )
    assert grad_diff == 0 and model_change == 1.0
    assert "ran, backward ran; same gradient as x + pe: True" in text


@pytest.mark.parametrize("where", ["solutions", "chapters"])
def test_exercise_says_what_goes_wrong_with_inplace_add(where):
    """Notebook 06 (source and released): x += pe changes the caller's tensor; it does not 'fail on a tensor
    that requires gradients' (autograd refuses in-place writes to leaves only)."""
    import json

    from book_build import ROOT

    nb = json.loads((ROOT / where / "06_positions.ipynb").read_text(encoding="utf8"))
    markdown = "\n".join("".join(c["source"]) for c in nb["cells"] if c["cell_type"] == "markdown")
    assert "fails on a tensor that requires gradients" not in markdown
    assert "changes the caller's tensor" in markdown and "leaf" in markdown


def test_embedding_scale(text):
    small, small_scaled, default_scaled = number(
        text,
        r"the embeddings are (\S+) times as long as the positions.*?brings the ratio to (\S+), the two of the same "
        r"size.*?"
        r"makes them (\S+) times longer than the positions",
    )
    pe_norm = math.sqrt(512 / 2)
    # random rows of std s in 512 dimensions have length close to s * sqrt(512)
    assert small == pytest.approx(1 / pe_norm, abs=0.01)
    assert small_scaled == pytest.approx(math.sqrt(512) / pe_norm, abs=0.02)
    assert default_scaled == pytest.approx(512 / pe_norm, abs=1)


def test_learned_alternative(text):
    (params,) = number(text, r"max_len × d_model, here (\S+)")
    assert params == 512 * 512
    assert "position 512 raises IndexError" in text


def test_figures(book, lesson_html):
    images = [src for src in re.findall(r'<img[^>]+src="([^"]+\.png)"', lesson_html) if "_images/" in src]
    assert len(images) >= 3, "the lesson should show the heatmap, the bug side by side and the dot products"
    for src in images:
        assert (book.html_dir / "chapters" / src).resolve().is_file(), f"missing image {src}"


def test_mistakes_are_not_attributed_to_unnamed_sources(text):
    """Issue 21: the course has no citation for 'a widely copied tutorial': the page calls them common mistakes."""
    assert "widely copied" not in text and "circulate" not in text and "popular" not in text
    assert "A common mistake writes the exponent with floor division" in text


def test_the_small_initialisation_is_attributed_to_tensor2tensor(text):
    """Issue 29, item 5: N(0, 1/d_model) is not "the scale of a linear layer's weights" (nn.Linear's default variance
    is 1/(3 d_in), chapter 07); it is tensor2tensor's embedding initialiser."""
    assert "the scale of a linear layer's weights" not in text
    assert "N(0, 1/d_model), tensor2tensor's embedding initialiser" in text
    linear_std, t2t_std = number(text, r"a standard deviation of (\S+) here against (\S+)\.")
    assert linear_std == round(math.sqrt(1 / (3 * 512)), 4) and t2t_std == round(512**-0.5, 4)
    assert "tf.random_normal_initializer(0.0, hidden_dim**-0.5)" in text


def test_epoch_is_said_where_it_is_used(text):
    assert "a second epoch, one more pass over the training data" in text


def test_dropout_refers_to_where_it_is_taught(text):
    assert "dropout acts only in train() mode (chapter 05 explains dropout and the two modes)" in text
