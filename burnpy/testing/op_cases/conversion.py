"""Cases of Tensor's casts between kinds and dtypes (``burnpy/tensor/conversion.py``)."""

from __future__ import annotations

from typing import TYPE_CHECKING

import burnpy as bp
from burnpy.testing.cases import B, F, I, case
from burnpy.testing.lazy import LazyModule
from burnpy.testing.op_cases._common import (
    _IA,
    BOOL,
    F64_32,
    FD,
    INT,
)

if TYPE_CHECKING:
    import torch
else:  # imported when a case runs: registering the cases does not need torch
    torch = LazyModule("torch")


case("float_to_long", lambda x: x.long(), F(3, 4, low=-3.0, high=3.0), dtypes=FD,
     grad=False, asks_dtypes=("int64",))
case("float_to_bool", lambda x: x.bool(), F(3, 4, plant=(0.0, -0.0)), dtypes=FD, grad=False)
case("float_to_double", lambda x: x.double(), F(3, 4), dtypes=FD, asks_dtypes=("float64",))
case("float_to_half", lambda x: x.half(), F(3, 4), dtypes=F64_32, asks_dtypes=("float16",))
case("cast_bf16", lambda x: x.cast("bfloat16"), F(3, 4),
     torch_fn=lambda x: x.to(torch.bfloat16), dtypes=F64_32, asks_dtypes=("bfloat16",))
case("to_dtype", lambda x: x.to(bp.float64), F(3, 4), torch_fn=lambda x: x.to(torch.float64),
     dtypes=FD, asks_dtypes=("float64",))
case("detach", lambda x: x.detach() * 2, F(3, 4), dtypes=FD, grad=False)

case("int_to_float", lambda a: a.float(), I(3, 4, **_IA), dtypes=INT, grad=False)
case("int_to_double", lambda a: a.double(), I(3, 4, **_IA), dtypes=INT, grad=False,
     asks_dtypes=("float64",))
case("int_to_bool", lambda a: a.bool(), I(3, 4, low=-1, high=2), dtypes=INT, grad=False)

case("bool_to_float", lambda a: a.float(), B(3, 4), dtypes=BOOL, grad=False)
case("bool_to_long", lambda a: a.long(), B(3, 4), dtypes=BOOL, grad=False,
     asks_dtypes=("int64",))
case("bool_to_double", lambda a: a.double(), B(3, 4), dtypes=BOOL, grad=False,
     asks_dtypes=("float64",))

case("conversions", lambda a: (a.double(), a.half(), (a * 3).long()), F(3, 4),
     dtypes=("float32",), grad=False, asks_dtypes=("float64", "float16", "int64"))
