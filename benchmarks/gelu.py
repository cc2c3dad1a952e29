"""GELU forward and backward on CpuBackend against torch CPU, float32, one thread (issue 17).

The [256, 512] float32 activation of a small transformer MLP (131,072 elements), both forms
(exact erf and tanh). burnpy's ``CpuBackend.gelu`` / ``gelu_backward`` against
``torch.nn.functional.gelu`` and ``torch.ops.aten.gelu_backward``, timed in alternating rounds
and reported as medians with the ratio to torch (target: within 2x). Float64 is shown for
reference (it keeps the exact, scipy-based path).

Run: ``python benchmarks/gelu.py [--rounds N] [--number N]``.
"""

from __future__ import annotations

import argparse
from collections.abc import Callable

import numpy as np
import torch
import torch.nn.functional as TF
from _timing import alternate, fmt

from burnpy_cpu import CpuBackend

torch.set_num_threads(1)

SHAPE = (256, 512)


def run(dtype: np.dtype, approximate: str, number: int, rounds: int) -> None:
    """Time forward and backward of one form in one dtype and print medians and ratios."""
    rng = np.random.default_rng(0)
    x = (rng.standard_normal(SHAPE) * 2).astype(dtype)
    g = rng.standard_normal(SHAPE).astype(dtype)
    tx, tg = torch.from_numpy(x.copy()), torch.from_numpy(g.copy())
    cands: dict[str, Callable[[], object]] = {
        "burnpy fwd": lambda: CpuBackend.gelu(x, approximate),  # type: ignore[arg-type]
        "torch fwd": lambda: TF.gelu(tx, approximate=approximate),
        "burnpy bwd": lambda: CpuBackend.gelu_backward(x, g, approximate),  # type: ignore[arg-type]
        "torch bwd": lambda: torch.ops.aten.gelu_backward(tg, tx, approximate=approximate),
    }
    med = alternate(cands, number, rounds)
    label = f"{np.dtype(dtype).name} {approximate}"
    for part in ("fwd", "bwd"):
        ours, theirs = med[f"burnpy {part}"], med[f"torch {part}"]
        print(f"  {label:<14} {part}  burnpy {fmt(ours)}  torch {fmt(theirs)}  "
              f"ratio {ours / theirs:5.2f}")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--rounds", type=int, default=15)
    parser.add_argument("--number", type=int, default=20)
    opts = parser.parse_args()
    print(f"gelu on {SHAPE} ({np.prod(SHAPE):,} elements), 1 thread, numpy {np.__version__}, "
          f"torch {torch.__version__}, {opts.rounds} rounds of {opts.number} calls, medians")
    for dtype in (np.float32, np.float64):
        for approximate in ("none", "tanh"):
            run(np.dtype(dtype), approximate, opts.number, opts.rounds)


if __name__ == "__main__":
    main()
