"""Operators, binary math and matrix products of Tensor (``ArithmeticOps``, a mixin of
``Tensor``), with the op tables and the general (slow) paths.

The operator methods take a fast path first (``_binary``: same backend, kind, dtype and shape,
or a Python number) that costs a few attribute reads before the backend call; everything else
goes through ``binary_tensors`` and ``binary_scalar``, which promote dtypes, check broadcasting
and kinds, and name the op in every error. The matrix products (``mm``, ``einsum``...) are
compositions of recorded ops, so each is differentiable in both modes without a rule.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import TYPE_CHECKING, Any, Literal

import numpy as np

from burnpy.backend.dtype import NUMPY_PROMOTING_INTS, DType
from burnpy.backend.errors import (
    DivisionByZeroError,
    DTypeError,
    InvalidArgumentError,
    KindError,
    ShapeError,
    UnsupportedDTypeError,
    article,
    describe,
)
from burnpy.ir.symbolic import to_float
from burnpy.tensor import _core
from burnpy.tensor._core import (
    BOOL,
    FLOAT,
    INT,
    QUANTIZED,
    TensorBase,
    check_same_backend,
    common_dtype,
    is_tensor,
    new,
)
from burnpy.tensor.autocast_hook import autocast_op
from burnpy.tensor.checks import as_int, broadcast_shapes, numel
from burnpy.tensor.creation import CreationOps
from burnpy.tensor.layout import cat, diagonal
from burnpy.tensor.quantized import check_same_scheme, dequantized, requantized

if TYPE_CHECKING:
    from burnpy.backend.base import Backend
    from burnpy.tensor.tensor import Tensor

#: A backend op on one primitive (``float_exp``, ``relu``...).
UnaryOp = Callable[[Any], Any]


class BinarySpec:
    """The backend ops one binary operator maps to, per kind, by name: a table read by
    ``Tensor``'s fast path and by the general paths below (``test_tensor_methods`` checks
    every name is an op of ``Backend``)."""

    __slots__ = (
        "bool_op",
        "float_op",
        "float_scalar",
        "int_fast_op",
        "int_op",
        "int_scalar",
        "name",
        "out_float",
        "out_int",
        "returns_bool",
    )

    def __init__(self, name: str, float_op: str | None, float_scalar: str | None,
                 int_op: str | None, int_scalar: str | None, bool_op: str | None = None,
                 returns_bool: bool = False) -> None:
        self.name = name
        self.float_op, self.float_scalar = float_op, float_scalar
        self.int_op, self.int_scalar = int_op, int_scalar
        self.bool_op = bool_op
        self.returns_bool = returns_bool
        #: The result kinds of float and int operands.
        self.out_float = BOOL if returns_bool else FLOAT
        self.out_int = BOOL if returns_bool else INT
        #: ``int_op`` when int operands may skip the general path (which checks division by
        #: zero), else None.
        self.int_fast_op = None if name in ("floor_div", "remainder") else int_op


def _cmp(name: str, bool_op: str | None = None) -> BinarySpec:
    return BinarySpec(name, f"float_{name}", f"float_{name}_elem", f"int_{name}",
                      f"int_{name}_elem", bool_op, returns_bool=True)


ADD = BinarySpec("add", "float_add", "float_add_scalar", "int_add", "int_add_scalar")
SUB = BinarySpec("sub", "float_sub", "float_sub_scalar", "int_sub", "int_sub_scalar")
MUL = BinarySpec("mul", "float_mul", "float_mul_scalar", "int_mul", "int_mul_scalar")
DIV = BinarySpec("div", "float_div", "float_div_scalar", None, None)
FLOOR_DIV = BinarySpec("floor_div", None, None, "int_div", "int_div_scalar")
REMAINDER = BinarySpec("remainder", "float_remainder", "float_remainder_scalar",
                       "int_remainder", "int_remainder_scalar")
POW = BinarySpec("pow", "float_powf", "float_powf_scalar", None, "int_powi_scalar")
EQUAL = _cmp("equal", "bool_equal")
NOT_EQUAL = _cmp("not_equal", "bool_not_equal")
GREATER = _cmp("greater")
GREATER_EQUAL = _cmp("greater_equal")
LOWER = _cmp("lower")
LOWER_EQUAL = _cmp("lower_equal")
BITWISE_AND = BinarySpec("bitwise_and", None, None, "int_bitwise_and", None, "bool_and")
BITWISE_OR = BinarySpec("bitwise_or", None, None, "int_bitwise_or", None, "bool_or")
BITWISE_XOR = BinarySpec("bitwise_xor", None, None, "int_bitwise_xor", None, "bool_xor")
LEFT_SHIFT = BinarySpec("bitwise_left_shift", None, None, "int_bitwise_left_shift", None)
RIGHT_SHIFT = BinarySpec("bitwise_right_shift", None, None, "int_bitwise_right_shift", None)
ATAN2 = BinarySpec("atan2", "float_atan2", None, None, None)
HYPOT = BinarySpec("hypot", "float_hypot", None, None, None)
LOGADDEXP = BinarySpec("logaddexp", "float_logaddexp", None, None, None)
LOGADDEXP2 = BinarySpec("logaddexp2", "float_logaddexp2", None, None, None)

#: Every operator's table entry, for the checks that each named op exists.
BINARY_SPECS = (ADD, SUB, MUL, DIV, FLOOR_DIV, REMAINDER, POW, EQUAL, NOT_EQUAL, GREATER,
                GREATER_EQUAL, LOWER, LOWER_EQUAL, BITWISE_AND, BITWISE_OR, BITWISE_XOR, LEFT_SHIFT,
                RIGHT_SHIFT, ATAN2, HYPOT, LOGADDEXP, LOGADDEXP2)


def as_number(value: object) -> int | float | None:
    """A Python number from a Python or NumPy scalar (bools included), else None."""
    if isinstance(value, int | float):
        return value
    if isinstance(value, np.generic) and value.dtype.kind in "biuf":
        number: int | float = value.item()
        return number
    return None


def reflected(t: Tensor, other: object, spec: BinarySpec) -> Tensor:
    """``other <op> t`` for a Python number ``other`` (``__rsub__`` and the like)."""
    if not isinstance(other, int | float):
        return NotImplemented
    return binary_tensors(spec, scalar_like(t, other, spec.name), t)


def scalar_like(t: Tensor, value: Any, op: str) -> Tensor:
    """A 0-d tensor holding a Python number, of ``t``'s backend, device and a fitting dtype."""
    if t.kind is FLOAT or isinstance(value, float):
        dtype = t.dtype if t.kind is FLOAT else t.backend.float_dtype
    elif t.kind is BOOL and isinstance(value, bool):
        dtype = DType.bool_
    else:
        dtype = t.dtype if t.kind is INT else t.backend.int_dtype
        value = wrapped_int(value, dtype)
    return CreationOps.full((), value, backend=t.backend, device=t.device, dtype=dtype)


def binary_tensors(spec: BinarySpec, a: Tensor, other: Tensor) -> Tensor:
    """Two tensors: backends, kinds, promotion and broadcasting checked, then one backend op."""
    op = spec.name
    if a.kind is QUANTIZED or other.kind is QUANTIZED:
        # Arithmetic on quantized operands happens in float (Burn's rule); the result is
        # re-quantized only when an operand's scheme asks for propagation.
        result = binary_tensors(spec, dequantized(a), dequantized(other))
        return requantized(result, a, other) if result.kind is FLOAT else result
    b_t = other
    check_same_backend(op, a, b_t)
    b = a.backend
    if a.kind is BOOL or b_t.kind is BOOL:
        if a.kind is BOOL and b_t.kind is BOOL and spec.bool_op is not None:
            broadcast_shapes(op, a.shape, b_t.shape)
            return new(b, getattr(b, spec.bool_op)(a.primitive, b_t.primitive), BOOL)
        raise KindError(f"{op}: not defined for {a.kind} and {b_t.kind} tensors "
                        f"({a.dtype!r}, {b_t.dtype!r}); convert bools with .int() or .float()")
    if spec.name == "div" and a.kind is INT and b_t.kind is INT:
        a, b_t = a.float(), b_t.float()
    dtype = common_dtype(op, a, b_t)
    broadcast_shapes(op, a.shape, b_t.shape)
    if a.dtype is not dtype:
        a = a.cast(dtype)
    if b_t.dtype is not dtype:
        b_t = b_t.cast(dtype)
    p, q = a.primitive, b_t.primitive
    if a.kind is FLOAT:
        if spec.name == "floor_div":
            return new(b, b.float_floor(b.float_div(p, q)), FLOAT)
        if spec.float_op is None:
            raise KindError(f"{op}: not defined for float tensors ({dtype!r})")
        return new(b, getattr(b, spec.float_op)(p, q), spec.out_float)
    if spec.int_op is None:
        if spec.name == "pow":
            return int_pow(new(b, p, a.kind), new(b, q, b_t.kind))
        raise KindError(f"{op}: not defined for int tensors ({dtype!r}); use .float()")
    if spec.name in ("floor_div", "remainder"):
        _check_no_int_zero(op, b, q)
    return new(b, getattr(b, spec.int_op)(p, q), spec.out_int)


def binary_scalar(spec: BinarySpec, a: Tensor, value: int | float) -> Tensor:
    """A tensor and a Python number: the number takes the tensor's dtype where it fits."""
    op = spec.name
    b = a.backend
    if a.kind is QUANTIZED:
        result = binary_scalar(spec, a.dequantize(), value)
        return requantized(result, a) if result.kind is FLOAT else result
    if a.kind is BOOL:
        if spec.bool_op is not None and isinstance(value, bool):
            return binary_tensors(spec, a, scalar_like(a, value, op))
        raise KindError(f"{op}: not defined for a bool tensor and {type(value).__name__}; "
                        "convert with .int() or .float()")
    if a.kind is FLOAT:
        if spec.name == "floor_div":
            return new(b, b.float_floor(b.float_div_scalar(a.primitive, to_float(value))), FLOAT)
        if spec.float_scalar is None:
            return binary_tensors(spec, a, scalar_like(a, value, op))
        return new(b, getattr(b, spec.float_scalar)(a.primitive, to_float(value)),
                   spec.out_float)
    # int tensor
    if isinstance(value, float):
        if spec.returns_bool or spec.name == "div":
            return binary_scalar(spec, a.float(), value)
        raise DTypeError(f"{op}: cannot combine an int tensor ({a.dtype!r}) with the float "
                         f"{value!r}; cast with .float() first")
    value = as_int(value)
    if spec.name == "div":
        return binary_scalar(spec, a.float(), to_float(value))
    if spec.name == "pow":
        if value < 0:
            raise DTypeError(f"pow: an int tensor to a negative int power ({value}) is not an "
                             "int; use .float()")
        return new(b, b.int_powi_scalar(a.primitive, value), INT)
    if not spec.returns_bool:
        value = wrapped_int(value, a.dtype)
    if spec.name in ("floor_div", "remainder") and value == 0:
        raise DivisionByZeroError(f"{op}: integer division by zero")
    if spec.int_scalar is None:
        return binary_tensors(spec, a, scalar_like(a, value, op))
    return new(b, getattr(b, spec.int_scalar)(a.primitive, value), spec.out_int)


def wrapped_int(value: int, dtype: DType) -> int:
    """``value`` cast to the int ``dtype`` with C's wraparound (-1 is 255 for uint8), as torch
    casts a Python number meeting an int tensor in arithmetic and bitwise ops."""
    info = np.iinfo(dtype.numpy)
    if info.min <= value <= info.max:
        return value
    return (value - info.min) % (info.max - info.min + 1) + info.min


def all_false(t: Tensor) -> Tensor:
    """A bool tensor of ``t``'s shape, all False (isnan/isinf of an int or bool tensor)."""
    return CreationOps.full(t.shape, False, backend=t.backend, device=t.device)


def int_pow(base: Tensor, exponent: Tensor) -> Tensor:
    """Int tensors to int tensor powers, exactly (wrapping on overflow as torch's int64): square
    and multiply over the exponent's bits. Negative exponents are refused, as torch does."""
    if bool((exponent < 0).any()):
        raise InvalidArgumentError("pow: an int tensor cannot be raised to a negative int power")
    shape = broadcast_shapes("pow", base.shape, exponent.shape)
    result = base.ones_like().expand(shape)
    e = exponent
    while bool((e > 0).any()):
        result = (result * base).mask_where((e % 2) == 0, result)
        base = base * base
        e = e // 2
    return result


def _check_no_int_zero(op: str, b: type[Backend], q: Any) -> None:
    if bool(b.bool_into_data(b.int_any(b.int_equal_elem(q, 0))).array):
        raise DivisionByZeroError(f"{op}: integer division by zero")


def float_unary(t: Tensor, op: str, fn: UnaryOp) -> Tensor:
    """``fn`` on a float tensor's primitive; a KindError naming ``op`` for other kinds."""
    if t.kind is FLOAT:
        return new(t.backend, fn(t.primitive), FLOAT)
    raise _float_expected(t, op)


def signed_unary(t: Tensor, op: str, float_fn: UnaryOp, int_fn: UnaryOp) -> Tensor:
    """``float_fn`` or ``int_fn`` by ``t``'s kind (neg, abs, sign); bools are refused."""
    if t.kind is FLOAT:
        return new(t.backend, float_fn(t.primitive), FLOAT)
    if t.kind is INT:
        return new(t.backend, int_fn(t.primitive), INT)
    raise _float_expected(t, op)


def rounding(t: Tensor, op: str, fn: UnaryOp) -> Tensor:
    """``fn`` on a float tensor; an int tensor is already rounded and comes back as is."""
    if t.kind is FLOAT:
        return new(t.backend, fn(t.primitive), FLOAT)
    if t.kind is INT:
        return t
    raise _float_expected(t, op)


def require_float(t: Tensor, op: str) -> None:
    """A KindError naming ``op`` unless ``t`` is a float tensor."""
    if t.kind is not FLOAT:
        raise _float_expected(t, op)


def _float_expected(t: Tensor, op: str) -> KindError:
    return KindError(f"{op}: expects a float tensor, got {article(t.kind)} tensor "
                     f"({t.dtype!r}); convert with .float()")


def quantized_matmul(a: Tensor, c: Tensor) -> Tensor:
    """Matmul with a quantized operand: a float one is quantized dynamically with the other's
    scheme (blocks along the contracted dim), then the backend multiplies the integers."""
    op = "matmul"
    if a.ndim < 2 or c.ndim < 2 or a.shape[-1] != c.shape[-2]:
        raise ShapeError(f"{op}: quantized operands need [..., m, k] @ [..., k, n], got "
                         f"{describe(a.shape)} @ {describe(c.shape)}")
    if a.kind is not QUANTIZED:
        a = a.quantize(c.scheme)
    if c.kind is not QUANTIZED:
        c = c.mT.quantize(a.scheme).mT
    check_same_scheme(op, a, c)
    if a.ndim != c.ndim or a.shape[:-2] != c.shape[:-2]:
        raise ShapeError(f"{op}: quantized operands need equal batch dims, got "
                         f"{describe(a.shape)} @ {describe(c.shape)}")
    out = new(a.backend, a.backend.q_matmul(a.primitive, c.primitive), FLOAT)
    return requantized(out, a, c)


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


def cross(op: str, a: Tensor, b: Tensor, dim: int) -> Tensor:
    """The cross product of float 3-vectors along ``dim``, other dims broadcasting
    (``Tensor.cross``, ``burnpy.linalg.cross``)."""
    for t in (a, b):
        if not is_tensor(t) or t.kind is not FLOAT or t.dtype not in (DType.float32,
                                                                        DType.float64):
            what = t.dtype if is_tensor(t) else type(t).__name__
            raise UnsupportedDTypeError(f"{op}: expected a float32 or float64 tensor, got "
                                        f"{what!r}")
        if t.ndim < 1:
            raise ShapeError(f"{op}: expected at least 1 dims, got shape {describe(t.shape)}")
    if a.ndim != b.ndim:
        raise ShapeError(f"{op}: inputs need the same number of dims (as in torch), got "
                         f"shapes {describe(a.shape)} and {describe(b.shape)}")
    shape = broadcast_shapes(op, a.shape, b.shape)
    if shape[dim] != 3:
        raise ShapeError(f"{op}: dim {dim} must have size 3, got shapes {describe(a.shape)} "
                         f"and {describe(b.shape)}")
    x = a.expand(*shape) if a.shape != shape else a
    y = b.expand(*shape) if b.shape != shape else b
    a0, a1, a2 = (x.narrow(dim, i, 1) for i in range(3))
    b0, b1, b2 = (y.narrow(dim, i, 1) for i in range(3))
    return cat([a1 * b2 - a2 * b1, a2 * b0 - a0 * b2, a0 * b1 - a1 * b0], dim)


def _scaled(t: Tensor, factor: float) -> Tensor:
    return t if factor == 1 else t * factor


def added(op: str, base: Tensor, product: Tensor, beta: float, alpha: float) -> Tensor:
    """``beta * base + alpha * product``; ``beta=0`` ignores ``base`` (its NaNs too), as torch."""
    shape = broadcast_shapes(op, base.shape, product.shape)
    if shape != product.shape:
        raise ShapeError(f"{op}: input {describe(base.shape)} does not broadcast to the product's "
                         f"shape {describe(product.shape)}")
    if beta == 0:
        zero = CreationOps.zeros((), backend=product.backend, device=product.device,
                                 dtype=product.dtype)
        return _scaled(product, alpha) + zero.cast(base.dtype)
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


def kron(a: Tensor, b: Tensor) -> Tensor:
    """The Kronecker product: every element of ``a`` times a block of ``b``."""
    nd = max(a.ndim, b.ndim)
    sa = (1,) * (nd - a.ndim) + a.shape
    sb = (1,) * (nd - b.ndim) + b.shape
    ai = a.reshape(tuple(s for p in sa for s in (p, 1)))
    bi = b.reshape(tuple(s for p in sb for s in (1, p)))
    return (ai * bi).reshape(tuple(p * q for p, q in zip(sa, sb, strict=True)))


def operand(t: Tensor, other: Tensor | float, op: str) -> Tensor:
    """``other`` as a tensor of ``t``'s backend (a Python number takes ``t``'s dtype)."""
    if isinstance(other, TensorBase):
        return other
    if isinstance(other, bool | int | float):
        return scalar_like(t, other, op)
    raise InvalidArgumentError(f"{op}: expects a tensor or a number, got {type(other).__name__}")


def div_rounded(t: Tensor, other: Tensor | float, rounding_mode: str) -> Tensor:
    """torch's ``div`` with a ``rounding_mode``: "floor" is ``floor_div``; "trunc" rounds the
    true quotient toward zero, and between ints is C's integer division (an int result; an int
    division by zero is an error, as ``floor_div``'s)."""
    if rounding_mode not in ("trunc", "floor"):
        raise InvalidArgumentError(f"div: rounding_mode must be None, 'trunc' or 'floor', got "
                                   f"{rounding_mode!r}")
    kind = getattr(other, "kind", None)
    other_int = kind is not FLOAT if kind is not None else isinstance(other, int)
    if rounding_mode == "floor":
        # An int tensor by a Python float divides in the default float dtype, as torch's.
        return (t if other_int or kind is not None else t.float()).floor_div(other)
    if t.kind is FLOAT or not other_int:
        return (t / other).trunc()
    o = operand(t, other, "div")
    q = t.floor_div(o)
    # Floor went one below zero's side where the division is inexact and the signs differ.
    moved = (t.remainder(o) != 0) & ((t < 0) != (o < 0))
    return q.mask_where(moved, q + 1)


def _binary(a: Tensor, other: object, spec: BinarySpec) -> Tensor:
    """The operators' hot path: a tensor of the same backend and kind (same shape and dtype
    unless the backend is ``trusted_binary_ops``) or a Python number goes straight to the
    backend op; anything else takes the general path, which checks and names every rule."""
    b = a.backend
    kind = a.kind
    if type(other) is _core.TENSOR_CLASS:
        if other.backend is b and other.kind is kind:
            p, q = a.primitive, other.primitive
            if b.trusted_binary_ops:
                try:
                    if kind is FLOAT and spec.float_op is not None:
                        return new(b, getattr(b, spec.float_op)(p, q), spec.out_float)
                    # Mixed int dtypes meet by NumPy's rule only where it is torch's (uint16
                    # with int32 is an error there): the others take the general path.
                    if kind is INT and spec.int_fast_op is not None and (
                            p.dtype is q.dtype or p.dtype == q.dtype
                            or (p.dtype in NUMPY_PROMOTING_INTS
                                and q.dtype in NUMPY_PROMOTING_INTS)):
                        return new(b, getattr(b, spec.int_fast_op)(p, q), spec.out_int)
                except ValueError:
                    broadcast_shapes(spec.name, p.shape, q.shape)
                    raise
            elif (p.shape == q.shape and (p.dtype is q.dtype or p.dtype == q.dtype)
                  and (not b.multi_device or a.device == other.device)):
                if kind is FLOAT and spec.float_op is not None:
                    return new(b, getattr(b, spec.float_op)(p, q), spec.out_float)
                if kind is INT and spec.int_fast_op is not None:
                    return new(b, getattr(b, spec.int_fast_op)(p, q), spec.out_int)
        return binary_tensors(spec, a, other)
    cls = other.__class__
    if cls is float or cls is int:
        if kind is FLOAT and spec.float_scalar is not None:
            return new(b, getattr(b, spec.float_scalar)(a.primitive, other), spec.out_float)
        if (kind is INT and cls is int and spec.int_scalar is not None
                and spec.int_fast_op is not None):
            try:
                return new(b, getattr(b, spec.int_scalar)(a.primitive, other), spec.out_int)
            except OverflowError:  # a number outside the dtype: the general path wraps it
                pass
    elif is_tensor(other):  # a subclass of Tensor
        return binary_tensors(spec, a, other)
    number = as_number(other)
    if number is None:
        return NotImplemented
    return binary_scalar(spec, a, number)


class ArithmeticOps:
    """``Tensor``'s operators, comparisons, bitwise and binary math, and matrix products."""

    __slots__ = ()

    # Operators broadcast NumPy-style and take a tensor or a Python number on either side. Same
    # kinds meet at the promoted dtype; an int tensor with a float tensor is a DTypeError.
    def add(self: Tensor, other: Tensor | float, alpha: float = 1) -> Tensor:
        """Elementwise ``self + alpha * other`` (torch's ``alpha``, 1 by default)."""
        return _binary(self, other if alpha == 1 else other * alpha, ADD)

    __add__ = __radd__ = add

    def sub(self: Tensor, other: Tensor | float, alpha: float = 1) -> Tensor:
        """Elementwise ``self - alpha * other`` (torch's ``alpha``, 1 by default)."""
        return _binary(self, other if alpha == 1 else other * alpha, SUB)

    __sub__ = sub

    def __rsub__(self: Tensor, other: float) -> Tensor:
        """``other - self`` for a Python number ``other``."""
        return reflected(self, other, SUB)

    def mul(self: Tensor, other: Tensor | float) -> Tensor:
        """Elementwise ``self * other``."""
        return _binary(self, other, MUL)

    __mul__ = __rmul__ = mul

    def div(self: Tensor, other: Tensor | float, *,
            rounding_mode: Literal["trunc", "floor"] | None = None) -> Tensor:
        """Elementwise true division (int operands give a float result, as torch); with
        torch's ``rounding_mode`` the quotient rounded toward zero ("trunc") or down
        ("floor"), an int result between ints."""
        if rounding_mode is None:
            return _binary(self, other, DIV)
        return div_rounded(self, other, rounding_mode)

    def __truediv__(self: Tensor, other: Tensor | float) -> Tensor:
        """``self / other``: true division."""
        return _binary(self, other, DIV)

    def __rtruediv__(self: Tensor, other: float) -> Tensor:
        """``other / self`` for a Python number ``other``."""
        return reflected(self, other, DIV)

    def floor_div(self: Tensor, other: Tensor | float) -> Tensor:
        """Elementwise ``floor(self / other)``; an int division by zero is an error."""
        return _binary(self, other, FLOOR_DIV)

    __floordiv__ = floor_div

    def __rfloordiv__(self: Tensor, other: float) -> Tensor:
        """``other // self`` for a Python number ``other``."""
        return reflected(self, other, FLOOR_DIV)

    def remainder(self: Tensor, other: Tensor | float) -> Tensor:
        """Elementwise remainder with the sign of ``other`` (Python's ``%``)."""
        return _binary(self, other, REMAINDER)

    __mod__ = remainder

    def __rmod__(self: Tensor, other: float) -> Tensor:
        """``other % self`` for a Python number ``other``."""
        return reflected(self, other, REMAINDER)

    def pow(self: Tensor, other: Tensor | float) -> Tensor:
        """Elementwise ``self ** other``; an int tensor takes only non-negative int powers."""
        return _binary(self, other, POW)

    __pow__ = pow

    def __rpow__(self: Tensor, other: float) -> Tensor:
        """``other ** self`` for a Python number ``other``."""
        return reflected(self, other, POW)

    # Comparisons return bool tensors, as in NumPy and torch: ``==`` and ``!=`` override
    # object's, whose result is a bool, hence the two narrow ignores.
    def equal(self: Tensor, other: Tensor | float) -> Tensor:
        """Elementwise ``self == other`` as a bool tensor."""
        return _binary(self, other, EQUAL)

    eq = __eq__ = equal  # type: ignore[assignment]

    def not_equal(self: Tensor, other: Tensor | float) -> Tensor:
        """Elementwise ``self != other`` as a bool tensor."""
        return _binary(self, other, NOT_EQUAL)

    ne = __ne__ = not_equal  # type: ignore[assignment]

    def greater(self: Tensor, other: Tensor | float) -> Tensor:
        """Elementwise ``self > other`` as a bool tensor."""
        return _binary(self, other, GREATER)

    gt = __gt__ = greater

    def greater_equal(self: Tensor, other: Tensor | float) -> Tensor:
        """Elementwise ``self >= other`` as a bool tensor."""
        return _binary(self, other, GREATER_EQUAL)

    ge = __ge__ = greater_equal

    def lower(self: Tensor, other: Tensor | float) -> Tensor:
        """Elementwise ``self < other`` as a bool tensor (Burn's spelling of ``lt``)."""
        return _binary(self, other, LOWER)

    lt = __lt__ = lower

    def lower_equal(self: Tensor, other: Tensor | float) -> Tensor:
        """Elementwise ``self <= other`` as a bool tensor."""
        return _binary(self, other, LOWER_EQUAL)

    le = __le__ = lower_equal

    def bitwise_and(self: Tensor, other: Tensor | int) -> Tensor:
        """Elementwise ``&`` of int tensors, logical and of bool tensors."""
        return _binary(self, other, BITWISE_AND)

    __and__ = __rand__ = bitwise_and

    def bitwise_or(self: Tensor, other: Tensor | int) -> Tensor:
        """Elementwise ``|`` of int tensors, logical or of bool tensors."""
        return _binary(self, other, BITWISE_OR)

    __or__ = __ror__ = bitwise_or

    def bitwise_xor(self: Tensor, other: Tensor | int) -> Tensor:
        """Elementwise ``^`` of int tensors, logical xor of bool tensors."""
        return _binary(self, other, BITWISE_XOR)

    __xor__ = __rxor__ = bitwise_xor

    def bitwise_left_shift(self: Tensor, other: Tensor | int) -> Tensor:
        """Elementwise ``self << other`` of int tensors (torch.bitwise_left_shift)."""
        return _binary(self, other, LEFT_SHIFT)

    __lshift__ = bitwise_left_shift

    def __rlshift__(self: Tensor, other: int) -> Tensor:
        """``other << self`` for a Python int ``other``."""
        return reflected(self, other, LEFT_SHIFT)

    def bitwise_right_shift(self: Tensor, other: Tensor | int) -> Tensor:
        """Elementwise ``self >> other`` of int tensors (torch.bitwise_right_shift: signed ones
        keep their sign)."""
        return _binary(self, other, RIGHT_SHIFT)

    __rshift__ = bitwise_right_shift

    def __rrshift__(self: Tensor, other: int) -> Tensor:
        """``other >> self`` for a Python int ``other``."""
        return reflected(self, other, RIGHT_SHIFT)

    def atan2(self: Tensor, other: Tensor) -> Tensor:
        """Elementwise angle of the point ``(other, self)`` in radians, in [-pi, pi]."""
        return _binary(self, other, ATAN2)

    def hypot(self: Tensor, other: Tensor) -> Tensor:
        """Elementwise ``sqrt(self**2 + other**2)``, without overflow for large values."""
        return _binary(self, other, HYPOT)

    def logaddexp(self: Tensor, other: Tensor) -> Tensor:
        """Elementwise ``log(exp(self) + exp(other))``, without overflow."""
        return _binary(self, other, LOGADDEXP)

    def logaddexp2(self: Tensor, other: Tensor) -> Tensor:
        """Elementwise ``log2(2**self + 2**other)``, without overflow."""
        return _binary(self, other, LOGADDEXP2)

    def cross(self: Tensor, other: Tensor, dim: int | None = None) -> Tensor:
        """torch.cross: the cross product of 3-vectors along ``dim``; without ``dim``, the first
        dim of size 3 (torch's rule). ``burnpy.linalg.cross`` defaults to the last dim."""
        if dim is None:
            shape = broadcast_shapes("cross", self.shape, other.shape)
            dim = next((d for d, n in enumerate(shape) if n == 3), -1)
        return cross("linalg.cross", self, other, dim)

    @autocast_op("matmul")
    def matmul(self: Tensor, other: Tensor) -> Tensor:
        """Matrix product with torch's rules: 1-d operands, batched and broadcast batch dims."""
        op = "matmul"
        b = self.backend
        if (other.__class__ is self.__class__ and other.backend is b and self.kind is FLOAT
                and other.kind is FLOAT):
            p, q = self.primitive, other.primitive
            if b.trusted_binary_ops:
                # NumPy-style matmul raises ValueError on a shape mismatch: the general path
                # below then names the op and the shapes.
                if len(p.shape) == 2 and len(q.shape) == 2:
                    try:
                        return new(b, b.float_matmul(p, q), FLOAT)
                    except ValueError:
                        pass
            elif not b.multi_device:
                ps, qs = p.shape, q.shape
                if (len(ps) == 2 and len(qs) == 2 and ps[1] == qs[0]
                        and (p.dtype is q.dtype or p.dtype == q.dtype)):
                    return new(b, b.float_matmul(p, q), FLOAT)
        elif not isinstance(other, TensorBase):
            return NotImplemented
        check_same_backend(op, self, other)
        a, c = self, other
        if QUANTIZED in (a.kind, c.kind):
            return quantized_matmul(a, c)
        if a.kind not in (FLOAT, INT) or c.kind is not a.kind:
            raise KindError(f"{op}: expects two float or two int tensors, got {a.kind} "
                            f"({a.dtype!r}) and {c.kind} ({c.dtype!r})")
        if a.ndim == 0 or c.ndim == 0:
            raise ShapeError(f"{op}: both operands need at least 1 dim, got shapes "
                             f"{describe(a.shape)} and {describe(c.shape)}")
        dtype = common_dtype(op, a, c)
        a, c = a.cast(dtype), c.cast(dtype)
        squeeze_a, squeeze_c = a.ndim == 1, c.ndim == 1
        if squeeze_a:
            a = a.reshape(1, a.shape[0])
        if squeeze_c:
            c = c.reshape(c.shape[0], 1)
        if a.shape[-1] != c.shape[-2]:
            raise ShapeError(f"{op}: inner dims differ: {describe(self.shape)} @ "
                             f"{describe(other.shape)} ({a.shape[-1]} vs {c.shape[-2]})")
        batch = broadcast_shapes(op, a.shape[:-2], c.shape[:-2])
        nd = len(batch) + 2
        if a.ndim != nd:
            a = a.reshape((1,) * (nd - a.ndim) + a.shape)
        if c.ndim != nd:
            c = c.reshape((1,) * (nd - c.ndim) + c.shape)
        fn = b.float_matmul if a.kind is FLOAT else b.int_matmul
        out = new(b, fn(a.primitive, c.primitive), a.kind)
        if squeeze_a and squeeze_c:
            return out.reshape(out.shape[:-2])
        if squeeze_a:
            return out.reshape(out.shape[:-2] + out.shape[-1:])
        if squeeze_c:
            return out.reshape(out.shape[:-1])
        return out

    __matmul__ = matmul

    def __rmatmul__(self: Tensor, other: object) -> Tensor:
        """Only tensors multiply tensors: a NumPy array or list on the left is refused."""
        return NotImplemented

    def true_divide(self: Tensor, other: Tensor | float) -> Tensor:
        """True division (an alias of ``div``)."""
        return self.div(other)

    def float_power(self: Tensor, exponent: Tensor | float) -> Tensor:
        """``self ** exponent`` computed and returned in float64, as torch's."""
        base = self.cast(DType.float64)
        if isinstance(exponent, TensorBase):
            return base.pow(exponent.cast(DType.float64))
        return base.pow(float(exponent))

    def rsub(self: Tensor, other: Tensor | float, alpha: float = 1) -> Tensor:
        """``other - alpha * self``."""
        return operand(self, other, "rsub") - self * alpha

    @autocast_op("mm")
    def mm(self: Tensor, mat2: Tensor) -> Tensor:
        """The product of two matrices."""
        return mm(self, mat2)

    @autocast_op("bmm")
    def bmm(self: Tensor, mat2: Tensor) -> Tensor:
        """Batched products of two 3-d tensors with the same batch size."""
        return bmm(self, mat2)

    @autocast_op("mv")
    def mv(self: Tensor, vec: Tensor) -> Tensor:
        """A matrix times a vector."""
        return mv(self, vec)

    @autocast_op("dot")
    def dot(self: Tensor, other: Tensor) -> Tensor:
        """The dot product of two 1-d tensors of one dtype."""
        return dot(self, other)

    @autocast_op("outer")
    def outer(self: Tensor, vec2: Tensor) -> Tensor:
        """``self[i] * vec2[j]`` for two 1-d tensors."""
        return outer(self, vec2)

    @autocast_op("kron")
    def kron(self: Tensor, other: Tensor) -> Tensor:
        """The Kronecker product."""
        return kron(self, other)

    @autocast_op("addmm")
    def addmm(self: Tensor, mat1: Tensor, mat2: Tensor, *, beta: float = 1,
              alpha: float = 1) -> Tensor:
        """``beta * self + alpha * (mat1 @ mat2)``."""
        return added("addmm", self, mm(mat1, mat2, "addmm"), beta, alpha)

    @autocast_op("baddbmm")
    def baddbmm(self: Tensor, batch1: Tensor, batch2: Tensor, *, beta: float = 1,
                alpha: float = 1) -> Tensor:
        """``beta * self + alpha * bmm(batch1, batch2)``."""
        return added("baddbmm", self, bmm(batch1, batch2, "baddbmm"), beta,
                               alpha)

    @autocast_op("addbmm")
    def addbmm(self: Tensor, batch1: Tensor, batch2: Tensor, *, beta: float = 1,
               alpha: float = 1) -> Tensor:
        """``beta * self + alpha * sum_i batch1[i] @ batch2[i]``."""
        return addbmm(self, batch1, batch2, beta, alpha)

    @autocast_op("addmv")
    def addmv(self: Tensor, mat: Tensor, vec: Tensor, *, beta: float = 1,
              alpha: float = 1) -> Tensor:
        """``beta * self + alpha * (mat @ vec)``."""
        return added("addmv", self, mv(mat, vec, "addmv"), beta, alpha)

    @autocast_op("addr")
    def addr(self: Tensor, vec1: Tensor, vec2: Tensor, *, beta: float = 1,
             alpha: float = 1) -> Tensor:
        """``beta * self + alpha * outer(vec1, vec2)``."""
        return added("addr", self, outer(vec1, vec2), beta, alpha)
