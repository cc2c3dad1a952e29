"""Rank 1 fails (raises, or dies with os._exit) while rank 0 waits in an all_reduce."""

from __future__ import annotations

import os
import sys
import time

import numpy as np
from rank_io import report

import burnpy.distributed as dist
from burnpy import Tensor

dist.init_process_group(timeout=float(sys.argv[3]))
dist.barrier()
if dist.get_rank() == 1:
    time.sleep(0.3)
    if sys.argv[2] == "raise":
        raise ValueError("rank 1 gives up")
    os._exit(3)
try:
    dist.all_reduce(Tensor.from_data(np.ones(4)))
except dist.DistributedError as exc:
    report(str(exc))
    raise
