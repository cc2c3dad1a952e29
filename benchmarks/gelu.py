"""GELU forward and backward and erf on CpuBackend against torch CPU, float32, one thread.

Issue 17: float32 exact (erf) GELU and its backward within 2x of torch's time. Two sizes: the
[256, 512] activation of a small transformer MLP (131,072 elements) and [2048, 2048] (4.2M).
Rows: exact and tanh GELU forward (``CpuBackend.gelu`` against ``torch.nn.functional.gelu``),
their backward (``gelu_backward`` against ``torch.ops.aten.gelu_backward``), and ``float_erf``
against ``torch.erf``; each pair timed in alternating rounds, medians and the ratio of burnpy's
time to torch's (below 1: burnpy faster). Float64 rows (SciPy path) are shown for reference
with ``--float64``. The compiled kernels are serial loops (one thread, as torch here); they are
warmed first, printing how long the first calls took.

Run: ``python benchmarks/gelu.py [--rounds N] [--number N] [--float64]``.
"""

from __future__ import annotations

import argparse
import time
from collections.abc import Callable

import numpy as np
import torch
import torch.nn.functional as TF
from _timing import alternate, fmt

from burnpy_cpu import CpuBackend

torch.set_num_threads(1)

SHAPES = ((256, 512), (2048, 2048))


def cases(x: np.ndarray, g: np.ndarray) -> dict[str, tuple[Callable[[], object],
                                                            Callable[[], object]]]:
    """Each row's (burnpy, torch) callables on the same inputs."""
    tx, tg = torch.from_numpy(x.copy()), torch.from_numpy(g.copy())
    aten_bwd = torch.ops.aten.gelu_backward
    return {
        "exact fwd": (lambda: CpuBackend.gelu(x), lambda: TF.gelu(tx)),
        "exact bwd": (lambda: CpuBackend.gelu_backward(x, g),
                      lambda: aten_bwd(tg, tx, approximate="none")),
        "tanh fwd": (lambda: CpuBackend.gelu(x, "tanh"),
                     lambda: TF.gelu(tx, approximate="tanh")),
        "tanh bwd": (lambda: CpuBackend.gelu_backward(x, g, "tanh"),
                     lambda: aten_bwd(tg, tx, approximate="tanh")),
        "erf": (lambda: CpuBackend.float_erf(x), lambda: torch.erf(tx)),
    }


def run(shape: tuple[int, int], dtype: np.dtype, number: int, rounds: int) -> None:
    """Time every row at one shape and dtype; print medians and ratios."""
    rng = np.random.default_rng(0)
    x = (rng.standard_normal(shape) * 2).astype(dtype)
    g = rng.standard_normal(shape).astype(dtype)
    calls = max(3, number * 131072 // x.size)
    for name, (ours, theirs) in cases(x, g).items():
        med = alternate({"burnpy": ours, "torch": theirs}, calls, rounds)
        print(f"  {shape!s:<12} {dtype.name:<8} {name:<10} burnpy {fmt(med['burnpy'])}  "
              f"torch {fmt(med['torch'])}  ratio {med['burnpy'] / med['torch']:5.2f}")


def warm() -> None:
    """Call each float32 kernel once (compiling it, or loading numba's on-disk cache) and
    print how long that took."""
    x = np.ones(8, np.float32)
    start = time.perf_counter()
    for ours, _ in cases(x, x).values():
        ours()
    print(f"first calls (numba import, compile or cache load): "
          f"{time.perf_counter() - start:.2f} s")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--rounds", type=int, default=15)
    parser.add_argument("--number", type=int, default=20, help="calls per round at 131k")
    parser.add_argument("--float64", action="store_true", help="add float64 rows")
    opts = parser.parse_args()
    print(f"gelu/erf, 1 thread, numpy {np.__version__}, torch {torch.__version__}, "
          f"{opts.rounds} alternating rounds, medians; ratio = burnpy / torch")
    warm()
    dtypes = (np.float32, np.float64) if opts.float64 else (np.float32,)
    for dtype in dtypes:
        for shape in SHAPES:
            run(shape, np.dtype(dtype), opts.number, opts.rounds)


if __name__ == "__main__":
    main()
