"""``Fusion(B)``: Burn's kernel-fusion decorator backend (see ``burnpy.fusion.fuser``)."""

from burnpy.fusion.fuser import FusedKernel, Fuser, backend_fuser

__all__ = ["FusedKernel", "Fuser", "backend_fuser"]
