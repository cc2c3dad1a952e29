"""Checkpoint strategies: identical gradients on random graphs of mixed ops, less saved memory
under BalancedCheckpointing, and each memory-bound value recomputed at most once per pass."""

from __future__ import annotations

import tracemalloc
import zlib
from collections.abc import Callable
from typing import Any, ClassVar

import numpy as np
import pytest

import burnpy.nn.functional as F
from burnpy import Tensor
from burnpy.autodiff import Autodiff, BalancedCheckpointing, NoCheckpointing
from burnpy_cpu import CpuBackend

N = 5
MASK = np.random.default_rng(1).random((N, N)) < 0.5

UNARY: dict[str, Callable[[Tensor], Tensor]] = {
    "tanh": lambda a: a.tanh(), "sigmoid": lambda a: a.sigmoid(), "sin": lambda a: a.sin(),
    "relu": lambda a: a.relu(), "gelu": lambda a: a.gelu(), "softmax": lambda a: a.softmax(1),
    "log_softmax": lambda a: a.log_softmax(0) * 0.1, "transpose": lambda a: a.T,
    "cumsum": lambda a: a.cumsum(1) * 0.3, "flip": lambda a: a.flip(0),
    "mul_scalar": lambda a: a * 0.5, "square": lambda a: a.square() * 0.2,
    "clamp": lambda a: a.clamp(-0.8, 0.8), "abs": lambda a: a.abs(),
    "sum_expand": lambda a: a.sum(1, keepdim=True).expand(N, N) * 0.2,
    "max_dim": lambda a: a.max(0, keepdim=True).values - a,
    "reshape": lambda a: a.reshape(N * N).reshape(N, N),
    "exp_mean": lambda a: a.exp().mean(0) * a,
    "cat": lambda a: Tensor.cat([a[:, :2], a[:, 2:] * 2.0], 1),
    "cumprod": lambda a: a.cumprod(0) * 0.5,
    "mask_fill": lambda a: a.mask_fill(Tensor.from_data(MASK, backend=a.backend), 0.25),
}
BINARY: dict[str, Callable[[Tensor, Tensor], Tensor]] = {
    "add": lambda a, b: a + b, "sub": lambda a, b: a - b, "mul": lambda a, b: a * b,
    "matmul": lambda a, b: (a @ b) * 0.3, "linear": lambda a, b: F.linear(a, b, None) * 0.3,
    "div": lambda a, b: a / (b.abs() + 1.0),
    "mask_where": lambda a, b: a.mask_where(Tensor.from_data(MASK, backend=a.backend), b),
    "atan2": lambda a, b: a.atan2(b), "maximum": lambda a, b: a.maximum(b),
}
#: The ops each program mixes its own op with: compute-bound (kept under balanced
#: checkpointing) and memory-bound (recomputed) neighbours alike.
GLUE = ("add", "mul", "matmul", "tanh")


def random_graph_grads(strategy: type, op: str, steps: int = 30) -> list[np.ndarray]:
    """Gradients of a random program of ``steps`` ops over 3 leaves and a constant, half of
    them ``op``, the rest drawn from ``GLUE``. The program is drawn from a generator seeded
    by the op's name, so adding an op leaves every other op's program as it was."""
    ad = Autodiff(CpuBackend, strategy)
    rng = np.random.default_rng(zlib.crc32(op.encode()))
    leaves = [Tensor.from_data(rng.standard_normal((N, N)), backend=ad).require_grad()
              for _ in range(3)]
    pool = [*leaves, Tensor.from_data(rng.standard_normal((N, N)), backend=ad)]
    for _ in range(steps):
        name = op if rng.random() < 0.5 else GLUE[rng.integers(len(GLUE))]
        a, b = (pool[i] for i in rng.integers(len(pool), size=2))
        out = UNARY[name](a) if name in UNARY else BINARY[name](a, b)
        pool.append(out.tanh() * 2.0 if rng.random() < 0.2 else out)
    weights = Tensor.from_data(rng.standard_normal((N, N)), backend=ad)
    loss = sum(((t * weights).sum() for t in pool[-4:]), start=pool[-5].sum())
    grads = loss.backward()
    return [np.zeros((N, N)) if leaf.grad(grads) is None else leaf.grad(grads).to_numpy()
            for leaf in leaves]


@pytest.mark.parametrize("op", [*UNARY, *BINARY])
def test_strategies_give_identical_gradients_on_random_graphs(op: str) -> None:
    plain = random_graph_grads(NoCheckpointing, op)
    balanced = random_graph_grads(BalancedCheckpointing, op)
    for g_plain, g_balanced in zip(plain, balanced, strict=True):
        np.testing.assert_array_equal(g_balanced, g_plain)
    assert any(np.abs(g).sum() > 0 for g in plain)


def test_a_program_depends_only_on_its_op_name() -> None:
    """Each op's program is its own: the same name gives the same gradients."""
    first = random_graph_grads(NoCheckpointing, "softmax")
    UNARY["zz_new_op"] = lambda a: a.cos()
    try:
        again = random_graph_grads(NoCheckpointing, "softmax")
    finally:
        del UNARY["zz_new_op"]
    for a, b in zip(first, again, strict=True):
        np.testing.assert_array_equal(a, b)


def residual_blocks(ad: type, blocks: int = 8, width: int = 64,
                    batch: int = 128) -> tuple[Tensor, list[Tensor], Callable[[], Tensor]]:
    """The benchmark's block (linear, gelu, scale, residual add, tanh) at a small size."""
    rng = np.random.default_rng(0)
    x = Tensor.from_data(rng.standard_normal((batch, width)), backend=ad)
    params = [Tensor.from_data(rng.standard_normal(shape) / np.sqrt(width), backend=ad)
              .require_grad() for _ in range(blocks) for shape in ((width, width), (width,))]

    def forward() -> Tensor:
        h = x
        for w, b in zip(params[::2], params[1::2], strict=True):
            h = (F.linear(h, w, b).gelu() * 0.5 + h).tanh()
        return h.sum()

    return x, params, forward


def retained_bytes(strategy: type) -> tuple[int, list[np.ndarray]]:
    """Bytes the graph holds after the forward pass (the loss kept), and the gradients."""
    _, params, forward = residual_blocks(Autodiff(CpuBackend, strategy))
    tracemalloc.start()
    try:
        before = tracemalloc.get_traced_memory()[0]
        loss = forward()
        held = tracemalloc.get_traced_memory()[0] - before
    finally:
        tracemalloc.stop()
    grads = loss.backward()
    return held, [p.grad(grads).to_numpy() for p in params]


def test_balanced_checkpointing_saves_less_and_agrees() -> None:
    plain_bytes, plain_grads = retained_bytes(NoCheckpointing)
    balanced_bytes, balanced_grads = retained_bytes(BalancedCheckpointing)
    assert balanced_bytes <= 0.6 * plain_bytes, (balanced_bytes, plain_bytes)
    for a, b in zip(plain_grads, balanced_grads, strict=True):
        np.testing.assert_array_equal(a, b)


class CountingCpu(CpuBackend):
    """CpuBackend counting its tanh and matmul calls."""

    calls: ClassVar[dict[str, int]] = {"float_tanh": 0, "float_matmul": 0}

    @classmethod
    def float_tanh(cls, tensor: Any) -> Any:
        cls.calls["float_tanh"] += 1
        return super().float_tanh(tensor)

    @staticmethod
    def float_matmul(lhs: Any, rhs: Any) -> Any:
        CountingCpu.calls["float_matmul"] += 1
        return lhs @ rhs


@pytest.mark.parametrize(("strategy", "tanh_calls"), [(NoCheckpointing, 8),
                                                      (BalancedCheckpointing, 16)])
def test_memory_bound_values_are_recomputed_once_and_compute_bound_never(
        strategy: type, tanh_calls: int) -> None:
    _, _, forward = residual_blocks(Autodiff(CountingCpu, strategy))
    loss = forward()
    CountingCpu.calls.update(float_tanh=0, float_matmul=0)
    loss.backward()
    backward_tanh = CountingCpu.calls["float_tanh"]
    assert backward_tanh == tanh_calls - 8  # the forward ran 8 tanh
    # Two gradient matmuls per linear, none recomputed; the first input is a constant.
    assert CountingCpu.calls["float_matmul"] == 2 * 8 - 1
