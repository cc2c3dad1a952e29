"""Which class gives a decorator backend each differentiable op: its own rule or the protocol's
provided composition.

A decorator (``Autodiff``, ``ForwardAD``, or a user's) either defines an op's rule itself or
inherits the protocol's provided default, which then runs on the decorator's own ops and so
records (or carries tangents through) its parts. A required op has no composition to inherit:
a decorator that leaves one without a rule is incomplete. Both facts come from the classes
themselves, so no list of op names needs keeping by hand.
"""

from __future__ import annotations

from burnpy.backend.base import Backend
from burnpy.backend.ops._marker import is_required
from burnpy.backend.ops.activation_ops import ActivationOps
from burnpy.backend.ops.float_ops import FloatOps
from burnpy.backend.ops.module_ops import ModuleOps

#: The protocol families whose ops carry gradients: a decorator owes each a rule or a
#: composition. Int, bool and quantized ops pass through to the inner backend.
DIFFERENTIABLE_FAMILIES: tuple[type, ...] = (FloatOps, ModuleOps, ActivationOps)


def differentiable_ops() -> list[str]:
    """The names the differentiable families declare (non-dunder), in declaration order."""
    return [name for family in DIFFERENTIABLE_FAMILIES for name in vars(family)
            if not name.startswith("__")]


def rule_owner(decorator: type, name: str) -> type:
    """The class of ``decorator``'s MRO that defines ``name``."""
    for klass in decorator.__mro__:
        if name in vars(klass):
            return klass
    raise AttributeError(f"{decorator.__name__} has no op {name!r}")


def is_composed(decorator: type, name: str) -> bool:
    """Whether ``decorator`` runs the protocol's own definition of ``name`` (no rule of its own)."""
    return rule_owner(decorator, name) in Backend.__mro__


def composed_ops(decorator: type) -> list[str]:
    """The differentiable ops ``decorator`` leaves to the protocol's definition."""
    return [name for name in differentiable_ops() if is_composed(decorator, name)]


def missing_rules(decorator: type) -> list[str]:
    """The required differentiable ops ``decorator`` leaves without a rule: the protocol has
    only their signature, so nothing would compute them."""
    return [name for name in composed_ops(decorator)
            if is_required(vars(rule_owner(decorator, name))[name])]
