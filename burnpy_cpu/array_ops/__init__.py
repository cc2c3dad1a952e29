"""Backend ops written once against an array module ``xp`` (NumPy here, CuPy for CUDA).

``ArrayOps`` is every family of them over the ``Backend`` protocol in one class, the base both
``CpuBackend`` and ``CudaBackend`` build on, so a new family is added here once and both
backends get it. The protocol comes last, so every native op comes before its provided
default (two families derive from protocol classes, which a backend listing the families
itself before ``Backend`` would otherwise put ahead of the later families)."""

from burnpy.backend.base import Backend
from burnpy_cpu.array_ops.activation_ops import ArrayActivationOps
from burnpy_cpu.array_ops.bool_ops import ArrayBoolOps
from burnpy_cpu.array_ops.float_ops import ArrayFloatOps
from burnpy_cpu.array_ops.int_ops import ArrayIntOps
from burnpy_cpu.array_ops.linalg_ops import ArrayLinalgOps
from burnpy_cpu.array_ops.loss_ops import ArrayLossOps
from burnpy_cpu.array_ops.module_ops import ArrayModuleOps
from burnpy_cpu.array_ops.norm_ops import ArrayNormOps
from burnpy_cpu.array_ops.optim_ops import ArrayOptimOps
from burnpy_cpu.array_ops.q_ops import ArrayQOps
from burnpy_cpu.array_ops.transformer_ops import ArrayTransformerOps


class ArrayOps(ArrayFloatOps, ArrayIntOps, ArrayBoolOps, ArrayQOps, ArrayModuleOps,
               ArrayNormOps, ArrayLossOps, ArrayActivationOps, ArrayOptimOps, ArrayLinalgOps,
               ArrayTransformerOps, Backend, abstract=True):
    """Every array-module op family on the protocol; a backend adds ``xp``, its devices and
    transfers."""
