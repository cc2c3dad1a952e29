"""Cases of Tensor creation from a tensor's backend and dtype (``burnpy/tensor/creation.py``)."""

from __future__ import annotations

from typing import TYPE_CHECKING

import burnpy as bp
from burnpy.testing.cases import F, case
from burnpy.testing.lazy import LazyModule
from burnpy.testing.op_cases._common import (
    F64_32,
    FD,
)

if TYPE_CHECKING:
    import torch
else:  # imported when a case runs: registering the cases does not need torch
    torch = LazyModule("torch")


case("zeros_ones_full_like", lambda x: (x.zeros_like(), x.ones_like(), x.full_like(2.5)),
     F(2, 3), torch_fn=lambda x: (torch.zeros_like(x), torch.ones_like(x),
                                  torch.full_like(x, 2.5)), dtypes=FD, grad=False)

case("linspace", lambda x: bp.linspace(-1.0, 2.0, 7, backend=x.backend, dtype=x.dtype), F(1),
     torch_fn=lambda x: torch.linspace(-1.0, 2.0, 7, dtype=x.dtype), dtypes=F64_32, grad=False)
case("linspace_one", lambda x: bp.linspace(3.0, 5.0, 1, backend=x.backend, dtype=x.dtype), F(1),
     torch_fn=lambda x: torch.linspace(3.0, 5.0, 1, dtype=x.dtype), dtypes=F64_32, grad=False)
case("logspace", lambda x: bp.logspace(-1.0, 2.0, 5, backend=x.backend, dtype=x.dtype), F(1),
     torch_fn=lambda x: torch.logspace(-1.0, 2.0, 5, dtype=x.dtype), dtypes=F64_32, grad=False)
case("logspace_base2", lambda x: bp.logspace(0.0, 4.0, 5, 2.0, backend=x.backend, dtype=x.dtype),
     F(1), torch_fn=lambda x: torch.logspace(0.0, 4.0, 5, 2.0, dtype=x.dtype), dtypes=F64_32,
     grad=False)
