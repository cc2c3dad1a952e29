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

The vocabulary (``ELEMENTWISE``, derived from the registry of ``burnpy.ir.elementwise``, and
``REDUCTIONS``) gives every op's exact meaning; a fuser implements it per dtype and states what
it accepts (see ``burnpy.fusion.fuser``). ``FUSABLE`` maps the protocol ops that ``Fusion``
records to the vocabulary.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal, NamedTuple

from burnpy.backend.dtype import DType
from burnpy.backend.primitives import Shape
from burnpy.ir.desc import TensorDesc
from burnpy.ir.elementwise import HALF_SCALAR_ROUNDED, OPS, ElementwiseOp, Result

RefKind = Literal["input", "scalar", "local"]

#: The 16-bit floats, whose scalars follow ``HALF_SCALAR_ROUNDED``.
_HALVES = (DType.float16, DType.bfloat16)


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

    def rounded_scalars(self) -> frozenset[int]:
        """The indices of the float16/bfloat16 scalars that an op of ``HALF_SCALAR_ROUNDED``
        reads: a fuser rounds each to its dtype (through float32) before computing, keeping
        the others in float32, as the unfused ops (torch's rule) do."""
        return frozenset(r.index for op in self.ops if op.name in HALF_SCALAR_ROUNDED
                         for r in op.operands
                         if r.kind == "scalar" and self.scalars[r.index] in _HALVES)


#: The elementwise vocabulary: every registry op (``burnpy.ir.elementwise``) in the fused IR,
#: by name; its ``meaning`` is exact. Operand dtypes: a bool condition or mask is bool;
#: otherwise the operands of one op have its dtype or are promoted to it (``promote``: the
#: wider float).
ELEMENTWISE: dict[str, ElementwiseOp] = {op.name: op for op in OPS if op.fusable}

#: Reductions that may close a group. Float sums accumulate at least in float64's precision
#: where the fuser can (NumPy's pairwise float32 sum is the accuracy bar); max and min
#: propagate NaN; ``mean`` of zero elements is NaN.
REDUCTIONS: dict[str, str] = {
    "sum": "sum of the elements", "mean": "sum / count", "prod": "product of the elements",
    "max": "largest element (NaN if any)", "min": "smallest element (NaN if any)",
}


class Fusable(NamedTuple):
    """How a protocol op is recorded: the vocabulary op, which of the call's arguments are its
    operands (positions, in vocabulary order; each is a tensor or a number), how its result's
    dtype and shape come out, and the position of its dtype/shape/dim argument (``extra``)."""

    op: str
    operands: tuple[int, ...]
    result: Result
    extra: int | None = None


def _reductions(name: str, prefixes: tuple[str, ...]) -> dict[str, Fusable]:
    """``{prefix}_{name}`` over everything and ``_{name}_dim`` along its dim argument."""
    return {f"{p}_{name}{suffix}": Fusable(name, (0,), "reduce", extra)
            for p in prefixes for suffix, extra in (("", None), ("_dim", 1))}


#: Every protocol op that ``Fusion`` records instead of running, by name: the registry's
#: records, and the reductions.
FUSABLE: dict[str, Fusable] = {
    **{r.protocol: Fusable(op.name, r.operands, r.result, r.extra)
       for op in OPS for r in op.records},
    **{k: v for name in ("sum", "prod", "max", "min")
       for k, v in _reductions(name, ("float", "int")).items()},
    **_reductions("mean", ("float",)),
}

#: Provided ops whose protocol default is a composition of ``FUSABLE`` ops only: ``Fusion``
#: keeps the default (so the composition is recorded and fused) instead of running the inner
#: backend's own version eagerly.
ELEMENTWISE_COMPOSITES: frozenset[str] = frozenset({
    "relu", "relu_backward", "leaky_relu", "gelu", "gelu_backward", "sigmoid",
    "sigmoid_backward", "log_sigmoid", "log_sigmoid_backward", "silu", "hard_sigmoid",
    "softplus", "float_recip", "float_square", "float_clamp_min", "float_clamp_max",
})
