"""Float ops on WebGPU: elementwise ops are WGSL expressions over the generic map kernel (those
of the elementwise registry, ``burnpy.ir.elementwise``, the fuser's own expressions);
matmul, reductions, scans and sorts have their own kernels. Values are computed in f32 (f16
tensors too) with the accurate special functions of ``kernels.wgsl_math``."""

from __future__ import annotations

import re

import numpy as np

from burnpy.backend.device import Device
from burnpy.backend.distribution import Distribution
from burnpy.backend.dtype import DType
from burnpy.ir.elementwise import BY_NAME, HALF_SCALAR_ROUNDED
from burnpy_wgpu.dtypes import check_dtype
from burnpy_wgpu.kernels import random, reduce, scan, sort
from burnpy_wgpu.kernels.elementwise import launch_map
from burnpy_wgpu.kernels.matmul import matmul
from burnpy_wgpu.kernels.wgsl_math import calls
from burnpy_wgpu.ops import _shared
from burnpy_wgpu.runtime import f32_bits, runtime_for
from burnpy_wgpu.tensor import WgpuTensor

T = WgpuTensor
Shape = tuple[int, ...]
BOOL = np.dtype(np.bool_)
F16 = np.dtype(np.float16)


def _registered(name: str) -> str:
    """The float WGSL expression of registry op ``name`` (``burnpy.ir.elementwise``), the one
    the fuser computes it with."""
    forms = BY_NAME[name].wgsl
    assert forms is not None and forms.float is not None, f"{name} has no float WGSL form"
    return forms.float


def _unary(expr: str, *funcs: str) -> staticmethod:
    """An op applying ``expr`` (over ``a``) elementwise; ``funcs``: library functions it
    calls beyond those named in it (a function's companions)."""
    funcs = tuple(sorted({*funcs, *calls(expr)}))

    def op(tensor: T) -> T:
        return launch_map(tensor.runtime, expr, [tensor], tensor.dtype, funcs=funcs)
    return staticmethod(op)


def _binary(expr: str) -> staticmethod:
    """An op applying ``expr`` (over ``a``, ``b``) with broadcasting."""
    funcs = calls(expr)

    def op(lhs: T, rhs: T) -> T:
        return launch_map(lhs.runtime, expr, [lhs, rhs], lhs.dtype, funcs=funcs)
    return staticmethod(op)


def _scalar(name: str) -> staticmethod:
    """Registry op ``name`` of a tensor ``a`` and a number ``b`` (the parameter ``mf(1u)``),
    an f16 tensor's number first rounded to f16 where torch rounds it (``HALF_SCALAR_ROUNDED``,
    as the fuser does)."""
    expr = re.sub(r"\bb\b", "mf(1u)", _registered(name))
    half = (re.sub(r"\bb\b", "f32(f16(mf(1u)))", _registered(name))
            if name in HALF_SCALAR_ROUNDED else expr)
    funcs = calls(expr)

    def op(lhs: T, rhs: float) -> T:
        return launch_map(lhs.runtime, half if lhs.dtype == F16 else expr, [lhs], lhs.dtype,
                          [f32_bits(float(rhs))], funcs=funcs)
    return staticmethod(op)


def _predicate(expr: str) -> staticmethod:
    """A bool-valued elementwise test over ``a``."""
    def op(tensor: T) -> T:
        return launch_map(tensor.runtime, f"select(0u, 1u, {expr})", [tensor], BOOL)
    return staticmethod(op)


def _compare(op_symbol: str) -> staticmethod:
    def op(lhs: T, rhs: T) -> T:
        return _shared.compare(lhs, rhs, op_symbol)
    return staticmethod(op)


def _compare_elem(op_symbol: str, name: str) -> staticmethod:
    """Registry comparison ``name`` of a tensor and a number (rounded to f16 first for an f16
    tensor where ``HALF_SCALAR_ROUNDED`` says torch rounds it)."""
    rounds = name in HALF_SCALAR_ROUNDED

    def op(lhs: T, rhs: float) -> T:
        return _shared.compare(lhs, None, op_symbol, rhs, round_half=rounds and lhs.dtype == F16)
    return staticmethod(op)


class WgpuFloatOps:
    """The float op family of WgpuBackend."""

    # ---- creation and transfer --------------------------------------------------------------
    float_from_data = staticmethod(_shared.from_data)
    float_into_data = staticmethod(_shared.into_data)
    float_device = staticmethod(_shared.device_of)
    float_to_device = staticmethod(_shared.to_device)
    float_empty = staticmethod(_shared.empty)
    float_full = staticmethod(_shared.full)

    @staticmethod
    def float_random(shape: Shape, distribution: Distribution, device: Device,
                     dtype: DType) -> T:
        rt = runtime_for(device)
        return random.generate(rt, shape, distribution.kind, distribution.a, distribution.b,
                               check_dtype(dtype, rt.has_f16))

    @staticmethod
    def float_cast(tensor: T, dtype: DType) -> T:
        return _shared.cast(tensor, check_dtype(dtype, tensor.runtime.has_f16))

    @staticmethod
    def float_into_int(tensor: T, dtype: DType) -> T:
        return _shared.cast(tensor, check_dtype(dtype, tensor.runtime.has_f16))

    # ---- layout and indexing ------------------------------------------------------------------
    float_reshape = staticmethod(_shared.reshape)
    float_swap_dims = staticmethod(_shared.swap_dims)
    float_permute = staticmethod(_shared.permute)
    float_flip = staticmethod(_shared.flip)
    float_expand = staticmethod(_shared.expand)
    float_repeat_dim = staticmethod(_shared.repeat_dim)
    float_cat = staticmethod(_shared.cat)
    float_unfold = staticmethod(_shared.unfold)
    float_slice = staticmethod(_shared.slice_view)
    float_slice_assign = staticmethod(_shared.slice_assign)
    float_gather = staticmethod(_shared.gather)
    float_scatter = staticmethod(_shared.scatter)
    float_scatter_add = staticmethod(_shared.scatter_add)
    float_select = staticmethod(_shared.select)
    float_select_assign = staticmethod(_shared.select_assign)
    float_select_add = staticmethod(_shared.select_add)
    float_mask_where = staticmethod(_shared.mask_where)
    float_mask_fill = staticmethod(_shared.mask_fill)

    # ---- arithmetic ---------------------------------------------------------------------------
    float_add = _binary(_registered("add"))
    float_add_scalar = _scalar("add")
    float_sub = _binary(_registered("sub"))
    float_sub_scalar = _scalar("sub")
    float_mul = _binary(_registered("mul"))
    float_mul_scalar = _scalar("mul")
    float_div = _binary(_registered("div"))
    float_div_scalar = _scalar("div")
    float_remainder = _binary(_registered("remainder"))
    float_remainder_scalar = _scalar("remainder")
    float_powf = _binary(_registered("pow"))
    float_powf_scalar = _scalar("pow")
    float_atan2 = _binary(_registered("atan2"))
    float_logaddexp2 = _binary(_registered("logaddexp2"))
    float_neg = _unary(_registered("neg"))
    float_recip = _unary("1.0 / a")
    float_square = _unary("a * a")
    float_abs = _unary(_registered("abs"))
    float_sign = _unary(_registered("sign"))
    float_exp = _unary(_registered("exp"))
    float_expm1 = _unary("expm1_acc(a)")
    float_log = _unary(_registered("log"))
    float_log1p = _unary(_registered("log1p"))
    float_sqrt = _unary(_registered("sqrt"))
    float_sin = _unary(_registered("sin"))
    float_cos = _unary(_registered("cos"))
    float_tan = _unary(_registered("tan"))
    float_asin = _unary(_registered("asin"))
    float_acos = _unary(_registered("acos"))
    float_atan = _unary(_registered("atan"))
    float_sinh = _unary(_registered("sinh"))
    float_cosh = _unary(_registered("cosh"))
    float_tanh = _unary(_registered("tanh"))
    float_asinh = _unary(_registered("asinh"))
    float_acosh = _unary(_registered("acosh"))
    float_atanh = _unary(_registered("atanh"))
    float_erf = _unary(_registered("erf"))
    float_erfc = _unary("erfc_acc(a)", "erf_acc")
    float_round = _unary(_registered("round"))
    float_floor = _unary(_registered("floor"))
    float_ceil = _unary(_registered("ceil"))
    float_trunc = _unary(_registered("trunc"))

    @staticmethod
    def float_matmul(lhs: T, rhs: T) -> T:
        return matmul(lhs, rhs)

    @staticmethod
    def float_clamp(tensor: T, min: float | None, max: float | None) -> T:
        expr, params = "a", list[int]()
        if min is not None:
            expr, params = f"max({expr}, mf({1 + len(params)}u))", [*params, f32_bits(min)]
        if max is not None:
            expr, params = f"min({expr}, mf({1 + len(params)}u))", [*params, f32_bits(max)]
        return launch_map(tensor.runtime, f"select({expr}, a, is_nan(a))", [tensor],
                          tensor.dtype, params)

    # ---- comparison ---------------------------------------------------------------------------
    float_equal = _compare("==")
    float_not_equal = _compare("!=")
    float_greater = _compare(">")
    float_greater_equal = _compare(">=")
    float_lower = _compare("<")
    float_lower_equal = _compare("<=")
    float_equal_elem = _compare_elem("==", "equal")
    float_not_equal_elem = _compare_elem("!=", "not_equal")
    float_greater_elem = _compare_elem(">", "greater")
    float_greater_equal_elem = _compare_elem(">=", "greater_equal")
    float_lower_elem = _compare_elem("<", "lower")
    float_lower_equal_elem = _compare_elem("<=", "lower_equal")
    float_is_nan = _predicate(_registered("is_nan"))
    float_is_inf = _predicate(_registered("is_inf"))

    # ---- reductions ---------------------------------------------------------------------------
    @staticmethod
    def float_sum(tensor: T) -> T:
        return reduce.reduce_all(tensor, "sum")

    @staticmethod
    def float_sum_dim(tensor: T, dim: int) -> T:
        return reduce.reduce_dim(tensor, dim, "sum")

    @staticmethod
    def float_prod(tensor: T) -> T:
        return reduce.reduce_all(tensor, "prod")

    @staticmethod
    def float_prod_dim(tensor: T, dim: int) -> T:
        return reduce.reduce_dim(tensor, dim, "prod")

    @staticmethod
    def float_max(tensor: T) -> T:
        return reduce.reduce_all(tensor, "max")

    @staticmethod
    def float_min(tensor: T) -> T:
        return reduce.reduce_all(tensor, "min")

    @staticmethod
    def float_max_dim(tensor: T, dim: int) -> T:
        return reduce.reduce_dim(tensor, dim, "max")

    @staticmethod
    def float_min_dim(tensor: T, dim: int) -> T:
        return reduce.reduce_dim(tensor, dim, "min")

    @staticmethod
    def float_max_dim_with_indices(tensor: T, dim: int) -> tuple[T, T]:
        return reduce.reduce_dim_with_indices(tensor, dim, "max")

    @staticmethod
    def float_min_dim_with_indices(tensor: T, dim: int) -> tuple[T, T]:
        return reduce.reduce_dim_with_indices(tensor, dim, "min")

    @staticmethod
    def float_cumsum(tensor: T, dim: int) -> T:
        return scan.cumulative(tensor, dim, "sum")

    @staticmethod
    def float_cumprod(tensor: T, dim: int) -> T:
        return scan.cumulative(tensor, dim, "prod")

    @staticmethod
    def float_cummax_with_indices(tensor: T, dim: int) -> tuple[T, T]:
        return scan.cumulative_with_indices(tensor, dim, "max")

    @staticmethod
    def float_cummin_with_indices(tensor: T, dim: int) -> tuple[T, T]:
        return scan.cumulative_with_indices(tensor, dim, "min")

    @staticmethod
    def float_sort_with_indices(tensor: T, dim: int, descending: bool) -> tuple[T, T]:
        return sort.sort(tensor, dim, descending)

