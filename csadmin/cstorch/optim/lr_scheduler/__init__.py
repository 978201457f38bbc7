"""cstorch.optim.lr_scheduler: learning-rate schedules as tensor functions of the step (001, 004).

The names and parameters follow Cerebras' module; docs/cstorch.md lists each schedule's formula.
base (LRScheduler), schedules (the common decays), decay (the real package's other closed forms),
cyclic (CyclicLR, OneCycleLR) and composite (schedules made of schedules).
"""

from .base import LRScheduler
from .composite import ChainedLR, ChainedScheduler, ScalePerParamLR, SequentialLR
from .cyclic import CyclicLR, OneCycleLR
from .decay import (CosineAnnealingLR, CosineAnnealingWarmRestarts, InverseExponentialTimeDecayLR,
                    InverseSquareRootDecayLR, LambdaLR, MultiplicativeLR, PiecewiseConstantLR)
from .schedules import ConstantLR, CosineDecayLR, ExponentialLR, LinearLR, MultiStepLR, PolynomialLR, StepLR

__all__ = ["LRScheduler", "ConstantLR", "PolynomialLR", "LinearLR", "ExponentialLR", "StepLR", "MultiStepLR",
           "CosineDecayLR", "SequentialLR", "ChainedLR", "ChainedScheduler", "InverseExponentialTimeDecayLR", "InverseSquareRootDecayLR",
           "PiecewiseConstantLR", "CosineAnnealingLR", "LambdaLR", "CosineAnnealingWarmRestarts", "MultiplicativeLR",
           "CyclicLR", "OneCycleLR", "ScalePerParamLR"]
