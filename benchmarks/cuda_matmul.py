"""Benchmark: matmul throughput (TFLOP/s) at 8192 x 8192, burnpy CudaBackend vs torch CUDA.

float32 (no TF32 on either side: CuPy's default, and torch's for matmul), float16 and bfloat16
(cuBLAS with float32 accumulation on both). burnpy goes through the Tensor layer (``a @ b``); the
results are checked against torch's first. Alternating rounds, medians, each timing waiting
for the device. Run: ``.venv/bin/python benchmarks/cuda_matmul.py``.
"""

from __future__ import annotations

import numpy as np
import torch
from cuda_timing import alternate_synced, record, require_gpu

from burnpy import DType, Tensor
from burnpy_cuda import CudaBackend

N = 8192
NUMBER = 5
ROUNDS = 7


def main() -> None:
    require_gpu("cuda_matmul")
    device = CudaBackend.default_device()
    rng = np.random.default_rng(0)
    print(f"matmul {N} x {N} @ {N} x {N} on {torch.cuda.get_device_name()}, "
          f"{NUMBER} per sample, median of {ROUNDS}")
    for dtype, rtol in (("float32", 1e-4), ("float16", 2e-2), ("bfloat16", 5e-2)):
        if not CudaBackend.supports_dtype(device, DType.of(dtype)):
            print(f"  {dtype}: not run, CudaBackend does not store it")
            record("cuda_matmul", dtype=dtype, status="CudaBackend does not store it")
            continue
        host = (rng.standard_normal((2, N, N)) / np.sqrt(N)).astype(np.float32)
        a, b = (Tensor.from_data(v, backend=CudaBackend).to(dtype) for v in host)
        ta, tb = (torch.from_numpy(v).cuda().to(getattr(torch, dtype)) for v in host)
        ours, theirs = (a @ b).to_numpy(), (ta @ tb).float().cpu().numpy()
        np.testing.assert_allclose(ours.astype(np.float32), theirs,
                                   rtol=rtol, atol=rtol)
        med = alternate_synced({
            "burnpy": (lambda a=a, b=b: a @ b, lambda: CudaBackend.sync(device)),
            "torch": (lambda ta=ta, tb=tb: ta @ tb, torch.cuda.synchronize),
        }, NUMBER, ROUNDS)
        tflops = {name: 2 * N**3 / seconds / 1e12 for name, seconds in med.items()}
        print(f"  {dtype}: burnpy {tflops['burnpy']:7.1f} TFLOP/s, torch "
              f"{tflops['torch']:7.1f} TFLOP/s, burnpy / torch "
              f"{tflops['burnpy'] / tflops['torch']:.2f}")
        record("cuda_matmul", dtype=dtype, n=N, burnpy_tflops=tflops["burnpy"],
               torch_tflops=tflops["torch"], ratio=tflops["burnpy"] / tflops["torch"],
               target=">= 0.9")
        del a, b, ta, tb


if __name__ == "__main__":
    main()
