"""SequentialLR, ChainedLR and ScalePerParamLR: schedules made of schedules, still one closed form
of the step. A part drives the same param groups as the whole (the same param_group_tags), as the
real package requires."""

from __future__ import annotations

import torch

from csadmin.errors import InvalidArgument

from ...checks import real, whole
from .base import LR_DTYPE, LRScheduler, _tags


def _parts(owner: str, optimizer, schedulers, param_group_tags) -> list[LRScheduler]:
    if not isinstance(schedulers, (list, tuple)) or not schedulers:
        raise InvalidArgument(f"{owner}: schedulers must be a non-empty list of LRSchedulers.")
    for i, part in enumerate(schedulers):
        _part(owner, f"schedulers[{i}]", optimizer, part, param_group_tags)
    return list(schedulers)


def _part(owner: str, where: str, optimizer, part, param_group_tags) -> None:
    if not isinstance(part, LRScheduler):
        raise InvalidArgument(f"{owner}: {where} is a {type(part).__name__}, not an LRScheduler.")
    if part.optimizer is not optimizer:
        raise InvalidArgument(f"{owner}: {where} schedules another optimizer.")
    if part.param_group_tags != _tags(owner, param_group_tags):
        raise InvalidArgument(f"{owner}: {where} has param_group_tags {part.param_group_tags}, not the "
                              f"{owner}'s {_tags(owner, param_group_tags)}: a part drives the same param groups.",
                              hint=f"Give the part and the {owner} the same param_group_tags.")


class _Composite(LRScheduler):
    """What a schedule made of schedules reports: its parts, and their settings in its own."""

    _schedulers: list[LRScheduler]

    def settings(self) -> dict:
        return {**super().settings(), "schedulers": [part.settings() for part in self._schedulers]}

    def parts(self) -> list:
        return list(self._schedulers)


class SequentialLR(_Composite):
    """schedulers[i] from milestones[i-1] on, each counting its steps from its own start (as
    torch's SequentialLR): `lr(s) = schedulers[i](s - milestones[i-1])`."""

    def __init__(self, optimizer, schedulers, milestones, last_epoch=-1, param_group_tags=None):
        self._schedulers = _parts("SequentialLR", optimizer, schedulers, param_group_tags)
        if not isinstance(milestones, (list, tuple)) or len(milestones) != len(self._schedulers) - 1:
            raise InvalidArgument(f"SequentialLR: {len(self._schedulers)} schedulers need "
                                  f"{len(self._schedulers) - 1} milestones; got {milestones!r}.")
        self.milestones = [whole("SequentialLR", "milestones[]", m, 1) for m in milestones]
        if self.milestones != sorted(set(self.milestones)):
            raise InvalidArgument(f"SequentialLR: milestones must increase; got {self.milestones}.")
        super().__init__(optimizer, None, last_epoch, param_group_tags)

    def _get_closed_form_lr(self):
        s = self.last_epoch
        lr = self._schedulers[0]._closed_form_at(s)
        for milestone, part in zip(self.milestones, self._schedulers[1:]):
            lr = torch.where(s >= milestone, part._closed_form_at(s - milestone), lr)
        return lr


class ChainedLR(_Composite):
    """The first schedule scaled by every later one's factor: `lr(s) = schedulers[0](s) *
    Π schedulers[i](s) / schedulers[i](0)` (torch's ChainedScheduler, for closed forms).

    Both releases' forms: `ChainedLR(schedulers, param_group_tags=None)` (2.x: the optimizer is
    the one its parts schedule) and `ChainedLR(optimizer, schedulers)` (the first release's)."""

    def __init__(self, optimizer=None, schedulers=None, last_epoch=-1, param_group_tags=None):
        if isinstance(optimizer, (list, tuple)):  # 2.x: (schedulers, param_group_tags)
            if schedulers is not None:
                param_group_tags = schedulers
            optimizer, schedulers = None, optimizer
        if optimizer is None and isinstance(schedulers, (list, tuple)) and schedulers:
            optimizer = getattr(schedulers[0], "optimizer", None)
        self._schedulers = _parts("ChainedLR", optimizer, schedulers, param_group_tags)
        zero = torch.zeros((), dtype=LR_DTYPE)
        self._starts = [float(part._closed_form_at(zero)) for part in self._schedulers]
        for i, start in enumerate(self._starts[1:], 1):
            if start == 0:
                raise InvalidArgument(f"ChainedLR: schedulers[{i}] starts at learning rate 0; a chained "
                                      "schedule scales by each later scheduler's lr(step)/lr(0).")
        super().__init__(optimizer, None, last_epoch, param_group_tags)

    def _get_closed_form_lr(self):
        s = self.last_epoch
        lr = self._schedulers[0]._closed_form_at(s)
        for part, start in zip(self._schedulers[1:], self._starts[1:]):
            lr = lr * (part._closed_form_at(s) / start)
        return lr


class ChainedScheduler(ChainedLR):
    """torch's name for ChainedLR, as the real package aliases it."""


class ScalePerParamLR(LRScheduler):
    """`scheduler`'s rate times each param group's own factor: lr_g(s) = scheduler(s) * a_g, a_g
    the group's `adjust_learning_rate` (else its `adjust_val`, else 1), read when this is built
    (μP's per-layer learning rates). `scheduler` is a part: this one steps it."""

    def __init__(self, optimizer, scheduler, param_group_tags=None):
        _part("ScalePerParamLR", "scheduler", optimizer, scheduler, param_group_tags)
        self._scheduler = scheduler
        self.adjustment_scalars = [
            real("ScalePerParamLR", f"param_groups[{i}]['adjust_learning_rate']",
                 group.get("adjust_learning_rate", group.get("adjust_val", 1.0)))
            for i, group in enumerate(optimizer.param_groups)]
        super().__init__(optimizer, None, -1, param_group_tags)

    def _get_closed_form_lr(self):
        return self._scheduler._closed_form_at(self.last_epoch)

    def _group_values(self, lr):
        return [None if value is None else value * scalar
                for value, scalar in zip(super()._group_values(lr), self.adjustment_scalars)]

    def settings(self) -> dict:
        return {**super().settings(), "schedulers": [self._scheduler.settings()]}

    def parts(self) -> list:
        return [self._scheduler]
