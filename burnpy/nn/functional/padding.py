"""``pad``: constant, reflect, replicate and circular padding of the trailing dims (torch's
``F.pad``), a composition of Tensor ops (the index maps computed on the host)."""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np

from burnpy.backend.errors import InvalidArgumentError, ShapeError, describe
from burnpy.tensor import Tensor
from burnpy.tensor.autocast_hook import autocast_op


def _pad_index(mode: str, size: int, before: int, after: int) -> list[int]:
    """Source positions of a reflect / replicate / circular padded dim of ``size``."""
    positions = np.arange(-before, size + after)
    if mode == "replicate":
        positions = positions.clip(0, size - 1)
    elif mode == "circular":
        positions = positions % size
    else:
        period = 2 * (size - 1)
        positions = np.abs(positions) % period if period else positions * 0
        positions = np.where(positions >= size, period - positions, positions)
    return [int(p) for p in positions]


def pad(input: Tensor, pad: Sequence[int], mode: str = "constant",
        value: float | None = None) -> Tensor:
    """Pad the trailing dims by ``(last_before, last_after, prev_before, ...)``: with
    ``value``, or by reflection, replication or wrapping (negative widths crop, except in
    the wrapping mode, as torch's)."""
    op = "pad"
    widths = tuple(pad)
    if len(widths) % 2 or len(widths) // 2 > input.ndim:
        raise InvalidArgumentError(f"{op}: pad must have an even length of at most "
                                   f"2 * {input.ndim}, got {widths!r}")
    if mode not in ("constant", "reflect", "replicate", "circular"):
        raise InvalidArgumentError(f"{op}: mode must be 'constant', 'reflect', 'replicate' "
                                   f"or 'circular', got {mode!r}")
    if mode != "constant" and value:
        raise InvalidArgumentError(f"{op}: value applies only to mode 'constant'")
    out = input
    for i in range(len(widths) // 2):
        dim = input.ndim - 1 - i
        before, after = widths[2 * i], widths[2 * i + 1]
        size = out.shape[dim]
        if mode == "constant":
            if before < 0 or after < 0:
                start, stop = max(-before, 0), size - max(-after, 0)
                if stop < start:
                    raise ShapeError(f"{op}: cropping {widths!r} empties dim {dim} of "
                                     f"{describe(input.shape)}")
                out = out.narrow(dim, start, stop - start)
            parts = []
            for width in (before, after):
                shape = list(out.shape)
                shape[dim] = max(width, 0)
                parts.append(Tensor.full(shape, 0 if value is None else value,
                                         backend=out.backend, device=out.device,
                                         dtype=out.dtype))
            if before > 0 or after > 0:
                out = Tensor.cat([parts[0], out, parts[1]], dim)
            continue
        if mode == "circular" and (before < 0 or after < 0):
            raise InvalidArgumentError(f"{op}: mode 'circular' needs non-negative widths, got "
                                       f"{widths!r}")
        if size + before + after < 1:  # a negative width crops, as torch's
            raise ShapeError(f"{op}: {mode} widths {widths!r} leave dim {dim} of "
                             f"{describe(input.shape)} empty")
        if mode == "reflect" and (before >= size or after >= size):
            raise ShapeError(f"{op}: reflect widths {widths!r} must be smaller than the "
                             f"padded dims of {describe(input.shape)}")
        if mode == "circular" and (before > size or after > size):
            raise ShapeError(f"{op}: circular widths {widths!r} must be at most the padded "
                             f"dims of {describe(input.shape)}")
        if size == 0:
            raise ShapeError(f"{op}: cannot {mode}-pad an empty dim of "
                             f"{describe(input.shape)}")
        if before or after:
            out = _PAD_SELECT[mode](out, dim, _pad_index(mode, size, before, after))
    return out


def _select(out: Tensor, dim: int, index: list[int]) -> Tensor:
    """``out`` padded along ``dim`` by reading ``index`` (the non-constant modes)."""
    return out.index_select(dim, index)


#: The select each non-constant mode pads with; reflect and replicate carry torch's autocast
#: names (its float32 list holds reflection_pad*d and replication_pad*d, not circular pads).
_PAD_SELECT = {"reflect": autocast_op("reflection_pad")(_select),
               "replicate": autocast_op("replication_pad")(_select), "circular": _select}
