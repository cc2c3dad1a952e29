"""torch.nn.utils's helpers: ``rnn`` (padding and packing variable-length sequences), gradient
clipping on burnpy's ``Gradients`` (``clip_grad_norm_``...), parameters as one vector, and
parametrizations (``parametrize``, ``parametrizations.weight_norm``/``spectral_norm``)."""

from burnpy.backend.errors import BurnpyError
from burnpy.nn.utils import parametrizations, parametrize, rnn
from burnpy.nn.utils.clip_grad import (
    clip_grad_norm_,
    clip_grad_value_,
    clip_grads_with_norm_,
    get_total_norm,
)
from burnpy.nn.utils.convert_parameters import parameters_to_vector, vector_to_parameters

__all__ = ["clip_grad_norm_", "clip_grad_value_", "clip_grads_with_norm_", "get_total_norm",
           "parameters_to_vector", "parametrizations", "parametrize", "rnn",
           "vector_to_parameters"]

#: torch's deprecated hook-based helpers, and where their parametrized forms are.
_LEGACY = {
    "weight_norm": "parametrizations.weight_norm (it loads the legacy weight_g/weight_v "
                   "entries as parametrizations.weight.original0/original1)",
    "remove_weight_norm": "parametrize.remove_parametrizations(module, 'weight')",
    "spectral_norm": "parametrizations.spectral_norm (weight_orig/weight_u/weight_v become "
                     "parametrizations.weight.original and parametrizations.weight.0._u/_v)",
    "remove_spectral_norm": "parametrize.remove_parametrizations(module, 'weight')",
}


class LegacyUtilityError(BurnpyError, AttributeError):
    """A deprecated torch.nn.utils helper burnpy offers only in its parametrized form."""


def __getattr__(name: str) -> object:
    if name in _LEGACY:
        raise LegacyUtilityError(f"burnpy.nn.utils.{name}: torch's deprecated hook-based "
                                 f"helper is not provided; use burnpy.nn.utils."
                                 f"{_LEGACY[name]}")
    raise AttributeError(f"module 'burnpy.nn.utils' has no attribute '{name}'")
