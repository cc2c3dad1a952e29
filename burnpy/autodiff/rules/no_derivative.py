"""Float ops without a derivative: creation ops (a float result depending on no float input)
and ops whose result is not a float tensor (comparisons, indices, device), both listed once in
``burnpy.autodiff.derivatives``; each decorator runs them on the inner values as they are.
ForwardAD also keeps here its host transfers and gradient-tracking queries (Autodiff's are
part of ``AutodiffBackend``, which counts host transfers and owns the graph)."""

from __future__ import annotations

from burnpy.autodiff.derivatives import without_derivative
from burnpy.autodiff.dual_tensor import DualTensor
from burnpy.autodiff.rules import reverse, tangent
from burnpy.autodiff.rules.reverse import AutodiffOps
from burnpy.autodiff.rules.tangent import ForwardOps


@without_derivative(reverse.constant, reverse.on_inner, reverse.on_inners)
class AutodiffNoDerivativeOps(AutodiffOps):
    """Creation ops and ops with non-float results, on the inner values."""


@without_derivative(tangent.constant, tangent.on_inner, tangent.on_inners)
class ForwardNoDerivativeOps(ForwardOps):
    """Creation ops and ops with non-float results, on the primals."""

    float_from_data = tangent.constant("float_from_data", "A constant holding ``data``.")
    float_into_data = tangent.on_inner("float_into_data", "The primal's values on the host.")

    # ---- gradient tracking (a forward-mode level tracks no graph of its own) ------------------
    @classmethod
    def float_is_require_grad(cls, tensor: DualTensor) -> bool:
        """Whether the primal is tracked by a reverse-mode level below this one."""
        return cls.InnerBackend.float_is_require_grad(tensor.primal)

    @staticmethod
    def float_detach(tensor: DualTensor) -> DualTensor:
        """The primal without its tangent (levels below keep their own tracking, as
        ``Autodiff``'s detach leaves the inner primitive alone)."""
        return tensor if tensor.tangent is None else DualTensor(tensor.primal)
