"""What a run's input workers need to know to restart their input deterministically: the run's
steps and checkpoint steps, and where their input starts (docs/cstorch.md, "Restartable input").

    plan = RestartPlan(num_steps=100, schedule=executor.checkpoint_schedule, start=state, kwargs={})
    plan.captures(50)                  # the workers capture their state for step 50
    plan.worker_steps(3, task=1, count=2)   # the checkpoint steps worker 1 reaches with its 3rd batch

The run's batches come from the workers in strict turn (step k's from worker (k-1) mod count), as
on the real system, so the batches a worker has made by step s are known: its i-th batch feeds
step task + 1 + (i-1)·count. A worker therefore captures its dataloader's state for a checkpoint
step s right after making the last batch it feeds up to s, before it makes the next: ahead of
what the trainer has taken (it prefetches), but exactly where step s leaves its input. The run's
last step is always captured: the next run of the same DataLoader starts its workers there.

Each is reckoned from the schedule's arithmetic, never by walking the run's steps. On the wire
(the trainer's `plan` message) the plan is its header and the start state as the payload.
Stdlib only.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from ..utils import Schedule


@dataclass(frozen=True)
class RestartPlan:
    num_steps: int  # the run's steps
    schedule: Schedule  # its checkpoint steps (0-indexed intervals)
    start: object = None  # the aggregated state the workers resume from (None: their input's beginning)
    kwargs: dict = field(default_factory=dict)  # what deaggregate/load_state_dict are called with (strict)

    def captures(self, step: int) -> bool:
        """Whether the workers capture their state for (1-indexed) `step`."""
        return 1 <= step <= self.num_steps and (step == self.num_steps or self.schedule.match(step - 1))

    def worker_steps(self, made: int, task: int, count: int) -> list[int]:
        """The captured steps that worker `task` of `count` has fed exactly `made` batches by."""
        first = 1 if made == 0 else (made - 1) * count + task + 1
        last = min(self.num_steps, made * count + task)
        return [step for step in range(first, last + 1) if self.captures(step)]

    def describe(self) -> str:
        """The captured steps, in words, for messages."""
        if self.schedule.last(self.num_steps) == self.num_steps:
            return self.schedule.describe(self.num_steps)
        if self.schedule.last(self.num_steps) is None:
            return f"the run's last step, {self.num_steps}"
        return f"{self.schedule.describe(self.num_steps)} and the run's last, {self.num_steps}"

    def header(self) -> dict:
        return {"num_steps": self.num_steps, "kwargs": self.kwargs,
                "intervals": [[r.start, r.end, r.step, r.include_last] for r in self.schedule.intervals]}

    @classmethod
    def from_header(cls, header: dict, start) -> "RestartPlan":
        schedule = Schedule([Schedule.Range(*interval) for interval in header["intervals"]])
        return cls(int(header["num_steps"]), schedule, start, dict(header["kwargs"]))
