"""CpuBackend's max pool without indices (a running maximum over strided tap views) against
torch's max pool and its own indexed pool's values: 1-3 spatial dims, padding, strides,
dilation, ceil mode, NaNs (which stick, as in torch) and all ``-inf`` windows."""

from __future__ import annotations

import numpy as np
import pytest
import torch
import torch.nn.functional as F

from burnpy_cpu import CpuBackend

torch.set_num_threads(1)

_TORCH = {1: F.max_pool1d, 2: F.max_pool2d, 3: F.max_pool3d}

CASES = [  # (input shape, kernel, stride, padding, dilation, ceil mode)
    ((2, 3, 11), (3,), (2,), (1,), (1,), False),
    ((1, 64, 17, 17), (3, 3), (2, 2), (1, 1), (1, 1), False),
    ((2, 3, 9, 10), (2, 3), (2, 1), (1, 0), (2, 1), True),
    ((1, 2, 6, 7, 5), (2, 2, 3), (2, 2, 1), (0, 1, 1), (1, 1, 2), True),
]


@pytest.mark.parametrize("case", CASES, ids=[str(c[0]) for c in CASES])
@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_max_pool_equals_torch_and_the_indexed_pool(case: tuple, dtype: type) -> None:
    shape, kernel, stride, padding, dilation, ceil_mode = case
    rng = np.random.default_rng(0)
    x = rng.standard_normal(shape).astype(dtype)
    x.reshape(-1)[::17] = np.nan
    x[0, 0] = -np.inf  # a plane of -inf: windows whose max is -inf
    got = CpuBackend.max_pool(x, kernel, stride, padding, dilation, ceil_mode)
    expected = _TORCH[len(kernel)](torch.from_numpy(x), kernel, stride, padding, dilation,
                                   ceil_mode).numpy()
    assert got.dtype == x.dtype and got.shape == expected.shape
    np.testing.assert_array_equal(got, expected)
    indexed = CpuBackend.max_pool_with_indices(x, kernel, stride, padding, dilation,
                                               ceil_mode)[0]
    np.testing.assert_array_equal(got, indexed)
