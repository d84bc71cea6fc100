"""Quick checks of understanding (issue 22, section 5), for every chapter of the manifest that has an exercise.

- Each lesson ends with a section "Check your understanding": 3 to 5 numbered questions, each followed by its
  answer in a dropdown that the built page shows collapsed (a `<details>` element without `open`, which needs no
  script), with every glued number rendered.
- Each exercise notebook in solutions/ has 1 or 2 graded conceptual questions: a markdown cell "## Question: ...",
  a solution cell (grade_id `chNN_question_<topic>`) that sets `answer_<topic>` and nothing else, and a graded test
  cell (`chNN_question_<topic>_check`, 1 point) whose visible part checks only the form of the answer (every
  well-formed answer passes it; a missing one raises NotImplementedError, as the released notebook's stub does) and
  whose hidden part accepts only the right answer, with a message.

The chapters come from chapters.yml, so a new chapter is covered without editing this file. The notebook checks
are one test per notebook: a notebook without its questions fails on its own.

Run: PATH=.venv/bin:$PATH .venv/bin/python -m pytest tests/test_questions.py -q
"""

from __future__ import annotations

import html
import math
import numbers
import re

import pytest

from autograder import config
from autograder.model.notebooks import HIDDEN_BEGIN, HIDDEN_END, grade_id, is_solution_cell, is_test_cell, read
from coursetools.manifest import load

CHAPTERS = [c for c in load().chapters if c.exercise]
SECTION_ID = "check-your-understanding"
LETTERS = ("a", "b", "c", "d")


def ids(chapter) -> str:
    return chapter.number


# --- the lessons --------------------------------------------------------------------------------------------


def _section(page: str) -> str:
    """The HTML of the lesson's "Check your understanding" section."""
    match = re.search(rf'<section id="{SECTION_ID}">(.*?)</section>', page, re.S)
    assert match, 'the lesson has no section "Check your understanding"'
    return match.group(1)


@pytest.mark.parametrize("chapter", CHAPTERS, ids=ids)
def test_lesson_ends_with_questions_whose_answers_are_collapsed(book, chapter):
    path = book.html_dir / f"{chapter.lesson}.html"
    assert path.is_file(), f"{chapter.lesson} was not built"
    section = _section(path.read_text(encoding="utf8"))
    numbers_asked = [int(n) for n in re.findall(r"<p><strong>(\d+)\.", section)]
    assert 3 <= len(numbers_asked) <= 5, f"{chapter.lesson}: {len(numbers_asked)} questions, expected 3 to 5"
    assert numbers_asked == list(range(1, len(numbers_asked) + 1)), f"questions numbered {numbers_asked}"
    dropdowns = re.findall(r"<details([^>]*)>(.*?)</details>", section, re.S)
    assert len(dropdowns) == len(numbers_asked), (
        f"{chapter.lesson}: {len(numbers_asked)} questions but {len(dropdowns)} answers in dropdowns"
    )
    for attributes, body in dropdowns:
        assert "sd-dropdown" in attributes, "an answer that is not a sphinx-design dropdown"
        assert not re.search(r"\bopen\b", attributes), "an answer is shown open; it must start collapsed"
        summary = re.search(r"<summary[^>]*>(.*?)</summary>", body, re.S)
        assert summary and "Answer" in re.sub(r"<[^>]+>", "", summary.group(1)), "a dropdown without an Answer title"
        text = " ".join(html.unescape(re.sub(r"<[^>]+>", " ", body[summary.end() :])).split())
        assert len(text) > 60, f"an answer with almost nothing in it: {text!r}"
    text = html.unescape(re.sub(r"<[^>]+>", "", section))
    for leftover in ("{glue", "glue:text", "np.float64"):
        assert leftover not in text, f"unrendered glue in the questions: {leftover!r}"


# --- the exercise notebooks ---------------------------------------------------------------------------------


def _visible(source: str) -> str:
    return source.split(HIDDEN_BEGIN, 1)[0]


def _hidden(source: str) -> str:
    assert HIDDEN_BEGIN in source and HIDDEN_END in source, "the check cell has no hidden tests"
    return source.split(HIDDEN_BEGIN, 1)[1].split(HIDDEN_END, 1)[0]


def _passes(code: str, name: str | None = None, value: object = None) -> tuple[bool, str]:
    """Run `code` with `name` set to `value` (or unset); (ran without raising, exception name and text)."""
    namespace: dict = {"math": math, "numbers": numbers}
    if name is not None:
        namespace[name] = value
    try:
        exec(compile(code, "<question check>", "exec"), namespace)
    except Exception as err:  # noqa: BLE001 - any failure of the check is what we look at
        return False, f"{type(err).__name__}: {err}"
    return True, ""


def _questions(notebook) -> list[tuple[int, str, str]]:
    """(index of the solution cell, its answer's name, the answer's source) for every question of the notebook."""
    found = []
    for index, cell in enumerate(notebook.cells):
        gid = grade_id(cell) or ""
        if re.fullmatch(r"ch\d\d_question_\w+", gid) and not gid.endswith("_check") and is_solution_cell(cell):
            topic = gid.split("_question_", 1)[1]
            found.append((index, f"answer_{topic}", cell.source))
    return found


@pytest.mark.parametrize("chapter", CHAPTERS, ids=ids)
def test_exercise_has_graded_questions_that_follow_the_convention(chapter):
    notebook = read(config.SOLUTIONS_DIR / f"{chapter.exercise}.ipynb")
    questions = _questions(notebook)
    assert 1 <= len(questions) <= 2, (
        f"solutions/{chapter.exercise}.ipynb has {len(questions)} graded questions (grade_id "
        f"ch{chapter.number}_question_<topic>), expected 1 or 2"
    )
    for index, name, source in questions:
        gid = grade_id(notebook.cells[index])
        assert gid.startswith(f"ch{chapter.number}_question_"), gid
        question = notebook.cells[index - 1]
        assert question.cell_type == "markdown" and question.source.startswith("## Question: "), (
            f"{gid}: the cell before the answer must be the question, '## Question: <title>'"
        )
        lines = [line.strip() for line in source.splitlines() if line.strip()]
        # comments saying how to answer may stand around the region; the region holds the answer alone
        body = [line for line in lines if not line.startswith("#") or line.startswith("### ")]
        assert body[0] == "### BEGIN SOLUTION" and body[-1] == "### END SOLUTION" and len(body) == 3, (
            f"{gid}: the solution cell holds one line, `{name} = ...`, between the solution markers (comments aside)"
        )
        assert re.match(rf"{name}\s*=", body[1]), f"{gid}: the solution cell must set {name}"
        assert body[1] not in question.source, f"{gid}: the question's example is the right answer"
        right: dict = {}
        exec(body[1], {"math": math}, right)
        answer = right[name]

        check = notebook.cells[index + 1]
        assert grade_id(check) == f"{gid}_check" and is_test_cell(check), f"{gid}: no graded check cell after it"
        assert check.metadata["nbgrader"].get("points") == 1, f"{gid}_check is worth 1 point"
        visible, hidden = _visible(check.source), _hidden(check.source)
        assert body[1] not in visible, f"{gid}_check: the form check's example is the right answer"

        ok, message = _passes(visible)
        assert not ok and message.startswith("NotImplementedError"), (
            f"{gid}_check without an answer should raise NotImplementedError (the released stub's error), got {message}"
        )
        if isinstance(answer, str):
            assert all(f"({letter})" in question.source for letter in LETTERS), f"{gid}: choices (a) to (d)"
            others = [letter for letter in LETTERS if letter != answer.strip().lower()]
            assert len(others) == 3, f"{gid}: the answer {answer!r} is not one of the letters a to d"
        else:
            assert isinstance(answer, numbers.Real), f"{gid}: the answer is a letter or a number"
            others = [answer + 1, answer - 0.5, -3 * answer + 7]
        for value in [answer, *others]:
            ok, message = _passes(visible, name, value)
            assert ok, f"{gid}_check: the visible part must check only the form, yet it rejects {value!r}: {message}"
        assert _passes(check.source, name, answer)[0], f"{gid}_check fails on the solution's own answer"
        for value in others:
            ok, message = _passes(visible + hidden, name, value)
            assert not ok, f"{gid}_check accepts the wrong answer {value!r}"
            assert message.startswith("AssertionError: ") and len(message) > 80, (
                f"{gid}_check: a wrong answer must get a message that explains the question: {message!r}"
            )


# --- the numbers the answers state, recomputed here from their definitions (not with the lessons' code) ---------


def _answers_text(book, chapter) -> str:
    """The visible text of the lesson's questions and answers, tags removed and whitespace collapsed."""
    section = _section((book.html_dir / f"{chapter.lesson}.html").read_text(encoding="utf8"))
    return " ".join(html.unescape(re.sub(r"<[^>]+>", "", section)).split())


def _softmax(x: list[float]) -> list[float]:
    top = max(x)
    exps = [math.exp(v - top) for v in x]
    return [e / sum(exps) for e in exps]


def _answers_01(text: str) -> None:
    keys = [(1.0, 0.0), (0.8, 0.6), (0.0, 1.0), (-1.0, 0.0), (1.0, 0.0)]  # the page's keys, key 0 once more
    values = [10.0, 20.0, 30.0, 40.0, 50.0]
    weights = _softmax([(k[0] * 1.0 + k[1] * 0.2) / 0.01 for k in keys])  # the query [1, 0.2] at T = 0.01
    out = sum(w * v for w, v in zip(weights, values, strict=True))
    assert f"it returns {out:.2f}" in text and f"{weights[0]:.4f} and {weights[4]:.4f}" in text
    # four identical queries, softmax over axis 0: each column holds 4 equal numbers
    assert f"gives each of them {1 / 4:.2f}" in text and f"= {sum(values[:4]) / 4:.0f}: exactly the mean" in text


def _answers_02(text: str) -> None:
    w0 = 1 / (1 + math.exp(-2 / math.sqrt(2)))  # softmax([2/sqrt(2), 0])
    assert f"[{w0:.3f}, {1 - w0:.3f}], with an output of {10 * w0 + 20 * (1 - w0):.2f}" in text
    assert f"= {1 / math.sqrt(64):.3f} instead of 1" in text
    assert f"variance {256:d} × {4:d} = {256 * 4:,d}, and the scaled one {4:d}" in text
    (measured,) = [float(v) for v in re.findall(r"pairs: ([\d.]+)\)", text)]
    assert abs(measured - 4) < 0.25, f"the measured variance {measured} is far from 4"


def _answers_03(text: str) -> None:
    allowed = [sum(1 for k in range(4) if k <= i and k < length) for length in (3, 1) for i in range(4)]
    assert f"Answer {sum(allowed)}. In the sequence" in text
    assert f"= {sum(allowed[:4])} (the padded" in text and f"key 0 only: {sum(allowed[4:])}." in text
    assert f"= {1 / (math.e + 1):.3f} of the weight, and the real keys {math.e / (math.e + 1):.3f}" in text


def _answers_04(text: str) -> None:
    assert f"= {64 * (2 * 16 + 32):,}:" in text
    assert "All 5 of 5 (the least moved by" in text
    (gap,) = [float(v) for v in re.findall(r"moved by up to ([\d.]+)\.", text)]
    assert gap > 0.05, "the keys shuffled without their values barely move the output"
    assert f"= {(4 + 2) / 2:.0f}, from" in text


def _answers_05(text: str) -> None:
    d, h = 768, 12
    assert f"= {2 * d:,}:" in text and f"= {4 * d // h}, much earlier" in text
    assert "An error, a RuntimeError" in text
    params = 4 * 512 * 512 + 4 * 512
    assert f"Neither: {params:,} and {params:,}" in text


def _answers_06(text: str) -> None:
    assert re.search(rf"Answer {math.sqrt(128 / 2):.0f} \\\(= \\sqrt", text)
    assert f"= {1 / 10000 ** (2 / 4):.2f}." in text
    dot = math.cos(1) + math.cos(1 / 10000 ** (2 / 4))
    assert f"{dot:.4f} and {dot:.4f}" in text


def _answers_07(text: str) -> None:
    assert f"= {2 * 256 * 1024 + 1024 + 256:,}:" in text
    mean, std = 2.5, math.sqrt(1.25 + 1e-5)
    assert "[" + ", ".join(f"{(x - mean) / std:.4f}" for x in (1, 2, 3, 4)) + "]" in text
    d, d_ff = 64, 256
    layer = 4 * d * d + 4 * d + 2 * d * d_ff + d_ff + d + 2 * 2 * d  # attention, feed-forward, two LayerNorms
    assert f"holds {layer:,} parameters, those of one layer ({layer:,}," in text


def _answers_08(text: str) -> None:
    d, d_ff = 512, 2048
    attention, ff, norm = 4 * d * d + 4 * d, 2 * d * d_ff + d_ff + d, 2 * d
    assert f"Answer {2 * attention + ff + 3 * norm:,}: two attentions" in text
    assert f"That is {attention + norm:,} more" in text
    assert f"{-math.log(math.e / (math.e + 1)):.4f}" in text and f"the {math.log(2):.4f} of a uniform" in text


def _answers_09(text: str) -> None:
    vocab, eps = 4, 0.2
    right, other = 1 - eps + eps / vocab, eps / vocab
    floor = -(right * math.log(right) + (vocab - 1) * other * math.log(other))
    assert f"{right:.2f} on the right token and {other:.2f} on each other one" in text
    assert f"its entropy, {floor:.4f}," in text
    assert f"the loss is {-(vocab - 1) * other * -30:.2f}" in text  # logits [30, 0, 0, 0]: log p = 0 and -30
    assert f"{1 / 100:.2f} at step 0" in text and f"{(49 + 1) / 100:.2f} at step 49" in text
    assert f"{0.5 * (1 + math.cos(math.pi * (550 - 100) / (1000 - 100))):.2f} again at step 550" in text


def _answers_10(text: str) -> None:
    assert f"Answer {2 * 12 * 1024 * 768 * 2 / 2**20:.0f} MiB" in text
    assert f"= {10 - 3}: query 0" in text
    assert "argmax in 200 of 200 rows" in text


ANSWERS = {name.removeprefix("_answers_"): check for name, check in globals().items() if name.startswith("_answers_")}


@pytest.mark.parametrize("chapter", [c for c in CHAPTERS if c.number in ANSWERS], ids=ids)
def test_answers_state_the_recomputed_numbers(book, chapter):
    ANSWERS[chapter.number](_answers_text(book, chapter))
