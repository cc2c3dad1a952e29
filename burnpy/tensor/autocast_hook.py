"""Where autocast meets the ops: ``autocast_op(name)`` marks a Tensor method or functional op
whose inputs mixed precision may cast (``burnpy.amp``'s policy names it), and
``register_autocast_handler`` lets the amp layer act there.

A marked op checks one module global before running as written: while no autocast region
is open in any thread the check is all it costs. While one is open, the op hands its name,
its own function and its arguments to the registered handler, which decides per thread (the
policy, the casts, the cast cache) and calls the function. The handler is registered, not
imported, because ``burnpy.amp`` sits above this layer.
"""

from __future__ import annotations

import functools
import threading
from collections.abc import Callable
from typing import Any, Protocol, TypeVar

_F = TypeVar("_F", bound=Callable[..., Any])

#: How many autocast regions are open, over all threads (0: every marked op runs as written).
_open_regions = 0
_lock = threading.Lock()


class AutocastHandler(Protocol):
    """Runs a marked op under the calling thread's autocast state."""

    def __call__(self, name: str, fn: Callable[..., Any], args: tuple[Any, ...],
                 kwargs: dict[str, Any]) -> Any:
        """Run ``fn(*args, **kwargs)``, the op called ``name``, with the casts it needs."""
        ...


def _run_as_written(name: str, fn: Callable[..., Any], args: tuple[Any, ...],
                    kwargs: dict[str, Any]) -> Any:
    """The handler while none is registered: the op as written."""
    return fn(*args, **kwargs)


_handler: AutocastHandler = _run_as_written

#: The names of every marked op (the policy tables are checked against it).
MARKED_OPS: set[str] = set()


def autocast_op(name: str) -> Callable[[_F], _F]:
    """Mark ``fn`` as the op ``name`` of the autocast policy tables (``burnpy.amp.policy``)."""
    def mark(fn: _F) -> _F:
        MARKED_OPS.add(name)

        @functools.wraps(fn)
        def op(*args: Any, **kwargs: Any) -> Any:
            if _open_regions:
                return _handler(name, fn, args, kwargs)
            return fn(*args, **kwargs)

        return op  # type: ignore[return-value]
    return mark


class AutocastHook:
    """What ``register_autocast_handler`` returns: the amp layer opens and closes regions
    through it (``enter``/``exit``) and unregisters with ``remove``."""

    def __init__(self, handler: AutocastHandler) -> None:
        self._handler = handler

    def enter(self) -> None:
        """A region opened in some thread: marked ops consult the handler from now on."""
        global _open_regions
        with _lock:
            _open_regions += 1

    def exit(self) -> None:
        """A region closed; when none is left anywhere, marked ops run as written again."""
        global _open_regions
        with _lock:
            _open_regions -= 1

    def remove(self) -> None:
        """Unregister the handler (marked ops run as written)."""
        global _handler
        if _handler is self._handler:
            _handler = _run_as_written


def register_autocast_handler(handler: AutocastHandler) -> AutocastHook:
    """Make ``handler`` run every marked op while an autocast region is open."""
    global _handler
    _handler = handler
    return AutocastHook(handler)
