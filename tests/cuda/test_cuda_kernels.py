"""CudaBackend's fused kernels against CpuBackend on copies of the same data (needs a GPU).

Every kernel op runs on CuPy arrays and is compared with the same CpuBackend op on the NumPy
originals: activations and their backward helpers, softmax and log_softmax (also through the
shared path along other dims), cross entropy and its backward, layer norm and its backward,
and the Adam step (bit for bit with the composed default). A small MLP's loss, gradients and
Adam update through ``Autodiff(CudaBackend)`` must match ``Autodiff(CpuBackend)``.
"""

from __future__ import annotations

from typing import Any

import numpy as np
import pytest

from burnpy_cuda import CudaBackend, cuda_available, unavailable_reason

if not cuda_available():
    pytest.skip(f"needs CuPy and a CUDA GPU: {unavailable_reason()}", allow_module_level=True)

import cupy
from cuda_kernel_cases import (
    ADAM_CONFIGS,
    KERNEL_DTYPES,
    adam_run,
    edge_values,
    layer_norm_cases,
    row_cases,
)

import burnpy.nn.functional as F
from burnpy import Tensor, optim
from burnpy.autodiff import Autodiff
from burnpy.backend.ops.optim_ops import OptimOps
from burnpy.nn import LayerNorm, Linear, Module
from burnpy_cpu import CpuBackend

#: Relative tolerance per dtype: the device's math library differs from NumPy's and SciPy's
#: by a few units in the last place (float16 results are rounded from float32 on both).
RTOL = {"float16": 2e-3, "float32": 2e-5, "float64": 1e-12}


def on_gpu(*arrays: np.ndarray) -> list[Any]:
    return [cupy.asarray(a) for a in arrays]


def assert_matches(got: Any, want: np.ndarray, dtype: str, scale: float = 1.0) -> None:
    """``got`` (a CuPy array) equals ``want`` up to ``scale`` times the dtype's tolerance,
    relative, or absolute near zero (gradients cross zero); NaN where NaN, infinities equal."""
    assert isinstance(got, cupy.ndarray)
    host = got.get()
    assert host.dtype == want.dtype == np.dtype(dtype) and host.shape == want.shape
    tol = RTOL[dtype] * scale
    np.testing.assert_allclose(host.astype(np.float64), want.astype(np.float64), rtol=tol,
                               atol=tol)


UNARY = [("relu", ()), ("leaky_relu", (0.01,)), ("leaky_relu", (0.0,)), ("leaky_relu", (1.5,)),
         ("gelu", ("none",)), ("gelu", ("tanh",)), ("sigmoid", ()), ("log_sigmoid", ()),
         ("silu", ()), ("softplus", (1.0,)), ("softplus", (2.5,)), ("softplus", (0.3,))]


@pytest.mark.parametrize("dtype", KERNEL_DTYPES)
@pytest.mark.parametrize(("op", "extra"), UNARY, ids=[f"{op}{extra}" for op, extra in UNARY])
def test_activations_match_cpu(dtype: str, op: str, extra: tuple[Any, ...]) -> None:
    x = edge_values(dtype, (67, 129))
    [gx] = on_gpu(x)
    assert_matches(getattr(CudaBackend, op)(gx, *extra), getattr(CpuBackend, op)(x, *extra),
                   dtype, scale=4)
    np.testing.assert_array_equal(gx.get(), x)  # inputs are never written


BACKWARD = [("relu_backward", "relu", ()), ("gelu_backward", None, ("none",)),
            ("gelu_backward", None, ("tanh",)), ("sigmoid_backward", "sigmoid", ()),
            ("log_sigmoid_backward", None, ())]


@pytest.mark.parametrize("dtype", KERNEL_DTYPES)
@pytest.mark.parametrize(("op", "forward", "extra"), BACKWARD,
                         ids=[f"{op}{extra}" for op, _, extra in BACKWARD])
def test_backward_helpers_match_cpu(dtype: str, op: str, forward: str | None,
                                    extra: tuple[Any, ...]) -> None:
    """Given the forward's output (relu, sigmoid) or its input, and a gradient with its own
    non-finite values (relu_backward keeps a NaN output's gradient, zeroes an inf one where
    the output is not positive)."""
    x = edge_values(dtype, (67, 129))
    first = x if forward is None else getattr(CpuBackend, forward)(x)
    grad = np.roll(edge_values(dtype, (67, 129), seed=1), 3)
    want = getattr(CpuBackend, op)(first, grad, *extra)
    assert_matches(getattr(CudaBackend, op)(*on_gpu(first, grad), *extra), want, dtype, scale=8)


def test_non_contiguous_and_broadcast_inputs() -> None:
    x = edge_values("float32", (40, 30))
    grad = edge_values("float32", (30,), seed=2)
    gx, ggrad = on_gpu(x, grad)
    assert_matches(CudaBackend.gelu(gx.T), CpuBackend.gelu(x.T), "float32", scale=4)
    want = CpuBackend.gelu_backward(x, np.broadcast_to(grad, x.shape))
    assert_matches(CudaBackend.gelu_backward(gx, cupy.broadcast_to(ggrad, gx.shape)), want,
                   "float32", scale=8)


@pytest.mark.parametrize("dtype", KERNEL_DTYPES)
@pytest.mark.parametrize("log", [False, True])
@pytest.mark.parametrize("c", [1, 5, 37, 1024, 5000])
def test_softmax_rows_match_cpu(dtype: str, log: bool, c: int) -> None:
    """Row lengths below a warp, odd, one full block and several elements per thread; NaN,
    +-inf and all -inf rows."""
    x = row_cases(dtype, c)
    op = "log_softmax" if log else "softmax"
    [gx] = on_gpu(x)
    assert_matches(getattr(CudaBackend, op)(gx, 1), getattr(CpuBackend, op)(x, 1), dtype,
                   scale=8)


@pytest.mark.parametrize("log", [False, True])
def test_softmax_along_other_dims_and_layouts(log: bool) -> None:
    x = edge_values("float64", (6, 7, 9))
    op = "log_softmax" if log else "softmax"
    [gx] = on_gpu(x)
    for dim in (0, 1, 2, -1):
        assert_matches(getattr(CudaBackend, op)(gx, dim), getattr(CpuBackend, op)(x, dim),
                       "float64", scale=8)
    t = np.ascontiguousarray(x.transpose(2, 0, 1)).transpose(1, 2, 0)  # not C-contiguous
    assert_matches(getattr(CudaBackend, op)(cupy.asarray(t), 2), getattr(CpuBackend, op)(t, 2),
                   "float64", scale=8)


@pytest.mark.parametrize("dtype", KERNEL_DTYPES)
@pytest.mark.parametrize("ignore_index", [-100, 2])
@pytest.mark.parametrize("c", [37, 3000])
def test_cross_entropy_matches_cpu(dtype: str, ignore_index: int, c: int) -> None:
    """Ignored rows (one holding NaN, kept NaN by the CPU's ``loss * 0``), a target of -1
    (the last class, as NumPy indexing wraps it) and an int32 target."""
    x = row_cases(dtype, c)
    target = np.array([3, ignore_index, 2, 0, 5, ignore_index, c - 1, -1], dtype=np.int64)
    grad = np.linspace(-2, 3, 8).astype(dtype)
    gx, gtarget, ggrad = on_gpu(x, target, grad)
    want = CpuBackend.cross_entropy(x, target, ignore_index)
    assert_matches(CudaBackend.cross_entropy(gx, gtarget, ignore_index), want, dtype, scale=8)
    assert_matches(CudaBackend.cross_entropy(gx, gtarget.astype(np.int32), ignore_index), want,
                   dtype, scale=8)
    want = CpuBackend.cross_entropy_backward(x, target, ignore_index, grad)
    assert_matches(CudaBackend.cross_entropy_backward(gx, gtarget, ignore_index, ggrad), want,
                   dtype, scale=8)


def test_cross_entropy_out_of_range_target_gives_nan_rows() -> None:
    """NumPy raises IndexError; the kernel cannot raise, so the row is NaN (nothing is read
    outside it)."""
    gx = cupy.zeros((3, 4), cupy.float32)
    target = cupy.asarray([4, -5, 1])
    loss = CudaBackend.cross_entropy(gx, target, -100).get()
    np.testing.assert_allclose(loss, [np.nan, np.nan, np.log(4)], rtol=1e-6)
    dx = CudaBackend.cross_entropy_backward(gx, target, -100, cupy.ones(3, cupy.float32)).get()
    assert np.isnan(dx[:2]).all() and np.isfinite(dx[2]).all()


@pytest.mark.parametrize("dtype", KERNEL_DTYPES)
@pytest.mark.parametrize("c", [1, 5, 37, 1024, 5000])
@pytest.mark.parametrize(("has_weight", "has_bias"), [(True, True), (True, False),
                                                      (False, False)])
def test_layer_norm_rows_match_cpu(dtype: str, c: int, has_weight: bool,
                                   has_bias: bool) -> None:
    """Row lengths below a warp, odd, one full block and several values per thread; NaN and
    infinite rows, a constant row and one whose mean is 300 times its spread (float32 rounds
    that mean to a few units of the spread's tolerance, hence the scale). No input is written;
    the NaN rows make the weight's gradient NaN, which the next test covers."""
    x, weight, bias, grad = layer_norm_cases(dtype, c)
    w = weight if has_weight else None
    b = bias if has_bias else None
    gx, ggrad = on_gpu(x, grad)
    gw, gb = (None if a is None else cupy.asarray(a) for a in (w, b))
    assert_matches(CudaBackend.layer_norm(gx, 1, gw, gb, 1e-5),
                   CpuBackend.layer_norm(x, 1, w, b, 1e-5), dtype, scale=8)
    got = CudaBackend.layer_norm_backward(gx, 1, gw, ggrad, 1e-5)
    want = CpuBackend.layer_norm_backward(x, 1, w, grad, 1e-5)
    for g, expected in zip(got, want, strict=True):
        assert_matches(g, expected, dtype, scale=8)
    np.testing.assert_array_equal(gx.get(), x)
    np.testing.assert_array_equal(ggrad.get(), grad)


@pytest.mark.parametrize("dtype", KERNEL_DTYPES)
def test_layer_norm_over_trailing_dims_and_layouts(dtype: str) -> None:
    """Two normalized dims of a 4-d input, C-contiguous and not, with a non-contiguous weight;
    finite values, so the weight's and bias's gradients (column sums) are compared too. Empty
    inputs take the shared op."""
    rng = np.random.default_rng(8)
    x = (rng.standard_normal((3, 5, 6, 7)) * 2 + 1).astype(dtype)
    grad = rng.standard_normal(x.shape).astype(dtype)
    weight = (rng.standard_normal((6, 7)) + 1).astype(dtype)
    bias = rng.standard_normal((6, 7)).astype(dtype)
    gx, ggrad, gbias = on_gpu(x, grad, bias)
    gweight = cupy.asarray(np.ascontiguousarray(weight.T)).T  # a view, not C-contiguous
    strided = cupy.ascontiguousarray(gx.transpose(0, 1, 3, 2)).transpose(0, 1, 3, 2)
    assert not (strided.flags.c_contiguous or gweight.flags.c_contiguous)
    want = [CpuBackend.layer_norm(x, 2, weight, bias, 1e-5),
            *CpuBackend.layer_norm_backward(x, 2, weight, grad, 1e-5)]
    for inp in (gx, strided):
        got = [CudaBackend.layer_norm(inp, 2, gweight, gbias, 1e-5),
               *CudaBackend.layer_norm_backward(inp, 2, gweight, ggrad, 1e-5)]
        for g, expected in zip(got, want, strict=True):
            assert_matches(g, expected, dtype, scale=8)
    empty = cupy.zeros((3, 0), dtype)
    assert CudaBackend.layer_norm(empty, 1, None, None, 1e-5).shape == (3, 0)
    assert [g.shape for g in CudaBackend.layer_norm_backward(empty, 1, None, empty, 1e-5)] == [
        (3, 0), (0,), (0,)]


@pytest.mark.parametrize("dtype", KERNEL_DTYPES)
@pytest.mark.parametrize("config", ADAM_CONFIGS)
def test_adam_step_equals_the_composed_default_bit_for_bit(dtype: str,
                                                           config: dict[str, Any]) -> None:
    """Three steps from no state; no input is written."""
    param, grads = adam_run(dtype)
    hyper = dict(lr=0.01, beta1=0.9, beta2=0.999, eps=1e-8, **config)
    ours: list[Any] = [cupy.asarray(param), None, None, None]
    theirs: list[Any] = [param, None, None, None]
    for step, grad in enumerate(grads, start=1):
        want = OptimOps.adam_step.__func__(CpuBackend, theirs[0], grad, *theirs[1:],
                                           step=step, **hyper)
        before = [None if a is None else a.copy() for a in ours]
        got = CudaBackend.adam_step(ours[0], cupy.asarray(grad), *ours[1:], step=step, **hyper)
        for a, b in zip(ours, before, strict=True):
            if a is not None:
                np.testing.assert_array_equal(a.get(), b.get())
        for g, w in zip(got, want, strict=True):
            assert (g is None) == (w is None)
            if g is not None:
                assert g.dtype == w.dtype
                np.testing.assert_array_equal(g.get(), w)
        ours, theirs = list(got), list(want)


class SmallMLP(Module):
    """Every fused activation on the way (gelu, silu, relu, sigmoid and leaky_relu) and a
    layer norm."""

    def __init__(self, backend: Any, dtype: str) -> None:
        self.fc1 = Linear(24, 64, backend=backend, dtype=dtype)
        self.fc2 = Linear(64, 64, backend=backend, dtype=dtype)
        self.norm = LayerNorm(64, backend=backend, dtype=dtype)
        self.fc3 = Linear(64, 10, backend=backend, dtype=dtype)

    def forward(self, x: Tensor) -> Tensor:
        h = F.gelu(self.fc1(x), "tanh") + F.silu(self.fc1(x)) * 0.5
        h = F.relu(self.fc2(h)) + F.sigmoid(h) - F.leaky_relu(h, 0.1) * 0.25
        return self.fc3(F.gelu(self.norm(h)))


@pytest.mark.parametrize("dtype", ["float32", "float64"])
def test_mlp_training_step_matches_the_cpu_backend(dtype: str) -> None:
    """Two Adam steps on cross entropy (with an ignored sample) plus a softmax term: loss,
    every gradient and every updated parameter."""
    cpu, gpu = Autodiff(CpuBackend), Autodiff(CudaBackend)
    CpuBackend.seed(CpuBackend.default_device(), 0)
    models = {cpu: SmallMLP(cpu, dtype), gpu: SmallMLP(gpu, dtype)}
    models[gpu].load_state_dict({k: v.to_numpy() for k, v in models[cpu].state_dict().items()})
    # eps well above float32 rounding: Adam's first update is about lr * sign(grad), which a
    # near-zero gradient's rounding would flip; with this eps the update is smooth in grad.
    opts = {b: optim.Adam(lr=1e-2, eps=1e-3, weight_decay=1e-3, amsgrad=True) for b in models}
    rng = np.random.default_rng(0)
    x = rng.standard_normal((32, 24)).astype(dtype)
    y = rng.integers(0, 10, 32)
    y[3] = -100
    tol = 1e-4 if dtype == "float32" else 1e-10
    for _ in range(2):
        results = {}
        for b, model in models.items():
            logits = model(Tensor.from_data(x, backend=b))
            loss = (F.cross_entropy(logits, Tensor.from_data(y, backend=b))
                    + logits.softmax(1).square().mean() + logits.log_softmax(1).mean() * 0.1)
            grads = loss.backward()
            results[b] = (loss.item(), {k: p.grad(grads).to_numpy()
                                         for k, p in model.named_parameters()})
            opts[b].step(model, grads)
        (cpu_loss, cpu_grads), (gpu_loss, gpu_grads) = results[cpu], results[gpu]
        np.testing.assert_allclose(gpu_loss, cpu_loss, rtol=tol)
        for k, g in cpu_grads.items():
            np.testing.assert_allclose(gpu_grads[k], g, rtol=tol * 10, atol=tol, err_msg=k)
        for (k, p_cpu), (_, p_gpu) in zip(models[cpu].named_parameters(),
                                          models[gpu].named_parameters(), strict=True):
            np.testing.assert_allclose(p_gpu.to_numpy(), p_cpu.to_numpy(), rtol=tol * 10,
                                       atol=tol, err_msg=k)
