"""Tensor reductions, scans and sorting, with torch's ``dim``/``keepdim`` spelling.

Backend ``_dim`` reductions keep the reduced dim; ``keepdim=False`` (the default) squeezes it
here. Full reductions return shape ``()``. Ops that find positions (``max(dim)``, ``sort``,
``topk``, ``cummax``...) return ``ValuesIndices``, the named tuple torch's return types are.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from typing import TYPE_CHECKING, NamedTuple, overload

from burnpy.backend.dtype import DTypeLike
from burnpy.backend.errors import IndexOutOfBoundsError, KindError, ShapeError, describe
from burnpy.tensor._core import BOOL, FLOAT, INT, TensorBase, new
from burnpy.tensor.autocast_hook import autocast_op
from burnpy.tensor.checks import normalize_dim, normalize_dims
from burnpy.tensor.creation import CreationOps
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
    return CreationOps.zeros((), backend=t.backend, device=t.device, dtype=t.backend.int_dtype)


class ReductionOps:
    """``Tensor``'s reductions, scans and sorts."""

    __slots__ = ()


    def sum(self: Tensor, dim: Dims = None, keepdim: bool = False, *,
            dtype: DTypeLike | None = None) -> Tensor:
        """Sum over ``dim`` (an int, several, or all); ints and bools sum in int64. With
        ``dtype`` the input is cast to it first (torch's meaning)."""
        if dtype is not None:
            return self.cast(dtype).sum(dim, keepdim)
        return reduce(numeric(self, "sum"), "sum", dim, keepdim)

    @autocast_op("prod")
    def prod(self: Tensor, dim: Dims = None, keepdim: bool = False, *,
             dtype: DTypeLike | None = None) -> Tensor:
        """Product over ``dim`` (an int, several, or all); bools multiply as ints. With
        ``dtype`` the input is cast to it first (torch's meaning)."""
        if dtype is not None:
            return self.cast(dtype).prod(dim, keepdim)
        return reduce(numeric(self, "prod"), "prod", dim, keepdim)

    def mean(self: Tensor, dim: Dims = None, keepdim: bool = False, *,
             dtype: DTypeLike | None = None) -> Tensor:
        """Arithmetic mean (float tensors, or any cast to a float ``dtype``, as in torch)."""
        if dtype is not None:
            return self.cast(dtype).mean(dim, keepdim)
        if self.kind is not FLOAT:
            raise KindError(f"mean: expects a float tensor, got {self.kind} ({self.dtype!r}); "
                            "use .float() first")
        return reduce(self, "mean", dim, keepdim)

    def var(self: Tensor, dim: Dims = None, keepdim: bool = False, correction: float | None = 1, *,
            unbiased: bool | None = None) -> Tensor:
        """Variance: the squared deviations' sum over ``max(0, N - correction)`` (Bessel's
        ``correction``, 1 by default and for None, may be fractional as in torch; a divisor of
        0 gives inf or NaN as torch's); torch's older ``unbiased=`` sets it to 1 or 0."""
        if unbiased is not None:
            correction = int(unbiased)
        elif correction is None:
            correction = 1
        mu = self.mean(dim, keepdim=True)
        sq = (self - mu).square()
        dims = range(self.ndim) if dim is None else (
            normalize_dims("var", (dim,) if isinstance(dim, int) else dim, self.ndim))
        n = math.prod(self.shape[d] for d in dims)
        total = sq.sum(dim, keepdim=keepdim)
        return total / (n - correction) if n - correction > 0 else total * float("inf")

    def std(self: Tensor, dim: Dims = None, keepdim: bool = False, correction: float | None = 1, *,
            unbiased: bool | None = None) -> Tensor:
        """Standard deviation: the square root of ``var`` with the same ``correction`` (or
        torch's older ``unbiased=``).

        Where it is 0 (a constant group) the gradient is 0, as torch's, not sqrt's NaN.
        """
        v = self.var(dim, keepdim, correction, unbiased=unbiased)
        if not v.is_require_grad():
            return v.sqrt()
        zero = v == 0.0
        return v.mask_fill(zero, 1.0).sqrt().mask_fill(zero, 0.0)

    @autocast_op("logsumexp")
    def logsumexp(self: Tensor, dim: int | Sequence[int], keepdim: bool = False) -> Tensor:
        """log(sum(exp(x))) along ``dim`` (one dim or several), stable for large values."""
        if self.ndim == 0:
            return as_vector(self, "logsumexp", dim, lambda v: v.logsumexp(0))
        d = normalize_dims("logsumexp", (dim,) if isinstance(dim, int) else dim, self.ndim)
        m = self.detach().amax(d, keepdim=True)
        m = m.mask_fill(m.isinf(), 0.0)
        out = (self - m).exp().sum(d, keepdim=True).log() + m
        return drop_dims(out, d, keepdim)

    @overload
    def max(self: Tensor, dim: None = None, keepdim: bool = False) -> Tensor: ...
    @overload
    def max(self: Tensor, dim: int, keepdim: bool = False) -> ValuesIndices: ...
    @overload
    def max(self: Tensor, dim: Tensor) -> Tensor: ...

    def max(self: Tensor, dim: int | Tensor | None = None,
            keepdim: bool = False) -> Tensor | ValuesIndices:
        """As torch's: the largest value (shape ``()``) when ``dim`` is None; along ``dim``
        the named tuple ``(values, indices)`` (first index among ties, the gradient goes to
        it); given a tensor, the elementwise ``maximum``. ``amax`` gives values only."""
        if isinstance(dim, TensorBase):
            return self.maximum(dim)
        if dim is None:
            t = numeric(self, "max") if self.kind is not BOOL else self.int()
            check_nonempty(t, "max", None)
            return reduce(t, "max", None, keepdim)
        return extreme_with_indices(self, "max", dim, keepdim)

    @overload
    def min(self: Tensor, dim: None = None, keepdim: bool = False) -> Tensor: ...
    @overload
    def min(self: Tensor, dim: int, keepdim: bool = False) -> ValuesIndices: ...
    @overload
    def min(self: Tensor, dim: Tensor) -> Tensor: ...

    def min(self: Tensor, dim: int | Tensor | None = None,
            keepdim: bool = False) -> Tensor | ValuesIndices:
        """As torch's: the smallest value (shape ``()``) when ``dim`` is None; along ``dim``
        the named tuple ``(values, indices)``; given a tensor, the elementwise ``minimum``.
        ``amin`` gives values only."""
        if isinstance(dim, TensorBase):
            return self.minimum(dim)
        if dim is None:
            t = numeric(self, "min") if self.kind is not BOOL else self.int()
            check_nonempty(t, "min", None)
            return reduce(t, "min", None, keepdim)
        return extreme_with_indices(self, "min", dim, keepdim)

    def max_with_indices(self: Tensor, dim: int, keepdim: bool = False) -> ValuesIndices:
        """Burn's name for ``max(dim)``: ``(values, indices)``, the first index among ties."""
        return extreme_with_indices(self, "max", dim, keepdim)

    def min_with_indices(self: Tensor, dim: int, keepdim: bool = False) -> ValuesIndices:
        """Burn's name for ``min(dim)``: ``(values, indices)``, the first index among ties."""
        return extreme_with_indices(self, "min", dim, keepdim)

    def amax(self: Tensor, dim: Dims = None, keepdim: bool = False) -> Tensor:
        """The largest values over ``dim`` (an int, several, or all for None or ``()``), values
        only (torch.amax); the gradient is shared evenly among tied maxima, as torch's."""
        return extreme_values(self, "max", dim, keepdim)

    def amin(self: Tensor, dim: Dims = None, keepdim: bool = False) -> Tensor:
        """The smallest values over ``dim`` (an int, several, or all for None or ``()``),
        values only (torch.amin); the gradient is shared evenly among tied minima."""
        return extreme_values(self, "min", dim, keepdim)

    def argmax(self: Tensor, dim: int | None = None, keepdim: bool = False) -> Tensor:
        """Index of the max along ``dim`` (over the flattened tensor when dim is None)."""
        if dim is None:
            return self.flatten().max_with_indices(0)[1]
        return self.max_with_indices(dim, keepdim)[1]

    def argmin(self: Tensor, dim: int | None = None, keepdim: bool = False) -> Tensor:
        """Index of the min along ``dim`` (over the flattened tensor when dim is None)."""
        if dim is None:
            return self.flatten().min_with_indices(0)[1]
        return self.min_with_indices(dim, keepdim)[1]

    def any(self: Tensor, dim: int | None = None, keepdim: bool = False) -> Tensor:
        """Whether any element is non-zero / true."""
        return reduce(as_bool(self), "any", dim, keepdim)

    def all(self: Tensor, dim: int | None = None, keepdim: bool = False) -> Tensor:
        """Whether every element is non-zero / true."""
        return reduce(as_bool(self), "all", dim, keepdim)

    def count_nonzero(self: Tensor, dim: int | None = None) -> Tensor:
        """The number of non-zero (true) elements, overall or along ``dim``, as an int tensor."""
        return as_bool(self).int().sum(dim)

    @autocast_op("cumsum")
    def cumsum(self: Tensor, dim: int, *, dtype: DTypeLike | None = None) -> Tensor:
        """Running sum along ``dim`` (in ``dtype`` when given: the input is cast first)."""
        t = numeric(self if dtype is None else self.cast(dtype), "cumsum")
        if t.ndim == 0:
            return as_vector(t, "cumsum", dim, lambda v: v.cumsum(0))
        d = normalize_dim("cumsum", dim, t.ndim)
        return new(t.backend, kind_op(t, "cumsum")(t.primitive, d), t.kind)

    @autocast_op("cumprod")
    def cumprod(self: Tensor, dim: int, *, dtype: DTypeLike | None = None) -> Tensor:
        """Running product along ``dim`` (in ``dtype`` when given: the input is cast first)."""
        t = numeric(self if dtype is None else self.cast(dtype), "cumprod")
        if t.ndim == 0:
            return as_vector(t, "cumprod", dim, lambda v: v.cumprod(0))
        d = normalize_dim("cumprod", dim, t.ndim)
        return new(t.backend, kind_op(t, "cumprod")(t.primitive, d), t.kind)

    def cummax(self: Tensor, dim: int) -> ValuesIndices:
        """Running max along ``dim`` and the index where it was reached, as the named tuple
        ``(values, indices)`` (torch.cummax)."""
        return scan_with_indices(self, "cummax", dim)

    def cummin(self: Tensor, dim: int) -> ValuesIndices:
        """Running min along ``dim`` and the index where it was reached, as the named tuple
        ``(values, indices)`` (torch.cummin)."""
        return scan_with_indices(self, "cummin", dim)

    def cummax_with_indices(self: Tensor, dim: int) -> ValuesIndices:
        """Burn's name for ``cummax``."""
        return scan_with_indices(self, "cummax", dim)

    def cummin_with_indices(self: Tensor, dim: int) -> ValuesIndices:
        """Burn's name for ``cummin``."""
        return scan_with_indices(self, "cummin", dim)

    def sort(self: Tensor, dim: int = -1, descending: bool = False, *,
             stable: bool = False) -> ValuesIndices:
        """The named tuple ``(values, indices)`` of ``dim`` sorted, as torch.sort; always
        stable, so ``stable=True`` (torch's request for it) holds too."""
        t = numeric(self, "sort")
        d = normalize_dim("sort", dim, t.ndim) if t.ndim else 0
        if t.ndim == 0:
            return ValuesIndices(t, zero_index(t))
        values, indices = kind_op(t, "sort_with_indices")(t.primitive, d, descending)
        return ValuesIndices(new(t.backend, values, t.kind), new(t.backend, indices, INT))

    def sort_with_indices(self: Tensor, dim: int = -1, descending: bool = False) -> ValuesIndices:
        """Burn's name for ``sort``: ``(sorted values, source indices)``, stable."""
        return self.sort(dim, descending)

    def argsort(self: Tensor, dim: int = -1, descending: bool = False, *,
                stable: bool = False) -> Tensor:
        """The indices that sort ``dim`` (always stable, whatever ``stable``); see ``sort``."""
        return self.sort(dim, descending).indices

    def topk(self: Tensor, k: int, dim: int = -1, largest: bool = True,
             sorted: bool = True) -> ValuesIndices:
        """The named tuple ``(values, indices)`` of the ``k`` largest (or smallest) along
        ``dim`` (torch.topk); they always come sorted, which ``sorted=False`` allows."""
        t = numeric(self, "topk")
        if t.ndim == 0:
            return pair_as_vector(t, "topk", dim, lambda v: v.topk(k, 0, largest), (k,) * (k != 1))
        d = normalize_dim("topk", dim, t.ndim)
        if not 0 <= k <= t.shape[d]:
            raise IndexOutOfBoundsError(f"topk: k={k} is outside [0, {t.shape[d]}] for dim "
                                        f"{dim} of shape {describe(t.shape)}")
        values, indices = t.sort(d, descending=largest)
        return ValuesIndices(values.slice_dim(d, 0, k), indices.slice_dim(d, 0, k))

    def topk_with_indices(self: Tensor, k: int, dim: int = -1,
                          largest: bool = True) -> ValuesIndices:
        """Burn's name for ``topk``."""
        return self.topk(k, dim, largest)
