"""Symbolic Python scalars for ``bp.compile``: state scalars (a learning rate, a step count)
and, with ``dynamic=True``, the dims of its tensor arguments, which a recorded graph reads as
inputs rather than as the values they had when recorded.

While ``fn`` is recorded, each scalar ``bp.compile`` tracks (an optimizer group's ``"lr"``, a
parameter's step count) is replaced in its holder by a ``SymFloat`` / ``SymInt``: a real
``float`` / ``int`` with that value, so eager code and kernels compute exactly as usual, that
also carries how to compute it from the tracked scalars' current values. Arithmetic keeps the
expression (``lr * 0.5``, ``step + 1``); a value passed to a recorded op stays in the node's
arguments, where the replay evaluates it anew each call. Where Python code branches on a value
(comparisons, ``bool``) or converts it (``float()``, ``int()``), the outcome is kept as a guard
on the ``Tape``: a later call whose scalars give another outcome records again.
"""

from __future__ import annotations

import operator
from collections.abc import Callable, Sequence
from typing import Any

#: An expression over the tracked scalars' current values.
Expr = Callable[[Sequence[Any]], Any]


class Tape:
    """The guards a recording's symbolic scalars collected: (expression, recorded outcome)."""

    __slots__ = ("guards",)

    def __init__(self) -> None:
        self.guards: list[tuple[Expr, Any]] = []

    def holds(self, values: Sequence[Any]) -> bool:
        """Whether every guard gives its recorded outcome on ``values``."""
        return all(expr(values) == outcome for expr, outcome in self.guards)


class Sym:
    """What ``SymInt`` and ``SymFloat`` share: the plain value, its expression, the tape, and
    whether it depends on a tensor's dim (``dims``: a dynamic recording's shape arithmetic)."""

    _v: Any
    _expr: Expr
    _tape: Tape
    _dims: bool

    @property
    def expr(self) -> Expr:
        """How the value is computed from the tracked scalars' values."""
        return self._expr

    @property
    def value(self) -> Any:
        """The plain ``int`` / ``float`` value this scalar had when recorded."""
        return self._v

    @property
    def dims(self) -> bool:
        """Whether the value depends on a symbolic dim of a tensor."""
        return self._dims

    def pin(self) -> None:
        """Guard that the value stays what it is (a recording baked it in)."""
        self._tape.guards.append((self._expr, self._v))


class SymInt(Sym, int):
    """An ``int`` that carries its expression over the tracked scalars (see the module)."""


class SymFloat(Sym, float):
    """A ``float`` that carries its expression over the tracked scalars (see the module)."""


def make(value: Any, expr: Expr, tape: Tape, dims: bool = False) -> Any:
    """``value`` as a symbolic scalar computing ``expr`` (a plain value unless int or float)."""
    kind = type(value)
    if kind is bool or not isinstance(value, int | float):
        return value
    sym: Sym = SymFloat(value) if isinstance(value, float) else SymInt(value)
    sym._v = float(value) if isinstance(value, float) else int(value)
    sym._expr = expr
    sym._tape = tape
    sym._dims = dims
    return sym


def to_float(value: Any) -> Any:
    """``float(value)``, symbolic when ``value`` is (``float()`` of a ``Sym`` is a plain float,
    Python converts what ``__float__`` gives, which would bake a dim into a recording)."""
    return operator.mul(value, 1.0) if isinstance(value, Sym) else float(value)


def tracked(value: Any, position: int, tape: Tape, dims: bool = False) -> Any:
    """The symbolic scalar reading tracked value number ``position`` (a dim where ``dims``)."""
    return make(value, operator.itemgetter(position), tape, dims)


def _parts(x: Any) -> tuple[Any, Expr | None]:
    return (x._v, x._expr) if isinstance(x, Sym) else (x, None)


def _operand(other: Any) -> bool:
    return isinstance(other, int | float)


def _arithmetic(op: Callable[[Any, Any], Any]) -> tuple[Callable[..., Any], Callable[..., Any]]:
    """The forward and reflected methods of a binary arithmetic operator."""

    def forward(self: Sym, other: Any) -> Any:
        if not _operand(other):
            return NotImplemented
        value, expr = _parts(other)
        mine = self._expr
        if expr is None:
            return make(op(self._v, value), lambda v: op(mine(v), value), self._tape,
                        self._dims)
        theirs = expr
        return make(op(self._v, value), lambda v: op(mine(v), theirs(v)), self._tape,
                    self._dims or other._dims)

    def reflected(self: Sym, other: Any) -> Any:
        if not _operand(other):
            return NotImplemented
        mine = self._expr
        return make(op(other, self._v), lambda v: op(other, mine(v)), self._tape, self._dims)

    return forward, reflected


def _unary(op: Callable[[Any], Any]) -> Callable[..., Any]:
    def method(self: Sym) -> Any:
        mine = self._expr
        return make(op(self._v), lambda v: op(mine(v)), self._tape, self._dims)

    return method


def _comparison(op: Callable[[Any, Any], bool]) -> Callable[..., Any]:
    """A comparison: its outcome, kept as a guard."""

    def method(self: Sym, other: Any) -> Any:
        if not _operand(other):
            return NotImplemented
        value, expr = _parts(other)
        mine = self._expr
        outcome = op(self._v, value)
        if expr is None:
            self._tape.guards.append((lambda v: op(mine(v), value), outcome))
        else:
            theirs = expr
            self._tape.guards.append((lambda v: op(mine(v), theirs(v)), outcome))
        return outcome

    return method


def _conversion(kind: Callable[[Any], Any]) -> Callable[..., Any]:
    """``float()``, ``int()``, ``bool()``, ``index()``: the plain value, kept as a guard."""

    def method(self: Sym) -> Any:
        mine = self._expr
        outcome = kind(self._v)
        self._tape.guards.append((lambda v: kind(mine(v)), outcome))
        return outcome

    return method


def _hash(self: Sym) -> int:
    # no guard: equal keys still compare with __eq__, which guards
    return hash(self._v)


def _repr(self: Sym) -> str:
    return repr(self._v)


for _name, _op in (("add", operator.add), ("sub", operator.sub), ("mul", operator.mul),
                   ("truediv", operator.truediv), ("floordiv", operator.floordiv),
                   ("mod", operator.mod), ("pow", operator.pow)):
    _forward, _reflected = _arithmetic(_op)
    for _cls in (SymInt, SymFloat):
        setattr(_cls, f"__{_name}__", _forward)
        setattr(_cls, f"__r{_name}__", _reflected)
for _name, _op1 in (("neg", operator.neg), ("pos", operator.pos), ("abs", operator.abs)):
    for _cls in (SymInt, SymFloat):
        setattr(_cls, f"__{_name}__", _unary(_op1))
for _name, _cmp in (("eq", operator.eq), ("ne", operator.ne), ("lt", operator.lt),
                    ("le", operator.le), ("gt", operator.gt), ("ge", operator.ge)):
    for _cls in (SymInt, SymFloat):
        setattr(_cls, f"__{_name}__", _comparison(_cmp))
for _cls in (SymInt, SymFloat):
    for _name, _method in (("float", _conversion(float)), ("int", _conversion(int)),
                           ("bool", _conversion(bool)), ("hash", _hash), ("repr", _repr)):
        setattr(_cls, f"__{_name}__", _method)
SymInt.__index__ = _conversion(operator.index)  # type: ignore[method-assign]
