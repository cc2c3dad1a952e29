"""Cases of Tensor's activations (``relu``, ``gelu``, ``softmax``...: their methods are in
``burnpy/tensor/elementwise.py``); nn.functional's own activations are module cases."""

from __future__ import annotations

from typing import TYPE_CHECKING

from burnpy.testing.cases import F, case
from burnpy.testing.lazy import LazyModule
from burnpy.testing.op_cases._common import (
    FD,
    _method,
)

if TYPE_CHECKING:
    import torch.nn.functional as TF
else:  # imported when a case runs: registering the cases does not need torch
    TF = LazyModule("torch.nn.functional")


case("relu_act", lambda x: x.relu(), F(2, 3, 4), dtypes=FD)
case("leaky_relu", lambda x: x.leaky_relu(), F(3, 4),
     torch_fn=lambda x: TF.leaky_relu(x), dtypes=FD)
case("leaky_relu_slope", lambda x: x.leaky_relu(0.2), F(3, 4, contiguous=False),
     torch_fn=lambda x: TF.leaky_relu(x, 0.2), dtypes=FD)
case("gelu", lambda x: x.gelu(), F(3, 4, low=-4.0, high=4.0),
     torch_fn=lambda x: TF.gelu(x), dtypes=FD)
case("gelu_tanh", lambda x: x.gelu(approximate="tanh"), F(3, 4, low=-4.0, high=4.0),
     torch_fn=lambda x: TF.gelu(x, approximate="tanh"), dtypes=FD)
case("gelu_tails", lambda x: x.gelu(), F(3, 4, low=-12.0, high=12.0), torch_fn=lambda x: TF.gelu(x),
     dtypes=FD)
case("gelu_noncontig", lambda x: x.gelu(), F(2, 3, 4, contiguous=False),
     torch_fn=lambda x: TF.gelu(x), dtypes=FD)
case("sigmoid_large", lambda x: x.sigmoid(), F(3, 4, low=-40.0, high=40.0), dtypes=FD)
case("log_sigmoid", lambda x: x.log_sigmoid(), F(3, 4, low=-4.0, high=4.0),
     torch_fn=lambda x: TF.logsigmoid(x), dtypes=FD)
case("log_sigmoid_large", lambda x: x.log_sigmoid(), F(3, 4, low=-40.0, high=40.0),
     torch_fn=lambda x: TF.logsigmoid(x), dtypes=FD)
case("silu", lambda x: x.silu(), F(3, 4, low=-4.0, high=4.0),
     torch_fn=lambda x: TF.silu(x), dtypes=FD)
case("silu_large", lambda x: x.silu(), F(3, 4, low=-30.0, high=30.0), torch_fn=lambda x: TF.silu(x),
     dtypes=FD)
case("softplus", lambda x: x.softplus(), F(3, 4, low=-4.0, high=4.0),
     torch_fn=lambda x: TF.softplus(x), dtypes=FD)
case("softplus_beta", lambda x: x.softplus(2.0), F(3, 4, low=-4.0, high=4.0),
     torch_fn=lambda x: TF.softplus(x, beta=2.0), dtypes=FD)
case("softplus_large", lambda x: x.softplus(), F(3, 4, low=-10.0, high=10.0),
     torch_fn=lambda x: TF.softplus(x, threshold=1000.0), dtypes=FD)
case("hard_sigmoid", lambda x: x.hard_sigmoid(), F(3, 4, low=-5.0, high=5.0),
     torch_fn=lambda x: TF.hardsigmoid(x), dtypes=FD)
case("hard_sigmoid_params", lambda x: x.hard_sigmoid(0.2, 0.5), F(3, 4, low=-4.0, high=4.0),
     torch_fn=lambda x: (x * 0.2 + 0.5).clamp(0.0, 1.0), dtypes=FD)
for _dim in (0, 1, -1):
    _suffix = "neg" if _dim < 0 else str(_dim)
    case(f"softmax_dim{_suffix}", _method("softmax", _dim), F(2, 3, 4), dtypes=FD)
    case(f"log_softmax_dim{_suffix}", _method("log_softmax", _dim), F(2, 3, 4), dtypes=FD)
case("softmax_large", _method("softmax", -1), F(3, 4, low=-50.0, high=50.0), dtypes=FD)
case("log_softmax_large", _method("log_softmax", -1), F(3, 4, low=-50.0, high=50.0),
     dtypes=FD)
case("softmax_noncontig", _method("softmax", 0), F(3, 4, contiguous=False), dtypes=FD)
