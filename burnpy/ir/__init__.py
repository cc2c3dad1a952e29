"""burnpy's op IR: descriptions of protocol op calls, the elementwise registry, and the fused
groups Fusion compiles.

``desc``: ``TensorDesc`` (shape, dtype) and ``OpDesc`` (any protocol op call).
``elementwise``: every elementwise op declared once (``ElementwiseOp``: its local partials,
the protocol ops recorded as it, its expression for each fuser).
``fused``: the elementwise vocabulary, the protocol ops ``Fusion`` records (``FUSABLE``) and
the structure of a fused group (``FusedGroup``), which is also the plan cache's key.
"""

from burnpy.ir.desc import OpDesc, TensorDesc, describe
from burnpy.ir.elementwise import OPS, ElementwiseOp, Forms, LocalPartials, Record
from burnpy.ir.fused import (
    ELEMENTWISE,
    ELEMENTWISE_COMPOSITES,
    FUSABLE,
    REDUCTIONS,
    Fusable,
    FusedGroup,
    FusedOp,
    Reduction,
    Ref,
)

__all__ = [
    "ELEMENTWISE", "ELEMENTWISE_COMPOSITES", "FUSABLE", "OPS", "REDUCTIONS", "ElementwiseOp",
    "Forms", "Fusable", "FusedGroup", "FusedOp", "LocalPartials", "OpDesc", "Record",
    "Reduction", "Ref", "TensorDesc", "describe",
]
