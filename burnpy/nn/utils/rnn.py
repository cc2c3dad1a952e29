"""Variable-length sequences for the recurrent layers, as torch.nn.utils.rnn: padding
(``pad_sequence``, ``unpad_sequence``) and packing (``PackedSequence``,
``pack_padded_sequence``, ``pad_packed_sequence``, ``pack_sequence``, ``unpack_sequence``).

A packed sequence stores the time steps one after the other, each holding the sequences still
running at that step (longest first): ``data [sum(lengths), *]`` and ``batch_sizes [T]``. Every
function moves rows with one ``index_select`` at host-computed indices, so gradients flow
through packing and unpacking on every backend.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import NamedTuple

import numpy as np

from burnpy.backend.errors import InvalidArgumentError, KindError, ShapeError, describe
from burnpy.tensor import Tensor

__all__ = ["PackedSequence", "invert_permutation", "pack_padded_sequence", "pack_sequence",
           "pad_packed_sequence", "pad_sequence", "unpack_sequence", "unpad_sequence"]


class PackedSequence(NamedTuple):
    """Sequences of different lengths packed time step by time step (torch's layout):
    ``data [sum(lengths), *]``, int ``batch_sizes [T]`` (sequences still running at each
    step), and the int permutations ``sorted_indices`` (batch order -> longest-first order)
    and ``unsorted_indices`` (its inverse), None when the batch was already sorted."""

    data: Tensor
    batch_sizes: Tensor
    sorted_indices: Tensor | None = None
    unsorted_indices: Tensor | None = None


def _int_tensor(like: Tensor, values: Sequence[int] | np.ndarray) -> Tensor:
    return Tensor.from_data(np.asarray(values, dtype=np.int64), backend=like.backend,
                            device=like.device, dtype=like.backend.int_dtype)


def _host_ints(op: str, name: str, values: Tensor | Sequence[int]) -> np.ndarray:
    """``values`` (a list or a 1-d int tensor) as host int64."""
    if isinstance(values, Tensor):
        if values.kind != "int":
            raise KindError(f"{op}: {name} must be an int tensor or a list of ints, got "
                            f"{values.kind} ({values.dtype!r})")
        out = np.asarray(values.to_numpy(), dtype=np.int64)
    else:
        out = np.asarray(list(values), dtype=np.int64)
    if out.ndim != 1:
        raise ShapeError(f"{op}: {name} must be 1-d, got shape {describe(out.shape)}")
    return out


def invert_permutation(permutation: Tensor | None) -> Tensor | None:
    """The inverse of an int permutation tensor (None stays None)."""
    if permutation is None:
        return None
    perm = _host_ints("invert_permutation", "permutation", permutation)
    inverse = np.empty_like(perm)
    inverse[perm] = np.arange(perm.size)
    return _int_tensor(permutation, inverse)


def pad_sequence(sequences: Tensor | Sequence[Tensor], batch_first: bool = False,
                 padding_value: float = 0.0, padding_side: str = "right") -> Tensor:
    """Stack tensors ``[L_i, *]`` into ``[max L, batch, *]`` (``[batch, max L, *]`` with
    ``batch_first``), filling with ``padding_value`` after each (before with ``'left'``)."""
    op = "pad_sequence"
    if padding_side not in ("left", "right"):
        raise InvalidArgumentError(f"{op}: padding_side must be 'left' or 'right', got "
                                   f"{padding_side!r}")
    seqs = list(sequences.unbind(0) if isinstance(sequences, Tensor) else sequences)
    if not seqs:
        raise InvalidArgumentError(f"{op}: received an empty list of sequences")
    trailing = seqs[0].shape[1:]
    for i, s in enumerate(seqs):
        if s.ndim < 1 or s.shape[1:] != trailing:
            raise ShapeError(f"{op}: sequence {i} has shape {describe(s.shape)}; every "
                             f"sequence must be [L, {', '.join(map(str, trailing))}] like "
                             f"sequence 0 ({describe(seqs[0].shape)})")
    longest = max(s.shape[0] for s in seqs)
    padded = []
    for s in seqs:
        missing = longest - s.shape[0]
        if missing:
            fill = Tensor.full((missing, *trailing), padding_value, backend=s.backend,
                               device=s.device, dtype=s.dtype)
            s = Tensor.cat([s, fill] if padding_side == "right" else [fill, s], 0)
        padded.append(s)
    return Tensor.stack(padded, 0 if batch_first else 1)


def unpad_sequence(padded_sequences: Tensor, lengths: Tensor | Sequence[int],
                   batch_first: bool = False) -> list[Tensor]:
    """The sequences ``pad_sequence`` (right-padded) stacked, cut back to ``lengths``."""
    lens = _host_ints("unpad_sequence", "lengths", lengths)
    x = padded_sequences if batch_first else padded_sequences.swap_dims(0, 1)
    if x.ndim < 2 or lens.size != x.shape[0] or (lens.size and lens.max() > x.shape[1]):
        raise ShapeError(f"unpad_sequence: lengths {lens.tolist()} do not fit padded "
                         f"sequences of shape {describe(padded_sequences.shape)} "
                         f"(batch_first={batch_first})")
    return [x[i, :int(n)] for i, n in enumerate(lens)]


def pack_padded_sequence(input: Tensor, lengths: Tensor | Sequence[int],
                         batch_first: bool = False, enforce_sorted: bool = True
                         ) -> PackedSequence:
    """Pack padded sequences ``[T, batch, *]`` (``[batch, T, *]`` with ``batch_first``) of
    the given ``lengths``; unless ``enforce_sorted``, the batch is sorted longest first here
    and the permutation kept in the result."""
    op = "pack_padded_sequence"
    lens = _host_ints(op, "lengths", lengths)
    if input.ndim < 2:
        raise ShapeError(f"{op}: input must have at least 2 dims ([T, batch, *]), got shape "
                         f"{describe(input.shape)}")
    x = input.swap_dims(0, 1) if batch_first else input
    steps, batch = x.shape[0], x.shape[1]
    if lens.size != batch:
        raise ShapeError(f"{op}: {lens.size} lengths for a batch of {batch} (input shape "
                         f"{describe(input.shape)}, batch_first={batch_first})")
    if batch and (lens.min() <= 0 or lens.max() > steps):
        raise InvalidArgumentError(f"{op}: every length must be in [1, {steps}] for input of "
                                   f"shape {describe(input.shape)}, got {lens.tolist()}")
    if enforce_sorted:
        if np.any(np.diff(lens) > 0):
            raise InvalidArgumentError(
                f"{op}: lengths {lens.tolist()} must be sorted in decreasing order when "
                f"enforce_sorted is True; pass enforce_sorted=False to pack unsorted sequences")
        order = np.arange(batch)
    else:
        order = np.argsort(-lens, kind="stable")
    lens = lens[order]
    batch_sizes = (lens[None, :] > np.arange(int(lens[0]) if batch else 0)[:, None]).sum(1)
    rows = np.concatenate([t * batch + order[:n] for t, n in enumerate(batch_sizes)]
                          or [np.zeros(0, np.int64)])
    flat = x.reshape((steps * batch, *x.shape[2:]))
    data = flat.index_select(0, _int_tensor(x, rows))
    if enforce_sorted:
        return PackedSequence(data, _int_tensor(x, batch_sizes))
    sorted_indices = _int_tensor(x, order)
    return PackedSequence(data, _int_tensor(x, batch_sizes), sorted_indices,
                          invert_permutation(sorted_indices))


def pad_packed_sequence(sequence: PackedSequence, batch_first: bool = False,
                        padding_value: float = 0.0, total_length: int | None = None
                        ) -> tuple[Tensor, Tensor]:
    """``(padded, lengths)``: the packed sequences as ``[T, batch, *]`` (``[batch, T, *]``
    with ``batch_first``) in their original batch order, padded with ``padding_value`` up
    to ``total_length`` steps (default: the longest)."""
    op = "pad_packed_sequence"
    data = sequence.data
    sizes = _host_ints(op, "batch_sizes", sequence.batch_sizes)
    steps = sizes.size
    batch = int(sizes[0]) if steps else 0
    if total_length is not None:
        if total_length < steps:
            raise InvalidArgumentError(
                f"{op}: total_length={total_length} is shorter than the longest sequence "
                f"({steps} steps)")
        steps = total_length
    order = (np.arange(batch) if sequence.sorted_indices is None
             else _host_ints(op, "sorted_indices", sequence.sorted_indices))
    # packed row of (t, sorted position b); the pad row (index len(data)) elsewhere
    index = np.full((steps, batch), data.shape[0], dtype=np.int64)
    start = 0
    for t, n in enumerate(sizes):
        index[t, :n] = np.arange(start, start + n)
        start += int(n)
    if start != data.shape[0]:
        raise ShapeError(f"{op}: batch_sizes {sizes.tolist()} add up to {start} rows, but data "
                         f"has shape {describe(data.shape)}")
    unsorted = np.empty_like(index)
    unsorted[:, order] = index
    pad = Tensor.full((1, *data.shape[1:]), padding_value, backend=data.backend,
                      device=data.device, dtype=data.dtype)
    padded = Tensor.cat([data, pad], 0).index_select(0, _int_tensor(data, unsorted.ravel()))
    padded = padded.reshape((steps, batch, *data.shape[1:]))
    lengths = _int_tensor(data, (unsorted < data.shape[0]).sum(0))
    return (padded.swap_dims(0, 1) if batch_first else padded), lengths


def pack_sequence(sequences: Sequence[Tensor], enforce_sorted: bool = True) -> PackedSequence:
    """Pack a list of ``[L_i, *]`` tensors (longest first unless not ``enforce_sorted``)."""
    lengths = [s.shape[0] if s.ndim else 0 for s in sequences]
    return pack_padded_sequence(pad_sequence(sequences), lengths,
                                enforce_sorted=enforce_sorted)


def unpack_sequence(packed_sequences: PackedSequence) -> list[Tensor]:
    """The list of ``[L_i, *]`` tensors a packed sequence holds, in their original order."""
    padded, lengths = pad_packed_sequence(packed_sequences, batch_first=True)
    return unpad_sequence(padded, lengths, batch_first=True)
