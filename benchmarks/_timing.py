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

PIN_MALLOC_ENV = "BURNPY_BENCH_PIN_MALLOC"
_pinned = False


def pin_glibc_allocator() -> bool:
    """Keep freed large buffers in the process (glibc's mmap and trim thresholds at 1 GiB);
    returns whether it could. Done at import only when ``BURNPY_BENCH_PIN_MALLOC=1``.

    Off by default, so benchmarks measure what users get: glibc hands a freed multi-megabyte
    array back to the OS and page-faults the next one in, and a framework that pays for that
    should show it. Pinned, large-array timings measure the arithmetic alone (the same NumPy
    add varied 14% with the small allocations around it), for studying a kernel.
    """
    global _pinned
    name = ctypes.util.find_library("c")
    libc = ctypes.CDLL(name) if name else None
    if libc is None or not hasattr(libc, "mallopt"):
        return False
    m_trim_threshold, m_mmap_threshold = -1, -3
    libc.mallopt(m_trim_threshold, 1 << 30)
    libc.mallopt(m_mmap_threshold, 1 << 30)
    _pinned = True
    return True


def allocator_note() -> str:
    """How glibc's allocator runs in this process, for a benchmark's report."""
    if _pinned:
        return f"glibc malloc pinned ({PIN_MALLOC_ENV}=1)"
    return f"glibc malloc as users have it ({PIN_MALLOC_ENV}=1 pins it)"


if os.environ.get(PIN_MALLOC_ENV, "0") == "1":
    pin_glibc_allocator()


def minor_faults() -> int:
    """This process's minor page faults so far (``/proc/self/stat`` field 10; 0 where absent):
    freshly mapped memory costs one per 4 KiB page touched."""
    try:
        with open("/proc/self/stat") as f:
            stat = f.read()
    except OSError:
        return 0
    return int(stat[stat.rindex(")") + 2:].split()[7])


def faults_per_call(fn: Callable[[], object], number: int) -> float:
    """Minor page faults per call of ``fn`` over ``number`` back-to-back calls."""
    start = minor_faults()
    for _ in range(number):
        fn()
    return (minor_faults() - start) / number


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


def alternate_clocks(candidates: dict[str, Callable[[], object]],
                     rounds: int) -> dict[str, tuple[float, float]]:
    """Median (wall, thread CPU) seconds of one call of each candidate over ``rounds``
    alternating rounds (the order rotating, as ``alternate``), after one warm-up call; thread
    CPU time holds steady where other processes load the machine."""
    for fn in candidates.values():
        fn()
    samples: dict[str, list[tuple[float, float]]] = {name: [] for name in candidates}
    names = list(candidates)
    for r in range(rounds):
        for name in names[r % len(names):] + names[:r % len(names)]:
            wall, cpu = time.perf_counter(), time.thread_time()
            candidates[name]()
            samples[name].append((time.perf_counter() - wall, time.thread_time() - cpu))
    return {name: (statistics.median(w for w, _ in s), statistics.median(c for _, c in s))
            for name, s in samples.items()}


def report_steps(title: str, med: dict[str, float], ours: str = "burnpy Autodiff(CpuBackend)",
                 theirs: str = "torch CPU eager") -> float:
    """Print a training-step benchmark's medians (ms and steps/s per candidate) under
    ``title`` and the ``ours`` / ``theirs`` steps/s ratio (target >= 1.0x); returns it."""
    print(title)
    for name, s in med.items():
        print(f"  {name:28s} {s * 1e3:8.2f} ms/step  {1 / s:7.1f} steps/s")
    ratio = med[theirs] / med[ours]
    print(f"  burnpy / torch steps/s: {ratio:.2f}x (target >= 1.0x); {allocator_note()}")
    return ratio


def fmt(seconds: float) -> str:
    if seconds < 1e-3:
        return f"{seconds * 1e6:8.2f} us"
    return f"{seconds * 1e3:8.2f} ms"
