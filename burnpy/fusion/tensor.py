"""``FusionTensor``: the lazy handle that is a pending float, int or bool primitive of Fusion(B)."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any, NamedTuple

from burnpy.backend.device import Device

if TYPE_CHECKING:
    from burnpy.fusion.stream import LazyNode

#: Argument types that are never tensors (passed to B as they are, recorded as scalars).
PLAIN = frozenset({int, float, bool, str, type(None)})


class Piece(NamedTuple):
    """A block written over an ``Unwritten`` tensor's zeros: ``value`` (B's primitive or a
    handle) at offset ``start`` along dim ``dim``, spanning every other dim whole."""

    dim: int
    start: int
    value: Any


class Unwritten:
    """A tensor no op has needed the memory of yet: zeros except ``pieces`` (disjoint blocks
    along one dim), built on B (``inner``) only when read. An autodiff backward pads a slice's
    gradient with zeros and sums the padded pieces; kept unwritten, that is one concatenation
    instead of a zeros buffer, a copy and an add per piece."""

    __slots__ = ("inner", "pieces")

    def __init__(self, inner: Any, pieces: tuple[Piece, ...]) -> None:
        self.inner = inner
        self.pieces = pieces


class FusionTensor:
    """A tensor whose shape, dtype and device are known at once and whose value (an inner
    backend primitive) exists only once something needs it.

    Exactly one of ``value``, ``node`` and ``unwritten`` is set: ``node`` is the pending op of
    the device's stream that will compute it; ``unwritten`` describes values not built yet
    (zeros and pieces). The stream holds only a weak reference to the handle, so an
    intermediate the user dropped is never written. ``dtype`` is in the inner primitives' own
    form (a NumPy dtype for the array backends). A materialized value that was never pending
    is B's primitive itself, not a handle.
    """

    __slots__ = ("__weakref__", "device", "dtype", "node", "shape", "unwritten", "value")

    def __init__(self, shape: tuple[int, ...], dtype: Any, device: Device, value: Any = None,
                 node: LazyNode | None = None, unwritten: Unwritten | None = None) -> None:
        self.shape = shape
        self.dtype = dtype
        self.device = device
        self.value = value
        self.node = node
        self.unwritten = unwritten

    @property
    def ndim(self) -> int:
        return len(self.shape)

    def __repr__(self) -> str:
        state = ("materialized" if self.node is None and self.unwritten is None
                 else "unwritten" if self.node is None else f"pending {self.node.name}")
        return f"FusionTensor(shape={self.shape}, dtype={self.dtype}, {state})"
