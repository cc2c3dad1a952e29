"""Lookups by index (torch's "sparse functions"): ``embedding`` with its options,
``embedding_bag`` and ``one_hot``."""

from __future__ import annotations

import functools
import math
from typing import TYPE_CHECKING, Any

import numpy as np

from burnpy.autodiff.modes import no_grad
from burnpy.backend.errors import (
    IndexOutOfBoundsError,
    InvalidArgumentError,
    KindError,
    ShapeError,
    describe,
)
from burnpy.capture import check_values, recording_active
from burnpy.custom_ops.function import Function, FunctionCtx
from burnpy.nn.functional._common import _float_weight
from burnpy.tensor import Tensor
from burnpy.tensor._core import FLOAT, INT, QUANTIZED, check_same_backend, new

if TYPE_CHECKING:
    from burnpy.backend.base import Backend

#: Index tensors up to this many elements are bounds-checked on the host after one copy
#: (a decoding step's single token, a training batch): cheaper than two reductions and two
#: scalar reads, and one device synchronization instead of two.
_HOST_BOUNDS_CHECK = 4096


class _RowGradScale(Function):
    """Identity forward; each picked row's gradient times its factor (``embedding``'s
    ``padding_idx`` and ``scale_grad_by_freq``, as torch's backward applies them)."""

    @staticmethod
    def forward(ctx: FunctionCtx, x: Tensor, *, factor: Tensor) -> Tensor:
        """``x`` itself; ``factor`` is kept for the backward."""
        ctx.save_for_backward(factor)
        return x

    @staticmethod
    def backward(ctx: FunctionCtx, grad: Tensor) -> tuple[Tensor]:
        """The gradient times the factor."""
        (factor,) = ctx.saved_tensors
        assert factor is not None
        return (grad * factor,)

    @staticmethod
    def jvp(ctx: FunctionCtx, tangent: Tensor) -> Tensor:
        """The tangent as it is (the forward is the identity)."""
        return tangent


def embedding(indices: Tensor, weight: Tensor, padding_idx: int | None = None,
              max_norm: float | None = None, norm_type: float = 2.0,
              scale_grad_by_freq: bool = False, sparse: bool = False) -> Tensor:
    """Rows of ``weight [vocab, dim]`` picked by int ``indices`` of any shape, with torch's
    options: the ``padding_idx`` row gets no gradient; ``max_norm`` first rescales, in place
    and untracked, each referenced row whose ``norm_type``-norm exceeds it; with
    ``scale_grad_by_freq`` each row's gradient is divided by its count in ``indices``.
    A quantized weight (``Module.quantize_weights``) has the picked rows selected while still
    quantized and only those dequantized, not the whole table."""
    op = "embedding"
    check_same_backend(op, weight, indices)
    if sparse:
        raise InvalidArgumentError(f"{op}: sparse=True asks for a sparse gradient, and "
                                   "burnpy's gradients are dense")
    if weight.kind is QUANTIZED and weight.ndim == 2 and indices.kind is INT:
        if padding_idx is not None or max_norm is not None or scale_grad_by_freq:
            raise InvalidArgumentError(f"{op}: padding_idx, max_norm and scale_grad_by_freq "
                                       "need a float weight, not a quantized one")
        _check_vocabulary(op, indices, weight.shape[0])
        b = weight.backend
        picked = b.q_select(weight.primitive, 0,
                            b.int_reshape(indices.primitive, (indices.numel(),)))
        return new(b, b.float_reshape(b.dequantize(picked), (*indices.shape, weight.shape[1])),
                   FLOAT)
    weight = _float_weight(weight)
    if indices.kind is not INT:
        raise KindError(f"{op}: indices must be an int tensor, got {indices.kind}")
    if weight.kind is not FLOAT or weight.ndim != 2:
        raise ShapeError(f"{op}: weight must be a 2-d float tensor, got {weight.kind} "
                         f"{describe(weight.shape)}")
    _check_vocabulary(op, indices, weight.shape[0])
    if padding_idx is not None:
        vocab = weight.shape[0]
        if not -vocab <= padding_idx < vocab:
            raise InvalidArgumentError(f"{op}: padding_idx {padding_idx} is outside the "
                                       f"{vocab} rows of the weight")
        padding_idx %= vocab
    if max_norm is not None:
        _renormalize_rows(weight, indices, max_norm, norm_type)
    rows = new(weight.backend, weight.backend.embedding(weight.primitive, indices.primitive),
               FLOAT)
    if padding_idx is None and not scale_grad_by_freq:
        return rows
    factor = Tensor.ones(indices.shape, backend=weight.backend, device=weight.device,
                         dtype=weight.dtype)
    if scale_grad_by_freq:
        counts = indices.flatten().bincount(minlength=weight.shape[0])
        factor = factor / counts.gather(0, indices.flatten()).reshape(indices.shape).cast(
            weight.dtype)
    if padding_idx is not None:
        factor = factor.mask_fill(indices == padding_idx, 0.0)
    result: Tensor = _RowGradScale.apply(rows, factor=factor.unsqueeze(-1).detach())
    return result


def _renormalize_rows(weight: Tensor, indices: Tensor, max_norm: float,
                      norm_type: float) -> None:
    """torch's ``embedding_renorm_``: each row of ``weight`` that ``indices`` references and
    whose norm exceeds ``max_norm`` is scaled to ``max_norm`` (over ``norm + 1e-7``), in
    place and untracked."""
    with no_grad():
        referenced = indices.flatten().unique()
        assert isinstance(referenced, Tensor)  # no inverse or counts asked for
        rows = weight.detach().index_select(0, referenced)
        norms = rows.norm(norm_type, 1, keepdim=True)
        scale = (max_norm / (norms + 1e-7)).mask_fill(norms <= max_norm, 1.0)
        weight[referenced] = rows * scale


def _check_vocabulary(op: str, indices: Tensor, vocab: int) -> None:
    """Raises unless every index lies in ``[0, vocab)``; in a ``Capture`` recording
    (``bp.compile``) the check is kept in the graph and runs again at each replay."""
    if not indices.numel():
        return
    if recording_active():
        check_values(indices.primitive, functools.partial(_check_bounds, op, vocab))
    else:
        _check_bounds(op, vocab, indices.backend, indices.primitive)


def _check_bounds(op: str, vocab: int, b: type[Backend], p: Any) -> None:
    """Raises unless every value of the int primitive ``p`` of ``b`` lies in ``[0, vocab)``."""
    count = math.prod(p.shape)
    if count <= _HOST_BOUNDS_CHECK:  # one small copy to the host, its bounds read there
        host = b.int_into_data(p).array
        if count <= 16:  # a decoding step's few ids: Python's min/max beat two reductions
            values = host.reshape(-1).tolist()
            lo, hi = min(values), max(values)
        else:
            lo, hi = int(host.min()), int(host.max())
    else:  # the bounds reduced on the device, two scalars to the host
        lo = int(b.int_into_data(b.int_min(p)).array.reshape(()))
        hi = int(b.int_into_data(b.int_max(p)).array.reshape(()))
    if lo < 0 or hi >= vocab:
        raise IndexOutOfBoundsError(f"{op}: index {lo if lo < 0 else hi} is out of range "
                                    f"for a vocabulary of {vocab}")


def one_hot(tensor: Tensor, num_classes: int = -1) -> Tensor:
    """``[*, num_classes]`` ints (the backend's int dtype: int64 as torch's on CPU, int32 on
    WebGPU) with a 1 at each index of the int ``tensor`` (``-1``: one more than the largest)."""
    op = "one_hot"
    if tensor.kind is not INT:
        raise KindError(f"{op}: expects an int tensor of class indices, got {tensor.kind}")
    if tensor.numel():
        lo, hi = int(tensor.min().item()), int(tensor.max().item())
    else:
        lo = hi = 0
    if num_classes == -1:
        if not tensor.numel():
            raise InvalidArgumentError(f"{op}: cannot infer num_classes of an empty tensor")
        num_classes = hi + 1
    if lo < 0 or hi >= num_classes:
        raise InvalidArgumentError(f"{op}: class values must be in [0, {num_classes}), got "
                                   f"[{lo}, {hi}]")
    classes = Tensor.arange(num_classes, backend=tensor.backend, device=tensor.device)
    return (tensor.unsqueeze(-1) == classes).int()


_BAG_MODES = ("sum", "mean", "max")


def embedding_bag(input: Tensor, weight: Tensor, offsets: Tensor | None = None,
                  max_norm: float | None = None, norm_type: float = 2,
                  scale_grad_by_freq: bool = False, mode: str = "mean", sparse: bool = False,
                  per_sample_weights: Tensor | None = None, include_last_offset: bool = False,
                  padding_idx: int | None = None) -> Tensor:
    """The sums, means or maxima ``[bags, dim]`` of bags of ``weight``'s rows, as torch's: the
    rows of int ``input [bags, n]``, or of a 1-d ``input`` cut at ``offsets`` (starting at 0;
    with ``include_last_offset`` the last offset is the end and makes no bag). Entries equal
    to ``padding_idx`` are left out (a mean counts the others); an empty bag gives zeros;
    ``per_sample_weights`` (``input``'s shape, mode "sum") scales each row; ``max_norm``,
    ``norm_type`` and ``scale_grad_by_freq`` as ``embedding``'s."""
    op = "embedding_bag"
    if mode not in _BAG_MODES:
        raise InvalidArgumentError(f"{op}: mode must be one of {_BAG_MODES}, got {mode!r}")
    if sparse:
        raise InvalidArgumentError(f"{op}: sparse=True asks for a sparse gradient, and "
                                   "burnpy's gradients are dense")
    if mode == "max" and scale_grad_by_freq:
        raise InvalidArgumentError(f"{op}: mode 'max' does not scale the gradient by frequency")
    if per_sample_weights is not None:
        if mode != "sum":
            raise InvalidArgumentError(f"{op}: per_sample_weights needs mode 'sum', got "
                                       f"{mode!r}")
        if per_sample_weights.shape != input.shape:
            raise ShapeError(f"{op}: per_sample_weights {describe(per_sample_weights.shape)} "
                             f"must have the input's shape {describe(input.shape)}")
    if input.kind is not INT:
        raise KindError(f"{op}: input must be an int tensor of indices, got {input.kind}")
    starts, ends = _bag_bounds(op, input, offsets, include_last_offset)
    weight = _float_weight(weight)
    if weight.kind is not FLOAT or weight.ndim != 2:
        raise ShapeError(f"{op}: weight must be a 2-d float tensor, got {weight.kind} "
                         f"{describe(weight.shape)}")
    vocab, dim = weight.shape
    flat = input.reshape(-1)
    rows = embedding(flat, weight, None, max_norm, norm_type, scale_grad_by_freq)
    # Each bag's entries side by side, [bags, width]; a missing or padding entry points at an
    # extra row (zeros, or -inf for the maximum) that takes no gradient back.
    count = flat.shape[0]
    lengths = ends - starts
    width = max(int(lengths.max()) if len(lengths) else 0, 1)
    position = starts[:, None] + np.arange(width)[None, :]
    valid = np.arange(width)[None, :] < lengths[:, None]
    if padding_idx is not None:
        if not -vocab <= padding_idx < vocab:
            raise InvalidArgumentError(f"{op}: padding_idx {padding_idx} is outside the "
                                       f"{vocab} rows of the weight")
        ids = np.asarray(flat.to_numpy()).astype(np.int64)
        valid &= ids[np.minimum(position, max(count - 1, 0))] != padding_idx % vocab
    gather = Tensor.from_data(np.where(valid, position, count).reshape(-1).astype(np.int64),
                              backend=weight.backend, device=weight.device,
                              dtype=weight.backend.int_dtype)
    fill = -math.inf if mode == "max" else 0.0
    extra = Tensor.full((1, dim), fill, backend=weight.backend, device=weight.device,
                        dtype=weight.dtype)
    picked = Tensor.cat([rows, extra]).index_select(0, gather).reshape(len(starts), width, dim)
    kept = valid.sum(1)
    if mode == "max":
        empty = Tensor.from_data(kept == 0, backend=weight.backend, device=weight.device)
        return picked.amax(1).mask_fill(empty.unsqueeze(1), 0.0)
    if per_sample_weights is not None:
        scale = Tensor.cat([per_sample_weights.reshape(-1).cast(weight.dtype),
                            Tensor.zeros((1,), backend=weight.backend, device=weight.device,
                                         dtype=weight.dtype)])
        picked = picked * scale.index_select(0, gather).reshape(len(starts), width, 1)
    total = picked.sum(1)
    if mode == "sum":
        return total
    divisor = Tensor.from_data(np.maximum(kept, 1)[:, None].astype(np.float64),
                               backend=weight.backend, device=weight.device, dtype=weight.dtype)
    return total / divisor


def _bag_bounds(op: str, input: Tensor, offsets: Tensor | None,
                include_last_offset: bool) -> tuple[np.ndarray, np.ndarray]:
    """Each bag's ``[start, end)`` in the flattened ``input`` (torch's: a 2-d input's rows,
    else cut at ``offsets``, the last bag running to the end)."""
    if input.ndim == 2:
        if offsets is not None:
            raise InvalidArgumentError(f"{op}: a 2-d input {describe(input.shape)} is a batch "
                                       "of equal bags and takes no offsets")
        bags, length = input.shape
        starts = np.arange(bags, dtype=np.int64) * length
        return starts, starts + length
    if input.ndim != 1:
        raise ShapeError(f"{op}: input must be 1-d (with offsets) or 2-d, got "
                         f"{describe(input.shape)}")
    if offsets is None or offsets.ndim != 1 or offsets.kind is not INT:
        raise ShapeError(f"{op}: a 1-d input needs 1-d int offsets, got "
                         f"{'None' if offsets is None else describe(offsets.shape)}")
    cuts = np.asarray(offsets.to_numpy()).astype(np.int64)
    if include_last_offset:
        cuts = cuts[:-1]
    count = input.shape[0]
    if len(cuts) and (cuts[0] != 0 or (np.diff(cuts) < 0).any() or cuts[-1] > count):
        raise IndexOutOfBoundsError(f"{op}: offsets must start at 0 and not decrease up to the "
                                    f"input's length {count}, got {cuts.tolist()}")
    return cuts, np.append(cuts[1:], count)
