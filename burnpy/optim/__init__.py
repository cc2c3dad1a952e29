"""Optimizers (Burn's ``optim.step(model, grads)``), gradient clipping and LR schedulers."""

from burnpy.optim.adam import Adam, AdamW
from burnpy.optim.lr_scheduler import (
    ConstantLR,
    CosineAnnealingLR,
    ExponentialLR,
    LinearLR,
    LrScheduler,
    SequentialLR,
    StepLR,
    warmup_cosine,
)
from burnpy.optim.optimizer import (
    GradientClipping,
    Optimizer,
    OptimizerStateError,
    clip_grad_norm,
    clip_grad_value,
    clip_norm,
    total_norm,
)
from burnpy.optim.rmsprop import RMSprop
from burnpy.optim.sgd import SGD

__all__ = [
    "SGD", "Adam", "AdamW", "ConstantLR", "CosineAnnealingLR", "ExponentialLR",
    "GradientClipping", "LinearLR", "LrScheduler", "Optimizer", "OptimizerStateError",
    "RMSprop", "SequentialLR", "StepLR", "clip_grad_norm", "clip_grad_value", "clip_norm",
    "total_norm", "warmup_cosine",
]
