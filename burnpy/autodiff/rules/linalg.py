# ruff: noqa: N803 - rules name the inner backend type ``B``, as Burn's generics do
"""Matrix products: matmul, linear and scaled dot-product attention, and the tangent rule of
every bilinear op (``Bilinear``, which the convolutions use too). All are compute-bound: their
outputs are kept under balanced checkpointing.

Attention is one recorded node (written by hand, ``explicit``): the inner backend's
``attention_weights`` and one matmul forward, its ``attention_backward`` backward, given the
saved softmax weights (recorded with params ``(mask, scale, is_causal, weights)``); ForwardAD
runs the protocol's composition, which carries the tangents through its parts.
"""

from __future__ import annotations

import math
from typing import Any

from burnpy.autodiff.rules import reverse, tangent
from burnpy.autodiff.rules.reverse import AutodiffOps, any_tracked, op_of
from burnpy.autodiff.rules.table import (
    COMPOSED,
    Derivative,
    Grads,
    Inputs,
    Params,
    Parents,
    Saved,
    Tangents,
    binary,
    explicit,
    with_bias,
)
from burnpy.autodiff.rules.tangent import ForwardOps
from burnpy.autodiff.tensor import AutodiffTensor


class Bilinear:
    """Tangent of ``name(x, weight, bias, *params)``, bilinear in (x, weight) plus a bias
    along ``channel_dim`` of the output: ``op(tx, w, tb) + op(x, tw)``, the bias tangent
    riding on whichever term runs first."""

    __slots__ = ("channel_dim", "name")

    def __init__(self, name: str, channel_dim: int) -> None:
        self.name = name
        self.channel_dim = channel_dim

    def __call__(self, B: Any, tangents: Tangents, inputs: Inputs, output: Any,
                 params: Params) -> Any:
        op = getattr(B, self.name)
        x, weight = inputs[0], inputs[1]
        tx, tw = tangents[0], tangents[1]
        t_bias = tangents[2] if len(tangents) == 3 else None
        result = None
        if tx is not None:
            result = op(tx, weight, t_bias, *params)
            t_bias = None
        if tw is not None:
            term = op(x, tw, t_bias, *params)
            result = term if result is None else B.float_add(result, term)
            t_bias = None
        if t_bias is not None:  # only the bias moves
            shape = [1] * len(output.shape)
            shape[self.channel_dim] = output.shape[self.channel_dim]
            result = B.float_expand(B.float_reshape(t_bias, tuple(shape)), output.shape)
        return result


def _matmul_reverse(B: Any, grad: Any, inputs: Saved, output: Any, params: Params,
                    parents: Parents) -> Grads:
    lhs, rhs = inputs
    nd = len(grad.shape)
    return (None if parents[0] is None else
            B.float_matmul(grad, B.float_swap_dims(rhs, nd - 2, nd - 1)),
            None if parents[1] is None else
            B.float_matmul(B.float_swap_dims(lhs, nd - 2, nd - 1), grad))


def _matmul_tangent(B: Any, tangents: Tangents, inputs: Inputs, output: Any,
                    params: Params) -> Any:
    """ta @ b + a @ tb (one of the tangents may be None; the output is not read)."""
    (a, b), (ta, tb) = inputs, tangents
    if tb is None:
        return B.float_matmul(ta, b)
    if ta is None:
        return B.float_matmul(a, tb)
    return B.float_add(B.float_matmul(ta, b), B.float_matmul(a, tb))


def _matmul_shape(a: Any, b: Any) -> tuple[int, ...] | None:
    """The shape of ``a @ b`` (same ndim, same dtype, size-1 batch dims broadcasting), or
    None when the operands are not that simple case. ForwardAD defers the primal of such a
    matmul until read: the weight gradients of a forward-over-reverse HVP are read only for
    their tangents."""
    sa, sb = a.shape, b.shape
    if len(sa) != len(sb) or len(sa) < 2 or sa[-1] != sb[-2] or a.dtype != b.dtype:
        return None
    batch = []
    for m, n in zip(sa[:-2], sb[:-2], strict=True):
        if m != n and m != 1 and n != 1:
            return None
        batch.append(n if m == 1 else m)
    return (*batch, sa[-2], sb[-1])


def _linear_reverse(B: Any, grad: Any, inputs: Saved, output: Any, params: Params,
                    parents: Parents) -> Grads:
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


def _attention_reverse(B: Any, grad: Any, inputs: Saved, output: Any, params: Params,
                       parents: Parents) -> Grads:
    grads = B.attention_backward(*inputs, *params[:3], grad, params[3])
    return tuple(None if parent is None else g for g, parent in zip(grads, parents, strict=True))


ATTENTION = explicit("attention", _attention_reverse, COMPOSED, forward=None,
                     saves_inputs=True, compute_bound=True)

#: name, reverse rule, tangent rule.
LINALG: tuple[Derivative, ...] = (
    binary("float_matmul", _matmul_reverse, _matmul_tangent, saves_inputs=True,
           compute_bound=True, deferred=_matmul_shape),
    with_bias("linear", _linear_reverse, Bilinear("linear", -1)),
    ATTENTION,
)


@reverse.generated(LINALG)
class AutodiffLinalgOps(AutodiffOps):
    """matmul, linear and attention, recorded with their reverse rules."""

    _ATTENTION = op_of(ATTENTION)

    @classmethod
    def attention(cls, query: AutodiffTensor, key: AutodiffTensor, value: AutodiffTensor,
                  mask: Any, scale: float | None, is_causal: bool) -> AutodiffTensor:
        """One recorded node: the inner backend's ``attention_weights`` and a matmul forward
        (its fused ``attention`` when nothing is tracked), ``attention_backward`` from the
        saved weights backward."""
        B = cls.InnerBackend  # noqa: N806
        tensors = (query, key, value)
        if not any_tracked(tensors):
            return AutodiffTensor(B.attention(query.primitive, key.primitive, value.primitive,
                                              mask, scale, is_causal))
        weights = B.attention_weights(query.primitive, key.primitive, mask, scale, is_causal)
        out = B.float_matmul(weights, value.primitive)
        return cls.record(cls._ATTENTION, out, tensors, (mask, scale, is_causal, weights))


@tangent.generated(LINALG)
class ForwardLinalgOps(ForwardOps):
    """matmul and linear, with their tangents."""
