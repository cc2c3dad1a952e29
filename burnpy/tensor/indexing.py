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

import functools
import math
from collections.abc import Sequence
from typing import TYPE_CHECKING, Any, Literal, overload

import numpy as np

from burnpy.backend.dtype import DType
from burnpy.backend.errors import (
    DTypeError,
    IndexOutOfBoundsError,
    InvalidArgumentError,
    KindError,
    ShapeError,
    article,
    describe,
)
from burnpy.capture import check_values, records
from burnpy.tensor._core import (
    BOOL,
    FLOAT,
    INT,
    TensorBase,
    check_same_backend,
    common_dtype,
    is_tensor,
    new,
)
from burnpy.tensor.autocast_hook import autocast_op
from burnpy.tensor.checks import as_int, broadcast_shapes, normalize_dim, numel, python_int
from burnpy.tensor.creation import CreationOps
from burnpy.tensor.layout import arange_of, cat, kind_op, zeros_of
from burnpy.tensor.scalar_dims import as_vector

if TYPE_CHECKING:
    from burnpy.backend import Backend
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
            start, stop, step = _bounds(k, size)
            if step < 0:
                flips.append(dim)
                # Index i of the original is index size-1-i of the flipped dim.
                count = _count(start, stop, step)
                start = size - 1 - start if count else 0
                step = -step
                stop = start + (count - 1) * step + 1 if count else 0
            count = _count(start, stop, step)
            stop = start + (count - 1) * step + 1 if count else start
            slices.append(slice(start, stop, step))
            out_shape.append(count)
            region.append(count)
        else:
            i = as_int(k)
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


def _bounds(k: slice, size: int) -> tuple[int, int, int]:
    """``k.indices(size)``, by comparisons where a bound or the size is a symbolic dim
    (``bp.compile(dynamic=True)``), which ``slice.indices`` would read as plain numbers."""
    if type(size) is int and all(type(b) is int or b is None for b in (k.start, k.stop, k.step)):
        return k.indices(size)
    step = 1 if k.step is None else as_int(k.step)
    if step < 0:
        return k.indices(int(size))  # a reversed slice: the size is pinned
    start = 0 if k.start is None else _clamped(as_int(k.start), size)
    stop = size if k.stop is None else _clamped(as_int(k.stop), size)
    return start, stop, step


def _clamped(bound: int, size: int) -> int:
    """A slice bound (negative from the end) clamped to ``[0, size]``, as ``slice.indices``."""
    if bound < 0:
        bound = bound + size
        return bound if bound > 0 else 0
    return bound if bound < size else size


def _count(start: int, stop: int, step: int) -> int:
    """``len(range(start, stop, step))`` for a positive or negative step, by arithmetic."""
    if step > 0:
        return (stop - start + step - 1) // step if stop > start else 0
    return (start - stop - step - 1) // -step if start > stop else 0


def slice_text(k: slice) -> str:
    """A slice as it was written: ``1:5:2``, ``::-1``, ``:``."""
    parts = ["" if v is None else str(v) for v in (k.start, k.stop, k.step)]
    return ":".join(parts if k.step is not None else parts[:2])


def is_basic(k: Any) -> bool:
    return k is None or k is Ellipsis or (isinstance(k, slice | int | np.integer) and not \
        isinstance(k, bool))


def as_index_tensor(t: Tensor, k: Any) -> Tensor:
    """An int or bool tensor from an advanced index (tensor, list, array, bool)."""
    if is_tensor(k):
        check_same_backend("index", t, k)
        if k.kind not in (INT, BOOL):
            raise KindError(f"index: tensors used as indices must be int or bool, got {k.kind} "
                            f"({k.dtype!r})")
        return k
    arr = np.asarray(k)
    if arr.dtype.kind not in "biu" and arr.size:
        raise KindError(f"index: index values must be ints or bools, got {arr.dtype}")
    dtype = DType.bool_ if arr.dtype.kind == "b" else t.backend.int_dtype
    return CreationOps.from_data(arr.astype(dtype.numpy), backend=t.backend, device=t.device)


def checked_indices(idx: Tensor, size: int, op: str, dim: int) -> Tensor:
    """Wrap negative indices and refuse out-of-range ones (reads min and max back; in a
    Capture recording, ``bp.compile``'s, the check stays in the graph, made again at each
    replay, and negatives are wrapped on the device)."""
    if idx.numel() == 0:
        return idx
    if records(idx.backend):
        check_values(idx.primitive, functools.partial(_check_range, op, dim, size))
        return idx.mask_where(idx < 0, idx + size)
    lo, hi = int(idx.min().item()), int(idx.max().item())
    _raise_out_of_range(op, dim, size, lo, hi)
    if lo < 0:
        idx = idx.mask_where(idx < 0, idx + size)
    return idx


def _raise_out_of_range(op: str, dim: int, size: int, lo: int, hi: int) -> None:
    if lo < -size or hi >= size:
        bad = lo if lo < -size else hi
        raise IndexOutOfBoundsError(f"{op}: index {bad} is out of bounds for dim {dim} with "
                                    f"size {size}")


def _check_range(op: str, dim: int, size: int, b: type[Backend], p: Any) -> None:
    """``checked_indices``' bounds check on the int primitive ``p`` of ``b``."""
    host = b.int_into_data(p).array
    _raise_out_of_range(op, dim, size, int(host.min()), int(host.max()))


def _advanced_positions(t: Tensor, key: tuple[Any, ...]) -> tuple[tuple[slice, ...], list[int],
                                                                  list[Tensor]]:
    """Split a key holding advanced indices into full slices for the basic parts, the dims
    the advanced parts index, and their int index tensors. As in NumPy, ints count as 0-d
    advanced indices here, and a bool mask over k dims becomes k int index tensors."""
    parts: list[Any] = []
    for k in key:
        if k is None:
            raise IndexOutOfBoundsError("index: None cannot be combined with tensor indices")
        if k is Ellipsis or isinstance(k, slice):
            parts.append(k)
        elif is_basic(k):
            parts.append(CreationOps.from_data(int(k), backend=t.backend, device=t.device,
                                               dtype=t.backend.int_dtype))
        else:
            parts.append(as_index_tensor(t, k))
    consumed = sum(p.ndim if is_tensor(p) and p.kind is BOOL else 1
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


def take(x: Tensor, index: Tensor) -> Tensor:
    """Elements of the flattened tensor at ``index`` (negative indices count from the end)."""
    if index.kind is not INT:
        raise KindError(f"take: index must be an int tensor, got {index.kind}")
    flat = x.reshape(-1)
    return flat.index_select(0, index.reshape(-1)).reshape(index.shape)


def take_along_dim(x: Tensor, indices: Tensor, dim: int | None) -> Tensor:
    """``gather`` with ``x`` and ``indices`` broadcast against each other except along ``dim``."""
    if indices.kind is not INT:
        raise KindError(f"take_along_dim: indices must be an int tensor, got {indices.kind}")
    if dim is None:
        return x.reshape(-1).gather(0, indices.reshape(-1))
    if x.ndim != indices.ndim:
        raise ShapeError(f"take_along_dim: input {describe(x.shape)} and indices "
                         f"{describe(indices.shape)} need the same number of dims")
    d = normalize_dim("take_along_dim", dim, x.ndim)
    xs = list(x.shape)
    ids = list(indices.shape)
    xs[d] = ids[d] = 1
    common = list(broadcast_shapes("take_along_dim", tuple(xs), tuple(ids)))
    xt, it = list(common), list(common)
    xt[d], it[d] = x.shape[d], indices.shape[d]
    idx = indices.expand(tuple(it))
    size = x.shape[d]
    idx = idx.mask_where(idx < 0, idx + size)
    return x.expand(tuple(xt)).gather(d, idx)


def masked_select(x: Tensor, mask: Tensor) -> Tensor:
    """The elements where ``mask`` (broadcast with ``x``) is true, as a 1-d tensor."""
    if mask.kind is not BOOL:
        raise KindError(f"masked_select: mask must be a bool tensor, got {mask.kind}")
    shape = broadcast_shapes("masked_select", x.shape, mask.shape)
    return x.expand(shape).reshape(-1)[mask.expand(shape).reshape(-1)]


def _dim_mask(x: Tensor, d: int, index: Tensor, op: str) -> Tensor:
    """A bool tensor, broadcastable to ``x``, true at the positions ``index`` names along ``d``."""
    if index.kind is not INT or index.ndim > 1:
        raise KindError(f"{op}: index must be a 0-d or 1-d int tensor, got {index.kind} of "
                        f"shape {describe(index.shape)}")
    size = x.shape[d] if x.ndim else 1
    idx = checked_indices(index.reshape(-1), size, op, d)
    hit = (arange_of(x, size).reshape(size, 1) == idx.reshape(1, -1)).any(1)
    return hit.reshape((size,) + (1,) * (x.ndim - d - 1)) if x.ndim else hit.reshape(())


def index_fill(x: Tensor, dim: int, index: Tensor, value: float | Tensor) -> Tensor:
    """A copy with the slices at ``index`` along ``dim`` set to ``value``."""
    d = normalize_dim("index_fill", dim, max(x.ndim, 1))
    mask = _dim_mask(x, d, index, "index_fill")
    if isinstance(value, TensorBase):
        if value.ndim != 0:
            raise ShapeError(f"index_fill: value must be 0-d, got {describe(value.shape)}")
        return x.mask_where(mask, value.cast(x.dtype).expand(x.shape))
    return x.mask_fill(mask, value)


def scatter_region(x: Tensor, index: Tensor, src: Tensor, d: int, op: str) -> tuple[Tensor,
                                                                                      Tensor]:
    """``src`` cut to ``index``'s shape, and the region of ``x`` a scatter along ``d`` touches."""
    if index.kind is not INT:
        raise KindError(f"{op}: index must be an int tensor, got {index.kind}")
    if index.ndim != x.ndim or src.ndim != x.ndim:
        raise ShapeError(f"{op}: self {describe(x.shape)}, index {describe(index.shape)} and "
                         f"src {describe(src.shape)} need the same number of dims")
    for k in range(x.ndim):
        if index.shape[k] > src.shape[k] or (k != d and index.shape[k] > x.shape[k]):
            raise ShapeError(f"{op}: index {describe(index.shape)} is larger than src "
                             f"{describe(src.shape)} or self {describe(x.shape)} at dim {k}")
    if src.shape != index.shape:
        src = src[tuple(slice(0, s) for s in index.shape)]
    region = x[tuple(slice(None) if k == d else slice(0, s) for k, s in enumerate(index.shape))]
    return src, region


def scatter_reduce(x: Tensor, dim: int, index: Tensor, src: Tensor, reduce: str,
                   include_self: bool) -> Tensor:
    """torch.scatter_reduce: ``src`` reduced into ``x`` at ``index`` along ``dim``.

    ``sum`` and ``mean`` use ``scatter_add``; ``prod``, ``amax`` and ``amin`` compare every
    index with every target position (memory ``index.numel() * x.shape[dim]``), so their
    gradients are those of ``prod``/``amax``/``amin`` over the candidates: ties split evenly.
    """
    op = "scatter_reduce"
    if reduce not in ("sum", "prod", "mean", "amax", "amin"):
        raise InvalidArgumentError(f"{op}: reduce must be sum, prod, mean, amax or amin, got "
                                   f"{reduce!r}")
    check_same_backend(op, x, src)
    if src.kind is not x.kind:
        raise DTypeError(f"{op}: src is {src.kind} but self is {x.kind}")
    src = src.cast(x.dtype)
    if x.ndim == 0:
        return scatter_reduce(x.reshape(1), 0, index.reshape(-1), src.reshape(-1), reduce,
                              include_self).reshape(())
    d = normalize_dim(op, dim, x.ndim)
    if index.numel() == 0:
        return x
    size = x.shape[d]
    index = index.mask_where(index < 0, index + size)
    src, region = scatter_region(x, index, src, d, op)
    hits = zeros_of(region, region.shape).scatter_add(d, index, zeros_of(src, src.shape) + 1)
    hit = hits > 0
    if reduce in ("sum", "mean"):
        base = region if include_self else region.mask_fill(hit, 0)
        total = base.scatter_add(d, index, src)
        if reduce == "sum":
            result = total
        else:
            n = hits + 1 if include_self else hits.clamp_min(1)
            result = total / n if x.kind is FLOAT else total.floor_div(n)
            if not include_self:
                result = region.mask_where(hit, result)
    else:
        srcm, idxm = src.movedim(d, -1), index.movedim(d, -1)
        onehot = idxm.unsqueeze(-1) == arange_of(x, size)  # [..., K, J]
        fill: float = 1
        if reduce != "prod":
            lowest = reduce == "amax"
            if x.kind is INT:
                info = np.iinfo(x.dtype.numpy)
                fill = int(info.min if lowest else info.max)
            else:
                fill = float("-inf") if lowest else float("inf")
        cand = srcm.unsqueeze(-1).expand(onehot.shape).mask_where(
            ~onehot, zeros_of(x, ()) + fill)
        if include_self:
            cand = cat([cand, region.movedim(d, -1).unsqueeze(-2)], -2)
        red = getattr(cand, reduce)(-2)  # [..., J]
        result = red.movedim(-1, d)
        if not include_self:
            result = region.mask_where(hit, result)
    if region.shape == x.shape:
        return result
    key = tuple(slice(None) if kk == d else slice(0, s) for kk, s in enumerate(index.shape))
    return x.index_put(key, result)


def accumulated(target: Tensor, indices: tuple[Tensor, ...], values: Tensor | float) -> Tensor:
    """``target`` with ``values`` added at ``indices`` (one int tensor per leading dim,
    broadcast together), repeated positions summed: ``index_put_(..., accumulate=True)``."""
    op = "index_put_"
    if not indices or len(indices) > target.ndim:
        raise ShapeError(f"{op}: expected 1 to {target.ndim} index tensors for a tensor of "
                         f"shape {describe(target.shape)}, got {len(indices)}")
    for i in indices:
        if not isinstance(i, TensorBase) or i.kind is not INT:
            kind = f"{article(i.kind)} tensor" if isinstance(i, TensorBase) else type(i).__name__
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
    if not isinstance(values, TensorBase):
        values = CreationOps.full(shape + rest, values, backend=target.backend,
                                  device=target.device, dtype=target.dtype)
    values = values if values.shape == shape + rest else values.expand(shape + rest)
    flat = target.reshape((-1,) + rest)
    summed = flat.select_add(0, linear.reshape((count,)), values.reshape((count,) + rest))
    return summed.reshape(target.shape)



class IndexingOps:
    """``Tensor``'s indexing, gathers, scatters and selects (each returns a new tensor)."""

    __slots__ = ()


    def __getitem__(self: Tensor, key: Any) -> Tensor:
        """NumPy indexing: ints, slices (any step), ``None``, ``...``, int tensors or lists
        and bool masks. Basic indices become flip/slice/reshape; advanced ones one ``select``.
        """
        key = key if isinstance(key, tuple) else (key,)
        if all(is_basic(k) for k in key):
            view = apply_basic(self, key)
            if view is not self:
                view._view_of = (self, key, self.primitive)
            return view
        return getitem_advanced(self, key)

    def index_put(self: Tensor, key: Any, value: Any, accumulate: bool = False) -> Tensor:
        """A copy with ``self[key] = value`` applied (the functional form of ``__setitem__``);
        ``accumulate=True`` (torch's, ``key`` a tuple of index tensors) adds instead, summing
        repeated indices."""
        if accumulate:
            indices: list[Tensor] = []
            for i in key if isinstance(key, tuple | list) else (key,):
                if is_tensor(i) and i.kind is BOOL:  # a mask: its k-d positions
                    indices.extend(i.nonzero(as_tuple=True))
                else:
                    indices.append(i)
            return accumulated(self, tuple(indices), value)
        return self._assigned(key, value)

    def _assigned(self: Tensor, key: Any, value: Any) -> Tensor:
        key = key if isinstance(key, tuple) else (key,)
        if not isinstance(value, TensorBase):
            value = CreationOps.full((), value, backend=self.backend, device=self.device,
                                     dtype=self.dtype)
        check_same_backend("setitem", self, value)
        if value.kind is not self.kind:
            raise DTypeError(f"setitem: cannot assign {article(value.kind)} value "
                             f"({value.dtype!r}) "
                             f"into {article(self.kind)} tensor ({self.dtype!r})")
        value = value.cast(self.dtype)
        if len(key) == 1 and not is_basic(key[0]):
            idx = as_index_tensor(self, key[0])
            if idx.kind is BOOL:
                if idx.shape != self.shape[:idx.ndim]:
                    raise ShapeError(f"setitem: mask of shape {describe(idx.shape)} does not "
                                     f"match the tensor's leading dims {describe(self.shape)}")
                mask = idx.reshape(idx.shape + (1,) * (self.ndim - idx.ndim))
                if value.ndim == 0:
                    return self.mask_where(mask, value.expand(self.shape))
                if value.shape == self.shape or broadcast_shapes("setitem", value.shape,
                                                                 self.shape) == self.shape:
                    return self.mask_where(mask, value)
            if idx.kind is INT:
                idx = checked_indices(idx, self.shape[0], "setitem", 0)
                if idx.ndim == 1:
                    region = (idx.shape[0],) + self.shape[1:]
                    value = value.expand(region) if value.shape != region else value
                    return self.select_assign(0, idx, value)
        if not all(is_basic(k) for k in key):
            raise IndexOutOfBoundsError(
                "setitem: assignment supports basic indices, one bool mask over the leading "
                "dims, or one 1-d int index on dim 0; use index_put-free forms such as "
                "scatter/select_assign for other patterns")
        full = expand_ellipsis(key, self.ndim)
        info = resolve_basic(full, self.shape)
        target = self.flip(info.flips) if info.flips else self
        region = info.region_shape
        if value.shape != region:
            value = value.reshape(value.shape) if value.ndim == 0 else value
            squeezed = tuple(s for s in region)
            try:
                value = value.expand(info.out_shape).reshape(squeezed)
            except ShapeError:
                raise ShapeError(f"setitem: value of shape {describe(value.shape)} cannot be "
                                 f"broadcast to the indexed region {describe(info.out_shape)}"
                                 ) from None
        out = new(self.backend, kind_op(target, "slice_assign")(
            target.primitive, info.slices, value.primitive), self.kind)
        return out.flip(info.flips) if info.flips else out

    def slice_assign(self: Tensor, ranges: Sequence[tuple[int, int] | slice | int | None],
                     value: Tensor) -> Tensor:
        """A copy with the region at ``ranges`` replaced by ``value``."""
        key = tuple(slice(*r) if isinstance(r, tuple) else (slice(None) if r is None else r)
                    for r in ranges)
        return self._assigned(key, value)

    def gather(self: Tensor, dim: int, indices: Tensor) -> Tensor:
        """``out[i][j] = self[i][indices[i][j]]`` along ``dim`` (torch.gather)."""
        if indices.numel() == 0 and indices.kind is INT:
            check_same_backend("gather", self, indices)
            normalize_dim("gather", dim, max(self.ndim, 1))
            return self.reshape(-1).slice_dim(0, 0, 0).reshape(indices.shape)
        if self.ndim == 0:
            return as_vector(self, "gather", dim, lambda v: v.gather(0, indices.reshape(-1)),
                             indices.shape)
        d, idx = gather_args(self, dim, indices, "gather")
        return new(self.backend, kind_op(self, "gather")(self.primitive, d, idx.primitive),
                   self.kind)

    def scatter(self: Tensor, dim: int, indices: Tensor, values: Tensor | float,
                reduce: Literal["add", "multiply"] | None = None) -> Tensor:
        """A copy with ``values`` (a tensor or one number) written at ``indices`` along ``dim``
        (torch.scatter); ``reduce="add"`` sums them in, ``"multiply"`` multiplies them in."""
        if not isinstance(values, TensorBase):
            values = CreationOps.full(indices.shape, values, backend=self.backend,
                                      device=self.device, dtype=self.dtype)
        if self.ndim == 0:
            vals = values
            return as_vector(self, "scatter", dim, lambda v: v.scatter(
                0, indices.reshape(-1), vals.reshape(-1), reduce))
        if reduce is None:
            return scatter_into(self, dim, indices, values, "scatter")
        if reduce == "add":
            return self.scatter_add(dim, indices, values)
        if reduce != "multiply":
            raise InvalidArgumentError(f"scatter: reduce must be 'add' or 'multiply', got "
                                       f"{reduce!r}")
        return scatter_multiply(self, dim, indices, values)

    def scatter_add(self: Tensor, dim: int, indices: Tensor, values: Tensor) -> Tensor:
        """A copy with ``values`` summed in at ``indices`` along ``dim`` (torch.scatter_add)."""
        if self.ndim == 0:
            return as_vector(self, "scatter_add", dim, lambda v: v.scatter_add(
                0, indices.reshape(-1), values.reshape(-1)))
        return scatter_into(self, dim, indices, values, "scatter_add")

    def select(self: Tensor, dim: int, index: int | Tensor) -> Tensor:
        """The slice at ``index`` along ``dim``, that dim removed (torch.select; a negative
        index counts from the end). Burn's ``select`` is ``index_select`` here."""
        d = normalize_dim("select", dim, self.ndim)
        size = self.shape[d]
        i = python_int("select", "index", index)
        if not -size <= i < size:
            raise IndexOutOfBoundsError(f"select: index {i} is out of bounds for dim {dim} with "
                                        f"size {size} (shape {describe(self.shape)})")
        i += size if i < 0 else 0
        return self.slice_dim(d, i, i + 1).squeeze(d)

    def index_select(self: Tensor, dim: int, indices: Tensor | Sequence[int]) -> Tensor:
        """Slices along ``dim`` at 1-d ``indices`` (torch.index_select; Burn's select)."""
        if self.ndim == 0:
            return as_vector(self, "index_select", dim, lambda v: v.index_select(0, indices))
        d, idx = select_args(self, dim, indices, "index_select")
        return new(self.backend, kind_op(self, "select")(self.primitive, d, idx.primitive),
                   self.kind)

    def select_assign(self: Tensor, dim: int, indices: Tensor | Sequence[int],
                      values: Tensor) -> Tensor:
        """A copy with the slices at ``indices`` along ``dim`` replaced by ``values``."""
        if self.ndim == 0:
            return as_vector(self, "select_assign", dim,
                             lambda v: v.select_assign(0, indices, values.reshape(-1)))
        return select_write(self, dim, indices, values, "select_assign")

    def select_add(self: Tensor, dim: int, indices: Tensor | Sequence[int],
                   values: Tensor, alpha: float = 1) -> Tensor:
        """A copy with ``alpha * values`` summed into the slices at ``indices``
        (torch.index_add)."""
        if alpha != 1:
            values = values * alpha
        if self.ndim == 0:
            return as_vector(self, "select_add", dim,
                             lambda v: v.select_add(0, indices, values.reshape(-1)))
        return select_write(self, dim, indices, values, "select_add")

    index_add = select_add

    def argwhere(self: Tensor) -> Tensor:
        """Indices of non-zero elements, shape ``[n, ndim]``."""
        m = self if self.kind is BOOL else self != 0
        return new(self.backend, self.backend.bool_argwhere(m.primitive), INT)

    @overload
    def nonzero(self: Tensor, *, as_tuple: Literal[False] = ...) -> Tensor: ...

    @overload
    def nonzero(self: Tensor, *, as_tuple: Literal[True]) -> tuple[Tensor, ...]: ...

    def nonzero(self: Tensor, *, as_tuple: bool = False) -> Tensor | tuple[Tensor, ...]:
        """torch.nonzero: the indices of the non-zero elements as ``[n, ndim]`` (``argwhere``);
        with ``as_tuple=True`` one int tensor per dim (a 0-d tensor counts as one dim of size 1,
        as torch's)."""
        if not as_tuple:
            return self.argwhere()
        if self.ndim == 0:
            return self.reshape(1).nonzero(as_tuple=True)
        m = self if self.kind is BOOL else self != 0
        return tuple(new(self.backend, p, INT) for p in self.backend.bool_nonzero(m.primitive))

    def take(self: Tensor, index: Tensor) -> Tensor:
        """Elements of the flattened tensor at ``index``, in ``index``'s shape."""
        return take(self, index)

    def take_along_dim(self: Tensor, indices: Tensor, dim: int | None = None) -> Tensor:
        """``gather`` along ``dim`` with broadcasting (of the flattened tensor when None)."""
        return take_along_dim(self, indices, dim)

    def masked_select(self: Tensor, mask: Tensor) -> Tensor:
        """The elements where ``mask`` is true, as a 1-d tensor."""
        return masked_select(self, mask)

    def index_fill(self: Tensor, dim: int, index: Tensor, value: float | Tensor) -> Tensor:
        """A copy with the slices at ``index`` along ``dim`` set to ``value``."""
        return index_fill(self, dim, index, value)

    @autocast_op("index_copy")
    def index_copy(self: Tensor, dim: int, index: Tensor, source: Tensor) -> Tensor:
        """A copy with the slices at ``index`` along ``dim`` replaced by ``source``'s."""
        return self.select_assign(dim, index, source)

    def slice_scatter(self: Tensor, src: Tensor, dim: int = 0, start: int | None = None,
                      end: int | None = None, step: int = 1) -> Tensor:
        """A copy with ``self[..., start:end:step, ...]`` (along ``dim``) replaced by ``src``."""
        d = normalize_dim("slice_scatter", dim, self.ndim)
        key = (slice(None),) * d + (slice(start, end, step),)
        expected = self[key].shape
        if src.shape != expected:
            raise ShapeError(f"slice_scatter: src {describe(src.shape)} must have the slice's "
                             f"shape {describe(expected)}")
        return self._assigned(key, src)

    def select_scatter(self: Tensor, src: Tensor, dim: int, index: int) -> Tensor:
        """A copy with the slice at ``index`` along ``dim`` replaced by ``src``."""
        d = normalize_dim("select_scatter", dim, self.ndim)
        size = self.shape[d]
        if not -size <= index < size:
            raise IndexOutOfBoundsError(f"select_scatter: index {index} is out of range for dim "
                                        f"{dim} of size {size}")
        expected = self.shape[:d] + self.shape[d + 1:]
        if src.shape != expected:
            raise ShapeError(f"select_scatter: src {describe(src.shape)} must have shape "
                             f"{describe(expected)}")
        return self._assigned((slice(None),) * d + (index,), src)

    @autocast_op("scatter_reduce")
    def scatter_reduce(self: Tensor, dim: int, index: Tensor, src: Tensor, reduce: str, *,
                       include_self: bool = True) -> Tensor:
        """``src`` reduced into a copy at ``index`` along ``dim`` with ``reduce`` (sum, prod,
        mean, amax, amin); ``include_self=False`` leaves this tensor's values out."""
        return scatter_reduce(self, dim, index, src, reduce, include_self)

    # Last in the class body: from here on the name would shadow the builtin type in annotations.
    def slice(self: Tensor, ranges: Sequence[tuple[int, int] | slice | int | None]) -> Tensor:
        """Burn's ``slice``: one range per leading dim (``(start, end)``, a slice or None)."""
        key = tuple(slice(*r) if isinstance(r, tuple) else (slice(None) if r is None else r)
                    for r in ranges)
        return self[key]
