"""Element types: ``DType`` and its mapping to NumPy dtypes (bfloat16 through ml_dtypes)."""

from __future__ import annotations

import enum
from typing import Any

import ml_dtypes
import numpy as np

from burnpy.backend.errors import DTypeError


class DType(enum.Enum):
    """A burnpy element type. ``value`` is the canonical name users may pass as a string."""

    float64 = "float64"
    float32 = "float32"
    float16 = "float16"
    bfloat16 = "bfloat16"
    int64 = "int64"
    int32 = "int32"
    int16 = "int16"
    int8 = "int8"
    uint8 = "uint8"
    uint16 = "uint16"
    uint32 = "uint32"
    uint64 = "uint64"
    bool_ = "bool"
    qint8 = "qint8"
    qint4 = "qint4"
    qint2 = "qint2"

    def __repr__(self) -> str:
        return f"bp.{self.name}"

    __str__ = __repr__

    @property
    def is_float(self) -> bool:
        return self in _FLOATS

    @property
    def is_int(self) -> bool:
        return self in _INTS

    @property
    def is_bool(self) -> bool:
        return self is DType.bool_

    @property
    def is_quantized(self) -> bool:
        return self in (DType.qint8, DType.qint4, DType.qint2)

    @property
    def kind(self) -> str:
        """The tensor kind this dtype belongs to: float, int, bool or quantized."""
        if self.is_float:
            return "float"
        if self.is_int:
            return "int"
        if self.is_bool:
            return "bool"
        return "quantized"

    @property
    def numpy(self) -> np.dtype[Any]:
        """The NumPy dtype that stores this element type."""
        try:
            return _TO_NUMPY[self]
        except KeyError:
            raise DTypeError(f"{self!r} has no plain NumPy storage type") from None

    @property
    def itemsize(self) -> int:
        return self.numpy.itemsize

    @staticmethod
    def of(value: DTypeLike) -> DType:
        """Coerce a DType, a name such as ``"float32"``, or a NumPy dtype to a DType."""
        if isinstance(value, DType):
            return value
        if isinstance(value, str):
            found = _BY_NAME.get(value)
            if found is not None:
                return found
        else:
            try:
                return _FROM_NUMPY[np.dtype(value)]
            except (TypeError, KeyError):
                pass
        raise DTypeError(f"unknown dtype {value!r}; expected one of {sorted(_BY_NAME)}")


DTypeLike = DType | str | np.dtype[Any] | type

_FLOATS = frozenset({DType.float64, DType.float32, DType.float16, DType.bfloat16})
_INTS = frozenset({DType.int64, DType.int32, DType.int16, DType.int8, DType.uint8, DType.uint16,
                   DType.uint32, DType.uint64})
#: torch's "shell" unsigned dtypes: each meets only itself (and the floats); torch refuses to
#: promote them with any other int or bool dtype.
_SHELL_UNSIGNED = frozenset({DType.uint16, DType.uint32, DType.uint64})

_TO_NUMPY: dict[DType, np.dtype[Any]] = {
    DType.float64: np.dtype(np.float64),
    DType.float32: np.dtype(np.float32),
    DType.float16: np.dtype(np.float16),
    DType.bfloat16: np.dtype(ml_dtypes.bfloat16),
    DType.int64: np.dtype(np.int64),
    DType.int32: np.dtype(np.int32),
    DType.int16: np.dtype(np.int16),
    DType.int8: np.dtype(np.int8),
    DType.uint8: np.dtype(np.uint8),
    DType.uint16: np.dtype(np.uint16),
    DType.uint32: np.dtype(np.uint32),
    DType.uint64: np.dtype(np.uint64),
    DType.bool_: np.dtype(np.bool_),
}
_FROM_NUMPY: dict[np.dtype[Any], DType] = {v: k for k, v in _TO_NUMPY.items()}
# Quantized values are int8 on the host (sub-byte ones unpacked); the reverse map above
# stays unambiguous because it is built before these entries.
_TO_NUMPY.update({DType.qint8: np.dtype(np.int8), DType.qint4: np.dtype(np.int8),
                  DType.qint2: np.dtype(np.int8)})
_BY_NAME: dict[str, DType] = {d.value: d for d in DType}
_BY_NAME.update({"bool_": DType.bool_, "f64": DType.float64, "f32": DType.float32,
                 "f16": DType.float16, "bf16": DType.bfloat16, "i64": DType.int64,
                 "i32": DType.int32, "i16": DType.int16, "i8": DType.int8, "u8": DType.uint8,
                 "u16": DType.uint16, "u32": DType.uint32, "u64": DType.uint64})

#: The int dtypes among which NumPy's promotion is torch's, as DTypes and as NumPy dtypes: a
#: backend's NumPy-style binary op may mix them directly (a shell unsigned one may not).
NUMPY_PROMOTING_INTS: frozenset[object] = frozenset(
    {d for d in _INTS if d not in _SHELL_UNSIGNED}
    | {_TO_NUMPY[d] for d in _INTS if d not in _SHELL_UNSIGNED})

# Fast path for hot code: numpy dtype -> DType without going through DType.of.
dtype_of_numpy = _FROM_NUMPY.__getitem__

_FLOAT_RANK = {DType.float16: 1, DType.bfloat16: 1, DType.float32: 2, DType.float64: 3}


def promote_floats(a: DType, b: DType) -> DType:
    """The wider of two float dtypes; float16 with bfloat16 meets at float32 (as in torch)."""
    if a is b:
        return a
    ra, rb = _FLOAT_RANK[a], _FLOAT_RANK[b]
    if ra == rb:
        return DType.float32
    return a if ra > rb else b


def promote_ints(a: DType, b: DType, op: str = "promote_ints") -> DType:
    """The int dtype two int dtypes meet at, as ``torch.promote_types``: the smallest holding
    both (uint8 with int8 is int16); uint16, uint32 and uint64 meet no other int dtype, a
    DTypeError naming ``op``, as in torch, rather than a silent widening."""
    if a is b:
        return a
    if a in _SHELL_UNSIGNED or b in _SHELL_UNSIGNED:
        raise DTypeError(f"{op}: {a!r} and {b!r} have no common dtype (uint16, uint32 and "
                         "uint64 promote with no other int dtype, as in torch); cast one with "
                         ".to(dtype)")
    # Among int8..int64 and uint8, NumPy's rule is torch's and never leaves int64.
    return _FROM_NUMPY[np.promote_types(a.numpy, b.numpy)]


float64, float32, float16, bfloat16 = DType.float64, DType.float32, DType.float16, DType.bfloat16
int64, int32, int16, int8 = DType.int64, DType.int32, DType.int16, DType.int8
uint8, uint16, uint32, uint64 = DType.uint8, DType.uint16, DType.uint32, DType.uint64
bool_ = DType.bool_
