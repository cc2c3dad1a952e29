"""Benchmark: the per-op cost of gradient tracking on small tensors.

A chain of 100 ops on 8x8 float32 tensors (cycling ``* w``, ``+ b``, ``tanh``, ``* 0.9``,
with ``w`` and ``b`` tracked), then ``sum().backward()``; the time per op is the whole step
over 100, so it counts each op's forward and its share of the backward pass. Compared with
the same chain untracked on ``Autodiff(CpuBackend)`` (forward only), on plain ``CpuBackend``,
and with torch CPU eager tensors that require grad. One BLAS/OpenMP thread, both libraries in
one process, alternating each round; prints medians and ratios (target: tracked <= 1.5x torch).
Run: ``.venv/bin/python benchmarks/autodiff_overhead.py``.
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

from burnpy import Tensor  # noqa: E402
from burnpy.autodiff import Autodiff  # noqa: E402
from burnpy_cpu import CpuBackend  # noqa: E402

OPS = 100
ROUNDS = 30
REPEATS = 20  # chains per timed sample
SIZE = 8


def _chain(x: Any, w: Any, b: Any) -> Any:
    """The 100-op chain, written once for burnpy and torch tensors alike."""
    y = x
    for i in range(OPS):
        step = i % 4
        if step == 0:
            y = y * w
        elif step == 1:
            y = y + b
        elif step == 2:
            y = y.tanh()
        else:
            y = y * 0.9
    return y


def main() -> None:
    torch.set_num_threads(1)
    rng = np.random.default_rng(0)
    arrays = [rng.standard_normal((SIZE, SIZE)).astype(np.float32) for _ in range(3)]
    ad = Autodiff(CpuBackend)

    x, w, b = (Tensor.from_data(a, backend=ad) for a in arrays)
    w.require_grad()
    b.require_grad()
    ux, uw, ub = (Tensor.from_data(a, backend=ad) for a in arrays)
    px, pw, pb = (Tensor.from_data(a, backend=CpuBackend) for a in arrays)
    tx = torch.from_numpy(arrays[0])
    tw, tb = (torch.from_numpy(a.copy()).requires_grad_() for a in arrays[1:])

    def tracked() -> None:
        grads = _chain(x, w, b).sum().backward()
        w.grad(grads)

    def torch_tracked() -> None:
        tw.grad = tb.grad = None
        _chain(tx, tw, tb).sum().backward()

    contenders: dict[str, Callable[[], Any]] = {
        "burnpy tracked (fwd+bwd)": tracked,
        "torch requires_grad (fwd+bwd)": torch_tracked,
        "burnpy untracked, Autodiff (fwd)": lambda: _chain(ux, uw, ub),
        "burnpy CpuBackend (fwd)": lambda: _chain(px, pw, pb),
    }
    samples: dict[str, list[float]] = {name: [] for name in contenders}
    for fn in contenders.values():
        fn()
    for _ in range(ROUNDS):
        for name, fn in contenders.items():
            start = time.perf_counter()
            for _ in range(REPEATS):
                fn()
            samples[name].append((time.perf_counter() - start) / REPEATS / OPS * 1e6)

    medians = {name: statistics.median(v) for name, v in samples.items()}
    torch_us = medians["torch requires_grad (fwd+bwd)"]
    print(f"chain of {OPS} ops on {SIZE}x{SIZE} float32, median of {ROUNDS} rounds "
          f"x {REPEATS} chains; microseconds per op")
    for name, us in medians.items():
        print(f"  {name:34s} {us:7.2f} us/op   {us / torch_us:5.2f}x torch")
    tracked_us = medians["burnpy tracked (fwd+bwd)"]
    untracked_us = medians["burnpy untracked, Autodiff (fwd)"]
    print(f"  tracking overhead over untracked:  {tracked_us / untracked_us:5.2f}x")
    verdict = "met" if tracked_us <= 1.5 * torch_us else "MISSED"
    print(f"  target: tracked <= 1.5x torch -> {verdict}")


if __name__ == "__main__":
    main()
