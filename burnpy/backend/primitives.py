"""The names protocol signatures give their primitives, defined once.

Each backend has its own primitive classes (NumPy or CuPy arrays, ``WgpuTensor``, the
decorators' tracked tensors), declared as its ``FloatTensorPrimitive``... class attributes,
so a signature of the protocol cannot name one class: these aliases are ``Any`` to the type
checker and tell the reader which kind of primitive an argument or a result is. Every
primitive exposes ``.shape`` (a ``Shape``) and ``.dtype`` (see ``burnpy.backend.ops.float_ops``).
"""

from __future__ import annotations

from typing import Any, TypeAlias

#: A backend's ``FloatTensorPrimitive``.
FloatPrimitive: TypeAlias = Any
#: A backend's ``IntTensorPrimitive``.
IntPrimitive: TypeAlias = Any
#: A backend's ``BoolTensorPrimitive``.
BoolPrimitive: TypeAlias = Any
#: A backend's ``QuantizedTensorPrimitive`` (also exposes ``.scheme`` and ``.float_dtype``).
QuantizedPrimitive: TypeAlias = Any
#: A tensor shape: one non-negative size per dim.
Shape: TypeAlias = tuple[int, ...]
