"""Interpolation, pixel and channel shuffles, affine grids and grid sampling."""

from __future__ import annotations

from burnpy.testing.cases import F as Flt
from burnpy.testing.module_cases._common import _both

_both("interpolate_nearest", "interpolate", Flt(2, 3, 5, 4), size=(7, 9), mode="nearest")
_both("interpolate_nearest_scale", "interpolate", Flt(1, 2, 3, 4), scale_factor=2,
      mode="nearest")
_both("interpolate_nearest_down", "interpolate", Flt(1, 2, 7, 6), size=(3, 4), mode="nearest")
_both("interpolate_bilinear", "interpolate", Flt(2, 3, 5, 4), size=(7, 3), mode="bilinear",
      align_corners=False)
_both("interpolate_bilinear_align_corners", "interpolate", Flt(2, 3, 5, 4), size=(8, 6),
      mode="bilinear", align_corners=True)
_both("interpolate_bilinear_tiny", "interpolate", Flt(1, 1, 3, 2), size=(4, 5),
      mode="bilinear", align_corners=False)
_both("pixel_shuffle", "pixel_shuffle", Flt(2, 8, 3, 2), upscale_factor=2)
_both("pixel_unshuffle", "pixel_unshuffle", Flt(1, 2, 6, 4), downscale_factor=2)
_both("channel_shuffle", "channel_shuffle", Flt(2, 6, 3, 2), groups=3)
_both("affine_grid", "affine_grid", Flt(2, 2, 3), size=(2, 3, 4, 5), align_corners=False)
_both("affine_grid_corners", "affine_grid", Flt(2, 2, 3), size=(2, 1, 3, 2),
      align_corners=True)
_both("affine_grid_3d", "affine_grid", Flt(1, 3, 4), size=(1, 1, 2, 3, 4),
      align_corners=False)
for _mode in ("bilinear", "nearest"):
    for _padding in ("zeros", "border", "reflection"):
        for _corners in (False, True):
            _both(f"grid_sample_{_mode}_{_padding}_{'corners' if _corners else 'centers'}",
                  "grid_sample", Flt(2, 3, 4, 5), Flt(2, 3, 2, 2, low=-1.6, high=1.6),
                  mode=_mode, padding_mode=_padding, align_corners=_corners)
