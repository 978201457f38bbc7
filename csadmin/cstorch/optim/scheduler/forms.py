"""The common schedules of a value, each the closed form at step s = last_epoch (the names and
arguments of the real package's generic schedulers; the learning rate's and the weight decay's
are these under their own names). Past `total_iters`, a decaying schedule holds its end value
(PolynomialScheduler/LinearScheduler with cycle=True restart instead)."""

import math
from typing import List, Optional

import torch

from csadmin.errors import InvalidArgument

from ...checks import number, whole
from .base import VALUE_DTYPE, Scheduler, Tags


def constant(value: float) -> torch.Tensor:
    """`value` as a 0-d tensor of the schedules' dtype."""
    return torch.full((), value, dtype=VALUE_DTYPE)


class ConstantScheduler(Scheduler):
    """value(s) = val. (torch's ConstantLR is a factor for total_iters steps instead.)"""

    def __init__(self, optimizer: torch.optim.Optimizer, val: float, total_iters: Optional[int] = None,
                 param_group_tags: Tags = None, last_epoch: int = -1):
        self.val = number(type(self).__name__, self.name_of("val"), val)
        super().__init__(optimizer, total_iters, last_epoch, param_group_tags)

    def _get_closed_form(self):
        return constant(self.val)


class PolynomialScheduler(Scheduler):
    """value(s) = (initial - end) * (1 - min(s, T)/T) ** power + end, T = total_iters; with
    cycle=True, T grows to the next multiple of total_iters instead (TF's polynomial decay).
    (torch's PolynomialLR is this with end 0 and no cycle.)"""

    def __init__(self, optimizer: torch.optim.Optimizer, initial_val: float, end_val: float, total_iters: int,
                 power: float = 1.0, cycle: bool = False, param_group_tags: Tags = None, last_epoch: int = -1):
        owner = type(self).__name__
        self.initial_val = number(owner, self.name_of("initial_val"), initial_val)
        self.end_val = number(owner, self.name_of("end_val"), end_val)
        self.power = number(owner, "power", power)
        self.cycle = bool(cycle)
        super().__init__(optimizer, whole(owner, "total_iters", total_iters, 1), last_epoch, param_group_tags)

    def _get_closed_form(self):
        s = self.last_epoch
        total = constant(float(self.total_iters))
        if self.cycle:
            total = total * torch.clamp(torch.ceil(s / total), min=1.0)
        else:
            s = torch.clamp(s, max=float(self.total_iters))
        return (self.initial_val - self.end_val) * torch.pow(1.0 - s / total, self.power) + self.end_val


class LinearScheduler(PolynomialScheduler):
    """value(s) = initial + (end - initial) * min(s, T)/T: the polynomial of power 1."""

    def __init__(self, optimizer: torch.optim.Optimizer, initial_val: float, end_val: float, total_iters: int,
                 cycle: bool = False, param_group_tags: Tags = None, last_epoch: int = -1):
        super().__init__(optimizer, initial_val, end_val, total_iters, 1.0, cycle, param_group_tags, last_epoch)


class ExponentialScheduler(Scheduler):
    """value(s) = initial * decay_rate ** (s / total_iters), the exponent floored with staircase.
    (torch's ExponentialLR(gamma) is total_iters=1, decay_rate=gamma.)"""

    def __init__(self, optimizer: torch.optim.Optimizer, initial_val: float, total_iters: int, decay_rate: float,
                 staircase: bool = False, param_group_tags: Tags = None, last_epoch: int = -1):
        owner = type(self).__name__
        self.initial_val = number(owner, self.name_of("initial_val"), initial_val)
        self.decay_rate = number(owner, "decay_rate", decay_rate)
        self.staircase = bool(staircase)
        super().__init__(optimizer, whole(owner, "total_iters", total_iters, 1), last_epoch, param_group_tags)

    def _get_closed_form(self):
        power = self.last_epoch / self.total_iters
        if self.staircase:
            power = torch.floor(power)
        return self.initial_val * torch.pow(constant(self.decay_rate), power)


class StepScheduler(Scheduler):
    """value(s) = initial * gamma ** floor(s / step_size), as torch's StepLR."""

    def __init__(self, optimizer: torch.optim.Optimizer, initial_val: float, step_size: int, gamma: float = 0.1,
                 param_group_tags: Tags = None, last_epoch: int = -1):
        owner = type(self).__name__
        self.initial_val = number(owner, self.name_of("initial_val"), initial_val)
        self.step_size = whole(owner, "step_size", step_size, 1)
        self.gamma = number(owner, "gamma", gamma)
        super().__init__(optimizer, None, last_epoch, param_group_tags)

    def _get_closed_form(self):
        return self.initial_val * torch.pow(constant(self.gamma), torch.floor(self.last_epoch / self.step_size))


class MultiStepScheduler(Scheduler):
    """value(s) = initial * gamma ** (how many milestones are ≤ s), as torch's MultiStepLR. The
    real class's argument order (gamma before milestones), for scripts that pass them by position."""

    def __init__(self, optimizer: torch.optim.Optimizer, initial_val: float, gamma: float, milestones: List[int],
                 param_group_tags: Tags = None, last_epoch: int = -1):
        owner = type(self).__name__
        self.initial_val = number(owner, self.name_of("initial_val"), initial_val)
        if not isinstance(milestones, (list, tuple)) or not milestones:
            raise InvalidArgument(f"{owner}: milestones must be a non-empty list of steps; got {milestones!r}.")
        self.milestones = sorted(whole(owner, "milestones[]", m, 1) for m in milestones)
        self.gamma = number(owner, "gamma", gamma)
        super().__init__(optimizer, None, last_epoch, param_group_tags)

    def _get_closed_form(self):
        passed = (self.last_epoch >= torch.tensor(self.milestones, dtype=VALUE_DTYPE)).sum().to(VALUE_DTYPE)
        return self.initial_val * torch.pow(constant(self.gamma), passed)


class CosineDecayScheduler(Scheduler):
    """value(s) = end + (initial - end) * (1 + cos(pi * min(s, T)/T)) / 2, T = total_iters.
    (torch's CosineAnnealingLR(T_max=T, eta_min=end) up to T; it rises again after, this holds.)"""

    def __init__(self, optimizer: torch.optim.Optimizer, initial_val: float, end_val: float, total_iters: int,
                 param_group_tags: Tags = None, last_epoch: int = -1):
        owner = type(self).__name__
        self.initial_val = number(owner, self.name_of("initial_val"), initial_val)
        self.end_val = number(owner, self.name_of("end_val"), end_val)
        super().__init__(optimizer, whole(owner, "total_iters", total_iters, 1), last_epoch, param_group_tags)

    def _get_closed_form(self):
        progress = torch.clamp(self.last_epoch, max=float(self.total_iters)) / self.total_iters
        return self.end_val + (self.initial_val - self.end_val) * (1.0 + torch.cos(math.pi * progress)) / 2
