# ruff: noqa: N803, N806 - rules name the inner backend type ``B``, as Burn's generics do
"""ForwardAD's side of the rule tables: a method per signature kind, built from a
``Derivative`` (``table.py``), and the base of the ForwardAD op families.

Every method computes the primal with B's own op first and runs the tangent rule only when an
input carries a tangent: untangented tensors cost one inner call and one ``DualTensor``. The
factories have the names of ``reverse.py``'s, and the same signatures.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import TYPE_CHECKING, Any, ClassVar, TypeVar

from burnpy.autodiff.dual_tensor import DeferredDualTensor, DualTensor
from burnpy.autodiff.graph import RetroForward
from burnpy.autodiff.rule_helpers import fit, or_zeros
from burnpy.autodiff.rules.table import LINEAR, Derivative, Kind, TangentRule, filling

if TYPE_CHECKING:
    from burnpy.backend.base import Backend

Method = Any  # a classmethod object placed in a mixin's namespace
T = TypeVar("T")


class ForwardOps:
    """Base of the ForwardAD op families: the final ``ForwardAD[B]`` class's ``InnerBackend``
    (declared here so that each family type-checks on its own)."""

    #: B, the wrapped backend.
    InnerBackend: ClassVar[type[Backend]]


class LinearRule:
    """The tangent of an op linear in its float inputs: its retro-forward applied to the
    tangents, zeros standing for the missing ones."""

    __slots__ = ("forward",)

    def __init__(self, forward: RetroForward) -> None:
        self.forward = forward

    def __call__(self, B: Any, tangents: tuple[Any, ...], inputs: tuple[Any, ...], output: Any,
                 params: tuple[Any, ...]) -> Any:
        filled = tuple([or_zeros(B, t, x) for t, x in zip(tangents, inputs, strict=True)])
        return self.forward(B, filled, params)


def rule_of(entry: Derivative) -> TangentRule:
    """The entry's tangent rule, ``LINEAR`` made a rule of its own."""
    rule = entry.tangent
    if rule is LINEAR:
        assert entry.forward is not None, f"{entry.name}: a LINEAR tangent needs a forward"
        return LinearRule(entry.forward)
    assert rule is not None, f"{entry.name} has no tangent rule"
    return rule


def _tangents(duals: tuple[DualTensor, ...]) -> tuple[Any, ...] | None:
    """The duals' tangents, or None when none carries one."""
    tangents = tuple([d.tangent for d in duals])
    return None if all(t is None for t in tangents) else tangents


# ---- one factory per signature kind --------------------------------------------------------
def unary(entry: Derivative) -> Method:
    """``name(tensor)``."""
    name = entry.name
    if entry.tangent is LINEAR:

        def linear(cls: Any, tensor: DualTensor) -> DualTensor:
            op = getattr(cls.InnerBackend, name)
            t = tensor.tangent
            return DualTensor(op(tensor.primal), None if t is None else op(t))

        return finish(linear, name)
    rule = rule_of(entry)

    def method(cls: Any, tensor: DualTensor) -> DualTensor:
        B = cls.InnerBackend
        x = tensor.primal
        out = getattr(B, name)(x)
        t = tensor.tangent
        return DualTensor(out, None if t is None else rule(B, (t,), (x,), out, ()))

    return finish(method, name)


def unary_params(entry: Derivative) -> Method:
    """``name(tensor, *params)``."""
    name = entry.name
    if entry.tangent is LINEAR:

        def linear(cls: Any, tensor: DualTensor, *params: Any) -> DualTensor:
            op = getattr(cls.InnerBackend, name)
            t = tensor.tangent
            return DualTensor(op(tensor.primal, *params), None if t is None else op(t, *params))

        return finish(linear, name)
    rule = rule_of(entry)

    def method(cls: Any, tensor: DualTensor, *params: Any) -> DualTensor:
        B = cls.InnerBackend
        x = tensor.primal
        out = getattr(B, name)(x, *params)
        t = tensor.tangent
        return DualTensor(out, None if t is None else rule(B, (t,), (x,), out, params))

    return finish(method, name)


def binary(entry: Derivative) -> Method:
    """``name(lhs, rhs)``: the tangent is fitted to the primal's shape and dtype; a
    ``deferred`` op computes the primal only when read (operands B would reject or promote
    run eagerly)."""
    name, rule, deferred = entry.name, rule_of(entry), entry.deferred

    def method(cls: Any, lhs: DualTensor, rhs: DualTensor) -> DualTensor:
        B = cls.InnerBackend
        op = getattr(B, name)
        a, b = lhs.primal, rhs.primal
        ta, tb = lhs.tangent, rhs.tangent
        if ta is None and tb is None:
            return DualTensor(op(a, b))
        if deferred is not None:
            shape = deferred(a, b)
            if shape is not None:
                return DeferredDualTensor(lambda: op(a, b), shape, a.dtype,
                                          rule(B, (ta, tb), (a, b), None, ()))
        out = op(a, b)
        return DualTensor(out, fit(B, rule(B, (ta, tb), (a, b), out, ()), out))

    return finish(method, name)


def convert(entry: Derivative) -> Method:
    """``name(tensor, target)``, params ``(target, source)``."""
    name, rule, source = entry.name, rule_of(entry), entry.source
    assert source is not None

    def method(cls: Any, tensor: DualTensor, target: Any) -> DualTensor:
        B = cls.InnerBackend
        x = tensor.primal
        out = getattr(B, name)(x, target)
        t = tensor.tangent
        if t is None:
            return DualTensor(out)
        return DualTensor(out, rule(B, (t,), (x,), out, (target, source(B, x))))

    return finish(method, name)


def sequence(entry: Derivative) -> Method:
    """``name(tensors, dim)``, params ``(dim, sizes along dim)``."""
    name, rule = entry.name, rule_of(entry)

    def method(cls: Any, tensors: Sequence[DualTensor], dim: int) -> DualTensor:
        B = cls.InnerBackend
        duals = tuple(tensors)
        primals = tuple([d.primal for d in duals])
        out = getattr(B, name)(list(primals), dim)
        tangents = _tangents(duals)
        if tangents is None:
            return DualTensor(out)
        params = (dim, tuple(d.shape[dim] for d in duals))
        return DualTensor(out, rule(B, tangents, primals, out, params))

    return finish(method, name)


def assign(entry: Derivative) -> Method:
    """``name(tensor, where, value)``, params ``(where, value's shape)``."""
    name, rule = entry.name, rule_of(entry)

    def method(cls: Any, tensor: DualTensor, where: Any, value: DualTensor) -> DualTensor:
        B = cls.InnerBackend
        x, v = tensor.primal, value.primal
        out = getattr(B, name)(x, where, v)
        tangents = _tangents((tensor, value))
        if tangents is None:
            return DualTensor(out)
        return DualTensor(out, rule(B, tangents, (x, v), out, (where, value.shape)))

    return finish(method, name)


def indexed(entry: Derivative) -> Method:
    """``name(tensor, *params) -> (values, indices)``."""
    name, rule, dim_arg = entry.name, rule_of(entry), entry.dim_arg

    def method(cls: Any, tensor: DualTensor, *params: Any) -> tuple[DualTensor, Any]:
        B = cls.InnerBackend
        x = tensor.primal
        values, indices = getattr(B, name)(x, *params)
        t = tensor.tangent
        if t is None:
            return DualTensor(values), indices
        recorded = (*params, indices) if dim_arg is None else (params[dim_arg], indices)
        return DualTensor(values, rule(B, (t,), (x,), values, recorded)), indices

    return finish(method, name)


def indexed_write(entry: Derivative) -> Method:
    """``name(tensor, dim, indices, values)``, params ``(dim, indices)``."""
    name, rule = entry.name, rule_of(entry)

    def method(cls: Any, tensor: DualTensor, dim: int, indices: Any,
               values: DualTensor) -> DualTensor:
        B = cls.InnerBackend
        x, v = tensor.primal, values.primal
        out = getattr(B, name)(x, dim, indices, v)
        tangents = _tangents((tensor, values))
        if tangents is None:
            return DualTensor(out)
        return DualTensor(out, rule(B, tangents, (x, v), out, (dim, indices)))

    return finish(method, name)


def with_bias(entry: Derivative) -> Method:
    """``name(x, weight, bias, *params)`` with an optional bias."""
    name, rule = entry.name, rule_of(entry)

    def method(cls: Any, x: DualTensor, weight: DualTensor, bias: DualTensor | None,
               *params: Any) -> DualTensor:
        B = cls.InnerBackend
        duals = (x, weight) if bias is None else (x, weight, bias)
        primals = tuple([d.primal for d in duals])
        out = getattr(B, name)(x.primal, weight.primal, None if bias is None else bias.primal,
                               *params)
        tangents = _tangents(duals)
        if tangents is None:
            return DualTensor(out)
        return DualTensor(out, rule(B, tangents, primals, out, params))

    return finish(method, name)


def weight_grad(entry: Derivative) -> Method:
    """``name(x, weight, grad, options)``: inputs ``(x, grad)``, params ``(weight,
    options)``."""
    name, rule = entry.name, rule_of(entry)

    def method(cls: Any, x: DualTensor, weight: DualTensor, grad: DualTensor,
               options: Any) -> DualTensor:
        B = cls.InnerBackend
        w = weight.primal
        out = getattr(B, name)(x.primal, w, grad.primal, options)
        tangents = _tangents((x, grad))
        if tangents is None:
            return DualTensor(out)
        return DualTensor(out, rule(B, tangents, (x.primal, grad.primal), out, (w, options)))

    return finish(method, name)


def linear_in_grad(entry: Derivative) -> Method:
    """``name(structural, grad, *params)``: input ``(grad,)``, params ``(structural,
    *params)``; the structural input's tangent contributes nothing."""
    name, rule = entry.name, rule_of(entry)

    def method(cls: Any, structural: DualTensor, grad: DualTensor, *params: Any) -> DualTensor:
        B = cls.InnerBackend
        s, g = structural.primal, grad.primal
        out = getattr(B, name)(s, g, *params)
        t = grad.tangent
        return DualTensor(out, None if t is None else rule(B, (t,), (g,), out, (s, *params)))

    return finish(method, name)


_FACTORIES: dict[Kind, Callable[[Derivative], Method]] = {
    "unary": unary, "unary_params": unary_params, "binary": binary, "convert": convert,
    "sequence": sequence, "assign": assign, "indexed": indexed, "indexed_write": indexed_write,
    "with_bias": with_bias, "weight_grad": weight_grad, "linear_in_grad": linear_in_grad,
}


def generated(entries: tuple[Derivative, ...]) -> Callable[[type[T]], type[T]]:
    """A class decorator adding the method of every entry with a tangent rule (``explicit``
    ones are the family mixin's own)."""
    return filling(entries, _FACTORIES, lambda entry: entry.tangent is not None)


# ---- ops without a derivative --------------------------------------------------------------
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
    """``method`` named ``name``, documented, as a classmethod."""
    method.__name__ = method.__qualname__ = name
    method.__doc__ = doc or f"``{name}`` on the inner backend, with its tangent rule."
    return classmethod(method)
