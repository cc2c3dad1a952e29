"""ONNX recurrent operators: RNN, GRU and LSTM, one step at a time on burnpy's tensor ops.

Each direction runs a Python loop over the sequence: the input projection ``X @ W^T + Wb``
is one matmul for all steps, the recurrent one a matmul per step, so the whole recurrence is
made of differentiable ops and trains under ``Autodiff``. ``sequence_lens`` masks each batch
entry past its length (zero outputs, the state held at its last valid step), which covers the
reverse direction too since it starts at the last step. Gate orders are ONNX's (LSTM i, o, f,
c; GRU z, r, h), and ``activations`` take their ``activation_alpha``/``activation_beta``
values in order, one for each activation that has the parameter.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

import burnpy
from burnpy.onnx.attributes import Attributes
from burnpy.onnx.registry import OpContext, Outputs, onnx_op
from burnpy.tensor import Tensor

Inputs = list[Tensor | None]
Activation = Callable[[Tensor], Tensor]

#: Activation name -> the defaults of its alpha and beta (None: it has no such parameter).
_ACTIVATION_PARAMS: dict[str, tuple[float | None, float | None]] = {
    "Relu": (None, None), "Tanh": (None, None), "Sigmoid": (None, None),
    "Softsign": (None, None), "Softplus": (None, None), "Affine": (1.0, 0.0),
    "LeakyRelu": (0.01, None), "ThresholdedRelu": (1.0, None), "ScaledTanh": (1.0, 1.0),
    "HardSigmoid": (0.2, 0.5), "Elu": (1.0, None),
}

_COMMON = ("activation_alpha", "activation_beta", "activations", "clip", "direction",
           "hidden_size")


def _activation(name: str, alpha: float | None, beta: float | None) -> Activation:
    """The elementwise function ONNX names ``name`` with its parameters bound."""
    a = 0.0 if alpha is None else alpha
    b = 0.0 if beta is None else beta
    table: dict[str, Activation] = {
        "Relu": Tensor.relu, "Tanh": Tensor.tanh, "Sigmoid": Tensor.sigmoid,
        "Softsign": lambda x: x / (x.abs() + 1.0), "Softplus": Tensor.softplus,
        "Affine": lambda x: x * a + b,
        "LeakyRelu": lambda x: burnpy.where(x >= 0, x, x * a),
        "ThresholdedRelu": lambda x: burnpy.where(x > a, x, x.zeros_like()),
        "ScaledTanh": lambda x: (x * b).tanh() * a,
        "HardSigmoid": lambda x: (x * a + b).clamp(0.0, 1.0),
        "Elu": lambda x: burnpy.where(x >= 0, x, (x.exp() - 1.0) * a),
    }
    return table[name]


def _activations(ctx: OpContext, attrs: Attributes, defaults: list[str],
                 num_directions: int) -> list[list[Activation]]:
    """The activation functions of each direction (``len(defaults)`` of them each)."""
    names = attrs.strings("activations")
    if names is None:
        names = defaults * num_directions
    if len(names) != len(defaults) * num_directions:
        ctx.error(f"activations: {len(names)} given, expected {len(defaults)} per direction "
                  f"for {num_directions} direction(s)")
    alphas = list(attrs.floats("activation_alpha") or [])
    betas = list(attrs.floats("activation_beta") or [])
    funcs: list[Activation] = []
    for name in names:
        canonical = next((k for k in _ACTIVATION_PARAMS if k.lower() == name.lower()), None)
        if canonical is None:
            ctx.unsupported(f"activation {name!r}", "activations")
        alpha_default, beta_default = _ACTIVATION_PARAMS[canonical]
        alpha = (alphas.pop(0) if alphas else alpha_default) if alpha_default is not None \
            else None
        beta = (betas.pop(0) if betas else beta_default) if beta_default is not None else None
        funcs.append(_activation(canonical, alpha, beta))
    n = len(defaults)
    return [funcs[d * n:(d + 1) * n] for d in range(num_directions)]


@dataclass
class _Recurrence:
    """What every recurrent op reads the same way, in the time-major layout."""

    x: Tensor  # [seq, batch, input]
    w: Tensor  # [dirs, gates * hidden, input]
    r: Tensor  # [dirs, gates * hidden, hidden]
    bias: Tensor | None  # [dirs, 2 * gates * hidden]
    mask: Tensor | None  # [seq, batch, 1] bool: step t is within entry b's length
    initial_h: Tensor  # [dirs, batch, hidden]
    hidden: int
    directions: list[bool]  # per direction: whether it runs in reverse
    clip: float | None
    layout: int


def _read(ctx: OpContext, inputs: Inputs, attrs: Attributes, gates: int) -> _Recurrence:
    """Check and read the inputs and attributes shared by RNN, GRU and LSTM."""
    x, w, r = ctx.arg(inputs, 0), ctx.arg(inputs, 1), ctx.arg(inputs, 2)
    if x.kind != "float":
        ctx.unsupported(f"input dtype {x.dtype!r}")
    layout = attrs.int("layout", 0)
    if layout not in (0, 1):
        ctx.error(f"layout={layout} (expected 0 or 1)")
    if x.ndim != 3 or w.ndim != 3 or r.ndim != 3:
        ctx.error(f"X, W and R must be 3-d, got shapes {x.shape}, {w.shape}, {r.shape}")
    if layout == 1:
        x = x.permute(1, 0, 2)
    seq, batch, _ = x.shape
    direction = attrs.string("direction", "forward")
    if direction not in ("forward", "reverse", "bidirectional"):
        ctx.error(f"direction={direction!r}")
    reverse = [False, True] if direction == "bidirectional" else [direction == "reverse"]
    hidden = attrs.int("hidden_size", r.shape[-1])
    dirs = len(reverse)
    if w.shape[:2] != (dirs, gates * hidden) or r.shape != (dirs, gates * hidden, hidden):
        ctx.error(f"W {w.shape} and R {r.shape} do not fit {dirs} direction(s), {gates} "
                  f"gate(s) and hidden_size {hidden}")
    bias = ctx.optional(inputs, 3)
    if bias is not None and bias.shape != (dirs, 2 * gates * hidden):
        ctx.error(f"B has shape {bias.shape}, expected {(dirs, 2 * gates * hidden)}")
    lens = ctx.optional(inputs, 4)
    mask = None
    if lens is not None:
        lengths = ctx.ints(lens)
        if len(lengths) != batch or any(n < 0 or n > seq for n in lengths):
            ctx.error(f"sequence_lens {lengths} do not fit batch {batch} and length {seq}")
        if any(n != seq for n in lengths):
            steps = ctx.constant(list(range(seq)), "int64").reshape(seq, 1, 1)
            mask = steps < lens.cast(ctx.backend.int_dtype).reshape(1, batch, 1)
    h0 = ctx.optional(inputs, 5)
    if h0 is None:
        h0 = burnpy.Tensor.zeros((dirs, batch, hidden), dtype=x.dtype, backend=ctx.backend,
                                 device=ctx.device)
    elif layout == 1:
        h0 = h0.permute(1, 0, 2)
    clip = attrs.float("clip", 0.0) if "clip" in attrs else None
    return _Recurrence(x, w, r, bias, mask, h0, hidden, reverse, clip, layout)


def _project(rec: _Recurrence, d: int, gates: int) -> tuple[Tensor, Tensor | None]:
    """Direction ``d``'s input projection for all steps ``X @ W^T + Wb`` and its ``Rb``."""
    xw = rec.x @ rec.w[d].permute(1, 0)
    rb = None
    if rec.bias is not None:
        n = gates * rec.hidden
        xw = xw + rec.bias[d, :n]
        rb = rec.bias[d, n:]
    return xw, rb


def _clip(rec: _Recurrence, pre: Tensor) -> Tensor:
    return pre if rec.clip is None else pre.clamp(-rec.clip, rec.clip)


def _hold(rec: _Recurrence, t: int, new: Tensor, old: Tensor) -> Tensor:
    """``new`` where step ``t`` is within an entry's length, else ``old``."""
    return new if rec.mask is None else burnpy.where(rec.mask[t], new, old)


def _steps(rec: _Recurrence, d: int) -> list[int]:
    seq = rec.x.shape[0]
    return list(range(seq - 1, -1, -1)) if rec.directions[d] else list(range(seq))


def _outputs(rec: _Recurrence, ys: list[list[Tensor]], finals: list[list[Tensor]]
             ) -> list[Tensor | None]:
    """Y ([seq, dirs, batch, hidden]) then each final state ([dirs, batch, hidden]), in
    the node's layout; ``ys[d]`` holds direction ``d``'s outputs in time order."""
    per_step = [burnpy.stack([ys[d][t] for d in range(len(ys))], dim=0)
                for t in range(rec.x.shape[0])]
    y = burnpy.stack(per_step, dim=0)
    if rec.mask is not None:
        y = burnpy.where(rec.mask.unsqueeze(1), y, y.zeros_like())
    states = [burnpy.stack(list(s), dim=0) for s in zip(*finals, strict=True)]
    if rec.layout == 1:
        y = y.permute(2, 0, 1, 3)
        states = [s.permute(1, 0, 2) for s in states]
    return [y, *states]


def _in_time_order(rec: _Recurrence, d: int, outs: list[Tensor]) -> list[Tensor]:
    return outs[::-1] if rec.directions[d] else outs


@onnx_op("RNN", 7, attrs=_COMMON)
@onnx_op("RNN", 14, attrs=(*_COMMON, "layout"))
def _rnn(ctx: OpContext, inputs: Inputs, attrs: Attributes) -> Outputs:
    """ONNX RNN: ``H_t = f(X_t W^T + H_{t-1} R^T + Wb + Rb)``."""
    rec = _read(ctx, inputs, attrs, 1)
    acts = _activations(ctx, attrs, ["Tanh"], len(rec.directions))
    ys, finals = [], []
    for d in range(len(rec.directions)):
        xw, rb = _project(rec, d, 1)
        rt = rec.r[d].permute(1, 0)
        h = rec.initial_h[d]
        outs = []
        for t in _steps(rec, d):
            pre = xw[t] + h @ rt
            if rb is not None:
                pre = pre + rb
            h = _hold(rec, t, acts[d][0](_clip(rec, pre)), h)
            outs.append(h)
        ys.append(_in_time_order(rec, d, outs))
        finals.append([h])
    return _outputs(rec, ys, finals)


@onnx_op("GRU", 7, attrs=(*_COMMON, "linear_before_reset"))
@onnx_op("GRU", 14, attrs=(*_COMMON, "layout", "linear_before_reset"))
def _gru(ctx: OpContext, inputs: Inputs, attrs: Attributes) -> Outputs:
    """ONNX GRU (gates z, r, h), with the reset gate applied before or after the recurrent
    matmul of the candidate (``linear_before_reset``)."""
    rec = _read(ctx, inputs, attrs, 3)
    acts = _activations(ctx, attrs, ["Sigmoid", "Tanh"], len(rec.directions))
    linear_before_reset = attrs.int("linear_before_reset", 0) != 0
    n = rec.hidden
    ys, finals = [], []
    for d in range(len(rec.directions)):
        f, g = acts[d]
        xw, rb = _project(rec, d, 3)
        rt = rec.r[d].permute(1, 0)
        r_zr, r_h = rt[:, :2 * n], rt[:, 2 * n:]
        h = rec.initial_h[d]
        outs = []
        for t in _steps(rec, d):
            zr = xw[t][:, :2 * n] + h @ r_zr
            hh = h @ r_h if linear_before_reset else None
            if rb is not None:
                zr = zr + rb[:2 * n]
                hh = hh + rb[2 * n:] if hh is not None else None
            zr = f(_clip(rec, zr))
            z, r = zr[:, :n], zr[:, n:]
            if hh is not None:
                cand = xw[t][:, 2 * n:] + r * hh
            else:
                cand = xw[t][:, 2 * n:] + (r * h) @ r_h
                if rb is not None:
                    cand = cand + rb[2 * n:]
            cand = g(_clip(rec, cand))
            h = _hold(rec, t, (1.0 - z) * cand + z * h, h)
            outs.append(h)
        ys.append(_in_time_order(rec, d, outs))
        finals.append([h])
    return _outputs(rec, ys, finals)


@onnx_op("LSTM", 7, attrs=(*_COMMON, "input_forget"))
@onnx_op("LSTM", 14, attrs=(*_COMMON, "input_forget", "layout"))
def _lstm(ctx: OpContext, inputs: Inputs, attrs: Attributes) -> Outputs:
    """ONNX LSTM (gates i, o, f, c; peepholes P in the order i, o, f), with the forget gate
    coupled to the input gate (``f = 1 - i``) under ``input_forget``."""
    rec = _read(ctx, inputs, attrs, 4)
    dirs = len(rec.directions)
    acts = _activations(ctx, attrs, ["Sigmoid", "Tanh", "Tanh"], dirs)
    n = rec.hidden
    c0 = ctx.optional(inputs, 6)
    if c0 is None:
        c0 = rec.initial_h.zeros_like()
    elif rec.layout == 1:
        c0 = c0.permute(1, 0, 2)
    peep = ctx.optional(inputs, 7)
    if peep is not None and peep.shape != (dirs, 3 * n):
        ctx.error(f"P has shape {peep.shape}, expected {(dirs, 3 * n)}")
    couple = attrs.int("input_forget", 0) != 0
    ys, finals = [], []
    for d in range(dirs):
        f, g, hact = acts[d]
        xw, rb = _project(rec, d, 4)
        rt = rec.r[d].permute(1, 0)
        h, c = rec.initial_h[d], c0[d]
        outs = []
        for t in _steps(rec, d):
            pre = xw[t] + h @ rt
            if rb is not None:
                pre = pre + rb
            pi, po, pf, pc = (pre[:, k * n:(k + 1) * n] for k in range(4))
            if peep is not None:
                pi = pi + peep[d, :n] * c
                pf = pf + peep[d, 2 * n:] * c
            i = f(_clip(rec, pi))
            forget = 1.0 - i if couple else f(_clip(rec, pf))
            c_new = forget * c + i * g(_clip(rec, pc))
            if peep is not None:
                po = po + peep[d, n:2 * n] * c_new
            h_new = f(_clip(rec, po)) * hact(c_new)
            h, c = _hold(rec, t, h_new, h), _hold(rec, t, c_new, c)
            outs.append(h)
        ys.append(_in_time_order(rec, d, outs))
        finals.append([h, c])
    return _outputs(rec, ys, finals)
