"""cstorch.optim.lr_scheduler.LRScheduler: the base of every learning-rate schedule (004,
"Defining a custom Cerebras learning rate scheduler"; 001, "Weight Streaming mode").

    class Halving(cstorch.optim.lr_scheduler.LRScheduler):
        def __init__(self, optimizer, initial_learning_rate, total_iters):
            self.initial_learning_rate = initial_learning_rate
            super().__init__(optimizer, total_iters=total_iters)
        def _get_closed_form(self):               # the whole schedule, a tensor function of the step
            return self.initial_learning_rate * torch.pow(0.5, self.last_epoch / self.total_iters)

It is the generic cstorch.optim.scheduler.Scheduler (whose docstring says why a schedule is a
closed form of the step tensor) driving each param group's "lr". The closed form has the two
releases' names: 2.x's `_get_closed_form` and the first release's `_get_closed_form_lr` (004's
example): a subclass defines either, and both then answer. Like the real class, it is a
torch.optim.lr_scheduler.LRScheduler (isinstance checks in a script or a trainer hold), though
none of torch's machinery runs: every method torch's uses is ours.
"""

import abc

import torch

from ..scheduler.base import VALUE_DTYPE, Scheduler

LR_DTYPE = VALUE_DTYPE


class LRScheduler(Scheduler, torch.optim.lr_scheduler.LRScheduler):
    """A Scheduler of the param groups' "lr" (arguments: see Scheduler)."""

    @property
    def param_group_key(self) -> str:
        return "lr"

    @property
    def value_name(self) -> str:
        return "learning rate"

    def __init_subclass__(cls, **kwargs):
        """Whichever spelling of the closed form a subclass gives, the other answers the same."""
        super().__init_subclass__(**kwargs)
        closed, closed_lr = cls._get_closed_form, cls._get_closed_form_lr
        if _abstract(closed) and not _abstract(closed_lr):
            cls._get_closed_form = closed_lr
        elif _abstract(closed_lr) and not _abstract(closed):
            cls._get_closed_form_lr = closed

    @abc.abstractmethod
    def _get_closed_form_lr(self) -> torch.Tensor:
        """The first release's name of `_get_closed_form`: the learning rate at step last_epoch."""

    def get_last_lr(self) -> list:
        """torch's name: each param group's current learning rate, as the real package gives it:
        a tensor (read it in a step closure) for a group this schedule drives, None for another."""
        return self.get_last_value()

    def get_lr(self) -> list:
        """torch's name: the schedule's rate per param group at the current step (None for a
        group it does not drive), computed afresh rather than read back."""
        return self.get()


def _abstract(method) -> bool:
    return getattr(method, "__isabstractmethod__", False)
