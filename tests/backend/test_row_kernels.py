"""The compiled layer norm and cross entropy row loops (``burnpy_cpu/array_ops/_row_kernels``)
that CpuBackend runs for NumPy float32/float64 inputs: against torch and against the
protocol's composition, forward and backward, over narrow, one-element and wide rows."""

from __future__ import annotations

from typing import Any

import numpy as np
import pytest
import torch

from burnpy.backend.ops.module_ops import ModuleOps
from burnpy_cpu import CpuBackend

DTYPES = [np.float32, np.float64]
#: rtol, atol per dtype against torch (which rounds its own way).
TOL: dict[Any, dict[str, float]] = {np.float32: {"rtol": 2e-5, "atol": 2e-5},
                                    np.float64: {"rtol": 1e-11, "atol": 1e-12}}
LAYER_NORM_SHAPES = [(1024, 64), (7, 1), (3, 5000), (2, 3, 9), (1, 1)]


def _layer_norm_case(dtype: Any, shape: tuple[int, ...]) -> tuple[np.ndarray, ...]:
    rng = np.random.default_rng(sum(shape))
    x = (rng.standard_normal(shape) * 3 + 1).astype(dtype)
    width = shape[-1]
    return (x, rng.standard_normal(width).astype(dtype), rng.standard_normal(width).astype(dtype),
            rng.standard_normal(shape).astype(dtype))


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("shape", LAYER_NORM_SHAPES)
@pytest.mark.parametrize("affine", [True, False])
def test_layer_norm_matches_torch(dtype: Any, shape: tuple[int, ...], affine: bool) -> None:
    x, weight, bias, grad = _layer_norm_case(dtype, shape)
    w, b = (weight, bias) if affine else (None, None)
    y = CpuBackend.layer_norm(x, 1, w, b, 1e-5)
    grad_x, grad_weight, grad_bias = CpuBackend.layer_norm_backward(x, 1, w, grad, 1e-5)
    tx = torch.tensor(x, requires_grad=True)
    tw = torch.tensor(weight, requires_grad=True) if affine else None
    tb = torch.tensor(bias, requires_grad=True) if affine else None
    ty = torch.nn.functional.layer_norm(tx, shape[-1:], tw, tb, 1e-5)
    ty.backward(torch.tensor(grad))
    assert y.dtype == grad_x.dtype == grad_weight.dtype == grad_bias.dtype == dtype
    assert y.shape == grad_x.shape == x.shape and grad_weight.shape == shape[-1:]
    np.testing.assert_allclose(y, ty.detach().numpy(), **TOL[dtype])
    assert tx.grad is not None
    # One-element rows: xhat and the grads of x and weight are 0 up to rounding noise, which
    # reaches ~1e-4 in torch's float32 (its rstd is ~300 there).
    noise = 1e-4 if shape[-1] == 1 else 0.0
    np.testing.assert_allclose(grad_x, tx.grad.numpy(), rtol=TOL[dtype]["rtol"],
                               atol=max(TOL[dtype]["atol"], noise))
    if affine:
        assert tw is not None and tb is not None and tw.grad is not None and tb.grad is not None
        scale = {"rtol": TOL[dtype]["rtol"],
                 "atol": max(TOL[dtype]["atol"] * np.sqrt(x.size), noise * x.shape[0])}
        np.testing.assert_allclose(grad_weight, tw.grad.numpy(), **scale)
        np.testing.assert_allclose(grad_bias, tb.grad.numpy(), **scale)


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("shape", [(1024, 64), (3, 5000), (2, 3, 9)])
def test_layer_norm_matches_the_protocol_composition(dtype: Any, shape: tuple[int, ...]) -> None:
    """Against ``Backend``'s own composition of basic ops (normalized over two dims)."""
    x, _, _, grad = _layer_norm_case(dtype, shape)
    rng = np.random.default_rng(1)
    trailing = shape[-2:]
    weight, bias = (rng.standard_normal(trailing).astype(dtype) for _ in range(2))
    got = [CpuBackend.layer_norm(x, 2, weight, bias, 1e-5),
           *CpuBackend.layer_norm_backward(x, 2, weight, grad, 1e-5)]
    want = [ModuleOps.layer_norm.__func__(CpuBackend, x, 2, weight, bias, 1e-5),  # type: ignore[attr-defined]
            *ModuleOps.layer_norm_backward.__func__(CpuBackend, x, 2, weight, grad, 1e-5)]  # type: ignore[attr-defined]
    for g, w in zip(got, want, strict=True):
        np.testing.assert_allclose(g, w, **TOL[dtype])


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize(("rows", "classes"), [(1024, 65), (5, 1), (3, 3000)])
def test_cross_entropy_matches_torch_with_ignored_rows(dtype: Any, rows: int,
                                                       classes: int) -> None:
    rng = np.random.default_rng(rows + classes)
    logits = (rng.standard_normal((rows, classes)) * 4).astype(dtype)
    target = rng.integers(0, classes, rows)
    target[::3] = -100
    grad = rng.standard_normal(rows).astype(dtype)
    loss = CpuBackend.cross_entropy(logits, target, -100)
    grad_logits = CpuBackend.cross_entropy_backward(logits, target, -100, grad)
    tx = torch.tensor(logits, requires_grad=True)
    tl = torch.nn.functional.cross_entropy(tx, torch.tensor(target), ignore_index=-100,
                                           reduction="none")
    tl.backward(torch.tensor(grad))
    assert loss.dtype == grad_logits.dtype == dtype
    np.testing.assert_allclose(loss, tl.detach().numpy(), **TOL[dtype])
    assert tx.grad is not None
    np.testing.assert_allclose(grad_logits, tx.grad.numpy(), **TOL[dtype])
    assert (loss[::3] == 0).all() and (grad_logits[::3] == 0).all()


@pytest.mark.parametrize("dtype", DTYPES)
def test_cross_entropy_matches_the_protocol_composition(dtype: Any) -> None:
    rng = np.random.default_rng(5)
    logits = (rng.standard_normal((64, 17)) * 30).astype(dtype)
    target = rng.integers(0, 17, 64)
    target[1] = 4
    grad = rng.standard_normal(64).astype(dtype)
    got = [CpuBackend.cross_entropy(logits, target, 4),
           CpuBackend.cross_entropy_backward(logits, target, 4, grad)]
    want = [ModuleOps.cross_entropy.__func__(CpuBackend, logits, target, 4),  # type: ignore[attr-defined]
            ModuleOps.cross_entropy_backward.__func__(CpuBackend, logits, target, 4, grad)]  # type: ignore[attr-defined]
    for g, w in zip(got, want, strict=True):
        np.testing.assert_allclose(g, w, **TOL[dtype])


def test_cross_entropy_rejects_a_target_past_the_classes() -> None:
    """numba checks no bounds: the kernel itself raises IndexError, as NumPy's gather did."""
    logits = np.zeros((2, 3), np.float32)
    with pytest.raises(IndexError):
        CpuBackend.cross_entropy(logits, np.array([0, 3]), -100)
