"""Tensor layout ops (``LayoutOps``, a mixin of ``Tensor``): reshape, permute, expand, repeat,
flip, slices, splits, unfold, cat and stack, and torch's further shape ops (triangles, rolls,
rotations, diagonals, ``movedim``, ``repeat_interleave``...), composed from recorded Tensor ops
so each is differentiable in both modes on every backend without a rule of its own."""

from __future__ import annotations

from collections.abc import Sequence
from itertools import pairwise
from typing import TYPE_CHECKING, Any

from burnpy.backend.errors import (
    IndexOutOfBoundsError,
    InvalidArgumentError,
    KindError,
    ShapeError,
    describe,
)
from burnpy.tensor._core import (
    BOOL,
    FLOAT,
    INT,
    QUANTIZED,
    TensorBase,
    check_same_backend,
    common_dtype,
    new,
)
from burnpy.tensor.autocast_hook import autocast_op
from burnpy.tensor.checks import infer_shape, normalize_dim, normalize_dims, numel, python_int
from burnpy.tensor.creation import CreationOps
from burnpy.tensor.quantized import check_same_scheme
from burnpy.tensor.scalar_dims import as_vector, check_scalar_dims

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


def dims_arg(dims: tuple[Any, ...]) -> tuple[int, ...]:
    """Accept ``f(2, 3)`` and ``f((2, 3))`` alike."""
    if len(dims) == 1:
        first = dims[0]
        if isinstance(first, tuple):  # checked first: an ABC's isinstance costs more
            return first
        if isinstance(first, Sequence):
            return tuple(first)
    return tuple(dims)


@autocast_op("cat")
def cat(tensors: Sequence[Tensor], dim: int = 0) -> Tensor:
    """Concatenate tensors of one backend, kind and rank along an existing dim."""
    tensors = list(tensors)
    if not tensors:
        raise ShapeError("cat: needs at least one tensor")
    if (0,) in [t.shape for t in tensors] and any(t.ndim != 1 for t in tensors):
        # torch's legacy rule: 1-d empty tensors are skipped beside tensors of other ranks.
        tensors = [t for t in tensors if t.shape != (0,)]
    first = tensors[0]
    backend, kind, shape = first.backend, first.kind, first.shape
    d = normalize_dim("cat", dim, len(shape))
    dtype = first.dtype
    outside = shape[:d] + shape[d + 1:]
    cast = False
    for t in tensors[1:]:
        if t.backend is not backend or backend.multi_device:
            check_same_backend("cat", first, t)
        if t.kind is not kind:
            raise KindError(f"cat: mixes {kind} and {t.kind} tensors")
        if (kind is FLOAT or kind == "int") and t.dtype is not dtype:
            dtype, cast = common_dtype("cat", first.cast(dtype), t), True
        ts = t.shape
        if len(ts) != len(shape) or ts[:d] + ts[d + 1:] != outside:
            raise ShapeError(f"cat: shapes {[describe(x.shape) for x in tensors]} differ "
                             f"outside dim {dim}")
    if len(tensors) == 1:
        return first
    if kind is QUANTIZED:
        for t in tensors[1:]:
            check_same_scheme("cat", first, t)
        return new(backend, backend.q_cat([t.primitive for t in tensors], d), QUANTIZED)
    parts = ([t.primitive if t.dtype is dtype else t.cast(dtype).primitive for t in tensors]
             if cast else [t.primitive for t in tensors])
    return new(backend, kind_op(first, "cat")(parts, d), kind)


@autocast_op("stack")
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


def zeros_of(x: Tensor, shape: tuple[int, ...]) -> Tensor:
    """Zeros of ``shape`` on ``x``'s backend and device, in its dtype."""
    return CreationOps.zeros(shape, backend=x.backend, device=x.device, dtype=x.dtype)


def arange_of(x: Tensor, n: int) -> Tensor:
    """``0..n-1`` as an int tensor on ``x``'s backend and device."""
    return CreationOps.arange(n, backend=x.backend, device=x.device)


def _int_list(op: str, value: int | Sequence[int] | Tensor) -> list[int]:
    """Host ints from an int, a sequence or an int tensor (0-d or 1-d)."""
    if isinstance(value, TensorBase):
        if value.kind is not INT or value.ndim > 1:
            raise KindError(f"{op}: expects a 0-d or 1-d int tensor, got {value.kind} of shape "
                            f"{describe(value.shape)}")
        return [int(v) for v in value.reshape(-1).tolist()]
    if isinstance(value, int):
        return [value]
    return [int(v) for v in value]


def triangle(x: Tensor, diagonal: int, lower: bool, op: str) -> Tensor:
    """``tril``/``triu``: zero the elements above (below) the ``diagonal``-th diagonal."""
    if x.ndim < 2:
        raise ShapeError(f"{op}: expects a tensor of at least 2 dims, got {describe(x.shape)}")
    n, m = x.shape[-2:]
    offset = arange_of(x, m).reshape(1, m) - arange_of(x, n).reshape(n, 1)
    drop = offset > diagonal if lower else offset < diagonal
    if x.kind is BOOL:
        return x & ~drop
    return x.mask_fill(drop, 0)


def roll(x: Tensor, shifts: int | Sequence[int], dims: int | Sequence[int] | None) -> Tensor:
    """Elements shifted cyclically along ``dims`` (the flattened tensor when None)."""
    sh = [shifts] if isinstance(shifts, int) else list(shifts)
    if dims is None:
        if len(sh) != 1:
            raise InvalidArgumentError(f"roll: {len(sh)} shifts need as many dims")
        return roll(x.reshape(-1), sh[0], 0).reshape(x.shape)
    ds = [dims] if isinstance(dims, int) else list(dims)
    if len(ds) != len(sh):
        raise InvalidArgumentError(f"roll: shifts {tuple(sh)} and dims {tuple(ds)} differ in "
                                   "length")
    out = x
    for s, d in zip(sh, ds, strict=True):
        dd = normalize_dim("roll", d, max(x.ndim, 1))
        size = out.shape[dd] if out.ndim else 1
        if size == 0 or s % size == 0 or out.ndim == 0:
            continue
        k = s % size
        out = cat([out.narrow(dd, size - k, k), out.narrow(dd, 0, size - k)], dd)
    return out


def rot90(x: Tensor, k: int, dims: Sequence[int]) -> Tensor:
    """A rotation by 90 degrees ``k`` times in the plane of ``dims`` (first towards second)."""
    if len(dims) != 2:
        raise InvalidArgumentError(f"rot90: dims must hold 2 dims, got {tuple(dims)}")
    if x.ndim < 2:
        raise ShapeError(f"rot90: expects at least 2 dims, got {describe(x.shape)}")
    d0, d1 = normalize_dims("rot90", dims, x.ndim)
    k %= 4
    if k == 1:
        return x.flip(d1).transpose(d0, d1)
    if k == 2:
        return x.flip((d0, d1))
    if k == 3:
        return x.flip(d0).transpose(d0, d1)
    return x


def diagonal(x: Tensor, offset: int, dim1: int, dim2: int) -> Tensor:
    """The ``offset`` diagonal of the (dim1, dim2) planes, as a new last dim (torch.diagonal):
    the two dims are moved last and flattened, and the diagonal is a strided slice of it."""
    d1 = normalize_dim("diagonal", dim1, x.ndim)
    d2 = normalize_dim("diagonal", dim2, x.ndim)
    if d1 == d2:
        raise InvalidArgumentError(f"diagonal: dim1 and dim2 are the same dim ({dim1}, {dim2})")
    rest = [d for d in range(x.ndim) if d not in (d1, d2)]
    t = x.permute(rest + [d1, d2])
    n, m = x.shape[d1], x.shape[d2]
    length = max(0, min(n, m - offset) if offset >= 0 else min(n + offset, m))
    lead = t.shape[:-2]
    if length == 0:
        return t.reshape(lead + (n * m,)).narrow(-1, 0, 0)
    start = offset if offset >= 0 else -offset * m
    flat = t.reshape(lead + (n * m,))
    return flat.slice_dim(-1, start, start + (length - 1) * (m + 1) + 1, m + 1)


def diag_embed(x: Tensor, offset: int, dim1: int, dim2: int) -> Tensor:
    """Matrices whose ``offset`` diagonal (in dims ``dim1``, ``dim2``) holds the last dim: each
    element followed by ``n`` zeros, laid out flat, is the row-major ``n x n`` matrix."""
    if x.ndim == 0:
        raise ShapeError("diag_embed: expects at least 1 dim, got a 0-d tensor")
    nd = x.ndim + 1
    d1 = normalize_dim("diag_embed", dim1, nd)
    d2 = normalize_dim("diag_embed", dim2, nd)
    if d1 == d2:
        raise InvalidArgumentError(f"diag_embed: dim1 and dim2 are the same dim ({dim1}, {dim2})")
    length = x.shape[-1]
    n = length + abs(offset)
    lead = x.shape[:-1]
    start = offset if offset >= 0 else -offset * n
    parts = [x.unsqueeze(-1), zeros_of(x, lead + (length, n))]
    flat = cat(parts, -1).reshape(lead + (length * (n + 1),))
    total = start + length * (n + 1)
    pieces = [zeros_of(x, lead + (start,)), flat] if start else [flat]
    if total < n * n:
        pieces.append(zeros_of(x, lead + (n * n - total,)))
    flat = cat(pieces, -1) if len(pieces) > 1 else flat
    mats = flat.narrow(-1, 0, n * n).reshape(lead + (n, n))
    rest = list(range(len(lead)))
    order = [0] * nd
    others = [d for d in range(nd) if d not in (d1, d2)]
    for src, d in zip(rest, others, strict=True):
        order[d] = src
    order[d1], order[d2] = len(lead), len(lead) + 1
    return mats.permute(order)


def diag(x: Tensor, offset: int) -> Tensor:
    """A 1-d tensor as the ``offset`` diagonal of a square matrix, or a matrix's diagonal."""
    if x.ndim == 1:
        return diag_embed(x, offset, 0, 1)
    if x.ndim == 2:
        return diagonal(x, offset, 0, 1)
    raise ShapeError(f"diag: expects a 1-d or 2-d tensor, got shape {describe(x.shape)}")


def movedim(x: Tensor, source: int | Sequence[int], destination: int | Sequence[int]) -> Tensor:
    """Dims ``source`` moved to positions ``destination``; the others keep their order."""
    src = (source,) if isinstance(source, int) else tuple(source)
    dst = (destination,) if isinstance(destination, int) else tuple(destination)
    if len(src) != len(dst):
        raise InvalidArgumentError(f"movedim: source {src} and destination {dst} differ in "
                                   "length")
    nd = max(x.ndim, 1)
    s = normalize_dims("movedim", src, nd)
    d = normalize_dims("movedim", dst, nd)
    if x.ndim == 0:
        return x
    order = [-1] * x.ndim
    for si, di in zip(s, d, strict=True):
        order[di] = si
    rest = iter(i for i in range(x.ndim) if i not in s)
    return x.permute([o if o >= 0 else next(rest) for o in order])


def tensor_split(x: Tensor, sections: int | Sequence[int] | Tensor, dim: int) -> list[Tensor]:
    """``sections`` near-equal pieces (the first ones one longer), or pieces cut at indices."""
    d = normalize_dim("tensor_split", dim, x.ndim)
    size = x.shape[d]
    if isinstance(sections, int) or (isinstance(sections, TensorBase) and sections.ndim == 0):
        n = _int_list("tensor_split", sections)[0]
        if n <= 0:
            raise InvalidArgumentError(f"tensor_split: sections must be > 0, got {n}")
        q, r = divmod(size, n)
        bounds = [i * q + min(i, r) for i in range(n + 1)]
    else:
        cuts = _int_list("tensor_split", sections)
        bounds = [0] + [min(max(c + size if c < 0 else c, 0), size) for c in cuts] + [size]
    out = []
    for lo, hi in pairwise(bounds):
        lo = min(lo, size)
        out.append(x.slice_dim(d, lo, max(lo, hi)))
    return out


def _atleast(x: Tensor, n: int) -> Tensor:
    if x.ndim >= n:
        return x
    if n == 1:
        return x.reshape(1)
    if n == 2:
        return x.reshape((1,) * (2 - x.ndim) + x.shape)
    if x.ndim == 2:
        return x.unsqueeze(-1)
    return x.reshape(1, -1, 1)


def stack_along(op: str, tensors: Sequence[Tensor]) -> Tensor:
    """hstack, vstack, dstack and column_stack: promote each tensor's dims, then concatenate."""
    if not tensors:
        raise InvalidArgumentError(f"{op}: expects a non-empty sequence of tensors")
    if op == "hstack":
        ts = [_atleast(t, 1) for t in tensors]
        return cat(ts, 0 if ts[0].ndim == 1 else 1)
    if op == "vstack":
        return cat([_atleast(t, 2) for t in tensors], 0)
    if op == "dstack":
        return cat([_atleast(t, 3) for t in tensors], 2)
    return cat([t.reshape(-1, 1) if t.ndim <= 1 else t for t in tensors], 1)


def unflatten(x: Tensor, dim: int, sizes: Sequence[int]) -> Tensor:
    """Dim ``dim`` split into ``sizes`` (one may be -1)."""
    d = normalize_dim("unflatten", dim, x.ndim)
    sz = list(sizes)
    if not sz:
        raise InvalidArgumentError("unflatten: sizes must be non-empty")
    if sz.count(-1) > 1:
        raise InvalidArgumentError(f"unflatten: at most one -1 in sizes {tuple(sz)}")
    if -1 in sz:
        known = numel(tuple(s for s in sz if s != -1))
        if known == 0 or x.shape[d] % known:
            raise ShapeError(f"unflatten: sizes {tuple(sz)} do not fit dim {dim} of size "
                             f"{x.shape[d]}")
        sz[sz.index(-1)] = x.shape[d] // known
    if numel(tuple(sz)) != x.shape[d]:
        raise ShapeError(f"unflatten: sizes {tuple(sz)} do not multiply to dim {dim} of size "
                         f"{x.shape[d]}")
    return x.reshape(x.shape[:d] + tuple(sz) + x.shape[d + 1:])


def repeat_interleave(x: Tensor, repeats: int | Tensor, dim: int | None) -> Tensor:
    """Each element (slice along ``dim``) repeated ``repeats`` times (or ``repeats[i]`` times)."""
    if dim is None:
        x, d = x.reshape(-1), 0
    else:
        d = normalize_dim("repeat_interleave", dim, max(x.ndim, 1))
        if x.ndim == 0:
            x = x.reshape(1)
    size = x.shape[d]
    if isinstance(repeats, TensorBase) and repeats.numel() == 1:
        repeats = _int_list("repeat_interleave", repeats)[0]
    if isinstance(repeats, int):
        if repeats < 0:
            raise InvalidArgumentError(f"repeat_interleave: repeats must be >= 0, got {repeats}")
        shape = x.shape[:d + 1] + (repeats,) + x.shape[d + 1:]
        out = x.unsqueeze(d + 1).expand(shape)
        return out.reshape(x.shape[:d] + (size * repeats,) + x.shape[d + 1:])
    reps = _int_list("repeat_interleave", repeats)
    if len(reps) != size or any(r < 0 for r in reps):
        raise ShapeError(f"repeat_interleave: repeats {reps} must be {size} counts >= 0")
    idx = [i for i, r in enumerate(reps) for _ in range(r)]
    return x.index_select(d, CreationOps.from_data(idx, backend=x.backend, device=x.device,
                                                   dtype=x.backend.int_dtype) if idx
                          else arange_of(x, 0))


class LayoutOps:
    """``Tensor``'s shape and element-order ops, splits, triangles and diagonals."""

    __slots__ = ()


    def reshape(self: Tensor, *shape: int | Sequence[int]) -> Tensor:
        """Same elements in row-major order; one dim may be -1."""
        source = self.shape
        target = infer_shape("reshape", dims_arg(shape), numel(source), source)
        if target == source:
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
        elif self.ndim == 0:
            check_scalar_dims("squeeze", dim)
            return self
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
        axes = normalize_dims("permute", dims_arg(dims), self.ndim)
        if len(axes) != self.ndim:
            raise ShapeError(f"permute: got {len(axes)} dims for a tensor of {self.ndim} "
                             f"(shape {describe(self.shape)})")
        if axes == tuple(range(self.ndim)):
            return self
        return new(self.backend, kind_op(self, "permute")(self.primitive, axes), self.kind)

    def swap_dims(self: Tensor, dim1: int, dim2: int) -> Tensor:
        """Exchange two dims (torch's ``transpose``)."""
        ndim = self.ndim
        if ndim == 0:
            check_scalar_dims("transpose", (dim1, dim2))
            return self
        d1 = normalize_dim("swap_dims", dim1, ndim)
        d2 = normalize_dim("swap_dims", dim2, ndim)
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
        target = dims_arg(shape)
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
        """Broadcast to ``other``'s shape."""
        return self.expand(other.shape)

    def repeat(self: Tensor, *sizes: int | Sequence[int]) -> Tensor:
        """Tile the tensor ``sizes[i]`` times along dim i (torch's ``repeat``)."""
        reps = dims_arg(sizes)
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

    def flip(self: Tensor, *args: int | Sequence[int], dims: int | Sequence[int] | None = None
             ) -> Tensor:
        """Reverse the element order along the dims given as ints, a sequence, or torch's
        keyword ``dims=``."""
        if dims is not None:
            if args:
                raise InvalidArgumentError(f"flip: give the dims positionally or as dims=, not "
                                           f"both ({args!r} and dims={dims!r})")
            args = (dims,)
        axes = normalize_dims("flip", dims_arg(args), self.ndim)
        if not axes:
            return self
        return new(self.backend, kind_op(self, "flip")(self.primitive, axes), self.kind)

    def narrow(self: Tensor, dim: int, start: int | Tensor, length: int) -> Tensor:
        """``length`` elements from ``start`` (an int or a 0-d int tensor) along ``dim``."""
        d = normalize_dim("narrow", dim, self.ndim)
        size = self.shape[d]
        start = python_int("narrow", "start", start)
        if start < 0:
            start += size
        if not (0 <= start <= size and length >= 0 and start + length <= size):
            raise IndexOutOfBoundsError(f"narrow: range [{start}, {start + length}) is outside "
                                        f"dim {dim} of size {size}")
        return self.slice_dim(d, start, start + length)

    def slice_dim(self: Tensor, dim: int, start: int, stop: int, step: int = 1) -> Tensor:
        """Elements ``start:stop:step`` of one dim (validated bounds, positive step)."""
        d = normalize_dim("slice_dim", dim, self.ndim)
        size = self.shape[d]
        if step <= 0:
            raise InvalidArgumentError(f"slice_dim: step must be positive, got {step} (dim {dim} "
                                       f"of shape {describe(self.shape)})")
        if not 0 <= start <= stop <= size:
            raise IndexOutOfBoundsError(f"slice_dim: range [{start}, {stop}) is outside dim "
                                        f"{dim} of size {size} (shape {describe(self.shape)})")
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
        backend, kind, slice_op = self.backend, self.kind, kind_op(self, "slice")
        lead = tuple(slice(0, n) for n in self.shape[:d])
        out, start = [], 0
        for s in sizes:  # in bounds by construction: slice_dim's checks are not repeated
            out.append(new(backend, slice_op(self.primitive, (*lead, slice(start, start + s, 1))),
                           kind))
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
        if self.ndim == 0:
            return as_vector(self, "unfold", dim, lambda v: v.unfold(0, size, step),
                             (size,))
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

    def tril(self: Tensor, diagonal: int = 0) -> Tensor:
        """The lower triangle of the last two dims (elements above ``diagonal`` zeroed)."""
        return triangle(self, diagonal, True, "tril")

    def triu(self: Tensor, diagonal: int = 0) -> Tensor:
        """The upper triangle of the last two dims (elements below ``diagonal`` zeroed)."""
        return triangle(self, diagonal, False, "triu")

    def roll(self: Tensor, shifts: int | Sequence[int],
             dims: int | Sequence[int] | None = None) -> Tensor:
        """Elements shifted cyclically by ``shifts`` along ``dims`` (flattened when None)."""
        return roll(self, shifts, dims)

    def rot90(self: Tensor, k: int = 1, dims: Sequence[int] = (0, 1)) -> Tensor:
        """Rotated by 90 degrees ``k`` times, from the first of ``dims`` towards the second."""
        return rot90(self, k, dims)

    def fliplr(self: Tensor) -> Tensor:
        """Reversed along dim 1 (at least 2 dims)."""
        if self.ndim < 2:
            raise ShapeError(f"fliplr: expects at least 2 dims, got {describe(self.shape)}")
        return self.flip(1)

    def flipud(self: Tensor) -> Tensor:
        """Reversed along dim 0 (at least 1 dim)."""
        if self.ndim < 1:
            raise ShapeError("flipud: expects at least 1 dim, got a 0-d tensor")
        return self.flip(0)

    def diag(self: Tensor, diagonal: int = 0) -> Tensor:
        """A 1-d tensor as a matrix's ``diagonal``-th diagonal, or a matrix's diagonal."""
        return diag(self, diagonal)

    def diagonal(self: Tensor, offset: int = 0, dim1: int = 0, dim2: int = 1) -> Tensor:
        """The ``offset`` diagonal of the (dim1, dim2) planes, as the last dim."""
        return diagonal(self, offset, dim1, dim2)

    def diag_embed(self: Tensor, offset: int = 0, dim1: int = -2, dim2: int = -1) -> Tensor:
        """Matrices (in dims ``dim1``, ``dim2``) whose ``offset`` diagonal is the last dim."""
        return diag_embed(self, offset, dim1, dim2)

    @autocast_op("trace")
    def trace(self: Tensor) -> Tensor:
        """The sum of a matrix's diagonal."""
        if self.ndim != 2:
            raise ShapeError(f"trace: expects a matrix, got shape {describe(self.shape)}")
        return diagonal(self, 0, 0, 1).sum()

    def tile(self: Tensor, *dims: int | Sequence[int]) -> Tensor:
        """``repeat`` with missing leading counts taken as 1 (torch.tile)."""
        reps = dims_arg(dims)
        return self.repeat((1,) * (self.ndim - len(reps)) + reps)

    def repeat_interleave(self: Tensor, repeats: int | Tensor, dim: int | None = None, *,
                          output_size: int | None = None) -> Tensor:
        """Each slice along ``dim`` (each element of the flattened tensor when None) repeated
        ``repeats`` times, or ``repeats[i]`` times for slice i. ``output_size`` (torch's hint of
        the result's length along ``dim``) is checked against it."""
        out = repeat_interleave(self, repeats, dim)
        if output_size is not None and out.shape[0 if dim is None else dim] != output_size:
            raise ShapeError(f"repeat_interleave: output_size={output_size}, but the repeats "
                             f"give {out.shape[0 if dim is None else dim]}")
        return out

    def movedim(self: Tensor, source: int | Sequence[int],
                destination: int | Sequence[int]) -> Tensor:
        """Dims ``source`` moved to ``destination``; the other dims keep their order."""
        return movedim(self, source, destination)

    moveaxis = movedim

    def unbind(self: Tensor, dim: int = 0) -> tuple[Tensor, ...]:
        """The slices along ``dim``, that dim removed."""
        d = normalize_dim("unbind", dim, self.ndim)
        return tuple(self.narrow(d, i, 1).squeeze(d) for i in range(self.shape[d]))

    def tensor_split(self: Tensor, indices_or_sections: int | Sequence[int] | Tensor,
                     dim: int = 0) -> list[Tensor]:
        """``n`` near-equal pieces (the first ``size % n`` one longer), or pieces cut at the
        given indices (torch.tensor_split)."""
        return tensor_split(self, indices_or_sections, dim)

    def split_with_sizes(self: Tensor, split_sizes: Sequence[int], dim: int = 0) -> list[Tensor]:
        """Pieces of the listed sizes along ``dim``."""
        return self.split(list(split_sizes), dim)

    def unflatten(self: Tensor, dim: int, sizes: Sequence[int]) -> Tensor:
        """Dim ``dim`` split into ``sizes`` (one may be -1)."""
        return unflatten(self, dim, sizes)

    def ravel(self: Tensor) -> Tensor:
        """The elements as a 1-d tensor."""
        return self.reshape(-1)

    def narrow_copy(self: Tensor, dim: int, start: int | Tensor, length: int) -> Tensor:
        """``narrow``'s elements (primitives are immutable: the slice is already a copy)."""
        return self.narrow(dim, start, length)

    def reshape_as(self: Tensor, other: Tensor) -> Tensor:
        """Reshaped to ``other``'s shape."""
        return self.reshape(other.shape)

    def view_as(self: Tensor, other: Tensor) -> Tensor:
        """torch's name for ``reshape_as``."""
        return self.reshape(other.shape)

    def t(self: Tensor) -> Tensor:
        """A matrix transposed; 0-d and 1-d tensors unchanged."""
        if self.ndim > 2:
            raise ShapeError(f"t: expects at most 2 dims, got shape {describe(self.shape)}")
        return self.T
