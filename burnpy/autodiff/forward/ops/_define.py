# ruff: noqa: N803, N806 - rules name the inner backend type ``B``, as Burn's generics do
"""Building blocks of the ForwardAD op mixins: wrappers of the common signatures, and small
helpers the tangent rules share.

A tangent rule is written with the inner backend ``B``'s ops only, so it is itself
differentiable when ``B`` is a decorator (``ForwardAD(ForwardAD(B))``, ``ForwardAD(Autodiff(B))``).
Every wrapper computes the primal with B's own op first and runs the rule only when an input
carries a tangent: untangented tensors cost one inner call and one ``DualTensor``.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING, Any, ClassVar

from burnpy.autodiff.forward.tensor import DualTensor
from burnpy.autodiff.rule_helpers import zeros

if TYPE_CHECKING:
    from burnpy.backend.base import Backend

class ForwardOps:
    """Base of the ForwardAD op families: the final ``ForwardAD[B]`` class's ``InnerBackend``
    (declared here so that each family type-checks on its own)."""

    #: B, the wrapped backend.
    InnerBackend: ClassVar[type[Backend]]


Method = Any  # a classmethod object placed in a mixin's namespace
#: ``rule(B, t, out, x, *params) -> tangent or None``: the tangent of a one-input op, given the
#: input's tangent ``t`` (never None), the primal output ``out``, the input's primal ``x`` and
#: the op's params: the convention of the table of local partials (``derivatives.Partial``).
UnaryRule = Callable[..., Any]


def linear_op(name: str) -> Method:
    """``name(tensor, *params)`` linear in its float input (layout, indexing, sums, scaling):
    the tangent goes through the same op."""

    def method(cls: Any, tensor: DualTensor, *params: Any) -> DualTensor:
        op = getattr(cls.InnerBackend, name)
        t = tensor.tangent
        return DualTensor(op(tensor.primal, *params), None if t is None else op(t, *params))

    return finish(method, name, f"``{name}`` on the primal and, being linear, on the tangent.")


def linear_in_grad(name: str) -> Method:
    """``name(structural, grad, *params)``: a backward kernel linear in ``grad`` whose first
    input only fixes shapes or masks (its tangent contributes nothing)."""

    def method(cls: Any, structural: DualTensor, grad: DualTensor, *params: Any) -> DualTensor:
        op = getattr(cls.InnerBackend, name)
        s, t = structural.primal, grad.tangent
        return DualTensor(op(s, grad.primal, *params), None if t is None else op(s, t, *params))

    return finish(method, name, f"``{name}``, linear in the incoming gradient.")


def unary(name: str, rule: UnaryRule) -> Method:
    """``name(tensor, *params)`` with the tangent ``rule(B, t, out, x, *params)``."""
    rule = getattr(rule, "__func__", rule)

    def method(cls: Any, tensor: DualTensor, *params: Any) -> DualTensor:
        B = cls.InnerBackend
        x = tensor.primal
        out = getattr(B, name)(x, *params)
        t = tensor.tangent
        return DualTensor(out, None if t is None else rule(B, t, out, x, *params))

    return finish(method, name)


def indexed(name: str, dim_arg: int = 0) -> Method:
    """``name(tensor, *params) -> (values, indices)`` where ``params[dim_arg]`` is the dim:
    the values' tangent is the input's tangent gathered at the indices."""

    def method(cls: Any, tensor: DualTensor, *params: Any) -> tuple[DualTensor, Any]:
        B = cls.InnerBackend
        values, indices = getattr(B, name)(tensor.primal, *params)
        t = tensor.tangent
        if t is None:
            return DualTensor(values), indices
        return DualTensor(values, B.float_gather(t, params[dim_arg], indices)), indices

    return finish(method, name, f"``{name}``; the tangent is gathered at the indices.")


def constant(name: str, doc: str) -> Method:
    """``name(*args)``: a float result without tangent (creation, conversion)."""

    def method(cls: Any, *args: Any) -> DualTensor:
        return DualTensor(getattr(cls.InnerBackend, name)(*args))

    return finish(method, name, doc)


def on_inner(name: str, doc: str) -> Method:
    """``name(tensor, *args)`` on the primal (results that are not float tensors: data,
    device, comparisons, indices)."""

    def method(cls: Any, tensor: DualTensor, *args: Any) -> Any:
        return getattr(cls.InnerBackend, name)(tensor.primal, *args)

    return finish(method, name, doc)


def on_inners(name: str, doc: str) -> Method:
    """``name(lhs, rhs)`` of two float tensors with a non-float result (comparisons)."""

    def method(cls: Any, lhs: DualTensor, rhs: DualTensor) -> Any:
        return getattr(cls.InnerBackend, name)(lhs.primal, rhs.primal)

    return finish(method, name, doc)


def finish(method: Callable[..., Any], name: str, doc: str | None = None) -> Method:
    method.__name__ = method.__qualname__ = name
    method.__doc__ = doc or f"``{name}`` on the inner backend, with its tangent rule."
    return classmethod(method)


# ---- helpers for the rules (inner-backend ops only) -----------------------------------------
def tangent_or_zeros(B: Any, tensor: DualTensor) -> Any:
    """The tensor's tangent, materialized as zeros when it has none."""
    t = tensor.tangent
    return zeros(B, tensor.shape, tensor.primal) if t is None else t
