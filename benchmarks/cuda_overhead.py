"""Benchmark: per-op launch overhead on the GPU, a small add (1024 float32) issued back to back.

Four ways, each timed until the device has finished: a burnpy Tensor add on CudaBackend, the
backend op called directly (``CudaBackend.float_add``: the Tensor layer's share is the
difference), raw CuPy, and torch CUDA eager. At this size the GPU work is negligible, so the
figure is what each layer costs the host per op. Alternating rounds, medians.
Run: ``.venv/bin/python benchmarks/cuda_overhead.py``.
"""

from __future__ import annotations

import numpy as np
import torch
from cuda_timing import alternate_synced, fmt, record, require_gpu

from burnpy import Tensor
from burnpy_cuda import CudaBackend

SIZE = 1024
NUMBER = 2000
ROUNDS = 15


def main() -> None:
    require_gpu("cuda_overhead")
    import cupy

    device = CudaBackend.default_device()
    host = np.random.default_rng(0).standard_normal((2, SIZE)).astype(np.float32)
    a, b = (Tensor.from_data(v, backend=CudaBackend) for v in host)
    pa, pb = a.primitive, b.primitive
    ca, cb = cupy.asarray(host[0]), cupy.asarray(host[1])
    ta, tb = (torch.from_numpy(v).cuda() for v in host)

    def burnpy_sync() -> None:
        CudaBackend.sync(device)

    np.testing.assert_array_equal((a + b).to_numpy(), (ta + tb).cpu().numpy())
    med = alternate_synced({
        "burnpy Tensor a + b": (lambda: a + b, burnpy_sync),
        "CudaBackend.float_add": (lambda: CudaBackend.float_add(pa, pb), burnpy_sync),
        "raw CuPy a + b": (lambda: ca + cb, cupy.cuda.Device().synchronize),
        "torch CUDA a + b": (lambda: ta + tb, torch.cuda.synchronize),
    }, NUMBER, ROUNDS)
    print(f"add of {SIZE} float32 on {torch.cuda.get_device_name()}, {NUMBER} ops back to "
          f"back per sample, median of {ROUNDS}")
    for name, seconds in med.items():
        print(f"  {name:24s} {fmt(seconds)}/op")
    theirs = med["torch CUDA a + b"]
    print(f"  burnpy Tensor / torch: {med['burnpy Tensor a + b'] / theirs:.2f}x, "
          f"raw CuPy / torch: {med['raw CuPy a + b'] / theirs:.2f}x")
    record("cuda_overhead", size=SIZE, seconds_per_op=med,
           ratio=med["burnpy Tensor a + b"] / theirs, target="<= 2.0")


if __name__ == "__main__":
    main()
