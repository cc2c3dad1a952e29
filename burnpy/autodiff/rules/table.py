# ruff: noqa: N803 - rules name the inner backend type ``B``, as Burn's generics do
"""The declaration of an op that is not elementwise: its name, the kind of its call signature,
its reverse rule, its tangent rule and its flags (``Derivative``), built with one constructor
per signature kind. Both decorators generate their op from the same declaration
(``reverse.generated`` for Autodiff, ``tangent.generated`` for ForwardAD).

The conventions (the same argument order on both sides; ``inputs`` are the op's float inputs,
``params`` everything else the op was called with, as the kind records it):

- reverse ``rule(B, grad, inputs, output, params, parents) -> one gradient per float input``
  (None for an untracked input; ``inputs``/``output`` are None unless the op saves them);
- tangent ``rule(B, tangents, inputs, output, params) -> tangent or None``, ``tangents``
  aligned with ``inputs`` (None where an input carries none, never all None), or ``LINEAR``:
  the op itself applied to the tangents (zeros for those missing), for ops linear in their
  float inputs (layout, indexing, sums, the ``*_backward`` kernels in their gradient);
- ``COMPOSED`` on either side: that decorator runs the protocol's provided composition, which
  differentiates the op's parts.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from enum import Enum
from typing import Any, Final, Literal, TypeVar

from burnpy.autodiff.graph import BackwardRule, RetroForward

#: What rules receive: the saved inputs (or None), the float inputs' primals, the params,
#: the parents (graph nodes; None for untracked inputs), tangents (None where absent), and
#: what a reverse rule returns, one gradient per float input.
Saved = Any
Inputs = tuple[Any, ...]
Params = tuple[Any, ...]
Parents = tuple[Any, ...]
Tangents = tuple[Any, ...]
Grads = tuple[Any, ...]
#: ``rule(B, tangents, inputs, output, params) -> tangent or None`` (module docstring).
TangentRule = Callable[[Any, tuple[Any, ...], tuple[Any, ...], Any, tuple[Any, ...]], Any]
#: ``shape(lhs, rhs) -> output shape or None``: a binary op whose ForwardAD primal may be
#: deferred until read (None where the operands are not the simple case).
DeferredShape = Callable[[Any, Any], tuple[int, ...] | None]

#: The call signatures both decorators generate a method for (see the constructors below);
#: ``explicit`` ops are written by hand in their family's mixins, from the same declaration.
Kind = Literal["unary", "unary_params", "binary", "convert", "sequence", "assign", "indexed",
               "indexed_write", "with_bias", "weight_grad", "linear_in_grad", "explicit"]


class _Linear(Enum):
    LINEAR = "linear"


#: The tangent rule of an op linear in its float inputs: the op applied to the tangents.
LINEAR: Final = _Linear.LINEAR
#: No rule on this side: the decorator runs the protocol's composition.
COMPOSED: Final = None

Tangent = TangentRule | Literal[_Linear.LINEAR] | None


@dataclass(frozen=True, slots=True)
class Derivative:
    """One op's two rules and what the decorators need to record and replay it.

    ``forward`` recomputes the output from ``(inputs, params)`` (the op's retro-forward under
    balanced checkpointing, and its ``LINEAR`` tangent); ``dim_arg``, ``source`` and
    ``deferred`` belong to the ``indexed``, ``convert`` and ``binary`` kinds.
    """

    name: str
    kind: Kind
    reverse: BackwardRule | None
    tangent: Tangent
    forward: RetroForward | None = None
    saves_inputs: bool = False
    saves_output: bool = False
    compute_bound: bool = False
    dim_arg: int | None = 0
    source: Callable[[Any, Any], Any] | None = None
    deferred: DeferredShape | None = None


# ---- retro-forwards: the op from its recorded (inputs, params) -------------------------------
class _Forward:
    __slots__ = ("name",)

    def __init__(self, name: str) -> None:
        self.name = name


class InnerCall(_Forward):
    """``name(*inputs, *params)``: the inner op's own argument order."""

    __slots__ = ()

    def __call__(self, B: Any, inputs: tuple[Any, ...], params: tuple[Any, ...]) -> Any:
        return getattr(B, self.name)(*inputs, *params)


class _FirstParam(_Forward):
    """``name(input, params[0])`` (a conversion; ``params[1]`` is the source's dtype or
    device)."""

    __slots__ = ()

    def __call__(self, B: Any, inputs: tuple[Any, ...], params: tuple[Any, ...]) -> Any:
        return getattr(B, self.name)(inputs[0], params[0])


class _Sequence(_Forward):
    """``name(list(inputs), params[0])``."""

    __slots__ = ()

    def __call__(self, B: Any, inputs: tuple[Any, ...], params: tuple[Any, ...]) -> Any:
        return getattr(B, self.name)(list(inputs), params[0])


class _Assign(_Forward):
    """``name(inputs[0], params[0], inputs[1])``."""

    __slots__ = ()

    def __call__(self, B: Any, inputs: tuple[Any, ...], params: tuple[Any, ...]) -> Any:
        return getattr(B, self.name)(inputs[0], params[0], inputs[1])


class _IndexedWrite(_Forward):
    """``name(inputs[0], dim, indices, inputs[1])``."""

    __slots__ = ()

    def __call__(self, B: Any, inputs: tuple[Any, ...], params: tuple[Any, ...]) -> Any:
        return getattr(B, self.name)(inputs[0], params[0], params[1], inputs[1])


class _LinearInGrad(_Forward):
    """``name(params[0], inputs[0], *params[1:])``: the structural input comes first."""

    __slots__ = ()

    def __call__(self, B: Any, inputs: tuple[Any, ...], params: tuple[Any, ...]) -> Any:
        return getattr(B, self.name)(params[0], inputs[0], *params[1:])


def _picked(B: Any, inputs: tuple[Any, ...], params: tuple[Any, ...]) -> Any:
    """The values at the recorded indices along the recorded dim (``(dim, indices)``)."""
    return B.float_gather(inputs[0], params[0], params[1])


# ---- one constructor per signature kind ----------------------------------------------------
def unary(name: str, reverse: BackwardRule | None, tangent: Tangent, *,
          saves_inputs: bool = False, saves_output: bool = False) -> Derivative:
    """``name(tensor)``: one float input, no params."""
    return Derivative(name, "unary", reverse, tangent, InnerCall(name),
                      saves_inputs=saves_inputs, saves_output=saves_output)


def unary_params(name: str, reverse: BackwardRule | None, tangent: Tangent, *,
                 saves_inputs: bool = False, saves_output: bool = False) -> Derivative:
    """``name(tensor, *params)``: one float input, then positional non-tensor params (the
    recorded params)."""
    return Derivative(name, "unary_params", reverse, tangent, InnerCall(name),
                      saves_inputs=saves_inputs, saves_output=saves_output)


def binary(name: str, reverse: BackwardRule | None, tangent: Tangent, *,
           saves_inputs: bool = False, compute_bound: bool = False,
           deferred: DeferredShape | None = None) -> Derivative:
    """``name(lhs, rhs)``: two float inputs; with ``deferred``, ForwardAD defers the primal of
    a tangent-carrying call until read (the tangent rule then receives ``output`` None)."""
    return Derivative(name, "binary", reverse, tangent, InnerCall(name),
                      saves_inputs=saves_inputs, compute_bound=compute_bound,
                      deferred=deferred)


def convert(name: str, reverse: BackwardRule, tangent: Tangent,
            source: Callable[[Any, Any], Any]) -> Derivative:
    """``name(tensor, target)`` (cast, to_device): params ``(target, source(B, tensor))``."""
    return Derivative(name, "convert", reverse, tangent, _FirstParam(name), source=source)


def sequence(name: str, reverse: BackwardRule, tangent: Tangent) -> Derivative:
    """``name(tensors, dim)`` (cat): params ``(dim, each input's size along dim)``."""
    return Derivative(name, "sequence", reverse, tangent, _Sequence(name))


def assign(name: str, reverse: BackwardRule, tangent: Tangent) -> Derivative:
    """``name(tensor, where, value)`` (slice_assign, mask_where): inputs ``(tensor, value)``,
    params ``(where, value's shape)``."""
    return Derivative(name, "assign", reverse, tangent, _Assign(name))


def indexed(name: str, reverse: BackwardRule, tangent: Tangent, *, dim_arg: int | None = 0,
            saves_inputs: bool = False, forward: RetroForward | None = None) -> Derivative:
    """``name(tensor, *params) -> (values, indices)``: the values are differentiable, the int
    indices come back as they are. Params ``(params[dim_arg], indices)``, or ``(*params,
    indices)`` where ``dim_arg`` is None (then ``forward`` must be given)."""
    return Derivative(name, "indexed", reverse, tangent, forward or _picked,
                      saves_inputs=saves_inputs, dim_arg=dim_arg)


def indexed_write(name: str, reverse: BackwardRule, tangent: Tangent) -> Derivative:
    """``name(tensor, dim, indices, values)`` (scatter and select writes): inputs ``(tensor,
    values)``, params ``(dim, indices)``."""
    return Derivative(name, "indexed_write", reverse, tangent, _IndexedWrite(name))


def with_bias(name: str, reverse: BackwardRule, tangent: Tangent) -> Derivative:
    """``name(x, weight, bias, *params)`` (conv, linear) with an optional bias: inputs ``(x,
    weight)`` or ``(x, weight, bias)``; compute-bound, so its output is kept."""
    return Derivative(name, "with_bias", reverse, tangent, saves_inputs=True, compute_bound=True)


def weight_grad(name: str, reverse: BackwardRule, tangent: Tangent) -> Derivative:
    """``name(x, weight, grad, options)`` (a convolution's weight-gradient kernel): inputs ``(x,
    grad)``, params ``(weight, options)``, the weight fixing only the result's shape."""
    return Derivative(name, "weight_grad", reverse, tangent, saves_inputs=True,
                      compute_bound=True)


def linear_in_grad(name: str, reverse: BackwardRule | None, tangent: Tangent) -> Derivative:
    """``name(structural, grad, *params)`` (a ``*_backward`` kernel, linear in ``grad``): input
    ``(grad,)``, params ``(structural, *params)``."""
    return Derivative(name, "linear_in_grad", reverse, tangent, _LinearInGrad(name))


def explicit(name: str, reverse: BackwardRule, tangent: Tangent, *, forward: RetroForward | None,
             saves_inputs: bool = False, compute_bound: bool = False) -> Derivative:
    """An op whose recording is written by hand in its family's mixins (batch_norm returns a
    tuple, layer_norm takes an optional weight and bias among its params, attention saves
    its softmax weights)."""
    return Derivative(name, "explicit", reverse, tangent, forward, saves_inputs=saves_inputs,
                      compute_bound=compute_bound)


T = TypeVar("T")


def filling(entries: tuple[Derivative, ...], factories: dict[Kind, Callable[[Derivative], Any]],
            ruled: Callable[[Derivative], bool]) -> Callable[[type[T]], type[T]]:
    """A class decorator adding ``factories[entry.kind](entry)`` as the method ``entry.name``
    for every ``ruled`` entry (``explicit`` ones are the family mixin's own): one decorator's
    side of a family table."""

    def fill(cls: type[T]) -> type[T]:
        for entry in entries:
            if ruled(entry) and entry.kind != "explicit":
                setattr(cls, entry.name, factories[entry.kind](entry))
        return cls

    return fill
