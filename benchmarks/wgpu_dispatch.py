"""Per-op dispatch overhead on WgpuBackend: batched recording versus one submit per op.

A chain of small elementwise ops (``x + 1`` on 1024 floats) is timed three ways, each until
the device has finished: batched (every dispatch recorded into one command buffer, submitted
once at the sync), one submit per op (the batch flushed after every op), and one blocking
readback per op. Also shows the Tensor layer's share (burnpy Tensor versus backend calls).
Run: ``.venv/bin/python benchmarks/wgpu_dispatch.py``
"""

from __future__ import annotations

# isort: off
from _timing import fmt  # first: it pins BLAS to one thread before NumPy loads

# isort: on
import statistics
import time
from collections.abc import Callable

import numpy as np

from burnpy import Tensor
from burnpy.backend.data import TensorData
from burnpy_wgpu import WgpuBackend, list_adapters
from burnpy_wgpu.runtime import runtime_for

B = WgpuBackend
CHAIN = 200
ROUNDS = 7


def _timed(step: Callable[[object], object], start: object, after_each: Callable[[], None],
           finish: Callable[[], None]) -> float:
    """Median seconds per op of ``CHAIN`` chained steps, including the device's work."""
    samples = []
    for _ in range(ROUNDS):
        x = start
        t0 = time.perf_counter()
        for _ in range(CHAIN):
            x = step(x)
            after_each()
        finish()
        samples.append((time.perf_counter() - t0) / CHAIN)
    return statistics.median(samples)


def measure() -> dict[str, float]:
    """Median seconds per op of each way of issuing the chain, on the default adapter."""
    device = B.default_device()
    rt = runtime_for(device)
    prim = B.float_from_data(TensorData(np.ones(1024, np.float32)), device)
    tensor = Tensor.from_data(np.ones(1024, np.float32), backend=B)

    def step(p: object) -> object:
        return B.float_add_scalar(p, 1.0)

    def read_one() -> None:
        B.float_into_data(B.float_slice(prim, (slice(0, 1),)))

    def sync() -> None:
        B.sync(device)

    step(prim)
    sync()
    return {
        "batched (1 submit / chain)": _timed(step, prim, lambda: None, sync),
        "1 submit per op": _timed(step, prim, rt.flush, sync),
        "1 blocking readback per op": _timed(step, prim, read_one, sync),
        "Tensor API, batched": _timed(lambda t: t + 1.0, tensor, lambda: None, sync),
    }


def main() -> None:
    info = list_adapters()[0]
    print(f"adapter: {info.name} ({info.backend_type}, {info.adapter_type})")
    rows = measure()
    submits = runtime_for(B.default_device()).stats["submits"]
    for name, seconds in rows.items():
        print(f"{name:<30}{fmt(seconds):>12} per op")
    batched, per_submit = rows["batched (1 submit / chain)"], rows["1 submit per op"]
    print(f"batching saves {fmt(per_submit - batched).strip()} per op "
          f"({per_submit / batched:.1f}x); {submits} submits in total")


if __name__ == "__main__":
    main()
