"""im2col and col2im: ``unfold`` (sliding blocks as columns) and its adjoint ``fold``,
compositions of Tensor ops."""

from __future__ import annotations

import numpy as np

from burnpy.backend.errors import ShapeError, describe
from burnpy.nn.functional._common import IntOrTuple, _float, _host, _ints
from burnpy.nn.functional.padding import pad
from burnpy.tensor import Tensor


def _im2col_args(op: str, kernel_size: IntOrTuple, dilation: IntOrTuple, padding: IntOrTuple,
                 stride: IntOrTuple) -> tuple[tuple[int, ...], ...]:
    return (_ints(op, "kernel_size", kernel_size, 2, 1), _ints(op, "dilation", dilation, 2, 1),
            _ints(op, "padding", padding, 2, 0), _ints(op, "stride", stride, 2, 1))


def unfold(input: Tensor, kernel_size: IntOrTuple, dilation: IntOrTuple = 1,
           padding: IntOrTuple = 0, stride: IntOrTuple = 1) -> Tensor:
    """im2col: the sliding ``kernel_size`` blocks of ``[n, c, h, w]`` as columns of
    ``[n, c * kh * kw, blocks]`` (an unbatched ``[c, h, w]`` gives ``[c * kh * kw, blocks]``)."""
    op = "unfold"
    _float(op, input)
    if input.ndim == 3:
        return unfold(input.unsqueeze(0), kernel_size, dilation, padding, stride).squeeze(0)
    if input.ndim != 4:
        raise ShapeError(f"{op}: input must be [n, c, h, w] or [c, h, w], got "
                         f"{describe(input.shape)}")
    k, d, p, s = _im2col_args(op, kernel_size, dilation, padding, stride)
    x = pad(input, (p[1], p[1], p[0], p[0])) if any(p) else input
    spans = [dd * (kk - 1) + 1 for kk, dd in zip(k, d, strict=True)]
    if spans[0] > x.shape[2] or spans[1] > x.shape[3]:
        raise ShapeError(f"{op}: kernel {k} (dilation {d}) does not fit the padded input "
                         f"{describe(x.shape)}")
    blocks = x.unfold(2, spans[0], s[0]).unfold(3, spans[1], s[1])
    blocks = blocks[..., ::d[0], ::d[1]]  # [n, c, oh, ow, kh, kw]
    n, c, oh, ow = blocks.shape[:4]
    return blocks.permute(0, 1, 4, 5, 2, 3).reshape(n, c * k[0] * k[1], oh * ow)


def fold(input: Tensor, output_size: IntOrTuple, kernel_size: IntOrTuple,
         dilation: IntOrTuple = 1, padding: IntOrTuple = 0, stride: IntOrTuple = 1) -> Tensor:
    """col2im: sums the columns of ``[n, c * kh * kw, blocks]`` back into ``[n, c, *output]``
    (overlaps add up); the adjoint of ``unfold``."""
    op = "fold"
    _float(op, input)
    if input.ndim == 2:
        return fold(input.unsqueeze(0), output_size, kernel_size, dilation, padding,
                    stride).squeeze(0)
    size = _ints(op, "output_size", output_size, 2, 1)
    k, d, p, s = _im2col_args(op, kernel_size, dilation, padding, stride)
    hp, wp = size[0] + 2 * p[0], size[1] + 2 * p[1]
    oh, ow = ((hp - d[0] * (k[0] - 1) - 1) // s[0] + 1, (wp - d[1] * (k[1] - 1) - 1) // s[1] + 1)
    kk = k[0] * k[1]
    if input.ndim != 3 or input.shape[1] % kk or input.shape[2] != oh * ow or oh < 1 or ow < 1:
        raise ShapeError(f"{op}: input [n, c * {kk}, {max(oh, 0) * max(ow, 0)}] expected for "
                         f"output {size}, kernel {k}, got {describe(input.shape)}")
    n, c = input.shape[0], input.shape[1] // kk
    ki, kj, bi, bj = np.meshgrid(np.arange(k[0]), np.arange(k[1]), np.arange(oh),
                                 np.arange(ow), indexing="ij")
    flat = ((bi * s[0] + ki * d[0]) * wp + bj * s[1] + kj * d[1]).reshape(-1)
    index = _host(input, flat.astype(np.int64)).reshape(1, 1, -1).expand(n, c, flat.size)
    zeros = Tensor.zeros((n, c, hp * wp), backend=input.backend, device=input.device,
                         dtype=input.dtype)
    out = zeros.scatter_add(2, index, input.reshape(n, c, kk * oh * ow))
    out = out.reshape(n, c, hp, wp)
    return out[:, :, p[0]:p[0] + size[0], p[1]:p[1] + size[1]]
