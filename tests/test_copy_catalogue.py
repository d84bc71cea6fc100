"""The copy catalogue: what a student earns by pasting code the course publishes instead of writing it.

For every exercise NN, the copier (tests/support/copier.py) builds its submissions from what a student can read
when chapter NN opens: the tree `autograder publish --through NN` writes (lessons, lessons as notebooks,
student notebooks, every Python file). They are graded through the real grader, in one run with a blank
notebook (the untouched release) of each chapter, and may earn at most the blank's points plus 10% of
the chapter's points.

The copier is kept honest on the tree of a course published without a calendar (every chapter and all
course code at once): there it must find the answers that the course's own code holds, reaching at least
what was measured on that tree before the calendar existed (issue 19's table).
"""

from __future__ import annotations

import io
import re
from pathlib import Path

import nbformat
import pytest

from autograder.grading.grade import Options, grade
from copier import copier_submissions, published_sources
from coursetools.manifest import load
from coursetools.publish import publish

pytestmark = [pytest.mark.grading, pytest.mark.slow]

MANIFEST = load()
EXERCISES = {c.number: c.exercise for c in MANIFEST.chapters if c.exercise}
# Points the copier earned on the tree published without a calendar, measured before the calendar:
# the answers are in course/provided.py (02: its attention, not a torch softmax).
HONEST_FLOOR = {"02": 8, "03": 8, "05": 9, "06": 9, "07": 13, "08": 16}
SHARE = 0.10
COPY_WORKDIR: dict[str, Path] = {}  # the copy run's work dir, for the export test


def _write_copies(tree: Path, notebook: str, prefix: str, out: Path) -> None:
    released = nbformat.read(str(tree / "chapters" / f"{notebook}.ipynb"), as_version=4)
    for k, (nb, _) in enumerate(copier_submissions(released, published_sources(tree))):
        target = out / f"{prefix}-{k}" / f"{notebook}.ipynb"
        target.parent.mkdir(parents=True)
        nbformat.write(nb, str(target))


@pytest.fixture(scope="session")
def copy_results(tmp_path_factory) -> dict[str, dict[str, float]]:
    """{student label: {notebook: score}} plus "max" per notebook, for every copier and blank submission."""
    root = tmp_path_factory.mktemp("copies")
    subs = root / "submissions"
    for number, notebook in EXERCISES.items():
        tree = root / f"through-{number}"
        publish(tree, through=number, check_release=False)
        _write_copies(tree, notebook, f"copier{number}", subs)
        blank = subs / f"blank{number}" / f"{notebook}.ipynb"
        blank.parent.mkdir(parents=True)
        blank.write_bytes((tree / "chapters" / f"{notebook}.ipynb").read_bytes())
    everything = root / "everything"
    publish(everything, everything=True, check_release=False)
    for number in HONEST_FLOOR:
        _write_copies(everything, EXERCISES[number], f"honest{number}", subs)
    results = grade(
        subs,
        Options(workdir=COPY_WORKDIR.setdefault("path", root / "grading"), notebooks=sorted(EXERCISES.values())),
        out=io.StringIO(),
    )
    scores: dict[str, dict[str, float]] = {"max": {}}
    for result in results:
        if result.notebook != EXERCISES[re.match(r"\D+(\d\d)", result.student).group(1)]:
            continue  # the other notebooks of the run, which this student did not hand in
        scores.setdefault(result.student, {})[result.notebook] = result.score
        scores["max"][result.notebook] = max(scores["max"].get(result.notebook, 0.0), result.max_score)
    return scores


def _best(scores: dict, prefix: str, notebook: str) -> float:
    found = [s[notebook] for student, s in scores.items() if student.startswith(prefix + "-") and notebook in s]
    assert found, f"no {prefix} submission of {notebook} was graded"
    return max(found)


@pytest.mark.parametrize("number", sorted(EXERCISES))
def test_copying_what_is_published_earns_next_to_nothing(copy_results, number):
    notebook = EXERCISES[number]
    blank = copy_results[f"blank{number}"][notebook]
    best = _best(copy_results, f"copier{number}", notebook)
    limit = blank + SHARE * copy_results["max"][notebook]
    assert best <= limit, (
        f"chapter {number}: pasting what is published when it opens earns {best} of "
        f"{copy_results['max'][notebook]} (a blank notebook {blank}; allowed {limit}): run "
        f"`python tests/support/copier.py TREE {notebook} OUT` on `autograder publish --through {number}` to see "
        "what was pasted"
    )


@pytest.mark.parametrize("number", sorted(HONEST_FLOOR))
def test_the_copier_finds_the_answers_that_are_published(copy_results, number):
    notebook = EXERCISES[number]
    best = _best(copy_results, f"honest{number}", notebook)
    assert best >= HONEST_FLOOR[number], (
        f"chapter {number}: with all course code published the copier earns {best}, "
        f"less than the {HONEST_FLOOR[number]} it found before: it no longer finds what exists"
    )


def test_the_export_names_the_course_code_a_copier_pasted(copy_results):
    """`copied_from` lists, for each pasted cell of the copier on the tree with all course code, the course piece."""
    from autograder.reporting.export import rows

    _, data = rows(COPY_WORKDIR["path"])
    honest = [row for row in data if row["student"].startswith("honest") and row["notebook"][:2] == row["student"][6:8]]
    assert honest, "no copier row in the export"
    for row in honest:
        assert "course/provided.py" in row["copied_from"], (
            f"{row['student']} {row['notebook']}: copied_from is {row['copied_from']!r}"
        )
    blanks = [row for row in data if row["student"].startswith("blank") and row["notebook"][:2] == row["student"][5:7]]
    assert blanks and all(row["copied_from"] == "" for row in blanks), [
        (r["student"], r["copied_from"]) for r in blanks
    ]
