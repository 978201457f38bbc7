"""The common schedules, each the closed form of the learning rate at step s = last_epoch (the
names and parameters of Cerebras' lr_scheduler module; where torch has a schedule of the same
name with another meaning, the docstring says so). Past `total_iters`, a decaying schedule holds
its end value (PolynomialLR/LinearLR with cycle=True restart instead)."""

from __future__ import annotations

import math

import torch

from csadmin.errors import InvalidArgument

from ...checks import number, whole
from .base import LR_DTYPE, LRScheduler


def _lr(owner: str, name: str, value) -> float:
    return number(owner, name, value)


class ConstantLR(LRScheduler):
    """lr(s) = learning_rate. (torch's ConstantLR is a factor for total_iters steps instead.)"""

    def __init__(self, optimizer, learning_rate, total_iters=None, param_group_tags=None, last_epoch=-1):
        self.learning_rate = _lr("ConstantLR", "learning_rate", learning_rate)
        super().__init__(optimizer, total_iters, last_epoch, param_group_tags)

    def _get_closed_form_lr(self):
        return torch.full((), self.learning_rate, dtype=LR_DTYPE)


class PolynomialLR(LRScheduler):
    """lr(s) = (initial - end) * (1 - min(s, T)/T) ** power + end, T = total_iters; with
    cycle=True, T grows to the next multiple of total_iters instead (TF's polynomial decay).
    (torch's PolynomialLR is this with end_learning_rate=0 and no cycle.)"""

    def __init__(self, optimizer, initial_learning_rate, end_learning_rate, total_iters, power=1.0,
                 cycle=False, param_group_tags=None, last_epoch=-1):
        owner = type(self).__name__
        self.initial_learning_rate = _lr(owner, "initial_learning_rate", initial_learning_rate)
        self.end_learning_rate = _lr(owner, "end_learning_rate", end_learning_rate)
        self.power = number(owner, "power", power)
        self.cycle = bool(cycle)
        super().__init__(optimizer, whole(owner, "total_iters", total_iters, 1), last_epoch, param_group_tags)

    def _get_closed_form_lr(self):
        s = self.last_epoch
        total = torch.full((), float(self.total_iters), dtype=LR_DTYPE)
        if self.cycle:
            total = total * torch.clamp(torch.ceil(s / total), min=1.0)
        else:
            s = torch.clamp(s, max=float(self.total_iters))
        decay = (self.initial_learning_rate - self.end_learning_rate) * torch.pow(1.0 - s / total, self.power)
        return decay + self.end_learning_rate


class LinearLR(PolynomialLR):
    """lr(s) = initial + (end - initial) * min(s, T)/T. (torch's LinearLR is the same line given
    as start/end factors of the optimizer's lr.)"""

    def __init__(self, optimizer, initial_learning_rate, end_learning_rate, total_iters, cycle=False,
                 param_group_tags=None, last_epoch=-1):
        super().__init__(optimizer, initial_learning_rate, end_learning_rate, total_iters, 1.0, cycle,
                         param_group_tags, last_epoch)


class ExponentialLR(LRScheduler):
    """lr(s) = initial * decay_rate ** (s / total_iters), the exponent floored with staircase=True.
    (torch's ExponentialLR(gamma) is total_iters=1, decay_rate=gamma.)"""

    def __init__(self, optimizer, initial_learning_rate, total_iters, decay_rate, staircase=False,
                 param_group_tags=None, last_epoch=-1):
        owner = "ExponentialLR"
        self.initial_learning_rate = _lr(owner, "initial_learning_rate", initial_learning_rate)
        self.decay_rate = number(owner, "decay_rate", decay_rate)
        self.staircase = bool(staircase)
        super().__init__(optimizer, whole(owner, "total_iters", total_iters, 1), last_epoch, param_group_tags)

    def _get_closed_form_lr(self):
        power = self.last_epoch / self.total_iters
        if self.staircase:
            power = torch.floor(power)
        return self.initial_learning_rate * torch.pow(torch.full((), self.decay_rate, dtype=LR_DTYPE), power)


class StepLR(LRScheduler):
    """lr(s) = initial * gamma ** floor(s / step_size), as torch's StepLR."""

    def __init__(self, optimizer, initial_learning_rate, step_size, gamma=0.1, param_group_tags=None, last_epoch=-1):
        self.initial_learning_rate = _lr("StepLR", "initial_learning_rate", initial_learning_rate)
        self.step_size = whole("StepLR", "step_size", step_size, 1)
        self.gamma = number("StepLR", "gamma", gamma)
        super().__init__(optimizer, None, last_epoch, param_group_tags)

    def _get_closed_form_lr(self):
        drops = torch.floor(self.last_epoch / self.step_size)
        return self.initial_learning_rate * torch.pow(torch.full((), self.gamma, dtype=LR_DTYPE), drops)


class MultiStepLR(LRScheduler):
    """lr(s) = initial * gamma ** (how many milestones are ≤ s), as torch's MultiStepLR. The real
    class's argument order (gamma before milestones), for scripts that pass them by position."""

    def __init__(self, optimizer, initial_learning_rate, gamma, milestones, param_group_tags=None, last_epoch=-1):
        owner = "MultiStepLR"
        self.initial_learning_rate = _lr(owner, "initial_learning_rate", initial_learning_rate)
        if not isinstance(milestones, (list, tuple)) or not milestones:
            raise InvalidArgument(f"{owner}: milestones must be a non-empty list of steps; got {milestones!r}.")
        self.milestones = sorted(whole(owner, "milestones[]", m, 1) for m in milestones)
        self.gamma = number(owner, "gamma", gamma)
        super().__init__(optimizer, None, last_epoch, param_group_tags)

    def _get_closed_form_lr(self):
        passed = (self.last_epoch >= torch.tensor(self.milestones, dtype=LR_DTYPE)).sum().to(LR_DTYPE)
        return self.initial_learning_rate * torch.pow(torch.full((), self.gamma, dtype=LR_DTYPE), passed)


class CosineDecayLR(LRScheduler):
    """lr(s) = end + (initial - end) * (1 + cos(pi * min(s, T)/T)) / 2, T = total_iters. (torch's
    CosineAnnealingLR(T_max=T, eta_min=end) up to T; it rises again after, this one holds.)"""

    def __init__(self, optimizer, initial_learning_rate, end_learning_rate, total_iters,
                 param_group_tags=None, last_epoch=-1):
        owner = "CosineDecayLR"
        self.initial_learning_rate = _lr(owner, "initial_learning_rate", initial_learning_rate)
        self.end_learning_rate = _lr(owner, "end_learning_rate", end_learning_rate)
        super().__init__(optimizer, whole(owner, "total_iters", total_iters, 1), last_epoch, param_group_tags)

    def _get_closed_form_lr(self):
        progress = torch.clamp(self.last_epoch, max=float(self.total_iters)) / self.total_iters
        cosine = (1.0 + torch.cos(math.pi * progress)) / 2
        return self.end_learning_rate + (self.initial_learning_rate - self.end_learning_rate) * cosine
