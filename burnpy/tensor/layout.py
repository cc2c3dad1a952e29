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
    if len(dims) == 1:
        first = dims[0]
        if isinstance(first, tuple):  # checked first: an ABC's isinstance costs more
            return first
        if isinstance(first, Sequence):
            return tuple(first)
    return tuple(dims)


def cat(tensors: Sequence[Tensor], dim: int = 0) -> Tensor:
    """Concatenate tensors of one backend, kind and rank along an existing dim."""
    tensors = list(tensors)
    if not tensors:
        raise ShapeError("cat: needs at least one tensor")
    if (0,) in [t.shape for t in tensors] and any(t.ndim != 1 for t in tensors):
        # torch's legacy rule: 1-d empty tensors are skipped beside tensors of other ranks.
        tensors = [t for t in tensors if t.shape != (0,)]
    first = tensors[0]
    backend, kind, shape = first.backend, first.kind, first.shape
    d = normalize_dim("cat", dim, len(shape))
    dtype = first.dtype
    outside = shape[:d] + shape[d + 1:]
    cast = False
    for t in tensors[1:]:
        if t.backend is not backend or backend.multi_device:
            check_same_backend("cat", first, t)
        if t.kind is not kind:
            raise KindError(f"cat: mixes {kind} and {t.kind} tensors")
        if (kind is FLOAT or kind == "int") and t.dtype is not dtype:
            dtype, cast = common_dtype("cat", first.cast(dtype), t), True
        ts = t.shape
        if len(ts) != len(shape) or ts[:d] + ts[d + 1:] != outside:
            raise ShapeError(f"cat: shapes {[describe(x.shape) for x in tensors]} differ "
                             f"outside dim {dim}")
    if len(tensors) == 1:
        return first
    if kind is QUANTIZED:
        for t in tensors[1:]:
            check_same_scheme("cat", first, t)
        return new(backend, backend.q_cat([t.primitive for t in tensors], d), QUANTIZED)
    parts = ([t.primitive if t.dtype is dtype else t.cast(dtype).primitive for t in tensors]
             if cast else [t.primitive for t in tensors])
    return new(backend, kind_op(first, "cat")(parts, d), kind)


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
