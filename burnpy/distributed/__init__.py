"""Data-parallel training across processes and machines, on MPI (mpi4py) and NCCL (CuPy).

Start the ranks with ``mpiexec -n N python train.py`` (``-hosts a,b`` for several machines),
call ``init_process_group()``, wrap the model in ``DistributedDataParallel`` and shard the data
with ``DistributedSampler``. See the README's "Distributed training".
"""

from burnpy.distributed.collectives import (
    REDUCE_OPS,
    all_gather,
    all_reduce,
    broadcast,
    reduce_scatter,
)
from burnpy.distributed.ddp import DistributedDataParallel
from burnpy.distributed.errors import DistributedError
from burnpy.distributed.group import (
    barrier,
    destroy_process_group,
    get_rank,
    get_world_size,
    init_process_group,
    is_initialized,
)
from burnpy.distributed.sampler import DistributedSampler

__all__ = ["REDUCE_OPS", "DistributedDataParallel", "DistributedError", "DistributedSampler",
           "all_gather", "all_reduce", "barrier", "broadcast", "destroy_process_group",
           "get_rank", "get_world_size", "init_process_group", "is_initialized",
           "reduce_scatter"]
