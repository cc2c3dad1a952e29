"""Statistics, sorting and sampling in torch's spelling: order statistics (median, mode,
kthvalue), NaN-ignoring reductions, norms and distances, unique values, bucketing, histograms,
evenly spaced creation and sampling from the backend's seeded generator.

Every op is a composition of Tensor ops (sort, gather, cumsum, masks...), so the differentiable
ones are differentiable in both modes, to any order, on every backend, with no rule of their own.
The ops whose result size depends on the values (``unique``, ``bincount``, ``histc`` with data
bounds) read those sizes on the host, as torch's do.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from typing import TYPE_CHECKING, Literal, NamedTuple, overload

from burnpy.backend.distribution import Distribution
from burnpy.backend.dtype import DType, DTypeLike
from burnpy.backend.errors import (
    DTypeError,
    IndexOutOfBoundsError,
    InvalidArgumentError,
    KindError,
    ShapeError,
    describe,
)
from burnpy.tensor._core import BOOL, FLOAT, INT, TensorBase
from burnpy.tensor.autocast_hook import autocast_op
from burnpy.tensor.checks import broadcast_shapes, normalize_dim
from burnpy.tensor.creation import CreationOps
from burnpy.tensor.layout import cat
from burnpy.tensor.reduction import Dims, ValuesIndices, check_nonempty, drop_dims, zero_index

if TYPE_CHECKING:
    from burnpy.backend.base import Backend
    from burnpy.backend.device import Device
    from burnpy.tensor.tensor import Tensor


Norm = float | Literal["fro"] | None


class MinMax(NamedTuple):
    """``(min, max)`` of ``aminmax``: the fields of torch's ``torch.return_types.aminmax``."""

    min: Tensor
    max: Tensor



def _require_float(t: Tensor, op: str) -> None:
    if t.kind is not FLOAT:
        raise KindError(f"{op}: expects a float tensor, got {t.kind} ({t.dtype!r})")


def _numeric(t: Tensor, op: str) -> Tensor:
    if t.kind is BOOL:
        return t.int()
    if t.kind not in (FLOAT, INT):
        raise KindError(f"{op}: expects a float or int tensor, got {t.kind}")
    return t


def _index_full(t: Tensor, shape: Sequence[int], value: int) -> Tensor:
    """An int tensor of ``shape`` filled with ``value``, on ``t``'s backend and device."""
    return CreationOps.full(tuple(shape), value, backend=t.backend, device=t.device,
                            dtype=t.backend.int_dtype)


def _positions(t: Tensor, d: int) -> Tensor:
    """``0, 1, ..., n-1`` along dim ``d``, broadcast to ``t``'s shape (int)."""
    n = t.shape[d]
    shape = [1] * t.ndim
    shape[d] = n
    ar = CreationOps.arange(n, backend=t.backend, device=t.device).reshape(shape)
    return ar.expand(t.shape)


def _one_at(t: Tensor, d: int) -> list[int]:
    shape = list(t.shape)
    shape[d] = 1
    return shape


# ---- order statistics ------------------------------------------------------------------------

def _pick_sorted(t: Tensor, d: int, position: Tensor, keepdim: bool) -> ValuesIndices:
    """The elements at ``position`` (an int tensor, size 1 along ``d``) of ``t`` sorted along
    ``d`` (stably), with their indices in ``t``; the values are gathered from ``t`` itself, so
    the gradient reaches exactly the returned indices, as torch's does."""
    order = t.detach().sort(d).indices
    idx = order.gather(d, position)
    return ValuesIndices(drop_dims(t.gather(d, idx), (d,), keepdim),
                         drop_dims(idx, (d,), keepdim))


def _nan_count(t: Tensor, d: int) -> Tensor:
    return t.detach().isnan().int().sum(d, keepdim=True)


def _order_statistic(t: Tensor, op: str, dim: int, keepdim: bool,
                     ignore_nan: bool) -> ValuesIndices:
    t = _numeric(t, op)
    if t.ndim == 0:
        normalize_dim(op, dim, 1)
        return ValuesIndices(t, zero_index(t))
    d = normalize_dim(op, dim, t.ndim)
    check_nonempty(t, op, d)
    n = t.shape[d]
    position = _index_full(t, _one_at(t, d), (n - 1) // 2)
    if t.kind is FLOAT:
        nans = _nan_count(t, d)
        if ignore_nan:  # NaNs sort last: the lower median of the values before them
            position = (n - nans - 1).clamp_min(0) // 2
        else:  # torch's median is NaN where a NaN is, at the first NaN's index
            position = position.mask_where(nans > 0, n - nans)
    return _pick_sorted(t, d, position, keepdim)


def _shared_among_ties(t: Tensor, value: Tensor) -> Tensor:
    """``value`` (an element of the 1-d ``t``) written so that its derivative is shared evenly
    among the elements equal to it (or among the NaNs when it is NaN), as torch's full
    ``median()`` shares it: ``m + sum(tied (t - m)) / count``, which is ``m`` exactly."""
    if t.kind is not FLOAT:
        return value
    x, m = t.detach(), value.detach()
    tied = (x == m) | (x.isnan() & m.isnan())
    finite_m = m.mask_fill(m.isinf(), 0.0)
    share = (t - finite_m).mask_fill(~tied, 0.0).sum()
    return finite_m + share / tied.sum().cast(t.dtype)


def _full_order_statistic(input: Tensor, op: str, ignore_nan: bool) -> Tensor:
    if input.numel() == 0:
        _require_float(input, op)
        return CreationOps.full((), math.nan, backend=input.backend, device=input.device,
                                dtype=input.dtype)
    flat = _numeric(input, op).flatten()
    return _shared_among_ties(flat, _order_statistic(flat, op, 0, False, ignore_nan).values)


def median(input: Tensor, dim: int | None = None,
           keepdim: bool = False) -> Tensor | ValuesIndices:
    """torch.median: the lower of the two middle values (NaN if any value is NaN). Over all
    elements (``dim=None``) a 0-d tensor whose gradient is shared among the values equal to it;
    along ``dim`` the named tuple ``(values, indices)``, the gradient going to the index."""
    if dim is None:
        return _full_order_statistic(input, "median", False)
    return _order_statistic(input, "median", dim, keepdim, False)


def nanmedian(input: Tensor, dim: int | None = None,
              keepdim: bool = False) -> Tensor | ValuesIndices:
    """torch.nanmedian: ``median`` of the values that are not NaN (NaN only where all are)."""
    if dim is None:
        return _full_order_statistic(input, "nanmedian", True)
    return _order_statistic(input, "nanmedian", dim, keepdim, True)


def kthvalue(input: Tensor, k: int, dim: int = -1, keepdim: bool = False) -> ValuesIndices:
    """torch.kthvalue: the ``k``-th smallest value along ``dim`` (1-based) and its index."""
    t = _numeric(input, "kthvalue")
    d = normalize_dim("kthvalue", dim, t.ndim) if t.ndim else 0
    n = t.shape[d] if t.ndim else 1
    if not 1 <= k <= n:
        raise IndexOutOfBoundsError(f"kthvalue: k={k} is outside [1, {n}] for dim {dim} of "
                                    f"shape {describe(t.shape)}")
    if t.ndim == 0:
        return ValuesIndices(t, zero_index(t))
    return _pick_sorted(t, d, _index_full(t, _one_at(t, d), k - 1), keepdim)


def mode(input: Tensor, dim: int = -1, keepdim: bool = False) -> ValuesIndices:
    """torch.mode: the most frequent value along ``dim`` (the smallest among equally frequent
    ones) and the index of its last occurrence.

    Runs of equal values of the sorted slice are measured with a running max of their starts
    and a reversed running min of their ends: O(n log n), no pairwise comparison.
    """
    t = _numeric(input, "mode")
    if t.ndim == 0:
        normalize_dim("mode", dim, 1)
        return ValuesIndices(t, zero_index(t))
    d = normalize_dim("mode", dim, t.ndim)
    check_nonempty(t, "mode", d)
    n = t.shape[d]
    s = t.detach().sort(d)
    pos = _positions(t, d)
    edge = CreationOps.full(tuple(_one_at(t, d)), True, backend=t.backend, device=t.device,
                            dtype=DType.bool_)
    differs = s.values.slice_dim(d, 1, n) != s.values.slice_dim(d, 0, n - 1)
    starts = cat([edge, differs], d)
    ends = cat([differs, edge], d)
    run_start = pos.mask_fill(~starts, 0).cummax(d).values
    run_end = pos.mask_fill(~ends, n - 1).flip(d).cummin(d).values.flip(d)
    best = (run_end - run_start).argmax(d, keepdim=True)  # first: the smallest value
    idx = s.indices.gather(d, run_end.gather(d, best))  # stable: the last occurrence
    return ValuesIndices(drop_dims(t.gather(d, idx), (d,), keepdim),
                         drop_dims(idx, (d,), keepdim))


def aminmax(input: Tensor, *, dim: int | None = None, keepdim: bool = False) -> MinMax:
    """torch.aminmax: the named tuple ``(min, max)`` over ``dim`` (all elements when None)."""
    return MinMax(input.amin(dim, keepdim), input.amax(dim, keepdim))


def msort(input: Tensor) -> Tensor:
    """torch.msort: the values sorted along dim 0."""
    return input.sort(0).values


# ---- reductions that ignore NaN, scans ---------------------------------------------------------

def nansum(input: Tensor, dim: Dims = None, keepdim: bool = False) -> Tensor:
    """torch.nansum: the sum with NaNs counted as zero (their gradient is zero)."""
    t = _numeric(input, "nansum")
    if t.kind is FLOAT:
        t = t.mask_fill(t.isnan(), 0.0)
    return t.sum(dim, keepdim)


def nanmean(input: Tensor, dim: Dims = None, keepdim: bool = False) -> Tensor:
    """torch.nanmean: the mean of the values that are not NaN (float tensors only)."""
    _require_float(input, "nanmean")
    kept = (~input.isnan()).cast(input.dtype).sum(dim, keepdim)
    return nansum(input, dim, keepdim) / kept


def logcumsumexp(input: Tensor, dim: int) -> Tensor:
    """torch.logcumsumexp: ``log(cumsum(exp(x)))`` along ``dim``, exact at any scale.

    A log-depth prefix scan of ``logaddexp`` (each step adds the value ``2**k`` places back):
    no exponential of a large difference is ever formed, so neither over- nor underflow.
    """
    _require_float(input, "logcumsumexp")
    if input.ndim == 0:
        return input + 0.0
    d = normalize_dim("logcumsumexp", dim, input.ndim)
    n = input.shape[d]
    out, shift = input, 1
    while shift < n:
        shape = list(input.shape)
        shape[d] = shift
        pad = CreationOps.full(tuple(shape), -math.inf, backend=input.backend,
                               device=input.device, dtype=input.dtype)
        out = out.logaddexp(cat([pad, out.slice_dim(d, 0, n - shift)], d))
        shift *= 2
    return out


def _spacing(y: Tensor, x: Tensor | None, dx: float | None, d: int, op: str) -> Tensor | float:
    """The interval widths of ``trapezoid`` along ``d``: ``dx`` or the differences of ``x``."""
    if x is None:
        return 1.0 if dx is None else dx
    if dx is not None:
        raise InvalidArgumentError(f"{op}: give x or dx, not both")
    n = y.shape[d]
    if x.ndim == 1:
        if x.shape[0] != n:
            raise ShapeError(f"{op}: x has {x.shape[0]} points, y has {n} along dim {d}")
        shape = [1] * y.ndim
        shape[d] = n - 1
        return (x.slice_dim(0, 1, n) - x.slice_dim(0, 0, n - 1)).reshape(shape)
    xd = d - y.ndim + x.ndim
    if xd < 0 or x.shape[xd] != n:
        raise ShapeError(f"{op}: x of shape {describe(x.shape)} does not match y of shape "
                         f"{describe(y.shape)} along dim {d}")
    return x.slice_dim(xd, 1, n) - x.slice_dim(xd, 0, n - 1)


def trapezoid(y: Tensor, x: Tensor | None = None, *, dx: float | None = None,
              dim: int = -1) -> Tensor:
    """torch.trapezoid: the trapezoidal rule along ``dim``, at points ``x`` or spacing ``dx``."""
    _require_float(y, "trapezoid")
    d = normalize_dim("trapezoid", dim, y.ndim)
    n = y.shape[d]
    if n == 0:
        return y.sum(d)
    h = _spacing(y, x, dx, d, "trapezoid")
    pairs = y.slice_dim(d, 1, n) + y.slice_dim(d, 0, n - 1)
    return (pairs * h).sum(d) / 2


def cumulative_trapezoid(y: Tensor, x: Tensor | None = None, *, dx: float | None = None,
                         dim: int = -1) -> Tensor:
    """torch.cumulative_trapezoid: the running trapezoidal rule (one value fewer along dim)."""
    _require_float(y, "cumulative_trapezoid")
    d = normalize_dim("cumulative_trapezoid", dim, y.ndim)
    n = y.shape[d]
    h = _spacing(y, x, dx, d, "cumulative_trapezoid")
    if n == 0:
        return y
    pairs = y.slice_dim(d, 1, n) + y.slice_dim(d, 0, n - 1)
    return (pairs * h / 2).cumsum(d)


def _correction(correction: float | None, unbiased: bool | None) -> float:
    if unbiased is not None:
        if correction is not None:
            raise InvalidArgumentError("var/std: give correction or unbiased, not both")
        return 1 if unbiased else 0
    return 1 if correction is None else correction


def var_mean(input: Tensor, dim: Dims = None, *, correction: float | None = None,
             unbiased: bool | None = None, keepdim: bool = False) -> tuple[Tensor, Tensor]:
    """torch.var_mean: ``(var, mean)`` over ``dim``; ``unbiased`` is torch's older spelling of
    ``correction`` (True: 1, False: 0)."""
    c = _correction(correction, unbiased)
    return input.var(dim, keepdim, c), input.mean(dim, keepdim)


def std_mean(input: Tensor, dim: Dims = None, *, correction: float | None = None,
             unbiased: bool | None = None, keepdim: bool = False) -> tuple[Tensor, Tensor]:
    """torch.std_mean: ``(std, mean)`` over ``dim``, with ``var_mean``'s correction rules."""
    c = _correction(correction, unbiased)
    return input.std(dim, keepdim, c), input.mean(dim, keepdim)


# ---- norms and distances -----------------------------------------------------------------------

def _safe_root(total: Tensor, exponent: float) -> Tensor:
    """``total ** exponent`` whose derivatives are 0 where ``total`` is 0 (torch's subgradient
    of a norm at the origin), not the NaN of ``0 * inf``."""
    zero = total == 0.0
    safe = total.mask_fill(zero, 1.0)
    return (safe.sqrt() if exponent == 0.5 else safe ** exponent).mask_fill(zero, 0.0)


def norm(input: Tensor, p: Norm = "fro", dim: Dims = None, keepdim: bool = False) -> Tensor:
    """torch.norm / Tensor.norm / torch.linalg.vector_norm: the vector ``p``-norm over ``dim``
    (all elements when None); burnpy's one p-norm, which ``linalg`` and ``nn.functional`` call.

    ``p`` is a number, ``inf`` (largest magnitude), ``-inf`` (smallest), ``0`` (the count of
    non-zeros) or ``"fro"`` (the 2-norm of the elements, also over two dims). As torch's, the
    gradient at a zero norm is 0, a zero element gets 0 (also for ``p < 1``, where its
    ``|x|^(p-1)`` is infinite), and ``inf``'s is shared among tied extremes.
    """
    _require_float(input, "norm")
    if p is None or p == "fro":
        p = 2.0
    if isinstance(p, str):
        raise InvalidArgumentError(f"norm: p must be a number, inf, -inf or 'fro', got {p!r} "
                                   "(the nuclear norm needs singular values)")
    if isinstance(dim, Sequence) and len(dim) == 0:
        dim = None
    if p == math.inf:
        return input.abs().amax(dim, keepdim)
    if p == -math.inf:
        return input.abs().amin(dim, keepdim)
    if p == 0:
        # Every element filled, so the count is tracked with torch's zero gradient.
        nonzero = input != 0.0
        return input.mask_fill(nonzero, 1.0).mask_fill(~nonzero, 0.0).sum(dim, keepdim)
    if p == 1:
        return input.abs().sum(dim, keepdim)
    if p == 2:
        return _safe_root(input.square().sum(dim, keepdim), 0.5)
    # A zero element adds 0 (p > 0) or inf (p < 0), and no gradient.
    zero = input == 0.0
    powers = input.abs().mask_fill(zero, 1.0) ** float(p)
    total = powers.mask_fill(zero, 0.0 if p > 0 else math.inf).sum(dim, keepdim)
    return _safe_root(total, 1.0 / float(p))


def dist(input: Tensor, other: Tensor, p: float = 2.0) -> Tensor:
    """torch.dist: the ``p``-norm of ``input - other`` (broadcast), a 0-d tensor."""
    return norm(input - other, p)


_CDIST_MODES = ("use_mm_for_euclid_dist_if_necessary", "use_mm_for_euclid_dist",
                "donot_use_mm_for_euclid_dist")


@autocast_op("cdist")
def cdist(x1: Tensor, x2: Tensor, p: float = 2.0,
          compute_mode: str = "use_mm_for_euclid_dist_if_necessary") -> Tensor:
    """torch.cdist: the ``p``-norm distance between each row of ``x1`` (``*, P, M``) and each row
    of ``x2`` (``*, R, M``), shape ``*, P, R`` (batch dims broadcast). ``compute_mode`` is taken
    for torch's signature: every mode computes the differences directly (torch's matrix-product
    shortcut is a speed trade of accuracy)."""
    if compute_mode not in _CDIST_MODES:
        raise InvalidArgumentError(f"cdist: compute_mode must be one of {_CDIST_MODES}, "
                                   f"got {compute_mode!r}")
    _require_float(x1, "cdist")
    _require_float(x2, "cdist")
    if x1.ndim < 2 or x2.ndim < 2 or x1.shape[-1] != x2.shape[-1]:
        raise ShapeError(f"cdist: expects x1 (*, P, M) and x2 (*, R, M), got shapes "
                         f"{describe(x1.shape)} and {describe(x2.shape)}")
    if p < 0:
        raise InvalidArgumentError(f"cdist: p must be >= 0, got {p}")
    return norm(x1.unsqueeze(-2) - x2.unsqueeze(-3), p, -1)


# ---- unique values, bucketing, histograms ------------------------------------------------------

def _runs(keys: Tensor, new_run: Tensor, order: Tensor | None, shape: tuple[int, ...],
          return_inverse: bool,
          return_counts: bool) -> Tensor | tuple[Tensor, ...]:
    """The values of ``keys`` where a run starts, with the run number of every original element
    (``order`` maps sorted positions to them) and each run's length, as torch's unique returns."""
    values = keys[new_run]
    out: list[Tensor] = [values]
    if return_inverse:
        group = new_run.int().cumsum(0) - 1
        if order is not None:
            group = group.zeros_like().scatter(0, order, group)
        out.append(group.reshape(shape))
    if return_counts:
        n = new_run.shape[0]
        starts = new_run.argwhere().reshape(-1)
        end = _index_full(new_run, (1,), n)
        bounds = cat([starts, end], 0)
        out.append(bounds.slice_dim(0, 1, bounds.shape[0]) - starts)
    return out[0] if len(out) == 1 else tuple(out)


def _run_starts(keys: Tensor) -> Tensor:
    """True where a run of equal rows of ``keys`` (1-d, or 2-d compared row-wise) begins."""
    n = keys.shape[0]
    first = CreationOps.full((min(n, 1),), True, backend=keys.backend, device=keys.device,
                             dtype=DType.bool_)
    if n <= 1:
        return first
    differs = keys.slice_dim(0, 1, n) != keys.slice_dim(0, 0, n - 1)
    if keys.ndim == 2:
        differs = differs.any(1)
    return cat([first, differs], 0)


def _rows(input: Tensor, dim: int, op: str) -> tuple[Tensor, int]:
    """``input`` with ``dim`` moved first (the others keep their order, so rows compare as
    torch's slices do) and the rest flattened: one row per slice along ``dim``."""
    d = normalize_dim(op, dim, input.ndim)
    rest = input.shape[:d] + input.shape[d + 1:]
    if 0 in rest:
        raise ShapeError(f"{op}: the slices along dim {dim} of shape {describe(input.shape)} "
                         "are empty (a zero-size dim other than dim), as torch refuses too")
    return input.movedim(d, 0).reshape(input.shape[d], math.prod(rest)), d


def _unslice(rows: Tensor, input: Tensor, d: int) -> Tensor:
    rest = input.shape[:d] + input.shape[d + 1:]
    return rows.reshape(rows.shape[0], *rest).movedim(0, d)


def unique(input: Tensor, sorted: bool = True, return_inverse: bool = False,
           return_counts: bool = False, dim: int | None = None) -> Tensor | tuple[Tensor, ...]:
    """torch.unique: the distinct values in ascending order (always sorted, as torch's CPU
    result), and on request the index of each element's value and each value's count.

    With ``dim``, the distinct slices along ``dim``, in lexicographic order.
    """
    x = input.detach()
    if dim is None:
        flat = x.flatten()
        s = flat.sort(0)
        return _runs(s.values, _run_starts(s.values), s.indices, input.shape, return_inverse,
                     return_counts)
    rows, d = _rows(x, dim, "unique")
    order = _positions(rows, 0).slice_dim(1, 0, 1).reshape(-1)
    for c in reversed(range(rows.shape[1])):  # stable sorts, least significant column first
        order = order.gather(0, rows.select(1, c).gather(0, order).sort(0).indices)
    keys = rows.index_select(0, order)
    out = _runs(keys, _run_starts(keys), order, (input.shape[d],), return_inverse,
                return_counts)
    if isinstance(out, tuple):
        return (_unslice(out[0], x, d), *out[1:])
    return _unslice(out, x, d)


def unique_consecutive(input: Tensor, return_inverse: bool = False,
                       return_counts: bool = False,
                       dim: int | None = None) -> Tensor | tuple[Tensor, ...]:
    """torch.unique_consecutive: collapse each run of equal consecutive values (or slices
    along ``dim``) to one, with the optional run number of each element and run lengths."""
    x = input.detach()
    if dim is None:
        flat = x.flatten()
        return _runs(flat, _run_starts(flat), None, input.shape, return_inverse, return_counts)
    rows, d = _rows(x, dim, "unique_consecutive")
    out = _runs(rows, _run_starts(rows), None, (input.shape[d],), return_inverse,
                return_counts)
    if isinstance(out, tuple):
        return (_unslice(out[0], x, d), *out[1:])
    return _unslice(out, x, d)


def searchsorted(sorted_sequence: Tensor, values: Tensor | float, *, out_int32: bool = False,
                 right: bool = False, side: Literal["left", "right"] | None = None,
                 sorter: Tensor | None = None) -> Tensor:
    """torch.searchsorted: where each of ``values`` would be inserted into the innermost dim of
    ``sorted_sequence`` to keep it sorted (the first such place, or the last when ``right``).

    A 1-d sequence serves every value; an N-d one has the leading dims of ``values``. With
    ``sorter`` (int indices along the innermost dim that sort an unsorted sequence, as
    ``argsort`` gives) the sequence is read in that order.
    """
    if side is not None:
        if side == "left" and right:
            raise InvalidArgumentError("searchsorted: side='left' contradicts right=True")
        right = side == "right"
    seq = sorted_sequence
    if sorter is not None:
        if sorter.kind is not INT:
            raise KindError(f"searchsorted: sorter must be an int tensor, got {sorter.kind}")
        if sorter.shape != seq.shape:
            raise ShapeError(f"searchsorted: sorter {describe(sorter.shape)} must have the "
                             f"sequence's shape {describe(seq.shape)}")
        seq = seq.gather(-1, sorter) if seq.ndim else seq
    if isinstance(values, int | float):
        values = CreationOps.full((), float(values), backend=seq.backend, device=seq.device,
                                  dtype=seq.dtype)
    v = values.detach().unsqueeze(-1)
    if seq.ndim == 0:
        raise ShapeError("searchsorted: the sorted sequence must have at least one dim")
    if seq.ndim > 1:
        if seq.shape[:-1] != values.shape[:-1]:
            raise ShapeError(f"searchsorted: the leading dims of the sequence "
                             f"{describe(seq.shape)} and of the values {describe(values.shape)} "
                             "must match")
        s = seq.detach().unsqueeze(-2)
    else:
        s = seq.detach()
    before = (s <= v) if right else (s < v)
    out = before.int().sum(-1)
    return out.cast(DType.int32) if out_int32 else out


def bucketize(input: Tensor | float, boundaries: Tensor, *, out_int32: bool = False,
              right: bool = False) -> Tensor:
    """torch.bucketize: the bucket of each value among the 1-d ``boundaries``: ``i`` with
    ``boundaries[i-1] < x <= boundaries[i]`` (``<=`` and ``<`` swapped when ``right``)."""
    if boundaries.ndim != 1:
        raise ShapeError(f"bucketize: boundaries must be 1-d, got shape "
                         f"{describe(boundaries.shape)}")
    return searchsorted(boundaries, input, out_int32=out_int32, right=right)


def histc(input: Tensor, bins: int = 100, min: float = 0.0, max: float = 0.0) -> Tensor:
    """torch.histc: counts of the values in ``bins`` equal-width bins over ``[min, max]``
    (the data's range when they are equal); values outside are ignored, ``max`` falls in the
    last bin. The counts have the input's dtype."""
    _require_float(input, "histc")
    if bins <= 0:
        raise InvalidArgumentError(f"histc: bins must be > 0, got {bins}")
    lo, hi = float(min), float(max)
    if lo > hi:
        raise InvalidArgumentError(f"histc: max ({hi}) must be >= min ({lo})")
    x = input.detach().flatten()
    if lo == hi and x.numel() > 0:
        lo, hi = float(x.min().item()), float(x.max().item())
    if lo == hi:
        lo, hi = lo - 1.0, hi + 1.0
    inside = (x >= lo) & (x <= hi)
    where = ((x - lo) * (bins / (hi - lo))).floor().clamp(0, bins - 1).cast(x.backend.int_dtype)
    counts = CreationOps.zeros(bins, backend=x.backend, device=x.device, dtype=x.dtype)
    return counts.scatter_add(0, where, inside.cast(x.dtype))


def bincount(input: Tensor, weights: Tensor | None = None, minlength: int = 0) -> Tensor:
    """torch.bincount: how often each value of a 1-d non-negative int tensor occurs (or the sum
    of its ``weights``), ``max(input) + 1`` long at least ``minlength``. Counts have the
    backend's int dtype (int64 but on WebGPU); float32 weights sum in float32, others in float64
    where the backend has it (torch's rule)."""
    if input.kind is not INT or input.ndim != 1:
        raise KindError(f"bincount: expects a 1-d int tensor, got {input.kind} of shape "
                        f"{describe(input.shape)}")
    if minlength < 0:
        raise InvalidArgumentError(f"bincount: minlength must be >= 0, got {minlength}")
    low = int(input.min().item()) if input.numel() else 0
    if low < 0:
        raise InvalidArgumentError(f"bincount: values must be non-negative, found {low}")
    size = max(int(input.max().item()) + 1 if input.numel() else 0, minlength)
    b, dev = input.backend, input.device
    if weights is None:
        counts = CreationOps.zeros(size, backend=b, device=dev, dtype=b.int_dtype)
        ones = CreationOps.ones(input.shape[0], backend=b, device=dev, dtype=b.int_dtype)
        return counts.scatter_add(0, input, ones)
    if weights.shape != input.shape:
        raise ShapeError(f"bincount: weights of shape {describe(weights.shape)} must match the "
                         f"input's {describe(input.shape)}")
    wide = DType.float64 if b.supports_dtype(dev, DType.float64) else DType.float32
    dt = DType.float32 if weights.dtype is DType.float32 else wide
    w = weights.detach().cast(dt)
    sums = CreationOps.zeros(size, backend=b, device=dev, dtype=dt)
    return sums.scatter_add(0, input, w)


# ---- creation and sampling ---------------------------------------------------------------------

def _like(input: Tensor, distribution: Distribution, dtype: DTypeLike | None) -> Tensor:
    return CreationOps.random(input.shape, distribution, backend=input.backend,
                              device=input.device,
                              dtype=input.dtype if dtype is None else dtype)


def rand_like(input: Tensor, *, dtype: DTypeLike | None = None) -> Tensor:
    """torch.rand_like: uniform [0, 1) samples of ``input``'s shape, dtype and device."""
    return _like(input, Distribution.default(), dtype)


def randn_like(input: Tensor, *, dtype: DTypeLike | None = None) -> Tensor:
    """torch.randn_like: standard normal samples of ``input``'s shape, dtype and device."""
    return _like(input, Distribution.normal(0.0, 1.0), dtype)


def bernoulli(input: Tensor, p: float | None = None) -> Tensor:
    """torch.bernoulli: 1 with probability ``input`` (or ``p``), else 0, in ``input``'s dtype.
    Samples carry no gradient, as torch's."""
    _require_float(input, "bernoulli")
    probs: Tensor | float = input.detach() if p is None else p
    if p is not None and not 0.0 <= p <= 1.0:
        raise InvalidArgumentError(f"bernoulli: p must be in [0, 1], got {p}")
    return (rand_like(input.detach()) < probs).cast(input.dtype)


def multinomial(input: Tensor, num_samples: int, replacement: bool = False) -> Tensor:
    """torch.multinomial: ``num_samples`` category indices per row of the non-negative weights
    ``input`` (1-d or 2-d), drawn with or without replacement; int64.

    With replacement, inverse CDF sampling; without, the Gumbel-top-k trick (the ``k`` largest
    ``log(w) + Gumbel noise`` are a sample without replacement).
    """
    _require_float(input, "multinomial")
    if input.ndim not in (1, 2):
        raise ShapeError(f"multinomial: expects 1-d or 2-d weights, got shape "
                         f"{describe(input.shape)}")
    w = input.detach()
    n = w.shape[-1]
    if num_samples <= 0 or (not replacement and num_samples > n):
        raise InvalidArgumentError(f"multinomial: cannot draw {num_samples} samples from {n} "
                                   f"categories {'with' if replacement else 'without'} "
                                   "replacement")
    if bool((w < 0).any().item()) or bool(w.isinf().any().item()) or bool(w.isnan().any().item()):
        raise InvalidArgumentError("multinomial: weights must be finite and non-negative")
    total = w.sum(-1, keepdim=True)
    if bool((total <= 0).any().item()):
        raise InvalidArgumentError("multinomial: every row needs a positive total weight")
    shape = (*w.shape[:-1], num_samples)
    if replacement:
        cdf = (w / total).cumsum(-1)
        u = CreationOps.random(shape, Distribution.default(), backend=w.backend,
                               device=w.device, dtype=w.dtype)
        return searchsorted(cdf, u, right=True).clamp_max(n - 1)
    if bool(((w > 0).int().sum(-1) < num_samples).any().item()):
        raise InvalidArgumentError(f"multinomial: fewer than {num_samples} categories have a "
                                   "positive weight to draw without replacement")
    u = CreationOps.random(w.shape, Distribution.uniform(1e-12, 1.0), backend=w.backend,
                           device=w.device, dtype=w.dtype)
    empty = w == 0.0
    keys = w.mask_fill(empty, 1.0).log().mask_fill(empty, -math.inf) - (-u.log()).log()
    return keys.topk(num_samples, -1).indices


@overload
def randint(high: int, size: Sequence[int] | int, /, *, backend: type[Backend] | None = None,
            device: Device | None = None, dtype: DTypeLike | None = None) -> Tensor: ...
@overload
def randint(low: int, high: int, size: Sequence[int] | int, /, *,
            backend: type[Backend] | None = None, device: Device | None = None,
            dtype: DTypeLike | None = None) -> Tensor: ...


def randint(low: int, high: int | Sequence[int], size: Sequence[int] | int | None = None, /,
            *, backend: type[Backend] | None = None, device: Device | None = None,
            dtype: DTypeLike | None = None) -> Tensor:
    """torch.randint: uniform integers in ``[low, high)`` (``low`` defaults to 0 when only
    ``high`` and ``size`` are given), from the device's seeded generator."""
    if size is None:
        if isinstance(high, int):
            raise InvalidArgumentError("randint: missing the size")
        low, high, size = 0, low, high
    if not isinstance(high, int):
        raise InvalidArgumentError(f"randint: high must be an int, got {high!r}")
    return CreationOps.randint(low, high, size, backend=backend, device=device, dtype=dtype)


def normal(mean: Tensor | float, std: Tensor | float = 1.0,
           size: Sequence[int] | int | None = None, *, backend: type[Backend] | None = None,
           device: Device | None = None, dtype: DTypeLike | None = None) -> Tensor:
    """torch.normal: samples of N(mean, std) for tensor means and/or stds (broadcast) or, with
    two numbers, of ``size``. The samples carry no gradient, as torch's."""
    like = mean if isinstance(mean, TensorBase) else std if isinstance(std, TensorBase) else None
    if like is None:
        if size is None:
            raise InvalidArgumentError("normal: give a size with a number mean and std")
        if std < 0:
            raise InvalidArgumentError(f"normal: std must be >= 0, got {std}")
        return CreationOps.random(size, Distribution.normal(float(mean), float(std)),
                                  backend=backend, device=device, dtype=dtype)
    if size is not None:
        raise InvalidArgumentError("normal: size is given by the tensor mean or std")
    for t in (mean, std):
        if isinstance(t, TensorBase):
            _require_float(t, "normal")
    shapes = [t.shape for t in (mean, std) if isinstance(t, TensorBase)]
    shape = broadcast_shapes("normal", *shapes) if len(shapes) == 2 else shapes[0]
    out_dtype = like.dtype if dtype is None else DType.of(dtype)
    if not out_dtype.is_float:
        raise DTypeError(f"normal: samples are float, got dtype {out_dtype!r}")
    eps = CreationOps.random(shape, Distribution.normal(0.0, 1.0), backend=like.backend,
                             device=like.device, dtype=out_dtype)
    m = mean.detach() if isinstance(mean, TensorBase) else mean
    s = std.detach() if isinstance(std, TensorBase) else std
    return eps * s + m


#: torch.logspace and torch.randperm: ``Tensor``'s static constructors.
logspace = CreationOps.logspace
randperm = CreationOps.randperm


class StatisticsOps:
    """``Tensor``'s order statistics, NaN-aware reductions, norms, uniques and sampling."""

    __slots__ = ()



    @overload
    def median(self: Tensor, dim: None = None, keepdim: bool = False) -> Tensor: ...
    @overload
    def median(self: Tensor, dim: int, keepdim: bool = False) -> ValuesIndices: ...

    def median(self: Tensor, dim: int | None = None,
               keepdim: bool = False) -> Tensor | ValuesIndices:
        """torch.median: the lower middle value (NaN where a NaN is); over all elements a 0-d
        tensor, along ``dim`` the named tuple ``(values, indices)``."""
        return median(self, dim, keepdim)

    @overload
    def nanmedian(self: Tensor, dim: None = None, keepdim: bool = False) -> Tensor: ...
    @overload
    def nanmedian(self: Tensor, dim: int, keepdim: bool = False) -> ValuesIndices: ...

    def nanmedian(self: Tensor, dim: int | None = None,
                  keepdim: bool = False) -> Tensor | ValuesIndices:
        """torch.nanmedian: ``median`` ignoring NaNs (NaN only where every value is)."""
        return nanmedian(self, dim, keepdim)

    def mode(self: Tensor, dim: int = -1, keepdim: bool = False) -> ValuesIndices:
        """torch.mode: ``(values, indices)`` of the most frequent value along ``dim`` (the
        smallest among equally frequent ones, at its last occurrence)."""
        return mode(self, dim, keepdim)

    def kthvalue(self: Tensor, k: int, dim: int = -1, keepdim: bool = False) -> ValuesIndices:
        """torch.kthvalue: ``(values, indices)`` of the ``k``-th smallest along ``dim``."""
        return kthvalue(self, k, dim, keepdim)

    def aminmax(self: Tensor, *, dim: int | None = None, keepdim: bool = False) -> MinMax:
        """torch.aminmax: the named tuple ``(min, max)`` over ``dim`` (all when None)."""
        return aminmax(self, dim=dim, keepdim=keepdim)

    def msort(self: Tensor) -> Tensor:
        """torch.msort: the values sorted along dim 0."""
        return msort(self)

    def nansum(self: Tensor, dim: Dims = None, keepdim: bool = False) -> Tensor:
        """torch.nansum: the sum with NaNs counted as zero."""
        return nansum(self, dim, keepdim)

    def nanmean(self: Tensor, dim: Dims = None, keepdim: bool = False) -> Tensor:
        """torch.nanmean: the mean of the values that are not NaN."""
        return nanmean(self, dim, keepdim)

    def logcumsumexp(self: Tensor, dim: int) -> Tensor:
        """torch.logcumsumexp: ``log(cumsum(exp(x)))`` along ``dim``, exact at any scale."""
        return logcumsumexp(self, dim)

    def norm(self: Tensor, p: float | Literal["fro"] | None = "fro", dim: Dims = None,
             keepdim: bool = False) -> Tensor:
        """torch's Tensor.norm: the vector ``p``-norm (a number, inf, -inf, 0 or "fro") over
        ``dim``; the gradient at a zero norm is 0."""
        return norm(self, p, dim, keepdim)

    def dist(self: Tensor, other: Tensor, p: float = 2.0) -> Tensor:
        """torch.dist: the ``p``-norm of ``self - other``."""
        return dist(self, other, p)

    def unique(self: Tensor, sorted: bool = True, return_inverse: bool = False,
               return_counts: bool = False, dim: int | None = None) -> Tensor | tuple[Tensor, ...]:
        """torch.unique: the distinct values (or slices along ``dim``) in ascending order, with
        the optional inverse indices and counts."""
        return unique(self, sorted, return_inverse, return_counts, dim)

    def unique_consecutive(self: Tensor, return_inverse: bool = False, return_counts: bool = False,
                           dim: int | None = None) -> Tensor | tuple[Tensor, ...]:
        """torch.unique_consecutive: one value per run of equal consecutive values."""
        return unique_consecutive(self, return_inverse, return_counts, dim)

    def histc(self: Tensor, bins: int = 100, min: float = 0.0, max: float = 0.0) -> Tensor:
        """torch.histc: counts in ``bins`` equal bins over ``[min, max]`` (the data's range
        when equal), in the input's dtype."""
        return histc(self, bins, min, max)

    def bincount(self: Tensor, weights: Tensor | None = None, minlength: int = 0) -> Tensor:
        """torch.bincount: occurrences (or summed ``weights``) of each value of a 1-d
        non-negative int tensor."""
        return bincount(self, weights, minlength)

    def bernoulli(self: Tensor, p: float | None = None) -> Tensor:
        """torch.bernoulli: 1 with probability ``self`` (or ``p``), else 0, without gradient."""
        return bernoulli(self, p)

    def multinomial(self: Tensor, num_samples: int, replacement: bool = False) -> Tensor:
        """torch.multinomial: category indices drawn from the weights of each row."""
        return multinomial(self, num_samples, replacement)
