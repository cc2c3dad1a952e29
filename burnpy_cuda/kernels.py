"""The fused kernels of ``burnpy_cuda.kernel_sources`` as CuPy kernels, built on first use.

Importing needs no CuPy: a kernel object is made (through ``require_cupy``) the first time
an op asks for it and cached; CuPy then compiles it once per device on its first launch and
keeps the binary in its on-disk cache, so a process pays NVRTC at most once per kernel,
dtype and device.
"""

from __future__ import annotations

import functools
from typing import Any

import numpy as np

from burnpy_cuda import kernel_sources as src
from burnpy_cuda.runtime import require_cupy

A = Any  # a ``cupy.ndarray``

#: The dtypes that have fused kernels (CuPy has no bfloat16).
KERNEL_DTYPES: frozenset[np.dtype] = frozenset(np.dtype(name) for name in src.WORK_TYPES)

#: Threads per block of the row kernels: at most this, at least one warp.
MAX_ROW_THREADS = 1024


@functools.cache
def elementwise(spec: src.ElementwiseSpec, dtype: np.dtype) -> Any:
    """The ``cupy.ElementwiseKernel`` of ``spec`` for arrays of ``dtype`` (in KERNEL_DTYPES).

    Cached per spec (by identity) and dtype, so an op pays one dictionary lookup for it.
    """
    return require_cupy()[0].ElementwiseKernel(
        spec.in_params, spec.out_params, spec.body, name=f"burnpy_{spec.name}",
        preamble=src.preamble(src.WORK_TYPES[dtype.name]), options=spec.options)


@functools.cache
def row_kernel(name: str, dtype: np.dtype) -> Any:
    """The ``cupy.RawKernel`` ``name`` (one of ROW_KERNEL_NAMES) for ``dtype``; the row kernels
    of a dtype share one source, which CuPy compiles once per device."""
    return require_cupy()[0].RawKernel(src.row_source(dtype.name), name)


def row_threads(c: int) -> int:
    """Threads per block for rows of ``c`` values: the power of two covering the row, between
    one warp and MAX_ROW_THREADS (the block reductions need whole warps)."""
    return min(MAX_ROW_THREADS, max(32, 1 << (c - 1).bit_length()))


def softmax_rows(x: A, log: bool) -> A:
    """softmax (or log_softmax, ``log``) of non-empty ``x`` along its last dim."""
    name = "burnpy_log_softmax_rows" if log else "burnpy_softmax_rows"
    return _run_rows(name, x, (), ((x.shape, x.dtype),))[0]


def cross_entropy_rows(logits: A, target: A, ignore_index: int) -> A:
    """Per-row cross entropy of non-empty ``logits [n, c]`` against ``target [n]``."""
    return _run_rows("burnpy_cross_entropy_rows", logits, (target,),
                     ((logits.shape[:1], logits.dtype),), ignore_index)[0]


def cross_entropy_backward_rows(logits: A, target: A, ignore_index: int, grad: A) -> A:
    """Gradient of ``cross_entropy_rows`` in ``logits`` given the per-row ``grad [n]``."""
    return _run_rows("burnpy_cross_entropy_backward_rows", logits, (target, grad),
                     ((logits.shape, logits.dtype),), ignore_index)[0]


def layer_norm_rows(x: A, weight: A | None, bias: A | None, eps: float) -> A:
    """Layer norm of each row of non-empty ``x [rows, width]``; ``weight`` and ``bias`` hold
    ``width`` values (any shape) or are None."""
    return _run_rows("burnpy_layer_norm_rows", x, (weight, bias), ((x.shape, x.dtype),),
                     float(eps))[0]


def layer_norm_backward_rows(x: A, weight: A | None, grad: A, eps: float) -> tuple[A, A]:
    """``(grad_x, xhat)`` of layer norm over the rows of non-empty ``x [rows, width]`` given
    ``grad`` of its shape: xhat is the normalized rows in the dtype computed in (float32 for
    float16), for the column sums of the weight's and bias's gradients."""
    work = np.result_type(x.dtype, np.float32)
    grad_x, xhat = _run_rows("burnpy_layer_norm_backward_rows", x, (weight, grad),
                             ((x.shape, x.dtype), (x.shape, work)), float(eps))
    return grad_x, xhat


def _run_rows(name: str, x: A, inputs: tuple[A | None, ...],
              outs: tuple[tuple[tuple[int, ...], np.dtype], ...],
              *scalars: int | float) -> tuple[A, ...]:
    """Launch row kernel ``name`` with arguments ``(x, *inputs, *outs, c, *scalars)``, one
    block per row of ``x [..., c]``, and return the new ``outs`` (each given as shape and
    dtype).

    Everything runs on ``x``'s device: unlike CuPy's own kernels, a RawKernel launches on the
    current device whatever its arrays. Inputs are made C-contiguous, integer ones int64; a
    None input is passed as a null pointer. Integer scalars go as ``long long``, float ones as
    ``double``.
    """
    cupy = require_cupy()[0]
    c = x.shape[-1]
    with x.device:
        x = cupy.ascontiguousarray(x)
        inputs = tuple(
            None if a is None
            else cupy.ascontiguousarray(a, dtype=np.int64 if a.dtype.kind in "iu" else None)
            for a in inputs)
        outputs = tuple(cupy.empty(shape, dtype=dtype) for shape, dtype in outs)
        kernel = row_kernel(name, x.dtype)
        kernel((x.size // c,), (row_threads(c),),
               (x, *inputs, *outputs, np.int64(c),
                *(np.float64(s) if isinstance(s, float) else np.int64(s) for s in scalars)))
    return outputs
