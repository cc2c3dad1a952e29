"""Cases of the module ops, called through ``burnpy.nn.functional`` with torch's signatures,
one module per topic of ``burnpy/nn/functional/`` (activation, attention, conv, distance,
layout, linear, loss, norm, padding, pool, recurrent, sparse, vision).

They are ``OpCase`` values like the op table's, kept in their own list (``MODULE_CASES``): the
forward suite checks their values in float64 and float32, and the gradient and tangent suites
(which draw float64) exercise the module ops' backward kernels under every stride, padding,
dilation and group setting. A topic's module registers its cases when imported.
"""

from burnpy.testing.module_cases import (  # noqa: F401 - each registers its cases
    activation,
    attention,
    conv,
    distance,
    layout,
    linear,
    loss,
    norm,
    padding,
    pool,
    recurrent,
    sparse,
    vision,
)
from burnpy.testing.module_cases._common import MODULE_CASES

__all__ = ["MODULE_CASES"]
