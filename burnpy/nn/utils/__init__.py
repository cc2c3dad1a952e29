"""torch.nn.utils's helpers: ``rnn`` (padding and packing variable-length sequences)."""

from burnpy.nn.utils import rnn

__all__ = ["rnn"]
