"""Mixed precision: ``autocast`` regions with torch's per-op policy (``policy``) and
``GradScaler``, the loss scaling that keeps float16 gradients from underflowing."""

from burnpy.amp.autocast import autocast, get_autocast_dtype, is_autocast_enabled
from burnpy.amp.policy import POLICY, CastPolicy

__all__ = ["POLICY", "CastPolicy", "autocast", "get_autocast_dtype", "is_autocast_enabled"]
