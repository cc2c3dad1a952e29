"""Symbolic dims in a Capture recording (``bp.compile(dynamic=True)``).

While a dynamic recording runs, a tensor whose dims depend on the dims of the recorded
function's arguments is seen above Capture as a ``Shaped``: B's primitive with a shape of
``SymInt``s (``burnpy.ir.symbolic``), so the code reading it (Tensor, Autodiff, modules, the
user's function) computes shapes, reshape targets and slice bounds as expressions of those
dims, and the recorded ops keep them. Each op that reads such a tensor or such a number runs on
B with the plain values, and its results' symbolic shapes come from the op's shape rule
(``burnpy.ir.shapes``), checked against the shapes B made; an op with no rule, or whose rule
disagrees, pins the dims it read (a guard that each keeps its value), so the recording is
sound either way and merely less general.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from burnpy.ir.shapes import result_shapes
from burnpy.ir.symbolic import Sym


class Shaped:
    """B's primitive ``inner`` with symbolic dims ``shape``; anything else is read from it."""

    __slots__ = ("dtype", "inner", "shape")

    def __init__(self, inner: Any, shape: tuple[Any, ...]) -> None:
        self.inner = inner
        self.shape = shape
        self.dtype = inner.dtype

    @property
    def ndim(self) -> int:
        return len(self.shape)

    @property
    def size(self) -> Any:
        count: Any = 1
        for dim in self.shape:
            count = count * dim
        return count

    def __getattr__(self, name: str) -> Any:
        return getattr(self.inner, name)

    def __array__(self, dtype: Any = None, copy: Any = None) -> Any:
        return np.asarray(self.inner, dtype=dtype)

    def __repr__(self) -> str:
        return f"Shaped({list(self.shape)}, {self.inner!r})"


def plain(primitive: Any) -> Any:
    """B's own primitive of ``primitive`` (a ``Shaped`` or B's already)."""
    return primitive.inner if type(primitive) is Shaped else primitive


def symbolic(arg: Any) -> bool:
    """Whether an op argument is, or holds, a ``Shaped`` tensor or a number computed from dims."""
    kind = type(arg)
    if kind is Shaped:
        return True
    if isinstance(arg, Sym):
        return arg.dims
    if kind is tuple or kind is list:
        return any(symbolic(a) for a in arg)
    if kind is slice:
        return symbolic(arg.start) or symbolic(arg.stop) or symbolic(arg.step)
    if kind is dict:
        return any(symbolic(a) for a in arg.values())
    return False


def unwrapped(arg: Any) -> Any:
    """A tensor argument (or a sequence of them) with B's own primitives."""
    kind = type(arg)
    if kind is Shaped:
        return arg.inner
    if kind is tuple or kind is list:
        return kind(unwrapped(a) for a in arg)
    return arg


def _pin(arg: Any) -> None:
    """Guard that every dim-derived number in ``arg`` keeps its value."""
    kind = type(arg)
    if kind is Shaped:
        _pin(arg.shape)
    elif isinstance(arg, Sym):
        if arg.dims:
            arg.pin()
    elif kind is tuple or kind is list:
        for a in arg:
            _pin(a)
    elif kind is slice:
        _pin((arg.start, arg.stop, arg.step))
    elif kind is dict:
        _pin(tuple(arg.values()))


def _made(result: Any, out: list[Any]) -> None:
    if result is None:
        return
    if isinstance(result, tuple | list):
        for r in result:
            _made(r, out)
    else:
        out.append(result)


def _rebuilt(result: Any, shaped: dict[int, Shaped]) -> Any:
    if result is None:
        return None
    if isinstance(result, tuple | list):
        return type(result)(_rebuilt(r, shaped) for r in result)
    return shaped.get(id(result), result)


def _value(dim: Any) -> Any:
    return dim.value if isinstance(dim, Sym) else dim


def _shape_of(primitive: Any) -> tuple[Any, ...]:
    return tuple(primitive.shape)


def shaped_result(op: str, args: tuple[Any, ...], kwargs: dict[str, Any], result: Any) -> Any:
    """``result`` (what B's ``op`` made from the plain arguments) with each tensor whose shape
    rule gives symbolic dims as a ``Shaped``; where the rule is missing or disagrees with B,
    the dims the call read are pinned and the result stays plain."""
    made: list[Any] = []
    _made(result, made)
    try:
        shapes = result_shapes(op, args, kwargs, _shape_of)
    except Exception:  # a rule that cannot tell: pinning keeps the graph sound
        shapes = None
    if shapes is None or len(shapes) != len(made) or any(
            len(s) != len(m.shape) or any(_value(d) != v for d, v in zip(s, m.shape, strict=True))
            for s, m in zip(shapes, made, strict=True)):
        _pin(args)
        _pin(kwargs)
        return result
    wrapped = {id(m): Shaped(m, tuple(s)) for s, m in zip(shapes, made, strict=True)
               if any(isinstance(d, Sym) for d in s)}
    return _rebuilt(result, wrapped) if wrapped else result
