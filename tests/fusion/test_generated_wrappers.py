"""Fusion(CpuBackend)'s generated wrappers: each op's check of only the parameters its
protocol signature types as tensors, in front of B's op. A call without a handle on a
tensor below the fuser's ``min_elements`` is B's op at once (no recording, nothing pending);
any other call takes the general path. Each gives what CpuBackend gives."""

from __future__ import annotations

import numpy as np
import pytest

from burnpy import Fusion
from burnpy.fusion import FusionTensor, materialize
from burnpy_cpu import CpuBackend
from burnpy_cpu.fuser import FUSER

F = Fusion(CpuBackend)
DEVICE = CpuBackend.default_device()


pytestmark = pytest.mark.usefixtures("cpu_kernels_from_eight")


def pending() -> int:
    return len(F.stream(DEVICE).nodes)


def test_small_fusable_ops_on_values_run_at_once_on_b() -> None:
    a = np.arange(4, dtype=np.float32) - 1.5
    b = np.full(4, 0.5, np.float32)
    for name, args in (("float_add", (a, b)), ("float_mul_scalar", (a, 3.0)),
                       ("float_clamp", (a, -1.0, 1.0)), ("relu", (a,)),
                       ("float_expand", (b[:1], (4,))), ("float_sum_dim", (a, 0)),
                       ("float_greater", (a, b))):
        out = getattr(F, name)(*args)
        assert type(out) is np.ndarray, name
        np.testing.assert_array_equal(out, getattr(CpuBackend, name)(*args))
    assert pending() == 0 and F.stats.eager_ops == 7 and F.stats.kernels == 0


def test_broadcast_operands_are_bounded_by_the_broadcast_shape() -> None:
    column, row = np.ones((4, 1), np.float32), np.ones((1, 4), np.float32)
    out = F.float_add(column, row)  # 4 + 4 elements in, 16 out: recorded
    assert type(out) is FusionTensor and pending() == 1
    np.testing.assert_array_equal(materialize(out), np.full((4, 4), 2.0, np.float32))
    assert pending() == 0


def test_calls_with_a_handle_or_of_a_kernels_size_take_the_general_path() -> None:
    big = np.arange(16, dtype=np.float32)
    handle = F.float_mul_scalar(big, 2.0)  # 16 >= 8: recorded
    assert type(handle) is FusionTensor and pending() == 1
    small = F.float_sum_dim(F.float_reshape(handle, (2, 8)), 1)  # reads the handle
    np.testing.assert_array_equal(materialize(small),
                                  (big * 2).reshape(2, 8).sum(1, keepdims=True))
    out = F.float_matmul(handle, big.reshape(16, 1))  # an eager op materializes it
    np.testing.assert_array_equal(out, (big * 2) @ big.reshape(16, 1))
    assert pending() == 0


def test_the_fusers_floor_is_read_at_each_call() -> None:
    a = np.ones(4, np.float32)
    assert type(F.float_add(a, a)) is np.ndarray
    FUSER.min_elements = 2
    out = F.float_add(a, a)
    assert type(out) is FusionTensor
    np.testing.assert_array_equal(materialize(out), a + a)


def test_generated_wrappers_take_keywords_and_defaults_as_the_protocol_does() -> None:
    a = np.arange(6, dtype=np.float32).reshape(2, 3)
    np.testing.assert_array_equal(F.float_slice(tensor=a, slices=(slice(0, 1),)), a[:1])
    np.testing.assert_array_equal(F.float_sum_dim(a, dim=1), a.sum(1, keepdims=True))
    np.testing.assert_array_equal(F.float_cat(tensors=[a, a], dim=0), np.concatenate([a, a]))
    np.testing.assert_array_equal(F.relu(x=a - 2), np.maximum(a - 2, 0))
    with pytest.raises(TypeError):
        F.float_slice(a)
    # keyword-only parameters, some left to their defaults (B's own adam_step: eager)
    grad = np.full((2, 3), 0.5, np.float32)
    kwargs = {"step": 1, "lr": 0.1, "beta1": 0.9, "beta2": 0.99, "eps": 1e-8}
    for got, want in zip(F.adam_step(a, grad, None, None, None, **kwargs),
                         CpuBackend.adam_step(a, grad, None, None, None, **kwargs), strict=True):
        assert (got is None) == (want is None)
        if want is not None:
            np.testing.assert_array_equal(got, want)


def test_a_sequence_holding_a_handle_is_materialized_for_b() -> None:
    big = np.arange(16, dtype=np.float32)
    handle = F.float_add_scalar(big, 1.0)
    out = F.float_cat([big, handle], 0)
    assert type(out) is np.ndarray
    np.testing.assert_array_equal(out, np.concatenate([big, big + 1]))


def test_views_cat_zeros_and_matmul_of_values_are_bs_own_at_once() -> None:
    """The ops with paths of their own for handles (views, unwritten zeros, a matmul the
    fuser may record) run B's op in their generated front when no argument is a handle."""
    a = np.arange(12, dtype=np.float32).reshape(3, 4)
    F.float_matmul(a, a.T)  # the first call asks the fuser whether it records matmuls
    F.stats.reset()
    outs = [F.float_reshape(a, (4, 3)), F.float_swap_dims(a, 0, 1), F.float_permute(a, (1, 0)),
            F.float_matmul(a, a.T), F.float_cat([a, a], 1), F.float_zeros((2, 2), DEVICE,
                                                                          CpuBackend.float_dtype),
            F.float_slice_assign(a, (slice(0, 1),), a[1:2])]
    assert all(type(o) is np.ndarray for o in outs) and pending() == 0
    assert F.stats.eager_ops == len(outs)
    wants = [a.reshape(4, 3), a.T, a.T, a @ a.T, np.concatenate([a, a], 1), np.zeros((2, 2))]
    for got, want in zip(outs, wants, strict=False):
        np.testing.assert_array_equal(got, want)
    np.testing.assert_array_equal(outs[-1], np.concatenate([a[1:2], a[1:]]))
    assert F.float_reshape(a, (3, 4)) is a  # to its own shape: the array itself
    assert type(F.float_zeros((4, 4), DEVICE, CpuBackend.float_dtype)) is FusionTensor  # 16 >= 8


def test_a_view_of_a_handle_takes_the_general_path() -> None:
    big = np.arange(16, dtype=np.float32)
    handle = F.float_mul_scalar(big, 2.0)
    assert F.float_reshape(handle, (16,)) is handle
    view = F.float_swap_dims(F.float_reshape(handle, (4, 4)), 0, 1)
    np.testing.assert_array_equal(materialize(view), (big * 2).reshape(4, 4).T)


def test_generated_code_keeps_its_source_for_readers() -> None:
    """A generated wrapper and a CPU kernel show their own lines (``inspect``, tracebacks,
    debuggers), and ``python -m burnpy.fusion.show`` prints an op's."""
    import inspect

    from burnpy.backend.dtype import DType
    from burnpy.fusion.show import op_source
    from burnpy.ir import FusedGroup, FusedOp, Ref, TensorDesc
    from burnpy_cpu.fuser import _source

    shown = op_source("float_exp")
    assert shown.startswith("def float_exp(tensor):") and "return _op(tensor)" in shown
    wrapper = inspect.getattr_static(F, "float_exp").__func__
    assert wrapper.__code__.co_filename == "<fusion float_exp>"
    f32 = DType.float32
    group = FusedGroup((4,), (TensorDesc((4,), f32),), (), (
        FusedOp("abs", (Ref("input", 0),), f32), FusedOp("neg", (Ref("local", 0),), f32)),
        (1,), None)
    source, _ = _source(group, False)
    kernel = FUSER._compiled(source)
    assert inspect.getsource(kernel) == source
