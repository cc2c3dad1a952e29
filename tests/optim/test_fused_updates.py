"""The fused optimizer-update ops (``Backend.sgd_step``, ``adam_step``, ``rmsprop_step``).

The CPU override must equal the protocol's composed default bit for bit for every option, on
the first step and later ones, without writing into its inputs; the composed default must
match torch.optim (through a CPU backend that keeps it) and run on backends that do not
override it (WebGPU) or that record a graph (Autodiff).
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any

import numpy as np
import pytest
import torch

import burnpy as bp
import burnpy.nn as nn
import burnpy.nn.functional as F
from burnpy import Tensor, optim
from burnpy.autodiff import Autodiff
from burnpy.backend.ops.optim_ops import OptimOps
from burnpy_cpu import CpuBackend
from burnpy_wgpu import WgpuBackend


class ComposedCpu(CpuBackend):
    """CpuBackend with the protocol's composed optimizer updates instead of the fused ones."""

    sgd_step = OptimOps.__dict__["sgd_step"]
    adam_step = OptimOps.__dict__["adam_step"]
    rmsprop_step = OptimOps.__dict__["rmsprop_step"]


SHAPE = (5, 7)


def _arrays(dtype: Any, count: int, seed: int) -> list[np.ndarray]:
    """``count`` random arrays; the odd ones (second moments) non-negative."""
    rng = np.random.default_rng(seed)
    return [(np.abs(a) if i % 2 else a).astype(dtype)
            for i, a in enumerate(rng.standard_normal((count, *SHAPE)))]


def _check_fused(op: str, inputs: list[np.ndarray | None], options: dict[str, Any]) -> list[Any]:
    """Run CpuBackend's fused ``op`` and the composed default on the same inputs: equal bit for
    bit, and every input left as it was. Returns the fused result."""
    before = [None if a is None else a.copy() for a in inputs]
    fused = getattr(CpuBackend, op)(*inputs, **options)
    composed = getattr(OptimOps, op).__func__(CpuBackend, *inputs, **options)
    for a, b in zip(inputs, before, strict=True):
        if a is not None:
            np.testing.assert_array_equal(a, b, err_msg="an input was written to")
    assert len(fused) == len(composed)
    for got, want in zip(fused, composed, strict=True):
        assert (got is None) == (want is None)
        if got is not None:
            assert got.dtype == want.dtype and got.shape == want.shape
            np.testing.assert_array_equal(got, want)
    return list(fused)


DTYPES = [np.float32, np.float64]
# float16 and mixed dtypes take the composed fallback; they must still agree.
FALLBACK_DTYPES = [np.float16]


@pytest.mark.parametrize("dtype", DTYPES + FALLBACK_DTYPES)
@pytest.mark.parametrize("weight_decay", [0.0, 0.05])
@pytest.mark.parametrize("decoupled", [False, True])
@pytest.mark.parametrize("amsgrad", [False, True])
def test_adam_step_equals_composed(dtype: Any, weight_decay: float, decoupled: bool,
                                   amsgrad: bool) -> None:
    param, grad, _, _, grad2, _ = _arrays(dtype, 6, 1)
    options = dict(lr=0.01, beta1=0.9, beta2=0.99, eps=1e-8, weight_decay=weight_decay,
                   decoupled=decoupled, amsgrad=amsgrad)
    new, exp_avg, exp_avg_sq, peak = _check_fused(
        "adam_step", [param, grad, None, None, None], {**options, "step": 1})
    assert (peak is not None) == amsgrad
    # Later steps read every buffer; shrink exp_avg_sq somewhere so the AMSGrad max matters.
    exp_avg_sq = exp_avg_sq * np.array([0.1, 10.0] * 17 + [1.0], dtype=dtype).reshape(SHAPE)
    for step in (2, 3):
        new, exp_avg, exp_avg_sq, peak = _check_fused(
            "adam_step", [new, grad2, exp_avg, exp_avg_sq, peak], {**options, "step": step})


def test_adam_step_first_step_with_one_buffer_missing_restarts_both() -> None:
    param, grad, exp_avg, _ = _arrays(np.float32, 4, 2)
    options = dict(step=4, lr=0.01, beta1=0.9, beta2=0.999, eps=1e-8)
    fresh = _check_fused("adam_step", [param, grad, None, None, None], options)
    half = _check_fused("adam_step", [param, grad, exp_avg, None, None], options)
    for a, b in zip(fresh[:3], half[:3], strict=True):
        np.testing.assert_array_equal(a, b)


def test_adam_step_amsgrad_keeps_nan_like_torch_maximum() -> None:
    param, grad, exp_avg, exp_avg_sq, peak = _arrays(np.float64, 5, 3)
    peak[0, 0] = np.nan
    exp_avg_sq[1, 1] = np.nan
    options = dict(step=3, lr=0.01, beta1=0.9, beta2=0.999, eps=1e-8, amsgrad=True)
    *_, new_peak = _check_fused("adam_step", [param, grad, exp_avg, exp_avg_sq, peak], options)
    assert np.isnan(new_peak[0, 0]) and np.isnan(new_peak[1, 1])
    want = torch.maximum(torch.from_numpy(peak),
                         torch.from_numpy(exp_avg_sq * 0.999 + grad * grad * 0.001))
    np.testing.assert_array_equal(new_peak, want.numpy())


@pytest.mark.parametrize("dtype", DTYPES + FALLBACK_DTYPES)
@pytest.mark.parametrize(("momentum", "dampening", "nesterov"),
                         [(0.0, 0.0, False), (0.9, 0.0, False), (0.8, 0.3, False),
                          (0.9, 0.0, True)])
@pytest.mark.parametrize("weight_decay", [0.0, 0.01])
def test_sgd_step_equals_composed(dtype: Any, momentum: float, dampening: float,
                                  nesterov: bool, weight_decay: float) -> None:
    param, grad, grad2, grad3 = _arrays(dtype, 4, 4)
    options = dict(lr=0.05, momentum=momentum, dampening=dampening,
                   weight_decay=weight_decay, nesterov=nesterov)
    new, buf = _check_fused("sgd_step", [param, grad, None], options)
    assert (buf is not None) == bool(momentum)
    # The first buffer may be the gradient itself: the next steps must leave it alone.
    for g in (grad2, grad3):
        new, buf = _check_fused("sgd_step", [new, g, buf], options)


@pytest.mark.parametrize("dtype", DTYPES + FALLBACK_DTYPES)
@pytest.mark.parametrize("centered", [False, True])
@pytest.mark.parametrize("momentum", [0.0, 0.5])
@pytest.mark.parametrize("weight_decay", [0.0, 0.05])
def test_rmsprop_step_equals_composed(dtype: Any, centered: bool, momentum: float,
                                      weight_decay: float) -> None:
    param, grad, grad2, grad3 = _arrays(dtype, 4, 5)
    options = dict(lr=0.01, alpha=0.9, eps=1e-8, weight_decay=weight_decay, momentum=momentum,
                   centered=centered)
    state: list[Any] = [None, None, None]
    new = param
    for g in (grad, grad2, grad3):
        new, *state = _check_fused("rmsprop_step", [new, g, *state], options)
        assert (state[1] is not None) == centered and (state[2] is not None) == bool(momentum)


def test_mixed_dtypes_fall_back_to_the_composed_default() -> None:
    param, grad = _arrays(np.float32, 2, 6)
    exp_avg, exp_avg_sq = _arrays(np.float64, 2, 7)
    options = dict(step=2, lr=0.01, beta1=0.9, beta2=0.999, eps=1e-8)
    new, *_ = _check_fused("adam_step", [param, grad, exp_avg, exp_avg_sq, None], options)
    assert new.dtype == np.float64  # as the composed default promotes
    new, _ = _check_fused("sgd_step", [param, grad, exp_avg],
                          dict(lr=0.1, momentum=0.9))
    assert new.dtype == np.float64


def test_fused_results_are_fresh_arrays() -> None:
    param, grad, exp_avg, exp_avg_sq = _arrays(np.float32, 4, 8)
    out = CpuBackend.adam_step(param, grad, exp_avg, exp_avg_sq, None, step=2, lr=0.1,
                               beta1=0.9, beta2=0.999, eps=1e-8)
    for a in out[:3]:
        for b in (param, grad, exp_avg, exp_avg_sq):
            assert not np.shares_memory(a, b)
    new, buf = CpuBackend.sgd_step(param, grad, exp_avg, lr=0.1, momentum=0.9, nesterov=True)
    assert not any(np.shares_memory(a, b) for a in (new, buf) for b in (param, grad, exp_avg))


# ---- decorators and backends without an override ------------------------------------------------
def test_autodiff_composes_the_update_from_its_own_float_ops() -> None:
    ad = Autodiff(CpuBackend)
    assert ad.adam_step.__func__ is OptimOps.adam_step.__func__  # not forwarded to CpuBackend
    arrays = _arrays(np.float64, 5, 9)
    p = Tensor.from_data(arrays[0], backend=ad).require_grad()
    options = dict(step=2, lr=0.1, beta1=0.9, beta2=0.999, eps=1e-8, weight_decay=0.1,
                   amsgrad=True)
    got = ad.adam_step(p.primitive, *[ad.from_inner(a) for a in arrays[1:]], **options)
    assert got[0].node is not None  # recorded: the update is differentiable in the parameter
    want = CpuBackend.adam_step(*arrays, **options)
    for a, b in zip(got, want, strict=True):
        np.testing.assert_array_equal(ad.inner(a), b)


def _train(backend: type[bp.Backend], make: Callable[[], optim.Optimizer], dtype: bp.DType,
           steps: int = 3) -> list[np.ndarray]:
    """A few steps of ``make()`` on a small linear layer; the final weights."""
    ad = Autodiff(backend)
    layer = nn.Linear(4, 3, backend=ad, dtype=dtype)
    layer.load_state_dict({"weight": np.linspace(-1, 1, 12).reshape(3, 4).astype(dtype.numpy),
                           "bias": np.array([0.1, -0.2, 0.3], dtype=dtype.numpy)})
    opt = make()
    for i in range(steps):
        x = np.random.default_rng(i).standard_normal((6, 4))
        y = np.random.default_rng(50 + i).standard_normal((6, 3))
        loss = F.mse_loss(layer(Tensor.from_data(x, backend=ad, dtype=dtype)),
                          Tensor.from_data(y, backend=ad, dtype=dtype))
        opt.step(layer, loss.backward())
    return [layer.weight.to_numpy(), layer.bias.to_numpy()]


OPTIMIZERS: list[Callable[[], optim.Optimizer]] = [
    lambda: optim.SGD(lr=0.1),
    lambda: optim.SGD(lr=0.05, momentum=0.9, nesterov=True, weight_decay=0.01),
    lambda: optim.Adam(lr=0.02, weight_decay=0.1, amsgrad=True),
    lambda: optim.AdamW(lr=0.01, weight_decay=0.1, amsgrad=True),
    lambda: optim.RMSprop(lr=0.01, weight_decay=0.05, momentum=0.5, centered=True),
]


@pytest.mark.parametrize("make", OPTIMIZERS)
def test_wgpu_steps_with_the_composed_default(make: Callable[[], optim.Optimizer]) -> None:
    assert "adam_step" not in vars(WgpuBackend)
    got = _train(WgpuBackend, make, bp.float32)
    want = _train(CpuBackend, make, bp.float32)
    for a, b in zip(got, want, strict=True):
        np.testing.assert_allclose(a, b, rtol=1e-5, atol=1e-6)


@pytest.mark.parametrize(("opt", "keys"), [
    (optim.SGD(lr=0.1), set()),
    (optim.SGD(lr=0.1, momentum=0.9), {"momentum_buffer"}),
    (optim.Adam(), {"exp_avg", "exp_avg_sq"}),
    (optim.AdamW(amsgrad=True), {"exp_avg", "exp_avg_sq", "max_exp_avg_sq"}),
    (optim.RMSprop(), {"square_avg"}),
    (optim.RMSprop(momentum=0.5, centered=True), {"square_avg", "grad_avg", "momentum_buffer"}),
])
def test_optimizers_keep_only_the_buffers_they_use(opt: optim.Optimizer, keys: set[str]) -> None:
    _train(CpuBackend, lambda: opt, bp.float32, steps=2)
    saved = opt.state_dict()  # parameters by position: 0 is the weight, 1 the bias
    assert saved["steps"] == {"0": 2, "1": 2}
    assert {key: set(state) for key, state in saved["state"].items()} == (
        {"0": keys, "1": keys} if keys else {})
    for state in opt.state.values():
        for t in state.values():
            assert t.backend is CpuBackend and t.shape in ((3, 4), (3,))


# ---- torch parity of both paths -----------------------------------------------------------------
TORCH_CASES: list[tuple[Callable[[], optim.Optimizer], Callable[[Any], torch.optim.Optimizer]]] = [
    (lambda: optim.SGD(lr=0.05, momentum=0.9, nesterov=True),
     lambda p: torch.optim.SGD(p, lr=0.05, momentum=0.9, nesterov=True)),
    (lambda: optim.SGD(lr=0.05, momentum=0.8, dampening=0.3, weight_decay=0.02),
     lambda p: torch.optim.SGD(p, lr=0.05, momentum=0.8, dampening=0.3, weight_decay=0.02)),
    (lambda: optim.Adam(lr=0.02, betas=(0.8, 0.99), amsgrad=True),
     lambda p: torch.optim.Adam(p, lr=0.02, betas=(0.8, 0.99), amsgrad=True)),
    (lambda: optim.AdamW(lr=0.01, weight_decay=0.1, amsgrad=True),
     lambda p: torch.optim.AdamW(p, lr=0.01, weight_decay=0.1, amsgrad=True)),
    (lambda: optim.RMSprop(lr=0.01, alpha=0.9, centered=True),
     lambda p: torch.optim.RMSprop(p, lr=0.01, alpha=0.9, centered=True)),
    (lambda: optim.RMSprop(lr=0.01, weight_decay=0.05, momentum=0.5),
     lambda p: torch.optim.RMSprop(p, lr=0.01, weight_decay=0.05, momentum=0.5)),
]


@pytest.mark.parametrize("backend", [CpuBackend, ComposedCpu])
@pytest.mark.parametrize(("make", "make_torch"), TORCH_CASES)
def test_twenty_steps_match_torch(backend: type[bp.Backend], make: Callable[[], optim.Optimizer],
                                  make_torch: Callable[[Any], torch.optim.Optimizer]) -> None:
    ours = _train(backend, make, bp.float64, steps=20)
    ref = torch.nn.Linear(4, 3).double()
    with torch.no_grad():
        ref.weight.copy_(torch.from_numpy(np.linspace(-1, 1, 12).reshape(3, 4)))
        ref.bias.copy_(torch.tensor([0.1, -0.2, 0.3]))
    ref_opt = make_torch(ref.parameters())
    for i in range(20):
        x = torch.from_numpy(np.random.default_rng(i).standard_normal((6, 4)))
        y = torch.from_numpy(np.random.default_rng(50 + i).standard_normal((6, 3)))
        ref_opt.zero_grad()
        torch.nn.functional.mse_loss(ref(x), y).backward()
        ref_opt.step()
    for a, b in zip(ours, (ref.weight, ref.bias), strict=True):
        np.testing.assert_allclose(a, b.detach().numpy(), rtol=1e-6, atol=1e-12)


# ---- Adam over many parameters at once ----------------------------------------------------------
class _PerParameterAdam(optim.Adam):
    """Adam with the grouped path switched off: one ``update`` per parameter."""

    def update_many(self, keys: list[Tensor], params: list[Tensor], grads: list[Tensor],
                    group: Mapping[str, Any]) -> list[Tensor]:
        return [self.update(k, p, g, group) for k, p, g in zip(keys, params, grads,
                                                               strict=True)]


class _TwoLayers(nn.Module):
    def __init__(self, backend: Any) -> None:
        self.first = nn.Linear(4, 3, backend=backend)
        self.second = nn.Linear(3, 2, backend=backend)


@pytest.mark.parametrize("backend", [CpuBackend, WgpuBackend], ids=["cpu", "wgpu"])
@pytest.mark.parametrize("kwargs", [{}, {"weight_decay": 0.1, "amsgrad": True}])
def test_grouped_adam_equals_one_update_per_parameter(backend: Any,
                                                      kwargs: dict[str, Any]) -> None:
    """Concatenating alike parameters into one adam_step changes no value or state, also when
    a parameter skips steps (its step count, and so its group, differs)."""
    ad = Autodiff(backend)
    results = []
    for cls in (optim.Adam, _PerParameterAdam):
        backend.seed(backend.default_device(), 3)
        model, opt = _TwoLayers(ad), cls(lr=0.05, **kwargs)
        rng = np.random.default_rng(0)
        for step in range(4):
            x = Tensor.from_data(rng.standard_normal((6, 4)).astype(np.float32), backend=ad)
            hidden = model.first(x).relu()
            # Every other step the second layer's bias gets no gradient.
            out = hidden @ model.second.weight.swap_dims(0, 1) if step % 2 else model.second(hidden)
            opt.step(model, out.square().sum().backward())
        results.append((model.state_dict(), opt.state_dict()))
    (params, state), (want_params, want_state) = results
    assert state["steps"] == want_state["steps"] and state["steps"]["3"] == 2  # second.bias
    for name, value in want_params.items():
        np.testing.assert_array_equal(params[name].to_numpy(), value.to_numpy(), err_msg=name)
    for name, buffers in want_state["state"].items():
        for key, value in buffers.items():
            np.testing.assert_array_equal(state["state"][name][key].to_numpy(),
                                          value.to_numpy(), err_msg=f"{name}.{key}")
