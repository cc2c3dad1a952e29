"""Quantized ops. Quantized primitives are the inner backend's own and carry no derivative
(as in Burn): ops between quantized tensors are B's functions, bound on the class by each
decorator's factory; the ops crossing to or from float primitives are here, for both
decorators side by side, and their float results start untracked and untangented."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any, cast

from burnpy.autodiff.dual_tensor import DualTensor
from burnpy.autodiff.rules.reverse import AutodiffOps
from burnpy.autodiff.rules.tangent import ForwardOps
from burnpy.autodiff.tensor import AutodiffTensor
from burnpy.quantization.scheme import QuantScheme

if TYPE_CHECKING:
    from burnpy.backend.base import Backend


class AutodiffQOps(AutodiffOps):
    """quantize / dequantize and the quantized ops with float inputs or outputs."""

    @classmethod
    def quantize(cls, tensor: AutodiffTensor, scheme: QuantScheme, scales: AutodiffTensor,
                 tensor_scale: AutodiffTensor | None) -> Any:
        """B's quantized primitive of the tensor's values (untracked)."""
        return cls.InnerBackend.quantize(tensor.primitive, scheme, scales.primitive,
                                         None if tensor_scale is None else tensor_scale.primitive)

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

    @classmethod
    def q_linear(cls, x: AutodiffTensor, weight: Any, bias: AutodiffTensor | None) -> Any:
        """Weight-only linear, recorded as the float ``linear`` with the weight dequantized
        (a constant), so gradients reach ``x`` and ``bias``."""
        backend = cast("type[Backend]", cls)  # the final decorator class has every family
        return backend.linear(x, backend.dequantize(weight), bias)


class ForwardQOps(ForwardOps):
    """quantize / dequantize and the quantized ops with float inputs or outputs."""

    @classmethod
    def quantize(cls, tensor: DualTensor, scheme: QuantScheme, scales: DualTensor,
                 tensor_scale: DualTensor | None) -> Any:
        """B's quantized primitive of the primal."""
        return cls.InnerBackend.quantize(tensor.primal, scheme, scales.primal,
                                         None if tensor_scale is None else tensor_scale.primal)

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

    @classmethod
    def q_linear(cls, x: DualTensor, weight: Any, bias: DualTensor | None) -> Any:
        """Weight-only linear, as the float ``linear`` with the weight dequantized (a
        constant): tangents flow from ``x`` and ``bias``."""
        backend = cast("type[Backend]", cls)  # the final decorator class has every family
        return backend.linear(x, backend.dequantize(weight), bias)
