"""Shared benchmark helpers: single-thread BLAS, alternating A/B rounds, medians."""

from __future__ import annotations

import os

for _var in ("OMP_NUM_THREADS", "OPENBLAS_NUM_THREADS", "MKL_NUM_THREADS"):
    os.environ.setdefault(_var, "1")

import ctypes  # noqa: E402
import ctypes.util  # noqa: E402
import statistics  # noqa: E402
import time  # noqa: E402
from collections.abc import Callable  # noqa: E402


def _pin_glibc_allocator() -> None:
    """Keep freed large buffers in the process (glibc's mmap and trim thresholds at 1 GiB).

    By default glibc hands a freed 16 MB array back to the OS and page-faults the next one
    in, and whether it does depends on the small allocations in between: that made the same
    NumPy add time 14% apart depending only on what ran around it. Pinned, large-array
    timings measure the arithmetic; every candidate runs under the same allocator.
    """
    name = ctypes.util.find_library("c")
    if not name:
        return
    libc = ctypes.CDLL(name)
    if hasattr(libc, "mallopt"):
        m_trim_threshold, m_mmap_threshold = -1, -3
        libc.mallopt(m_trim_threshold, 1 << 30)
        libc.mallopt(m_mmap_threshold, 1 << 30)


_pin_glibc_allocator()


def per_call(fn: Callable[[], object], number: int) -> float:
    """Seconds per call of ``fn`` over ``number`` back-to-back calls."""
    start = time.perf_counter()
    for _ in range(number):
        fn()
    return (time.perf_counter() - start) / number


def alternate(candidates: dict[str, Callable[[], object]], number: int,
              rounds: int) -> dict[str, float]:
    """Median seconds per call for each candidate, measured in alternating rounds so that
    machine noise (a descheduled core) hits every candidate alike; the order rotates each
    round, since whichever runs right after another finds the allocator and caches warmed
    (worth 15% on a 16 MB add)."""
    for fn in candidates.values():
        per_call(fn, max(1, number // 10))
    samples: dict[str, list[float]] = {name: [] for name in candidates}
    names = list(candidates)
    for r in range(rounds):
        for name in names[r % len(names):] + names[:r % len(names)]:
            samples[name].append(per_call(candidates[name], number))
    return {name: statistics.median(s) for name, s in samples.items()}


def report_steps(title: str, med: dict[str, float], ours: str = "burnpy Autodiff(CpuBackend)",
                 theirs: str = "torch CPU eager") -> float:
    """Print a training-step benchmark's medians (ms and steps/s per candidate) under
    ``title`` and the ``ours`` / ``theirs`` steps/s ratio (target >= 1.0x); returns it."""
    print(title)
    for name, s in med.items():
        print(f"  {name:28s} {s * 1e3:8.2f} ms/step  {1 / s:7.1f} steps/s")
    ratio = med[theirs] / med[ours]
    print(f"  burnpy / torch steps/s: {ratio:.2f}x (target >= 1.0x)")
    return ratio


def fmt(seconds: float) -> str:
    if seconds < 1e-3:
        return f"{seconds * 1e6:8.2f} us"
    return f"{seconds * 1e3:8.2f} ms"
