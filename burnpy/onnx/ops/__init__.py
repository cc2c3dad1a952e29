"""The ONNX operators, one module per topic; importing this package registers them all."""

from burnpy.onnx.ops import attention, control, elementwise, indexing, nn, recurrent, reduce, shape

__all__ = ["attention", "control", "elementwise", "indexing", "nn", "recurrent", "reduce", "shape"]
