"""Quantized weights: memory versus float32, and q_matmul time versus float32 matmul.

Targets (issue 6): int8 and int4 weights 4x and 8x smaller than float32 (scales included,
within 5%); report q_matmul / float matmul on 1024^3 and on 4096x4096 by 4096x1; and the
weight-only linear (float activations times int8 weights, issue 17) against float32 ``linear``
for a decode-sized input (target: int8 per tensor at most 1.0x float32's time).
Run: ``.venv/bin/python benchmarks/quant.py``
"""

from __future__ import annotations

import numpy as np
from _timing import alternate, fmt

import burnpy.nn.functional as F
from burnpy import Tensor
from burnpy.quantization import QuantParam, QuantScheme


def memory() -> None:
    w = Tensor.from_data(np.random.default_rng(0).standard_normal((4096, 4096), np.float32))
    f32 = w.numel() * 4
    print("memory of a 4096x4096 weight (values + scales) versus float32:")
    for label, scheme in [
        ("int8 per-tensor", QuantScheme.int8()),
        ("int8 block 32, f32 scales", QuantScheme.int8(32)),
        ("int8 block 128, f16 scales", QuantScheme.int8(128, param=QuantParam.F16)),
        ("int4 per-tensor", QuantScheme.int4(None)),
        ("int4 block 32, f32 scales", QuantScheme.int4(32)),
        ("int4 block 128, f16 scales", QuantScheme.int4(128, param=QuantParam.F16)),
        ("int4 two-level block 32, bf16", QuantScheme.int4(32, two_level=True,
                                                           param=QuantParam.BF16)),
        ("ternary per-tensor", QuantScheme.ternary()),
    ]:
        q = w.quantize(scheme)
        size = q.primitive.nbytes
        print(f"  {label:<32} {size / 2**20:8.2f} MiB   {f32 / size:5.2f}x smaller")


def speed() -> None:
    rng = np.random.default_rng(1)
    print("q_matmul versus float32 matmul (one BLAS thread, medians):")
    for label, (m, k, n) in [("1024x1024 @ 1024x1024", (1024, 1024, 1024)),
                             ("4096x4096 @ 4096x1", (4096, 4096, 1))]:
        a = Tensor.from_data(rng.standard_normal((m, k), np.float32))
        b = Tensor.from_data(rng.standard_normal((n, k), np.float32))
        for scheme in (QuantScheme.int8(), QuantScheme.int8(32), QuantScheme.int4(32)):
            qa, qb = a.quantize(scheme), b.quantize(scheme)
            qbt, bt = qb.T, b.T
            med = alternate({"float": lambda a=a, bt=bt: a @ bt,
                             "quant": lambda qa=qa, qbt=qbt: qa @ qbt}, 2, 5)
            print(f"  {label:<24} {scheme!s:<52} float {fmt(med['float'])}  "
                  f"q {fmt(med['quant'])}  q/float {med['quant'] / med['float']:5.2f}")


def weight_only() -> None:
    rng = np.random.default_rng(2)
    print("weight-only linear, float32 x [1, k] times int8 W [n, k], versus float32 linear:")
    for n, k in ((4096, 4096), (1024, 1024), (256, 64)):
        w = Tensor.from_data(rng.standard_normal((n, k), np.float32))
        x = Tensor.from_data(rng.standard_normal((1, k), np.float32))
        for scheme in (QuantScheme.int8(), QuantScheme.int8(32)):
            q = w.quantize(scheme)
            med = alternate({"float": lambda x=x, w=w: F.linear(x, w),
                             "quant": lambda x=x, q=q: F.linear(x, q)}, 5 if n > 1024 else 50, 7)
            print(f"  {n}x{k:<6} {scheme!s:<52} float {fmt(med['float'])}  "
                  f"int8 {fmt(med['quant'])}  int8/float {med['quant'] / med['float']:5.2f}")


if __name__ == "__main__":
    memory()
    speed()
    weight_only()
