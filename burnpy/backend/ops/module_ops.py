# A @required op is a declaration: its body is its docstring, implemented by each backend.
# mypy: disable-error-code="empty-body"
"""Module ops of the Backend protocol (Burn's ``ModuleOps``): convolutions, pools, embedding,
interpolation, linear and attention, with the backward kernels autodiff needs.

Layouts follow PyTorch: activations are ``[batch, channels, *spatial]``; conv weights are
``[out_channels, in_channels / groups, *kernel]``; transposed-conv weights are
``[in_channels, out_channels / groups, *kernel]``; linear weights are ``[out, in]``.
A spatial rank N (1, 2 or 3) is given by the length of the options' tuples.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import dataclass
from typing import TYPE_CHECKING, Literal

from burnpy.backend.dtype import dtype_of_numpy
from burnpy.backend.ops._marker import provided, required
from burnpy.backend.primitives import BoolPrimitive, FloatPrimitive, IntPrimitive

if TYPE_CHECKING:
    from burnpy.backend.base import Backend

Ints = tuple[int, ...]
InterpolateMode = Literal["nearest", "bilinear"]


@dataclass(frozen=True, slots=True)
class ConvOptions:
    """Stride, zero padding and dilation per spatial dim, and the number of channel groups."""

    stride: Ints
    padding: Ints
    dilation: Ints
    groups: int = 1


@dataclass(frozen=True, slots=True)
class ConvTransposeOptions:
    """As ConvOptions, plus ``padding_out``: extra size added to one side of the output."""

    stride: Ints
    padding: Ints
    padding_out: Ints
    dilation: Ints
    groups: int = 1


def conv_output_size(size: int, kernel: int, stride: int, padding: int, dilation: int) -> int:
    """Output length of a convolution along one dim."""
    return (size + 2 * padding - dilation * (kernel - 1) - 1) // stride + 1


def conv_transpose_output_size(size: int, kernel: int, stride: int, padding: int,
                               padding_out: int, dilation: int) -> int:
    """Output length of a transposed convolution along one dim."""
    return (size - 1) * stride - 2 * padding + dilation * (kernel - 1) + padding_out + 1


def pool_output_size(size: int, kernel: int, stride: int, padding: int, dilation: int,
                     ceil_mode: bool) -> int:
    """Output length of a pool along one dim (torch's rule: the last window must start inside
    the input or its left padding)."""
    span = size + 2 * padding - dilation * (kernel - 1) - 1
    out = (-(-span // stride) if ceil_mode else span // stride) + 1
    if ceil_mode and (out - 1) * stride >= size + padding:
        out -= 1
    return out


class ModuleOps:
    """Neural-network ops over float primitives."""

    # ---- convolution --------------------------------------------------------------------------
    @required
    def conv(x: FloatPrimitive, weight: FloatPrimitive, bias: FloatPrimitive | None,
             options: ConvOptions) -> FloatPrimitive:
        """N-d convolution (cross-correlation, as torch), N = len(options.stride)."""

    @required
    def conv_weight_backward(x: FloatPrimitive, weight: FloatPrimitive, grad: FloatPrimitive,
                             options: ConvOptions) -> FloatPrimitive:
        """Gradient of ``conv`` with respect to ``weight``."""

    @required
    def conv_transpose(x: FloatPrimitive, weight: FloatPrimitive, bias: FloatPrimitive | None,
                       options: ConvTransposeOptions) -> FloatPrimitive:
        """N-d transposed convolution (the adjoint of ``conv`` in ``x``)."""

    @required
    def conv_transpose_weight_backward(x: FloatPrimitive, weight: FloatPrimitive,
                                       grad: FloatPrimitive,
                                       options: ConvTransposeOptions) -> FloatPrimitive:
        """Gradient of ``conv_transpose`` with respect to ``weight``."""

    @provided
    def conv_x_backward(cls: type[Backend], x: FloatPrimitive, weight: FloatPrimitive,
                        grad: FloatPrimitive, options: ConvOptions) -> FloatPrimitive:
        """Gradient of ``conv`` with respect to ``x``: a transposed conv of ``grad``, with the
        output padding that restores x's exact size."""
        spatial = x.shape[2:]
        kernel = weight.shape[2:]
        padding_out = tuple(
            s - conv_transpose_output_size(g, k, st, p, 0, d)
            for s, g, k, st, p, d in zip(spatial, grad.shape[2:], kernel, options.stride,
                                         options.padding, options.dilation, strict=True))
        t_opts = ConvTransposeOptions(options.stride, options.padding, padding_out,
                                      options.dilation, options.groups)
        return cls.conv_transpose(grad, weight, None, t_opts)

    @provided
    def conv_transpose_x_backward(cls: type[Backend], x: FloatPrimitive, weight: FloatPrimitive,
                                  grad: FloatPrimitive,
                                  options: ConvTransposeOptions) -> FloatPrimitive:
        """Gradient of ``conv_transpose`` with respect to ``x``: a plain conv of ``grad``."""
        c_opts = ConvOptions(options.stride, options.padding, options.dilation, options.groups)
        out = cls.conv(grad, weight, None, c_opts)
        # padding_out can leave a trailing partial window; crop to x's spatial size.
        window = tuple(slice(0, n) for n in x.shape)
        return cls.float_slice(out, window)

    @provided
    def conv_bias_backward(cls: type[Backend], grad: FloatPrimitive) -> FloatPrimitive:
        """Gradient of a conv's bias: ``grad`` summed over batch and spatial dims."""
        summed = grad
        for dim in range(len(grad.shape) - 1, 1, -1):
            summed = cls.float_sum_dim(summed, dim)
        summed = cls.float_sum_dim(summed, 0)
        return cls.float_reshape(summed, (grad.shape[1],))

    @provided
    def conv1d(cls: type[Backend], x: FloatPrimitive, weight: FloatPrimitive,
               bias: FloatPrimitive | None, options: ConvOptions) -> FloatPrimitive:
        return cls.conv(x, weight, bias, options)

    @provided
    def conv2d(cls: type[Backend], x: FloatPrimitive, weight: FloatPrimitive,
               bias: FloatPrimitive | None, options: ConvOptions) -> FloatPrimitive:
        return cls.conv(x, weight, bias, options)

    @provided
    def conv3d(cls: type[Backend], x: FloatPrimitive, weight: FloatPrimitive,
               bias: FloatPrimitive | None, options: ConvOptions) -> FloatPrimitive:
        return cls.conv(x, weight, bias, options)

    @provided
    def conv_transpose1d(cls: type[Backend], x: FloatPrimitive, weight: FloatPrimitive,
                         bias: FloatPrimitive | None,
                         options: ConvTransposeOptions) -> FloatPrimitive:
        return cls.conv_transpose(x, weight, bias, options)

    @provided
    def conv_transpose2d(cls: type[Backend], x: FloatPrimitive, weight: FloatPrimitive,
                         bias: FloatPrimitive | None,
                         options: ConvTransposeOptions) -> FloatPrimitive:
        return cls.conv_transpose(x, weight, bias, options)

    @provided
    def conv_transpose3d(cls: type[Backend], x: FloatPrimitive, weight: FloatPrimitive,
                         bias: FloatPrimitive | None,
                         options: ConvTransposeOptions) -> FloatPrimitive:
        return cls.conv_transpose(x, weight, bias, options)

    # ---- pooling ------------------------------------------------------------------------------
    @required
    def avg_pool(x: FloatPrimitive, kernel: Ints, stride: Ints, padding: Ints,
                 count_include_pad: bool, ceil_mode: bool) -> FloatPrimitive:
        """N-d average pool (N = len(kernel), 1 or 2), torch's semantics."""

    @required
    def avg_pool_backward(x: FloatPrimitive, grad: FloatPrimitive, kernel: Ints, stride: Ints,
                          padding: Ints, count_include_pad: bool,
                          ceil_mode: bool) -> FloatPrimitive:
        """Gradient of ``avg_pool`` with respect to ``x``."""

    @required
    def max_pool_with_indices(x: FloatPrimitive, kernel: Ints, stride: Ints, padding: Ints,
                              dilation: Ints,
                              ceil_mode: bool) -> tuple[FloatPrimitive, IntPrimitive]:
        """N-d max pool (N = 1 or 2) and, per output, the flat index of the max within the
        input's spatial plane (torch's convention; first index among ties)."""

    @provided
    def max_pool(cls: type[Backend], x: FloatPrimitive, kernel: Ints, stride: Ints, padding: Ints,
                 dilation: Ints, ceil_mode: bool) -> FloatPrimitive:
        return cls.max_pool_with_indices(x, kernel, stride, padding, dilation, ceil_mode)[0]

    @provided
    def max_pool_with_indices_backward(cls: type[Backend], x: FloatPrimitive, grad: FloatPrimitive,
                                       indices: IntPrimitive) -> FloatPrimitive:
        """Gradient of a max pool: ``grad`` summed into the positions named by ``indices``."""
        n, c = x.shape[0], x.shape[1]
        plane = math.prod(x.shape[2:])
        flat_grad = cls.float_reshape(grad, (n, c, math.prod(grad.shape[2:])))
        flat_idx = cls.int_reshape(indices, flat_grad.shape)
        zeros = cls.float_zeros((n, c, plane), cls.float_device(x),
                                dtype_of_numpy(x.dtype))
        out = cls.float_scatter_add(zeros, 2, flat_idx, flat_grad)
        return cls.float_reshape(out, x.shape)

    @provided
    def avg_pool1d(cls: type[Backend], x: FloatPrimitive, kernel: int, stride: int, padding: int,
                   count_include_pad: bool, ceil_mode: bool) -> FloatPrimitive:
        return cls.avg_pool(x, (kernel,), (stride,), (padding,), count_include_pad, ceil_mode)

    @provided
    def avg_pool2d(cls: type[Backend], x: FloatPrimitive, kernel: Ints, stride: Ints, padding: Ints,
                   count_include_pad: bool, ceil_mode: bool) -> FloatPrimitive:
        return cls.avg_pool(x, kernel, stride, padding, count_include_pad, ceil_mode)

    @provided
    def max_pool1d(cls: type[Backend], x: FloatPrimitive, kernel: int, stride: int, padding: int,
                   dilation: int, ceil_mode: bool) -> FloatPrimitive:
        return cls.max_pool(x, (kernel,), (stride,), (padding,), (dilation,), ceil_mode)

    @provided
    def max_pool2d(cls: type[Backend], x: FloatPrimitive, kernel: Ints, stride: Ints, padding: Ints,
                   dilation: Ints, ceil_mode: bool) -> FloatPrimitive:
        return cls.max_pool(x, kernel, stride, padding, dilation, ceil_mode)

    @provided
    def max_pool1d_with_indices(cls: type[Backend], x: FloatPrimitive, kernel: int, stride: int,
                                padding: int, dilation: int,
                                ceil_mode: bool) -> tuple[FloatPrimitive, IntPrimitive]:
        return cls.max_pool_with_indices(x, (kernel,), (stride,), (padding,), (dilation,),
                                         ceil_mode)

    @provided
    def max_pool2d_with_indices(cls: type[Backend], x: FloatPrimitive, kernel: Ints, stride: Ints,
                                padding: Ints, dilation: Ints,
                                ceil_mode: bool) -> tuple[FloatPrimitive, IntPrimitive]:
        return cls.max_pool_with_indices(x, kernel, stride, padding, dilation, ceil_mode)

    @required
    def adaptive_avg_pool(x: FloatPrimitive, output_size: Ints) -> FloatPrimitive:
        """N-d adaptive average pool (N = len(output_size), 1 or 2), torch's bin edges
        ``floor(i*in/out)`` to ``ceil((i+1)*in/out)``."""

    @required
    def adaptive_avg_pool_backward(x: FloatPrimitive, grad: FloatPrimitive) -> FloatPrimitive:
        """Gradient of ``adaptive_avg_pool`` with respect to ``x``."""

    @provided
    def adaptive_avg_pool1d(cls: type[Backend], x: FloatPrimitive,
                            output_size: int) -> FloatPrimitive:
        return cls.adaptive_avg_pool(x, (output_size,))

    @provided
    def adaptive_avg_pool2d(cls: type[Backend], x: FloatPrimitive,
                            output_size: Ints) -> FloatPrimitive:
        return cls.adaptive_avg_pool(x, output_size)

    # ---- embedding, interpolation, linear, attention -------------------------------------------
    @provided
    def embedding(cls: type[Backend], weight: FloatPrimitive,
                  indices: IntPrimitive) -> FloatPrimitive:
        """Rows of ``weight [vocab, dim]`` for int ``indices`` of any shape -> ``[*idx, dim]``."""
        flat = cls.int_reshape(indices, (math.prod(indices.shape),))
        rows = cls.float_select(weight, 0, flat)
        return cls.float_reshape(rows, (*indices.shape, weight.shape[1]))

    @provided
    def embedding_backward(cls: type[Backend], weight: FloatPrimitive, grad: FloatPrimitive,
                           indices: IntPrimitive) -> FloatPrimitive:
        """Gradient of ``embedding`` for the weight: rows of ``grad`` summed per index."""
        n = math.prod(indices.shape)
        flat = cls.int_reshape(indices, (n,))
        g = cls.float_reshape(grad, (n, weight.shape[1]))
        zeros = cls.float_zeros(weight.shape, cls.float_device(weight),
                                dtype_of_numpy(weight.dtype))
        return cls.float_select_add(zeros, 0, flat, g)

    @required
    def interpolate(x: FloatPrimitive, output_size: Ints, mode: InterpolateMode,
                    align_corners: bool) -> FloatPrimitive:
        """Resize the 2-d spatial dims of ``[n, c, h, w]`` (torch.nn.functional.interpolate)."""

    @required
    def interpolate_backward(x: FloatPrimitive, grad: FloatPrimitive, output_size: Ints,
                             mode: InterpolateMode, align_corners: bool) -> FloatPrimitive:
        """Gradient of ``interpolate`` with respect to ``x``."""

    @provided
    def linear(cls: type[Backend], x: FloatPrimitive, weight: FloatPrimitive,
               bias: FloatPrimitive | None) -> FloatPrimitive:
        """``x @ weight.T + bias`` with ``weight [out, in]``; x may have any leading dims."""
        wt = cls.float_swap_dims(weight, 0, 1)
        lead = x.shape[:-1]
        flat = cls.float_reshape(x, (math.prod(lead), x.shape[-1]))
        out = cls.float_matmul(flat, wt)
        if bias is not None:
            out = cls.float_add(out, bias)
        return cls.float_reshape(out, (*lead, weight.shape[0]))

    # ---- batch normalization ------------------------------------------------------------------
    @provided
    def batch_norm(cls: type[Backend], x: FloatPrimitive, weight: FloatPrimitive | None,
                   bias: FloatPrimitive | None,
                   eps: float) -> tuple[FloatPrimitive, FloatPrimitive, FloatPrimitive]:
        """Training-mode batch normalization of ``x [n, c, *]`` with the batch's statistics:
        ``(y, mean [c], var [c])``, ``var`` biased. Each channel is normalized over the batch
        and spatial dims, then scaled by ``weight`` and shifted by ``bias`` (both ``[c]``).
        The statistics are returned for running averages; they are not differentiated."""
        flat, count = _channel_rows(cls, x)
        mean, centered, var = _moments(cls, flat, lambda a: _channel_sum(cls, a), 1.0 / count)
        scale = _bn_scale(cls, var, weight, eps)
        y = cls.float_mul(centered, scale)
        if bias is not None:
            y = cls.float_add(y, cls.float_reshape(bias, scale.shape))
        c = x.shape[1]
        return (cls.float_reshape(y, x.shape), cls.float_reshape(mean, (c,)),
                cls.float_reshape(var, (c,)))

    @provided
    def batch_norm_backward(cls: type[Backend], x: FloatPrimitive, weight: FloatPrimitive | None,
                            grad: FloatPrimitive, eps: float, mean: FloatPrimitive | None = None,
                            var: FloatPrimitive | None = None,
                            ) -> tuple[FloatPrimitive, FloatPrimitive, FloatPrimitive]:
        """Gradients of ``batch_norm``'s ``y`` in ``(x, weight, bias)`` (the weight's as if it
        were ones when None). ``mean`` and ``var`` are the forward's statistics, which a fused
        kernel may reuse; this composition recomputes them from ``x`` regardless, so on a
        recording backend it is itself differentiable (second order)."""
        flat, count = _channel_rows(cls, x)
        g = cls.float_reshape(grad, flat.shape)
        _, centered, var = _moments(cls, flat, lambda a: _channel_sum(cls, a), 1.0 / count)
        xhat = cls.float_mul(centered, _invstd(cls, var, eps))
        grad_bias = _channel_sum(cls, g)
        grad_weight = _channel_sum(cls, cls.float_mul(g, xhat))
        # dx = w * invstd * (g - mean(g) - xhat * mean(g * xhat)), per channel.
        inner = _projected(cls, g, xhat, grad_bias, grad_weight, 1.0 / count)
        c = x.shape[1]
        grad_x = cls.float_mul(inner, _bn_scale(cls, var, weight, eps))
        return (cls.float_reshape(grad_x, x.shape), cls.float_reshape(grad_weight, (c,)),
                cls.float_reshape(grad_bias, (c,)))

    # ---- layer normalization --------------------------------------------------------------
    @provided
    def layer_norm(cls: type[Backend], x: FloatPrimitive, normalized_ndim: int,
                   weight: FloatPrimitive | None, bias: FloatPrimitive | None,
                   eps: float) -> FloatPrimitive:
        """Normalize ``x`` over its trailing ``normalized_ndim`` dims (biased variance), then
        scale by ``weight`` and shift by ``bias`` (both shaped like those dims)."""
        rows, width = _trailing_rows(cls, x, normalized_ndim)
        inv_width = 1.0 / max(width, 1)  # an empty row has nothing to divide
        _, centered, var = _moments(cls, rows, lambda a: cls.float_sum_dim(a, 1), inv_width)
        y = cls.float_mul(centered, _invstd(cls, var, eps))
        if weight is not None:
            y = cls.float_mul(y, cls.float_reshape(weight, (1, width)))
        if bias is not None:
            y = cls.float_add(y, cls.float_reshape(bias, (1, width)))
        return cls.float_reshape(y, x.shape)

    @provided
    def layer_norm_backward(cls: type[Backend], x: FloatPrimitive, normalized_ndim: int,
                            weight: FloatPrimitive | None, grad: FloatPrimitive,
                            eps: float) -> tuple[FloatPrimitive, FloatPrimitive, FloatPrimitive]:
        """Gradients of ``layer_norm`` in ``(x, weight, bias)`` (the weight's as if it were
        ones when None). Recomputes the statistics from ``x``, so on a recording backend this
        composition is itself differentiable (second order)."""
        rows, width = _trailing_rows(cls, x, normalized_ndim)
        inv_width = 1.0 / max(width, 1)  # an empty row has nothing to divide
        g = cls.float_reshape(grad, rows.shape)
        _, centered, var = _moments(cls, rows, lambda a: cls.float_sum_dim(a, 1), inv_width)
        invstd = _invstd(cls, var, eps)
        xhat = cls.float_mul(centered, invstd)
        trailing = x.shape[len(x.shape) - normalized_ndim:]
        grad_weight = cls.float_reshape(cls.float_sum_dim(cls.float_mul(g, xhat), 0), trailing)
        grad_bias = cls.float_reshape(cls.float_sum_dim(g, 0), trailing)
        g_hat = g if weight is None else cls.float_mul(g, cls.float_reshape(weight, (1, width)))
        # dx = invstd * (g_hat - mean(g_hat) - xhat * mean(g_hat * xhat)), per row.
        inner = _projected(cls, g_hat, xhat, cls.float_sum_dim(g_hat, 1),
                           cls.float_sum_dim(cls.float_mul(g_hat, xhat), 1), inv_width)
        grad_x = cls.float_reshape(cls.float_mul(inner, invstd), x.shape)
        return grad_x, grad_weight, grad_bias

    # ---- RMS normalization ----------------------------------------------------------------
    @provided
    def rms_norm(cls: type[Backend], x: FloatPrimitive, normalized_ndim: int,
                 weight: FloatPrimitive | None, eps: float) -> FloatPrimitive:
        """Divide ``x`` by the root mean square of its trailing ``normalized_ndim`` dims
        (``x / sqrt(mean(x^2) + eps)``), then scale by ``weight`` (shaped like those dims)."""
        rows, width = _trailing_rows(cls, x, normalized_ndim)
        y = cls.float_mul(rows, _inv_rms(cls, rows, width, eps))
        if weight is not None:
            y = cls.float_mul(y, cls.float_reshape(weight, (1, width)))
        return cls.float_reshape(y, x.shape)

    @provided
    def rms_norm_backward(cls: type[Backend], x: FloatPrimitive, normalized_ndim: int,
                          weight: FloatPrimitive | None, grad: FloatPrimitive,
                          eps: float) -> tuple[FloatPrimitive, FloatPrimitive]:
        """Gradients of ``rms_norm`` in ``(x, weight)`` (the weight's as if it were ones when
        None): with ``r = 1 / rms``, ``xhat = x r`` and ``gh = g * weight``,
        ``dx = r * (gh - xhat * mean(gh * xhat))``. Recomputes ``r`` from ``x``, so on a
        recording backend this composition is itself differentiable (second order)."""
        rows, width = _trailing_rows(cls, x, normalized_ndim)
        g = cls.float_reshape(grad, rows.shape)
        inv = _inv_rms(cls, rows, width, eps)
        xhat = cls.float_mul(rows, inv)
        trailing = x.shape[len(x.shape) - normalized_ndim:]
        grad_weight = cls.float_reshape(cls.float_sum_dim(cls.float_mul(g, xhat), 0), trailing)
        g_hat = g if weight is None else cls.float_mul(g, cls.float_reshape(weight, (1, width)))
        projection = cls.float_mul_scalar(cls.float_sum_dim(cls.float_mul(g_hat, xhat), 1),
                                          1.0 / max(width, 1))
        grad_x = cls.float_mul(cls.float_sub(g_hat, cls.float_mul(xhat, projection)), inv)
        return cls.float_reshape(grad_x, x.shape), grad_weight

    # ---- cross entropy --------------------------------------------------------------------
    @provided
    def cross_entropy(cls: type[Backend], logits: FloatPrimitive, target: IntPrimitive,
                      ignore_index: int) -> FloatPrimitive:
        """Per-sample cross entropy of ``logits [n, c]`` against class indices ``target [n]``
        (each in ``[0, c)`` or ``ignore_index``): ``-log_softmax(logits)[i, target[i]]``,
        exactly 0 where ignored (whatever those logits hold). Shape ``[n]``."""
        picked = _one_hot_targets(cls, logits, target, ignore_index)
        nll = cls.float_sum_dim(cls.float_mul(cls.log_softmax(logits, 1), picked), 1)
        loss = cls.float_reshape(cls.float_neg(nll), (logits.shape[0],))
        return cls.float_mask_fill(loss, cls.int_equal_elem(target, ignore_index), 0.0)

    @provided
    def cross_entropy_backward(cls: type[Backend], logits: FloatPrimitive, target: IntPrimitive,
                               ignore_index: int, grad: FloatPrimitive) -> FloatPrimitive:
        """Gradient of ``cross_entropy`` in ``logits`` given ``grad [n]``: each row's
        ``softmax - one_hot(target)`` times its grad (exactly 0 for ignored rows)."""
        n = logits.shape[0]
        picked = _one_hot_targets(cls, logits, target, ignore_index)
        row_grad = cls.float_reshape(grad, (n, 1))
        out = cls.float_mul(cls.float_sub(cls.softmax(logits, 1), picked), row_grad)
        ignored = cls.int_equal_elem(cls.int_reshape(target, (n, 1)), ignore_index)
        return cls.float_mask_fill(out, cls.bool_expand(ignored, logits.shape), 0.0)

    @provided
    def attention(cls: type[Backend], query: FloatPrimitive, key: FloatPrimitive,
                  value: FloatPrimitive, mask: BoolPrimitive | None, scale: float | None,
                  is_causal: bool) -> FloatPrimitive:
        """Scaled dot-product attention over ``[..., seq, dim]`` (torch's
        ``scaled_dot_product_attention``): ``attention_weights(...) @ value``."""
        return cls.float_matmul(cls.attention_weights(query, key, mask, scale, is_causal), value)

    @provided
    def attention_weights(cls: type[Backend], query: FloatPrimitive, key: FloatPrimitive,
                          mask: BoolPrimitive | None, scale: float | None,
                          is_causal: bool) -> FloatPrimitive:
        """The softmax weights ``[..., lq, lk]`` of ``attention``: ``query @ key^T * scale``
        (``1 / sqrt(dim)`` when None), ``-inf`` where a bool ``mask`` is False (True =
        attend) and, when causal, above the diagonal (key position > query position), one
        ``[lq, lk]`` mask broadcast over the batch and heads."""
        scale = _attention_scale(query, scale)
        scores = cls.float_matmul(cls.float_mul_scalar(query, scale), _transposed(cls, key))
        if is_causal:
            scores = cls.float_mask_fill(scores, _causal_mask(cls, query, key), float("-inf"))
        if mask is not None:
            scores = cls.float_mask_fill(scores, cls.bool_not(mask), float("-inf"))
        return attention_softmax(cls, scores, mask is not None)

    @provided
    def attention_backward(cls: type[Backend], query: FloatPrimitive, key: FloatPrimitive,
                           value: FloatPrimitive, mask: BoolPrimitive | None,
                           scale: float | None, is_causal: bool, grad: FloatPrimitive,
                           weights: FloatPrimitive | None = None,
                           ) -> tuple[FloatPrimitive, FloatPrimitive, FloatPrimitive]:
        """Gradients of ``attention`` in ``(query, key, value)`` given ``grad [..., lq, dv]``.
        ``weights`` are the forward's ``attention_weights`` (recomputed from ``query`` and
        ``key`` when None); with ``w`` the weights and ``s`` the scale, ``dv = w^T g``,
        ``ds = w * (g v^T - rowsum(w * g v^T)) * s``, ``dq = ds k``, ``dk = ds^T q``. Written
        with protocol ops, so on a recording backend it is itself differentiable."""
        if weights is None:
            weights = cls.attention_weights(query, key, mask, scale, is_causal)
        grad_value = cls.float_matmul(_transposed(cls, weights), grad)
        grad_weights = cls.float_matmul(grad, _transposed(cls, value))
        projected = cls.float_sum_dim(cls.float_mul(grad_weights, weights),
                                      len(weights.shape) - 1)
        grad_scores = cls.float_mul(cls.float_sub(grad_weights, projected), weights)
        grad_scores = cls.float_mul_scalar(grad_scores, _attention_scale(query, scale))
        grad_query = cls.float_matmul(grad_scores, key)
        grad_key = cls.float_matmul(_transposed(cls, grad_scores), query)
        return grad_query, grad_key, grad_value

    # ---- recurrent --------------------------------------------------------------------------
    @provided
    def lstm(cls: type[Backend], gates_x: FloatPrimitive, weight_hh: FloatPrimitive,
             h0: FloatPrimitive, c0: FloatPrimitive) -> FloatPrimitive:
        """The LSTM recurrence with torch's equations and gate order (i, f, g, o) over the
        inputs' gate projections ``gates_x [T, N, 4H]`` (``x W_ih^T`` plus both biases), from
        ``h0, c0 [N, H]``: ``z = gates_x[t] + h W_hh^T``, ``c = sigmoid(z_f) c + sigmoid(z_i)
        tanh(z_g)``, ``h = sigmoid(z_o) tanh(c)``. Returns ``[T + 1, N, H]``: the hidden state
        of every step, then the last cell state."""
        return cls.lstm_states(gates_x, weight_hh, h0, c0)[0]

    @provided
    def lstm_states(cls: type[Backend], gates_x: FloatPrimitive, weight_hh: FloatPrimitive,
                    h0: FloatPrimitive, c0: FloatPrimitive
                    ) -> tuple[FloatPrimitive, FloatPrimitive, FloatPrimitive]:
        """``lstm``'s output and what its backward reads: the activated gates of every step
        ``[T, N, 4H]`` (sigmoid i, f, o and tanh g) and the cell states ``[T, N, H]``."""
        steps, n, four_h = gates_x.shape
        hidden = four_h // 4
        w_t = cls.float_swap_dims(weight_hh, 0, 1)
        h, c = h0, c0
        hs, acts, cells = [], [], []
        for t in range(steps):
            z = cls.float_add(_step_rows(cls, gates_x, t), cls.float_matmul(h, w_t))
            i, f, g, o = (_columns(cls, z, k * hidden, hidden) for k in range(4))
            i, f, g, o = cls.sigmoid(i), cls.sigmoid(f), cls.float_tanh(g), cls.sigmoid(o)
            c = cls.float_add(cls.float_mul(f, c), cls.float_mul(i, g))
            h = cls.float_mul(o, cls.float_tanh(c))
            hs.append(cls.float_reshape(h, (1, n, hidden)))
            cells.append(cls.float_reshape(c, (1, n, hidden)))
            acts.append(cls.float_reshape(cls.float_cat([i, f, g, o], 1), (1, n, four_h)))
        return (cls.float_cat([*hs, cells[-1]], 0), cls.float_cat(acts, 0),
                cls.float_cat(cells, 0))

    @provided
    def lstm_backward(cls: type[Backend], weight_hh: FloatPrimitive, h0: FloatPrimitive,
                      c0: FloatPrimitive, output: FloatPrimitive, gates: FloatPrimitive,
                      cells: FloatPrimitive, grad: FloatPrimitive
                      ) -> tuple[FloatPrimitive, FloatPrimitive, FloatPrimitive, FloatPrimitive]:
        """Gradients of ``lstm`` in ``(gates_x, weight_hh, h0, c0)`` given ``grad [T + 1, N,
        H]``, from its ``output`` and ``lstm_states``' ``gates`` and ``cells``: back through
        time, each step's gate gradient ``dz`` gives ``dh_prev = dz W_hh``; ``dW_hh`` is one
        matmul of every step's ``dz`` with the previous hidden states. Written with protocol
        ops, so on a recording backend it is itself differentiable."""
        steps, n, four_h = gates.shape
        hidden = four_h // 4
        dc = _step_rows(cls, grad, steps)
        carry = None
        dzs = []
        for t in range(steps - 1, -1, -1):
            i, f, g, o = (_columns(cls, _step_rows(cls, gates, t), k * hidden, hidden)
                          for k in range(4))
            c_prev = c0 if t == 0 else _step_rows(cls, cells, t - 1)
            tanh_c = cls.float_tanh(_step_rows(cls, cells, t))
            dh = _step_rows(cls, grad, t)
            dh = dh if carry is None else cls.float_add(dh, carry)
            dc = cls.float_add(dc, _tanh_grad(cls, tanh_c, cls.float_mul(dh, o)))
            dz = cls.float_cat([cls.sigmoid_backward(i, cls.float_mul(dc, g)),
                                cls.sigmoid_backward(f, cls.float_mul(dc, c_prev)),
                                _tanh_grad(cls, g, cls.float_mul(dc, i)),
                                cls.sigmoid_backward(o, cls.float_mul(dh, tanh_c))], 1)
            carry = cls.float_matmul(dz, weight_hh)
            dc = cls.float_mul(dc, f)
            dzs.append(cls.float_reshape(dz, (1, n, four_h)))
        assert carry is not None
        grad_gates = cls.float_cat(dzs[::-1], 0)
        previous = cls.float_cat([cls.float_reshape(h0, (1, n, hidden)),
                                  cls.float_slice(output, (slice(0, steps - 1),))], 0)
        grad_weight = cls.float_matmul(
            cls.float_swap_dims(cls.float_reshape(grad_gates, (steps * n, four_h)), 0, 1),
            cls.float_reshape(previous, (steps * n, hidden)))
        return grad_gates, grad_weight, carry, dc


def _step_rows(cls: type[Backend], x: FloatPrimitive, t: int) -> FloatPrimitive:
    """``x[t]`` of a ``[T, *rest]`` primitive, as ``rest``."""
    return cls.float_reshape(cls.float_slice(x, (slice(t, t + 1),)), x.shape[1:])


def _columns(cls: type[Backend], x: FloatPrimitive, start: int, size: int) -> FloatPrimitive:
    """Columns ``start:start + size`` of a matrix."""
    return cls.float_slice(x, (slice(0, x.shape[0]), slice(start, start + size)))


def _tanh_grad(cls: type[Backend], y: FloatPrimitive, grad: FloatPrimitive) -> FloatPrimitive:
    """``grad * (1 - y^2)``: the gradient through ``y = tanh(z)``."""
    return cls.float_sub(grad, cls.float_mul(grad, cls.float_mul(y, y)))


def attention_softmax(cls: type[Backend], scores: FloatPrimitive,
                      masked: bool) -> FloatPrimitive:
    """The softmax of attention ``scores`` over the keys (the last dim). With a mask, a row
    whose every key is masked (all ``-inf``) gets zero weights, as torch's, not NaN."""
    dim = len(scores.shape) - 1
    if not masked:
        return cls.softmax(scores, dim)
    dead = cls.bool_expand(cls.float_equal_elem(cls.float_max_dim(scores, dim), float("-inf")),
                           scores.shape)
    weights = cls.softmax(cls.float_mask_fill(scores, dead, 0.0), dim)
    return cls.float_mask_fill(weights, dead, 0.0)


def _transposed(cls: type[Backend], x: FloatPrimitive) -> FloatPrimitive:
    """``x`` with its last two dims swapped."""
    nd = len(x.shape)
    return cls.float_swap_dims(x, nd - 2, nd - 1)


def _attention_scale(query: FloatPrimitive, scale: float | None) -> float:
    """The scores' factor: ``scale``, or ``1 / sqrt(dim)`` (torch's default)."""
    return scale if scale is not None else 1.0 / math.sqrt(query.shape[-1])


def _causal_mask(cls: type[Backend], query: FloatPrimitive, key: FloatPrimitive) -> BoolPrimitive:
    """``[lq, lk]``, True above the diagonal (where a causal query may not look): torch's
    top-left aligned ``is_causal``."""
    device = cls.float_device(query)
    lq, lk = query.shape[-2], key.shape[-2]
    rows = cls.int_reshape(cls.int_arange(0, lq, 1, device, cls.int_dtype), (lq, 1))
    cols = cls.int_reshape(cls.int_arange(0, lk, 1, device, cls.int_dtype), (1, lk))
    return cls.int_greater(cols, rows)


def _channel_rows(cls: type[Backend], x: FloatPrimitive) -> tuple[FloatPrimitive, int]:
    """``x [n, c, *]`` as ``[n, c, positions]`` and the values per channel, ``n * positions``."""
    n, c = x.shape[0], x.shape[1]
    positions = math.prod(x.shape[2:])
    return cls.float_reshape(x, (n, c, positions)), n * positions


def _channel_sum(cls: type[Backend], rows: FloatPrimitive) -> FloatPrimitive:
    """Per-channel sums of ``[n, c, positions]`` rows, shaped ``[1, c, 1]``."""
    return cls.float_sum_dim(cls.float_sum_dim(rows, 2), 0)


def _moments(cls: type[Backend], rows: FloatPrimitive,
             total: Callable[[FloatPrimitive], FloatPrimitive],
             scale: float) -> tuple[FloatPrimitive, FloatPrimitive, FloatPrimitive]:
    """The mean, ``rows`` minus it and the biased variance, where ``total`` sums over the
    normalized dims (kept) and ``scale`` is one over their count."""
    mean = cls.float_mul_scalar(total(rows), scale)
    centered = cls.float_sub(rows, mean)
    return mean, centered, cls.float_mul_scalar(total(cls.float_mul(centered, centered)), scale)


def _invstd(cls: type[Backend], var: FloatPrimitive, eps: float) -> FloatPrimitive:
    """``1 / sqrt(var + eps)``."""
    return cls.float_recip(cls.float_sqrt(cls.float_add_scalar(var, eps)))


def _inv_rms(cls: type[Backend], rows: FloatPrimitive, width: int, eps: float) -> FloatPrimitive:
    """Each row's ``1 / sqrt(mean(row^2) + eps)`` as a ``[rows, 1]`` column."""
    mean_square = cls.float_mul_scalar(cls.float_sum_dim(cls.float_mul(rows, rows), 1),
                                       1.0 / max(width, 1))  # an empty row has nothing to divide
    return _invstd(cls, mean_square, eps)


def _projected(cls: type[Backend], g: FloatPrimitive, xhat: FloatPrimitive, g_sum: FloatPrimitive,
               g_xhat_sum: FloatPrimitive, scale: float) -> FloatPrimitive:
    """``g - mean(g) - xhat * mean(g * xhat)`` from the sums of ``g`` and ``g * xhat`` over
    the normalized dims (``scale`` is one over their count): a normalization's input
    gradient before its ``invstd`` factor."""
    return cls.float_sub(cls.float_sub(g, cls.float_mul_scalar(g_sum, scale)),
                         cls.float_mul(xhat, cls.float_mul_scalar(g_xhat_sum, scale)))


def _bn_scale(cls: type[Backend], var: FloatPrimitive, weight: FloatPrimitive | None,
              eps: float) -> FloatPrimitive:
    """``weight / sqrt(var + eps)`` per channel, shaped like ``var`` (``[1, c, 1]``)."""
    scale = _invstd(cls, var, eps)
    return scale if weight is None else cls.float_mul(scale, cls.float_reshape(weight,
                                                                               scale.shape))


def _one_hot_targets(cls: type[Backend], logits: FloatPrimitive, target: IntPrimitive,
                     ignore_index: int) -> FloatPrimitive:
    """``[n, c]`` floats: 1 at each row's target class, 0 elsewhere and on ignored rows."""
    n, c = logits.shape
    device = cls.float_device(logits)
    classes = cls.int_reshape(cls.int_arange(0, c, 1, device, dtype_of_numpy(target.dtype)),
                              (1, c))
    rows = cls.int_reshape(target, (n, 1))
    hits = cls.int_equal(rows, classes)
    if 0 <= ignore_index < c:  # an ignore_index outside [0, c) never matches a class
        hits = cls.bool_and(hits, cls.int_not_equal_elem(rows, ignore_index))
    return cls.bool_into_float(hits, dtype_of_numpy(logits.dtype))


def _trailing_rows(cls: type[Backend], x: FloatPrimitive,
                   normalized_ndim: int) -> tuple[FloatPrimitive, int]:
    """``x`` as ``[rows, width]`` with the trailing ``normalized_ndim`` dims flattened into
    ``width``."""
    width = math.prod(x.shape[len(x.shape) - normalized_ndim:])
    return cls.float_reshape(x, (math.prod(x.shape) // max(width, 1), width)), width
