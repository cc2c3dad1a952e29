"""``Gradients``: the result of one backward pass."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

from burnpy.autodiff.graph import Node
from burnpy.autodiff.tensor import AutodiffTensor


def node_of(tensor: Any) -> Node | None:
    """The graph node of an ``AutodiffTensor`` or of a Tensor wrapping one (None when the
    tensor is untracked or not an autodiff float tensor)."""
    if not isinstance(tensor, AutodiffTensor):
        tensor = getattr(tensor, "primitive", None)
        if not isinstance(tensor, AutodiffTensor):
            return None
    return tensor.node


class Gradients:
    """Gradients of the tracked leaves (and retained tensors) reached by one backward pass.

    Values are inner-backend float primitives. Look one up by tensor (``grads[w]``,
    ``w in grads``, ``grads.get(w)``: a Tensor or an ``AutodiffTensor``) or through the
    backend (``B.grad(w, grads)``). The *key* of a tensor is its parameter identity: the
    process-unique int ``Gradients.key_of(w)``, shared by every Tensor wrapping that tracked
    primitive; ``to_dict()`` and iteration use it.
    """

    __slots__ = ("_grads",)

    def __init__(self, grads: dict[Node, Any] | None = None) -> None:
        self._grads: dict[Node, Any] = {} if grads is None else grads

    @staticmethod
    def key_of(tensor: Any) -> int | None:
        """The key of a tracked leaf or retained tensor; None for any other tensor."""
        node = node_of(tensor)
        return None if node is None else node.key

    def __len__(self) -> int:
        return len(self._grads)

    def __contains__(self, tensor: Any) -> bool:
        return node_of(tensor) in self._grads

    def __iter__(self) -> Iterator[tuple[int, Any]]:
        """``(key, gradient)`` pairs."""
        for node, grad in self._grads.items():
            yield node.key, grad  # type: ignore[misc]

    def __getitem__(self, tensor: Any) -> Any:
        node = node_of(tensor)
        if node is None or node not in self._grads:
            raise KeyError(f"no gradient for {tensor!r} in these Gradients")
        return self._grads[node]

    def get(self, tensor: Any, default: Any = None) -> Any:
        """The gradient of ``tensor``, or ``default``."""
        node = node_of(tensor)
        return default if node is None else self._grads.get(node, default)

    def pop(self, tensor: Any, default: Any = None) -> Any:
        """Remove and return the gradient of ``tensor`` (``default`` when absent)."""
        node = node_of(tensor)
        return default if node is None else self._grads.pop(node, default)

    def set(self, node: Node, grad: Any) -> None:
        """Register or overwrite the gradient of ``node``."""
        self._grads[node] = grad

    def keys(self) -> list[int]:
        return [node.key for node in self._grads]  # type: ignore[misc]

    def values(self) -> list[Any]:
        return list(self._grads.values())

    def to_dict(self) -> dict[int, Any]:
        """``{key: gradient}`` (see ``key_of``)."""
        return {node.key: grad for node, grad in self._grads.items()}  # type: ignore[misc]

    def __repr__(self) -> str:
        shapes = ", ".join(f"{node.key}: {node.shape}" for node in self._grads)
        return f"Gradients({len(self._grads)} tensors: {{{shapes}}})"
