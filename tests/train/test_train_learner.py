"""Learner: training progress, validation, checkpoints and exact resume, early stopping,
the plot and the summary."""

from __future__ import annotations

import io
import sys
from pathlib import Path
from typing import Any

import numpy as np
import pytest

import burnpy as bp
import burnpy.nn as nn
from burnpy import optim
from burnpy.autodiff import Autodiff
from burnpy.data import ArrayDataset, DataLoader
from burnpy.jit import Compiled
from burnpy.train import Accuracy, CheckpointError, Learner, learner
from burnpy_cpu import CpuBackend

AD = Autodiff(CpuBackend)


def _blobs(n: int, seed: int) -> ArrayDataset:
    rng = np.random.default_rng(seed)
    labels = rng.integers(0, 3, n)
    centers = np.array([[2.0, 0.0], [-2.0, 1.0], [0.0, -2.0]])
    points = centers[labels] + rng.standard_normal((n, 2)) * 0.6
    return ArrayDataset(points.astype(np.float32), labels)


TRAIN = DataLoader(_blobs(96, 0), batch_size=16, shuffle=True, seed=1)
VALID = DataLoader(_blobs(48, 1), batch_size=48)


def _model(seed: int = 0) -> nn.Module:
    CpuBackend.seed(CpuBackend.default_device(), seed)
    return nn.Sequential(nn.Linear(2, 16, backend=AD), nn.BatchNorm1d(16, backend=AD), nn.ReLU(),
                         nn.Dropout(0.2), nn.Linear(16, 3, backend=AD))


def _learner(model: nn.Module, tmp_path: Path, lines: list[str], **kwargs: object) -> Learner:
    return Learner(model, optim.Adam(lr=0.02), scheduler=optim.StepLR(0.02, 5, 0.5),
                   metrics=[Accuracy()], checkpoint_dir=tmp_path / "ckpt", progress=False,
                   seed=3, log=lines.append, **kwargs)  # type: ignore[arg-type]


def test_fit_learns_logs_plots_and_summarizes(tmp_path: Path) -> None:
    lines: list[str] = []
    summary = _learner(_model(), tmp_path, lines, plot_path=tmp_path / "plot.png").fit(
        TRAIN, VALID, epochs=4)
    history = summary.history
    assert [row["epoch"] for row in history] == [1, 2, 3, 4]
    assert history[-1]["train_loss"] < history[0]["train_loss"]
    assert history[-1]["valid_accuracy"] > 0.9
    assert {"train_loss", "train_accuracy", "valid_loss", "valid_accuracy", "lr",
            "seconds"} <= set(history[0])
    if learner.matplotlib_available():
        assert summary.plot is not None and summary.plot.read_bytes()[:4] == b"\x89PNG"
    else:
        assert any("matplotlib is not installed" in line for line in lines)
    assert summary.checkpoint == tmp_path / "ckpt" / "checkpoint-004.safetensors"
    assert sorted(p.name for p in (tmp_path / "ckpt").iterdir()) == [
        f"checkpoint-00{i}.safetensors" for i in range(1, 5)]
    assert lines[0].startswith("epoch 1/4  train loss") and "valid loss" in lines[0]
    assert "training summary" in lines[-1] and "best valid:  epoch" in lines[-1]


def test_resume_replays_the_uninterrupted_run(tmp_path: Path) -> None:
    straight = _model()
    _learner(straight, tmp_path / "a", []).fit(TRAIN, VALID, epochs=4)

    _learner(_model(), tmp_path / "b", []).fit(TRAIN, VALID, epochs=2)
    lines: list[str] = []
    resumed_model = _model(seed=99)
    summary = _learner(resumed_model, tmp_path / "b", lines).fit(TRAIN, VALID, epochs=4,
                                                                  resume=True)
    assert summary.resumed_from == 2 and len(summary.history) == 4
    assert lines[0].startswith("resumed from") and "epoch 2" in lines[0]
    for (name, a), (_, b) in zip(straight.state_dict().items(),
                                 resumed_model.state_dict().items(), strict=True):
        np.testing.assert_array_equal(a.to_numpy(), b.to_numpy(), err_msg=name)


def test_resume_refuses_another_seed_and_needs_a_folder(tmp_path: Path) -> None:
    _learner(_model(), tmp_path, []).fit(TRAIN, epochs=1)
    other = Learner(_model(), optim.Adam(), checkpoint_dir=tmp_path / "ckpt", seed=4,
                    progress=False, log=lambda _: None)
    with pytest.raises(CheckpointError, match="seed 3"):
        other.fit(TRAIN, epochs=2, resume=True)
    no_dir = Learner(_model(), optim.Adam(), progress=False, log=lambda _: None)
    with pytest.raises(bp.InvalidArgumentError, match="checkpoint_dir"):
        no_dir.fit(TRAIN, resume=True)
    fresh = _learner(_model(), tmp_path / "empty", [])
    assert fresh.fit(TRAIN, epochs=1, resume=True).resumed_from is None


def test_early_stopping_on_a_flat_validation_loss(tmp_path: Path) -> None:
    lines: list[str] = []
    run = Learner(_model(), optim.SGD(lr=0.0), patience=2, progress=False, log=lines.append)
    summary = run.fit(TRAIN, VALID, epochs=10)
    assert summary.stopped_early and len(summary.history) == 3 and summary.best_epoch == 1
    assert any(line.startswith("early stopping") for line in lines)


def test_plot_notice_without_matplotlib(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(learner, "matplotlib_available", lambda: False)
    lines: list[str] = []
    summary = Learner(_model(), optim.Adam(), plot_path=tmp_path / "p.png", progress=False,
                      log=lines.append).fit(TRAIN, epochs=1)
    assert summary.plot is None and not (tmp_path / "p.png").exists()
    assert sum("matplotlib is not installed" in line for line in lines) == 1


class _Terminal(io.StringIO):
    """A stream that says it is a terminal, as an interactive stderr does."""

    def isatty(self) -> bool:
        return True


def test_progress_bar_on_a_terminal_and_plain_model_errors(
        monkeypatch: pytest.MonkeyPatch) -> None:
    terminal = _Terminal()
    monkeypatch.setattr(sys, "stderr", terminal)
    Learner(_model(), optim.Adam(), metrics=[Accuracy()], log=lambda _: None).fit(TRAIN)
    assert "epoch 1/1: " in terminal.getvalue()
    with pytest.raises(bp.InvalidArgumentError, match="autodiff backend"):
        Learner(nn.Linear(2, 2), optim.Adam())


def test_logs_to_a_file_get_summaries_but_no_progress_bars(
        capsys: pytest.CaptureFixture[str]) -> None:
    """``make demo > log``: neither output is a terminal, so no bar fragments (``0%|``,
    ``6/6``) are written between the per-epoch summaries."""
    Learner(_model(), optim.Adam(), metrics=[Accuracy()]).fit(TRAIN, epochs=2)
    captured = capsys.readouterr()
    assert "epoch 1/2  train loss" in captured.out and "epoch 2/2  train loss" in captured.out
    assert "training summary" in captured.out
    for fragment in ("%|", "/6 [", "it/s"):
        assert fragment not in captured.out + captured.err


def test_compile_equals_the_eager_loop_bit_for_bit(tmp_path: Path) -> None:
    """``Learner(compile=True)`` on ``Autodiff(Capture(CpuBackend))``: with two parameter
    groups at different rates under a Burn-style scheduler (each step's rate passed through
    the groups, ``scheduled_rates``), dropout and batch norm, the history and the weights equal
    the eager loop's, and the step replays instead of recording per rate."""
    capture = Autodiff(bp.Capture(CpuBackend))
    results = []
    for backend, compile_ in ((AD, False), (capture, True)):
        CpuBackend.seed(CpuBackend.default_device(), 0)
        model = nn.Sequential(nn.Linear(2, 16, backend=backend),
                              nn.BatchNorm1d(16, backend=backend), nn.ReLU(), nn.Dropout(0.2),
                              nn.Linear(16, 3, backend=backend))
        groups: list[dict[str, Any]] = [
            {"params": model[0].parameters(), "lr": 0.04},
            {"params": model[1].parameters() + model[4].parameters()}]
        opt = optim.Adam(groups, lr=0.02)
        fit = Learner(model, opt, scheduler=optim.StepLR(0.02, 2, 0.5), metrics=[Accuracy()],
                      progress=False, seed=3, log=lambda _: None, compile=compile_)
        history = fit.fit(TRAIN, VALID, epochs=3).history
        assert [g["lr"] for g in opt.param_groups] == [0.04, 0.02]  # restored after each step
        results.append((history, model.state_dict(), fit))
    (eager, eager_state, _), (ours, our_state, fit) = results
    for row in (*eager, *ours):
        row.pop("seconds")
    assert ours == eager
    for key, value in eager_state.items():
        assert np.array_equal(our_state[key].to_numpy(), value.to_numpy()), key
    assert isinstance(fit._step, Compiled)
    info = fit._step.cache_info()
    assert info.replays == 3 * 6 - 2 and info.eager_signatures == 0


def test_scheduled_rates_sets_each_groups_share_and_restores() -> None:
    a = bp.Tensor.zeros((2,), backend=AD)
    b = bp.Tensor.zeros((2,), backend=AD)
    groups: list[dict[str, Any]] = [{"params": [a], "lr": 0.3}, {"params": [b]}]
    opt = optim.SGD(groups, lr=0.1)
    with learner.scheduled_rates(opt, 0.05):
        assert [g["lr"] for g in opt.param_groups] == pytest.approx([0.15, 0.05])
    assert [g["lr"] for g in opt.param_groups] == [0.3, 0.1]
    with learner.scheduled_rates(opt, None):
        assert [g["lr"] for g in opt.param_groups] == [0.3, 0.1]
