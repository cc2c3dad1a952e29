"""ONNX signal-processing operators: DFT, STFT and the Hann, Hamming and Blackman windows.

The transforms are matrix products with host-built cosine and sine tables (complex values
as a trailing [real, imaginary] dim, as ONNX stores them), so they run on any backend and
differentiate under Autodiff.
"""

from __future__ import annotations

import numpy as np

from burnpy.backend.dtype import DType
from burnpy.onnx.attributes import Attributes
from burnpy.onnx.dtypes import burnpy_dtype
from burnpy.onnx.registry import OpContext, Outputs, onnx_op
from burnpy.tensor import Tensor, cat

Inputs = list[Tensor | None]


def _fit(x: Tensor, length: int) -> Tensor:
    """``x`` along its last dim cut or zero-padded to ``length`` (NumPy's fft ``n=``)."""
    size = x.shape[-1]
    if size >= length:
        return x.narrow(-1, 0, length)
    zeros = Tensor.zeros([*x.shape[:-1], length - size], backend=x.backend, device=x.device,
                         dtype=x.dtype)
    return cat([x, zeros], -1)


def dft(ctx: OpContext, x: Tensor, axis: int, length: int | None, inverse: bool,
        onesided: bool) -> Tensor:
    """The DFT of ``x [..., L, 1 or 2]`` along ``axis`` (a dim before the last), as
    ``[..., K, 2]`` (``[..., n, 1]`` for a one-sided inverse, a real signal)."""
    axis = axis % x.ndim
    out_dtype = x.dtype
    if x.backend.supports_dtype(x.device, DType.float64):
        # Sums of many products: float64 keeps the exact zeros of symmetric inputs near zero.
        x = x.cast(DType.float64)
    if axis == x.ndim - 1:
        ctx.error("the axis cannot be the last dim, which holds the real and imaginary parts")
    if x.shape[-1] not in (1, 2):
        ctx.error(f"the last dim must be 1 (real) or 2 (complex), got shape {x.shape}")
    real = x.narrow(-1, 0, 1).squeeze(-1).movedim(axis, -1)
    imag = x.narrow(-1, 1, 1).squeeze(-1).movedim(axis, -1) if x.shape[-1] == 2 else None
    n = length if length is not None else (
        2 * (x.shape[axis] - 1) if inverse and onesided else x.shape[axis])
    dtype = x.dtype.numpy
    if inverse and onesided:  # a Hermitian half spectrum back to a real signal
        bins = n // 2 + 1
        k, t = np.arange(bins)[:, None], np.arange(n)[None, :]
        angle = 2 * np.pi * k * t / n
        weight = np.where((k == 0) | (2 * k == n), 1.0, 2.0) / n
        out = _fit(real, bins) @ ctx.constant((weight * np.cos(angle)).astype(dtype))
        if imag is not None:
            out = out - _fit(imag, bins) @ ctx.constant((weight * np.sin(angle)).astype(dtype))
        return out.movedim(-1, axis).unsqueeze(-1).cast(out_dtype)
    bins = n // 2 + 1 if onesided else n
    t, k = np.arange(n)[:, None], np.arange(bins)[None, :]
    angle = 2 * np.pi * t * k / n
    scale = 1.0 / n if inverse else 1.0
    cos = ctx.constant((np.cos(angle) * scale).astype(dtype))
    sin = ctx.constant((np.sin(angle) * (scale if inverse else -scale)).astype(dtype))
    re_in = _fit(real, n)
    out_re, out_im = re_in @ cos, re_in @ sin
    if imag is not None:
        im_in = _fit(imag, n)
        out_re = out_re - im_in @ sin
        out_im = out_im + im_in @ cos
    return cat([out_re.movedim(-1, axis).unsqueeze(-1), out_im.movedim(-1, axis).unsqueeze(-1)],
               -1).cast(out_dtype)


def _length(ctx: OpContext, t: Tensor | None) -> int | None:
    return None if t is None else ctx.ints(t)[0]


@onnx_op("DFT", 17, attrs=("axis", "inverse", "onesided"))
def _dft_17(ctx: OpContext, inputs: Inputs, attrs: Attributes) -> Outputs:
    """ONNX DFT at opset 17: the axis is an attribute (default 1)."""
    x = ctx.arg(inputs, 0)
    return dft(ctx, x, attrs.int("axis", 1), _length(ctx, ctx.optional(inputs, 1)),
               bool(attrs.int("inverse", 0)), bool(attrs.int("onesided", 0)))


@onnx_op("DFT", 20, attrs=("inverse", "onesided"))
def _dft_20(ctx: OpContext, inputs: Inputs, attrs: Attributes) -> Outputs:
    """ONNX DFT from opset 20: the axis is an optional input (default -2)."""
    x = ctx.arg(inputs, 0)
    axis = ctx.optional(inputs, 2)
    return dft(ctx, x, -2 if axis is None else ctx.ints(axis)[0],
               _length(ctx, ctx.optional(inputs, 1)), bool(attrs.int("inverse", 0)),
               bool(attrs.int("onesided", 0)))


@onnx_op("STFT", 17, attrs=("onesided",))
def _stft(ctx: OpContext, inputs: Inputs, attrs: Attributes) -> Outputs:
    """ONNX STFT: windowed DFTs of frames ``frame_step`` apart, ``[batch, frames, bins, 2]``."""
    x, step = ctx.arg(inputs, 0), ctx.ints(ctx.arg(inputs, 1))[0]
    window, frame_input = ctx.optional(inputs, 2), ctx.optional(inputs, 3)
    length = (_length(ctx, frame_input) if frame_input is not None
              else window.shape[0] if window is not None else x.shape[-2]) or x.shape[-2]
    frames = 1 + (x.shape[-2] - length) // step
    index = (np.arange(frames)[:, None] * step + np.arange(length)[None, :]).reshape(-1)
    framed = x.index_select(1, ctx.constant(index.astype(np.int64)))
    framed = framed.reshape(x.shape[0], frames, length, x.shape[-1])
    if window is not None:
        framed = framed * window.reshape(1, 1, length, 1)
    return dft(ctx, framed, 2, length, False, bool(attrs.int("onesided", 1)))


def _window(name: str, formula: dict[str, tuple[float, ...]]) -> None:
    coefficients = formula[name]

    def run(ctx: OpContext, inputs: Inputs, attrs: Attributes) -> Outputs:
        size = ctx.ints(ctx.arg(inputs, 0))[0]
        span = size if attrs.int("periodic", 1) else size - 1
        phase = 2 * np.pi * np.arange(size) / span
        values = sum(c * np.cos(i * phase) for i, c in enumerate(coefficients))
        dtype = burnpy_dtype(attrs.int("output_datatype", 1), ctx.label)
        return ctx.constant(np.asarray(values).astype(dtype.numpy))

    run.__doc__ = f"ONNX {name}: a cosine-sum window, periodic unless ``periodic=0``."
    onnx_op(name, 17, attrs=("output_datatype", "periodic"))(run)


_WINDOWS = {"HannWindow": (0.5, -0.5), "HammingWindow": (25 / 46, -21 / 46),
            "BlackmanWindow": (0.42, -0.5, 0.08)}
for _name in _WINDOWS:
    _window(_name, _WINDOWS)
