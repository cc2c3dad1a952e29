"""Neural-network building blocks: ``burnpy.nn.functional`` (torch's signatures)."""

from burnpy.nn import functional

__all__ = ["functional"]
