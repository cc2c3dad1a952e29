"""The ``required`` and ``provided`` markers, and the op lists read from them.

Every op of the Backend protocol is one or the other:

- ``@required``: a signature with a docstring (no body) that each concrete backend must
  implement; ``Backend.__init_subclass__`` names every one left out.
- ``@provided``: a default composed from other ops (``cls`` is the whole backend, so it may
  call any family's ops), which a backend may override for speed.

``required_ops(B)`` and ``provided_ops(B)`` list them for a backend class ``B`` (``Backend``
itself gives the whole protocol), e.g. to build a backend from the required core only and test
each provided default on it.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING, Any, Concatenate, ParamSpec, TypeVar

if TYPE_CHECKING:
    from burnpy.backend.base import Backend

P = ParamSpec("P")
R = TypeVar("R")
T = TypeVar("T")

_REQUIRED = "__burnpy_required__"
_PROVIDED = "__burnpy_provided__"


def required(fn: Callable[P, R]) -> staticmethod[P, R]:
    """Declare ``fn`` (a signature with a docstring) part of the required core.

    ``Backend.__init_subclass__`` rejects a concrete backend that leaves any of these
    unimplemented, naming every missing op at once.
    """
    setattr(fn, _REQUIRED, True)
    return staticmethod(fn)


def provided(fn: Callable[Concatenate[type[Backend], P], R]) -> classmethod[Any, P, R]:
    """Declare ``fn`` a provided op: a default composed from other ops, which backends may
    override. A plain classmethod at run time; to mypy its ``cls`` is the whole ``Backend``,
    so the composition may call the ops of every family."""
    setattr(fn, _PROVIDED, True)
    return classmethod(fn)


def backend_classmethod(fn: Callable[Concatenate[type[T], P], R]) -> classmethod[Any, P, R]:
    """A plain classmethod whose ``cls`` may be annotated as the whole backend class a mixin
    goes into (mypy rejects that annotation on ``@classmethod``): for a backend's own op
    that calls the ops of other families."""
    return classmethod(fn)


def _marked(attr: object, marker: str) -> bool:
    func = attr.__func__ if isinstance(attr, staticmethod | classmethod) else attr
    return bool(getattr(func, marker, False))


def is_required(attr: object) -> bool:
    """Whether ``attr`` (a class attribute, raw or looked up) is a ``@required`` declaration."""
    return _marked(attr, _REQUIRED)


def is_provided(attr: object) -> bool:
    """Whether ``attr`` (a class attribute, raw or looked up) is a ``@provided`` default."""
    return _marked(attr, _PROVIDED)


def _ops(backend: type, marked: Callable[[object], bool]) -> tuple[str, ...]:
    return tuple(sorted({name for klass in backend.__mro__
                         for name, attr in vars(klass).items() if marked(attr)}))


def required_ops(backend: type) -> tuple[str, ...]:
    """Sorted names of the ops the protocol requires of ``backend`` (declared ``@required`` in
    an op family among its bases), whether or not it implements them."""
    return _ops(backend, is_required)


def provided_ops(backend: type) -> tuple[str, ...]:
    """Sorted names of the ops the protocol provides to ``backend`` (a ``@provided`` default
    in an op family among its bases), whether it keeps the default or overrides it."""
    return _ops(backend, is_provided)
