"""Tensor layout ops: reshape, permute, expand, repeat, flip, cat, stack, split, unfold."""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

from burnpy.backend.errors import (
    KindError,
    ShapeError,
    describe,
)
from burnpy.tensor._core import FLOAT, QUANTIZED, check_same_backend, common_dtype, new
from burnpy.tensor.checks import normalize_dim
from burnpy.tensor.quantized import check_same_scheme

if TYPE_CHECKING:
    from burnpy.tensor.tensor import Tensor

PREFIX = {"float": "float_", "int": "int_", "bool": "bool_", "quantized": "q_"}


def kind_op(t: Tensor, op: str) -> Any:
    """The backend op ``op`` for ``t``'s kind (``float_reshape``, ``int_reshape``...)."""
    try:
        return getattr(t.backend, PREFIX[t.kind] + op)
    except AttributeError:
        raise KindError(f"{op}: not available for {t.kind} tensors on backend "
                        f"{t.backend.name()}") from None


def dims_arg(dims: tuple[Any, ...]) -> tuple[int, ...]:
    """Accept ``f(2, 3)`` and ``f((2, 3))`` alike."""
    if len(dims) == 1 and isinstance(dims[0], Sequence):
        return tuple(dims[0])
    return tuple(dims)


def cat(tensors: Sequence[Tensor], dim: int = 0) -> Tensor:
    """Concatenate tensors of one backend, kind and rank along an existing dim."""
    tensors = list(tensors)
    if not tensors:
        raise ShapeError("cat: needs at least one tensor")
    if any(t.ndim != 1 for t in tensors):
        # torch's legacy rule: 1-d empty tensors are skipped beside tensors of other ranks.
        tensors = [t for t in tensors if t.shape != (0,)]
    first = tensors[0]
    d = normalize_dim("cat", dim, first.ndim)
    dtype = first.dtype
    for t in tensors[1:]:
        check_same_backend("cat", first, t)
        if t.kind is not first.kind:
            raise KindError(f"cat: mixes {first.kind} and {t.kind} tensors")
        if (first.kind is FLOAT or first.kind == "int") and t.dtype is not dtype:
            dtype = common_dtype("cat", first.cast(dtype), t)
        if t.ndim != first.ndim or any(a != b for i, (a, b) in enumerate(
                zip(t.shape, first.shape, strict=True)) if i != d):
            raise ShapeError(f"cat: shapes {[describe(x.shape) for x in tensors]} differ "
                             f"outside dim {dim}")
    if len(tensors) == 1:
        return first
    if first.kind is QUANTIZED:
        for t in tensors[1:]:
            check_same_scheme("cat", first, t)
        return new(first.backend, first.backend.q_cat([t.primitive for t in tensors], d),
                   QUANTIZED)
    parts = [t.primitive if t.dtype is dtype else t.cast(dtype).primitive for t in tensors]
    return new(first.backend, kind_op(first, "cat")(parts, d), first.kind)


def stack(tensors: Sequence[Tensor], dim: int = 0) -> Tensor:
    """Join equal-shaped tensors along a new dim."""
    tensors = list(tensors)
    if not tensors:
        raise ShapeError("stack: needs at least one tensor")
    shape = tensors[0].shape
    for t in tensors:
        if t.shape != shape:
            raise ShapeError(f"stack: shapes differ: {[describe(x.shape) for x in tensors]}")
    d = normalize_dim("stack", dim, len(shape), inserting=True)
    return cat([t.unsqueeze(d) for t in tensors], d)
