# ruff: noqa: N803 - the inner backend type is spelled ``B``, as in Burn's generics
"""Building blocks of the autodiff op mixins: ``Op`` declarations, the recording wrappers of
the common signatures, and small helpers the backward rules share.

Every wrapper computes the inner op first and records a node only when an input is tracked,
so untracked tensors cost one inner call and one ``AutodiffTensor``.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING, Any, ClassVar

from burnpy.autodiff.derivatives import ParamBinder
from burnpy.autodiff.graph import BackwardRule, Op, RetroForward
from burnpy.autodiff.tensor import AutodiffTensor

if TYPE_CHECKING:
    from burnpy.backend.base import Backend

Method = Any  # a classmethod object placed in a mixin's namespace
#: What a rule receives and returns: the saved inner primitives (or None), the non-tensor
#: params, the parents (None for untracked inputs) and one gradient per parent.
Saved = Any
Params = tuple[Any, ...]
Parents = tuple[Any, ...]
Rule = tuple[Any, ...]


class AutodiffOps:
    """Base of the Autodiff op families: what their class methods read from the final
    ``Autodiff[B, C]`` class (declared here so that each family type-checks on its own)."""

    #: B, the wrapped backend.
    InnerBackend: ClassVar[type[Backend]]
    #: The checkpoint strategy's ``record``: wraps an inner result in a tracked tensor.
    record: ClassVar[Callable[..., AutodiffTensor]]


class InnerCall:
    """Retro-forward calling the inner op ``name`` with the float inputs, then the params."""

    __slots__ = ("name",)

    def __init__(self, name: str) -> None:
        self.name = name

    def __call__(self, B: Any, inputs: tuple[Any, ...], params: tuple[Any, ...]) -> Any:
        return getattr(B, self.name)(*inputs, *params)


def declare(name: str, backward: BackwardRule, *, saves_inputs: bool = False,
            saves_output: bool = False, compute_bound: bool = False,
            forward: RetroForward | None = None) -> Op:
    """An ``Op`` (``backward`` may be a staticmethod of the mixin declaring it); memory-bound
    ops default to re-running the inner op ``name`` as their retro-forward (inputs then
    params, the inner op's own argument order)."""
    backward = getattr(backward, "__func__", backward)
    if forward is None and not compute_bound:
        forward = InnerCall(name)
    return Op(name, backward, forward, saves_inputs=saves_inputs, saves_output=saves_output,
              compute_bound=compute_bound)


def unary(op: Op) -> Method:
    """``op.name(tensor)``: one float input, no params."""
    name = op.name

    def method(cls: Any, tensor: AutodiffTensor) -> AutodiffTensor:
        out = getattr(cls.InnerBackend, name)(tensor.primitive)
        if tensor.node is None:
            return AutodiffTensor(out)
        return cls.record(op, out, (tensor,), ())

    return finish(method, name)


def unary_params(op: Op, binder: ParamBinder | None = None) -> Method:
    """``op.name(tensor, *params)``: one float input followed by non-tensor arguments; with a
    ``binder``, params left to the protocol's defaults or passed by keyword are completed."""
    name = op.name
    if binder is None:

        def method(cls: Any, tensor: AutodiffTensor, *params: Any) -> AutodiffTensor:
            out = getattr(cls.InnerBackend, name)(tensor.primitive, *params)
            if tensor.node is None:
                return AutodiffTensor(out)
            return cls.record(op, out, (tensor,), params)

        return finish(method, name)
    count = binder.count

    def completing(cls: Any, tensor: AutodiffTensor, *params: Any,
                   **keywords: Any) -> AutodiffTensor:
        if keywords or len(params) != count:
            params = binder(params, keywords)
        out = getattr(cls.InnerBackend, name)(tensor.primitive, *params)
        if tensor.node is None:
            return AutodiffTensor(out)
        return cls.record(op, out, (tensor,), params)

    return finish(completing, name)


def binary(op: Op) -> Method:
    """``op.name(lhs, rhs)``: two float inputs, broadcasting."""
    name = op.name

    def method(cls: Any, lhs: AutodiffTensor, rhs: AutodiffTensor) -> AutodiffTensor:
        out = getattr(cls.InnerBackend, name)(lhs.primitive, rhs.primitive)
        if lhs.node is None and rhs.node is None:
            return AutodiffTensor(out)
        return cls.record(op, out, (lhs, rhs), ())

    return finish(method, name)


def indexed(op: Op, dim_arg: int = 0) -> Method:
    """``op.name(tensor, *params) -> (values, indices)`` where ``params[dim_arg]`` is the dim:
    the values are tracked and recorded with ``(dim, indices)``; the inner backend's int
    indices come back as they are."""
    name = op.name

    def method(cls: Any, tensor: AutodiffTensor, *params: Any) -> tuple[AutodiffTensor, Any]:
        values, indices = getattr(cls.InnerBackend, name)(tensor.primitive, *params)
        if tensor.node is None:
            return AutodiffTensor(values), indices
        return cls.record(op, values, (tensor,), (params[dim_arg], indices)), indices

    return finish(method, name)


class _IndexedWriteForward:
    """Retro-forward of ``name(tensor, dim, indices, values)`` (inputs (tensor, values),
    params (dim, indices))."""

    __slots__ = ("name",)

    def __init__(self, name: str) -> None:
        self.name = name

    def __call__(self, B: Any, inputs: tuple[Any, ...], params: tuple[Any, ...]) -> Any:
        return getattr(B, self.name)(inputs[0], params[0], params[1], inputs[1])


def indexed_write(name: str, backward: BackwardRule) -> Method:
    """``name(tensor, dim, indices, values)``: scatter and select writes, tracked in both the
    tensor and the values."""
    op = declare(name, backward, forward=_IndexedWriteForward(name))

    def method(cls: Any, tensor: AutodiffTensor, dim: int, indices: Any,
               values: AutodiffTensor) -> AutodiffTensor:
        out = getattr(cls.InnerBackend, name)(tensor.primitive, dim, indices, values.primitive)
        if tensor.node is None and values.node is None:
            return AutodiffTensor(out)
        return cls.record(op, out, (tensor, values), (dim, indices))

    return finish(method, name)


def constant(name: str, doc: str) -> Method:
    """``name(*args)``: a float result that never carries a graph (creation, conversion)."""

    def method(cls: Any, *args: Any) -> AutodiffTensor:
        return AutodiffTensor(getattr(cls.InnerBackend, name)(*args))

    return finish(method, name, doc)


def on_inner(name: str, doc: str) -> Method:
    """``name(tensor, *args)`` delegated to the inner backend with the inner primitive (ops
    whose result is not a float tensor: data, device, comparisons, indices)."""

    def method(cls: Any, tensor: AutodiffTensor, *args: Any) -> Any:
        return getattr(cls.InnerBackend, name)(tensor.primitive, *args)

    return finish(method, name, doc)


def on_inners(name: str, doc: str) -> Method:
    """``name(lhs, rhs)`` of two float tensors with a non-float result (comparisons)."""

    def method(cls: Any, lhs: AutodiffTensor, rhs: AutodiffTensor) -> Any:
        return getattr(cls.InnerBackend, name)(lhs.primitive, rhs.primitive)

    return finish(method, name, doc)


def finish(method: Callable[..., Any], name: str, doc: str | None = None) -> Method:
    method.__name__ = method.__qualname__ = name
    method.__doc__ = doc or f"``{name}`` on the inner backend, recorded when an input is tracked."
    return classmethod(method)


def any_tracked(tensors: tuple[AutodiffTensor, ...]) -> bool:
    """Whether any of ``tensors`` carries a graph node."""
    return any(t.node is not None for t in tensors)
