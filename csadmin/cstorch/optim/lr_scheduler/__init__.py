"""cstorch.optim.lr_scheduler: learning-rate schedules as tensor functions of the step (001, 004).

The names and parameters follow Cerebras' module; docs/cstorch.md lists each schedule's formula.
"""

from .base import LRScheduler
from .composite import ChainedLR, SequentialLR
from .schedules import ConstantLR, CosineDecayLR, ExponentialLR, LinearLR, MultiStepLR, PolynomialLR, StepLR

__all__ = ["LRScheduler", "ConstantLR", "PolynomialLR", "LinearLR", "ExponentialLR", "StepLR", "MultiStepLR",
           "CosineDecayLR", "SequentialLR", "ChainedLR"]
