"""Per-op cost of Tensor on CpuBackend versus raw NumPy and torch CPU, one BLAS thread.

Targets (issue 2): Tensor overhead over NumPy <= 1.5 us per small op; within 5% on large ops.
Run: ``.venv/bin/python benchmarks/overhead.py``
"""

from __future__ import annotations

import operator
from functools import partial

import numpy as np
import torch
from _timing import alternate, fmt

from burnpy import Tensor

torch.set_num_threads(1)


def main() -> None:
    rng = np.random.default_rng(0)
    print(f"{'case':<22}{'burnpy':>12}{'numpy':>12}{'torch':>12}  burnpy-numpy  bp/np  bp/torch")
    for label, shape, op, number, rounds in [
        ("add 8x8", (8, 8), "add", 20000, 15),
        ("add 2048x2048", (2048, 2048), "add", 10, 9),
        ("matmul 8x8", (8, 8), "matmul", 20000, 15),
        ("matmul 2048x2048", (2048, 2048), "matmul", 2, 5),
    ]:
        a = rng.standard_normal(shape, dtype=np.float32)
        b = rng.standard_normal(shape, dtype=np.float32)
        ta, tb = Tensor.from_data(a), Tensor.from_data(b)
        xa, xb = torch.from_numpy(a.copy()), torch.from_numpy(b.copy())
        fn = operator.add if op == "add" else operator.matmul
        cands = {"burnpy": partial(fn, ta, tb), "numpy": partial(fn, a, b),
                 "torch": partial(fn, xa, xb)}
        med = alternate(cands, number, rounds)
        bp_t, np_t, th_t = med["burnpy"], med["numpy"], med["torch"]
        print(f"{label:<22}{fmt(bp_t):>12}{fmt(np_t):>12}{fmt(th_t):>12}  "
              f"{(bp_t - np_t) * 1e6:9.2f} us  {bp_t / np_t:5.2f}  {bp_t / th_t:6.2f}")


if __name__ == "__main__":
    main()
