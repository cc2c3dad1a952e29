"""Optimizers (Burn's ``optim.step(model, grads)``), gradient clipping, LR schedulers and
weight averaging (``swa_utils``: SWA and EMA)."""

from burnpy.nn.utils.clip_grad import clip_norm, total_norm
from burnpy.optim import swa_utils
from burnpy.optim.adam import Adam, AdamW
from burnpy.optim.adaptive import Adadelta, Adafactor, Adagrad, Adamax, NAdam, RAdam, SparseAdam
from burnpy.optim.asgd import ASGD
from burnpy.optim.lbfgs import LBFGS
from burnpy.optim.lr_scheduler import (
    ChainedScheduler,
    ConstantLR,
    CosineAnnealingLR,
    CosineAnnealingWarmRestarts,
    CyclicLR,
    ExponentialLR,
    LambdaLR,
    LinearLR,
    LRScheduler,
    LrScheduler,
    MultiplicativeLR,
    MultiStepLR,
    OneCycleLR,
    PolynomialLR,
    ReduceLROnPlateau,
    SequentialLR,
    StepLR,
    warmup_cosine,
)
from burnpy.optim.muon import Muon
from burnpy.optim.optimizer import (
    GradientClipping,
    Optimizer,
    OptimizerStateError,
    clip_grad_norm,
    clip_grad_value,
)
from burnpy.optim.rmsprop import RMSprop
from burnpy.optim.rprop import Rprop
from burnpy.optim.sgd import SGD

__all__ = [
    "ASGD", "SGD", "Adadelta", "Adafactor", "Adagrad", "Adam", "AdamW", "Adamax", "LBFGS", "Muon",
    "NAdam", "RAdam", "Rprop", "SparseAdam", "ChainedScheduler", "CosineAnnealingWarmRestarts",
    "CyclicLR", "LRScheduler", "LambdaLR", "MultiStepLR", "MultiplicativeLR", "OneCycleLR",
    "PolynomialLR", "ReduceLROnPlateau", "ConstantLR", "CosineAnnealingLR", "ExponentialLR",
    "GradientClipping", "LinearLR", "LrScheduler", "Optimizer", "OptimizerStateError",
    "RMSprop", "SequentialLR", "StepLR", "clip_grad_norm", "clip_grad_value", "clip_norm",
    "swa_utils", "total_norm", "warmup_cosine",
]
