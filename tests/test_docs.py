"""Every public callable of the user-facing modules has a docstring in its source, so the API
reference (``make docs``) and an IDE show what it does."""

from __future__ import annotations

import dataclasses
import importlib
import inspect
from collections.abc import Iterator
from typing import Any

import pytest

MODULES = ["burnpy.nn", "burnpy.nn.functional", "burnpy.func", "burnpy.optim",
           "burnpy.optim.swa_utils", "burnpy.record", "burnpy.train"]


def _own_doc(obj: Any) -> str:
    """The docstring written in ``obj``'s source (a dataclass's generated signature is not)."""
    target = obj.fget if isinstance(obj, property) else obj
    doc = (target.__doc__ or "").strip()
    if inspect.isclass(target) and dataclasses.is_dataclass(target):
        return "" if doc.startswith(f"{target.__name__}(") else doc
    return doc


def _documented_in_a_base(cls: type, name: str) -> bool:
    """Whether a base class documents ``name``: an override may inherit that docstring (pdoc
    and IDEs show it), except ``forward``, whose shapes each layer states itself."""
    return name != "forward" and any(
        name in vars(base) and _own_doc(_function(vars(base)[name]))
        for base in cls.__mro__[1:])


def _function(member: Any) -> Any:
    return member.__func__ if isinstance(member, staticmethod | classmethod) else member


def _public_callables(module_name: str) -> Iterator[tuple[str, Any]]:
    module = importlib.import_module(module_name)
    for name in module.__all__:
        obj = getattr(module, name)
        if not callable(obj) or inspect.ismodule(obj):
            continue
        yield f"{module_name}.{name}", obj
        if inspect.isclass(obj):
            for attr, member in vars(obj).items():
                member = _function(member)
                if attr.startswith("_") or not (inspect.isfunction(member)
                                                or isinstance(member, property)):
                    continue
                if not _own_doc(member) and _documented_in_a_base(obj, attr):
                    continue
                yield f"{module_name}.{name}.{attr}", member


@pytest.mark.parametrize("module_name", MODULES)
def test_public_callables_have_docstrings(module_name: str) -> None:
    found = list(_public_callables(module_name))
    assert found
    missing = [name for name, obj in found if not _own_doc(obj)]
    assert not missing, f"no docstring: {missing}"


def test_every_listed_module_declares_its_public_names() -> None:
    for name in MODULES:
        assert isinstance(importlib.import_module(name).__all__, list | tuple), name
