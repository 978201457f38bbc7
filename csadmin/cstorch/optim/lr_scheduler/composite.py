"""SequentialLR, PiecewiseConstantLR, ChainedLR and ScalePerParamLR: the learning rate's schedules
made of schedules (cstorch.optim.scheduler.composite, where the rules are), under the real
lr_scheduler module's names and arguments."""

from typing import List, Optional

import torch

from ..scheduler.base import Alias, Tags
from ..scheduler.composite import (ChainedScheduler as _Chained, PiecewiseConstantScheduler,
                                   ScalePerParamScheduler, SequentialScheduler)
from .base import LRScheduler
from .schedules import ConstantLR

Optimizer = torch.optim.Optimizer


class SequentialLR(LRScheduler, SequentialScheduler):
    """schedulers[i] from milestones[i-1] on, each counting its steps from its own start (as
    torch's SequentialLR): `lr(s) = schedulers[i](s - milestones[i-1])`."""

    def __init__(self, optimizer: Optimizer, schedulers: List[LRScheduler], milestones: List[int],
                 last_epoch: int = -1, param_group_tags: Tags = None):
        SequentialScheduler.__init__(self, optimizer, schedulers, milestones, last_epoch, param_group_tags)


class PiecewiseConstantLR(LRScheduler, PiecewiseConstantScheduler):
    """lr(s) = learning_rates[i] for milestones[i-1] <= s < milestones[i], then the last rate."""

    learning_rates = Alias("vals")

    def __init__(self, optimizer: Optimizer, learning_rates: List[float], milestones: List[int],
                 param_group_tags: Tags = None):
        PiecewiseConstantScheduler.__init__(self, optimizer, ConstantLR, learning_rates, milestones, param_group_tags)


class ChainedLR(LRScheduler, _Chained):
    """The first schedule scaled by every later one's factor (ChainedScheduler's rule).

    Both releases' forms: `ChainedLR(schedulers, param_group_tags=None)` (2.x: the optimizer is
    the one its parts schedule) and `ChainedLR(optimizer, schedulers)` (the first release's)."""

    def __init__(self, optimizer: Optional[Optimizer] = None, schedulers: Optional[List[LRScheduler]] = None,
                 last_epoch: int = -1, param_group_tags: Tags = None):
        if isinstance(optimizer, (list, tuple)):  # 2.x: (schedulers, param_group_tags)
            if schedulers is not None:
                param_group_tags = schedulers
            optimizer, schedulers = None, optimizer
        if optimizer is None and isinstance(schedulers, (list, tuple)) and schedulers:
            optimizer = getattr(schedulers[0], "optimizer", None)
        self._chain(optimizer, schedulers, last_epoch, param_group_tags)


class ChainedScheduler(ChainedLR):
    """torch's name for ChainedLR, as the real package aliases it."""


class ScalePerParamLR(LRScheduler, ScalePerParamScheduler):
    """`scheduler`'s rate times each param group's `adjust_learning_rate` (μP's per-layer rates)."""

    def __init__(self, optimizer: Optimizer, scheduler: LRScheduler, param_group_tags: Tags = None):
        ScalePerParamScheduler.__init__(self, optimizer, scheduler, param_group_tags)
