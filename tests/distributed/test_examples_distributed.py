"""The data-parallel digits demo runs under mpiexec (short mode)."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

from mpi_ranks import ROOT, mpiexec


def test_digits_demo_distributed(tmp_path: Path) -> None:
    env = {**os.environ, "PYTHONPATH": str(ROOT), "OMP_NUM_THREADS": "1",
           "OMPI_ALLOW_RUN_AS_ROOT": "1", "OMPI_ALLOW_RUN_AS_ROOT_CONFIRM": "1"}
    result = subprocess.run(
        [mpiexec(), "-n", "2", sys.executable, "-m", "burnpy.examples.digits", "--distributed",
         "--epochs", "2", "--limit", "200", "--out", str(tmp_path), "--no-progress"],
        cwd=ROOT, env=env, capture_output=True, text=True, timeout=120, check=False)
    assert result.returncode == 0, result.stderr
    assert "2 ranks" in result.stdout
    assert result.stdout.count("epoch 2/2") == 1  # one rank logs
    assert "test accuracy" in result.stdout
    assert sorted(p.name for p in (tmp_path / "checkpoints").iterdir()) == [
        "checkpoint-001.safetensors", "checkpoint-002.safetensors"]
