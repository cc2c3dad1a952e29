"""Recurrent layers with torch's names, arguments, parameter layout and initialization:
``RNN`` (tanh or relu), ``LSTM`` (with ``proj_size``), ``GRU`` and their cells.

The multi-layer modules name their parameters as torch's (``weight_ih_l0``, ``weight_hh_l0``,
``bias_ih_l0``, ``bias_hh_l0``, ``weight_hr_l0`` with ``proj_size``, ``_reverse`` for the second
direction), so a torch state dict loads as it is. Every parameter starts uniform in
+-1/sqrt(hidden_size), as torch's. Inputs are ``[L, batch, input_size]`` (``[batch, L, *]``
with ``batch_first``), unbatched ``[L, input_size]``, or a ``PackedSequence``.

Each layer and direction projects the inputs of every time step with one matmul; the
recurrence then adds ``h @ weight_hh.T`` and applies the gates step by step. Everything is
composed of Tensor ops, so the differentiating backends give the gradients.
"""

from __future__ import annotations

import math
import warnings
from typing import TYPE_CHECKING, Any

from burnpy.backend.device import Device
from burnpy.backend.dtype import DTypeLike
from burnpy.backend.errors import (
    BackendMismatchError,
    DTypeError,
    InvalidArgumentError,
    ShapeError,
    describe,
)
from burnpy.nn import functional as F
from burnpy.nn import init
from burnpy.nn.module import Module
from burnpy.nn.utils.rnn import PackedSequence
from burnpy.tensor import Tensor
from burnpy.tensor._core import FLOAT, new

if TYPE_CHECKING:
    from burnpy.backend.base import Backend

#: Gate blocks stacked in ``weight_ih``/``weight_hh`` (torch's order: LSTM i, f, g, o; GRU
#: r, z, n).
_GATES = {"RNN_TANH": 1, "RNN_RELU": 1, "LSTM": 4, "GRU": 3}

#: A cell's state: h, or (h, c) for the LSTM.
State = tuple[Tensor, Tensor | None]


def _check_sizes(name: str, input_size: int, hidden_size: int) -> None:
    for arg, value in (("input_size", input_size), ("hidden_size", hidden_size)):
        if not isinstance(value, int) or isinstance(value, bool):
            raise InvalidArgumentError(f"{name}: {arg} must be an int, got "
                                       f"{type(value).__name__}")
    if hidden_size <= 0 or input_size < 0:
        raise InvalidArgumentError(f"{name}: hidden_size must be > 0 and input_size >= 0, "
                                   f"got hidden_size={hidden_size}, input_size={input_size}")


def _step(mode: str, gi: Tensor, h: Tensor, c: Tensor | None, w_hh: Tensor,
          b_hh: Tensor | None, w_hr: Tensor | None) -> State:
    """One time step: ``gi`` is the input's projection (with ``b_hh`` already added for all
    modes but GRU, whose ``b_hh`` sits inside ``r * (...)``)."""
    if mode == "GRU":
        gh = F.linear(h, w_hh, b_hh)
        gi_r, gi_z, gi_n = gi.chunk(3, 1)
        gh_r, gh_z, gh_n = gh.chunk(3, 1)
        r = (gi_r + gh_r).sigmoid()
        z = (gi_z + gh_z).sigmoid()
        n = (gi_n + r * gh_n).tanh()
        return n + z * (h - n), None
    gates = gi + F.linear(h, w_hh)
    if mode == "RNN_TANH":
        return gates.tanh(), None
    if mode == "RNN_RELU":
        return gates.relu(), None
    assert c is not None
    i, f, g, o = gates.chunk(4, 1)
    c = f.sigmoid() * c + i.sigmoid() * g.tanh()
    h = o.sigmoid() * c.tanh()
    return (h if w_hr is None else F.linear(h, w_hr)), c


def lstm_recurrence(gates_x: Tensor, weight_hh: Tensor, h0: Tensor, c0: Tensor) -> Tensor:
    """The LSTM recurrence as one backend op (a compiled loop where the backend has one, one
    graph node under Autodiff): from the inputs' gate projections ``gates_x [T, N, 4H]``
    (``x W_ih^T`` plus both biases, torch's gate order i, f, g, o), ``weight_hh [4H, H]`` and
    ``h0, c0 [N, H]``, the hidden state of every step and then the last cell state,
    ``[T + 1, N, H]``."""
    op = "lstm_recurrence"
    tensors = (gates_x, weight_hh, h0, c0)
    for t in tensors:
        if t.kind is not FLOAT or t.dtype != gates_x.dtype:
            raise DTypeError(f"{op}: every operand must be a float tensor of one dtype, got "
                             f"{', '.join(repr(t.dtype) for t in tensors)}")
        if t.backend is not gates_x.backend or t.device != gates_x.device:
            raise BackendMismatchError(f"{op}: operands on {gates_x.backend.__name__} "
                                       f"({gates_x.device}) and {t.backend.__name__} "
                                       f"({t.device})")
    shape = gates_x.shape
    if len(shape) != 3 or shape[0] < 1 or shape[2] % 4:
        raise ShapeError(f"{op}: gates_x must be [T >= 1, N, 4H], got {describe(shape)}")
    n, hidden = shape[1], shape[2] // 4
    if (weight_hh.shape != (4 * hidden, hidden) or h0.shape != (n, hidden)
            or c0.shape != (n, hidden)):
        raise ShapeError(f"{op}: gates_x {describe(shape)} needs weight_hh "
                         f"{describe((4 * hidden, hidden))}, h0 and c0 {describe((n, hidden))}; "
                         f"got {describe(weight_hh.shape)}, {describe(h0.shape)}, "
                         f"{describe(c0.shape)}")
    b = gates_x.backend
    return new(b, b.lstm(*(t.primitive for t in tensors)), FLOAT)


def _lstm_fused(gi: Tensor, steps: int, h0: Tensor, c0: Tensor, w_hh: Tensor,
                reverse: bool) -> tuple[Tensor, Tensor, Tensor]:
    """An LSTM direction over a full batch as ``lstm_recurrence``: ``(outputs [steps * N,
    H], h_n, c_n)``."""
    n, hidden = h0.shape
    g = gi.reshape((steps, n, gi.shape[-1]))
    states = lstm_recurrence(g.flip(0) if reverse else g, w_hh, h0, c0)
    y = states[:steps]
    y = y.flip(0) if reverse else y
    return y.reshape((steps * n, hidden)), states[steps - 1], states[steps]


def _row_blocks(x: Tensor, sizes: list[int]) -> list[Tensor]:
    """``x`` cut into consecutive row blocks of ``sizes`` by halving: a slice's gradient is
    written at its parent's size, so cutting every step from ``x`` itself would cost the
    backward ``O(len(x))`` per step, ``O(T len(x))`` in all; halves cost ``O(len(x) log T)``."""
    if len(sizes) == 1:
        return [x]
    mid = len(sizes) // 2
    cut = sum(sizes[:mid])
    return _row_blocks(x[:cut], sizes[:mid]) + _row_blocks(x[cut:], sizes[mid:])


def _direction(mode: str, gi: Tensor, sizes: list[int], h0: Tensor, c0: Tensor | None,
               w_hh: Tensor, b_hh: Tensor | None, w_hr: Tensor | None,
               reverse: bool) -> tuple[Tensor, Tensor, Tensor | None]:
    """Run one direction of one layer over the packed projections ``gi [sum(sizes), G]``:
    ``(outputs [sum(sizes), H_out], h_n, c_n)``. Step t holds the first ``sizes[t]``
    sequences; a shrinking batch leaves the finished sequences' states behind (forward), a
    growing one starts the new sequences from ``h0`` (reverse). A full-batch LSTM without
    projection runs as the backend's fused ``lstm`` op."""
    if mode == "LSTM" and w_hr is None and c0 is not None and min(sizes) == h0.shape[0]:
        return _lstm_fused(gi, len(sizes), h0, c0, w_hh, reverse)
    blocks = _row_blocks(gi, sizes)
    outs: list[Tensor] = []
    h, c = h0, c0
    if not reverse:
        done_h: list[Tensor] = []
        done_c: list[Tensor] = []
        for t, n in enumerate(sizes):
            if n < h.shape[0]:
                done_h.append(h[n:])
                h = h[:n]
                if c is not None:
                    done_c.append(c[n:])
                    c = c[:n]
            h, c = _step(mode, blocks[t], h, c, w_hh, b_hh, w_hr)
            outs.append(h)
        h_n = Tensor.cat([h, *done_h[::-1]], 0) if done_h else h
        c_n = Tensor.cat([c, *done_c[::-1]], 0) if done_c and c is not None else c
        return Tensor.cat(outs, 0) if len(outs) > 1 else outs[0], h_n, c_n
    h, c = h0[:sizes[-1]], None if c0 is None else c0[:sizes[-1]]
    for t in range(len(sizes) - 1, -1, -1):
        n = sizes[t]
        if n > h.shape[0]:
            h = Tensor.cat([h, h0[h.shape[0]:n]], 0)
            if c is not None and c0 is not None:
                c = Tensor.cat([c, c0[c.shape[0]:n]], 0)
        h, c = _step(mode, blocks[t], h, c, w_hh, b_hh, w_hr)
        outs.append(h)
    return Tensor.cat(outs[::-1], 0) if len(outs) > 1 else outs[0], h, c


class RNNBase(Module):
    """The multi-layer recurrent layers' common part (torch.nn.RNNBase): ``mode`` is
    ``'RNN_TANH'``, ``'RNN_RELU'``, ``'LSTM'`` or ``'GRU'``."""

    def __init__(self, mode: str, input_size: int, hidden_size: int, num_layers: int = 1,
                 bias: bool = True, batch_first: bool = False, dropout: float = 0.0,
                 bidirectional: bool = False, proj_size: int = 0, *,
                 backend: type[Backend] | None = None, device: Device | None = None,
                 dtype: DTypeLike | None = None) -> None:
        name = {"RNN_TANH": "RNN", "RNN_RELU": "RNN"}.get(mode, mode)
        if mode not in _GATES:
            raise InvalidArgumentError(f"RNNBase: unknown mode {mode!r} (expected one of "
                                       f"{', '.join(_GATES)})")
        _check_sizes(name, input_size, hidden_size)
        if isinstance(dropout, bool) or not isinstance(dropout, int | float) \
                or not 0 <= dropout <= 1:
            raise InvalidArgumentError(f"{name}: dropout should be a number in range [0, 1] "
                                       f"representing the probability of an element being "
                                       f"zeroed, got {dropout!r}")
        if not isinstance(num_layers, int) or num_layers <= 0:
            raise InvalidArgumentError(f"{name}: num_layers must be a positive int, got "
                                       f"{num_layers!r}")
        if proj_size < 0 or (proj_size and proj_size >= hidden_size):
            raise InvalidArgumentError(f"{name}: proj_size must be in [0, hidden_size), got "
                                       f"proj_size={proj_size}, hidden_size={hidden_size}")
        if proj_size and mode != "LSTM":
            raise InvalidArgumentError(f"{name}: proj_size is only supported for LSTM")
        if dropout > 0 and num_layers == 1:
            warnings.warn(f"dropout option adds dropout after all but last recurrent layer, so "
                          f"non-zero dropout expects num_layers greater than 1, but got "
                          f"dropout={dropout} and num_layers={num_layers}", UserWarning,
                          stacklevel=2)
        self.mode, self.input_size, self.hidden_size = mode, input_size, hidden_size
        self.num_layers, self.bias, self.batch_first = num_layers, bias, batch_first
        self.dropout, self.bidirectional, self.proj_size = float(dropout), bidirectional, \
            proj_size
        gate_size = _GATES[mode] * hidden_size
        out_size = proj_size or hidden_size
        bound = 1.0 / math.sqrt(hidden_size)
        kw = init.Placement(backend=backend, device=device, dtype=dtype)
        self._names: list[tuple[str, str, str | None, str | None, str | None]] = []
        for layer in range(num_layers):
            layer_in = input_size if layer == 0 else out_size * self.num_directions
            for suffix in ("", "_reverse")[:self.num_directions]:
                s = f"_l{layer}{suffix}"
                shapes: list[tuple[str, tuple[int, ...]]] = [
                    ("weight_ih" + s, (gate_size, layer_in)),
                    ("weight_hh" + s, (gate_size, out_size))]
                if bias:
                    shapes += [("bias_ih" + s, (gate_size,)), ("bias_hh" + s, (gate_size,))]
                if proj_size:
                    shapes.append(("weight_hr" + s, (proj_size, hidden_size)))
                for pname, shape in shapes:
                    setattr(self, pname, init.uniform(shape, -bound, bound, **kw))
                self._names.append(("weight_ih" + s, "weight_hh" + s,
                                    "bias_ih" + s if bias else None,
                                    "bias_hh" + s if bias else None,
                                    "weight_hr" + s if proj_size else None))

    @property
    def num_directions(self) -> int:
        """2 when bidirectional, else 1."""
        return 2 if self.bidirectional else 1

    @property
    def all_weights(self) -> list[list[Tensor]]:
        """Each layer and direction's parameters in torch's order (w_ih, w_hh, b_ih, b_hh,
        w_hr)."""
        return [[getattr(self, n) for n in names if n is not None] for names in self._names]

    def flatten_parameters(self) -> None:
        """torch's call to pack the weights into one cuDNN buffer; burnpy's layers read each
        parameter where it is, so ported code calling it keeps working and nothing changes."""

    def _label(self) -> str:
        return f"{type(self).__name__}({self.extra_repr()})"

    def _check_input(self, x: Tensor, packed: bool) -> None:
        label = self._label()
        if x.kind is not FLOAT:
            raise DTypeError(f"{label}: input must be a float tensor, got {x.kind} "
                             f"({x.dtype!r})")
        w = getattr(self, self._names[0][0])
        if x.dtype != w.dtype:
            raise DTypeError(f"{label}: input dtype {x.dtype!r} differs from the parameters' "
                             f"{w.dtype!r}")
        if x.backend is not w.backend or x.device != w.device:
            raise BackendMismatchError(f"{label}: input on {x.backend.__name__} ({x.device}), "
                                       f"the parameters on {w.backend.__name__} ({w.device})")
        if x.ndim not in ((2,) if packed else (2, 3)):
            raise ShapeError(f"{label}: expected {'packed data' if packed else 'input'} to be "
                             f"{'2-d' if packed else '2-d or 3-d'}, got shape "
                             f"{describe(x.shape)}")
        if x.shape[-1] != self.input_size:
            raise ShapeError(f"{label}: input.size(-1) must be equal to input_size. Expected "
                             f"{self.input_size}, got {x.shape[-1]} (input shape "
                             f"{describe(x.shape)})")

    def _check_state(self, what: str, t: Tensor, batch: int, size: int,
                     unbatched: bool) -> None:
        layers = self.num_layers * self.num_directions
        want = (layers, size) if unbatched else (layers, batch, size)
        if t.shape != want:
            raise ShapeError(f"{self._label()}: expected {what} of shape {describe(want)} "
                             f"({'unbatched' if unbatched else 'batched'} input), got "
                             f"{describe(t.shape)}")
        w = getattr(self, self._names[0][0])
        if t.kind is not FLOAT or t.dtype != w.dtype:
            raise DTypeError(f"{self._label()}: {what} must be a float tensor of the "
                             f"parameters' dtype, got {t.dtype!r}")
        if t.backend is not w.backend or t.device != w.device:
            raise BackendMismatchError(f"{self._label()}: {what} is on {t.backend.__name__} "
                                       f"({t.device}), the parameters on "
                                       f"{w.backend.__name__} ({w.device})")

    def _initial(self, x: Tensor, hx: Any, batch: int, unbatched: bool) -> tuple[Tensor,
                                                                                 Tensor | None]:
        """``(h0, c0)`` as ``[layers * directions, batch, *]`` (zeros where not given)."""
        layers = self.num_layers * self.num_directions
        out_size = self.proj_size or self.hidden_size
        lstm = self.mode == "LSTM"
        if hx is None:
            kw = init.Placement(backend=x.backend, device=x.device, dtype=x.dtype)
            h0 = Tensor.zeros((layers, batch, out_size), **kw)
            return h0, Tensor.zeros((layers, batch, self.hidden_size), **kw) if lstm else None
        if lstm:
            if not (isinstance(hx, tuple | list) and len(hx) == 2
                    and all(isinstance(t, Tensor) for t in hx)):
                raise InvalidArgumentError(f"{self._label()}: hx must be a tuple (h_0, c_0) "
                                           f"of tensors, got {type(hx).__name__}")
            h0, c0 = hx
            self._check_state("h_0", h0, batch, out_size, unbatched)
            self._check_state("c_0", c0, batch, self.hidden_size, unbatched)
            return (h0.unsqueeze(1), c0.unsqueeze(1)) if unbatched else (h0, c0)
        if not isinstance(hx, Tensor):
            raise InvalidArgumentError(f"{self._label()}: hx must be a tensor, got "
                                       f"{type(hx).__name__}")
        self._check_state("hx", hx, batch, out_size, unbatched)
        return (hx.unsqueeze(1) if unbatched else hx), None

    def _run(self, data: Tensor, sizes: list[int], h0: Tensor,
             c0: Tensor | None) -> tuple[Tensor, Tensor, Tensor | None]:
        """All layers over packed ``data [sum(sizes), input_size]``: ``(outputs, h_n, c_n)``."""
        mode, dirs = self.mode, self.num_directions
        hs: list[Tensor] = []
        cs: list[Tensor] = []
        for layer in range(self.num_layers):
            outs = []
            for d in range(dirs):
                k = layer * dirs + d
                n_ih, n_hh, n_bih, n_bhh, n_hr = self._names[k]
                b_ih = None if n_bih is None else getattr(self, n_bih)
                b_hh = None if n_bhh is None else getattr(self, n_bhh)
                if mode != "GRU" and b_ih is not None and b_hh is not None:
                    b_ih, b_hh = b_ih + b_hh, None
                gi = F.linear(data, getattr(self, n_ih), b_ih)
                out, h, c = _direction(mode, gi, sizes, h0[k], None if c0 is None else c0[k],
                                       getattr(self, n_hh), b_hh,
                                       None if n_hr is None else getattr(self, n_hr), d == 1)
                outs.append(out)
                hs.append(h)
                if c is not None:
                    cs.append(c)
            data = Tensor.cat(outs, 1) if dirs == 2 else outs[0]
            if self.training and self.dropout > 0 and layer < self.num_layers - 1:
                data = F.dropout(data, self.dropout, True)
        return data, Tensor.stack(hs, 0), Tensor.stack(cs, 0) if cs else None

    def forward(self, input: Tensor | PackedSequence, hx: Any = None) -> tuple[Any, Any]:
        """``(output, h_n)`` (``(output, (h_n, c_n))`` for the LSTM): output ``[L, batch,
        directions * H_out]`` (batch first with ``batch_first``; packed for packed input),
        h_n ``[layers * directions, batch, H_out]`` (no batch dim for unbatched input)."""
        if isinstance(input, PackedSequence):
            data, sizes_t, sorted_idx, unsorted_idx = input
            self._check_input(data, True)
            sizes = [int(n) for n in sizes_t.tolist()]
            batch = sizes[0] if sizes else 0
            if sorted_idx is not None and hx is not None:
                hx = ((hx[0].index_select(1, sorted_idx), hx[1].index_select(1, sorted_idx))
                      if self.mode == "LSTM" and isinstance(hx, tuple | list)
                      else hx.index_select(1, sorted_idx))
            h0, c0 = self._initial(data, hx, batch, False)
            out, h_n, c_n = self._run(data, sizes, h0, c0)
            if unsorted_idx is not None:
                h_n = h_n.index_select(1, unsorted_idx)
                c_n = None if c_n is None else c_n.index_select(1, unsorted_idx)
            packed = PackedSequence(out, sizes_t, sorted_idx, unsorted_idx)
            return packed, ((h_n, c_n) if c_n is not None else h_n)
        self._check_input(input, False)
        unbatched = input.ndim == 2
        x = input.unsqueeze(1) if unbatched else (
            input.swap_dims(0, 1) if self.batch_first else input)
        steps, batch = x.shape[0], x.shape[1]
        if steps == 0:
            raise ShapeError(f"{self._label()}: expected a sequence length larger than 0, got "
                             f"input of shape {describe(input.shape)}")
        h0, c0 = self._initial(x, hx, batch, unbatched)
        out, h_n, c_n = self._run(x.reshape((steps * batch, self.input_size)),
                                  [batch] * steps, h0, c0)
        y = out.reshape((steps, batch, out.shape[-1]))
        if unbatched:
            y, h_n = y.squeeze(1), h_n.squeeze(1)
            c_n = None if c_n is None else c_n.squeeze(1)
        elif self.batch_first:
            y = y.swap_dims(0, 1)
        return y, ((h_n, c_n) if c_n is not None else h_n)

    def extra_repr(self) -> str:
        s = f"{self.input_size}, {self.hidden_size}"
        if self.proj_size:
            s += f", proj_size={self.proj_size}"
        if self.num_layers != 1:
            s += f", num_layers={self.num_layers}"
        if not self.bias:
            s += ", bias=False"
        if self.batch_first:
            s += ", batch_first=True"
        if self.dropout:
            s += f", dropout={self.dropout}"
        if self.bidirectional:
            s += ", bidirectional=True"
        return s


class RNN(RNNBase):
    """Elman RNN, ``h_t = tanh(x_t W_ih^T + b_ih + h_{t-1} W_hh^T + b_hh)`` (or relu)."""

    def __init__(self, input_size: int, hidden_size: int, num_layers: int = 1,
                 nonlinearity: str = "tanh", bias: bool = True, batch_first: bool = False,
                 dropout: float = 0.0, bidirectional: bool = False, *,
                 backend: type[Backend] | None = None, device: Device | None = None,
                 dtype: DTypeLike | None = None) -> None:
        if nonlinearity not in ("tanh", "relu"):
            raise InvalidArgumentError(f"RNN: unknown nonlinearity {nonlinearity!r} (expected "
                                       f"'tanh' or 'relu')")
        self.nonlinearity = nonlinearity
        super().__init__("RNN_TANH" if nonlinearity == "tanh" else "RNN_RELU", input_size,
                         hidden_size, num_layers, bias, batch_first, dropout, bidirectional,
                         backend=backend, device=device, dtype=dtype)

    def extra_repr(self) -> str:
        s = super().extra_repr()
        return s + (", nonlinearity='relu'" if self.nonlinearity == "relu" else "")


class LSTM(RNNBase):
    """Long short-term memory; with ``proj_size > 0`` the hidden state is projected by
    ``weight_hr`` (torch's LSTMP)."""

    def __init__(self, input_size: int, hidden_size: int, num_layers: int = 1,
                 bias: bool = True, batch_first: bool = False, dropout: float = 0.0,
                 bidirectional: bool = False, proj_size: int = 0, *,
                 backend: type[Backend] | None = None, device: Device | None = None,
                 dtype: DTypeLike | None = None) -> None:
        super().__init__("LSTM", input_size, hidden_size, num_layers, bias, batch_first,
                         dropout, bidirectional, proj_size, backend=backend, device=device,
                         dtype=dtype)


class GRU(RNNBase):
    """Gated recurrent unit, torch's equations (``n = tanh(W_in x + b_in + r * (W_hn h +
    b_hn))``)."""

    def __init__(self, input_size: int, hidden_size: int, num_layers: int = 1,
                 bias: bool = True, batch_first: bool = False, dropout: float = 0.0,
                 bidirectional: bool = False, *, backend: type[Backend] | None = None,
                 device: Device | None = None, dtype: DTypeLike | None = None) -> None:
        super().__init__("GRU", input_size, hidden_size, num_layers, bias, batch_first,
                         dropout, bidirectional, backend=backend, device=device, dtype=dtype)


class RNNCellBase(Module):
    """The cells' common part (torch.nn.RNNCellBase): ``weight_ih``, ``weight_hh``, and
    ``bias_ih``, ``bias_hh`` with ``bias``, uniform in +-1/sqrt(hidden_size)."""

    def __init__(self, input_size: int, hidden_size: int, bias: bool, num_chunks: int, *,
                 backend: type[Backend] | None = None, device: Device | None = None,
                 dtype: DTypeLike | None = None) -> None:
        _check_sizes(type(self).__name__, input_size, hidden_size)
        self.input_size, self.hidden_size, self.bias = input_size, hidden_size, bias
        bound = 1.0 / math.sqrt(hidden_size)
        kw = init.Placement(backend=backend, device=device, dtype=dtype)
        g = num_chunks * hidden_size
        self.weight_ih = init.uniform((g, input_size), -bound, bound, **kw)
        self.weight_hh = init.uniform((g, hidden_size), -bound, bound, **kw)
        if bias:
            self.bias_ih = init.uniform((g,), -bound, bound, **kw)
            self.bias_hh = init.uniform((g,), -bound, bound, **kw)

    def _prepare(self, x: Tensor, states: list[Tensor | None]) -> tuple[Tensor, list[Tensor],
                                                                        bool]:
        """Checked ``x [batch, input_size]`` and states ``[batch, hidden]`` (zeros where
        None), and whether the input was unbatched."""
        label = f"{type(self).__name__}({self.extra_repr()})"
        if x.kind is not FLOAT or x.dtype != self.weight_ih.dtype:
            raise DTypeError(f"{label}: input must be a float tensor of the parameters' dtype "
                             f"{self.weight_ih.dtype!r}, got {x.dtype!r}")
        if x.ndim not in (1, 2) or x.shape[-1] != self.input_size:
            raise ShapeError(f"{label}: expected input [batch, {self.input_size}] or "
                             f"[{self.input_size}], got {describe(x.shape)}")
        w = self.weight_ih
        for what, t in (("input", x), *(("hx", s) for s in states if s is not None)):
            if t.backend is not w.backend or t.device != w.device:
                raise BackendMismatchError(f"{label}: {what} on {t.backend.__name__} "
                                           f"({t.device}), the parameters on "
                                           f"{w.backend.__name__} ({w.device})")
        unbatched = x.ndim == 1
        x = x.unsqueeze(0) if unbatched else x
        want = (self.hidden_size,) if unbatched else (x.shape[0], self.hidden_size)
        out = []
        for s in states:
            if s is None:
                out.append(Tensor.zeros((x.shape[0], self.hidden_size), backend=x.backend,
                                        device=x.device, dtype=x.dtype))
                continue
            if s.shape != want or s.kind is not FLOAT or s.dtype != x.dtype:
                raise ShapeError(f"{label}: expected a hidden state of shape "
                                 f"{describe(want)} and dtype {x.dtype!r} for input "
                                 f"{describe(x.shape if not unbatched else x.shape[1:])}, got "
                                 f"{describe(s.shape)} ({s.dtype!r})")
            out.append(s.unsqueeze(0) if unbatched else s)
        return x, out, unbatched

    def _gates(self, x: Tensor, fold_hh: bool = True) -> Tensor:
        """``x``'s projection with ``bias_ih`` (and ``bias_hh`` when ``fold_hh``)."""
        b = None
        if self.bias:
            b = self.bias_ih + self.bias_hh if fold_hh else self.bias_ih
        return F.linear(x, self.weight_ih, b)

    def extra_repr(self) -> str:
        s = f"{self.input_size}, {self.hidden_size}"
        return s + ("" if self.bias else ", bias=False")


class RNNCell(RNNCellBase):
    """One Elman RNN step: ``h' = tanh(x W_ih^T + b_ih + h W_hh^T + b_hh)`` (or relu)."""

    def __init__(self, input_size: int, hidden_size: int, bias: bool = True,
                 nonlinearity: str = "tanh", *, backend: type[Backend] | None = None,
                 device: Device | None = None, dtype: DTypeLike | None = None) -> None:
        if nonlinearity not in ("tanh", "relu"):
            raise InvalidArgumentError(f"RNNCell: unknown nonlinearity {nonlinearity!r} "
                                       f"(expected 'tanh' or 'relu')")
        self.nonlinearity = nonlinearity
        super().__init__(input_size, hidden_size, bias, 1, backend=backend, device=device,
                         dtype=dtype)

    def forward(self, input: Tensor, hx: Tensor | None = None) -> Tensor:
        """``h'`` ``[batch, hidden_size]`` (``[hidden_size]`` for unbatched input)."""
        x, (h,), unbatched = self._prepare(input, [hx])
        mode = "RNN_TANH" if self.nonlinearity == "tanh" else "RNN_RELU"
        h, _ = _step(mode, self._gates(x), h, None, self.weight_hh, None, None)
        return h.squeeze(0) if unbatched else h

    def extra_repr(self) -> str:
        s = super().extra_repr()
        return s + (", nonlinearity='relu'" if self.nonlinearity == "relu" else "")


class LSTMCell(RNNCellBase):
    """One LSTM step: ``(h', c')`` from ``x`` and ``(h, c)``, as the backend's ``lstm`` op
    over one step."""

    def __init__(self, input_size: int, hidden_size: int, bias: bool = True, *,
                 backend: type[Backend] | None = None, device: Device | None = None,
                 dtype: DTypeLike | None = None) -> None:
        super().__init__(input_size, hidden_size, bias, 4, backend=backend, device=device,
                         dtype=dtype)

    def forward(self, input: Tensor, hx: tuple[Tensor, Tensor] | None = None
                ) -> tuple[Tensor, Tensor]:
        """``(h', c')``, each ``[batch, hidden_size]`` (``[hidden_size]`` unbatched)."""
        if hx is not None and not (isinstance(hx, tuple | list) and len(hx) == 2):
            raise InvalidArgumentError(f"LSTMCell({self.extra_repr()}): hx must be a tuple "
                                       f"(h, c), got {type(hx).__name__}")
        x, (h, c), unbatched = self._prepare(input, [None, None] if hx is None else list(hx))
        states = lstm_recurrence(self._gates(x).unsqueeze(0), self.weight_hh, h, c)
        h, c = states[0], states[1]
        return (h.squeeze(0), c.squeeze(0)) if unbatched else (h, c)


class GRUCell(RNNCellBase):
    """One GRU step with torch's equations."""

    def __init__(self, input_size: int, hidden_size: int, bias: bool = True, *,
                 backend: type[Backend] | None = None, device: Device | None = None,
                 dtype: DTypeLike | None = None) -> None:
        super().__init__(input_size, hidden_size, bias, 3, backend=backend, device=device,
                         dtype=dtype)

    def forward(self, input: Tensor, hx: Tensor | None = None) -> Tensor:
        """``h'`` ``[batch, hidden_size]`` (``[hidden_size]`` for unbatched input)."""
        x, (h,), unbatched = self._prepare(input, [hx])
        h, _ = _step("GRU", self._gates(x, fold_hh=False), h, None, self.weight_hh,
                     self.bias_hh if self.bias else None, None)
        return h.squeeze(0) if unbatched else h
