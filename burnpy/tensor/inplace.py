"""In-place writes (``t[idx] = v``, ``add_``, ``zero_``...): torch's semantics over burnpy's
immutable primitives.

The write computes the new value with the ordinary (recorded) op and rebinds the tensor to it.
On an ``Autodiff`` backend the backend decides what that means (``write_in_place``): a leaf that
requires grad refuses outside ``no_grad``; a tracked result keeps the write in its graph, so
gradients reach the old value and the operand; a node that saved the old value refuses to run
its backward, as torch's version counters do.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from typing import TYPE_CHECKING, Any

from burnpy.backend.errors import (
    DTypeError,
    InvalidArgumentError,
    ShapeError,
    article,
    describe,
)
from burnpy.tensor._core import FLOAT, INT
from burnpy.tensor.checks import broadcast_shapes
from burnpy.tensor.indexing import checked_indices

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


def accumulated(target: Tensor, indices: tuple[Tensor, ...], values: Tensor | float) -> Tensor:
    """``target`` with ``values`` added at ``indices`` (one int tensor per leading dim,
    broadcast together), repeated positions summed: ``index_put_(..., accumulate=True)``."""
    from burnpy.tensor.tensor import Tensor

    op = "index_put_"
    if not indices or len(indices) > target.ndim:
        raise ShapeError(f"{op}: expected 1 to {target.ndim} index tensors for a tensor of "
                         f"shape {describe(target.shape)}, got {len(indices)}")
    for i in indices:
        if not isinstance(i, Tensor) or i.kind is not INT:
            kind = f"{article(i.kind)} tensor" if isinstance(i, Tensor) else type(i).__name__
            raise DTypeError(f"{op}: indices must be int tensors, got {kind}; use a bool mask "
                             "with t[mask] = v instead")
    shape = indices[0].shape
    for i in indices[1:]:
        shape = broadcast_shapes(op, shape, i.shape)
    rest = target.shape[len(indices):]
    linear: Tensor | None = None
    for dim, (i, size) in enumerate(zip(indices, target.shape, strict=False)):
        i = checked_indices(i if i.shape == shape else i.expand(shape), size, op, dim)
        linear = i if linear is None else linear * size + i
    assert linear is not None
    count = math.prod(shape)
    if not isinstance(values, Tensor):
        values = Tensor.full(shape + rest, values, backend=target.backend,
                             device=target.device, dtype=target.dtype)
    values = values if values.shape == shape + rest else values.expand(shape + rest)
    flat = target.reshape((-1,) + rest)
    summed = flat.select_add(0, linear.reshape((count,)), values.reshape((count,) + rest))
    return summed.reshape(target.shape)
