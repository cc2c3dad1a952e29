"""The protocol layer's validation: each check runs once, here, before a backend op is called.

Every failure is a ``BurnpyError`` subclass whose message names the op and the offending
shapes, dtypes, kinds or devices.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from typing import Any

from burnpy.backend.errors import IndexOutOfBoundsError, InvalidArgumentError, ShapeError, describe

Shape = tuple[int, ...]


def broadcast_shapes(op: str, a: Shape, b: Shape) -> Shape:
    """NumPy broadcasting of two shapes, or a ShapeError naming ``op`` and both shapes."""
    if a == b:
        return a
    na, nb = len(a), len(b)
    n = max(na, nb)
    out = []
    for i in range(n):
        da = a[i - n + na] if i - n + na >= 0 else 1
        db = b[i - n + nb] if i - n + nb >= 0 else 1
        if da == db or db == 1:
            out.append(da)
        elif da == 1:
            out.append(db)
        else:
            raise ShapeError(f"{op}: shapes {describe(a)} and {describe(b)} do not broadcast "
                             f"(dim {i - n} is {da} vs {db})")
    return tuple(out)


def normalize_dim(op: str, dim: int, ndim: int, *, inserting: bool = False) -> int:
    """A dim in [0, ndim) (or [0, ndim] when ``inserting``), from a possibly negative one."""
    bound = ndim + 1 if inserting else ndim
    if not isinstance(dim, int) or isinstance(dim, bool):
        raise IndexOutOfBoundsError(f"{op}: dim must be an int, got {dim!r}")
    if -bound <= dim < bound:
        return dim + bound if dim < 0 else dim
    raise IndexOutOfBoundsError(
        f"{op}: dim {dim} is out of range for a tensor of {ndim} dim(s) "
        f"(expected -{bound} <= dim < {bound})")


def python_int(op: str, name: str, value: object) -> int:
    """``value`` as a Python int: an int, or anything with ``__index__`` (a 0-d int tensor,
    which torch takes for an index or a start too); never a float or a bool."""
    index = getattr(value, "__index__", None)
    if isinstance(value, bool | float) or index is None:
        raise InvalidArgumentError(f"{op}: {name} must be an int, got {value!r}")
    return int(index())


def normalize_dims(op: str, dims: Sequence[int], ndim: int) -> tuple[int, ...]:
    """Several dims normalized, rejecting repeats."""
    if not isinstance(dims, Sequence):
        raise IndexOutOfBoundsError(f"{op}: dims must be ints, got {dims!r}")
    out = tuple(normalize_dim(op, d, ndim) for d in dims)
    if len(set(out)) != len(out):
        raise IndexOutOfBoundsError(f"{op}: repeated dim in {tuple(dims)}")
    return out


def as_int(value: Any) -> int:
    """``int(value)``, except that an ``int`` (a symbolic dim of ``bp.compile(dynamic=True)``
    among them) is kept as it is: ``int()`` would bake a symbolic dim's value in."""
    return value if isinstance(value, int) and not isinstance(value, bool) else int(value)


def numel(shape: Shape) -> int:
    """The number of elements of ``shape`` (1 for a 0-d shape)."""
    return math.prod(shape)


def infer_shape(op: str, shape: Sequence[int], total: int, source: Shape) -> Shape:
    """A target shape with at most one ``-1`` resolved so it holds ``total`` elements."""
    shape = tuple(map(as_int, shape))
    if math.prod(shape) == total and all(s >= 0 for s in shape):  # (min() would order dims)
        return shape  # the common case: every size given, none negative
    unknown = [i for i, s in enumerate(shape) if s == -1]
    if len(unknown) > 1 or any(s < -1 for s in shape):
        raise ShapeError(f"{op}: invalid target shape {describe(shape)}")
    if unknown:
        known = numel(tuple(s for s in shape if s != -1))
        if known == 0 or total % known:
            raise ShapeError(f"{op}: cannot reshape {describe(source)} ({total} elements) "
                             f"into {describe(shape)}")
        shape = shape[:unknown[0]] + (total // known,) + shape[unknown[0] + 1:]
    if numel(shape) != total:
        raise ShapeError(f"{op}: cannot reshape {describe(source)} ({total} elements) "
                         f"into {describe(shape)} ({numel(shape)} elements)")
    return shape
