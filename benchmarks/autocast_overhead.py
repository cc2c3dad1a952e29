"""What the autocast hook costs an op it marks while no autocast region is open: the marked
``matmul`` and ``F.linear`` against their unmarked functions (``__wrapped__``), alternating in
one process, one BLAS thread; and the same ops inside ``bp.autocast("cpu")`` for scale.

Run: ``OMP_NUM_THREADS=1 OPENBLAS_NUM_THREADS=1 .venv/bin/python benchmarks/autocast_overhead.py``
"""

from __future__ import annotations

from functools import partial

import numpy as np
from _timing import alternate, fmt

import burnpy as bp
from burnpy import Tensor
from burnpy.nn import functional as F
from burnpy.tensor.arithmetic import ArithmeticOps


def _in_region(fn: partial[Tensor]) -> Tensor:
    with bp.autocast("cpu"):
        return fn()


def main() -> None:
    rng = np.random.default_rng(0)
    print(f"{'case':<16}{'marked':>12}{'unmarked':>12}{'in region':>12}  marked/unmarked")
    for n in (8, 256):
        a = Tensor.from_data(rng.standard_normal((n, n), dtype=np.float32))
        w = Tensor.from_data(rng.standard_normal((n, n), dtype=np.float32))
        for label, marked in ((f"matmul {n}x{n}", ArithmeticOps.matmul),
                              (f"linear {n}x{n}", F.linear)):
            unmarked = marked.__wrapped__  # type: ignore[attr-defined]
            number = 20000 if n == 8 else 200
            med = alternate({"marked": partial(marked, a, w), "unmarked": partial(unmarked, a, w),
                             "region": partial(_in_region, partial(marked, a, w))},
                            number, 15)
            print(f"{label:<16}{fmt(med['marked']):>12}{fmt(med['unmarked']):>12}"
                  f"{fmt(med['region']):>12}  {med['marked'] / med['unmarked']:.3f}")


if __name__ == "__main__":
    main()
