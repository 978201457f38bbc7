"""cstorch.optim.lr_scheduler: learning-rate schedules as tensor functions of the step (001, 004).

Each is a cstorch.optim.scheduler schedule driving the param groups' "lr", under the names and
arguments of Cerebras' lr_scheduler module; docs/cstorch/optim.md lists each schedule's formula.
base (LRScheduler), schedules (the single closed forms) and composite (schedules made of schedules).
"""

from .base import LRScheduler
from .composite import ChainedLR, ChainedScheduler, PiecewiseConstantLR, ScalePerParamLR, SequentialLR
from .schedules import (ConstantLR, CosineAnnealingLR, CosineAnnealingWarmRestarts, CosineDecayLR, CyclicLR,
                        ExponentialLR, InverseExponentialTimeDecayLR, InverseSquareRootDecayLR, LambdaLR, LinearLR,
                        MultiplicativeLR, MultiStepLR, OneCycleLR, PolynomialLR, StepLR)

__all__ = ["LRScheduler", "ConstantLR", "PolynomialLR", "LinearLR", "ExponentialLR", "StepLR", "MultiStepLR",
           "CosineDecayLR", "SequentialLR", "ChainedLR", "ChainedScheduler", "InverseExponentialTimeDecayLR",
           "InverseSquareRootDecayLR", "PiecewiseConstantLR", "CosineAnnealingLR", "LambdaLR",
           "CosineAnnealingWarmRestarts", "MultiplicativeLR", "CyclicLR", "OneCycleLR", "ScalePerParamLR"]
