"""Grades that repeat: every kernel starts seeded (autograder/runner/priming.py), and `grade --verify`
grades a sample again in fresh sandboxes and reports per-cell differences.

`gambler` answers with unseeded randomness (os.urandom): whether a test cell passes is a
coin flip per test cell (the answer finds which test is calling it), so two runs agree on
all 8 cells with probability 1/256. `dicer` draws from torch, numpy and random without
seeding anything: the runner's seeding makes its grade repeat.
"""

from __future__ import annotations

import io
import json
import shutil

import pytest

from autograder.grading.grade import Options, grade
from autograder.grading.verify import verify
from autograder.reporting.report import write_report
from conftest import NOTEBOOK
from coursetools.samples import make_submission, write_submission

pytestmark = pytest.mark.grading

GAMBLER = """import hashlib, os, sys
_coin = os.urandom(16)

def _unlucky():
    frame = sys._getframe(1)
    while frame is not None and not frame.f_code.co_filename.startswith("<test cell"):
        frame = frame.f_back
    name = frame.f_code.co_filename if frame is not None else ""
    return hashlib.sha256(_coin + name.encode()).digest()[0] % 2 == 1

def softmax(x, dim=-1):
    e = torch.exp(x - x.max(dim=dim, keepdim=True).values)
    out = e / e.sum(dim=dim, keepdim=True)
    return out * 1.01 if _unlucky() else out
"""
DICER = """import random
import numpy as np

def softmax(x, dim=-1):
    e = torch.exp(x - x.max(dim=dim, keepdim=True).values)
    out = e / e.sum(dim=dim, keepdim=True)
    luck = torch.rand(()).item() + np.random.rand() + random.random()
    return out * 1.01 if luck > 1.5 else out
"""


@pytest.fixture(scope="module")
def verified(tmp_path_factory):
    root = tmp_path_factory.mktemp("verify")
    subs, work = root / "submissions", root / "grading"
    write_submission(make_submission(NOTEBOOK), subs / "ada" / f"{NOTEBOOK}.ipynb")
    write_submission(make_submission(NOTEBOOK, {"softmax": GAMBLER}), subs / "gambler" / f"{NOTEBOOK}.ipynb")
    write_submission(make_submission(NOTEBOOK, {"softmax": DICER}), subs / "dicer" / f"{NOTEBOOK}.ipynb")
    grade(subs, Options(workdir=work), out=io.StringIO())
    out = io.StringIO()
    checked = verify(subs, Options(workdir=work), fraction=1.0, seed=1, out=out)
    return root, work, {c.student: c for c in checked}, out.getvalue()


def test_verify_flags_unseeded_randomness_only(verified):
    _, _, checked, out = verified
    assert sorted(checked) == ["ada", "dicer", "gambler"]
    assert checked["gambler"].differences, out
    assert not checked["ada"].differences and not checked["dicer"].differences, out
    assert "1 with DIFFERENT per-cell points" in out and "gambler" in out


def test_verify_is_in_the_report(verified):
    root, work, _, _ = verified
    assert json.loads((work / "verify.json").read_text())["seed"] == 1
    page = write_report(root / "report", work)[0].read_text()
    section = page.split("<h2>Grades that repeat</h2>", 1)[1].split("<h2>", 1)[0]
    assert "1 with different per-cell points" in section and "gambler" in section and "dicer" not in section


def test_verify_samples_with_its_seed(verified, tmp_path):
    root, work, _, _ = verified
    calls = []

    def fake(job):
        calls.append(job.submission.student)
        raise RuntimeError("not run")

    first = verify(
        root / "submissions",
        Options(workdir=tmp_path / "empty", retries=0),
        0.5,
        seed=3,
        runner=fake,
        out=io.StringIO(),
    )
    assert first == [], "nothing graded in this work dir: nothing to verify"
    copy = tmp_path / "copy"
    shutil.copytree(work, copy)  # the fixture's verify.json stays as it is
    picked = [
        verify(root / "submissions", Options(workdir=copy, retries=0), 0.5, seed=3, runner=fake, out=io.StringIO())
        for _ in range(2)
    ]
    assert [e.student for e in picked[0]] == [e.student for e in picked[1]] and len(picked[0]) == 2
    assert all(e.error and not e.differences for e in picked[0])


def test_no_catalogue_submission_changes_when_graded_again(catalogues, catalogue_dir, catalogue_workdir):
    out = io.StringIO()
    checked = verify(catalogue_dir, Options(workdir=catalogue_workdir, notebooks=[NOTEBOOK]), fraction=1.0, out=out)
    print(out.getvalue().strip().splitlines()[-1])
    assert len(checked) == len(catalogues[NOTEBOOK])
    assert not [c for c in checked if c.differences or c.error], out.getvalue()
