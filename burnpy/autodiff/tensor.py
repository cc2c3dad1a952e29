"""``AutodiffTensor``: the float primitive of an Autodiff backend."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from burnpy.autodiff.graph import Node


class AutodiffTensor:
    """An inner-backend float primitive plus its graph node (None when untracked).

    ``shape`` (a tuple) and ``dtype`` (the inner primitive's NumPy dtype) are copied at
    construction because the Tensor layer and the provided ops read them on every call.
    """

    __slots__ = ("dtype", "node", "primitive", "shape")

    def __init__(self, primitive: Any, node: Node | None = None) -> None:
        self.primitive = primitive
        self.node = node
        self.shape: tuple[int, ...] = primitive.shape
        self.dtype: Any = primitive.dtype

    def __repr__(self) -> str:
        state = "untracked" if self.node is None else (
            "leaf" if self.node.op is None else f"from {self.node.op.name}")
        return f"AutodiffTensor(shape={self.shape}, dtype={self.dtype}, {state})"
