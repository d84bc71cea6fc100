"""The sandbox's own behaviour: a clear refusal when it cannot start, grader failures that
are retried and never stored, and --no-sandbox giving the same scores."""

from __future__ import annotations

import io
import os

import pytest

from autograder import cli, config, sandbox
from autograder.grading.grade import Options, grade
from autograder.sandbox import command, forkserver, run
from autograder.store.gradebook import load_result
from conftest import NOTEBOOK
from coursetools.samples import implementations, make_submission, write_submission

pytestmark = pytest.mark.grading


@pytest.fixture(scope="module")
def small_class(tmp_path_factory):
    subs = tmp_path_factory.mktemp("small") / "submissions"
    write_submission(make_submission(NOTEBOOK), subs / "ada" / f"{NOTEBOOK}.ipynb")
    mistake = next(i for i in implementations(NOTEBOOK, "wrong") if i.name == "no_scale")
    write_submission(make_submission(NOTEBOOK, mistake.cells), subs / "grace" / f"{NOTEBOOK}.ipynb")
    return subs


def test_grade_refuses_without_bubblewrap_and_says_how_to_fix_it(small_class, tmp_path, monkeypatch, capsys):
    real_which = command.shutil.which
    monkeypatch.setattr(command.shutil, "which", lambda name: None if name == "bwrap" else real_which(name))
    monkeypatch.setattr(command, "_checked", {})
    code = cli.main(["grade", str(small_class), "--workdir", str(tmp_path / "w")])
    err = capsys.readouterr().err
    assert code == 2
    assert "apt-get install bubblewrap" in err and "--no-sandbox" in err
    assert not (tmp_path / "w" / "results").exists(), "nothing may be graded unsandboxed unless asked"


def test_grade_refuses_a_sandbox_whose_kernel_cannot_have_namespaces_of_its_own(
    small_class, tmp_path, monkeypatch, capsys
):
    """Nothing survives a student only where each submission's kernel gets namespaces of its own (a host that
    restricts user namespaces: here bubblewrap's --disable-userns): refused with the reason, nothing graded."""
    real = command.bwrap_command

    def no_user_namespaces(limits, slot_number=0, fork_server=False):
        cmd = real(limits, slot_number, fork_server)
        setpriv = [i for i, part in enumerate(cmd) if part.endswith("/setpriv")]
        if setpriv:  # as root: bubblewrap's own user namespace gives the uid setpriv would have
            cmd = cmd[: setpriv[0]] + cmd[cmd.index("--", setpriv[0]) + 1 :]
        at = next(i for i, part in enumerate(cmd) if part.endswith("/bwrap")) + 1
        uid = str(config.SANDBOX_UID_BASE + slot_number if os.geteuid() == 0 else os.getuid())
        return cmd[:at] + ["--unshare-user", "--uid", uid, "--gid", uid, "--disable-userns"] + cmd[at:]

    monkeypatch.setattr(command, "bwrap_command", no_user_namespaces)
    monkeypatch.setattr(command, "_checked", {})
    code = cli.main(["grade", str(small_class), "--workdir", str(tmp_path / "w")])
    err = capsys.readouterr().err
    assert code == 2
    assert "could not isolate the notebook (unshare: " in err and "--no-sandbox" in err, err
    assert not (tmp_path / "w" / "results").exists(), "nothing may be graded without namespaces of its own"


def test_a_grader_failure_is_retried_reported_and_never_stored(small_class, tmp_path, monkeypatch):
    sandbox.check_available()  # the sandbox works; then every start of it fails (a transient fault)
    for module in (run, forkserver):  # a fresh sandbox per submission, and a fork server's
        monkeypatch.setattr(module, "bwrap_command", lambda limits, slot=0, fork_server=False: ["/bin/false"])
    out = io.StringIO()
    results = grade(small_class, Options(workdir=tmp_path, retries=1), out=out)
    assert all(r.internal_error for r in results)
    assert "NOT graded because the grader failed" in out.getvalue()
    assert load_result(tmp_path, "ada", NOTEBOOK) is None, "a grader failure must not be stored as a grade"
    monkeypatch.undo()
    again = {r.student: r for r in grade(small_class, Options(workdir=tmp_path), out=io.StringIO())}
    assert again["ada"].score == 12 and again["grace"].score == 4
    assert load_result(tmp_path, "ada", NOTEBOOK).score == 12


def test_no_sandbox_gives_the_same_scores(small_class, tmp_path):
    out = io.StringIO()
    results = {r.student: r.score for r in grade(small_class, Options(workdir=tmp_path, sandboxed=False), out=out)}
    assert results == {"ada": 12, "grace": 4}
    assert "NOT sandboxed" in out.getvalue() and "WARNING" in out.getvalue()
