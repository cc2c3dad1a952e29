"""``ReferenceBackend``: only the required core of the Backend protocol, taken from CpuBackend.

Every provided (default, composed) op of ``burnpy.backend.ops`` runs as written here, so the
conformance, gradient and tangent suites on this backend test each default, whichever concrete
backend happens to override it. The class is built from the ``@required`` markers, so an op
that becomes required (or provided) changes it without an edit here.
"""

from __future__ import annotations

from typing import Any

from burnpy.backend.base import Backend
from burnpy.backend.ops._marker import is_required
from burnpy_cpu import CpuBackend


def required_ops(backend: type[Backend] = Backend) -> list[str]:
    """The names of the ops marked ``@required`` on the protocol, sorted."""
    return sorted(name for name in dir(backend) if is_required(getattr(backend, name, None)))


def _attribute(cls: type, name: str) -> Any:
    """``name`` as ``cls`` defines it (the raw staticmethod/classmethod object, not bound), from
    the first class of its MRO that has it."""
    for klass in cls.__mro__:
        if name in vars(klass):
            return vars(klass)[name]
    raise AttributeError(f"{cls.__name__} has no attribute {name!r}")


def _namespace() -> dict[str, Any]:
    """CpuBackend's required ops, its associated types, devices and seeding (what ``Backend``
    itself declares), and its private helpers (what the protocol does not name); every other
    op is left to the protocol's default."""
    own = [name for name in vars(Backend) if not name.startswith("__")]
    helpers = [name for name in dir(CpuBackend) if not hasattr(Backend, name)]
    namespace = {name: _attribute(CpuBackend, name)
                 for name in (*required_ops(), *own, *helpers)}
    # The hot-path flag promises NumPy-style broadcasting and promotion from every binary op,
    # defaults included: the reference makes no such promise, so the protocol layer checks.
    namespace["trusted_binary_ops"] = False
    namespace["__doc__"] = __doc__
    namespace["__module__"] = __name__
    return namespace


ReferenceBackend: type[Backend] = type("ReferenceBackend", (Backend,), _namespace())
