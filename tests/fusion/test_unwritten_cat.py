"""Fusion(CpuBackend) on a chunk's gradient: ``zeros, grad, zeros`` concatenated stay
unwritten (the grad a piece), so the chunks' padded gradients sum to one unwritten tensor
written by one concatenation; and the CPU fuser declines a group that writes every op's
result (no write saved), running its ops on NumPy. Values are CpuBackend's."""

from __future__ import annotations

import numpy as np
import pytest

from burnpy import Autodiff, Fusion, Tensor
from burnpy.fusion import FusionTensor, materialize
from burnpy_cpu import CpuBackend
from burnpy_cpu.fuser import FUSER, MIN_ELEMENTS, UNWRITTEN_ELEMENTS

F = Fusion(CpuBackend)
DEVICE = CpuBackend.default_device()
FLOAT = CpuBackend.float_dtype


pytestmark = pytest.mark.usefixtures("cpu_kernels_from_eight")


def padded(backend: type, grad: np.ndarray, start: int, total: int, dim: int) -> object:
    """``grad`` at ``start`` of ``total`` along ``dim``, zeros around: autodiff's chunk rule."""
    shape = list(grad.shape)
    parts = []
    for n in (start, total - start - grad.shape[dim]):
        shape[dim] = n
        parts.append(backend.float_zeros(tuple(shape), DEVICE, FLOAT) if n else None)
    return backend.float_cat([p for p in (parts[0], grad, parts[1]) if p is not None], dim)


@pytest.mark.parametrize("dim", [0, 1, -1])
def test_padded_chunks_sum_to_one_unwritten_tensor(dim: int) -> None:
    rng = np.random.default_rng(0)
    grads = [rng.normal(size=(4, 4, 4)).astype(np.float32) for _ in range(3)]
    sums = {}
    for backend in (F, CpuBackend):
        parts = [padded(backend, g, 4 * i, 12, dim) for i, g in enumerate(grads)]
        sums[backend] = backend.float_add(backend.float_add(parts[0], parts[1]), parts[2])
    total = sums[F]
    assert type(total) is FusionTensor and total.unwritten is not None
    assert len(total.unwritten.pieces) == 3 and F.stats.kernels == 0
    np.testing.assert_array_equal(materialize(total), sums[CpuBackend])
    np.testing.assert_array_equal(materialize(total), np.concatenate(grads, dim))


def test_a_concatenation_without_unwritten_zeros_is_the_inner_backends() -> None:
    a = np.ones((2, 4), np.float32)
    out = F.float_cat([a, a * 2], 0)
    assert type(out) is np.ndarray
    np.testing.assert_array_equal(out, np.concatenate([a, a * 2]))


@pytest.mark.parametrize("case", ["dtype", "shape", "dim"])
def test_parts_that_do_not_fit_go_to_the_inner_backend(case: str) -> None:
    zeros = F.float_zeros((2, 4), DEVICE, FLOAT)
    other = {"dtype": np.ones((2, 4), np.float64), "shape": np.ones((2, 3), np.float32),
             "dim": np.ones((2, 4), np.float32)}[case]
    dim = 5 if case == "dim" else 0
    try:
        want = CpuBackend.float_cat([np.zeros((2, 4), np.float32), other], dim)
    except Exception as error:  # B's own error, named by B
        with pytest.raises(type(error)):
            F.float_cat([zeros, other], dim)
        return
    got = F.float_cat([zeros, other], dim)
    np.testing.assert_array_equal(materialize(got), want)
    assert materialize(got).dtype == want.dtype


def test_chunk_gradients_match_cpu_through_autodiff() -> None:
    rng = np.random.default_rng(1)
    data = rng.normal(size=(4, 6, 12)).astype(np.float32)
    weights = [rng.normal(size=(4, 6, 4)).astype(np.float32) for _ in range(3)]
    grads = {}
    for backend in (Autodiff(F), Autodiff(CpuBackend)):
        x = Tensor.from_data(data, backend=backend).require_grad()
        q, k, v = x.chunk(3, dim=-1)
        loss = sum(((t * Tensor.from_data(w, backend=backend)).sum()
                    for t, w in zip((q, k, v), weights, strict=True)), start=x.sum() * 0)
        grad = x.grad(loss.backward())
        assert grad is not None
        grads[backend] = grad.to_numpy()
    np.testing.assert_allclose(*grads.values(), rtol=1e-6)
    np.testing.assert_array_equal(grads[Autodiff(F)], np.concatenate(weights, -1))


def test_a_group_writing_every_result_runs_on_numpy() -> None:
    a, b, c = (np.full(16, v, np.float32) for v in (1.0, 2.0, 3.0))
    partial = F.float_add(a, b)
    total = F.float_add(partial, c)  # both handles kept: both results written
    np.testing.assert_array_equal(materialize(total), a + b + c)
    np.testing.assert_array_equal(materialize(partial), a + b)
    assert (F.stats.kernels, F.stats.fallback_ops) == (0, 2)
    chained = F.float_add(F.float_add(a, b), c)  # the partial sum never written: one kernel
    np.testing.assert_array_equal(materialize(chained), a + b + c)
    assert (F.stats.kernels, F.stats.fallback_ops) == (1, 2)


def test_zeros_stay_unwritten_from_their_own_floor_below_the_kernels() -> None:
    """Under the CPU fuser's own floors, a chunk's padded gradients too small for a kernel
    (8K values a piece) still sum to one unwritten tensor; smaller zeros are NumPy's."""
    FUSER.min_elements, FUSER.unwritten_elements = MIN_ELEMENTS, UNWRITTEN_ELEMENTS
    assert type(F.float_zeros((UNWRITTEN_ELEMENTS - 1,), DEVICE, FLOAT)) is np.ndarray
    rng = np.random.default_rng(2)
    grads = [rng.normal(size=(2, 4, 1024)).astype(np.float32) for _ in range(3)]
    parts = [padded(F, g, 4 * i, 12, 1) for i, g in enumerate(grads)]
    total = F.float_add(F.float_add(parts[0], parts[1]), parts[2])
    assert type(total) is FusionTensor and total.unwritten is not None
    assert len(total.unwritten.pieces) == 3
    np.testing.assert_array_equal(materialize(total), np.concatenate(grads, 1))
    data = rng.normal(size=(2, 12, 1024)).astype(np.float32)
    found = {}
    for backend in (Autodiff(F), Autodiff(CpuBackend)):
        x = Tensor.from_data(data, backend=backend).require_grad()
        q, k, v = x.swap_dims(1, 2).chunk(3, dim=-1)
        loss = (q * 2.0).sum() + (k * k).sum() - v.sum()
        grad = x.grad(loss.backward())
        assert grad is not None
        found[backend] = grad.to_numpy()
    np.testing.assert_allclose(found[Autodiff(F)], found[Autodiff(CpuBackend)], rtol=1e-6)


def test_swapped_pieces_are_written_row_major_in_one_pass() -> None:
    """A chunk's padded gradients swapped back: written C-contiguous (the reshape reading
    them is a view), with the values NumPy's concatenation gives."""
    rng = np.random.default_rng(3)
    grads = [rng.normal(size=(2, 3, 5, 4)).astype(np.float32) for _ in range(3)]
    parts = [padded(F, g, 3 * i, 9, 1) for i, g in enumerate(grads)]
    total = F.float_swap_dims(F.float_add(F.float_add(parts[0], parts[1]), parts[2]), 1, 2)
    assert type(total) is FusionTensor and total.unwritten is not None
    value = materialize(total)
    assert value.flags.c_contiguous and value.shape == (2, 5, 9, 4)
    np.testing.assert_array_equal(value, np.concatenate(grads, 1).swapaxes(1, 2))
    flat = F.float_reshape(total, (2, 5, 36))
    assert np.shares_memory(flat, value)


def test_the_cpu_fuser_writes_pieces_over_zero_gaps() -> None:
    a, b = np.ones((2, 2), np.float32), np.full((2, 1), 2.0, np.float32)
    out = FUSER.write_pieces((2, 6), np.dtype(np.float32), 1, [(1, a), (4, b)])
    np.testing.assert_array_equal(out, [[0, 1, 1, 0, 2, 0], [0, 1, 1, 0, 2, 0]])
    assert out.dtype == np.float32 and out.flags.c_contiguous
