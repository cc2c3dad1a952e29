"""Tensor reductions, scans and sorting, with torch's ``dim``/``keepdim`` spelling.

Backend ``_dim`` reductions keep the reduced dim; ``keepdim=False`` (the default) squeezes it
here. Full reductions return shape ``()``. Ops that find positions (``max(dim)``, ``sort``,
``topk``, ``cummax``...) return ``ValuesIndices``, the named tuple torch's return types are.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING, NamedTuple

from burnpy.backend.errors import KindError, ShapeError, describe
from burnpy.tensor._core import BOOL, FLOAT, INT, new
from burnpy.tensor.checks import normalize_dim, normalize_dims
from burnpy.tensor.layout import kind_op
from burnpy.tensor.scalar_dims import as_vector, pair_as_vector

if TYPE_CHECKING:
    from burnpy.tensor.tensor import Tensor

Dims = int | Sequence[int] | None


class ValuesIndices(NamedTuple):
    """``(values, indices)`` of ``max(dim)``, ``min(dim)``, ``sort``, ``topk``, ``cummax``,
    ``cummin``: the fields of torch's ``torch.return_types``, so ``out.values``,
    ``out.indices`` and ``values, indices = out`` all work as they do in torch."""

    values: Tensor
    indices: Tensor


def numeric(t: Tensor, op: str) -> Tensor:
    """Bools count as ints in sums (torch's rule); quantized tensors are refused."""
    if t.kind is BOOL:
        return t.int()
    if t.kind not in (FLOAT, INT):
        raise KindError(f"{op}: expects a float or int tensor, got {t.kind}")
    return t


def drop_dims(t: Tensor, dims: tuple[int, ...], keepdim: bool) -> Tensor:
    if keepdim:
        return t
    return t.reshape(tuple(s for i, s in enumerate(t.shape) if i not in dims))


def reduce(t: Tensor, op: str, dim: Dims, keepdim: bool) -> Tensor:
    """Apply the backend's full or per-dim reduction ``op`` over ``dim`` (None = all)."""
    b = t.backend
    if dim is None:
        out = new(b, kind_op(t, op)(t.primitive), t.kind)
        return out.reshape((1,) * t.ndim) if keepdim else out
    if t.ndim == 0:
        return as_vector(t, op, dim, lambda v: reduce(v, op, 0, False))
    dims = normalize_dims(op, dim if isinstance(dim, Sequence) else (dim,), t.ndim)
    fn = kind_op(t, op + "_dim")
    p = t.primitive
    for d in sorted(dims):
        p = fn(p, d)
    return drop_dims(new(b, p, t.kind), dims, keepdim)


def check_nonempty(t: Tensor, op: str, dim: int | None) -> None:
    size = t.numel() if dim is None else t.shape[dim]
    if size == 0:
        raise ShapeError(f"{op}: cannot reduce an empty {'tensor' if dim is None else 'dim'} "
                         f"(shape {describe(t.shape)}); the result has no identity")


def as_bool(t: Tensor) -> Tensor:
    if t.kind is BOOL:
        return t
    if t.kind in (FLOAT, INT):
        return t != 0
    raise KindError(f"any/all: not defined for {t.kind} tensors")


def extreme_with_indices(t: Tensor, op: str, dim: int, keepdim: bool) -> ValuesIndices:
    """``max``/``min`` along one dim with where they are; the gradient reaches those indices."""
    t = numeric(t, op) if t.kind is not BOOL else t.int()
    d = normalize_dim(op, dim, t.ndim) if t.ndim else 0
    if t.ndim == 0:
        return ValuesIndices(t, zero_index(t))
    check_nonempty(t, op, d)
    values, indices = kind_op(t, op + "_dim_with_indices")(t.primitive, d)
    return ValuesIndices(drop_dims(new(t.backend, values, t.kind), (d,), keepdim),
                         drop_dims(new(t.backend, indices, INT), (d,), keepdim))


def extreme_values(t: Tensor, op: str, dim: Dims, keepdim: bool) -> Tensor:
    """``amax``/``amin`` over one, several or all dims (``None`` or ``()``: all, as torch).

    As torch's, the gradient is shared evenly among the tied extremes; on a tracked float
    tensor a partial reduction is written so (``m + sum(tied (x - m)) / count``, which is ``m``
    exactly, infinities included), while a full one uses the backend's reduction, whose
    gradient already shares ties.
    """
    name = "a" + op
    t = numeric(t, name) if t.kind is not BOOL else t.int()
    if t.ndim == 0 and dim is not None:
        return as_vector(t, name, dim, lambda v: extreme_values(v, op, 0, False))
    every = dim is None or (isinstance(dim, Sequence) and len(dim) == 0)
    dims = tuple(range(t.ndim)) if every or dim is None else normalize_dims(
        name, dim if isinstance(dim, Sequence) else (dim,), t.ndim)
    for d in dims:
        check_nonempty(t, name, d)
    if len(dims) == t.ndim:
        return reduce(t, op, None, keepdim)
    if t.kind is not FLOAT or not t.backend.ad_enabled() or not t.is_require_grad():
        return reduce(t, op, dims, keepdim)
    x = t.detach()
    m = reduce(x, op, dims, True)
    tied = x == m
    finite_m = m.mask_fill(m.isinf(), 0.0)
    share = (t - finite_m).mask_fill(~tied, 0.0).sum(dims, keepdim=True)
    out = finite_m + share / tied.sum(dims, keepdim=True).cast(t.dtype)
    return drop_dims(out, dims, keepdim)


def scan_with_indices(t: Tensor, op: str, dim: int) -> ValuesIndices:
    """``cummax``/``cummin``: the running extreme and the index where it was reached."""
    t = numeric(t, op)
    if t.ndim == 0:
        return pair_as_vector(t, op, dim, lambda v: scan_with_indices(v, op, 0))
    d = normalize_dim(op, dim, t.ndim)
    values, indices = kind_op(t, op + "_with_indices")(t.primitive, d)
    return ValuesIndices(new(t.backend, values, t.kind), new(t.backend, indices, INT))


def zero_index(t: Tensor) -> Tensor:
    """A 0-d int zero on ``t``'s backend and device (the index of a 0-d tensor's only value)."""
    from burnpy.tensor.tensor import Tensor

    return Tensor.zeros((), backend=t.backend, device=t.device, dtype=t.backend.int_dtype)
