"""Data-parallel scaling and all-reduce bandwidth (burnpy.distributed).

``python benchmarks/ddp.py`` launches ``mpiexec`` itself:
- digits and GPT steps: 2 ranks x 1 thread against 1 rank x 1 thread, each rank the same
  batch, so the 2-rank run does twice the samples per step: samples/s ratio (ideal 2.0);
- ``all_reduce`` of 64 MB float32 against mpi4py's own ``Allreduce`` on the same buffers
  (a preallocated output), alternated call by call in one run: bandwidth ratio (ideal 1.0).
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
#: The GPT example's default model (2 layers, width 64, context 64), 16 windows per rank.
GPT_BATCH, GPT_BLOCK, GPT_VOCAB = 16, 64, 65


def digits_worker() -> None:
    from burnpy import Tensor
    from burnpy import distributed as dist
    from burnpy.autodiff import Autodiff
    from burnpy.examples.digits import DigitsCNN
    from burnpy.nn.functional import cross_entropy
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


def gpt_worker() -> None:
    from burnpy import Tensor
    from burnpy import distributed as dist
    from burnpy.autodiff import Autodiff
    from burnpy.examples.gpt import batch
    from burnpy.examples.gpt_model import GPT, GPTConfig, decay_groups
    from burnpy.nn.functional import cross_entropy
    from burnpy.optim import AdamW
    from burnpy_cpu import CpuBackend

    dist.init_process_group()
    B = Autodiff(CpuBackend)  # noqa: N806 - a backend type
    model = GPT(GPTConfig(GPT_VOCAB, GPT_BLOCK, 2, 4, 64), backend=B)
    ddp = dist.DistributedDataParallel(model) if dist.get_world_size() > 1 else model
    opt = AdamW(decay_groups(model, 0.1), lr=1e-3)
    rng = np.random.default_rng(dist.get_rank())
    tokens = rng.integers(0, GPT_VOCAB, 200_000)
    times = []
    for _ in range(STEPS // 2):
        x, y = batch(tokens, rng, GPT_BATCH, GPT_BLOCK)
        began = time.perf_counter()
        logits = ddp(Tensor.from_data(x, backend=B))
        loss = cross_entropy(logits.reshape(-1, GPT_VOCAB),
                             Tensor.from_data(y, backend=B).reshape(-1))
        opt.step(model, loss.backward())
        times.append(time.perf_counter() - began)
    if dist.get_rank() == 0:
        step = statistics.median(times[3:])
        print(f"RESULT {dist.get_world_size() * GPT_BATCH / step:.1f}")


def allreduce_worker() -> None:
    from mpi4py import MPI

    from burnpy import Tensor
    from burnpy import distributed as dist

    group = dist.init_process_group()
    data = np.random.default_rng(group.rank).random(16 * 2**20, dtype=np.float32)  # 64 MB
    t = Tensor.from_data(data)
    out = np.empty_like(data)
    ours, theirs = [], []
    for _ in range(31):
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
        pairs = statistics.median(t / o for o, t in zip(ours[1:], theirs[1:], strict=True))
        print(f"RESULT {a * 1e3:.1f} {b * 1e3:.1f} {pairs:.3f}")


def launch(n: int, mode: str) -> list[str]:
    mpiexec = Path(sys.executable).parent / "mpiexec"
    env = {**os.environ, "PYTHONPATH": str(ROOT), "OMP_NUM_THREADS": "1",
           "OPENBLAS_NUM_THREADS": "1", "NUMBA_NUM_THREADS": "1"}
    out = subprocess.run([str(mpiexec), "-n", str(n), sys.executable, __file__, mode], env=env,
                         capture_output=True, text=True, check=True, cwd=ROOT).stdout
    return next(line for line in out.splitlines() if line.startswith("RESULT")).split()[1:]


def main() -> None:
    if len(sys.argv) > 1:
        {"digits": digits_worker, "gpt": gpt_worker,
         "allreduce": allreduce_worker}[sys.argv[1]]()
        return
    for mode, per_rank in (("digits", BATCH), ("gpt", GPT_BATCH)):
        one, two = [], []
        for _ in range(3):  # alternate the two set-ups
            one.append(float(launch(1, mode)[0]))
            two.append(float(launch(2, mode)[0]))
        s1, s2 = statistics.median(one), statistics.median(two)
        print(f"{mode} step, batch {per_rank}/rank: 1 rank {s1:.0f} samples/s, 2 ranks "
              f"{s2:.0f} samples/s: scaling {s2 / s1:.2f}x")
    ours, theirs, pairs = (float(v) for v in launch(2, "allreduce"))
    print(f"all_reduce 64 MB float32, 2 ranks: burnpy {ours:.1f} ms, mpi4py Allreduce "
          f"{theirs:.1f} ms: bandwidth ratio {theirs / ours:.2f}x (median of paired ratios "
          f"{pairs:.2f}x)")


if __name__ == "__main__":
    main()
