"""CpuBackend's Winograd conv over planes whose tiles overflow one slab (ResNet's 56x56
stage): the tiles go a band of tile rows at a time, each band reading its own input rows;
every result against torch's direct conv, in both float dtypes, at odd sizes, both paddings,
several samples and bands of one tile row."""

from __future__ import annotations

from typing import Any

import numpy as np
import pytest
import torch
import torch.nn.functional as F

from burnpy.backend.ops.module_ops import ConvOptions
from burnpy_cpu import CpuBackend
from burnpy_cpu.array_ops import module_ops

torch.set_num_threads(1)

# (x shape, c_out, padding): bands of several rows, odd output sizes, no padding, a plane
# whose tile row alone fills most of a slab (bands of one tile row).
CASES = [((1, 64, 56, 56), 64, 1), ((2, 32, 61, 63), 48, 1), ((1, 64, 58, 57), 64, 0),
         ((1, 520, 9, 64), 16, 1)]


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
@pytest.mark.parametrize(("shape", "c_out", "padding"), CASES)
def test_a_banded_winograd_conv_equals_torch(shape: tuple[int, ...], c_out: int,
                                             padding: int, dtype: Any,
                                             monkeypatch: pytest.MonkeyPatch) -> None:
    bands = []
    original = module_ops._winograd_bands

    def spy(*args: Any) -> None:
        bands.append(args[4])
        original(*args)

    monkeypatch.setattr(module_ops, "_winograd_bands", spy)
    rng = np.random.default_rng(0)
    x = rng.standard_normal(shape).astype(dtype)
    w = rng.standard_normal((c_out, shape[1], 3, 3)).astype(dtype)
    b = rng.standard_normal(c_out).astype(dtype)
    opts = ConvOptions((1, 1), (padding, padding), (1, 1), 1)
    got = CpuBackend.conv(x, w, b, opts)
    ref = F.conv2d(torch.from_numpy(x), torch.from_numpy(w), torch.from_numpy(b),
                   padding=padding).numpy()
    assert len(bands) == 1 and got.shape == ref.shape and got.dtype == dtype
    if shape[1] == 520:  # a tile row of 520 channels (rounded to 528) fills half a slab
        assert bands == [1]
    tol = (1e-5 if dtype == np.float32 else 1e-12) * np.abs(ref).max()
    np.testing.assert_allclose(got, ref, rtol=0, atol=tol)
