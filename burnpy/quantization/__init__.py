"""Quantization: ``QuantScheme`` and its parts; the ops live in the Backend protocol (``q_*``)."""

from burnpy.quantization.scheme import (
    Calibration,
    QuantLevel,
    QuantParam,
    QuantScheme,
    QuantStore,
    QuantValue,
)

__all__ = ["Calibration", "QuantLevel", "QuantParam", "QuantScheme", "QuantStore", "QuantValue"]
