"""The real package's other closed-form schedules of one step s = last_epoch: inverse-time and
inverse-square-root decay, cosine annealing (with warm restarts), multiplicative and lambda
schedules. Each is torch ops on the step tensor (torch.where where the formula has cases), so a
captured step replays it; docs/cstorch/optim.md lists the formulas."""

import math

import torch

from csadmin.errors import InvalidArgument

from ...checks import number, real, whole
from .base import VALUE_DTYPE, Scheduler, Tags
from .forms import constant


def positive(owner: str, name: str, value) -> float:
    """`value` as a float > 0 (a divisor of the step), else InvalidArgument."""
    value = number(owner, name, value)
    if value == 0:
        raise InvalidArgument(f"{owner}: {name} must be above 0 (the schedule divides by it); got {value}.")
    return value


def _cosine(high: float, low: float, fraction: torch.Tensor) -> torch.Tensor:
    """low + (high - low) * (1 + cos(pi * fraction)) / 2: high at 0, low at 1."""
    return low + (high - low) * (1.0 + torch.cos(math.pi * fraction)) / 2


class InverseExponentialTimeDecayScheduler(Scheduler):
    """value(s) = initial / (1 + decay_rate * s**step_exponent / total_iters), the quotient
    floored with staircase=True (Keras' InverseTimeDecay, with the step raised to step_exponent)."""

    def __init__(self, optimizer: torch.optim.Optimizer, initial_val: float, step_exponent: int, total_iters: int,
                 decay_rate: float, staircase: bool = False, param_group_tags: Tags = None):
        owner = type(self).__name__
        self.initial_val = number(owner, self.name_of("initial_val"), initial_val)
        self.step_exponent = real(owner, "step_exponent", step_exponent)
        self.decay_rate = number(owner, "decay_rate", decay_rate)
        self.staircase = bool(staircase)
        super().__init__(optimizer, whole(owner, "total_iters", total_iters, 1), -1, param_group_tags)

    def _get_closed_form(self):
        alpha = torch.pow(self.last_epoch, self.step_exponent) / self.total_iters
        if self.staircase:
            alpha = torch.floor(alpha)
        return self.initial_val / (1.0 + self.decay_rate * alpha)


class InverseSquareRootDecayScheduler(Scheduler):
    """value(s) = initial * scale / sqrt(max(s, warmup_steps)): flat at initial*scale/sqrt(warmup)
    for the first warmup_steps, then the inverse square root of the step."""

    def __init__(self, optimizer: torch.optim.Optimizer, initial_val: float = 1.0, scale: float = 1.0,
                 warmup_steps: int = 1.0, param_group_tags: Tags = None):
        owner = type(self).__name__
        self.initial_val = number(owner, self.name_of("initial_val"), initial_val)
        self.scale = number(owner, "scale", scale)
        self.warmup_steps = positive(owner, "warmup_steps", warmup_steps)
        super().__init__(optimizer, None, -1, param_group_tags)

    def _get_closed_form(self):
        return self.initial_val * self.scale / torch.sqrt(torch.clamp(self.last_epoch, min=self.warmup_steps))


class CosineAnnealingScheduler(Scheduler):
    """value(s) = eta_min + (initial - eta_min) * (1 + cos(pi * s / T_max)) / 2, for every s: down
    to eta_min at T_max, back up to initial at 2*T_max, and so on (torch's CosineAnnealingLR;
    CosineDecayScheduler is the one that holds its end value)."""

    def __init__(self, optimizer: torch.optim.Optimizer, initial_val: float, T_max: int, eta_min: float = 0.0,
                 param_group_tags: Tags = None):
        owner = type(self).__name__
        self.initial_val = number(owner, self.name_of("initial_val"), initial_val)
        self.T_max = positive(owner, "T_max", T_max)
        self.eta_min = number(owner, "eta_min", eta_min)
        super().__init__(optimizer, None, -1, param_group_tags)

    def _get_closed_form(self):
        return _cosine(self.initial_val, self.eta_min, self.last_epoch / self.T_max)


class CosineAnnealingWarmRestartsScheduler(Scheduler):
    """SGDR: value(s) = eta_min + (initial - eta_min) * (1 + cos(pi * (s mod T_0) / T_0)) / 2,
    the cosine restarting at initial every T_0 steps (torch's CosineAnnealingWarmRestarts with
    T_mult=1, the only T_mult the real class takes)."""

    def __init__(self, optimizer: torch.optim.Optimizer, initial_val: float, T_0: int, T_mult: int = 1,
                 eta_min: float = 0.0, param_group_tags: Tags = None):
        owner = type(self).__name__
        if T_mult != 1:
            raise InvalidArgument(f"{owner}: T_mult {T_mult!r} is not supported; the only supported T_mult is "
                                  "1.0 (the default: every period T_0 steps).", hint="Leave T_mult at 1.")
        self.initial_val = number(owner, self.name_of("initial_val"), initial_val)
        self.T_0 = whole(owner, "T_0", T_0, 1)
        self.T_mult = T_mult
        self.eta_min = number(owner, "eta_min", eta_min)
        super().__init__(optimizer, None, -1, param_group_tags)

    def _get_closed_form(self):
        since_restart = self.last_epoch - torch.floor(self.last_epoch / self.T_0) * self.T_0
        return _cosine(self.initial_val, self.eta_min, since_restart / self.T_0)


class MultiplicativeScheduler(Scheduler):
    """value(s) = initial * coefficient**s (torch's MultiplicativeLR with a constant factor)."""

    def __init__(self, optimizer: torch.optim.Optimizer, initial_val: float, coefficient: float,
                 param_group_tags: Tags = None):
        owner = type(self).__name__
        self.initial_val = number(owner, self.name_of("initial_val"), initial_val)
        self.coefficient = number(owner, "coefficient", coefficient)
        super().__init__(optimizer, None, -1, param_group_tags)

    def _get_closed_form(self):
        return self.initial_val * torch.pow(constant(self.coefficient), self.last_epoch)


class LambdaScheduler(Scheduler):
    """value(s) = Π_i (initial * f_i(s)) over the functions `set_value_lambda()` returns, each
    given the step tensor and answering with torch ops (the real class's product: with one
    function, initial * f(s)). Override set_value_lambda; the default pair is s/30 and 0.95**s."""

    def __init__(self, optimizer: torch.optim.Optimizer, initial_val: float, param_group_tags: Tags = None):
        self.initial_val = number(type(self).__name__, self.name_of("initial_val"), initial_val)
        super().__init__(optimizer, None, -1, param_group_tags)

    def set_value_lambda(self) -> list:
        """The functions of the step whose product (each times initial) is the value."""
        return [lambda step: step / 30, lambda step: torch.pow(constant(0.95), step)]

    def _get_closed_form(self):
        functions = self.set_value_lambda()
        if not isinstance(functions, (list, tuple)) or not all(callable(f) for f in functions):
            raise InvalidArgument(f"{type(self).__name__}.set_value_lambda() returns a list of functions of the step; "
                                  f"got {functions!r}.", hint="Return e.g. [lambda step: torch.pow(0.9, step)].")
        value = torch.ones((), dtype=VALUE_DTYPE)
        for function in functions:
            value = value * (self.initial_val * torch.as_tensor(function(self.last_epoch), dtype=VALUE_DTYPE))
        return value
