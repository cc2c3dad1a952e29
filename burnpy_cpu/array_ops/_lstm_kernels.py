"""The LSTM cell's elementwise work as compiled numba loops over one time step's C-contiguous
float32 or float64 ``[N, 4H]`` gates (gate order i, f, g, o), so a step costs its matmul and
one or two passes over memory instead of a dozen NumPy calls.

The forward leaves the transcendental functions to NumPy's vectorized ``tanh`` (numba has no
vectorized one): ``gates_in`` halves the sigmoid gates' pre-activations, NumPy takes ``tanh``
of the whole step, and ``cell_forward`` turns ``tanh(z / 2)`` into ``sigmoid(z) = (1 +
tanh(z / 2)) / 2`` and forms the cell state. ``cell_backward`` is arithmetic only. Only
multiply-adds may be contracted; nothing is reassociated. Compiled on first use and cached on
disk like ``_row_kernels``; imported lazily (``recurrent_ops._kernels``).
"""

from __future__ import annotations

import numpy as np

from burnpy_cpu.numba_kernels import njit_cached

_jit = njit_cached(error_model="numpy", fastmath={"contract"}, nogil=True)


@_jit
def gates_in(z: np.ndarray, gates_x: np.ndarray, hidden: int) -> None:
    """``z += gates_x`` with the i, f and o columns then halved (the argument of the tanh
    that gives their sigmoid)."""
    for r in range(z.shape[0]):
        for j in range(2 * hidden):
            z[r, j] = 0.5 * (z[r, j] + gates_x[r, j])
        for j in range(2 * hidden, 3 * hidden):
            z[r, j] = z[r, j] + gates_x[r, j]
        for j in range(3 * hidden, 4 * hidden):
            z[r, j] = 0.5 * (z[r, j] + gates_x[r, j])


@_jit
def cell_forward(z: np.ndarray, c_prev: np.ndarray, c_out: np.ndarray, hidden: int) -> None:
    """``z`` holds ``tanh`` of ``gates_in``'s values: its i, f, o columns become their
    sigmoids in place, and ``c_out = f * c_prev + i * g``."""
    for r in range(z.shape[0]):
        for j in range(hidden):
            i = 0.5 * z[r, j] + 0.5
            f = 0.5 * z[r, hidden + j] + 0.5
            z[r, j] = i
            z[r, hidden + j] = f
            z[r, 3 * hidden + j] = 0.5 * z[r, 3 * hidden + j] + 0.5
            c_out[r, j] = f * c_prev[r, j] + i * z[r, 2 * hidden + j]


@_jit
def cell_backward(grad_h: np.ndarray, carry: np.ndarray, gates: np.ndarray,
                  tanh_c: np.ndarray, c_prev: np.ndarray, dc: np.ndarray, dz: np.ndarray,
                  hidden: int) -> None:
    """One step back: with ``dh = grad_h + carry`` and the activated ``gates``, the gate
    pre-activations' gradient ``dz [N, 4H]``, and ``dc`` (the cell state's gradient, in and
    out) carried to the previous step."""
    for r in range(dz.shape[0]):
        for j in range(hidden):
            dh = grad_h[r, j] + carry[r, j]
            i = gates[r, j]
            f = gates[r, hidden + j]
            g = gates[r, 2 * hidden + j]
            o = gates[r, 3 * hidden + j]
            tc = tanh_c[r, j]
            d = dc[r, j] + dh * o * (1.0 - tc * tc)
            dz[r, j] = d * g * i * (1.0 - i)
            dz[r, hidden + j] = d * c_prev[r, j] * f * (1.0 - f)
            dz[r, 2 * hidden + j] = d * i * (1.0 - g * g)
            dz[r, 3 * hidden + j] = dh * tc * o * (1.0 - o)
            dc[r, j] = d * f
