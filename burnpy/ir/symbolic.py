"""Symbolic Python scalars for ``bp.compile``: state scalars (a learning rate, a step count)
and, with ``dynamic=True``, the dims of its tensor arguments, which a recorded graph reads as
inputs rather than as the values they had when recorded.

While ``fn`` is recorded, each scalar ``bp.compile`` tracks (an optimizer group's ``"lr"``, a
parameter's step count) is replaced in its holder by a ``SymFloat`` / ``SymInt``: a real
``float`` / ``int`` with that value, so eager code and kernels compute exactly as usual, that
also carries how to compute it from the tracked values: a ``Term``, a tuple tree over the
values' positions and constants. Arithmetic keeps the term (``lr * 0.5``, ``step + 1``); a
value passed to a recorded op stays in the node's arguments, where the replay evaluates it anew
each call. Where Python code branches on a value (comparisons, ``bool``) or converts it
(``float()``, ``int()``), the outcome is kept as a guard on the ``Tape``, once per distinct
term: a later call whose values give another outcome records again. Terms render as Python
source (``source``), so a replay's guards and arguments are plain generated code.

What Python does in C reads a ``SymInt`` as the plain int it is, without a guard: ``range(n)``,
``np.arange(n)``, a list index, and a plain float on the left of an operator (``0.1 * n``:
``float.__mul__`` takes any int; ``n * 0.1`` stays symbolic). ``bp.compile(dynamic=True)``
therefore trusts a graph only once a recording at other sizes gives the same program.
"""

from __future__ import annotations

import operator
from collections.abc import Callable, Sequence
from typing import Any

#: An expression over the tracked scalars' current values.
Expr = Callable[[Sequence[Any]], Any]

#: How a value is computed: ``("v", position)`` reads tracked value ``position``,
#: ``("c", constant, repr)`` is a constant (its repr tells ``0.0`` from ``-0.0``), and
#: ``(op, *operands)`` applies one of ``_OPERATORS`` / ``_UNARY`` / ``_CONVERSIONS``.
Term = tuple[Any, ...]

_OPERATORS: dict[str, tuple[str, Callable[[Any, Any], Any]]] = {
    "add": ("+", operator.add), "sub": ("-", operator.sub), "mul": ("*", operator.mul),
    "truediv": ("/", operator.truediv), "floordiv": ("//", operator.floordiv),
    "mod": ("%", operator.mod), "pow": ("**", operator.pow),
    "eq": ("==", operator.eq), "ne": ("!=", operator.ne), "lt": ("<", operator.lt),
    "le": ("<=", operator.le), "gt": (">", operator.gt), "ge": (">=", operator.ge),
}
_UNARY: dict[str, tuple[str, Callable[[Any], Any]]] = {
    "neg": ("-", operator.neg), "pos": ("+", operator.pos), "abs": ("abs", operator.abs),
}
_CONVERSIONS: dict[str, Callable[[Any], Any]] = {
    "float": float, "int": int, "bool": bool, "index": operator.index,
}
_COMPARISONS = ("eq", "ne", "lt", "le", "gt", "ge")


def source(term: Term, values: str, constant: Callable[[Any], str]) -> str:
    """``term`` as a Python expression reading the list named ``values``; ``constant(c)``
    names a constant that is not an int, a bool or None in the caller's scope."""
    head = term[0]
    if head == "v":
        return f"{values}[{term[1]}]"
    if head == "c":
        c = term[1]
        return repr(c) if c is None or type(c) in (int, bool) else constant(c)
    if head in _OPERATORS:
        a, b = (source(t, values, constant) for t in term[1:])
        return f"({a} {_OPERATORS[head][0]} {b})"
    a = source(term[1], values, constant)
    if head in _UNARY:
        symbol = _UNARY[head][0]
        return f"{symbol}({a})" if symbol == "abs" else f"({symbol}{a})"
    return f"{constant(_CONVERSIONS[head])}({a})"


_EVALUATORS: dict[Term, Expr] = {}


def evaluator(term: Term) -> Expr:
    """``term`` as a function of the tracked values (compiled once per distinct term)."""
    found = _EVALUATORS.get(term)
    if found is None:
        scope: dict[str, Any] = {}

        def constant(c: Any) -> str:
            name = f"k{len(scope)}"
            scope[name] = c
            return name

        found = eval(f"lambda v: {source(term, 'v', constant)}", scope)  # our own source
        if len(_EVALUATORS) < 65536:
            _EVALUATORS[term] = found
    return found


class Tape:
    """The guards a recording's symbolic scalars collected: (term, recorded outcome), each
    distinct one once."""

    __slots__ = ("_seen", "terms")

    def __init__(self) -> None:
        self.terms: list[tuple[Term, Any]] = []
        self._seen: set[tuple[Term, Any, str]] = set()

    def add(self, term: Term, outcome: Any) -> None:
        """Keep the guard that ``term`` gives ``outcome``."""
        key = (term, outcome, repr(outcome))
        if key not in self._seen:
            self._seen.add(key)
            self.terms.append((term, outcome))

    @property
    def guards(self) -> list[tuple[Expr, Any]]:
        """The guards as (function of the tracked values, recorded outcome)."""
        return [(evaluator(term), outcome) for term, outcome in self.terms]

    def holds(self, values: Sequence[Any]) -> bool:
        """Whether every guard gives its recorded outcome on ``values``."""
        return all(evaluator(term)(values) == outcome for term, outcome in self.terms)


class Sym:
    """What ``SymInt`` and ``SymFloat`` share: the plain value, its term, the tape, and
    whether it depends on a tensor's dim (``dims``: a dynamic recording's shape arithmetic)."""

    _v: Any
    _term: Term
    _tape: Tape
    _dims: bool

    @property
    def term(self) -> Term:
        """How the value is computed from the tracked values."""
        return self._term

    @property
    def expr(self) -> Expr:
        """The value as a function of the tracked values."""
        return evaluator(self._term)

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
        self._tape.add(self._term, self._v)


class SymInt(Sym, int):
    """An ``int`` that carries its term over the tracked scalars (see the module)."""


class SymFloat(Sym, float):
    """A ``float`` that carries its term over the tracked scalars (see the module)."""


def make(value: Any, term: Term, tape: Tape, dims: bool = False) -> Any:
    """``value`` as a symbolic scalar computing ``term`` (a plain value unless int or float)."""
    kind = type(value)
    if kind is bool or not isinstance(value, int | float):
        return value
    sym: Sym = SymFloat(value) if isinstance(value, float) else SymInt(value)
    sym._v = float(value) if isinstance(value, float) else int(value)
    sym._term = term
    sym._tape = tape
    sym._dims = dims
    return sym


def to_float(value: Any) -> Any:
    """``float(value)``, symbolic when ``value`` is (``float()`` of a ``Sym`` is a plain float,
    Python converts what ``__float__`` gives, which would bake a dim into a recording)."""
    return operator.mul(value, 1.0) if isinstance(value, Sym) else float(value)


def tracked(value: Any, position: int, tape: Tape, dims: bool = False) -> Any:
    """The symbolic scalar reading tracked value number ``position`` (a dim where ``dims``)."""
    return make(value, ("v", position), tape, dims)


def _operand(other: Any) -> bool:
    return isinstance(other, int | float)


def _term(x: Any) -> Term:
    return x._term if isinstance(x, Sym) else ("c", x, repr(x))


def _plain(x: Any) -> Any:
    return x._v if isinstance(x, Sym) else x


def _binary(name: str) -> tuple[Callable[..., Any], Callable[..., Any]]:
    """The forward and reflected methods of binary operator ``name``; a comparison returns
    its plain outcome and keeps it as a guard."""
    op = _OPERATORS[name][1]
    comparison = name in _COMPARISONS

    def forward(self: Sym, other: Any) -> Any:
        if not _operand(other):
            return NotImplemented
        value = op(self._v, _plain(other))
        term = (name, self._term, _term(other))
        if comparison:
            self._tape.add(term, value)
            return value
        return make(value, term, self._tape,
                    self._dims or (isinstance(other, Sym) and other._dims))

    def reflected(self: Sym, other: Any) -> Any:
        if not _operand(other):
            return NotImplemented
        return make(op(other, self._v), (name, _term(other), self._term), self._tape,
                    self._dims)

    return forward, reflected


def _unary(name: str) -> Callable[..., Any]:
    op = _UNARY[name][1]

    def method(self: Sym) -> Any:
        return make(op(self._v), (name, self._term), self._tape, self._dims)

    return method


def _conversion(name: str) -> Callable[..., Any]:
    """``float()``, ``int()``, ``bool()``, ``index()``: the plain value, kept as a guard."""
    kind = _CONVERSIONS[name]

    def method(self: Sym) -> Any:
        outcome = kind(self._v)
        self._tape.add((name, self._term), outcome)
        return outcome

    return method


def _hash(self: Sym) -> int:
    # no guard: equal keys still compare with __eq__, which guards
    return hash(self._v)


def _repr(self: Sym) -> str:
    return repr(self._v)


for _name in _OPERATORS:
    _forward, _reflected = _binary(_name)
    for _cls in (SymInt, SymFloat):
        setattr(_cls, f"__{_name}__", _forward)
        if _name not in _COMPARISONS:
            setattr(_cls, f"__r{_name}__", _reflected)
for _name in _UNARY:
    for _cls in (SymInt, SymFloat):
        setattr(_cls, f"__{_name}__", _unary(_name))
for _cls in (SymInt, SymFloat):
    for _name in ("float", "int", "bool"):
        setattr(_cls, f"__{_name}__", _conversion(_name))
    _cls.__hash__ = _hash  # type: ignore[method-assign,assignment]
    _cls.__repr__ = _repr  # type: ignore[method-assign,assignment]
SymInt.__index__ = _conversion("index")  # type: ignore[method-assign]
