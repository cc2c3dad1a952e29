"""Quantization-aware training: fake_quantize trains through a straight-through estimator."""

from __future__ import annotations

import numpy as np
from sklearn.datasets import load_digits

import burnpy as bp
from burnpy import Tensor
from burnpy.autodiff import Autodiff
from burnpy_cpu import CpuBackend

B = Autodiff(CpuBackend)
INT8 = bp.QuantScheme.int8(block_size=16)


def test_fake_quantize_forward_rounds_and_backward_is_identity() -> None:
    x = Tensor.from_data(np.linspace(-1, 1, 32, dtype=np.float64).reshape(2, 16),
                         backend=B).require_grad()
    y = x.fake_quantize(INT8)
    np.testing.assert_array_equal(y.to_numpy(), x.inner().quantize(INT8).dequantize().to_numpy())
    assert not np.array_equal(y.to_numpy(), x.to_numpy())
    weights = Tensor.from_data(np.arange(32.0).reshape(2, 16), backend=B)
    grads = (y * weights).sum().backward()
    np.testing.assert_array_equal(x.grad(grads).to_numpy(), weights.to_numpy())


def _logits(x: Tensor, w1: Tensor, w2: Tensor, fake_quantized: bool) -> Tensor:
    if fake_quantized:  # weights [in, out] are quantized in blocks along "in", as at inference
        w1, w2 = w1.T.fake_quantize(INT8).T, w2.T.fake_quantize(INT8).T
    return (x @ w1).relu() @ w2


def _train(quantized: bool, data: tuple[np.ndarray, ...], epochs: int = 60) -> float:
    """A 64-64-10 MLP trained full-batch with SGD (fake-quantized weights when ``quantized``);
    returns the test accuracy, with real int8 weights for the quantized model."""
    x_train, y_train, x_test, y_test = data
    rng = np.random.default_rng(0)
    w1 = Tensor.from_data(rng.standard_normal((64, 64)) * 0.1, backend=B).require_grad()
    w2 = Tensor.from_data(rng.standard_normal((64, 10)) * 0.1, backend=B).require_grad()
    xs = Tensor.from_data(x_train, backend=B)
    onehot = Tensor.from_data(np.eye(10)[y_train], backend=B)
    for _ in range(epochs):
        loss = -(_logits(xs, w1, w2, quantized).log_softmax(1) * onehot).sum(1).mean()
        grads = loss.backward()
        w1 = Tensor.from_inner(w1.inner() - w1.grad(grads) * 0.5, backend=B).require_grad()
        w2 = Tensor.from_inner(w2.inner() - w2.grad(grads) * 0.5, backend=B).require_grad()
    a, b = w1.inner(), w2.inner()
    if quantized:
        a, b = a.T.quantize(INT8).T.dequantize(), b.T.quantize(INT8).T.dequantize()
    pred = _logits(Tensor.from_data(x_test), a, b, False).argmax(1).to_numpy()
    return float((pred == y_test).mean())


def test_qat_mlp_matches_float_accuracy_on_digits() -> None:
    digits = load_digits()
    x = digits.data / 16.0
    order = np.random.default_rng(0).permutation(len(x))
    split = int(0.8 * len(x))
    train, test = order[:split], order[split:]
    data = (x[train], digits.target[train], x[test], digits.target[test])
    float_acc = _train(False, data)
    qat_acc = _train(True, data)
    assert float_acc > 0.9
    assert qat_acc >= float_acc - 0.01, (qat_acc, float_acc)
