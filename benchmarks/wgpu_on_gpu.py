"""Benchmark: WebGPU on a real GPU: ``WgpuBackend``'s float32 matmul at 4096 against torch CUDA on
the same GPU (TFLOP/s), and the dispatch cost per op (``benchmarks/wgpu_dispatch.py``'s chain).

Run where wgpu finds the GPU's native adapter (``BURNPY_WGPU_BACKEND=Vulkan``) and torch sees
it: ``.venv/bin/python benchmarks/wgpu_on_gpu.py``. Results are checked against torch's first;
alternating rounds, each timing waiting for its device; medians.
"""

from __future__ import annotations

import numpy as np
import torch
from cuda_timing import alternate_synced, fmt, record
from wgpu_dispatch import measure

from burnpy.backend.data import TensorData
from burnpy_wgpu import WgpuBackend, list_adapters

B = WgpuBackend
N = 4096
NUMBER = 3
ROUNDS = 5


def main() -> None:
    if not torch.cuda.is_available():
        raise SystemExit(f"wgpu_on_gpu: not run, torch {torch.__version__} sees no CUDA GPU")
    info = list_adapters()[0]
    if info.adapter_type == "CPU":
        raise SystemExit(f"wgpu_on_gpu: not run, the WebGPU adapter is a CPU one ({info.name}, "
                         f"{info.backend_type})")
    device = B.default_device()
    rng = np.random.default_rng(0)
    host = (rng.standard_normal((2, N, N)) / np.sqrt(N)).astype(np.float32)
    a, b = (B.float_from_data(TensorData(v), device) for v in host)
    ta, tb = (torch.from_numpy(v).cuda() for v in host)
    ours = B.float_into_data(B.float_matmul(a, b)).array
    np.testing.assert_allclose(ours, (ta @ tb).cpu().numpy(), rtol=1e-3, atol=1e-3)
    med = alternate_synced({
        "WgpuBackend": (lambda: B.float_matmul(a, b), lambda: B.sync(device)),
        "torch CUDA": (lambda: ta @ tb, torch.cuda.synchronize),
    }, NUMBER, ROUNDS)
    tflops = {name: 2 * N**3 / seconds / 1e12 for name, seconds in med.items()}
    ratio = tflops["WgpuBackend"] / tflops["torch CUDA"]
    print(f"adapter: {info.name} ({info.backend_type}, {info.adapter_type}); torch on "
          f"{torch.cuda.get_device_name()}")
    print(f"  matmul {N} float32: WebGPU {tflops['WgpuBackend']:6.1f} TFLOP/s, torch CUDA "
          f"{tflops['torch CUDA']:6.1f} TFLOP/s, ratio {ratio:.2f}")
    dispatch = measure()
    for name, seconds in dispatch.items():
        print(f"  {name:<30}{fmt(seconds):>12} per op")
    record("wgpu_on_gpu", adapter=f"{info.name} ({info.backend_type})", n=N,
           wgpu_tflops=tflops["WgpuBackend"], torch_tflops=tflops["torch CUDA"], ratio=ratio,
           target=">= 0.5", dispatch_seconds_per_op=dispatch)


if __name__ == "__main__":
    main()
