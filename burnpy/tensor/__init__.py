"""The user-facing Tensor over any backend."""

from burnpy.tensor.layout import cat, stack
from burnpy.tensor.reduction import ValuesIndices
from burnpy.tensor.tensor import Tensor

__all__ = ["Tensor", "ValuesIndices", "cat", "stack"]
