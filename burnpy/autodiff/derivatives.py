"""The elementwise derivative table, and what the decorators generate from the tables.

Each elementwise op's local partials are declared in its registry entry
(``burnpy.ir.elementwise``): for each float input of the op, a *partial*
``partial(B, s, y, *inputs, *params) -> s * d y / d input``: the seed ``s`` scaled by the
derivative of the output ``y`` with respect to that input, written with the inner backend
``B``'s ops. An elementwise Jacobian is diagonal, so the same map serves both modes:

- Autodiff's reverse rule applies each partial to the incoming gradient (the graph then
  un-broadcasts it to the input's shape, centrally);
- ForwardAD's tangent rule applies each partial to that input's tangent and sums the terms.

Both rules, and the ops' recording, are generated from the registry's ``LOCAL_PARTIALS``
(``burnpy/autodiff/rules/elementwise.py``, through ``generated_from_table`` here): adding an
elementwise op adds its registry entry and nothing in either decorator.
"""

from __future__ import annotations

import inspect
from collections.abc import Callable
from typing import Any, TypeVar

from burnpy.ir.elementwise import LOCAL_PARTIALS, LocalPartials

T = TypeVar("T")

#: Creation ops: a float result that depends on no float input, so it carries no derivative.
#: ``(name, doc)``; ``float_from_data`` is not here since Autodiff counts its host transfers.
CONSTANT_RESULTS: tuple[tuple[str, str], ...] = (
    ("float_empty", "Uninitialized constant storage."),
    ("float_full", "A constant filled tensor."),
    ("float_zeros", "A constant of zeros."),
    ("float_ones", "A constant of ones."),
    ("float_random", "Constant random samples."),
)

#: Float ops whose result is not a float tensor (bools, indices): they have no derivative, and
#: each decorator runs them on the inner values as they are. ``(name, float inputs, doc)``.
NON_FLOAT_RESULTS: tuple[tuple[str, int, str], ...] = (
    ("float_device", 1, "The device of the inner value."),
    ("float_into_int", 1, "Truncation into an int tensor (no gradient)."),
    ("float_equal", 2, "lhs == rhs."),
    ("float_not_equal", 2, "lhs != rhs."),
    ("float_greater", 2, "lhs > rhs."),
    ("float_greater_equal", 2, "lhs >= rhs."),
    ("float_lower", 2, "lhs < rhs."),
    ("float_lower_equal", 2, "lhs <= rhs."),
    ("float_equal_elem", 1, "lhs == number."),
    ("float_not_equal_elem", 1, "lhs != number."),
    ("float_greater_elem", 1, "lhs > number."),
    ("float_greater_equal_elem", 1, "lhs >= number."),
    ("float_lower_elem", 1, "lhs < number."),
    ("float_lower_equal_elem", 1, "lhs <= number."),
    ("float_is_nan", 1, "True where NaN."),
    ("float_is_inf", 1, "True where +-inf."),
    ("float_any", 1, "Whether any element is non-zero."),
    ("float_any_dim", 1, "Whether any element along dim is non-zero."),
    ("float_all", 1, "Whether every element is non-zero."),
    ("float_all_dim", 1, "Whether every element along dim is non-zero."),
    ("float_argmax", 1, "Index of the max along dim (no gradient)."),
    ("float_argmin", 1, "Index of the min along dim (no gradient)."),
    ("float_argsort", 1, "Sorting indices along dim (no gradient)."),
)


# ---- what the decorators generate from the tables -----------------------------------------------
class ParamBinder:
    """Completes an op call's params from the protocol's signature: defaults left out and
    params passed by keyword (the generated ops' fast path takes positional params only)."""

    __slots__ = ("_signature", "arity", "count")

    def __init__(self, entry: LocalPartials) -> None:
        # Imported here: the protocol is needed only when the decorators are built.
        from burnpy.backend.base import Backend

        self._signature = inspect.signature(getattr(Backend, entry.name))
        self.arity = entry.arity
        self.count = len(self._signature.parameters) - entry.arity

    def __call__(self, params: tuple[Any, ...], keywords: dict[str, Any]) -> tuple[Any, ...]:
        bound = self._signature.bind(*(None,) * self.arity, *params, **keywords)
        bound.apply_defaults()
        return tuple(bound.args[self.arity:])


def generated_from_table(make: Callable[[LocalPartials], Any]) -> Callable[[type[T]], type[T]]:
    """A class decorator adding ``make(entry)`` as the method ``entry.name`` for every entry
    of the registry's ``LOCAL_PARTIALS`` (each decorator's elementwise op family)."""

    def fill(cls: type[T]) -> type[T]:
        for entry in LOCAL_PARTIALS:
            setattr(cls, entry.name, make(entry))
        return cls

    return fill


def without_derivative(constant: Callable[[str, str], Any], unary: Callable[[str, str], Any],
                       binary: Callable[[str, str], Any]) -> Callable[[type[T]], type[T]]:
    """A class decorator adding every op of ``CONSTANT_RESULTS`` and ``NON_FLOAT_RESULTS``,
    built by the decorator's ``constant(name, doc)`` and ``unary(name, doc)`` /
    ``binary(name, doc)`` factories of inner-value calls."""

    def fill(cls: type[T]) -> type[T]:
        for name, doc in CONSTANT_RESULTS:
            setattr(cls, name, constant(name, doc))
        for name, inputs, doc in NON_FLOAT_RESULTS:
            setattr(cls, name, (binary if inputs == 2 else unary)(name, doc))
        return cls

    return fill
