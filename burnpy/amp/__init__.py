"""Mixed precision: ``autocast`` regions with torch's per-op policy (``policy``) and
``GradScaler``, the loss scaling that keeps float16 gradients from underflowing."""

from burnpy.amp.autocast import autocast, get_autocast_dtype, is_autocast_enabled
from burnpy.amp.grad_scaler import GradScaler
from burnpy.amp.policy import POLICY, CastPolicy

__all__ = ["POLICY", "CastPolicy", "GradScaler", "autocast", "get_autocast_dtype",
           "is_autocast_enabled"]
