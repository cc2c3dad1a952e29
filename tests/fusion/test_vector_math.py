"""``burnpy_cpu.vector_math``: the CPU fuser's vectorizable float32 functions, within 2 ulp of
the correctly rounded result (the oracle: NumPy's float64 function on the same float32 value,
rounded to float32) over sweeps of the whole float32 range and at special values; and float32
groups computing them, fused, equal to eager NumPy within 1e-6."""

from __future__ import annotations

from collections.abc import Callable, Iterator

import numpy as np
import pytest

import burnpy as bp
from burnpy import Fusion, Tensor
from burnpy.backend.dtype import DType
from burnpy.ir import FusedGroup, FusedOp, Ref, TensorDesc
from burnpy_cpu import CpuBackend, vector_math
from burnpy_cpu.fuser import FUSED_FLOAT32, FUSER, NUMPY_FASTER, _source

F = Fusion(CpuBackend)

ORACLES: dict[str, Callable[[np.ndarray], np.ndarray]] = {
    "exp": np.exp, "log": np.log, "log1p": np.log1p, "tanh": np.tanh,
    "sinh": np.sinh, "cosh": np.cosh, "sin": np.sin, "cos": np.cos, "tan": np.tan,
    "atan": np.arctan, "asin": np.arcsin, "acos": np.arccos, "asinh": np.arcsinh,
    "acosh": np.arccosh, "atanh": np.arctanh}

#: Every 2053rd float32 bit pattern (2.1M values, every exponent and both signs: subnormals,
#: zeros, infinities, NaNs), then values special to some function.
SWEEP = np.arange(0, 1 << 32, 2053, dtype=np.uint64).astype(np.uint32).view(np.float32)
MAX = np.finfo(np.float32).max
TINY = np.finfo(np.float32).smallest_subnormal
SPECIAL = np.array([
    0.0, -0.0, np.inf, -np.inf, np.nan, TINY, -TINY, 1e-38, 1.1754942e-38, 1e-30, 1e-8, 1.0,
    -1.0, 1.0 + 2**-23, 1.0 - 2**-24, -1.0 + 2**-24, 0.5, 2.0, 88.72283, 88.72284, -87.33655,
    -103.97207, -103.97208, -104.5, 9.01, 89.41599, 89.416, 3.0e7, -1.0e10, 1.0e20, 3.0e38,
    MAX, -MAX, 2.0**20 - 0.5, 2.0**20, 16367173.0 * 2.0**72, 1.5707964, 3.1415927, 4.712389,
    1e-4, -1e-4, 0.25, 0.2679492, 3.732051, 0.7071068, 1.4142135], dtype=np.float32)


def _ordered(x: np.ndarray) -> np.ndarray:
    """float32 values as integers in their order (adjacent floats differ by 1, +-0 equal)."""
    bits = x.view(np.int32).astype(np.int64)
    return np.where(bits < 0, -(bits & 0x7FFFFFFF), bits)


def _ulps(got: np.ndarray, want: np.ndarray) -> np.ndarray:
    """The ulp distance of ``got`` from ``want``; a NaN on one side only counts as 2^40."""
    distance = np.abs(_ordered(got) - _ordered(want))
    nan_got, nan_want = np.isnan(got), np.isnan(want)
    distance[nan_got & nan_want] = 0
    distance[nan_got ^ nan_want] = 1 << 40
    return distance


def _oracle(name: str, x: np.ndarray) -> np.ndarray:
    with np.errstate(all="ignore"):
        return ORACLES[name](x.astype(np.float64)).astype(np.float32)


def _run(name: str, x: np.ndarray, bounded: bool = False) -> np.ndarray:
    out = np.empty_like(x)
    vector_math.elementwise(name, bounded)(x, out)
    return out


def _assert_close(name: str, x: np.ndarray, got: np.ndarray) -> None:
    want = _oracle(name, x)
    ulps = _ulps(got, want)
    worst = int(np.argmax(ulps))
    assert ulps[worst] <= 2, (name, x[worst], got[worst], want[worst], ulps[worst])
    zero = want == 0
    np.testing.assert_array_equal(np.signbit(got[zero]), np.signbit(want[zero]), err_msg=name)


@pytest.mark.parametrize("name", sorted(vector_math.FLOAT32))
def test_within_two_ulp_over_the_float32_range_and_at_special_values(name: str) -> None:
    for x in (SWEEP, SPECIAL):
        _assert_close(name, x, _run(name, x))


@pytest.mark.parametrize("name", sorted(vector_math.BOUNDED))
def test_bounded_trigonometry_is_exact_below_its_limit_and_flags_the_rest(name: str) -> None:
    for x in (SWEEP, SPECIAL):
        inside = np.abs(x) < vector_math.BOUNDED_LIMIT
        got = _run(name, x, bounded=True)
        _assert_close(name, x[inside], got[inside])
        assert np.isnan(got[np.isinf(x)]).all()
    flags = np.empty(SPECIAL.size, np.int64)
    count = _flag_counter()
    for i, v in enumerate(SPECIAL):
        flags[i] = count(np.array([v], np.float32))
    wide = (np.abs(SPECIAL) >= vector_math.BOUNDED_LIMIT) & np.isfinite(SPECIAL)
    np.testing.assert_array_equal(flags, wide.astype(np.int64))


def _flag_counter() -> Callable[[np.ndarray], int]:
    """``vector_math.wide`` summed over an array, compiled."""
    import numba

    wide = vector_math.wide

    @numba.njit
    def count(x: np.ndarray) -> int:
        total = 0
        for i in range(x.size):
            total += wide(x[i])
        return total

    return count


@pytest.fixture
def cpu_fuser_defaults() -> Iterator[None]:
    """The CPU fuser with its default declined ops, from 8 elements on."""
    before = FUSER.min_elements, FUSER.declined
    FUSER.min_elements, FUSER.declined = 8, NUMPY_FASTER
    F.flush()
    F._accepted.clear()
    F.stats.reset()
    yield
    FUSER.min_elements, FUSER.declined = before
    F._accepted.clear()


def _domain(name: str, n: int) -> np.ndarray:
    """``n`` float32 values inside ``name``'s domain, of both signs where it has them."""
    x = np.linspace(-3, 3, n, dtype=np.float32)
    if name in ("log", "log1p"):
        return np.abs(x) + np.float32(0.01)
    if name == "acosh":
        return np.abs(x) + np.float32(1)
    if name in ("asin", "acos", "atanh"):
        return x / np.float32(3.01)
    return x


@pytest.mark.usefixtures("cpu_fuser_defaults")
@pytest.mark.parametrize("name", sorted(vector_math.FLOAT32))
def test_float32_groups_fuse_the_vectorized_ops_and_match_eager(name: str) -> None:
    """The ops of ``FUSED_FLOAT32`` by default, the others (still declined: NumPy's loop is
    faster) where nothing is declined, as in ``bp.compile``'s replay of small runs."""
    f32 = (DType.float32, DType.float32)
    assert FUSER.accepts(name, f32) == (name in FUSED_FLOAT32)
    FUSER.declined = FUSER.declined if name in FUSED_FLOAT32 else frozenset()
    data = _domain(name, 4099)

    def group(x: Tensor) -> Tensor:
        return getattr(x * 0.999 + 0.0005, name)() * 3.0 - 0.25

    got = group(Tensor.from_data(data, backend=F)).to_numpy()
    assert F.stats.kernels == 1 and F.stats.eager_ops == 2  # from_data, into_data
    want = group(Tensor.from_data(data)).to_numpy()
    np.testing.assert_allclose(got, want, rtol=1e-6, atol=1e-6, err_msg=name)


@pytest.mark.usefixtures("cpu_fuser_defaults")
def test_float64_groups_keep_libm_and_leave_the_declined_ops_to_numpy() -> None:
    assert FUSER.accepts("tanh", (DType.float32, DType.float32))
    assert not FUSER.accepts("tanh", (DType.float64, DType.float64))
    assert not FUSER.accepts("pow", (DType.float32, DType.float32, DType.float32))
    for dtype, call in ((DType.float32, "f32_tanh("), (DType.float64, "np.tanh(")):
        group = FusedGroup((4,), (TensorDesc((4,), dtype),), (), (
            FusedOp("tanh", (Ref("input", 0),), dtype),
            FusedOp("neg", (Ref("local", 0),), dtype)), (1,), None)
        source, _ = _source(group, False)
        assert call in source and source.count("tanh") == 1


def _chain(x: Tensor) -> Tensor:
    """The issue's chain: per 5 ops a multiply, an add, tanh, sin and a subtraction."""
    for i in range(10):
        x = (x * 1.001 + 0.01).tanh().sin() - float(i) * 1e-3
    return x


@pytest.mark.usefixtures("cpu_fuser_defaults")
def test_the_transcendental_chain_is_one_kernel_equal_to_eager() -> None:
    data = np.abs(np.random.default_rng(0).standard_normal(4096)).astype(np.float32)
    got = _chain(Tensor.from_data(data, backend=F)).to_numpy()
    assert F.stats.kernels == 1
    np.testing.assert_allclose(got, _chain(Tensor.from_data(data)).to_numpy(), rtol=1e-6)


def test_the_compiled_chain_replays_fused_equal_to_eager() -> None:
    data = np.abs(np.random.default_rng(1).standard_normal(64)).astype(np.float32)
    step = bp.compile(_chain)
    x = Tensor.from_data(data, backend=bp.Capture(Fusion(CpuBackend)))
    want = _chain(Tensor.from_data(data)).to_numpy()
    for _ in range(3):
        np.testing.assert_allclose(step(x).to_numpy(), want, rtol=1e-6)
    assert step.cache_info().replays == 2


@pytest.mark.usefixtures("cpu_fuser_defaults")
@pytest.mark.parametrize("name", sorted(vector_math.BOUNDED))
def test_wide_trigonometric_operands_run_the_group_again_exactly(name: str) -> None:
    """A group whose sin, cos or tan meets |x| >= 2^20 (here 3e7, 1e30, -3e38 among ordinary
    values) gives what eager NumPy gives, from the exact loop run after the fast one."""
    data = np.linspace(-4, 4, 64, dtype=np.float32)
    data[[3, 17, 40]] = [3.0e7, 1.0e30, -3.0e38]

    def group(x: Tensor) -> Tensor:
        return getattr(x * 1.0 + 0.0, name)() * 2.0

    got = group(Tensor.from_data(data, backend=F)).to_numpy()
    assert F.stats.kernels == 1
    np.testing.assert_allclose(got, group(Tensor.from_data(data)).to_numpy(), rtol=1e-6,
                               atol=1e-6, err_msg=name)
