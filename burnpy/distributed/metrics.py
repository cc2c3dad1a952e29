"""Averaging per-rank numbers (the Learner's epoch metrics) across the process group."""

from __future__ import annotations

from typing import Any

import numpy as np

from burnpy.distributed.collectives import all_reduce
from burnpy.distributed.group import get_world_size, is_initialized
from burnpy.tensor import Tensor


def average_metrics(row: dict[str, Any]) -> dict[str, Any]:
    """``row`` with its float values averaged over every rank (one all-reduce); unchanged
    outside a group of several ranks. With equal shards (``DistributedSampler``) the mean of
    the per-rank means is the mean over all samples."""
    if not is_initialized() or get_world_size() == 1:
        return row
    keys = [k for k, v in row.items() if isinstance(v, float)]
    values = Tensor.from_data(np.array([row[k] for k in keys], dtype=np.float64))
    averaged = all_reduce(values, "mean").to_numpy()
    return {**row, **{k: float(v) for k, v in zip(keys, averaged, strict=True)}}
