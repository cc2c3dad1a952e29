"""Autodiff's side of the rule tables: a recording method per signature kind, built from a
``Derivative`` (``table.py``), and the base of the Autodiff op families.

Every method computes the inner op first and records a node only when an input is tracked,
so untracked tensors cost one inner call and one ``AutodiffTensor``. The factories have the
names of ``tangent.py``'s, and the same signatures.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import TYPE_CHECKING, Any, ClassVar, TypeVar

from burnpy.autodiff.graph import Op
from burnpy.autodiff.rules.table import Derivative, Kind, filling
from burnpy.autodiff.tensor import AutodiffTensor

if TYPE_CHECKING:
    from burnpy.backend.base import Backend

Method = Any  # a classmethod object placed in a mixin's namespace
T = TypeVar("T")


class AutodiffOps:
    """Base of the Autodiff op families: what their class methods read from the final
    ``Autodiff[B, C]`` class (declared here so that each family type-checks on its own)."""

    #: B, the wrapped backend.
    InnerBackend: ClassVar[type[Backend]]
    #: The checkpoint strategy's ``record``: wraps an inner result in a tracked tensor.
    record: ClassVar[Callable[..., AutodiffTensor]]


def op_of(entry: Derivative) -> Op:
    """The graph's ``Op`` of a declaration (compute-bound ops keep their output, so they have
    no retro-forward)."""
    assert entry.reverse is not None, f"{entry.name} has no reverse rule"
    return Op(entry.name, entry.reverse, None if entry.compute_bound else entry.forward,
              saves_inputs=entry.saves_inputs, saves_output=entry.saves_output,
              compute_bound=entry.compute_bound)


def any_tracked(tensors: tuple[AutodiffTensor, ...]) -> bool:
    """Whether any of ``tensors`` carries a graph node."""
    return any(t.node is not None for t in tensors)


def optional(tensor: AutodiffTensor | None) -> Any:
    """The inner primitive of an optional operand (a bias), or None."""
    return None if tensor is None else tensor.primitive


# ---- one factory per signature kind --------------------------------------------------------
def unary(entry: Derivative) -> Method:
    """``name(tensor)``."""
    name, op = entry.name, op_of(entry)

    def method(cls: Any, tensor: AutodiffTensor) -> AutodiffTensor:
        out = getattr(cls.InnerBackend, name)(tensor.primitive)
        if tensor.node is None:
            return AutodiffTensor(out)
        return cls.record(op, out, (tensor,), ())

    return finish(method, name)


def unary_params(entry: Derivative) -> Method:
    """``name(tensor, *params)``."""
    name, op = entry.name, op_of(entry)

    def method(cls: Any, tensor: AutodiffTensor, *params: Any) -> AutodiffTensor:
        out = getattr(cls.InnerBackend, name)(tensor.primitive, *params)
        if tensor.node is None:
            return AutodiffTensor(out)
        return cls.record(op, out, (tensor,), params)

    return finish(method, name)


def binary(entry: Derivative) -> Method:
    """``name(lhs, rhs)``."""
    name, op = entry.name, op_of(entry)

    def method(cls: Any, lhs: AutodiffTensor, rhs: AutodiffTensor) -> AutodiffTensor:
        out = getattr(cls.InnerBackend, name)(lhs.primitive, rhs.primitive)
        if lhs.node is None and rhs.node is None:
            return AutodiffTensor(out)
        return cls.record(op, out, (lhs, rhs), ())

    return finish(method, name)


def convert(entry: Derivative) -> Method:
    """``name(tensor, target)``, recorded with ``(target, source)``."""
    name, op, source = entry.name, op_of(entry), entry.source
    assert source is not None

    def method(cls: Any, tensor: AutodiffTensor, target: Any) -> AutodiffTensor:
        B = cls.InnerBackend  # noqa: N806
        out = getattr(B, name)(tensor.primitive, target)
        if tensor.node is None:
            return AutodiffTensor(out)
        return cls.record(op, out, (tensor,), (target, source(B, tensor.primitive)))

    return finish(method, name)


def sequence(entry: Derivative) -> Method:
    """``name(tensors, dim)``, recorded with ``(dim, sizes along dim)``."""
    name, op = entry.name, op_of(entry)

    def method(cls: Any, tensors: Sequence[AutodiffTensor], dim: int) -> AutodiffTensor:
        tensors = tuple(tensors)
        out = getattr(cls.InnerBackend, name)([t.primitive for t in tensors], dim)
        if not any_tracked(tensors):
            return AutodiffTensor(out)
        return cls.record(op, out, tensors, (dim, tuple(t.shape[dim] for t in tensors)))

    return finish(method, name)


def assign(entry: Derivative) -> Method:
    """``name(tensor, where, value)``, recorded with ``(where, value's shape)``."""
    name, op = entry.name, op_of(entry)

    def method(cls: Any, tensor: AutodiffTensor, where: Any,
               value: AutodiffTensor) -> AutodiffTensor:
        out = getattr(cls.InnerBackend, name)(tensor.primitive, where, value.primitive)
        if tensor.node is None and value.node is None:
            return AutodiffTensor(out)
        return cls.record(op, out, (tensor, value), (where, value.shape))

    return finish(method, name)


def indexed(entry: Derivative) -> Method:
    """``name(tensor, *params) -> (values, indices)``; the values are recorded."""
    name, op, dim_arg = entry.name, op_of(entry), entry.dim_arg

    def method(cls: Any, tensor: AutodiffTensor, *params: Any) -> tuple[AutodiffTensor, Any]:
        values, indices = getattr(cls.InnerBackend, name)(tensor.primitive, *params)
        if tensor.node is None:
            return AutodiffTensor(values), indices
        recorded = (*params, indices) if dim_arg is None else (params[dim_arg], indices)
        return cls.record(op, values, (tensor,), recorded), indices

    return finish(method, name)


def indexed_write(entry: Derivative) -> Method:
    """``name(tensor, dim, indices, values)``, tracked in both the tensor and the values."""
    name, op = entry.name, op_of(entry)

    def method(cls: Any, tensor: AutodiffTensor, dim: int, indices: Any,
               values: AutodiffTensor) -> AutodiffTensor:
        out = getattr(cls.InnerBackend, name)(tensor.primitive, dim, indices, values.primitive)
        if tensor.node is None and values.node is None:
            return AutodiffTensor(out)
        return cls.record(op, out, (tensor, values), (dim, indices))

    return finish(method, name)


def with_bias(entry: Derivative) -> Method:
    """``name(x, weight, bias, *params)`` with an optional bias."""
    name, op = entry.name, op_of(entry)

    def method(cls: Any, x: AutodiffTensor, weight: AutodiffTensor,
               bias: AutodiffTensor | None, *params: Any) -> AutodiffTensor:
        out = getattr(cls.InnerBackend, name)(x.primitive, weight.primitive, optional(bias),
                                              *params)
        tensors = (x, weight) if bias is None else (x, weight, bias)
        if not any_tracked(tensors):
            return AutodiffTensor(out)
        return cls.record(op, out, tensors, params)

    return finish(method, name)


def weight_grad(entry: Derivative) -> Method:
    """``name(x, weight, grad, options)``, tracked in x and grad."""
    name, op = entry.name, op_of(entry)

    def method(cls: Any, x: AutodiffTensor, weight: AutodiffTensor, grad: AutodiffTensor,
               options: Any) -> AutodiffTensor:
        out = getattr(cls.InnerBackend, name)(x.primitive, weight.primitive, grad.primitive,
                                              options)
        if x.node is None and grad.node is None:
            return AutodiffTensor(out)
        return cls.record(op, out, (x, grad), (weight.primitive, options))

    return finish(method, name)


def linear_in_grad(entry: Derivative) -> Method:
    """``name(structural, grad, *params)``, tracked in grad."""
    name, op = entry.name, op_of(entry)

    def method(cls: Any, structural: AutodiffTensor, grad: AutodiffTensor,
               *params: Any) -> AutodiffTensor:
        s = structural.primitive
        out = getattr(cls.InnerBackend, name)(s, grad.primitive, *params)
        if grad.node is None:
            return AutodiffTensor(out)
        return cls.record(op, out, (grad,), (s, *params))

    return finish(method, name)


_FACTORIES: dict[Kind, Callable[[Derivative], Method]] = {
    "unary": unary, "unary_params": unary_params, "binary": binary, "convert": convert,
    "sequence": sequence, "assign": assign, "indexed": indexed, "indexed_write": indexed_write,
    "with_bias": with_bias, "weight_grad": weight_grad, "linear_in_grad": linear_in_grad,
}


def generated(entries: tuple[Derivative, ...]) -> Callable[[type[T]], type[T]]:
    """A class decorator adding the recording method of every entry with a reverse rule
    (``explicit`` ones are the family mixin's own)."""
    return filling(entries, _FACTORIES, lambda entry: entry.reverse is not None)


# ---- ops without a derivative --------------------------------------------------------------
def constant(name: str, doc: str) -> Method:
    """``name(*args)``: a float result that never carries a graph (creation, conversion)."""

    def method(cls: Any, *args: Any) -> AutodiffTensor:
        return AutodiffTensor(getattr(cls.InnerBackend, name)(*args))

    return finish(method, name, doc)


def on_inner(name: str, doc: str) -> Method:
    """``name(tensor, *args)`` on the inner primitive (results that are not float tensors:
    data, device, comparisons, indices)."""

    def method(cls: Any, tensor: AutodiffTensor, *args: Any) -> Any:
        return getattr(cls.InnerBackend, name)(tensor.primitive, *args)

    return finish(method, name, doc)


def on_inners(name: str, doc: str) -> Method:
    """``name(lhs, rhs)`` of two float tensors with a non-float result (comparisons)."""

    def method(cls: Any, lhs: AutodiffTensor, rhs: AutodiffTensor) -> Any:
        return getattr(cls.InnerBackend, name)(lhs.primitive, rhs.primitive)

    return finish(method, name, doc)


def finish(method: Callable[..., Any], name: str, doc: str | None = None) -> Method:
    """``method`` named ``name``, documented, as a classmethod."""
    method.__name__ = method.__qualname__ = name
    method.__doc__ = doc or f"``{name}`` on the inner backend, recorded when an input is tracked."
    return classmethod(method)
