"""``bp.autocast("wgpu", ...)`` on WebGPU: float16 regions where the adapter has the
``shader-f16`` feature (values against torch's float16 linear), and a DTypeError naming the
op, backend, device and dtype where it cannot compute the region's dtype (bfloat16 always;
float16 on an adapter without the feature, faked by the backend's ``supports_dtype``)."""

from __future__ import annotations

import numpy as np
import pytest
import torch

import burnpy as bp
from burnpy import Tensor
from burnpy.autodiff import Autodiff
from burnpy.backend.base import Backend
from burnpy.backend.device import Device
from burnpy.backend.dtype import DType
from burnpy.backend.errors import DTypeError
from burnpy.nn import functional as F
from burnpy_wgpu import WgpuBackend

RNG = np.random.default_rng(0)
X = RNG.standard_normal((6, 32)).astype(np.float32)
W = RNG.standard_normal((16, 32)).astype(np.float32)
B = RNG.standard_normal(16).astype(np.float32)


def _linear(backend: type[Backend]) -> Tensor:
    x, w, b = (Tensor.from_data(a, backend=backend) for a in (X, W, B))
    return F.linear(x, w, b)


def _has_f16() -> bool:
    return WgpuBackend.supports_dtype(WgpuBackend.default_device(), DType.float16)


@pytest.mark.parametrize("backend", [WgpuBackend, Autodiff(WgpuBackend)],
                         ids=["wgpu", "autodiff-wgpu"])
def test_float16_region_on_this_adapter(backend: type[Backend]) -> None:
    """The path this machine's adapter takes: float16 products where it has ``shader-f16``
    (equal to torch's float16 linear within float16 rounding), else the error."""
    if not _has_f16():
        with pytest.raises(DTypeError, match="shader-f16"), bp.autocast("wgpu", bp.float16):
            _linear(backend)
        return
    with bp.autocast("wgpu", bp.float16):
        out = _linear(backend)
    assert out.dtype == bp.float16
    theirs = torch.nn.functional.linear(*(torch.from_numpy(a).half() for a in (X, W, B)))
    np.testing.assert_allclose(out.to_numpy().astype(np.float32), theirs.float().numpy(),
                               rtol=2e-3, atol=2e-3)


def test_bfloat16_region_names_op_backend_and_dtype() -> None:
    with pytest.raises(DTypeError) as info, bp.autocast("wgpu", bp.bfloat16):
        _linear(WgpuBackend)
    message = str(info.value)
    for part in ("autocast('wgpu', dtype=bp.bfloat16)", "linear", "WgpuBackend", "wgpu:0",
                 "cannot compute in bfloat16"):
        assert part in message, (part, message)
    if _has_f16():
        assert "dtype=bp.float16)" in message.split(";")[-1]  # the dtype to use instead


def test_adapter_without_shader_f16(monkeypatch: pytest.MonkeyPatch) -> None:
    """An adapter lacking ``shader-f16`` (faked): a float16 region fails at its first
    product, under Autodiff too, and the message says to run in float32 instead."""
    def supports(cls: type[Backend], device: Device, dtype: DType) -> bool:
        return dtype in (DType.float32, DType.int32, DType.uint32, DType.bool_)

    monkeypatch.setattr(WgpuBackend, "supports_dtype", classmethod(supports))
    for backend in (WgpuBackend, Autodiff(WgpuBackend)):
        with pytest.raises(DTypeError) as info, bp.autocast("wgpu", bp.float16):
            _linear(backend)
        message = str(info.value)
        assert "cannot compute in float16" in message and "shader-f16" in message
        assert "enabled=False" in message
    # outside the region nothing changes: float32 runs as before
    assert _linear(WgpuBackend).dtype == bp.float32
