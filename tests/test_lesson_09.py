"""The training lesson (chapter 09) shows the numbers it claims, checked here against values recomputed
independently of the page's code (the label-smoothing floor from its formula, the norm of a positional row
from sin^2 + cos^2 = 1, the count of possible sources, the reversal of every decoded example) and against
the claims the page makes in words (99% exact match, the failure clinic's symptoms, the reloaded checkpoint).

The training itself runs once, when the `book` fixture builds the book.

Run: PATH=.venv/bin:$PATH .venv/bin/python -m pytest tests/test_lesson_09.py -q
"""

from __future__ import annotations

import math
import re

import pytest

from lesson_page import book, lesson_html, number, text  # noqa: F401 - fixtures

LESSON = "chapters/09_training.html"
DIGITS = "0123456789"


def test_no_glue_leftovers(text):
    for leftover in ["glue:", "np.float64", "{glue"]:
        assert leftover not in text, f"unrendered glue on the lesson page: {leftover!r}"


def test_figures_are_on_the_page(lesson_html):
    images = re.findall(r'<img [^>]*src="\.\./_images/[^"]+\.png"', lesson_html)
    assert len(images) >= 4, f"expected the masks, the schedule, the training curves and the attention maps, found {len(images)} images"


def test_task_numbers(text):
    vocab, held_out = number(text, r"which makes (\S+) tokens in all, shared by both sides\. .*? A held-out set of (\S+) sources")
    assert vocab == 3 + 10 and held_out >= 500
    (possible,) = number(text, r"There are (\S+) possible sources")
    assert possible == sum(10**n for n in range(4, 11))


def test_reaches_99_percent(text):
    step_99, seconds_99, final, steps, train_s, wall_s = number(
        text, r"first reached 99% exact match at step (\S+), after (\S+) s of training, and ended at (\S+) % exact match "
              r"on the held-out sequences after (\S+) steps, (\S+) s of training \((\S+) s with the evaluations\)")
    assert final >= 99.0, f"the lesson's model should reach 99% exact match, the page says {final} %"
    assert 0 < step_99 <= steps and 0 < seconds_99 <= train_s <= wall_s
    assert train_s < 60, f"the target is 99% within 60 s of training; this build took {train_s} s"
    (final_loss,) = number(text, r"The final training loss, (\S+), sits just above the label-smoothing floor")
    (floor,) = number(text, r"here (\S+) for \\\(V\\\) = 13: a perfect model scores that")
    assert floor < final_loss < floor + 0.1


def test_label_smoothing_floor(text):
    (eps,) = number(text, r"Label smoothing \(\\\(\\varepsilon\\\) = (\S+) here")
    (floor,) = number(text, r"here (\S+) for \\\(V\\\) = (?:\S+): a perfect model scores that")
    vocab = 13
    # the entropy of the smoothed target distribution, summed over the vocabulary term by term
    q = [eps / vocab] * vocab
    q[0] += 1 - eps
    assert floor == pytest.approx(-sum(p * math.log(p) for p in q), abs=1e-4)


def test_loss_ignores_padding(text):
    kept, kept_5, counted, counted_5 = number(
        text, r"With ignore_index the loss is (\S+) with or without the extra padding \((\S+)\); counting the padding, "
              r"it moves from (\S+) to (\S+) although")
    assert kept == kept_5
    assert counted != counted_5 and abs(counted_5 - counted) > 1e-3


def test_embedding_scale(text):
    pos, xavier, default = number(text, r"A position vector has length (\S+); a scaled token vector (\S+) with Xavier.s "
                                        r"initialisation and (\S+) with PyTorch.s default")
    d_model = 64
    assert pos == pytest.approx(math.sqrt(d_model / 2), abs=0.01)     # sin^2 + cos^2 = 1 per pair
    # N(0, 1) entries times sqrt(d_model): about sqrt(d_model) * sqrt(d_model) = d_model
    assert default == pytest.approx(d_model, rel=0.15) and xavier < pos * 3 < default
    at, default_acc, xavier_acc = number(text, r"After (\S+) steps the default initialisation gets (\S+) % of the held-out "
                                               r"sequences right where Xavier.s gets (\S+) %")
    assert default_acc < xavier_acc


def test_greedy_examples_are_reversals(text):
    rows = re.findall(r"((?:\d )+\d) <bos> ((?:\d )+\d) <eos>(?: <eos>)* (yes|no)", text)
    assert len(rows) == 5, f"expected five decoded examples, found {rows}"
    for source, output, verdict in rows:
        assert (output.split() == source.split()[::-1]) == (verdict == "yes"), (source, output, verdict)
    assert all(verdict == "yes" for *_, verdict in rows)


def test_cross_attention_anti_diagonal(text):
    length, layer, weight, uniform = number(
        text, r"On this source of (\S+) digits \(.*?\), the rows of layer (\S+).s cross-attention put on average (\S+) % "
              r"of their weight, the mean over the heads, on exactly the mirror position, where a uniform look would put (\S+) %")
    assert uniform == pytest.approx(100 / length, abs=0.5)
    assert weight > 3 * uniform, "the anti-diagonal should stand out"
    assert layer in (1, 2)
    (other,) = number(text, r"The other layer.s cross-attention is more spread out \((\S+) % on the mirror positions\)")
    assert other <= weight


def number_in(cell: str) -> float:
    return float(cell.strip().rstrip("%").strip())


def test_failure_clinic(text):
    nocausal_loss, correct_loss, nocausal_acc = number(
        text, r"its training loss is (\S+), below the correct run.s (\S+) and almost at the label-smoothing floor.*?"
              r"greedy decoding produces garbage: (\S+) % exact match")
    assert nocausal_loss < correct_loss and nocausal_acc < 5
    noshift_loss, noshift_acc = number(text, r"its loss \((\S+)\) is again better than the honest one, and at test time it "
                                             r"copies <bos> forever: (\S+) % exact match")
    assert noshift_loss < correct_loss and noshift_acc < 5
    nopad_acc, correct_acc, nopad_padded, final_padded = number(
        text, r"it scores (\S+) % exact match \(the correct run: (\S+) % at this step\): nothing looks wrong\. .*? "
              r"it falls to (\S+) %: its answers depend .*? answers with the 4 extra pads \((\S+) % exact match\)")
    assert nopad_padded < nopad_acc - 20, "4 extra pads should break the model trained without a padding mask"
    (final,) = number(text, r"and ended at (\S+) % exact match on the held-out sequences")
    assert final_padded == final, "the masked model should give the same answers whatever the padding"
    assert "gives the same answers with the 4 extra pads" in text
    # the table: the broken runs' greedy outputs
    assert re.search(r"labels not shifted \S+ \S+ % (<bos> )+<bos>", text), "the unshifted model should repeat <bos>"


def test_checkpoint_reload(text):
    before, after, original = number(text, r"The freshly built model gets (\S+) %; after load_state_dict it gets (\S+) %, "
                                           r"the trained model.s (\S+) %")
    assert after == original and before < 50
