"""The linear layers' op, with and without bias."""

from __future__ import annotations

from burnpy.testing.cases import F as Flt
from burnpy.testing.module_cases._common import _both

_both("linear", "linear", Flt(3, 4, 5), Flt(6, 5), Flt(6))
_both("linear_no_bias", "linear", Flt(7, 5), Flt(3, 5))
_both("linear_tiny", "linear", Flt(2, 3), Flt(2, 3), Flt(2))
