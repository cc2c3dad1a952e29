"""``TensorData.nbytes`` (values plus scales) and ``burnpy.quantization.fake_quantize`` as a
function beside the method (issue 15)."""

from __future__ import annotations

import numpy as np

from burnpy import Autodiff, Tensor, TensorData
from burnpy.quantization import QuantParam, QuantScheme, fake_quantize
from burnpy_cpu import CpuBackend


def test_nbytes_of_plain_data() -> None:
    assert Tensor.zeros((3, 4)).into_data().nbytes == 48  # float32
    assert Tensor.zeros((3, 4), dtype="float64").into_data().nbytes == 96
    assert Tensor.zeros((3, 4), dtype="bfloat16").into_data().nbytes == 24
    assert Tensor.arange(5).into_data().nbytes == 40  # int64
    assert TensorData(np.zeros((0, 7), np.float32)).nbytes == 0


def test_nbytes_of_quantized_data_counts_values_and_scales() -> None:
    x = Tensor.from_data(np.linspace(-1.0, 1.0, 2 * 64, dtype=np.float32).reshape(2, 64))
    block = x.quantize(QuantScheme.int8(32)).into_data()
    # 128 int8 values + 2x2 float32 block scales
    assert block.nbytes == 128 + 4 * 4 == 144
    per_tensor = x.quantize(QuantScheme.int8()).into_data()
    assert per_tensor.nbytes == 128 + 4
    two_level = x.quantize(QuantScheme.int8(32, two_level=True, param=QuantParam.BF16))
    # 128 values + 4 bfloat16 block scales + one float32 tensor scale
    assert two_level.into_data().nbytes == 128 + 4 * 2 + 4


def test_fake_quantize_function_is_the_method() -> None:
    b = Autodiff(CpuBackend)
    arr = np.array([[0.013, -0.5, 0.77, 0.25]], np.float32)
    scheme = QuantScheme.int8()
    x = Tensor.from_data(arr, backend=b).require_grad()
    y = fake_quantize(x, scheme)
    np.testing.assert_array_equal(y.to_numpy(), x.fake_quantize(scheme).to_numpy())
    scale = 0.77 / 127  # symmetric int8: the max magnitude maps to 127
    np.testing.assert_allclose(y.to_numpy(), np.round(arr / scale) * scale, rtol=1e-6)
    assert not np.array_equal(y.to_numpy(), arr)
    g = x.grad((y * 2.0).sum().backward())
    assert g is not None and g.tolist() == [[2.0, 2.0, 2.0, 2.0]]  # straight-through
