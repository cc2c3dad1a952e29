"""The CUDA C fuser of ``CudaBackend``: generated kernels compile with nvcc (wherever the CUDA
toolkit is installed), and where CuPy sees a GPU, fused groups under ``Fusion(CudaBackend)``
give ``CudaBackend``'s values in one launch."""

from __future__ import annotations

import shutil
import subprocess
from pathlib import Path

import numpy as np
import pytest

from burnpy import Tensor
from burnpy.backend.dtype import DType
from burnpy.fusion import Fusion
from burnpy.ir import FusedGroup, FusedOp, Reduction, Ref, TensorDesc
from burnpy_cuda import CudaBackend, cuda_available
from burnpy_cuda.fuser import CudaFuser, cuda_source, kind_of

F32, F16, F64, I64, BOOL = DType.float32, DType.float16, DType.float64, DType.int64, DType.bool_


def _chain(dtype: DType, reduction: Reduction | None, shape: tuple[int, ...] = (64, 48)
           ) -> FusedGroup:
    """x + b (broadcast), * scalar, exp, > x, where, erf, cast; optionally closed."""
    ops = (FusedOp("add", (Ref("input", 0), Ref("input", 1)), dtype),
           FusedOp("mul", (Ref("local", 0), Ref("scalar", 0)), dtype),
           FusedOp("exp", (Ref("local", 1),), dtype),
           FusedOp("greater", (Ref("local", 2), Ref("input", 0)), BOOL),
           FusedOp("where", (Ref("local", 3), Ref("local", 2), Ref("input", 0)), dtype),
           FusedOp("erf", (Ref("local", 4),), dtype),
           FusedOp("cast", (Ref("local", 5),), I64))
    return FusedGroup(shape, (TensorDesc(shape, dtype), TensorDesc(shape[-1:], dtype)),
                      (dtype,), ops, (3, 5, 6), reduction)


def _int_chain() -> FusedGroup:
    ops = (FusedOp("div", (Ref("input", 0), Ref("scalar", 0)), I64),
           FusedOp("remainder", (Ref("local", 0), Ref("scalar", 1)), I64),
           FusedOp("pow", (Ref("local", 1), Ref("scalar", 1)), I64),
           FusedOp("clamp", (Ref("local", 2), Ref("scalar", 0), Ref("scalar", 1)), I64),
           FusedOp("equal", (Ref("local", 3), Ref("scalar", 0)), BOOL),
           FusedOp("not", (Ref("local", 4),), BOOL))
    return FusedGroup((100,), (TensorDesc((100,), I64),), (I64, I64), ops, (5,),
                      Reduction("max", Ref("local", 3), None, (), I64))


GROUPS = {
    "map_f32": (_chain(F32, None), 2),
    "map_f16": (_chain(F16, None), 2),
    "map_f64_contiguous": (_chain(F64, None), 0),
    "sum_rows_f32": (_chain(F32, Reduction("sum", Ref("local", 5), 1, (64, 1), F32),
                            (512, 48)), 2),
    "mean_tree_f16": (_chain(F16, Reduction("mean", Ref("local", 5), None, (), F16)), 2),
    "max_dim0_f64": (_chain(F64, Reduction("max", Ref("local", 4), 0, (1, 48), F64)), 2),
    "int_chain_max": (_int_chain(), 1),
}


def test_launch_kinds_follow_the_reduction() -> None:
    assert kind_of(GROUPS["map_f32"][0])[0] == "map"
    assert kind_of(GROUPS["sum_rows_f32"][0])[:2] == ("rows", 512)
    assert kind_of(GROUPS["mean_tree_f16"][0])[:3] == ("tree", 1, 64 * 48)
    assert kind_of(GROUPS["max_dim0_f64"][0])[:4] == ("tree", 48, 64, 48)


def test_fuser_accepts_by_dtype() -> None:
    fuser = CudaFuser()
    assert fuser.accepts("exp", (F64, F64)) and fuser.accepts("div", (I64, I64, I64))
    assert not fuser.accepts("exp", (I64, I64))
    assert not fuser.accepts("add", (DType.bfloat16, DType.bfloat16, DType.bfloat16))
    assert not fuser.accepts("sum", (BOOL, BOOL))


@pytest.mark.skipif(shutil.which("nvcc") is None, reason="nvcc (the CUDA toolkit) not found")
def test_generated_kernels_compile_with_nvcc(tmp_path: Path) -> None:
    jobs = []
    for name, (group, rank) in GROUPS.items():
        path = tmp_path / f"{name}.cu"
        path.write_text(cuda_source(group, rank))
        cmd = ["nvcc", "-arch=sm_90", "-std=c++14", "--ptx", str(path), "-o",
               str(path.with_suffix(".ptx"))]
        jobs.append((name, subprocess.Popen(cmd, stdout=subprocess.PIPE,
                                            stderr=subprocess.STDOUT, text=True)))
    outputs = {name: proc.communicate()[0] for name, proc in jobs}
    failures = {name: out for name, out in outputs.items() if out.strip()}
    assert not failures, failures
    for name in GROUPS:
        assert ".entry burnpy_fused(" in (tmp_path / f"{name}.ptx").read_text()


needs_gpu = pytest.mark.skipif(not cuda_available(), reason="no CuPy with a CUDA GPU here")


@needs_gpu
@pytest.mark.parametrize("dtype", ["float32", "float16", "float64"])
def test_fused_chains_on_the_gpu_match_cuda_backend(dtype: str) -> None:
    fused = Fusion(CudaBackend)
    rng = np.random.default_rng(0)
    x = rng.uniform(-1, 1, (300, 33)).astype(dtype)
    b = rng.uniform(-1, 1, 33).astype(dtype)

    def run(backend: type) -> list[np.ndarray]:
        xt, bt = Tensor.from_data(x, backend=backend), Tensor.from_data(b, backend=backend)
        y = ((xt + bt) * 0.5).exp()
        y = (y > xt).float().to(dtype=y.dtype) * y - xt.tanh()
        return [y.to_numpy().astype(np.float64), y.sum(dim=1).to_numpy().astype(np.float64),
                ((y * y).mean()).to_numpy().astype(np.float64)]

    fused.stats.reset()
    got = run(fused)
    assert fused.stats.kernels >= 2
    tol = 2e-3 if dtype == "float16" else 1e-5
    for g, w in zip(got, run(CudaBackend), strict=True):
        np.testing.assert_allclose(g, w, rtol=tol, atol=tol)


@needs_gpu
def test_a_ten_op_chain_is_one_fused_kernel() -> None:
    fused = Fusion(CudaBackend)
    x = Tensor.from_data(np.linspace(-1, 1, 4096, dtype=np.float32), backend=fused)
    fused.stats.reset()
    y = ((((x + 1.0) * 2.0).exp() - 1.0).tanh() * x).abs() + 0.5
    got = (y.sqrt() - 0.25).neg().to_numpy()
    assert fused.stats.kernels == 1 and fused.stats.fallback_ops == 0
    v = np.linspace(-1, 1, 4096, dtype=np.float32)
    want = -(np.sqrt(np.abs(np.tanh(np.exp((v + 1) * 2) - 1) * v) + 0.5) - 0.25)
    np.testing.assert_allclose(got, want, rtol=1e-5, atol=1e-6)
