"""The IR of a fused group: what ``Fusion`` hands to a backend's fuser.

A group is a straight-line program over one broadcast ``shape``. Its values are read through
``Ref``s: ``Ref("input", i)`` is the group's i-th input tensor (broadcast to ``shape`` by
NumPy's rules: shapes right-aligned, size-1 dims stretched), ``Ref("scalar", i)`` is the i-th
runtime scalar (a Python number, converted to ``FusedGroup.scalars[i]``), ``Ref("local", j)``
is the result of ``ops[j]``. Every local has the group's full ``shape`` and its op's dtype.
At most one ``Reduction`` closes the group; it reads an input or a local. The group returns
the locals named in ``outputs`` (those a live handle or a later group still needs; the others
are never written) and then the reduction's result, if any.

Groups carry no values and no tensor ids, only structure, so a ``FusedGroup`` is hashable
and equal groups share one compiled kernel: that is the plan cache's key.

The vocabulary (``ELEMENTWISE`` and ``REDUCTIONS``) gives every op's exact meaning; a fuser
implements it per dtype and states what it accepts (see ``burnpy.fusion.fuser``).
``FUSABLE`` maps the protocol ops that ``Fusion`` records to the vocabulary.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal, NamedTuple

from burnpy.backend.dtype import DType
from burnpy.backend.primitives import Shape
from burnpy.ir.desc import TensorDesc

RefKind = Literal["input", "scalar", "local"]


@dataclass(frozen=True, slots=True)
class Ref:
    """Where an operand comes from: the group's input, runtime scalar or local ``index``."""

    kind: RefKind
    index: int


class FusedOp(NamedTuple):
    """One elementwise op: ``name`` (a key of ``ELEMENTWISE``) applied to ``operands``; its
    result, a local of the group's shape, has element type ``dtype``."""

    name: str
    operands: tuple[Ref, ...]
    dtype: DType


class Reduction(NamedTuple):
    """The op closing a group: ``name`` (a key of ``REDUCTIONS``) of ``operand`` over every
    element (``dim`` None, result shape ``()``) or along ``dim`` (kept with size 1)."""

    name: str
    operand: Ref
    dim: int | None
    shape: Shape
    dtype: DType


class FusedGroup(NamedTuple):
    """A fusable group's structure; the compiled kernel for it is called as
    ``kernel(inputs, scalars)`` and returns one primitive per ``outputs`` entry (shape
    ``shape``, dtype ``ops[j].dtype``), then the reduction's result when there is one."""

    shape: Shape
    inputs: tuple[TensorDesc, ...]
    scalars: tuple[DType, ...]
    ops: tuple[FusedOp, ...]
    outputs: tuple[int, ...]
    reduction: Reduction | None

    def describe(self) -> str:
        """A readable listing of the program, one op per line (for errors and debugging)."""

        def ref(r: Ref) -> str:
            return {"input": "in", "scalar": "s", "local": "t"}[r.kind] + str(r.index)

        lines = [f"group over {list(self.shape)}: inputs "
                 + ", ".join(f"in{i}: {d}" for i, d in enumerate(self.inputs))]
        lines += [f"  t{j} = {op.name}({', '.join(map(ref, op.operands))}) : {op.dtype.value}"
                  for j, op in enumerate(self.ops)]
        if self.reduction is not None:
            r = self.reduction
            lines.append(f"  {r.name}({ref(r.operand)}, dim={r.dim}) : {r.dtype.value}"
                         f"{list(r.shape)}")
        lines.append("  writes " + ", ".join(f"t{j}" for j in self.outputs))
        return "\n".join(lines)


class Elementwise(NamedTuple):
    """A vocabulary entry: how many operands the op takes and what it computes."""

    arity: int
    meaning: str


#: The elementwise vocabulary. Operand dtypes: a bool condition or mask is bool; otherwise the
#: operands of one op have its dtype or are promoted to it (``promote``: the wider float).
ELEMENTWISE: dict[str, Elementwise] = {
    # arithmetic, result of the (promoted) operand dtype
    "add": Elementwise(2, "a + b"),
    "sub": Elementwise(2, "a - b"),
    "mul": Elementwise(2, "a * b"),
    "div": Elementwise(2, "floats: a / b (IEEE); ints: floor(a / b), Python's //"),
    "remainder": Elementwise(2, "a - b * floor(a / b): the sign of b, Python's %"),
    "pow": Elementwise(2, "a ** b (ints: b >= 0)"),
    "atan2": Elementwise(2, "atan2(a, b), the angle of the point (b, a)"),
    "neg": Elementwise(1, "-a"),
    "abs": Elementwise(1, "|a|"),
    "sign": Elementwise(1, "-1, 0 or 1; NaN gives 0"),
    "exp": Elementwise(1, "e ** a"),
    "log": Elementwise(1, "natural log"),
    "log1p": Elementwise(1, "log(1 + a), accurate near 0"),
    "sqrt": Elementwise(1, "square root (NaN below 0)"),
    "sin": Elementwise(1, "sine"), "cos": Elementwise(1, "cosine"),
    "tan": Elementwise(1, "tangent"),
    "sinh": Elementwise(1, "hyperbolic sine"), "cosh": Elementwise(1, "hyperbolic cosine"),
    "tanh": Elementwise(1, "hyperbolic tangent"),
    "asin": Elementwise(1, "arcsine"), "acos": Elementwise(1, "arccosine"),
    "atan": Elementwise(1, "arctangent"),
    "asinh": Elementwise(1, "inverse hyperbolic sine"),
    "acosh": Elementwise(1, "inverse hyperbolic cosine"),
    "atanh": Elementwise(1, "inverse hyperbolic tangent"),
    "erf": Elementwise(1, "the error function"),
    "round": Elementwise(1, "nearest integer, halves to even"),
    "floor": Elementwise(1, "round down"), "ceil": Elementwise(1, "round up"),
    "trunc": Elementwise(1, "round toward 0"),
    "clamp": Elementwise(3, "min(max(a, lo), hi); NaN stays NaN"),
    "clamp_min": Elementwise(2, "max(a, lo); NaN stays NaN"),
    "clamp_max": Elementwise(2, "min(a, hi); NaN stays NaN"),
    # selection and copies
    "where": Elementwise(3, "b if the bool c is true else a, for where(c, b, a)"),
    "copy": Elementwise(1, "a itself: broadcasting an input to the group's shape (expand)"),
    "cast": Elementwise(1, "a converted to the op's dtype: float to int truncates toward 0, "
                           "bool gives 0 or 1"),
    # comparisons and tests, result bool
    "equal": Elementwise(2, "a == b"), "not_equal": Elementwise(2, "a != b"),
    "greater": Elementwise(2, "a > b"), "greater_equal": Elementwise(2, "a >= b"),
    "lower": Elementwise(2, "a < b"), "lower_equal": Elementwise(2, "a <= b"),
    "is_nan": Elementwise(1, "a is NaN"), "is_inf": Elementwise(1, "a is +inf or -inf"),
    # logic on bools
    "not": Elementwise(1, "logical not"), "and": Elementwise(2, "logical and"),
    "or": Elementwise(2, "logical or"), "xor": Elementwise(2, "logical exclusive or"),
}

#: Reductions that may close a group. Float sums accumulate at least in float64's precision
#: where the fuser can (NumPy's pairwise float32 sum is the accuracy bar); max and min
#: propagate NaN; ``mean`` of zero elements is NaN.
REDUCTIONS: dict[str, str] = {
    "sum": "sum of the elements", "mean": "sum / count", "prod": "product of the elements",
    "max": "largest element (NaN if any)", "min": "smallest element (NaN if any)",
}

#: How an op's result dtype and shape follow from its operands.
Result = Literal["same", "promote", "bool", "dtype_arg", "expand", "reduce"]


class Fusable(NamedTuple):
    """How a protocol op is recorded: the vocabulary op, which of the call's arguments are its
    operands (positions, in vocabulary order; each is a tensor or a number), how its result's
    dtype and shape come out, and the position of its dtype/shape/dim argument (``extra``)."""

    op: str
    operands: tuple[int, ...]
    result: Result
    extra: int | None = None


def _family(prefixes: tuple[str, ...], table: dict[str, Fusable]) -> dict[str, Fusable]:
    return {f"{p}_{name}": spec for p in prefixes for name, spec in table.items()}


_NUMERIC_BINARY = {
    **{n: Fusable(n, (0, 1), "promote") for n in ("add", "sub", "mul", "div", "remainder")},
    **{f"{n}_scalar": Fusable(n, (0, 1), "same")
       for n in ("add", "sub", "mul", "div", "remainder")},
    **{n: Fusable(n, (0, 1), "bool") for n in ("equal", "not_equal", "greater", "greater_equal",
                                               "lower", "lower_equal")},
    **{f"{n}_elem": Fusable(n, (0, 1), "bool")
       for n in ("equal", "not_equal", "greater", "greater_equal", "lower", "lower_equal")},
    "neg": Fusable("neg", (0,), "same"),
    "abs": Fusable("abs", (0,), "same"),
    "sign": Fusable("sign", (0,), "same"),
    "clamp": Fusable("clamp", (0, 1, 2), "same"),
    "mask_where": Fusable("where", (1, 2, 0), "promote"),
    "mask_fill": Fusable("where", (1, 2, 0), "same"),
    "expand": Fusable("copy", (0,), "expand", 1),
    "sum": Fusable("sum", (0,), "reduce"),
    "sum_dim": Fusable("sum", (0,), "reduce", 1),
    "prod": Fusable("prod", (0,), "reduce"),
    "prod_dim": Fusable("prod", (0,), "reduce", 1),
    "max": Fusable("max", (0,), "reduce"),
    "max_dim": Fusable("max", (0,), "reduce", 1),
    "min": Fusable("min", (0,), "reduce"),
    "min_dim": Fusable("min", (0,), "reduce", 1),
}

_FLOAT_ONLY = {
    **{n: Fusable(n, (0,), "same") for n in (
        "exp", "log", "log1p", "sqrt", "sin", "cos", "tan", "sinh", "cosh", "tanh", "asin",
        "acos", "atan", "asinh", "acosh", "atanh", "erf", "round", "floor", "ceil", "trunc")},
    "powf": Fusable("pow", (0, 1), "promote"),
    "powf_scalar": Fusable("pow", (0, 1), "same"),
    "atan2": Fusable("atan2", (0, 1), "promote"),
    "is_nan": Fusable("is_nan", (0,), "bool"),
    "is_inf": Fusable("is_inf", (0,), "bool"),
    "cast": Fusable("cast", (0,), "dtype_arg", 1),
    "into_int": Fusable("cast", (0,), "dtype_arg", 1),
    "mean": Fusable("mean", (0,), "reduce"),
    "mean_dim": Fusable("mean", (0,), "reduce", 1),
}

#: Every protocol op that ``Fusion`` records instead of running, by name.
FUSABLE: dict[str, Fusable] = {
    **_family(("float", "int"), _NUMERIC_BINARY),
    **_family(("float",), _FLOAT_ONLY),
    "int_powi_scalar": Fusable("pow", (0, 1), "same"),
    "int_cast": Fusable("cast", (0,), "dtype_arg", 1),
    "int_into_float": Fusable("cast", (0,), "dtype_arg", 1),
    "bool_into_float": Fusable("cast", (0,), "dtype_arg", 1),
    "bool_into_int": Fusable("cast", (0,), "dtype_arg", 1),
    "bool_not": Fusable("not", (0,), "same"),
    "bool_and": Fusable("and", (0, 1), "same"),
    "bool_or": Fusable("or", (0, 1), "same"),
    "bool_xor": Fusable("xor", (0, 1), "same"),
    "bool_equal": Fusable("equal", (0, 1), "bool"),
    "bool_not_equal": Fusable("not_equal", (0, 1), "bool"),
    "bool_expand": Fusable("copy", (0,), "expand", 1),
    "bool_mask_where": Fusable("where", (1, 2, 0), "same"),
}

#: Provided ops whose protocol default is a composition of ``FUSABLE`` ops only: ``Fusion``
#: keeps the default (so the composition is recorded and fused) instead of running the inner
#: backend's own version eagerly.
ELEMENTWISE_COMPOSITES: frozenset[str] = frozenset({
    "relu", "relu_backward", "leaky_relu", "gelu", "gelu_backward", "sigmoid",
    "sigmoid_backward", "log_sigmoid", "log_sigmoid_backward", "silu", "hard_sigmoid",
    "softplus", "float_recip", "float_square", "float_clamp_min", "float_clamp_max",
})
