"""The command line's one error edge (autograder/errors.py): argument checks are argparse's (exit 2 and the
subcommand's usage, before anything runs); a problem with what the user gave is a `UsageError`, printed as
`error: <message>` with exit status 2 and no traceback; anything else is a bug and keeps its traceback. The limit
options are one declaration shared by `grade` and `gradescope`. Nothing here grades a notebook."""

from __future__ import annotations

import json

import pytest

from autograder import cli
from autograder.errors import InputError, MissingInput, Unreachable, UsageError
from autograder.grading.judging import JudgeFailed
from autograder.intake.state import IntakeStateError
from autograder.integrations.gradescope import Settings, gradescope_limits
from autograder.model.records import CellDifference, Limits, Regrade
from autograder.runner.isolation import IsolationError
from autograder.runner.plain import NotPlain
from autograder.sandbox import SandboxUnavailable
from coursetools.course_code import CourseCodeError
from coursetools.manifest import ManifestError
from coursetools.release import SourceError
from coursetools.site import PublishError

REFUSED_BY_ARGPARSE = {
    "late policy without a deadline": (["grade", "S", "--late-policy", "5%/day"], "need --deadline"),
    "timestamps without a deadline": (["grade", "S", "--timestamps", "t.csv"], "need --deadline"),
    "a deadline that is no time": (["grade", "S", "--deadline", "tomorrow"], "not an ISO 8601 time"),
    "a policy that means nothing": (
        ["grade", "S", "--deadline", "2026-12-01", "--late-policy", "lots"],
        "not understood",
    ),
    "verify nothing": (["grade", "S", "--verify", "0"], "(0, 1]"),
    "verify more than all": (["grade", "S", "--verify", "1.5"], "(0, 1]"),
    "no time per cell": (["grade", "S", "--timeout", "0"], "not more than 0"),
    "negative memory": (["gradescope", "NB", "--out", "z.zip", "--memory", "-1"], "not 0 or more"),
    "no processes": (["grade", "S", "--processes", "0"], "at least 1"),
    "no workers": (["grade", "S", "--workers", "0"], "at least 1"),
    "an assignment id without its notebook": (["export", "--out", "o", "--assignment-id", "1234"], "NOTEBOOK="),
    "an assignment id that is no number": (
        ["export", "--out", "o", "--format", "canvas", "--assignment-id", "nb=x"],
        "NOTEBOOK=",
    ),
    "an assignment id for Moodle": (
        ["export", "--out", "o", "--format", "moodle", "--assignment-id", "nb=1"],
        "--assignment-id goes with --format canvas",
    ),
    "a notebook for Canvas": (
        ["export", "--out", "o", "--format", "canvas", "--notebook", "nb"],
        "goes with --format moodle",
    ),
    "a roster for the plain CSV": (["export", "--out", "o", "--roster", "r.csv"], "go with --format canvas"),
    "publish at no time": (["publish", "--at", "next week"], "not an ISO 8601 time"),
    "publish at two moments": (["publish", "--through", "03", "--at", "2027-01-01"], "not allowed with argument"),
}


@pytest.mark.parametrize("argv, says", REFUSED_BY_ARGPARSE.values(), ids=REFUSED_BY_ARGPARSE.keys())
def test_argument_checks_are_argparses(argv, says, capsys, monkeypatch):
    ran = []
    for name in ("_grade", "_export", "_publish", "_gradescope"):
        monkeypatch.setattr(cli, name, lambda args, name=name: ran.append(name) or 0)
    with pytest.raises(SystemExit) as refused:
        cli.main(argv)
    err = capsys.readouterr().err
    assert refused.value.code == 2 and says in err, err
    assert f"usage: autograder {argv[0]}" in err, "the refusal shows the subcommand's usage"
    assert not ran, "nothing runs after a refused argument"


def test_the_same_options_pass_argparse(monkeypatch):
    """The checks above refuse only what is wrong: the same options, right, reach the command."""
    seen = {}

    def keep(args):
        seen[args.command] = args
        return 0

    monkeypatch.setattr(cli, "_grade", keep)
    monkeypatch.setattr(cli, "_export", keep)
    cli.main(["grade", "S", "--deadline", "2026-12-01T23:59Z", "--late-policy", "5%/day", "--timestamps", "t.csv"])
    cli.main(["export", "--out", "o", "--format", "canvas", "--assignment-id", " nb = 12 ", "--roster", "r.csv"])
    assert seen["grade"].deadline.isoformat() == "2026-12-01T23:59:00+00:00"
    assert seen["grade"].late_policy.per_day == 0.05
    assert seen["export"].assignment_id == [("nb", "12")]


def test_a_usage_error_is_a_message_and_exit_status_2(tmp_path, capsys):
    submissions = tmp_path / "submissions"
    submissions.mkdir()
    cases = [
        (["grade", str(tmp_path / "nope"), "--workdir", str(tmp_path / "w")], "does not exist"),
        (
            ["grade", str(submissions), "--workdir", str(tmp_path / "w"), "--roster", str(tmp_path / "r.csv")],
            f"roster {tmp_path / 'r.csv'} does not exist",
        ),
        (["report", "--out", str(tmp_path / "r"), "--workdir", str(tmp_path / "w0")], "run `autograder grade` first"),
        (["feedback", "--out", str(tmp_path / "f"), "--workdir", str(tmp_path / "w0")], "nothing was graded"),
        (["gradescope", "no_such_notebook", "--out", str(tmp_path / "z.zip")], "no source notebook"),
    ]
    for argv, says in cases:
        assert cli.main(argv) == 2, argv
        err = capsys.readouterr().err
        assert err.startswith("error: ") and says in err and "Traceback" not in err, err


def test_anything_else_is_a_bug_and_keeps_its_traceback(tmp_path, monkeypatch):
    import autograder.reporting.report as report

    def broken(*args, **kwargs):
        raise ValueError("a bug in the report")

    monkeypatch.setattr(report, "write_report", broken)
    with pytest.raises(ValueError, match="a bug in the report"):
        cli.main(["report", "--out", str(tmp_path / "r")])


@pytest.mark.parametrize(
    "error",
    [SourceError, PublishError, ManifestError, CourseCodeError, IntakeStateError, SandboxUnavailable],
)
def test_the_domain_errors_are_usage_errors_and_keep_their_base(error):
    assert issubclass(error, UsageError)
    assert issubclass(error, ValueError) or error is SandboxUnavailable and issubclass(error, RuntimeError)


def test_the_generic_kinds_keep_the_builtin_they_replace():
    """Callers written for the built-in errors (`except FileNotFoundError` in export) still catch them."""
    assert issubclass(InputError, ValueError) and issubclass(MissingInput, FileNotFoundError)
    assert issubclass(Unreachable, ConnectionError)
    assert str(MissingInput("no such folder")) == "no such folder"


@pytest.mark.parametrize("error", [JudgeFailed, IsolationError, NotPlain])
def test_the_graders_own_failures_are_not_usage_errors(error):
    assert not issubclass(error, UsageError), "a failure of the grader is a bug to see, not a message"


LIMITS = ["--timeout", "7", "--notebook-timeout", "70", "--memory", "1.5", "--processes", "9"]


def test_grade_and_gradescope_share_the_limit_options():
    parser = cli.build_parser()
    grade = parser.parse_args(["grade", "S", *LIMITS])
    gradescope = parser.parse_args(["gradescope", "NB", "--out", "z.zip", *LIMITS])
    given = cli._limits(grade, Limits())
    assert given == cli._limits(gradescope, gradescope_limits())
    assert (given.cell_timeout_s, given.notebook_timeout_s, given.memory_bytes, given.processes) == (
        7,
        70,
        int(1.5 * (1 << 30)),
        9,
    )
    # left out, each command keeps its own defaults
    assert cli._limits(parser.parse_args(["grade", "S"]), Limits()) == Limits()
    bare = parser.parse_args(["gradescope", "NB", "--out", "z.zip"])
    assert cli._limits(bare, gradescope_limits()) == gradescope_limits()
    assert gradescope_limits().notebook_timeout_s < 600, "under Gradescope's 10 minutes per run"


def test_the_gradescope_settings_are_a_record_that_survives_json():
    settings = Settings("02_dot_product_attention", "hidden", Limits(cell_timeout_s=5, memory_bytes=0, processes=3))
    again = Settings.from_json(json.loads(json.dumps(settings.to_json())))
    assert again == settings
    old = {"notebook": "nb", "visibility": "visible", "limits": {"cell_timeout_s": 4}}  # a zip built before
    assert Settings.from_json(old).limits == Limits(
        cell_timeout_s=4,
        notebook_timeout_s=gradescope_limits().notebook_timeout_s,
        memory_bytes=gradescope_limits().memory_bytes,
    )


def test_a_regrade_is_a_record_that_survives_json():
    regrade = Regrade("ada", "02_dot_product_attention", (CellDifference("t1", 2.0, 0.0),))
    data = json.loads(json.dumps(regrade.to_json()))
    assert data["differences"] == [{"cell": "t1", "first": 2.0, "second": 0.0}], "verify.json's layout"
    assert Regrade.from_json(data) == regrade


COMMANDS = ["release", "grade", "feedback", "export", "report", "gradescope", "publish"]


def _help(argv, capsys):
    with pytest.raises(SystemExit) as shown:
        cli.main([*argv, "--help"])
    assert shown.value.code == 0, argv
    return capsys.readouterr().out


def test_the_help_lists_every_subcommand(capsys):
    assert f"{{{','.join(COMMANDS)}}}" in _help([], capsys), "each subcommand, in the order of the pipeline"


@pytest.mark.parametrize("command", COMMANDS)
def test_every_subcommand_has_its_help(command, capsys):
    """argparse formats a help string only when --help asks (a stray `%` there is an error only then)."""
    shown = _help([command], capsys)
    assert shown.startswith(f"usage: autograder {command} ") and "options:" in shown, shown
    if command in ("grade", "gradescope"):
        assert all(option in shown for option in LIMITS[::2]), "the shared limit options"
