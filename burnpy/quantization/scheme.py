"""``QuantScheme``: how a float tensor becomes integers and scales (Burn's QuantScheme).

A scheme is a value type (q8/q4 full-range or symmetric, q2 symmetric for ternary weights),
a level (per-tensor, per-block along one axis, or two-level block + tensor scale), the
storage (native int8, or sub-byte values packed into uint32 words), the precision of the
scales (f32, f16, bf16) and the calibration that picks them (min-max or abs-mean).
All schemes are symmetric: zero maps to zero, ``x ~= q * scale``.
"""

from __future__ import annotations

import enum
from dataclasses import dataclass, replace

from burnpy.backend.dtype import DType
from burnpy.backend.errors import InvalidArgumentError


class QuantValue(enum.Enum):
    """The integer range values are mapped to; F = full range, S = symmetric range."""

    Q8F = ("q8f", 8, -128, 127)
    Q8S = ("q8s", 8, -127, 127)
    Q4F = ("q4f", 4, -8, 7)
    Q4S = ("q4s", 4, -7, 7)
    Q2S = ("q2s", 2, -1, 1)

    def __init__(self, label: str, bits: int, qmin: int, qmax: int) -> None:
        self.label, self.bits, self.qmin, self.qmax = label, bits, qmin, qmax

    @property
    def half_range(self) -> float:
        """What ``absmax`` maps to: 127.5 for Q8F (all 256 levels used), qmax otherwise."""
        return (self.qmax - self.qmin) / 2

    @property
    def dtype(self) -> DType:
        return {8: DType.qint8, 4: DType.qint4, 2: DType.qint2}[self.bits]


class QuantStore(enum.Enum):
    """Native: one int8 per value. PackedU32: ``32 // bits`` values per uint32 word."""

    NATIVE = "native"
    PACKED_U32 = "packed_u32"


class QuantParam(enum.Enum):
    """The dtype scales are stored in."""

    F32 = "f32"
    F16 = "f16"
    BF16 = "bf16"

    @property
    def dtype(self) -> DType:
        return {"f32": DType.float32, "f16": DType.float16, "bf16": DType.bfloat16}[self.value]


class Calibration(enum.Enum):
    """How a scale is chosen: max |x| (min-max, no clipping) or mean |x| (ternary, BitNet)."""

    MIN_MAX = "min_max"
    ABS_MEAN = "abs_mean"

    @property
    def from_max(self) -> bool:
        """Whether the scale comes from max |x| (min-max); from mean |x| otherwise."""
        return self is Calibration.MIN_MAX


@dataclass(frozen=True, slots=True)
class QuantLevel:
    """Per-tensor (``block_size`` None), per-block of ``block_size`` along the last dim, or
    two-level: per-block scales stored relative to one float32 tensor scale."""

    block_size: int | None = None
    two_level: bool = False

    @property
    def is_block(self) -> bool:
        return self.block_size is not None

    def __str__(self) -> str:
        if self.block_size is None:
            return "tensor"
        return f"{'two-level ' if self.two_level else ''}block({self.block_size})"


@dataclass(frozen=True, slots=True)
class QuantScheme:
    """A complete quantization recipe. Build with ``int8()``, ``int4()``, ``ternary()``."""

    value: QuantValue = QuantValue.Q8S
    level: QuantLevel = QuantLevel()
    store: QuantStore = QuantStore.NATIVE
    param: QuantParam = QuantParam.F32
    calibration: Calibration = Calibration.MIN_MAX
    #: When True, ops that return float (arithmetic, matmul) re-quantize their result with
    #: this scheme (Burn's quantization propagation); by default they return float.
    propagate: bool = False

    def __post_init__(self) -> None:
        bs = self.level.block_size
        if bs is not None and bs < 1:
            raise InvalidArgumentError(f"QuantScheme: block_size must be >= 1, got {bs}")
        if self.level.two_level and bs is None:
            raise InvalidArgumentError("QuantScheme: a two-level scheme needs a block_size")
        if self.store is QuantStore.PACKED_U32 and self.value.bits == 8:
            raise InvalidArgumentError("QuantScheme: 8-bit values are stored natively, not "
                                       "packed")
        if self.store is QuantStore.NATIVE and self.value.bits < 8:
            raise InvalidArgumentError(f"QuantScheme: {self.value.bits}-bit values must be "
                                       "packed (store=PACKED_U32)")

    @staticmethod
    def int8(block_size: int | None = None, *, full_range: bool = False,
             two_level: bool = False, param: QuantParam = QuantParam.F32) -> QuantScheme:
        """Symmetric int8: [-127, 127], or all 256 levels with ``full_range``."""
        return QuantScheme(QuantValue.Q8F if full_range else QuantValue.Q8S,
                           QuantLevel(block_size, two_level), QuantStore.NATIVE, param)

    @staticmethod
    def int4(block_size: int | None = 32, *, full_range: bool = False,
             two_level: bool = False, param: QuantParam = QuantParam.F32) -> QuantScheme:
        """Symmetric int4 ([-7, 7], or [-8, 7] full range) packed 8 per uint32."""
        return QuantScheme(QuantValue.Q4F if full_range else QuantValue.Q4S,
                           QuantLevel(block_size, two_level), QuantStore.PACKED_U32, param)

    @staticmethod
    def ternary(block_size: int | None = None, *,
                param: QuantParam = QuantParam.F32) -> QuantScheme:
        """{-1, 0, 1} times an abs-mean scale (BitNet b1.58 weights), packed 16 per uint32."""
        return QuantScheme(QuantValue.Q2S, QuantLevel(block_size), QuantStore.PACKED_U32, param,
                           Calibration.ABS_MEAN)

    def to_dict(self) -> dict[str, object]:
        """A JSON-ready description (how model files record the scheme)."""
        return {"value": self.value.label, "block_size": self.level.block_size,
                "two_level": self.level.two_level, "store": self.store.value,
                "param": self.param.value, "calibration": self.calibration.value,
                "propagate": self.propagate}

    @staticmethod
    def from_dict(spec: dict[str, object]) -> QuantScheme:
        """The scheme ``to_dict`` described; InvalidArgumentError for an unknown one."""
        try:
            value = next(v for v in QuantValue if v.label == spec["value"])
            block = spec["block_size"]
            if not isinstance(block, int | None):
                raise TypeError(f"block_size {block!r} is not an int")
            return QuantScheme(value, QuantLevel(block, bool(spec["two_level"])),
                               QuantStore(spec["store"]), QuantParam(spec["param"]),
                               Calibration(spec["calibration"]), bool(spec.get("propagate")))
        except (KeyError, StopIteration, ValueError, TypeError) as exc:
            raise InvalidArgumentError(f"QuantScheme: cannot read scheme {spec!r} ({exc})") \
                from None

    def with_propagation(self, propagate: bool = True) -> QuantScheme:
        return replace(self, propagate=propagate)

    @property
    def dtype(self) -> DType:
        return self.value.dtype

    @property
    def values_per_word(self) -> int:
        return 32 // self.value.bits

    def __str__(self) -> str:
        parts = [self.value.label, str(self.level), self.store.value, f"scale {self.param.value}"]
        if self.calibration is not Calibration.MIN_MAX:
            parts.append(self.calibration.value)
        if self.propagate:
            parts.append("propagate")
        return "QuantScheme(" + ", ".join(parts) + ")"
