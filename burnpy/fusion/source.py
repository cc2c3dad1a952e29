"""The one way Fusion and the fusers turn generated Python source into a function.

Generated code is the exception in burnpy, kept where it was measured to pay: ``Fusion``'s
per-op wrappers (``burnpy.fusion.backend``, one frame and a type test per tensor parameter
before B's op: a small step's op cost 0.4-0.8 us over B's, 0.1-0.4 with them; the digits
step's wrapper cost ~100 us, ~60 with them; ``benchmarks/autodiff_overhead.py`` and
``python -m benchmarks.fusion`` measure both) and the CPU fuser's numba loop per fused group
(``burnpy_cpu.fuser``, ``benchmarks/fusion.py``). Each function defined here keeps its source:
its code's file name (``<fusion float_exp>``...) is registered in ``linecache``, so tracebacks
and debuggers show the generated lines and ``inspect.getsource`` returns them
(``python -m burnpy.fusion.show float_exp`` prints a Fusion op's).
"""

from __future__ import annotations

import linecache
from collections.abc import Callable
from typing import Any


def define(source: str, name: str, filename: str, scope: dict[str, Any]) -> Callable[..., Any]:
    """The function ``name`` that ``source`` defines, run in ``scope``; ``filename`` (a
    ``<...>`` name saying what it is) is where tracebacks, debuggers and ``inspect`` find the
    source."""
    linecache.cache[filename] = (len(source), None, source.splitlines(True), filename)
    exec(compile(source, filename, "exec"), scope)
    found: Callable[..., Any] = scope[name]
    return found
