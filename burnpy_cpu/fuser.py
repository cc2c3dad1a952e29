"""The CPU fuser: each fused group becomes one numba-compiled loop over its broadcast shape.

The loop is generated as Python source (``_source``, which returns it; its function keeps it
for tracebacks, see ``burnpy.fusion.source``): a flat loop when every input has the group's shape,
nested loops over broadcast views otherwise (a stretched dim has stride 0), the ops inlined as
scalar expressions (float32 transcendental functions are ``vector_math``'s, which LLVM
vectorizes, where numba calls libm per element), only the group's outputs stored. Floats sum
in float64. Big groups run multi-threaded (``prange``) when numba has more than one thread.
Kernels are cached by their source, so equal groups of different Fusion classes compile once.
"""

from __future__ import annotations

import functools
import math
import operator
import threading
from collections.abc import Callable, Sequence
from typing import Any

import numpy as np

from burnpy.backend.dtype import DType
from burnpy.fusion.fuser import FusedKernel, composites_calling
from burnpy.fusion.source import define
from burnpy.ir.fused import ELEMENTWISE, FusedGroup, Ref
from burnpy_cpu.array_ops._shared import float32_kernels

#: The dtypes numba computes natively (float16 and bfloat16 stay on NumPy).
_DTYPES = frozenset({DType.float64, DType.float32, DType.int64, DType.int32, DType.int16,
                     DType.int8, DType.uint8, DType.bool_})

_REDUCTIONS = frozenset({"sum", "mean", "prod", "max", "min"})
#: Float ops the fuser declines by default, so that they run on NumPy and cut the group there
#: (the registry's ``numpy_faster`` ops): numba (without Intel's SVML) calls libm once per
#: element for them, 5 to 40 times slower than NumPy's SIMD loops on 4M float32 values (exp
#: 9.7 ms against 1.9, tanh 54 against 1.6), more than the memory traffic fusing them saves.
#: ``erf`` (no SIMD in NumPy/SciPy either), ``sqrt`` and the roundings are native
#: instructions or on par, so they stay fused. On float32 most are fused (``FUSED_FLOAT32``).
NUMPY_FASTER = frozenset(op.name for op in ELEMENTWISE.values() if op.numpy_faster)
#: The ops of ``NUMPY_FASTER`` fused all the same on float32: float32 groups compute them with
#: ``vector_math``'s functions, which LLVM vectorizes (float64 groups keep libm). Alone, on 4M
#: values and one core, they take 0.7 (exp) to 2.2 (tan) times NumPy's time (SVML's AVX-512
#: loops); in a group of five ops (``benchmarks/vector_math.py``) they save more than that,
#: one pass over memory per op: 1.2 (atan) to 2.5 (exp) times faster than NumPy op by op.
#: asinh, acosh and atanh only break even there (0.97-1.11x) and are left to NumPy; pow and
#: atan2 have no such function.
FUSED_FLOAT32 = frozenset({"exp", "log", "log1p", "tanh", "sin", "cos", "tan", "sinh", "cosh",
                           "atan", "asin", "acos"})

#: Below this many elements ops run eagerly on NumPy: a group's fixed cost (recording, the
#: plan lookup, numba's argument checks, about 15 us) is more than the memory traffic fusion
#: saves (on one core, 2 float32 ops on 64K values: 21 us fused against 15 on NumPy; 4 ops:
#: 31 against 43). Groups of 64K values in training steps are mostly one or two ops (a
#: residual add, a gradient accumulated), so fusing starts at 128K: the MLP step, whose only
#: recorded op at 64K was a lone gradient add, is 2-4% faster without recording it.
MIN_ELEMENTS = 1 << 17
#: From this many elements on, ``Fusion`` keeps zeros unwritten until read (see
#: ``burnpy.fusion.tensor.Unwritten``), far below the kernel floor: a chunk's or a split's
#: padded gradients then sum to one concatenation, where NumPy writes zeros, a concatenation
#: per piece and an add per sum. Three chunks' gradients (one core, warm allocator) of 8K
#: float32 values each: 27 us against 31 op by op; 16K: 28 against 49; 64K: 48 against 157;
#: but 4K, whose 4K zeros are written and 8K ones not: 38 against 21. The GPT example's q, k, v
#: gradients (64K values each) are written by one concatenation a layer.
UNWRITTEN_ELEMENTS = 1 << 13
#: From this many elements on, a kernel is compiled with ``parallel=True`` (if numba has threads).
PARALLEL_ELEMENTS = 1 << 18


class CpuFuser:
    """Compiles ``FusedGroup``s to numba loops (see the module docstring)."""

    def __init__(self, min_elements: int = MIN_ELEMENTS,
                 declined: frozenset[str] = NUMPY_FASTER,
                 unwritten_elements: int = UNWRITTEN_ELEMENTS) -> None:
        self.min_elements = min_elements
        #: The fewest elements of zeros that ``Fusion`` keeps unwritten (``UNWRITTEN_ELEMENTS``).
        self.unwritten_elements = unwritten_elements
        #: Float ops left to NumPy (``NUMPY_FASTER``); an empty set fuses every op.
        self.declined = declined
        self._own_ops: frozenset[str] | None = None
        self._kernels: dict[str, Callable[..., Any]] = {}
        self._lock = threading.Lock()

    @property
    def own_ops(self) -> frozenset[str]:
        """Composites CpuBackend computes as one pass of its own (see burnpy.fusion.fuser):
        those whose composition calls an op in ``declined`` (sigmoid's exp and log1p would
        run on NumPy one by one: 4M float32 values took 86 ms so against 41 for CpuBackend's
        sigmoid), found from the compositions once, on first use; and gelu, a compiled
        float32 loop there (``_float32_kernels``), faster than its composition fused."""
        if self._own_ops is None:
            from burnpy_cpu.backend import CpuBackend  # which imports this module

            self._own_ops = frozenset({"gelu"}) | composites_calling(CpuBackend, self.declined)
        return self._own_ops

    @own_ops.setter
    def own_ops(self, ops: frozenset[str]) -> None:
        self._own_ops = ops

    def accepts(self, op: str, dtypes: tuple[DType, ...]) -> bool:
        """Every vocabulary op with a numba expression (``burnpy.ir.elementwise``) on numba's
        dtypes: arithmetic on the kinds it has a form for (float-only functions, ``div`` and
        ``remainder`` on floats: NumPy's integer rules for 0 are kept on NumPy), tests on
        floats; never the float ops in ``declined``, which NumPy computes faster."""
        if not all(d in _DTYPES for d in dtypes):
            return False
        if op in _REDUCTIONS:
            return not dtypes[0].is_bool
        if op in self.declined and dtypes[0].is_float and not (
                op in FUSED_FLOAT32 and all(d is DType.float32 for d in dtypes)):
            return False
        entry = ELEMENTWISE.get(op)
        if entry is None or entry.numba is None:
            return False
        if entry.kind == "arithmetic":
            forms = entry.numba
            return (forms.float if dtypes[0].is_float else forms.int) is not None
        return entry.kind != "test" or dtypes[0].is_float

    def compile(self, group: FusedGroup) -> FusedKernel | None:
        """A kernel for ``group``, or None when it is too small to pay or writes every op's
        result: then it saves no write, only a re-read of values NumPy's SIMD loops stream at
        memory speed, and measured no faster (two adds of 196K float32 whose sum and partial
        sum are both kept, in the GPT step's backward: 47 us fused against 49 on NumPy,
        and the step 1-2% slower with the kernel, as the group keeps its inputs alive)."""
        size = math.prod(group.shape)
        if size < self.min_elements or (group.reduction is None
                                        and len(group.outputs) == len(group.ops)):
            return None
        parallel = size >= PARALLEL_ELEMENTS and _threads() > 1
        source, flat = _source(group, parallel)
        loop = self._compiled(source)
        exact: Callable[[], Callable[..., Any]] | None = None
        if _FLAGS in source:  # bounded sin/cos/tan: the exact loop compiled when first needed
            exact = functools.partial(self._compiled, _source(group, parallel, exact=True)[0])
        return _launcher(group, loop, flat, exact)

    @staticmethod
    def write_pieces(shape: tuple[int, ...], dtype: np.dtype[Any], dim: int,
                     blocks: Sequence[tuple[int, np.ndarray]]) -> np.ndarray:
        """Zeros of ``shape`` with ``blocks`` (``(start, array)`` along ``dim``) written over
        them, in one C-contiguous array: NumPy's concatenation keeps the layout of swapped
        pieces (a chunk's gradient swapped back), which the reshape reading it then copies
        (the GPT step's q, k, v gradient: 84 us of copy a layer)."""
        out = np.empty(shape, dtype)
        index: list[slice] = [slice(None)] * len(shape)
        position = 0
        for start, block in blocks:
            if start > position:
                index[dim] = slice(position, start)
                out[tuple(index)] = 0
            position = start + block.shape[dim]
            index[dim] = slice(start, position)
            out[tuple(index)] = block
        if position < shape[dim]:
            index[dim] = slice(position, shape[dim])
            out[tuple(index)] = 0
        return out

    def _compiled(self, source: str) -> Callable[..., Any]:
        with self._lock:
            found = self._kernels.get(source)
            if found is None:
                import numba  # the fusion path's dependency, imported on first compile

                namespace: dict[str, Any] = {"np": np, "math": math, "prange": numba.prange}
                if "erf32(" in source:  # CpuBackend's own float32 erf, inlined
                    namespace["erf32"] = float32_kernels().erf_value
                if "f32_" in source:  # vectorizable float32 functions, inlined
                    from burnpy_cpu import vector_math

                    namespace.update({f"f32_{name}": f for name, f in vector_math.FLOAT32.items()})
                    namespace.update({f"f32_{name}_bounded": f
                                      for name, f in vector_math.BOUNDED.items()})
                    namespace["f32_wide"] = vector_math.wide
                kernel = define(source, "kernel",
                                f"<burnpy_cpu fused kernel {len(self._kernels)}>", namespace)
                parallel = "prange" in source
                found = self._kernels[source] = numba.njit(
                    parallel=parallel, error_model="numpy", nogil=True)(kernel)
            return found


def _threads() -> int:
    import numba

    return int(numba.get_num_threads())


def _numpy_name(dtype: DType) -> str:
    return "np.bool_" if dtype is DType.bool_ else f"np.{dtype.value}"


def _accumulator(dtype: DType) -> DType:
    return DType.float64 if dtype.is_float else DType.int64


#: The int64 array argument of a loop computing sin, cos or tan with ``vector_math``'s bounded
#: forms (exact below ``BOUNDED_LIMIT``): it gets how many of their operands were wider, after
#: which the launcher runs the group's ``exact`` loop instead (table reductions, slower).
_FLAGS = "wide_flags"


def _source(group: FusedGroup, parallel: bool, exact: bool = False) -> tuple[str, bool]:
    """The loop's Python source, and whether it is flat (every input of the group's shape).
    float32 transcendental ops call ``vector_math``'s functions, sin, cos and tan their bounded
    forms, counting wide operands into ``_FLAGS`` (the exact forms if ``exact``)."""
    from burnpy_cpu import vector_math

    shape = group.shape
    reduction = group.reduction
    flat = all(d.shape == shape for d in group.inputs) and (
        reduction is None or reduction.dim is None)
    ndim = len(shape)
    ins = [f"in{i}" for i in range(len(group.inputs))]
    scalars = [f"s{i}" for i in range(len(group.scalars))]
    outs = [f"out{k}" for k in range(len(group.outputs))]
    params = ["shape", *ins, *scalars, *outs]
    if reduction is not None and reduction.dim is not None:
        params.append("red")
    bounded = not exact and any(op.dtype is DType.float32 and op.name in vector_math.BOUNDED
                                for op in group.ops)
    if bounded:
        params.append(_FLAGS)
    # a full reduction in parallel only for += and *=, the reductions prange knows
    full = reduction is not None and reduction.dim is None
    can_parallel = parallel and (reduction is None or (full and reduction.name in (
        "sum", "mean", "prod")) or (reduction.dim is not None and reduction.dim != 0))
    loop = "prange" if can_parallel else "range"
    lines = [f"def kernel({', '.join(params)}):"]
    indent = "    "
    if full:
        assert reduction is not None
        acc = _numpy_name(_accumulator(reduction.dtype))
        start = {"sum": "0", "mean": "0", "prod": "1", "max": "-np.inf", "min": "np.inf"}
        init = start[reduction.name]
        if not reduction.dtype.is_float and reduction.name in ("max", "min"):
            info = "np.iinfo(np.int64)"
            init = f"{info}.min" if reduction.name == "max" else f"{info}.max"
        lines.append(f"{indent}acc = {acc}({init})")
    if bounded:
        lines.append(f"{indent}wide = 0")
    if flat:
        lines.append(f"{indent}for i in {loop}(shape[0]):")
        indent += "    "
        index = "i"
    else:
        for d in range(ndim):
            lines.append(f"{indent}for i{d} in {loop if d == 0 else 'range'}(shape[{d}]):")
            indent += "    "
        index = ", ".join(f"i{d}" for d in range(ndim)) if ndim else "0"
    for i, name in enumerate(ins):
        lines.append(f"{indent}v{i} = {name}[{index}]")

    def operand(ref: Ref) -> str:
        return {"input": "v", "scalar": "s", "local": "t"}[ref.kind] + str(ref.index)

    for j, op in enumerate(group.ops):
        names = dict(zip("abc", map(operand, op.operands), strict=False))
        if op.name == "erf" and op.dtype is DType.float32:
            expression = "erf32(a)"  # CpuBackend's own float32 erf, as its unfused op
        elif op.dtype is DType.float32 and op.name in vector_math.BOUNDED and not exact:
            expression = f"f32_{op.name}_bounded(a)"
            lines.append(f"{indent}wide += f32_wide({names['a']})")
        elif op.dtype is DType.float32 and op.name in vector_math.FLOAT32:
            expression = f"f32_{op.name}(a)"
        elif op.name == "cast":
            expression = "a != 0" if op.dtype.is_bool else "a"
        else:
            expression = _expression(op.name, op.dtype)
        text = expression
        for letter, value in names.items():
            text = _substitute(text, letter, value)
        lines.append(f"{indent}t{j} = {_numpy_name(op.dtype)}({text})")
    for k, local in enumerate(group.outputs):
        lines.append(f"{indent}{outs[k]}[{index}] = t{local}")
    if reduction is not None:
        value = operand(reduction.operand)
        if reduction.dim is None:
            lines += _accumulate(indent, "acc", value, reduction.name)
        else:
            red_index = ", ".join("0" if d == reduction.dim else f"i{d}" for d in range(ndim))
            lines += _accumulate(indent, f"red[{red_index}]", value, reduction.name)
    if bounded:
        lines.append(f"    {_FLAGS}[0] = wide")
    if full:
        lines.append("    return acc")
    return "\n".join(lines) + "\n", flat


def _expression(name: str, dtype: DType) -> str:
    """The registry's numba expression of vocabulary op ``name`` for a result of ``dtype``."""
    forms = ELEMENTWISE[name].numba
    assert forms is not None, f"{name} has no numba expression"
    found = forms.float if dtype.is_float else forms.int
    assert found is not None, f"{name} has no numba expression for {dtype.value}"
    return found


def _accumulate(indent: str, target: str, value: str, name: str) -> list[str]:
    if name in ("sum", "mean"):
        return [f"{indent}{target} += {value}"]
    if name == "prod":
        return [f"{indent}{target} *= {value}"]
    compare = ">" if name == "max" else "<"
    return [f"{indent}if {value} {compare} {target} or {value} != {value}:",
            f"{indent}    {target} = {value}"]


def _substitute(expression: str, letter: str, value: str) -> str:
    """``expression`` with the operand name ``letter`` (a whole word) replaced by ``value``."""
    import re

    return re.sub(rf"\b{letter}\b", value, expression)


def _launcher(group: FusedGroup, loop: Callable[..., Any], flat: bool,
              exact: Callable[[], Callable[..., Any]] | None = None) -> FusedKernel:
    """``kernel(inputs, scalars)``: the inputs laid out for the loop, the outputs allocated.
    With ``exact`` (the loop counts wide operands into ``_FLAGS``), the group runs again
    with the loop ``exact()`` gives when the first pass flagged any."""
    shape = group.shape
    out_dtypes = [group.ops[j].dtype.numpy for j in group.outputs]
    scalar_types = [d.numpy.type for d in group.scalars]
    reduction = group.reduction
    start = {"sum": 0, "mean": 0, "prod": 1, "max": -np.inf, "min": np.inf}
    extents = (math.prod(shape),) if flat else shape
    count = 1
    if reduction is not None:
        count = math.prod(shape) if reduction.dim is None else shape[reduction.dim]
        acc_dtype = _accumulator(reduction.dtype).numpy
        red_dtype = reduction.dtype.numpy

    # the last call's scalars and their NumPy conversions: a compiled replay passes the same
    # constant objects at every call (checked by identity, so 0.0 is never -0.0), and a
    # dozen conversions cost more than the loop over a small group
    last: list[Any] = [(), []]

    def converted(scalars: Sequence[float | int | bool]) -> list[Any]:
        seen, made = last
        if len(seen) == len(scalars) and all(map(operator.is_, seen, scalars)):
            return made
        made = [t(s) for t, s in zip(scalar_types, scalars, strict=True)]
        last[:] = [tuple(scalars), made]
        return made

    def run(loop: Callable[..., Any], inputs: Sequence[Any],
            scalars: Sequence[float | int | bool], flags: tuple[Any, ...]) -> tuple[Any, ...]:
        if flat:
            args: list[Any] = [x.ravel() for x in inputs]
        else:
            args = [np.broadcast_to(x, shape) for x in inputs]
        args.insert(0, extents)
        args += converted(scalars)
        outs = [np.empty(shape, dtype) for dtype in out_dtypes]
        args += [o.ravel() for o in outs] if flat else outs
        if reduction is None:
            loop(*args, *flags)
            return tuple(outs)
        if reduction.dim is None:
            total = loop(*args, *flags)
            result = np.asarray(total / count if reduction.name == "mean" else total)
        else:
            init = start[reduction.name]
            if acc_dtype.kind != "f" and reduction.name in ("max", "min"):
                info = np.iinfo(np.int64)
                init = info.min if reduction.name == "max" else info.max
            red = np.full(reduction.shape, init, acc_dtype)
            loop(*args, red, *flags)
            result = red / count if reduction.name == "mean" else red
        return (*outs, result.astype(red_dtype, copy=False))

    def kernel(inputs: Sequence[Any], scalars: Sequence[float | int | bool]) -> tuple[Any, ...]:
        if exact is None:
            return run(loop, inputs, scalars, ())
        flags = np.empty(1, np.int64)
        results = run(loop, inputs, scalars, (flags,))
        return run(exact(), inputs, scalars, ()) if flags[0] else results

    return kernel


#: The fuser every CpuBackend class declares: one kernel cache for the process.
FUSER = CpuFuser()
