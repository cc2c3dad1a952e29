"""Tensor layout ops: reshape, permute, expand, repeat, flip, cat, stack, split, unfold."""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

from burnpy.backend.errors import (
    IndexOutOfBoundsError,
    InvalidArgumentError,
    KindError,
    ShapeError,
    describe,
)
from burnpy.tensor._core import FLOAT, QUANTIZED, check_same_backend, common_dtype, new
from burnpy.tensor.checks import infer_shape, normalize_dim, normalize_dims, numel
from burnpy.tensor.quantized import check_same_scheme

if TYPE_CHECKING:
    from burnpy.tensor.tensor import Tensor

PREFIX = {"float": "float_", "int": "int_", "bool": "bool_", "quantized": "q_"}


def kind_op(t: Tensor, op: str) -> Any:
    """The backend op ``op`` for ``t``'s kind (``float_reshape``, ``int_reshape``...)."""
    try:
        return getattr(t.backend, PREFIX[t.kind] + op)
    except AttributeError:
        raise KindError(f"{op}: not available for {t.kind} tensors on backend "
                        f"{t.backend.name()}") from None


def _dims_arg(dims: tuple[Any, ...]) -> tuple[int, ...]:
    """Accept ``f(2, 3)`` and ``f((2, 3))`` alike."""
    if len(dims) == 1 and isinstance(dims[0], Sequence):
        return tuple(dims[0])
    return tuple(dims)


class LayoutOps:
    """Shape-changing ops, mixed into Tensor."""

    __slots__ = ()

    def reshape(self: Tensor, *shape: int | Sequence[int]) -> Tensor:
        """Same elements in row-major order; one dim may be -1."""
        target = infer_shape("reshape", _dims_arg(shape), numel(self.shape), self.shape)
        if target == self.shape:
            return self
        return new(self.backend, kind_op(self, "reshape")(self.primitive, target), self.kind)

    view = reshape

    def flatten(self: Tensor, start_dim: int = 0, end_dim: int = -1) -> Tensor:
        """Merge dims ``start_dim..end_dim`` (inclusive) into one."""
        if self.ndim == 0:
            return self.reshape(1)
        s = normalize_dim("flatten", start_dim, self.ndim)
        e = normalize_dim("flatten", end_dim, self.ndim)
        if s > e:
            raise IndexOutOfBoundsError(f"flatten: start_dim {start_dim} comes after end_dim "
                                        f"{end_dim}")
        shape = self.shape
        return self.reshape(shape[:s] + (numel(shape[s:e + 1]),) + shape[e + 1:])

    def squeeze(self: Tensor, dim: int | Sequence[int] | None = None) -> Tensor:
        """Drop size-1 dims (all, or the given ones; a given dim of another size stays)."""
        if dim is None:
            dims = tuple(i for i, s in enumerate(self.shape) if s == 1)
        else:
            dims = normalize_dims("squeeze", (dim,) if isinstance(dim, int) else dim, self.ndim)
        return self.reshape(tuple(s for i, s in enumerate(self.shape)
                                  if not (i in dims and s == 1)))

    def unsqueeze(self: Tensor, dim: int) -> Tensor:
        """Insert a size-1 dim at ``dim``."""
        d = normalize_dim("unsqueeze", dim, self.ndim, inserting=True)
        return self.reshape(self.shape[:d] + (1,) + self.shape[d:])

    def permute(self: Tensor, *dims: int | Sequence[int]) -> Tensor:
        """Reorder dims: output dim i is input dim ``dims[i]``."""
        axes = normalize_dims("permute", _dims_arg(dims), self.ndim)
        if len(axes) != self.ndim:
            raise ShapeError(f"permute: got {len(axes)} dims for a tensor of {self.ndim} "
                             f"(shape {describe(self.shape)})")
        if axes == tuple(range(self.ndim)):
            return self
        return new(self.backend, kind_op(self, "permute")(self.primitive, axes), self.kind)

    def swap_dims(self: Tensor, dim1: int, dim2: int) -> Tensor:
        """Exchange two dims (torch's ``transpose``)."""
        d1 = normalize_dim("swap_dims", dim1, self.ndim)
        d2 = normalize_dim("swap_dims", dim2, self.ndim)
        if d1 == d2:
            return self
        return new(self.backend, kind_op(self, "swap_dims")(self.primitive, d1, d2), self.kind)

    transpose = swap_dims

    @property
    def T(self: Tensor) -> Tensor:  # noqa: N802 - the established spelling
        """All dims reversed (a matrix transposed)."""
        return self.permute(tuple(reversed(range(self.ndim))))

    @property
    def mT(self: Tensor) -> Tensor:  # noqa: N802
        """The last two dims swapped (batched matrix transpose)."""
        return self.swap_dims(-2, -1)

    def expand(self: Tensor, *shape: int | Sequence[int]) -> Tensor:
        """Broadcast to ``shape``; -1 keeps a dim, new dims may be added in front."""
        target = _dims_arg(shape)
        nd = len(target)
        if nd < self.ndim:
            raise ShapeError(f"expand: target {describe(target)} has fewer dims than "
                             f"{describe(self.shape)}")
        src = (1,) * (nd - self.ndim) + self.shape
        out = []
        for i, (s, t) in enumerate(zip(src, target, strict=True)):
            if t == -1:
                if i < nd - self.ndim:
                    raise ShapeError(f"expand: -1 is not allowed for the new leading dim {i}")
                t = s
            if s != t and s != 1:
                raise ShapeError(f"expand: cannot expand {describe(self.shape)} to "
                                 f"{describe(target)} (dim {i} is {s}, not 1)")
            out.append(t)
        final = tuple(out)
        if final == self.shape:
            return self
        return new(self.backend, kind_op(self, "expand")(self.primitive, final), self.kind)

    broadcast_to = expand

    def expand_as(self: Tensor, other: Tensor) -> Tensor:
        return self.expand(other.shape)

    def repeat(self: Tensor, *sizes: int | Sequence[int]) -> Tensor:
        """Tile the tensor ``sizes[i]`` times along dim i (torch's ``repeat``)."""
        reps = _dims_arg(sizes)
        if len(reps) < self.ndim:
            raise ShapeError(f"repeat: {len(reps)} repeat counts for a tensor of {self.ndim} "
                             "dims")
        if any(r < 0 for r in reps):
            raise InvalidArgumentError(f"repeat: counts must be >= 0, got {reps}")
        t = self.reshape((1,) * (len(reps) - self.ndim) + self.shape)
        for d, r in enumerate(reps):
            if r != 1:
                t = t.repeat_dim(d, r)
        return t

    def repeat_dim(self: Tensor, dim: int, times: int) -> Tensor:
        """Tile the tensor ``times`` along one dim (Burn's ``repeat_dim``)."""
        d = normalize_dim("repeat_dim", dim, self.ndim)
        if times < 0:
            raise InvalidArgumentError(f"repeat_dim: times must be >= 0, got {times}")
        if times == 1:
            return self
        return new(self.backend, kind_op(self, "repeat_dim")(self.primitive, d, times),
                   self.kind)

    def flip(self: Tensor, *dims: int | Sequence[int]) -> Tensor:
        """Reverse the element order along ``dims``."""
        axes = normalize_dims("flip", _dims_arg(dims), self.ndim)
        if not axes:
            return self
        return new(self.backend, kind_op(self, "flip")(self.primitive, axes), self.kind)

    def narrow(self: Tensor, dim: int, start: int, length: int) -> Tensor:
        """``length`` elements from ``start`` along ``dim``."""
        d = normalize_dim("narrow", dim, self.ndim)
        size = self.shape[d]
        if start < 0:
            start += size
        if not (0 <= start <= size and length >= 0 and start + length <= size):
            raise IndexOutOfBoundsError(f"narrow: range [{start}, {start + length}) is outside "
                                        f"dim {dim} of size {size}")
        return self.slice_dim(d, start, start + length)

    def slice_dim(self: Tensor, dim: int, start: int, stop: int, step: int = 1) -> Tensor:
        """Elements ``start:stop:step`` of one dim (validated bounds, positive step)."""
        d = normalize_dim("slice", dim, self.ndim)
        slices = tuple(slice(0, n) for n in self.shape[:d]) + (slice(start, stop, step),)
        return new(self.backend, kind_op(self, "slice")(self.primitive, slices), self.kind)

    def split(self: Tensor, split_size_or_sections: int | Sequence[int],
              dim: int = 0) -> list[Tensor]:
        """Pieces of ``split_size`` (the last may be smaller), or of the listed sizes."""
        d = normalize_dim("split", dim, self.ndim)
        size = self.shape[d]
        if isinstance(split_size_or_sections, int):
            step = split_size_or_sections
            if step <= 0:
                raise InvalidArgumentError(f"split: split_size must be > 0, got {step}")
            sizes = [min(step, size - s) for s in range(0, size, step)] or [0]
        else:
            sizes = list(split_size_or_sections)
            if sum(sizes) != size or any(s < 0 for s in sizes):
                raise ShapeError(f"split: sections {sizes} do not add up to dim {dim} of size "
                                 f"{size}")
        out, start = [], 0
        for s in sizes:
            out.append(self.slice_dim(d, start, start + s))
            start += s
        return out

    def chunk(self: Tensor, chunks: int, dim: int = 0) -> list[Tensor]:
        """At most ``chunks`` near-equal pieces (torch.chunk)."""
        if chunks <= 0:
            raise InvalidArgumentError(f"chunk: chunks must be > 0, got {chunks}")
        d = normalize_dim("chunk", dim, self.ndim)
        size = self.shape[d]
        return self.split(max(1, -(-size // chunks)), d)

    def unfold(self: Tensor, dim: int, size: int, step: int) -> Tensor:
        """Sliding windows of ``size`` every ``step`` along ``dim``, as a new last dim."""
        d = normalize_dim("unfold", dim, self.ndim)
        if size <= 0 or step <= 0:
            raise InvalidArgumentError(f"unfold: size and step must be > 0, got {size}, {step}")
        if size > self.shape[d]:
            raise ShapeError(f"unfold: window {size} is larger than dim {dim} of size "
                             f"{self.shape[d]}")
        return new(self.backend, kind_op(self, "unfold")(self.primitive, d, size, step),
                   self.kind)

    @staticmethod
    def cat(tensors: Sequence[Tensor], dim: int = 0) -> Tensor:
        """Concatenate along an existing dim; shapes must agree elsewhere."""
        return cat(tensors, dim)

    @staticmethod
    def stack(tensors: Sequence[Tensor], dim: int = 0) -> Tensor:
        """Join along a new dim; all shapes must be equal."""
        return stack(tensors, dim)


def cat(tensors: Sequence[Tensor], dim: int = 0) -> Tensor:
    """Concatenate tensors of one backend, kind and rank along an existing dim."""
    tensors = list(tensors)
    if not tensors:
        raise ShapeError("cat: needs at least one tensor")
    first = tensors[0]
    d = normalize_dim("cat", dim, first.ndim)
    dtype = first.dtype
    for t in tensors[1:]:
        check_same_backend("cat", first, t)
        if t.kind is not first.kind:
            raise KindError(f"cat: mixes {first.kind} and {t.kind} tensors")
        if first.kind is FLOAT or first.kind == "int":
            dtype = common_dtype("cat", first.cast(dtype), t)
        if t.ndim != first.ndim or any(a != b for i, (a, b) in enumerate(
                zip(t.shape, first.shape, strict=True)) if i != d):
            raise ShapeError(f"cat: shapes {[describe(x.shape) for x in tensors]} differ "
                             f"outside dim {dim}")
    if len(tensors) == 1:
        return first
    if first.kind is QUANTIZED:
        for t in tensors[1:]:
            check_same_scheme("cat", first, t)
        return new(first.backend, first.backend.q_cat([t.primitive for t in tensors], d),
                   QUANTIZED)
    parts = [t.cast(dtype).primitive for t in tensors]
    return new(first.backend, kind_op(first, "cat")(parts, d), first.kind)


def stack(tensors: Sequence[Tensor], dim: int = 0) -> Tensor:
    """Join equal-shaped tensors along a new dim."""
    tensors = list(tensors)
    if not tensors:
        raise ShapeError("stack: needs at least one tensor")
    shape = tensors[0].shape
    for t in tensors:
        if t.shape != shape:
            raise ShapeError(f"stack: shapes differ: {[describe(x.shape) for x in tensors]}")
    d = normalize_dim("stack", dim, len(shape), inserting=True)
    return cat([t.unsqueeze(d) for t in tensors], d)
