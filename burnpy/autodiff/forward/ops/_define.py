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
from typing import Any

from burnpy.autodiff.forward.tensor import DualTensor
from burnpy.autodiff.ops._define import dtype_of, zeros

Method = Any  # a classmethod object placed in a mixin's namespace
#: ``rule(B, x, out, t, *params) -> tangent or None``: the tangent of a one-input op, given the
#: input's primal ``x``, the primal output ``out`` and the input's tangent ``t`` (never None).
UnaryRule = Callable[..., Any]
#: ``rule(B, lhs, rhs, out, t_lhs, t_rhs) -> tangent``: one of the tangents may be None.
BinaryRule = Callable[[Any, Any, Any, Any, Any, Any], Any]


def linear_op(name: str) -> Method:
    """``name(tensor, *params)`` linear in its float input (layout, indexing, sums, scaling):
    the tangent goes through the same op."""

    def method(cls: Any, tensor: DualTensor, *params: Any) -> DualTensor:
        op = getattr(cls.InnerBackend, name)
        t = tensor.tangent
        return DualTensor(op(tensor.primal, *params), None if t is None else op(t, *params))

    return _finish(method, name, f"``{name}`` on the primal and, being linear, on the tangent.")


def linear_in_grad(name: str) -> Method:
    """``name(structural, grad, *params)``: a backward kernel linear in ``grad`` whose first
    input only fixes shapes or masks (its tangent contributes nothing)."""

    def method(cls: Any, structural: DualTensor, grad: DualTensor, *params: Any) -> DualTensor:
        op = getattr(cls.InnerBackend, name)
        s, t = structural.primal, grad.tangent
        return DualTensor(op(s, grad.primal, *params), None if t is None else op(s, t, *params))

    return _finish(method, name, f"``{name}``, linear in the incoming gradient.")


def unary(name: str, rule: UnaryRule) -> Method:
    """``name(tensor, *params)`` with the tangent ``rule(B, x, out, t, *params)``."""
    rule = getattr(rule, "__func__", rule)

    def method(cls: Any, tensor: DualTensor, *params: Any) -> DualTensor:
        B = cls.InnerBackend
        x = tensor.primal
        out = getattr(B, name)(x, *params)
        t = tensor.tangent
        return DualTensor(out, None if t is None else rule(B, x, out, t, *params))

    return _finish(method, name)


def binary(name: str, rule: BinaryRule) -> Method:
    """``name(lhs, rhs)`` broadcasting (and, on trusted backends, promoting) as the primal
    does; the rule's tangent is fitted to the output's shape and dtype."""
    rule = getattr(rule, "__func__", rule)

    def method(cls: Any, lhs: DualTensor, rhs: DualTensor) -> DualTensor:
        B = cls.InnerBackend
        a, b = lhs.primal, rhs.primal
        out = getattr(B, name)(a, b)
        ta, tb = lhs.tangent, rhs.tangent
        if ta is None and tb is None:
            return DualTensor(out)
        return DualTensor(out, fit(B, rule(B, a, b, out, ta, tb), out))

    return _finish(method, name)


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

    return _finish(method, name, f"``{name}``; the tangent is gathered at the indices.")


def piecewise_constant(name: str) -> Method:
    """``name(tensor)`` with a zero derivative wherever it has one (sign, round, floor...)."""

    def method(cls: Any, tensor: DualTensor) -> DualTensor:
        return DualTensor(getattr(cls.InnerBackend, name)(tensor.primal))

    return _finish(method, name, f"``{name}``: piecewise constant, so a zero tangent.")


def constant(name: str, doc: str) -> Method:
    """``name(*args)``: a float result without tangent (creation, conversion)."""

    def method(cls: Any, *args: Any) -> DualTensor:
        return DualTensor(getattr(cls.InnerBackend, name)(*args))

    return _finish(method, name, doc)


def on_primal(name: str, doc: str) -> Method:
    """``name(tensor, *args)`` on the primal (results that are not float tensors: data,
    device, comparisons, indices)."""

    def method(cls: Any, tensor: DualTensor, *args: Any) -> Any:
        return getattr(cls.InnerBackend, name)(tensor.primal, *args)

    return _finish(method, name, doc)


def on_primals(name: str, doc: str) -> Method:
    """``name(lhs, rhs)`` of two float tensors with a non-float result (comparisons)."""

    def method(cls: Any, lhs: DualTensor, rhs: DualTensor) -> Any:
        return getattr(cls.InnerBackend, name)(lhs.primal, rhs.primal)

    return _finish(method, name, doc)


def _finish(method: Callable[..., Any], name: str, doc: str | None = None) -> Method:
    method.__name__ = method.__qualname__ = name
    method.__doc__ = doc or f"``{name}`` on the inner backend, with its tangent rule."
    return classmethod(method)


# ---- helpers for the rules (inner-backend ops only) -----------------------------------------
def tangent_or_zeros(B: Any, tensor: DualTensor) -> Any:
    """The tensor's tangent, materialized as zeros when it has none."""
    t = tensor.tangent
    return zeros(B, tensor.shape, tensor.primal) if t is None else t


def fit(B: Any, tangent: Any, out: Any) -> Any:
    """``tangent`` broadcast to ``out``'s shape and cast to its dtype where one input alone
    carried a tangent of its own (smaller, or narrower before promotion) shape or dtype."""
    if tangent.dtype is not out.dtype and tangent.dtype != out.dtype:
        tangent = B.float_cast(tangent, dtype_of(out))
    if tangent.shape != out.shape:
        tangent = B.float_expand(tangent, out.shape)
    return tangent
