"""A float16/bfloat16 tensor with a Python scalar, bit for bit torch's CPU kernels, on both
branches of the shared float ops: NumPy's (CpuBackend) and the one another array module takes
(CuPy for CudaBackend), run here on a thin non-NumPy wrapper around NumPy arrays.

torch computes every one in float32 and rounds once; mul and div keep the scalar in float32,
add, sub, remainder, pow and the comparisons first round it to the tensor's dtype (through
float32). NumPy and CuPy instead round a float16's scalar to float16 for every op (directly
from double), and ml_dtypes compares bfloat16 with the unrounded scalar in float32.
"""

from __future__ import annotations

import operator
from collections.abc import Callable
from typing import Any

import ml_dtypes
import numpy as np
import pytest
import torch

from burnpy_cpu import CpuBackend
from burnpy_cpu.array_ops.activation_ops import ArrayActivationOps
from burnpy_cpu.array_ops.float_ops import ArrayFloatOps

BF16 = np.dtype(ml_dtypes.bfloat16)
F16 = np.dtype(np.float16)
HALVES = [pytest.param(F16, torch.float16, id="float16"),
          pytest.param(BF16, torch.bfloat16, id="bfloat16")]

#: Scalars whose 16-bit rounding changes results; the last lies just past the tie between 1
#: and float16's next value, so it rounds up from double and down through float32.
SCALARS = [0.1, 0.3, -2.7, 3.3333333, 1e-3, 1 + 2**-11 + 2**-40]


class Wrapped:
    """A non-NumPy array: a NumPy array behind the attributes and operators the shared float
    ops use, so that they take the branch a CuPy array takes. Its 16-bit arithmetic with a
    Python scalar is NumPy's (CuPy's) rule; nothing here rounds as torch does."""

    __slots__ = ("array",)

    def __init__(self, array: Any) -> None:
        assert not isinstance(array, Wrapped)
        self.array = np.asarray(array)

    @property
    def dtype(self) -> np.dtype:
        return self.array.dtype

    @property
    def itemsize(self) -> int:
        return self.array.itemsize

    def astype(self, dtype: Any, copy: bool = True) -> Wrapped:
        return Wrapped(self.array.astype(dtype, copy=copy))

    def _apply(self, op: Callable[[Any, Any], Any], other: Any) -> Wrapped:
        assert not isinstance(other, (Wrapped, np.ndarray))  # a Python scalar
        return Wrapped(op(self.array, other))

    def __add__(self, other: Any) -> Wrapped:
        return self._apply(operator.add, other)

    def __sub__(self, other: Any) -> Wrapped:
        return self._apply(operator.sub, other)

    def __mul__(self, other: Any) -> Wrapped:
        return self._apply(operator.mul, other)

    def __truediv__(self, other: Any) -> Wrapped:
        return self._apply(operator.truediv, other)

    def __mod__(self, other: Any) -> Wrapped:
        return self._apply(operator.mod, other)

    def __pow__(self, other: Any) -> Wrapped:
        return self._apply(operator.pow, other)

    def __eq__(self, other: object) -> Wrapped:  # type: ignore[override]
        return self._apply(operator.eq, other)

    def __ne__(self, other: object) -> Wrapped:  # type: ignore[override]
        return self._apply(operator.ne, other)

    def __gt__(self, other: Any) -> Wrapped:
        return self._apply(operator.gt, other)

    def __ge__(self, other: Any) -> Wrapped:
        return self._apply(operator.ge, other)

    def __lt__(self, other: Any) -> Wrapped:
        return self._apply(operator.lt, other)

    def __le__(self, other: Any) -> Wrapped:
        return self._apply(operator.le, other)


def _function(op: Callable[..., Any]) -> Any:
    """``op`` of ``Wrapped`` arrays and Python scalars, as a module function."""

    def fn(*args: Any) -> Wrapped:
        return Wrapped(op(*(a.array if isinstance(a, Wrapped) else a for a in args)))

    return staticmethod(fn)


class WrappedModule:
    """The array module of ``Wrapped`` arrays: the functions the shared ops call."""

    float32 = np.float32
    maximum = _function(np.maximum)
    minimum = _function(np.minimum)
    clip = _function(np.clip)


class WrappedOps(ArrayFloatOps, ArrayActivationOps):
    """The shared float and activation ops over ``WrappedModule``: the non-NumPy branch
    CudaBackend takes."""

    xp = WrappedModule()


def _numpy(x: np.ndarray) -> np.ndarray:
    return x


def _wrapped(x: np.ndarray) -> Wrapped:
    return Wrapped(x)


def _unwrap(out: Any) -> np.ndarray:
    assert isinstance(out, Wrapped)
    return out.array


#: (branch, its ops, its array maker, its result reader).
BRANCHES = [pytest.param(CpuBackend, _numpy, _numpy, id="numpy"),
            pytest.param(WrappedOps, _wrapped, _unwrap, id="non-numpy")]

ARITHMETIC: list[tuple[str, Callable[..., torch.Tensor]]] = [
    ("float_add_scalar", torch.add), ("float_sub_scalar", torch.sub),
    ("float_mul_scalar", torch.mul), ("float_div_scalar", torch.div),
    ("float_remainder_scalar", torch.remainder), ("float_powf_scalar", torch.pow)]
COMPARISONS: list[tuple[str, Callable[..., torch.Tensor]]] = [
    ("float_equal_elem", torch.eq), ("float_not_equal_elem", torch.ne),
    ("float_greater_elem", torch.gt), ("float_greater_equal_elem", torch.ge),
    ("float_lower_elem", torch.lt), ("float_lower_equal_elem", torch.le)]


def _values(np_dtype: np.dtype, scalar: float, positive: bool = False) -> np.ndarray:
    """Random 16-bit values, the scalar rounded to the dtype both ways and its neighbours
    (where comparisons and remainders turn), and the edge values."""
    rng = np.random.default_rng(7)
    x = rng.standard_normal(4000) * 4.0
    near = np.array([scalar, np.float32(scalar)], np.float64)
    with np.errstate(over="ignore"):
        x = np.concatenate([x, near, near * 3, [0.0, -0.0, np.inf, -np.inf, np.nan, 1e4]])
        x = x.astype(np.float32).astype(np_dtype)
    bits = x.view(np.uint16)
    x = np.concatenate([x, (bits[-16:] + 1).view(np_dtype), (bits[-16:] - 1).view(np_dtype)])
    return np.abs(x) if positive else x


def _torch(x: np.ndarray, torch_dtype: torch.dtype) -> torch.Tensor:
    return torch.from_numpy(x.view(np.int16)).view(torch_dtype)


def _bits(t: torch.Tensor) -> np.ndarray:
    return t.view(torch.int16).numpy().view(np.uint16)


def _assert_same(got: np.ndarray, want: torch.Tensor, np_dtype: np.dtype,
                 zero_sign: bool = True) -> None:
    """The same 16-bit patterns (any NaN for a NaN); ``zero_sign=False`` lets +0 stand for
    -0 (NumPy's float32 remainder gives +0 where torch's gives -0, in float32 as well)."""
    assert got.dtype == np_dtype
    theirs = _bits(want)
    nan = np.isnan(want.float().numpy())
    assert np.isnan(got[nan].astype(np.float32)).all()
    ours = got.view(np.uint16)[~nan]
    theirs = theirs[~nan]
    if not zero_sign:  # -0 as +0
        ours, theirs = (np.where(b == 0x8000, 0, b) for b in (ours, theirs))
    bad = np.nonzero(ours != theirs)[0]
    assert bad.size == 0, (f"{bad.size} differ; first: ours {got[~nan][bad[:5]]}, "
                           f"torch's {want[torch.from_numpy(~nan)][bad[:5]]}")


@pytest.mark.parametrize(("ops", "make", "read"), BRANCHES)
@pytest.mark.parametrize(("np_dtype", "torch_dtype"), HALVES)
@pytest.mark.parametrize(("name", "torch_op"), ARITHMETIC, ids=[a[0] for a in ARITHMETIC])
@pytest.mark.parametrize("scalar", SCALARS)
def test_arithmetic_with_a_scalar_is_torchs(ops: Any, make: Callable[[np.ndarray], Any],
                                            read: Callable[[Any], np.ndarray],
                                            np_dtype: np.dtype, torch_dtype: torch.dtype,
                                            name: str, torch_op: Callable[..., torch.Tensor],
                                            scalar: float) -> None:
    """pow on magnitudes (NaN otherwise)."""
    pow_ = name == "float_powf_scalar"
    x = _values(np_dtype, scalar, positive=pow_)
    with np.errstate(all="ignore"):
        got = read(getattr(ops, name)(make(x), scalar))
    want = torch_op(_torch(x, torch_dtype), scalar)
    if pow_:
        got = _libm_ties_as_torch(got, want, x, scalar, np_dtype)
    _assert_same(got, want, np_dtype, zero_sign=name != "float_remainder_scalar")


def _libm_ties_as_torch(got: np.ndarray, want: torch.Tensor, x: np.ndarray, scalar: float,
                        np_dtype: np.dtype) -> np.ndarray:
    """``got`` with torch's value where the two float32 pows (NumPy's libm, torch's own) may
    round apart: where the exact power by the rounded exponent lies within 2^-22
    (relative) of a 16-bit rounding boundary, and ``got`` is one of the two values beside it."""
    exponent = float(np_dtype.type(np.float32(scalar)))
    with np.errstate(all="ignore"):
        exact = x.astype(np.float64) ** exponent
        below, above = ((exact * (1 + k * 2.0**-22)).astype(np.float32).astype(np_dtype)
                        for k in (-1, 1))
    near = (below != above) & ((got == below) | (got == above))
    return np.where(near, _bits(want).view(np_dtype), got)


@pytest.mark.parametrize(("ops", "make", "read"), BRANCHES)
@pytest.mark.parametrize(("np_dtype", "torch_dtype"), HALVES)
@pytest.mark.parametrize(("name", "torch_op"), COMPARISONS, ids=[c[0] for c in COMPARISONS])
@pytest.mark.parametrize("scalar", SCALARS)
def test_comparison_with_a_scalar_is_torchs(ops: Any, make: Callable[[np.ndarray], Any],
                                            read: Callable[[Any], np.ndarray],
                                            np_dtype: np.dtype, torch_dtype: torch.dtype,
                                            name: str, torch_op: Callable[..., torch.Tensor],
                                            scalar: float) -> None:
    x = _values(np_dtype, scalar)
    got = read(getattr(ops, name)(make(x), scalar))
    np.testing.assert_array_equal(got, torch_op(_torch(x, torch_dtype), scalar).numpy())


@pytest.mark.parametrize(("ops", "make", "read"), BRANCHES)
@pytest.mark.parametrize(("np_dtype", "torch_dtype"), HALVES)
@pytest.mark.parametrize("slope", [0.01, 0.1, 0.3, 1.7])
def test_leaky_relu_is_torchs(ops: Any, make: Callable[[np.ndarray], Any],
                              read: Callable[[Any], np.ndarray], np_dtype: np.dtype,
                              torch_dtype: torch.dtype, slope: float) -> None:
    """The slope kept in float32 (torch's mul rule), the product rounded once."""
    x = _values(np_dtype, -1.0)
    got = read(ops.leaky_relu(make(x), slope))
    _assert_same(got, torch.nn.functional.leaky_relu(_torch(x, torch_dtype), slope), np_dtype)


@pytest.mark.parametrize(("ops", "make", "read"), BRANCHES)
@pytest.mark.parametrize(("np_dtype", "torch_dtype"), HALVES)
def test_hard_sigmoid_is_torchs(ops: Any, make: Callable[[np.ndarray], Any],
                                read: Callable[[Any], np.ndarray], np_dtype: np.dtype,
                                torch_dtype: torch.dtype) -> None:
    """x / 6 + 0.5 clamped to [0, 1] in float32, rounded once."""
    x = _values(np_dtype, 3.0)
    got = read(ops.hard_sigmoid(make(x), 1 / 6, 0.5))
    _assert_same(got, torch.nn.functional.hardsigmoid(_torch(x, torch_dtype)), np_dtype)


@pytest.mark.parametrize(("np_dtype", "torch_dtype"), HALVES)
def test_the_cases_tell_the_rules_apart(np_dtype: np.dtype, torch_dtype: torch.dtype) -> None:
    """What the tests above would see under another rule: the scalar rounded for mul and
    leaky_relu's slope (NumPy's and CuPy's float16), kept in float32 for add (ml_dtypes'
    bfloat16), rounded directly from double for a comparison (NumPy's and CuPy's float16)."""
    x = _values(np_dtype, 0.3)
    t = _torch(x, torch_dtype)
    wide = x.astype(np.float32)

    def differ(ours: np.ndarray, theirs: torch.Tensor) -> int:
        return int((ours.astype(np_dtype).view(np.uint16) != _bits(theirs)).sum())

    rounded = float(np_dtype.type(np.float32(0.3)))
    assert differ(wide * rounded, t * 0.3) > 100
    assert differ(np.maximum(wide, wide * rounded), torch.nn.functional.leaky_relu(t, 0.3)) > 100
    assert differ(wide + np.float32(0.3), t + 0.3) > 100
    edge = SCALARS[-1]
    one = np.ones(1, F16)
    assert (one < F16.type(edge)).item() != (torch.ones(1, dtype=torch.float16) < edge).item()


def test_16_bit_overflowing_scalars_give_inf_without_a_warning() -> None:
    """A scalar past float16's range rounds to inf as torch's add does (not NumPy's overflow
    warning, which pytest would report)."""
    x = np.array([1.0, -np.inf, np.inf], F16)
    with np.errstate(all="raise"):
        for ops, make, read in ((CpuBackend, _numpy, _numpy), (WrappedOps, _wrapped, _unwrap)):
            got = read(ops.float_add_scalar(make(x[:1]), 1e5))
            _assert_same(got, torch.ones(1, dtype=torch.float16) + 1e5, F16)
            assert read(ops.float_greater_elem(make(x), 7e4)).tolist() == [False, False, False]
