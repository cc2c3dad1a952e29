"""``linear``: ``x @ weight.T + bias`` with ``weight [out, in]``, one backend op (a quantized
weight multiplies the float activations directly)."""

from __future__ import annotations

from burnpy.backend.errors import KindError, ShapeError, describe
from burnpy.nn.functional._common import _same
from burnpy.tensor import Tensor
from burnpy.tensor._core import FLOAT, QUANTIZED, new
from burnpy.tensor.autocast_hook import autocast_op


@autocast_op("linear")
def linear(x: Tensor, weight: Tensor, bias: Tensor | None = None) -> Tensor:
    """``x @ weight.T + bias`` with ``weight [out, in]``."""
    op = "linear"
    if x.kind is not FLOAT:
        raise KindError(f"{op}: input must be a float tensor, got {x.kind}")
    if weight.kind is QUANTIZED:
        return _quantized_linear(x, weight, bias)
    _same(op, x, weight, bias)
    x_shape, w_shape = x.shape, weight.shape
    if len(w_shape) != 2 or not x_shape or x_shape[-1] != w_shape[1]:
        raise ShapeError(f"{op}: input {describe(x_shape)} does not fit weight "
                         f"{describe(w_shape)} ([out, in] with in = input's last dim)")
    if bias is not None and bias.shape != (w_shape[0],):
        raise ShapeError(f"{op}: bias must have shape ({w_shape[0]},), got "
                         f"{describe(bias.shape)}")
    b = x.backend
    return new(b, b.linear(x.primitive, weight.primitive,
                           None if bias is None else bias.primitive), FLOAT)


def _quantized_linear(x: Tensor, weight: Tensor, bias: Tensor | None) -> Tensor:
    """``linear`` with a quantized ``[out, in]`` weight, weight-only: the activations stay
    float and the backend multiplies them with the quantized weight (``q_linear``). A
    decoding step runs this per layer per token, so the checks read the primitives' shapes
    once and check the bias only when there is one."""
    b = x.backend
    x_shape, w_shape = x.primitive.shape, weight.primitive.shape
    if len(w_shape) != 2 or not x_shape or x_shape[-1] != w_shape[1]:
        raise ShapeError(f"linear: input {describe(x_shape)} does not fit quantized weight "
                         f"{describe(w_shape)}")
    if bias is None:
        return new(b, b.q_linear(x.primitive, weight.primitive, None), FLOAT)
    if (bias.backend is not b or b.multi_device or bias.kind is not FLOAT
            or bias.primitive.dtype != x.primitive.dtype):
        _same("linear", x, bias)  # the full check, naming what differs
    if bias.primitive.shape != (w_shape[0],):
        raise ShapeError(f"linear: bias must have shape ({w_shape[0]},), got "
                         f"{describe(bias.shape)}")
    return new(b, b.q_linear(x.primitive, weight.primitive, bias.primitive), FLOAT)


def bilinear(input1: Tensor, input2: Tensor, weight: Tensor,
             bias: Tensor | None = None) -> Tensor:
    """``y[..., o] = input1[..., i] weight[o, i, j] input2[..., j] + bias[o]`` for inputs
    ``[..., in1]`` and ``[..., in2]`` with the same leading dims (torch's ``bilinear``)."""
    op = "bilinear"
    for x in (input1, input2):
        if x.kind is not FLOAT:
            raise KindError(f"{op}: inputs must be float tensors, got {x.kind}")
    _same(op, input1, input2, weight, bias)
    if (weight.ndim != 3 or input1.ndim < 1 or input1.shape[:-1] != input2.shape[:-1]
            or (input1.shape[-1], input2.shape[-1]) != weight.shape[1:]):
        raise ShapeError(f"{op}: inputs {describe(input1.shape)} and {describe(input2.shape)} "
                         f"do not fit weight {describe(weight.shape)} ([out, in1, in2], the "
                         "inputs' leading dims equal)")
    out, in1, in2 = weight.shape
    if bias is not None and bias.shape != (out,):
        raise ShapeError(f"{op}: bias must have shape ({out},), got {describe(bias.shape)}")
    left = input1.matmul(weight.permute(1, 0, 2).reshape(in1, out * in2))
    y = (left.reshape(*input1.shape[:-1], out, in2) * input2.unsqueeze(-2)).sum(-1)
    return y if bias is None else y + bias
