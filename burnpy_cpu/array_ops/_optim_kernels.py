"""Adam's update as one compiled numba loop over C-contiguous float32 or float64 1-d NumPy
arrays: each element of the value, gradient and moments is read once and each result written
once, where the ufunc chain of ``optim_ops.adam_step`` passes over memory a dozen times (for
the 0.9 M parameters of the char-LSTM benchmark, 2.8 ms -> 1.2 ms a step).

Every operation is the chain's, in its order, on the same operands, in the arrays' dtype
(the scalars come in that dtype, as NumPy casts a Python float against a float32 array), with
no contraction or reassociation: results are bitwise those of the chain and so of the
protocol's composed default. Compiled on first use and cached on disk like ``_row_kernels``;
imported lazily (``_shared.optim_kernels``).
"""

from __future__ import annotations

import numpy as np

from burnpy_cpu.numba_kernels import njit_cached

#: IEEE order: no contraction, no reassociation (bitwise the ufunc chain's results).
_jit = njit_cached(error_model="numpy", nogil=True)


@_jit
def adam_update(param: np.ndarray, grad: np.ndarray, exp_avg: np.ndarray,
                exp_avg_sq: np.ndarray, max_exp_avg_sq: np.ndarray, new_param: np.ndarray,
                new_avg: np.ndarray, new_sq: np.ndarray, new_max: np.ndarray, moments: bool,
                l2: float, decay: float, beta1: float, one_beta1: float,
                beta2: float, one_beta2: float, correction2: float, eps: float,
                step_size: float) -> None:
    """Adam for every element: ``moments`` says whether ``exp_avg``/``exp_avg_sq`` hold the
    last moments (else they start from the gradient); a non-empty ``new_max`` takes AMSGrad's
    running maximum of ``max_exp_avg_sq`` and the new second moment; ``l2`` adds ``l2 *
    param`` to the gradient (L2 weight decay; 0 for none), ``decay`` multiplies the value
    first (decoupled weight decay; 1 for none); ``correction2 = 1 / sqrt(1 - beta2^t)``,
    ``step_size = lr / (1 - beta1^t)``."""
    peak = new_max.shape[0] != 0
    for i in range(param.shape[0]):
        p, g = param[i], grad[i]
        if decay != 1.0:
            p = p * decay
        if l2 != 0.0:
            g = g + p * l2
        if moments:
            avg = exp_avg[i] * beta1 + g * one_beta1
            sq = exp_avg_sq[i] * beta2 + (g * g) * one_beta2
        else:
            avg = g * one_beta1
            sq = (g * g) * one_beta2
        new_avg[i] = avg
        new_sq[i] = sq
        second = sq
        if peak:  # np.maximum: NaN from either side, a tie keeps the first
            last = max_exp_avg_sq[i]
            second = last if last >= sq or last != last else sq
            new_max[i] = second
        new_param[i] = p - (avg / (np.sqrt(second) * correction2 + eps)) * step_size
