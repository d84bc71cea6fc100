"""Similar answers (autograder/reporting/similarity.py), on the chapter-02 catalogue: no grading needed.

Each catalogue file replaces only the cells it names (the others keep the reference), so
implementations are compared on the cells they wrote; the whole catalogue is the "class"
whose shared code is not evidence.
"""

from __future__ import annotations

import itertools

import pytest

from autograder.reporting import similarity
from conftest import NOTEBOOK
from coursetools.samples import implementations, make_submission
from helpers import ORIGINAL, RENAMED_COPY

CELL = "scaled_dot_product_attention"


def own_cells(impl) -> dict[str, str]:
    cells = similarity.answer_cells(make_submission(NOTEBOOK, impl.cells))
    return {c: cells[c] for c in impl.cells}


@pytest.fixture(scope="module")
def scores():
    answers = {"solution": similarity.answer_cells(make_submission(NOTEBOOK))}
    for kind in ("correct", "wrong"):
        for impl in implementations(NOTEBOOK, kind):
            answers[f"{kind}-{impl.name}"] = own_cells(impl)
    answers["planted-original"] = {CELL: ORIGINAL}
    answers["planted-copy"] = {CELL: RENAMED_COPY}
    pairs = similarity.compare(answers, similarity.starter_code(NOTEBOOK))
    return {(p.a, p.b): p for p in pairs}


def test_normalisation_ignores_names_comments_and_docstrings():
    a = 'def f(x, y):\n    """Doc."""\n    total = x + y  # sum\n    return torch.exp(total)\n'
    b = "def g(p, q):\n    s = p + q\n\n    return torch.exp(s)\n"
    assert similarity.tokens(a) == similarity.tokens(b)
    assert similarity.tokens("return torch.exp(x)") != similarity.tokens("return torch.log(x)")
    assert similarity.tokens("def (:") == []  # does not parse: nothing to compare


def test_the_renamed_reordered_copy_is_flagged(scores):
    pair = scores[("planted-copy", "planted-original")]
    print(f"planted copy: {pair.score:.3f}")
    assert pair.flagged and pair.score >= 0.8


def test_correct_implementations_are_not_flagged_against_each_other_or_the_reference(scores):
    correct = ["solution"] + [f"correct-{i.name}" for i in implementations(NOTEBOOK, "correct")]
    assert len(correct) >= 6
    pairs = [scores[tuple(sorted(p))] for p in itertools.combinations(correct, 2) if tuple(sorted(p)) in scores]
    assert len(pairs) >= 10
    closest = max(pairs, key=lambda p: p.score)
    print(f"closest distinct correct pair: {closest.a} & {closest.b}: {closest.score:.3f}")
    assert not any(p.flagged for p in pairs), [(p.a, p.b, p.score) for p in pairs if p.flagged]
    assert closest.score < similarity.FLAG_SCORE / 2


def test_the_released_starter_code_is_no_evidence():
    starter = similarity.starter_code(NOTEBOOK)
    untouched = {"x": dict(starter), "y": dict(starter), "z": {CELL: ORIGINAL}}
    assert all(p.a != "x" or p.b != "y" for p in similarity.compare(untouched, starter)), (
        "two untouched stubs were compared"
    )


# --- answers that repeat the course's own code (similarity.course_matches) ----------------------


@pytest.fixture(scope="module")
def course_pieces():
    return similarity.course_pieces()


def _distinctive(origin: str, stub: str, pieces) -> bool:
    """Whether the course piece a copier pasted ("name from path") is big enough to be compared."""
    name, source = origin.split(" from ", 1)
    piece = next((p for p in pieces if p.label == f"{source}: {name}"), None)
    if piece is None:  # a notebook's provided cell: the same code as course/provided.py's piece
        piece = next((p for p in pieces if p.label.endswith(f": {name}") and p.label.startswith("course/")), None)
    if piece is None:
        return False
    return len(piece.prints - similarity.fingerprints(stub)) >= similarity.MIN_FINGERPRINTS


def test_every_answer_a_copier_pastes_is_listed(course_pieces, tmp_path):
    """The copier's submissions, from a tree with all course code published: every cell it fills with a course
    piece big enough to be compared (at least MIN_FINGERPRINTS fingerprints beyond the released stub's: a
    three-line numpy softmax is not) is listed."""
    from autograder.model.notebooks import notebook_names, read
    from copier import copier_submissions, published_sources
    from coursetools.publish import publish

    publish(tmp_path / "tree", everything=True, check_release=False)
    sources = published_sources(tmp_path / "tree")
    pasted = 0
    for notebook in notebook_names():
        released = read(tmp_path / "tree" / "chapters" / f"{notebook}.ipynb")
        for nb, origins in copier_submissions(released, sources):
            listed = {
                m.cell
                for m in similarity.course_matches(
                    similarity.answer_cells(nb), course_pieces, similarity.starter_code(notebook)
                )
            }
            starter = similarity.starter_code(notebook)
            comparable = {
                cell
                for cell, items in origins.items()
                if any(_distinctive(item, starter.get(cell, ""), course_pieces) for item in items)
            }
            assert comparable <= listed, f"{notebook}: pasted {origins}, listed only {sorted(listed)}"
            pasted += len(comparable)
    # 14 measured on the tree of chapters 01-11 (chapter 07's lesson no longer has a pasteable layer norm)
    assert pasted >= 12, f"only {pasted} comparable pasted cells: does the copier still find the course's code?"


def test_no_catalogued_answer_written_by_hand_is_listed(course_pieces):
    """Reference solutions and the catalogues' implementations (written for the exercises, not copied) stay
    under the flag: measured, the closest is 0.84 of the course's Encoder."""
    from autograder.model.notebooks import notebook_names
    from coursetools.samples import catalogue_submissions

    for notebook in notebook_names():
        starter = similarity.starter_code(notebook)
        for label, nb, _ in catalogue_submissions(notebook):
            matches = similarity.course_matches(similarity.answer_cells(nb), course_pieces, starter)
            assert not matches, (
                f"{notebook} {label}: listed as repeating {[(m.cell, m.piece, m.share) for m in matches]}"
            )


def test_a_renamed_reordered_copy_of_a_course_function_is_still_listed(course_pieces):
    original = "\n".join(
        [
            "def padding_mask(lengths, max_len):",
            "    counts = torch.as_tensor(lengths).reshape(-1, 1, 1, 1)",
            "    return torch.arange(max_len, device=counts.device) < counts",
        ]
    )
    disguised = "\n".join(
        [
            "def padding_mask(n, width):",
            "    # my own mask",
            "    c = torch.as_tensor(n).reshape(-1, 1, 1, 1)",
            "    return torch.arange(width, device=c.device) < c",
        ]
    )
    pieces = [p for p in course_pieces if p.label == "course/provided.py: padding_mask"] or course_pieces
    for code in (original, disguised):
        found = similarity.course_matches({"ch03_padding_mask": code}, pieces, {}, flag=0.5)
        assert found and found[0].piece == "course/provided.py: padding_mask", found
