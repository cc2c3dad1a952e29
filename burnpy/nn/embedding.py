"""``Embedding``: a lookup table of rows indexed by int tensors (torch's shapes and
initialization)."""

from __future__ import annotations

from typing import TYPE_CHECKING

from burnpy.backend.device import Device
from burnpy.backend.dtype import DTypeLike
from burnpy.backend.errors import KindError
from burnpy.nn import functional as F
from burnpy.nn import init
from burnpy.nn.module import Module
from burnpy.tensor import Tensor

if TYPE_CHECKING:
    from burnpy.backend.base import Backend


class Embedding(Module):
    """A lookup table ``weight [num_embeddings, embedding_dim]`` indexed by int tensors.

    Initialized N(0, 1), as torch.
    """

    def __init__(self, num_embeddings: int, embedding_dim: int, *,
                 backend: type[Backend] | None = None, device: Device | None = None,
                 dtype: DTypeLike | None = None) -> None:
        self.num_embeddings, self.embedding_dim = num_embeddings, embedding_dim
        self.weight = init.normal((num_embeddings, embedding_dim), backend=backend,
                                  device=device, dtype=dtype)

    def forward(self, indices: Tensor) -> Tensor:
        """Int ``indices [...]`` -> ``[..., embedding_dim]``."""
        if indices.kind != "int":
            raise KindError(f"Embedding: indices must be an int tensor, got {indices.kind} "
                            f"({indices.dtype!r})")
        return F.embedding(indices, self.weight)

    def extra_repr(self) -> str:
        return f"{self.num_embeddings}, {self.embedding_dim}"
