"""``burnpy.distributed``'s NCCL path on one GPU: a one-rank ``"nccl"`` group (MPI's singleton,
no ``mpiexec``) runs every collective through NCCL on CUDA tensors, with their gradients under
``Autodiff(CudaBackend)``. Run in a subprocess, since MPI is initialized once per process.
Skipped, with the reason, where CuPy sees no GPU or mpi4py finds no MPI library."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

from burnpy.testing.conformance import supported
from burnpy_cuda import CudaBackend, cuda_available, unavailable_reason

ROOT = Path(__file__).resolve().parents[2]

pytestmark = pytest.mark.skipif(not cuda_available(), reason=f"needs CuPy and a CUDA GPU: "
                                f"{unavailable_reason()}")

ONE_RANK = """
import sys

import numpy as np

import burnpy.distributed as dist
from burnpy import Tensor
from burnpy.autodiff import Autodiff
from burnpy_cuda import CudaBackend

group = dist.init_process_group("nccl", timeout=60)
assert group.nccl is not None and dist.get_world_size() == 1
values = np.arange(12, dtype=np.float32).reshape(3, 4) - 5
dtype = sys.argv[1]
x = Tensor.from_data(values, backend=CudaBackend).to(dtype)
assert group.nccl.handles(x), f"NCCL does not carry {dtype}"
for op in ("sum", "mean", "max", "min") if dtype != "int64" else ("sum", "max", "min"):
    got = dist.all_reduce(x, op)
    np.testing.assert_array_equal(got.to_numpy(), x.to_numpy(), err_msg=f"{op} {dtype}")
np.testing.assert_array_equal(dist.broadcast(x, 0).to_numpy(), x.to_numpy())
(only,) = dist.all_gather(x)
np.testing.assert_array_equal(only.to_numpy(), x.to_numpy())
np.testing.assert_array_equal(dist.reduce_scatter(x).to_numpy(), x.to_numpy())
if dtype == "float32":
    ad = Autodiff(CudaBackend)
    w = Tensor.from_data(values, backend=ad).require_grad()
    loss = (dist.all_reduce(w * 2.0, "mean") * w).sum()
    np.testing.assert_allclose(w.grad(loss.backward()).to_numpy(), 4 * values)
dist.destroy_process_group()
print("one-rank nccl: ok")
"""


def _python(code: str, *args: str, timeout: float) -> subprocess.CompletedProcess[str]:
    env = {**os.environ, "PYTHONPATH": os.pathsep.join(
        filter(None, [str(ROOT), os.environ.get("PYTHONPATH")]))}
    return subprocess.run([sys.executable, "-c", code, *args], cwd=ROOT, env=env,
                          capture_output=True, text=True, timeout=timeout, check=False)


@pytest.mark.parametrize("dtype", ["float32", "float16", "bfloat16", "float64", "int64"])
def test_every_collective_runs_through_nccl_on_one_rank(dtype: str) -> None:
    if not supported(CudaBackend, dtype):
        pytest.skip(f"CudaBackend does not store {dtype}")
    probe = _python("from mpi4py import MPI; print(MPI.Get_library_version())", timeout=60)
    if probe.returncode != 0:
        pytest.skip(f"mpi4py finds no MPI library: {probe.stderr.strip().splitlines()[-1:]}")
    run = _python(ONE_RANK, dtype, timeout=180)
    assert run.returncode == 0, run.stdout + run.stderr
    assert "one-rank nccl: ok" in run.stdout
