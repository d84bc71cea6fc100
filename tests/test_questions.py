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
        body = [line.strip() for line in source.splitlines() if line.strip()]
        assert body[0] == "### BEGIN SOLUTION" and body[-1] == "### END SOLUTION" and len(body) == 3, (
            f"{gid}: the solution cell holds one line, `{name} = ...`, between the solution markers"
        )
        assert re.match(rf"{name}\s*=", body[1]), f"{gid}: the solution cell must set {name}"
        right: dict = {}
        exec(body[1], {"math": math}, right)
        answer = right[name]

        check = notebook.cells[index + 1]
        assert grade_id(check) == f"{gid}_check" and is_test_cell(check), f"{gid}: no graded check cell after it"
        assert check.metadata["nbgrader"].get("points") == 1, f"{gid}_check is worth 1 point"
        visible, hidden = _visible(check.source), _hidden(check.source)

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
