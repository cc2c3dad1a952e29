# ruff: noqa: N803 - rules name the inner backend type ``B``, as Burn's generics do
"""The elementwise ops of the Autodiff backend, generated from the table of local partials
(``burnpy.autodiff.derivatives``): each op records one node whose reverse rule scales the
incoming gradient by each tracked input's partial."""

from __future__ import annotations

from typing import Any

from burnpy.autodiff.derivatives import (
    Elementwise,
    ParamBinder,
    Partial,
    generated_from_table,
)
from burnpy.autodiff.ops._define import (
    AutodiffOps,
    Method,
    Params,
    Parents,
    Rule,
    Saved,
    binary,
    declare,
    unary,
    unary_params,
)
from burnpy.autodiff.rule_helpers import zeros


class ReverseRule:
    """The reverse rule of a table entry: ``grad * partial`` for each tracked input."""

    __slots__ = ("missing", "partials")

    def __init__(self, entry: Elementwise) -> None:
        self.partials: tuple[Partial, ...] = entry.partials
        #: What the partials receive for inputs the op does not save.
        self.missing: tuple[None, ...] = (None,) * entry.arity

    def __call__(self, B: Any, grad: Any, inputs: Saved, output: Any, params: Params,
                 parents: Parents) -> Rule:
        args = self.missing if inputs is None else inputs
        if len(self.partials) == 1:  # one input, tracked since the op was recorded
            return (self.partials[0](B, grad, output, *args, *params),)
        return tuple([None if parent is None else partial(B, grad, output, *args, *params)
                      for partial, parent in zip(self.partials, parents, strict=True)])


def _zero_rule(B: Any, grad: Any, inputs: Saved, output: Any, params: Params,
               parents: Parents) -> Rule:
    """Piecewise-constant ops: a zero gradient."""
    return (zeros(B, grad.shape, grad),)


def recorded(entry: Elementwise) -> Method:
    """The Autodiff op of a table entry: the inner op, recorded when an input is tracked."""
    rule = ReverseRule(entry) if entry.partials else _zero_rule
    op = declare(entry.name, rule, saves_inputs=entry.uses_inputs,
                 saves_output=entry.uses_output)
    if entry.arity == 2:
        return binary(op)
    binder = ParamBinder(entry)
    return unary(op) if binder.count == 0 else unary_params(op, binder)


@generated_from_table(recorded)
class AutodiffElementwiseOps(AutodiffOps):
    """Every op of ``derivatives.ELEMENTWISE``, recorded with its generated reverse rule."""
