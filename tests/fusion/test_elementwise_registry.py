"""The elementwise registry (``burnpy.ir.elementwise``) is the one table of elementwise ops:
every name it gives is a protocol op, every fusable op has each fuser's expression, the fusers
and WebGPU's own ops compute with those expressions, and ``logaddexp2``, added through it
alone, fuses on every fuser with torch's values at infinities and NaN."""

from __future__ import annotations

import inspect
from collections.abc import Iterator

import numpy as np
import pytest
import torch

from burnpy import Fusion, Tensor
from burnpy.backend.base import Backend
from burnpy.backend.dtype import DType
from burnpy.ir import (
    ELEMENTWISE,
    FUSABLE,
    OPS,
    ElementwiseOp,
    FusedGroup,
    FusedOp,
    Ref,
    TensorDesc,
)
from burnpy.testing import backends_available
from burnpy_cpu import CpuBackend
from burnpy_cpu.fuser import FUSER, CpuFuser
from burnpy_cuda.fuser import CudaFuser, cuda_source
from burnpy_wgpu import WgpuBackend
from burnpy_wgpu.fuser import WgslFuser
from burnpy_wgpu.kernels.wgsl_math import calls
from burnpy_wgpu.ops.float_ops import WgpuFloatOps

F32, F64, I32, BOOL = DType.float32, DType.float64, DType.int32, DType.bool_
#: The ops each fuser writes itself, from the IR's meaning: no expression to look up.
STRUCTURAL = ("where", "copy", "cast")


def test_every_name_in_the_registry_is_a_protocol_op() -> None:
    names = [d.name for op in OPS for d in op.derivatives] + list(FUSABLE)
    assert [n for n in names if not hasattr(Backend, n)] == []
    assert len({op.name for op in OPS}) == len(OPS)


@pytest.mark.parametrize("op", [op for op in ELEMENTWISE.values() if op.kind not in STRUCTURAL],
                         ids=lambda op: op.name)
def test_every_fusable_op_has_each_fusers_expression(op: ElementwiseOp) -> None:
    for forms in (op.numba, op.cuda, op.wgsl):
        assert forms is not None and (forms.float is not None or forms.int is not None)


def test_each_fuser_accepts_what_the_registry_gives_it_an_expression_for() -> None:
    cpu, cuda, wgsl = CpuFuser(declined=frozenset()), CudaFuser(), WgslFuser()
    for op in ELEMENTWISE.values():
        if op.kind != "arithmetic":
            continue
        assert op.numba is not None and op.cuda is not None and op.wgsl is not None
        operands = (F32,) * op.arity
        assert cpu.accepts(op.name, (*operands, F32)) == (op.numba.float is not None), op.name
        assert cuda.accepts(op.name, (*operands, F32)) == (op.cuda.float is not None), op.name
        assert wgsl.accepts(op.name, (*operands, F32)) == (op.wgsl.float is not None), op.name
        ints = (I32,) * op.arity
        assert wgsl.accepts(op.name, (*ints, I32)) == (op.wgsl.int is not None), op.name


def _closure_expression(op: staticmethod) -> str:
    found: str = inspect.getclosurevars(op.__func__).nonlocals["expr"]
    return found


def test_webgpus_own_ops_compute_with_the_registry_expressions() -> None:
    """WgpuBackend's unfused ``float_{name}`` of a registry op is its fuser expression (the
    scalar forms with the number as ``b``), not a second copy of it."""
    checked = 0
    for op in OPS:
        if op.wgsl is None or op.wgsl.float is None or op.kind != "arithmetic":
            continue
        own = vars(WgpuFloatOps).get(f"float_{op.name}")
        if own is not None and op.name not in ("clamp",):
            assert _closure_expression(own) == op.wgsl.float, op.name
            checked += 1
        scalar = vars(WgpuFloatOps).get(f"float_{op.name}_scalar")
        if scalar is not None:
            assert _closure_expression(scalar) == op.wgsl.float.replace(" b", " mf(1u)"), op.name
    assert checked >= 30
    assert _closure_expression(vars(WgpuFloatOps)["float_logaddexp2"]) == \
        ELEMENTWISE["logaddexp2"].wgsl.float  # type: ignore[union-attr]
    assert calls(ELEMENTWISE["logaddexp2"].wgsl.float) == ("log1p_acc",)  # type: ignore[union-attr]


# ---- logaddexp2, fused ---------------------------------------------------------------------------
#: Pairs whose results IEEE fixes: equal infinities, opposite ones, NaN, a large gap, equal sides.
_SPECIAL = np.array([0.0, -0.0, 1.0, -3.5, 40.0, np.inf, -np.inf, np.nan, -100.0, 2.0])


def _pairs(dtype: str, rows: int = 2) -> tuple[np.ndarray, np.ndarray]:
    x, y = np.meshgrid(_SPECIAL, _SPECIAL)
    return (np.tile(x, (rows, 1)).astype(dtype), np.tile(y, (rows, 1)).astype(dtype))


def _expected(x: np.ndarray, y: np.ndarray) -> np.ndarray:
    return (torch.logaddexp2(torch.from_numpy(x), torch.from_numpy(y)) * 2.0).numpy()


def _fused_chain(backend: type, x: np.ndarray, y: np.ndarray) -> np.ndarray:
    """``logaddexp2`` between two other ops, so that a group has an unwritten local."""
    xt, yt = Tensor.from_data(x, backend=backend), Tensor.from_data(y, backend=backend)
    out: np.ndarray = ((xt * 1.0).logaddexp2(yt) * 2.0).to_numpy()
    return out


@pytest.fixture
def cpu_fuses_everything() -> Iterator[None]:
    fused = Fusion(CpuBackend)
    before = FUSER.min_elements, FUSER.declined
    FUSER.min_elements, FUSER.declined = 8, frozenset()
    fused.flush()
    fused.stats.reset()
    yield
    FUSER.min_elements, FUSER.declined = before


@pytest.mark.usefixtures("cpu_fuses_everything")
@pytest.mark.parametrize("dtype", ["float32", "float64"])
def test_logaddexp2_fuses_on_the_cpu_with_torchs_values(dtype: str) -> None:
    fused = Fusion(CpuBackend)
    x, y = _pairs(dtype)
    got = _fused_chain(fused, x, y)
    assert (fused.stats.kernels, fused.stats.fallback_ops) == (1, 0), fused.stats
    np.testing.assert_allclose(got, _expected(x, y), rtol=1e-6, equal_nan=True)


@pytest.mark.skipif(WgpuBackend not in backends_available(), reason="no WebGPU adapter here")
def test_logaddexp2_fuses_on_webgpu_with_torchs_values() -> None:
    fused = Fusion(WgpuBackend)
    x, y = _pairs("float32", rows=30)
    fused.stats.reset()
    got = _fused_chain(fused, x, y)
    assert fused.stats.kernels == 1 and fused.stats.fallback_ops == 0, fused.stats
    np.testing.assert_allclose(got, _expected(x, y), rtol=2e-6, equal_nan=True)
    plain = _fused_chain(WgpuBackend, x, y)
    np.testing.assert_allclose(plain, got, rtol=2e-6, equal_nan=True)


def test_logaddexp2_is_written_into_the_cuda_kernel() -> None:
    shape = (10, 10)
    ops = (FusedOp("mul", (Ref("input", 0), Ref("scalar", 0)), F32),
           FusedOp("logaddexp2", (Ref("local", 0), Ref("input", 1)), F32))
    group = FusedGroup(shape, (TensorDesc(shape, F32), TensorDesc(shape, F32)), (F32,), ops,
                       (1,), None)
    assert CudaFuser().accepts("logaddexp2", (F32, F32, F32))
    assert not CudaFuser().accepts("logaddexp2", (I32, I32, I32))
    source = cuda_source(group, 2)
    assert "log1p(exp2(-fabs((t0) - (v1))))" in source, source
