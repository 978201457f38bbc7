"""The real package's other closed-form schedules of one step s = last_epoch: inverse-time and
inverse-square-root decay, cosine annealing (with warm restarts), multiplicative and lambda
schedules, and piecewise constants. Each is torch ops on the step tensor (torch.where where the
formula has cases), so a captured step replays it; docs/cstorch.md lists the formulas."""

from __future__ import annotations

import math

import torch

from csadmin.errors import InvalidArgument

from ...checks import number, real, whole
from .base import LR_DTYPE, LRScheduler


def positive(owner: str, name: str, value) -> float:
    """`value` as a float > 0 (a divisor of the step), else InvalidArgument."""
    value = number(owner, name, value)
    if value == 0:
        raise InvalidArgument(f"{owner}: {name} must be above 0 (the schedule divides by it); got {value}.")
    return value


def _cosine(high: float, low: float, fraction: torch.Tensor) -> torch.Tensor:
    """low + (high - low) * (1 + cos(pi * fraction)) / 2: high at 0, low at 1."""
    return low + (high - low) * (1.0 + torch.cos(math.pi * fraction)) / 2


class InverseExponentialTimeDecayLR(LRScheduler):
    """lr(s) = initial / (1 + decay_rate * s**step_exponent / total_iters), the quotient floored
    with staircase=True (Keras' InverseTimeDecay, with the step raised to step_exponent)."""

    def __init__(self, optimizer, initial_learning_rate, step_exponent, total_iters, decay_rate, staircase=False,
                 param_group_tags=None):
        owner = "InverseExponentialTimeDecayLR"
        self.initial_learning_rate = number(owner, "initial_learning_rate", initial_learning_rate)
        self.step_exponent = real(owner, "step_exponent", step_exponent)
        self.decay_rate = number(owner, "decay_rate", decay_rate)
        self.staircase = bool(staircase)
        super().__init__(optimizer, whole(owner, "total_iters", total_iters, 1), -1, param_group_tags)

    def _get_closed_form_lr(self):
        alpha = torch.pow(self.last_epoch, self.step_exponent) / self.total_iters
        if self.staircase:
            alpha = torch.floor(alpha)
        return self.initial_learning_rate / (1.0 + self.decay_rate * alpha)


class InverseSquareRootDecayLR(LRScheduler):
    """lr(s) = initial * scale / sqrt(max(s, warmup_steps)): flat at initial*scale/sqrt(warmup)
    for the first warmup_steps, then the inverse square root of the step."""

    def __init__(self, optimizer, initial_learning_rate=1.0, scale=1.0, warmup_steps=1.0, param_group_tags=None):
        owner = "InverseSquareRootDecayLR"
        self.initial_learning_rate = number(owner, "initial_learning_rate", initial_learning_rate)
        self.scale = number(owner, "scale", scale)
        self.warmup_steps = positive(owner, "warmup_steps", warmup_steps)
        super().__init__(optimizer, None, -1, param_group_tags)

    def _get_closed_form_lr(self):
        return self.initial_learning_rate * self.scale / torch.sqrt(torch.clamp(self.last_epoch, min=self.warmup_steps))


class CosineAnnealingLR(LRScheduler):
    """lr(s) = eta_min + (initial - eta_min) * (1 + cos(pi * s / T_max)) / 2, for every s: down
    to eta_min at T_max, back up to initial at 2*T_max, and so on (torch's CosineAnnealingLR with
    the optimizer's lr = initial; CosineDecayLR is the one that holds its end value)."""

    def __init__(self, optimizer, initial_learning_rate, T_max, eta_min=0.0, param_group_tags=None):
        owner = "CosineAnnealingLR"
        self.initial_learning_rate = number(owner, "initial_learning_rate", initial_learning_rate)
        self.T_max = positive(owner, "T_max", T_max)
        self.eta_min = number(owner, "eta_min", eta_min)
        super().__init__(optimizer, None, -1, param_group_tags)

    def _get_closed_form_lr(self):
        return _cosine(self.initial_learning_rate, self.eta_min, self.last_epoch / self.T_max)


class CosineAnnealingWarmRestarts(LRScheduler):
    """SGDR: lr(s) = eta_min + (initial - eta_min) * (1 + cos(pi * (s mod T_0) / T_0)) / 2, the
    cosine restarting at initial every T_0 steps (torch's CosineAnnealingWarmRestarts with
    T_mult=1, the only T_mult the real class takes)."""

    def __init__(self, optimizer, initial_learning_rate, T_0, T_mult=1, eta_min=0.0, param_group_tags=None):
        owner = "CosineAnnealingWarmRestarts"
        if T_mult != 1:
            raise InvalidArgument(f"{owner}: T_mult {T_mult!r} is not supported; the only supported T_mult is "
                                  "1.0 (the default: every period T_0 steps).", hint="Leave T_mult at 1.")
        self.initial_learning_rate = number(owner, "initial_learning_rate", initial_learning_rate)
        self.T_0 = whole(owner, "T_0", T_0, 1)
        self.T_mult = T_mult
        self.eta_min = number(owner, "eta_min", eta_min)
        super().__init__(optimizer, None, -1, param_group_tags)

    def _get_closed_form_lr(self):
        since_restart = self.last_epoch - torch.floor(self.last_epoch / self.T_0) * self.T_0
        return _cosine(self.initial_learning_rate, self.eta_min, since_restart / self.T_0)


class MultiplicativeLR(LRScheduler):
    """lr(s) = initial * coefficient**s (torch's MultiplicativeLR with a constant factor)."""

    def __init__(self, optimizer, initial_learning_rate, coefficient, param_group_tags=None):
        owner = "MultiplicativeLR"
        self.initial_learning_rate = number(owner, "initial_learning_rate", initial_learning_rate)
        self.coefficient = number(owner, "coefficient", coefficient)
        super().__init__(optimizer, None, -1, param_group_tags)

    def _get_closed_form_lr(self):
        return self.initial_learning_rate * torch.pow(torch.full((), self.coefficient, dtype=LR_DTYPE),
                                                      self.last_epoch)


class LambdaLR(LRScheduler):
    """lr(s) = Π_i (initial * f_i(s)) over the functions `set_value_lambda()` returns, each given
    the step tensor and answering with torch ops (the real class's product: with one function,
    initial * f(s)). Override set_value_lambda; the default pair is s/30 and 0.95**s."""

    def __init__(self, optimizer, initial_learning_rate, param_group_tags=None):
        self.initial_learning_rate = number("LambdaLR", "initial_learning_rate", initial_learning_rate)
        super().__init__(optimizer, None, -1, param_group_tags)

    def set_value_lambda(self) -> list:
        """The functions of the step whose product (each times initial) is the learning rate."""
        return [lambda step: step / 30, lambda step: torch.pow(torch.full((), 0.95, dtype=LR_DTYPE), step)]

    def _get_closed_form_lr(self):
        functions = self.set_value_lambda()
        if not isinstance(functions, (list, tuple)) or not all(callable(f) for f in functions):
            raise InvalidArgument(f"{type(self).__name__}.set_value_lambda() returns a list of functions of the step; "
                                  f"got {functions!r}.", hint="Return e.g. [lambda step: torch.pow(0.9, step)].")
        lr = torch.ones((), dtype=LR_DTYPE)
        for function in functions:
            lr = lr * (self.initial_learning_rate * torch.as_tensor(function(self.last_epoch), dtype=LR_DTYPE))
        return lr


class PiecewiseConstantLR(LRScheduler):
    """lr(s) = learning_rates[i] for milestones[i-1] <= s < milestones[i], and learning_rates[-1]
    from the last milestone on (the real class's rule: with one rate per milestone, the last
    rate also runs on after it; a rate past the last milestone's is unused)."""

    def __init__(self, optimizer, learning_rates, milestones, param_group_tags=None):
        owner = "PiecewiseConstantLR"
        if not isinstance(learning_rates, (list, tuple)) or not learning_rates:
            raise InvalidArgument(f"{owner}: learning_rates must be a non-empty list; got {learning_rates!r}.")
        if not isinstance(milestones, (list, tuple)):
            raise InvalidArgument(f"{owner}: milestones must be a list of steps; got {milestones!r}.")
        self.learning_rates = [number(owner, f"learning_rates[{i}]", v) for i, v in enumerate(learning_rates)]
        self.milestones = [whole(owner, f"milestones[{i}]", m) for i, m in enumerate(milestones)]
        if self.milestones != sorted(set(self.milestones)):
            raise InvalidArgument(f"{owner}: milestones must increase; got {self.milestones}.")
        if len(self.learning_rates) < len(self.milestones):
            raise InvalidArgument(f"{owner}: {len(self.milestones)} milestones need {len(self.milestones) + 1} "
                                  f"learning_rates (one before each milestone and one after the last); got "
                                  f"{len(self.learning_rates)}.")
        super().__init__(optimizer, None, -1, param_group_tags)

    def _get_closed_form_lr(self):
        rates = self.learning_rates[:len(self.milestones)] + [self.learning_rates[-1]]
        lr = torch.full((), rates[0], dtype=LR_DTYPE)
        for milestone, rate in zip(self.milestones, rates[1:]):
            lr = torch.where(self.last_epoch >= milestone, torch.full((), rate, dtype=LR_DTYPE), lr)
        return lr
