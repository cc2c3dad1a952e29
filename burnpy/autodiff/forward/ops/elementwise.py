# ruff: noqa: N806 - rules name the inner backend type ``B``, as Burn's generics do
"""The elementwise ops of the ForwardAD backend, generated from the table of local partials
(``burnpy.autodiff.derivatives``): the tangent of the output is the sum, over the inputs that
carry a tangent, of each tangent scaled by that input's partial."""

from __future__ import annotations

from typing import Any

from burnpy.autodiff.derivatives import Elementwise, ParamBinder, generated_from_table
from burnpy.autodiff.forward.ops._define import ForwardOps, Method, finish
from burnpy.autodiff.forward.tensor import DualTensor
from burnpy.autodiff.rule_helpers import fit


def with_tangent(entry: Elementwise) -> Method:
    """The ForwardAD op of a table entry: the inner op on the primals and its tangent."""
    if entry.arity == 2:
        return _binary(entry)
    return _unary(entry, ParamBinder(entry))


def _unary(entry: Elementwise, binder: ParamBinder) -> Method:
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

    return finish(method, name)


def _binary(entry: Elementwise) -> Method:
    name = entry.name
    lhs_partial, rhs_partial = entry.partials

    def method(cls: Any, lhs: DualTensor, rhs: DualTensor) -> DualTensor:
        B = cls.InnerBackend
        a, b = lhs.primal, rhs.primal
        out = getattr(B, name)(a, b)
        ta, tb = lhs.tangent, rhs.tangent
        if ta is None and tb is None:
            return DualTensor(out)
        tangent = None if ta is None else lhs_partial(B, ta, out, a, b)
        if tb is not None:
            term = rhs_partial(B, tb, out, a, b)
            tangent = term if tangent is None else B.float_add(tangent, term)
        return DualTensor(out, fit(B, tangent, out))

    return finish(method, name)


@generated_from_table(with_tangent)
class ForwardElementwiseOps(ForwardOps):
    """Every op of ``derivatives.ELEMENTWISE``, with its generated tangent rule."""
