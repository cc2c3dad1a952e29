"""Operators and elementwise math of Tensor: the op tables and the general (slow) paths.

``Tensor``'s operator methods take a fast path first (same backend, kind, dtype and shape, or
a Python number) that costs a few attribute reads before the backend call; everything else
comes here: ``binary_tensors`` and ``binary_scalar`` promote dtypes, check broadcasting and
kinds, and name the op in every error.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING, Any

import numpy as np

from burnpy.backend.dtype import DType
from burnpy.backend.errors import (
    DivisionByZeroError,
    DTypeError,
    InvalidArgumentError,
    KindError,
    ShapeError,
    article,
    describe,
)
from burnpy.tensor._core import (
    BOOL,
    FLOAT,
    INT,
    QUANTIZED,
    check_same_backend,
    common_dtype,
    new,
)
from burnpy.tensor.checks import broadcast_shapes
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
ATAN2 = BinarySpec("atan2", "float_atan2", None, None, None)
HYPOT = BinarySpec("hypot", "float_hypot", None, None, None)
LOGADDEXP = BinarySpec("logaddexp", "float_logaddexp", None, None, None)
LOGADDEXP2 = BinarySpec("logaddexp2", "float_logaddexp2", None, None, None)

#: Every operator's table entry, for the checks that each named op exists.
BINARY_SPECS = (ADD, SUB, MUL, DIV, FLOOR_DIV, REMAINDER, POW, EQUAL, NOT_EQUAL, GREATER,
                GREATER_EQUAL, LOWER, LOWER_EQUAL, BITWISE_AND, BITWISE_OR, BITWISE_XOR, ATAN2,
                HYPOT, LOGADDEXP, LOGADDEXP2)


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
    from burnpy.tensor.tensor import Tensor

    if t.kind is FLOAT or isinstance(value, float):
        dtype = t.dtype if t.kind is FLOAT else t.backend.float_dtype
    elif t.kind is BOOL and isinstance(value, bool):
        dtype = DType.bool_
    else:
        dtype = t.dtype if t.kind is INT else t.backend.int_dtype
    return Tensor.full((), value, backend=t.backend, device=t.device, dtype=dtype)


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
            return new(b, b.float_floor(b.float_div_scalar(a.primitive, float(value))), FLOAT)
        if spec.float_scalar is None:
            return binary_tensors(spec, a, scalar_like(a, value, op))
        return new(b, getattr(b, spec.float_scalar)(a.primitive, float(value)), spec.out_float)
    # int tensor
    if isinstance(value, float):
        if spec.returns_bool or spec.name == "div":
            return binary_scalar(spec, a.float(), value)
        raise DTypeError(f"{op}: cannot combine an int tensor ({a.dtype!r}) with the float "
                         f"{value!r}; cast with .float() first")
    value = int(value)
    if spec.name == "div":
        return binary_scalar(spec, a.float(), float(value))
    if spec.name == "pow":
        if value < 0:
            raise DTypeError(f"pow: an int tensor to a negative int power ({value}) is not an "
                             "int; use .float()")
        return new(b, b.int_powi_scalar(a.primitive, value), INT)
    if spec.name in ("floor_div", "remainder") and value == 0:
        raise DivisionByZeroError(f"{op}: integer division by zero")
    if spec.int_scalar is None:
        return binary_tensors(spec, a, scalar_like(a, value, op))
    return new(b, getattr(b, spec.int_scalar)(a.primitive, value), spec.out_int)


def all_false(t: Tensor) -> Tensor:
    """A bool tensor of ``t``'s shape, all False (isnan/isinf of an int or bool tensor)."""
    from burnpy.tensor.tensor import Tensor

    return Tensor.full(t.shape, False, backend=t.backend, device=t.device)


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
