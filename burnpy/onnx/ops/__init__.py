"""The ONNX operators, one module per topic; importing this package registers them all."""

from burnpy.onnx.ops import control, elementwise, indexing, nn, recurrent, reduce, shape

__all__ = ["control", "elementwise", "indexing", "nn", "recurrent", "reduce", "shape"]
