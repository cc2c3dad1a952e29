"""ONNX loss operators: NegativeLogLikelihoodLoss and SoftmaxCrossEntropyLoss (class dim 1,
optional per-class weights, ignore_index, none/sum/mean reductions)."""

from __future__ import annotations

from burnpy.onnx.attributes import Attributes
from burnpy.onnx.registry import OpContext, Outputs, onnx_op
from burnpy.tensor import Tensor

Inputs = list[Tensor | None]


def _nll(ctx: OpContext, log_prob: Tensor, target: Tensor, weight: Tensor | None,
         attrs: Attributes) -> Tensor:
    """-log_prob at each target class, weighted, ignored positions 0, then reduced."""
    reduction = attrs.string("reduction", "mean")
    if reduction not in ("none", "sum", "mean"):
        ctx.unsupported(f"reduction={reduction!r}", "reduction")
    target = target.cast(ctx.backend.int_dtype)
    ignored = None
    if "ignore_index" in attrs:
        ignored = target == attrs.int("ignore_index", 0)
        target = target.mask_fill(ignored, 0)
    picked = log_prob.gather(1, target.unsqueeze(1)).squeeze(1)
    w = (weight.index_select(0, target.reshape(-1)).reshape(target.shape) if weight is not None
         else picked.ones_like())
    if ignored is not None:
        w = w.mask_fill(ignored, 0)
    loss = -picked * w
    if reduction == "none":
        return loss
    if reduction == "sum":
        return loss.sum()
    return loss.sum() / w.sum()


@onnx_op("NegativeLogLikelihoodLoss", 12, attrs=("ignore_index", "reduction"))
def _negative_log_likelihood(ctx: OpContext, inputs: Inputs, attrs: Attributes) -> Outputs:
    """ONNX NegativeLogLikelihoodLoss of log-probabilities [N, C, ...] and targets [N, ...]."""
    return _nll(ctx, ctx.arg(inputs, 0), ctx.arg(inputs, 1), ctx.optional(inputs, 2), attrs)


@onnx_op("SoftmaxCrossEntropyLoss", 12, attrs=("ignore_index", "reduction"))
def _softmax_cross_entropy(ctx: OpContext, inputs: Inputs, attrs: Attributes) -> Outputs:
    """ONNX SoftmaxCrossEntropyLoss: log-softmax over dim 1, then the NLL loss; the second
    output is the log-probabilities."""
    scores = ctx.arg(inputs, 0)
    log_prob = scores.log_softmax(1)
    return [_nll(ctx, log_prob, ctx.arg(inputs, 1), ctx.optional(inputs, 2), attrs), log_prob]
