"""The ONNX operators, one module per topic; importing this package registers them all."""

from burnpy.onnx.ops import elementwise, nn, reduce, shape

__all__ = ["elementwise", "nn", "reduce", "shape"]
