"""2-rank DDP training of an MLP and of the digits CNN (float64, 20 steps); rank 0 also
trains a copy alone on the whole batches. Reports both parameter sets and the event log."""

from __future__ import annotations

import sys

import numpy as np
from rank_io import report

import burnpy.distributed as dist
import burnpy.nn as nn
from burnpy import Tensor
from burnpy.autodiff import Autodiff
from burnpy.examples.digits import DigitsCNN
from burnpy.nn.functional import cross_entropy
from burnpy.optim import SGD, Adam
from burnpy_cpu import CpuBackend

B = Autodiff(CpuBackend)
STEPS, BATCH = 20, 16


class MLP(nn.Module):
    def __init__(self, hidden: int) -> None:
        self.fc1 = nn.Linear(5, hidden, backend=B)
        self.fc2 = nn.Linear(hidden, hidden, backend=B)
        self.fc3 = nn.Linear(hidden, 3, backend=B)

    def forward(self, x: Tensor) -> Tensor:
        return self.fc3(self.fc2(self.fc1(x).tanh()).tanh())


def params(model: nn.Module) -> dict[str, np.ndarray]:
    return {name.removeprefix("module."): t.to_numpy() for name, t in model.named_parameters()}


def train(make, inputs_shape, opt_type, per_rank_halves: bool) -> dict[str, object]:
    """DDP on half batches; on rank 0 also the whole-batch reference from the same start."""
    rank = dist.get_rank()
    CpuBackend.seed(CpuBackend.default_device(), 100 + rank)  # different inits: DDP syncs
    model = make().to(dtype="float64")
    ddp = dist.DistributedDataParallel(model, bucket_cap_mb=1e-4, log_events=True)
    reference = make().to(dtype="float64")
    reference.load_state_dict({k: v for k, v in params(ddp).items()} | {
        name: t.into_data() for name, t in model.named_buffers()})
    opt, ref_opt = opt_type(lr=0.05), opt_type(lr=0.05)
    rng = np.random.default_rng(0)
    for _ in range(STEPS):
        x = rng.normal(size=(BATCH, *inputs_shape))
        y = rng.integers(0, 3, size=BATCH)
        half = slice(rank * BATCH // 2, (rank + 1) * BATCH // 2)
        xt = Tensor.from_data(x[half], backend=B)
        loss = cross_entropy(ddp(xt), Tensor.from_data(y[half], backend=B))
        opt.step(ddp, loss.backward())
        if rank == 0:
            if per_rank_halves:  # BatchNorm: batch statistics per rank, as DDP keeps them
                ref_loss = sum((cross_entropy(reference(Tensor.from_data(x[h], backend=B)),
                                              Tensor.from_data(y[h], backend=B))
                                for h in (slice(0, BATCH // 2), slice(BATCH // 2, BATCH))),
                               start=Tensor.from_data(0.0, backend=B, dtype="float64")) * 0.5
            else:
                ref_loss = cross_entropy(reference(Tensor.from_data(x, backend=B)),
                                         Tensor.from_data(y, backend=B))
            ref_opt.step(reference, ref_loss.backward())
    return {"ddp": params(ddp), "reference": params(reference) if rank == 0 else None,
            "events": [(e, d) for e, d, _ in ddp.events[-100:]],
            "buckets": ddp.bucket_names}


dist.init_process_group(timeout=30)
if sys.argv[2] == "mismatch":
    hidden = 8 if dist.get_rank() == 0 else 9
    try:
        dist.DistributedDataParallel(MLP(hidden))
        report("no error")
    except dist.DistributedError as exc:
        report(str(exc))
else:
    report({"mlp": train(lambda: MLP(8), (5,), SGD, False),
            "cnn": train(lambda: DigitsCNN(backend=B, dropout=0.0), (1, 8, 8), Adam, True)})
dist.destroy_process_group()
