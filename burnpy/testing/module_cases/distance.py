"""Cosine similarity and pairwise distance."""

from __future__ import annotations

from burnpy.testing.cases import F as Flt
from burnpy.testing.module_cases._common import _both

_both("cosine_similarity", "cosine_similarity", Flt(3, 4), Flt(3, 4))
_both("cosine_similarity_bcast", "cosine_similarity", Flt(2, 1, 5), Flt(3, 5), dim=-1)
_both("pairwise_distance", "pairwise_distance", Flt(3, 4), Flt(3, 4))
_both("pairwise_distance_p1_keepdim", "pairwise_distance", Flt(3, 4), Flt(3, 4), p=1.0,
      keepdim=True)
