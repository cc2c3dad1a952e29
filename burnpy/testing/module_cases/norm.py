"""Normalizations: batch (train and eval), layer, RMS, group, instance, local response,
and ``normalize``."""

from __future__ import annotations

from typing import Any

import numpy as np

import burnpy.nn.functional as F
from burnpy.tensor import Tensor
from burnpy.testing.cases import Arg
from burnpy.testing.cases import F as Flt
from burnpy.testing.module_cases._common import TF, _both, _case, torch

_RUNNING_MEAN = np.array([0.3, -1.2, 0.5])
_RUNNING_VAR = np.array([0.7, 1.9, 0.2])


def _bn_train(x: Tensor, weight: Tensor | None = None, bias: Tensor | None = None) -> Tensor:
    return F.batch_norm(x, None, None, weight, bias, training=True, eps=1e-3)


def _torch_bn_train(x: Any, weight: Any = None, bias: Any = None) -> Any:
    return TF.batch_norm(x, None, None, weight, bias, training=True, eps=1e-3)


def _bn_eval(x: Tensor, w: Tensor, b: Tensor) -> Tensor:
    mean, var = (Tensor.from_data(a, backend=x.backend, dtype=x.dtype)
                 for a in (_RUNNING_MEAN, _RUNNING_VAR))
    return F.batch_norm(x, mean, var, w, b)


def _torch_bn_eval(x: Any, w: Any, b: Any) -> Any:
    mean, var = (torch.from_numpy(a).to(x.dtype) for a in (_RUNNING_MEAN, _RUNNING_VAR))
    return TF.batch_norm(x, mean, var, w, b)


_case("batch_norm_train", _bn_train, Flt(4, 3, 5, 2), Flt(3), Flt(3), torch_fn=_torch_bn_train)
_case("batch_norm_train_no_affine_1d", _bn_train, Flt(6, 4), torch_fn=_torch_bn_train)
_case("batch_norm_train_3d", _bn_train, Flt(2, 3, 4), Flt(3), Flt(3), torch_fn=_torch_bn_train)
_case("batch_norm_eval", _bn_eval, Flt(4, 3, 5), Flt(3), Flt(3), torch_fn=_torch_bn_eval)

def _layer_norm_case(name: str, shape: tuple[int, ...], *args: Arg, **kwargs: Any) -> None:
    """A layer norm over the trailing ``shape`` dims of ``args[0]``; the other args give the
    weight (and bias)."""
    _case(name, lambda x, *a: F.layer_norm(x, shape, *a, **kwargs), *args,
          torch_fn=lambda x, *a: TF.layer_norm(x, shape, *a, **kwargs))


_layer_norm_case("layer_norm", (5,), Flt(3, 4, 5), Flt(5), Flt(5))
_layer_norm_case("layer_norm_two_dims_weight_only", (3, 4), Flt(2, 3, 4), Flt(3, 4), eps=1e-3)
_layer_norm_case("layer_norm_no_affine", (6,), Flt(4, 6))

_case("rms_norm", lambda x, w: F.rms_norm(x, (5,), w, 1e-5), Flt(3, 4, 5), Flt(5),
      torch_fn=lambda x, w: TF.rms_norm(x, (5,), w, 1e-5))
_case("rms_norm_two_dims_no_weight", lambda x: F.rms_norm(x, (3, 4)), Flt(2, 3, 4),
      torch_fn=lambda x: TF.rms_norm(x, (3, 4)))

_both("normalize", "normalize", Flt(3, 4))
_both("normalize_p1_dim0", "normalize", Flt(3, 4), p=1.0, dim=0)
_both("normalize_p3", "normalize", Flt(2, 5), p=3.0, dim=-1)
_case("group_norm", lambda x, w, b: F.group_norm(x, 3, w, b), Flt(2, 6, 3, 2), Flt(6), Flt(6),
      torch_fn=lambda x, w, b: TF.group_norm(x, 3, w, b))
_both("group_norm_plain", "group_norm", Flt(3, 4, 5), num_groups=2)
_both("instance_norm", "instance_norm", Flt(2, 3, 5))
_case("instance_norm_affine",
      lambda x, w, b: F.instance_norm(x, weight=w, bias=b, eps=1e-3),
      Flt(2, 3, 4, 3), Flt(3), Flt(3),
      torch_fn=lambda x, w, b: TF.instance_norm(x, weight=w, bias=b, eps=1e-3))
_both("rms_norm_keywords", "rms_norm", Flt(2, 3, 4), weight=None,
      normalized_shape=(3, 4))
_both("rms_norm_eps", "rms_norm", Flt(3, 5), normalized_shape=(5,), eps=1e-3)
_both("local_response_norm", "local_response_norm", Flt(2, 5, 3, 2), size=3, alpha=0.1)
_both("local_response_norm_even", "local_response_norm", Flt(2, 4, 6), size=2, alpha=0.5,
      beta=0.6, k=2.0)
