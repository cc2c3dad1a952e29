"""Where autocast meets the ops: ``autocast_op(name)`` marks a Tensor method or functional op
whose inputs mixed precision may cast (``burnpy.amp``'s policy names it), and
``register_autocast_handler`` lets the amp layer act there.

A marked op is a forwarder with the op's own signature that checks one module global before
calling the op: while no autocast region is open in any thread, the check and one plain call
are all it costs (45 ns a call in ``benchmarks/autocast_overhead.py``; a ``*args, **kwargs``
wrapper cost 290 ns, packing and unpacking every call's arguments). While one is open, the
forwarder hands the op's name, its function and its arguments to the registered handler,
which decides per thread (the policy, the casts, the cast cache) and calls the function.
The handler is registered, not imported, because ``burnpy.amp`` sits above this layer. The
forwarders are generated from each op's signature; ``forwarder_source(op)`` prints one, and
tracebacks show its lines.
"""

from __future__ import annotations

import functools
import inspect
import linecache
import threading
import types
from collections.abc import Callable
from typing import Any, Protocol, TypeVar

from burnpy.backend.errors import InvalidArgumentError

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
        return _forwarder(name, fn)  # type: ignore[return-value]
    return mark


#: The names the generated forwarders read; an op parameter may not shadow them.
_RESERVED = frozenset({"_open_regions", "_handler", "_autocast_fn"})


def _forwarder_source(name: str, fn: Callable[..., Any]) -> tuple[str, list[Any]]:
    """The source of ``_make(_autocast_fn, *defaults)``, which returns ``fn``'s forwarder
    (the same parameters, each default one of ``defaults``), and those defaults."""
    params: list[str] = []
    positional: list[str] = []
    keywords: list[str] = []
    defaults: list[Any] = []
    keyword_only = False
    for p in inspect.signature(fn).parameters.values():
        if p.kind not in (p.POSITIONAL_OR_KEYWORD, p.KEYWORD_ONLY) or p.name in _RESERVED:
            raise InvalidArgumentError(
                f"autocast_op({name!r}): {fn.__qualname__} has parameter {p}; a marked op "
                f"takes plain and keyword-only parameters, none named {sorted(_RESERVED)}")
        if p.kind is p.KEYWORD_ONLY and not keyword_only:
            params.append("*")
            keyword_only = True
        text = p.name
        if p.default is not p.empty:
            text += f"=_d{len(defaults)}"
            defaults.append(p.default)
        params.append(text)
        (keywords if keyword_only else positional).append(p.name)
    args = ", ".join(positional) + ("," if len(positional) == 1 else "")
    kwargs = ", ".join(f"{k!r}: {k}" for k in keywords)
    call = ", ".join(positional + [f"{k}={k}" for k in keywords])
    lines = [
        f"def _make({', '.join(['_autocast_fn', *(f'_d{i}' for i in range(len(defaults)))])}):",
        f"    def {fn.__name__}({', '.join(params)}):",
        "        if _open_regions:",
        f"            return _handler({name!r}, _autocast_fn, ({args}), {{{kwargs}}})",
        f"        return _autocast_fn({call})",
        f"    return {fn.__name__}",
    ]
    return "\n".join(lines) + "\n", defaults


def _forwarder(name: str, fn: Callable[..., Any]) -> Callable[..., Any]:
    """``fn``'s forwarder (see the module docstring), its source registered with
    ``linecache`` under ``<autocast_op NAME>`` so that tracebacks and ``inspect`` show it."""
    source, defaults = _forwarder_source(name, fn)
    filename = f"<autocast_op {name} {fn.__qualname__}>"
    module = compile(source, filename, "exec")
    make_code = next(c for c in module.co_consts if isinstance(c, types.CodeType))
    make = types.FunctionType(make_code, globals())  # reads this module's live globals
    op = functools.update_wrapper(make(fn, *defaults), fn)
    linecache.cache[filename] = (len(source), None, source.splitlines(True), filename)
    return op


def forwarder_source(op: Callable[..., Any]) -> str:
    """The generated source of a marked op's forwarder (for reading and debugging)."""
    return "".join(linecache.getlines(op.__code__.co_filename))


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
