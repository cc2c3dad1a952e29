"""Data-parallel scaling and all-reduce bandwidth (burnpy.distributed).

``python benchmarks/ddp.py`` launches ``mpiexec`` itself:
- digits step: 2 ranks x 1 thread against 1 rank x 1 thread, each rank a batch of 32, so the
  2-rank run does twice the samples per step: samples/s ratio (ideal 2.0);
- ``all_reduce`` of 64 MB float32 against mpi4py's own ``Allreduce`` on the same buffers,
  alternated in one run: bandwidth ratio (ideal 1.0).
Medians. The machine is shared, so quote the ratios, not the times.
"""

from __future__ import annotations

import os
import statistics
import subprocess
import sys
import time
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parents[1]
STEPS, BATCH = 40, 32


def digits_worker() -> None:
    from burnpy import Tensor
    from burnpy import distributed as dist
    from burnpy.autodiff import Autodiff
    from burnpy.examples.digits import DigitsCNN
    from burnpy.nn.losses import cross_entropy
    from burnpy.optim import Adam
    from burnpy_cpu import CpuBackend

    dist.init_process_group()
    B = Autodiff(CpuBackend)  # noqa: N806 - a backend type
    model = DigitsCNN(backend=B)
    ddp = dist.DistributedDataParallel(model) if dist.get_world_size() > 1 else model
    opt = Adam(lr=1e-3)
    rng = np.random.default_rng(dist.get_rank())
    x = Tensor.from_data(rng.random((BATCH, 1, 8, 8), dtype=np.float32), backend=B)
    y = Tensor.from_data(rng.integers(0, 10, BATCH), backend=B)
    times = []
    for _ in range(STEPS):
        began = time.perf_counter()
        opt.step(ddp, cross_entropy(ddp(x), y).backward())
        times.append(time.perf_counter() - began)
    if dist.get_rank() == 0:
        step = statistics.median(times[5:])
        print(f"RESULT {dist.get_world_size() * BATCH / step:.1f}")


def allreduce_worker() -> None:
    from mpi4py import MPI

    from burnpy import Tensor
    from burnpy import distributed as dist

    group = dist.init_process_group()
    data = np.random.default_rng(group.rank).random(16 * 2**20, dtype=np.float32)  # 64 MB
    t = Tensor.from_data(data)
    out = np.empty_like(data)
    ours, theirs = [], []
    for _ in range(7):
        dist.barrier()
        began = time.perf_counter()
        dist.all_reduce(t)
        ours.append(time.perf_counter() - began)
        dist.barrier()
        began = time.perf_counter()
        group.comm.Allreduce(data, out, MPI.SUM)
        theirs.append(time.perf_counter() - began)
    if group.rank == 0:
        a, b = statistics.median(ours[1:]), statistics.median(theirs[1:])
        print(f"RESULT {a * 1e3:.1f} {b * 1e3:.1f}")


def launch(n: int, mode: str) -> list[str]:
    mpiexec = Path(sys.executable).parent / "mpiexec"
    env = {**os.environ, "PYTHONPATH": str(ROOT), "OMP_NUM_THREADS": "1",
           "OPENBLAS_NUM_THREADS": "1", "NUMBA_NUM_THREADS": "1"}
    out = subprocess.run([str(mpiexec), "-n", str(n), sys.executable, __file__, mode], env=env,
                         capture_output=True, text=True, check=True, cwd=ROOT).stdout
    return next(line for line in out.splitlines() if line.startswith("RESULT")).split()[1:]


def main() -> None:
    if len(sys.argv) > 1:
        {"digits": digits_worker, "allreduce": allreduce_worker}[sys.argv[1]]()
        return
    one, two = [], []
    for _ in range(3):  # alternate the two set-ups
        one.append(float(launch(1, "digits")[0]))
        two.append(float(launch(2, "digits")[0]))
    s1, s2 = statistics.median(one), statistics.median(two)
    print(f"digits step, batch {BATCH}/rank: 1 rank {s1:.0f} samples/s, 2 ranks {s2:.0f} "
          f"samples/s: scaling {s2 / s1:.2f}x")
    ours, theirs = (float(v) for v in launch(2, "allreduce"))
    print(f"all_reduce 64 MB float32, 2 ranks: burnpy {ours:.1f} ms, mpi4py Allreduce "
          f"{theirs:.1f} ms: bandwidth ratio {theirs / ours:.2f}x")


if __name__ == "__main__":
    main()
