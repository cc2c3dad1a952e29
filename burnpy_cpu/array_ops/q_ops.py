"""Quantized ops over an array module: quantize/dequantize, sub-byte packing, layout and
selection on the integer data, and a matmul that accumulates integer products exactly.

Exact integer accumulation through float BLAS: a block's partial dot product is at most
``block * qmax**2`` in magnitude (32 * 127**2 ~ 5e5 for int8 blocks of 32), far below 2**24,
so float32 BLAS returns the same integers an int32 accumulator would, at BLAS speed (NumPy has
no integer BLAS). Per-tensor schemes switch to float64 when ``K * qmax**2`` could pass 2**24.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import replace
from typing import TYPE_CHECKING, Any, Literal

import numpy as np

from burnpy.backend.data import QuantParams, TensorData, contiguous
from burnpy.backend.device import Device
from burnpy.backend.dtype import DType
from burnpy.backend.ops._marker import backend_classmethod
from burnpy.backend.ops.q_ops import requantize
from burnpy.quantization.scheme import QuantLevel, QuantScheme, QuantStore
from burnpy_cpu.array_ops._shared import A, ArrayLayoutOps
from burnpy_cpu.numba_kernels import Int8Linear, int4_linear_kernel, int8_linear_kernel

if TYPE_CHECKING:
    from burnpy.backend.base import Backend

_F32 = np.dtype(np.float32)
_F64 = np.dtype(np.float64)
_EXACT_F32 = 2**24
#: Right-hand sides at most this wide take the int32 accumulation path.
_THIN = 16
_NO_BIAS = np.empty(0, dtype=_F32)


class QuantizedArray:
    """The CPU/CUDA quantized primitive: integer values (int8, or packed into uint32 words in
    C order), per-tensor or per-block scales, and the scheme."""

    __slots__ = ("block_axis", "data", "float_dtype", "linear_plan", "scales", "scheme",
                 "shape", "tensor_scale")

    def __init__(self, data: A, shape: tuple[int, ...], scheme: QuantScheme, scales: A,
                 tensor_scale: A | None, block_axis: int | None, float_dtype: DType) -> None:
        self.data, self.shape, self.scheme = data, shape, scheme
        self.scales, self.tensor_scale = scales, tensor_scale
        self.block_axis, self.float_dtype = block_axis, float_dtype
        #: ``q_linear``'s weight-side checks and kernel arguments, worked out on first use
        #: (ops never modify a quantized array, they make new ones), or False where the
        #: int8 kernel does not apply.
        self.linear_plan: Int8LinearPlan | Literal[False] | None = None

    @property
    def dtype(self) -> DType:
        return self.scheme.dtype

    @property
    def nbytes(self) -> int:
        """Bytes of values plus scales: what quantization saves."""
        extra = 0 if self.tensor_scale is None else self.tensor_scale.nbytes
        return int(self.data.nbytes + self.scales.nbytes + extra)

    def with_values(self, xp: Any, values: A, scales: A | None = None,
                    block_axis: int | None = -1) -> QuantizedArray:
        """A primitive of the same scheme holding new int8 ``values`` (packed as needed)."""
        return QuantizedArray(_pack(xp, values, self.scheme), tuple(values.shape), self.scheme,
                              self.scales if scales is None else scales, self.tensor_scale,
                              self.block_axis if block_axis == -1 else block_axis,
                              self.float_dtype)


class Int8LinearPlan:
    """What ``q_linear``'s compiled kernel needs of one weight ``[n, k]``, worked out once: the
    integer values (int8 ``[n, k]``, or int4 packed two a byte, uint8 ``[n, k / 2]``), float32
    scales ``[n, k / block]`` (a per-tensor scale repeated down the rows), the kernel for
    those values, the output's last dim ``(n,)`` and the most input elements (``_THIN``
    rows) it takes."""

    __slots__ = ("data", "kernel", "max_size", "out_tail", "scales")

    def __init__(self, data: A, scales: A, k: int) -> None:
        self.data, self.scales = data, scales
        self.out_tail = (data.shape[0],)
        self.max_size = _THIN * k
        self.kernel: Int8Linear = (int4_linear_kernel() if data.dtype == np.uint8
                                   else int8_linear_kernel())


def _pack(xp: Any, values: A, scheme: QuantScheme) -> A:
    """int8 values -> uint32 words holding ``32 // bits`` two's-complement fields each, value
    j of a word at bits ``[bits*j, bits*(j+1))``. Built bytewise (little-endian words), which
    is several times cheaper than shifting uint32 fields."""
    if scheme.store is QuantStore.NATIVE:
        return contiguous_array(xp, values)
    bits = scheme.value.bits
    per_byte = 8 // bits
    flat = values.reshape(-1)
    pad = (-flat.shape[0]) % (4 * per_byte)
    if pad:
        flat = xp.concatenate([flat, xp.zeros(pad, dtype=np.int8)])
    fields = flat.view(np.uint8).reshape(-1, per_byte) & ((1 << bits) - 1)
    packed = fields[:, 0].copy()
    for i in range(1, per_byte):
        packed |= fields[:, i] << (bits * i)
    return packed.view(np.uint32)


def _unpack(xp: Any, q: QuantizedArray) -> A:
    """The int8 values of ``q`` in its logical shape; each field is sign-extended by an
    arithmetic shift of its byte moved to the top."""
    if q.scheme.store is QuantStore.NATIVE:
        return q.data
    bits = q.scheme.value.bits
    per_byte = 8 // bits
    packed = q.data.view(np.uint8)
    out = xp.empty((packed.shape[0], per_byte), dtype=np.int8)
    for i in range(per_byte):
        top = (packed << (8 - bits * (i + 1))).view(np.int8)
        out[:, i] = top >> (8 - bits)
    n = 1
    for s in q.shape:
        n *= s
    return out.reshape(-1)[:n].reshape(q.shape)


def contiguous_array(xp: Any, arr: A) -> A:
    return xp.ascontiguousarray(arr) if arr.ndim else arr.copy()


def _split_block_axis(shape: tuple[int, ...], axis: int, nb: int) -> tuple[int, ...]:
    """``shape`` with the block axis split into (blocks, block size)."""
    return shape[:axis] + (nb, shape[axis] // nb) + shape[axis + 1:]


class ArrayQOps(ArrayLayoutOps):
    """The quantized op family on NumPy/CuPy arrays."""

    @classmethod
    def _effective_scales(cls, q: QuantizedArray, dtype: np.dtype[Any]) -> A:
        scales = q.scales.astype(dtype, copy=False)
        if q.tensor_scale is not None:
            scales = scales * q.tensor_scale.astype(dtype)
        return scales

    @classmethod
    def _broadcast_scales(cls, q: QuantizedArray, scales: A) -> tuple[A, tuple[int, ...]]:
        """Scales shaped to multiply values viewed with the block axis split, and that view."""
        if q.block_axis is None:
            return scales, q.shape
        ax = q.block_axis
        nb = q.scales.shape[ax]
        split = _split_block_axis(q.shape, ax, nb)
        return scales.reshape(split[:ax + 1] + (1,) + split[ax + 2:]), split

    @classmethod
    def quantize(cls, tensor: A, scheme: QuantScheme, scales: A, tensor_scale: A | None) -> Any:
        xp = cls.xp
        work = _F64 if tensor.dtype == _F64 else _F32
        eff = scales.astype(work)
        if tensor_scale is not None:
            eff = eff * tensor_scale.astype(work)
        x = tensor.astype(work, copy=False)
        axis = None
        if scheme.level.block_size is not None:
            axis = tensor.ndim - 1
            nb = tensor.shape[-1] // scheme.level.block_size
            x = x.reshape(_split_block_axis(tensor.shape, axis, nb))
            eff = eff[..., None]
        q = xp.clip(xp.rint(x / eff), scheme.value.qmin, scheme.value.qmax).astype(np.int8)
        values = q.reshape(tensor.shape)
        ts = None if tensor_scale is None else xp.asarray(tensor_scale, dtype=_F32)
        return QuantizedArray(_pack(xp, values, scheme), tuple(tensor.shape), scheme,
                              contiguous_array(xp, scales), ts, axis,
                              DType.of(tensor.dtype))

    @classmethod
    def dequantize(cls, tensor: QuantizedArray) -> A:
        """The float values: the integers widened and scaled in place in one fresh array
        (a quantized embedding dequantizes its picked rows per decoding step)."""
        out_dtype = tensor.float_dtype.numpy
        work = _F64 if out_dtype == _F64 else _F32
        scales = cls._effective_scales(tensor, work)
        values = _unpack(cls.xp, tensor).astype(work)
        if tensor.block_axis is None:
            if scales.ndim > values.ndim:  # a 0-d tensor's scale stored with dims
                return (values * scales).reshape(tensor.shape).astype(out_dtype, copy=False)
            values *= scales
            return values.astype(out_dtype, copy=False)
        scales, view = cls._broadcast_scales(tensor, scales)
        split = values.reshape(view)
        split *= scales
        return values.astype(out_dtype, copy=False)

    @classmethod
    def q_from_data(cls, data: TensorData, device: Device) -> QuantizedArray:
        """Sub-byte values arrive packed a byte at a time, which read as little-endian words
        are ``_pack``'s: they are padded to whole words, not unpacked and packed again."""
        quant = data.quant
        assert quant is not None
        xp = cls.xp
        native = quant.scheme.store is QuantStore.NATIVE
        host = data.array if native else data.packed
        if not native:
            pad = -host.shape[0] % 4
            host = np.concatenate([host, np.zeros(pad, dtype=np.uint8)]).view(np.uint32)
        with cls._on(device):
            values = xp.asarray(host)
            scales = xp.asarray(quant.scales)
            ts = None if quant.tensor_scale is None else xp.asarray(quant.tensor_scale)
        return QuantizedArray(_pack(xp, values, quant.scheme) if native else values,
                              tuple(data.shape), quant.scheme, scales, ts, quant.block_axis,
                              quant.float_dtype)

    @classmethod
    def q_into_data(cls, tensor: QuantizedArray) -> TensorData:
        host = cls._to_host
        ts = None if tensor.tensor_scale is None else host(tensor.tensor_scale).copy()
        params = QuantParams(contiguous(host(tensor.scales)).copy(), ts, tensor.block_axis,
                             tensor.scheme, tensor.float_dtype)
        if tensor.scheme.store is QuantStore.NATIVE:
            return TensorData(contiguous(host(tensor.data)).copy(), tensor.scheme.dtype, params)
        n = 1
        for s in tensor.shape:
            n *= s
        used = -(-n * tensor.scheme.value.bits // 8)
        packed = host(tensor.data).view(np.uint8)[:used].copy()
        return TensorData(packed, tensor.scheme.dtype, params, shape=tensor.shape)

    # ---- layout on the integer data ----------------------------------------------------------
    @backend_classmethod
    def q_reshape(cls: type[ArrayQBackend], tensor: QuantizedArray,
                  shape: tuple[int, ...]) -> QuantizedArray:
        ax = tensor.block_axis
        if ax is None:
            return QuantizedArray(tensor.data if tensor.scheme.store is not QuantStore.NATIVE
                                  else tensor.data.reshape(shape), shape, tensor.scheme,
                                  tensor.scales, tensor.tensor_scale, None, tensor.float_dtype)
        old = tensor.shape
        if ax == len(old) - 1 and shape and shape[-1] == old[-1]:
            values = _unpack(cls.xp, tensor).reshape(shape)
            scales = tensor.scales.reshape(shape[:-1] + tensor.scales.shape[-1:])
            return tensor.with_values(cls.xp, values, scales, len(shape) - 1)
        return requantize(cls, cls.float_reshape(cls.dequantize(tensor), shape), tensor)

    @classmethod
    def q_permute(cls, tensor: QuantizedArray, axes: tuple[int, ...]) -> QuantizedArray:
        values = _unpack(cls.xp, tensor).transpose(axes)
        if tensor.block_axis is None:
            return tensor.with_values(cls.xp, values)
        return tensor.with_values(cls.xp, values, tensor.scales.transpose(axes),
                                  axes.index(tensor.block_axis))

    @classmethod
    def q_swap_dims(cls, tensor: QuantizedArray, dim1: int, dim2: int) -> QuantizedArray:
        axes = list(range(len(tensor.shape)))
        axes[dim1], axes[dim2] = axes[dim2], axes[dim1]
        return cls.q_permute(tensor, tuple(axes))

    @classmethod
    def q_flip(cls, tensor: QuantizedArray, axes: tuple[int, ...]) -> QuantizedArray:
        values = cls.xp.flip(_unpack(cls.xp, tensor), axes)
        if tensor.block_axis is None:
            return tensor.with_values(cls.xp, values)
        return tensor.with_values(cls.xp, values, cls.xp.flip(tensor.scales, axes))

    @classmethod
    def q_expand(cls, tensor: QuantizedArray, shape: tuple[int, ...]) -> QuantizedArray:
        values = cls.xp.broadcast_to(_unpack(cls.xp, tensor), shape)
        if tensor.block_axis is None:
            return tensor.with_values(cls.xp, values)
        ax = tensor.block_axis + len(shape) - len(tensor.shape)
        scale_shape = list(shape)
        scale_shape[ax] = tensor.scales.shape[tensor.block_axis]
        scales = cls.xp.broadcast_to(tensor.scales, tuple(scale_shape))
        return tensor.with_values(cls.xp, values, contiguous_array(cls.xp, scales), ax)

    @classmethod
    def q_repeat_dim(cls, tensor: QuantizedArray, dim: int, times: int) -> QuantizedArray:
        values = cls._repeat_dim(_unpack(cls.xp, tensor), dim, times)
        if tensor.block_axis is None:
            return tensor.with_values(cls.xp, values)
        return tensor.with_values(cls.xp, values, cls._repeat_dim(tensor.scales, dim, times))

    # ---- selection on the integer data ---------------------------------------------------------
    @classmethod
    def _element_scales(cls, tensor: QuantizedArray) -> QuantizedArray:
        """The same values with one scale per element along the block axis (block size 1),
        so any selection along that axis stays exact."""
        ax = tensor.block_axis
        bs = tensor.scheme.level.block_size
        assert ax is not None and bs is not None
        scheme = replace(tensor.scheme, level=QuantLevel(1, tensor.scheme.level.two_level))
        scales = cls.xp.repeat(tensor.scales, bs, axis=ax)
        return QuantizedArray(tensor.data, tensor.shape, scheme, scales, tensor.tensor_scale, ax,
                              tensor.float_dtype)

    @classmethod
    def q_slice(cls, tensor: QuantizedArray, slices: tuple[slice, ...]) -> QuantizedArray:
        values = _unpack(cls.xp, tensor)[slices]
        ax = tensor.block_axis
        if ax is None:
            return tensor.with_values(cls.xp, values)
        bs = tensor.scheme.level.block_size
        assert bs is not None
        if ax >= len(slices):
            return tensor.with_values(cls.xp, values, tensor.scales[slices])
        s = slices[ax]
        if s.step == 1 and s.start % bs == 0 and (s.stop % bs == 0 or s.stop == tensor.shape[ax]):
            scale_slices = slices[:ax] + (slice(s.start // bs, -(-s.stop // bs)),) + slices[ax + 1:]
            return tensor.with_values(cls.xp, values, tensor.scales[scale_slices])
        fine = cls._element_scales(tensor)
        return fine.with_values(cls.xp, values, fine.scales[slices])

    @classmethod
    def q_select(cls, tensor: QuantizedArray, dim: int, indices: A) -> QuantizedArray:
        """The picked slices, still quantized. Native values with one scale (a quantized
        embedding's rows, each decoding step) are taken straight into the new array: ``take``
        returns them contiguous, with nothing to unpack or pack."""
        if tensor.block_axis is None and tensor.scheme.store is QuantStore.NATIVE:
            values = tensor.data.take(indices, axis=dim)
            return QuantizedArray(values, values.shape, tensor.scheme, tensor.scales,
                                  tensor.tensor_scale, None, tensor.float_dtype)
        if tensor.block_axis == dim:
            tensor = cls._element_scales(tensor)
        values = _unpack(cls.xp, tensor).take(indices, axis=dim)
        if tensor.block_axis is None:
            return tensor.with_values(cls.xp, values)
        return tensor.with_values(cls.xp, values, tensor.scales.take(indices, axis=dim))

    @classmethod
    def q_gather(cls, tensor: QuantizedArray, dim: int, indices: A) -> QuantizedArray:
        values = cls.xp.take_along_axis(_unpack(cls.xp, tensor), indices, axis=dim)
        if tensor.block_axis is None:
            return tensor.with_values(cls.xp, values)
        fine = cls._element_scales(tensor)
        return fine.with_values(cls.xp, values,
                                cls.xp.take_along_axis(fine.scales, indices, axis=dim))

    @backend_classmethod
    def q_cat(cls: type[ArrayQBackend], tensors: Sequence[QuantizedArray],
              dim: int) -> QuantizedArray:
        first = tensors[0]
        same_scale = first.block_axis is None and all(
            t.block_axis is None and bool((t.scales == first.scales).all()) for t in tensors)
        blockwise = first.block_axis is not None and all(
            t.block_axis == first.block_axis for t in tensors)
        if not (same_scale or blockwise):
            floats = [cls.dequantize(t) for t in tensors]
            return requantize(cls, cls.float_cat(floats, dim), first)
        values = cls.xp.concatenate([_unpack(cls.xp, t) for t in tensors], axis=dim)
        if same_scale:
            return first.with_values(cls.xp, values)
        scales = cls.xp.concatenate([t.scales for t in tensors], axis=dim)
        return first.with_values(cls.xp, values, scales)

    # ---- matmul on integers ----------------------------------------------------------------------
    @backend_classmethod
    def q_matmul(cls: type[ArrayQBackend], lhs: QuantizedArray, rhs: QuantizedArray) -> A:
        """Integer products accumulated exactly per block, scaled once per block pair.

        Thin right-hand sides (matrix-vector, the inference case) accumulate in int32 straight
        from the int8 data; wider ones go through float BLAS, exact per block (see module doc),
        accumulating one block at a time so no ``[blocks, m, n]`` intermediate is built.
        """
        xp = cls.xp
        nd = len(lhs.shape)
        k = lhs.shape[-1]
        lb = lhs.scheme.level.block_size if lhs.block_axis is not None else None
        rb = rhs.scheme.level.block_size if rhs.block_axis is not None else None
        aligned = (lhs.block_axis in (None, nd - 1) and rhs.block_axis in (None, nd - 2)
                   and (lb is None or rb is None or lb == rb))
        if not aligned:
            return cls.float_matmul(cls.dequantize(lhs), cls.dequantize(rhs))
        out_dtype = lhs.float_dtype.numpy
        block = lb or rb or k
        nb, n = k // block, rhs.shape[-1]
        ql, qr = _unpack(xp, lhs), _unpack(xp, rhs)
        sl = cls._effective_scales(lhs, _F32)
        sr = cls._effective_scales(rhs, _F32)
        # Per-block scales as [..., m, nb] and [..., nb, n]; per-tensor ones broadcast.
        if n <= _THIN:
            lhs_blocks = ql.reshape(lhs.shape[:-1] + (nb, block))
            rhs_blocks = qr.reshape(rhs.shape[:-2] + (nb, block, n))
            partial = xp.einsum("...mbk,...bkn->...mbn", lhs_blocks, rhs_blocks, dtype=np.int32)
            scaled = partial * sl[..., None] if lb is not None else partial * sl
            scaled = scaled * sr[..., None, :, :] if rb is not None else scaled * sr
            return scaled.sum(axis=-2, dtype=_F32).astype(out_dtype, copy=False)
        bound = block * lhs.scheme.value.qmax * rhs.scheme.value.qmax
        work = _F32 if bound < _EXACT_F32 else _F64
        ql, qr = ql.astype(work), qr.astype(work)
        if lb is None and rb is None:
            return ((ql @ qr) * (sl * sr)).astype(out_dtype, copy=False)
        out = xp.zeros(lhs.shape[:-1] + (n,), dtype=work)
        for b in range(nb):
            cols = slice(b * block, (b + 1) * block)
            partial = ql[..., cols] @ qr[..., cols, :]
            partial *= sl[..., b:b + 1] if lb is not None else sl
            partial *= sr[..., b:b + 1, :] if rb is not None else sr
            out += partial
        return out.astype(out_dtype, copy=False)

    @classmethod
    def _int8_linear_plan(cls, weight: QuantizedArray) -> Int8LinearPlan | Literal[False]:
        """The compiled kernel's plan of a non-empty 2-d weight on NumPy, quantized per tensor
        or in blocks along ``in``: native int8 values, or int4 ones packed two a byte (``in``
        and the block even, so rows and blocks start on a byte); else False."""
        scheme = weight.scheme
        bits, block = scheme.value.bits, scheme.level.block_size
        if (cls.xp is not np or len(weight.shape) != 2 or 0 in weight.shape
                or weight.block_axis not in (None, 1) or not weight.data.flags.c_contiguous):
            return False
        n, k = weight.shape
        if bits == 8 and scheme.store is QuantStore.NATIVE:
            data = weight.data
        elif bits == 4 and k % 2 == 0 and (weight.block_axis is None or block is None
                                           or block % 2 == 0):
            data = weight.data.view(np.uint8)[:n * k // 2].reshape(n, k // 2)
        else:
            return False
        scales = cls._effective_scales(weight, _F32)
        scales = (np.full((n, 1), scales.reshape(()), dtype=_F32) if weight.block_axis is None
                  else np.ascontiguousarray(scales))
        return Int8LinearPlan(data, scales, k)

    @backend_classmethod
    def q_linear(cls: type[ArrayQBackend], x: A, weight: QuantizedArray, bias: A | None) -> A:
        """Weight-only ``x @ weight.T + bias`` (float activations). On NumPy, a float32 input
        of at most ``_THIN`` rows times an int8 or int4 weight (per tensor, or blocks along
        ``in``) runs a compiled kernel on the integers (``int8_linear``, ``int4_linear``, int4
        read packed), the bias added in its pass;
        anything else dequantizes the weight for the call and uses the float ``linear``."""
        plan = weight.linear_plan
        if plan is None:
            plan = weight.linear_plan = cls._int8_linear_plan(weight)
        if (plan is False or x.dtype != _F32 or x.size > plan.max_size
                or (bias is not None and bias.dtype != _F32)):
            return cls.linear(x, cls.dequantize(weight), bias)
        out = np.empty(x.shape[:-1] + plan.out_tail, dtype=_F32)
        plan.kernel(x if x.flags.c_contiguous else np.ascontiguousarray(x), plan.data,
                    plan.scales, _NO_BIAS if bias is None else bias, out)
        return out


if TYPE_CHECKING:
    class ArrayQBackend(ArrayQOps, Backend):
        """A backend with these quantized ops, as the ones that fall back on float ops see
        ``cls`` (see ``backend_classmethod``)."""
