"""Quantized tensors: ``quantize``, ``dequantize`` and ``fake_quantize`` (quantization-aware
training with a straight-through estimator), validated once here."""

from __future__ import annotations

from typing import TYPE_CHECKING

from burnpy.backend.errors import (
    DTypeError,
    InvalidArgumentError,
    KindError,
    ShapeError,
    UnsupportedDTypeError,
    describe,
)
from burnpy.tensor._core import FLOAT, QUANTIZED, new

if TYPE_CHECKING:
    from burnpy.quantization.scheme import QuantScheme
    from burnpy.tensor.tensor import Tensor

def check_quantizable(t: Tensor, scheme: QuantScheme, op: str) -> None:
    """Refuse non-float input, unsupported schemes, misfit blocks and NaN/inf values."""
    if t.kind is not FLOAT:
        raise KindError(f"{op}: expects a float tensor, got {t.kind} ({t.dtype!r})")
    b = t.backend
    if not b.supports_dtype(t.device, scheme.dtype):
        raise UnsupportedDTypeError(f"{op}: backend {b.name()} does not support {scheme} "
                                    f"({scheme.dtype!r}) on {t.device}", scheme.dtype)
    bs = scheme.level.block_size
    if bs is not None and (t.ndim == 0 or t.shape[-1] % bs):
        raise ShapeError(f"{op}: block size {bs} does not divide the last dim of shape "
                             f"{describe(t.shape)}")
    if t.numel() and not bool(t.isfinite().all().item()):
        raise InvalidArgumentError(f"{op}: the tensor of shape {describe(t.shape)} contains NaN "
                                   "or inf, which have no quantized value")


def dequantized(t: Tensor) -> Tensor:
    """A float view of a possibly quantized operand (arithmetic's rule: results are float)."""
    return t.dequantize() if t.kind is QUANTIZED else t


def requantized(result: Tensor, *operands: Tensor) -> Tensor:
    """Re-quantize ``result`` when an operand's scheme asks for propagation."""
    for o in operands:
        if o.kind is QUANTIZED and o.scheme.propagate:
            return result.quantize(o.scheme)
    return result


def check_same_scheme(op: str, a: Tensor, b: Tensor) -> None:
    if a.scheme.value is not b.scheme.value or a.scheme.level.block_size != \
            b.scheme.level.block_size:
        raise DTypeError(f"{op}: mixes quantization schemes {a.scheme} and {b.scheme}; "
                         "quantize both with one scheme")


class QuantizedOps:
    """``Tensor``'s quantization methods."""

    __slots__ = ()



    def quantize(self: Tensor, scheme: QuantScheme, scales: Tensor | None = None,
                 tensor_scale: Tensor | None = None) -> Tensor:
        """The quantized tensor for ``scheme``: with the given ``scales`` (per tensor, shape
        ``()``; per block, the shape with the last dim divided by the block size), or scales
        calibrated on the data when omitted (``quantize_dynamic``)."""
        check_quantizable(self, scheme, "quantize")
        b = self.backend
        if scales is None:
            return new(b, b.quantize_dynamic(self.primitive, scheme), QUANTIZED)
        bs = scheme.level.block_size
        expected = () if bs is None else self.shape[:-1] + (self.shape[-1] // bs,)
        if scales.shape != expected or scales.kind is not FLOAT:
            raise ShapeError(f"quantize: scales must be a float tensor of shape "
                             f"{describe(expected)}, got {scales.kind} {describe(scales.shape)}")
        if scheme.level.two_level and tensor_scale is None:
            raise InvalidArgumentError("quantize: a two-level scheme needs tensor_scale")
        ts = None if tensor_scale is None else tensor_scale.cast("float32").primitive
        return new(b, b.quantize(self.primitive, scheme, scales.cast(scheme.param.dtype).primitive,
                                 ts), QUANTIZED)

    def quantize_dynamic(self: Tensor, scheme: QuantScheme) -> Tensor:
        """Quantize with scales calibrated on this tensor."""
        return self.quantize(scheme)

    def dequantize(self: Tensor) -> Tensor:
        """The float values a quantized tensor stands for."""
        if self.kind is not QUANTIZED:
            raise KindError(f"dequantize: expects a quantized tensor, got {self.kind}")
        return new(self.backend, self.backend.dequantize(self.primitive), FLOAT)

    @property
    def scheme(self: Tensor) -> QuantScheme:
        """The quantization scheme of a quantized tensor."""
        if self.kind is not QUANTIZED:
            raise KindError(f"scheme: only quantized tensors have one, this is {self.kind}")
        return self.primitive.scheme

    def fake_quantize(self: Tensor, scheme: QuantScheme) -> Tensor:
        """Quantize then dequantize, with the gradient of the identity (straight-through):
        trains weights that will be quantized later (quantization-aware training)."""
        check_quantizable(self, scheme, "fake_quantize")
        b = self.backend
        if b.ad_enabled():
            inner = self.detach()
            rounded = new(b, b.dequantize(b.quantize_dynamic(inner.primitive, scheme)), FLOAT)
            return self + (rounded - inner).detach()
        return new(b, b.dequantize(b.quantize_dynamic(self.primitive, scheme)), FLOAT)
