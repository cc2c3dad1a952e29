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
from burnpy.tensor._core import FLOAT, QUANTIZED

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
                                    f"({scheme.dtype!r}) on {t.device}")
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
