"""Fusion(CpuBackend) against CpuBackend and NumPy: a 10-op elementwise chain on 4M float32
values, and an MLP training step under Autodiff; one thread, alternating, medians.

``python -m benchmarks.fusion [--repeats N]``. Prints each median, the ratios, the first
step's compile time and the plan-cache hit rate over 100 steps.
"""

from __future__ import annotations

import argparse
import os
import time
from collections.abc import Callable

for _var in ("OMP_NUM_THREADS", "OPENBLAS_NUM_THREADS", "NUMBA_NUM_THREADS"):
    os.environ.setdefault(_var, "1")

import numpy as np  # noqa: E402

from burnpy import Autodiff, Fusion, Tensor  # noqa: E402
from burnpy_cpu import CpuBackend  # noqa: E402

FUSED = Fusion(CpuBackend)


def chain(x: Tensor) -> Tensor:
    """Ten elementwise ops."""
    y = x * 1.5 + 0.5
    y = y * y - x
    y = y.abs() * 0.25 + x
    y = y.clamp(0.0, 2.0)
    return (y - 0.5) * x


def numpy_chain(x: np.ndarray) -> np.ndarray:
    """The same ten ops on NumPy."""
    y = x * np.float32(1.5) + np.float32(0.5)
    y = y * y - x
    y = np.abs(y) * np.float32(0.25) + x
    y = np.clip(y, np.float32(0.0), np.float32(2.0))
    return (y - np.float32(0.5)) * x


def medians(runs: dict[str, Callable[[], object]], repeats: int) -> dict[str, float]:
    """Median seconds of each run, alternating them."""
    times: dict[str, list[float]] = {k: [] for k in runs}
    for _ in range(repeats):
        for name, run in runs.items():
            start = time.perf_counter()
            run()
            times[name].append(time.perf_counter() - start)
    return {k: float(np.median(v)) for k, v in times.items()}


def mlp_step(backend: type, w1: Tensor, w2: Tensor, x: Tensor, y: Tensor) -> float:
    """One GELU MLP step: forward, backward and both weights' gradients."""
    h = (x @ w1).gelu()
    loss = ((h @ w2 - y) * (h @ w2 - y)).mean()
    grads = loss.backward()
    for w in (w1, w2):
        g = w.grad(grads)
        assert g is not None
        g.to_numpy()
    return float(loss.item())


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--repeats", type=int, default=15)
    args = parser.parse_args()
    data = np.random.default_rng(0).random(1 << 22, dtype=np.float32)
    xs = {b: Tensor.from_data(data, backend=b) for b in (CpuBackend, FUSED)}
    start = time.perf_counter()
    chain(xs[FUSED]).to_numpy()
    print(f"chain: first fused run (compiles) {time.perf_counter() - start:.3f} s")
    m = medians({"fusion": lambda: chain(xs[FUSED]).to_numpy(),
                 "cpu": lambda: chain(xs[CpuBackend]).to_numpy(),
                 "numpy": lambda: numpy_chain(data)}, args.repeats)
    print("chain medians (s):", {k: round(v, 5) for k, v in m.items()})
    print(f"chain: fusion is {m['cpu'] / m['fusion']:.2f}x CpuBackend, "
          f"{m['numpy'] / m['fusion']:.2f}x NumPy")

    rng = np.random.default_rng(1)
    arrays = [rng.normal(size=s).astype(np.float32) * 0.1
              for s in ((256, 512), (512, 64), (128, 256), (128, 64))]
    runs = {}
    for inner in (FUSED, CpuBackend):
        ad = Autodiff(inner)
        w1, w2, x, y = (Tensor.from_data(a, backend=ad) for a in arrays)
        w1, w2 = w1.require_grad(), w2.require_grad()
        runs[inner.name()] = (ad, w1, w2, x, y)
    FUSED.stats.reset()
    start = time.perf_counter()
    mlp_step(*runs["fusion<cpu>"])
    print(f"mlp: first step under fusion (compiles) {time.perf_counter() - start:.3f} s, "
          f"{FUSED.stats.compiles} kernels compiled")
    m = medians({k: (lambda r=r: mlp_step(*r)) for k, r in runs.items()}, args.repeats)
    print("mlp medians (s):", {k: round(v, 5) for k, v in m.items()})
    print(f"mlp: fusion is {m['cpu'] / m['fusion<cpu>']:.2f}x CpuBackend")
    FUSED.stats.reset()
    for _ in range(100):
        mlp_step(*runs["fusion<cpu>"])
    s = FUSED.stats
    looked_up = s.cache_hits + s.compiles
    print(f"plan cache over 100 steps: {s.cache_hits}/{looked_up} hits "
          f"({s.cache_hits / max(looked_up, 1):.1%}), {s.kernels} kernels launched")


if __name__ == "__main__":
    main()
