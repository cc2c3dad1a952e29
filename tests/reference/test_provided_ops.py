"""The provided ops the Tensor-level suites never reach (the Tensor and functional layers call
the general op: ``conv`` rather than ``conv2d``, ``float_sort_with_indices`` rather than
``float_argsort``; quantized ops and optimizer steps have no op case), each called directly on
``ReferenceBackend``, where the protocol's default runs, and on CpuBackend, where the native
override (or the same default on native parts) runs: the two must agree.

``test_every_provided_op_is_checked`` records, on a subclass of the reference that wraps every
provided op, which ones the cases and these calls reach, so a new default that is neither
reached by a case nor called here fails, named.
"""

from __future__ import annotations

import inspect
from collections.abc import Callable
from typing import Any

import numpy as np
import pytest
from reference_backend import ReferenceBackend, required_ops

from burnpy import Tensor
from burnpy.autodiff import Autodiff
from burnpy.backend.base import Backend
from burnpy.backend.data import TensorData
from burnpy.backend.ops.module_ops import ConvOptions, ConvTransposeOptions
from burnpy.quantization.scheme import QuantScheme
from burnpy.testing import CASES, OpCase, run_case
from burnpy.testing.grad_check import grad_cases
from burnpy.testing.module_cases import MODULE_CASES
from burnpy_cpu import CpuBackend

DEVICE = CpuBackend.default_device()
RNG = np.random.default_rng(7)
X = RNG.uniform(-2.0, 2.0, size=(2, 3, 6, 5))
W = RNG.uniform(-1.0, 1.0, size=(4, 3, 3, 2))
BIAS = RNG.uniform(-1.0, 1.0, size=(4,))
M = RNG.permutation(12).reshape(3, 4).astype(np.float64) - 5.5
N = RNG.integers(-5, 6, size=(3, 4))
IDX = np.array([2, 0, 1])


def f(b: type[Backend], values: np.ndarray) -> Any:
    """A float64 primitive of ``b``."""
    return b.float_from_data(TensorData(np.asarray(values, dtype=np.float64)), DEVICE)


def i(b: type[Backend], values: np.ndarray) -> Any:
    """An int64 primitive of ``b``."""
    return b.int_from_data(TensorData(np.asarray(values, dtype=np.int64)), DEVICE)


def f32(b: type[Backend], values: np.ndarray) -> Any:
    """A float32 primitive of ``b`` (the dtype CpuBackend's int8 ``q_linear`` kernel takes)."""
    return b.float_from_data(TensorData(np.asarray(values, dtype=np.float32)), DEVICE)


def q(b: type[Backend], values: np.ndarray, scheme: QuantScheme | None = None) -> Any:
    """A quantized primitive of ``b`` (per-tensor int8 unless ``scheme`` says otherwise)."""
    return b.quantize_dynamic(f(b, values), scheme or QuantScheme.int8())


def conv(n: int) -> ConvOptions:
    """Stride 1, padding 1, dilation 1 over ``n`` spatial dims."""
    return ConvOptions((1,) * n, (1,) * n, (1,) * n)


def conv_t(n: int) -> ConvTransposeOptions:
    """Stride 2, padding 1, output padding 1, dilation 1 over ``n`` spatial dims."""
    return ConvTransposeOptions((2,) * n, (1,) * n, (1,) * n, (1,) * n)


def _optim_state(b: type[Backend]) -> tuple[Any, Any, Any]:
    return f(b, M), f(b, M[::-1] * 0.1), f(b, np.abs(M) * 0.01)


#: One direct call per provided op the Tensor-level suites do not reach.
CALLS: dict[str, Callable[[type[Backend]], Any]] = {
    "conv1d": lambda b: b.conv1d(f(b, X[:, :, 0]), f(b, W[:, :, 0]), f(b, BIAS), conv(1)),
    "conv2d": lambda b: b.conv2d(f(b, X), f(b, W), None, conv(2)),
    "conv3d": lambda b: b.conv3d(f(b, X[..., None]), f(b, W[..., None]), f(b, BIAS), conv(3)),
    "conv_transpose1d": lambda b: b.conv_transpose1d(
        f(b, X[:, :, 0]), f(b, W[:3, :, 0].transpose(1, 0, 2)), None, conv_t(1)),
    "conv_transpose2d": lambda b: b.conv_transpose2d(
        f(b, X), f(b, W[:3].transpose(1, 0, 2, 3)), f(b, BIAS[:3]), conv_t(2)),
    "conv_transpose3d": lambda b: b.conv_transpose3d(
        f(b, X[..., None]), f(b, W[:3, ..., None].transpose(1, 0, 2, 3, 4)), None, conv_t(3)),
    "avg_pool1d": lambda b: b.avg_pool1d(f(b, X[:, :, 0]), 2, 2, 1, False, True),
    "avg_pool2d": lambda b: b.avg_pool2d(f(b, X), (2, 3), (2, 1), (1, 1), True, False),
    "max_pool1d": lambda b: b.max_pool1d(f(b, X[:, :, 0]), 3, 2, 1, 1, True),
    "max_pool2d": lambda b: b.max_pool2d(f(b, X), (2, 2), (1, 2), (1, 0), (1, 2), False),
    "max_pool1d_with_indices": lambda b: b.max_pool1d_with_indices(
        f(b, X[:, :, 0]), 2, 1, 0, 2, False),
    "max_pool2d_with_indices": lambda b: b.max_pool2d_with_indices(
        f(b, X), (3, 2), (2, 2), (1, 1), (1, 1), True),
    "adaptive_avg_pool1d": lambda b: b.adaptive_avg_pool1d(f(b, X[:, :, 0]), 4),
    "adaptive_avg_pool2d": lambda b: b.adaptive_avg_pool2d(f(b, X), (4, 3)),
    "float_all": lambda b: b.float_all(f(b, M)),
    "float_any": lambda b: b.float_any(f(b, M * 0.0)),
    "float_all_dim": lambda b: b.float_all_dim(f(b, np.minimum(M, 0.0)), 1),
    "float_any_dim": lambda b: b.float_any_dim(f(b, np.maximum(M, 0.0)), 0),
    "float_argmax": lambda b: b.float_argmax(f(b, M), 1),
    "float_argmin": lambda b: b.float_argmin(f(b, M), 0),
    "float_argsort": lambda b: b.float_argsort(f(b, M), 1, True),
    "float_sort": lambda b: b.float_sort(f(b, M), 0, False),
    "float_topk_with_indices": lambda b: b.float_topk_with_indices(f(b, M), 2, 1, False),
    "float_cummax": lambda b: b.float_cummax(f(b, M), 1),
    "float_cummin": lambda b: b.float_cummin(f(b, M), 0),
    "float_min_dim": lambda b: b.float_min_dim(f(b, M), 1),
    "float_is_require_grad": lambda b: b.float_is_require_grad(f(b, M)),
    "int_all": lambda b: b.int_all(i(b, N)),
    "int_all_dim": lambda b: b.int_all_dim(i(b, N), 0),
    "int_any_dim": lambda b: b.int_any_dim(i(b, N * (N > 2)), 1),
    "int_argmax": lambda b: b.int_argmax(i(b, np.argsort(M, axis=1)), 1),
    "int_argmin": lambda b: b.int_argmin(i(b, np.argsort(M, axis=0)), 0),
    "int_argsort": lambda b: b.int_argsort(i(b, np.argsort(M, axis=1)), 1, False),
    "int_sort": lambda b: b.int_sort(i(b, N), 1, True),
    "int_max_dim": lambda b: b.int_max_dim(i(b, N), 0),
    "int_min_dim": lambda b: b.int_min_dim(i(b, N), 1),
    "int_zeros": lambda b: b.int_zeros((2, 3), DEVICE, b.int_dtype),
    "int_ones": lambda b: b.int_ones((3, 1), DEVICE, b.int_dtype),
    "quantize_dynamic": lambda b: q(b, M, QuantScheme.int8(block_size=2)),
    "q_compute_params": lambda b: b.q_compute_params(f(b, M), QuantScheme.int8(block_size=2)),
    "q_cat": lambda b: b.q_cat([q(b, M), q(b, M * 0.5)], 0),
    "q_expand": lambda b: b.q_expand(q(b, M[:1]), (3, 4)),
    "q_gather": lambda b: b.q_gather(q(b, M), 1, i(b, np.argsort(M, axis=1))),
    "q_select": lambda b: b.q_select(q(b, M), 0, i(b, IDX)),
    "q_slice": lambda b: b.q_slice(q(b, M), (slice(1, 3), slice(0, 4, 2))),
    "q_repeat_dim": lambda b: b.q_repeat_dim(q(b, M), 1, 2),
    "q_matmul": lambda b: b.q_matmul(q(b, M), q(b, M.T)),
    "q_linear": lambda b: b.q_linear(f32(b, M[:2]), b.quantize_dynamic(f32(b, M),
                                                                       QuantScheme.int8()),
                                     f32(b, BIAS[:3])),
    "sgd_step": lambda b: b.sgd_step(*_optim_state(b)[:2], f(b, M * 0.3), lr=0.1,
                                     momentum=0.9, dampening=0.1, weight_decay=0.01,
                                     nesterov=True),
    "adam_step": lambda b: b.adam_step(*_optim_state(b), None, None, step=3, lr=0.01,
                                       beta1=0.9, beta2=0.99, eps=1e-8, weight_decay=0.1,
                                       decoupled=True),
    "rmsprop_step": lambda b: b.rmsprop_step(*_optim_state(b), None, None, lr=0.01, alpha=0.9,
                                             eps=1e-8, weight_decay=0.1, momentum=0.5,
                                             centered=True),
}


def _host(b: type[Backend], value: Any) -> Any:
    """``value`` (a primitive, a tuple of them, or a plain value) as NumPy arrays."""
    if isinstance(value, tuple | list):
        return [_host(b, v) for v in value]
    if value is None or isinstance(value, bool):
        return value
    if isinstance(value, CpuBackend.QuantizedTensorPrimitive):
        value = b.dequantize(value)
    return np.asarray(value)


@pytest.mark.parametrize("name", CALLS)
def test_the_default_agrees_with_cpu(name: str) -> None:
    ours = _host(ReferenceBackend, CALLS[name](ReferenceBackend))
    theirs = _host(CpuBackend, CALLS[name](CpuBackend))
    _assert_same(name, ours, theirs, RTOL.get(name, (1e-12, ""))[0])


#: Calls whose native override rounds differently from the default, with the reason.
RTOL: dict[str, tuple[float, str]] = {
    "q_matmul": (1e-6, "CpuBackend accumulates the int8 products exactly and applies the "
                       "float32 scales once per block; the default multiplies dequantized values"),
    "q_linear": (1e-6, "CpuBackend's kernel sums float32 products with the int8 values and "
                       "scales the sum; the default multiplies dequantized float32 values"),
}


def _assert_same(where: str, ours: Any, theirs: Any, rtol: float) -> None:
    if isinstance(theirs, list):
        assert isinstance(ours, list) and len(ours) == len(theirs), where
        for k, (a, b) in enumerate(zip(ours, theirs, strict=True)):
            _assert_same(f"{where}[{k}]", a, b, rtol)
        return
    if theirs is None or isinstance(theirs, bool):
        assert ours is theirs or ours == theirs, where
        return
    assert ours.dtype == theirs.dtype and ours.shape == theirs.shape, where
    np.testing.assert_allclose(ours, theirs, rtol=rtol, atol=rtol, err_msg=where)


def _recording_reference(reached: set[str]) -> type[Backend]:
    """ReferenceBackend with every provided op wrapped to add its name to ``reached``."""
    required = set(required_ops())
    wrapped: dict[str, Any] = {}
    for name in dir(Backend):
        if name.startswith("__") or name in vars(Backend) or name in required:
            continue
        attr = inspect.getattr_static(Backend, name)
        if isinstance(attr, classmethod):
            wrapped[name] = classmethod(_recorder(name, attr.__func__, reached))
        else:
            wrapped[name] = staticmethod(_recorder(name, attr, reached))
    return type("RecordingReference", (ReferenceBackend,), wrapped)


def _recorder(name: str, func: Callable[..., Any], reached: set[str]) -> Callable[..., Any]:
    def record(*args: Any, **kwargs: Any) -> Any:
        reached.add(name)
        return func(*args, **kwargs)

    return record


def test_every_provided_op_is_checked() -> None:
    """The forward cases, one backward pass of each gradient case, and the direct calls reach
    every provided op on the reference (the suites check the values; this checks the reach)."""
    reached: set[str] = set()
    backend = _recording_reference(reached)
    for case in [*CASES, *MODULE_CASES]:
        run_case(case, backend, case.dtypes[0])
    for case in grad_cases():
        _backward(case, Autodiff(backend))
    for call in CALLS.values():
        call(backend)
    provided = {name for name in dir(Backend) if not name.startswith("__")
                and name not in vars(Backend) and name not in required_ops()}
    assert sorted(provided - reached) == []


def _backward(case: OpCase, backend: type[Backend]) -> None:
    """Differentiate the sum of ``case``'s float outputs on ``backend`` (an Autodiff one)."""
    rng = np.random.default_rng(0)
    inputs = [Tensor.from_data(arg.draw(rng, np.dtype(np.float64)), backend=backend)
              for arg in case.args]
    for arg, t in zip(case.args, inputs, strict=True):
        if arg.kind == "float" and arg.requires_grad:
            t.require_grad()
    out = case.fn(*inputs)
    floats = [o for o in (out if isinstance(out, tuple | list) else [out]) if o.kind == "float"]
    sum((o.sum() for o in floats[1:]), start=floats[0].sum()).backward()
