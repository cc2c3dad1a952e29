"""Benchmark: NoCheckpointing against BalancedCheckpointing on a deep residual stack.

32 blocks of ``tanh(gelu(Linear 1024->1024) * 0.5 + x)``, batch 512, float32, on
``Autodiff(CpuBackend, C)``. Per strategy: the memory the graph holds once the forward pass
is done (tracemalloc, before backward), the tracemalloc peak of a whole step (forward and
backward, the Gradients included; it counts the 32 weight gradients, 128 MiB, which no
strategy can avoid), and the step time (measured without tracemalloc). One BLAS/OpenMP
thread, strategies alternating each round; prints medians and ratios (target: balanced
memory <= 50% with <= 25% more time).
Run: ``.venv/bin/python benchmarks/checkpointing.py``.
"""

from __future__ import annotations

import os

for _var in ("OMP_NUM_THREADS", "OPENBLAS_NUM_THREADS", "MKL_NUM_THREADS"):
    os.environ[_var] = "1"

import gc  # noqa: E402
import statistics  # noqa: E402
import time  # noqa: E402
import tracemalloc  # noqa: E402

import numpy as np  # noqa: E402
import torch  # noqa: E402

import burnpy.nn.functional as F  # noqa: E402
from burnpy import Tensor  # noqa: E402
from burnpy.autodiff import Autodiff, BalancedCheckpointing, NoCheckpointing  # noqa: E402
from burnpy_cpu import CpuBackend  # noqa: E402

BLOCKS, WIDTH, BATCH = 32, 1024, 512
ROUNDS = 5
MIB = 2.0**20


class Stack:
    """The residual stack's inputs and parameters on ``Autodiff(CpuBackend, strategy)``."""

    def __init__(self, strategy: type, arrays: list[np.ndarray]) -> None:
        self.ad = Autodiff(CpuBackend, strategy)
        self.x = Tensor.from_data(arrays[0], backend=self.ad)
        self.params = [Tensor.from_data(a, backend=self.ad).require_grad() for a in arrays[1:]]

    def forward(self) -> Tensor:
        h = self.x
        for w, b in zip(self.params[::2], self.params[1::2], strict=True):
            h = (F.linear(h, w, b).gelu() * 0.5 + h).tanh()
        return h.mean()

    def step(self) -> float:
        grads = self.forward().backward()
        return float(sum(p.grad(grads).to_numpy()[0, 0] for p in self.params[::2]))

    def memory(self) -> tuple[float, float]:
        """(MiB held by the graph after forward, MiB peak of a whole step)."""
        gc.collect()
        tracemalloc.start()
        try:
            base = tracemalloc.get_traced_memory()[0]
            loss = self.forward()
            held = tracemalloc.get_traced_memory()[0] - base
            loss.backward()
            peak = tracemalloc.get_traced_memory()[1] - base
        finally:
            tracemalloc.stop()
        return held / MIB, peak / MIB


def main() -> None:
    torch.set_num_threads(1)
    rng = np.random.default_rng(0)
    arrays = [rng.standard_normal((BATCH, WIDTH)).astype(np.float32)]
    for _ in range(BLOCKS):
        arrays.append((rng.standard_normal((WIDTH, WIDTH)) / np.sqrt(WIDTH)).astype(np.float32))
        arrays.append(np.zeros(WIDTH, dtype=np.float32))
    stacks = {"NoCheckpointing": Stack(NoCheckpointing, arrays),
              "BalancedCheckpointing": Stack(BalancedCheckpointing, arrays)}
    checks = {name: s.step() for name, s in stacks.items()}
    assert checks["NoCheckpointing"] == checks["BalancedCheckpointing"], checks
    memory = {name: s.memory() for name, s in stacks.items()}
    times: dict[str, list[float]] = {name: [] for name in stacks}
    for _ in range(ROUNDS):
        for name, s in stacks.items():
            start = time.perf_counter()
            s.step()
            times[name].append(time.perf_counter() - start)
    med = {name: statistics.median(t) for name, t in times.items()}
    print(f"{BLOCKS} blocks of Linear {WIDTH}->{WIDTH}, gelu, *0.5, residual add, tanh; "
          f"batch {BATCH}, float32, one thread; median of {ROUNDS} steps")
    for name in stacks:
        held, peak = memory[name]
        print(f"  {name:22s} graph after forward {held:7.1f} MiB   step peak {peak:7.1f} MiB   "
              f"step {med[name] * 1e3:8.1f} ms")
    (held_n, peak_n), (held_b, peak_b) = memory["NoCheckpointing"], memory[
        "BalancedCheckpointing"]
    slower = med["BalancedCheckpointing"] / med["NoCheckpointing"]
    print(f"  balanced / none: graph {held_b / held_n:.0%}, step peak {peak_b / peak_n:.0%}, "
          f"time {slower:.2f}x (target: memory <= 50%, time <= 1.25x)")


if __name__ == "__main__":
    main()
