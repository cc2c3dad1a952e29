"""The WebGPU runtime of one device: queue, command batching, pipelines, bind groups, memory.

Every kernel launch goes through ``WgpuRuntime.dispatch``:
- pipelines are compiled once per kernel key (the template and its specialization: dtypes,
  ranks, layouts, workgroup size) and cached;
- each dispatch's small parameter block ("meta": shapes, strides, offsets, scalars) is appended
  to a host-side arena that is uploaded once per batch and bound with a dynamic offset, so
  bind groups depend only on the tensors' buffers and are cached by their ids;
- dispatches are recorded into one compute pass of one command encoder and submitted together
  on ``flush``: on ``sync``, on a readback, or when the batch is large.
"""

from __future__ import annotations

import os
import struct
import threading
from collections.abc import Callable, Sequence
from typing import Any

import numpy as np

from burnpy.backend.device import Device
from burnpy_wgpu.device import adapter_for
from burnpy_wgpu.errors import WgpuError, WgpuLimitError
from burnpy_wgpu.memory import HOST_COPY_BYTES, BufferHandle, BufferPool, Slab, size_class

#: Bytes of parameters each dispatch may read (its meta block is bound with this size).
META_SLOT = 512
#: Size of the per-batch parameter arena; a full arena flushes the batch.
ARENA_BYTES = 1 << 18
#: Dispatches recorded before a batch is submitted without being asked to.
MAX_BATCH = 1024
#: Free memory the buffer pool may keep (override with BURNPY_WGPU_POOL_MB).
POOL_CAP_BYTES = int(os.environ.get("BURNPY_WGPU_POOL_MB", "1024")) << 20
_BIND_GROUP_CACHE = 8192
_U32_MASK = 0xFFFFFFFF
_F32_MAX = 3.4028234663852886e38
_PACKERS: dict[int, struct.Struct] = {}
_WANTED_LIMITS = (
    "max-storage-buffer-binding-size", "max-buffer-size", "max-compute-workgroup-storage-size",
    "max-compute-invocations-per-workgroup", "max-compute-workgroup-size-x",
    "max-compute-workgroup-size-y", "max-compute-workgroup-size-z",
    "max-compute-workgroups-per-dimension", "max-storage-buffers-per-shader-stage",
    "max-dynamic-storage-buffers-per-pipeline-layout",
)


def f32_bits(value: float) -> int:
    """The IEEE-754 single bits of ``value`` (out-of-range finite values become +-inf)."""
    if value != value:
        return 0x7FC00000
    if value > _F32_MAX:
        value = float("inf")
    elif value < -_F32_MAX:
        value = float("-inf")
    return struct.unpack("<I", struct.pack("<f", value))[0]


class Kernel:
    """A compiled compute pipeline and the binding counts of its layout."""

    __slots__ = ("key", "n_read", "n_write", "pipeline")

    def __init__(self, key: Any, pipeline: Any, n_read: int, n_write: int) -> None:
        self.key = key
        self.pipeline = pipeline
        self.n_read = n_read
        self.n_write = n_write


class WgpuRuntime:
    """Device, queue and caches of one ``Device("wgpu", i)``; all ops of its tensors go here."""

    def __init__(self, device_id: Device) -> None:
        import wgpu

        self.wgpu = wgpu
        self.device_id = device_id
        self.adapter = adapter_for(device_id)
        features = set(self.adapter.features)
        #: Whether the adapter is a CPU (software) implementation; some kernels pick their
        #: strategy by it.
        self.is_cpu = self.adapter.info["adapter_type"] == "CPU"
        self.has_f16 = "shader-f16" in features
        #: Whether kernels may call subgroup builtins (the CPU adapter's matmul does).
        self.has_subgroups = "subgroup" in features
        limits = dict(self.adapter.limits)
        wanted = {k: limits[k] for k in _WANTED_LIMITS if k in limits}
        self.device = self.adapter.request_device_sync(
            required_features=[f for f in ("shader-f16", "subgroup") if f in features],
            required_limits=wanted)
        self.queue = self.device.queue
        lim = dict(self.device.limits)
        self.max_binding = min(lim["max-storage-buffer-binding-size"], lim["max-buffer-size"])
        self.max_groups = lim["max-compute-workgroups-per-dimension"]
        self.max_shared_bytes = lim["max-compute-workgroup-storage-size"]
        self.offset_align = max(lim.get("min-storage-buffer-offset-alignment", 256), 4)
        #: Storage buffers one kernel may bind (its parameter block included).
        self.max_storage_buffers = int(lim["max-storage-buffers-per-shader-stage"])
        usage = wgpu.BufferUsage
        self.pool = BufferPool(self.device, usage.STORAGE | usage.COPY_SRC | usage.COPY_DST,
                               POOL_CAP_BYTES)
        self._staging: dict[int, list[Any]] = {}
        self._arena = self.device.create_buffer(
            size=ARENA_BYTES, usage=usage.STORAGE | usage.COPY_DST | usage.COPY_SRC)
        self._arena_slab = Slab(self._arena, ARENA_BYTES)
        self._meta = bytearray(ARENA_BYTES)
        self._meta_pos = 0
        self._encoder: Any = None
        self._cpass: Any = None
        self._last_kernel: Kernel | None = None
        self._batch = 0
        self._kernels: dict[Any, Kernel] = {}
        self._layouts: dict[tuple[int, int], tuple[Any, Any]] = {}
        self._bind_groups: dict[tuple[Any, ...], Any] = {}
        self.lock = threading.RLock()
        self.stats = {"dispatches": 0, "submits": 0, "pipeline_hits": 0, "pipeline_misses": 0,
                      "bind_group_hits": 0, "bind_group_misses": 0, "readbacks": 0,
                      "alias_copies": 0}
        #: Random state: the Philox key (seed) and the next unused counter value.
        self.rng_seed = int.from_bytes(os.urandom(8), "little")
        self.rng_counter = 0
        #: Small device-side tables (interpolation taps, pool bins) by their description.
        self.tables: dict[Any, Any] = {}
        #: Elementwise launch plans by (expression, shapes, strides, dtypes).
        self.plans: dict[Any, Any] = {}
        #: The op call being taped for a compiled replay (``burnpy_wgpu.replay``), or None:
        #: it is told of each allocation, dispatch, upload and readback the call makes.
        self.recorder: Any = None

    # ---- memory ---------------------------------------------------------------------------------
    def alloc(self, nbytes: int) -> BufferHandle:
        """A handle on a (recycled) buffer of at least ``nbytes`` for a kernel's output."""
        if nbytes > self.max_binding:
            raise WgpuLimitError(
                f"a tensor of {nbytes} bytes exceeds this adapter's storage binding limit of "
                f"{self.max_binding} bytes")
        slab = self.pool.acquire(nbytes)
        if self.recorder is not None:
            self.recorder.allocated(slab)
        return BufferHandle(slab, self.pool)

    def upload(self, host: np.ndarray) -> BufferHandle:
        """A buffer holding the bytes of the C-contiguous array ``host`` (a small one keeps a
        read-only copy of them: ``Slab.host``)."""
        nbytes = host.nbytes
        if nbytes > self.max_binding:
            raise WgpuLimitError(
                f"a tensor of {nbytes} bytes exceeds this adapter's storage binding limit of "
                f"{self.max_binding} bytes")
        if self.recorder is not None:
            self.recorder.untaped("upload")
        slab = self.pool.acquire(nbytes, for_upload=True)
        if nbytes:
            data: memoryview | bytes = host.data.cast("B")
            if nbytes % 4:
                data = bytes(data) + bytes(4 - nbytes % 4)
            self.queue.write_buffer(slab.buffer, 0, data)
        if nbytes <= HOST_COPY_BYTES:
            copy = host.copy().reshape(-1)  # the caller's array may change after the upload
            copy.flags.writeable = False
            slab.host = copy
        return BufferHandle(slab, self.pool)

    def read(self, slab: Slab, offset: int, nbytes: int) -> memoryview:
        """``nbytes`` of ``slab`` from byte ``offset`` (a multiple of 4), after all queued work,
        as a writable host copy."""
        size = -(-max(nbytes, 4) // 4) * 4
        if self.recorder is not None:
            self.recorder.untaped("readback")
        with self.lock:
            staging = self._take_staging(size)
            self._copy_encoder().copy_buffer_to_buffer(slab.buffer, offset, staging, 0, size)
            self.flush()
            staging.map_sync(self.wgpu.MapMode.READ, 0, size)
            data = staging.read_mapped(0, size)
            staging.unmap()
            self._staging.setdefault(staging.size, []).append(staging)
            self.stats["readbacks"] += 1
        return data[:nbytes]

    def _take_staging(self, size: int) -> Any:
        cls = size_class(size)
        bucket = self._staging.get(cls)
        if bucket:
            return bucket.pop()
        usage = self.wgpu.BufferUsage.MAP_READ | self.wgpu.BufferUsage.COPY_DST
        return self.device.create_buffer(size=cls, usage=usage)

    # ---- pipelines ------------------------------------------------------------------------------
    def kernel(self, key: Any, build: Callable[[], str], n_read: int, n_write: int) -> Kernel:
        """The pipeline for ``key``, compiled from ``build()`` on first use."""
        found = self._kernels.get(key)
        if found is not None:
            self.stats["pipeline_hits"] += 1
            return found
        self.stats["pipeline_misses"] += 1
        source = build()
        _, layout = self._layout(n_read, n_write)
        try:
            module = self.device.create_shader_module(code=source)
            pipeline = self.device.create_compute_pipeline(
                layout=layout, compute={"module": module, "entry_point": "main"})
        except Exception as exc:  # wgpu raises its own validation error types
            raise WgpuError(f"kernel {key!r} failed to compile: {exc}\n{source}") from exc
        found = Kernel(key, pipeline, n_read, n_write)
        self._kernels[key] = found
        return found

    def _layout(self, n_read: int, n_write: int) -> tuple[Any, Any]:
        cached = self._layouts.get((n_read, n_write))
        if cached is not None:
            return cached
        stage = self.wgpu.ShaderStage.COMPUTE
        entries = [{"binding": i, "visibility": stage,
                    "buffer": {"type": "read-only-storage" if i < n_read else "storage"}}
                   for i in range(n_read + n_write)]
        entries.append({"binding": n_read + n_write, "visibility": stage,
                        "buffer": {"type": "read-only-storage", "has_dynamic_offset": True,
                                   "min_binding_size": META_SLOT}})
        group = self.device.create_bind_group_layout(entries=entries)
        layout = self.device.create_pipeline_layout(bind_group_layouts=[group])
        self._layouts[(n_read, n_write)] = (group, layout)
        return group, layout

    # ---- dispatch -------------------------------------------------------------------------------
    def dispatch(self, kernel: Kernel, reads: Sequence[Slab], writes: Sequence[Slab],
                 meta: Sequence[int], groups: tuple[int, int, int]) -> None:
        """Record ``kernel`` over a ``groups`` grid of workgroups with the given buffers and
        parameter words (ints in [-2**31, 2**32), floats already as ``f32_bits``)."""
        if groups[0] == 0 or groups[1] == 0 or groups[2] == 0:
            return
        if max(groups) > self.max_groups:
            raise WgpuLimitError(f"dispatch grid {groups} exceeds {self.max_groups} workgroups "
                                 "per dimension")
        n = len(meta)
        if n * 4 > META_SLOT:
            raise WgpuError(f"kernel {kernel.key!r}: {n} parameter words exceed the "
                            f"{META_SLOT // 4}-word block")
        if self.recorder is not None:
            self.recorder.dispatched(kernel, reads, writes, meta, groups)
        with self.lock:
            if self._meta_pos + META_SLOT > ARENA_BYTES or self._batch >= MAX_BATCH:
                self.flush()
            for w in writes:
                w.host = None  # the upload's bytes are no longer the buffer's
                if any(r.uid == w.uid for r in reads):
                    reads = [self._alias_copy(r) if r.uid == w.uid else r for r in reads]
            offset = self._meta_pos
            packer = _PACKERS.get(n)
            if packer is None:
                packer = _PACKERS[n] = struct.Struct(f"<{n}I")
            try:
                packer.pack_into(self._meta, offset, *meta)
            except struct.error:  # negative words (strides of flipped views, signed scalars)
                packer.pack_into(self._meta, offset, *[w & _U32_MASK for w in meta])
            self._meta_pos = offset + -(-max(n * 4, 4) // self.offset_align) * self.offset_align
            cpass = self._pass()
            if kernel is not self._last_kernel:
                cpass.set_pipeline(kernel.pipeline)
                self._last_kernel = kernel
            cpass.set_bind_group(0, self._bind_group(kernel, reads, writes), [offset])
            cpass.dispatch_workgroups(*groups)
            self._batch += 1
            self.stats["dispatches"] += 1

    def dispatch_taped(self, slabs: Sequence[Slab], blob: bytes,
                       steps: Sequence[tuple[Kernel, Sequence[int], Sequence[int], int,
                                             tuple[int, int, int]]]) -> None:
        """Record dispatches that ``dispatch`` already checked once (an op call's tape,
        ``burnpy_wgpu.replay``) over the buffers ``slabs``: each step is (kernel, read and
        write positions in ``slabs``, its parameter block's offset in ``blob``, grid), with
        ``blob`` the blocks packed and aligned as the arena holds them; no read of a step is
        one of its writes."""
        with self.lock:
            if (self._meta_pos + len(blob) + META_SLOT > ARENA_BYTES
                    or self._batch + len(steps) > MAX_BATCH):
                self.flush()
            base = self._meta_pos
            self._meta[base:base + len(blob)] = blob
            self._meta_pos = base + len(blob)
            cpass = self._pass()
            last = self._last_kernel
            bind_group = self._bind_group
            for kernel, reads, writes, offset, groups in steps:
                read_slabs = [slabs[i] for i in reads]
                write_slabs = [slabs[i] for i in writes]
                for w in write_slabs:
                    w.host = None
                if kernel is not last:
                    cpass.set_pipeline(kernel.pipeline)
                    last = kernel
                cpass.set_bind_group(0, bind_group(kernel, read_slabs, write_slabs),
                                     [base + offset])
                cpass.dispatch_workgroups(*groups)
            self._last_kernel = last
            self._batch += len(steps)
            self.stats["dispatches"] += len(steps)

    def meta_block(self, meta: Sequence[int]) -> bytes:
        """``meta``'s parameter words as ``dispatch`` stores them in the arena, padded to the
        dynamic-offset alignment (for ``dispatch_taped``)."""
        n = len(meta)
        words = struct.pack(f"<{n}I", *[w & _U32_MASK for w in meta])
        return words.ljust(-(-max(n * 4, 4) // self.offset_align) * self.offset_align, b"\0")

    def dispatch_linear(self, kernel: Kernel, reads: Sequence[Slab], writes: Sequence[Slab],
                        meta: Sequence[int], n_groups: int) -> None:
        """Dispatch ``n_groups`` workgroups laid out on a 2-D grid (x up to the per-dimension
        limit); kernels recover the linear id as ``wid.x + wid.y * nwg.x``."""
        if n_groups <= 0:
            return
        x = min(n_groups, self.max_groups)
        self.dispatch(kernel, reads, writes, meta, (x, -(-n_groups // x), 1))

    def _bind_group(self, kernel: Kernel, reads: Sequence[Slab],
                    writes: Sequence[Slab]) -> Any:
        key = (kernel.n_read, kernel.n_write, *[s.uid for s in reads], *[s.uid for s in writes])
        group = self._bind_groups.get(key)
        if group is not None:
            self.stats["bind_group_hits"] += 1
            return group
        self.stats["bind_group_misses"] += 1
        if len(self._bind_groups) >= _BIND_GROUP_CACHE:
            self._bind_groups.clear()
        layout, _ = self._layout(kernel.n_read, kernel.n_write)
        entries = [{"binding": i, "resource": {"buffer": s.buffer, "offset": 0, "size": s.size}}
                   for i, s in enumerate((*reads, *writes))]
        entries.append({"binding": len(entries),
                        "resource": {"buffer": self._arena, "offset": 0, "size": META_SLOT}})
        group = self.device.create_bind_group(layout=layout, entries=entries)
        self._bind_groups[key] = group
        return group

    def _alias_copy(self, slab: Slab) -> Slab:
        """A copy of a buffer that one dispatch would otherwise bind for reading and writing
        (WebGPU forbids that aliasing); the copy is recycled after the batch."""
        copy = self.pool.acquire(slab.size)
        self._copy_encoder().copy_buffer_to_buffer(slab.buffer, 0, copy.buffer, 0, slab.size)
        self.pool.release(copy)
        self.stats["alias_copies"] += 1
        return copy

    def _pass(self) -> Any:
        if self._cpass is None:
            if self._encoder is None:
                self._encoder = self.device.create_command_encoder()
                self.pool.batch_open = True
            self._cpass = self._encoder.begin_compute_pass()
            self._last_kernel = None
        return self._cpass

    def _copy_encoder(self) -> Any:
        if self._cpass is not None:
            self._cpass.end()
            self._cpass = None
        if self._encoder is None:
            self._encoder = self.device.create_command_encoder()
            self.pool.batch_open = True
        return self._encoder

    # ---- submission -----------------------------------------------------------------------------
    def flush(self) -> None:
        """Submit every recorded command as one command buffer."""
        with self.lock:
            if self._encoder is None:
                return
            if self._cpass is not None:
                self._cpass.end()
                self._cpass = None
            if self._meta_pos:
                self.queue.write_buffer(self._arena, 0, self._meta, 0, self._meta_pos)
            self.queue.submit([self._encoder.finish()])
            self._encoder = None
            self._meta_pos = 0
            self._batch = 0
            self.stats["submits"] += 1
            if self.pool.batch_submitted():
                self._bind_groups.clear()

    def sync(self) -> None:
        """Submit the batch and wait until the device has run everything queued."""
        self.read(self._arena_slab, 0, 4)

    def pending_dispatches(self) -> int:
        """Dispatches recorded and not yet submitted."""
        return self._batch


_RUNTIMES: dict[Device, WgpuRuntime] = {}
_RUNTIMES_LOCK = threading.Lock()


def runtime_for(device: Device) -> WgpuRuntime:
    """The runtime of ``device``, created (device requested from its adapter) on first use."""
    rt = _RUNTIMES.get(device)
    if rt is None:
        with _RUNTIMES_LOCK:
            rt = _RUNTIMES.get(device)
            if rt is None:
                rt = _RUNTIMES[device] = WgpuRuntime(device)
    return rt
