"""The masks lesson (chapter 03) shows the numbers it claims, recomputed here from their definitions.

Run: PATH=.venv/bin:$PATH .venv/bin/python -m pytest tests/test_lesson_03.py -q
"""

from __future__ import annotations

import json
import re

import pytest
import torch
import torch.nn.functional as F

from book_build import ROOT

LESSON = "chapters/03_masks.html"
MAX_LEN, D_MODEL = 4, 8  # the lesson's toy batch: sequences padded to 4 tokens, 8-dimensional vectors


def test_no_glue_leftovers(text):
    for leftover in ["glue:", "np.float64", "{glue"]:
        assert leftover not in text, f"unrendered glue on the lesson page: {leftover!r}"


def test_uniform_row_under_minus_1e9(text):
    # A fully masked row filled with -1e9 has equal scores: softmax gives 1 / max_len to each key.
    assert f"Each weight is {1 / MAX_LEN:.4f} = 1/{MAX_LEN}" in text


def test_nan_counts_of_the_fully_masked_row(text):
    # An empty sequence of max_len queries: all max_len * max_len weights NaN, and every entry of
    # the (d_model, d_model) value projection's gradient.
    assert f"All {MAX_LEN * MAX_LEN} weights of the empty sequence are NaN" in text
    assert f"{D_MODEL * D_MODEL} of the {D_MODEL * D_MODEL} entries of" in text
    # The additive-mask patch: NaN gradient on the max_len query rows of the empty sequence, out of 2 sequences.
    nan_entries, all_entries = MAX_LEN * D_MODEL, 2 * MAX_LEN * D_MODEL
    assert f"{nan_entries} of the {all_entries} entries of the gradient of q are NaN: the {MAX_LEN} query rows" in text
    # With -inf and no rule, the safe version has no NaN at all.
    assert "The gradient now has 0 NaN entries" in text


def test_mixing_conventions_bugs(text):
    # A mask with True = may attend, read as True = blocked: all weight lands on what should be blocked.
    assert "weight 1.000 on the two <pad> keys" in text
    assert f"its {MAX_LEN} rows are NaN" in text
    # Issue 29: "at least 1.000" of weights that cannot exceed 1. The blocked keys get exactly 0, so the rest is all.
    assert "at least 1.000" not in text
    assert "its weights on itself and on the positions before it are exactly 0.0, so all of its weight goes" in text


def described(out: torch.Tensor) -> str:
    """The page's words for what came out for an empty sequence (its NaN count, or zeros)."""
    nan, numel = int(torch.isnan(out).sum()), out.numel()
    if nan == numel:
        return f"NaN in all {numel} numbers"
    if nan:
        return f"NaN in {nan} of its {numel} numbers"
    return "zeros" if out.abs().max().item() == 0 else "numbers up to"


def test_what_this_torch_does_with_a_fully_masked_row(text):
    """Issue 29, item 1: the page's module (1 head, no biases) never takes the fast path; its zeros with
    need_weights=False come from F.scaled_dot_product_attention, in training mode too; the real fast path (2 heads,
    biases, eval, no gradients) gives NaN; with the fast path disabled, 0. Measured here on a batch of our own."""
    gen = torch.Generator().manual_seed(1)
    x = torch.randn(2, MAX_LEN, D_MODEL, generator=gen)
    blocked = torch.zeros(2, MAX_LEN, dtype=torch.bool)
    blocked[1] = True  # the second sequence has no key: torch's True = ignore
    sdpa = F.scaled_dot_product_attention(x[:, None], x[:, None], x[:, None], attn_mask=~blocked[:, None, None, :])
    one_head = torch.nn.MultiheadAttention(D_MODEL, 1, bias=False, batch_first=True)  # training mode, as on the page
    two_heads = torch.nn.MultiheadAttention(D_MODEL, 2, batch_first=True).eval()
    with torch.no_grad():
        with_weights = one_head(x, x, x, key_padding_mask=blocked)[0][1]
        without = one_head(x, x, x, key_padding_mask=blocked, need_weights=False)[0][1]
        without_eval = one_head.eval()(x, x, x, key_padding_mask=blocked, need_weights=False)[0][1]
        fast = two_heads(x, x, x, key_padding_mask=blocked, need_weights=False)[0][1]
        torch.backends.mha.set_fastpath_enabled(False)
        try:
            no_fast = two_heads(x, x, x, key_padding_mask=blocked, need_weights=False)[0][1]
        finally:
            torch.backends.mha.set_fastpath_enabled(True)
    assert described(without) == described(without_eval), "the page says training and eval() mode alike"
    assert f"({torch.__version__}), the functional form returns {described(sdpa[1])} for the empty sequence" in text
    assert f"as attend does, and returns {described(with_weights)};" in text
    assert f"the functional form above: it returns {described(without)}, in training mode (as here) and in" in text
    assert f"The second module does, and returns {described(fast)};" in text
    assert f"takes the route of need_weights=False and returns {described(no_fast)}." in text
    assert "The module of the last section, with one head and no biases, never takes it." in text
    assert "in eval() mode it then takes a fused path" not in text.replace("`", "")


def test_agreement_bounds_are_rounded_up(text):
    """Issue 29, item 2: "agree to within 2e-07" above a printed 2.4e-07. The bound must be at least every printed
    difference (printed to 2 digits) and, rounded up to one digit, at most twice the largest."""
    printed = [float(d) for d in re.findall(r"largest difference from ours: (\d\.\de[+-]\d\d)", text)]
    assert len(printed) == 4, printed
    agreement = re.search(r"The five agree (exactly|to within (\S+)) \(what float32 rounding allows\)", text)
    assert agreement, "the page should say how closely the five conventions agree"
    if agreement.group(2) is None:
        assert max(printed) == 0
    else:
        bound = float(agreement.group(2))
        assert max(printed) * (1 - 0.05) <= bound <= 2 * max(printed), (bound, printed)
    rows = re.search(r"every row sums to 1 \((exactly|to within (\S+))\)", text)
    assert rows and (rows.group(2) is None or float(rows.group(2)) < 1e-6)


def test_causal_mask_stops_the_leak(text):
    assert "With the mask the change is exactly 0.0" in text


def test_lesson_has_its_figures(book, lesson_html):
    found = re.findall(r'<img[^>]+src="([^"]+\.png)"', lesson_html)
    # the masks and masked weights, and the three treatments of a fully masked row
    assert len(found) >= 2, f"expected at least 2 figures on the masks lesson, found {found}"
    for src in found:
        image = (book.html_dir / "chapters" / src).resolve()
        assert image.is_file() and image.stat().st_size > 5_000, f"{src} is missing or empty"


def test_the_tutorials_masked_fill_is_a_keep_mask_not_an_additive_one(lesson_html, text):
    """Issue 21: `masked_fill(mask == 0, -1e9)` fills where a keep-mask is 0; it is not applied as scores + mask."""
    table = lesson_html.split('id="three-conventions-and-what-mixing-them-does"', 1)[1].split("</table>", 1)[0]
    rows = {}
    for row in re.findall(r"<tr[^>]*>(.*?)</tr>", table, re.S):
        cells = [
            " ".join(re.sub(r"<[^>]+>", "", c).split()) for c in re.findall(r"<t[dh][^>]*>(.*?)</t[dh]>", row, re.S)
        ]
        rows[cells[0]] = cells
    additive = rows["additive float"]
    assert "masked_fill(mask == 0" not in " ".join(additive) and additive[3] == "scores + mask"
    tutorial = next(cells for name, cells in rows.items() if "masked_fill(mask == 0, -1e9)" in " ".join(cells))
    assert "1 = may attend" in tutorial[0] and tutorial[3] == "scores.masked_fill(mask == 0, -1e9)"
    # and the page computes it: the tutorials' line, given the course's mask as 0/1, agrees with the course's
    assert "masked_fill(mask == 0, -1e9) largest difference from ours" in text and "The five agree" in text
    assert "all four compute the same thing" in text


def test_minus_1e9_in_float16(text):
    """Issue 21: in float16, the page's masked_fill raises; torch.where and a cast additive mask give -inf, then NaN."""
    fp16 = torch.zeros(2, dtype=torch.float16)
    try:
        fp16.masked_fill(torch.tensor([True, False]), -1e9)
        raise AssertionError("masked_fill no longer refuses -1e9 in float16: the lesson must change")
    except RuntimeError as err:
        message = f"RuntimeError: {err}"
    assert message in text, "the page should show the error this torch raises"
    assert "-1e9 is -inf again" not in text.replace("\\(", "").replace("\\)", "")
    assert "torch.where, empty row: [-inf, -inf, -inf, -inf] -> weights [nan, nan, nan, nan]" in text
    assert "additive mask, empty row: [-inf, -inf, -inf, -inf]" in text


def test_an_empty_row_gets_the_output_bias(text):
    """Issue 21: with chapter 05's bias=True, a zero attention output becomes b_o: the position gets x + b_o."""
    assert "simply keeps its input" not in text
    assert "W_o(0) equals b_o: True" in text
    assert "such a position gets \\(x + b_o\\)" in text


def test_terms_used_before_they_are_taught(text):
    """Issue 21: heads (chapter 05), packed sequences and the fused path are defined where this page first uses them."""
    first = text.index("(batch, heads, L_q, L_k)", text.index("One convention"))
    assert "The heads axis belongs to multi-head attention, chapter 05" in text[first : first + 400]
    assert "packed sequences (several short sequences laid end to end in one row" in text
    assert "fast path: one fused routine, an optimised routine that computes the projections" in text


def test_broadcasting_is_taught_where_it_is_first_used(text):
    """Issue 29: broadcasting rules were relied on (here and in chapter 05) without being stated."""
    body = text[text.index("Attention lets every query look at every key") :].replace("’", "'")
    first = body.index("broadcast")
    assert "the rules are spelled out with the padding mask below" in body[first : first + 200]
    assert (
        "line the two shapes up from the right; a missing axis counts as size 1; each pair of sizes must be equal or "
        "one of them 1, and an axis of size 1 is repeated to the other's size"
    ) in body


@pytest.mark.parametrize("where", ["solutions", "chapters"])
def test_exercise_describes_the_causal_mask_consistently(where):
    """Issue 21: notebook 03's causal-mask section said 'predicts token i from the tokens before it' next to
    'True on and below the diagonal, itself included'."""
    nb = json.loads((ROOT / where / "03_masked_attention.ipynb").read_text(encoding="utf8"))
    markdown = "\n".join("".join(c["source"]) for c in nb["cells"] if c["cell_type"] == "markdown")
    assert "predicts token $i$ from the tokens before it" not in markdown
    assert "predicts token $i + 1$ from tokens $0, \\dots, i$" in markdown
    assert "the *heads* axis is for multi-head attention, chapter 05" in markdown


def test_intro_lists_masked_attention_for_chapter_03(book):
    """Issue 21: masked attention is half of chapter 03's points; the intro's table says what the exercise builds."""
    row = re.search(r"^\| 03 \|.*\| (\S+) \|$", (ROOT / "intro.md").read_text(encoding="utf8"), re.M)
    assert row and "masked `scaled_dot_product_attention`" in row.group(0)
    intro = " ".join(re.sub(r"<[^>]+>", " ", (book.html_dir / "intro.html").read_text(encoding="utf8")).split())
    assert (
        "padding_mask , causal_mask , masked scaled_dot_product_attention" in intro
        or "padding_mask, causal_mask, masked scaled_dot_product_attention" in intro
    )
