"""``Embedding`` and ``EmbeddingBag``: lookup tables of rows indexed by int tensors (torch's
arguments, shapes and initialization)."""

from __future__ import annotations

from typing import TYPE_CHECKING

from burnpy.backend.device import Device
from burnpy.backend.dtype import DTypeLike
from burnpy.backend.errors import InvalidArgumentError, KindError, ShapeError, describe
from burnpy.nn import functional as F
from burnpy.nn import init
from burnpy.nn.module import Module
from burnpy.tensor import Tensor

if TYPE_CHECKING:
    from burnpy.backend.base import Backend


class _Table(Module):
    """The table both layers share: ``weight [num_embeddings, embedding_dim]``, N(0, 1) with
    the ``padding_idx`` row zeroed (or ``_weight`` as given), frozen with ``_freeze``."""

    weight: Tensor

    def _init_table(self, num_embeddings: int, embedding_dim: int, padding_idx: int | None,
                    max_norm: float | None, norm_type: float, scale_grad_by_freq: bool,
                    sparse: bool, _weight: Tensor | None, _freeze: bool,
                    placement: init.Placement) -> None:
        name = type(self).__name__
        if sparse:
            raise InvalidArgumentError(f"{name}: sparse=True asks for sparse gradients, and "
                                       "burnpy's gradients are dense")
        if padding_idx is not None:
            if not -num_embeddings <= padding_idx < num_embeddings:
                raise InvalidArgumentError(f"{name}: padding_idx {padding_idx} is outside the "
                                           f"{num_embeddings} embeddings")
            padding_idx %= num_embeddings
        self.num_embeddings, self.embedding_dim = num_embeddings, embedding_dim
        self.padding_idx, self.max_norm, self.norm_type = padding_idx, max_norm, norm_type
        self.scale_grad_by_freq, self.sparse = scale_grad_by_freq, sparse
        if _weight is None:
            weight = init.normal((num_embeddings, embedding_dim), **placement)
            if padding_idx is not None:
                weight[padding_idx] = 0.0
        elif _weight.shape != (num_embeddings, embedding_dim):
            raise ShapeError(f"{name}: _weight must have shape ({num_embeddings}, "
                             f"{embedding_dim}), got {describe(_weight.shape)}")
        else:
            weight = _weight.detach()  # a leaf of its own, as torch's Parameter(_weight)
        self.weight = weight
        if _freeze and weight.backend.ad_enabled():
            weight.require_grad(False)

    def extra_repr(self) -> str:
        s = f"{self.num_embeddings}, {self.embedding_dim}"
        for key, value, default in (("padding_idx", self.padding_idx, None),
                                    ("max_norm", self.max_norm, None),
                                    ("norm_type", self.norm_type, 2.0),
                                    ("scale_grad_by_freq", self.scale_grad_by_freq, False)):
            if value != default:
                s += f", {key}={value}"
        return s


def _pretrained(name: str, embeddings: Tensor) -> tuple[int, int]:
    if embeddings.ndim != 2:
        raise ShapeError(f"{name}.from_pretrained: embeddings must be 2-d, got "
                         f"{describe(embeddings.shape)}")
    rows, dim = embeddings.shape
    return rows, dim


class Embedding(_Table):
    """A lookup table ``weight [num_embeddings, embedding_dim]`` indexed by int tensors.

    Initialized N(0, 1) with the ``padding_idx`` row zero, as torch; that row gets no
    gradient, ``max_norm`` renormalizes the rows looked up, ``scale_grad_by_freq`` divides each
    row's gradient by its count in the batch (``F.embedding``). ``_weight`` is used as the
    table as given (its backend and dtype); ``sparse=True`` is refused (dense gradients only).
    """

    def __init__(self, num_embeddings: int, embedding_dim: int, padding_idx: int | None = None,
                 max_norm: float | None = None, norm_type: float = 2.0,
                 scale_grad_by_freq: bool = False, sparse: bool = False,
                 _weight: Tensor | None = None, _freeze: bool = False, *,
                 backend: type[Backend] | None = None, device: Device | None = None,
                 dtype: DTypeLike | None = None) -> None:
        self._init_table(num_embeddings, embedding_dim, padding_idx, max_norm, norm_type,
                         scale_grad_by_freq, sparse, _weight, _freeze,
                         init.Placement(backend=backend, device=device, dtype=dtype))

    @classmethod
    def from_pretrained(cls, embeddings: Tensor, freeze: bool = True,
                        padding_idx: int | None = None, max_norm: float | None = None,
                        norm_type: float = 2.0, scale_grad_by_freq: bool = False,
                        sparse: bool = False) -> Embedding:
        """An ``Embedding`` whose table is ``embeddings [rows, dim]`` (on its backend), frozen
        unless ``freeze=False``; the padding row is kept as given."""
        rows, dim = _pretrained("Embedding", embeddings)
        return cls(rows, dim, padding_idx, max_norm, norm_type, scale_grad_by_freq, sparse,
                   embeddings, freeze)

    def forward(self, indices: Tensor) -> Tensor:
        """Int ``indices [...]`` -> ``[..., embedding_dim]``."""
        if indices.kind != "int":
            raise KindError(f"Embedding: indices must be an int tensor, got {indices.kind} "
                            f"({indices.dtype!r})")
        return F.embedding(indices, self.weight, self.padding_idx, self.max_norm,
                           self.norm_type, self.scale_grad_by_freq, self.sparse)


class EmbeddingBag(_Table):
    """Sums, means or maxima of bags of embeddings without building the rows in between
    (torch's ``EmbeddingBag``: ``mode``, ``include_last_offset``, ``padding_idx`` entries left
    out of each bag, ``per_sample_weights`` in mode "sum"; see ``F.embedding_bag``).
    Initialized as ``Embedding``."""

    def __init__(self, num_embeddings: int, embedding_dim: int, max_norm: float | None = None,
                 norm_type: float = 2.0, scale_grad_by_freq: bool = False, mode: str = "mean",
                 sparse: bool = False, _weight: Tensor | None = None,
                 include_last_offset: bool = False, padding_idx: int | None = None, *,
                 backend: type[Backend] | None = None, device: Device | None = None,
                 dtype: DTypeLike | None = None) -> None:
        if mode not in ("sum", "mean", "max"):
            raise InvalidArgumentError(f"EmbeddingBag: mode must be 'sum', 'mean' or 'max', "
                                       f"got {mode!r}")
        self._init_table(num_embeddings, embedding_dim, padding_idx, max_norm, norm_type,
                         scale_grad_by_freq, sparse, _weight, False,
                         init.Placement(backend=backend, device=device, dtype=dtype))
        self.mode, self.include_last_offset = mode, include_last_offset

    @classmethod
    def from_pretrained(cls, embeddings: Tensor, freeze: bool = True,
                        max_norm: float | None = None, norm_type: float = 2.0,
                        scale_grad_by_freq: bool = False, mode: str = "mean",
                        sparse: bool = False, include_last_offset: bool = False,
                        padding_idx: int | None = None) -> EmbeddingBag:
        """An ``EmbeddingBag`` whose table is ``embeddings [rows, dim]`` (on its backend),
        frozen unless ``freeze=False``."""
        rows, dim = _pretrained("EmbeddingBag", embeddings)
        bag = cls(rows, dim, max_norm, norm_type, scale_grad_by_freq, mode, sparse, embeddings,
                  include_last_offset, padding_idx)
        if freeze and bag.weight.backend.ad_enabled():
            bag.weight.require_grad(False)
        return bag

    def forward(self, input: Tensor, offsets: Tensor | None = None,
                per_sample_weights: Tensor | None = None) -> Tensor:
        """Int ``input [bags, n]``, or 1-d with ``offsets`` -> ``[bags, embedding_dim]``."""
        return F.embedding_bag(input, self.weight, offsets, self.max_norm, self.norm_type,
                               self.scale_grad_by_freq, self.mode, self.sparse,
                               per_sample_weights, self.include_last_offset, self.padding_idx)

    def extra_repr(self) -> str:
        return f"{super().extra_repr()}, mode={self.mode!r}"
