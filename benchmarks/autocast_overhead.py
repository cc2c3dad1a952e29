"""What the autocast hook costs an op it marks while no autocast region is open.

The hook alone: a marked no-op against the bare no-op, 1000 calls a sample (the difference
is the forwarder's check and call; ops cost microseconds, so noise hides it in a real op).
Then the marked ``matmul`` and ``F.linear`` against their unmarked functions
(``__wrapped__``), and the same ops inside ``bp.autocast("cpu")`` for scale. Alternating in
one process, one BLAS thread, medians.

Run: ``OMP_NUM_THREADS=1 OPENBLAS_NUM_THREADS=1 .venv/bin/python benchmarks/autocast_overhead.py``
"""

from __future__ import annotations

from collections.abc import Callable
from functools import partial

import numpy as np
from _timing import alternate, fmt

import burnpy as bp
from burnpy import Tensor
from burnpy.nn import functional as F
from burnpy.tensor.arithmetic import ArithmeticOps
from burnpy.tensor.autocast_hook import autocast_op


def _in_region(fn: partial[Tensor]) -> Tensor:
    with bp.autocast("cpu"):
        return fn()


def _noop(x: object, y: object, scale: float = 1.0, *, bias: object = None) -> None:
    """A function as cheap as a call gets, with an op's kinds of parameters."""


def _thousand(fn: Callable[..., object]) -> Callable[[], None]:
    def run() -> None:
        for _ in range(1000):
            fn(1, 2)
    return run


def main() -> None:
    marked_noop = autocast_op("benchmark_noop")(_noop)
    med = alternate({"marked": _thousand(marked_noop), "bare": _thousand(_noop)}, 20, 21)
    print(f"hook alone: marked no-op {med['marked'] * 1e6:.0f} ns, bare {med['bare'] * 1e6:.0f}"
          f" ns: {(med['marked'] - med['bare']) * 1e6:.0f} ns a call")
    rng = np.random.default_rng(0)
    print(f"{'case':<16}{'marked':>12}{'unmarked':>12}{'in region':>12}  marked/unmarked")
    for n in (8, 256):
        a = Tensor.from_data(rng.standard_normal((n, n), dtype=np.float32))
        w = Tensor.from_data(rng.standard_normal((n, n), dtype=np.float32))
        for label, marked in ((f"matmul {n}x{n}", ArithmeticOps.matmul),
                              (f"linear {n}x{n}", F.linear)):
            unmarked = marked.__wrapped__  # type: ignore[union-attr]
            number = 20000 if n == 8 else 200
            med = alternate({"marked": partial(marked, a, w), "unmarked": partial(unmarked, a, w),
                             "region": partial(_in_region, partial(marked, a, w))},
                            number, 15)
            print(f"{label:<16}{fmt(med['marked']):>12}{fmt(med['unmarked']):>12}"
                  f"{fmt(med['region']):>12}  {med['marked'] / med['unmarked']:.3f}")


if __name__ == "__main__":
    main()
