"""cstorch.optim.lr_scheduler.LRScheduler: the base of every schedule (004, "Defining a custom
Cerebras learning rate scheduler"; 001, "Weight Streaming mode").

    class Halving(cstorch.optim.lr_scheduler.LRScheduler):
        def __init__(self, optimizer, initial_learning_rate, total_iters):
            self.initial_learning_rate = initial_learning_rate
            super().__init__(optimizer, total_iters=total_iters)
        def _get_closed_form_lr(self):            # the whole schedule, a tensor function of the step
            return self.initial_learning_rate * torch.pow(0.5, self.last_epoch / self.total_iters)

Why closed form: the step is captured once as a static program, so a Python scalar computed in
`step()` would be frozen at its first value. Here the step counter `last_epoch` is a float64 0-d
tensor, `step()` advances it in place and copies `_get_closed_form_lr()` in place into each
param group's `lr`, which the scheduler turned into a 0-d tensor when it was built, and which the
cstorch optimizers read at every step. Like torch's, building a scheduler takes its first step
(last_epoch -1 -> 0), so the optimizer runs at lr(0), then lr(1) after one `step()`, and so on.
"""

from __future__ import annotations

import abc

import torch

from csadmin.errors import InvalidArgument

import csadmin.cstorch.state as state
from ..checks import plain_value, whole

LR_DTYPE = torch.float64  # torch's schedules are Python floats; a float64 tensor keeps their values


class LRScheduler(abc.ABC):
    """`optimizer` (a cstorch.optim.Optimizer or any with param_groups), `total_iters` (the
    schedule's length, None when it has none) and `last_epoch` (the step to resume after)."""

    def __init__(self, optimizer, total_iters: int | None = None, last_epoch: int = -1):
        owner = type(self).__name__
        if not hasattr(optimizer, "param_groups"):
            raise InvalidArgument(f"{owner} schedules an optimizer; got a {type(optimizer).__name__}.")
        self.optimizer = optimizer
        state.current().announce(self)  # the model directory's yaml describes it
        self.total_iters = None if total_iters is None else whole(owner, "total_iters", total_iters, 1)
        self.last_epoch = torch.tensor(float(whole(owner, "last_epoch", last_epoch, -1)), dtype=LR_DTYPE)
        for group in optimizer.param_groups:
            if not isinstance(group["lr"], torch.Tensor):  # None (Adafactor's "no lr yet"): step() sets it now
                group["lr"] = torch.tensor(float(group["lr"] or 0.0), dtype=LR_DTYPE)
        self.step()

    @abc.abstractmethod
    def _get_closed_form_lr(self) -> torch.Tensor:
        """The learning rate at step `self.last_epoch`, with torch ops only (torch.where, not if)."""

    def step(self, epoch=None) -> None:
        """Advance the step and write its learning rate into every param group, in place."""
        if epoch is not None:
            raise InvalidArgument(f"{type(self).__name__}.step() takes no epoch: the schedule is a function of "
                                  "its own step counter.", hint="Call step() once per training step.")
        with torch.no_grad():
            self.last_epoch.add_(1)
            lr = self._get_closed_form_lr()
            for group in self.optimizer.param_groups:
                group["lr"].copy_(lr)

    def settings(self) -> dict:
        """What the run's yaml says of this schedule: its type and its public settings."""
        out = {"scheduler": type(self).__name__}
        for name, value in vars(self).items():
            if name.startswith("_") or name in ("optimizer", "last_epoch"):
                continue
            plain = plain_value(value)
            if plain is not None:
                out[name] = plain
        return out

    def parts(self) -> list:
        """The schedules this one is made of (a SequentialLR's, a ChainedLR's); none here."""
        return []

    def get_last_lr(self) -> list[torch.Tensor]:
        """Each param group's current learning rate (tensors: read them in a step closure)."""
        return [group["lr"].detach().clone() for group in self.optimizer.param_groups]

    def state_dict(self) -> dict:
        return {"last_epoch": self.last_epoch.detach().clone()}

    def load_state_dict(self, state_dict: dict) -> None:
        """Resume after the saved step: the counter is copied in place, the lr written again."""
        if not isinstance(state_dict, dict) or "last_epoch" not in state_dict:
            raise InvalidArgument(f"A {type(self).__name__} state dict has the key 'last_epoch'.",
                                  hint="Pass what lr_scheduler.state_dict() returned.")
        with torch.no_grad():
            self.last_epoch.copy_(torch.as_tensor(state_dict["last_epoch"], dtype=LR_DTYPE))
            lr = self._get_closed_form_lr()
            for group in self.optimizer.param_groups:
                group["lr"].copy_(lr)

    def _closed_form_at(self, step: torch.Tensor) -> torch.Tensor:
        """The schedule at another step (SequentialLR shifts its parts' steps)."""
        own = self.last_epoch
        self.last_epoch = step
        try:
            return self._get_closed_form_lr()
        finally:
            self.last_epoch = own
