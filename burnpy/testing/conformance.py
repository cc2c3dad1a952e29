"""The forward conformance runner: one ``OpCase`` on one backend and dtype, checked against torch.

``run_case`` draws the case's inputs, runs ``case.fn`` on burnpy Tensors of the backend and
``case.torch_fn or case.fn`` on CPU torch tensors holding the same values, and compares every
output's shape, kind, dtype and values (NaN where torch has NaN, within per-dtype tolerances).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING, Any, NoReturn

import numpy as np

from burnpy.backend.base import Backend
from burnpy.backend.dtype import DType
from burnpy.backend.errors import BurnpyError, UnsupportedDTypeError
from burnpy.backend.registry import backend_named, default_backend
from burnpy.tensor import Tensor
from burnpy.testing.cases import CASES, Arg, OpCase
from burnpy.testing.lazy import LazyModule
from burnpy.testing.module_cases import MODULE_CASES

if TYPE_CHECKING:
    import pytest
    import torch
else:  # imported when a case runs: registering the cases needs neither
    pytest, torch = LazyModule("pytest"), LazyModule("torch")

#: (rtol, atol) per float output dtype; int and bool outputs must match exactly.
TOLERANCES: dict[str, tuple[float, float]] = {
    "float64": (1e-12, 1e-12),
    "float32": (1e-5, 1e-6),
    "float16": (1e-2, 1e-3),
    "bfloat16": (2e-2, 1e-2),
}

def backends_available() -> list[type[Backend]]:
    """Every backend class importable and usable here: the default (CpuBackend), plus
    wgpu/CUDA if present."""
    found: list[type[Backend]] = [default_backend()]
    for name in ("wgpu", "cuda"):
        try:
            backend = backend_named(name)
            if backend.devices():
                found.append(backend)
        except (ImportError, BurnpyError):
            continue
    return found


def supported(backend: type[Backend], dtype: str) -> bool:
    """Whether ``backend`` stores and computes ``dtype`` on its default device."""
    return bool(backend.supports_dtype(backend.default_device(), DType.of(dtype)))


def parametrize_cases(backend: type[Backend], cases: Sequence[OpCase] | None = None,
                      id_prefix: str = "") -> list[Any]:
    """``pytest.param(case, dtype)`` for every case and dtype (by default the op table and the
    module-op cases), ids ``"<case>-<dtype>"``; dtypes the backend does not support are
    skipped with the reason. An int case (``"int64"``) runs in the backend's int dtype, as
    its int args do (``"<case>-int32"`` on WebGPU)."""
    params = []
    for c in [*CASES, *MODULE_CASES] if cases is None else cases:
        for listed in c.dtypes:
            dtype = backend.int_dtype.value if listed == "int64" else listed
            marks = () if supported(backend, dtype) else pytest.mark.skip(
                reason=f"{backend.__name__} does not support {dtype}")
            params.append(pytest.param(c, dtype, id=f"{id_prefix}{c.name}-{dtype}", marks=marks))
    return params


def conformance_tests(backend: type[Backend], seed: int = 0) -> Any:
    """A pytest test function running every case on ``backend``: assign it to a ``test_`` name."""

    @pytest.mark.parametrize(("case", "dtype"), parametrize_cases(backend))
    def test_conformance(case: OpCase, dtype: str) -> None:
        run_case(case, backend, dtype, seed)

    return test_conformance


def run_case(case: OpCase, backend: type[Backend], dtype: str, seed: int = 0) -> None:
    """Run ``case`` with float inputs of ``dtype`` on ``backend`` and on torch; raise
    AssertionError naming the case, the output and the worst element on any mismatch."""
    where = f"case {case.name!r} [{dtype}] on {backend.__name__}"
    rng = np.random.default_rng(seed)
    arrays = [_draw(arg, rng, dtype, case.name) for arg in case.args]
    try:
        ours = case.fn(*[to_burnpy(a, arr, backend) for a, arr in zip(case.args, arrays,
                                                                       strict=True)])
    except UnsupportedDTypeError as exc:
        dtype_gap(case, where, exc)
    theirs = (case.torch_fn or case.fn)(*[_to_torch(arr) for arr in arrays])
    ours_list, theirs_list = _outputs(ours), _outputs(theirs)
    if len(ours_list) != len(theirs_list):
        raise AssertionError(f"{where}: {len(ours_list)} outputs, torch gives "
                             f"{len(theirs_list)}")
    for i, (got, want) in enumerate(zip(ours_list, theirs_list, strict=True)):
        _compare(f"{where}, output {i}", got, want, case)


def dtype_gap(case: OpCase, where: str, exc: UnsupportedDTypeError) -> NoReturn:
    """Skip ``case`` when the backend refused a dtype the case asks for itself
    (``asks_dtypes``): a declared gap. Any other refusal fails, naming the case."""
    refused = None if exc.dtype is None else exc.dtype.value
    if refused is not None and refused in case.asks_dtypes:
        pytest.skip(f"{where}: the case asks for {refused}: {exc}")
    raise AssertionError(f"{where}: {exc} (a dtype the case does not ask for: the op or the "
                         "case builds it; list it in asks_dtypes only if the case means to)"
                         ) from exc


def _draw(arg: Arg, rng: np.random.Generator, dtype: str, name: str) -> np.ndarray:
    if arg.kind != "float":
        return arg.draw(rng, np.dtype(np.int64))
    dt = DType.of(dtype)
    if not dt.is_float:
        raise ValueError(f"case {name!r}: a float argument needs a float dtype, got {dtype!r}")
    if dt is DType.bfloat16:
        return arg.draw(rng, np.dtype(np.float32)).astype(dt.numpy)
    return arg.draw(rng, dt.numpy)


def to_burnpy(arg: Arg, arr: np.ndarray, backend: type[Backend]) -> Tensor:
    """A Tensor of ``backend``; a non-contiguous argument stays a non-contiguous view; int
    arguments in the backend's int dtype (int64 on CPU, int32 on WebGPU)."""
    if arr.dtype.kind in "iu":
        arr = arr.astype(backend.int_dtype.numpy)
    if arr.flags.c_contiguous or arr.ndim < 2:
        return Tensor.from_data(arr, backend=backend)
    base = Tensor.from_data(np.ascontiguousarray(arr.T), backend=backend)
    return base.permute(tuple(reversed(range(arr.ndim))))


def _to_torch(arr: np.ndarray) -> torch.Tensor:
    if arr.dtype == DType.bfloat16.numpy:
        return torch.from_numpy(arr.astype(np.float32)).to(torch.bfloat16)
    return torch.from_numpy(arr)


def _outputs(result: Any) -> list[Any]:
    if isinstance(result, Sequence) and not isinstance(result, Tensor | torch.Tensor):
        return list(result)
    return [result]


def _torch_dtype_name(t: torch.Tensor) -> str:
    return str(t.dtype).removeprefix("torch.")


def _compare(where: str, got: Any, want: Any, case: OpCase) -> None:
    if not isinstance(got, Tensor):
        raise AssertionError(f"{where}: expected a burnpy Tensor, got {type(got).__name__}")
    want = want.detach()
    if got.shape != tuple(want.shape):
        raise AssertionError(f"{where}: shape {got.shape}, torch gives {tuple(want.shape)}")
    want_dtype = _torch_dtype_name(want)
    if want_dtype == "int64" and got.kind == "int" and got.dtype is got.backend.int_dtype:
        want_dtype = got.dtype.value  # a backend without int64 answers in its own int dtype
    if (want_dtype == "float64" and got.dtype is DType.float32
            and not got.backend.supports_dtype(got.device, DType.float64)):
        want_dtype = "float32"  # torch widens to float64 (bincount of float16); WebGPU can't
    if got.dtype.value != want_dtype:
        raise AssertionError(f"{where}: dtype {got.dtype.value}, torch gives {want_dtype}")
    actual = got.to_numpy()
    if want.dtype in (torch.float16, torch.bfloat16):
        want = want.float()
    expected = want.numpy()
    if got.kind != "float":
        if not np.array_equal(actual, expected):
            bad = np.argwhere(actual != expected)[:5].tolist()
            raise AssertionError(f"{where}: values differ at {bad}\n got {actual}\n"
                                 f" torch {expected}")
        return
    rtol, atol = TOLERANCES[got.dtype.value]
    rtol = max(rtol, case.rtol or 0.0)
    atol = max(atol, case.atol or 0.0)
    a, e = actual.astype(np.float64), expected.astype(np.float64)
    if case.accumulates and e.size:
        atol = max(atol, rtol * float(np.nanmax(np.abs(e), initial=0.0)))
    nan_a, nan_e = np.isnan(a), np.isnan(e)
    if not np.array_equal(nan_a, nan_e):
        raise AssertionError(f"{where}: NaN at {np.argwhere(nan_a).tolist()[:5]}, torch has "
                             f"NaN at {np.argwhere(nan_e).tolist()[:5]}")
    with np.errstate(invalid="ignore"):
        err = np.where((a == e) | nan_a, 0.0, np.abs(a - e))
        bad = ~(err <= atol + rtol * np.abs(np.where(nan_e, 0.0, e)))
    if bad.any():
        worst = np.unravel_index(int(np.argmax(np.where(bad, err, -1.0))), a.shape)
        raise AssertionError(
            f"{where}: {int(bad.sum())} of {a.size} values outside rtol={rtol}, atol={atol}; "
            f"worst at {tuple(int(i) for i in worst)}: got {a[worst]!r}, torch {e[worst]!r} "
            f"(abs err {err[worst]:.3g})")
