"""The training lesson (chapter 09) shows the numbers it claims, checked here against values recomputed
independently of the page's code (the label-smoothing floor from its formula, the norm of a positional row
from sin^2 + cos^2 = 1, the count of possible sources, the learning rate of the schedule, the shifts of a
printed bucket, the masks of a mixed batch, the reversal of every decoded example) and against the claims the
page makes in words (the exact match reached, the shape of its curve, the failure clinic's symptoms, padding with
and without its mask, the reloaded checkpoint).

Seeded training is bit-identical only on the same kind of CPU: on another, the run takes another path (issue 29:
a fresh clone's curve never fell, and the page said "it fell 0 times"). So a claim about the trained model is
checked against the numbers the page prints for that run (its training log, its tables), whatever shape the run
took, never against one machine's shape.

The lesson shows ideas in code that needs real work to become the exercise (docs/maintainers.md): it
trains on buckets of one length, with the step written inside `fit` and a decoder for buckets, and leaves the
general case (`make_batch`, `train_step`, `greedy_decode`) to the exercise. `test_no_exercise_function_is_published`
checks that neither the lesson's code nor `course/seq2seq.py` (which the public release ships) defines them.

The training itself runs once, when the `book` fixture builds the book.

Run: PATH=.venv/bin:$PATH .venv/bin/python -m pytest tests/test_lesson_09.py -q
"""

from __future__ import annotations

import ast
import html
import math
import re
from pathlib import Path

import pytest

from lesson_page import number

LESSON = "chapters/09_training.html"
DIGITS = "0123456789"
ROOT = Path(__file__).resolve().parent.parent
EXERCISE_NAMES = {"make_batch", "train_step", "greedy_decode"}  # exercise 09's answers


def lesson_code() -> str:
    """The Python of the lesson's code cells (the page's source), in order."""
    page = (ROOT / "chapters" / "09_training.md").read_text(encoding="utf8")
    cells = re.findall(r"^```\{code-cell\}[^\n]*\n(.*?)^```", page, flags=re.M | re.S)
    code = []
    for cell in cells:
        cell = re.sub(r"\A---\n.*?\n---\n", "", cell, flags=re.S)  # a cell's YAML options
        code.append(
            "\n".join(line for line in cell.splitlines() if not line.startswith((":", "%")))
        )  # `:tags:` lines, IPython magics
    return "\n\n".join(code)


def defined_names(source: str) -> set[str]:
    """Every function, class and assigned name defined anywhere in `source`, nested ones included."""
    names = set()
    for node in ast.walk(ast.parse(source)):
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
            names.add(node.name)
        elif isinstance(node, (ast.Assign, ast.AnnAssign, ast.AugAssign)):
            targets = node.targets if isinstance(node, ast.Assign) else [node.target]
            names |= {n.id for t in targets for n in ast.walk(t) if isinstance(n, ast.Name)}
        elif isinstance(node, ast.alias):
            names.add((node.asname or node.name).split(".")[0])
    return names


def test_no_exercise_function_is_published():
    """Exercise 09's functions appear nowhere a student can copy them from: not in the course module that the
    lesson imports and literalincludes (and the public release ships), not in the lesson's own code cells."""
    sources = {
        "course/seq2seq.py": (ROOT / "course" / "seq2seq.py").read_text(encoding="utf8"),
        "the code cells of chapters/09_training.md": lesson_code(),
    }
    for where, source in sources.items():
        found = defined_names(source) & EXERCISE_NAMES
        assert not found, f"{where} defines {sorted(found)}, an answer of exercise 09"
    assert (
        "def fit(" in sources["course/seq2seq.py"]
        and "padded_decode" in sources["the code cells of chapters/09_training.md"]
    )
    page = (ROOT / "chapters" / "09_training.md").read_text(encoding="utf8")
    shown = set(re.findall(r":pyobject: (\w+)", page))
    assert shown and not shown & EXERCISE_NAMES, f"the lesson literalincludes {sorted(shown & EXERCISE_NAMES)}"


def test_no_glue_leftovers(text):
    for leftover in ["glue:", "np.float64", "{glue"]:
        assert leftover not in text, f"unrendered glue on the lesson page: {leftover!r}"


def test_figures_are_on_the_page(lesson_html):
    images = re.findall(r'<img [^>]*src="\.\./_images/[^"]+\.png"[^>]*>', lesson_html)
    assert len(images) >= 4, (
        f"expected the masks, the schedule, the training curves and the attention maps, found {len(images)} images"
    )
    for image in images:
        alt = re.search(r'alt="([^"]*)"', image)
        assert alt and len(alt.group(1)) > 40 and "_images" not in alt.group(1), (
            f"a figure without alt text: {image[:200]}"
        )


def test_task_numbers(text):
    vocab, held_out = number(
        text, r"which makes (\S+) tokens in all, shared by both sides\. .*? A held-out set of (\S+) sources"
    )
    assert vocab == 3 + 10 and held_out >= 500
    (possible,) = number(text, r"There are (\S+) possible sources")
    assert possible == sum(10**n for n in range(4, 11))


def training_log(text: str) -> list[tuple[int, float, float]]:
    """The evaluations `fit` printed on the page: (step, exact match, training seconds). The exact match is a count
    out of the 1,000 held-out sources, printed with three decimals: exact."""
    rows = re.findall(r"step +(\d+) +loss (\S+) +exact match (\S+) +(\S+) s", text)
    assert rows, "the page should show the training log"
    return [(int(step), float(match), float(seconds)) for step, _, match, seconds in rows]


def test_the_training_result_is_the_logged_one(text):
    """The sentence on the run says what its log shows, for a run that reached 99 % and for one that did not."""
    log = training_log(text)
    steps = [step for step, _, _ in log]
    final = 100 * log[-1][1]
    reached = [(step, seconds) for step, match, seconds in log if match >= 0.99]
    if reached:
        step_99, seconds_99, final_shown, total, train_s, wall_s = number(
            text,
            r"the model first reached 99% exact match at step (\S+), after (\S+) s of training, and ended at (\S+) % "
            r"exact match on the held-out sequences after (\S+) steps, (\S+) s of training \((\S+) s with the "
            r"evaluations\)",
        )
        assert (step_99, seconds_99) == reached[0], "the first evaluation at 99 % or more, as logged"
    else:
        assert "the model first reached" not in text
        total, final_shown, train_s, wall_s = number(
            text,
            r"the model did not reach 99% exact match in its (\S+) steps: it ended at (\S+) % exact match on the "
            r"held-out sequences after \S+ steps, (\S+) s of training \((\S+) s with the evaluations\)",
        )
    assert final_shown == pytest.approx(final, abs=0.05) and total == steps[-1]
    assert 0 < log[-1][2] == train_s <= wall_s
    # The page's promise of a model that learns the task in seconds. The time is measured (make bench), not
    # bounded here: a busy machine takes longer and the page says how long its build took.
    assert final >= 90, f"the lesson's model should learn the task, the page says {final} %"
    (final_loss,) = number(text, r"The final training loss, (\S+), (?:sits|is) ")
    (floor,) = number(text, r"here (\S+) for \\\(V\\\) = 13: a perfect model scores that")
    if f"The final training loss, {final_loss:.3f}, sits " in text:
        above = number(text, r"sits (\S+) above the label-smoothing floor")[0]
        assert above == pytest.approx(final_loss - floor, abs=0.0015) and 0 <= above < 0.05
    else:
        (above,) = number(text, r"The final training loss, \S+, is (\S+) above the label-smoothing floor")
        assert above == pytest.approx(final_loss - floor, abs=0.006) and above >= 0.045


def schedule_share(step: int, warmup: float, steps: float) -> str:
    """The learning rate of the update that ended `step` (counted from 1; the schedule counts from 0) as a share of
    its peak, in the page's words, from the schedule the page describes (linear warm-up from (s + 1) / warmup, then
    a cosine to zero at the last step), computed here."""
    s = step - 1
    share = 100 * ((s + 1) / warmup if s < warmup else 0.5 * (1 + math.cos(math.pi * (s - warmup) / (steps - warmup))))
    return "under 1" if share < 1 else f"{share:.0f}"


def test_the_curve_and_the_schedule(text):
    """What the page says about the shape of the exact-match curve is what the logged evaluations show, for every
    shape a run can take (no fall, one, several; the last fall at the last evaluation or before): the falls are
    recomputed from the printed log, the learning rate at each named fall from the schedule's formula."""
    warmup, steps = number(
        text, r"grows linearly for (\S+) steps .*? then decays along a cosine to zero at the last step, (\S+)\."
    )
    (every,) = number(text, r"Every (\S+) steps the model greedily decodes")
    log = training_log(text)
    assert [step for step, _, _ in log] == [every * (i + 1) for i in range(int(steps / every))]
    falls = [(log[i][0], 100 * log[i - 1][1], 100 * log[i][1]) for i in range(1, len(log)) if log[i][1] < log[i - 1][1]]
    out_of = rf"\(out of {len(log)} evaluations, every {every:.0f} steps\)"
    fall = r"at step (\d+), from ([\d.]+) % to ([\d.]+) %, where the learning rate was (under 1|\d+) % of its peak"

    def fall_numbers(pattern):  # the falls' numbers, and the learning rate in words
        match = re.search(pattern, text)
        assert match, f"the lesson does not say: {pattern}"
        return list(match.groups())

    def check(shown, expected):
        step, before, after, share = shown
        step, before, after = float(step), float(before), float(after)
        assert (step, before, after) == (expected[0], round(expected[1], 1), round(expected[2], 1)), (shown, expected)
        assert share == schedule_share(int(step), warmup, steps), (share, step)

    if not falls:
        assert "does not climb smoothly" not in text
        first, last = number(
            text,
            rf"never fell from one evaluation to the next {out_of}: it went from (\S+) % at step \S+ to (\S+) % at",
        )
        assert (first, last) == (round(100 * log[0][1], 1), round(100 * log[-1][1], 1))
        return
    worst = max(falls, key=lambda f: f[1] - f[2])
    if len(falls) == 1:
        check(fall_numbers(rf"it fell once {out_of}, {fall}"), worst)
    elif worst == falls[-1]:
        shown = fall_numbers(rf"it fell (\S+) times {out_of}, the largest and last fall {fall}")
        assert int(shown[0]) == len(falls)
        check(shown[1:], worst)
    else:
        shown = fall_numbers(rf"it fell (\S+) times {out_of}, the largest fall {fall}, and the last {fall}")
        assert int(shown[0]) == len(falls)
        check(shown[1:5], worst)
        check(shown[5:], falls[-1])
    calm = sum(1 for step, _, _ in log if step > falls[-1][0])
    if calm > 1:
        assert f"It did not fall at the {calm} evaluations after step {falls[-1][0]:.0f}," in text
    elif calm == 1:
        assert f"It did not fall at the last evaluation, after step {falls[-1][0]:.0f}," in text
    else:
        assert ("It fell at the last evaluation too:" if len(falls) > 1 else "It fell at the last evaluation:") in text


def test_the_curve_figure_says_what_the_run_did(lesson_html, text):
    """The training curves' alt text is computed by the build: its numbers and the falls it names are the log's."""
    alt = re.search(r'<img alt="(Two plots against the training step[^"]+)"[^>]*src="\.\./_images/', lesson_html)
    assert alt, "the training curves, with their alt text, are not on the page"
    alt = html.unescape(alt.group(1))
    log = training_log(text)
    falls = [log[i][0] for i in range(1, len(log)) if log[i][1] < log[i - 1][1]]
    assert f"from {100 * log[0][1]:.1f} % at step {log[0][0]} to {100 * log[-1][1]:.1f} % at step {log[-1][0]}" in alt
    if not falls:
        assert "never falling from one evaluation to the next" in alt and "falling back" not in alt
    elif len(falls) == 1:
        assert f"falling back once, at step {falls[0]}" in alt
    else:
        assert f"falling back {len(falls)} times, the last at step {falls[-1]}" in alt
    (final_loss,) = number(text, r"The final training loss, (\S+),")
    (floor,) = number(text, r"here (\S+) for \\\(V\\\) = 13: a perfect model scores that")
    above = final_loss - floor
    near = "just above" if above < 0.05 else f"{above:.2f} above"
    assert f"to {final_loss:.3f}, {near} the dashed label-smoothing floor at {floor:.3f}" in alt


def test_bucket_is_shifted_for_teacher_forcing(text):
    """The printed bucket: tgt_in = <bos> + the reversed source, tgt_out = the reversed source + <eos>, no padding,
    and its mask is the causal one."""
    match = re.search(
        r"src \(3, 5\) ((?:\d ){15})tgt_in \(3, 6\) ((?:\S ){18})tgt_out \(3, 6\) ((?:\S ){18})"
        r"tgt_mask \(6, 6\) \(1 = may attend\) ((?:[01] ){36})",
        text + " ",
    )
    assert match, "the lesson should print a bucket of three sources of length 5 and its causal mask"
    src, tgt_in, tgt_out, mask = (group.split() for group in match.groups())
    for row in range(3):
        source = src[5 * row : 5 * row + 5]
        assert tgt_in[6 * row : 6 * row + 6] == ["B"] + source[::-1], f"tgt_in row {row} should be <bos> + the reversal"
        assert tgt_out[6 * row : 6 * row + 6] == source[::-1] + ["E"], (
            f"tgt_out row {row} should be the reversal + <eos>"
        )
    assert mask == [str(int(j <= i)) for i in range(6) for j in range(6)], "a bucket's target mask is the causal mask"


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
        text,
        r"With ignore_index the loss is (\S+) with or without the extra padding \((\S+)\); counting the padding, "
        r"it moves from (\S+) to (\S+) although",
    )
    assert kept == kept_5
    assert counted != counted_5 and abs(counted_5 - counted) > 1e-3


def test_embedding_scale(text):
    pos, xavier, default = number(
        text,
        r"A position vector has length (\S+); a scaled token vector (\S+) with Xavier.s "
        r"initialisation \(.*?\) and (\S+) with PyTorch.s default",
    )
    d_model, vocab = 64, 13
    assert pos == pytest.approx(math.sqrt(d_model / 2), abs=0.01)  # sin^2 + cos^2 = 1 per pair
    # N(0, 1) entries times sqrt(d_model): about sqrt(d_model) * sqrt(d_model) = d_model
    assert default == pytest.approx(d_model, rel=0.15) and xavier < pos * 3 < default
    # Issue 29, item 6: the ratio is sqrt(2 d_model) (d_model against sqrt(d_model / 2)), not sqrt(d_model)
    ratio, sqrt_2d = number(text, r"with PyTorch.s default, (\S+) times the position.s, where \S+ = (\S+)\.")
    assert sqrt_2d == round(math.sqrt(2 * d_model), 1) and ratio == pytest.approx(default / pos, abs=0.1)
    assert ratio == pytest.approx(sqrt_2d, rel=0.15)
    assert "times longer than a position vector" in text and "\\sqrt{2\\,d_{model}}\\) times longer" in text
    (bound,) = number(text, r"so \\\(a\\\) = (\S+)\) and")
    assert bound == round(math.sqrt(6 / (vocab + d_model)), 3)
    # Xavier's uniform bound gives entries of std a / sqrt(3): a scaled row of d_model of them, times sqrt(d_model)
    assert xavier == pytest.approx(bound / math.sqrt(3) * d_model, rel=0.1)
    at, default_acc, xavier_acc, default_loss, xavier_loss = number(
        text,
        r"After (\S+) steps the default initialisation gets (\S+) % of the held-out "
        r"sequences right and Xavier.s (\S+) %; the training loss at that step is (\S+) with the default "
        r"initialisation and (\S+) with Xavier.s \(both runs draw the same bucket",
    )
    # the verdict the page draws, from the numbers it shows (exact match: a count out of 1,000, shown exactly; two
    # losses equal to the 3 decimals shown may be in either order)
    verdicts = {
        (True, True): "Xavier's initialisation is ahead on both counts",
        (True, False): "Xavier's initialisation is ahead on the exact match only",
        (False, True): "Xavier's initialisation is ahead on the loss only",
        (False, False): "the default initialisation is not behind after so few steps",
    }
    losses = [default_loss > xavier_loss] if default_loss != xavier_loss else [True, False]
    possible = {verdicts[default_acc < xavier_acc, loss] for loss in losses}
    said = [verdict for verdict in verdicts.values() if verdict in text.replace("’", "'")]
    assert len(said) == 1 and said[0] in possible, (said, possible)
    (announced,) = number(text, r"measured at the end of the training section: the same first (\S+) steps with and")
    assert announced == at > 0, "the initialisation section announces the comparison that the training section makes"


def test_greedy_examples_are_reversals(text):
    rows = re.findall(r"((?:\d )+\d) <bos> ((?:\d )+\d) <eos>(?: <eos>)* (yes|no)", text)
    assert len(rows) == 5, f"expected five decoded examples, found {rows}"
    for source, output, verdict in rows:
        assert (output.split() == source.split()[::-1]) == (verdict == "yes"), (source, output, verdict)
    # the page claims nothing about how many of the five are right: a model at 99 % may miss one on some CPU


def test_cross_attention_anti_diagonal(text):
    length, layer, weight, uniform = number(
        text,
        r"On this source of (\S+) digits \(.*?\), the rows of layer (\S+).s cross-attention put on average (\S+) % "
        r"of their weight, the mean over the heads, on exactly the mirror position, where a uniform look would put "
        r"(\S+) %",
    )
    assert uniform == pytest.approx(100 / length, abs=0.5)
    assert weight > uniform, "the model reverses: one layer reads the mirror position more than a uniform look"
    assert layer in (1, 2)
    other, near = number(
        text,
        r"The other layer.s cross-attention is more spread out \((\S+) % on the mirror positions, "
        r"(\S+) % on them and their two neighbours\)",
    )
    assert other <= weight and other <= near <= 100
    equal = "the two layers share the work" in text
    assert equal != ("the two layers do not share the work equally" in text)
    assert equal == (other >= 0.8 * weight - 1), "'share the work' only when the two are within a fifth"
    (top,) = number(text, r"in its second layer, a row.s largest weight is (\S+) % on average")
    assert ("diffuse too" in text) == (top < 50) and 100 / length <= top <= 100


def test_the_maps_figure_says_what_it_shows(lesson_html, text):
    """The attention maps' alt text gives the numbers the page's text gives, computed by the build."""
    alt = re.search(r'<img alt="(Four attention maps[^"]+)"', lesson_html)
    assert alt, "the attention maps, with their alt text, are not on the page"
    alt = html.unescape(alt.group(1))
    length, layer, weight, uniform = number(
        text,
        r"On this source of (\S+) digits \(.*?\), the rows of layer (\S+).s cross-attention put on average (\S+) % "
        r"of their weight, the mean over the heads, on exactly the mirror position, where a uniform look would put "
        r"(\S+) %",
    )
    (other,) = number(text, r"The other layer.s cross-attention is more spread out \((\S+) %")
    (top,) = number(text, r"in its second layer, a row.s largest weight is (\S+) % on average")
    assert f"one held-out source of {length:.0f} digits" in alt
    assert f"layer {layer:.0f} puts {weight:.0f} % of its weight on the outlined squares" in alt
    assert f"layer {3 - layer:.0f} {other:.0f} %, where a uniform look would put {uniform:.0f} %" in alt
    assert f"a row's largest weight is {top:.0f} % on average" in alt


def test_general_case_masks(text):
    """The figure's batch: the shortest of three sources has min + 1 real decoder positions out of max + 1."""
    match = re.search(r"For a batch of three sources of (\d+), (\d+) and (\d+) digits", text)
    assert match, "the lesson should draw the masks of a mixed batch"
    lengths = [int(n) for n in match.groups()]
    real, width = number(text, r"The shortest sequence has (\S+) real decoder positions out of (\S+):")
    assert (real, width) == (min(lengths) + 1, max(lengths) + 1)
    assert "tgt_mask = padding_mask(tgt_lengths, width) & causal_mask(width)" in text


def test_rows_finish_at_different_times(text):
    """decode_bucket on a padded batch: every row right up to its first <eos>, all rows as long as the longest
    needs; on the whole held-out set some rows write other tokens after their <eos>."""
    rows = re.findall(r"((?:\d ){3,9}\d) -> <bos> ((?:(?:\d|<eos>) ){10}(?:\d|<eos>))", text)
    rows = [(source.split(), output.split()) for source, output in rows]
    assert len(rows) == 3, f"expected the three sources of the mixed batch, each decoded to 11 tokens, found {rows}"
    right = sum("<eos>" in output and output[: output.index("<eos>")] == source[::-1] for source, output in rows)
    if right == 3:
        assert "Each row is right up to its first <eos>" in text
    else:
        assert f"{right} of the 3 rows are right up to their first <eos>" in text
    # the held-out rows that go on after their <eos>: none, one or several, and the example shown does
    if "none of the 1,000 held-out sources gets another token than <eos> after its <eos>" in text:
        return
    one = re.search(
        r"1 of the 1,000 held-out sources gets other tokens than <eos> after its <eos>: <bos> ([^.]+)\.", text
    )
    several = re.search(
        r"padded to 14 positions, (\S+) of the 1,000 held-out sources get other tokens than <eos> after their <eos>, "
        r"such as <bos> ([^.]+)\.",
        text,
    )
    assert one or several, "the page should say how many held-out rows go on after their <eos>"
    if several:
        assert int(several.group(1)) > 1
    example = (one or several).group((one or several).lastindex).split()
    assert "<eos>" in example and any(token != "<eos>" for token in example[example.index("<eos>") :]), example


def number_in(cell: str) -> float:
    return float(cell.strip().rstrip("%").strip())


def test_failure_clinic(text):
    nocausal_loss, correct_loss, nocausal_acc = number(
        text,
        r"its training loss is (\S+), below the correct run.s (\S+) and almost at the label-smoothing floor.*?"
        r"greedy decoding produces garbage: (\S+) % exact match",
    )
    assert nocausal_loss < correct_loss and nocausal_acc < 5
    noshift_loss, noshift_acc = number(
        text,
        r"its loss \((\S+)\) is again better than the honest one, and at test time it "
        r"copies <bos> forever: (\S+) % exact match",
    )
    assert noshift_loss < correct_loss and noshift_acc < 5
    # the table: the broken runs' greedy outputs
    assert re.search(r"labels not shifted \S+ \S+ % (<bos> )+<bos>", text), "the unshifted model should repeat <bos>"


def test_padding_needs_its_mask(text):
    """The bucket-trained model on padded held-out batches: with the source mask, the buckets' answers whatever
    the padding; without it, right only where a row has no padding, and less so with more pads."""
    masked, width, masked_wide, wide, nomask, width_again, share, digits, nomask_wide = number(
        text,
        r"the model gives the same answers as in the buckets, token for token \((\S+) % exact match with (\S+) "
        r"positions, (\S+) % with (\S+)\), because masked keys get a weight of exactly zero\. Without it, .*?: (\S+) % "
        r"exact match with (\S+) positions, little more than the (\S+) % of sources that have (\S+) digits and so no "
        r"padding at all, and (\S+) % with 4 more pads",
    )
    (final,) = number(text, r"and ended at (\S+) % exact match on the held-out sequences")
    assert (width, wide, width_again, digits) == (10, 14, 10, 10)
    assert masked == masked_wide == final, "the masked model should give the same answers whatever the padding"
    # 7 lengths, 4..10, drawn uniformly for 1,000 sources: about 1/7 of them have 10 digits
    assert share == pytest.approx(100 / 7, abs=4)
    (compared,) = re.search(r"exact match with 10 positions, (.{0,20}) the \S+ % of sources that have", text).groups()
    gap = nomask - share
    expected = (
        "little more than" if 0 < gap <= 5 else "more than" if gap > 0 else "exactly" if gap == 0 else "less than"
    )
    assert compared == expected, (compared, nomask, share)
    # fewer right answers than the buckets' is another answer for some source: the page must say so (the same
    # score can hide changed answers, so the other direction is not implied by the numbers)
    if nomask < masked or nomask_wide < masked:
        assert "The same source gets another answer depending on what else is in its batch" in text
    table = re.search(r"10 positions (\S+) % (\S+) % 14 positions (\S+) % (\S+) %", text)
    assert table and [float(g) for g in table.groups()] == [masked, nomask, masked_wide, nomask_wide]


def test_checkpoint_reload(text):
    before, after, original = number(
        text,
        r"The freshly built model gets (\S+) %; after load_state_dict it gets (\S+) %, "
        r"the trained model.s (\S+) %",
    )
    assert after == original and before < 50


def test_label_smoothing_and_initialisation_claims_are_the_measured_ones(text):
    """Issue 21, item 12: the smoothed target puts eps/V on each of the other V - 1 tokens (the floor's formula
    counts V - 1 of them); and the page claims for the initialisation only what it measures (the same first steps
    with and without Xavier), not "a minute and a few seconds"."""
    assert re.search(r"on each of the other \S*V - 1\S* tokens", text), "the smoothed target's other V - 1 tokens"
    assert "a minute and a few seconds" not in text
    default, xavier = number(
        text,
        r"After \S+ steps the default initialisation gets (\S+) % of the held-out sequences "
        r"right and Xavier.s (\S+) %",
    )
    assert (default < xavier) == ("ahead on both counts" in text or "ahead on the exact match only" in text)


def test_terms_are_taught_before_they_are_used(text):
    """Issue 29: Adam, gradient clipping and Xavier's initialisation are explained where the page first names them,
    and the schedule's factor, which a question asks to predict, is shown with its formula."""
    first = text.index("Adam")
    assert text.startswith("Adam, a gradient descent that gives every weight its own step size", first)
    assert text.index("gradient clipping, which caps the size of the gradient of a step") < text.index(
        "clip_grad_norm_"
    )
    assert "is the gradient clipping: when the norm of the whole gradient" in text
    assert "keeps two running averages per weight, of its gradient" in text
    first = text.index("Xavier")
    assert text.replace("’", "'").startswith("Xavier's uniform distribution (Glorot and Bengio, 2010", first)
    assert "def warmup_then_decay(warmup, total):" in text and "return (step + 1) / warmup" in text
    assert text.index("return (step + 1) / warmup") < text.index("3. The schedule, predicted.")


def test_an_empty_gradient_leaves_adam_empty(text):
    """Issue 29, item 10: with zero_grad after backward, PyTorch 2 sets the gradients to None, and Adam keeps no state
    at all (the answer said its running averages stay at zero). Checked on torch here."""
    import torch

    weight = torch.nn.Parameter(torch.ones(3))
    optimizer = torch.optim.Adam([weight], lr=0.1)
    (2 * weight).sum().backward()
    optimizer.zero_grad()
    optimizer.step()
    assert weight.grad is None and not optimizer.state and torch.equal(weight.detach(), torch.ones(3))
    assert "Adam's state stays empty" in text.replace("’", "'")
    assert "running averages stay at zero and the weights never move" not in text
