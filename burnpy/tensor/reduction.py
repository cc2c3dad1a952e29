"""Tensor reductions, scans and sorting, with torch's ``dim``/``keepdim`` spelling.

Backend ``_dim`` reductions keep the reduced dim; ``keepdim=False`` (the default) squeezes it
here. Full reductions return shape ``()``.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from typing import TYPE_CHECKING

from burnpy.backend.errors import IndexOutOfBoundsError, KindError, ShapeError, describe
from burnpy.tensor._core import BOOL, FLOAT, INT, new
from burnpy.tensor.checks import normalize_dim, normalize_dims
from burnpy.tensor.layout import kind_op

if TYPE_CHECKING:
    from burnpy.tensor.tensor import Tensor

Dims = int | Sequence[int] | None


def _numeric(t: Tensor, op: str) -> Tensor:
    """Bools count as ints in sums (torch's rule); quantized tensors are refused."""
    if t.kind is BOOL:
        return t.int()
    if t.kind not in (FLOAT, INT):
        raise KindError(f"{op}: expects a float or int tensor, got {t.kind}")
    return t


def _drop(t: Tensor, dims: tuple[int, ...], keepdim: bool) -> Tensor:
    if keepdim:
        return t
    return t.reshape(tuple(s for i, s in enumerate(t.shape) if i not in dims))


def _reduce(t: Tensor, op: str, dim: Dims, keepdim: bool) -> Tensor:
    """Apply the backend's full or per-dim reduction ``op`` over ``dim`` (None = all)."""
    b = t.backend
    if dim is None:
        out = new(b, kind_op(t, op)(t.primitive), t.kind)
        return out.reshape((1,) * t.ndim) if keepdim else out
    dims = normalize_dims(op, dim if isinstance(dim, Sequence) else (dim,), t.ndim)
    fn = kind_op(t, op + "_dim")
    p = t.primitive
    for d in sorted(dims):
        p = fn(p, d)
    return _drop(new(b, p, t.kind), dims, keepdim)


def _nonempty(t: Tensor, op: str, dim: int | None) -> None:
    size = t.numel() if dim is None else t.shape[dim]
    if size == 0:
        raise ShapeError(f"{op}: cannot reduce an empty {'tensor' if dim is None else 'dim'} "
                         f"(shape {describe(t.shape)}); the result has no identity")


class ReductionOps:
    """Reductions, scans and sorts, mixed into Tensor."""

    __slots__ = ()

    def sum(self: Tensor, dim: Dims = None, keepdim: bool = False) -> Tensor:
        """Sum over ``dim`` (an int, several, or all); ints and bools sum in int64."""
        return _reduce(_numeric(self, "sum"), "sum", dim, keepdim)

    def prod(self: Tensor, dim: Dims = None, keepdim: bool = False) -> Tensor:
        return _reduce(_numeric(self, "prod"), "prod", dim, keepdim)

    def mean(self: Tensor, dim: Dims = None, keepdim: bool = False) -> Tensor:
        """Arithmetic mean (float tensors only, as in torch)."""
        if self.kind is not FLOAT:
            raise KindError(f"mean: expects a float tensor, got {self.kind} ({self.dtype!r}); "
                            "use .float() first")
        return _reduce(self, "mean", dim, keepdim)

    def var(self: Tensor, dim: Dims = None, keepdim: bool = False, correction: int = 1) -> Tensor:
        """Variance with Bessel's ``correction`` (1 = unbiased, as torch's default)."""
        mu = self.mean(dim, keepdim=True)
        sq = (self - mu).square()
        dims = range(self.ndim) if dim is None else (
            normalize_dims("var", (dim,) if isinstance(dim, int) else dim, self.ndim))
        n = math.prod(self.shape[d] for d in dims)
        total = sq.sum(dim, keepdim=keepdim)
        return total / max(n - correction, 0) if n - correction > 0 else total * float("nan")

    def std(self: Tensor, dim: Dims = None, keepdim: bool = False, correction: int = 1) -> Tensor:
        return self.var(dim, keepdim, correction).sqrt()

    def logsumexp(self: Tensor, dim: int, keepdim: bool = False) -> Tensor:
        """log(sum(exp(x))) along ``dim``, stable for large values."""
        d = normalize_dim("logsumexp", dim, self.ndim)
        m = self.max(d, keepdim=True).detach()
        m = m.mask_fill(m.isinf(), 0.0)
        out = (self - m).exp().sum(d, keepdim=True).log() + m
        return _drop(out, (d,), keepdim)

    def max(self: Tensor, dim: int | None = None, keepdim: bool = False) -> Tensor:
        """The largest value overall, or along ``dim`` (values only; see max_with_indices)."""
        t = _numeric(self, "max") if self.kind is not BOOL else self.int()
        if dim is None:
            _nonempty(t, "max", None)
            return _reduce(t, "max", None, keepdim)
        return self.max_with_indices(dim, keepdim)[0]

    def min(self: Tensor, dim: int | None = None, keepdim: bool = False) -> Tensor:
        """The smallest value overall, or along ``dim``."""
        t = _numeric(self, "min") if self.kind is not BOOL else self.int()
        if dim is None:
            _nonempty(t, "min", None)
            return _reduce(t, "min", None, keepdim)
        return self.min_with_indices(dim, keepdim)[0]

    def max_with_indices(self: Tensor, dim: int, keepdim: bool = False) -> tuple[Tensor, Tensor]:
        """(values, indices) of the max along ``dim``; the first index among ties."""
        return _extreme_with_indices(self, "max", dim, keepdim)

    def min_with_indices(self: Tensor, dim: int, keepdim: bool = False) -> tuple[Tensor, Tensor]:
        """(values, indices) of the min along ``dim``; the first index among ties."""
        return _extreme_with_indices(self, "min", dim, keepdim)

    def argmax(self: Tensor, dim: int | None = None, keepdim: bool = False) -> Tensor:
        """Index of the max along ``dim`` (over the flattened tensor when dim is None)."""
        if dim is None:
            return self.flatten().max_with_indices(0)[1]
        return self.max_with_indices(dim, keepdim)[1]

    def argmin(self: Tensor, dim: int | None = None, keepdim: bool = False) -> Tensor:
        if dim is None:
            return self.flatten().min_with_indices(0)[1]
        return self.min_with_indices(dim, keepdim)[1]

    def any(self: Tensor, dim: int | None = None, keepdim: bool = False) -> Tensor:
        """Whether any element is non-zero / true."""
        return _reduce(_as_bool(self), "any", dim, keepdim)

    def all(self: Tensor, dim: int | None = None, keepdim: bool = False) -> Tensor:
        """Whether every element is non-zero / true."""
        return _reduce(_as_bool(self), "all", dim, keepdim)

    def count_nonzero(self: Tensor, dim: int | None = None) -> Tensor:
        return _as_bool(self).int().sum(dim)

    def cumsum(self: Tensor, dim: int) -> Tensor:
        """Running sum along ``dim``."""
        t = _numeric(self, "cumsum")
        d = normalize_dim("cumsum", dim, t.ndim)
        return new(t.backend, kind_op(t, "cumsum")(t.primitive, d), t.kind)

    def cumprod(self: Tensor, dim: int) -> Tensor:
        """Running product along ``dim``."""
        t = _numeric(self, "cumprod")
        d = normalize_dim("cumprod", dim, t.ndim)
        return new(t.backend, kind_op(t, "cumprod")(t.primitive, d), t.kind)

    def cummax(self: Tensor, dim: int) -> Tensor:
        """Running max along ``dim`` (values; see cummax_with_indices)."""
        return self.cummax_with_indices(dim)[0]

    def cummin(self: Tensor, dim: int) -> Tensor:
        return self.cummin_with_indices(dim)[0]

    def cummax_with_indices(self: Tensor, dim: int) -> tuple[Tensor, Tensor]:
        """Running max and where it was reached (torch.cummax)."""
        return _scan_with_indices(self, "cummax", dim)

    def cummin_with_indices(self: Tensor, dim: int) -> tuple[Tensor, Tensor]:
        return _scan_with_indices(self, "cummin", dim)

    def sort(self: Tensor, dim: int = -1, descending: bool = False) -> Tensor:
        """Sorted values along ``dim`` (stable)."""
        return self.sort_with_indices(dim, descending)[0]

    def sort_with_indices(self: Tensor, dim: int = -1,
                          descending: bool = False) -> tuple[Tensor, Tensor]:
        """(sorted values, source indices) along ``dim``; stable."""
        t = _numeric(self, "sort")
        d = normalize_dim("sort", dim, t.ndim) if t.ndim else 0
        if t.ndim == 0:
            return t, _zero_index(t)
        values, indices = kind_op(t, "sort_with_indices")(t.primitive, d, descending)
        return new(t.backend, values, t.kind), new(t.backend, indices, INT)

    def argsort(self: Tensor, dim: int = -1, descending: bool = False) -> Tensor:
        return self.sort_with_indices(dim, descending)[1]

    def topk(self: Tensor, k: int, dim: int = -1, largest: bool = True) -> Tensor:
        """The ``k`` largest (or smallest) values along ``dim``, sorted."""
        return self.topk_with_indices(k, dim, largest)[0]

    def topk_with_indices(self: Tensor, k: int, dim: int = -1,
                          largest: bool = True) -> tuple[Tensor, Tensor]:
        t = _numeric(self, "topk")
        d = normalize_dim("topk", dim, t.ndim)
        if not 0 <= k <= t.shape[d]:
            raise IndexOutOfBoundsError(f"topk: k={k} is outside [0, {t.shape[d]}] for dim "
                                        f"{dim} of shape {describe(t.shape)}")
        values, indices = t.sort_with_indices(d, descending=largest)
        return values.slice_dim(d, 0, k), indices.slice_dim(d, 0, k)


def _as_bool(t: Tensor) -> Tensor:
    if t.kind is BOOL:
        return t
    if t.kind in (FLOAT, INT):
        return t != 0
    raise KindError(f"any/all: not defined for {t.kind} tensors")


def _extreme_with_indices(t: Tensor, op: str, dim: int, keepdim: bool) -> tuple[Tensor, Tensor]:
    t = _numeric(t, op) if t.kind is not BOOL else t.int()
    d = normalize_dim(op, dim, t.ndim) if t.ndim else 0
    if t.ndim == 0:
        return t, _zero_index(t)
    _nonempty(t, op, d)
    values, indices = kind_op(t, op + "_dim_with_indices")(t.primitive, d)
    return (_drop(new(t.backend, values, t.kind), (d,), keepdim),
            _drop(new(t.backend, indices, INT), (d,), keepdim))


def _scan_with_indices(t: Tensor, op: str, dim: int) -> tuple[Tensor, Tensor]:
    t = _numeric(t, op)
    d = normalize_dim(op, dim, t.ndim)
    values, indices = kind_op(t, op + "_with_indices")(t.primitive, d)
    return new(t.backend, values, t.kind), new(t.backend, indices, INT)


def _zero_index(t: Tensor) -> Tensor:
    """A 0-d int zero on ``t``'s backend and device (the index of a 0-d tensor's only value)."""
    from burnpy.tensor.tensor import Tensor

    return Tensor.zeros((), backend=t.backend, device=t.device, dtype=t.backend.int_dtype)
