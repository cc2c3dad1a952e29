"""Run a script of ``ranks/`` under ``mpiexec -n N`` and collect what each rank reported."""

from __future__ import annotations

import os
import pickle
import shutil
import subprocess
import sys
import tempfile
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

ROOT = Path(__file__).resolve().parents[2]
RANKS = Path(__file__).resolve().parent / "ranks"


def mpiexec() -> str:
    """The ``mpiexec`` next to this Python (the mpich wheel's), else on PATH; skips when
    mpi4py or an MPI launcher is missing."""
    pytest.importorskip("mpi4py", reason="mpi4py is not installed (pip install "
                        "'burnpy[distributed]')")
    local = Path(sys.executable).parent / "mpiexec"
    found = str(local) if local.exists() else shutil.which("mpiexec")
    if found is None:
        pytest.skip("no mpiexec (install the mpich wheel: pip install 'burnpy[distributed]')")
    return found


@dataclass
class Run:
    """What a run left: the exit code, the output, and each rank's reported object (None for
    a rank that reported nothing)."""

    returncode: int
    stdout: str
    stderr: str
    results: list[Any]
    seconds: float


def run_ranks(script: str, *args: str, n: int = 2, timeout: float = 60.0,
              launcher_args: tuple[str, ...] = (), env: dict[str, str] | None = None,
              prefix: tuple[str, ...] = ()) -> Run:
    """``mpiexec -n n python ranks/<script> <out dir> *args``; ranks call ``report``.
    ``prefix`` runs ``mpiexec`` through a command (``ip netns exec ns``)."""
    import time

    launcher = mpiexec()
    with tempfile.TemporaryDirectory() as out:
        full_env = {**os.environ, "PYTHONPATH": f"{ROOT}{os.pathsep}{RANKS}",
                    "OMP_NUM_THREADS": "1", "OPENBLAS_NUM_THREADS": "1",
                    # OpenMPI refuses root without these (CI runs as root); MPICH ignores them.
                    "OMPI_ALLOW_RUN_AS_ROOT": "1", "OMPI_ALLOW_RUN_AS_ROOT_CONFIRM": "1",
                    **(env or {})}
        began = time.monotonic()
        proc = subprocess.run([*prefix, launcher, *launcher_args, "-n", str(n), sys.executable,
                               str(RANKS / script), out, *args], cwd=ROOT, env=full_env,
                              capture_output=True, text=True, timeout=timeout, check=False)
        seconds = time.monotonic() - began
        results = []
        for rank in range(n):
            path = Path(out) / f"rank{rank}.pkl"
            results.append(pickle.loads(path.read_bytes()) if path.exists() else None)
    return Run(proc.returncode, proc.stdout, proc.stderr, results, seconds)
