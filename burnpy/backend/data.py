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


#: Bits per value of the quantized dtypes stored packed, ``8 // bits`` values per byte.
_PACKED_BITS = {DType.qint4: 4, DType.qint2: 2}


def pack_bytes(values: np.ndarray, bits: int) -> np.ndarray:
    """Sub-byte integers (int8, any shape, each in ``bits``-bit two's-complement range) as
    flat uint8 bytes holding ``8 // bits`` each, value j of a byte at bits ``[bits*j,
    bits*(j+1))`` (lowest first; the last byte zero-padded). Read as little-endian uint32
    words, these are the CPU backend's packed words."""
    per_byte = 8 // bits
    flat = values.reshape(-1)
    pad = (-flat.shape[0]) % per_byte
    if pad:
        flat = np.concatenate([flat, np.zeros(pad, dtype=np.int8)])
    fields = flat.view(np.uint8).reshape(-1, per_byte) & np.uint8((1 << bits) - 1)
    packed = fields[:, 0].copy()
    for i in range(1, per_byte):
        packed |= fields[:, i] << np.uint8(bits * i)
    return packed


def unpack_bytes(packed: np.ndarray, bits: int, shape: tuple[int, ...]) -> np.ndarray:
    """The int8 values ``pack_bytes`` stored, in ``shape``: each field sign-extended by an
    arithmetic shift of its byte moved to the top."""
    per_byte = 8 // bits
    out = np.empty((packed.shape[0], per_byte), dtype=np.int8)
    for i in range(per_byte):
        top = (packed << np.uint8(8 - bits * (i + 1))).view(np.int8)
        out[:, i] = top >> np.int8(8 - bits)
    return out.reshape(-1)[:_numel(shape)].reshape(shape)


def _numel(shape: tuple[int, ...]) -> int:
    n = 1
    for s in shape:
        n *= s
    return n


class TensorData:
    """Host-side tensor contents, the currency of ``from_data``/``into_data`` on every backend.

    ``array`` is a NumPy array whose dtype is ``dtype.numpy`` (bfloat16 via ml_dtypes). For a
    quantized dtype, ``array`` gives the integer values (int8, logical shape) and ``quant``
    their scales and scheme. Sub-byte values (int4, ternary) are held packed, ``8 // bits`` a
    byte (``packed``, what records store and ``nbytes`` counts); ``array`` unpacks them.
    """

    __slots__ = ("_shape", "_stored", "dtype", "quant")

    def __init__(self, array: np.ndarray, dtype: DType | None = None,
                 quant: QuantParams | None = None, *,
                 shape: tuple[int, ...] | None = None) -> None:
        """``array`` holds the values; for a sub-byte quantized ``dtype`` it may instead be
        ``pack_bytes``'s flat uint8 bytes, with the logical ``shape`` given."""
        self._shape: tuple[int, ...] | None = None
        self.quant: QuantParams | None = quant
        bits = _PACKED_BITS.get(dtype) if dtype is not None else None
        if shape is not None:
            want = -(-_numel(shape) * (bits or 8) // 8)
            if dtype is None or bits is None or array.dtype != np.uint8 \
                    or array.shape != (want,):
                raise DTypeError(f"TensorData: packed bytes of shape {list(shape)} need a "
                                 f"sub-byte quantized dtype and {want} uint8 bytes, got "
                                 f"{dtype!r} and {array.dtype} {list(array.shape)}")
            if quant is None:
                raise DTypeError(f"TensorData: quantized dtype {dtype!r} needs its QuantParams")
            self._stored, self._shape, self.dtype = array, tuple(shape), dtype
            return
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
        if bits is not None:
            self._shape = tuple(array.shape)
            array = pack_bytes(np.ascontiguousarray(array), bits)
        self._stored = array
        self.dtype = dt

    @property
    def array(self) -> np.ndarray:
        """The values as a NumPy array (sub-byte values unpacked into a fresh int8 array)."""
        if self._shape is None:
            return self._stored
        return unpack_bytes(self._stored, _PACKED_BITS[self.dtype], self._shape)

    @property
    def packed(self) -> np.ndarray:
        """The array as held: flat ``pack_bytes`` bytes for sub-byte values, else ``array``."""
        return self._stored

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
        return TensorData(self._stored.copy(order="C"), self.dtype, quant, shape=self._shape)

    @property
    def shape(self) -> tuple[int, ...]:
        """The size of each dim."""
        return self._stored.shape if self._shape is None else self._shape

    @property
    def nbytes(self) -> int:
        """The bytes these host values take: the array's (packed: ``bits / 8`` a value), plus
        the scales (and the two-level tensor scale) of quantized data."""
        total = self._stored.nbytes
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
        return (self.dtype is other.dtype and self.shape == other.shape
                and np.array_equal(self._stored, other._stored))

    def __repr__(self) -> str:
        return f"TensorData({self.array.tolist()!r}, dtype={self.dtype!r})"
