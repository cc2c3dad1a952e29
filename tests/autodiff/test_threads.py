"""Thread safety: separate graphs built and differentiated concurrently give the sequential
results, and the decorator class is created once even when many threads ask at once."""

from __future__ import annotations

import threading
from concurrent.futures import ThreadPoolExecutor

import numpy as np
import pytest

from burnpy import Tensor
from burnpy.autodiff import Autodiff, BalancedCheckpointing, NoCheckpointing
from burnpy_cpu import CpuBackend


def train_step_grads(strategy: type, seed: int) -> list[np.ndarray]:
    """Gradients of a small two-layer network with shared weights, for one seed."""
    ad = Autodiff(CpuBackend, strategy)
    rng = np.random.default_rng(seed)
    x = Tensor.from_data(rng.standard_normal((16, 8)), backend=ad)
    w1 = Tensor.from_data(rng.standard_normal((8, 8)), backend=ad).require_grad()
    w2 = Tensor.from_data(rng.standard_normal((8, 4)), backend=ad).require_grad()
    h = x
    for _ in range(5):
        h = (h @ w1).tanh() + h * 0.5
    loss = (h @ w2).log_softmax(1).mean() + (w1 * w1).sum() * 1e-3
    grads = loss.backward()
    return [w1.grad(grads).to_numpy(), w2.grad(grads).to_numpy()]


@pytest.mark.parametrize("strategy", [NoCheckpointing, BalancedCheckpointing])
def test_concurrent_graphs_match_sequential_results(strategy: type) -> None:
    seeds = list(range(48))
    expected = [train_step_grads(strategy, s) for s in seeds]
    with ThreadPoolExecutor(max_workers=8) as pool:
        for _ in range(3):
            got = list(pool.map(lambda s: train_step_grads(strategy, s), seeds))
            for want, have in zip(expected, got, strict=True):
                for a, b in zip(want, have, strict=True):
                    np.testing.assert_array_equal(a, b)


def test_decorator_class_is_created_once_under_contention() -> None:
    class FreshCpu(CpuBackend):
        """A backend no Autodiff class exists for yet."""

    barrier = threading.Barrier(16)

    def build(_: int) -> type:
        barrier.wait()
        return Autodiff(FreshCpu, BalancedCheckpointing)

    with ThreadPoolExecutor(max_workers=16) as pool:
        classes = set(pool.map(build, range(16)))
    assert len(classes) == 1 and classes.pop().InnerBackend is FreshCpu
