"""``LazyModule``: a module imported at its first attribute access.

The op cases and runners mention torch and pytest, but registering the cases must not need
them: ``import burnpy.testing`` works where neither is installed, and running a case imports
them (an ImportError then says which one is missing).
"""

from __future__ import annotations

import importlib
from typing import Any


class LazyModule:
    """Stands for module ``name``; every attribute read imports it (once, then cached)."""

    __slots__ = ("_name",)

    def __init__(self, name: str) -> None:
        self._name = name

    def __getattr__(self, attr: str) -> Any:
        return getattr(importlib.import_module(self._name), attr)

    def __repr__(self) -> str:
        return f"LazyModule({self._name!r})"
