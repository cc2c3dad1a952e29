"""Tensor indexing: ``t[...]`` and ``t[...] = v`` with NumPy's rules, plus gather, scatter,
select and their assign/add forms.

Basic indices (ints, slices with any non-zero step, ``None``, ``...``) become at most one
flip, one slice and one reshape. Advanced indices (int tensors or lists, bool masks) become one
``select`` over the merged indexed dims, so every form is differentiable through the
backend's ops. Index tensors are bounds-checked here; negative indices wrap as in NumPy.
A negative step reverses as in NumPy (``t[::-1]``; torch refuses it); a zero step is an
``InvalidArgumentError``.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

import numpy as np

from burnpy.backend.dtype import DType
from burnpy.backend.errors import (
    DTypeError,
    IndexOutOfBoundsError,
    InvalidArgumentError,
    KindError,
    ShapeError,
    describe,
)
from burnpy.tensor._core import BOOL, FLOAT, INT, check_same_backend, common_dtype, new
from burnpy.tensor.checks import broadcast_shapes, normalize_dim, numel
from burnpy.tensor.layout import kind_op

if TYPE_CHECKING:
    from burnpy.tensor.tensor import Tensor


class _Basic:
    """A basic index resolved against a shape: flips, positive-step slices, and the result
    shape after dropping int-indexed dims and inserting ``None`` dims."""

    __slots__ = ("flips", "out_shape", "region_shape", "slices")

    def __init__(self, flips: tuple[int, ...], slices: tuple[slice, ...],
                 out_shape: tuple[int, ...], region_shape: tuple[int, ...]) -> None:
        self.flips, self.slices = flips, slices
        self.out_shape, self.region_shape = out_shape, region_shape


def expand_ellipsis(key: tuple[Any, ...], ndim: int) -> tuple[Any, ...]:
    n_ell = sum(1 for k in key if k is Ellipsis)
    if n_ell > 1:
        raise IndexOutOfBoundsError("index: an index can only have a single ellipsis ('...')")
    consumed = sum(1 for k in key if k is not None and k is not Ellipsis)
    if consumed > ndim:
        raise IndexOutOfBoundsError(f"index: too many indices ({consumed}) for a tensor of "
                                    f"{ndim} dim(s)")
    if n_ell:
        i = key.index(Ellipsis)
        key = key[:i] + (slice(None),) * (ndim - consumed) + key[i + 1:]
    return key


def resolve_basic(key: tuple[Any, ...], shape: tuple[int, ...]) -> _Basic:
    flips: list[int] = []
    slices: list[slice] = []
    out_shape: list[int] = []
    region: list[int] = []
    dim = 0
    for k in key:
        if k is None:
            out_shape.append(1)
            continue
        size = shape[dim]
        if isinstance(k, slice):
            if k.step == 0:
                raise InvalidArgumentError(
                    f"index: slice {slice_text(k)} has step 0 (dim {dim} of shape "
                    f"{describe(shape)}); a step must be non-zero")
            start, stop, step = k.indices(size)
            if step < 0:
                flips.append(dim)
                # Index i of the original is index size-1-i of the flipped dim.
                count = len(range(start, stop, step))
                start = size - 1 - start if count else 0
                step = -step
                stop = start + (count - 1) * step + 1 if count else 0
            count = len(range(start, stop, step))
            stop = start + (count - 1) * step + 1 if count else start
            slices.append(slice(start, stop, step))
            out_shape.append(count)
            region.append(count)
        else:
            i = int(k)
            if not -size <= i < size:
                raise IndexOutOfBoundsError(f"index: index {i} is out of bounds for dim {dim} "
                                            f"with size {size}")
            i += size if i < 0 else 0
            slices.append(slice(i, i + 1, 1))
            region.append(1)
        dim += 1
    for size in shape[dim:]:
        slices.append(slice(0, size, 1))
        out_shape.append(size)
        region.append(size)
    return _Basic(tuple(flips), tuple(slices), tuple(out_shape), tuple(region))


def slice_text(k: slice) -> str:
    """A slice as it was written: ``1:5:2``, ``::-1``, ``:``."""
    parts = ["" if v is None else str(v) for v in (k.start, k.stop, k.step)]
    return ":".join(parts if k.step is not None else parts[:2])


def is_basic(k: Any) -> bool:
    return k is None or k is Ellipsis or (isinstance(k, slice | int | np.integer) and not \
        isinstance(k, bool))


def as_index_tensor(t: Tensor, k: Any) -> Tensor:
    """An int or bool tensor from an advanced index (tensor, list, array, bool)."""
    from burnpy.tensor.tensor import Tensor

    if isinstance(k, Tensor):
        check_same_backend("index", t, k)
        if k.kind not in (INT, BOOL):
            raise KindError(f"index: tensors used as indices must be int or bool, got {k.kind} "
                            f"({k.dtype!r})")
        return k
    arr = np.asarray(k)
    if arr.dtype.kind not in "biu" and arr.size:
        raise KindError(f"index: index values must be ints or bools, got {arr.dtype}")
    dtype = DType.bool_ if arr.dtype.kind == "b" else t.backend.int_dtype
    return Tensor.from_data(arr.astype(dtype.numpy), backend=t.backend, device=t.device)


def checked_indices(idx: Tensor, size: int, op: str, dim: int) -> Tensor:
    """Wrap negative indices and refuse out-of-range ones (reads min and max back)."""
    if idx.numel() == 0:
        return idx
    lo, hi = int(idx.min().item()), int(idx.max().item())
    if lo < -size or hi >= size:
        bad = lo if lo < -size else hi
        raise IndexOutOfBoundsError(f"{op}: index {bad} is out of bounds for dim {dim} with "
                                    f"size {size}")
    if lo < 0:
        idx = idx.mask_where(idx < 0, idx + size)
    return idx


def _advanced_positions(t: Tensor, key: tuple[Any, ...]) -> tuple[tuple[slice, ...], list[int],
                                                                  list[Tensor]]:
    """Split a key holding advanced indices into full slices for the basic parts, the dims
    the advanced parts index, and their int index tensors. As in NumPy, ints count as 0-d
    advanced indices here, and a bool mask over k dims becomes k int index tensors."""
    from burnpy.tensor.tensor import Tensor

    parts: list[Any] = []
    for k in key:
        if k is None:
            raise IndexOutOfBoundsError("index: None cannot be combined with tensor indices")
        if k is Ellipsis or isinstance(k, slice):
            parts.append(k)
        elif is_basic(k):
            parts.append(Tensor.from_data(int(k), backend=t.backend, device=t.device,
                                          dtype=t.backend.int_dtype))
        else:
            parts.append(as_index_tensor(t, k))
    consumed = sum(p.ndim if isinstance(p, Tensor) and p.kind is BOOL else 1
                   for p in parts if p is not Ellipsis)
    if consumed > t.ndim:
        raise IndexOutOfBoundsError(f"index: too many indices ({consumed}) for a tensor of "
                                    f"{t.ndim} dim(s)")
    if Ellipsis in parts:
        i = parts.index(Ellipsis)
        parts[i:i + 1] = [slice(None)] * (t.ndim - consumed)
    basic: list[slice] = []
    dims: list[int] = []
    indices: list[Tensor] = []
    dim = 0
    for p in parts:
        if isinstance(p, slice):
            basic.append(p)
            dim += 1
        elif p.kind is BOOL:
            mshape = t.shape[dim:dim + p.ndim]
            if p.shape != mshape:
                raise ShapeError(f"index: mask of shape {describe(p.shape)} does not match "
                                 f"the indexed dims {describe(mshape)} of "
                                 f"{describe(t.shape)}")
            for j, col in enumerate(p.nonzero(as_tuple=True)):
                dims.append(dim + j)
                indices.append(col)
                basic.append(slice(None))
            dim += p.ndim
        else:
            dims.append(dim)
            indices.append(checked_indices(p, t.shape[dim], "index", dim))
            basic.append(slice(None))
            dim += 1
    return tuple(basic), dims, indices


def _linear_index(t: Tensor, dims: list[int], indices: list[Tensor]) -> tuple[Tensor, Tensor]:
    """Move the advanced dims to the front, merge them into one, and return that tensor with
    the broadcast linear index into the merged dim."""
    shape = indices[0].shape
    for idx in indices[1:]:
        shape = broadcast_shapes("index", shape, idx.shape)
    rest = [d for d in range(t.ndim) if d not in dims]
    moved = t.permute(dims + rest)
    sizes = [t.shape[d] for d in dims]
    merged = moved.reshape((numel(tuple(sizes)),) + tuple(t.shape[d] for d in rest))
    linear = indices[0].expand(shape)
    for idx, size in zip(indices[1:], sizes[1:], strict=True):
        linear = linear * size + idx.expand(shape)
    return merged, linear


def getitem_advanced(t: Tensor, key: tuple[Any, ...]) -> Tensor:
    basic_key, dims, indices = _advanced_positions(t, key)
    sub = apply_basic(t, basic_key)
    merged, linear = _linear_index(sub, dims, indices)
    flat = linear.reshape(-1)
    picked = new(t.backend, kind_op(merged, "select")(merged.primitive, 0, flat.primitive),
                 t.kind)
    out = picked.reshape(linear.shape + merged.shape[1:])
    # NumPy's placement: adjacent advanced dims stay where they were; separated ones go first.
    if dims == list(range(dims[0], dims[0] + len(dims))) and dims[0] > 0:
        nb, lead = linear.ndim, dims[0]
        out = out.permute(list(range(nb, nb + lead)) + list(range(nb))
                          + list(range(nb + lead, out.ndim)))
    return out


def apply_basic(t: Tensor, key: tuple[Any, ...]) -> Tensor:
    key = expand_ellipsis(key, t.ndim)
    info = resolve_basic(key, t.shape)
    out = t
    if info.flips:
        out = out.flip(info.flips)
    if any(s.start != 0 or s.stop != n or s.step != 1
           for s, n in zip(info.slices, t.shape, strict=True)):
        out = new(t.backend, kind_op(out, "slice")(out.primitive, info.slices), t.kind)
    return out.reshape(info.out_shape)


def gather_args(t: Tensor, dim: int, indices: Tensor, op: str) -> tuple[int, Tensor]:
    check_same_backend(op, t, indices)
    if indices.kind is not INT:
        raise KindError(f"{op}: indices must be an int tensor, got {indices.kind}")
    d = normalize_dim(op, dim, t.ndim)
    if indices.ndim != t.ndim:
        raise ShapeError(f"{op}: indices {describe(indices.shape)} must have as many dims as "
                         f"the tensor {describe(t.shape)}")
    for i, (a, s) in enumerate(zip(indices.shape, t.shape, strict=True)):
        if i != d and a > s:
            raise ShapeError(f"{op}: indices {describe(indices.shape)} exceed the tensor "
                             f"{describe(t.shape)} at dim {i}")
    return d, checked_indices(indices, t.shape[d], op, d)


def scatter_into(t: Tensor, dim: int, indices: Tensor, values: Tensor, op: str) -> Tensor:
    d, idx = gather_args(t, dim, indices, op)
    check_same_backend(op, t, values)
    if values.kind is not t.kind:
        raise DTypeError(f"{op}: values are {values.kind} but the tensor is {t.kind}")
    if values.ndim != t.ndim or any(a > v for a, v in zip(idx.shape, values.shape,
                                                           strict=True)):
        raise ShapeError(f"{op}: values {describe(values.shape)} must cover indices "
                         f"{describe(idx.shape)}")
    values = values.cast(t.dtype)
    return new(t.backend, kind_op(t, op)(t.primitive, d, idx.primitive, values.primitive),
               t.kind)


def scatter_multiply(t: Tensor, dim: int, indices: Tensor, values: Tensor) -> Tensor:
    """torch's ``scatter(reduce="multiply")``: ``t`` times ``values`` at ``indices``, repeated
    indices multiplying in turn. Each step along ``dim`` writes one factor per position (no
    repeats within a step), so the product is a composition of ``scatter`` and ``mul``."""
    d, _ = gather_args(t, dim, indices, "scatter")
    out = t
    for j in range(indices.shape[d]):
        factor = t.ones_like().scatter(d, indices.narrow(d, j, 1), values.narrow(d, j, 1))
        out = out * factor
    return out


def select_args(t: Tensor, dim: int, indices: Any, op: str) -> tuple[int, Tensor]:
    idx = as_index_tensor(t, indices)
    if idx.kind is not INT or idx.ndim != 1:
        raise ShapeError(f"{op}: indices must be a 1-d int tensor, got {idx.kind} of shape "
                         f"{describe(idx.shape)}")
    d = normalize_dim(op, dim, t.ndim)
    return d, checked_indices(idx, t.shape[d], op, d)


def select_write(t: Tensor, dim: int, indices: Any, values: Tensor, op: str) -> Tensor:
    d, idx = select_args(t, dim, indices, op)
    check_same_backend(op, t, values)
    if values.kind is not t.kind:
        raise DTypeError(f"{op}: values are {values.kind} but the tensor is {t.kind}")
    expected = t.shape[:d] + (idx.shape[0],) + t.shape[d + 1:]
    if values.shape != expected:
        raise ShapeError(f"{op}: values {describe(values.shape)} must have shape "
                         f"{describe(expected)}")
    if t.kind in (FLOAT, INT):
        common_dtype(op, t, values)
    values = values.cast(t.dtype)
    return new(t.backend, kind_op(t, op)(t.primitive, d, idx.primitive, values.primitive),
               t.kind)
