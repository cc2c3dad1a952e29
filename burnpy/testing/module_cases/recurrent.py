"""The LSTM recurrence op against torch's equations, step by step."""

from __future__ import annotations

from typing import Any

from burnpy.nn.rnn import lstm_recurrence
from burnpy.testing.cases import F as Flt
from burnpy.testing.module_cases._common import _case, torch


def _torch_lstm(gates_x: Any, weight_hh: Any, h0: Any, c0: Any) -> Any:
    """torch's LSTM equations step by step over precomputed input gates: ``[T + 1, N, H]``."""
    h, c, hs = h0, c0, []
    for t in range(gates_x.shape[0]):
        i, f, g, o = (gates_x[t] + h @ weight_hh.T).chunk(4, 1)
        c = f.sigmoid() * c + i.sigmoid() * g.tanh()
        h = o.sigmoid() * c.tanh()
        hs.append(h)
    return torch.stack([*hs, c])


_case("lstm_recurrence", lstm_recurrence, Flt(3, 2, 8), Flt(8, 2, low=-1.0, high=1.0),
      Flt(2, 2, low=-1.0, high=1.0), Flt(2, 2), torch_fn=_torch_lstm)
_case("lstm_recurrence_one_step", lstm_recurrence, Flt(1, 3, 12), Flt(12, 3), Flt(3, 3),
      Flt(3, 3), torch_fn=_torch_lstm)
