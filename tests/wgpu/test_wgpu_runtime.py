"""The WebGPU runtime: adapters and devices, command batching, the buffer pool, the pipeline
and bind-group caches, buffer aliasing and dispatch limits. Runs on whatever adapter wgpu
finds (the CPU software adapter in CI); never skipped."""

from __future__ import annotations

import gc

import numpy as np
import pytest

import burnpy_wgpu
from burnpy import Tensor
from burnpy.backend.device import Device
from burnpy_wgpu import WgpuBackend, WgpuDevice, list_adapters
from burnpy_wgpu.errors import WgpuError, WgpuLimitError
from burnpy_wgpu.kernels.common import WG, entry, header
from burnpy_wgpu.kernels.elementwise import launch_map
from burnpy_wgpu.memory import size_class
from burnpy_wgpu.runtime import MAX_BATCH, runtime_for

B = WgpuBackend
DEV = B.default_device()
RT = runtime_for(DEV)


def _t(values: object, dtype: str = "float32") -> Tensor:
    return Tensor.from_data(np.asarray(values, dtype=dtype), backend=B)


def test_adapters_are_listed_and_devices_match() -> None:
    found = list_adapters()
    assert found, "no WebGPU adapter; run scripts/ensure_webgpu_adapter.sh"
    assert [a.device for a in found] == B.devices()
    assert B.default_device() == Device("wgpu", 0) == WgpuDevice(0)
    assert all(a.backend_type and a.name for a in found)


class _FakeAdapter:
    """Stands for a wgpu adapter in the discovery-order test: only ``info`` is read."""

    def __init__(self, backend_type: str) -> None:
        self.info = {"device": "llvmpipe", "backend_type": backend_type,
                     "description": f"Mesa {backend_type}"}


def test_native_adapters_come_before_opengl(monkeypatch: pytest.MonkeyPatch) -> None:
    # wgpu may pick Mesa's OpenGL llvmpipe (no shader-f16) even when lavapipe (Vulkan) exists;
    # device 0 must still be the Vulkan one, so float16 runs wherever lavapipe is installed.
    import wgpu

    from burnpy_wgpu import device as wdevice

    monkeypatch.delenv("BURNPY_WGPU_BACKEND", raising=False)
    gl, vk = _FakeAdapter("OpenGL"), _FakeAdapter("Vulkan")
    monkeypatch.setattr(wgpu.gpu, "enumerate_adapters_sync", lambda: [gl, vk])
    monkeypatch.setattr(wgpu.gpu, "request_adapter_sync", lambda power_preference: gl)
    assert wdevice._discover("high-performance") == [vk, gl]
    monkeypatch.setenv("BURNPY_WGPU_BACKEND", "opengl")
    assert wdevice._discover("high-performance") == [gl]


def test_device_zero_is_native_when_the_machine_has_one() -> None:
    kinds = [a.backend_type for a in list_adapters()]
    if all(k == "OpenGL" for k in kinds):
        pytest.skip(f"only OpenGL adapters here ({kinds}); scripts/ensure_webgpu_adapter.sh "
                    "installs lavapipe")
    assert kinds[0] != "OpenGL"


def test_every_adapter_runs_a_kernel() -> None:
    for device in B.devices():
        x = Tensor.from_data(np.arange(5, dtype=np.float32), backend=B, device=device)
        assert (x * 2.0 + 1.0).tolist() == [1.0, 3.0, 5.0, 7.0, 9.0]


def test_unknown_device_index_is_a_clear_error() -> None:
    with pytest.raises(burnpy_wgpu.AdapterUnavailableError, match="no WebGPU adapter"):
        runtime_for(Device("wgpu", 99))


def test_power_preference_is_validated_and_fixed_once_in_use(monkeypatch: pytest.MonkeyPatch
                                                             ) -> None:
    with pytest.raises(ValueError, match="power preference"):
        burnpy_wgpu.set_power_preference("fastest")  # type: ignore[arg-type]
    with pytest.raises(WgpuError, match="already in use"):
        burnpy_wgpu.set_power_preference("low-power")
    monkeypatch.setenv("BURNPY_WGPU_POWER_PREFERENCE", "bogus")
    with pytest.raises(ValueError, match="BURNPY_WGPU_POWER_PREFERENCE"):
        burnpy_wgpu.power_preference()


def test_ops_are_batched_until_a_readback() -> None:
    x = _t(np.ones(100))
    B.sync(DEV)
    submits = RT.stats["submits"]
    y = x
    for _ in range(20):
        y = y + 1.0
    assert RT.pending_dispatches() == 20
    assert RT.stats["submits"] == submits
    assert y.tolist() == [21.0] * 100
    assert RT.stats["submits"] == submits + 1
    assert RT.pending_dispatches() == 0


@pytest.mark.parametrize("dtype", ["float32", "int32", "bool"])
def test_a_small_upload_reads_back_without_waiting_for_the_device(dtype: str) -> None:
    """Class labels that a loss checks on the host every step: reading back an uploaded
    tensor (or any view of it) takes its host copy, with no readback and no submit of the
    queued kernels; the copy is the upload's, not the caller's array, which may change."""
    rng = np.random.default_rng(4)
    host = rng.integers(-5, 5, (3, 4, 5)).astype(dtype)
    want = host.copy()
    x = Tensor.from_data(host, backend=B)
    host[...] = host[::-1]  # the caller's array changes after the upload
    pending = _t(np.ones(8)) * 2.0  # queued work that a readback would have to submit first
    readbacks, submits = RT.stats["readbacks"], RT.stats["submits"]
    np.testing.assert_array_equal(x.to_numpy(), want)
    np.testing.assert_array_equal(x.flip(1)[:, 1:, ::2].permute(2, 0, 1).to_numpy(),
                                  want[:, ::-1][:, 1:, ::2].transpose(2, 0, 1))
    assert (RT.stats["readbacks"], RT.stats["submits"]) == (readbacks, submits)
    assert RT.pending_dispatches() > 0
    assert pending.tolist() == [2.0] * 8


def test_a_large_upload_and_a_kernels_result_are_read_back_from_the_device() -> None:
    from burnpy_wgpu.memory import HOST_COPY_BYTES
    big = np.arange(HOST_COPY_BYTES // 4 + 1, dtype=np.float32)
    readbacks = RT.stats["readbacks"]
    np.testing.assert_array_equal(_t(big).to_numpy(), big)
    np.testing.assert_array_equal((_t(big[:10]) + 1.0).to_numpy(), big[:10] + 1.0)
    assert RT.stats["readbacks"] == readbacks + 2


def test_sync_submits_and_waits() -> None:
    x = _t(np.ones(10)) * 3.0
    assert RT.pending_dispatches() > 0
    B.sync(DEV)
    assert RT.pending_dispatches() == 0
    assert x.tolist() == [3.0] * 10


def test_a_large_batch_is_submitted_without_being_asked() -> None:
    B.sync(DEV)
    submits = RT.stats["submits"]
    y = _t(np.zeros(4))
    for _ in range(MAX_BATCH + 5):
        y = y + 1.0
    assert RT.stats["submits"] == submits + 1
    assert y.tolist() == [float(MAX_BATCH + 5)] * 4


def test_pipelines_are_compiled_once_per_kernel_and_dtype() -> None:
    x = _t(np.arange(6)).reshape(2, 3).primitive
    xi = _t(np.arange(6), "int32").reshape(2, 3).primitive
    expr = "a * a + a * 3"  # an expression no op uses, so its pipelines are new here
    misses, dispatches = RT.stats["pipeline_misses"], RT.stats["dispatches"]
    for _ in range(5):
        launch_map(RT, expr, [x], x.dtype)
    assert RT.stats["pipeline_misses"] == misses + 1
    assert RT.stats["dispatches"] == dispatches + 5
    out = launch_map(RT, expr, [xi], xi.dtype)
    assert RT.stats["pipeline_misses"] == misses + 2
    assert B.int_into_data(out).array.tolist() == [[0, 4, 10], [18, 28, 40]]


def test_buffers_are_recycled_by_size_class() -> None:
    B.sync(DEV)
    for _ in range(3):
        (_t(np.ones(1000)) + 1.0).to_numpy()
    allocated = RT.pool.allocated
    reused = RT.pool.reused
    for _ in range(10):
        (_t(np.ones(1000)) + 1.0).to_numpy()
    assert RT.pool.allocated == allocated
    assert RT.pool.reused >= reused + 20
    assert size_class(1000 * 4) == 4096 and size_class(1) == 16
    assert size_class(300_000) % (1 << 15) == 0 and size_class(300_000) < 1.25 * 300_000


def test_collected_tensors_return_their_buffer() -> None:
    B.sync(DEV)
    t = _t(np.ones(12345))
    slab = t.primitive.handle.slab
    del t
    gc.collect()
    assert any(slab is s for v in RT.pool.free.values() for s in v)


def test_views_share_the_buffer_until_the_last_one_dies() -> None:
    t = _t(np.arange(12)).reshape(3, 4)
    view = t.permute(1, 0)[1:3]
    slab = view.primitive.handle.slab
    del t
    gc.collect()
    assert not any(slab is s for v in RT.pool.free.values() for s in v)
    assert view.tolist() == [[1.0, 5.0, 9.0], [2.0, 6.0, 10.0]]


def test_bind_groups_are_cached_across_repeated_steps() -> None:
    w = _t(np.ones((8, 8)))
    x = _t(np.ones((4, 8)))
    for _ in range(3):
        (x @ w + 1.0).to_numpy()
    hits, misses = RT.stats["bind_group_hits"], RT.stats["bind_group_misses"]
    for _ in range(5):
        (x @ w + 1.0).to_numpy()
    assert RT.stats["bind_group_hits"] >= hits + 10
    assert RT.stats["bind_group_misses"] <= misses + 2


def test_a_buffer_bound_for_reading_and_writing_is_copied_first() -> None:
    """WebGPU forbids one buffer bound read-only and read-write in a dispatch."""
    body = "    if (gid < mu(0u)) { out0[gid] = in0[gid] * 2.0; }"
    kernel = RT.kernel(("test_alias",), lambda: header(["f32"], ["f32"]) + entry(body), 1, 1)
    t = _t([1.0, 2.0, 3.0])
    slab = t.primitive.handle.slab
    copies = RT.stats["alias_copies"]
    RT.dispatch_linear(kernel, [slab], [slab], [3], 1)
    assert RT.stats["alias_copies"] == copies + 1
    assert t.tolist() == [2.0, 4.0, 6.0]


def test_more_than_65535_workgroups_use_a_2d_grid() -> None:
    n = 65535 * WG + 1000
    y = Tensor.zeros((n,), backend=B, dtype="int32") + 1
    assert int(y.sum().item()) == n
    assert y[-3:].tolist() == [1, 1, 1]


def test_dispatch_grid_and_tensor_size_limits_are_enforced() -> None:
    kernel = RT.kernel(("test_noop",), lambda: header([], ["u32"]) + entry("    return;"), 0, 1)
    out = RT.alloc(4).slab
    with pytest.raises(WgpuLimitError, match="workgroups per dimension"):
        RT.dispatch(kernel, [], [out], [0], (RT.max_groups + 1, 1, 1))
    with pytest.raises(WgpuLimitError, match="storage binding limit"):
        RT.alloc(RT.max_binding + 4)


def test_a_kernel_that_does_not_compile_names_its_key() -> None:
    with pytest.raises(WgpuError, match="test_broken"):
        RT.kernel(("test_broken",), lambda: "fn main( {", 0, 1)
