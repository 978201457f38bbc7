"""cstorch.optim.scheduler: schedules of any optimizer hyperparameter, as tensor functions of
the step (the real package's generic schedulers). `Scheduler` is the base; each schedule here
has generic argument names (`val`, `initial_val`, `end_val`, …) and a subclass says which
param-group key it drives (optim.lr_scheduler: "lr"; optim.weight_decay_scheduler:
"weight_decay"). base (Scheduler), forms (the common decays), decay (the other closed forms),
cyclic (CyclicScheduler, OneCycleScheduler) and composite (schedules made of schedules).
"""

from .base import Scheduler
from .composite import ChainedScheduler, PiecewiseConstantScheduler, ScalePerParamScheduler, SequentialScheduler
from .cyclic import CyclicScheduler, OneCycleScheduler
from .decay import (CosineAnnealingScheduler, CosineAnnealingWarmRestartsScheduler,
                    InverseExponentialTimeDecayScheduler, InverseSquareRootDecayScheduler, LambdaScheduler,
                    MultiplicativeScheduler)
from .forms import (ConstantScheduler, CosineDecayScheduler, ExponentialScheduler, LinearScheduler,
                    MultiStepScheduler, PolynomialScheduler, StepScheduler)

__all__ = ["Scheduler", "ConstantScheduler", "PolynomialScheduler", "LinearScheduler", "ExponentialScheduler",
           "InverseExponentialTimeDecayScheduler", "InverseSquareRootDecayScheduler", "CosineDecayScheduler",
           "SequentialScheduler", "PiecewiseConstantScheduler", "MultiStepScheduler", "StepScheduler",
           "CosineAnnealingScheduler", "LambdaScheduler", "CosineAnnealingWarmRestartsScheduler",
           "MultiplicativeScheduler", "ChainedScheduler", "CyclicScheduler", "OneCycleScheduler",
           "ScalePerParamScheduler"]
