"""Quantized ops of the ForwardAD backend. Quantized primitives are the inner backend's own and
carry no tangent: ops between quantized tensors are B's functions, bound on the class by the
factory; the ops crossing to or from float primitives are here, and their float results start
untangented (no derivative flows through quantization)."""

from __future__ import annotations

from typing import Any

from burnpy.autodiff.forward.ops._define import ForwardOps
from burnpy.autodiff.forward.tensor import DualTensor
from burnpy.quantization.scheme import QuantScheme


def _primal(tensor: DualTensor | None) -> Any:
    return None if tensor is None else tensor.primal


class ForwardQOps(ForwardOps):
    """quantize / dequantize and the quantized ops with float inputs or outputs."""

    @classmethod
    def quantize(cls, tensor: DualTensor, scheme: QuantScheme, scales: DualTensor,
                 tensor_scale: DualTensor | None) -> Any:
        """B's quantized primitive of the primal."""
        return cls.InnerBackend.quantize(tensor.primal, scheme, scales.primal,
                                         _primal(tensor_scale))

    @classmethod
    def quantize_dynamic(cls, tensor: DualTensor, scheme: QuantScheme) -> Any:
        """B's quantized primitive with scales calibrated on the primal."""
        return cls.InnerBackend.quantize_dynamic(tensor.primal, scheme)

    @classmethod
    def q_compute_params(cls, tensor: DualTensor,
                         scheme: QuantScheme) -> tuple[DualTensor, DualTensor | None]:
        """B's calibration of the primal, untangented."""
        scales, tensor_scale = cls.InnerBackend.q_compute_params(tensor.primal, scheme)
        return DualTensor(scales), None if tensor_scale is None else DualTensor(tensor_scale)

    @classmethod
    def dequantize(cls, tensor: Any) -> DualTensor:
        """The values as an untangented float primitive."""
        return DualTensor(cls.InnerBackend.dequantize(tensor))

    @classmethod
    def q_matmul(cls, lhs: Any, rhs: Any) -> DualTensor:
        """B's quantized matmul, as an untangented float primitive."""
        return DualTensor(cls.InnerBackend.q_matmul(lhs, rhs))
