"""The CUDA backend's fused kernels, checked without a GPU.

* Importing the kernel modules loads no CuPy, and building a kernel without one says why.
* ``CudaKernelOps`` sends float16/32/64 to the kernels with the right arguments and
  everything else to the shared ops (on a NumPy stand-in whose kernel builders record; layer
  norm's launch helpers compute their results with CpuBackend, so the host-side reshapes and
  column sums around them are checked too).
* Every CUDA C source compiles with nvcc for each dtype (where nvcc is installed).
* The elementwise bodies, and the row kernels' per-row logic, compiled for the host (g++,
  one thread per block, the host's libm) match CpuBackend; Adam bit for bit.

What needs a GPU (CuPy's code generation and launches, the block reductions, the device's
math library) is tested against CpuBackend in test_cuda_kernels.py.
"""

from __future__ import annotations

import ctypes
import shutil
import subprocess
import sys
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import ml_dtypes
import numpy as np
import pytest
from cuda_kernel_cases import (
    ADAM_CONFIGS,
    KERNEL_DTYPES,
    adam_run,
    edge_values,
    layer_norm_cases,
    row_cases,
)

from burnpy.backend.ops.optim_ops import OptimOps
from burnpy_cpu import CpuBackend
from burnpy_cuda import CudaUnavailableError, cuda_available, kernels
from burnpy_cuda import kernel_sources as src
from burnpy_cuda.kernel_ops import CudaKernelOps, adam_arguments

C_SCALARS = {"float64": "double", "int32": "int", "int64": "long long"}
CTYPES_SCALARS = {"float64": ctypes.c_double, "int32": ctypes.c_int, "int64": ctypes.c_longlong}


# --- importing and dispatch ---------------------------------------------------------------


def test_importing_the_kernel_modules_loads_no_cupy() -> None:
    code = ("import sys, burnpy_cuda, burnpy_cuda.kernels, burnpy_cuda.kernel_ops; "
            "assert 'cupy' not in sys.modules, 'cupy was imported'")
    subprocess.run([sys.executable, "-c", code], check=True,
                   cwd=Path(__file__).resolve().parents[2])


@pytest.mark.skipif(cuda_available(), reason="a GPU is present; the no-GPU path is not taken")
def test_building_a_kernel_without_cupy_says_why() -> None:
    with pytest.raises(CudaUnavailableError, match="CudaBackend: "):
        kernels.elementwise(src.RELU, np.dtype(np.float32))
    with pytest.raises(CudaUnavailableError, match="CudaBackend: "):
        kernels.row_kernel("burnpy_softmax_rows", np.dtype(np.float32))


class Recorder:
    """Stands in for ``burnpy_cuda.kernels``' builders: records what the mixin asks for."""

    def __init__(self) -> None:
        self.calls: list[tuple[str, np.dtype, tuple[Any, ...]]] = []

    def elementwise(self, spec: src.ElementwiseSpec, dtype: np.dtype) -> Callable[..., Any]:
        def launch(*args: Any) -> Any:
            self.calls.append((spec.name, dtype, args))
            return ("out",) * len(spec.out_params.split(","))
        return launch

    def rows(self, name: str, compute: Callable[..., Any] | None = None) -> Callable[..., Any]:
        """Row launch helper ``name``, returning ``compute`` of its arguments (or a marker)."""
        def launch(x: np.ndarray, *args: Any, **kwargs: Any) -> Any:
            self.calls.append((name, x.dtype, (x, *args, *kwargs.values())))
            return ("out",) if compute is None else compute(x, *args, **kwargs)
        return launch


def layer_norm_rows_on_cpu(x: np.ndarray, weight: np.ndarray | None, bias: np.ndarray | None,
                           eps: float) -> np.ndarray:
    """What ``kernels.layer_norm_rows`` computes, by the shared op."""
    return CpuBackend.layer_norm(x, 1, weight, bias, eps)


def layer_norm_backward_rows_on_cpu(x: np.ndarray, weight: np.ndarray | None, grad: np.ndarray,
                                    eps: float) -> tuple[np.ndarray, np.ndarray]:
    """What ``kernels.layer_norm_backward_rows`` computes, by the shared ops: grad_x, and
    xhat in the dtype computed in."""
    work = x.astype(np.result_type(x.dtype, np.float32))
    return (CpuBackend.layer_norm_backward(x, 1, weight, grad, eps)[0],
            CpuBackend.layer_norm(work, 1, None, None, eps))


class Probe(CudaKernelOps, CpuBackend):
    """CudaKernelOps over NumPy: the fallbacks run CpuBackend's ops."""


@pytest.fixture
def recorder(monkeypatch: pytest.MonkeyPatch) -> Recorder:
    rec = Recorder()
    monkeypatch.setattr(kernels, "elementwise", rec.elementwise)
    for name in ("softmax_rows", "cross_entropy_rows", "cross_entropy_backward_rows"):
        monkeypatch.setattr(kernels, name, rec.rows(name))
    monkeypatch.setattr(kernels, "layer_norm_rows",
                        rec.rows("layer_norm_rows", layer_norm_rows_on_cpu))
    monkeypatch.setattr(kernels, "layer_norm_backward_rows",
                        rec.rows("layer_norm_backward_rows", layer_norm_backward_rows_on_cpu))
    return rec


UNARY = [("relu", (), "relu"), ("leaky_relu", (0.2,), "leaky_relu"),
         ("gelu", (), "gelu"), ("gelu", ("tanh",), "gelu_tanh"), ("sigmoid", (), "sigmoid"),
         ("log_sigmoid", (), "log_sigmoid"), ("silu", (), "silu"),
         ("softplus", (2.0,), "softplus")]
BINARY = [("relu_backward", (), "relu_backward"), ("gelu_backward", (), "gelu_backward"),
          ("gelu_backward", ("tanh",), "gelu_tanh_backward"),
          ("sigmoid_backward", (), "sigmoid_backward"),
          ("log_sigmoid_backward", (), "log_sigmoid_backward")]


@pytest.mark.parametrize("dtype", KERNEL_DTYPES)
@pytest.mark.parametrize(("op", "extra", "kernel"), UNARY + BINARY)
def test_float_inputs_take_the_kernel(recorder: Recorder, dtype: str, op: str,
                                      extra: tuple[Any, ...], kernel: str) -> None:
    arrays = [np.ones(3, dtype=dtype)] * (1 if (op, extra, kernel) in UNARY else 2)
    assert getattr(Probe, op)(*arrays, *extra) == ("out",)
    [(name, got_dtype, args)] = recorder.calls
    assert (name, got_dtype) == (kernel, np.dtype(dtype))
    assert all(a is b for a, b in zip(args, arrays, strict=False))


@pytest.mark.parametrize(("bad", "op", "extra", "kernel"),
                         [("bfloat16", *case) for case in UNARY + BINARY]
                         + [("mixed", *case) for case in BINARY])
def test_other_dtypes_take_the_shared_op(recorder: Recorder, bad: str, op: str,
                                         extra: tuple[Any, ...], kernel: str) -> None:
    """bfloat16 (not a CUDA dtype, but the fallback is dtype-blind), and a backward helper
    given float32 and float64."""
    x = edge_values("float32", (4, 8))
    arrays = [x] if (op, extra, kernel) in UNARY else [x, edge_values("float32", (4, 8), 1)]
    if bad == "bfloat16":
        arrays = [a.astype(ml_dtypes.bfloat16) for a in arrays]
    else:
        arrays[1] = arrays[1].astype(np.float64)
    got = getattr(Probe, op)(*arrays, *extra)
    want = getattr(CpuBackend, op)(*arrays, *extra)
    assert not recorder.calls
    np.testing.assert_array_equal(got.astype(np.float64), want.astype(np.float64))


def test_leaky_relu_and_softplus_pass_their_scalars(recorder: Recorder) -> None:
    Probe.leaky_relu(np.ones(2, np.float16), 0.1)
    Probe.softplus(np.ones(2, np.float32), 3)
    (_, _, (_, slope)), (_, _, (_, beta)) = recorder.calls
    assert slope == 0.1 and isinstance(slope, float)  # not rounded to float16: in float32
    assert beta == 3.0 and isinstance(beta, float)


def test_row_ops_take_the_kernel_only_along_the_last_dim(recorder: Recorder) -> None:
    x = edge_values("float32", (3, 4, 5))
    assert Probe.softmax(x, 2) == ("out",)
    assert Probe.log_softmax(x, -1) == ("out",)
    for dim in (0, 1):
        np.testing.assert_array_equal(Probe.softmax(x, dim), CpuBackend.softmax(x, dim))
    np.testing.assert_array_equal(Probe.softmax(x[:, :, :0], 2), x[:, :, :0])
    half = x.astype(ml_dtypes.bfloat16)
    np.testing.assert_array_equal(Probe.log_softmax(half, 2).astype(np.float32),
                                  CpuBackend.log_softmax(half, 2).astype(np.float32))
    assert [(name, args[-1]) for name, _, args in recorder.calls] == [
        ("softmax_rows", False), ("softmax_rows", True)]


def test_cross_entropy_takes_the_kernel_for_float_logits(recorder: Recorder) -> None:
    logits = edge_values("float64", (6, 5))
    target = np.array([0, 4, -100, 2, 1, 3])
    grad = np.ones(6)
    assert Probe.cross_entropy(logits, target, np.int64(-100)) == ("out",)
    assert Probe.cross_entropy_backward(logits, target, -100, grad) == ("out",)
    (_, _, ce_args), (_, _, back_args) = recorder.calls
    assert ce_args[1] is target and ce_args[2] == -100 and type(ce_args[2]) is int
    assert back_args[3] is grad
    recorder.calls.clear()
    mixed = Probe.cross_entropy_backward(logits, target, -100, grad.astype(np.float32))
    np.testing.assert_array_equal(
        mixed, CpuBackend.cross_entropy_backward(logits, target, -100, grad.astype(np.float32)))
    assert not recorder.calls


#: Whether layer norm gets a weight and a bias.
LAYER_NORM_AFFINE = [(True, True), (True, False), (False, False)]


def _layer_norm_inputs(dtype: Any, shape: tuple[int, ...],
                       normalized_ndim: int) -> tuple[np.ndarray, ...]:
    """Random ``x``, ``grad`` (of ``shape``), ``weight`` and ``bias`` (its trailing dims)."""
    rng = np.random.default_rng(3)
    trailing = shape[len(shape) - normalized_ndim:]
    return tuple((rng.standard_normal(s) * 2 + 0.5).astype(dtype)
                 for s in (shape, shape, trailing, trailing))


@pytest.mark.parametrize("dtype", KERNEL_DTYPES)
@pytest.mark.parametrize(("has_weight", "has_bias"), LAYER_NORM_AFFINE)
def test_layer_norm_takes_the_row_kernels_for_float_dtypes(recorder: Recorder, dtype: str,
                                                           has_weight: bool,
                                                           has_bias: bool) -> None:
    """On ``[rows, width]`` views of x and grad, the weight and bias passed as they are; the
    results, the weight's and bias's gradients summed from the kernel's xhat, equal the
    shared op's."""
    x, grad, weight, bias = _layer_norm_inputs(dtype, (2, 3, 4, 5), 2)
    weight_or_none = weight if has_weight else None
    bias_or_none = bias if has_bias else None
    got = [Probe.layer_norm(x, 2, weight_or_none, bias_or_none, 1e-5),
           *Probe.layer_norm_backward(x, 2, weight_or_none, grad, 1e-5)]
    (forward, forward_dtype, forward_args), (backward, backward_dtype, backward_args) = \
        recorder.calls
    assert (forward, backward) == ("layer_norm_rows", "layer_norm_backward_rows")
    assert forward_dtype == backward_dtype == np.dtype(dtype)
    assert forward_args[0].shape == backward_args[0].shape == backward_args[2].shape == (6, 20)
    assert forward_args[1] is weight_or_none and forward_args[2] is bias_or_none
    assert backward_args[1] is weight_or_none
    assert forward_args[3] == backward_args[3] == 1e-5
    want = [CpuBackend.layer_norm(x, 2, weight_or_none, bias_or_none, 1e-5),
            *CpuBackend.layer_norm_backward(x, 2, weight_or_none, grad, 1e-5)]
    # CpuBackend's float32/float64 layer norm runs compiled row loops that accumulate in
    # float64 (burnpy_cpu/array_ops/_row_kernels.py), so it rounds differently from the
    # kernel's NumPy stand-in here: equal to within a few float32 (float64) roundings.
    rtol = 1e-6 if np.dtype(dtype) == np.float32 else 1e-12
    for g, w in zip(got, want, strict=True):
        assert g.dtype == w.dtype and g.shape == w.shape
        np.testing.assert_allclose(g, w, rtol=rtol, atol=rtol)


@pytest.mark.parametrize("case", ["bfloat16", "mixed", "no rows", "no width"])
def test_layer_norm_with_other_dtypes_or_empty_inputs_takes_the_shared_op(
        recorder: Recorder, case: str) -> None:
    """A float64 bias (forward) and grad (backward) with float32 x and weight, and inputs
    without rows or with empty rows, take the shared op; bfloat16 (NumPy's, as this probe
    holds: CuPy has none) is widened to float32 by the shared op, whose float32 rows then
    take the kernel, and rounded once."""
    shape = {"no rows": (0, 3, 4), "no width": (3, 4, 0)}.get(case, (2, 3, 4))
    dtype = ml_dtypes.bfloat16 if case == "bfloat16" else np.float32
    x, grad, weight, bias = _layer_norm_inputs(dtype, shape, 2)
    if case == "mixed":
        grad, bias = grad.astype(np.float64), bias.astype(np.float64)
    got = [Probe.layer_norm(x, 2, weight, bias, 1e-5),
           *Probe.layer_norm_backward(x, 2, weight, grad, 1e-5)]
    want = [CpuBackend.layer_norm(x, 2, weight, bias, 1e-5),
            *CpuBackend.layer_norm_backward(x, 2, weight, grad, 1e-5)]
    if case == "bfloat16":
        assert recorder.calls and {c[1] for c in recorder.calls} == {np.dtype(np.float32)}
    else:
        assert not recorder.calls
    for g, w in zip(got, want, strict=True):
        assert g.dtype == w.dtype and g.shape == w.shape
        np.testing.assert_array_equal(g.astype(np.float64), w.astype(np.float64))


@pytest.mark.parametrize("dtype", ["float32", "float16"])
@pytest.mark.parametrize("config", ADAM_CONFIGS)
@pytest.mark.parametrize("first", [True, False])
def test_adam_step_passes_the_composed_defaults_scalars(recorder: Recorder,
                                                        config: dict[str, Any],
                                                        first: bool, dtype: str) -> None:
    p, g, m, v, peak = (np.full(3, k, dtype) for k in (1.0, 2.0, 3.0, 4.0, 5.0))
    state = (None, None, None) if first else (m, v, peak if config.get("amsgrad") else None)
    hyper = dict(step=3, lr=0.01, beta1=0.8, beta2=0.95, eps=1e-6)
    out = Probe.adam_step(p, g, *state, **hyper, **config)
    [(name, _, args)] = recorder.calls
    amsgrad = config.get("amsgrad", False)
    assert name == ("adam_amsgrad" if amsgrad else "adam")
    assert out == (("out",) * 4 if amsgrad else ("out",) * 3 + (None,))
    wd = config.get("weight_decay", 0.0)
    mode, decay = ((0, 0.0) if not wd else (1, 1.0 - 0.01 * wd) if config.get("decoupled")
                   else (2, wd))
    scalars = (decay, 0.8, 1.0 - 0.8, 0.95, 1.0 - 0.95, 1.0 / np.sqrt(1.0 - 0.95**3), 1e-6,
               0.01 / (1 - 0.8**3))
    # The composed default's scalars, each rounded as its scalar ops round them: to float32
    # (for float16 too: mul keeps its scalar there), eps (add) to the dtype through float32.
    want = (p, g, 0.0 if first else m, 0.0 if first else v, int(first), mode,
            *(float(np.float32(x)) for x in scalars[:6]),
            float(np.dtype(dtype).type(np.float32(1e-6))), float(np.float32(scalars[7])))
    if amsgrad:
        want += (0.0, 0) if first else (peak, 1)
    assert len(args) == len(want)
    for got_arg, want_arg in zip(args, want, strict=True):
        assert got_arg is want_arg if isinstance(want_arg, np.ndarray) else got_arg == want_arg


def test_adam_step_with_other_dtypes_takes_the_shared_op(recorder: Recorder) -> None:
    p = edge_values("float32", (8,))
    g = edge_values("float32", (8,), 1)
    got = Probe.adam_step(p, g.astype(np.float64), None, None, None, step=1, lr=0.1,
                          beta1=0.9, beta2=0.99, eps=1e-8)
    want = CpuBackend.adam_step(p, g.astype(np.float64), None, None, None, step=1, lr=0.1,
                                beta1=0.9, beta2=0.99, eps=1e-8)
    assert not recorder.calls
    for a, b in zip(got[:3], want[:3], strict=True):
        np.testing.assert_array_equal(a, b)


# --- compiling the sources ------------------------------------------------------------------


def _params(spec: src.ElementwiseSpec) -> list[tuple[str, str, bool]]:
    """``(type, name, is_output)`` of each of ``spec``'s parameters, in order."""
    return [(*p.split(), out) for params, out in ((spec.in_params, False),
                                                   (spec.out_params, True))
            for p in params.split(",")]


def _wrapper(spec: src.ElementwiseSpec, device: bool) -> str:
    """A kernel (or host function) running ``spec``'s body over ``n`` values, with arrays as
    pointers and scalars by value, as CuPy binds them."""
    args, refs = [], []
    for kind, name, out in _params(spec):
        const = "" if out else "const "
        if kind == "T":
            args.append(f"{const}T* _raw_{name}")
            refs.append(f"{const}T &{name} = _raw_{name}[i];")
        else:
            args.append(f"{C_SCALARS[kind]} {name}")
    loop = ("for (long long i = blockIdx.x * (long long)blockDim.x + threadIdx.x; i < n; "
            "i += (long long)blockDim.x * gridDim.x)" if device
            else "for (long long i = 0; i < n; ++i)")
    head = '__global__ void burnpy_' if device else 'void host_'
    return (f'extern "C" {head}{spec.name}(long long n, {", ".join(args)}) {{\n'
            f'  {loop} {{\n' + "\n".join(refs) + f"\n{spec.body}\n  }}\n}}\n")


NVCC_TYPES = {"float16": "__half", "float32": "float", "float64": "double"}


def _nvcc_sources(dtype: str) -> Iterator[tuple[str, str, tuple[str, ...]]]:
    """(name, CUDA source, nvcc options) of each translation unit to compile for ``dtype``:
    the elementwise kernels (CuPy's float16 stood in for by cuda_fp16's ``__half``, which has
    the same conversions), the Adam ones alone for their options, and the row kernels."""
    head = "#include <cuda_fp16.h>\n" if dtype == "float16" else ""
    head += f"typedef {NVCC_TYPES[dtype]} T;\n{src.preamble(src.WORK_TYPES[dtype])}"
    for options in {spec.options for spec in src.ELEMENTWISE_SPECS}:
        specs = [s for s in src.ELEMENTWISE_SPECS if s.options == options]
        name = "elementwise" + "".join(o.strip("-").replace("=", "_") for o in options)
        yield name, head + "".join(_wrapper(s, device=True) for s in specs), options
    yield "rows", src.row_source(dtype), ()


@pytest.mark.skipif(shutil.which("nvcc") is None, reason="nvcc (the CUDA toolkit) not found")
def test_every_source_compiles_with_nvcc_for_each_dtype(tmp_path: Path) -> None:
    jobs = []
    for dtype in KERNEL_DTYPES:
        for name, code, options in _nvcc_sources(dtype):
            path = tmp_path / f"{name}_{dtype}.cu"
            path.write_text(code)
            cmd = ["nvcc", "-arch=sm_90", "-std=c++17", "--ptx", *options, str(path), "-o",
                   str(path.with_suffix(".ptx"))]
            jobs.append((path.name, subprocess.Popen(cmd, stdout=subprocess.PIPE,
                                                     stderr=subprocess.STDOUT, text=True)))
    failures = {name: proc.communicate()[0] for name, proc in jobs}
    failures = {name: out for name, out in failures.items() if out.strip()}
    assert not failures, failures
    names = (tmp_path / "rows_float32.ptx").read_text()
    assert all(f".entry {k}(" in names for k in src.ROW_KERNEL_NAMES)


# --- running the sources on the host ---------------------------------------------------------

HOST_TYPES = {"float16": "_Float16", "float32": "float", "float64": "double"}
HOST_PRELUDE = """#include <math.h>
#include <string.h>
#define __device__
#define __forceinline__ inline
#define __global__
#define __shared__ static
"""

# One thread per block: the block reductions of a single thread's value are that value.
HOST_ROW_HELPERS = """
struct bp_dim { unsigned int x; };
static bp_dim blockIdx = {0}, threadIdx = {0}, blockDim = {1};
static inline float bp_load(float v) { return v; }
static inline double bp_load(double v) { return v; }
static inline void bp_store(float* p, float v) { *p = v; }
static inline void bp_store(double* p, double v) { *p = v; }
static inline W bp_nan() { return W(NAN); }
"""
HOST_HALF_STORAGE = """
static inline float bp_load(unsigned short h) { _Float16 f; memcpy(&f, &h, 2); return f; }
static inline void bp_store(unsigned short* p, float v) { _Float16 f = v; memcpy(p, &f, 2); }
"""
HOST_REDUCTIONS = """
static inline W bp_block_max(W v, W*) { return v; }
template <typename S> static inline S bp_block_sum(S v, S*) { return v; }
"""
HOST_ROW_RUNNERS = """
#define BP_RUN(kernel, params, args) \\
  extern "C" void host_##kernel(long long rows, params) { \\
    for (long long r = 0; r < rows; ++r) { blockIdx.x = (unsigned int)r; kernel args; } }
#define BP_COMMA ,
BP_RUN(burnpy_softmax_rows, const T* x BP_COMMA T* y BP_COMMA long long c, (x, y, c))
BP_RUN(burnpy_log_softmax_rows, const T* x BP_COMMA T* y BP_COMMA long long c, (x, y, c))
BP_RUN(burnpy_cross_entropy_rows, const T* x BP_COMMA const long long* t BP_COMMA T* loss
       BP_COMMA long long c BP_COMMA long long ignore, (x, t, loss, c, ignore))
BP_RUN(burnpy_cross_entropy_backward_rows, const T* x BP_COMMA const long long* t BP_COMMA
       const T* g BP_COMMA T* dx BP_COMMA long long c BP_COMMA long long ignore,
       (x, t, g, dx, c, ignore))
BP_RUN(burnpy_layer_norm_rows, const T* x BP_COMMA const T* w BP_COMMA const T* b BP_COMMA
       T* y BP_COMMA long long c BP_COMMA double eps, (x, w, b, y, c, eps))
BP_RUN(burnpy_layer_norm_backward_rows, const T* x BP_COMMA const T* w BP_COMMA const T* g
       BP_COMMA T* dx BP_COMMA W* xhat BP_COMMA long long c BP_COMMA double eps,
       (x, w, g, dx, xhat, c, eps))
"""


def _host_source(dtype: str) -> str:
    """The elementwise bodies and the row kernels, for the host, computing as on the GPU."""
    work = src.WORK_TYPES[dtype]
    elementwise = (f"namespace ew {{\ntypedef {HOST_TYPES[dtype]} T;\n{src.preamble(work)}"
                   + "".join(_wrapper(s, device=False) for s in src.ELEMENTWISE_SPECS) + "}\n")
    rows = (f"namespace rows {{\ntypedef {src.ROW_STORAGE_TYPES[dtype]} T;\ntypedef {work} W;\n"
            + HOST_ROW_HELPERS + (HOST_HALF_STORAGE if dtype == "float16" else "")
            + src.ROW_MATH + HOST_REDUCTIONS + src.ROW_KERNELS + HOST_ROW_RUNNERS + "}\n")
    return HOST_PRELUDE + elementwise + rows


def _compile_host(path: Path, code: str) -> subprocess.CompletedProcess[str]:
    path.write_text(code)
    cmd = ["g++", "-std=c++17", "-O1", "-ffp-contract=off", "-shared", "-fPIC", str(path),
           "-o", str(path.with_suffix(".so"))]
    return subprocess.run(cmd, capture_output=True, text=True)


@pytest.fixture(scope="module")
def host_libs(tmp_path_factory: pytest.TempPathFactory) -> dict[str, ctypes.CDLL]:
    """The host build of every kernel, per dtype (float16 where g++ has ``_Float16``)."""
    if shutil.which("g++") is None:
        pytest.skip("g++ not found")
    tmp = tmp_path_factory.mktemp("host_kernels")
    libs = {}
    for dtype in KERNEL_DTYPES:
        if dtype == "float16" and _compile_host(
                tmp / "probe.cpp", "_Float16 probe(float v) { return v; }").returncode:
            continue
        path = tmp / f"kernels_{dtype}.cpp"
        done = _compile_host(path, _host_source(dtype))
        assert done.returncode == 0 and not done.stderr, done.stderr
        libs[dtype] = ctypes.CDLL(str(path.with_suffix(".so")))
    return libs


def _lib(host_libs: dict[str, ctypes.CDLL], dtype: str) -> ctypes.CDLL:
    if dtype not in host_libs:
        pytest.skip("this g++ has no _Float16")
    return host_libs[dtype]


def _pointer(a: np.ndarray | None) -> ctypes.c_void_p:
    """``a``'s data, or a null pointer for None."""
    return ctypes.c_void_p(None if a is None else a.ctypes.data)


def run_elementwise(lib: ctypes.CDLL, spec: src.ElementwiseSpec,
                    *inputs: Any) -> tuple[np.ndarray, ...]:
    """``spec``'s host build over same-shaped arrays and scalars, in CuPy's argument order."""
    arrays = [a for a in inputs if isinstance(a, np.ndarray)]
    shape, dtype = arrays[0].shape, arrays[0].dtype
    params = _params(spec)
    outs = tuple(np.empty(shape, dtype) for kind, _, out in params if out)
    args: list[Any] = [ctypes.c_longlong(arrays[0].size)]
    for (kind, _, _), value in zip(params, [*inputs, *outs], strict=True):
        if kind == "T":
            assert value.flags.c_contiguous and value.dtype == dtype and value.shape == shape
            args.append(_pointer(value))
        else:
            args.append(CTYPES_SCALARS[kind](value))
    getattr(lib, f"host_{spec.name}")(*args)
    return outs


TOLERANCES = {"float16": 2e-3, "float32": 2e-6, "float64": 1e-14}


def assert_close(got: np.ndarray, want: np.ndarray, dtype: str, scale: float = 1.0,
                 unit: float = 1e-3) -> None:
    """Equal up to ``scale`` times the dtype's rounding, relative to the values or to ``unit``
    where they are smaller (absolute near zero), NaN where NaN, infinities equal."""
    assert got.dtype == want.dtype == np.dtype(dtype) and got.shape == want.shape
    tol = TOLERANCES[dtype] * scale
    np.testing.assert_allclose(got.astype(np.float64), want.astype(np.float64), rtol=tol,
                               atol=tol * unit)


HOST_UNARY = [(src.RELU, "relu", ()), (src.LEAKY_RELU, "leaky_relu", (0.01,)),
              (src.LEAKY_RELU, "leaky_relu", (0.0,)), (src.LEAKY_RELU, "leaky_relu", (1.5,)),
              (src.GELU, "gelu", ("none",)), (src.GELU_TANH, "gelu", ("tanh",)),
              (src.SIGMOID, "sigmoid", ()), (src.LOG_SIGMOID, "log_sigmoid", ()),
              (src.SILU, "silu", ()), (src.SOFTPLUS, "softplus", (1.0,)),
              (src.SOFTPLUS, "softplus", (2.5,)), (src.SOFTPLUS, "softplus", (0.3,))]


@pytest.mark.parametrize("dtype", KERNEL_DTYPES)
@pytest.mark.parametrize(("spec", "op", "extra"), HOST_UNARY,
                         ids=[f"{op}{extra}" for _, op, extra in HOST_UNARY])
def test_host_build_of_activations_matches_cpu(host_libs: dict[str, ctypes.CDLL], dtype: str,
                                               spec: src.ElementwiseSpec, op: str,
                                               extra: tuple[Any, ...]) -> None:
    lib = _lib(host_libs, dtype)
    x = edge_values(dtype, (16, 33))
    want = getattr(CpuBackend, op)(x, *extra)
    # The kernel's scalars as CudaKernelOps passes them (gelu's form is the spec itself).
    scalars: list[float] = []
    if op in ("leaky_relu", "softplus"):
        scalars = list(extra)
    [got] = run_elementwise(lib, spec, x, *scalars)
    assert_close(got, want, dtype, scale=4)
    if op == "leaky_relu":  # one product, rounded once, on both: bit for bit
        np.testing.assert_array_equal(got.view(f"u{x.itemsize}"), want.view(f"u{x.itemsize}"))


HOST_BACKWARD = [(src.RELU_BACKWARD, "relu_backward", "relu", ()),
                 (src.GELU_BACKWARD, "gelu_backward", None, ("none",)),
                 (src.GELU_TANH_BACKWARD, "gelu_backward", None, ("tanh",)),
                 (src.SIGMOID_BACKWARD, "sigmoid_backward", "sigmoid", ()),
                 (src.LOG_SIGMOID_BACKWARD, "log_sigmoid_backward", None, ())]


@pytest.mark.parametrize("dtype", KERNEL_DTYPES)
@pytest.mark.parametrize(("spec", "op", "forward", "extra"), HOST_BACKWARD,
                         ids=[f"{op}{extra}" for _, op, _, extra in HOST_BACKWARD])
def test_host_build_of_backward_helpers_matches_cpu(host_libs: dict[str, ctypes.CDLL],
                                                    dtype: str, spec: src.ElementwiseSpec,
                                                    op: str, forward: str | None,
                                                    extra: tuple[Any, ...]) -> None:
    """Given the forward's output (relu, sigmoid) or its input (the others), and a gradient
    with its own edge values."""
    lib = _lib(host_libs, dtype)
    x = edge_values(dtype, (16, 33))
    first = x if forward is None else getattr(CpuBackend, forward)(x)
    grad = np.roll(edge_values(dtype, (16, 33), seed=1), 3)
    want = getattr(CpuBackend, op)(first, grad, *extra)
    [got] = run_elementwise(lib, spec, first, grad)
    # float16: the CPU rounds sigmoid_backward's three products to float16 one by one.
    assert_close(got, want, dtype, scale=8)


@pytest.mark.parametrize("dtype", KERNEL_DTYPES)
@pytest.mark.parametrize("config", ADAM_CONFIGS)
@pytest.mark.parametrize("eps", [1e-8, 1.0004])
def test_host_build_of_adam_matches_the_composed_default(host_libs: dict[str, ctypes.CDLL],
                                                         dtype: str, config: dict[str, Any],
                                                         eps: float) -> None:
    """Three steps from no state, with CudaKernelOps' arguments, bit for bit against
    CpuBackend's composition: every intermediate is rounded to the dtype as the composed ops
    round their results (float16 overflows to inf where they do), float16's multipliers kept
    in float32 and its eps rounded to float16 as the scalar ops do (torch's rule; 1e-8 rounds
    to 0 there, and 1.0004 to 1.0, which moves some denominators by a unit)."""
    lib = _lib(host_libs, dtype)
    param, grads = adam_run(dtype)
    hyper = dict(lr=0.01, beta1=0.9, beta2=0.999, eps=eps,
                 weight_decay=config.get("weight_decay", 0.0),
                 decoupled=config.get("decoupled", False))
    amsgrad = config.get("amsgrad", False)
    ours: list[np.ndarray | None] = [param, None, None, None]
    theirs: list[np.ndarray | None] = [param, None, None, None]
    for step, grad in enumerate(grads, start=1):
        want = OptimOps.adam_step.__func__(CpuBackend, theirs[0], grad, *theirs[1:],
                                           step=step, amsgrad=amsgrad, **hyper)
        args = list(adam_arguments(ours[0], grad, ours[1], ours[2], step=step, **hyper))
        if amsgrad:
            args += [ours[3], 1] if ours[3] is not None else [0.0, 0]
        # The host build takes arrays where CuPy also takes a scalar placeholder.
        spec = src.ADAM_AMSGRAD if amsgrad else src.ADAM
        args = [a if isinstance(a, np.ndarray) or kind != "T" else np.zeros_like(param)
                for (kind, _, _), a in zip(_params(spec), args, strict=False)]
        got = run_elementwise(lib, spec, *args)
        if not amsgrad:
            got += (None,)
        for g, w in zip(got, want, strict=True):
            assert (g is None) == (w is None)
            if g is not None:
                assert g.dtype == w.dtype
                np.testing.assert_array_equal(g, w)
        ours, theirs = list(got), list(want)


def run_rows(lib: ctypes.CDLL, kernel: str, x: np.ndarray, *inputs: np.ndarray | None,
             out_shape: tuple[int, ...], extra_outs: tuple[np.ndarray, ...] = (),
             scalars: tuple[int | float, ...] = ()) -> np.ndarray:
    """The host build of row kernel ``kernel`` over ``x [rows, c]``; float16 as raw bits, None
    inputs as null pointers, ``extra_outs`` (written too) after the output, float scalars as
    double ones, as ``kernels`` launches them."""
    out = np.empty(out_shape, x.dtype)
    assert all(a.flags.c_contiguous for a in (x, *inputs, *extra_outs) if a is not None)
    args = ([_pointer(a) for a in (x, *inputs, out, *extra_outs)]
            + [ctypes.c_longlong(x.shape[-1])])
    getattr(lib, f"host_{kernel}")(
        ctypes.c_longlong(x.size // x.shape[-1]), *args,
        *(ctypes.c_double(s) if isinstance(s, float) else ctypes.c_longlong(s) for s in scalars))
    return out


@pytest.mark.parametrize("dtype", KERNEL_DTYPES)
@pytest.mark.parametrize("log", [False, True])
def test_host_build_of_softmax_rows_matches_cpu(host_libs: dict[str, ctypes.CDLL], dtype: str,
                                                log: bool) -> None:
    lib = _lib(host_libs, dtype)
    x = row_cases(dtype)
    name = "burnpy_log_softmax_rows" if log else "burnpy_softmax_rows"
    got = run_rows(lib, name, x, out_shape=x.shape)
    want = (CpuBackend.log_softmax if log else CpuBackend.softmax)(x, 1)
    assert_close(got, want, dtype, scale=8)


@pytest.mark.parametrize("dtype", KERNEL_DTYPES)
@pytest.mark.parametrize("ignore_index", [-100, 2])
def test_host_build_of_cross_entropy_rows_matches_cpu(host_libs: dict[str, ctypes.CDLL],
                                                      dtype: str, ignore_index: int) -> None:
    """Ignored rows (also one holding NaN, which the CPU's ``loss * 0`` keeps NaN) and a
    negative target, counted from the end as NumPy indexing does."""
    lib = _lib(host_libs, dtype)
    x = row_cases(dtype)
    target = np.array([3, ignore_index, 2, 0, 5, ignore_index, 36, -1], dtype=np.int64)
    grad = np.linspace(-2, 3, 8).astype(dtype)
    loss = run_rows(lib, "burnpy_cross_entropy_rows", x, target, out_shape=(8,),
                    scalars=(ignore_index,))
    assert_close(loss, CpuBackend.cross_entropy(x, target, ignore_index), dtype, scale=8)
    dx = run_rows(lib, "burnpy_cross_entropy_backward_rows", x, target, grad, out_shape=x.shape,
                  scalars=(ignore_index,))
    want = CpuBackend.cross_entropy_backward(x, target, ignore_index, grad)
    assert_close(dx, want, dtype, scale=8)


def test_host_build_of_cross_entropy_gives_nan_for_an_out_of_range_target(
        host_libs: dict[str, ctypes.CDLL]) -> None:
    """Where NumPy raises IndexError, the kernel cannot: the row is NaN, nothing is read
    outside it."""
    lib = host_libs["float32"]
    x = np.zeros((3, 4), np.float32)
    target = np.array([4, -5, 1], dtype=np.int64)
    loss = run_rows(lib, "burnpy_cross_entropy_rows", x, target, out_shape=(3,),
                    scalars=(-100,))
    np.testing.assert_allclose(loss, [np.nan, np.nan, np.log(4)], rtol=1e-6)
    dx = run_rows(lib, "burnpy_cross_entropy_backward_rows", x, target, np.ones(3, np.float32),
                  out_shape=x.shape, scalars=(-100,))
    assert np.isnan(dx[:2]).all() and np.isfinite(dx[2]).all()


@pytest.mark.parametrize("dtype", KERNEL_DTYPES)
@pytest.mark.parametrize(("has_weight", "has_bias"), LAYER_NORM_AFFINE)
def test_host_build_of_layer_norm_rows_matches_cpu(host_libs: dict[str, ctypes.CDLL],
                                                   dtype: str, has_weight: bool,
                                                   has_bias: bool) -> None:
    """NaN and infinite rows, a constant row and one far from zero; an absent weight or bias
    as a null pointer. Errors count against 1 where values are smaller (``unit``): normalized
    values are of order 1, and cancel near zero."""
    lib = _lib(host_libs, dtype)
    x, weight, bias, _ = layer_norm_cases(dtype)
    weight_or_none = weight if has_weight else None
    bias_or_none = bias if has_bias else None
    got = run_rows(lib, "burnpy_layer_norm_rows", x, weight_or_none, bias_or_none,
                   out_shape=x.shape, scalars=(1e-5,))
    want = CpuBackend.layer_norm(x, 1, weight_or_none, bias_or_none, 1e-5)
    assert_close(got, want, dtype, unit=1)


@pytest.mark.parametrize("dtype", KERNEL_DTYPES)
@pytest.mark.parametrize("has_weight", [True, False])
def test_host_build_of_layer_norm_backward_rows_matches_cpu(host_libs: dict[str, ctypes.CDLL],
                                                            dtype: str,
                                                            has_weight: bool) -> None:
    """grad_x as the shared op's; xhat, in the dtype computed in, as the normalized rows."""
    lib = _lib(host_libs, dtype)
    x, weight, _, grad = layer_norm_cases(dtype)
    weight_or_none = weight if has_weight else None
    work = np.result_type(x.dtype, np.float32)
    xhat = np.empty(x.shape, work)
    grad_x = run_rows(lib, "burnpy_layer_norm_backward_rows", x, weight_or_none, grad,
                      out_shape=x.shape, extra_outs=(xhat,), scalars=(1e-5,))
    want = CpuBackend.layer_norm_backward(x, 1, weight_or_none, grad, 1e-5)[0]
    assert_close(grad_x, want, dtype, unit=1)
    assert_close(xhat, CpuBackend.layer_norm(x.astype(work), 1, None, None, 1e-5), work.name,
                 unit=1)
