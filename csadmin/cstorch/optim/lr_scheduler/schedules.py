"""The learning-rate schedules of one closed form: each is the generic schedule of
cstorch.optim.scheduler (where the formula is) under the real lr_scheduler module's name and
arguments (`initial_learning_rate` for the generic `initial_val`, …). Where torch has a schedule
of the same name with another meaning, the generic class's docstring says so."""

from typing import List, Optional

import torch

from ..scheduler.base import Alias, Tags
from ..scheduler.cyclic import CyclicScheduler, OneCycleScheduler
from ..scheduler.decay import (CosineAnnealingScheduler, CosineAnnealingWarmRestartsScheduler,
                               InverseExponentialTimeDecayScheduler, InverseSquareRootDecayScheduler, LambdaScheduler,
                               MultiplicativeScheduler)
from ..scheduler.forms import (ConstantScheduler, CosineDecayScheduler, ExponentialScheduler, LinearScheduler,
                               MultiStepScheduler, PolynomialScheduler, StepScheduler)
from .base import LRScheduler

Optimizer = torch.optim.Optimizer


class ConstantLR(LRScheduler, ConstantScheduler):
    """lr(s) = learning_rate."""

    learning_rate = Alias("val")

    def __init__(self, optimizer: Optimizer, learning_rate: float, total_iters: Optional[int] = None,
                 param_group_tags: Tags = None, last_epoch: int = -1):
        ConstantScheduler.__init__(self, optimizer, learning_rate, total_iters, param_group_tags, last_epoch)


class PolynomialLR(LRScheduler, PolynomialScheduler):
    """lr(s): PolynomialScheduler from initial_learning_rate to end_learning_rate."""

    initial_learning_rate, end_learning_rate = Alias("initial_val"), Alias("end_val")

    def __init__(self, optimizer: Optimizer, initial_learning_rate: float, end_learning_rate: float,
                 total_iters: int, power: float = 1.0, cycle: bool = False, param_group_tags: Tags = None,
                 last_epoch: int = -1):
        PolynomialScheduler.__init__(self, optimizer, initial_learning_rate, end_learning_rate, total_iters, power,
                                     cycle, param_group_tags, last_epoch)


class LinearLR(LRScheduler, LinearScheduler):
    """lr(s) = initial + (end - initial) * min(s, T)/T. (torch's LinearLR is the same line given
    as start/end factors of the optimizer's lr.)"""

    initial_learning_rate, end_learning_rate = Alias("initial_val"), Alias("end_val")

    def __init__(self, optimizer: Optimizer, initial_learning_rate: float, end_learning_rate: float,
                 total_iters: int, cycle: bool = False, param_group_tags: Tags = None, last_epoch: int = -1):
        LinearScheduler.__init__(self, optimizer, initial_learning_rate, end_learning_rate, total_iters, cycle,
                                 param_group_tags, last_epoch)


class ExponentialLR(LRScheduler, ExponentialScheduler):
    """lr(s) = initial_learning_rate * decay_rate ** (s / total_iters) (staircase: floored)."""

    initial_learning_rate = Alias("initial_val")

    def __init__(self, optimizer: Optimizer, initial_learning_rate: float, total_iters: int, decay_rate: float,
                 staircase: bool = False, param_group_tags: Tags = None, last_epoch: int = -1):
        ExponentialScheduler.__init__(self, optimizer, initial_learning_rate, total_iters, decay_rate, staircase,
                                      param_group_tags, last_epoch)


class StepLR(LRScheduler, StepScheduler):
    """lr(s) = initial_learning_rate * gamma ** floor(s / step_size), as torch's StepLR."""

    initial_learning_rate = Alias("initial_val")

    def __init__(self, optimizer: Optimizer, initial_learning_rate: float, step_size: int, gamma: float = 0.1,
                 param_group_tags: Tags = None, last_epoch: int = -1):
        StepScheduler.__init__(self, optimizer, initial_learning_rate, step_size, gamma, param_group_tags, last_epoch)


class MultiStepLR(LRScheduler, MultiStepScheduler):
    """lr(s) = initial_learning_rate * gamma ** (milestones passed), as torch's MultiStepLR."""

    initial_learning_rate = Alias("initial_val")

    def __init__(self, optimizer: Optimizer, initial_learning_rate: float, gamma: float, milestones: List[int],
                 param_group_tags: Tags = None, last_epoch: int = -1):
        MultiStepScheduler.__init__(self, optimizer, initial_learning_rate, gamma, milestones, param_group_tags,
                                    last_epoch)


class CosineDecayLR(LRScheduler, CosineDecayScheduler):
    """lr(s): the cosine from initial_learning_rate down to end_learning_rate over total_iters, then held."""

    initial_learning_rate, end_learning_rate = Alias("initial_val"), Alias("end_val")

    def __init__(self, optimizer: Optimizer, initial_learning_rate: float, end_learning_rate: float,
                 total_iters: int, param_group_tags: Tags = None, last_epoch: int = -1):
        CosineDecayScheduler.__init__(self, optimizer, initial_learning_rate, end_learning_rate, total_iters,
                                      param_group_tags, last_epoch)


class InverseExponentialTimeDecayLR(LRScheduler, InverseExponentialTimeDecayScheduler):
    """lr(s) = initial / (1 + decay_rate * s**step_exponent / total_iters) (staircase: floored)."""

    initial_learning_rate = Alias("initial_val")

    def __init__(self, optimizer: Optimizer, initial_learning_rate: float, step_exponent: int, total_iters: int,
                 decay_rate: float, staircase: bool = False, param_group_tags: Tags = None):
        InverseExponentialTimeDecayScheduler.__init__(self, optimizer, initial_learning_rate, step_exponent,
                                                      total_iters, decay_rate, staircase, param_group_tags)


class InverseSquareRootDecayLR(LRScheduler, InverseSquareRootDecayScheduler):
    """lr(s) = initial_learning_rate * scale / sqrt(max(s, warmup_steps))."""

    initial_learning_rate = Alias("initial_val")

    def __init__(self, optimizer: Optimizer, initial_learning_rate: float = 1.0, scale: float = 1.0,
                 warmup_steps: int = 1.0, param_group_tags: Tags = None):
        InverseSquareRootDecayScheduler.__init__(self, optimizer, initial_learning_rate, scale, warmup_steps,
                                                 param_group_tags)


class CosineAnnealingLR(LRScheduler, CosineAnnealingScheduler):
    """lr(s): torch's CosineAnnealingLR from initial_learning_rate (down to eta_min at T_max, and back)."""

    initial_learning_rate = Alias("initial_val")

    def __init__(self, optimizer: Optimizer, initial_learning_rate: float, T_max: int, eta_min: float = 0.0,
                 param_group_tags: Tags = None):
        CosineAnnealingScheduler.__init__(self, optimizer, initial_learning_rate, T_max, eta_min, param_group_tags)


class CosineAnnealingWarmRestarts(LRScheduler, CosineAnnealingWarmRestartsScheduler):
    """lr(s): SGDR from initial_learning_rate, restarting every T_0 steps (T_mult 1 only)."""

    initial_learning_rate = Alias("initial_val")

    def __init__(self, optimizer: Optimizer, initial_learning_rate: float, T_0: int, T_mult: int = 1,
                 eta_min: float = 0.0, param_group_tags: Tags = None):
        CosineAnnealingWarmRestartsScheduler.__init__(self, optimizer, initial_learning_rate, T_0, T_mult, eta_min,
                                                      param_group_tags)


class MultiplicativeLR(LRScheduler, MultiplicativeScheduler):
    """lr(s) = initial_learning_rate * coefficient**s."""

    initial_learning_rate = Alias("initial_val")

    def __init__(self, optimizer: Optimizer, initial_learning_rate: float, coefficient: float,
                 param_group_tags: Tags = None):
        MultiplicativeScheduler.__init__(self, optimizer, initial_learning_rate, coefficient, param_group_tags)


class LambdaLR(LRScheduler, LambdaScheduler):
    """lr(s) = Π_i (initial_learning_rate * f_i(s)) over set_value_lambda()'s functions."""

    initial_learning_rate = Alias("initial_val")

    def __init__(self, optimizer: Optimizer, initial_learning_rate: float, param_group_tags: Tags = None):
        LambdaScheduler.__init__(self, optimizer, initial_learning_rate, param_group_tags)


class CyclicLR(LRScheduler, CyclicScheduler):
    """The triangle between base_lr and max_lr (see CyclicScheduler for the modes)."""

    base_lr, max_lr = Alias("base_val"), Alias("max_val")

    def __init__(self, optimizer: Optimizer, base_lr: float, max_lr: float, step_size_up: int = 2000,
                 step_size_down: Optional[int] = None, mode: str = "triangular", gamma: float = 1.0,
                 scale_mode: str = "cycle", param_group_tags: Tags = None):
        CyclicScheduler.__init__(self, optimizer, base_lr, max_lr, step_size_up, step_size_down, mode, gamma,
                                 scale_mode, param_group_tags)


class OneCycleLR(LRScheduler, OneCycleScheduler):
    """1cycle from initial_learning_rate up to max_lr and down (see OneCycleScheduler)."""

    initial_learning_rate, max_lr = Alias("initial_val"), Alias("max_val")

    def __init__(self, optimizer: Optimizer, initial_learning_rate: float, max_lr: float, total_steps: int = 1000,
                 pct_start: float = 0.3, final_div_factor: float = 1e4, three_phase: bool = False,
                 anneal_strategy: str = "cos", param_group_tags: Tags = None):
        OneCycleScheduler.__init__(self, optimizer, initial_learning_rate, max_lr, total_steps, pct_start,
                                   final_div_factor, three_phase, anneal_strategy, param_group_tags)
