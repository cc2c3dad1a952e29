# ruff: noqa: N803 - rules name the inner backend type ``B``, as Burn's generics do
"""Module ops of the Autodiff backend: recordings and backward rules.

Convolutions, their weight-gradient kernels and ``linear`` are compute-bound (their outputs
are kept under balanced checkpointing); pools, embedding, interpolation, batch and layer norm
and cross entropy are memory-bound.
Rules call the inner backend's ``*_backward`` kernels. The ``*_backward`` ops are themselves
recorded (they are linear in the incoming gradient), so second derivatives flow through them.
Provided ops not listed here (``conv1d``..., ``max_pool``, ``attention``,
``conv_x_backward``...) run the protocol's composition on this backend, which records the
ops they are made of.
"""

from __future__ import annotations

import math
from typing import Any

from burnpy.autodiff.ops._define import (
    AutodiffOps,
    Params,
    Parents,
    Rule,
    Saved,
    any_tracked,
    declare,
    unary_params,
)
from burnpy.autodiff.tensor import AutodiffTensor
from burnpy.backend.ops.module_ops import ConvOptions, ConvTransposeOptions, InterpolateMode

Ints = tuple[int, ...]


def _optional(bias: AutodiffTensor | None) -> Any:
    return None if bias is None else bias.primitive


def _present(*operands: AutodiffTensor | None) -> tuple[tuple[int, ...], tuple[Any, ...]]:
    """The slots (positions) and the tensors of the operands given (a norm's optional weight
    and bias may be None)."""
    present = [(slot, t) for slot, t in enumerate(operands) if t is not None]
    return tuple(slot for slot, _ in present), tuple(t for _, t in present)


def _operands(inputs: Saved, slots: tuple[int, ...]) -> tuple[Any, Any, Any]:
    """``(x, weight, bias)`` of a recorded norm from its saved inputs and their ``slots``, None
    where the op had no weight or bias."""
    operands: list[Any] = [None, None, None]
    for slot, value in zip(slots, inputs, strict=True):
        operands[slot] = value
    return operands[0], operands[1], operands[2]


def _by_slot(grads: tuple[Any, ...], slots: tuple[int, ...], parents: Parents) -> Rule:
    """The gradients of the recorded operands (by slot), None for untracked ones."""
    return tuple(grads[slot] if parent is not None else None
                 for slot, parent in zip(slots, parents, strict=True))


def _layer_norm_forward(B: Any, inputs: Saved, params: Params) -> Any:
    """Retro-forward of a recorded ``layer_norm`` (params: slots, normalized_ndim, eps)."""
    x, weight, bias = _operands(inputs, params[0])
    return B.layer_norm(x, params[1], weight, bias, params[2])


class AutodiffModuleOps(AutodiffOps):
    """Convolution, pooling, embedding, interpolation and linear, recorded."""

    # ---- convolution --------------------------------------------------------------------------
    @staticmethod
    def _conv_backward(B: Any, grad: Any, inputs: Saved, output: Any, params: Params,
                       parents: Parents) -> Rule:
        x, weight = inputs[0], inputs[1]
        options = params[0]
        return (None if parents[0] is None else B.conv_x_backward(x, weight, grad, options),
                None if parents[1] is None else B.conv_weight_backward(x, weight, grad, options),
                *(() if len(parents) == 2 else
                  (None if parents[2] is None else B.conv_bias_backward(grad),)))

    _CONV = declare("conv", _conv_backward, saves_inputs=True, compute_bound=True)

    @classmethod
    def conv(cls, x: AutodiffTensor, weight: AutodiffTensor, bias: AutodiffTensor | None,
             options: ConvOptions) -> AutodiffTensor:
        out = cls.InnerBackend.conv(x.primitive, weight.primitive, _optional(bias), options)
        tensors = (x, weight) if bias is None else (x, weight, bias)
        if not any_tracked(tensors):
            return AutodiffTensor(out)
        return cls.record(cls._CONV, out, tensors, (options,))

    @staticmethod
    def _conv_weight_backward_backward(B: Any, grad: Any, inputs: Saved, output: Any,
                                       params: Params, parents: Parents) -> Rule:
        """<conv_weight_backward(x, g), U> = <conv(x, U), g>: linear in x and in g."""
        x, g = inputs
        options = params[1]
        return (None if parents[0] is None else B.conv_x_backward(x, grad, g, options),
                None if parents[1] is None else B.conv(x, grad, None, options))

    _CONV_WEIGHT_BACKWARD = declare("conv_weight_backward", _conv_weight_backward_backward,
                                    saves_inputs=True, compute_bound=True)

    @classmethod
    def conv_weight_backward(cls, x: AutodiffTensor, weight: AutodiffTensor,
                             grad: AutodiffTensor, options: ConvOptions) -> AutodiffTensor:
        out = cls.InnerBackend.conv_weight_backward(x.primitive, weight.primitive,
                                                    grad.primitive, options)
        if x.node is None and grad.node is None:
            return AutodiffTensor(out)
        return cls.record(cls._CONV_WEIGHT_BACKWARD, out, (x, grad),
                          (weight.primitive, options))

    @staticmethod
    def _conv_transpose_backward(B: Any, grad: Any, inputs: Saved, output: Any, params: Params,
                                 parents: Parents) -> Rule:
        x, weight = inputs[0], inputs[1]
        options = params[0]
        return (None if parents[0] is None else
                B.conv_transpose_x_backward(x, weight, grad, options),
                None if parents[1] is None else
                B.conv_transpose_weight_backward(x, weight, grad, options),
                *(() if len(parents) == 2 else
                  (None if parents[2] is None else B.conv_bias_backward(grad),)))

    _CONV_TRANSPOSE = declare("conv_transpose", _conv_transpose_backward, saves_inputs=True,
                              compute_bound=True)

    @classmethod
    def conv_transpose(cls, x: AutodiffTensor, weight: AutodiffTensor,
                       bias: AutodiffTensor | None,
                       options: ConvTransposeOptions) -> AutodiffTensor:
        out = cls.InnerBackend.conv_transpose(x.primitive, weight.primitive, _optional(bias),
                                              options)
        tensors = (x, weight) if bias is None else (x, weight, bias)
        if not any_tracked(tensors):
            return AutodiffTensor(out)
        return cls.record(cls._CONV_TRANSPOSE, out, tensors, (options,))

    @staticmethod
    def _conv_transpose_weight_backward_backward(B: Any, grad: Any, inputs: Saved, output: Any,
                                                 params: Params, parents: Parents) -> Rule:
        """<conv_transpose_weight_backward(x, g), U> = <conv_transpose(x, U), g>."""
        x, g = inputs
        options = params[1]
        return (None if parents[0] is None else B.conv_transpose_x_backward(x, grad, g, options),
                None if parents[1] is None else B.conv_transpose(x, grad, None, options))

    _CONV_TRANSPOSE_WEIGHT_BACKWARD = declare(
        "conv_transpose_weight_backward", _conv_transpose_weight_backward_backward,
        saves_inputs=True, compute_bound=True)

    @classmethod
    def conv_transpose_weight_backward(cls, x: AutodiffTensor, weight: AutodiffTensor,
                                       grad: AutodiffTensor,
                                       options: ConvTransposeOptions) -> AutodiffTensor:
        out = cls.InnerBackend.conv_transpose_weight_backward(x.primitive, weight.primitive,
                                                              grad.primitive, options)
        if x.node is None and grad.node is None:
            return AutodiffTensor(out)
        return cls.record(cls._CONV_TRANSPOSE_WEIGHT_BACKWARD, out, (x, grad),
                          (weight.primitive, options))

    # ---- pooling ------------------------------------------------------------------------------
    @staticmethod
    def _avg_pool_backward_rule(B: Any, grad: Any, inputs: Saved, output: Any, params: Params,
                                parents: Parents) -> Rule:
        return (B.avg_pool_backward(inputs[0], grad, *params),)

    avg_pool = unary_params(declare("avg_pool", _avg_pool_backward_rule, saves_inputs=True))

    @staticmethod
    def _avg_pool_backward_backward(B: Any, grad: Any, inputs: Saved, output: Any, params: Params,
                                    parents: Parents) -> Rule:
        """Linear in the incoming gradient, whose adjoint is the pool itself."""
        return (B.avg_pool(grad, *params[1:]),)

    _AVG_POOL_BACKWARD = declare("avg_pool_backward", _avg_pool_backward_backward,
                                 forward=lambda B, inputs, params:
                                 B.avg_pool_backward(params[0], inputs[0], *params[1:]))

    @classmethod
    def avg_pool_backward(cls, x: AutodiffTensor, grad: AutodiffTensor, kernel: Ints,
                          stride: Ints, padding: Ints, count_include_pad: bool,
                          ceil_mode: bool) -> AutodiffTensor:
        args = (kernel, stride, padding, count_include_pad, ceil_mode)
        out = cls.InnerBackend.avg_pool_backward(x.primitive, grad.primitive, *args)
        if grad.node is None:
            return AutodiffTensor(out)
        return cls.record(cls._AVG_POOL_BACKWARD, out, (grad,), (x.primitive, *args))

    @staticmethod
    def _max_pool_backward_rule(B: Any, grad: Any, inputs: Saved, output: Any, params: Params,
                                parents: Parents) -> Rule:
        return (B.max_pool_with_indices_backward(inputs[0], grad, params[-1]),)

    _MAX_POOL = declare("max_pool_with_indices", _max_pool_backward_rule, saves_inputs=True,
                        forward=lambda B, inputs, params:
                        B.max_pool_with_indices(inputs[0], *params[:-1])[0])

    @classmethod
    def max_pool_with_indices(cls, x: AutodiffTensor, kernel: Ints, stride: Ints,
                              padding: Ints, dilation: Ints,
                              ceil_mode: bool) -> tuple[AutodiffTensor, Any]:
        args = (kernel, stride, padding, dilation, ceil_mode)
        values, indices = cls.InnerBackend.max_pool_with_indices(x.primitive, *args)
        if x.node is None:
            return AutodiffTensor(values), indices
        return cls.record(cls._MAX_POOL, values, (x,), (*args, indices)), indices

    @staticmethod
    def _adaptive_avg_pool_backward_rule(B: Any, grad: Any, inputs: Saved, output: Any,
                                         params: Params, parents: Parents) -> Rule:
        return (B.adaptive_avg_pool_backward(inputs[0], grad),)

    adaptive_avg_pool = unary_params(declare("adaptive_avg_pool",
                                             _adaptive_avg_pool_backward_rule,
                                             saves_inputs=True))

    @staticmethod
    def _adaptive_avg_pool_backward_backward(B: Any, grad: Any, inputs: Saved, output: Any,
                                             params: Params, parents: Parents) -> Rule:
        return (B.adaptive_avg_pool(grad, params[1]),)

    _ADAPTIVE_AVG_POOL_BACKWARD = declare(
        "adaptive_avg_pool_backward", _adaptive_avg_pool_backward_backward,
        forward=lambda B, inputs, params: B.adaptive_avg_pool_backward(params[0], inputs[0]))

    @classmethod
    def adaptive_avg_pool_backward(cls, x: AutodiffTensor, grad: AutodiffTensor) -> AutodiffTensor:
        out = cls.InnerBackend.adaptive_avg_pool_backward(x.primitive, grad.primitive)
        if grad.node is None:
            return AutodiffTensor(out)
        return cls.record(cls._ADAPTIVE_AVG_POOL_BACKWARD, out, (grad,),
                          (x.primitive, tuple(grad.shape[2:])))

    # ---- embedding, interpolation, linear -------------------------------------------------------
    @staticmethod
    def _embedding_backward_rule(B: Any, grad: Any, inputs: Saved, output: Any, params: Params,
                                 parents: Parents) -> Rule:
        return (B.embedding_backward(inputs[0], grad, params[0]),)

    embedding = unary_params(declare("embedding", _embedding_backward_rule, saves_inputs=True))

    @staticmethod
    def _interpolate_backward_rule(B: Any, grad: Any, inputs: Saved, output: Any, params: Params,
                                   parents: Parents) -> Rule:
        return (B.interpolate_backward(inputs[0], grad, *params),)

    interpolate = unary_params(declare("interpolate", _interpolate_backward_rule,
                                       saves_inputs=True))

    @staticmethod
    def _interpolate_backward_backward(B: Any, grad: Any, inputs: Saved, output: Any,
                                       params: Params, parents: Parents) -> Rule:
        return (B.interpolate(grad, *params[1:]),)

    _INTERPOLATE_BACKWARD = declare(
        "interpolate_backward", _interpolate_backward_backward,
        forward=lambda B, inputs, params: B.interpolate_backward(params[0], inputs[0],
                                                                 *params[1:]))

    @classmethod
    def interpolate_backward(cls, x: AutodiffTensor, grad: AutodiffTensor, output_size: Ints,
                             mode: InterpolateMode, align_corners: bool) -> AutodiffTensor:
        args = (output_size, mode, align_corners)
        out = cls.InnerBackend.interpolate_backward(x.primitive, grad.primitive, *args)
        if grad.node is None:
            return AutodiffTensor(out)
        return cls.record(cls._INTERPOLATE_BACKWARD, out, (grad,), (x.primitive, *args))

    # ---- batch and layer normalization -----------------------------------------------------
    # Recorded with params (slots of the operands given, *the op's own params).
    @staticmethod
    def _batch_norm_backward(B: Any, grad: Any, inputs: Saved, output: Any, params: Params,
                             parents: Parents) -> Rule:
        x, weight, _ = _operands(inputs, params[0])
        return _by_slot(B.batch_norm_backward(x, weight, grad, *params[1:]), params[0],
                        parents)

    _BATCH_NORM = declare("batch_norm", _batch_norm_backward, saves_inputs=True,
                          forward=lambda B, inputs, params:
                          B.batch_norm(*_operands(inputs, params[0]), params[1])[0])

    @classmethod
    def batch_norm(cls, x: AutodiffTensor, weight: AutodiffTensor | None,
                   bias: AutodiffTensor | None,
                   eps: float) -> tuple[AutodiffTensor, AutodiffTensor, AutodiffTensor]:
        """One recorded node for the normalized output (the inner backend's fused kernel runs
        forward, its ``batch_norm_backward`` backward, given the forward's statistics); the
        statistics come back untracked."""
        out, mean, var = cls.InnerBackend.batch_norm(x.primitive, _optional(weight),
                                                     _optional(bias), eps)
        slots, tensors = _present(x, weight, bias)
        stats = (AutodiffTensor(mean), AutodiffTensor(var))
        if not any_tracked(tensors):
            return (AutodiffTensor(out), *stats)
        return (cls.record(cls._BATCH_NORM, out, tensors, (slots, eps, mean, var)), *stats)

    @staticmethod
    def _layer_norm_backward(B: Any, grad: Any, inputs: Saved, output: Any, params: Params,
                             parents: Parents) -> Rule:
        x, weight, _ = _operands(inputs, params[0])
        return _by_slot(B.layer_norm_backward(x, params[1], weight, grad, params[2]),
                        params[0], parents)

    _LAYER_NORM = declare("layer_norm", _layer_norm_backward, saves_inputs=True,
                          forward=_layer_norm_forward)

    @classmethod
    def layer_norm(cls, x: AutodiffTensor, normalized_ndim: int, weight: AutodiffTensor | None,
                   bias: AutodiffTensor | None, eps: float) -> AutodiffTensor:
        """One recorded node: the inner backend's fused kernel forward, its
        ``layer_norm_backward`` backward."""
        out = cls.InnerBackend.layer_norm(x.primitive, normalized_ndim, _optional(weight),
                                          _optional(bias), eps)
        slots, tensors = _present(x, weight, bias)
        if not any_tracked(tensors):
            return AutodiffTensor(out)
        return cls.record(cls._LAYER_NORM, out, tensors, (slots, normalized_ndim, eps))

    # ---- cross entropy --------------------------------------------------------------------
    @staticmethod
    def _cross_entropy_backward(B: Any, grad: Any, inputs: Saved, output: Any, params: Params,
                                parents: Parents) -> Rule:
        return (B.cross_entropy_backward(inputs[0], *params, grad),)

    _CROSS_ENTROPY = declare("cross_entropy", _cross_entropy_backward, saves_inputs=True)

    @classmethod
    def cross_entropy(cls, logits: AutodiffTensor, target: Any,
                      ignore_index: int) -> AutodiffTensor:
        """One recorded node: the inner backend's fused loss forward, its
        ``cross_entropy_backward`` backward."""
        out = cls.InnerBackend.cross_entropy(logits.primitive, target, ignore_index)
        if logits.node is None:
            return AutodiffTensor(out)
        return cls.record(cls._CROSS_ENTROPY, out, (logits,), (target, ignore_index))

    @staticmethod
    def _linear_backward(B: Any, grad: Any, inputs: Saved, output: Any, params: Params,
                         parents: Parents) -> Rule:
        x, weight = inputs[0], inputs[1]
        rows = math.prod(grad.shape[:-1])
        flat_grad = B.float_reshape(grad, (rows, grad.shape[-1]))
        return (None if parents[0] is None else
                B.float_reshape(B.float_matmul(flat_grad, weight), x.shape),
                None if parents[1] is None else
                B.float_matmul(B.float_swap_dims(flat_grad, 0, 1),
                               B.float_reshape(x, (rows, x.shape[-1]))),
                *(() if len(parents) == 2 else
                  (None if parents[2] is None else
                   B.float_reshape(B.float_sum_dim(flat_grad, 0), (grad.shape[-1],)),)))

    _LINEAR = declare("linear", _linear_backward, saves_inputs=True, compute_bound=True)

    @classmethod
    def linear(cls, x: AutodiffTensor, weight: AutodiffTensor,
               bias: AutodiffTensor | None) -> AutodiffTensor:
        out = cls.InnerBackend.linear(x.primitive, weight.primitive, _optional(bias))
        tensors = (x, weight) if bias is None else (x, weight, bias)
        if not any_tracked(tensors):
            return AutodiffTensor(out)
        return cls.record(cls._LINEAR, out, tensors, ())
