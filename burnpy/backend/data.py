"""``TensorData``: the backend-neutral value of a tensor (a NumPy array plus its DType)."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, replace
from typing import Any

import numpy as np

from burnpy.backend.dtype import DType, DTypeLike, dtype_of_numpy
from burnpy.backend.errors import DTypeError, ShapeError


def contiguous(arr: np.ndarray) -> np.ndarray:
    """A C-contiguous array with the same shape (``np.ascontiguousarray`` turns 0-d into 1-d)."""
    return arr if arr.flags.c_contiguous else arr.copy(order="C")


@dataclass(frozen=True, slots=True, eq=False)
class QuantParams:
    """The parameters of quantized host data: ``scales`` (in the scheme's scale dtype), the
    two-level ``tensor_scale``, the axis blocks run along, the scheme, and the float dtype
    the values dequantize to."""

    scales: np.ndarray
    tensor_scale: np.ndarray | None
    block_axis: int | None
    scheme: Any
    float_dtype: DType


class TensorData:
    """Host-side tensor contents, the currency of ``from_data``/``into_data`` on every backend.

    ``array`` is a NumPy array whose dtype is ``dtype.numpy`` (bfloat16 via ml_dtypes). For a
    quantized dtype, ``array`` holds the integer values (int8, logical shape) and ``quant``
    their scales and scheme.
    """

    __slots__ = ("array", "dtype", "quant")

    def __init__(self, array: np.ndarray, dtype: DType | None = None,
                 quant: QuantParams | None = None) -> None:
        if dtype is None:  # the array's own dtype: it stores it, and it is never quantized
            try:
                dt = dtype_of_numpy(array.dtype)
            except KeyError:
                raise DTypeError(f"TensorData: NumPy dtype {array.dtype} is not supported (native "
                                 "byte order only; TensorData.from_any converts)") from None
        else:
            dt = dtype
            if array.dtype != dt.numpy:
                raise DTypeError(f"TensorData: array dtype {array.dtype} does not store {dt!r}")
            if dt.is_quantized and quant is None:
                raise DTypeError(f"TensorData: quantized dtype {dt!r} needs its QuantParams")
        self.array = array
        self.dtype = dt
        self.quant = quant

    @staticmethod
    def from_any(value: Any, dtype: DTypeLike | None = None, *,
                 default_float: DType = DType.float32,
                 default_int: DType = DType.int64, copy: bool = True) -> TensorData:
        """Build from a NumPy array (keeps its dtype, in native byte order), ``TensorData``,
        nested lists or a scalar (backend defaults).

        The values are always the result's own memory, as ``torch.tensor`` copies: later writes
        to the caller's array never reach it. ``copy=False`` is burnpy's internal path for
        arrays it made itself and nothing else holds (a ``DataLoader``'s batches): no copy
        beyond a dtype or layout conversion. Ragged nested lists raise ``ShapeError`` rather
        than producing object arrays.
        """
        if isinstance(value, TensorData):
            if dtype is not None and DType.of(dtype) is not value.dtype:
                return value.convert(DType.of(dtype))  # a new array
            return value.copy() if copy else value
        if isinstance(value, np.ndarray | np.generic):
            arr = np.asarray(value)
            if dtype is None:
                try:
                    target = dtype_of_numpy(arr.dtype.newbyteorder("="))
                except KeyError:
                    raise DTypeError(
                        f"from_data: NumPy dtype {arr.dtype} is not supported") from None
            else:
                target = DType.of(dtype)
            if copy:
                return TensorData(np.array(arr, dtype=target.numpy, order="C", copy=True), target)
            return TensorData(contiguous(arr.astype(target.numpy, copy=False)), target)
        try:
            arr = np.array(value)
        except ValueError as exc:
            raise ShapeError(f"from_data: nested sequences are ragged ({exc})") from None
        if arr.dtype == object:
            raise ShapeError(f"from_data: cannot build a tensor from {type(value).__name__} "
                             "(ragged or non-numeric)")
        if dtype is not None:
            target = DType.of(dtype)
        elif arr.dtype.kind == "b":
            target = DType.bool_
        elif arr.dtype.kind in "iu":
            target = default_int
        elif arr.dtype.kind == "f" or (arr.size == 0 and arr.dtype.kind == "f"):
            target = default_float
        else:
            raise DTypeError(f"from_data: values of NumPy kind {arr.dtype} are not supported")
        return TensorData(contiguous(arr.astype(target.numpy, copy=False)), target)

    def copy(self) -> TensorData:
        """The same values (and quantization parameters) in memory of their own."""
        quant = self.quant
        if quant is not None:
            quant = replace(quant, scales=quant.scales.copy(), tensor_scale=None
                            if quant.tensor_scale is None else quant.tensor_scale.copy())
        return TensorData(self.array.copy(order="C"), self.dtype, quant)

    @property
    def shape(self) -> tuple[int, ...]:
        """The size of each dim."""
        return self.array.shape

    @property
    def nbytes(self) -> int:
        """The bytes these host values take: the array's, plus the scales (and the two-level
        tensor scale) of quantized data."""
        total = self.array.nbytes
        if self.quant is not None:
            total += self.quant.scales.nbytes
            if self.quant.tensor_scale is not None:
                total += self.quant.tensor_scale.nbytes
        return total

    def convert(self, dtype: DType) -> TensorData:
        """The same values in another dtype."""
        if dtype is self.dtype:
            return self
        if self.quant is not None or dtype.is_quantized:
            raise DTypeError(f"TensorData: cannot convert {self.dtype!r} to {dtype!r}; "
                             "quantize or dequantize the tensor instead")
        return TensorData(self.array.astype(dtype.numpy), dtype)

    def to_list(self) -> Any:
        return self.array.tolist()

    def assert_approx_eq(self, other: TensorData | np.ndarray | Sequence[Any], rtol: float = 1e-5,
                         atol: float = 1e-6) -> None:
        """Assert equal shapes and values within tolerance (a test helper, as Burn's)."""
        expected = other.array if isinstance(other, TensorData) else np.asarray(other)
        np.testing.assert_allclose(self.array.astype(np.float64), expected.astype(np.float64),
                                   rtol=rtol, atol=atol)

    def __eq__(self, other: object) -> bool:
        if not isinstance(other, TensorData):
            return NotImplemented
        if self.quant is not None or other.quant is not None:
            a, b = self.quant, other.quant
            if a is None or b is None or a.scheme != b.scheme or a.block_axis != b.block_axis \
                    or not np.array_equal(a.scales, b.scales):
                return False
        return self.dtype is other.dtype and np.array_equal(self.array, other.array)

    def __repr__(self) -> str:
        return f"TensorData({self.array.tolist()!r}, dtype={self.dtype!r})"
