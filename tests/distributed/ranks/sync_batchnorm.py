"""SyncBatchNorm on 2 ranks, rank 0 holding 3 samples of a 5-sample batch and rank 1 the
other 2: report each rank's outputs, input and parameter gradients and running statistics
after two training steps, and an eval output."""

from __future__ import annotations

import numpy as np
from rank_io import report

import burnpy as bp
import burnpy.distributed as dist
import burnpy.nn as nn
from burnpy import Tensor
from burnpy.autodiff import Autodiff
from burnpy_cpu import CpuBackend

AD = Autodiff(CpuBackend)
dist.init_process_group()
rank = dist.get_rank()
rng = np.random.default_rng(5)
batches = [rng.standard_normal((5, 3, 4, 2)) for _ in range(3)]
seeds = [rng.standard_normal((5, 3, 4, 2)) for _ in range(2)]
rows = slice(0, 3) if rank == 0 else slice(3, 5)
layer = nn.SyncBatchNorm(3, momentum=0.2, backend=AD, dtype=bp.float64)
layer.load_state_dict({"weight": np.array([0.5, 1.5, -1.0]), "bias": np.array([0.1, 0.0, 2.0])},
                      strict=False)
steps = []
for x, seed in zip(batches, seeds, strict=False):
    xt = Tensor.from_data(x[rows], backend=AD).require_grad()
    out = layer(xt)
    grads = (out * Tensor.from_data(seed[rows], backend=AD)).sum().backward()
    steps.append({"out": out.to_numpy(), "grad_x": xt.grad(grads).to_numpy(),
                  "grad_weight": layer.weight.grad(grads).to_numpy(),
                  "grad_bias": layer.bias.grad(grads).to_numpy()})
layer.eval()
report({"steps": steps, "running_mean": layer.running_mean.to_numpy(),
        "running_var": layer.running_var.to_numpy(),
        "eval": layer(Tensor.from_data(batches[2][rows], backend=AD)).to_numpy()})
