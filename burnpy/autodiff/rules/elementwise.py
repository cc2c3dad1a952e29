# ruff: noqa: N803, N806 - rules name the inner backend type ``B``, as Burn's generics do
"""The elementwise ops of both decorators, generated from the local partials of the
elementwise registry (``burnpy.ir.elementwise``): Autodiff records one node whose reverse rule
scales the incoming gradient by each tracked input's partial; ForwardAD's tangent is the sum,
over the inputs carrying a tangent, of each tangent scaled by that input's partial."""

from __future__ import annotations

from typing import Any

from burnpy.autodiff.derivatives import ParamBinder, generated_from_table
from burnpy.autodiff.dual_tensor import DualTensor
from burnpy.autodiff.graph import Op
from burnpy.autodiff.rule_helpers import fit, zeros
from burnpy.autodiff.rules import reverse, tangent
from burnpy.autodiff.rules.reverse import AutodiffOps, Method
from burnpy.autodiff.rules.table import Grads, InnerCall, Params, Parents, Saved
from burnpy.autodiff.rules.tangent import ForwardOps
from burnpy.autodiff.tensor import AutodiffTensor
from burnpy.ir.elementwise import LocalPartials, Partial


# ---- Autodiff ----------------------------------------------------------------------------
class ReverseRule:
    """The reverse rule of a table entry: ``grad * partial`` for each tracked input."""

    __slots__ = ("missing", "partials")

    def __init__(self, entry: LocalPartials) -> None:
        self.partials: tuple[Partial, ...] = entry.partials
        #: What the partials receive for inputs the op does not save.
        self.missing: tuple[None, ...] = (None,) * entry.arity

    def __call__(self, B: Any, grad: Any, inputs: Saved, output: Any, params: Params,
                 parents: Parents) -> Grads:
        args = self.missing if inputs is None else inputs
        if len(self.partials) == 1:  # one input, tracked since the op was recorded
            return (self.partials[0](B, grad, output, *args, *params),)
        return tuple([None if parent is None else partial(B, grad, output, *args, *params)
                      for partial, parent in zip(self.partials, parents, strict=True)])


def _zero_rule(B: Any, grad: Any, inputs: Saved, output: Any, params: Params,
               parents: Parents) -> Grads:
    """Piecewise-constant ops: a zero gradient."""
    return (zeros(B, grad.shape, grad),)


def recorded(entry: LocalPartials) -> Method:
    """The Autodiff op of a table entry: the inner op, recorded when an input is tracked."""
    name = entry.name
    op = Op(name, ReverseRule(entry) if entry.partials else _zero_rule, InnerCall(name),
            saves_inputs=entry.uses_inputs, saves_output=entry.uses_output, compute_bound=False)
    if entry.arity == 2:

        def method(cls: Any, lhs: AutodiffTensor, rhs: AutodiffTensor) -> AutodiffTensor:
            out = getattr(cls.InnerBackend, name)(lhs.primitive, rhs.primitive)
            if lhs.node is None and rhs.node is None:
                return AutodiffTensor(out)
            return cls.record(op, out, (lhs, rhs), ())

        return reverse.finish(method, name)
    binder = ParamBinder(entry)
    count = binder.count
    if count == 0:

        def plain(cls: Any, tensor: AutodiffTensor) -> AutodiffTensor:
            out = getattr(cls.InnerBackend, name)(tensor.primitive)
            if tensor.node is None:
                return AutodiffTensor(out)
            return cls.record(op, out, (tensor,), ())

        return reverse.finish(plain, name)

    def completing(cls: Any, tensor: AutodiffTensor, *params: Any,
                   **keywords: Any) -> AutodiffTensor:
        if keywords or len(params) != count:
            params = binder(params, keywords)
        out = getattr(cls.InnerBackend, name)(tensor.primitive, *params)
        if tensor.node is None:
            return AutodiffTensor(out)
        return cls.record(op, out, (tensor,), params)

    return reverse.finish(completing, name)


@generated_from_table(recorded)
class AutodiffElementwiseOps(AutodiffOps):
    """Every op with local partials in ``burnpy.ir.elementwise``, recorded with its generated
    reverse rule."""


# ---- ForwardAD ---------------------------------------------------------------------------
def with_tangent(entry: LocalPartials) -> Method:
    """The ForwardAD op of a table entry: the inner op on the primals and its tangent."""
    if entry.arity == 2:
        return _binary(entry)
    return _unary(entry, ParamBinder(entry))


def _unary(entry: LocalPartials, binder: ParamBinder) -> Method:
    name, count = entry.name, binder.count
    partial = entry.partials[0] if entry.partials else None

    def method(cls: Any, tensor: DualTensor, *params: Any, **keywords: Any) -> DualTensor:
        if keywords or len(params) != count:
            params = binder(params, keywords)
        B = cls.InnerBackend
        x = tensor.primal
        out = getattr(B, name)(x, *params)
        t = tensor.tangent
        if t is None or partial is None:
            return DualTensor(out)
        return DualTensor(out, partial(B, t, out, x, *params))

    return tangent.finish(method, name)


def _binary(entry: LocalPartials) -> Method:
    name = entry.name
    lhs_partial, rhs_partial = entry.partials

    def method(cls: Any, lhs: DualTensor, rhs: DualTensor) -> DualTensor:
        B = cls.InnerBackend
        a, b = lhs.primal, rhs.primal
        out = getattr(B, name)(a, b)
        ta, tb = lhs.tangent, rhs.tangent
        if ta is None and tb is None:
            return DualTensor(out)
        result = None if ta is None else lhs_partial(B, ta, out, a, b)
        if tb is not None:
            term = rhs_partial(B, tb, out, a, b)
            result = term if result is None else B.float_add(result, term)
        return DualTensor(out, fit(B, result, out))

    return tangent.finish(method, name)


@generated_from_table(with_tangent)
class ForwardElementwiseOps(ForwardOps):
    """Every op with local partials in ``burnpy.ir.elementwise``, with its generated tangent
    rule."""
