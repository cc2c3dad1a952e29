"""Shared benchmark helpers: single-thread BLAS, alternating A/B rounds, medians."""

from __future__ import annotations

import os

for _var in ("OMP_NUM_THREADS", "OPENBLAS_NUM_THREADS", "MKL_NUM_THREADS"):
    os.environ.setdefault(_var, "1")

import statistics  # noqa: E402
import time  # noqa: E402
from collections.abc import Callable  # noqa: E402


def per_call(fn: Callable[[], object], number: int) -> float:
    """Seconds per call of ``fn`` over ``number`` back-to-back calls."""
    start = time.perf_counter()
    for _ in range(number):
        fn()
    return (time.perf_counter() - start) / number


def alternate(candidates: dict[str, Callable[[], object]], number: int,
              rounds: int) -> dict[str, float]:
    """Median seconds per call for each candidate, measured in alternating rounds so that
    machine noise (a descheduled core) hits every candidate alike."""
    for fn in candidates.values():
        per_call(fn, max(1, number // 10))
    samples: dict[str, list[float]] = {name: [] for name in candidates}
    for _ in range(rounds):
        for name, fn in candidates.items():
            samples[name].append(per_call(fn, number))
    return {name: statistics.median(s) for name, s in samples.items()}


def fmt(seconds: float) -> str:
    if seconds < 1e-3:
        return f"{seconds * 1e6:8.2f} us"
    return f"{seconds * 1e3:8.2f} ms"
