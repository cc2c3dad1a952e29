"""The op families of each decorator gathered into one base class each: ``AutodiffRules``
for ``AutodiffBackend`` and ``ForwardRules`` for ``ForwardADBackend``."""

from burnpy.autodiff.rules.activation import AutodiffActivationOps, ForwardActivationOps
from burnpy.autodiff.rules.conv import AutodiffConvOps, ForwardConvOps
from burnpy.autodiff.rules.elementwise import AutodiffElementwiseOps, ForwardElementwiseOps
from burnpy.autodiff.rules.indexing import AutodiffIndexingOps, ForwardIndexingOps
from burnpy.autodiff.rules.layout import AutodiffLayoutOps, ForwardLayoutOps
from burnpy.autodiff.rules.linalg import AutodiffLinalgOps, ForwardLinalgOps
from burnpy.autodiff.rules.no_derivative import AutodiffNoDerivativeOps, ForwardNoDerivativeOps
from burnpy.autodiff.rules.norm import AutodiffNormOps
from burnpy.autodiff.rules.pool import AutodiffPoolOps, ForwardPoolOps
from burnpy.autodiff.rules.quantized import AutodiffQOps, ForwardQOps
from burnpy.autodiff.rules.recurrent import AutodiffRecurrentOps
from burnpy.autodiff.rules.reduction import AutodiffReductionOps, ForwardReductionOps


class AutodiffRules(AutodiffElementwiseOps, AutodiffNoDerivativeOps, AutodiffLayoutOps,
                    AutodiffIndexingOps, AutodiffReductionOps, AutodiffLinalgOps, AutodiffQOps,
                    AutodiffConvOps, AutodiffPoolOps, AutodiffNormOps, AutodiffActivationOps,
                    AutodiffRecurrentOps):
    """Every op family of ``Autodiff``: the base of ``AutodiffBackend``."""


class ForwardRules(ForwardElementwiseOps, ForwardNoDerivativeOps, ForwardLayoutOps,
                   ForwardIndexingOps, ForwardReductionOps, ForwardLinalgOps, ForwardQOps,
                   ForwardConvOps, ForwardPoolOps, ForwardActivationOps):
    """Every op family of ``ForwardAD``: the base of ``ForwardADBackend``."""


__all__ = ["AutodiffQOps", "AutodiffRules", "ForwardQOps", "ForwardRules"]
