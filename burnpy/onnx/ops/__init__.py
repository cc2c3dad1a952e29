"""The ONNX operators, one module per topic; importing this package registers them all.

One name per line, so engineers adding topics in parallel touch separate lines."""

from burnpy.onnx.ops import (
    attention,
    audio,
    control,
    detection,
    elementwise,
    indexing,
    loss,
    nn,
    quantization,
    recurrent,
    reduce,
    shape,
    signal,
    text,
    vision,
)

__all__ = [
    "attention",
    "audio",
    "control",
    "detection",
    "elementwise",
    "indexing",
    "loss",
    "nn",
    "quantization",
    "recurrent",
    "reduce",
    "shape",
    "signal",
    "text",
    "vision",
]
