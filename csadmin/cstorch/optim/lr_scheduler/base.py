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

`param_group_tags` (a tag or a list of distinct tags) limits a schedule to the param groups whose
`tags` share one of them (the real package's rule: several schedules may drive disjoint groups);
the other groups keep their own lr. A schedule that would drive no group is refused.

Like the real class, it is a torch.optim.lr_scheduler.LRScheduler (isinstance checks in a script
or a trainer hold), though none of torch's machinery runs: every method torch's uses is ours.
"""

from __future__ import annotations

import abc

import torch

from csadmin.errors import InvalidArgument

from ...backend import process_backend
from ...checks import plain_value, whole

LR_DTYPE = torch.float64  # torch's schedules are Python floats; a float64 tensor keeps their values


class LRScheduler(abc.ABC, torch.optim.lr_scheduler.LRScheduler):
    """`optimizer` (a cstorch.optim.Optimizer or any with param_groups), `total_iters` (the
    schedule's length, None when it has none), `last_epoch` (the step to resume after) and
    `param_group_tags` (None: every param group; else the groups tagged with one of them)."""

    def __init__(self, optimizer, total_iters: int | None = None, last_epoch: int = -1,
                 param_group_tags=None):
        owner = type(self).__name__
        if not hasattr(optimizer, "param_groups"):
            raise InvalidArgument(f"{owner} schedules an optimizer; got a {type(optimizer).__name__}.")
        self.optimizer = optimizer
        self.param_group_tags = _tags(owner, param_group_tags)
        self._check_tags_apply()
        process_backend.current().announce(self)  # the model directory's yaml describes it
        self.total_iters = None if total_iters is None else whole(owner, "total_iters", total_iters, 1)
        self.last_epoch = torch.tensor(float(whole(owner, "last_epoch", last_epoch, -1)), dtype=LR_DTYPE)
        for group in self._driven_groups():
            if not isinstance(group["lr"], torch.Tensor):  # None (Adafactor's "no lr yet"): step() sets it now
                group["lr"] = torch.tensor(float(group["lr"] or 0.0), dtype=LR_DTYPE)
        self.step()

    def applies_to(self, group: dict) -> bool:
        """Whether this schedule drives `group`: always without tags, else when they meet."""
        if self.param_group_tags is None:
            return True
        return bool(self.param_group_tags & _group_tags(group))

    def _driven_groups(self) -> list[dict]:
        return [group for group in self.optimizer.param_groups if self.applies_to(group)]

    def _check_tags_apply(self) -> None:
        if self._driven_groups():
            return
        seen = sorted({tag for group in self.optimizer.param_groups for tag in _group_tags(group)})
        raise InvalidArgument(f"{type(self).__name__} was given param_group_tags {sorted(self.param_group_tags)}, "
                              f"but no param group of the optimizer has any of them. Tags the groups have: {seen}.",
                              hint="Tag the param groups (their 'tags' key) or pass tags they have.")

    def _group_values(self, lr: torch.Tensor) -> list:
        """Each param group's learning rate for the schedule's `lr`: itself for a driven group,
        None for one this schedule leaves alone (ScalePerParamLR scales it per group)."""
        return [lr if self.applies_to(group) else None for group in self.optimizer.param_groups]

    def _write(self) -> None:
        values = self._group_values(self._get_closed_form_lr())
        for group, value in zip(self.optimizer.param_groups, values):
            if value is not None:
                group["lr"].copy_(value)

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
            self._write()

    def settings(self) -> dict:
        """What the run's yaml says of this schedule: its type and its public settings."""
        out = {"scheduler": type(self).__name__}
        for name, value in vars(self).items():
            if name.startswith("_") or name in ("optimizer", "last_epoch"):
                continue
            if isinstance(value, (set, frozenset)):
                value = sorted(value)
            plain = plain_value(value)
            if plain is not None:
                out[name] = plain
        return out

    def parts(self) -> list:
        """The schedules this one is made of (a SequentialLR's, a ChainedLR's); none here."""
        return []

    def get_last_lr(self) -> list:
        """torch's name: each param group's current learning rate, as the real package gives it:
        a tensor (read it in a step closure) for a group this schedule drives, None for another."""
        return [group["lr"].detach().clone() if self.applies_to(group) else None
                for group in self.optimizer.param_groups]

    def get_last_value(self) -> list:
        """The real package's general name for get_last_lr()."""
        return self.get_last_lr()

    def get_lr(self) -> list:
        """torch's name: the schedule's rate per param group at the current step (None for a
        group it does not drive), computed afresh rather than read back."""
        with torch.no_grad():
            return self._group_values(self._get_closed_form_lr())

    def state_dict(self) -> dict:
        return {"last_epoch": self.last_epoch.detach().clone()}

    def load_state_dict(self, state_dict: dict) -> None:
        """Resume after the saved step: the counter is copied in place, the lr written again."""
        if not isinstance(state_dict, dict) or "last_epoch" not in state_dict:
            raise InvalidArgument(f"A {type(self).__name__} state dict has the key 'last_epoch'.",
                                  hint="Pass what lr_scheduler.state_dict() returned.")
        with torch.no_grad():
            self.last_epoch.copy_(torch.as_tensor(state_dict["last_epoch"], dtype=LR_DTYPE))
            self._write()

    def _closed_form_at(self, step: torch.Tensor) -> torch.Tensor:
        """The schedule at another step (SequentialLR shifts its parts' steps)."""
        own = self.last_epoch
        self.last_epoch = step
        try:
            return self._get_closed_form_lr()
        finally:
            self.last_epoch = own


def _tags(owner: str, tags) -> set | None:
    """`param_group_tags` as a set: None stays None, one tag is a set of one, and a list, tuple or
    set is refused if it names a tag twice (as the real package refuses it)."""
    if tags is None:
        return None
    if isinstance(tags, (list, tuple, set, frozenset)):
        if len(set(tags)) != len(tags):
            raise InvalidArgument(f"{owner}: param_group_tags must be distinct tags; got {list(tags)!r}.",
                                  hint="Name each tag once (or pass None to drive every param group).")
        return set(tags)
    return {tags}


def _group_tags(group: dict) -> set:
    tags = group.get("tags") or ()
    return {tags} if isinstance(tags, str) else set(tags)
