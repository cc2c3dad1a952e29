"""The fusers follow torch 2.13's rule for a float16 tensor with a Python scalar, as the unfused
ops do (``HALF_SCALAR_ROUNDED``): mul and div keep the scalar in float32; add, sub, remainder,
pow and the comparisons round it to float16 (through float32) first; all compute in float32 and
round once. The CUDA fuser's generated kernels are built for the host with g++ (``_Float16``
standing in for ``__half``, with the same round-to-nearest-even conversions) and the WGSL
fuser runs on the default (software) adapter; both are checked bit for bit against CpuBackend's
unfused ops and torch."""

from __future__ import annotations

import ctypes
import re
import shutil
import subprocess
from collections.abc import Callable
from pathlib import Path
from typing import Any

import numpy as np
import pytest
import torch

from burnpy import Tensor
from burnpy.backend.dtype import DType
from burnpy.ir import FusedGroup, FusedOp, Ref, TensorDesc
from burnpy.ir.elementwise import BY_NAME, HALF_SCALAR_ROUNDED
from burnpy_cpu import CpuBackend
from burnpy_cpu.array_ops.float_ops import ArrayFloatOps
from burnpy_cuda.fuser import cuda_source

F16, BOOL = DType.float16, DType.bool_
N = 4096


def _x() -> np.ndarray:
    """Float16 values in [-4, 4], and each test scalar's float16 rounding and its neighbours
    (where a comparison with the rounded scalar and one with the float32 scalar differ)."""
    rng = np.random.default_rng(7)
    x = rng.uniform(-4, 4, N).astype(np.float16)
    near = np.array([0.3, 0.1, -2.7, 1.3, 2.7, -0.1], dtype=np.float16)
    x[:18] = np.concatenate([near, np.nextafter(near, np.float16(np.inf)),
                             np.nextafter(near, np.float16(-np.inf))])
    return x


def _bits(a: np.ndarray) -> np.ndarray:
    """Float16 bits, zeros as +0: remainder's zero has the sign of the dividend in torch and
    the fused kernels (C's fmod), the divisor's in NumPy (an unfused difference of its own)."""
    if a.dtype != np.float16:
        return a
    return np.where(a == 0, np.float16(0), a).view(np.uint16)


# --- the rule ---------------------------------------------------------------------------------

def test_the_rule_is_torch_and_the_numpy_path_reads_it() -> None:
    torch_rounds = {"add", "sub", "remainder", "pow", "equal", "not_equal", "greater",
                    "greater_equal", "lower", "lower_equal"}
    assert torch_rounds == HALF_SCALAR_ROUNDED and BY_NAME.keys() >= {*torch_rounds, "mul"}
    x = _x()
    add = ArrayFloatOps.float_add_scalar(x, 0.1), (torch.from_numpy(x) + 0.1).numpy()
    mul = ArrayFloatOps.float_mul_scalar(x, 0.1), (torch.from_numpy(x) * 0.1).numpy()
    for got, want in (add, mul):
        np.testing.assert_array_equal(_bits(got), _bits(want))


def test_a_group_rounds_only_its_half_scalars_read_by_rounding_ops() -> None:
    group = _arith_group()
    assert group.rounded_scalars() == {1, 2, 4, 5}  # not the mul's and the div's
    f32 = group._replace(inputs=(TensorDesc((N,), DType.float32),),
                         scalars=(DType.float32,) * 6,
                         ops=tuple(op._replace(dtype=DType.float32) for op in group.ops))
    assert f32.rounded_scalars() == frozenset()
    assert _compare_group().rounded_scalars() == set(range(6))


# --- the groups: x*0.3 + 0.1 - 2.7; x / 0.3 % 1.3; |x| ** 1.3; the six comparisons ----------

ARITH_SCALARS = (0.3, 0.1, 2.7, 0.3, 1.3, 1.3)
COMPARE_SCALARS = (0.3, 0.1, -2.7, 1.3, 2.7, -0.1)
COMPARISONS = ("equal", "not_equal", "greater", "greater_equal", "lower", "lower_equal")


def _arith_group() -> FusedGroup:
    s, t = (lambda i: Ref("scalar", i)), (lambda j: Ref("local", j))
    ops = (FusedOp("mul", (Ref("input", 0), s(0)), F16),
           FusedOp("add", (t(0), s(1)), F16),
           FusedOp("sub", (t(1), s(2)), F16),
           FusedOp("div", (Ref("input", 0), s(3)), F16),
           FusedOp("remainder", (t(3), s(4)), F16),
           FusedOp("abs", (Ref("input", 0),), F16),
           FusedOp("pow", (t(5), s(5)), F16))
    return FusedGroup((N,), (TensorDesc((N,), F16),), (F16,) * 6, ops, (2, 4, 6), None)


def _compare_group() -> FusedGroup:
    ops = tuple(FusedOp(name, (Ref("input", 0), Ref("scalar", i)), BOOL)
                for i, name in enumerate(COMPARISONS))
    return FusedGroup((N,), (TensorDesc((N,), F16),), (F16,) * 6, ops, tuple(range(6)), None)


def _unfused_arith(backend: type, x: np.ndarray) -> list[np.ndarray]:
    t = Tensor.from_data(x, backend=backend)
    a, b, c, d, e, f = ARITH_SCALARS
    return [(t * a + b - c).to_numpy(), (t / d).remainder(e).to_numpy(),
            t.abs().pow(f).to_numpy()]


def _unfused_compare(backend: type, x: np.ndarray) -> list[np.ndarray]:
    """The comparisons of ``x * 1.0`` (exactly x; the product makes each a fused group of
    two ops, where a lone op runs unfused)."""
    t = Tensor.from_data(x, backend=backend)
    return [getattr(t * 1.0, name)(v).to_numpy()
            for name, v in zip(COMPARISONS, COMPARE_SCALARS, strict=True)]


def _torch_arith(x: np.ndarray) -> list[np.ndarray]:
    t = torch.from_numpy(x)
    a, b, c, d, e, f = ARITH_SCALARS
    return [(t * a + b - c).numpy(), torch.remainder(t / d, e).numpy(),
            torch.pow(t.abs(), f).numpy()]


def _torch_compare(x: np.ndarray) -> list[np.ndarray]:
    t = torch.from_numpy(x)
    return [getattr(torch, {"equal": "eq", "not_equal": "ne", "greater": "gt",
                            "greater_equal": "ge", "lower": "lt", "lower_equal": "le"}[name])(
        t, v).numpy() for name, v in zip(COMPARISONS, COMPARE_SCALARS, strict=True)]


def _float32_scalars_differ(x: np.ndarray) -> None:
    """The test can fail: keeping every scalar in float32 (the fusers' old rule) changes
    some of these results."""
    w = x.astype(np.float32)
    sub = ((((w * np.float32(0.3)).astype(np.float16).astype(np.float32) + np.float32(0.1))
            .astype(np.float16).astype(np.float32) - np.float32(2.7)).astype(np.float16))
    assert (_bits(sub) != _bits(_torch_arith(x)[0])).any()
    assert (w == np.float32(0.3)).sum() < (x == np.float16(0.3)).sum()


def _check(got: list[np.ndarray], x: np.ndarray, unfused: list[np.ndarray],
           oracle: list[np.ndarray]) -> None:
    for k, (g, u, o) in enumerate(zip(got, unfused, oracle, strict=True)):
        np.testing.assert_array_equal(_bits(u), _bits(o), err_msg=f"unfused output {k}")
        np.testing.assert_array_equal(_bits(g), _bits(o), err_msg=f"fused output {k}")


# --- the CUDA fuser's kernels, built for the host -----------------------------------------------

HOST_PRELUDE = """#include <math.h>
#define __device__
#define __forceinline__ inline
typedef _Float16 __half;
static inline float __half2float(__half h) { return (float)h; }
static inline __half __float2half(float f) { return (__half)f; }
"""


def _host_build(group: FusedGroup, path: Path) -> Callable[..., None]:
    """The group's ``elem`` (rank 1) looped over its elements on the host: ``run(inputs,
    outputs, scalars)``."""
    source = cuda_source(group, 1)
    body = source[:source.index('extern "C"')].replace("#include <cuda_fp16.h>", "")
    params = re.search(r"elem\((.*?)\) \{", body)
    assert params is not None
    names = [p.split()[-1] for p in params.group(1).split(", ")]
    outer = ", ".join(p for p in params.group(1).split(", ") if p.split()[-1] != "lin")
    wrapper = (f'extern "C" void host_run(long long n, {outer}) {{\n'
               f"  for (long long lin = 0; lin < n; ++lin) elem({', '.join(names)});\n}}\n")
    path.write_text(HOST_PRELUDE + body + wrapper)
    done = subprocess.run(["g++", "-std=c++17", "-O1", "-ffp-contract=off", "-shared", "-fPIC",
                           str(path), "-o", str(path.with_suffix(".so"))],
                          capture_output=True, text=True)
    if done.returncode and "_Float16" in done.stderr:
        pytest.skip("this g++ has no _Float16")
    assert done.returncode == 0, done.stderr
    fn = ctypes.CDLL(str(path.with_suffix(".so"))).host_run

    def run(inputs: list[np.ndarray], outputs: list[np.ndarray], scalars: tuple[float, ...]
            ) -> None:
        fn(ctypes.c_longlong(N), *[ctypes.c_void_p(a.ctypes.data) for a in inputs + outputs],
           *[ctypes.c_double(s) for s in scalars],
           *[ctypes.c_longlong(1) for _ in inputs])  # strides: contiguous
    return run


needs_gxx = pytest.mark.skipif(shutil.which("g++") is None, reason="g++ not found")


@needs_gxx
def test_cuda_fuser_arithmetic_with_half_scalars_is_torch_bit_for_bit(tmp_path: Path) -> None:
    x = _x()
    _float32_scalars_differ(x)
    outs = [np.empty(N, np.float16) for _ in range(3)]
    _host_build(_arith_group(), tmp_path / "arith.cpp")([x], outs, ARITH_SCALARS)
    _check(outs, x, _unfused_arith(CpuBackend, x), _torch_arith(x))


@needs_gxx
def test_cuda_fuser_comparisons_with_half_scalars_are_torch_bit_for_bit(tmp_path: Path) -> None:
    x = _x()
    outs = [np.empty(N, np.bool_) for _ in range(6)]
    _host_build(_compare_group(), tmp_path / "compare.cpp")([x], outs, COMPARE_SCALARS)
    _check(outs, x, _unfused_compare(CpuBackend, x), _torch_compare(x))


def test_cuda_source_rounds_exactly_the_rounding_ops_scalars() -> None:
    source = cuda_source(_arith_group(), 1)
    assert "bp_round_half(((float)s1))" in source and "bp_round_half(((float)s2))" in source
    assert "bp_round_half(((float)s0))" not in source and "((float)s0)" in source


# --- the WGSL fuser on the default adapter -------------------------------------------------------

def _wgpu() -> tuple[type, Any]:
    from burnpy.backend.device import Device
    from burnpy.fusion import Fusion
    from burnpy_wgpu import WgpuBackend

    if not WgpuBackend.supports_dtype(Device("wgpu", 0), F16):
        pytest.skip("this adapter has no shader-f16")
    return WgpuBackend, Fusion(WgpuBackend)


def test_wgsl_fuser_with_half_scalars_is_torch_bit_for_bit() -> None:
    plain, fused = _wgpu()
    x = _x()
    for unfused, oracle in [(_unfused_arith, _torch_arith), (_unfused_compare, _torch_compare)]:
        fused.stats.reset()
        got = unfused(fused, x)
        assert fused.stats.kernels >= 1 and fused.stats.fallback_ops == 0, fused.stats
        _check(got, x, unfused(CpuBackend, x), oracle(x))
        _check(unfused(plain, x), x, unfused(CpuBackend, x), oracle(x))  # WebGPU's own ops


def test_wgpu_lone_scalar_ops_on_half_are_torch_bit_for_bit() -> None:
    """A lone op runs WebGPU's own kernel, which reads the same rule."""
    plain, _ = _wgpu()
    x = _x()
    t, ref = Tensor.from_data(x, backend=plain), torch.from_numpy(x)
    got = [(t + 0.1).to_numpy(), (t - 2.7).to_numpy(), (t * 0.3).to_numpy(),
           (t / 0.3).to_numpy(), t.equal(0.3).to_numpy(), t.lower_equal(-2.7).to_numpy()]
    want = [(ref + 0.1).numpy(), (ref - 2.7).numpy(), (ref * 0.3).numpy(), (ref / 0.3).numpy(),
            (ref == 0.3).numpy(), (ref <= -2.7).numpy()]
    _check(got, x, want, want)


def test_wgsl_source_rounds_exactly_the_rounding_ops_scalars() -> None:
    from burnpy_wgpu.fuser import _scalar_values

    values = _scalar_values(_arith_group(), 10)
    assert [v for v, _ in values.values()] == [
        "mf(10u)", "f32(f16(mf(11u)))", "f32(f16(mf(12u)))", "mf(13u)", "f32(f16(mf(14u)))",
        "f32(f16(mf(15u)))"]


@pytest.mark.skipif(shutil.which("nvcc") is None, reason="nvcc (the CUDA toolkit) not found")
def test_cuda_sources_with_rounded_scalars_compile_with_nvcc(tmp_path: Path) -> None:
    for name, group in (("arith", _arith_group()), ("compare", _compare_group())):
        path = tmp_path / f"{name}.cu"
        path.write_text(cuda_source(group, 1))
        done = subprocess.run(["nvcc", "-arch=sm_90", "-std=c++14", "--ptx", str(path), "-o",
                               str(path.with_suffix(".ptx"))], capture_output=True, text=True)
        assert done.returncode == 0 and not done.stdout.strip(), done.stdout + done.stderr
        assert ".entry burnpy_fused(" in path.with_suffix(".ptx").read_text()
