"""The examples with ``--fusion``: each trains on ``Fusion(CpuBackend)`` in its short mode."""

from __future__ import annotations

import math
from pathlib import Path

import pytest

from burnpy.examples import digits, gpt, pinn


def test_digits_trains_with_fusion(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    code = digits.main(["--epochs", "1", "--limit", "160", "--out", str(tmp_path),
                        "--no-progress", "--fusion"])
    out = capsys.readouterr().out
    assert code == 0
    assert "backend autodiff<fusion<cpu>>" in out and "test accuracy: " in out


def test_gpt_trains_with_fusion(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    args = gpt.parse_args(["--short", "--no-progress", "--steps", "6", "--eval-every", "3",
                           "--sample-tokens", "8", "--fusion", "--out", str(tmp_path)])
    result = gpt.run(args)
    assert "backend autodiff<fusion<cpu>>" in capsys.readouterr().out
    assert [r["step"] for r in result.history] == [0, 3, 6]
    assert all(math.isfinite(r["valid_loss"]) for r in result.history)
    assert result.history[-1]["train_loss"] < result.history[0]["train_loss"]


def test_pinn_trains_with_fusion(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """The residual's nested jvp runs on ForwardAD(ForwardAD(Autodiff(Fusion(CpuBackend))))."""
    assert pinn.main(["--short", "--fusion", "--out", str(tmp_path)]) == 0
    out = capsys.readouterr().out
    assert "backend autodiff<fusion<cpu>>" in out
    line = next(x for x in out.splitlines() if x.startswith("relative L2 error"))
    assert math.isfinite(float(line.split(": ")[1].split()[0]))
