"""uint16, uint32 and uint64 (torch's "shell" unsigned dtypes): creation, round trips, casts,
promotion, arithmetic, reductions, bitwise ops and shifts on CpuBackend against torch where
torch has the op and NumPy where it does not (torch 2.13 has no uint16/32/64 add, compare,
max or shift on CPU); WebGPU's uint32 and its refusal of the other two; records."""

from __future__ import annotations

import itertools
import operator
from collections.abc import Callable
from pathlib import Path
from typing import Any

import numpy as np
import pytest
import torch
from safetensors.torch import load_file, save_file

import burnpy as bp
from burnpy import DType, Fusion, Tensor, record
from burnpy.autodiff import Autodiff
from burnpy.backend.errors import BurnpyError, DTypeError, KindError, UnsupportedDTypeError
from burnpy_cpu import CpuBackend
from burnpy_wgpu import WgpuBackend

UNSIGNED = [bp.uint16, bp.uint32, bp.uint64]
#: Every float and int dtype, for promotion and casts.
NUMERIC = [bp.float64, bp.float32, bp.float16, bp.bfloat16, bp.int64, bp.int32, bp.int16,
           bp.int8, bp.uint8, *UNSIGNED]


def _torch(dtype: DType) -> torch.dtype:
    return getattr(torch, dtype.value)


def _values(dtype: DType) -> np.ndarray:
    """Small values, the dtype's top and (above int64 for uint64) a wrapping one."""
    top = int(np.iinfo(dtype.numpy).max)
    values = [0, 1, 2, 7, 200, 4097 % (top + 1), top - 1, top]
    if dtype is bp.uint64:
        values.append(2**63 + 5)
    return np.array(values, dtype=dtype.numpy)


def _pair(dtype: DType) -> tuple[np.ndarray, np.ndarray]:
    a = _values(dtype)
    b = np.roll(a, 3)
    b[b == 0] = 3  # divisors
    return a, b


def _same(ours: Tensor, want: np.ndarray | torch.Tensor) -> None:
    if isinstance(want, torch.Tensor):
        expected = (want.view(torch.int16).numpy().view(bp.bfloat16.numpy)
                    if want.dtype == torch.bfloat16 else want.numpy())
    else:
        expected = np.asarray(want)
    got = ours.to_numpy()
    assert got.dtype == expected.dtype, (got.dtype, expected.dtype)
    np.testing.assert_array_equal(got, expected)


# ---- names, creation, round trips -------------------------------------------------------------
@pytest.mark.parametrize("dtype", UNSIGNED, ids=str)
def test_names_kind_and_numpy_storage(dtype: DType) -> None:
    bits = dtype.itemsize * 8
    assert getattr(bp, dtype.value) is dtype is DType.of(dtype.value) is DType.of(f"u{bits}")
    assert DType.of(dtype.numpy) is dtype and DType.of(np.dtype(dtype.value).type) is dtype
    assert dtype.is_int and dtype.kind == "int" and not dtype.is_float
    assert repr(dtype) == f"bp.{dtype.value}"


@pytest.mark.parametrize("backend", [CpuBackend, Autodiff(CpuBackend), Fusion(CpuBackend)],
                         ids=lambda b: b.name())
@pytest.mark.parametrize("dtype", UNSIGNED, ids=str)
def test_numpy_and_torch_round_trip(dtype: DType, backend: type[bp.Backend]) -> None:
    arr = _values(dtype)
    t = Tensor.from_data(arr, backend=backend)
    assert t.dtype is dtype and t.kind == "int"
    _same(t, arr)
    assert t.tolist() == [int(v) for v in arr]
    assert t[-1].item() == int(arr[-1])
    from_torch = Tensor.from_data(torch.from_numpy(arr.copy()), backend=backend)
    assert from_torch.dtype is dtype
    _same(from_torch, arr)
    assert Tensor.from_data([1, 2], dtype=dtype, backend=backend).dtype is dtype
    assert Tensor.zeros((2,), dtype=dtype, backend=backend).to_numpy().dtype == dtype.numpy
    with np.errstate(over="ignore"):  # the decorators pass int ops through (Fusion eagerly)
        _same(((t * 3 + t) >> 1) ^ t, ((arr * np.array(3, arr.dtype) + arr) >> 1) ^ arr)
    _same(t.sum(), torch.from_numpy(arr.copy()).sum())


# ---- promotion -----------------------------------------------------------------------------
@pytest.mark.parametrize(("left", "right"), list(itertools.product(NUMERIC, NUMERIC)),
                         ids=lambda d: str(d.value))
def test_promotion_matches_torch_promote_types(left: DType, right: DType) -> None:
    """Every pair, through both the fast path (equal shapes) and the general one (broadcast):
    same-kind pairs meet where ``torch.promote_types`` says, or fail where torch refuses
    (uint16/32/64 with any other int); an int with a float is burnpy's documented error
    (cast with ``.float()``), where torch would give the float."""
    a = Tensor.ones((2, 3), dtype=left)
    for b in (Tensor.ones((2, 3), dtype=right), Tensor.ones((3,), dtype=right)):
        try:
            want: torch.dtype | None = torch.promote_types(_torch(left), _torch(right))
        except RuntimeError:
            want = None
        if left.kind != right.kind:
            with pytest.raises(DTypeError, match=rf"add: .*{left.value}.*{right.value}"):
                _ = a + b
        elif want is None:
            with pytest.raises(DTypeError, match=rf"add: bp\.{left.value} and bp\.{right.value} "
                                                 "have no common dtype"):
                _ = a + b
            with pytest.raises(DTypeError, match="cat: "):
                bp.cat([a, b.expand((2, 3))])
        else:
            assert _torch((a + b).dtype) == want
            assert _torch((a * b).dtype) == want
            assert (a == b).dtype is bp.bool_


# ---- casts ---------------------------------------------------------------------------------
@pytest.mark.parametrize("target", [*NUMERIC, bp.bool_], ids=str)
@pytest.mark.parametrize("dtype", UNSIGNED, ids=str)
def test_cast_from_unsigned_matches_torch(dtype: DType, target: DType) -> None:
    """uint -> every dtype: ints wrap as in C (uint64's top is -1 in int64), floats round."""
    arr = _values(dtype)
    _same(Tensor.from_data(arr).to(target), torch.from_numpy(arr.copy()).to(_torch(target)))


@pytest.mark.parametrize("source", [*NUMERIC, bp.bool_], ids=str)
@pytest.mark.parametrize("dtype", UNSIGNED, ids=str)
def test_cast_to_unsigned_matches_torch(dtype: DType, source: DType) -> None:
    """Every dtype -> uint: negative and too-wide ints wrap as in C; floats in range truncate
    (an out-of-range float is undefined in C and torch, so none is tried)."""
    if source.is_int:
        info = np.iinfo(source.numpy)
        arr = np.array([0, 1, 100, int(info.max), int(info.min), -1 if info.min else 2],
                       dtype=source.numpy)
    elif source.is_bool:
        arr = np.array([True, False, True])
    else:
        arr = np.array([0.0, 1.5, 2.75, 100.25, 255.0], dtype=source.numpy)
    theirs = torch.from_numpy(arr.astype(np.float32) if source is bp.bfloat16 else arr.copy())
    theirs = theirs.to(_torch(source)).to(_torch(dtype))
    _same(Tensor.from_data(arr).to(dtype), theirs)


# ---- arithmetic, comparisons, reductions, bitwise ----------------------------------------------
_BINARY: dict[str, Callable[[Any, Any], Any]] = {
    "add": operator.add, "sub": operator.sub, "mul": operator.mul,
    "floor_div": operator.floordiv, "remainder": operator.mod, "bitwise_and": operator.and_,
    "bitwise_or": operator.or_, "bitwise_xor": operator.xor, "equal": operator.eq,
    "not_equal": operator.ne, "lower": operator.lt, "lower_equal": operator.le,
    "greater": operator.gt, "greater_equal": operator.ge,
}


@pytest.mark.parametrize("name", sorted(_BINARY))
@pytest.mark.parametrize("dtype", UNSIGNED, ids=str)
def test_binary_ops_wrap_like_torch_or_numpy(dtype: DType, name: str) -> None:
    """Wrapping arithmetic (1 - 3 is the top), bitwise ops and comparisons: against torch
    where it has the op for the dtype, else NumPy (whose uint arithmetic is C's)."""
    op = _BINARY[name]
    a, b = _pair(dtype)
    ours = op(Tensor.from_data(a), Tensor.from_data(b))
    assert isinstance(ours, Tensor)
    try:
        want = op(torch.from_numpy(a.copy()), torch.from_numpy(b.copy()))
    except (RuntimeError, NotImplementedError):
        want = op(a, b)
    assert isinstance(want, np.ndarray | torch.Tensor)
    _same(ours, want)
    # The general path (broadcasting) agrees with the fast one.
    _same(op(Tensor.from_data(a[:, None]), Tensor.from_data(b))[:, 0], np.asarray(op(a, b[0])))


@pytest.mark.parametrize("dtype", [bp.uint8, bp.int8, bp.int16, *UNSIGNED], ids=str)
def test_python_numbers_wrap_into_the_dtype_as_torch(dtype: DType) -> None:
    """A Python int meeting an int tensor is cast to its dtype first, wrapping (torch's rule,
    checked directly for uint8/int8/int16, through NumPy's C casts for the others)."""
    a = _values(dtype) if dtype.value.startswith("u") else np.array([-3, 0, 5, 100],
                                                                      dtype=dtype.numpy)
    t = Tensor.from_data(a)
    bits = dtype.itemsize * 8
    for number in (-1, 300, -(2**bits) + 5, 2**bits + 7):
        wrapped = np.array(number % 2**bits, dtype=np.uint64).astype(dtype.numpy)
        for name, op in (("add", operator.add), ("sub", operator.sub), ("mul", operator.mul),
                         ("and", operator.and_), ("rsub", lambda x, y: y - x)):
            ours = op(t, number)
            assert isinstance(ours, Tensor), name
            with np.errstate(over="ignore"):
                want = op(a, wrapped)
            assert isinstance(want, np.ndarray)
            _same(ours, want)
            if dtype in (bp.uint8, bp.int8, bp.int16) and abs(number) < 2**15:
                theirs = op(torch.from_numpy(a.copy()), number)
                assert isinstance(theirs, torch.Tensor)
                _same(ours, theirs)


@pytest.mark.parametrize("dtype", UNSIGNED, ids=str)
def test_unary_pow_matmul_and_true_division(dtype: DType) -> None:
    a, b = _pair(dtype)
    x, y = Tensor.from_data(a), Tensor.from_data(b)
    with np.errstate(over="ignore"):
        _same(-x, -a)
        _same(x.abs(), a)
        _same(~x, ~a)
        _same(x**3, a**3)
        _same(x.square(), a * a)
        _same(x @ y, a @ b)
    _same(x.sign(), np.sign(a))
    _same(x / y, torch.from_numpy(a.copy()) / torch.from_numpy(b.copy()))
    _same(x.clamp(5, 300), np.clip(a, 5, 300))


@pytest.mark.parametrize("dtype", UNSIGNED, ids=str)
def test_shifts_match_numpy(dtype: DType) -> None:
    """Shifts (torch has none for these dtypes): NumPy's, 0 once past the width."""
    bits = dtype.itemsize * 8
    a = _values(dtype)
    s = np.array([0, 1, 3, bits - 1, bits, bits + 1, 2, 5][: a.size]
                 + [7] * (a.size - 8), dtype=dtype.numpy)
    x, y = Tensor.from_data(a), Tensor.from_data(s)
    _same(x << y, a << s)
    _same(x >> y, a >> s)
    _same(x.bitwise_left_shift(3), a << np.array(3, dtype.numpy))
    _same(x >> 2, a >> np.array(2, dtype.numpy))
    _same(1 << y, np.array(1, dtype.numpy) << s)
    _same(1000 >> y, np.array(1000, dtype.numpy) >> s)


def test_shifts_of_signed_ints_match_torch() -> None:
    a = torch.tensor([-8, -1, 5, 1000, 2**30], dtype=torch.int32)
    s = torch.tensor([1, 3, 2, 4, 1], dtype=torch.int32)
    x, y = Tensor.from_data(a), Tensor.from_data(s)
    _same(x << y, a << s)
    _same(x >> y, a >> s)
    _same(x >> 1, a >> 1)


@pytest.mark.parametrize("dtype", UNSIGNED, ids=str)
def test_reductions_follow_torch(dtype: DType) -> None:
    """sum, prod and cumsum accumulate in int64 as torch does (uint64 wrapping there too);
    max, min, argmax, sort and top-k keep or index the dtype (NumPy where torch lacks them)."""
    a = _values(dtype)[-8:].reshape(2, 4)
    x, ta = Tensor.from_data(a), torch.from_numpy(a.copy())
    _same(x.sum(), ta.sum())
    _same(x.sum(1), ta.sum(1))
    _same(x.prod(), ta.prod())
    _same(x.cumsum(1), ta.cumsum(1))
    _same(x.max(), a.max())
    _same(x.min(1).values, a.min(1))
    _same(x.argmax(1), a.argmax(1))
    _same(x.sort(1).values, ta.sort(1).values)
    _same(x.topk(2, 1).values, np.sort(a, 1)[:, ::-1][:, :2])
    _same(x.float().mean(), ta.float().mean())
    _same(x.any(), np.asarray(a.any()))
    _same(x.all(1), np.asarray(a.all(1)))


@pytest.mark.parametrize("dtype", UNSIGNED, ids=str)
def test_layout_and_indexing_keep_the_dtype(dtype: DType) -> None:
    a, b = _pair(dtype)
    x, y = Tensor.from_data(a), Tensor.from_data(b)
    _same(bp.cat([x, y]), np.concatenate([a, b]))
    _same(bp.where(x > y, x, y), np.where(a > b, a, b))
    _same(x[Tensor.from_data(np.array([0, 2, 1]))], a[[0, 2, 1]])
    _same(x.masked_fill(x > y, 9), np.where(a > b, np.array(9, a.dtype), a))
    _same(x[:8].flip(0).reshape(2, -1).T, a[7::-1].reshape(2, -1).T)


# ---- errors --------------------------------------------------------------------------------
def test_errors_are_burnpy_errors_naming_op_and_dtypes() -> None:
    u16 = Tensor.from_data(np.array([1, 2], np.uint16))
    with pytest.raises(DTypeError, match=r"add: bp\.uint16 and bp\.int32 have no common"):
        _ = u16 + u16.to(bp.int32)
    with pytest.raises(DTypeError, match=r"bitwise_xor: bp\.uint64 and bp\.uint32"):
        _ = u16.to(bp.uint64) ^ u16.to(bp.uint32)
    with pytest.raises(DTypeError, match=r"lower: bp\.uint8 and bp\.uint16"):
        _ = u16.to(bp.uint8) < u16
    with pytest.raises(DTypeError, match=r"add: cannot mix an int tensor \(bp\.uint16\)"):
        _ = u16 + u16.float()
    with pytest.raises(KindError, match=r"bitwise_left_shift: not defined for float tensors"):
        _ = u16.float() << 1
    with pytest.raises(BurnpyError, match=r"floor_div: integer division by zero"):
        u16 // 65536  # wraps to 0 first, as in torch


# ---- backends ------------------------------------------------------------------------------
@pytest.mark.parametrize("dtype", [bp.uint16, bp.uint64], ids=str)
def test_wgpu_refuses_uint16_and_uint64_by_name(dtype: DType) -> None:
    assert not WgpuBackend.supports_dtype(WgpuBackend.default_device(), dtype)
    with pytest.raises(UnsupportedDTypeError, match=rf"bp\.{dtype.value}.*wgpu") as caught:
        Tensor.from_data(np.array([1, 2], dtype.numpy), backend=WgpuBackend)
    assert caught.value.dtype is dtype


def test_wgpu_uint32_is_native() -> None:
    a, b = _pair(bp.uint32)
    x, y = (Tensor.from_data(v, backend=WgpuBackend) for v in (a, b))
    assert WgpuBackend.supports_dtype(WgpuBackend.default_device(), bp.uint32)
    for op in (operator.add, operator.sub, operator.mul, operator.floordiv, operator.mod,
               operator.and_, operator.xor, operator.lt, operator.eq):
        _same(op(x, y), op(a, b))
    _same(x >> 3, a >> np.uint32(3))
    _same(x.to(bp.int32), a.astype(np.int32))
    _same(x.max(), a.max())


# ---- records -------------------------------------------------------------------------------
def test_records_store_unsigned_as_safetensors_u16_u32_u64(tmp_path: Path) -> None:
    tensors = {d.value: bp.TensorData(_values(d), d) for d in UNSIGNED}
    path = record.write_record(tmp_path / "r.safetensors", record.Record("test", tensors))
    back = record.read_record(path)
    for name, data in tensors.items():
        assert back.tensors[name].dtype is data.dtype
        np.testing.assert_array_equal(back.tensors[name].array, data.array)
    by_torch = load_file(path)
    for d in UNSIGNED:
        assert by_torch[d.value].dtype == _torch(d)
        np.testing.assert_array_equal(by_torch[d.value].numpy(), _values(d))
    written = tmp_path / "t.safetensors"
    save_file({d.value: torch.from_numpy(_values(d)) for d in UNSIGNED}, written)
    for name, data in record.read_safetensors(written).items():
        assert data.dtype is DType.of(name)
        np.testing.assert_array_equal(data.array, _values(DType.of(name)))
