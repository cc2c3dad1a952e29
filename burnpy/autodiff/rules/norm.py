# ruff: noqa: N803 - rules name the inner backend type ``B``, as Burn's generics do
"""The fused norms and losses: batch_norm, layer_norm, rms_norm and cross_entropy. Autodiff
records one
node each (the inner backend's fused kernel forward, its ``*_backward`` kernel backward);
ForwardAD runs the protocol's composition, which carries the tangents through its parts.

batch_norm returns its statistics besides the output and both norms take an optional weight
and bias among their params, so their recordings are written here by hand (``explicit``):
recorded with params ``(slots of the operands given, *the op's own params)``.
"""

from __future__ import annotations

from typing import Any

from burnpy.autodiff.rules import reverse
from burnpy.autodiff.rules.reverse import AutodiffOps, any_tracked, op_of, optional
from burnpy.autodiff.rules.table import (
    COMPOSED,
    Derivative,
    Grads,
    Params,
    Parents,
    Saved,
    explicit,
    unary_params,
)
from burnpy.autodiff.tensor import AutodiffTensor


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


def _by_slot(grads: tuple[Any, ...], slots: tuple[int, ...], parents: Parents) -> Grads:
    """The gradients of the recorded operands (by slot), None for untracked ones."""
    return tuple(grads[slot] if parent is not None else None
                 for slot, parent in zip(slots, parents, strict=True))


def _batch_norm_reverse(B: Any, grad: Any, inputs: Saved, output: Any, params: Params,
                        parents: Parents) -> Grads:
    x, weight, _ = _operands(inputs, params[0])
    return _by_slot(B.batch_norm_backward(x, weight, grad, *params[1:]), params[0], parents)


def _batch_norm_forward(B: Any, inputs: tuple[Any, ...], params: tuple[Any, ...]) -> Any:
    return B.batch_norm(*_operands(inputs, params[0]), params[1])[0]


def _layer_norm_reverse(B: Any, grad: Any, inputs: Saved, output: Any, params: Params,
                        parents: Parents) -> Grads:
    x, weight, _ = _operands(inputs, params[0])
    return _by_slot(B.layer_norm_backward(x, params[1], weight, grad, params[2]), params[0],
                    parents)


def _layer_norm_forward(B: Any, inputs: tuple[Any, ...], params: tuple[Any, ...]) -> Any:
    """Retro-forward of a recorded ``layer_norm`` (params: slots, normalized_ndim, eps)."""
    x, weight, bias = _operands(inputs, params[0])
    return B.layer_norm(x, params[1], weight, bias, params[2])


def _rms_norm_reverse(B: Any, grad: Any, inputs: Saved, output: Any, params: Params,
                      parents: Parents) -> Grads:
    x, weight, _ = _operands(inputs, params[0])
    return _by_slot(B.rms_norm_backward(x, params[1], weight, grad, params[2]), params[0],
                    parents)


def _rms_norm_forward(B: Any, inputs: tuple[Any, ...], params: tuple[Any, ...]) -> Any:
    """Retro-forward of a recorded ``rms_norm`` (params: slots, normalized_ndim, eps)."""
    x, weight, _ = _operands(inputs, params[0])
    return B.rms_norm(x, params[1], weight, params[2])


def _cross_entropy_reverse(B: Any, grad: Any, inputs: Saved, output: Any, params: Params,
                           parents: Parents) -> Grads:
    return (B.cross_entropy_backward(inputs[0], *params, grad),)


BATCH_NORM = explicit("batch_norm", _batch_norm_reverse, COMPOSED, forward=_batch_norm_forward,
                      saves_inputs=True)
LAYER_NORM = explicit("layer_norm", _layer_norm_reverse, COMPOSED, forward=_layer_norm_forward,
                      saves_inputs=True)
RMS_NORM = explicit("rms_norm", _rms_norm_reverse, COMPOSED, forward=_rms_norm_forward,
                    saves_inputs=True)

#: name, reverse rule, tangent rule.
NORM: tuple[Derivative, ...] = (
    BATCH_NORM,
    LAYER_NORM,
    RMS_NORM,
    unary_params("cross_entropy", _cross_entropy_reverse, COMPOSED, saves_inputs=True),
)


@reverse.generated(NORM)
class AutodiffNormOps(AutodiffOps):
    """batch_norm, layer_norm, rms_norm and cross_entropy, recorded with their reverse
    rules."""

    _BATCH_NORM = op_of(BATCH_NORM)
    _LAYER_NORM = op_of(LAYER_NORM)
    _RMS_NORM = op_of(RMS_NORM)

    @classmethod
    def batch_norm(cls, x: AutodiffTensor, weight: AutodiffTensor | None,
                   bias: AutodiffTensor | None,
                   eps: float) -> tuple[AutodiffTensor, AutodiffTensor, AutodiffTensor]:
        """One recorded node for the normalized output (the inner backend's fused kernel runs
        forward, its ``batch_norm_backward`` backward, given the forward's statistics); the
        statistics come back untracked."""
        out, mean, var = cls.InnerBackend.batch_norm(x.primitive, optional(weight),
                                                     optional(bias), eps)
        slots, tensors = _present(x, weight, bias)
        stats = (AutodiffTensor(mean), AutodiffTensor(var))
        if not any_tracked(tensors):
            return (AutodiffTensor(out), *stats)
        return (cls.record(cls._BATCH_NORM, out, tensors, (slots, eps, mean, var)), *stats)

    @classmethod
    def layer_norm(cls, x: AutodiffTensor, normalized_ndim: int, weight: AutodiffTensor | None,
                   bias: AutodiffTensor | None, eps: float) -> AutodiffTensor:
        """One recorded node: the inner backend's fused kernel forward, its
        ``layer_norm_backward`` backward."""
        out = cls.InnerBackend.layer_norm(x.primitive, normalized_ndim, optional(weight),
                                          optional(bias), eps)
        slots, tensors = _present(x, weight, bias)
        if not any_tracked(tensors):
            return AutodiffTensor(out)
        return cls.record(cls._LAYER_NORM, out, tensors, (slots, normalized_ndim, eps))

    @classmethod
    def rms_norm(cls, x: AutodiffTensor, normalized_ndim: int, weight: AutodiffTensor | None,
                 eps: float) -> AutodiffTensor:
        """One recorded node: the inner backend's fused kernel forward, its
        ``rms_norm_backward`` backward."""
        out = cls.InnerBackend.rms_norm(x.primitive, normalized_ndim, optional(weight), eps)
        slots, tensors = _present(x, weight)
        if not any_tracked(tensors):
            return AutodiffTensor(out)
        return cls.record(cls._RMS_NORM, out, tensors, (slots, normalized_ndim, eps))
