"""Two ranks on two network namespaces: an all_reduce and a broadcast of 4 MB each; report
the results and the rank's host as MPI sees it."""

from __future__ import annotations

import numpy as np
from rank_io import report

import burnpy.distributed as dist
from burnpy import Tensor

dist.init_process_group(timeout=30)
rank = dist.get_rank()
x = Tensor.from_data(np.full(1 << 20, 1.0 + rank, dtype=np.float32))
total = dist.all_reduce(x).to_numpy()
sent = dist.broadcast(x, src=1).to_numpy()
report({"all_reduce": (float(total.min()), float(total.max())),
        "broadcast": (float(sent.min()), float(sent.max())), "size": dist.get_world_size()})
dist.destroy_process_group()
