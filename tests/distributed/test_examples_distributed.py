"""The data-parallel digits and GPT demos run under mpiexec (short mode)."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import numpy as np
from mpi_ranks import ROOT, mpiexec

from burnpy.record import read_record

ENV = {**os.environ, "PYTHONPATH": str(ROOT), "OMP_NUM_THREADS": "1",
       "OMPI_ALLOW_RUN_AS_ROOT": "1", "OMPI_ALLOW_RUN_AS_ROOT_CONFIRM": "1"}


def run_example(module: str, *args: str) -> subprocess.CompletedProcess[str]:
    result = subprocess.run(
        [mpiexec(), "-n", "2", sys.executable, "-m", f"burnpy.examples.{module}",
         "--distributed", "--no-progress", *args],
        cwd=ROOT, env=ENV, capture_output=True, text=True, timeout=120, check=False)
    assert result.returncode == 0, result.stderr
    return result


def test_digits_demo_distributed(tmp_path: Path) -> None:
    result = run_example("digits", "--epochs", "2", "--limit", "200", "--out", str(tmp_path))
    assert "2 ranks" in result.stdout
    assert result.stdout.count("epoch 2/2") == 1  # one rank logs
    assert "test accuracy" in result.stdout
    assert sorted(p.name for p in (tmp_path / "checkpoints").iterdir()) == [
        "checkpoint-001.safetensors", "checkpoint-002.safetensors"]


def test_gpt_demo_distributed_resumes_on_every_rank(tmp_path: Path) -> None:
    short = ["--short", "--steps", "4", "--eval-every", "2"]
    full = run_example("gpt", *short, "--out", str(tmp_path / "full"))
    assert "; 2 ranks" in full.stdout
    assert full.stdout.count("step     4") == 1 and full.stdout.count("done in") == 1
    assert (tmp_path / "full" / "sample.txt").read_text(encoding="utf-8").startswith("The ")
    part = ["--out", str(tmp_path / "part")]
    run_example("gpt", *short, *part, "--stop-at", "2")
    resumed = run_example("gpt", *short, *part, "--resume")
    assert resumed.stdout.count("resumed from") == 1
    # Both ranks restored the model and the optimizer: steps 3-4 replay the full run's.
    histories = [read_record(tmp_path / run / "checkpoints" / "checkpoint.safetensors")
                 .extra["history"] for run in ("full", "part")]
    assert [r["step"] for r in histories[1]] == [0, 2, 4]
    for key in ("train_loss", "valid_loss"):
        np.testing.assert_allclose([r[key] for r in histories[1]],
                                   [r[key] for r in histories[0]], rtol=1e-6)
