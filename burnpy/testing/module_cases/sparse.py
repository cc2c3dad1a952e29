"""Embedding lookups and one-hot encoding."""

from __future__ import annotations

import burnpy.nn.functional as F
from burnpy.testing.cases import F as Flt
from burnpy.testing.cases import I
from burnpy.testing.module_cases._common import TF, _both, _case

_both("embedding", "embedding", I(3, 4, high=7), Flt(7, 5))
_both("embedding_repeats", "embedding", I(12, high=3), Flt(3, 4))
_case("one_hot", lambda t: F.one_hot(t, 5), I(2, 3, high=5),
      torch_fn=lambda t: TF.one_hot(t, 5))
_case("one_hot_inferred", lambda t: F.one_hot(t), I(4, high=4, distinct=True),
      torch_fn=lambda t: TF.one_hot(t))
