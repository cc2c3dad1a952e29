"""The LSTM recurrence on NumPy: ``lstm``, ``lstm_states`` and ``lstm_backward`` as one loop
over the time steps each, writing into preallocated buffers.

A forward step is one matmul (``W_hh @ h^T``: for ``[32, 256] x [256, 1024]`` OpenBLAS runs
this layout about a fifth faster than ``h @ W_hh^T``, and as fast with ``h^T`` the previous
step's output seen transposed as with a transposed copy), NumPy's vectorized ``tanh`` twice and
the compiled cell kernels of ``_lstm_kernels``; a backward step is one kernel and one matmul, and
``dW_hh`` is one matmul over all steps. 16-bit floats are computed in float32. CuPy keeps the
protocol's composition (the CUDA backend does not take this mixin).
"""

from __future__ import annotations

import functools
import importlib
from types import ModuleType

import numpy as np

from burnpy_cpu.array_ops._shared import A, widened


@functools.cache
def _kernels() -> ModuleType:
    """The compiled cell loops (``_lstm_kernels``), imported on first use: importing numba
    costs 0.2 s, which a program without an LSTM should not pay."""
    return importlib.import_module("burnpy_cpu.array_ops._lstm_kernels")


class ArrayRecurrentOps:
    """``lstm``, ``lstm_states`` and ``lstm_backward``."""

    @classmethod
    def lstm(cls, gates_x: A, weight_hh: A, h0: A, c0: A) -> A:
        """The hidden states of every step and the last cell state, ``[T + 1, N, H]``."""
        return cls.lstm_states(gates_x, weight_hh, h0, c0)[0]

    @classmethod
    def lstm_states(cls, gates_x: A, weight_hh: A, h0: A, c0: A) -> tuple[A, A, A]:
        """``lstm``'s output, the activated gates ``[T, N, 4H]`` and the cell states."""
        k = _kernels()
        dtype = np.result_type(gates_x, weight_hh, h0, c0)
        gx, w, h, c = (widened(np, a) for a in (gates_x, weight_hh, h0, c0))
        work = np.result_type(gx, w, h, c)
        steps, n, four_h = gx.shape
        hidden = four_h // 4
        gx = np.ascontiguousarray(gx, dtype=work)
        c = np.ascontiguousarray(c, dtype=work)
        w = np.ascontiguousarray(w, dtype=work)
        h = np.ascontiguousarray(h, dtype=work)  # read only: each step writes out[t]
        z_t = np.empty((four_h, n), work)
        scale = np.ones(four_h, work)
        scale[:2 * hidden] = scale[3 * hidden:] = 0.5
        out = np.empty((steps + 1, n, hidden), work)
        gates = np.empty((steps, n, four_h), work)
        cells = np.empty((steps, n, hidden), work)
        for t in range(steps):
            z = gates[t]
            np.matmul(w, h.T, out=z_t)
            k.gates_in(z, z_t, gx[t], scale)
            np.tanh(z, out=z)
            k.cell_forward(z, c, cells[t], hidden)
            c, h = cells[t], out[t]
            np.tanh(c, out=h)
            h *= z[:, 3 * hidden:]
        out[steps] = c
        return out.astype(dtype, copy=False), gates, cells

    @classmethod
    def lstm_backward(cls, weight_hh: A, h0: A, c0: A, output: A, gates: A, cells: A,
                      grad: A) -> tuple[A, A, A, A]:
        """Gradients in ``(gates_x, weight_hh, h0, c0)`` given ``grad [T + 1, N, H]``."""
        k = _kernels()
        dtype = np.result_type(weight_hh, h0, c0, output)
        work = gates.dtype
        w, h0w, c0w, out, g_out = (np.ascontiguousarray(widened(np, a), dtype=work)
                                   for a in (weight_hh, h0, c0, output, grad))
        steps, n, four_h = gates.shape
        hidden = four_h // 4
        tanh_c = np.tanh(cells)
        grad_gates = np.empty((steps, n, four_h), work)
        dc = g_out[steps].copy()
        carry = np.zeros((n, hidden), work)
        for t in range(steps - 1, -1, -1):
            k.cell_backward(g_out[t], carry, gates[t], tanh_c[t],
                            c0w if t == 0 else cells[t - 1], dc, grad_gates[t], hidden)
            carry = grad_gates[t] @ w
        previous_h = np.concatenate([h0w[None], out[:steps - 1]])
        grad_weight = grad_gates.reshape(steps * n, four_h).T @ previous_h.reshape(steps * n,
                                                                                  hidden)
        return (grad_gates.astype(dtype, copy=False), grad_weight.astype(dtype, copy=False),
                carry.astype(dtype, copy=False), dc.astype(dtype, copy=False))
