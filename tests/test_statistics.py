"""The class report's numbers (`autograder.reporting.statistics`) without a page: a class of five built by hand,
every expected value worked out by hand below (not by the code under test). That statistics never imports the
page that renders it is tests/test_reporting_seams.py's.

The class, notebook cells `a` (1 point) and `b` (2 points) in that order, and a hidden test line `SECRET`:

    student  score  a                 b                                  note
    s1       3/3    passed            passed  (and `z`, a cell only s1's record names: passed)
    s2       1/3    passed            "AssertionError: wrong SECRET here"
    s3       0/3    not run           not run                            reason "not valid JSON"
    s4       -      -                 -                                  the grader failed: "boom at SECRET"
    s5       0/3    70 x's            "AssertionError: wrong SECRET here"
"""

from __future__ import annotations

import json

from autograder.model.records import CellResult, LateRecord, Result
from autograder.reporting import statistics
from autograder.reporting.statistics import (
    NOT_RUN,
    TOP_MESSAGES,
    CellRate,
    Failure,
    LateSubmission,
    NotGraded,
    Repaired,
    Scores,
)

HIDDEN = {"SECRET"}
CHARS = 60  # messages cut to this length here
WRONG = "AssertionError: wrong SECRET here"
WRONG_SHOWN = "AssertionError: wrong [hidden test line] here"  # redact's placeholder
CUT = "x" * 60 + " [...]"


def _class() -> list[Result]:
    bad = "not valid JSON"
    return [
        Result("s1", "nb", 3.0, 3.0, [CellResult("a", 1, 1), CellResult("b", 2, 2), CellResult("z", 1, 1)]),
        Result("s2", "nb", 1.0, 3.0, [CellResult("a", 1, 1), CellResult("b", 0, 2, WRONG)]),
        Result("s3", "nb", 0.0, 3.0, [CellResult("a", 0, 1, bad), CellResult("b", 0, 2, bad)], reason=bad),
        Result("s4", "nb", 0.0, 3.0, [], internal_error="boom at SECRET"),
        Result("s5", "nb", 0.0, 3.0, [CellResult("a", 0, 1, "x" * 70), CellResult("b", 0, 2, WRONG)]),
    ]


def test_the_grader_s_own_failures_are_not_scores():
    assert [r.student for r in statistics.graded_results(_class())] == ["s1", "s2", "s3", "s5"]


def test_score_summary():
    scores = statistics.score_summary(statistics.graded_results(_class()))
    # mean (3 + 1 + 0 + 0) / 4 = 1; full marks: s1; none: s3, s5; a reason: s3
    assert scores == Scores(submissions=4, total=3.0, mean=1.0, full_marks=1, zero=2, with_reason=1)
    assert statistics.score_summary([]) == Scores(0, 0, 0, 0, 0, 0)


def test_pass_rates_hardest_first_with_messages_grouped_after_redaction():
    cells = statistics.cell_rates(statistics.graded_results(_class()), ["a", "b"], HIDDEN, CHARS)
    assert cells == [
        # b: s1 passes, s2 and s5 fail the same way once the hidden line is replaced (s2 first: the example),
        # s3 never ran to it (no example: no code of its ran)
        CellRate("b", 1, 4, (Failure(WRONG_SHOWN, 2, "s2"), Failure(NOT_RUN, 1, None))),
        # a: s1 and s2 pass; a tie of one each, in the order met (s3 before s5)
        CellRate("a", 2, 4, (Failure(NOT_RUN, 1, None), Failure(CUT, 1, "s5"))),
        # z: after the notebook's own cells
        CellRate("z", 1, 1),
    ]
    assert [cell.rate for cell in cells] == [0.25, 0.5, 1.0]
    assert not any("SECRET" in f.message for cell in cells for f in cell.failures)


def test_a_cell_nobody_has_a_result_for_has_rate_zero_and_order_breaks_ties():
    only_a = [Result("s1", "nb", 0.0, 1.0, [CellResult("a", 0, 1, "no")])]
    cells = statistics.cell_rates(only_a, ["b", "a", "c"], set(), CHARS)
    # rates: b 0/0 -> 0, a 0/1 -> 0, c 0/0 -> 0: a tie, in the notebook's order
    assert [(c.grade_id, c.passed, c.submissions, c.rate) for c in cells] == [
        ("b", 0, 0, 0.0),
        ("a", 0, 1, 0.0),
        ("c", 0, 0, 0.0),
    ]


def test_only_the_most_frequent_messages_are_listed_and_the_rest_counted():
    # cell c fails 20 times: "zeta" 4, then "eta", "beta", "alpha", "delta" 3 each (a tie: in the order met, not
    # by name), then "gamma" and "omega" 2 each: the two left out, 4 failures
    counts = [("zeta", 4), ("eta", 3), ("beta", 3), ("alpha", 3), ("delta", 3), ("gamma", 2), ("omega", 2)]
    messages = [m for m, n in counts for _ in range(n)]
    results = [Result(f"s{i}", "nb", 0.0, 1.0, [CellResult("c", 0, 1, m)]) for i, m in enumerate(messages)]
    (cell,) = statistics.cell_rates(results, ["c"], set(), CHARS)
    assert TOP_MESSAGES == 5
    assert [(f.message, f.count, f.example) for f in cell.failures] == [
        ("zeta", 4, "s0"),
        ("eta", 3, "s4"),
        ("beta", 3, "s7"),
        ("alpha", 3, "s10"),
        ("delta", 3, "s13"),
    ]
    assert (cell.passed, cell.submissions) == (0, 20)
    assert (cell.other_messages, cell.other_count) == (2, 4)


def test_examples_in_the_order_the_table_links_them():
    cells = statistics.cell_rates(statistics.graded_results(_class()), ["a", "b"], HIDDEN, CHARS)
    assert statistics.examples(cells) == {"s2": [f"b: {WRONG_SHOWN}"], "s5": [f"a: {CUT}"]}


def test_not_graded_and_repaired_are_redacted():
    results = _class()
    results[1].repairs.append("put back the SECRET cell")
    assert statistics.not_graded(results, HIDDEN) == [
        NotGraded("s3", 0.0, "not valid JSON"),
        NotGraded("s4", 0.0, "boom at [hidden test line]"),
    ]
    assert statistics.repaired(results, HIDDEN) == [Repaired("s2", ("put back the [hidden test line] cell",))]


def test_lateness():
    def late(student: str, days: int, deadline: str = "2026-03-01T09:00") -> Result:
        record = LateRecord("2026-03-02T10:00", "timestamps CSV", deadline, "10%/day", days, 0.1 * days, 1.0)
        return Result(student, "nb", 2.0, 2.0, [], late=record)

    assert statistics.lateness(_class()) is None, "no deadline given"
    assert statistics.lateness([late("s1", 1, deadline="")]) is None, "a record without a deadline checks nothing"
    results = [late("bo", 1), late("al", 0), late("cy", 2), late("ad", 2), Result("nn", "nb", 0.0, 2.0, [])]
    found = statistics.lateness(results)
    assert found is not None
    assert (found.deadline, found.policy, found.checked) == ("2026-03-01T09:00", "10%/day", 4)
    # the most days first (ad and cy, 2: by name), then bo; al was on time
    assert found.late == (
        LateSubmission("ad", 2.0, results[3].late),
        LateSubmission("cy", 2.0, results[2].late),
        LateSubmission("bo", 2.0, results[0].late),
    )


def test_read_verify_keeps_this_notebook_s_part(tmp_path):
    assert statistics.read_verify(tmp_path, "nb") is None
    record = {
        "when": "2026-03-03 12:00:00",
        "fraction": 0.25,
        "seed": 3,
        "checked": [
            {"student": "s1", "notebook": "nb", "differences": [{"cell": "a", "first": 1.0, "second": 0.5}]},
            {"student": "s2", "notebook": "nb", "differences": []},
            {"student": "s3", "notebook": "other", "differences": [{"cell": "a", "first": 1.0, "second": 0.0}]},
        ],
    }
    (tmp_path / "verify.json").write_text(json.dumps(record), encoding="utf-8")
    run = statistics.read_verify(tmp_path, "nb")
    assert run is not None
    assert (run.when, run.fraction, run.seed) == ("2026-03-03 12:00:00", 0.25, 3)
    assert [c.student for c in run.checked] == ["s1", "s2"]
    assert [c.student for c in run.differ] == ["s1"]
