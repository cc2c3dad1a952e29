"""Module ops (convolutions, pools, interpolation) written once against an array module.

The mixin reads its array module from the class attribute ``xp`` (NumPy for the CPU backend,
CuPy for CUDA). Convolutions are im2col followed by a BLAS matmul: on large output planes the
columns are channels-first (one copy of a strided window view, a batched matmul with the
weight); on small ones (``_rows_pay``) they are channels-last rows (one copy of a strided
window view of a channels-last padded input, a matmul with the permuted weight), whose copy
moves runs of whole kernel rows of channels instead of tiny output rows; stride-1 convs on
small planes or few output channels take columns of flattened padded planes instead
(``_flat_chunks``: one contiguous run per channel and tap). 3x3 stride-1 convs with 16
channels or more run as Winograd F(2x2, 3x3) instead (``_winograd_pays``): forward, x
gradient (the conv with the flipped kernel) and weight gradient (in the Winograd domain),
their transforms compiled kernels. Large scratch arrays are reused per thread on NumPy
(``_scratch``): fresh pages cost more than the copies. Transposed
convolutions are a matmul followed by a col2im scatter-add over the kernel taps (or, at
stride 1 with few input channels, the equivalent conv); weight gradients are a matmul against
the same columns or rows. Max pools copy every window tap into one tap-major buffer and scan
it; average pools reduce strided window views tap by tap. Small index tables (pool divisors,
max-pool offsets, interpolation taps) are built on the host with NumPy and moved to the
device with ``xp.asarray``. Helpers are module-level functions taking ``xp`` so they cannot
collide with other mixins' private names.
"""

from __future__ import annotations

import functools
import itertools
import math
import threading
import weakref
from collections.abc import Callable, Iterator
from types import EllipsisType
from typing import Any, ClassVar

import numpy

from burnpy.backend.ops.module_ops import (
    ConvOptions,
    ConvTransposeOptions,
    InterpolateMode,
    Ints,
    conv_output_size,
    conv_transpose_output_size,
    pool_output_size,
)
from burnpy_cpu.array_ops._shared import narrowed, widened
from burnpy_cpu.numba_kernels import (
    COMPILED_FLOATS,
    WINOGRAD_BLOCK,
    WINOGRAD_MAX_WIDTH,
    WINOGRAD_SLAB,
    col2im,
    plane_scatter_add,
    winograd_grad_output,
    winograd_input,
    winograd_output,
    winograd_weight,
)

A = Any  # an ``xp.ndarray``
Host = numpy.ndarray
#: A NumPy-style index: ``...`` then one slice per trailing dim.
_Index = tuple[EllipsisType | slice, ...]


# ---- helpers ----------------------------------------------------------------------------------

def _taps(kernel: Ints) -> itertools.product:
    """Every kernel tap as a tuple of per-dim offsets, in row-major order."""
    return itertools.product(*(range(k) for k in kernel))


def _extent(kernel: Ints, stride: Ints, dilation: Ints, grid: Ints) -> Ints:
    """Padded input length per spatial dim that the windows of a ``grid`` of outputs span."""
    return tuple((g - 1) * s + (k - 1) * d + 1
                 for k, s, d, g in zip(kernel, stride, dilation, grid, strict=True))


def _tap_window(tap: Ints, stride: Ints, dilation: Ints, grid: Ints) -> tuple[slice, ...]:
    """Spatial index of the padded-input values that kernel tap ``tap`` reads for a ``grid``
    of output positions: one strided slice per spatial dim."""
    return tuple(slice(i * d, i * d + (g - 1) * s + 1, s)
                 for i, s, d, g in zip(tap, stride, dilation, grid, strict=True))


def _crop(padding: Ints, size: Ints) -> tuple[slice, ...]:
    """Spatial index of the ``size`` interior of a buffer padded by ``padding`` before it."""
    return tuple(slice(p, p + sz) for p, sz in zip(padding, size, strict=True))


def _unpadded(x: A, pad_lo: Ints, extent: Ints) -> A | None:
    """``x`` padded by ``pad_lo`` to ``extent`` as a view of ``x`` when that needs no padding
    (only cropping), else None."""
    if all(p == 0 and e <= size for p, e, size in zip(pad_lo, extent, x.shape[2:],
                                                      strict=True)):
        return x[(Ellipsis, *(slice(0, e) for e in extent))]
    return None


def _box(pad_lo: Ints, spatial: Ints, extent: Ints) -> tuple[_Index, _Index]:
    """Where ``x`` lands when padded by ``pad_lo`` to ``extent`` (cropping what lies beyond):
    the destination and the source index."""
    dst: list[EllipsisType | slice] = [Ellipsis]
    src: list[EllipsisType | slice] = [Ellipsis]
    for p, size, e in zip(pad_lo, spatial, extent, strict=True):
        m = max(0, min(size, e - p))
        dst.append(slice(min(p, e), min(p, e) + m))
        src.append(slice(0, m))
    return tuple(dst), tuple(src)


def _padded(xp: Any, x: A, pad_lo: Ints, extent: Ints, fill: float) -> A:
    """``x`` at offset ``pad_lo`` in a ``fill``-ed buffer whose spatial dims have length
    ``extent`` (cropping what lies beyond); a view of ``x`` when no padding is needed."""
    view = _unpadded(x, pad_lo, extent)
    if view is not None:
        return view
    buf = xp.full((*x.shape[:2], *extent), fill, dtype=x.dtype)
    dst, src = _box(pad_lo, x.shape[2:], extent)
    buf[dst] = x[src]
    return buf


def _batch_chunks(n: int, per_sample: int, budget: int) -> list[slice]:
    """Consecutive slices of a batch of ``n`` samples whose scratch (``per_sample`` bytes a
    sample) fits ``budget``, one sample at least; the first is the longest."""
    step = max(1, budget // max(per_sample, 1))
    return [slice(i, min(i + step, n)) for i in range(0, n, step)]


def _padded_chunks(xp: Any, x: A, pad_lo: Ints, extent: Ints,
                   per_sample: int, budget: int) -> Iterator[tuple[slice, A]]:
    """``(batch slice, that chunk of x zero-padded like _padded)`` for chunks whose scratch
    (``per_sample`` bytes a sample) fits ``budget``. One buffer serves every chunk: its zero
    border is written once and each chunk only copies its interior."""
    chunks = _batch_chunks(x.shape[0], per_sample, budget)
    view = _unpadded(x, pad_lo, extent)
    if view is not None:
        yield from ((chunk, view[chunk]) for chunk in chunks)
        return
    buf = xp.zeros((chunks[0].stop if chunks else 0, x.shape[1], *extent), dtype=x.dtype)
    dst, src = _box(pad_lo, x.shape[2:], extent)
    for chunk in chunks:
        part = buf[:chunk.stop - chunk.start]
        part[dst] = x[chunk][src]
        yield chunk, part


def _window_view(xp: Any, xpad: A, kernel: Ints, stride: Ints, dilation: Ints,
                 out_sp: Ints) -> A:
    """Strided view ``[n, c, *kernel, *out_sp]`` of an already padded input: ``[..., t...,
    o...]`` is the value kernel tap ``t`` reads for output ``o``."""
    sn, sc, *step = xpad.strides
    return _strided(xp, xpad, (*xpad.shape[:2], *kernel, *out_sp),
                    (sn, sc, *(st * d for st, d in zip(step, dilation, strict=True)),
                     *(st * s for st, s in zip(step, stride, strict=True))))


def _strided(xp: Any, base: A, shape: Ints, strides: Ints) -> A:
    """A read-only-use strided view of ``base`` (offsets within it). On NumPy, a contiguous
    base goes through the ndarray constructor (under a microsecond) instead of
    ``as_strided`` (about 6: it builds an array-interface object in Python)."""
    if xp is numpy and base.flags.c_contiguous:
        return numpy.ndarray(shape, base.dtype, base, 0, strides)
    return xp.lib.stride_tricks.as_strided(base, shape, strides)


def _im2col(xp: Any, xpad: A, kernel: Ints, stride: Ints, dilation: Ints, out_sp: Ints,
            groups: int, budget: int) -> A:
    """Contiguous columns ``[n, groups, c / groups * prod(kernel), prod(out_sp)]`` of an
    already padded input, laid out so one batched matmul with the ``[groups, out / groups,
    -1]`` weight is the conv: one copy of its ``_window_view`` (a copy per kernel tap would
    cost a Python round trip each, which dominates on small planes)."""
    n, c = xpad.shape[:2]
    view = _window_view(xp, xpad, kernel, stride, dilation, out_sp)
    cols = _scratch(xp, "cols", view.shape, xpad.dtype, budget)
    cols[...] = view
    return cols.reshape(n, groups, c // groups * math.prod(kernel), math.prod(out_sp))


def _im2col_chunks(xp: Any, x: A, kernel: Ints, stride: Ints, dilation: Ints, padding: Ints,
                   out_sp: Ints, groups: int, budget: int) -> Iterator[tuple[slice, A]]:
    """``(batch slice, _im2col columns of that chunk)`` with about ``budget`` bytes of
    columns per chunk, so they are consumed while still in cache."""
    per_sample = x.shape[1] * math.prod(kernel) * math.prod(out_sp) * x.itemsize
    extent = _extent(kernel, stride, dilation, out_sp)
    for chunk, xpad in _padded_chunks(xp, x, padding, extent, per_sample, budget):
        yield chunk, _im2col(xp, xpad, kernel, stride, dilation, out_sp, groups, budget)


class _Scratch(threading.local):
    """Per-thread NumPy scratch buffers reused from call to call: a fresh multi-megabyte array
    is fresh pages from the OS, and faulting them in (the kernel zeroing each page) can cost
    more than the im2col copy that fills them."""

    def __init__(self) -> None:
        self.buffers: dict[str, numpy.ndarray] = {}


_SCRATCH = _Scratch()


def _scratch(xp: Any, slot: str, shape: Ints, dtype: Any, budget: int) -> A:
    """An uninitialized ``shape`` array: on NumPy, and when it fits in ``4 * budget`` bytes,
    a view of this thread's reused ``slot`` buffer (valid until the slot is asked again);
    otherwise a fresh one."""
    dtype = numpy.dtype(dtype)
    nbytes = math.prod(shape) * dtype.itemsize
    if xp is not numpy or nbytes > 4 * budget:
        return xp.empty(shape, dtype=dtype)
    buf = _SCRATCH.buffers.get(slot)
    if buf is None or buf.nbytes < nbytes:
        buf = _SCRATCH.buffers[slot] = numpy.empty(nbytes, dtype=numpy.uint8)
    return buf[:nbytes].view(dtype).reshape(shape)


def _flat_offsets(kernel: Ints, dilation: Ints, extent: Ints) -> list[int]:
    """Offset of every kernel tap (row-major) in a flattened ``extent``-sized plane."""
    strides = [math.prod(extent[d + 1:]) for d in range(len(extent))]
    return [sum(i * d * st for i, d, st in zip(tap, dilation, strides, strict=True))
            for tap in _taps(kernel)]


def _flat_chunks(xp: Any, x: A, kernel: Ints, dilation: Ints, padding: Ints, out_sp: Ints,
                 groups: int, budget: int) -> Iterator[tuple[slice, A]]:
    """``(batch slice, columns [m, groups, c / groups * prod(kernel), run])`` of a stride-1
    conv on flattened planes: the padded input's planes (``extent``, what the output grid's
    windows span) lie end to end, and output position ``p = (y, q...)`` of the grid
    ``(out_sp[0], *extent[1:])`` reads tap ``t`` at flat ``p + offset[t]``. So a tap of a
    channel is one contiguous run of ``run = prod(grid)`` values and the copy into columns
    moves long runs (not an output row each); the grid's columns past ``out_sp[1:]`` are
    garbage that callers crop (or zero in the other matmul operand)."""
    n, c = x.shape[:2]
    extent = _extent(kernel, (1,) * len(kernel), dilation, out_sp)
    offsets = _flat_offsets(kernel, dilation, extent)
    plane, run = math.prod(extent), out_sp[0] * math.prod(extent[1:])
    step = [d * math.prod(extent[i + 1:]) for i, d in enumerate(dilation)]
    chunks = _batch_chunks(n, c * len(offsets) * run * x.itemsize, budget)
    m_max = chunks[0].stop if chunks else 0
    flat = _scratch(xp, "flat", (m_max * c * plane + offsets[-1],), x.dtype, budget)
    flat.fill(0)  # the padding, and a tail that the last plane's last taps read
    buf = flat[:m_max * c * plane].reshape(m_max, c, *extent)
    cols = _scratch(xp, "cols", (m_max, c, *kernel, run), x.dtype, budget)
    dst, src = _box(padding, x.shape[2:], extent)
    it = x.itemsize
    for chunk in chunks:
        m = chunk.stop - chunk.start
        buf[:m][dst] = x[chunk][src]
        view = _strided(xp, flat, (m, c, *kernel, run),
                        (c * plane * it, plane * it, *(s * it for s in step), it))
        part = cols[:m]
        part[...] = view
        yield chunk, part.reshape(m, groups, c // groups * len(offsets), run)


def _flat_pays(stride: Ints, out_sp: Ints, c_out: int) -> bool:
    """Whether a stride-1 conv (or its weight gradient) runs on ``_flat_chunks`` columns
    rather than ``_im2col``'s: their copy moves long runs but the matmul also computes the
    grid's garbage columns, which costs more than it saves on large planes with many output
    channels (measured: 0.74x the time at 32x16x16x16, 0.89x on a 3-channel 32x32 stem,
    1.11x at 8x64x56x56 with 64 outputs)."""
    return all(s == 1 for s in stride) and (math.prod(out_sp) <= 576 or c_out <= 16)


def _shifted_pays(x: A, kernel: Ints, dilation: Ints, out_sp: Ints, budget: int) -> bool:
    """Whether a one-group stride-1 weight gradient runs ``_weight_grad_shifted``: when the
    flattened padded input fits ``budget`` (each tap reads all of it again, so it must stay
    in cache), planes are small (at most 256 outputs: the columns' copy is then most of the
    cost) and there are 8 channels or more (fewer make each per-sample matmul too thin).
    Measured: 1.3x faster at 32x16x16x16, 1.6x slower at 64x32x28x28 or with 3 channels."""
    extent = _extent(kernel, (1,) * len(kernel), dilation, out_sp)
    flat_bytes = x.shape[0] * x.shape[1] * math.prod(extent) * x.itemsize
    return x.shape[1] >= 8 and math.prod(out_sp) <= 256 and flat_bytes <= budget


def _weight_grad_shifted(xp: Any, x: A, a: A, kernel: Ints, dilation: Ints, padding: Ints,
                         out_sp: Ints, budget: int) -> A:
    """Weight gradient ``[c_out, c, *kernel]`` of a one-group stride-1 conv without columns:
    ``x`` is laid out on flattened padded planes (as in ``_flat_chunks``), so for each tap
    the values it read are a strided ``[n, run, c]`` view of that buffer, and its slice of the
    gradient is one batched matmul with ``a [n, c_out, run]`` (the grad on the flat grid, zero
    on the garbage columns) summed over the batch."""
    n, c = x.shape[:2]
    c_out = a.shape[1]
    extent = _extent(kernel, (1,) * len(kernel), dilation, out_sp)
    offsets = _flat_offsets(kernel, dilation, extent)
    plane, run = math.prod(extent), a.shape[2]
    flat = _scratch(xp, "flat", (n * c * plane + offsets[-1],), x.dtype, budget)
    flat.fill(0)
    dst, src = _box(padding, x.shape[2:], extent)
    flat[:n * c * plane].reshape(n, c, *extent)[dst] = x[src]
    out = xp.empty((c_out, c, len(offsets)), dtype=x.dtype)
    it = x.itemsize
    for t, off in enumerate(offsets):
        view = _strided(xp, flat[off:], (n, run, c), (c * plane * it, it, plane * it))
        out[:, :, t] = xp.matmul(a, view).sum(axis=0)
    return out.reshape(c_out, c, *kernel)


def _flat_crop(out_sp: Ints, kernel: Ints, dilation: Ints) -> tuple[Ints, _Index]:
    """Shape ``(out_sp[0], *extent[1:])`` of a ``_flat_chunks`` grid and the index that crops
    it (trailing dims) to the output's ``out_sp``."""
    extent = _extent(kernel, (1,) * len(kernel), dilation, out_sp)
    return (out_sp[0], *extent[1:]), (Ellipsis, *(slice(0, o) for o in out_sp[1:]))


def _rows_pay(c: int, kernel: Ints, stride: Ints, dilation: Ints, out_sp: Ints, groups: int,
              max_plane: int) -> bool:
    """Whether a conv is done on channels-last rows (``_row_chunks``) rather than ``_im2col``
    columns: for one group and output planes of at most ``max_plane`` positions, where the
    rows' contiguous runs (a kernel row of every channel) are clearly longer than the
    columns' (an output row): copying the columns of small planes is mostly per-run
    overhead, while on large planes the column layout's matmul is the faster one."""
    rows_run = c * (kernel[-1] if dilation[-1] == 1 else 1)
    cols_run = out_sp[-1] if stride[-1] == 1 else 1
    return groups == 1 and math.prod(out_sp) <= max_plane and 2 * rows_run >= 3 * cols_run


def _row_chunks(xp: Any, x: A, kernel: Ints, stride: Ints, dilation: Ints, padding: Ints,
                out_sp: Ints, budget: int) -> Iterator[tuple[slice, A]]:
    """``(batch slice, im2col rows of that chunk)``: contiguous ``[m * prod(out_sp),
    prod(kernel) * c]``, one row per output position, its taps in (kernel..., channel) order.
    ``x`` is zero-padded once into a channels-last buffer; a strided window view of it is
    copied chunk by chunk (about ``budget`` bytes of rows each), so each copy moves runs of
    a whole kernel row of channels instead of one output row per tap."""
    n, c = x.shape[:2]
    extent = _extent(kernel, stride, dilation, out_sp)
    buf = xp.zeros((n, *extent, c), dtype=x.dtype)
    dst, src = _box(padding, x.shape[2:], extent)
    buf.transpose(0, buf.ndim - 1, *range(1, buf.ndim - 1))[dst] = x[src]
    step = buf.strides[1:-1]
    windows = _strided(xp, buf, (n, *out_sp, *kernel, c),
                       (buf.strides[0], *(st * s for st, s in zip(step, stride, strict=True)),
                        *(st * d for st, d in zip(step, dilation, strict=True)),
                        buf.strides[-1]))
    width = math.prod(kernel) * c
    rows = math.prod(out_sp)
    chunks = _batch_chunks(n, rows * width * x.itemsize, budget)
    out = _scratch(xp, "cols", ((chunks[0].stop if chunks else 0) * rows, width), x.dtype,
                   budget)
    for chunk in chunks:
        part = out[:(chunk.stop - chunk.start) * rows]
        part.reshape(windows[chunk].shape)[...] = windows[chunk]
        yield chunk, part


def _scatter_extent(kernel: Ints, stride: Ints, dilation: Ints, padding: Ints, grid: Ints,
                    size: Ints) -> Ints:
    """Length per spatial dim of a col2im buffer: what a ``grid``'s taps write, and at least
    the padding plus the ``size`` kept after cropping."""
    return tuple(max(e, p + sz) for e, p, sz in zip(
        _extent(kernel, stride, dilation, grid), padding, size, strict=True))


def _tap_of(cols: A, t: int) -> A:
    """The ``t``-th kernel tap of ``cols [m, g, taps, ...]``."""
    return cols[:, :, t]


def _col2im(xp: Any, tap: Callable[[int], A], lead: Ints, kernel: Ints, stride: Ints,
            dilation: Ints, padding: Ints, grid: Ints, size: Ints, dtype: Any) -> A:
    """Adjoint of reading ``_tap_window``s: sums ``tap(t)`` (shaped ``[*lead, *grid]``, for
    the t-th kernel tap in row-major order) into the padded positions it was read from;
    returns the view ``[*lead, *size]`` that crops the padding."""
    buf = xp.zeros((*lead, *_scatter_extent(kernel, stride, dilation, padding, grid, size)),
                   dtype=dtype)
    for t, offsets in enumerate(_taps(kernel)):
        buf[(Ellipsis, *_tap_window(offsets, stride, dilation, grid))] += tap(t)
    return buf[(Ellipsis, *_crop(padding, size))]


def _col2im_flat(xp: Any, cols: A, kernel: Ints, dilation: Ints, padding: Ints, extent: Ints,
                 size: Ints) -> A:
    """Stride-1 ``_col2im`` from ``cols [c, g, taps, o * prod(extent)]``: every tap's
    contribution laid out on zero-padded ``extent``-sized planes, so it lands on one
    contiguous run of the flattened buffer (what wraps past a row's end is the padding's
    zeros) and the scatter is k^N long 1-d adds. Returns the cropped view
    ``[c, g, o, *size]``."""
    strides = [math.prod(extent[d + 1:]) for d in range(len(extent))]
    span = cols.shape[-1]
    offsets = [sum(i * d * st for i, d, st in zip(tap, dilation, strides, strict=True))
               for tap in _taps(kernel)]
    buf = xp.zeros((*cols.shape[:2], span + offsets[-1]), dtype=cols.dtype)
    for t, off in enumerate(offsets):
        buf[..., off:off + span] += cols[:, :, t]
    planes = buf[..., :span].reshape(*buf.shape[:2], span // math.prod(extent), *extent)
    return planes[(Ellipsis, *_crop(padding, size))]


def _weight_grad(xp: Any, a: A, columns: Iterator[tuple[slice, A]], shape: Ints) -> A:
    """``sum_n a[n] @ cols[n].T`` over ``a [n, g, A, P]`` and columns ``[n, g, B, P]``
    arriving chunk by chunk: a grouped weight gradient, reshaped to ``shape``. It is computed
    transposed, ``cols @ a.T``, the operand order BLAS runs fastest here."""
    g, rows = a.shape[1:3]
    total = xp.zeros((g, math.prod(shape) // max(g * rows, 1), rows), dtype=a.dtype)
    for chunk, cols in columns:
        total += xp.matmul(cols, a[chunk].swapaxes(-1, -2)).sum(axis=0)
    return total.swapaxes(1, 2).reshape(shape)


def _conv_by_matmul(xp: Any, x: A, weight: A, out: A, stride: Ints, dilation: Ints,
                    padding: Ints, groups: int, budget: int) -> None:
    """Conv of ``x`` into ``out [n, c_out, *size]`` (its size may exceed what ``padding``
    alone gives: the extra outputs read zero padding): per batch chunk, im2col and a batched
    matmul with the ``[groups, c_out / groups, -1]`` weight."""
    n, c_out, size = out.shape[0], out.shape[1], out.shape[2:]
    w = xp.ascontiguousarray(weight.reshape(groups, c_out // groups,
                                            math.prod(weight.shape[1:])))
    grouped = out.reshape(n, groups, c_out // groups, math.prod(size))
    for chunk, cols in _im2col_chunks(xp, x, weight.shape[2:], stride, dilation, padding, size,
                                      groups, budget):
        xp.matmul(w, cols, out=grouped[chunk])


def _conv_by_rows(xp: Any, x: A, weight: A, out: A, stride: Ints, dilation: Ints,
                  padding: Ints, budget: int, frozen: list[Any] | None = None) -> None:
    """Conv of ``x`` into a fresh ``out [n, c_out, *size]`` with one group: per batch chunk,
    ``_row_chunks`` rows times the ``[prod(kernel) * c, c_out]`` weight, each sample's
    ``[positions, c_out]`` product written straight into its transposed slice of ``out``."""
    n, c_out, size = out.shape[0], out.shape[1], out.shape[2:]
    positions = math.prod(size)
    nd = weight.ndim - 2
    w = _derived(frozen, "rows", lambda v: v.transpose(*range(2, 2 + nd), 1, 0).reshape(
        math.prod(v.shape[1:]), c_out), weight)
    dest = out.reshape(n, c_out, positions).swapaxes(1, 2)
    for chunk, rows in _row_chunks(xp, x, weight.shape[2:], stride, dilation, padding, size,
                                   budget):
        xp.matmul(rows.reshape(chunk.stop - chunk.start, positions, w.shape[0]), w,
                  out=dest[chunk])


def _conv_flat(xp: Any, x: A, weight: A, out: A, dilation: Ints, padding: Ints, groups: int,
               budget: int) -> None:
    """Stride-1 conv of ``x`` into ``out [n, c_out, *size]``: per batch chunk, a batched matmul
    of the ``[groups, c_out / groups, -1]`` weight with ``_flat_chunks`` columns, cropped
    into ``out``."""
    c_out, size = out.shape[1], out.shape[2:]
    kernel = weight.shape[2:]
    w = xp.ascontiguousarray(weight.reshape(groups, c_out // groups,
                                            math.prod(weight.shape[1:])))
    grid, crop = _flat_crop(size, kernel, dilation)
    for chunk, cols in _flat_chunks(xp, x, kernel, dilation, padding, size, groups, budget):
        out[chunk] = xp.matmul(w, cols).reshape(chunk.stop - chunk.start, c_out, *grid)[crop]


def _round_up(n: int, block: int) -> int:
    """``n`` rounded up to a multiple of ``block``."""
    return -(-n // block) * block


def _winograd_pays(xp: Any, x: A, weight: A, out_sp: Ints, stride: Ints, dilation: Ints,
                   groups: int, min_channels: int, banded: bool = False) -> bool:
    """Whether a conv runs as Winograd F(2x2, 3x3) (``_conv_winograd``): a one-group 2-d
    stride-1 undilated 3x3 conv on NumPy float32/float64 with at least ``min_channels`` input
    and output channels and an output plane of 16 positions or more, whose tiles fit the
    transforms' scratch (``WINOGRAD_MAX_WIDTH``, ``WINOGRAD_SLAB``); on thinner or smaller
    convs the transforms cost more than the multiplies they save. Measured (float32, one
    thread, forward against the im2col paths): 0.66x the time at 32x16x16x16 to 16 channels,
    0.75x at 32x32x8x8 to 32, 0.73x at 32x64x4x4 to 64, 0.9x at 32x16x4x4 to 32; weight
    gradients 0.65x, 0.6x, 0.75x, 0.8x. A forward conv may be ``banded`` (its tiles taken a
    band of tile rows at a time, ``_winograd_bands``): one tile row must then fit a slab,
    where the weight gradient needs a sample's tiles to (0.7x the time of im2col at
    1x64x56x56 to 64 channels, ResNet's first stage)."""
    if not (xp is numpy and x.ndim == 4 and tuple(weight.shape[2:]) == (3, 3)
            and groups == 1 and tuple(stride) == (1, 1) and tuple(dilation) == (1, 1)
            and x.dtype in COMPILED_FLOATS and weight.dtype == x.dtype
            and min(weight.shape[:2]) >= min_channels and out_sp[0] * out_sp[1] >= 16):
        return False
    th, tw = (out_sp[0] + 1) // 2, (out_sp[1] + 1) // 2
    widest = _round_up(max(weight.shape[:2]), WINOGRAD_BLOCK)
    return 2 * tw + 2 <= WINOGRAD_MAX_WIDTH and (1 if banded else th) * tw * widest <= \
        WINOGRAD_SLAB


#: What a forward conv derives from an immutable weight array (``_frozen``), by its id:
#: ``[weak reference, finite, {layout name: the weight in that layout, made when first
#: needed}]``. An entry goes when its array is freed, so an id never matches another array.
_FROZEN: dict[int, list[Any]] = {}


def _frozen(weight: A) -> list[Any] | None:
    """The cache entry of ``weight`` if its values cannot change while it lives, else None.

    That holds for a read-only NumPy array owning its memory (no base to write through):
    CpuBackend's ops never write into a primitive (every ``out=`` is a fresh array or
    scratch; an in-place tensor op re-points the tensor to a new array), so only a writable
    array reached from outside (``to_numpy``, ``from_numpy``) could change. Imported ONNX
    initializers are made read-only, so inference (eager or a compiled replay) transforms
    each weight once instead of at every call."""
    if type(weight) is not numpy.ndarray or weight.base is not None or weight.flags.writeable:
        return None
    key = id(weight)
    entry = _FROZEN.get(key)
    if entry is None or entry[0]() is not weight:
        # the table bound now: at interpreter exit the module's globals are gone first
        def forget(ref: Any, key: int = key, table: dict[int, list[Any]] = _FROZEN) -> None:
            if table.get(key, [None])[0] is ref:
                del table[key]

        entry = [weakref.ref(weight, forget), _finite(weight), {}]
        _FROZEN[key] = entry
    return entry


def _derived(frozen: list[Any] | None, layout: str, make: Callable[[A], A], weight: A) -> A:
    """``make(weight)``, kept under ``layout`` in ``frozen`` (``_frozen``'s entry) if given,
    read-only."""
    if frozen is None:
        return make(weight)
    made = frozen[2].get(layout)
    if made is None:
        made = frozen[2][layout] = make(weight)
        made.flags.writeable = False
    return made


def _finite(a: A) -> bool:
    """Whether ``a`` holds only finite values, as one BLAS dot (8 us at 131K float32, a
    third of ``isfinite(a).all()``); values past 1e19 also answer False. Winograd's
    transforms subtract inputs, so an infinity gives NaN where a direct conv gives
    +-inf: where ``_winograd_pays``, the inputs a Winograd path reads are checked just
    before it runs, and non-finite ones take the direct paths."""
    flat = a.reshape(-1)
    return math.isfinite(numpy.dot(flat, flat))


def _winograd_slabs(dtype: Any, n: int, channels: tuple[int, int], per: int,
                    budget: int) -> tuple[int, Host, Host]:
    """Samples per batch chunk of a Winograd conv with ``channels = (c, k)`` and ``per`` tiles
    a sample, and its two 1-d slab buffers (x's side, row stride ``c`` rounded up to
    ``WINOGRAD_BLOCK``; the output's, ``k`` rounded up): a chunk's 16 slabs of both take about
    ``budget`` bytes, so they stay in cache between the transforms and the GEMMs (half that
    measured 4% slower at 32x16x16x16), and each slab fits ``WINOGRAD_SLAB``."""
    cpad, kpad = (_round_up(ch, WINOGRAD_BLOCK) for ch in channels)
    step = max(1, min(budget // (16 * (cpad + kpad) * per * numpy.dtype(dtype).itemsize),
                      WINOGRAD_SLAB // (per * max(cpad, kpad))))
    rows = min(step, n) * per
    return (step,
            _scratch(numpy, "cols", (15 * WINOGRAD_SLAB + rows * cpad,), dtype, budget),
            _scratch(numpy, "flat", (15 * WINOGRAD_SLAB + rows * kpad,), dtype, budget))


def _slab_view(buf: Host, rows: int, cols: int, transposed: bool = False) -> Host:
    """The 16 slabs of a ``_winograd_slabs`` buffer as ``[16, rows, cols]`` (row stride
    ``cols`` rounded up to ``WINOGRAD_BLOCK``), or as ``[16, cols, rows]`` if
    ``transposed``; a view, writable."""
    it = buf.itemsize
    strides = (WINOGRAD_SLAB * it, _round_up(cols, WINOGRAD_BLOCK) * it, it)
    if transposed:
        return numpy.ndarray((16, cols, rows), buf.dtype, buf, 0,
                             (strides[0], strides[2], strides[1]))
    return numpy.ndarray((16, rows, cols), buf.dtype, buf, 0, strides)


def _conv_winograd(x: A, weight: A, out: A, padding: Ints, budget: int,
                   frozen: list[Any] | None = None) -> None:
    """Winograd F(2x2, 3x3) conv of ``x`` into ``out [n, k, h, w]``: per batch chunk, the
    4x4 input tiles (stride 2) transformed (``winograd_input``), 16 batched GEMMs ``V [16,
    tiles, c] @ U [16, c, k]`` with the transformed weight (``winograd_weight``), and 2x2
    output blocks transformed back (``winograd_output``); 2.25x fewer multiplies than
    im2col. The weight's transform is kept in ``frozen``, its ``_frozen`` entry, if any."""
    n, k, h, w = out.shape
    c = x.shape[1]
    x = numpy.ascontiguousarray(x)
    tiles = ((h + 1) // 2, (w + 1) // 2)
    per = tiles[0] * tiles[1]
    u = _derived(frozen, "winograd", winograd_weight, weight)
    band = WINOGRAD_SLAB // (tiles[1] * _round_up(max(c, k), WINOGRAD_BLOCK))
    if band < tiles[0]:
        _winograd_bands(x, u, out, padding, band, budget)
        return
    step, v, prod = _winograd_slabs(x.dtype, n, (c, k), per, budget)
    for start in range(0, n, step):
        chunk = slice(start, min(start + step, n))
        rows = (chunk.stop - start) * per
        winograd_input(x[chunk], padding, tiles, _round_up(c, WINOGRAD_BLOCK), v)
        numpy.matmul(_slab_view(v, rows, c), u, out=_slab_view(prod, rows, k))
        winograd_output(prod, _round_up(k, WINOGRAD_BLOCK), tiles, out[chunk])


def _winograd_bands(x: Host, u: Host, out: Host, padding: Ints, band: int,
                    budget: int) -> None:
    """``_conv_winograd`` of samples whose tiles overflow a slab, ``band`` tile rows at a
    time: a band's tiles read its input rows (copied contiguous, with the top padding only
    in the first band, the bottom one only where the input ends) and write its output
    rows."""
    n, k, h, w = out.shape
    c, height = x.shape[1], x.shape[2]
    th, tw = (h + 1) // 2, (w + 1) // 2
    cpad, kpad = _round_up(c, WINOGRAD_BLOCK), _round_up(k, WINOGRAD_BLOCK)
    _, v, prod = _winograd_slabs(x.dtype, 1, (c, k), band * tw, budget)
    for sample in range(n):
        for r0 in range(0, th, band):
            r1 = min(r0 + band, th)
            lo = 2 * r0 - padding[0]  # the input row the band's first tile starts at
            rows = numpy.ascontiguousarray(
                x[sample:sample + 1, :, max(lo, 0):min(height, lo + 2 * (r1 - r0) + 2)])
            winograd_input(rows, (max(-lo, 0), padding[1]), (r1 - r0, tw), cpad, v)
            count = (r1 - r0) * tw
            numpy.matmul(_slab_view(v, count, c), u, out=_slab_view(prod, count, k))
            block = numpy.empty((1, k, min(h, 2 * r1) - 2 * r0, w), dtype=out.dtype)
            winograd_output(prod, kpad, (r1 - r0, tw), block)
            out[sample:sample + 1, :, 2 * r0:2 * r0 + block.shape[2]] = block


#: Winograd F(2x2, 3x3) weight transform ``G``: ``G g G^T`` is a 3x3 kernel's 4x4 image.
_WINOGRAD_G = numpy.array([[1.0, 0.0, 0.0], [0.5, 0.5, 0.5], [0.5, -0.5, 0.5],
                           [0.0, 0.0, 1.0]])


def _winograd_grad_pays(n: int, out_sp: Ints, channels: Ints) -> bool:
    """Whether a weight gradient that ``_winograd_pays`` admits runs in the Winograd domain
    too: its 16 GEMMs have the batch's tiles as their inner dimension and ``[c, k]``
    products, so with fewer tiles than half the wider channel count they are mostly output
    (measured: 1.6x slower at 2x256x4x4 to 256 channels, even at 4x128x8x8 to 128)."""
    tiles = n * ((out_sp[0] + 1) // 2) * ((out_sp[1] + 1) // 2)
    return 2 * tiles >= max(channels)


def _weight_grad_winograd(x: A, grad: A, padding: Ints, budget: int) -> A:
    """Weight gradient ``[k, c, 3, 3]`` of a conv that ``_conv_winograd`` runs, in the
    Winograd domain: per batch chunk, ``V`` of x's tiles (``winograd_input``) and ``A dy
    A^T`` of grad's 2x2 blocks (``winograd_grad_output``), 16 GEMMs ``V^T @ dM`` summed over
    the tiles, then ``G^T dU G`` back to 3x3; the adjoint of the forward's steps."""
    n, k, h, w = grad.shape
    c = x.shape[1]
    x, grad = numpy.ascontiguousarray(x), numpy.ascontiguousarray(grad)
    tiles = ((h + 1) // 2, (w + 1) // 2)
    per = tiles[0] * tiles[1]
    step, v, dm = _winograd_slabs(x.dtype, n, (c, k), per, budget)
    du = numpy.zeros((16, c, k), dtype=x.dtype)
    for start in range(0, n, step):
        chunk = slice(start, min(start + step, n))
        rows = (chunk.stop - start) * per
        winograd_input(x[chunk], padding, tiles, _round_up(c, WINOGRAD_BLOCK), v)
        winograd_grad_output(grad[chunk], tiles, _round_up(k, WINOGRAD_BLOCK), dm)
        du += numpy.matmul(_slab_view(v, rows, c, transposed=True), _slab_view(dm, rows, k))
    g = _WINOGRAD_G.astype(x.dtype)
    left = (g.T @ du.reshape(4, 4 * c * k)).reshape(3, 4, c * k)  # G^T dU: [i, b, (c, k)]
    both = left.transpose(0, 2, 1) @ g  # (G^T dU) G: [i, (c, k), j]
    return numpy.ascontiguousarray(both.reshape(3, c, k, 3).transpose(2, 1, 0, 3))


def _conv_into(xp: Any, x: A, weight: A, out: A, stride: Ints, dilation: Ints,
               padding: Ints, groups: int, budget: int, max_plane: int,
               winograd_channels: int) -> None:
    """Conv of ``x`` into a fresh ``out``: as Winograd F(2x2, 3x3) where ``_winograd_pays``,
    on channels-last rows where ``_rows_pay``, else on ``_im2col`` columns."""
    frozen = _frozen(weight)
    finite_weight = frozen[1] if frozen is not None else None
    if _winograd_pays(xp, x, weight, out.shape[2:], stride, dilation, groups,
                      winograd_channels, banded=True) and (
                          finite_weight if finite_weight is not None else _finite(weight)
                      ) and _finite(x):
        _conv_winograd(x, weight, out, padding, budget, frozen)
    elif _rows_pay(x.shape[1], weight.shape[2:], stride, dilation, out.shape[2:], groups,
                 max_plane):
        _conv_by_rows(xp, x, weight, out, stride, dilation, padding, budget, frozen)
    elif _flat_pays(stride, out.shape[2:], out.shape[1]):
        _conv_flat(xp, x, weight, out, dilation, padding, groups, budget)
    else:
        _conv_by_matmul(xp, x, weight, out, stride, dilation, padding, groups, budget)


def _weight_grad_rows(xp: Any, grad: A, rows: Iterator[tuple[slice, A]], shape: Ints) -> A:
    """Weight gradient ``[c_out, c, *kernel]`` of a one-group conv from its ``grad [n, c_out,
    *size]`` and ``_row_chunks`` rows: ``grad`` as ``[c_out, n * positions]`` times the rows,
    summed over the chunks."""
    n, c_out = grad.shape[:2]
    positions = math.prod(grad.shape[2:])
    a = xp.ascontiguousarray(grad.reshape(n, c_out, positions).swapaxes(0, 1))
    a = a.reshape(c_out, n * positions)
    total = xp.zeros((c_out, math.prod(shape[1:])), dtype=grad.dtype)
    for chunk, part in rows:
        total += a[:, chunk.start * positions:chunk.stop * positions] @ part
    taps_last = total.reshape(c_out, *shape[2:], shape[1])
    return xp.ascontiguousarray(taps_last.transpose(0, len(shape) - 1, *range(1, len(shape) - 1)))


def _transpose_by_matmul(xp: Any, x: A, w: A, out: A, kernel: Ints,
                         options: ConvTransposeOptions, budget: int) -> None:
    """Transposed conv of ``x`` into ``out [n, g, o, *size]`` with a contiguous weight
    ``w [g, taps * o, c]``: per batch chunk, a matmul giving every tap's contribution, then
    col2im. With stride 1 the matmul runs on ``x`` zero-padded to the buffer's extent in all
    dims but the first and writes rows of zeroed extent-sized planes, so col2im is 1-d adds;
    otherwise a 2-d float32/float64 col2im on NumPy is one compiled pass
    (``numba_kernels.col2im``) instead of an add per tap over short strided rows."""
    g, c_out_g, size = out.shape[1], out.shape[2], out.shape[3:]
    in_sp, n_taps, c_in_g = x.shape[2:], math.prod(kernel), w.shape[2]
    extent = _scatter_extent(kernel, options.stride, options.dilation, options.padding, in_sp,
                             size)
    flat = all(s == 1 for s in options.stride)
    grid = (in_sp[0], *extent[1:]) if flat else in_sp
    positions, plane = math.prod(grid), math.prod(extent)
    per_sample = g * c_out_g * (n_taps + 1) * plane * x.itemsize
    for chunk, xc in _padded_chunks(xp, x, (0,) * len(in_sp), grid, per_sample, budget):
        m = xc.shape[0]
        xc = xc.reshape(m, g, c_in_g, positions)
        if flat:
            cols = _scratch(xp, "cols", (m, g, n_taps * c_out_g, plane), x.dtype, budget)
            cols[..., positions:] = 0
            xp.matmul(w, xc, out=cols[..., :positions])
            out[chunk] = _col2im_flat(xp, cols.reshape(m, g, n_taps, c_out_g * plane), kernel,
                                      options.dilation, options.padding, extent, size)
        else:
            cols = _scratch(xp, "cols", (m, g, n_taps * c_out_g, positions), x.dtype, budget)
            xp.matmul(w, xc, out=cols)
            if xp is numpy and len(in_sp) == 2 and x.dtype in COMPILED_FLOATS:
                dest = out[chunk].reshape(m * g, c_out_g, *size)
                dest.fill(0)
                col2im(cols.reshape(m * g, n_taps, c_out_g, *in_sp), kernel, options.stride,
                       options.padding, options.dilation, dest)
                continue
            cols = cols.reshape(m, g, n_taps, c_out_g, *in_sp)
            out[chunk] = _col2im(xp, functools.partial(_tap_of, cols), (m, g, c_out_g),
                                 kernel, options.stride, options.dilation, options.padding,
                                 in_sp, size, x.dtype)


def _avg_divisor(xp: Any, spatial: Ints, kernel: Ints, stride: Ints, padding: Ints,
                 out_sp: Ints, count_include_pad: bool, dtype: Any) -> A:
    """Each avg-pool output's divisor under torch's rule (the window clipped to the padded
    input; the padding itself excluded unless ``count_include_pad``), shaped ``[*out_sp]``."""
    nd = len(kernel)
    div = numpy.ones((1,) * nd, dtype=numpy.int64)
    for axis, (size, k, s, p, o) in enumerate(
            zip(spatial, kernel, stride, padding, out_sp, strict=True)):
        start = numpy.arange(o, dtype=numpy.int64) * s - p
        end = numpy.minimum(start + k, size + p)
        if count_include_pad:
            count = end - start
        else:
            count = numpy.minimum(end, size) - numpy.maximum(start, 0)
        div = div * count.reshape((1,) * axis + (o,) + (1,) * (nd - axis - 1))
    return xp.asarray(div.astype(dtype))


def _run_sum(xp: Any, a: A, axis: int, starts: Host, ends: Host) -> A:
    """``out[i] = sum(a[starts[i]:ends[i]])`` along ``axis`` (an empty run gives 0): one
    reshaped sum when the runs tile the axis evenly, else ``max(ends - starts)`` gathers from
    ``a`` with a zero slab appended for runs that are shorter. Exact, and non-finite values
    stay within their runs."""
    size, runs = a.shape[axis], len(starts)
    counts = ends - starts
    width = int(counts.max(initial=0))
    out_shape = (*a.shape[:axis], runs, *a.shape[axis + 1:])
    if width == 0:
        return xp.zeros(out_shape, dtype=a.dtype)
    if runs * width == size and (starts == numpy.arange(runs) * width).all() and (
            counts == width).all():
        return a.reshape(*a.shape[:axis], runs, width, *a.shape[axis + 1:]).sum(axis=axis + 1)
    if (counts < width).any():
        slab = xp.zeros((*a.shape[:axis], 1, *a.shape[axis + 1:]), dtype=a.dtype)
        a = xp.concatenate([a, slab], axis=axis)
    out = None
    for r in range(width):
        index = xp.asarray(numpy.where(counts > r, starts + r, size))
        term = xp.take(a, index, axis=axis)
        if out is None:
            out = term
        else:
            out += term
    return out


@functools.lru_cache(maxsize=16)
def _max_pool_tables(spatial: Ints, kernel: Ints, stride: Ints, padding: Ints,
                     dilation: Ints, out_sp: Ints) -> tuple[Host, Host, Host]:
    """Host tables of a max pool over a padded input (all tuples): each output's first
    in-bounds tap and the flat plane index of its tap 0 (both ``[*out_sp]``), and each tap's
    flat offset from tap 0 (``[prod(kernel)]``). Cached (read-only), as building them costs
    more than pooling a small batch."""
    firsts: list[Host] = []
    bases: list[Host] = []
    offsets: list[Host] = []
    plane_stride, tap_stride = 1, 1
    for size, k, s, p, d, o in reversed(list(zip(spatial, kernel, stride, padding, dilation,
                                                 out_sp, strict=True))):
        start = numpy.arange(o, dtype=numpy.int64) * s - p
        firsts.insert(0, -(numpy.minimum(start, 0) // d) * tap_stride)
        bases.insert(0, start * plane_stride)
        offsets.insert(0, numpy.arange(k, dtype=numpy.int64) * (d * plane_stride))
        plane_stride *= size
        tap_stride *= k
    tables = (functools.reduce(numpy.add.outer, firsts),
              functools.reduce(numpy.add.outer, bases),
              functools.reduce(numpy.add.outer, offsets).reshape(-1))
    for table in tables:
        table.flags.writeable = False
    return tables


def _max_scan(xp: Any, cols: A, best: A, arg: A, first: A | int, nan_aware: bool) -> None:
    """Max over the taps of contiguous ``cols [taps, *shape]`` into ``best [*shape]`` and the
    winning tap into ``arg``, starting from each output's ``first`` in-bounds tap.
    Branch-free (masked selects are slow on random data): a tap that beats the running max
    has a larger index than every earlier winner, so the winner is the running max of
    ``wins * t``. ``maximum`` makes a NaN stick; ``nan_aware`` also gives its index to every
    later NaN, as torch does (only needed when some window holds one)."""
    best[...] = cols[0]
    arg[...] = first
    for t in range(1, len(cols)):
        vals = cols[t]
        wins = vals > best
        if nan_aware:
            wins |= xp.isnan(vals)
        xp.maximum(best, vals, out=best)
        xp.maximum(arg, wins * arg.dtype.type(t), out=arg)


def _adaptive_bins(size_in: int, size_out: int) -> tuple[Host, Host]:
    """torch's adaptive-pool bins: ``floor(i*in/out)`` to ``ceil((i+1)*in/out)``."""
    i = numpy.arange(size_out, dtype=numpy.int64)
    return (i * size_in) // size_out, -((-(i + 1) * size_in) // size_out)


def _along(xp: Any, values: Host, axis: int, ndim: int) -> A:
    """A host vector as a device array broadcasting along ``axis`` of an ``ndim`` array."""
    return xp.asarray(values.reshape((len(values),) + (1,) * (ndim - axis - 1)))


def _interp_taps(size_in: int, size_out: int, mode: InterpolateMode, align_corners: bool,
                 dtype: Any) -> list[tuple[Host, Host | None]]:
    """torch's 1-d source taps as ``(indices, weights)`` pairs, indices non-decreasing and
    weights None for nearest; coordinates are computed in ``dtype`` (float32 for nearest),
    as torch does."""
    if mode == "nearest":
        scale = numpy.float32(size_in) / numpy.float32(size_out)
        src = numpy.floor(numpy.arange(size_out, dtype=numpy.float32) * scale)
        return [(numpy.minimum(src.astype(numpy.int64), size_in - 1), None)]
    ftype = numpy.dtype(dtype).type
    dst = numpy.arange(size_out, dtype=dtype)
    if align_corners:
        scale = ftype(size_in - 1) / ftype(size_out - 1) if size_out > 1 else ftype(0)
        src = dst * scale
    else:
        scale = ftype(size_in) / ftype(size_out)
        src = numpy.maximum((dst + ftype(0.5)) * scale - ftype(0.5), ftype(0))
    i0 = numpy.minimum(numpy.floor(src).astype(numpy.int64), size_in - 1)
    i1 = numpy.minimum(i0 + 1, size_in - 1)
    l1 = numpy.clip(src - i0.astype(dtype), 0, 1).astype(dtype)
    return [(i0, (ftype(1) - l1).astype(dtype)), (i1, l1)]


class ArrayModuleOps:
    """Fast convolution, pooling and interpolation ops over ``xp`` arrays (PyTorch layouts).

    Convolutions and max pools walk the batch in chunks whose scratch (im2col columns or
    rows, window taps) stays near ``conv_chunk_bytes``, so it is written and read back while
    still in cache instead of streaming a batch-sized matrix through memory; a device backend
    raises the budget to run the whole batch at once. Convolutions with output planes of at
    most ``conv_rows_max_plane`` positions may use the channels-last rows (see ``_rows_pay``);
    3x3 stride-1 ones with ``conv_winograd_min_channels`` input and output channels or more
    may run as Winograd F(2x2, 3x3) (see ``_winograd_pays``).
    """

    xp: ClassVar[Any]
    conv_chunk_bytes: ClassVar[int] = 1 << 21
    conv_rows_max_plane: ClassVar[int] = 196
    conv_winograd_min_channels: ClassVar[int] = 16

    # ---- convolution --------------------------------------------------------------------------
    @classmethod
    def conv(cls, x: A, weight: A, bias: A | None, options: ConvOptions) -> A:
        """N-d convolution (torch's cross-correlation): im2col and a batched matmul per chunk
        of the batch."""
        xp, dtype = cls.xp, x.dtype
        x, weight = widened(xp, x), widened(xp, weight)
        c_out, kernel = weight.shape[0], weight.shape[2:]
        out_sp = tuple(conv_output_size(size, k, s, p, d) for size, k, s, p, d in zip(
            x.shape[2:], kernel, options.stride, options.padding, options.dilation, strict=True))
        out = xp.empty((x.shape[0], c_out, *out_sp), dtype=x.dtype)
        _conv_into(xp, x, weight, out, options.stride, options.dilation, options.padding,
                   options.groups, cls.conv_chunk_bytes, cls.conv_rows_max_plane,
                   cls.conv_winograd_min_channels)
        if bias is not None:
            out += widened(xp, bias).reshape(c_out, *(1,) * len(out_sp))
        return narrowed(xp, out, dtype)

    @classmethod
    def conv_weight_backward(cls, x: A, weight: A, grad: A, options: ConvOptions) -> A:
        """Gradient of ``conv`` in ``weight``: per group, ``grad @ im2col(x).T`` summed over
        the batch."""
        xp, dtype = cls.xp, weight.dtype
        x, grad, weight = widened(xp, x), widened(xp, grad), widened(xp, weight)
        n, g = x.shape[0], options.groups
        c_out, kernel, out_sp = grad.shape[1], weight.shape[2:], grad.shape[2:]
        if _winograd_pays(xp, x, weight, out_sp, options.stride, options.dilation, g,
                          cls.conv_winograd_min_channels) and _winograd_grad_pays(
                              n, out_sp, weight.shape[:2]) and _finite(x) and _finite(grad):
            grad_weight = _weight_grad_winograd(x, grad, options.padding, cls.conv_chunk_bytes)
            return narrowed(xp, grad_weight, dtype)
        if _rows_pay(x.shape[1], kernel, options.stride, options.dilation, out_sp, g,
                     cls.conv_rows_max_plane):
            rows = _row_chunks(xp, x, kernel, options.stride, options.dilation,
                               options.padding, out_sp, cls.conv_chunk_bytes)
            return narrowed(xp, _weight_grad_rows(xp, grad, rows, weight.shape), dtype)
        if _flat_pays(options.stride, out_sp, c_out):
            grid, crop = _flat_crop(out_sp, kernel, options.dilation)
            a = _scratch(xp, "grad", (n, c_out, *grid), grad.dtype, cls.conv_chunk_bytes)
            a.fill(0)
            a[crop] = grad
            if g == 1 and _shifted_pays(x, kernel, options.dilation, out_sp,
                                        cls.conv_chunk_bytes):
                grad_weight = _weight_grad_shifted(xp, x, a.reshape(n, c_out, math.prod(grid)),
                                                   kernel, options.dilation, options.padding,
                                                   out_sp, cls.conv_chunk_bytes)
                return narrowed(xp, grad_weight, dtype)
            columns = _flat_chunks(xp, x, kernel, options.dilation, options.padding, out_sp,
                                   g, cls.conv_chunk_bytes)
            grad_weight = _weight_grad(xp, a.reshape(n, g, c_out // g, math.prod(grid)),
                                       columns, weight.shape)
            return narrowed(xp, grad_weight, dtype)
        a = grad.reshape(n, g, c_out // g, math.prod(out_sp))
        columns = _im2col_chunks(xp, x, kernel, options.stride, options.dilation,
                                 options.padding, out_sp, g, cls.conv_chunk_bytes)
        return narrowed(xp, _weight_grad(xp, a, columns, weight.shape), dtype)

    @classmethod
    def conv_bias_backward(cls, grad: A) -> A:
        """Gradient of a conv's bias: ``grad`` summed over the batch first (adds of whole
        samples, far faster than reducing the short spatial axes first), then per channel."""
        xp, dtype = cls.xp, grad.dtype
        grad = widened(xp, grad)
        n, c = grad.shape[:2]
        size = math.prod(grad.shape[2:])
        samples = grad.reshape(n, c * size).sum(axis=0)
        return narrowed(xp, samples.reshape(c, size).sum(axis=1), dtype)

    @classmethod
    def conv_transpose(cls, x: A, weight: A, bias: A | None,
                       options: ConvTransposeOptions) -> A:
        """N-d transposed convolution: per chunk of the batch, one batched matmul giving every
        tap's contribution, then a col2im scatter-add (one add per kernel tap). With stride 1
        and no more input than output channels per group (depthwise, say), or up to 4x more
        on planes small enough for the rows layout (``_rows_pay``), it is computed as the
        equivalent conv instead: the kernel flipped, its channel roles swapped, and
        ``(k - 1) * dilation - padding`` of padding; so is one that runs as Winograd
        (``_winograd_pays``), whatever its channels."""
        xp, dtype = cls.xp, x.dtype
        x, weight = widened(xp, x), widened(xp, weight)
        n, c_in = x.shape[:2]
        in_sp, kernel = x.shape[2:], weight.shape[2:]
        g, c_out_g = options.groups, weight.shape[1]
        c_in_g, nd = c_in // g, len(in_sp)
        out_sp = tuple(conv_transpose_output_size(size, k, s, p, po, d) for size, k, s, p, po, d
                       in zip(in_sp, kernel, options.stride, options.padding,
                              options.padding_out, options.dilation, strict=True))
        as_conv = tuple((k - 1) * d - p
                        for k, d, p in zip(kernel, options.dilation, options.padding, strict=True))
        out = xp.empty((n, g * c_out_g, *out_sp), dtype=x.dtype)
        ones = (1,) * nd
        # (the Winograd gate is symmetric in the channel roles, so ``weight`` stands in for
        # the equivalent conv's)
        conv_pays = c_in_g <= c_out_g or (c_in_g <= 4 * c_out_g and _rows_pay(
            c_in, kernel, ones, options.dilation, out_sp, g, cls.conv_rows_max_plane)
        ) or _winograd_pays(xp, x, weight, out_sp, ones, options.dilation, g,
                            cls.conv_winograd_min_channels)
        if all(s == 1 for s in options.stride) and min(as_conv) >= 0 and conv_pays:
            flipped = xp.flip(weight, axis=tuple(range(2, 2 + nd)))
            w = flipped.reshape(g, c_in_g, c_out_g, *kernel).swapaxes(1, 2)
            _conv_into(xp, x, w.reshape(g * c_out_g, c_in_g, *kernel), out, ones,
                       options.dilation, as_conv, g, cls.conv_chunk_bytes,
                       cls.conv_rows_max_plane, cls.conv_winograd_min_channels)
        else:
            n_taps = math.prod(kernel)
            w = weight.reshape(g, c_in_g, c_out_g, n_taps).transpose(0, 3, 2, 1)
            _transpose_by_matmul(xp, x, xp.ascontiguousarray(w.reshape(g, n_taps * c_out_g,
                                                                      c_in_g)),
                                 out.reshape(n, g, c_out_g, *out_sp), kernel, options,
                                 cls.conv_chunk_bytes)
        if bias is not None:
            out += widened(xp, bias).reshape(g * c_out_g, *(1,) * nd)
        return narrowed(xp, out, dtype)

    @classmethod
    def conv_transpose_weight_backward(cls, x: A, weight: A, grad: A,
                                       options: ConvTransposeOptions) -> A:
        """Gradient of ``conv_transpose`` in ``weight``: per group, ``x @ im2col(grad).T``,
        the columns gathering for each input position the outputs its taps wrote."""
        xp, dtype = cls.xp, weight.dtype
        x, grad = widened(xp, x), widened(xp, grad)
        n, g = x.shape[0], options.groups
        c_in, in_sp, kernel = x.shape[1], x.shape[2:], weight.shape[2:]
        a = x.reshape(n, g, c_in // g, math.prod(in_sp))
        columns = _im2col_chunks(xp, grad, kernel, options.stride, options.dilation,
                                 options.padding, in_sp, g, cls.conv_chunk_bytes)
        return narrowed(xp, _weight_grad(xp, a, columns, weight.shape), dtype)

    # ---- pooling ------------------------------------------------------------------------------
    @classmethod
    def avg_pool(cls, x: A, kernel: Ints, stride: Ints, padding: Ints, count_include_pad: bool,
                 ceil_mode: bool) -> A:
        """N-d average pool: the kernel taps' strided views of the padded input summed, over
        torch's divisor."""
        xp, dtype = cls.xp, x.dtype
        x = widened(xp, x)
        nd = len(kernel)
        out_sp = tuple(pool_output_size(size, k, s, p, 1, ceil_mode) for size, k, s, p
                       in zip(x.shape[2:], kernel, stride, padding, strict=True))
        ones = (1,) * nd
        xpad = _padded(xp, x, padding, _extent(kernel, stride, ones, out_sp), 0.0)
        total = xp.zeros((*x.shape[:2], *out_sp), dtype=x.dtype)
        for tap in _taps(kernel):
            total += xpad[(Ellipsis, *_tap_window(tap, stride, ones, out_sp))]
        total /= _avg_divisor(xp, x.shape[2:], kernel, stride, padding, out_sp,
                              count_include_pad, x.dtype)
        return narrowed(xp, total, dtype)

    @classmethod
    def avg_pool_backward(cls, x: A, grad: A, kernel: Ints, stride: Ints, padding: Ints,
                          count_include_pad: bool, ceil_mode: bool) -> A:
        """Gradient of ``avg_pool``: the divided grad scattered back to every window tap."""
        xp, dtype = cls.xp, x.dtype
        grad = widened(xp, grad)
        nd, out_sp = len(kernel), grad.shape[2:]
        share = grad / _avg_divisor(xp, x.shape[2:], kernel, stride, padding, out_sp,
                                    count_include_pad, grad.dtype)
        out = _col2im(xp, lambda t: share, x.shape[:2], kernel, stride, (1,) * nd, padding,
                      out_sp, x.shape[2:], grad.dtype)
        return narrowed(xp, xp.ascontiguousarray(out), dtype)

    @classmethod
    def max_pool(cls, x: A, kernel: Ints, stride: Ints, padding: Ints, dilation: Ints,
                 ceil_mode: bool) -> A:
        """N-d max pool without indices: the running maximum over the window taps, each a
        strided view of the ``-inf``-padded input, one pass a tap (the indexed pool copies
        every tap into a tap-major buffer and tracks each winner: 6x the time on ResNet's
        stem pool); ``maximum`` makes a NaN stick, so the values are the indexed pool's."""
        xp, dtype = cls.xp, x.dtype
        x = widened(xp, x)
        out_sp = tuple(pool_output_size(size, k, s, p, d, ceil_mode) for size, k, s, p, d
                       in zip(x.shape[2:], kernel, stride, padding, dilation, strict=True))
        xpad = _padded(xp, x, padding, _extent(kernel, stride, dilation, out_sp), -math.inf)
        windows = _window_view(xp, xpad, kernel, stride, dilation, out_sp)
        taps = itertools.product(*(range(k) for k in kernel))
        best = xp.array(windows[(slice(None), slice(None), *next(taps))])
        for tap in taps:
            xp.maximum(best, windows[(slice(None), slice(None), *tap)], out=best)
        return narrowed(xp, best, dtype)

    @classmethod
    def max_pool_with_indices(cls, x: A, kernel: Ints, stride: Ints, padding: Ints,
                              dilation: Ints, ceil_mode: bool) -> tuple[A, A]:
        """N-d max pool over the taps of a ``-inf``-padded input, with torch's flat plane indices
        (first index among ties, a later NaN wins, an all ``-inf`` window picks its first
        in-bounds tap). Per batch chunk, every window tap is copied into one tap-major buffer
        (one copy, where reading strided taps would cost each compare and max a slow pass)
        and scanned; a chunk whose max holds a NaN is scanned again NaN-aware."""
        xp, dtype = cls.xp, x.dtype
        x = widened(xp, x)
        nd, spatial = len(kernel), x.shape[2:]
        out_sp = tuple(pool_output_size(size, k, s, p, d, ceil_mode) for size, k, s, p, d
                       in zip(spatial, kernel, stride, padding, dilation, strict=True))
        xpad = _padded(xp, x, padding, _extent(kernel, stride, dilation, out_sp), -math.inf)
        first, base, offsets = _max_pool_tables(spatial, *map(tuple, (kernel, stride, padding,
                                                                      dilation)), out_sp)
        n, c, n_taps, size = x.shape[0], x.shape[1], math.prod(kernel), math.prod(out_sp)
        windows = _window_view(xp, xpad, kernel, stride, dilation, out_sp)
        taps = windows.transpose(*range(2, 2 + nd), 0, 1, *range(2 + nd, 2 + 2 * nd))
        best = xp.empty((n * c, size), dtype=x.dtype)
        arg = xp.empty(best.shape, dtype=numpy.min_scalar_type(n_taps - 1))
        start = xp.asarray(first.reshape(-1)) if any(padding) else 0
        for chunk in _batch_chunks(n, n_taps * c * size * x.itemsize, cls.conv_chunk_bytes):
            rows = slice(chunk.start * c, chunk.stop * c)
            cols = xp.ascontiguousarray(taps[(*(slice(None),) * nd, chunk)])
            cols = cols.reshape(n_taps, rows.stop - rows.start, size)
            _max_scan(xp, cols, best[rows], arg[rows], start, False)
            if bool(xp.isnan(best[rows]).any()):
                _max_scan(xp, cols, best[rows], arg[rows], start, True)
        best = best.reshape(n, c, *out_sp)
        indices = xp.take(xp.asarray(offsets), arg.reshape(best.shape)) + xp.asarray(base)
        return narrowed(xp, best, dtype), indices

    @classmethod
    def max_pool_with_indices_backward(cls, x: A, grad: A, indices: A) -> A:
        """Gradient of a max pool: ``grad`` summed into the flat plane positions named by
        ``indices``, as one 1-d ``add.at`` over every plane (summed in order in the grad's
        own dtype, where the protocol's scatter goes through a multi-index and float64)."""
        xp, dtype = cls.xp, x.dtype
        grad = widened(xp, grad)
        n, c = x.shape[:2]
        plane, size = math.prod(x.shape[2:]), math.prod(grad.shape[2:])
        if xp is numpy and grad.dtype in COMPILED_FLOATS and indices.dtype == numpy.int64:
            out = plane_scatter_add(numpy.ascontiguousarray(indices.reshape(n * c, size)),
                                    numpy.ascontiguousarray(grad.reshape(n * c, size)), n * c,
                                    plane)
            return narrowed(xp, out.reshape(x.shape), dtype)
        flat = indices.reshape(n * c, size) + (xp.arange(n * c, dtype=xp.int64) * plane)[:, None]
        out = xp.zeros(n * c * plane, dtype=grad.dtype)
        xp.add.at(out, flat.reshape(-1), grad.reshape(-1))
        return narrowed(xp, out.reshape(x.shape), dtype)

    @classmethod
    def adaptive_avg_pool(cls, x: A, output_size: Ints) -> A:
        """N-d adaptive average pool, one spatial dim at a time (bin sums over bin sizes); a
        global pool (every output size 1) is one matrix-vector product with ones, where a
        NumPy sum over each short plane costs about 5x more."""
        xp, dtype = cls.xp, x.dtype
        out = widened(xp, x)
        if all(o == 1 for o in output_size):
            positions = math.prod(x.shape[2:])
            if positions:
                rows = out.reshape(math.prod(x.shape[:2]), positions)
                total = rows @ xp.ones(positions, dtype=out.dtype)
                return (total / positions).reshape(*x.shape[:2], *output_size).astype(
                    dtype, copy=False)
        for axis, o in enumerate(output_size, start=2):
            starts, ends = _adaptive_bins(x.shape[axis], o)
            count = _along(xp, (ends - starts).astype(out.dtype), axis, out.ndim)
            out = _run_sum(xp, out, axis, starts, ends) / count
        return narrowed(xp, out, dtype)

    @classmethod
    def adaptive_avg_pool_backward(cls, x: A, grad: A) -> A:
        """Gradient of ``adaptive_avg_pool``: each input sums the divided grads of the bins
        containing it (a contiguous run of bins); of a global pool, its one bin's share."""
        xp, dtype = cls.xp, x.dtype
        out = widened(xp, grad)
        if all(o == 1 for o in grad.shape[2:]) and math.prod(x.shape[2:]):
            share = out / math.prod(x.shape[2:])
            return xp.ascontiguousarray(xp.broadcast_to(share, x.shape)).astype(dtype,
                                                                                copy=False)
        for axis in range(2, x.ndim):
            size = x.shape[axis]
            starts, ends = _adaptive_bins(size, grad.shape[axis])
            count = _along(xp, (ends - starts).astype(out.dtype), axis, out.ndim)
            j = numpy.arange(size, dtype=numpy.int64)
            first = numpy.searchsorted(ends, j, side="right")
            stop = numpy.searchsorted(starts, j, side="right")
            out = _run_sum(xp, out / count, axis, first, stop)
        return narrowed(xp, out, dtype)

    # ---- interpolation ------------------------------------------------------------------------
    @classmethod
    def interpolate(cls, x: A, output_size: Ints, mode: InterpolateMode,
                    align_corners: bool) -> A:
        """Resize ``[n, c, h, w]``: gathers of torch's source taps along w, then along h."""
        xp, dtype = cls.xp, x.dtype
        out = widened(xp, x)
        for axis in (3, 2):
            acc = None
            for idx, w in _interp_taps(x.shape[axis], output_size[axis - 2], mode,
                                       align_corners, out.dtype):
                term = xp.take(out, xp.asarray(idx), axis=axis)
                if w is not None:
                    term *= _along(xp, w, axis, out.ndim)
                if acc is None:
                    acc = term
                else:
                    acc += term
            out = acc
        return narrowed(xp, out, dtype)

    @classmethod
    def interpolate_backward(cls, x: A, grad: A, output_size: Ints, mode: InterpolateMode,
                             align_corners: bool) -> A:
        """Gradient of ``interpolate``: each tap's weighted grad summed back into its sources
        (sources are non-decreasing, so each input gathers a contiguous run of outputs)."""
        xp, dtype = cls.xp, x.dtype
        out = widened(xp, grad)
        for axis in (2, 3):
            size = x.shape[axis]
            j = numpy.arange(size, dtype=numpy.int64)
            acc = None
            for idx, w in _interp_taps(size, output_size[axis - 2], mode, align_corners,
                                       out.dtype):
                weighted = out if w is None else out * _along(xp, w, axis, out.ndim)
                term = _run_sum(xp, weighted, axis, numpy.searchsorted(idx, j, side="left"),
                                numpy.searchsorted(idx, j, side="right"))
                if acc is None:
                    acc = term
                else:
                    acc += term
            out = acc
        return narrowed(xp, out, dtype)
