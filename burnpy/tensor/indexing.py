"""Tensor indexing: ``t[...]`` and ``t[...] = v`` with NumPy's rules, plus gather, scatter,
select and their assign/add forms.

Basic indices (ints, slices with any step, ``None``, ``...``) become at most one flip, one
slice and one reshape. Advanced indices (int tensors or lists, bool masks) become one
``select`` over the merged indexed dims, so every form is differentiable through the
backend's ops. Index tensors are bounds-checked here; negative indices wrap as in NumPy.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

import numpy as np

from burnpy.backend.dtype import DType
from burnpy.backend.errors import (
    DTypeError,
    IndexOutOfBoundsError,
    KindError,
    ShapeError,
    article,
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


def _expand_ellipsis(key: tuple[Any, ...], ndim: int) -> tuple[Any, ...]:
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


def _resolve_basic(key: tuple[Any, ...], shape: tuple[int, ...]) -> _Basic:
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
            start, stop, step = k.indices(size)
            if step == 0:
                raise IndexOutOfBoundsError("index: slice step cannot be zero")
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


def _is_basic(k: Any) -> bool:
    return k is None or k is Ellipsis or (isinstance(k, slice | int | np.integer) and not \
        isinstance(k, bool))


def _as_index_tensor(t: Tensor, k: Any) -> Tensor:
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


def _checked_indices(idx: Tensor, size: int, op: str, dim: int) -> Tensor:
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
        elif _is_basic(k):
            parts.append(Tensor.from_data(int(k), backend=t.backend, device=t.device,
                                          dtype=t.backend.int_dtype))
        else:
            parts.append(_as_index_tensor(t, k))
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
            for j, col in enumerate(p.nonzero()):
                dims.append(dim + j)
                indices.append(col)
                basic.append(slice(None))
            dim += p.ndim
        else:
            dims.append(dim)
            indices.append(_checked_indices(p, t.shape[dim], "index", dim))
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


def _getitem_advanced(t: Tensor, key: tuple[Any, ...]) -> Tensor:
    basic_key, dims, indices = _advanced_positions(t, key)
    sub = _apply_basic(t, basic_key)
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


def _apply_basic(t: Tensor, key: tuple[Any, ...]) -> Tensor:
    key = _expand_ellipsis(key, t.ndim)
    info = _resolve_basic(key, t.shape)
    out = t
    if info.flips:
        out = out.flip(info.flips)
    if any(s.start != 0 or s.stop != n or s.step != 1
           for s, n in zip(info.slices, t.shape, strict=True)):
        out = new(t.backend, kind_op(out, "slice")(out.primitive, info.slices), t.kind)
    return out.reshape(info.out_shape)


class IndexingOps:
    """``[...]`` reads and writes, gather/scatter/select, mixed into Tensor."""

    __slots__ = ()

    def __getitem__(self: Tensor, key: Any) -> Tensor:
        key = key if isinstance(key, tuple) else (key,)
        if all(_is_basic(k) for k in key):
            return _apply_basic(self, key)
        return _getitem_advanced(self, key)

    def __setitem__(self: Tensor, key: Any, value: Any) -> None:
        """Replace the indexed region (the tensor's primitive is swapped; tracked under
        autodiff like any other op)."""
        self.primitive = self._assigned(key, value).primitive

    def index_put(self: Tensor, key: Any, value: Any) -> Tensor:
        """A copy with ``self[key] = value`` applied (the functional form of ``__setitem__``)."""
        return self._assigned(key, value)

    def _assigned(self: Tensor, key: Any, value: Any) -> Tensor:
        from burnpy.tensor.tensor import Tensor

        key = key if isinstance(key, tuple) else (key,)
        if not isinstance(value, Tensor):
            value = Tensor.full((), value, backend=self.backend, device=self.device,
                                dtype=self.dtype)
        check_same_backend("setitem", self, value)
        if value.kind is not self.kind:
            raise DTypeError(f"setitem: cannot assign {article(value.kind)} value "
                             f"({value.dtype!r}) "
                             f"into {article(self.kind)} tensor ({self.dtype!r})")
        value = value.cast(self.dtype)
        if len(key) == 1 and not _is_basic(key[0]):
            idx = _as_index_tensor(self, key[0])
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
            idx = _checked_indices(idx, self.shape[0], "setitem", 0) if idx.kind is INT else None
            if idx is not None and idx.ndim == 1:
                region = (idx.shape[0],) + self.shape[1:]
                value = value.expand(region) if value.shape != region else value
                return self.select_assign(0, idx, value)
        if not all(_is_basic(k) for k in key):
            raise IndexOutOfBoundsError(
                "setitem: assignment supports basic indices, one bool mask over the leading "
                "dims, or one 1-d int index on dim 0; use index_put-free forms such as "
                "scatter/select_assign for other patterns")
        full = _expand_ellipsis(key, self.ndim)
        info = _resolve_basic(full, self.shape)
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

    def slice(self: Tensor, ranges: Sequence[tuple[int, int] | slice | int | None]) -> Tensor:
        """Burn's ``slice``: one range per leading dim (``(start, end)``, a slice or None)."""
        key = tuple(slice(*r) if isinstance(r, tuple) else (slice(None) if r is None else r)
                    for r in ranges)
        return self[key]

    def slice_assign(self: Tensor, ranges: Sequence[tuple[int, int] | slice | int | None],
                     value: Tensor) -> Tensor:
        """A copy with the region at ``ranges`` replaced by ``value``."""
        key = tuple(slice(*r) if isinstance(r, tuple) else (slice(None) if r is None else r)
                    for r in ranges)
        return self._assigned(key, value)

    def gather(self: Tensor, dim: int, indices: Tensor) -> Tensor:
        """``out[i][j] = self[i][indices[i][j]]`` along ``dim`` (torch.gather)."""
        d, idx = _gather_args(self, dim, indices, "gather")
        return new(self.backend, kind_op(self, "gather")(self.primitive, d, idx.primitive),
                   self.kind)

    def scatter(self: Tensor, dim: int, indices: Tensor, values: Tensor) -> Tensor:
        """A copy with ``values`` written at ``indices`` along ``dim`` (torch.scatter)."""
        return _scatter(self, dim, indices, values, "scatter")

    def scatter_add(self: Tensor, dim: int, indices: Tensor, values: Tensor) -> Tensor:
        """A copy with ``values`` summed in at ``indices`` along ``dim`` (torch.scatter_add)."""
        return _scatter(self, dim, indices, values, "scatter_add")

    def select(self: Tensor, dim: int, indices: Tensor | Sequence[int]) -> Tensor:
        """Slices along ``dim`` at 1-d ``indices`` (torch.index_select; Burn's select)."""
        d, idx = _select_args(self, dim, indices, "select")
        return new(self.backend, kind_op(self, "select")(self.primitive, d, idx.primitive),
                   self.kind)

    def index_select(self: Tensor, dim: int, indices: Tensor | Sequence[int]) -> Tensor:
        return self.select(dim, indices)

    def select_assign(self: Tensor, dim: int, indices: Tensor | Sequence[int],
                      values: Tensor) -> Tensor:
        """A copy with the slices at ``indices`` along ``dim`` replaced by ``values``."""
        return _select_write(self, dim, indices, values, "select_assign")

    def select_add(self: Tensor, dim: int, indices: Tensor | Sequence[int],
                   values: Tensor) -> Tensor:
        """A copy with ``values`` summed into the slices at ``indices`` (torch.index_add)."""
        return _select_write(self, dim, indices, values, "select_add")

    index_add = select_add

    def argwhere(self: Tensor) -> Tensor:
        """Indices of non-zero elements, shape ``[n, ndim]``."""
        m = self if self.kind is BOOL else self != 0
        return new(self.backend, self.backend.bool_argwhere(m.primitive), INT)

    def nonzero(self: Tensor) -> list[Tensor]:
        """One int tensor of indices per dim (NumPy's nonzero)."""
        m = self if self.kind is BOOL else self != 0
        return [new(self.backend, p, INT) for p in self.backend.bool_nonzero(m.primitive)]


def _gather_args(t: Tensor, dim: int, indices: Tensor, op: str) -> tuple[int, Tensor]:
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
    return d, _checked_indices(indices, t.shape[d], op, d)


def _scatter(t: Tensor, dim: int, indices: Tensor, values: Tensor, op: str) -> Tensor:
    d, idx = _gather_args(t, dim, indices, op)
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


def _select_args(t: Tensor, dim: int, indices: Any, op: str) -> tuple[int, Tensor]:
    idx = _as_index_tensor(t, indices)
    if idx.kind is not INT or idx.ndim != 1:
        raise ShapeError(f"{op}: indices must be a 1-d int tensor, got {idx.kind} of shape "
                         f"{describe(idx.shape)}")
    d = normalize_dim(op, dim, t.ndim)
    return d, _checked_indices(idx, t.shape[d], op, d)


def _select_write(t: Tensor, dim: int, indices: Any, values: Tensor, op: str) -> Tensor:
    d, idx = _select_args(t, dim, indices, op)
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
