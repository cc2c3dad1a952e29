"""Graph memory: nodes are freed by reference counting alone (no cycles, no registries), a
backward pass frees saved state as it goes, and a long training loop holds steady memory."""

from __future__ import annotations

import gc
import tracemalloc
import weakref
from collections.abc import Iterator

import numpy as np
import pytest

from burnpy import Tensor
from burnpy.autodiff import Autodiff, BalancedCheckpointing, NoCheckpointing
from burnpy.autodiff.graph import Node
from burnpy_cpu import CpuBackend

STRATEGIES = [NoCheckpointing, BalancedCheckpointing]


def live_nodes() -> int:
    return sum(1 for o in gc.get_objects() if type(o) is Node)


@pytest.fixture
def no_gc() -> Iterator[None]:
    """Disable the cycle collector: whatever is freed is freed by reference counts."""
    gc.collect()
    gc.disable()
    try:
        yield
    finally:
        gc.enable()


@pytest.mark.parametrize("strategy", STRATEGIES)
def test_dropped_graph_is_freed_without_backward(strategy: type, no_gc: None) -> None:
    ad = Autodiff(CpuBackend, strategy)
    x = Tensor.from_data(np.ones((3, 3)), backend=ad).require_grad()
    before = live_nodes()
    y = ((x @ x).tanh() * 2.0 + x).softmax(1).sum()
    assert live_nodes() >= before + 6
    del y
    assert live_nodes() == before


@pytest.mark.parametrize("strategy", STRATEGIES)
def test_backward_frees_saved_state(strategy: type, no_gc: None) -> None:
    ad = Autodiff(CpuBackend, strategy)
    before = live_nodes()
    x = Tensor.from_data(np.ones((4, 4)), backend=ad).require_grad()
    hidden = (x @ x).exp()  # compute-bound then memory-bound: both strategies save something
    saved = hidden.primitive.node.output if strategy is NoCheckpointing else \
        hidden.primitive.node.parents[0].output
    probe = weakref.ref(saved)
    del saved
    y = hidden.sum()
    del hidden
    assert probe() is not None
    grads = y.backward()
    assert probe() is None
    assert y.primitive.node.parents is None
    del grads, y
    assert live_nodes() == before + 1  # x's leaf


def test_untracked_ops_create_no_nodes(no_gc: None) -> None:
    ad = Autodiff(CpuBackend)
    x = Tensor.from_data(np.ones((4, 4)), backend=ad)
    before = live_nodes()
    y = ((x @ x).relu() * 3.0).sum(0).log_softmax(0)
    assert live_nodes() == before and y.primitive.node is None


def _mlp_steps(ad: type, steps: int, probe_every: int) -> tuple[list[int], list[int], float,
                                                                    float]:
    """Train a 4-8-3 MLP with hand-written SGD; returns node counts and traced bytes sampled
    every ``probe_every`` steps, and the first and last loss."""
    rng = np.random.default_rng(0)
    x = Tensor.from_data(rng.standard_normal((6, 4)), backend=ad)
    onehot = Tensor.from_data(np.eye(3)[rng.integers(0, 3, 6)], backend=ad)
    params = [Tensor.from_data(a, backend=CpuBackend) for a in (
        rng.standard_normal((4, 8)) * 0.5, np.zeros(8), rng.standard_normal((8, 3)) * 0.5,
        np.zeros(3))]
    nodes, traced, losses = [], [], []
    for step in range(steps):
        w1, b1, w2, b2 = (Tensor.from_inner(p, backend=ad).require_grad() for p in params)
        logits = (x @ w1 + b1).relu() @ w2 + b2
        loss = -(logits.log_softmax(1) * onehot).sum(1).mean()
        grads = loss.backward()
        params = [p - 0.1 * t.grad(grads) for p, t in zip(params, (w1, b1, w2, b2),
                                                         strict=True)]
        losses.append(loss.item())
        del w1, b1, w2, b2, logits, loss, grads
        if step % probe_every == probe_every - 1:
            nodes.append(live_nodes())
            traced.append(tracemalloc.get_traced_memory()[0])
    return nodes, traced, losses[0], losses[-1]


@pytest.mark.parametrize("strategy", STRATEGIES)
def test_two_thousand_training_steps_hold_steady_memory(strategy: type) -> None:
    tracemalloc.start()
    try:
        nodes, traced, first, last = _mlp_steps(Autodiff(CpuBackend, strategy), 2000, 250)
    finally:
        tracemalloc.stop()
    assert last < 0.5 * first, "the MLP should learn"
    assert len(set(nodes)) == 1, f"live graph nodes changed across steps: {nodes}"
    warm = traced[1]  # after 500 steps
    assert max(traced[1:]) - warm < 1_000_000, f"traced heap grew: {traced}"
