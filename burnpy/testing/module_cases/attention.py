"""Scaled dot-product attention: causal, masked, cached, several heads."""

from __future__ import annotations

import numpy as np

import burnpy.nn.functional as F
from burnpy.tensor import Tensor
from burnpy.testing.cases import F as Flt
from burnpy.testing.module_cases._common import TF, _both, _case, torch

_both("attention", "scaled_dot_product_attention", Flt(2, 3, 4, 8), Flt(2, 3, 5, 8),
      Flt(2, 3, 5, 6))
_both("attention_causal_scale", "scaled_dot_product_attention", Flt(2, 5, 4), Flt(2, 5, 4),
      Flt(2, 5, 3), is_causal=True, scale=0.3)
_both("attention_tiny", "scaled_dot_product_attention", Flt(1, 2, 2), Flt(1, 3, 2),
      Flt(1, 3, 2))
_both("attention_heads_causal", "scaled_dot_product_attention", Flt(2, 2, 6, 4),
      Flt(2, 2, 6, 4), Flt(2, 2, 6, 3), is_causal=True)
_both("attention_causal_fewer_queries", "scaled_dot_product_attention", Flt(2, 3, 4),
      Flt(2, 5, 4), Flt(2, 5, 2), is_causal=True)
_both("attention_cached_step", "scaled_dot_product_attention", Flt(2, 3, 1, 4),
      Flt(2, 3, 6, 4), Flt(2, 3, 6, 5))

#: Every query row may attend to at least one key (a fully masked row has no softmax).
_MASK = np.array([[True, False, True, True, False],
                  [False, False, False, False, True],
                  [True, True, True, True, True],
                  [False, True, False, True, False]])
_case("attention_mask",
      lambda q, k, v: F.scaled_dot_product_attention(
          q, k, v, attn_mask=Tensor.from_data(_MASK, backend=q.backend)),
      Flt(2, 4, 8), Flt(2, 5, 8), Flt(2, 5, 6),
      torch_fn=lambda q, k, v: TF.scaled_dot_product_attention(
          q, k, v, attn_mask=torch.from_numpy(_MASK)))
