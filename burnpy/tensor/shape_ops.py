"""torch's shape, indexing and matrix-product ops, composed from existing Tensor ops.

Every function here is a composition of recorded Tensor ops (reshape, permute, slices, cat,
gather/scatter, masks, matmul, sums), so each is differentiable in reverse and forward mode on
every backend without a rule of its own, and its gradients follow torch's (repeated indices sum,
``scatter_reduce``'s amax/amin ties split evenly, as ``amax`` splits them).
"""

from __future__ import annotations

from collections.abc import Sequence
from itertools import pairwise
from typing import TYPE_CHECKING

import numpy as np

from burnpy.backend.errors import (
    DTypeError,
    InvalidArgumentError,
    KindError,
    ShapeError,
    describe,
)
from burnpy.tensor._core import BOOL, FLOAT, INT, check_same_backend
from burnpy.tensor.checks import broadcast_shapes, normalize_dim, normalize_dims, numel
from burnpy.tensor.layout import cat

if TYPE_CHECKING:
    from burnpy.tensor.tensor import Tensor


def _zeros(x: Tensor, shape: tuple[int, ...]) -> Tensor:
    return type(x).zeros(shape, backend=x.backend, device=x.device, dtype=x.dtype)


def _arange(x: Tensor, n: int) -> Tensor:
    return type(x).arange(n, backend=x.backend, device=x.device)


def _int_list(op: str, value: int | Sequence[int] | Tensor) -> list[int]:
    """Host ints from an int, a sequence or an int tensor (0-d or 1-d)."""
    from burnpy.tensor.tensor import Tensor

    if isinstance(value, Tensor):
        if value.kind is not INT or value.ndim > 1:
            raise KindError(f"{op}: expects a 0-d or 1-d int tensor, got {value.kind} of shape "
                            f"{describe(value.shape)}")
        return [int(v) for v in value.reshape(-1).tolist()]
    if isinstance(value, int):
        return [value]
    return [int(v) for v in value]


# ---- triangles, rolls, rotations -------------------------------------------------------------

def triangle(x: Tensor, diagonal: int, lower: bool, op: str) -> Tensor:
    """``tril``/``triu``: zero the elements above (below) the ``diagonal``-th diagonal."""
    if x.ndim < 2:
        raise ShapeError(f"{op}: expects a tensor of at least 2 dims, got {describe(x.shape)}")
    n, m = x.shape[-2:]
    offset = _arange(x, m).reshape(1, m) - _arange(x, n).reshape(n, 1)
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


# ---- matrix products -------------------------------------------------------------------------

def _need(op: str, t: Tensor, ndim: int, name: str) -> None:
    if t.ndim != ndim:
        raise ShapeError(f"{op}: {name} must be {ndim}-d, got shape {describe(t.shape)}")


def mm(a: Tensor, b: Tensor, op: str = "mm") -> Tensor:
    """A product of two matrices."""
    _need(op, a, 2, "the first operand")
    _need(op, b, 2, "the second operand")
    return a.matmul(b)


def bmm(a: Tensor, b: Tensor, op: str = "bmm") -> Tensor:
    """Batched matrix products of two 3-d tensors with the same batch size."""
    _need(op, a, 3, "the first operand")
    _need(op, b, 3, "the second operand")
    if a.shape[0] != b.shape[0]:
        raise ShapeError(f"{op}: batch sizes differ: {describe(a.shape)} and {describe(b.shape)}")
    return a.matmul(b)


def mv(a: Tensor, v: Tensor, op: str = "mv") -> Tensor:
    """A matrix times a vector."""
    _need(op, a, 2, "the matrix")
    _need(op, v, 1, "the vector")
    return a.matmul(v)


def dot(a: Tensor, b: Tensor) -> Tensor:
    """The dot product of two 1-d tensors of equal length."""
    _need("dot", a, 1, "the first operand")
    _need("dot", b, 1, "the second operand")
    if a.dtype != b.dtype:
        raise DTypeError(f"dot: expects operands of one dtype, got {a.dtype!r} and {b.dtype!r}")
    return a.matmul(b)


def inner(a: Tensor, b: Tensor) -> Tensor:
    """Sums of products over the last dims (a product when either is 0-d)."""
    if a.ndim == 0 or b.ndim == 0:
        return a * b
    if a.shape[-1] != b.shape[-1]:
        raise ShapeError(f"inner: last dims differ: {describe(a.shape)} and {describe(b.shape)}")
    if b.ndim == 1:
        return a.matmul(b)
    lead = a.shape[:-1]
    flat = b.reshape(-1, b.shape[-1])
    out = a.reshape(-1, a.shape[-1]).matmul(flat.T) if a.ndim > 1 else a.matmul(flat.T)
    return out.reshape(lead + b.shape[:-1])


def outer(a: Tensor, b: Tensor) -> Tensor:
    """``a[i] * b[j]`` for two 1-d tensors."""
    _need("outer", a, 1, "the first operand")
    _need("outer", b, 1, "the second operand")
    return a.reshape(-1, 1) * b.reshape(1, -1)


def _scaled(t: Tensor, factor: float) -> Tensor:
    return t if factor == 1 else t * factor


def added(op: str, base: Tensor, product: Tensor, beta: float, alpha: float) -> Tensor:
    """``beta * base + alpha * product``; ``beta=0`` ignores ``base`` (its NaNs too), as torch."""
    shape = broadcast_shapes(op, base.shape, product.shape)
    if shape != product.shape:
        raise ShapeError(f"{op}: input {describe(base.shape)} does not broadcast to the product's "
                         f"shape {describe(product.shape)}")
    if beta == 0:
        return _scaled(product, alpha) + _zeros(product, ()).cast(base.dtype)
    return _scaled(base, beta) + _scaled(product, alpha)


def addbmm(base: Tensor, b1: Tensor, b2: Tensor, beta: float, alpha: float) -> Tensor:
    """``beta * base + alpha * sum_i b1[i] @ b2[i]``."""
    _need("addbmm", b1, 3, "batch1")
    _need("addbmm", b2, 3, "batch2")
    if b1.shape[0] != b2.shape[0]:
        raise ShapeError(f"addbmm: batch sizes differ: {describe(b1.shape)} and "
                         f"{describe(b2.shape)}")
    # sum_i A_i B_i is one matrix product of [A_0 .. A_n] (side by side) and [B_0; ..; B_n].
    lhs = b1.permute(1, 0, 2).reshape(b1.shape[1], -1)
    rhs = b2.reshape(-1, b2.shape[2])
    return added("addbmm", base, lhs.matmul(rhs), beta, alpha)


# ---- einsum ----------------------------------------------------------------------------------

def _parse_einsum(equation: str, operands: Sequence[Tensor]) -> tuple[list[list[str]],
                                                                        list[str]]:
    """Per operand, one label per dim (ellipsis dims get private labels); the output labels."""
    eq = equation.replace(" ", "")
    lhs, arrow, rhs = eq.partition("->")
    terms = lhs.split(",")
    if len(terms) != len(operands):
        raise InvalidArgumentError(f"einsum: {len(terms)} operand terms in {equation!r} but "
                                   f"{len(operands)} operands")
    ell_dims = 0
    labels: list[list[str]] = []
    for term, t in zip(terms, operands, strict=True):
        letters = term.replace("...", "")
        if not all(c.isalpha() for c in letters) or term.count("...") > 1:
            raise InvalidArgumentError(f"einsum: invalid term {term!r} in {equation!r}")
        if "..." in term:
            n = t.ndim - len(letters)
            if n < 0:
                raise ShapeError(f"einsum: term {term!r} has more labels than operand dims "
                                 f"{describe(t.shape)}")
            ell_dims = max(ell_dims, n)
            head, _, tail = term.partition("...")
            labels.append(list(head) + [f"...{i}" for i in range(ell_dims - n, ell_dims)]
                          + list(tail))
        else:
            if len(term) != t.ndim:
                raise ShapeError(f"einsum: term {term!r} has {len(term)} labels for an operand "
                                 f"of shape {describe(t.shape)}")
            labels.append(list(term))
    ell = [f"...{i}" for i in range(ell_dims)]
    if arrow:
        if not all(c.isalpha() for c in rhs.replace("...", "")):
            raise InvalidArgumentError(f"einsum: invalid output {rhs!r} in {equation!r}")
        head, dots, tail = rhs.partition("...")
        out = list(head) + (ell if dots else []) + list(tail)
        seen = {c for ls in labels for c in ls}
        for c in out:
            if c not in seen and not c.startswith("..."):
                raise InvalidArgumentError(f"einsum: output label {c!r} is not in any operand")
        if len(set(out)) != len(out):
            raise InvalidArgumentError(f"einsum: repeated output label in {rhs!r}")
    else:
        counts: dict[str, int] = {}
        for ls in labels:
            for c in ls:
                counts[c] = counts.get(c, 0) + 1
        out = ell + sorted(c for c, k in counts.items() if k == 1 and not c.startswith("..."))
    return labels, out


def _take_diagonals(t: Tensor, labels: list[str]) -> tuple[Tensor, list[str]]:
    """Repeated labels within one operand become one dim: its diagonal."""
    while len(set(labels)) != len(labels):
        for i, c in enumerate(labels):
            j = labels.index(c, i + 1) if labels.count(c) > 1 else -1
            if j >= 0:
                t = diagonal(t, 0, i, j)
                labels = [x for k, x in enumerate(labels) if k not in (i, j)] + [c]
                break
    return t, labels


def _contract(a: Tensor, la: list[str], b: Tensor, lb: list[str],
              keep: set[str]) -> tuple[Tensor, list[str]]:
    """``a`` and ``b`` multiplied, summing the shared labels not in ``keep``: one matmul."""
    batch = [c for c in la if c in lb and c in keep]
    summed = [c for c in la if c in lb and c not in keep]
    left = [c for c in la if c not in lb]
    right = [c for c in lb if c not in la]
    a = a.permute([la.index(c) for c in batch + left + summed])
    b = b.permute([lb.index(c) for c in batch + summed + right])
    nb, nl = len(batch), len(left)
    bs, ls_, ks = a.shape[:nb], a.shape[nb:nb + nl], a.shape[nb + nl:]
    rs = b.shape[nb + len(summed):]
    out = a.reshape(bs + (numel(ls_), numel(ks))).matmul(b.reshape(bs + (numel(ks), numel(rs))))
    return out.reshape(bs + ls_ + rs), batch + left + right


def einsum(equation: str, operands: Sequence[Tensor]) -> Tensor:
    """torch.einsum: labelled dims multiplied and summed; ``...``, implicit output, diagonals."""
    if not operands:
        raise InvalidArgumentError("einsum: needs at least one operand")
    for t in operands[1:]:
        check_same_backend("einsum", operands[0], t)
    labels, out = _parse_einsum(equation, operands)
    sizes: dict[str, int] = {}
    for t, ls in zip(operands, labels, strict=True):
        for c, s in zip(ls, t.shape, strict=True):
            prev = sizes.get(c, 1)
            if s != prev and s != 1 and prev != 1:
                raise ShapeError(f"einsum: label {c!r} has sizes {prev} and {s} in "
                                 f"{equation!r}")
            sizes[c] = max(prev, s) if prev != 1 else s
    terms: list[tuple[Tensor, list[str]]] = []
    for i, (t, ls) in enumerate(zip(operands, labels, strict=True)):
        t = t.expand(tuple(sizes[c] for c in ls))
        t, ls = _take_diagonals(t, ls)
        later = {c for _, lt in terms for c in lt} | {c for lt in labels[i + 1:] for c in lt}
        alone = [k for k, c in enumerate(ls) if c not in out and c not in later]
        if alone:
            t = t.sum(alone)
            ls = [c for k, c in enumerate(ls) if k not in alone]
        terms.append((t, ls))
    acc, la = terms[0]
    for i in range(1, len(terms)):
        b, lb = terms[i]
        keep = set(out) | {c for _, lt in terms[i + 1:] for c in lt}
        acc, la = _contract(acc, la, b, lb, keep)
    acc = acc.permute([la.index(c) for c in out])
    return acc


# ---- diagonals -------------------------------------------------------------------------------

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
    parts = [x.unsqueeze(-1), _zeros(x, lead + (length, n))]
    flat = cat(parts, -1).reshape(lead + (length * (n + 1),))
    total = start + length * (n + 1)
    pieces = [_zeros(x, lead + (start,)), flat] if start else [flat]
    if total < n * n:
        pieces.append(_zeros(x, lead + (n * n - total,)))
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


def kron(a: Tensor, b: Tensor) -> Tensor:
    """The Kronecker product: every element of ``a`` times a block of ``b``."""
    nd = max(a.ndim, b.ndim)
    sa = (1,) * (nd - a.ndim) + a.shape
    sb = (1,) * (nd - b.ndim) + b.shape
    ai = a.reshape(tuple(s for p in sa for s in (p, 1)))
    bi = b.reshape(tuple(s for p in sb for s in (1, p)))
    return (ai * bi).reshape(tuple(p * q for p, q in zip(sa, sb, strict=True)))


# ---- moving, splitting, stacking -------------------------------------------------------------

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
    from burnpy.tensor.tensor import Tensor

    d = normalize_dim("tensor_split", dim, x.ndim)
    size = x.shape[d]
    if isinstance(sections, int) or (isinstance(sections, Tensor) and sections.ndim == 0):
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
    from burnpy.tensor.tensor import Tensor

    if dim is None:
        x, d = x.reshape(-1), 0
    else:
        d = normalize_dim("repeat_interleave", dim, max(x.ndim, 1))
        if x.ndim == 0:
            x = x.reshape(1)
    size = x.shape[d]
    if isinstance(repeats, Tensor) and repeats.numel() == 1:
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
    return x.index_select(d, Tensor.from_data(idx, backend=x.backend, device=x.device,
                                              dtype=x.backend.int_dtype) if idx
                          else _arange(x, 0))


# ---- gathers and scatters --------------------------------------------------------------------

def take(x: Tensor, index: Tensor) -> Tensor:
    """Elements of the flattened tensor at ``index`` (negative indices count from the end)."""
    if index.kind is not INT:
        raise KindError(f"take: index must be an int tensor, got {index.kind}")
    flat = x.reshape(-1)
    return flat.index_select(0, index.reshape(-1)).reshape(index.shape)


def take_along_dim(x: Tensor, indices: Tensor, dim: int | None) -> Tensor:
    """``gather`` with ``x`` and ``indices`` broadcast against each other except along ``dim``."""
    if indices.kind is not INT:
        raise KindError(f"take_along_dim: indices must be an int tensor, got {indices.kind}")
    if dim is None:
        return x.reshape(-1).gather(0, indices.reshape(-1))
    if x.ndim != indices.ndim:
        raise ShapeError(f"take_along_dim: input {describe(x.shape)} and indices "
                         f"{describe(indices.shape)} need the same number of dims")
    d = normalize_dim("take_along_dim", dim, x.ndim)
    xs = list(x.shape)
    ids = list(indices.shape)
    xs[d] = ids[d] = 1
    common = list(broadcast_shapes("take_along_dim", tuple(xs), tuple(ids)))
    xt, it = list(common), list(common)
    xt[d], it[d] = x.shape[d], indices.shape[d]
    idx = indices.expand(tuple(it))
    size = x.shape[d]
    idx = idx.mask_where(idx < 0, idx + size)
    return x.expand(tuple(xt)).gather(d, idx)


def masked_select(x: Tensor, mask: Tensor) -> Tensor:
    """The elements where ``mask`` (broadcast with ``x``) is true, as a 1-d tensor."""
    if mask.kind is not BOOL:
        raise KindError(f"masked_select: mask must be a bool tensor, got {mask.kind}")
    shape = broadcast_shapes("masked_select", x.shape, mask.shape)
    return x.expand(shape).reshape(-1)[mask.expand(shape).reshape(-1)]


def _dim_mask(x: Tensor, d: int, index: Tensor, op: str) -> Tensor:
    """A bool tensor, broadcastable to ``x``, true at the positions ``index`` names along ``d``."""
    from burnpy.tensor.indexing import checked_indices

    if index.kind is not INT or index.ndim > 1:
        raise KindError(f"{op}: index must be a 0-d or 1-d int tensor, got {index.kind} of "
                        f"shape {describe(index.shape)}")
    size = x.shape[d] if x.ndim else 1
    idx = checked_indices(index.reshape(-1), size, op, d)
    hit = (_arange(x, size).reshape(size, 1) == idx.reshape(1, -1)).any(1)
    return hit.reshape((size,) + (1,) * (x.ndim - d - 1)) if x.ndim else hit.reshape(())


def index_fill(x: Tensor, dim: int, index: Tensor, value: float | Tensor) -> Tensor:
    """A copy with the slices at ``index`` along ``dim`` set to ``value``."""
    from burnpy.tensor.tensor import Tensor

    d = normalize_dim("index_fill", dim, max(x.ndim, 1))
    mask = _dim_mask(x, d, index, "index_fill")
    if isinstance(value, Tensor):
        if value.ndim != 0:
            raise ShapeError(f"index_fill: value must be 0-d, got {describe(value.shape)}")
        return x.mask_where(mask, value.cast(x.dtype).expand(x.shape))
    return x.mask_fill(mask, value)


def scatter_region(x: Tensor, index: Tensor, src: Tensor, d: int, op: str) -> tuple[Tensor,
                                                                                      Tensor]:
    """``src`` cut to ``index``'s shape, and the region of ``x`` a scatter along ``d`` touches."""
    if index.kind is not INT:
        raise KindError(f"{op}: index must be an int tensor, got {index.kind}")
    if index.ndim != x.ndim or src.ndim != x.ndim:
        raise ShapeError(f"{op}: self {describe(x.shape)}, index {describe(index.shape)} and "
                         f"src {describe(src.shape)} need the same number of dims")
    for k in range(x.ndim):
        if index.shape[k] > src.shape[k] or (k != d and index.shape[k] > x.shape[k]):
            raise ShapeError(f"{op}: index {describe(index.shape)} is larger than src "
                             f"{describe(src.shape)} or self {describe(x.shape)} at dim {k}")
    if src.shape != index.shape:
        src = src[tuple(slice(0, s) for s in index.shape)]
    region = x[tuple(slice(None) if k == d else slice(0, s) for k, s in enumerate(index.shape))]
    return src, region


def scatter_reduce(x: Tensor, dim: int, index: Tensor, src: Tensor, reduce: str,
                   include_self: bool) -> Tensor:
    """torch.scatter_reduce: ``src`` reduced into ``x`` at ``index`` along ``dim``.

    ``sum`` and ``mean`` use ``scatter_add``; ``prod``, ``amax`` and ``amin`` compare every
    index with every target position (memory ``index.numel() * x.shape[dim]``), so their
    gradients are those of ``prod``/``amax``/``amin`` over the candidates: ties split evenly.
    """
    op = "scatter_reduce"
    if reduce not in ("sum", "prod", "mean", "amax", "amin"):
        raise InvalidArgumentError(f"{op}: reduce must be sum, prod, mean, amax or amin, got "
                                   f"{reduce!r}")
    check_same_backend(op, x, src)
    if src.kind is not x.kind:
        raise DTypeError(f"{op}: src is {src.kind} but self is {x.kind}")
    src = src.cast(x.dtype)
    if x.ndim == 0:
        return scatter_reduce(x.reshape(1), 0, index.reshape(-1), src.reshape(-1), reduce,
                              include_self).reshape(())
    d = normalize_dim(op, dim, x.ndim)
    if index.numel() == 0:
        return x
    size = x.shape[d]
    index = index.mask_where(index < 0, index + size)
    src, region = scatter_region(x, index, src, d, op)
    hits = _zeros(region, region.shape).scatter_add(d, index, _zeros(src, src.shape) + 1)
    hit = hits > 0
    if reduce in ("sum", "mean"):
        base = region if include_self else region.mask_fill(hit, 0)
        total = base.scatter_add(d, index, src)
        if reduce == "sum":
            result = total
        else:
            n = hits + 1 if include_self else hits.clamp_min(1)
            result = total / n if x.kind is FLOAT else total.floor_div(n)
            if not include_self:
                result = region.mask_where(hit, result)
    else:
        srcm, idxm = src.movedim(d, -1), index.movedim(d, -1)
        onehot = idxm.unsqueeze(-1) == _arange(x, size)  # [..., K, J]
        fill: float = 1
        if reduce != "prod":
            lowest = reduce == "amax"
            if x.kind is INT:
                info = np.iinfo(x.dtype.numpy)
                fill = int(info.min if lowest else info.max)
            else:
                fill = float("-inf") if lowest else float("inf")
        cand = srcm.unsqueeze(-1).expand(onehot.shape).mask_where(
            ~onehot, _zeros(x, ()) + fill)
        if include_self:
            cand = cat([cand, region.movedim(d, -1).unsqueeze(-2)], -2)
        red = getattr(cand, reduce)(-2)  # [..., J]
        result = red.movedim(-1, d)
        if not include_self:
            result = region.mask_where(hit, result)
    if region.shape == x.shape:
        return result
    key = tuple(slice(None) if kk == d else slice(0, s) for kk, s in enumerate(index.shape))
    return x.index_put(key, result)
