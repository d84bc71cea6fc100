"""What `grade` says while it works (issue 37): the intake's count before anything slow starts, and an estimate of
the time left once a few submissions are done. The whole run's output is checked in tests/test_grading.py."""

from __future__ import annotations

from pathlib import Path

from autograder.grading.grade import eta, found_line
from autograder.model.records import Submission


def test_no_estimate_from_the_first_results_or_at_the_end():
    assert eta(20.0, 1, 300) == "" and eta(30.0, 2, 300) == ""  # the warm-up is most of the first results
    assert eta(900.0, 300, 300) == ""


def test_the_estimate_is_the_rate_so_far():
    assert eta(30.0, 3, 6) == "about 30 s left"
    assert eta(60.0, 10, 300) == "about 29 min 00 s left"  # 6 s a submission, 290 left
    assert eta(10.0, 4, 5) == "about 2 s left"  # 2.5 s, rounded


def test_found_line_counts_files_students_and_what_is_missing():
    found = [
        Submission("ada", "02_dot_product_attention", Path("a.ipynb")),
        Submission("ada", "03_masked_attention", Path("b.ipynb")),
        Submission("bob", "02_dot_product_attention", None, problem="not handed in"),
        Submission("bob", "03_masked_attention", Path("c.ipynb")),
        Submission("cy", "02_dot_product_attention", None, problem="not handed in"),
        Submission("cy", "03_masked_attention", None, problem="not handed in"),
    ]
    line = found_line(found, ["02_dot_product_attention", "03_masked_attention"])
    assert line == (
        "Found 3 notebook file(s) from 2 of 3 student(s), for 02_dot_product_attention, 03_masked_attention; "
        "3 notebook(s) not handed in (scored 0, with the reason)"
    )
    assert "not handed in" not in found_line(found[:2], ["02_dot_product_attention", "03_masked_attention"])
