"""torch.nn.utils's helpers: ``rnn`` (padding and packing variable-length sequences), gradient
clipping on burnpy's ``Gradients`` (``clip_grad_norm_``...), parameters as one vector."""

from burnpy.nn.utils import rnn
from burnpy.nn.utils.clip_grad import (
    clip_grad_norm_,
    clip_grad_value_,
    clip_grads_with_norm_,
    get_total_norm,
)
from burnpy.nn.utils.convert_parameters import parameters_to_vector, vector_to_parameters

__all__ = ["clip_grad_norm_", "clip_grad_value_", "clip_grads_with_norm_", "get_total_norm",
           "parameters_to_vector", "rnn", "vector_to_parameters"]
