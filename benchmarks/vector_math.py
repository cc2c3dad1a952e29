"""Benchmark: ``burnpy_cpu.vector_math``'s float32 functions against NumPy's, on 4M values.

Per function, two settings:

1. alone: NumPy's loop (``np.exp(x, out=o)``: SVML's AVX-512 loops where NumPy has them)
   against vector_math's vectorized numba loop and numba's per-element libm call (what the
   CPU fuser compiled before vector_math; sin, cos and tan in their bounded forms);
2. in a group of five ops, ``f(x * 0.999 + 0.001) * 3 - 1``: NumPy op by op (allocating, as
   CpuBackend does) against the CPU fuser's one kernel for the group (what ``Fusion`` runs
   for it when the op is not declined).

float32, one thread, candidates alternating in one process, medians of wall time and of the
thread's CPU time (``time.thread_time``, which a loaded machine inflates less).
Run: ``.venv/bin/python benchmarks/vector_math.py [--rounds N] [--only exp,tanh]``.
"""

from __future__ import annotations

import os

for _var in ("OMP_NUM_THREADS", "OPENBLAS_NUM_THREADS", "MKL_NUM_THREADS", "NUMBA_NUM_THREADS"):
    os.environ[_var] = "1"

import argparse  # noqa: E402
from collections.abc import Callable  # noqa: E402

import _timing  # noqa: E402
import numba  # noqa: E402
import numpy as np  # noqa: E402

from burnpy.backend.dtype import DType  # noqa: E402
from burnpy.ir import FusedGroup, FusedOp, Ref, TensorDesc  # noqa: E402
from burnpy_cpu import vector_math  # noqa: E402
from burnpy_cpu.fuser import CpuFuser  # noqa: E402

SIZE = 1 << 22
NUMPY = {"exp": np.exp, "log": np.log, "log1p": np.log1p, "tanh": np.tanh,
         "sinh": np.sinh, "cosh": np.cosh, "sin": np.sin, "cos": np.cos, "tan": np.tan,
         "atan": np.arctan, "asin": np.arcsin, "acos": np.arccos, "asinh": np.arcsinh,
         "acosh": np.arccosh, "atanh": np.arctanh}


def inputs(name: str) -> np.ndarray:
    """4M float32 values in the function's domain."""
    x = np.random.default_rng(0).uniform(-3, 3, SIZE).astype(np.float32)
    if name in ("log", "log1p"):
        return np.abs(x) + np.float32(0.01)
    if name == "acosh":
        return np.abs(x) + np.float32(1)
    if name in ("asin", "acos", "atanh"):
        return x / np.float32(3.01)
    return x


def libm_loop(function: Callable[[np.ndarray], np.ndarray]) -> Callable[..., None]:
    """numba's loop calling libm once per element (the fuser's form before vector_math)."""
    @numba.njit(error_model="numpy", nogil=True)
    def run(x: np.ndarray, out: np.ndarray) -> None:
        for i in range(x.size):
            out[i] = function(x[i])

    return run


def fused_group(name: str) -> Callable[[np.ndarray], np.ndarray]:
    """The CPU fuser's kernel for ``name(x * 0.999 + 0.001) * 3 - 1`` on float32."""
    f32 = DType.float32
    ops = (FusedOp("mul", (Ref("input", 0), Ref("scalar", 0)), f32),
           FusedOp("add", (Ref("local", 0), Ref("scalar", 1)), f32),
           FusedOp(name, (Ref("local", 1),), f32),
           FusedOp("mul", (Ref("local", 2), Ref("scalar", 2)), f32),
           FusedOp("sub", (Ref("local", 3), Ref("scalar", 3)), f32))
    group = FusedGroup((SIZE,), (TensorDesc((SIZE,), f32),), (f32,) * 4, ops, (4,), None)
    kernel = CpuFuser(min_elements=0, declined=frozenset()).compile(group)
    assert kernel is not None
    return lambda x: kernel([x], [0.999, 0.001, 3.0, 1.0])[0]


def report(title: str, med: dict[str, tuple[float, float]], base: str) -> None:
    cells = []
    for name, (wall, cpu) in med.items():
        ratio = "" if name == base else (f" ({med[base][0] / wall:.2f}x wall, "
                                         f"{med[base][1] / cpu:.2f}x CPU)")
        cells.append(f"{name} {wall * 1e3:.2f} ms, CPU {cpu * 1e3:.2f}{ratio}")
    print(f"  {title:6s} " + "; ".join(cells), flush=True)


def bench(name: str, rounds: int) -> None:
    """Print ``name``'s two settings (see the module docstring)."""
    x = inputs(name)
    out = np.empty_like(x)
    numpy_fn = NUMPY[name]
    vector = vector_math.elementwise(name, name in vector_math.BOUNDED)
    libm = libm_loop(numpy_fn)
    group = fused_group(name)
    print(name)
    report("alone", _timing.alternate_clocks({
        "numpy": lambda: numpy_fn(x, out=out), "vector_math": lambda: vector(x, out),
        "numba+libm": lambda: libm(x, out)}, rounds), "numpy")
    report("group", _timing.alternate_clocks({
        "numpy": lambda: numpy_fn(x * np.float32(0.999) + np.float32(0.001)) * np.float32(3)
        - np.float32(1), "fused": lambda: group(x)}, rounds), "numpy")


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__)
    p.add_argument("--rounds", type=int, default=15)
    p.add_argument("--only", default="", help="comma-separated function names")
    args = p.parse_args()
    names = [n for n in args.only.split(",") if n] or list(vector_math.FLOAT32)
    print(f"{SIZE} float32 values, one thread, median of {args.rounds} alternating rounds; "
          "ratios are NumPy's time / the candidate's")
    for name in names:
        bench(name, args.rounds)


if __name__ == "__main__":
    main()
