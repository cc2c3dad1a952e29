"""In-place writes (``t[idx] = v``, ``add_``, ``zero_``...): torch's semantics over burnpy's
immutable primitives.

The write computes the new value with the ordinary (recorded) op and rebinds the tensor to it.
On an ``Autodiff`` backend the backend decides what that means (``write_in_place``): a leaf that
requires grad refuses outside ``no_grad``; a tracked result keeps the write in its graph, so
gradients reach the old value and the operand; a node that saved the old value refuses to run
its backward, as torch's version counters do.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING, Any

from burnpy.backend.errors import (
    DTypeError,
    InvalidArgumentError,
    ShapeError,
    article,
    describe,
)
from burnpy.tensor._core import BOOL, FLOAT, INT, check_same_backend, new
from burnpy.tensor.creation import CreationOps
from burnpy.tensor.indexing import accumulated

if TYPE_CHECKING:
    from burnpy.tensor.tensor import Tensor

def write_in_place(target: Tensor, what: str, compute: Callable[[Tensor], Tensor]) -> Tensor:
    """Make ``compute(target)`` ``target``'s value; returns ``target``.

    The result must keep ``target``'s shape (an in-place op cannot broadcast the tensor it
    writes) and kind; a float result of another precision is cast back, as torch does. When
    ``target`` came from basic indexing, the write goes through to its base too (torch's
    views): the view is first re-read if the base was written since, then written back.
    """
    shared = getattr(target, "_shares", None)
    if shared is not None:
        _check_shared(target, shared, what)
    view = getattr(target, "_view_of", None)
    if view is not None:
        base, key, seen = view
        if base.primitive is not seen:  # the base changed since this view was taken
            target.primitive = base[key].primitive
    result = compute(target)
    if result.shape != target.shape:
        raise ShapeError(f"{what}: the result has shape {describe(result.shape)}, but an in-place "
                         f"op must keep the tensor's shape {describe(target.shape)}")
    if result.kind is not target.kind:
        raise DTypeError(f"{what}: the result is {article(result.kind)} tensor "
                         f"({result.dtype!r}), which cannot be written into "
                         f"{article(target.kind)} tensor ({target.dtype!r}) in place")
    if result.dtype != target.dtype:
        result = result.cast(target.dtype)
    if view is not None:
        write_in_place(base, what, lambda b: b._assigned(key, result))
        target._view_of = (base, key, base.primitive)
    _rebind(target, what, result)
    if shared is not None:  # into the shared array, which the tensor keeps holding
        shared[...] = target.primitive
        target.primitive = shared
    return target


def _check_shared(target: Tensor, shared: Any, what: str) -> None:
    """Refuse a write that cannot reach the array ``target`` shares (``from_numpy``)."""
    if not isinstance(target.primitive, type(shared)):
        raise InvalidArgumentError(
            f"{what}: this tensor shares an array's memory (from_numpy / from_dlpack) on "
            f"{target.backend.name()}, whose in-place writes cannot reach the array; write into "
            "the array itself, or into a copy (t.clone())")
    if not getattr(shared.flags, "writeable", True):  # CuPy's flags have no such field
        raise InvalidArgumentError(
            f"{what}: this tensor shares the memory of a read-only array (shape "
            f"{describe(tuple(shared.shape))}, from_numpy / from_dlpack); write into a copy "
            "(t.clone())")


def _rebind(target: Tensor, what: str, result: Tensor) -> None:
    """Give ``target`` the primitive of ``result``, through the Autodiff backend's rules for
    tracked float tensors (``AutodiffBackend.write_in_place``)."""
    backend = target.backend
    if target.kind is FLOAT and backend.ad_enabled():
        from burnpy.autodiff.backend import AutodiffBackend

        if issubclass(backend, AutodiffBackend):
            target.primitive = backend.write_in_place(target.primitive, result.primitive, what)
            return
    target.primitive = result.primitive



class InplaceOps:
    """``Tensor``'s in-place writes (each returns this tensor) and ``clone``."""

    __slots__ = ()

    def __setitem__(self: Tensor, key: Any, value: Any) -> None:
        """Write ``value`` into the indexed region, in place (torch's rules under autodiff: a
        leaf that requires grad refuses outside ``no_grad``; see ``burnpy.tensor.inplace``)."""
        write_in_place(self, "setitem", lambda t: t._assigned(key, value))

    def add_(self: Tensor, other: Tensor | float, alpha: float = 1.0) -> Tensor:
        """``self += alpha * other`` in place."""
        return write_in_place(self, "add_",
                              lambda t: t + (other if alpha == 1.0 else other * alpha))

    def sub_(self: Tensor, other: Tensor | float, alpha: float = 1.0) -> Tensor:
        """``self -= alpha * other`` in place."""
        return write_in_place(self, "sub_",
                              lambda t: t - (other if alpha == 1.0 else other * alpha))

    def mul_(self: Tensor, other: Tensor | float) -> Tensor:
        """``self *= other`` in place."""
        return write_in_place(self, "mul_", lambda t: t * other)

    def div_(self: Tensor, other: Tensor | float) -> Tensor:
        """``self /= other`` in place (true division: float tensors only)."""
        return write_in_place(self, "div_", lambda t: t / other)

    def zero_(self: Tensor) -> Tensor:
        """Fill with zeros in place."""
        return write_in_place(self, "zero_", CreationOps.zeros_like)

    def fill_(self: Tensor, value: float) -> Tensor:
        """Fill with ``value`` in place."""
        return write_in_place(self, "fill_", lambda t: t.full_like(value))

    def clamp_(self: Tensor, min: float | None = None, max: float | None = None) -> Tensor:
        """Limit to ``[min, max]`` in place."""
        return write_in_place(self, "clamp_", lambda t: t.clamp(min, max))

    def copy_(self: Tensor, src: Tensor) -> Tensor:
        """Copy ``src``'s values (broadcast to this shape, cast to this dtype) in place;
        gradients flow to ``src``."""
        check_same_backend("copy_", self, src)
        value = src if src.shape == self.shape else src.expand(self.shape)
        return write_in_place(self, "copy_", lambda t: value)

    def masked_fill_(self: Tensor, mask: Tensor, value: float) -> Tensor:
        """``value`` where ``mask`` is true, in place."""
        return write_in_place(self, "masked_fill_", lambda t: t.mask_fill(mask, value))

    def index_put_(self: Tensor, indices: tuple[Tensor, ...], values: Tensor | float,
                   accumulate: bool = False) -> Tensor:
        """``self[indices] = values`` in place (torch's signature: one int tensor per leading
        dim); ``accumulate=True`` adds instead, summing repeated indices."""
        key = tuple(indices)
        if not accumulate:
            return write_in_place(self, "index_put_", lambda t: t._assigned(key, values))
        return write_in_place(self, "index_put_", lambda t: accumulated(t, key, values))

    def clone(self: Tensor) -> Tensor:
        """A copy in memory of its own, as torch's (differentiable): neither in-place writes to
        either tensor nor writes into an array this one shares (``from_numpy``) reach the other.
        """
        if self.kind is FLOAT:
            return self * 1.0  # also a node of its own, so writes to the copy leave this valid
        if self.kind is INT:
            return self * 1
        if self.kind is BOOL:
            return self.logical_not().logical_not()
        return new(self.backend, self.primitive, self.kind)  # quantized values are never shared
