"""burnpy's op IR: descriptions of protocol op calls, and the fused groups Fusion compiles.

``desc``: ``TensorDesc`` (shape, dtype) and ``OpDesc`` (any protocol op call).
``fused``: the elementwise vocabulary, the protocol ops ``Fusion`` records (``FUSABLE``) and
the structure of a fused group (``FusedGroup``), which is also the plan cache's key.
"""

from burnpy.ir.desc import OpDesc, TensorDesc, describe
from burnpy.ir.fused import (
    ELEMENTWISE,
    ELEMENTWISE_COMPOSITES,
    FUSABLE,
    REDUCTIONS,
    Elementwise,
    Fusable,
    FusedGroup,
    FusedOp,
    Reduction,
    Ref,
)

__all__ = [
    "ELEMENTWISE", "ELEMENTWISE_COMPOSITES", "FUSABLE", "REDUCTIONS", "Elementwise", "Fusable",
    "FusedGroup", "FusedOp", "OpDesc", "Reduction", "Ref", "TensorDesc", "describe",
]
