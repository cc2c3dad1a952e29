"""Fast casts between float32 and the 16-bit floats (float16, bfloat16) as compiled loops.

NumPy converts float16 one element at a time in C (6 ns an element, 60x a float32 add) and
ml_dtypes' float32 -> bfloat16 cast takes 1 ns an element; the half-precision kernels of the
CPU backend compute in float32 and round once, so these casts are most of what a 16-bit
float op costs. The loops here work on the bits (16- and 32-bit integer views): float32 ->
float16 and back go through LLVM's ``fptrunc``/``fpext`` (one F16C instruction per 8 or 16
lanes where the CPU has it), float32 -> bfloat16 rounds to nearest even by integer
arithmetic, and bfloat16 -> float32 is a shift. Every finite value and infinity comes out
bitwise as torch's; a NaN stays a NaN of the same sign (bfloat16: the quiet bit set, as
ml_dtypes; torch's vectorized cast writes 0xFFFF for every NaN).
Imported lazily (``_shared.half_kernels``): numba takes 0.2 s to import.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any, cast

import numpy as np
from llvmlite import ir
from numba import types
from numba.extending import intrinsic

from burnpy.backend.dtype import DType
from burnpy_cpu.numba_kernels import njit_cached

_F32 = np.dtype(np.float32)
_F16 = np.dtype(np.float16)
_BF16 = DType.bfloat16.numpy
HALF_DTYPES = (_F16, _BF16)

#: Below this many elements NumPy's own cast is as fast as a compiled loop's call.
_FEW = 256

_jit = njit_cached(error_model="numpy", nogil=True)


def _round_to_half_typing(typingctx: Any, value: Any) -> tuple[Any, Callable[..., Any]]:
    """float32 -> the float16 bits, rounded to nearest even (LLVM ``fptrunc``)."""
    sig = types.uint16(types.float32)

    def codegen(context: Any, builder: Any, signature: Any, args: Any) -> Any:
        half = builder.fptrunc(args[0], ir.HalfType())
        return builder.bitcast(half, ir.IntType(16))

    return sig, codegen


def _widen_half_typing(typingctx: Any, bits: Any) -> tuple[Any, Callable[..., Any]]:
    """The float16 bits -> float32, exactly (LLVM ``fpext``)."""
    sig = types.float32(types.uint16)

    def codegen(context: Any, builder: Any, signature: Any, args: Any) -> Any:
        half = builder.bitcast(args[0], ir.HalfType())
        return builder.fpext(half, ir.FloatType())

    return sig, codegen


# Typed as called from compiled code (numba supplies the typing context itself).
_round_to_half = cast(Callable[[np.float32], np.uint16], intrinsic(_round_to_half_typing))
_widen_half = cast(Callable[[np.uint16], np.float32], intrinsic(_widen_half_typing))


@_jit
def float32_to_float16(src: np.ndarray, out: np.ndarray) -> None:  # pragma: no cover - numba
    """``out[i]`` (uint16, the float16 bits) = ``src[i]`` (float32) rounded to nearest even."""
    for i in range(src.size):
        out[i] = _round_to_half(src[i])


@_jit
def float16_to_float32(src: np.ndarray, out: np.ndarray) -> None:  # pragma: no cover - numba
    """``out[i]`` (float32) = the float16 whose bits are ``src[i]`` (uint16), exactly."""
    for i in range(src.size):
        out[i] = _widen_half(src[i])


@_jit
def float32_to_bfloat16(src: np.ndarray, out: np.ndarray) -> None:  # pragma: no cover - numba
    """``out[i]`` (int16, the bfloat16 bits) = the float32 bits ``src[i]`` (int32) rounded to
    nearest even: add 0x7FFF plus the kept part's lowest bit, keep the top half (32-bit lanes,
    twice numba's unsigned arithmetic, which widens to 64 bits; the sum wraps only for a NaN).
    A NaN keeps its sign and top payload bits with the quiet bit set (rounding could carry it
    into an infinity)."""
    for i in range(src.size):
        u = src[i]
        top = np.int32(u >> 16)
        rounded = np.int32((u + np.int32(0x7FFF) + (top & np.int32(1))) >> 16)
        is_nan = (u & np.int32(0x7FFFFFFF)) > np.int32(0x7F800000)
        out[i] = np.int16(np.int32(top | 0x40) if is_nan else rounded)


@_jit
def bfloat16_to_float32(src: np.ndarray, out: np.ndarray) -> None:  # pragma: no cover - numba
    """``out[i]`` (uint32, the float32 bits) = the bfloat16 bits ``src[i]`` (uint16) shifted up:
    every bfloat16 is a float32."""
    for i in range(src.size):
        out[i] = np.uint32(src[i]) << np.uint32(16)


def to_float32(a: np.ndarray) -> np.ndarray:
    """A float16 or bfloat16 array as a new C-ordered float32 array of its shape, exactly
    (another dtype by NumPy's cast)."""
    if a.size < _FEW or a.dtype not in HALF_DTYPES:
        return a.astype(_F32)
    if not a.flags.c_contiguous and a.flags.f_contiguous:  # a transposed matrix: keep it so
        return to_float32(a.T).T
    src = np.ascontiguousarray(a).reshape(-1).view(np.uint16)
    out = np.empty(a.shape, _F32)
    if a.dtype == _F16:
        float16_to_float32(src, out.reshape(-1))
    else:
        bfloat16_to_float32(src, out.reshape(-1).view(np.uint32))
    return out


def from_float32(a: np.ndarray, dtype: np.dtype) -> np.ndarray:
    """A float32 array as a new C-ordered ``dtype`` (float16 or bfloat16) array of its shape,
    each value rounded to nearest even once."""
    if a.size < _FEW:
        return a.astype(dtype)
    out = np.empty(a.shape, dtype)
    src = np.ascontiguousarray(a).reshape(-1)
    if dtype == _F16:
        float32_to_float16(src, out.reshape(-1).view(np.uint16))
    else:
        float32_to_bfloat16(src.view(np.int32), out.reshape(-1).view(np.int16))
    return out


def cast_array(a: np.ndarray, dtype: np.dtype) -> np.ndarray:
    """``a.astype(dtype, copy=False)`` with the casts from and to the 16-bit floats through
    float32 compiled (a 16-bit float widens exactly, so each value is still rounded once);
    float64 and other pairs are NumPy's."""
    src = a.dtype
    if src == dtype:
        return a
    if src in HALF_DTYPES:
        if dtype == _F32:
            return to_float32(a)
        if dtype in HALF_DTYPES:
            return from_float32(to_float32(a), dtype)
    elif src == _F32 and dtype in HALF_DTYPES:
        return from_float32(a, dtype)
    return a.astype(dtype, copy=False)
