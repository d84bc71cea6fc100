"""The probe/judge split's pieces: plain data (autograder/runner/plain.py), the judge program
(autograder/judge) and its warm client (autograder/grading/judging.py), a test cell's two parts."""

from __future__ import annotations

import json
import math

import numpy as np
import pytest
import torch

from autograder.grading.judging import Judge
from autograder.model.notebooks import split_test
from autograder.runner import plain


def round_trip(value):
    return plain.decode(json.loads(json.dumps(plain.encode(value))))


def test_plain_data_comes_back_as_it_went():
    gen = torch.Generator().manual_seed(0)
    weights = torch.randn(3, 4, generator=gen, dtype=torch.float64)
    value = {
        "out": torch.randn(2, 3, generator=gen),
        "weights": torch.nn.Parameter(weights),
        "mask": torch.tensor([[True, False]]),
        "half": torch.ones(2, dtype=torch.bfloat16),
        "empty": torch.empty(0, 5),
        "scalar": torch.tensor(2.5),
        "shape": torch.Size([2, 3]),
        "dtype": torch.float16,
        "array": np.arange(6, dtype=np.int32).reshape(2, 3),
        "array0d": np.array(2.5),
        "transposed": np.arange(6.0).reshape(2, 3).T,
        "numbers": [1, 2.5, float("nan"), -math.inf, 1 + 2j, np.float32(0.5), True, None],
        "pair": ("a", 1),
    }
    back = round_trip(value)
    assert torch.equal(back["out"], value["out"])
    assert type(back["weights"]) is torch.Tensor and torch.equal(back["weights"], weights)
    assert back["mask"].dtype == torch.bool and back["mask"].tolist() == [[True, False]]
    assert back["half"].dtype == torch.bfloat16 and back["empty"].shape == (0, 5)
    assert back["scalar"].shape == () and back["scalar"].item() == 2.5
    assert back["shape"] == (2, 3) and back["dtype"] is torch.float16 and back["pair"] == ("a", 1)
    assert back["array"].dtype == np.int32 and back["array"].tolist() == [[0, 1, 2], [3, 4, 5]]
    assert back["array0d"].shape == () and back["array0d"].item() == 2.5, "a 0-d array stays 0-d"
    assert back["transposed"].tolist() == [[0.0, 3.0], [1.0, 4.0], [2.0, 5.0]]
    numbers = back["numbers"]
    assert numbers[0] == 1 and numbers[1] == 2.5 and math.isnan(numbers[2]) and numbers[3] == -math.inf
    assert numbers[4] == 1 + 2j and numbers[5] == 0.5 and numbers[6] is True and numbers[7] is None


class Imitation:
    """An object that answers like a tensor."""

    shape = (2, 3)
    dtype = torch.float32

    def __eq__(self, other):
        return True


class Sneaky(torch.Tensor):
    pass


@pytest.mark.parametrize(
    ("value", "reason"),
    [
        (Imitation(), "not plain data"),
        (torch.ones(2).as_subclass(Sneaky), "subclass of torch.Tensor"),
        ({"f": print}, "not plain data"),
        ({1: 2}, "key that is not a string"),
        (torch.nn.Linear(2, 2), "not plain data"),
        (np.array([object()]), "not of numbers"),
        (torch.zeros(plain.MAX_BYTES // 4 + 1), "MiB of tensor data"),
        (ValueError("x"), "not plain data"),
    ],
    ids=["imitation", "subclass", "function", "int-key", "module", "object-array", "too-big", "exception"],
)
def test_what_is_not_plain_is_refused_with_its_reason(value, reason):
    with pytest.raises(plain.NotPlain, match=reason):
        plain.encode(value)


@pytest.mark.parametrize(
    "forged",
    [
        {"tensor": {"dtype": "float32", "shape": [3], "data": "AAAA"}},  # 3 bytes for 12
        {"tensor": {"dtype": "object", "shape": [1], "data": ""}},
        {"pickle": "gASV"},
        {"dict": [[1, 2]]},
        {"float": "1e999"},
        {"array": {"dtype": "|O", "shape": [1], "data": "AAAAAAAAAAA="}},
        [1, 2],
    ],
)
def test_decoding_refuses_forged_data(forged):
    with pytest.raises(plain.NotPlain):
        plain.decode(forged)


SOURCE = """\
assert softmax is not None
### BEGIN HIDDEN TESTS
x = torch.arange(4.0)
### PROBE
probe = {"out": softmax(x)}
### JUDGE
torch.testing.assert_close(probe["out"], torch.softmax(x, -1), msg="wrong softmax")
### END HIDDEN TESTS
"""


def test_a_test_cell_splits_into_what_each_process_runs():
    parts = split_test(SOURCE)
    assert "softmax(x)" in parts.kernel and "assert_close" not in parts.kernel, "the judge never reaches the kernel"
    assert "x = torch.arange(4.0)" in parts.kernel and "x = torch.arange(4.0)" in parts.judge
    assert "softmax(x)}" not in parts.judge and "assert softmax is not None" not in parts.judge
    assert split_test("assert 1\n### BEGIN HIDDEN TESTS\nassert 2\n### END HIDDEN TESTS").judge == ""
    with pytest.raises(ValueError):
        split_test("### BEGIN HIDDEN TESTS\n### JUDGE\nx\n### PROBE\ny\n### END HIDDEN TESTS")


def test_the_judge_recomputes_and_decides():
    judge = Judge()
    try:
        source = split_test(SOURCE).judge
        right = plain.encode({"out": torch.softmax(torch.arange(4.0), -1)})
        assert judge.verdict("t", source, right).error is None
        wrong = plain.encode({"out": torch.arange(4.0) / 6})
        error = judge.verdict("t", source, wrong).error
        assert error is not None and error["ename"] == "AssertionError" and "wrong softmax" in error["evalue"]
        missing = judge.verdict("t", source, plain.encode({})).error
        assert missing is not None and missing["ename"] == "KeyError"
        forged = judge.verdict("t", source, {"pickle": "gASV"}).error
        assert forged is not None and forged["ename"] == "ProbeError"
        first = judge.proc
        assert judge.verdict("t", source, right).error is None and judge.proc is first, "the judge stays warm"
        judge.proc.kill()
        judge.proc.wait()
        assert judge.verdict("t", source, right).error is None, "a dead judge is replaced"
    finally:
        judge.close()


def test_the_judge_starts_from_the_setup_and_provided_cells_only():
    from autograder import config
    from autograder.model.notebooks import judge_context, read

    context = judge_context(read(config.SOLUTIONS_DIR / "05_multi_head.ipynb"))
    assert 'device = "cuda" if torch.cuda.is_available() else "cpu"' in context  # the setup cell
    assert context.count("# Provided by the course:") == 1 and "def causal_mask" in context
    assert "def twin_modules" not in context, "a helper that builds the student's module is not the judge's"
    assert "### BEGIN SOLUTION" not in context and "class MultiHeadAttention" not in context


def test_the_judge_helpers_reach_the_judges_only():
    """The judge-helpers cell's hidden body is in every judge's context, after the setup and provided cells; the
    kernel runs only its comments, and the feedback shows only those."""
    from autograder import config
    from autograder.grading.execute import cells_to_run
    from autograder.model.notebooks import (
        JUDGE_HELPERS_HEADER,
        grade_id,
        hidden_test_lines,
        is_judge_helpers_cell,
        judge_context,
        max_points,
        read,
        release_notebook,
        secret_lines,
    )
    from autograder.model.records import CellResult, Result
    from autograder.reporting.feedback import feedback_notebook

    source = read(config.SOLUTIONS_DIR / "05_multi_head.ipynb")
    index, cell = next((i, c) for i, c in enumerate(source.cells) if is_judge_helpers_cell(c))
    secret = secret_lines(source)  # what feedback redacts and the leak tests look for
    body = [line.strip() for line in hidden_test_lines(cell) if line.strip() in secret]
    assert len(body) >= 5, "the judge helpers' own lines are secret"
    context = judge_context(source)
    assert context.index("def causal_mask") < context.index("def torch_twin"), "the helpers come after provided code"
    ran = next(c for c in cells_to_run(source) if c.index == index)
    assert ran.kind == "locked" and ran.source.startswith(JUDGE_HELPERS_HEADER)
    assert not any(line in ran.source for line in body), "the kernel runs the student's copy: comments only"
    points = max_points(source)
    result = Result(
        "alice", "05_multi_head", 0.0, sum(points.values()), [CellResult(g, 0.0, p) for g, p in points.items()]
    )
    shown = feedback_notebook(result, source, source, release_notebook(source))
    page = "\n".join(c.source for c in shown.cells)
    assert not any(line in page for line in body), "the feedback shows the judge helpers' hidden code"
    assert any(grade_id(c) == grade_id(cell) and c.source.startswith(JUDGE_HELPERS_HEADER) for c in shown.cells)


def test_a_judge_uses_the_context_it_is_given():
    judge = Judge()
    try:
        context = "import torch\ndef reference(x):\n    return x.flip(0)\n"
        source = 'torch.testing.assert_close(probe["out"], reference(torch.arange(3.0)), msg="not flipped")'
        assert judge.verdict("t", source, plain.encode({"out": torch.tensor([2.0, 1.0, 0.0])}), context).error is None
        error = judge.verdict("t", source, plain.encode({"out": torch.arange(3.0)}), context).error
        assert error is not None and "not flipped" in error["evalue"]
    finally:
        judge.close()


def test_a_judge_computes_on_one_thread_from_the_same_seed_each_time():
    """One thread: a judge's tensors are tiny, and two threads per judge on a busy machine made each verdict
    about six times slower. Each verdict starts from seed 0, whatever the verdict before it drew."""
    judge = Judge()
    try:
        source = (
            'assert torch.get_num_threads() == 1, f"{torch.get_num_threads()} threads"\n'
            'torch.testing.assert_close(torch.rand(3), probe["first_draw"], msg="not seeded")\n'
            "torch.rand(100)\n"
        )
        torch.manual_seed(0)
        first_draw = plain.encode({"first_draw": torch.rand(3)})
        for _ in range(3):
            assert judge.verdict("t", source, first_draw).error is None
    finally:
        judge.close()
