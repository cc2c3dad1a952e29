"""Padding in every mode and rank, and cropping by negative widths."""

from __future__ import annotations

from burnpy.testing.cases import F as Flt
from burnpy.testing.module_cases._common import _both

for _mode in ("constant", "reflect", "replicate", "circular"):
    _both(f"pad_{_mode}_1d", "pad", Flt(2, 3, 5), pad=(2, 1), mode=_mode)
    _both(f"pad_{_mode}_2d", "pad", Flt(1, 2, 4, 5), pad=(1, 3, 2, 0), mode=_mode)
    _both(f"pad_{_mode}_3d", "pad", Flt(1, 1, 3, 3, 4), pad=(1, 1, 0, 2, 2, 1), mode=_mode)
_both("pad_constant_value_crop", "pad", Flt(2, 3, 5), pad=(-1, 2, 1, -1), value=0.5)
