"""The LSTM cell's elementwise work as compiled numba loops over one time step's C-contiguous
float32 or float64 ``[N, 4H]`` gates (gate order i, f, g, o), so a step costs its matmul and
one or two passes over memory instead of a dozen NumPy calls.

The forward leaves the transcendental functions to NumPy's vectorized ``tanh`` (numba has no
vectorized one): ``gates_in`` adds the input's gates and halves the sigmoid gates'
pre-activations, NumPy takes ``tanh`` of the whole step, and ``cell_forward`` turns ``tanh(z /
2)`` into ``sigmoid(z) = (1 + tanh(z / 2)) / 2`` and forms the cell state. ``cell_backward``
is arithmetic only. The loops run over 1-d rows, which LLVM vectorizes (2-d indexing left
them scalar, 4x slower). Only multiply-adds may be contracted; nothing is reassociated.
Compiled on first use and cached on disk like ``_row_kernels``; imported lazily
(``recurrent_ops._kernels``).
"""

from __future__ import annotations

import numpy as np

from burnpy_cpu.numba_kernels import njit_cached

_jit = njit_cached(error_model="numpy", fastmath={"contract"}, nogil=True)


@_jit
def gates_in(z: np.ndarray, z_t: np.ndarray, gates_x: np.ndarray, scale: np.ndarray) -> None:
    """``z = (z_t^T + gates_x) * scale``: the recurrent part comes transposed (``W_hh @ h^T``,
    ``[4H, N]``: OpenBLAS's faster layout for this product), ``scale [4H]`` is 1/2 on the i,
    f and o columns (the argument of the tanh that gives their sigmoid) and 1 on g."""
    for r in range(z.shape[0]):
        zr, xr = z[r], gates_x[r]  # 1-d rows: LLVM vectorizes their loops
        for j in range(zr.shape[0]):
            zr[j] = scale[j] * (z_t[j, r] + xr[j])


@_jit
def cell_forward(z: np.ndarray, c_prev: np.ndarray, c_out: np.ndarray, hidden: int) -> None:
    """``z`` holds ``tanh`` of ``gates_in``'s values: its i, f, o columns become their
    sigmoids in place, and ``c_out = f * c_prev + i * g``."""
    for r in range(z.shape[0]):
        zr, cp, co = z[r], c_prev[r], c_out[r]
        i, f, g, o = zr[:hidden], zr[hidden:2 * hidden], zr[2 * hidden:3 * hidden], zr[3 * hidden:]
        for j in range(hidden):
            i[j] = 0.5 * i[j] + 0.5
            f[j] = 0.5 * f[j] + 0.5
            o[j] = 0.5 * o[j] + 0.5
            co[j] = f[j] * cp[j] + i[j] * g[j]


@_jit
def cell_backward(grad_h: np.ndarray, carry: np.ndarray, gates: np.ndarray,
                  tanh_c: np.ndarray, c_prev: np.ndarray, dc: np.ndarray, dz: np.ndarray,
                  hidden: int) -> None:
    """One step back: with ``dh = grad_h + carry`` and the activated ``gates``, the gate
    pre-activations' gradient ``dz [N, 4H]``, and ``dc`` (the cell state's gradient, in and
    out) carried to the previous step."""
    for r in range(dz.shape[0]):
        gh, ca, tcr, cp, dcr = grad_h[r], carry[r], tanh_c[r], c_prev[r], dc[r]
        gr, dzr = gates[r], dz[r]
        i, f, g, o = gr[:hidden], gr[hidden:2 * hidden], gr[2 * hidden:3 * hidden], gr[3 * hidden:]
        di, df = dzr[:hidden], dzr[hidden:2 * hidden]
        dg, do = dzr[2 * hidden:3 * hidden], dzr[3 * hidden:]
        for j in range(hidden):
            dh = gh[j] + ca[j]
            tc = tcr[j]
            d = dcr[j] + dh * o[j] * (1.0 - tc * tc)
            di[j] = d * g[j] * i[j] * (1.0 - i[j])
            df[j] = d * cp[j] * f[j] * (1.0 - f[j])
            dg[j] = d * i[j] * (1.0 - g[j] * g[j])
            do[j] = dh * tc * o[j] * (1.0 - o[j])
            dcr[j] = d * f[j]
