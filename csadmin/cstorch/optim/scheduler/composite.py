"""SequentialScheduler, PiecewiseConstantScheduler, ChainedScheduler and ScalePerParamScheduler:
schedules made of schedules, still one closed form of the step. A part drives the same
param-group key and the same param groups (param_group_tags) as the whole, as the real package
requires; the whole steps its parts (they are not stepped on their own)."""

from typing import List

import torch

from csadmin.errors import InvalidArgument

from ...checks import number, real, whole
from .base import Scheduler, Tags, tag_set
from .forms import constant


def _parts(whole_schedule: Scheduler, optimizer, schedulers, param_group_tags) -> list:
    owner = type(whole_schedule).__name__
    if not isinstance(schedulers, (list, tuple)) or not schedulers:
        raise InvalidArgument(f"{owner}: schedulers must be a non-empty list of schedulers.")
    for i, part in enumerate(schedulers):
        _part(whole_schedule, f"schedulers[{i}]", optimizer, part, param_group_tags)
    return list(schedulers)


def _part(whole_schedule: Scheduler, where: str, optimizer, part, param_group_tags) -> None:
    owner = type(whole_schedule).__name__
    if not isinstance(part, Scheduler):
        raise InvalidArgument(f"{owner}: {where} is a {type(part).__name__}, not {_article(whole_schedule.family())}.")
    if part.optimizer is not optimizer:
        raise InvalidArgument(f"{owner}: {where} schedules another optimizer.")
    if part.param_group_key != whole_schedule.param_group_key:
        raise InvalidArgument(f"{owner}: {where} schedules {part.param_group_key!r}, not the {owner}'s "
                              f"{whole_schedule.param_group_key!r}: every part schedules the same param-group key.")
    if part.param_group_tags != tag_set(owner, param_group_tags):
        raise InvalidArgument(f"{owner}: {where} has param_group_tags {part.param_group_tags}, not the "
                              f"{owner}'s {tag_set(owner, param_group_tags)}: a part drives the same param groups.",
                              hint=f"Give the part and the {owner} the same param_group_tags.")


def _article(name: str) -> str:
    """`name` with its article, as it is read aloud ("an LRScheduler", "a WeightDecayScheduler")."""
    return ("an " if name[0] in "AEIOU" or name.startswith("LR") else "a ") + name


class _Composite(Scheduler):
    """What a schedule made of schedules reports: its parts, and their settings in its own."""

    _schedulers: list

    def settings(self) -> dict:
        return {**super().settings(), "schedulers": [part.settings() for part in self._schedulers]}

    def parts(self) -> list:
        return list(self._schedulers)


class SequentialScheduler(_Composite):
    """schedulers[i] from milestones[i-1] on, each counting its steps from its own start (as
    torch's SequentialLR): `value(s) = schedulers[i](s - milestones[i-1])`."""

    def __init__(self, optimizer: torch.optim.Optimizer, schedulers: List[Scheduler], milestones: List[int],
                 last_epoch: int = -1, param_group_tags: Tags = None):
        owner = type(self).__name__
        self._schedulers = _parts(self, optimizer, schedulers, param_group_tags)
        if not isinstance(milestones, (list, tuple)) or len(milestones) != len(self._schedulers) - 1:
            raise InvalidArgument(f"{owner}: {len(self._schedulers)} schedulers need "
                                  f"{len(self._schedulers) - 1} milestones; got {milestones!r}.")
        self.milestones = [whole(owner, "milestones[]", m, 1) for m in milestones]
        if self.milestones != sorted(set(self.milestones)):
            raise InvalidArgument(f"{owner}: milestones must increase; got {self.milestones}.")
        super().__init__(optimizer, None, last_epoch, param_group_tags)

    def _get_closed_form(self):
        s = self.last_epoch
        value = self._schedulers[0]._closed_form_at(s)
        for milestone, part in zip(self.milestones, self._schedulers[1:]):
            value = torch.where(s >= milestone, part._closed_form_at(s - milestone), value)
        return value


class PiecewiseConstantScheduler(SequentialScheduler):
    """value(s) = vals[i] for milestones[i-1] <= s < milestones[i], and vals[-1] from the last
    milestone on (the real class's rule: with one value per milestone, the last value also runs
    on after it; a value past the last milestone's is unused). Its parts are `constant_cls`
    schedules (the family's constant), one per stretch."""

    def __init__(self, optimizer: torch.optim.Optimizer, constant_cls: type, vals: List[float], milestones: List[int],
                 param_group_tags: Tags = None):
        owner = type(self).__name__
        name = self.name_of("vals")
        if not isinstance(vals, (list, tuple)) or not vals:
            raise InvalidArgument(f"{owner}: {name} must be a non-empty list; got {vals!r}.")
        if not isinstance(milestones, (list, tuple)):
            raise InvalidArgument(f"{owner}: milestones must be a list of steps; got {milestones!r}.")
        self.vals = [number(owner, f"{name}[{i}]", v) for i, v in enumerate(vals)]
        steps = [whole(owner, f"milestones[{i}]", m) for i, m in enumerate(milestones)]
        if steps != sorted(set(steps)):
            raise InvalidArgument(f"{owner}: milestones must increase; got {steps}.")
        if len(self.vals) < len(steps):
            raise InvalidArgument(f"{owner}: {len(steps)} milestones need {len(steps) + 1} {name} (one before each "
                                  f"milestone and one after the last); got {len(self.vals)}.")
        values = self.vals[:len(steps)] + [self.vals[-1]]
        parts = [constant_cls(optimizer, value, param_group_tags=param_group_tags) for value in values]
        super().__init__(optimizer, parts, steps, param_group_tags=param_group_tags)


class ChainedScheduler(_Composite):
    """The first schedule scaled by every later one's factor: `value(s) = schedulers[0](s) *
    Π schedulers[i](s) / schedulers[i](0)` (torch's ChainedScheduler, for closed forms). The
    optimizer is the one its parts schedule."""

    def __init__(self, schedulers: List[Scheduler], param_group_tags: Tags = None):
        optimizer = getattr(schedulers[0], "optimizer", None) if isinstance(schedulers, (list, tuple)) and schedulers \
            else None
        self._chain(optimizer, schedulers, -1, param_group_tags)

    def _chain(self, optimizer, schedulers, last_epoch: int, param_group_tags) -> None:
        """Build the chain of `schedulers` over `optimizer` (the LR family also takes R1.8's form)."""
        self._schedulers = _parts(self, optimizer, schedulers, param_group_tags)
        zero = torch.zeros_like(constant(0.0))
        self._starts = [float(part._closed_form_at(zero)) for part in self._schedulers]
        for i, start in enumerate(self._starts[1:], 1):
            if start == 0:
                raise InvalidArgument(f"{type(self).__name__}: schedulers[{i}] starts at {self.value_name} 0; a "
                                      "chained schedule scales by each later scheduler's value(step)/value(0).")
        Scheduler.__init__(self, optimizer, None, last_epoch, param_group_tags)

    def _get_closed_form(self):
        s = self.last_epoch
        value = self._schedulers[0]._closed_form_at(s)
        for part, start in zip(self._schedulers[1:], self._starts[1:]):
            value = value * (part._closed_form_at(s) / start)
        return value


class ScalePerParamScheduler(Scheduler):
    """`scheduler`'s value times each param group's own factor: value_g(s) = scheduler(s) * a_g,
    a_g the group's `adjust_learning_rate` (else its `adjust_val`, else 1), read when this is
    built (μP's per-layer rates). `scheduler` is a part: this one steps it."""

    def __init__(self, optimizer: torch.optim.Optimizer, scheduler: Scheduler, param_group_tags: Tags = None):
        owner = type(self).__name__
        _part(self, "scheduler", optimizer, scheduler, param_group_tags)
        self._scheduler = scheduler
        self.adjustment_scalars = [
            real(owner, f"param_groups[{i}]['adjust_learning_rate']",
                 group.get("adjust_learning_rate", group.get("adjust_val", 1.0)))
            for i, group in enumerate(optimizer.param_groups)]
        super().__init__(optimizer, None, -1, param_group_tags)

    def _get_closed_form(self):
        return self._scheduler._closed_form_at(self.last_epoch)

    def _group_values(self, value):
        return [None if each is None else each * scalar
                for each, scalar in zip(super()._group_values(value), self.adjustment_scalars)]

    def settings(self) -> dict:
        return {**super().settings(), "schedulers": [self._scheduler.settings()]}

    def parts(self) -> list:
        return [self._scheduler]
