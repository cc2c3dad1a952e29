"""ONNX audio features: MelWeightMatrix, the triangular mel filterbank that maps a one-sided
spectrum's bins to mel bands.

The matrix depends only on scalar inputs, so it is built on the host, in the scalar inputs'
own types so that its band edges round to the same bins as ONNX's definition, and returned as
a constant on the node's backend.
"""

from __future__ import annotations

import numpy as np

from burnpy.onnx.attributes import Attributes
from burnpy.onnx.dtypes import burnpy_dtype
from burnpy.onnx.registry import OpContext, Outputs, onnx_op
from burnpy.tensor import Tensor

Inputs = list[Tensor | None]


@onnx_op("MelWeightMatrix", 17, attrs=("output_datatype",))
def _mel_weight_matrix(ctx: OpContext, inputs: Inputs, attrs: Attributes) -> Outputs:
    """ONNX MelWeightMatrix ``[dft_length // 2 + 1, num_mel_bins]``: band ``i`` rises from
    edge ``i`` to edge ``i + 1`` and falls to edge ``i + 2``, the ``num_mel_bins + 2`` edges
    evenly spaced in mel between the two hertz limits and floored to frequency bins."""
    num_mel = int(ctx.scalar(ctx.arg(inputs, 0)))
    dft_length = int(ctx.scalar(ctx.arg(inputs, 1)))
    sample_rate = int(ctx.scalar(ctx.arg(inputs, 2)))
    lower = ctx.arg(inputs, 3).to_numpy().reshape(())
    upper = ctx.arg(inputs, 4).to_numpy().reshape(())
    if num_mel < 1 or dft_length < 1 or sample_rate < 1:
        ctx.error(f"num_mel_bins {num_mel}, dft_length {dft_length} and sample_rate "
                  f"{sample_rate} must be positive")
    low_mel = 2595 * np.log1p(lower / 700) / np.log(10)
    high_mel = 2595 * np.log1p(upper / 700) / np.log(10)
    step = (high_mel - low_mel) / (num_mel + 2)
    hertz = 700 * np.expm1((np.arange(num_mel + 2) * step + low_mel) / 2595 * np.log(10))
    edges = (((dft_length + 1) * hertz) // sample_rate).astype(np.int64)
    bins = dft_length // 2 + 1
    if edges.min() < 0 or edges.max() >= bins:
        ctx.error(f"the mel edges from {lower} Hz to {upper} Hz fall outside the {bins} "
                  f"frequency bins of a {dft_length}-point DFT at {sample_rate} Hz")
    out = np.zeros((bins, num_mel))
    for i in range(num_mel):
        left, center, right = (int(e) for e in edges[i:i + 3])
        if center == left:
            out[center, i] = 1.0
        else:
            rising = np.arange(left, center + 1)
            out[rising, i] = (rising - left) / (center - left)
        if right > center:
            falling = np.arange(center, right)
            out[falling, i] = (right - falling) / (right - center)
    dtype = burnpy_dtype(attrs.int("output_datatype", 1), ctx.label)
    return ctx.constant(out).cast(dtype)
