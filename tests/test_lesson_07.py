"""The encoder-block lesson (chapter 07) shows the numbers it claims. Exact quantities (parameter counts,
position-wise feed-forward, agreement with torch.nn.TransformerEncoderLayer) are recomputed here; the
measurements through the 12-layer stacks are checked for the properties the prose states about them
(vanishing gradient without residuals, a pinned scale with LayerNorm, growth without it, post-LN's gradients
concentrating near the output with depth and pre-LN's toward the input), and the figures for being there.

Run: PATH=.venv/bin:$PATH .venv/bin/python -m pytest tests/test_lesson_07.py -q
"""

from __future__ import annotations

import re

import pytest

from lesson_page import book, lesson_html, number, text  # noqa: F401 - fixtures

LESSON = "chapters/07_encoder_block.html"
D_MODEL, D_FF = 512, 2048  # the paper's sizes, used for the parameter counts


def test_no_glue_leftovers(text):
    for leftover in ["glue:", "np.float64", "{glue"]:
        assert leftover not in text, f"unrendered glue on the lesson page: {leftover!r}"


def test_feed_forward_is_position_wise(text):
    own, others = number(text, r"changes the output at position 3 by up to (\S+), and the outputs at the other positions by (\S+)\.")
    assert own > 0.05 and others == 0.0


def test_parameter_counts(text):
    ff, attn, norms, share = number(
        text, r"the feed-forward network holds (\S+) parameters, the attention (\S+) .*? and the two LayerNorms (\S+): "
              r"the part that never looks at another position is (\S+) %")
    assert ff == D_MODEL * D_FF + D_FF + D_FF * D_MODEL + D_MODEL == 2_099_712
    assert attn == 4 * D_MODEL * D_MODEL + 4 * D_MODEL == 1_050_624
    assert norms == 2 * 2 * D_MODEL
    assert share == pytest.approx(100 * ff / (ff + attn + norms), abs=0.05) and share > 66


def test_agrees_with_torch(text):
    (gap,) = number(text, r"both wirings agree with torch.s layer to within (\S+) at every real position")
    assert gap < 1e-10


def stack_row(text: str, wiring: str) -> list[float]:
    """One row of the 12-layer table: rms after layers 1 and 12, grad norms of layers 1 and 12, their ratio."""
    value = r" ([0-9][0-9.e+-]*)"
    return number(text, re.escape(wiring) + value * 5 + r" (?=residual only|LayerNorm only|post-LN|pre-LN|What)")


def test_stack_measurements(text):
    rows = {w: stack_row(text, w) for w in ("neither", "residual only", "LayerNorm only", "post-LN", "pre-LN")}
    for wiring, (rms1, rms12, g1, g12, ratio) in rows.items():
        assert ratio == pytest.approx(g1 / g12, rel=0.02), f"{wiring}: the ratio column is layer 1 / layer 12"
    plain, res, norm, post, pre = rows.values()
    assert plain[0] < 0.2 and plain[4] < 1e-6, "without residual nor norm, the scale collapses and the gradient vanishes"
    assert res[1] > res[0] > 0.9 and 0.5 < res[4] < 2, "residual only: the scale grows, the gradient reaches layer 1"
    for row in (norm, post):
        assert row[0] == pytest.approx(1, abs=1e-3) and row[1] == pytest.approx(1, abs=1e-3), "LayerNorm pins the scale at 1"
    assert norm[4] < post[4], "LayerNorm alone loses more gradient than with the residual path"
    assert pre[1] > pre[0], "pre-LN's stream grows"
    # the prose quotes the table
    (quoted,) = number(text, r"the first layer.s gradient is (\S+) times the last layer.s\. The output no longer depends")
    assert quoted == pytest.approx(plain[4], rel=0.05)
    (quoted,) = number(text, r"Post-LN \(both, the paper.s order\): the scale is pinned \((\S+)\)")
    assert quoted == pytest.approx(post[1], abs=1e-3)


def test_post_ln_against_pre_ln_with_depth(text):
    values = number(text, r"pre-LN: first / last 6 (\S+) (\S+) 12 (\S+) (\S+) 24 (\S+) (\S+) 48 (\S+) (\S+)")
    post, pre = values[0::2], values[1::2]
    assert post[-1] < 1 < pre[-1] and post[-1] < post[0], "post-LN's gradients concentrate near the output with depth"
    assert pre == sorted(pre), "pre-LN's first layer gets relatively more as the stack deepens"
    post_48, pre_48 = number(text, r"post-LN stack receives (\S+) times the gradient norm of the last layer.*?first layer receives (\S+) times")
    assert (post_48, pre_48) == pytest.approx((post[-1], pre[-1]), rel=0.01)
    # the 12-layer column agrees with the 12-layer table
    assert post[1] == pytest.approx(stack_row(text, "post-LN")[4], rel=0.02)
    assert pre[1] == pytest.approx(stack_row(text, "pre-LN")[4], rel=0.02)


def test_figures(book, lesson_html):
    images = [src for src in re.findall(r'<img[^>]+src="([^"]+\.png)"', lesson_html) if "_images/" in src]
    assert len(images) >= 2, "the lesson should show the 12-layer measurements and the post-LN / pre-LN profiles"
    for src in images:
        assert (book.html_dir / "chapters" / src).resolve().is_file(), f"missing image {src}"


def test_links_to_the_exercise(lesson_html):
    assert 'href="07_encoder.html"' in lesson_html
