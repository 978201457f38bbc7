"""cstorch.optim.weight_decay_scheduler: schedules of the param groups' "weight_decay", as tensor
functions of the step (the real module's names: each generic schedule of cstorch.optim.scheduler,
with its generic arguments `val`, `initial_val`, `end_val`, … as the real classes take them).

    wd = cstorch.optim.weight_decay_scheduler.CosineDecayWD(optimizer, initial_val=0.1, end_val=0.01,
                                                            total_iters=1000)
    ...; optimizer.step(); wd.step()

The scheduler turns each driven group's weight_decay into a 0-d tensor it writes in place every
step, and every cstorch optimizer reads its weight decay from the group at each step (as a tensor
it always applies it, with no Python branch on its value), so the captured step replays the
schedule. Adam's and SGD's weight decay is the L2 term of the gradient; AdamW's and the other
decoupled ones' is their decoupled term, as each class documents: the schedule drives whichever
the optimizer's `weight_decay` is (Adam keeps its L2 rate under `l2_regularization_rate`, which
this does not drive, as in the real package).
"""

from typing import List

import torch

from .scheduler.base import Scheduler, Tags
from .scheduler.composite import (ChainedScheduler, PiecewiseConstantScheduler, ScalePerParamScheduler,
                                  SequentialScheduler)
from .scheduler.cyclic import CyclicScheduler, OneCycleScheduler
from .scheduler.decay import (CosineAnnealingScheduler, CosineAnnealingWarmRestartsScheduler,
                              InverseExponentialTimeDecayScheduler, InverseSquareRootDecayScheduler, LambdaScheduler,
                              MultiplicativeScheduler)
from .scheduler.forms import (ConstantScheduler, CosineDecayScheduler, ExponentialScheduler, LinearScheduler,
                              MultiStepScheduler, PolynomialScheduler, StepScheduler)


class WeightDecayScheduler(Scheduler):
    """A Scheduler of the param groups' "weight_decay" (arguments: see Scheduler)."""

    @property
    def param_group_key(self) -> str:
        return "weight_decay"


class ConstantWD(WeightDecayScheduler, ConstantScheduler):
    """wd(s) = val."""


class PolynomialWD(WeightDecayScheduler, PolynomialScheduler):
    """wd(s): the polynomial from initial_val to end_val over total_iters (PolynomialScheduler)."""


class LinearWD(WeightDecayScheduler, LinearScheduler):
    """wd(s): the line from initial_val to end_val over total_iters."""


class ExponentialWD(WeightDecayScheduler, ExponentialScheduler):
    """wd(s) = initial_val * decay_rate ** (s / total_iters) (staircase: floored)."""


class InverseExponentialTimeDecayWD(WeightDecayScheduler, InverseExponentialTimeDecayScheduler):
    """wd(s) = initial_val / (1 + decay_rate * s**step_exponent / total_iters)."""


class InverseSquareRootDecayWD(WeightDecayScheduler, InverseSquareRootDecayScheduler):
    """wd(s) = initial_val * scale / sqrt(max(s, warmup_steps))."""


class CosineDecayWD(WeightDecayScheduler, CosineDecayScheduler):
    """wd(s): the cosine from initial_val down to end_val over total_iters, then held."""


class SequentialWD(WeightDecayScheduler, SequentialScheduler):
    """schedulers[i] from milestones[i-1] on (SequentialScheduler)."""


class PiecewiseConstantWD(WeightDecayScheduler, PiecewiseConstantScheduler):
    """wd(s) = vals[i] for milestones[i-1] <= s < milestones[i], then the last value."""

    def __init__(self, optimizer: torch.optim.Optimizer, vals: List[float], milestones: List[int],
                 param_group_tags: Tags = None):
        PiecewiseConstantScheduler.__init__(self, optimizer, ConstantWD, vals, milestones, param_group_tags)


class MultiStepWD(WeightDecayScheduler, MultiStepScheduler):
    """wd(s) = initial_val * gamma ** (milestones passed)."""


class StepWD(WeightDecayScheduler, StepScheduler):
    """wd(s) = initial_val * gamma ** floor(s / step_size)."""


class CosineAnnealingWD(WeightDecayScheduler, CosineAnnealingScheduler):
    """wd(s): cosine annealing from initial_val (down to eta_min at T_max, and back)."""


class LambdaWD(WeightDecayScheduler, LambdaScheduler):
    """wd(s) = Π_i (initial_val * f_i(s)) over set_value_lambda()'s functions."""


class CosineAnnealingWarmRestartsWD(WeightDecayScheduler, CosineAnnealingWarmRestartsScheduler):
    """wd(s): SGDR from initial_val, restarting every T_0 steps."""


class MultiplicativeWD(WeightDecayScheduler, MultiplicativeScheduler):
    """wd(s) = initial_val * coefficient**s."""


class ChainedWD(WeightDecayScheduler, ChainedScheduler):
    """The first schedule scaled by every later one's factor (ChainedScheduler)."""


class CyclicWD(WeightDecayScheduler, CyclicScheduler):
    """The triangle between base_val and max_val (CyclicScheduler)."""


class OneCycleWD(WeightDecayScheduler, OneCycleScheduler):
    """1cycle from initial_val up to max_val and down (OneCycleScheduler)."""


class ScalePerParamWD(WeightDecayScheduler, ScalePerParamScheduler):
    """`scheduler`'s value times each param group's `adjust_val` factor."""


__all__ = ["WeightDecayScheduler", "ConstantWD", "PolynomialWD", "LinearWD", "ExponentialWD",
           "InverseExponentialTimeDecayWD", "InverseSquareRootDecayWD", "CosineDecayWD", "SequentialWD",
           "PiecewiseConstantWD", "MultiStepWD", "StepWD", "CosineAnnealingWD", "LambdaWD",
           "CosineAnnealingWarmRestartsWD", "MultiplicativeWD", "ChainedWD", "CyclicWD", "OneCycleWD",
           "ScalePerParamWD"]
