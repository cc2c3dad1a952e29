"""Float ops over an array module: NumPy for CpuBackend, CuPy for CudaBackend."""

from __future__ import annotations

import functools
import operator
from typing import Any, ClassVar

import numpy as np

from burnpy.backend.device import Device
from burnpy.backend.distribution import Distribution
from burnpy.backend.dtype import DType
from burnpy.ir.elementwise import HALF_SCALAR_ROUNDED
from burnpy_cpu.array_ops._shared import (
    A,
    ArrayLayoutOps,
    float32_kernels,
    half_kernels,
    narrowed,
    widened,
)

_raw = ArrayLayoutOps.__dict__.__getitem__
_HALF = (np.dtype(np.float16), DType.bfloat16.numpy)
_F32 = np.dtype(np.float32)
_KERNEL_DTYPES = (_F32, *_HALF)  # computed by the float32 kernels (16-bit floats widened)


def torch_scalar(dtype: Any, value: float) -> float:
    """``value`` rounded to the 16-bit float ``dtype`` as torch rounds a Python scalar operand
    of a 16-bit tensor for add, sub, remainder, pow and comparisons: through float32 (so a
    value just past a tie rounds as torch's, not as NumPy's direct cast), overflowing to inf
    without NumPy's warning. Zeros (either sign) and NaN are kept as they are."""
    return value if value == 0 or value != value else _torch_rounded(dtype, value)


@functools.lru_cache(maxsize=256)
def _torch_rounded(dtype: Any, value: float) -> float:
    """``torch_scalar`` of a nonzero number, cached: NumPy's scalar casts cost microseconds,
    more than the op on a small array (a cache cannot tell -0.0 from 0.0, hence no zeros)."""
    with np.errstate(over="ignore"):
        return float(dtype.type(np.float32(value)))


def _keep_dtype(op: Any, name: str) -> staticmethod:
    """``op(array, scalar)``, the registry op ``name``, with its result cast back to the
    array's dtype when the op widened it. A 16-bit float is computed in float32 and rounded
    once, the scalar first rounded to the array's dtype (an op of ``HALF_SCALAR_ROUNDED``:
    torch's add, sub, remainder and pow) or kept in float32 (torch's mul and div), on NumPy
    through the compiled casts, on another array module (CuPy) by its own: NumPy and CuPy
    round a float16's scalar to float16 for every op, ml_dtypes widens bfloat16 with an
    unrounded scalar."""

    round_scalar = name in HALF_SCALAR_ROUNDED

    def fn(lhs: A, rhs: Any) -> A:
        if lhs.itemsize == 2:  # a 16-bit float: in float32, rounded once
            if round_scalar:
                rhs = torch_scalar(lhs.dtype, rhs)
            if isinstance(lhs, np.ndarray):
                return narrowed(np, op(widened(np, lhs), rhs), lhs.dtype)
            return op(lhs.astype(_F32), rhs).astype(lhs.dtype)
        out = op(lhs, rhs)
        return out if out.dtype == lhs.dtype else out.astype(lhs.dtype)

    return staticmethod(fn)


class ArrayFloatOps(ArrayLayoutOps):
    """The float op family; ``special`` is the module providing ``erf`` (scipy.special)."""

    special: ClassVar[Any] = None

    float_from_data = _raw("_from_data")
    float_into_data = _raw("_into_data")
    float_empty = _raw("_empty")
    float_full = _raw("_full")
    float_reshape = _raw("_reshape")
    float_swap_dims = _raw("_swap_dims")
    float_permute = _raw("_permute")
    float_flip = _raw("_flip")
    float_expand = _raw("_expand")
    float_repeat_dim = _raw("_repeat_dim")
    float_cat = _raw("_cat")
    float_unfold = _raw("_unfold")
    float_slice = _raw("_slice")
    float_slice_assign = _raw("_slice_assign")
    float_gather = _raw("_gather")
    float_scatter = _raw("_scatter")
    float_scatter_add = _raw("_scatter_add")
    float_select = _raw("_select")
    float_select_assign = _raw("_select_assign")
    float_select_add = _raw("_select_add")
    float_mask_where = _raw("_mask_where")
    float_mask_fill = _raw("_mask_fill")
    float_max = _raw("_max")
    float_min = _raw("_min")
    float_max_dim_with_indices = _raw("_max_dim_with_indices")
    float_min_dim_with_indices = _raw("_min_dim_with_indices")
    float_cummax_with_indices = _raw("_cummax_with_indices")
    float_cummin_with_indices = _raw("_cummin_with_indices")
    float_sort_with_indices = _raw("_sort_with_indices")
    float_equal = _raw("_equal")
    float_not_equal = _raw("_not_equal")
    float_greater = _raw("_greater")
    float_greater_equal = _raw("_greater_equal")
    float_lower = _raw("_lower")
    float_lower_equal = _raw("_lower_equal")

    # Operators dispatch straight to the array type: the cheapest call Python has.
    float_add = staticmethod(operator.add)
    float_sub = staticmethod(operator.sub)
    float_mul = staticmethod(operator.mul)
    float_div = staticmethod(operator.truediv)
    float_remainder = staticmethod(operator.mod)
    float_neg = staticmethod(operator.neg)
    float_abs = staticmethod(operator.abs)
    float_powf = staticmethod(operator.pow)
    # torch keeps mul's and div's scalar in float32 for a 16-bit tensor, rounds the others'
    # (HALF_SCALAR_ROUNDED, the registry's rule, which the fusers read too).
    float_add_scalar = _keep_dtype(operator.add, "add")
    float_sub_scalar = _keep_dtype(operator.sub, "sub")
    float_mul_scalar = _keep_dtype(operator.mul, "mul")
    float_div_scalar = _keep_dtype(operator.truediv, "div")
    float_remainder_scalar = _keep_dtype(operator.mod, "remainder")
    float_powf_scalar = _keep_dtype(operator.pow, "pow")

    # A 16-bit float compares with its scalar rounded as torch rounds it (the comparisons are
    # in HALF_SCALAR_ROUNDED, which the fusers read; ml_dtypes compares bfloat16 with the
    # unrounded scalar in float32, NumPy and CuPy round float16's directly).
    # Operators: the cheapest dispatch, which pays for the dtype check.
    @staticmethod
    def float_equal_elem(lhs: A, rhs: float) -> A:
        return lhs == (torch_scalar(lhs.dtype, rhs) if lhs.itemsize == 2 else rhs)

    @staticmethod
    def float_not_equal_elem(lhs: A, rhs: float) -> A:
        return lhs != (torch_scalar(lhs.dtype, rhs) if lhs.itemsize == 2 else rhs)

    @staticmethod
    def float_greater_elem(lhs: A, rhs: float) -> A:
        return lhs > (torch_scalar(lhs.dtype, rhs) if lhs.itemsize == 2 else rhs)

    @staticmethod
    def float_greater_equal_elem(lhs: A, rhs: float) -> A:
        return lhs >= (torch_scalar(lhs.dtype, rhs) if lhs.itemsize == 2 else rhs)

    @staticmethod
    def float_lower_elem(lhs: A, rhs: float) -> A:
        return lhs < (torch_scalar(lhs.dtype, rhs) if lhs.itemsize == 2 else rhs)

    @staticmethod
    def float_lower_equal_elem(lhs: A, rhs: float) -> A:
        return lhs <= (torch_scalar(lhs.dtype, rhs) if lhs.itemsize == 2 else rhs)

    @classmethod
    def add_gradients(cls, lhs: A, rhs: A) -> A:
        """Backward's sum of two gradients of one tensor. On NumPy, 16-bit float ones add in
        float32 through the compiled casts and round once, as torch's (bitwise NumPy's and
        ml_dtypes' own loops, which convert one element at a time: NumPy's float16 add is
        15-60x slower, slowest on the subnormals small gradients hold); checked here rather
        than in ``float_add``, which stays the bare operator for every other add."""
        if lhs.itemsize == 2 and cls.xp is np and lhs.dtype == rhs.dtype:
            return narrowed(np, widened(np, lhs) + widened(np, rhs), lhs.dtype)
        return lhs + rhs

    @classmethod
    def float_cast(cls, tensor: A, dtype: DType) -> A:
        """``tensor`` in ``dtype``; on NumPy the casts from and to the 16-bit floats are
        compiled loops (``_half_kernels``: NumPy's float16 cast is 60x slower, ml_dtypes'
        float32 -> bfloat16 4x), bitwise as NumPy's and torch's."""
        if cls.xp is np and (tensor.dtype.itemsize == 2 or dtype.numpy.itemsize == 2):
            return half_kernels().cast_array(tensor, dtype.numpy)
        return tensor.astype(dtype.numpy, copy=False)

    @staticmethod
    def float_matmul(lhs: A, rhs: A) -> A:
        """``lhs @ rhs``; mixed dtypes promote as burnpy's rule says (NumPy agrees for every
        pair but bfloat16 @ bfloat16, which ml_dtypes widens to float32). On NumPy a float16
        or bfloat16 product runs in float32 BLAS and is rounded once, as torch's (NumPy's
        float16 product has no BLAS loop and sums in float16: 30x slower)."""
        if lhs.dtype in _HALF and lhs.dtype == rhs.dtype and isinstance(lhs, np.ndarray):
            return narrowed(np, widened(np, lhs) @ widened(np, rhs), lhs.dtype)
        out = lhs @ rhs
        return out.astype(lhs.dtype) if lhs.dtype == rhs.dtype != out.dtype else out

    @classmethod
    def float_random(cls, shape: tuple[int, ...], distribution: Distribution, device: Device,
                     dtype: DType) -> A:
        with cls._on(device):
            return cls._sample(shape, distribution, device, dtype)

    @classmethod
    def _sample(cls, shape: tuple[int, ...], distribution: Distribution, device: Device,
                dtype: DType) -> A:
        gen = cls._generator(device)
        sample_dtype = dtype.numpy if dtype.numpy in (_F32, np.dtype(np.float64)) else _F32
        if distribution.kind == "uniform":
            lo, hi = distribution.a, distribution.b
            out = gen.random(shape, dtype=sample_dtype)
            if (lo, hi) != (0.0, 1.0):
                out = out * (hi - lo) + lo
        elif distribution.kind == "normal":
            out = gen.standard_normal(shape, dtype=sample_dtype)
            out = out * distribution.b + distribution.a
        else:
            out = (gen.random(shape, dtype=sample_dtype) < distribution.a).astype(sample_dtype)
        return narrowed(cls.xp, cls.xp.asarray(out), dtype.numpy)

    @staticmethod
    def float_into_int(tensor: A, dtype: DType) -> A:
        return tensor.astype(dtype.numpy)

    @classmethod
    def float_recip(cls, tensor: A) -> A:
        return cls.xp.reciprocal(tensor)

    @classmethod
    def float_sign(cls, tensor: A) -> A:
        """-1, 0 or 1; NaN maps to 0 as in torch.sign."""
        out = cls.xp.sign(tensor)
        return cls.xp.where(out == out, out, cls.xp.zeros((), dtype=out.dtype))

    @classmethod
    def float_exp(cls, tensor: A) -> A:
        return cls.xp.exp(tensor)

    @classmethod
    def float_expm1(cls, tensor: A) -> A:
        return cls.xp.expm1(tensor)

    @classmethod
    def float_log(cls, tensor: A) -> A:
        return cls.xp.log(tensor)

    @classmethod
    def float_log1p(cls, tensor: A) -> A:
        return cls.xp.log1p(tensor)

    @classmethod
    def float_sqrt(cls, tensor: A) -> A:
        return cls.xp.sqrt(tensor)

    @classmethod
    def float_square(cls, tensor: A) -> A:
        return cls.xp.square(tensor)

    @classmethod
    def float_sin(cls, tensor: A) -> A:
        return cls.xp.sin(tensor)

    @classmethod
    def float_cos(cls, tensor: A) -> A:
        return cls.xp.cos(tensor)

    @classmethod
    def float_tan(cls, tensor: A) -> A:
        return cls.xp.tan(tensor)

    @classmethod
    def float_asin(cls, tensor: A) -> A:
        return cls.xp.arcsin(tensor)

    @classmethod
    def float_acos(cls, tensor: A) -> A:
        return cls.xp.arccos(tensor)

    @classmethod
    def float_atan(cls, tensor: A) -> A:
        return cls.xp.arctan(tensor)

    @classmethod
    def float_sinh(cls, tensor: A) -> A:
        return cls.xp.sinh(tensor)

    @classmethod
    def float_cosh(cls, tensor: A) -> A:
        return cls.xp.cosh(tensor)

    @classmethod
    def float_tanh(cls, tensor: A) -> A:
        return cls.xp.tanh(tensor)

    @classmethod
    def float_asinh(cls, tensor: A) -> A:
        return cls.xp.arcsinh(tensor)

    @classmethod
    def float_acosh(cls, tensor: A) -> A:
        return cls.xp.arccosh(tensor)

    @classmethod
    def float_atanh(cls, tensor: A) -> A:
        return cls.xp.arctanh(tensor)

    @classmethod
    def float_atan2(cls, lhs: A, rhs: A) -> A:
        return cls.xp.arctan2(lhs, rhs)

    @classmethod
    def float_hypot(cls, lhs: A, rhs: A) -> A:
        return cls.xp.hypot(lhs, rhs)

    @classmethod
    def float_logaddexp(cls, lhs: A, rhs: A) -> A:
        return cls.xp.logaddexp(lhs, rhs)

    @classmethod
    def float_logaddexp2(cls, lhs: A, rhs: A) -> A:
        return cls.xp.logaddexp2(lhs, rhs)

    @classmethod
    def float_erf(cls, tensor: A) -> A:
        """erf; float32 and 16-bit floats on NumPy run the compiled float32 kernel (SciPy's
        float32 erf widens to float64: 14x torch's time)."""
        if cls.xp is np and tensor.dtype in _KERNEL_DTYPES:
            kernels = float32_kernels()
            return narrowed(np, kernels.run(kernels.erf, widened(np, tensor)), tensor.dtype)
        return cls._special("erf", tensor)

    @classmethod
    def _special(cls, name: str, tensor: A, *params: int) -> A:
        """``special.<name>`` (scipy.special or cupyx's), 16-bit floats computed in float32."""
        fn = getattr(cls.special, name)
        return narrowed(cls.xp, fn(*params, widened(cls.xp, tensor)), tensor.dtype)

    @classmethod
    def float_erfc(cls, tensor: A) -> A:
        """erfc, accurate in relative terms in the right tail; float32 and 16-bit floats on
        NumPy run the compiled float32 kernel, as ``float_erf``."""
        if cls.xp is np and tensor.dtype in _KERNEL_DTYPES:
            kernels = float32_kernels()
            return narrowed(np, kernels.run(kernels.erfc, widened(np, tensor)), tensor.dtype)
        return cls._special("erfc", tensor)

    @classmethod
    def float_erfinv(cls, tensor: A) -> A:
        return cls._special("erfinv", tensor)

    @classmethod
    def float_lgamma(cls, tensor: A) -> A:
        """log |Gamma(x)| (scipy's gammaln: +inf at the poles, as torch)."""
        return cls._special("gammaln", tensor)

    @classmethod
    def float_digamma(cls, tensor: A) -> A:
        """psi(x); SciPy gives NaN at 0 where torch gives -1 / x (-inf at +0, +inf at -0)."""
        out = cls._special("psi", tensor)
        return cls.xp.where(tensor == 0, (-1.0 / tensor).astype(out.dtype), out)

    @classmethod
    def float_polygamma(cls, tensor: A, n: int) -> A:
        if n == 0:
            return cls.float_digamma(tensor)
        return cls._special("polygamma", tensor, n)

    @classmethod
    def float_i0(cls, tensor: A) -> A:
        return cls._special("i0", tensor)

    @classmethod
    def float_i1(cls, tensor: A) -> A:
        return cls._special("i1", tensor)

    @classmethod
    def float_round(cls, tensor: A) -> A:
        return cls.xp.round(tensor)

    @classmethod
    def float_floor(cls, tensor: A) -> A:
        return cls.xp.floor(tensor)

    @classmethod
    def float_ceil(cls, tensor: A) -> A:
        return cls.xp.ceil(tensor)

    @classmethod
    def float_trunc(cls, tensor: A) -> A:
        return cls.xp.trunc(tensor)

    @classmethod
    def float_clamp(cls, tensor: A, min: float | None, max: float | None) -> A:
        return cls.xp.clip(tensor, min, max).astype(tensor.dtype, copy=False)

    @classmethod
    def float_clamp_min(cls, tensor: A, min: float) -> A:
        return cls.xp.maximum(tensor, min).astype(tensor.dtype, copy=False)

    @classmethod
    def float_clamp_max(cls, tensor: A, max: float) -> A:
        return cls.xp.minimum(tensor, max).astype(tensor.dtype, copy=False)

    @classmethod
    def float_is_nan(cls, tensor: A) -> A:
        return cls.xp.isnan(tensor)

    @classmethod
    def float_is_inf(cls, tensor: A) -> A:
        return cls.xp.isinf(tensor)

    # Half-precision reductions widen to float32 once (compiled on NumPy, where NumPy's own
    # float16 -> float32 cast inside a reduction is 60x slower), accumulate there, as torch
    # does, and round once.
    @classmethod
    def float_sum(cls, tensor: A) -> A:
        xp = cls.xp
        return narrowed(xp, xp.asarray(widened(xp, tensor).sum()), tensor.dtype)

    @classmethod
    def float_sum_dim(cls, tensor: A, dim: int) -> A:
        xp = cls.xp
        return narrowed(xp, widened(xp, tensor).sum(axis=dim, keepdims=True), tensor.dtype)

    # The mean of nothing is NaN, as in torch, without NumPy's "Mean of empty slice" warning.
    @classmethod
    def float_mean(cls, tensor: A) -> A:
        xp = cls.xp
        if tensor.size == 0:
            return xp.full((), np.nan, dtype=tensor.dtype)
        return narrowed(xp, xp.asarray(widened(xp, tensor).mean()), tensor.dtype)

    @classmethod
    def float_mean_dim(cls, tensor: A, dim: int) -> A:
        xp = cls.xp
        if tensor.shape[dim] == 0:
            shape = tensor.shape[:dim] + (1,) + tensor.shape[dim + 1:]
            return xp.full(shape, np.nan, dtype=tensor.dtype)
        return narrowed(xp, widened(xp, tensor).mean(axis=dim, keepdims=True), tensor.dtype)

    @classmethod
    def float_prod(cls, tensor: A) -> A:
        xp = cls.xp
        return narrowed(xp, xp.asarray(widened(xp, tensor).prod()), tensor.dtype)

    @classmethod
    def float_prod_dim(cls, tensor: A, dim: int) -> A:
        xp = cls.xp
        return narrowed(xp, widened(xp, tensor).prod(axis=dim, keepdims=True), tensor.dtype)

    @classmethod
    def float_cumsum(cls, tensor: A, dim: int) -> A:
        xp = cls.xp
        return narrowed(xp, widened(xp, tensor).cumsum(axis=dim), tensor.dtype)

    @classmethod
    def float_cumprod(cls, tensor: A, dim: int) -> A:
        xp = cls.xp
        return narrowed(xp, widened(xp, tensor).cumprod(axis=dim), tensor.dtype)
