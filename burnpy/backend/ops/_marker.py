"""The ``required`` marker: declares an op a concrete backend must implement."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any


def required(fn: Callable[..., Any]) -> staticmethod:
    """Declare ``fn`` (a signature with a docstring) as part of the required core.

    ``Backend.__init_subclass__`` rejects a concrete backend that leaves any of these
    unimplemented, naming every missing op at once.
    """
    fn.__burnpy_required__ = True
    return staticmethod(fn)


def is_required(attr: Any) -> bool:
    func = attr.__func__ if isinstance(attr, staticmethod | classmethod) else attr
    return bool(getattr(func, "__burnpy_required__", False))
