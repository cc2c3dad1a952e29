"""DDP with parameters that get no gradient: ``extra`` is never used; ``b`` is used on rank 0
only (argument 2: ``b-on-rank0``) or on every rank (``b-everywhere``). Argument 3: whether
``find_unused_parameters``. Reports the error, or the averaged and the local gradients."""

from __future__ import annotations

import sys

import numpy as np
from rank_io import report

import burnpy.distributed as dist
import burnpy.nn as nn
from burnpy import Tensor
from burnpy.autodiff import Autodiff, Gradients
from burnpy.optim import Adam
from burnpy_cpu import CpuBackend

B = Autodiff(CpuBackend)


class Branchy(nn.Module):
    def __init__(self) -> None:
        self.fc = nn.Linear(5, 4, backend=B)
        self.a = nn.Linear(4, 3, backend=B)
        self.b = nn.Linear(4, 3, backend=B)
        self.extra = nn.Linear(4, 3, backend=B)

    def forward(self, x: Tensor, use_b: bool) -> Tensor:
        h = self.fc(x).tanh()
        return self.a(h) + self.b(h) if use_b else self.a(h)


def grads_by_name(model: nn.Module, grads: Gradients) -> dict[str, np.ndarray]:
    out = {}
    for name, t in model.named_parameters():
        g = t.grad(grads)
        if g is not None:
            out[name.removeprefix("module.")] = g.to_numpy()
    return out


dist.init_process_group(timeout=30)
rank = dist.get_rank()
use_b = sys.argv[2] == "b-everywhere" or rank == 0
CpuBackend.seed(CpuBackend.default_device(), 7 + rank)
model = Branchy().to(dtype="float64")
ddp = dist.DistributedDataParallel(model, bucket_cap_mb=1e-4,
                                   find_unused_parameters=sys.argv[3] == "True")
x = Tensor.from_data(np.random.default_rng(rank).normal(size=(6, 5)), backend=B)
# The local gradients, on a copy of the (broadcast) replica without DDP.
copy = Branchy().to(dtype="float64")
copy.load_state_dict({name: t.into_data() for name, t in model.named_parameters()})
local = grads_by_name(copy, (copy(x, use_b) ** 2).mean().backward())
try:
    grads = (ddp(x, use_b) ** 2).mean().backward()
except dist.DistributedError as exc:
    report(str(exc))
else:
    averaged = grads_by_name(ddp, grads)
    before = model.extra.weight.to_numpy()
    Adam(lr=0.1).step(ddp, grads)
    report({"averaged": averaged, "local": local,
            "extra_moved": not np.array_equal(before, model.extra.weight.to_numpy())})
dist.destroy_process_group()
