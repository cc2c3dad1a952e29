"""Int ops on WebGPU (int32 and uint32; WGSL has no 64-bit integers). Arithmetic wraps as
two's complement, floor division and remainder follow Python's signs, shifts by 32 or more
give 0 (or -1 for negative values shifted right), and sums accumulate in the tensor's dtype."""

from __future__ import annotations

import re

import numpy as np

from burnpy.backend.device import Device
from burnpy.backend.dtype import DType
from burnpy_wgpu.dtypes import check_dtype, compute_type
from burnpy_wgpu.kernels import random, reduce, scan, sort
from burnpy_wgpu.kernels.elementwise import launch_map
from burnpy_wgpu.kernels.matmul import matmul
from burnpy_wgpu.memory import HOST_COPY_BYTES
from burnpy_wgpu.ops import _shared
from burnpy_wgpu.runtime import runtime_for
from burnpy_wgpu.tensor import WgpuTensor

T = WgpuTensor
Shape = tuple[int, ...]
# Per-op expressions as (int32 form, uint32 form).
_BINARY = {
    "add": ("a + b", "a + b"), "sub": ("a - b", "a - b"), "mul": ("a * b", "a * b"),
    "div": ("floordiv_i32(a, b)", "a / b"), "remainder": ("mod_i32(a, b)", "a % b"),
    "and": ("a & b", "a & b"), "or": ("a | b", "a | b"), "xor": ("a ^ b", "a ^ b"),
    "shl": ("shl_i32(a, b)", "shl_u32(a, b)"), "shr": ("shr_i32(a, b)", "shr_u32(a, b)"),
}
_UNARY = {
    "neg": ("-a", "0u - a"), "abs": ("abs(a)", "a"), "sign": ("sign(a)", "select(0u, 1u, a != 0u)"),
    "not": ("~a", "~a"),
}
_FUNCS = {"floordiv_i32", "mod_i32", "shl_i32", "shr_i32", "shl_u32", "shr_u32", "powi_i32",
          "powi_u32"}


def _form(pair: tuple[str, str], tensor: T) -> tuple[str, tuple[str, ...]]:
    expr = pair[0] if compute_type(tensor.dtype) == "i32" else pair[1]
    return expr, tuple(f for f in _FUNCS if f + "(" in expr)


def _binary(name: str) -> staticmethod:
    def op(lhs: T, rhs: T) -> T:
        expr, funcs = _form(_BINARY[name], lhs)
        return launch_map(lhs.runtime, expr, [lhs, rhs], lhs.dtype, funcs=funcs)
    return staticmethod(op)


def _scalar(name: str) -> staticmethod:
    def op(lhs: T, rhs: int) -> T:
        expr, funcs = _form(_BINARY[name], lhs)
        ct = compute_type(lhs.dtype)
        return launch_map(lhs.runtime, re.sub(r"\bb\b", f"{ct}(mi(1u))", expr), [lhs],
                          lhs.dtype, [int(rhs)], funcs=funcs)
    return staticmethod(op)


def _unary(name: str) -> staticmethod:
    def op(tensor: T) -> T:
        expr, funcs = _form(_UNARY[name], tensor)
        return launch_map(tensor.runtime, expr, [tensor], tensor.dtype, funcs=funcs)
    return staticmethod(op)


def _compare(op_symbol: str) -> staticmethod:
    def op(lhs: T, rhs: T) -> T:
        return _shared.compare(lhs, rhs, op_symbol)
    return staticmethod(op)


def _compare_elem(op_symbol: str) -> staticmethod:
    def op(lhs: T, rhs: int) -> T:
        return _shared.compare(lhs, None, op_symbol, rhs)
    return staticmethod(op)


def _reduction(op: str, full: bool) -> staticmethod:
    """A full (``full``) or per-dim reduction ``op``."""
    if full:
        return staticmethod(lambda tensor: reduce.reduce_all(tensor, op))
    return staticmethod(lambda tensor, dim: reduce.reduce_dim(tensor, dim, op))


class WgpuIntOps:
    """The int op family of WgpuBackend."""

    int_from_data = staticmethod(_shared.from_data)
    int_into_data = staticmethod(_shared.into_data)
    int_device = staticmethod(_shared.device_of)
    int_to_device = staticmethod(_shared.to_device)
    int_empty = staticmethod(_shared.empty)
    int_full = staticmethod(_shared.full)

    @staticmethod
    def int_random(shape: Shape, low: int, high: int, device: Device, dtype: DType) -> T:
        rt = runtime_for(device)
        return random.generate(rt, shape, "int", low, high, check_dtype(dtype, rt.has_f16))

    @staticmethod
    def int_arange(start: int, end: int, step: int, device: Device, dtype: DType) -> T:
        rt = runtime_for(device)
        np_dtype = check_dtype(dtype, rt.has_f16)
        ct = compute_type(np_dtype)
        count = len(range(start, end, step))
        if count * np_dtype.itemsize <= HOST_COPY_BYTES:
            # uploaded with its host copy: a check of its values (embedding's bounds on the
            # positions) needs no readback, which would wait for every queued kernel
            host = np.arange(start, end, step, dtype=np.int64).astype(np_dtype)
            return WgpuTensor(rt, rt.upload(host), (count,), (1,), 0, np_dtype)
        return launch_map(rt, f"{ct}(mi(1u) + i32(gid) * mi(2u))", [], np_dtype, [start, step],
                          shape=(count,))

    @staticmethod
    def int_cast(tensor: T, dtype: DType) -> T:
        return _shared.cast(tensor, check_dtype(dtype, tensor.runtime.has_f16))

    @staticmethod
    def int_into_float(tensor: T, dtype: DType) -> T:
        return _shared.cast(tensor, check_dtype(dtype, tensor.runtime.has_f16))

    int_reshape = staticmethod(_shared.reshape)
    int_swap_dims = staticmethod(_shared.swap_dims)
    int_permute = staticmethod(_shared.permute)
    int_flip = staticmethod(_shared.flip)
    int_expand = staticmethod(_shared.expand)
    int_repeat_dim = staticmethod(_shared.repeat_dim)
    int_cat = staticmethod(_shared.cat)
    int_unfold = staticmethod(_shared.unfold)
    int_slice = staticmethod(_shared.slice_view)
    int_slice_assign = staticmethod(_shared.slice_assign)
    int_gather = staticmethod(_shared.gather)
    int_scatter = staticmethod(_shared.scatter)
    int_scatter_add = staticmethod(_shared.scatter_add)
    int_select = staticmethod(_shared.select)
    int_select_assign = staticmethod(_shared.select_assign)
    int_select_add = staticmethod(_shared.select_add)
    int_mask_where = staticmethod(_shared.mask_where)
    int_mask_fill = staticmethod(_shared.mask_fill)

    int_add = _binary("add")
    int_add_scalar = _scalar("add")
    int_sub = _binary("sub")
    int_sub_scalar = _scalar("sub")
    int_mul = _binary("mul")
    int_mul_scalar = _scalar("mul")
    int_div = _binary("div")
    int_div_scalar = _scalar("div")
    int_remainder = _binary("remainder")
    int_remainder_scalar = _scalar("remainder")
    int_bitwise_and = _binary("and")
    int_bitwise_or = _binary("or")
    int_bitwise_xor = _binary("xor")
    int_bitwise_left_shift = _binary("shl")
    int_bitwise_right_shift = _binary("shr")
    int_neg = _unary("neg")
    int_abs = _unary("abs")
    int_sign = _unary("sign")
    int_bitwise_not = _unary("not")

    @staticmethod
    def int_matmul(lhs: T, rhs: T) -> T:
        return matmul(lhs, rhs)

    @staticmethod
    def int_powi_scalar(tensor: T, exponent: int) -> T:
        ct = compute_type(tensor.dtype)
        fn = "powi_i32" if ct == "i32" else "powi_u32"
        return launch_map(tensor.runtime, f"{fn}(a, mu(1u))", [tensor], tensor.dtype,
                          [exponent], funcs=(fn,))

    @staticmethod
    def int_clamp(tensor: T, min: int | None, max: int | None) -> T:
        ct = compute_type(tensor.dtype)
        expr, params = "a", list[int]()
        if min is not None:
            expr, params = f"max({expr}, {ct}(mi({1 + len(params)}u)))", [*params, min]
        if max is not None:
            expr, params = f"min({expr}, {ct}(mi({1 + len(params)}u)))", [*params, max]
        return launch_map(tensor.runtime, expr, [tensor], tensor.dtype, params)

    int_equal = _compare("==")
    int_not_equal = _compare("!=")
    int_greater = _compare(">")
    int_greater_equal = _compare(">=")
    int_lower = _compare("<")
    int_lower_equal = _compare("<=")
    int_equal_elem = _compare_elem("==")
    int_not_equal_elem = _compare_elem("!=")
    int_greater_elem = _compare_elem(">")
    int_greater_equal_elem = _compare_elem(">=")
    int_lower_elem = _compare_elem("<")
    int_lower_equal_elem = _compare_elem("<=")

    int_sum = _reduction("sum", True)
    int_sum_dim = _reduction("sum", False)
    int_prod = _reduction("prod", True)
    int_prod_dim = _reduction("prod", False)
    int_max = _reduction("max", True)
    int_min = _reduction("min", True)
    int_max_dim = _reduction("max", False)
    int_min_dim = _reduction("min", False)

    @staticmethod
    def int_max_dim_with_indices(tensor: T, dim: int) -> tuple[T, T]:
        return reduce.reduce_dim_with_indices(tensor, dim, "max")

    @staticmethod
    def int_min_dim_with_indices(tensor: T, dim: int) -> tuple[T, T]:
        return reduce.reduce_dim_with_indices(tensor, dim, "min")

    @staticmethod
    def int_cumsum(tensor: T, dim: int) -> T:
        return scan.cumulative(tensor, dim, "sum")

    @staticmethod
    def int_cumprod(tensor: T, dim: int) -> T:
        return scan.cumulative(tensor, dim, "prod")

    @staticmethod
    def int_cummax_with_indices(tensor: T, dim: int) -> tuple[T, T]:
        return scan.cumulative_with_indices(tensor, dim, "max")

    @staticmethod
    def int_cummin_with_indices(tensor: T, dim: int) -> tuple[T, T]:
        return scan.cumulative_with_indices(tensor, dim, "min")

    @staticmethod
    def int_sort_with_indices(tensor: T, dim: int, descending: bool) -> tuple[T, T]:
        return sort.sort(tensor, dim, descending)
