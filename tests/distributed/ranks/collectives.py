"""Every collective and reduce op, for every dtype, on 2 ranks: report inputs and outputs."""

from __future__ import annotations

import numpy as np
from rank_io import report

import burnpy.distributed as dist
from burnpy import Tensor
from burnpy.autodiff import Autodiff
from burnpy_cpu import CpuBackend

DTYPES = ["float64", "float32", "float16", "bfloat16", "int64", "int32", "int16", "int8",
          "uint8", "bool"]

dist.init_process_group()
rank = dist.get_rank()
out: dict[str, object] = {}
for dtype in DTYPES:
    rng = np.random.default_rng([7, rank])
    values = rng.integers(0, 5, size=(4, 3)) if dtype != "bool" else rng.random((4, 3)) > 0.5
    x = Tensor.from_data(values, backend=CpuBackend, dtype=dtype)
    ops = [op for op in dist.REDUCE_OPS
           if not (op == "mean" and dtype not in ("float64", "float32", "float16", "bfloat16"))]
    out[dtype] = {
        "input": x.into_data().array.astype(np.float64),
        "all_reduce": {op: dist.all_reduce(x, op).into_data().array.astype(np.float64)
                       for op in ops},
        "broadcast": dist.broadcast(x, 1).into_data().array.astype(np.float64),
        "all_gather": [t.into_data().array.astype(np.float64) for t in dist.all_gather(x)],
        "reduce_scatter": dist.reduce_scatter(x).into_data().array.astype(np.float64)
        if dtype != "bool" else None,
        "dtypes": {dist.all_reduce(x, "max").dtype, dist.broadcast(x).dtype} == {x.dtype},
    }
# Receive buffers are recycled: a result still held is never overwritten by the next call.
first = dist.all_reduce(Tensor.from_data(np.full(5, 1.0 + rank)))
second = dist.all_reduce(Tensor.from_data(np.full(5, 10.0)))
out["kept"] = (first.to_numpy().copy(), second.to_numpy().copy())
# all_reduce is differentiable: y = all_reduce(w * w); d sum(y) / dw = 2 w * world size.
B = Autodiff(CpuBackend)
w = Tensor.from_data(np.arange(3.0) + rank, backend=B).require_grad()
grads = dist.all_reduce(w * w, "sum").sum().backward()
out["grad_sum"] = w.grad(grads).to_numpy()
grads = dist.all_reduce(w, "max").sum().backward()
out["grad_max"] = w.grad(grads).to_numpy()
dist.barrier()
report(out)
dist.destroy_process_group()
