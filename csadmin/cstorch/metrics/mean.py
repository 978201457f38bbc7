"""`MeanMetric(name)`: the weighted mean of every value given since the last reset.

    rewards = cstorch.metrics.MeanMetric(name="eval/rewards_chosen")
    rewards(chosen_rewards.mean())                  # update(value, weight=1.0, dtype=None)
    rewards(values, weight=mask)                    # a tensor: each element counts with its weight

A value (a number or a tensor) adds Σ value × weight to the sum and Σ weight to the total
weight, the weight broadcast to the value's shape, as the real package adds them; the mean is
their ratio (NaN before any weight, as 0/0 is). The state sums in float64 (inputs.py); the
result is float64 unless `dtype` names another. A weight that does not broadcast to the value's
shape, or a value or weight that is neither a number nor a tensor, is refused.
"""

from __future__ import annotations

import torch

from csadmin.errors import InvalidArgument

import csadmin.cstorch.metrics.inputs as inputs
from .inputs import SUM
from .metric import Metric


def _tensor(owner: str, name: str, value, device) -> torch.Tensor:
    if isinstance(value, torch.Tensor):
        return value.detach().to(device=device, dtype=SUM)
    if isinstance(value, (int, float)) and not isinstance(value, bool):
        return torch.tensor(float(value), dtype=SUM, device=device)
    raise InvalidArgument(f"{owner}: {name} must be a number or a tensor; got {type(value).__name__}.")


class MeanMetric(Metric):
    """The weighted mean of the values since the last reset (see the module docstring)."""

    def reset(self) -> None:
        self.register_state("mean_value", torch.zeros((), dtype=SUM))
        self.register_state("weight", torch.zeros((), dtype=SUM))
        self._dtype = None

    def update(self, value, weight=1.0, dtype=None) -> None:
        value = _tensor(self.name, "value", value, self.mean_value.device)
        weight = _tensor(self.name, "weight", weight, self.weight.device)
        try:
            weight = torch.broadcast_to(weight, value.shape)
        except RuntimeError:
            raise InvalidArgument(f"{self.name}: the weight's shape {tuple(weight.shape)} does not broadcast to the "
                                  f"value's {tuple(value.shape)}.",
                                  hint="Pass one weight, or a tensor of weights broadcastable to the value.") from None
        inputs.into(self.mean_value, (value * weight).sum())
        inputs.into(self.weight, weight.sum())
        self._dtype = dtype

    def compute(self) -> torch.Tensor:
        result = self.mean_value / self.weight
        return result if self._dtype is None else result.to(self._dtype)
