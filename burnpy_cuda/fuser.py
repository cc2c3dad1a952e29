"""The CUDA C fuser of ``CudaBackend``: one CUDA kernel per fused group (``Fusion(CudaBackend)``).

``cuda_source(group, rank)`` writes the group as CUDA C (nothing here needs CuPy, so the
source can be compiled with nvcc anywhere): a device function ``elem(lin)`` computes every op
for the element at row-major index ``lin`` of the group's shape, reading each input through
its own element strides (broadcast dims have stride 0, passed at launch), keeping the
intermediates in registers and writing only the locals the group returns; three entry points
call it as the WGSL fuser's do (``map``: a thread per element; ``rows``: a thread per
reduction output; ``tree``: a block per output with a shared-memory tree). Float16 is computed
in float and rounded where a local is defined, a scalar kept in float or first rounded to
float16 per op as the unfused ops do (``FusedGroup.rounded_scalars``); float sums use Kahan
compensation. The kernel
is built with ``cupy.RawKernel`` on first launch and cached per group and rank.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from typing import Any

import numpy as np

from burnpy.backend.dtype import DType
from burnpy.fusion.fuser import FusedKernel
from burnpy.ir.fused import ELEMENTWISE, FusedGroup, FusedOp, Ref

#: Threads per block.
BLOCK = 256
#: Reductions over at most this many outputs run one block per output (``tree``).
TREE_MAX_OUTPUTS = 256

_STORAGE = {DType.float64: "double", DType.float32: "float", DType.float16: "__half",
            DType.int64: "long long", DType.int32: "int", DType.int16: "short",
            DType.int8: "signed char", DType.uint8: "unsigned char",
            DType.uint32: "unsigned int", DType.bool_: "bool"}
_COMPUTE = {**_STORAGE, DType.float16: "float"}
_IDENTITY = {"sum": "0", "mean": "0", "prod": "1"}
#: (lowest, highest) of each int type: the identities of max and min.
_INT_LIMITS = {DType.int64: ("(-9223372036854775807LL - 1)", "9223372036854775807LL"),
               DType.int32: ("(-2147483647 - 1)", "2147483647"),
               DType.int16: ("-32768", "32767"), DType.int8: ("-128", "127"),
               DType.uint8: ("0", "255"), DType.uint32: ("0u", "4294967295u")}

#: Helpers every fused kernel may call: Python's floor division and remainder for ints and
#: floats, and integer powers (exponent >= 0).
HELPERS = r"""
template <typename W> __device__ __forceinline__ W bp_floordiv(W a, W b) {
  if (b == W(0)) return W(0);
  W q = a / b;
  return (a % b != W(0) && ((a < W(0)) != (b < W(0)))) ? q - W(1) : q;
}
template <typename W> __device__ __forceinline__ W bp_mod(W a, W b) {
  if (b == W(0)) return W(0);
  W r = a % b;
  return (r != W(0) && ((r < W(0)) != (b < W(0)))) ? r + b : r;
}
template <typename W> __device__ __forceinline__ W bp_powi(W a, W e) {
  W acc = W(1);
  while (e > W(0)) { if (e & W(1)) acc *= a; a *= a; e >>= 1; }
  return acc;
}
template <typename W> __device__ __forceinline__ W bp_fmod_py(W a, W b) {
  W r = fmod(a, b);
  return (r != W(0) && ((r < W(0)) != (b < W(0)))) ? r + b : r;
}
__device__ __forceinline__ float bp_round_half(float v) {
  return __half2float(__float2half(v));
}
"""


def _work(op: FusedOp) -> str:
    return _COMPUTE[op.dtype]


def _convert(value: str, src: str, dst: str) -> str:
    return value if src == dst else f"(({dst})({value}))"


def _subst(template: str, args: Sequence[str], work: str) -> str:
    names = {"a": 0, "b": 1, "c": 2}
    body = re.sub(r"\b[abc]\b", lambda m: f"({args[names[m.group(0)]]})", template)
    return body.replace("W(", f"({work})(")


def _op_expr(op: FusedOp, operands: list[tuple[str, str]]) -> str:
    """The C expression of ``op`` over its operands ``(name, compute type)``: the registry's
    CUDA form (``burnpy.ir.elementwise``) for its kind of result, the structural ops here."""
    name, out = op.name, _work(op)
    if name == "cast":
        value, _ = operands[0]
        return f"({value} != 0)" if op.dtype is DType.bool_ else f"(({out})({value}))"
    if name == "copy":
        return _convert(*operands[0], out)
    if name == "where":
        cond = operands[0][0]
        b, a = (_convert(v, ct, out) for v, ct in operands[1:])
        return f"({cond} ? {b} : {a})"
    entry = ELEMENTWISE[name]
    forms = entry.cuda
    assert forms is not None, f"{name} has no CUDA expression"
    if entry.kind == "compare":
        kinds = [ct for _, ct in operands]
        work = next((k for k in ("double", "float") if k in kinds), kinds[0])
        return _subst(forms.single, [_convert(v, ct, work) for v, ct in operands], work)
    if entry.kind == "test":
        return _subst(forms.single, [operands[0][0]], out)
    if entry.kind == "logic":
        return _subst(forms.single, [v for v, _ in operands], out)
    found = forms.float if op.dtype.is_float else forms.int  # every int type: the int form
    assert found is not None, f"{name} has no CUDA form for {op.dtype.value}"
    return _subst(found, [_convert(v, ct, out) for v, ct in operands], out)


def kind_of(group: FusedGroup) -> tuple[str, int, int, int]:
    """``(kind, outputs, reduced size, inner size)`` of the group's launch."""
    n = int(np.prod(group.shape, dtype=np.int64))
    red = group.reduction
    if red is None:
        return "map", n, 1, 1
    if red.dim is None:
        return "tree", 1, n, 1
    size = group.shape[red.dim]
    outs = n // size if size else 0
    inner = int(np.prod(group.shape[red.dim + 1:], dtype=np.int64))
    return ("tree" if outs <= TREE_MAX_OUTPUTS else "rows"), outs, size, inner


def cuda_source(group: FusedGroup, rank: int) -> str:
    """CUDA C of ``group``'s kernel ``burnpy_fused``: arguments are the input pointers, the
    output pointers, then ``n, outs, size, inner`` (long long), the scalars (double or long
    long) and each input's element strides over the group's ``rank`` dims."""
    kind, _, _, _ = kind_of(group)
    shape = group.shape
    params: list[str] = []
    values: dict[Ref, tuple[str, str]] = {}
    lines: list[str] = []
    if rank:
        lines.append("  long long r = lin;")
        for d in range(rank - 1, -1, -1):
            lines.append(f"  const long long i{d} = r % {shape[d]}LL; r /= {shape[d]}LL;")
    for k, desc in enumerate(group.inputs):
        params.append(f"const {_STORAGE[desc.dtype]}* __restrict__ in{k}")
        index = " + ".join(f"i{d} * st{k}_{d}" for d in range(rank)) or "0"
        load = f"in{k}[{index}]"
        if desc.dtype is DType.float16:
            load = f"__half2float({load})"
        lines.append(f"  const {_COMPUTE[desc.dtype]} v{k} = {load};")
        values[Ref("input", k)] = (f"v{k}", _COMPUTE[desc.dtype])
    for slot, j in enumerate(group.outputs):
        params.append(f"{_STORAGE[group.ops[j].dtype]}* __restrict__ out{slot}")
    red = group.reduction
    if red is not None:
        params.append(f"{_STORAGE[red.dtype]}* __restrict__ red")
    params += ["long long n", "long long outs", "long long size", "long long inner"]
    rounded = group.rounded_scalars()
    for i, dt in enumerate(group.scalars):
        c_type = "double" if dt.is_float else "long long"
        params.append(f"{c_type} s{i}")
        value = f"(({_COMPUTE[dt]})s{i})"
        if i in rounded:  # a float16 add, sub, remainder, pow or comparison: torch's rule
            value = f"bp_round_half({value})"
        values[Ref("scalar", i)] = (value, _COMPUTE[dt])
    for k in range(len(group.inputs)):
        params += [f"long long st{k}_{d}" for d in range(rank)]
    for j, op in enumerate(group.ops):
        expr = _op_expr(op, [values[r] for r in op.operands])
        if op.dtype is DType.float16:
            expr = f"bp_round_half({expr})"
        lines.append(f"  const {_work(op)} t{j} = {expr};")
        values[Ref("local", j)] = (f"t{j}", _work(op))
    for slot, j in enumerate(group.outputs):
        value = f"t{j}"
        if group.ops[j].dtype is DType.float16:
            value = f"__float2half({value})"
        lines.append(f"  out{slot}[lin] = {value};")
    acc = "void"
    if red is not None:
        acc = "double" if red.dtype is DType.float64 else _COMPUTE[red.dtype]
        lines.append(f"  return ({acc})({values[red.operand][0]});")
    args = ", ".join(params)
    call_args = ", ".join([*[f"in{k}" for k in range(len(group.inputs))],
                           *[f"out{s}" for s in range(len(group.outputs))],
                           *([] if red is None else ["red"]), "lin",
                           *[f"s{i}" for i in range(len(group.scalars))],
                           *[f"st{k}_{d}" for k in range(len(group.inputs))
                             for d in range(rank)]])
    # elem takes the pointers, then lin, then the scalars and strides, in call order
    pointer_params = [p for p in params if "*" in p]
    rest = [p for p in params if "*" not in p and p.split()[-1] not in
            ("n", "outs", "size", "inner")]
    elem_params = ", ".join([*pointer_params, "long long lin", *rest])
    source = ["#include <cuda_fp16.h>", HELPERS,
              f"__device__ __forceinline__ {acc} elem({elem_params}) {{", *lines, "}", ""]
    source.append(f'extern "C" __global__ void burnpy_fused({args}) {{')
    if red is None:
        source += ["  const long long lin = (long long)blockIdx.x * blockDim.x + threadIdx.x;",
                   "  if (lin >= n) return;", f"  elem({call_args});", "}"]
        return "\n".join(source) + "\n"
    kahan = red.name in ("sum", "mean") and red.dtype.is_float
    ident = _IDENTITY.get(red.name)
    if ident is None:
        ident = (f"{'-' if red.name == 'max' else ''}INFINITY" if red.dtype.is_float
                 else _INT_LIMITS[red.dtype][red.name == "min"])
    combine = {"sum": "x + y", "mean": "x + y", "prod": "x * y"}.get(red.name)
    if combine is None:
        pick = "y > x" if red.name == "max" else "y < x"
        nan = "(x != x) ? x : (y != y) ? y : " if red.dtype.is_float else ""
        combine = f"{nan}(({pick}) ? y : x)"
    step = ("    { const " + acc + " yk = v - comp; const " + acc + " tk = total + yk; "
            "comp = (tk - total) - yk; total = tk; }") if kahan else (
        f"    {{ const {acc} x = total, y = v; total = {combine}; }}")
    finish = "total - comp" if kahan else "total"
    mean = f" / ({acc})size" if red.name == "mean" else ""
    store = "__float2half" if red.dtype is DType.float16 else f"({_STORAGE[red.dtype]})"
    head = [f"  {acc} total = ({acc})({ident});" + (f" {acc} comp = 0;" if kahan else ""),
            "  const long long base = (o / inner) * size * inner + o % inner;"]
    if kind == "rows":
        source += ["  const long long o = (long long)blockIdx.x * blockDim.x + threadIdx.x;",
                   "  if (o >= outs) return;", *head,
                   "  for (long long r_ = 0; r_ < size; ++r_) {",
                   "    const long long lin = base + r_ * inner;",
                   f"    const {acc} v = elem({call_args});", step, "  }",
                   f"  red[o] = {store}(({finish}){mean});", "}"]
        return "\n".join(source) + "\n"
    source += ["  const long long o = blockIdx.x;", *head,
               f"  __shared__ {acc} partial[{BLOCK}];",
               f"  for (long long r_ = threadIdx.x; r_ < size; r_ += {BLOCK}) {{",
               "    const long long lin = base + r_ * inner;",
               f"    const {acc} v = elem({call_args});", step, "  }",
               f"  partial[threadIdx.x] = {finish};", "  __syncthreads();",
               f"  for (int s = {BLOCK // 2}; s > 0; s >>= 1) {{",
               "    if (threadIdx.x < s) {",
               f"      const {acc} x = partial[threadIdx.x], y = partial[threadIdx.x + s];",
               f"      partial[threadIdx.x] = {combine};", "    }",
               "    __syncthreads();", "  }",
               f"  if (threadIdx.x == 0) red[o] = {store}((partial[0]){mean});", "}"]
    return "\n".join(source) + "\n"


class CudaFuser:
    """Compiles ``Fusion(CudaBackend)``'s groups into single CUDA kernels (via CuPy)."""

    __slots__ = ()

    def accepts(self, op: str, dtypes: tuple[DType, ...]) -> bool:
        """Whether ``op`` has a CUDA C form (``burnpy.ir.elementwise``) for ``dtypes``
        (operands', then the result's)."""
        if not all(d in _STORAGE for d in dtypes):
            return False
        if op in ("sum", "prod", "max", "min"):
            return dtypes[0] is not DType.bool_
        if op == "mean":
            return dtypes[0].is_float
        entry = ELEMENTWISE.get(op)
        if entry is None:
            return False
        if entry.kind in ("where", "copy", "cast"):
            return True
        if entry.cuda is None:
            return False
        if entry.kind == "compare":
            return True
        if entry.kind == "logic":
            return all(d is DType.bool_ for d in dtypes)
        if entry.kind == "test":
            return dtypes[0].is_float
        result = dtypes[-1]
        if result.is_float:
            return entry.cuda.float is not None
        return result is not DType.bool_ and entry.cuda.int is not None

    def compile(self, group: FusedGroup) -> FusedKernel | None:
        """The group's kernel (built with CuPy on its first launch)."""
        return FusedCudaProgram(group)


class FusedCudaProgram:
    """A compiled group: ``program(inputs, scalars)`` launches it once on the inputs' GPU."""

    __slots__ = ("group", "kernels", "launch")

    def __init__(self, group: FusedGroup) -> None:
        self.group = group
        self.kernels: dict[int, Any] = {}
        self.launch = kind_of(group)

    def __call__(self, inputs: Sequence[Any], scalars: Sequence[float | int | bool]
                 ) -> tuple[Any, ...]:
        from burnpy_cuda.runtime import require_cupy

        cupy = require_cupy()[0]
        group = self.group
        kind, outs, size, inner = self.launch
        rank = len(group.shape)
        device = inputs[0].device if inputs else cupy.cuda.Device()
        with device:
            results = [cupy.empty(group.shape, dtype=group.ops[j].dtype.numpy)
                       for j in group.outputs]
            if group.reduction is not None:
                if size == 0:
                    raise ValueError("fused reduction over an empty dim: run unfused")
                results.append(cupy.empty(group.reduction.shape,
                                          dtype=group.reduction.dtype.numpy))
            n = int(np.prod(group.shape, dtype=np.int64))
            if n == 0:
                return tuple(results)
            kernel = self.kernels.get(rank)
            if kernel is None:
                kernel = self.kernels[rank] = cupy.RawKernel(
                    cuda_source(group, rank), "burnpy_fused", options=("--std=c++14",))
            strides = []
            for t in inputs:
                view = cupy.broadcast_to(t, group.shape)
                strides += [np.int64(s // t.itemsize) for s in view.strides]
            words = [np.float64(v) if dt.is_float else np.int64(int(v))
                     for v, dt in zip(scalars, group.scalars, strict=True)]
            args = (*inputs, *results, np.int64(n), np.int64(outs), np.int64(size),
                    np.int64(inner), *words, *strides)
            blocks = (-(-n // BLOCK) if kind == "map" else
                      -(-outs // BLOCK) if kind == "rows" else outs)
            kernel((blocks,), (BLOCK,), args)
        return tuple(results)


_FUSER = CudaFuser()


def cuda_fuser() -> CudaFuser:
    """The fuser ``CudaBackend.fuser()`` declares."""
    return _FUSER
