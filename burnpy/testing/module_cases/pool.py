"""Pools: average, max (with indices), adaptive, power, fractional and unpooling, 1-d to 3-d."""

from __future__ import annotations

from typing import Any

import numpy as np

import burnpy.nn.functional as F
from burnpy.tensor import Tensor
from burnpy.testing.cases import F as Flt
from burnpy.testing.module_cases._common import TF, _both, _case, torch

_both("avg_pool1d", "avg_pool1d", Flt(2, 3, 9), kernel_size=3, stride=2, padding=1,
      ceil_mode=True, count_include_pad=False)
_both("avg_pool1d_tiny", "avg_pool1d", Flt(1, 2, 7), kernel_size=2)
_both("avg_pool2d", "avg_pool2d", Flt(2, 3, 7, 6), kernel_size=(3, 2), stride=2, padding=1)
_both("avg_pool2d_ceil_no_pad_count", "avg_pool2d", Flt(2, 2, 7, 6), kernel_size=3, stride=2,
      padding=1, ceil_mode=True, count_include_pad=False)
_both("max_pool1d", "max_pool1d", Flt(2, 3, 9, distinct=True), kernel_size=3, stride=2,
      padding=1, dilation=2)
_both("max_pool2d", "max_pool2d", Flt(2, 3, 7, 6, distinct=True), kernel_size=3, stride=2,
      padding=1)
_both("max_pool2d_ceil_dilation", "max_pool2d", Flt(1, 2, 8, 7, distinct=True), kernel_size=2,
      stride=2, dilation=2, ceil_mode=True)
_both("max_pool2d_with_indices", "max_pool2d", Flt(2, 2, 6, 6, distinct=True), kernel_size=2,
      return_indices=True)
_both("max_pool1d_tiny", "max_pool1d", Flt(1, 2, 8, distinct=True), kernel_size=2)
_both("adaptive_avg_pool1d", "adaptive_avg_pool1d", Flt(2, 3, 10), output_size=4)
_both("adaptive_avg_pool2d", "adaptive_avg_pool2d", Flt(2, 3, 7, 9), output_size=(3, 4))
_both("adaptive_avg_pool2d_upsample", "adaptive_avg_pool2d", Flt(1, 2, 3, 2),
      output_size=(5, 4))

_both("avg_pool3d", "avg_pool3d", Flt(1, 2, 4, 5, 4), kernel_size=2)
_both("avg_pool3d_pad", "avg_pool3d", Flt(1, 2, 5, 4, 5), kernel_size=(3, 2, 3),
      stride=(2, 1, 2),
      padding=1)
_both("avg_pool3d_pad_exclude_ceil", "avg_pool3d", Flt(1, 1, 5, 4, 6), kernel_size=3,
      stride=2,
      padding=1, count_include_pad=False, ceil_mode=True)
_both("avg_pool3d_ceil", "avg_pool3d", Flt(1, 1, 5, 5, 4), kernel_size=2, ceil_mode=True)
_both("avg_pool3d_divisor", "avg_pool3d", Flt(1, 2, 4, 4, 4), kernel_size=2,
      divisor_override=3)
_both("max_pool3d", "max_pool3d", Flt(1, 2, 4, 5, 4, distinct=True),
      kernel_size=2)
_both("max_pool3d_all", "max_pool3d", Flt(1, 2, 6, 5, 6, distinct=True),
      kernel_size=(3, 2, 2), stride=(1, 2, 2), padding=1, dilation=(1, 1, 2), ceil_mode=True,
      return_indices=True)
_both("adaptive_avg_pool3d", "adaptive_avg_pool3d", Flt(1, 2, 5, 4, 7),
      output_size=(2, 3, 3))
_both("adaptive_avg_pool3d_none", "adaptive_avg_pool3d", Flt(1, 2, 3, 4, 5),
      output_size=(None, 2, 3))
_both("adaptive_max_pool1d", "adaptive_max_pool1d", Flt(2, 3, 7, distinct=True),
      output_size=3)
_both("adaptive_max_pool1d_indices", "adaptive_max_pool1d", Flt(2, 3, 8, distinct=True),
      output_size=3, return_indices=True)
_both("adaptive_max_pool2d", "adaptive_max_pool2d", Flt(2, 2, 5, 7, distinct=True),
      output_size=(3, 4))
_both("adaptive_max_pool2d_indices", "adaptive_max_pool2d", Flt(1, 2, 7, 5, distinct=True),
      output_size=(3, 2), return_indices=True)
_both("lp_pool1d", "lp_pool1d", Flt(2, 3, 7), norm_type=2.0, kernel_size=3, stride=2)
_both("lp_pool2d", "lp_pool2d", Flt(1, 2, 5, 6, low=0.5, high=2.0), norm_type=3.0,
      kernel_size=(2, 3), ceil_mode=True)
_both("lp_pool3d", "lp_pool3d", Flt(1, 2, 4, 5, 3, low=0.5, high=2.0), norm_type=2.0,
      kernel_size=(2, 3, 2), stride=1)
_both("adaptive_max_pool3d_indices", "adaptive_max_pool3d", Flt(1, 2, 5, 4, 6, distinct=True),
      output_size=(2, 3, 4), return_indices=True)
_FRACTIONAL_SAMPLES = np.array([[[0.3, 0.8], [0.05, 0.6]]])


def _samples(x: Any) -> Any:
    return _FRACTIONAL_SAMPLES if x.ndim == 4 else np.concatenate(
        [_FRACTIONAL_SAMPLES, [[[0.5], [0.9]]]], axis=2)


for _n in (2, 3):
    _case(f"fractional_max_pool{_n}d", lambda x: getattr(F, f"fractional_max_pool{x.ndim - 2}d")(
              x, 2, output_size=3, return_indices=True, _random_samples=Tensor.from_data(
                  _samples(x), backend=x.backend, device=x.device, dtype=x.dtype)),
          Flt(1, 2, *(6, 5, 7)[:_n], distinct=True),
          torch_fn=lambda x: getattr(TF, f"fractional_max_pool{x.ndim - 2}d")(
              x, 2, output_size=3, return_indices=True,
              _random_samples=torch.from_numpy(_samples(x)).to(x.dtype)))
    _case(f"max_unpool{_n}d", lambda x: getattr(F, f"max_unpool{x.ndim - 2}d")(
              *getattr(F, f"max_pool{x.ndim - 2}d")(x, 2, return_indices=True), 2),
          Flt(2, 3, *(6, 4, 4)[:_n], distinct=True),
          torch_fn=lambda x: getattr(TF, f"max_unpool{x.ndim - 2}d")(
              *getattr(TF, f"max_pool{x.ndim - 2}d")(x, 2, return_indices=True), 2))
