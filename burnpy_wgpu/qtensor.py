"""``WgpuQTensor``: the WebGPU quantized primitive.

WGSL has no 8-bit types, so every scheme packs its values into u32 words on the device:
``32 // bits`` two's-complement fields per word in C order (4 int8, 8 int4 or 16 ternary
values), field ``j`` at bits ``[bits*j, bits*(j+1))``. Scales are kept as float32 (the scheme's
scale precision is restored on the host) and move with their values under layout ops.
"""

from __future__ import annotations

from burnpy.backend.device import Device
from burnpy.backend.dtype import DType
from burnpy.quantization.scheme import QuantScheme
from burnpy_wgpu.tensor import WgpuTensor


class WgpuQTensor:
    """Packed values ``words`` of logical ``shape``, per-tensor or per-block ``scales`` along
    ``block_axis``, an optional two-level ``tensor_scale``, the scheme and the float dtype
    the values dequantize to."""

    __slots__ = ("block_axis", "float_dtype", "scales", "scheme", "shape", "tensor_scale",
                 "words")

    def __init__(self, words: WgpuTensor, shape: tuple[int, ...], scheme: QuantScheme,
                 scales: WgpuTensor, tensor_scale: WgpuTensor | None, block_axis: int | None,
                 float_dtype: DType) -> None:
        self.words, self.shape, self.scheme = words, shape, scheme
        self.scales, self.tensor_scale = scales, tensor_scale
        self.block_axis, self.float_dtype = block_axis, float_dtype

    @property
    def dtype(self) -> DType:
        return self.scheme.dtype

    @property
    def device(self) -> Device:
        return self.words.device

    @property
    def nbytes(self) -> int:
        """Bytes of packed values plus scales: what quantization saves."""
        extra = 0 if self.tensor_scale is None else 4
        return 4 * (self.words.numel() + self.scales.numel()) + extra
