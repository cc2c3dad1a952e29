"""Convolutions and transposed convolutions under every stride, padding, dilation and
group setting."""

from __future__ import annotations

from burnpy.testing.cases import F as Flt
from burnpy.testing.module_cases._common import _both

_both("conv1d_stride_pad_dilation_groups", "conv1d", Flt(2, 4, 9), Flt(6, 2, 3), Flt(6),
      stride=2, padding=1, dilation=2, groups=2)
_both("conv1d_tiny", "conv1d", Flt(1, 1, 5), Flt(2, 1, 2), Flt(2))
_both("conv2d", "conv2d", Flt(2, 3, 6, 5), Flt(4, 3, 3, 3), padding=1)
_both("conv2d_stride_pad_dilation_groups", "conv2d", Flt(2, 4, 7, 6), Flt(6, 2, 3, 2), Flt(6),
      stride=(2, 1), padding=(1, 0), dilation=(1, 2), groups=2)
_both("conv2d_depthwise", "conv2d", Flt(1, 3, 5, 5), Flt(3, 1, 3, 3), Flt(3), stride=2,
      padding=1, groups=3)
_both("conv3d", "conv3d", Flt(1, 2, 5, 4, 4), Flt(3, 2, 2, 3, 2), Flt(3), stride=(1, 2, 1),
      padding=1)
_both("conv3d_groups_dilation", "conv3d", Flt(1, 4, 5, 5, 4), Flt(2, 2, 2, 2, 2), groups=2,
      dilation=(2, 1, 1))

_both("conv_transpose1d", "conv_transpose1d", Flt(2, 4, 5), Flt(4, 3, 3), Flt(3), stride=2,
      padding=1, output_padding=1)
_both("conv_transpose1d_tiny", "conv_transpose1d", Flt(1, 1, 3), Flt(1, 2, 2), Flt(2))
_both("conv_transpose2d", "conv_transpose2d", Flt(2, 3, 4, 3), Flt(3, 2, 3, 3), padding=1)
_both("conv_transpose2d_stride_groups_dilation", "conv_transpose2d", Flt(2, 4, 4, 3),
      Flt(4, 2, 3, 2), Flt(4), stride=(2, 1), padding=(1, 0), output_padding=(1, 0), groups=2,
      dilation=(1, 2))
_both("conv_transpose3d", "conv_transpose3d", Flt(1, 2, 3, 3, 2), Flt(2, 2, 2, 2, 2), Flt(2),
      stride=2)
