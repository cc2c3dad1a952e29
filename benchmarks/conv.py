"""Benchmark: burnpy CPU conv2d (forward, weight and input backward) against PyTorch CPU.

Batch 64, 32 -> 64 channels, 28x28, 3x3 kernel, padding 1, float32, one BLAS/OpenMP thread,
both libraries in one process, alternating A and B each round; prints medians and ratios.
Run: ``.venv/bin/python benchmarks/conv.py``.
"""

from __future__ import annotations

import os

for _var in ("OMP_NUM_THREADS", "OPENBLAS_NUM_THREADS", "MKL_NUM_THREADS"):
    os.environ[_var] = "1"

import statistics  # noqa: E402
import time  # noqa: E402
from collections.abc import Callable  # noqa: E402
from typing import Any  # noqa: E402

import numpy as np  # noqa: E402
import torch  # noqa: E402

from burnpy.backend.ops.module_ops import ConvOptions  # noqa: E402
from burnpy_cpu import CpuBackend  # noqa: E402

ROUNDS = 15
BATCH, C_IN, C_OUT, SIZE, KERNEL, PAD = 64, 32, 64, 28, 3, 1


def _time(fn: Callable[[], Any]) -> float:
    """Wall time of one call, in milliseconds."""
    start = time.perf_counter()
    fn()
    return (time.perf_counter() - start) * 1e3


def _compare(name: str, ours: Callable[[], Any], theirs: Callable[[], Any]) -> None:
    """Warm both up, time them alternately for ROUNDS rounds, print medians and their ratio
    (and the ratio of the fastest runs, steadier on a shared machine)."""
    ours()
    theirs()
    a, b = [], []
    for _ in range(ROUNDS):
        a.append(_time(ours))
        b.append(_time(theirs))
    ma, mb = statistics.median(a), statistics.median(b)
    print(f"{name:16s} burnpy {ma:7.2f} ms   torch {mb:7.2f} ms   ratio {ma / mb:5.2f}"
          f"   (fastest runs: {min(a) / min(b):4.2f})")


def main() -> None:
    """Run the three comparisons."""
    torch.set_num_threads(1)
    rng = np.random.default_rng(0)
    x = rng.standard_normal((BATCH, C_IN, SIZE, SIZE), dtype=np.float32)
    w = rng.standard_normal((C_OUT, C_IN, KERNEL, KERNEL), dtype=np.float32)
    b = rng.standard_normal(C_OUT, dtype=np.float32)
    opts = ConvOptions((1, 1), (PAD, PAD), (1, 1), 1)
    grad = rng.standard_normal((BATCH, C_OUT, SIZE, SIZE), dtype=np.float32)
    tx, tw, tb, tg = (torch.from_numpy(a) for a in (x, w, b, grad))

    def torch_backward(mask: list[bool]) -> Callable[[], Any]:
        """torch autograd's conv kernel (aten.convolution_backward) for the masked grads."""
        return lambda: torch.ops.aten.convolution_backward(
            tg, tx, tw, None, [1, 1], [PAD, PAD], [1, 1], False, [0, 0], 1, mask)

    print(f"conv2d {BATCH}x{C_IN}x{SIZE}x{SIZE} -> {C_OUT} ch, {KERNEL}x{KERNEL}, pad {PAD}, "
          f"float32, 1 thread, {ROUNDS} rounds")
    with torch.no_grad():
        _compare("forward", lambda: CpuBackend.conv2d(x, w, b, opts),
                 lambda: torch.nn.functional.conv2d(tx, tw, tb, padding=PAD))
        _compare("weight backward", lambda: CpuBackend.conv_weight_backward(x, w, grad, opts),
                 torch_backward([False, True, False]))
        _compare("x backward", lambda: CpuBackend.conv_x_backward(x, w, grad, opts),
                 torch_backward([True, False, False]))


if __name__ == "__main__":
    main()
