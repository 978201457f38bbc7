"""CyclicScheduler and OneCycleScheduler: the schedules that rise and fall within a cycle, as
closed forms of the step s = last_epoch (torch.where picks the half or the phase a step is in)."""

import math
from typing import List, Optional

import torch

from csadmin.errors import InvalidArgument

from ...checks import number, whole
from .base import VALUE_DTYPE, Scheduler, Tags
from .decay import positive

CYCLIC_MODES = ("triangular", "triangular2", "exp_range")
ANNEAL_STRATEGIES = ("cos", "linear")


def _choice(owner: str, name: str, value, valid: tuple) -> str:
    if value not in valid:
        raise InvalidArgument(f"{owner}: {name} must be one of {', '.join(map(repr, valid))}; got {value!r}.")
    return value


class CyclicScheduler(Scheduler):
    """The triangle between base_val and max_val, step_size_up steps up then step_size_down
    (default: step_size_up) down, its height scaled per mode: "triangular" 1, "triangular2"
    1/2**(cycle-1) (cycle counted from 1), "exp_range" gamma**s. The mode sets scale_mode
    ("cycle" for the first two, "iterations" for exp_range), as torch's CyclicLR without a
    scale_fn does; so torch's CyclicLR(cycle_momentum=False) gives the same rates."""

    def __init__(self, optimizer: torch.optim.Optimizer, base_val: float, max_val: float, step_size_up: int = 2000,
                 step_size_down: Optional[int] = None, mode: str = "triangular", gamma: float = 1.0,
                 scale_mode: str = "cycle", param_group_tags: Tags = None):
        owner = type(self).__name__
        self.base_val = number(owner, self.name_of("base_val"), base_val)
        self.max_val = number(owner, self.name_of("max_val"), max_val)
        self.step_size_up = whole(owner, "step_size_up", step_size_up, 1)
        self.step_size_down = self.step_size_up if step_size_down is None else whole(
            owner, "step_size_down", step_size_down, 0)
        self.mode = _choice(owner, "mode", mode, CYCLIC_MODES)
        self.gamma = number(owner, "gamma", gamma)
        _choice(owner, "scale_mode", scale_mode, ("cycle", "iterations"))
        self.scale_mode = "iterations" if self.mode == "exp_range" else "cycle"  # the mode decides
        super().__init__(optimizer, None, -1, param_group_tags)

    def _get_closed_form(self):
        s = self.last_epoch
        total = self.step_size_up + self.step_size_down
        up_share = self.step_size_up / total
        cycle = torch.floor(1.0 + s / total)
        x = 1.0 + s / total - cycle  # where in the cycle, 0 to 1
        rising = x / up_share
        falling = (x - 1.0) / (up_share - 1.0) if up_share < 1 else rising  # no falling half without its steps
        height = torch.where(x <= up_share, rising, falling) * (self.max_val - self.base_val)
        if self.mode == "triangular":
            scale = torch.ones((), dtype=VALUE_DTYPE)
        elif self.mode == "triangular2":
            scale = 1.0 / torch.pow(torch.full((), 2.0, dtype=VALUE_DTYPE), cycle - 1.0)
        else:
            scale = torch.pow(torch.full((), self.gamma, dtype=VALUE_DTYPE), s)
        return self.base_val + height * scale


class OneCycleScheduler(Scheduler):
    """1cycle: from initial_val up to max_val over the first pct_start of total_steps,
    then down to initial/final_div_factor by the last step (three_phase: back to initial over as
    many steps as the rise, then down to the minimum), each phase annealed by cosine ("cos") or a
    line ("linear"). Phases end at steps pct_start*T - 1 (and 2*pct_start*T - 2) and T - 1, as in
    torch's OneCycleLR(div_factor = max / initial, cycle_momentum=False); past T - 1 the last
    phase's curve runs on (torch refuses to step there; a compiled step cannot)."""

    def __init__(self, optimizer: torch.optim.Optimizer, initial_val: float, max_val: float, total_steps: int = 1000,
                 pct_start: float = 0.3, final_div_factor: float = 1e4, three_phase: bool = False,
                 anneal_strategy: str = "cos", param_group_tags: Tags = None):
        owner = type(self).__name__
        self.initial_val = number(owner, self.name_of("initial_val"), initial_val)
        self.max_val = number(owner, self.name_of("max_val"), max_val)
        self.total_steps = whole(owner, "total_steps", total_steps, 1)
        self.pct_start = number(owner, "pct_start", pct_start, 0.0, 1.0)
        self.final_div_factor = positive(owner, "final_div_factor", final_div_factor)
        self.three_phase = bool(three_phase)
        self.anneal_strategy = _choice(owner, "anneal_strategy", anneal_strategy, ANNEAL_STRATEGIES)
        ends = [0.0] + self._phase_ends()
        if any(b <= a for a, b in zip(ends, ends[1:])):
            raise InvalidArgument(f"{owner}: with total_steps={self.total_steps} and pct_start={self.pct_start} a "
                                  f"phase has no steps (phases end at steps {ends[1:]}).",
                                  hint="Use more total_steps or a pct_start that leaves each phase steps.")
        super().__init__(optimizer, None, -1, param_group_tags)

    def _phase_ends(self) -> List[float]:
        rise = self.pct_start * self.total_steps
        if self.three_phase:
            return [rise - 1, 2 * rise - 2, self.total_steps - 1.0]
        return [rise - 1, self.total_steps - 1.0]

    def _anneal(self, start: float, end: float, fraction: torch.Tensor) -> torch.Tensor:
        if self.anneal_strategy == "cos":
            return end + (start - end) / 2.0 * (torch.cos(math.pi * fraction) + 1.0)
        return start + (end - start) * fraction

    def _get_closed_form(self):
        s = self.last_epoch
        low = self.initial_val / self.final_div_factor
        if self.three_phase:
            levels = [self.initial_val, self.max_val, self.initial_val, low]
        else:
            levels = [self.initial_val, self.max_val, low]
        starts = [0.0] + self._phase_ends()
        value = self._anneal(levels[0], levels[1], s / starts[1])
        for i in range(1, len(starts) - 1):
            phase = self._anneal(levels[i], levels[i + 1], (s - starts[i]) / (starts[i + 1] - starts[i]))
            value = torch.where(s > starts[i], phase, value)
        return value
