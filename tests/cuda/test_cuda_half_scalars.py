"""CudaBackend's float16 tensors with Python scalars, and leaky_relu and hard_sigmoid, bit for
bit torch's CPU kernels (needs a GPU; CuPy has no bfloat16, which CudaBackend does not
support).

torch computes them in float32 and rounds once; mul, div and leaky_relu keep the scalar in
float32, add, sub, remainder, pow and the comparisons round it to float16 first (through
float32). CuPy's own rule rounds it to float16 for every op, directly from double: the shared
ops widen to float32 themselves (tests/backend/test_half_scalar_rule.py checks that branch on
the host) and the leaky_relu kernel takes the slope unrounded.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import numpy as np
import pytest

from burnpy_cuda import CudaBackend, cuda_available, unavailable_reason

if not cuda_available():
    pytest.skip(f"needs CuPy and a CUDA GPU: {unavailable_reason()}", allow_module_level=True)

import cupy

from burnpy import Tensor

torch = pytest.importorskip("torch")

#: The last lies just past the tie between 1 and float16's next value: it rounds up from
#: double (CuPy's own rule) and down through float32 (torch's).
SCALARS = [0.1, 0.3, -2.7, 3.3333333, 1e-3, 1 + 2**-11 + 2**-40]
ARITHMETIC = ["add", "sub", "mul", "div", "remainder", "powf"]
COMPARISONS = ["equal", "not_equal", "greater", "greater_equal", "lower", "lower_equal"]
TORCH_OPS: dict[str, Callable[..., Any]] = {
    "add": torch.add, "sub": torch.sub, "mul": torch.mul, "div": torch.div,
    "remainder": torch.remainder, "powf": torch.pow, "equal": torch.eq,
    "not_equal": torch.ne, "greater": torch.gt, "greater_equal": torch.ge,
    "lower": torch.lt, "lower_equal": torch.le}


def _values(scalar: float, positive: bool) -> np.ndarray:
    """Random float16 values, the scalar and its float16 neighbours, and edge values."""
    rng = np.random.default_rng(7)
    near = np.float32(scalar).astype(np.float16)
    x = np.concatenate([rng.standard_normal(4000) * 4.0, [near, near * 3, 0.0, -0.0, np.inf,
                                                          -np.inf, np.nan, 1e4]])
    x = x.astype(np.float16)
    bits = x.view(np.uint16)
    x = np.concatenate([x, (bits[-10:] + 1).view(np.float16), (bits[-10:] - 1).view(np.float16)])
    return np.abs(x) if positive else x


def _bits(values: np.ndarray, zero_sign: bool) -> np.ndarray:
    """float16 bit patterns, every NaN as one pattern; without ``zero_sign`` -0 as +0."""
    bits = np.where(np.isnan(values), 0x7E00, values.view(np.uint16))
    return bits if zero_sign else np.where(bits == 0x8000, 0, bits)


@pytest.mark.parametrize("scalar", SCALARS)
@pytest.mark.parametrize("op", ARITHMETIC)
def test_arithmetic_with_a_scalar_is_torchs(op: str, scalar: float) -> None:
    """Bit for bit (a remainder's -0 may be +0, as NumPy's float32 mod gives on the CPU too);
    pow on magnitudes, where the device's powf and torch's may round a float32 result lying
    within 2^-22 (relative) of a float16 rounding boundary apart."""
    x = _values(scalar, positive=op == "powf")
    got = getattr(CudaBackend, f"float_{op}_scalar")(cupy.asarray(x), scalar).get()
    want = TORCH_OPS[op](torch.from_numpy(x), scalar).numpy()
    assert got.dtype == np.float16
    if op == "powf":
        exponent = float(np.float16(np.float32(scalar)))
        with np.errstate(all="ignore"):
            exact = x.astype(np.float64) ** exponent
            below, above = ((exact * (1 + k * 2.0**-22)).astype(np.float32).astype(np.float16)
                            for k in (-1, 1))
        got = np.where((below != above) & ((got == below) | (got == above)), want, got)
    zero_sign = op != "remainder"
    np.testing.assert_array_equal(_bits(got, zero_sign), _bits(want, zero_sign))


@pytest.mark.parametrize("scalar", SCALARS)
@pytest.mark.parametrize("op", COMPARISONS)
def test_comparison_with_a_scalar_is_torchs(op: str, scalar: float) -> None:
    x = _values(scalar, positive=False)
    got = getattr(CudaBackend, f"float_{op}_elem")(cupy.asarray(x), scalar).get()
    np.testing.assert_array_equal(got, TORCH_OPS[op](torch.from_numpy(x), scalar).numpy())


def test_tensor_arithmetic_with_scalars_is_torchs() -> None:
    """Through the Tensor layer: (x * 0.3 + 0.1) / 0.7 - 2.7."""
    x = _values(0.3, positive=False)
    got = ((Tensor.from_data(x, backend=CudaBackend) * 0.3 + 0.1) / 0.7 - 2.7).to_numpy()
    want = ((torch.from_numpy(x) * 0.3 + 0.1) / 0.7 - 2.7).numpy()
    np.testing.assert_array_equal(_bits(got, True), _bits(want, True))


@pytest.mark.parametrize("slope", [0.01, 0.1, 0.3, 1.7])
def test_leaky_relu_kernel_is_torchs(slope: float) -> None:
    """The fused kernel keeps the slope in float32 and rounds the product once, as torch."""
    x = _values(-1.0, positive=False)
    got = CudaBackend.leaky_relu(cupy.asarray(x), slope).get()
    want = torch.nn.functional.leaky_relu(torch.from_numpy(x), slope).numpy()
    np.testing.assert_array_equal(_bits(got, True), _bits(want, True))


def test_hard_sigmoid_is_torchs() -> None:
    x = _values(3.0, positive=False)
    got = CudaBackend.hard_sigmoid(cupy.asarray(x), 1 / 6, 0.5).get()
    want = torch.nn.functional.hardsigmoid(torch.from_numpy(x)).numpy()
    np.testing.assert_array_equal(_bits(got, True), _bits(want, True))
