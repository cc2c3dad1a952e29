"""Losses in each reduction: cross entropy's fused path ([n, c] logits, class indices),
the composed losses, CTC."""

from __future__ import annotations

import numpy as np

import burnpy.nn.functional as F
from burnpy.tensor import Tensor
from burnpy.testing.cases import F as Flt
from burnpy.testing.cases import I
from burnpy.testing.module_cases._common import TF, _both, _case, torch

_both("cross_entropy", "cross_entropy", Flt(8, 5), I(8, high=5))
_both("cross_entropy_ignore_none", "cross_entropy", Flt(9, 4), I(9, high=4), ignore_index=2,
      reduction="none")
_both("cross_entropy_sum", "cross_entropy", Flt(3, 6), I(3, high=6), reduction="sum")

for _reduction in ("mean", "sum", "none"):
    _r = {"reduction": _reduction}
    _both(f"kl_div_{_reduction}", "kl_div", Flt(3, 4), Flt(3, 4, low=0.1, high=2.0), **_r)
    _both(f"smooth_l1_loss_{_reduction}", "smooth_l1_loss", Flt(3, 4), Flt(3, 4), beta=0.8,
          **_r)
    _both(f"bce_{_reduction}", "binary_cross_entropy", Flt(3, 4, low=0.05, high=0.95),
          Flt(3, 4, low=0.0, high=1.0, requires_grad=False), **_r)
    _both(f"poisson_nll_loss_{_reduction}", "poisson_nll_loss", Flt(3, 4),
          Flt(3, 4, low=0.0, high=4.0), **_r)
    _both(f"gaussian_nll_loss_{_reduction}", "gaussian_nll_loss", Flt(3, 4), Flt(3, 4),
          Flt(3, 4, low=0.1, high=2.0), **_r)
    _both(f"triplet_margin_loss_{_reduction}", "triplet_margin_loss", Flt(3, 4), Flt(3, 4),
          Flt(3, 4), **_r)
    _both(f"huber_loss_{_reduction}", "huber_loss", Flt(3, 4), Flt(3, 4), delta=0.7, **_r)
    _both(f"l1_loss_{_reduction}", "l1_loss", Flt(3, 4), Flt(3, 4), **_r)
    _both(f"mse_loss_{_reduction}", "mse_loss", Flt(3, 4), Flt(3, 4), **_r)
_both("kl_div_batchmean_log_target", "kl_div", Flt(3, 4), Flt(3, 4), reduction="batchmean",
      log_target=True)
_both("smooth_l1_loss_beta0", "smooth_l1_loss", Flt(3, 4), Flt(3, 4), beta=0.0)
_both("bce_weight", "binary_cross_entropy", Flt(3, 4, low=0.05, high=0.95),
      Flt(3, 4, low=0.0, high=1.0, requires_grad=False), Flt(3, 4, requires_grad=False))
_both("bce_with_logits_weights", "binary_cross_entropy_with_logits", Flt(3, 4, low=-30.0,
      high=30.0), Flt(3, 4, low=0.0, high=1.0), Flt(3, 4, requires_grad=False))
_case("bce_with_logits_pos_weight",
      lambda x, t, p: F.binary_cross_entropy_with_logits(x, t, pos_weight=p),
      Flt(3, 4, low=-6.0, high=6.0), Flt(3, 4, low=0.0, high=1.0),
      Flt(4, low=0.1, high=2.0, requires_grad=False),
      torch_fn=lambda x, t, p: TF.binary_cross_entropy_with_logits(x, t, pos_weight=p))
_both("poisson_nll_loss_rate_full", "poisson_nll_loss", Flt(3, 4, low=0.1, high=2.0),
      Flt(3, 4, low=0.0, high=4.0), log_input=False, full=True)
_both("gaussian_nll_loss_full_var_per_row", "gaussian_nll_loss", Flt(3, 4), Flt(3, 4),
      Flt(3, 1, low=0.1, high=2.0), full=True)
_both("triplet_margin_loss_p1_swap", "triplet_margin_loss", Flt(3, 4), Flt(3, 4), Flt(3, 4),
      margin=0.5, p=1.0, swap=True)
_case("margin_ranking_loss",
      lambda a, b, y: F.margin_ranking_loss(a, b, y.sign(), margin=0.2),
      Flt(5), Flt(5), Flt(5, requires_grad=False),
      torch_fn=lambda a, b, y: TF.margin_ranking_loss(a, b, y.sign(), margin=0.2))
_case("cosine_embedding_loss",
      lambda a, b, y: F.cosine_embedding_loss(a, b, y.sign(), margin=0.1, reduction="sum"),
      Flt(5, 3), Flt(5, 3), Flt(5, requires_grad=False),
      torch_fn=lambda a, b, y: TF.cosine_embedding_loss(a, b, y.sign(), margin=0.1,
                                                        reduction="sum"))

#: CTC targets: two padded label rows (a repeat in the first), their lengths and the inputs'.
_CTC_TARGETS = np.array([[1, 2, 2], [3, 1, 0]])
_CTC_INPUT_LENGTHS, _CTC_TARGET_LENGTHS = [5, 4], [3, 2]
for _reduction in ("mean", "sum", "none"):
    _case(f"ctc_loss_{_reduction}",
          lambda x, r=_reduction: F.ctc_loss(
              x.log_softmax(2), Tensor.from_data(_CTC_TARGETS, backend=x.backend,
                                                 dtype=x.backend.int_dtype),
              _CTC_INPUT_LENGTHS, _CTC_TARGET_LENGTHS, reduction=r),
          Flt(5, 2, 4),
          torch_fn=lambda x, r=_reduction: TF.ctc_loss(
              x.log_softmax(2), torch.from_numpy(_CTC_TARGETS),
              torch.tensor(_CTC_INPUT_LENGTHS), torch.tensor(_CTC_TARGET_LENGTHS), reduction=r))
