"""What every topic's module cases share: the list they register in, and the two ways to
write a case (``_case`` with a torch oracle, ``_both`` calling the functional of one name in
burnpy and in torch)."""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING, Any

import burnpy.nn.functional as F
from burnpy.testing.cases import Arg, OpCase
from burnpy.testing.lazy import LazyModule

if TYPE_CHECKING:
    import torch
    import torch.nn.functional as TF
else:  # imported when a case runs: registering the cases does not need torch
    torch, TF = LazyModule("torch"), LazyModule("torch.nn.functional")

MODULE_CASES: list[OpCase] = []


def _case(name: str, fn: Callable[..., Any], *args: Arg,
          torch_fn: Callable[..., Any] | None = None) -> None:
    MODULE_CASES.append(OpCase(name, fn, args, torch_fn=torch_fn,
                               dtypes=("float64", "float32"), accumulates=True))


def _both(name: str, functional: str, *args: Arg, **kwargs: Any) -> None:
    """A case calling ``functional`` by the same name and arguments in burnpy and torch."""
    ours = getattr(F, functional)
    _case(name, lambda *a: ours(*a, **kwargs), *args,
          torch_fn=lambda *a: getattr(TF, functional)(*a, **kwargs))
