"""Unfold (im2col) and fold (col2im)."""

from __future__ import annotations

from burnpy.testing.cases import F as Flt
from burnpy.testing.module_cases._common import _both

_both("unfold_im2col", "unfold", Flt(2, 3, 5, 6), kernel_size=(2, 3))
_both("unfold_im2col_all", "unfold", Flt(1, 2, 7, 6), kernel_size=(3, 2), dilation=(1, 2),
      padding=1, stride=(2, 1))
_both("fold_col2im", "fold", Flt(2, 3 * 6, 9), output_size=(4, 5),
      kernel_size=(2, 3))
_both("fold_col2im_all", "fold", Flt(1, 2 * 6, 15), output_size=(6, 5),
      kernel_size=(3, 2), dilation=(1, 2),
      padding=1, stride=(2, 1))
