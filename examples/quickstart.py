"""burnpy in one page: pick a backend by type, compute, and take a gradient.

Run with ``make demo`` (or ``.venv/bin/python examples/quickstart.py``).
"""

from __future__ import annotations

import burnpy as bp
import burnpy.nn.functional as F
from burnpy import Autodiff, Tensor
from burnpy_cpu import CpuBackend


def main() -> None:
    backend = CpuBackend  # the backend is a type: every tensor below lives on it
    CpuBackend.seed(CpuBackend.default_device(), 0)

    x = Tensor.from_data([[1.0, 2.0], [3.0, 4.0]], backend=backend)  # float32 by default
    w = Tensor.random((2, 3), bp.Distribution.normal(0.0, 1.0), backend=backend)
    y = (x @ w).relu()
    print("x @ w, relu:\n", y)
    print("row sums:", y.sum(dim=1), " column max:", y.max(dim=0).values)

    idx = Tensor.arange(0, 6, backend=backend)  # int kind
    print("ints:", idx, "evens:", idx[idx % 2 == 0])

    images = Tensor.random((1, 1, 6, 6), backend=backend)
    kernel = Tensor.ones((2, 1, 3, 3), backend=backend) / 9.0
    print("conv2d output shape:", F.conv2d(images, kernel, padding=1).shape)

    # Gradients: the same code on the decorated backend Autodiff(CpuBackend).
    ad = Autodiff(backend)
    w_tracked = Tensor.from_inner(w, backend=ad).require_grad()
    loss = (Tensor.from_data([[1.0, 2.0], [3.0, 4.0]], backend=ad) @ w_tracked).relu().mean()
    grads = loss.backward()
    print("d loss / d w:\n", w_tracked.grad(grads))  # a tensor of the inner backend
    print("inference copy, untracked:", w_tracked.inner().backend.name())

    try:
        x + Tensor.ones((3,), backend=backend)
    except bp.ShapeError as err:
        print("a clear error instead of a silent broadcast:", err)


if __name__ == "__main__":
    main()
