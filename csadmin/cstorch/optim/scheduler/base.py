"""cstorch.optim.scheduler.Scheduler: the base of every schedule of an optimizer hyperparameter
(the real package's generic scheduler: the learning rate's schedules in optim.lr_scheduler and
the weight decay's in optim.weight_decay_scheduler are this, with another `param_group_key`).

A subclass names the param-group key it drives (`param_group_key`: "lr", "weight_decay", …)
and writes the whole schedule as one closed form of the step, `_get_closed_form()`, with torch
ops only. Why closed form: the step is captured once as a static program, so a Python scalar
computed in `step()` would be frozen at its first value. The step counter `last_epoch` is a
float64 0-d tensor; `step()` advances it in place and copies the closed form in place into
each driven param group's value, which the scheduler turned into a 0-d tensor when it was built
and which the cstorch optimizers read at every step. Like torch's, building a scheduler takes
its first step (last_epoch -1 -> 0), so the optimizer runs at value(0), then value(1) after one
`step()`, and so on.

`param_group_tags` (a tag or a list of distinct tags) limits a schedule to the param groups whose
`tags` share one of them (several schedules may drive disjoint groups); the other groups keep
their own value. A schedule that would drive no group is refused.

The schedules' arguments have generic names here (`val`, `initial_val`, `end_val`, …); a family
that calls them otherwise (the learning rate's `initial_learning_rate`) declares each as an
`Alias` of the generic attribute, so both names read the same value and errors and the run's
yaml use the family's name.
"""

import abc
from typing import List, Optional, Union

import torch

from csadmin.errors import InvalidArgument

from ...backend import process_backend
from ...checks import plain_value, whole

VALUE_DTYPE = torch.float64  # torch's schedules are Python floats; a float64 tensor keeps their values
Tags = Optional[Union[str, List[Union[str, None]]]]


class Alias:
    """A family's name for a generic schedule attribute (`initial_learning_rate = Alias("initial_val")`)."""

    def __init__(self, generic: str):
        self.generic = generic

    def __set_name__(self, owner, name):
        self.name = name

    def __get__(self, instance, owner=None):
        return self if instance is None else getattr(instance, self.generic)

    def __set__(self, instance, value):
        setattr(instance, self.generic, value)


class Scheduler(abc.ABC):
    """`optimizer` (one with param_groups), `total_iters` (the schedule's length, None when it has
    none), `last_epoch` (the step to resume after) and `param_group_tags` (None: every param
    group; else the groups tagged with one of them)."""

    def __init__(self, optimizer: torch.optim.Optimizer, total_iters: Optional[int] = None, last_epoch: int = -1,
                 param_group_tags: Tags = None):
        owner = type(self).__name__
        if not hasattr(optimizer, "param_groups"):
            raise InvalidArgument(f"{owner} schedules an optimizer; got a {type(optimizer).__name__}.")
        self.optimizer = optimizer
        self.param_group_tags = tag_set(owner, param_group_tags)
        self._check_tags_apply()
        process_backend.current().announce(self)  # the model directory's yaml describes it
        self.total_iters = None if total_iters is None else whole(owner, "total_iters", total_iters, 1)
        self.last_epoch = torch.tensor(float(whole(owner, "last_epoch", last_epoch, -1)), dtype=VALUE_DTYPE)
        key = self.param_group_key
        for group in self._driven_groups():
            if not isinstance(group.get(key), torch.Tensor):  # None (Adafactor's "no lr yet"): step() sets it now
                group[key] = torch.tensor(float(group.get(key) or 0.0), dtype=VALUE_DTYPE)
        self.step()

    @property
    @abc.abstractmethod
    def param_group_key(self) -> str:
        """The param-group key this schedule writes ("lr", "weight_decay", …)."""

    @property
    def value_name(self) -> str:
        """What the scheduled value is called in messages ("weight decay")."""
        return self.param_group_key.replace("_", " ")

    @classmethod
    def family(cls) -> str:
        """The name of the family base this schedule belongs to (the class that names its key)."""
        return next(c.__name__ for c in cls.__mro__ if "param_group_key" in vars(c))

    @abc.abstractmethod
    def _get_closed_form(self) -> torch.Tensor:
        """The value at step `self.last_epoch`, with torch ops only (torch.where, not if)."""

    def name_of(self, generic: str) -> str:
        """The name this schedule's family gives the generic argument `generic` (for messages)."""
        for cls in type(self).__mro__:
            for name, attribute in vars(cls).items():
                if isinstance(attribute, Alias) and attribute.generic == generic:
                    return name
        return generic

    def applies_to(self, group: dict) -> bool:
        """Whether this schedule drives `group`: always without tags, else when they meet."""
        if self.param_group_tags is None:
            return True
        return bool(self.param_group_tags & group_tags(group))

    def _driven_groups(self) -> list:
        return [group for group in self.optimizer.param_groups if self.applies_to(group)]

    def _check_tags_apply(self) -> None:
        if self._driven_groups():
            return
        seen = sorted({tag for group in self.optimizer.param_groups for tag in group_tags(group) if tag is not None},
                      key=str)
        raise InvalidArgument(f"{type(self).__name__} was given param_group_tags {sorted(self.param_group_tags, key=str)}"
                              f", but no param group of the optimizer has any of them. Tags the groups have: {seen}.",
                              hint="Tag the param groups (their 'tags' key) or pass tags they have.")

    def _group_values(self, value: torch.Tensor) -> list:
        """Each param group's value for the schedule's `value`: itself for a driven group, None
        for one this schedule leaves alone (ScalePerParamScheduler scales it per group)."""
        return [value if self.applies_to(group) else None for group in self.optimizer.param_groups]

    def _write(self) -> None:
        values = self._group_values(self._get_closed_form())
        for group, value in zip(self.optimizer.param_groups, values):
            if value is not None:
                group[self.param_group_key].copy_(value)

    def step(self, epoch=None) -> None:
        """Advance the step and write its value into every driven param group, in place."""
        if epoch is not None:
            raise InvalidArgument(f"{type(self).__name__}.step() takes no epoch: the schedule is a function of "
                                  "its own step counter.", hint="Call step() once per training step.")
        with torch.no_grad():
            self.last_epoch.add_(1)
            self._write()

    def settings(self) -> dict:
        """What the run's yaml says of this schedule: its type and its public settings, under the
        family's names."""
        out = {"scheduler": type(self).__name__}
        for name, value in vars(self).items():
            if name.startswith("_") or name in ("optimizer", "last_epoch"):
                continue
            if isinstance(value, (set, frozenset)):
                value = sorted(value, key=str)
            plain = plain_value(value)
            if plain is not None:
                out[self.name_of(name)] = plain
        return out

    def parts(self) -> list:
        """The schedules this one is made of (a SequentialScheduler's, a ChainedScheduler's)."""
        return []

    def get_last_value(self) -> list:
        """Each param group's current value, as the real package gives it: a tensor (read it in a
        step closure) for a group this schedule drives, None for another."""
        return [group[self.param_group_key].detach().clone() if self.applies_to(group) else None
                for group in self.optimizer.param_groups]

    def get(self) -> list:
        """The schedule's value per param group at the current step (None for a group it does
        not drive), computed afresh rather than read back."""
        with torch.no_grad():
            return self._group_values(self._get_closed_form())

    def state_dict(self) -> dict:
        return {"last_epoch": self.last_epoch.detach().clone()}

    def load_state_dict(self, state_dict: dict) -> None:
        """Resume after the saved step: the counter is copied in place, the value written again."""
        if not isinstance(state_dict, dict) or "last_epoch" not in state_dict:
            raise InvalidArgument(f"A {type(self).__name__} state dict has the key 'last_epoch'.",
                                  hint="Pass what the scheduler's state_dict() returned.")
        with torch.no_grad():
            self.last_epoch.copy_(torch.as_tensor(state_dict["last_epoch"], dtype=VALUE_DTYPE))
            self._write()

    def _closed_form_at(self, step: torch.Tensor) -> torch.Tensor:
        """The schedule at another step (SequentialScheduler shifts its parts' steps)."""
        own = self.last_epoch
        self.last_epoch = step
        try:
            return self._get_closed_form()
        finally:
            self.last_epoch = own


def tag_set(owner: str, tags) -> Optional[set]:
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


def group_tags(group: dict) -> set:
    """A param group's tags as a set (an untagged group's is {None}: `[None]` drives it)."""
    tags = group.get("tags") or (None,)
    return {tags} if isinstance(tags, str) else set(tags)
