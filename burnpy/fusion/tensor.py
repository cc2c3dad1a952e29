"""``FusionTensor``: the lazy handle that is every float, int and bool primitive of Fusion(B)."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from burnpy.backend.device import Device

if TYPE_CHECKING:
    from burnpy.fusion.stream import LazyNode


class FusionTensor:
    """A tensor whose shape, dtype and device are known at once and whose value (an inner
    backend primitive) exists only once something needs it.

    Exactly one of ``value`` and ``node`` is set: ``node`` is the pending op of the device's
    stream that will compute it. The stream holds only a weak reference to the handle, so an
    intermediate the user dropped is never written. ``dtype`` is in the inner primitives'
    own form (a NumPy dtype for the array backends).
    """

    __slots__ = ("__weakref__", "device", "dtype", "node", "shape", "value")

    def __init__(self, shape: tuple[int, ...], dtype: Any, device: Device, value: Any = None,
                 node: LazyNode | None = None) -> None:
        self.shape = shape
        self.dtype = dtype
        self.device = device
        self.value = value
        self.node = node

    @property
    def ndim(self) -> int:
        return len(self.shape)

    def __repr__(self) -> str:
        state = "materialized" if self.node is None else f"pending {self.node.name}"
        return f"FusionTensor(shape={self.shape}, dtype={self.dtype}, {state})"
