"""Activations on WebGPU as fused kernels: one elementwise dispatch each (instead of the
protocol's chain of ops), in their well-conditioned forms (sigmoid split by sign, gelu through
erfc); softmax and log-softmax are a max, a fused exp, a sum and a fused normalization, with
f32 intermediates for f16 inputs."""

from __future__ import annotations

from typing import Literal

import numpy as np

from burnpy_wgpu.kernels import reduce
from burnpy_wgpu.kernels.elementwise import launch_map
from burnpy_wgpu.runtime import f32_bits
from burnpy_wgpu.tensor import WgpuTensor

T = WgpuTensor
GeluApproximate = Literal["none", "tanh"]
F32 = np.dtype(np.float32)


def _map(expr: str, inputs: list[T], params: tuple[float, ...] = (),
         funcs: tuple[str, ...] = ()) -> T:
    return launch_map(inputs[0].runtime, expr, inputs, inputs[0].dtype,
                      [f32_bits(p) for p in params], funcs=funcs)


class WgpuActivationOps:
    """Fused activations and their backward kernels."""

    @staticmethod
    def relu(x: T) -> T:
        return _map("select(max(a, 0.0), a, is_nan(a))", [x])

    @staticmethod
    def relu_backward(output: T, grad: T) -> T:
        return _map("select(b, 0.0, a <= 0.0)", [output, grad])

    @staticmethod
    def leaky_relu(x: T, negative_slope: float) -> T:
        return _map("select(a, a * mf(1u), a < 0.0)", [x], (negative_slope,))

    @staticmethod
    def gelu(x: T, approximate: GeluApproximate = "none") -> T:
        if approximate == "tanh":
            return _map("a * sigmoid_acc(1.5957691 * (a + 0.044715 * a * a * a))", [x],
                        funcs=("sigmoid_acc",))
        return _map("0.5 * a * erfc_acc(a * -0.70710678)", [x], funcs=("erf_acc",))

    @staticmethod
    def gelu_backward(x: T, grad: T, approximate: GeluApproximate = "none") -> T:
        if approximate == "tanh":
            return _map("b * gelu_tanh_grad(a)", [x, grad], funcs=("gelu_tanh_grad",))
        return _map("b * gelu_grad(a)", [x, grad], funcs=("gelu_grad",))

    @staticmethod
    def sigmoid(x: T) -> T:
        return _map("sigmoid_acc(a)", [x], funcs=("sigmoid_acc",))

    @staticmethod
    def sigmoid_backward(output: T, grad: T) -> T:
        return _map("b * ((1.0 - a) * a)", [output, grad])

    @staticmethod
    def log_sigmoid(x: T) -> T:
        return _map("min(a, 0.0) - log1p_acc(exp(-abs(a)))", [x], funcs=("log1p_acc",))

    @staticmethod
    def log_sigmoid_backward(x: T, grad: T) -> T:
        return _map("b * sigmoid_acc(-a)", [x, grad], funcs=("sigmoid_acc",))

    @staticmethod
    def silu(x: T) -> T:
        return _map("a * sigmoid_acc(a)", [x], funcs=("sigmoid_acc",))

    @staticmethod
    def hard_sigmoid(x: T, alpha: float, beta: float) -> T:
        return _map("select(clamp(a * mf(1u) + mf(2u), 0.0, 1.0), a, is_nan(a))", [x],
                    (alpha, beta))

    @staticmethod
    def softplus(x: T, beta: float = 1.0) -> T:
        if beta == 1.0:
            return _map("softplus_acc(a)", [x], funcs=("softplus_acc",))
        return _map("softplus_acc(a * mf(1u)) / mf(1u)", [x], (beta,), ("softplus_acc",))

    @staticmethod
    def softmax(x: T, dim: int) -> T:
        rt = x.runtime
        peak = reduce.reduce_dim(x, dim, "max")
        e = launch_map(rt, "exp(a - b)", [x, peak], F32)
        total = reduce.reduce_dim(e, dim, "sum")
        return launch_map(rt, "a / b", [e, total], x.dtype)

    @staticmethod
    def log_softmax(x: T, dim: int) -> T:
        rt = x.runtime
        peak = reduce.reduce_dim(x, dim, "max")
        total = reduce.reduce_dim(launch_map(rt, "exp(a - b)", [x, peak], F32), dim, "sum")
        return launch_map(rt, "(a - b) - log_acc(c)", [x, peak, total], x.dtype,
                          funcs=("log_acc",))
