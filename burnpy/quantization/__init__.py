"""Quantization: ``QuantScheme`` and its parts, and ``fake_quantize``; the ops live in the
Backend protocol (``q_*``) and the Tensor methods (``quantize``, ``dequantize``)."""

from __future__ import annotations

from typing import TYPE_CHECKING

from burnpy.quantization.scheme import (
    Calibration,
    QuantLevel,
    QuantParam,
    QuantScheme,
    QuantStore,
    QuantValue,
)

if TYPE_CHECKING:
    from burnpy.tensor.tensor import Tensor


def fake_quantize(tensor: Tensor, scheme: QuantScheme) -> Tensor:
    """``tensor.fake_quantize(scheme)`` as a function: quantize then dequantize a float tensor,
    with the identity's gradient (straight-through), for quantization-aware training."""
    return tensor.fake_quantize(scheme)


__all__ = ["Calibration", "QuantLevel", "QuantParam", "QuantScheme", "QuantStore", "QuantValue",
           "fake_quantize"]
