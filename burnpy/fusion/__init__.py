"""``Fusion(B)``: Burn's kernel-fusion decorator backend.

Ops are recorded lazily on a per-device stream; chains of elementwise ops (and a reduction
closing them) run as one kernel compiled by B's fuser (``burnpy.fusion.fuser``), cached by the
group's structure; other ops run eagerly on B.
"""

from burnpy.fusion.backend import Fusion, FusionBackend, materialize
from burnpy.fusion.fuser import FusedKernel, Fuser, backend_fuser
from burnpy.fusion.stream import FusionStats
from burnpy.fusion.tensor import FusionTensor

__all__ = ["FusedKernel", "Fuser", "Fusion", "FusionBackend", "FusionStats", "FusionTensor",
           "backend_fuser", "materialize"]
