# ruff: noqa: N803 - rules name the inner backend type ``B``, as Burn's generics do
"""The fused LSTM recurrence: one recorded node for a whole sequence (written by hand,
``explicit``): the inner backend's ``lstm_states`` forward, whose activated gates and cell
states are kept in the params, and its ``lstm_backward`` backward from them and the saved
output. ForwardAD runs the protocol's composition, which carries the tangents through its
parts.
"""

from __future__ import annotations

from typing import Any

from burnpy.autodiff.rules import reverse
from burnpy.autodiff.rules.reverse import AutodiffOps, any_tracked, op_of
from burnpy.autodiff.rules.table import (
    COMPOSED,
    Derivative,
    Grads,
    Params,
    Parents,
    Saved,
)
from burnpy.autodiff.tensor import AutodiffTensor


def _lstm_reverse(B: Any, grad: Any, inputs: Saved, output: Any, params: Params,
                  parents: Parents) -> Grads:
    grads = B.lstm_backward(*inputs[1:], output, *params, grad)
    return tuple(None if parent is None else g for g, parent in zip(grads, parents, strict=True))


LSTM = Derivative("lstm", "explicit", _lstm_reverse, COMPOSED, None, saves_inputs=True,
                  saves_output=True, compute_bound=True)

#: name, reverse rule, tangent rule.
RECURRENT: tuple[Derivative, ...] = (LSTM,)


@reverse.generated(RECURRENT)
class AutodiffRecurrentOps(AutodiffOps):
    """The LSTM recurrence, recorded with its reverse rule."""

    _LSTM = op_of(LSTM)

    @classmethod
    def lstm(cls, gates_x: AutodiffTensor, weight_hh: AutodiffTensor, h0: AutodiffTensor,
             c0: AutodiffTensor) -> AutodiffTensor:
        """One recorded node: the inner backend's ``lstm_states`` forward (its plain ``lstm``
        when nothing is tracked), ``lstm_backward`` from the saved states backward."""
        B = cls.InnerBackend  # noqa: N806
        tensors = (gates_x, weight_hh, h0, c0)
        if not any_tracked(tensors):
            return AutodiffTensor(B.lstm(*(t.primitive for t in tensors)))
        out, gates, cells = B.lstm_states(*(t.primitive for t in tensors))
        return cls.record(cls._LSTM, out, tensors, (gates, cells))
