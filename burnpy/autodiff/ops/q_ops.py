"""Quantized ops of the Autodiff backend. Quantized primitives are the inner backend's own
and are never tracked (as in Burn): ops between quantized tensors are B's functions, bound
on the class by the factory; the ops crossing to or from float primitives are here, and their
float results start untracked (no gradient flows through quantization)."""

from __future__ import annotations

from typing import Any

from burnpy.autodiff.ops._define import AutodiffOps
from burnpy.autodiff.tensor import AutodiffTensor
from burnpy.quantization.scheme import QuantScheme


def _inner(tensor: AutodiffTensor | None) -> Any:
    return None if tensor is None else tensor.primitive


class AutodiffQOps(AutodiffOps):
    """quantize / dequantize and the quantized ops with float inputs or outputs."""

    @classmethod
    def quantize(cls, tensor: AutodiffTensor, scheme: QuantScheme, scales: AutodiffTensor,
                 tensor_scale: AutodiffTensor | None) -> Any:
        """B's quantized primitive of the tensor's values (untracked)."""
        return cls.InnerBackend.quantize(tensor.primitive, scheme, scales.primitive,
                                         _inner(tensor_scale))

    @classmethod
    def quantize_dynamic(cls, tensor: AutodiffTensor, scheme: QuantScheme) -> Any:
        """B's quantized primitive with scales calibrated on the tensor (untracked)."""
        return cls.InnerBackend.quantize_dynamic(tensor.primitive, scheme)

    @classmethod
    def q_compute_params(cls, tensor: AutodiffTensor,
                         scheme: QuantScheme) -> tuple[AutodiffTensor, AutodiffTensor | None]:
        """B's calibration, as untracked float primitives."""
        scales, tensor_scale = cls.InnerBackend.q_compute_params(tensor.primitive, scheme)
        return AutodiffTensor(scales), None if tensor_scale is None else AutodiffTensor(
            tensor_scale)

    @classmethod
    def dequantize(cls, tensor: Any) -> AutodiffTensor:
        """The values as an untracked float primitive."""
        return AutodiffTensor(cls.InnerBackend.dequantize(tensor))

    @classmethod
    def q_matmul(cls, lhs: Any, rhs: Any) -> AutodiffTensor:
        """B's quantized matmul, as an untracked float primitive."""
        return AutodiffTensor(cls.InnerBackend.q_matmul(lhs, rhs))
