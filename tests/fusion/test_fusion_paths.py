"""Fusion(CpuBackend)'s cheap paths: values that were never pending are B's own arrays and
eager ops pass them straight to B; zeros stay unwritten until read, and slices assigned into
them and summed are built by one concatenation. Each path gives what CpuBackend gives."""

from __future__ import annotations

import numpy as np
import pytest

from burnpy import Autodiff, Fusion, Tensor
from burnpy.fusion import FusionTensor, materialize
from burnpy_cpu import CpuBackend

F = Fusion(CpuBackend)
DEVICE = CpuBackend.default_device()


pytestmark = pytest.mark.usefixtures("cpu_kernels_from_eight")


def test_values_never_pending_are_the_inner_backends_arrays() -> None:
    a = np.arange(6, dtype=np.float32).reshape(2, 3)
    assert F.from_inner(a) is a and F.inner(a) is a
    out = F.float_matmul(a, a.T.copy())
    assert type(out) is np.ndarray
    np.testing.assert_array_equal(out, CpuBackend.float_matmul(a, a.T.copy()))
    assert F.stats.eager_ops == 1
    assert F.float_reshape(a, (2, 3)) is a  # an unchanged shape keeps the value itself
    small = np.ones(4, np.float32)  # under min_elements: B's op at once, B's array back
    assert type(F.float_add(small, small)) is np.ndarray


def test_eager_ops_materialize_pending_handles_in_any_argument() -> None:
    a = np.arange(12, dtype=np.float32).reshape(3, 4)
    pending = F.float_mul_scalar(a, 2.0)
    assert type(pending) is FusionTensor and pending.node is not None
    np.testing.assert_array_equal(F.float_matmul(pending, a.T.copy()), (a * 2) @ a.T)
    pending = F.float_add_scalar(a, 1.0)
    np.testing.assert_array_equal(F.float_cat([a, pending], 0),
                                  np.concatenate([a, a + 1.0]))
    assert pending.node is None and F.inner(pending) is pending.value


def test_results_match_cpu_through_the_tensor_api() -> None:
    rng = np.random.default_rng(0)
    data = rng.normal(size=(4, 6)).astype(np.float32)
    for backend in (F, CpuBackend):
        x = Tensor.from_data(data, backend=backend)
        y = ((x * 2.0 + 1.0).relu() @ x.T).softmax(1).reshape(2, 8).sum(0)
        if backend is F:
            fused = y.to_numpy()
        else:
            np.testing.assert_allclose(fused, y.to_numpy(), rtol=1e-6)


def test_zeros_stay_unwritten_until_read() -> None:
    z = F.float_zeros((4, 5), DEVICE, CpuBackend.float_dtype)
    assert type(z) is FusionTensor and z.unwritten is not None and z.value is None
    assert z.shape == (4, 5) and z.dtype == np.float32
    np.testing.assert_array_equal(materialize(F.float_add_scalar(z, 1.0)), np.ones((4, 5)))
    assert z.unwritten is None and z.value is not None
    small = F.float_zeros((2, 2), DEVICE, CpuBackend.float_dtype)
    assert type(small) is np.ndarray  # too small for the fuser: B's zeros


def pieces(backend: type, values: list[np.ndarray], dim: int) -> object:
    """Each value slice-assigned into zeros at its place along ``dim``, summed."""
    shape = list(values[0].shape)
    shape[dim] = sum(v.shape[dim] for v in values)
    total, start = None, 0
    for v in values:
        slices = tuple([slice(None)] * dim + [slice(start, start + v.shape[dim])])
        zeros = backend.float_zeros(tuple(shape), DEVICE, CpuBackend.float_dtype)
        padded = backend.float_slice_assign(zeros, slices, v)
        total = padded if total is None else backend.float_add(total, padded)
        start += v.shape[dim]
    return total


@pytest.mark.parametrize("dim", [0, 1, 2])
def test_summed_slices_of_zeros_are_one_concatenation(dim: int) -> None:
    rng = np.random.default_rng(dim)
    values = [rng.normal(size=[2 if d == dim else 3 for d in range(3)]).astype(np.float32)
              for _ in range(3)]
    kept = [v.copy() for v in values]
    total = pieces(F, values, dim)
    assert type(total) is FusionTensor and total.unwritten is not None
    assert len(total.unwritten.pieces) == 3
    assert (F.stats.eager_ops, F.stats.kernels, F.stats.fallback_ops) == (0, 0, 0)
    got = materialize(total)
    np.testing.assert_array_equal(got, pieces(CpuBackend, values, dim))
    np.testing.assert_array_equal(got, np.concatenate(values, dim))
    for v, k in zip(values, kept, strict=True):  # the pieces' arrays are never written
        np.testing.assert_array_equal(v, k)


@pytest.mark.parametrize("dims", [(0, 1), (1, 2), (2, 0), (-1, 1)])
def test_unwritten_tensors_swap_their_pieces(dims: tuple[int, int]) -> None:
    rng = np.random.default_rng(4)
    values = [rng.normal(size=(2, n, 3)).astype(np.float32) for n in (1, 2, 2)]
    want = np.swapaxes(np.concatenate(values, 1), *dims)
    swapped = F.float_swap_dims(pieces(F, values, 1), *dims)
    assert type(swapped) is FusionTensor and swapped.unwritten is not None
    np.testing.assert_array_equal(materialize(swapped), want)
    np.testing.assert_array_equal(F.float_reshape(F.float_swap_dims(pieces(F, values, 1), *dims),
                                                  (want.size,)), want.reshape(-1))


def test_gaps_between_pieces_stay_zero() -> None:
    value = np.arange(12, dtype=np.float32).reshape(3, 4)
    zeros = F.float_zeros((8, 4), DEVICE, CpuBackend.float_dtype)
    out = F.float_slice_assign(zeros, (slice(2, 5),), value)
    want = np.zeros((8, 4), np.float32)
    want[2:5] = value
    np.testing.assert_array_equal(materialize(out), want)


@pytest.mark.parametrize("case", ["overlap", "two dims", "other dim", "step", "dtype"])
def test_assignments_that_are_not_pieces_run_as_the_inner_backends(case: str) -> None:
    a = np.arange(16, dtype=np.float32).reshape(4, 4)
    first = (slice(0, 2),)
    second, value = {
        "overlap": ((slice(1, 3),), a[1:3] + 100),
        "two dims": ((slice(2, 4), slice(0, 2)), a[2:4, 0:2] + 100),
        "other dim": ((slice(None), slice(2, 4)), a[:, 2:4] + 100),
        "step": ((slice(2, 4, 2),), a[2:4:2] + 100),
        "dtype": ((slice(2, 4),), (a[2:4] + 100).astype(np.float64)),
    }[case]
    for backend in (F, CpuBackend):
        zeros = backend.float_zeros((4, 4), DEVICE, CpuBackend.float_dtype)
        out = backend.float_slice_assign(backend.float_slice_assign(zeros, first, a[0:2]),
                                         second, value)
        summed = backend.float_add(out, backend.float_slice_assign(
            backend.float_zeros((4, 4), DEVICE, CpuBackend.float_dtype), second, value))
        if backend is F:
            got = materialize(out), materialize(summed)
        else:
            np.testing.assert_array_equal(got[0], out)
            np.testing.assert_array_equal(got[1], summed)


def test_chunk_gradients_through_fusion_match_cpu() -> None:
    rng = np.random.default_rng(3)
    data = rng.normal(size=(2, 6, 5)).astype(np.float32)
    grads = []
    for inner in (F, CpuBackend):
        x = Tensor.from_data(data, backend=Autodiff(inner)).require_grad()
        q, k, v = x.chunk(3, dim=1)
        loss = (q * 2.0 + k.exp() - v * v).sum()
        g = x.grad(loss.backward())
        assert g is not None
        grads.append(g.to_numpy())
    np.testing.assert_allclose(grads[0], grads[1], rtol=1e-6)


def test_a_reduction_of_an_existing_value_runs_at_once() -> None:
    a = np.arange(24, dtype=np.float32).reshape(4, 6)
    out = F.float_sum_dim(a, 0)
    assert type(out) is np.ndarray and F.stats.eager_ops == 1  # alone in any group: not recorded
    np.testing.assert_array_equal(out, a.sum(0, keepdims=True))
    pending = F.float_sum_dim(F.float_mul_scalar(a, 2.0), 0)  # closes the mul's group
    assert type(pending) is FusionTensor and pending.node is not None
    np.testing.assert_array_equal(materialize(pending), (a * 2).sum(0, keepdims=True))
    assert F.stats.kernels == 1


def test_a_value_read_by_several_ops_of_a_group_is_one_kernel_input() -> None:
    F.clear_plans()
    a = np.arange(16, dtype=np.float32)
    out = F.float_mul(F.float_add(F.float_mul_scalar(a, 1.5), a), a)
    np.testing.assert_array_equal(materialize(out), (a * 1.5 + a) * a)
    (group,) = F._plans
    assert len(group.inputs) == 1
