"""How many steps a DataLoader feeds, and how they fall into epochs (004, "Initializing the
DataLoader"), from its counts and its input's length. Pure: no torch, no I/O.

    s = step_plan(length=5, num_steps=None, max_steps=7, num_epochs=3, steps_per_epoch=None)
    s.total, s.num_epochs, s.steps_per_epoch     # 7, 2, 4

The document's two mutually exclusive groups: `num_steps` (the total; min(num_steps, max_steps)),
or `num_epochs` with `steps_per_epoch` (default: the input's length; min(num_epochs ×
steps_per_epoch, max_steps)). `max_steps` is the run's last global step, so a run resumed at
`initial_step` feeds max_steps − initial_step more at most (max_steps alone: that many, the
input restarted as needed). The epochs are then the total split
evenly, as the real API splits it (num_epochs = ⌈total / steps_per_epoch⌉, steps_per_epoch =
⌈total / num_epochs⌉): one iteration of the DataLoader is one epoch, so `for epoch in
range(dataloader.num_epochs): for batch in dataloader:` feeds the total. With no count at all,
the input's one pass (its length) is the total; an input of unknown length then has none.
"""

from __future__ import annotations

from typing import NamedTuple

from csadmin.errors import InvalidArgument

OWNER = "DataLoader"


class StepPlan(NamedTuple):
    """The steps a DataLoader feeds and their epochs (not a DataExecutor's checkpoint Schedule)."""
    total: int | None  # steps fed in all (None: one pass over an input of unknown length)
    num_epochs: int  # iterations of the DataLoader that feed them
    steps_per_epoch: int | None  # steps each iteration feeds (the last may feed fewer)


def _ceildiv(a: int, b: int) -> int:
    return -(-a // b)


def step_plan(length: int | None, num_steps: int | None, max_steps: int | None, num_epochs: int | None,
             steps_per_epoch: int | None, initial_step: int = 0) -> StepPlan:
    """The step plan of an input of `length` batches (None: unknown) for the given counts
    (checked by the caller to be whole numbers ≥ 1); InvalidArgument for a contradiction."""
    if num_steps is not None and (num_epochs is not None or steps_per_epoch is not None):
        raise InvalidArgument(f"{OWNER}: num_steps and num_epochs/steps_per_epoch are mutually exclusive: "
                              "give the total number of steps, or the epochs (and steps per epoch).")
    if steps_per_epoch is not None and num_epochs is None:
        raise InvalidArgument(f"{OWNER}: steps_per_epoch needs num_epochs.", hint="Add num_epochs=N.")
    if steps_per_epoch is not None and length is not None and steps_per_epoch > length:
        raise InvalidArgument(f"{OWNER}: steps_per_epoch {steps_per_epoch} exceeds the input's length ({length} "
                              "batches).", hint="Lower steps_per_epoch, or use num_steps (the input restarts when "
                                                "it runs out).")
    if num_epochs is not None and steps_per_epoch is None and length is None:
        raise InvalidArgument(f"{OWNER}: num_epochs needs steps_per_epoch: the input function's dataloader has no "
                              "length.")
    remaining = None
    if max_steps is not None:
        remaining = max_steps - initial_step
        if remaining <= 0:
            raise InvalidArgument(f"{OWNER}: the run resumes at step {initial_step}, which already reaches "
                                  f"max_steps {max_steps}: no step is left to run.",
                                  hint="Raise max_steps, or resume from an earlier checkpoint.")
    if num_steps is not None:
        total = num_steps
    elif num_epochs is not None:
        total = num_epochs * (steps_per_epoch or length)
    else:
        total = remaining if remaining is not None else length  # max_steps, else one pass (None: unknown)
    if remaining is not None:
        total = min(total, remaining)
    if total is None:
        return StepPlan(None, 1, None)
    per_epoch = total if num_epochs is None else (steps_per_epoch or length)
    epochs = _ceildiv(total, per_epoch)
    return StepPlan(total, epochs, _ceildiv(total, epochs))
