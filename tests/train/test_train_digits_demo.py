"""The main job, ``python -m burnpy.examples.digits``, end to end on a tiny budget."""

from __future__ import annotations

import re
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

import burnpy.train.learner
from burnpy import jit
from burnpy.examples import digits
from burnpy.jit import Compiled
from burnpy.train.plot import matplotlib_available

ROOT = Path(__file__).resolve().parents[2]


def test_demo_trains_saves_reloads_and_plots(tmp_path: Path,
                                             capsys: pytest.CaptureFixture[str]) -> None:
    code = digits.main(["--epochs", "1", "--limit", "240", "--out", str(tmp_path),
                        "--no-progress", "--checkpointing", "balanced"])
    out = capsys.readouterr().out
    assert code == 0
    assert "test accuracy: " in out and "reloaded " in out
    int8_line = next(x for x in out.splitlines() if x.startswith("int8 test accuracy: "))
    assert 0.0 <= float(int8_line.split()[3][:-1]) <= 100.0
    assert (tmp_path / "digits-cnn.safetensors").is_file()
    assert (tmp_path / "digits-cnn-int8.safetensors").is_file()
    assert (tmp_path / "training.png").is_file() == matplotlib_available()
    assert (tmp_path / "checkpoints" / "checkpoint-001.safetensors").is_file()


def test_demo_runs_as_a_module(tmp_path: Path) -> None:
    result = subprocess.run(
        [sys.executable, "-m", "burnpy.examples.digits", "--epochs", "1", "--limit", "200",
         "--batch-size", "64", "--out", str(tmp_path), "--no-progress"],
        cwd=ROOT, capture_output=True, text=True, timeout=120, check=False)
    assert result.returncode == 0, result.stderr
    line = next(x for x in result.stdout.splitlines() if x.startswith("test accuracy: "))
    assert line.endswith("%") and 0.0 <= float(line.split()[-1][:-1]) <= 100.0


def test_compile_trains_the_same_weights_as_eager(tmp_path: Path,
                                                 capsys: pytest.CaptureFixture[str],
                                                 monkeypatch: pytest.MonkeyPatch) -> None:
    """``--compile`` (the step recorded once per batch shape and replayed): the same losses,
    accuracies and trained weights, bit for bit, as the eager run, dropout and batch norm
    included."""
    compiled: list[Compiled] = []

    def keep(fn: object) -> Compiled:
        compiled.append(jit.compile(fn))  # type: ignore[arg-type]
        return compiled[-1]

    monkeypatch.setattr(burnpy.train.learner, "jit_compile", keep)
    common = ["--epochs", "2", "--limit", "240", "--no-progress"]
    outs = {}
    for name, extra in (("eager", []), ("compiled", ["--compile"])):
        assert digits.main([*common, "--out", str(tmp_path / name), *extra]) == 0
        # The epochs' losses, accuracies and rates and the test accuracies (not the seconds).
        outs[name] = [re.sub(r"\| [\d.]+s$", "", line).replace(str(tmp_path / name), "OUT")
                      for line in capsys.readouterr().out.splitlines()
                      if line.startswith(("epoch ", "test accuracy", "int8"))]
    assert len(outs["eager"]) == 4 and outs["compiled"] == outs["eager"]
    cpu = digits.load_backend("cpu")
    eager, ours = (digits.DigitsCNN(backend=cpu).load(tmp_path / name / "digits-cnn.safetensors")
                   .state_dict() for name in ("eager", "compiled"))
    assert eager.keys() == ours.keys()
    for key in eager:
        assert np.array_equal(eager[key].to_numpy(), ours[key].to_numpy()), key
    info = compiled[0].cache_info()
    assert info.replays > 0 and info.eager_signatures == 0


@pytest.mark.parametrize("name", ["wgpu", "cuda"])
def test_unavailable_backend_fails_clearly(name: str, monkeypatch: pytest.MonkeyPatch) -> None:
    """A backend whose package cannot be imported: the message names it and what to do."""
    from importlib.metadata import EntryPoint

    from burnpy.backend import registry

    monkeypatch.delitem(registry._REGISTERED, name, raising=False)
    monkeypatch.setattr(registry, "_entry_points", lambda: [
        EntryPoint(name, "burnpy_not_installed:Backend", registry.ENTRY_POINT_GROUP)])
    with pytest.raises(SystemExit, match=f"--backend {name}: backend '{name}' "
                                         r"\(burnpy_not_installed:Backend\) failed to import "
                                         rf".*install burnpy\[{name}\]; or use --backend cpu"):
        digits.load_backend(name)
