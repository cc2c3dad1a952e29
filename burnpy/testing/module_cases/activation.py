"""Activations composed of Tensor ops: the cases pin torch's semantics, and the gradient
and tangent suites run through the compositions."""

from __future__ import annotations

from burnpy.testing.cases import F as Flt
from burnpy.testing.module_cases._common import _both

for _fn, _kw in [("relu6", {}), ("elu", {}), ("elu", {"alpha": 0.7}), ("selu", {}),
                 ("celu", {"alpha": 1.5}), ("mish", {}), ("hardswish", {}),
                 ("hardtanh", {"min_val": -0.5, "max_val": 1.5}), ("hardshrink", {}),
                 ("softshrink", {"lambd": 0.3}), ("tanhshrink", {}), ("softsign", {}),
                 ("threshold", {"threshold": 0.2, "value": -3.0})]:
    _both(f"{_fn}_" + "_".join(f"{k}{v}" for k, v in _kw.items()), _fn,
          Flt(3, 4, low=-8.0, high=8.0), **_kw)
_both("glu", "glu", Flt(2, 6, 3), dim=1)
_both("glu_last", "glu", Flt(3, 4))
_both("softmin", "softmin", Flt(2, 3, 4), dim=1)
_both("prelu_channels", "prelu", Flt(2, 3, 4), Flt(3))
_both("prelu_shared", "prelu", Flt(2, 3, 4, 2), Flt(1))
_both("rrelu_eval", "rrelu", Flt(3, 4), lower=0.1, upper=0.3)
