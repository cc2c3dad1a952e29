"""Data-parallel training across processes and machines, on MPI (mpi4py) and NCCL (CuPy).

Start the ranks with ``mpiexec -n N python train.py`` (``-hosts a,b`` for several machines),
call ``init_process_group()``, wrap the model in ``DistributedDataParallel`` and shard the data
with ``DistributedSampler``. See the README's "Distributed training". ``DistributedDataParallel``
lives in ``burnpy.nn.parallel`` (torch's ``torch.nn.parallel``) and is an attribute here too.
"""

from typing import TYPE_CHECKING

from burnpy.distributed.collectives import (
    REDUCE_OPS,
    all_gather,
    all_reduce,
    broadcast,
    reduce_scatter,
)
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


def __getattr__(name: str) -> object:
    """``DistributedDataParallel``, which lives in ``burnpy.nn.parallel`` as torch's (a Module,
    one layer above the collectives), imported the first time it is asked for."""
    if name == "DistributedDataParallel":
        from burnpy.nn.parallel import DistributedDataParallel

        return DistributedDataParallel
    raise AttributeError(f"module 'burnpy.distributed' has no attribute {name!r}")


def __dir__() -> list[str]:
    """The package's names, ``DistributedDataParallel`` included."""
    return sorted({*globals(), "DistributedDataParallel"})


if TYPE_CHECKING:  # type checkers see the re-exported class as what it is
    from burnpy.nn.parallel import DistributedDataParallel as DistributedDataParallel
