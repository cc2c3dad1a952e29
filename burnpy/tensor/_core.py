"""Shared internals of the Tensor modules: kinds, the tensor's slots (``TensorBase``), the fast
wrapper ``new`` and cross-tensor checks.

``Tensor`` (``burnpy.tensor.tensor``) is ``TensorBase`` plus one mixin per topic (creation,
conversion, arithmetic, elementwise, layout, indexing, reduction, statistics, in-place,
quantized). The mixins never import ``Tensor``: they build results with ``new``, test operands
with ``isinstance(x, TensorBase)`` and call each other's methods on ``self``.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any, TypeGuard, cast

from burnpy.backend.dtype import DType, promote_floats, promote_ints
from burnpy.backend.errors import (
    BackendMismatchError,
    DeviceMismatchError,
    DTypeError,
    KindError,
    article,
)

if TYPE_CHECKING:
    from burnpy.backend.base import Backend
    from burnpy.tensor.tensor import Tensor

FLOAT, INT, BOOL, QUANTIZED = "float", "int", "bool", "quantized"


class TensorBase:
    """The slots of every tensor: the backend class, its primitive and the kind (and the two
    optional ones below); ``isinstance(x, TensorBase)`` is the mixins' tensor test."""

    #: ``_view_of`` is set only on results of basic indexing: ``(base, key, base's primitive
    #: when read)``, so an in-place write to the result also writes into the base (torch's views).
    __slots__ = ("__weakref__", "_shares", "_view_of", "backend", "kind", "primitive")

    backend: type[Backend]
    primitive: Any
    kind: str
    _view_of: tuple[Tensor, tuple[Any, ...], Any]
    #: ``_shares`` is set only by ``from_numpy`` and ``from_dlpack``'s zero-copy import: the
    #: array whose memory the tensor shares, which its in-place writes also write into.
    _shares: Any

    def __init__(self, backend: type[Backend], primitive: Any, kind: str) -> None:
        """Wrap ``primitive`` of ``backend`` as a tensor of ``kind``; ops build tensors through
        the faster ``new``, which skips this check.
        """
        if kind not in (FLOAT, INT, BOOL, QUANTIZED):
            raise KindError(f"Tensor: unknown kind {kind!r}")
        self.backend = backend
        self.primitive = primitive
        self.kind = kind


def is_tensor(value: object) -> TypeGuard[Tensor]:
    """Whether ``value`` is a tensor, for a value typed ``Any`` or ``object`` (a union with
    ``Tensor`` narrows with ``isinstance(value, TensorBase)`` alone)."""
    return isinstance(value, TensorBase)


#: The ``Tensor`` class, registered by ``burnpy.tensor.tensor`` once it is built (importing
#: ``burnpy.tensor`` does; until then a bare ``TensorBase``): ``new`` instantiates it, so no
#: mixin imports the class that inherits it.
TENSOR_CLASS: type[Tensor] = cast("type[Tensor]", TensorBase)


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
        return promote_ints(da, db, op)
    raise DTypeError(f"{op}: cannot mix {article(a.kind)} tensor ({da!r}) with "
                     f"{article(b.kind)} tensor ({db!r}); cast one with .float() or .int()")

