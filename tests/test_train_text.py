"""Chapter 12's longer run can be trained in stretches (issue 40: its compute adds up over several working days):
a run stopped and continued from its saved TrainingState is the run that never stopped, weight for weight,
and `tools/train_text.py` appends each stretch to the one log, continues after a kill from its last
measurement, and refuses to overwrite a run it cannot continue.

Run: .venv/bin/python -m pytest tests/test_train_text.py -q   (about a minute: the CLI trains the real model)
"""

from __future__ import annotations

import importlib.util
import json
from dataclasses import replace
from pathlib import Path

import pytest
import torch

from course import textlm

ROOT = Path(__file__).resolve().parent.parent
TINY = replace(textlm.BUILD_RUN, d_model=16, num_heads=2, num_layers=1, d_ff=32, context=8, batch_size=4, steps=40)


@pytest.fixture
def one_thread():
    threads = torch.get_num_threads()
    torch.set_num_threads(1)  # the same reductions in every run: equal weights can be asked for exactly
    yield
    torch.set_num_threads(threads)


def tiny_data() -> tuple[torch.Tensor, torch.Tensor]:
    ids = torch.randint(7, (300,), generator=torch.Generator().manual_seed(0))  # 300 chars: 33 chunks, 8 batches
    windows = textlm.validation_windows(torch.randint(7, (80,), generator=torch.Generator().manual_seed(1)), 8, 6)
    return ids, windows


def test_a_run_in_stretches_is_the_run_without_them(tmp_path, one_thread):
    """40 steps in one call, against 13 + 14 + 13 steps in three calls, each from the state the last one saved
    to disk: the same weights, bit for bit, and the same measurements (each stretch adds a row where it stops).
    The stretches cross epochs (8 batches each), so the position in the batches is tested, not only the step."""
    ids, windows = tiny_data()
    straight = textlm.new_model(TINY, 7)
    rows = textlm.fit(straight, ids, windows, TINY, every=5)

    path = tmp_path / "state.pt"
    model = textlm.new_model(TINY, 7)
    parts, resume = [], None
    for stop in (13, 27, None):
        saved: list[textlm.TrainingState] = []
        if resume is not None:
            model = textlm.new_model(replace(TINY, seed=99), 7)  # other weights: the state must bring its own
        parts += textlm.fit(model, ids, windows, TINY, every=5, resume=resume, stop_at_step=stop, on_state=saved.append)
        saved[-1].save(path)
        resume = textlm.TrainingState.load(path)
        assert resume.step == (stop or TINY.steps)
    assert not list(tmp_path.glob("*.partial")), "the save left a partial file behind"

    for name, tensor in straight.state_dict().items():
        assert torch.equal(model.state_dict()[name], tensor), f"{name} differs after the stretches"
    by_step = {row.step: row for row in rows}
    assert [row.step for row in parts] == sorted({row.step for row in rows} | {13, 27})
    for row in parts:
        if row.step in by_step:
            assert row.validation_loss == by_step[row.step].validation_loss


def test_without_its_state_a_run_continues_differently(one_thread):
    """The control for the test above: continuing without AdamW's moments, or with the batches from the start,
    is a different run, so equal weights there are evidence that the state carries what matters."""
    ids, windows = tiny_data()
    straight = textlm.new_model(TINY, 7)
    textlm.fit(straight, ids, windows, TINY, every=40)
    model = textlm.new_model(TINY, 7)
    saved: list[textlm.TrainingState] = []
    textlm.fit(model, ids, windows, TINY, every=40, stop_at_step=20, on_state=saved.append)
    state = saved[-1]
    fresh_moments = replace(state, optimiser={"state": {}, "param_groups": state.optimiser["param_groups"]})
    from_the_start = replace(
        state, batches=textlm.ShuffledChunks(ids, 8, 4, torch.Generator().manual_seed(0)).position()
    )
    for broken in (fresh_moments, from_the_start):
        model = textlm.new_model(TINY, 7)
        textlm.fit(model, ids, windows, TINY, every=40, resume=broken)
        assert any(not torch.equal(model.state_dict()[k], v) for k, v in straight.state_dict().items())


def test_the_batch_stream_continues_from_its_position():
    ids = torch.arange(200)
    stream = textlm.ShuffledChunks(ids, 7, 3, torch.Generator().manual_seed(5))
    for _ in range(11):  # 8 batches an epoch: into the second
        next(stream)
    again = textlm.ShuffledChunks(ids, 7, 3, torch.Generator().manual_seed(123), stream.position())
    for _ in range(20):
        first, second = next(stream), next(again)
        assert torch.equal(first[0], second[0]) and torch.equal(first[1], second[1])


def train_text():
    spec = importlib.util.spec_from_file_location("train_text", ROOT / "tools" / "train_text.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


@pytest.mark.slow
def test_train_text_appends_stretches_and_survives_a_kill(tmp_path, capsys):
    """The real model, for a few steps a stretch: a fresh run, a second stretch, then a stretch whose log got rows
    past the saved state (as when a run is killed between a measurement's row and the next state) continues
    from the state and drops them. The log stays one run: rows in step order, a line per stretch."""
    script = train_text()
    paths = ["--log", str(tmp_path / "log.txt"), "--checkpoint", str(tmp_path / "lm.txt"), "--state"]
    paths.append(str(tmp_path / "state.pt"))
    # A very small plan, so that a stretch is a few steps whatever the machine; every step measured.
    assert script.main(["--fresh", "--total-minutes", "0.2", "--minutes", "0.03", "--every", "1", *paths]) == 0
    first = [json.loads(line) for line in (tmp_path / "log.txt").read_text().splitlines()]
    assert first[0]["training_seconds"] == pytest.approx(12.0) and first[1]["stretch"] == 1
    assert "checkpoint_validation_loss" in first[-1]
    after_first = textlm.TrainingState.load(tmp_path / "state.pt").step
    assert first[-2]["step"] == after_first >= 1

    with (tmp_path / "log.txt").open("a") as log:  # a killed stretch's row that no saved state backs
        log.write(
            json.dumps(
                {"step": after_first + 1000, "seconds": 1.0, "chars": 0, "train_loss": 1.0, "validation_loss": 1.0}
            )
            + "\n"
        )
    assert script.main(["--minutes", "0.03", "--every", "1", *paths]) == 0
    lines = [json.loads(line) for line in (tmp_path / "log.txt").read_text().splitlines()]
    steps = [r["step"] for r in lines if "step" in r]
    assert steps == sorted(steps) and len(steps) == len(set(steps)) and after_first + 1000 not in steps
    assert [r["stretch"] for r in lines if "stretch" in r] == [1, 2]
    assert sum("checkpoint_validation_loss" in r for r in lines) == 2
    state = textlm.TrainingState.load(tmp_path / "state.pt")
    assert state.step == steps[-1] > after_first
    assert textlm.Checkpoint.load(tmp_path / "lm.txt").config.steps == state.step


def test_train_text_refuses_a_log_it_cannot_continue(tmp_path, capsys):
    """The committed log of a run with no saved state is not overwritten by a plain `make train-text`."""
    log = tmp_path / "log.txt"
    log.write_text('{"config": {}}\n', encoding="utf-8")
    code = train_text().main(["--log", str(log), "--state", str(tmp_path / "none.pt")])
    assert code == 2
    assert "--fresh" in capsys.readouterr().err
    assert log.read_text(encoding="utf-8") == '{"config": {}}\n'
