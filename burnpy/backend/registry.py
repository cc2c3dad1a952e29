"""The registry of concrete backends: burnpy's core imports none of them, they register here.

A backend package calls ``register_backend(name, cls)`` when it is imported (``burnpy_cpu``
registers ``CpuBackend`` as ``"cpu"``, the default; ``burnpy_wgpu`` and ``burnpy_cuda``
register ``"wgpu"`` and ``"cuda"``), and ``backend_named(name)`` imports a package by its entry
point, so code that picks a backend by name never names the package. ``default_backend()``, the
backend of tensors made without ``backend=``, is the one registered with ``default=True``;
until one is, it loads the entry points of the group ``burnpy.backends`` (declared in
``pyproject.toml``: ``cpu = "burnpy_cpu:CpuBackend"``), by name, until one of them registers a
default. In a source checkout the group is also read from the checkout's ``pyproject.toml``
(the installed metadata's entries win), so an install older than a declaration still finds it.
The default is looked up once: later calls return it from a cache.
"""

from __future__ import annotations

import tomllib
from importlib.metadata import EntryPoint, entry_points
from pathlib import Path
from typing import TYPE_CHECKING

from burnpy.backend.errors import BurnpyError

if TYPE_CHECKING:
    from burnpy.backend.base import Backend


class BackendNotFoundError(BurnpyError, LookupError):
    """No backend to make a tensor on: none registered as the default, and no entry point of
    ``burnpy.backends`` registered one when loaded."""


#: The entry point group naming the backend classes a default may come from.
ENTRY_POINT_GROUP = "burnpy.backends"

_REGISTERED: dict[str, type[Backend]] = {}
#: The default backend: ``[cls]`` once registered or found, empty before.
_DEFAULT: list[type[Backend]] = []


def register_backend(name: str, backend: type[Backend], *, default: bool = False) -> None:
    """Register ``backend`` under ``name``; with ``default``, it becomes the backend of tensors
    made without ``backend=`` (the first default registered stays the default)."""
    _REGISTERED[name] = backend
    if default and not _DEFAULT:
        _DEFAULT.append(backend)


def backend_named(name: str) -> type[Backend]:
    """The backend registered as ``name`` (``"cpu"``, ``"wgpu"``, ``"cuda"``), importing its
    package through the ``burnpy.backends`` entry point of that name when it is not registered
    yet; ``BackendNotFoundError`` saying why (unknown name, or its package failed to import)."""
    if name in _REGISTERED:
        return _REGISTERED[name]
    points = {p.name: p for p in _entry_points()}
    point = points.get(name)
    if point is None:
        raise BackendNotFoundError(f"no backend named {name!r}: the entry points of "
                                   f"{ENTRY_POINT_GROUP!r} are {sorted(points)}")
    try:
        loaded = point.load()
    except ImportError as error:
        raise BackendNotFoundError(f"backend {name!r} ({point.value}) failed to import "
                                   f"({error}); install burnpy[{name}]") from None
    return _REGISTERED.get(name, loaded)


def backend_names() -> list[str]:
    """Every backend name known here: those registered and those with an entry point."""
    return sorted({*_REGISTERED, *(p.name for p in _entry_points())})


def registered_backends() -> dict[str, type[Backend]]:
    """The backends registered so far, by name (a copy)."""
    return dict(_REGISTERED)


def default_backend() -> type[Backend]:
    """The default backend: the one registered with ``default=True``, else the first entry
    point of ``burnpy.backends`` whose import registers one; raises
    ``BackendNotFoundError`` naming what to install when none does."""
    if _DEFAULT:
        return _DEFAULT[0]
    tried = []
    for point in _entry_points():
        try:
            point.load()  # importing the backend's package registers it
        except ImportError as error:
            tried.append(f"{point.name} = {point.value} failed to import ({error})")
            continue
        if _DEFAULT:
            return _DEFAULT[0]
        tried.append(f"{point.name} = {point.value} registered no default")
    found = ("of its entry points, " + "; ".join(tried) if tried
             else f"no package declares an entry point in the group {ENTRY_POINT_GROUP!r}")
    raise BackendNotFoundError(
        f"no default backend: none was registered and {found}. Install burnpy with its CPU "
        "backend (pip install burnpy; in a source checkout: pip install -e .), or pass "
        "backend= explicitly")


def _entry_points() -> list[EntryPoint]:
    """The group's entry points by name: the source checkout's ``pyproject.toml``'s (when
    burnpy runs from one) and the installed metadata's, which win (a stale install of the
    checkout still finds the backends declared since)."""
    points = {p.name: p for p in _checkout_entry_points(_CHECKOUT / "pyproject.toml")}
    points.update((p.name, p) for p in entry_points(group=ENTRY_POINT_GROUP))
    return [points[name] for name in sorted(points)]


#: The directory holding the ``burnpy`` package: a source checkout when it has burnpy's
#: ``pyproject.toml``.
_CHECKOUT = Path(__file__).resolve().parents[2]


def _checkout_entry_points(pyproject: Path) -> list[EntryPoint]:
    """The ``burnpy.backends`` entry points declared by ``pyproject``, when it is burnpy's."""
    try:
        project = tomllib.loads(pyproject.read_text()).get("project", {})
    except (OSError, tomllib.TOMLDecodeError):
        return []
    if project.get("name") != "burnpy":
        return []
    declared = project.get("entry-points", {}).get(ENTRY_POINT_GROUP, {})
    return [EntryPoint(name, value, ENTRY_POINT_GROUP) for name, value in declared.items()]
