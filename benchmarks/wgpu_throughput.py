"""Throughput of WgpuBackend on this machine's adapter against NumPy on the same CPU (one BLAS
thread): matmul GFLOP/s at 512 and 1024, elementwise add GB/s, sum-reduction GB/s.

Each timing covers a batch of ops and the wait for the device, so it measures the kernels.
On the CPU software adapter (llvmpipe) the ratio compares WGSL compiled by LLVM for the CPU
with NumPy's native loops and BLAS.
Run: ``.venv/bin/python benchmarks/wgpu_throughput.py``
"""

from __future__ import annotations

# isort: off
from _timing import alternate  # first: it pins BLAS to one thread before NumPy loads

# isort: on
import statistics
import time
from collections.abc import Callable

import numpy as np

from burnpy.backend.data import TensorData
from burnpy_wgpu import WgpuBackend, list_adapters

B = WgpuBackend
REPS = 5


def _device_time(op: Callable[[], object]) -> float:
    """Median seconds per op over rounds of ``REPS`` ops, each round ended by a sync."""
    device = B.default_device()
    op()
    B.sync(device)
    samples = []
    for _ in range(5):
        t0 = time.perf_counter()
        for _ in range(REPS):
            op()
        B.sync(device)
        samples.append((time.perf_counter() - t0) / REPS)
    return statistics.median(samples)


def main() -> None:
    device = B.default_device()
    info = list_adapters()[0]
    print(f"adapter: {info.name} ({info.backend_type}, {info.adapter_type}); NumPy on 1 thread")
    rng = np.random.default_rng(0)

    def up(a: np.ndarray) -> object:
        return B.float_from_data(TensorData(a), device)

    print(f"{'op':<24}{'wgpu':>14}{'numpy':>14}{'wgpu/numpy':>12}")
    for n in (512, 1024):
        a = rng.standard_normal((n, n), dtype=np.float32)
        b = rng.standard_normal((n, n), dtype=np.float32)
        pa, pb = up(a), up(b)
        flop = 2.0 * n**3
        ours = flop / _device_time(lambda pa=pa, pb=pb: B.float_matmul(pa, pb)) / 1e9
        ref = flop / alternate({"np": lambda a=a, b=b: a @ b}, 3, 5)["np"] / 1e9
        print(f"{f'matmul {n}':<24}{ours:>9.2f} GF/s{ref:>9.2f} GF/s{ours / ref:>12.2f}")
    n = 1 << 22
    a = rng.standard_normal(n, dtype=np.float32)
    b = rng.standard_normal(n, dtype=np.float32)
    pa, pb = up(a), up(b)
    moved = 3 * a.nbytes
    ours = moved / _device_time(lambda: B.float_add(pa, pb)) / 1e9
    ref = moved / alternate({"np": lambda: a + b}, 5, 5)["np"] / 1e9
    print(f"{'add 4M f32':<24}{ours:>9.2f} GB/s{ref:>9.2f} GB/s{ours / ref:>12.2f}")
    ours = a.nbytes / _device_time(lambda: B.float_sum(pa)) / 1e9
    ref = a.nbytes / alternate({"np": lambda: a.sum()}, 5, 5)["np"] / 1e9
    print(f"{'sum 4M f32':<24}{ours:>9.2f} GB/s{ref:>9.2f} GB/s{ours / ref:>12.2f}")


if __name__ == "__main__":
    main()
