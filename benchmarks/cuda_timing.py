"""Shared helpers of the GPU benchmarks: a clear exit where no GPU can run them, timings that
wait for the device (a CUDA call returns once the kernel is queued, not done), and the figures
as JSON for the prepared GPU check (``scripts/gpu_check.py``)."""

from __future__ import annotations

import json
import os
import statistics
import sys
import time
from collections.abc import Callable

from burnpy_cuda import cuda_available, unavailable_reason

Sync = Callable[[], None]

#: Where ``record`` appends its JSON lines (set by the GPU check; unset, nothing is written).
FIGURES_ENV = "BURNPY_BENCH_JSON"


def record(benchmark: str, **figures: object) -> None:
    """Append ``{"benchmark": ..., **figures}`` as one JSON line to the file named by
    ``$BURNPY_BENCH_JSON``, so that a run's printed figures also reach a machine reader."""
    path = os.environ.get(FIGURES_ENV)
    if path:
        with open(path, "a", encoding="utf-8") as out:
            out.write(json.dumps({"benchmark": benchmark, **figures}) + "\n")


def require_gpu(name: str) -> None:
    """Exit with a message saying why (no traceback) unless burnpy's CUDA backend and torch
    can both use a GPU here."""
    if not cuda_available():
        sys.exit(f"{name}: not run, burnpy's CUDA backend cannot run here: "
                 f"{unavailable_reason()}")
    import torch

    if not torch.cuda.is_available():
        sys.exit(f"{name}: not run, torch {torch.__version__} sees no CUDA GPU")


def synced_per_call(fn: Callable[[], object], sync: Sync, number: int) -> float:
    """Seconds per call of ``fn`` over ``number`` back-to-back calls, the device drained
    before the timer starts and before it is read."""
    sync()
    start = time.perf_counter()
    for _ in range(number):
        fn()
    sync()
    return (time.perf_counter() - start) / number


def alternate_synced(candidates: dict[str, tuple[Callable[[], object], Sync]], number: int,
                     rounds: int) -> dict[str, float]:
    """Median seconds per call of each ``(fn, sync)`` candidate, in alternating rounds whose
    order rotates, so that clock and thermal drift hit every candidate alike; one untimed
    round first (compilation, allocator and cuBLAS warm-up)."""
    for fn, sync in candidates.values():
        synced_per_call(fn, sync, max(1, number // 4))
    samples: dict[str, list[float]] = {name: [] for name in candidates}
    names = list(candidates)
    for r in range(rounds):
        for name in names[r % len(names):] + names[:r % len(names)]:
            fn, sync = candidates[name]
            samples[name].append(synced_per_call(fn, sync, number))
    return {name: statistics.median(s) for name, s in samples.items()}


def fmt(seconds: float) -> str:
    if seconds < 1e-3:
        return f"{seconds * 1e6:8.2f} us"
    return f"{seconds * 1e3:8.2f} ms"
