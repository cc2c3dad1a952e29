"""Shared internals of the Tensor modules: kinds, the fast wrapper and cross-tensor checks."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from burnpy.backend.dtype import DType, promote_floats, promote_ints
from burnpy.backend.errors import (
    BackendMismatchError,
    DeviceMismatchError,
    DTypeError,
    article,
)

if TYPE_CHECKING:
    from burnpy.backend.base import Backend
    from burnpy.tensor.tensor import Tensor

FLOAT, INT, BOOL, QUANTIZED = "float", "int", "bool", "quantized"

#: Set by burnpy.tensor.tensor once the class exists; ``new`` instantiates it.
TENSOR_CLASS: Any = None


def new(backend: type[Backend], primitive: Any, kind: str, _alloc: Any = object.__new__) -> Tensor:
    """Wrap a primitive without running ``__init__`` (the hot path of every op)."""
    t = _alloc(TENSOR_CLASS)
    t.backend = backend
    t.primitive = primitive
    t.kind = kind
    return t


def check_same_backend(op: str, a: Tensor, b: Tensor) -> None:
    """BackendMismatchError / DeviceMismatchError unless ``a`` and ``b`` can meet in ``op``."""
    if a.backend is not b.backend:
        na, nb = a.backend.name(), b.backend.name()
        if na == nb:  # e.g. a subclass keeping its parent's name: tell them apart
            na, nb = a.backend.__qualname__, b.backend.__qualname__
        raise BackendMismatchError(
            f"{op}: tensors are on different backends ({na} and {nb}); move one with "
            ".to_backend() or .inner()/Tensor.from_inner()")
    if a.backend.multi_device:
        da, db = a.device, b.device
        if da != db:
            raise DeviceMismatchError(f"{op}: tensors are on different devices ({da} and {db}); "
                                      "move one with .to(device)")


def common_dtype(op: str, a: Tensor, b: Tensor) -> DType:
    """The dtype two same-kind tensors meet at; int with float is an error naming both."""
    da, db = a.dtype, b.dtype
    if da is db:
        return da
    if a.kind is FLOAT and b.kind is FLOAT:
        return promote_floats(da, db)
    if a.kind is INT and b.kind is INT:
        return promote_ints(da, db)
    raise DTypeError(f"{op}: cannot mix {article(a.kind)} tensor ({da!r}) with "
                     f"{article(b.kind)} tensor ({db!r}); cast one with .float() or .int()")

