"""Tensor operators and elementwise math: validation once, then one backend op.

The operator methods have a fast path (same backend, kind, dtype and shape) that costs a few
attribute reads before the backend call; everything else takes ``_binary_slow``, which
promotes dtypes, checks broadcasting and kinds, and names the op in every error.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING, Any

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
    PY_NUMBER,
    QUANTIZED,
    check_same_backend,
    common_dtype,
    new,
)
from burnpy.tensor.checks import broadcast_shapes, normalize_dim
from burnpy.tensor.quantized import check_same_scheme, dequantized, requantized

if TYPE_CHECKING:
    from burnpy.tensor.tensor import Tensor


class _BinarySpec:
    """The backend ops one Python operator maps to, per kind."""

    __slots__ = (
        "bool_op",
        "commutative",
        "float_op",
        "float_scalar",
        "int_op",
        "int_scalar",
        "name",
        "returns_bool",
    )

    def __init__(self, name: str, float_op: str | None, float_scalar: str | None,
                 int_op: str | None, int_scalar: str | None, bool_op: str | None = None,
                 returns_bool: bool = False, commutative: bool = False) -> None:
        self.name = name
        self.float_op, self.float_scalar = float_op, float_scalar
        self.int_op, self.int_scalar = int_op, int_scalar
        self.bool_op = bool_op
        self.returns_bool = returns_bool
        self.commutative = commutative


def _cmp(name: str, bool_op: str | None = None) -> _BinarySpec:
    return _BinarySpec(name, f"float_{name}", f"float_{name}_elem", f"int_{name}",
                       f"int_{name}_elem", bool_op, returns_bool=True)


_SPECS = {
    "add": _BinarySpec("add", "float_add", "float_add_scalar", "int_add", "int_add_scalar",
                       commutative=True),
    "sub": _BinarySpec("sub", "float_sub", "float_sub_scalar", "int_sub", "int_sub_scalar"),
    "mul": _BinarySpec("mul", "float_mul", "float_mul_scalar", "int_mul", "int_mul_scalar",
                       commutative=True),
    "div": _BinarySpec("div", "float_div", "float_div_scalar", None, None),
    "floor_div": _BinarySpec("floor_div", None, None, "int_div", "int_div_scalar"),
    "remainder": _BinarySpec("remainder", "float_remainder", "float_remainder_scalar",
                             "int_remainder", "int_remainder_scalar"),
    "pow": _BinarySpec("pow", "float_powf", "float_powf_scalar", None, "int_powi_scalar"),
    "equal": _cmp("equal", "bool_equal"),
    "not_equal": _cmp("not_equal", "bool_not_equal"),
    "greater": _cmp("greater"),
    "greater_equal": _cmp("greater_equal"),
    "lower": _cmp("lower"),
    "lower_equal": _cmp("lower_equal"),
    "bitwise_and": _BinarySpec("bitwise_and", None, None, "int_bitwise_and", None, "bool_and",
                               commutative=True),
    "bitwise_or": _BinarySpec("bitwise_or", None, None, "int_bitwise_or", None, "bool_or",
                              commutative=True),
    "bitwise_xor": _BinarySpec("bitwise_xor", None, None, "int_bitwise_xor", None, "bool_xor",
                               commutative=True),
    "atan2": _BinarySpec("atan2", "float_atan2", None, None, None),
}


def _make_binary(spec: _BinarySpec) -> Callable[[Tensor, Any], Tensor]:
    float_op, float_scalar, int_op = spec.float_op, spec.float_scalar, spec.int_op
    int_scalar = spec.int_scalar
    out_float = BOOL if spec.returns_bool else FLOAT
    out_int = BOOL if spec.returns_bool else INT
    int_fast = int_op is not None and spec.name not in ("floor_div", "remainder")

    def method(self: Tensor, other: Any) -> Tensor:
        b = self.backend
        kind = self.kind
        cls = other.__class__
        if cls is self.__class__:
            if other.backend is b and other.kind is kind:
                p, q = self.primitive, other.primitive
                if b.trusted_binary_ops:
                    try:
                        if kind is FLOAT and float_op is not None:
                            return new(b, getattr(b, float_op)(p, q), out_float)
                        if kind is INT and int_fast:
                            return new(b, getattr(b, int_op)(p, q), out_int)
                    except ValueError:
                        broadcast_shapes(spec.name, p.shape, q.shape)
                        raise
                elif (p.shape == q.shape and (p.dtype is q.dtype or p.dtype == q.dtype)
                      and (not b.multi_device or self.device == other.device)):
                    if kind is FLOAT and float_op is not None:
                        return new(b, getattr(b, float_op)(p, q), out_float)
                    if kind is INT and int_fast:
                        return new(b, getattr(b, int_op)(p, q), out_int)
        elif cls is float or cls is int:
            if kind is FLOAT and float_scalar is not None:
                return new(b, getattr(b, float_scalar)(self.primitive, other), out_float)
            if kind is INT and cls is int and int_scalar is not None and int_fast:
                return new(b, getattr(b, int_scalar)(self.primitive, other), out_int)
        return _binary_slow(spec, self, other)

    method.__name__ = spec.name
    method.__doc__ = f"Elementwise {spec.name} with broadcasting (a tensor or a Python number)."
    return method


def _make_reflected(spec: _BinarySpec) -> Callable[[Tensor, Any], Tensor]:
    forward = _make_binary(spec)

    def method(self: Tensor, other: Any) -> Tensor:
        if spec.commutative:
            return forward(self, other)
        if not isinstance(other, PY_NUMBER):
            return NotImplemented
        return _binary_slow(spec, _scalar_like(self, other, spec.name), self)

    method.__name__ = "r" + spec.name
    return method


def _scalar_like(t: Tensor, value: Any, op: str) -> Tensor:
    """A 0-d tensor holding a Python number, of ``t``'s backend, device and a fitting dtype."""
    from burnpy.tensor.tensor import Tensor

    if t.kind is FLOAT or isinstance(value, float):
        dtype = t.dtype if t.kind is FLOAT else t.backend.float_dtype
    elif t.kind is BOOL and isinstance(value, bool):
        dtype = DType.bool_
    else:
        dtype = t.dtype if t.kind is INT else t.backend.int_dtype
    return Tensor.full((), value, backend=t.backend, device=t.device, dtype=dtype)


def _binary_slow(spec: _BinarySpec, a: Tensor, other: Any) -> Tensor:
    """The general path: scalars of any type, promotion, broadcasting and kind rules."""
    op = spec.name
    if a.kind is QUANTIZED or getattr(other, "kind", None) is QUANTIZED:
        # Arithmetic on quantized operands happens in float (Burn's rule); the result is
        # re-quantized only when an operand's scheme asks for propagation.
        result = _binary_slow(spec, dequantized(a), dequantized(other))
        return requantized(result, a, other) if result.kind is FLOAT else result
    if isinstance(other, PY_NUMBER) or _is_numpy_scalar(other):
        return _binary_scalar(spec, a, other)
    if not hasattr(other, "primitive"):
        return NotImplemented  # type: ignore[return-value]
    b_t: Tensor = other
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
        return new(b, getattr(b, spec.float_op)(p, q), BOOL if spec.returns_bool else FLOAT)
    if spec.int_op is None:
        if spec.name == "pow":
            raise KindError(f"{op}: an int tensor exponent is not supported; use .float()")
        raise KindError(f"{op}: not defined for int tensors ({dtype!r}); use .float()")
    if spec.name in ("floor_div", "remainder"):
        _check_no_int_zero(op, b, q)
    return new(b, getattr(b, spec.int_op)(p, q), BOOL if spec.returns_bool else INT)


def _binary_scalar(spec: _BinarySpec, a: Tensor, value: Any) -> Tensor:
    op = spec.name
    b = a.backend
    value = value.item() if _is_numpy_scalar(value) else value
    if a.kind is BOOL:
        if spec.bool_op is not None and isinstance(value, bool):
            return _binary_slow(spec, a, _scalar_like(a, value, op))
        raise KindError(f"{op}: not defined for a bool tensor and {type(value).__name__}; "
                        "convert with .int() or .float()")
    if a.kind is FLOAT:
        if spec.name == "floor_div":
            return new(b, b.float_floor(b.float_div_scalar(a.primitive, float(value))), FLOAT)
        if spec.float_scalar is None:
            return _binary_slow(spec, a, _scalar_like(a, value, op))
        return new(b, getattr(b, spec.float_scalar)(a.primitive, float(value)),
                   BOOL if spec.returns_bool else FLOAT)
    # int tensor
    if isinstance(value, float):
        if spec.returns_bool or spec.name == "div":
            return _binary_slow(spec, a.float(), value)
        raise DTypeError(f"{op}: cannot combine an int tensor ({a.dtype!r}) with the float "
                         f"{value!r}; cast with .float() first")
    value = int(value)
    if spec.name == "div":
        return _binary_slow(spec, a.float(), float(value))
    if spec.name == "pow":
        if value < 0:
            raise DTypeError(f"pow: an int tensor to a negative int power ({value}) is not an "
                             "int; use .float()")
        return new(b, b.int_powi_scalar(a.primitive, value), INT)
    if spec.name in ("floor_div", "remainder") and value == 0:
        raise DivisionByZeroError(f"{op}: integer division by zero")
    if spec.int_scalar is None:
        return _binary_slow(spec, a, _scalar_like(a, value, op))
    return new(b, getattr(b, spec.int_scalar)(a.primitive, value),
               BOOL if spec.returns_bool else INT)


def _all_false(t: Tensor) -> Tensor:
    """A bool tensor of ``t``'s shape, all False (isnan/isinf of an int or bool tensor)."""
    from burnpy.tensor.tensor import Tensor

    return Tensor.full(t.shape, False, backend=t.backend, device=t.device)


def _check_no_int_zero(op: str, b: Any, q: Any) -> None:
    if bool(b.bool_into_data(b.int_any(b.int_equal_elem(q, 0))).array):
        raise DivisionByZeroError(f"{op}: integer division by zero")


def _is_numpy_scalar(value: Any) -> bool:
    import numpy as np

    return isinstance(value, np.generic) and value.dtype.kind in "biuf"


def _make_unary(op: str, *, ints: str | None = None, int_identity: bool = False,
                doc: str = "") -> Callable[[Tensor], Tensor]:
    """A float elementwise method; ``ints`` names the int op when ints are accepted."""
    float_op = f"float_{op}"

    def method(self: Tensor) -> Tensor:
        kind = self.kind
        if kind is FLOAT:
            return new(self.backend, getattr(self.backend, float_op)(self.primitive), FLOAT)
        if kind is INT and ints is not None:
            return new(self.backend, getattr(self.backend, ints)(self.primitive), INT)
        if kind is INT and int_identity:
            return self
        raise KindError(f"{op}: expects a float tensor, got {article(kind)} tensor "
                        f"({self.dtype!r}); convert with .float()")

    method.__name__ = op
    method.__doc__ = doc or f"Elementwise {op}."
    return method


def _make_activation(op: str, doc: str) -> Callable[..., Tensor]:
    def method(self: Tensor, *args: Any) -> Tensor:
        _require_float(self, op)
        return new(self.backend, getattr(self.backend, op)(self.primitive, *args), FLOAT)

    method.__name__ = op
    method.__doc__ = doc
    return method


def _require_float(t: Tensor, op: str) -> None:
    if t.kind is not FLOAT:
        raise KindError(f"{op}: expects a float tensor, got {article(t.kind)} tensor "
                        f"({t.dtype!r}); convert with .float()")


class ArithmeticOps:
    """Operators and elementwise math, mixed into Tensor."""

    __slots__ = ()

    add = __add__ = _make_binary(_SPECS["add"])
    __radd__ = _make_reflected(_SPECS["add"])
    sub = __sub__ = _make_binary(_SPECS["sub"])
    __rsub__ = _make_reflected(_SPECS["sub"])
    mul = __mul__ = _make_binary(_SPECS["mul"])
    __rmul__ = _make_reflected(_SPECS["mul"])
    div = __truediv__ = _make_binary(_SPECS["div"])
    __rtruediv__ = _make_reflected(_SPECS["div"])
    floor_div = __floordiv__ = _make_binary(_SPECS["floor_div"])
    __rfloordiv__ = _make_reflected(_SPECS["floor_div"])
    remainder = __mod__ = _make_binary(_SPECS["remainder"])
    __rmod__ = _make_reflected(_SPECS["remainder"])
    pow = __pow__ = _make_binary(_SPECS["pow"])
    __rpow__ = _make_reflected(_SPECS["pow"])
    equal = eq = __eq__ = _make_binary(_SPECS["equal"])  # type: ignore[assignment]
    not_equal = ne = __ne__ = _make_binary(_SPECS["not_equal"])  # type: ignore[assignment]
    greater = gt = __gt__ = _make_binary(_SPECS["greater"])
    greater_equal = ge = __ge__ = _make_binary(_SPECS["greater_equal"])
    lower = lt = __lt__ = _make_binary(_SPECS["lower"])
    lower_equal = le = __le__ = _make_binary(_SPECS["lower_equal"])
    bitwise_and = __and__ = _make_binary(_SPECS["bitwise_and"])
    __rand__ = _make_reflected(_SPECS["bitwise_and"])
    bitwise_or = __or__ = _make_binary(_SPECS["bitwise_or"])
    __ror__ = _make_reflected(_SPECS["bitwise_or"])
    bitwise_xor = __xor__ = _make_binary(_SPECS["bitwise_xor"])
    __rxor__ = _make_reflected(_SPECS["bitwise_xor"])
    atan2 = _make_binary(_SPECS["atan2"])

    neg = __neg__ = _make_unary("neg", ints="int_neg")
    abs = __abs__ = _make_unary("abs", ints="int_abs")
    sign = _make_unary("sign", ints="int_sign")
    exp = _make_unary("exp")
    expm1 = _make_unary("expm1")
    log = _make_unary("log")
    log1p = _make_unary("log1p")
    sqrt = _make_unary("sqrt")
    square = _make_unary("square", doc="x * x.")
    recip = reciprocal = _make_unary("recip", doc="1 / x.")
    sin = _make_unary("sin")
    cos = _make_unary("cos")
    tan = _make_unary("tan")
    asin = arcsin = _make_unary("asin")
    acos = arccos = _make_unary("acos")
    atan = arctan = _make_unary("atan")
    sinh = _make_unary("sinh")
    cosh = _make_unary("cosh")
    tanh = _make_unary("tanh")
    asinh = arcsinh = _make_unary("asinh")
    acosh = arccosh = _make_unary("acosh")
    atanh = arctanh = _make_unary("atanh")
    erf = _make_unary("erf")
    round = _make_unary("round", int_identity=True, doc="Round half to even.")
    floor = _make_unary("floor", int_identity=True)
    ceil = _make_unary("ceil", int_identity=True)
    trunc = _make_unary("trunc", int_identity=True)

    relu = _make_activation("relu", "max(x, 0).")
    sigmoid = _make_activation("sigmoid", "1 / (1 + exp(-x)), stable for large |x|.")
    log_sigmoid = _make_activation("log_sigmoid", "log(sigmoid(x)), stable.")
    silu = _make_activation("silu", "x * sigmoid(x).")

    def __invert__(self: Tensor) -> Tensor:
        b = self.backend
        if self.kind is BOOL:
            return new(b, b.bool_not(self.primitive), BOOL)
        if self.kind is INT:
            return new(b, b.int_bitwise_not(self.primitive), INT)
        raise KindError(f"~: expects a bool or int tensor, got {self.kind} ({self.dtype!r})")

    logical_not = __invert__

    def __pos__(self: Tensor) -> Tensor:
        return self

    def rsqrt(self: Tensor) -> Tensor:
        """1 / sqrt(x)."""
        return self.sqrt().recip()

    def gelu(self: Tensor, approximate: str = "none") -> Tensor:
        """x * Phi(x); ``approximate="tanh"`` for the tanh form."""
        _require_float(self, "gelu")
        if approximate not in ("none", "tanh"):
            raise InvalidArgumentError(
                f"gelu: approximate must be 'none' or 'tanh', got {approximate!r}")
        return new(self.backend, self.backend.gelu(self.primitive, approximate), FLOAT)

    def leaky_relu(self: Tensor, negative_slope: float = 0.01) -> Tensor:
        _require_float(self, "leaky_relu")
        return new(self.backend, self.backend.leaky_relu(self.primitive, float(negative_slope)),
                   FLOAT)

    def hard_sigmoid(self: Tensor, alpha: float = 1 / 6, beta: float = 0.5) -> Tensor:
        _require_float(self, "hard_sigmoid")
        return new(self.backend, self.backend.hard_sigmoid(self.primitive, alpha, beta), FLOAT)

    def softplus(self: Tensor, beta: float = 1.0) -> Tensor:
        _require_float(self, "softplus")
        return new(self.backend, self.backend.softplus(self.primitive, float(beta)), FLOAT)

    def softmax(self: Tensor, dim: int) -> Tensor:
        """exp(x) normalized along ``dim``."""
        _require_float(self, "softmax")
        d = normalize_dim("softmax", dim, self.ndim)
        return new(self.backend, self.backend.softmax(self.primitive, d), FLOAT)

    def log_softmax(self: Tensor, dim: int) -> Tensor:
        """x - logsumexp(x) along ``dim``."""
        _require_float(self, "log_softmax")
        d = normalize_dim("log_softmax", dim, self.ndim)
        return new(self.backend, self.backend.log_softmax(self.primitive, d), FLOAT)

    def clamp(self: Tensor, min: float | None = None, max: float | None = None) -> Tensor:
        """Limit values to [min, max]; either bound may be omitted."""
        if min is None and max is None:
            raise InvalidArgumentError("clamp: give at least one of min and max")
        b = self.backend
        if self.kind is FLOAT:
            lo = None if min is None else float(min)
            hi = None if max is None else float(max)
            if lo is not None and hi is None:
                return new(b, b.float_clamp_min(self.primitive, lo), FLOAT)
            if hi is not None and lo is None:
                return new(b, b.float_clamp_max(self.primitive, hi), FLOAT)
            return new(b, b.float_clamp(self.primitive, lo, hi), FLOAT)
        if self.kind is INT:
            if isinstance(min, float) or isinstance(max, float):
                raise DTypeError("clamp: float bounds for an int tensor; use .float() first")
            return new(b, b.int_clamp(self.primitive, min, max), INT)
        raise KindError(f"clamp: expects a float or int tensor, got {self.kind}")

    clip = clamp

    def clamp_min(self: Tensor, min: float) -> Tensor:
        return self.clamp(min=min)

    def clamp_max(self: Tensor, max: float) -> Tensor:
        return self.clamp(max=max)

    def maximum(self: Tensor, other: Tensor) -> Tensor:
        """Elementwise max of two tensors (NaN propagates, as torch.maximum)."""
        take_other = (other > self) | other.isnan() if self.kind is FLOAT else other > self
        return self.mask_where(take_other, other)

    def minimum(self: Tensor, other: Tensor) -> Tensor:
        """Elementwise min of two tensors (NaN propagates, as torch.minimum)."""
        take_other = (other < self) | other.isnan() if self.kind is FLOAT else other < self
        return self.mask_where(take_other, other)

    def isnan(self: Tensor) -> Tensor:
        if self.kind is not FLOAT:
            return _all_false(self)
        return new(self.backend, self.backend.float_is_nan(self.primitive), BOOL)

    is_nan = isnan

    def isinf(self: Tensor) -> Tensor:
        if self.kind is not FLOAT:
            return _all_false(self)
        return new(self.backend, self.backend.float_is_inf(self.primitive), BOOL)

    is_inf = isinf

    def isfinite(self: Tensor) -> Tensor:
        return ~(self.isnan() | self.isinf())

    def mask_where(self: Tensor, mask: Tensor, value: Tensor) -> Tensor:
        """``value`` where ``mask`` is true, else ``self`` (Burn's ``mask_where``; broadcasts)."""
        op = "mask_where"
        if mask.kind is not BOOL:
            raise KindError(f"{op}: the mask must be a bool tensor, got {mask.kind}")
        check_same_backend(op, self, mask)
        check_same_backend(op, self, value)
        if value.kind is not self.kind:
            raise DTypeError(f"{op}: value is {value.kind} ({value.dtype!r}) but the tensor is "
                             f"{self.kind} ({self.dtype!r})")
        shape = broadcast_shapes(op, broadcast_shapes(op, self.shape, mask.shape), value.shape)
        b = self.backend
        t, v = self, value
        if t.kind is not BOOL:
            dtype = common_dtype(op, t, v)
            t, v = t.cast(dtype), v.cast(dtype)
        if t.shape != shape:
            t = t.expand(shape)
        fn = {FLOAT: b.float_mask_where, INT: b.int_mask_where, BOOL: b.bool_mask_where}[t.kind]
        return new(b, fn(t.primitive, mask.primitive, v.primitive), t.kind)

    def mask_fill(self: Tensor, mask: Tensor, value: float) -> Tensor:
        """``value`` where ``mask`` is true, else ``self`` (torch's ``masked_fill``)."""
        op = "mask_fill"
        if mask.kind is not BOOL:
            raise KindError(f"{op}: the mask must be a bool tensor, got {mask.kind}")
        check_same_backend(op, self, mask)
        shape = broadcast_shapes(op, self.shape, mask.shape)
        t = self if self.shape == shape else self.expand(shape)
        b = self.backend
        if t.kind is FLOAT:
            return new(b, b.float_mask_fill(t.primitive, mask.primitive, float(value)), FLOAT)
        if t.kind is INT:
            if isinstance(value, float):
                raise DTypeError(f"{op}: float value {value!r} for an int tensor")
            return new(b, b.int_mask_fill(t.primitive, mask.primitive, int(value)), INT)
        return t.mask_where(mask, _scalar_like(t, bool(value), op).expand(shape))

    masked_fill = mask_fill

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
        elif not hasattr(other, "primitive"):
            return NotImplemented  # type: ignore[return-value]
        check_same_backend(op, self, other)
        a, c = self, other
        if QUANTIZED in (a.kind, c.kind):
            return _quantized_matmul(a, c)
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

    def __rmatmul__(self: Tensor, other: Any) -> Tensor:
        return NotImplemented  # type: ignore[return-value]


def _quantized_matmul(a: Tensor, c: Tensor) -> Tensor:
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
