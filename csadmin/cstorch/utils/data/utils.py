"""`cstorch.utils.data.utils`: the module the real package keeps the data helpers in. Its own
job here is `Schedule`, the steps a DataExecutor takes checkpoints on, as the real package
describes them: intervals of 0-indexed steps (step i is the run's (i+1)-th).

    Schedule([Schedule.Range(start=99, end=1000, step=100, include_last=True)])  # 100, 200, …, 1000
    Schedule.every(100, num_steps=1000)   # what DataExecutor(checkpoint_steps=100) means: the same

A Range matches `start`, `start + step`, … below `end`, and `end - 1` too with `include_last`.
Intervals may not overlap. Bad values are InvalidArgument naming them. Both are mutable, as the
real ones are (ModelZoo moves a Range's start as its run resumes).

The real module's other names are importable from it too, made where they belong:
`from_numpy`/`to_numpy` (arrays.py) and `compute_num_steps`/`infer_batch_size` (counts.py).
"""

from __future__ import annotations

import itertools
import math
from dataclasses import dataclass

from csadmin.errors import InvalidArgument

from .arrays import from_numpy, to_numpy
from .counts import compute_num_steps, infer_batch_size

__all__ = ["Schedule", "from_numpy", "to_numpy", "compute_num_steps", "infer_batch_size"]


def _whole(name: str, value, least: int) -> int:
    if isinstance(value, bool) or not isinstance(value, int) or value < least:
        raise InvalidArgument(f"Schedule.Range: {name} must be an integer ≥ {least}, not {value!r}.")
    return value


@dataclass
class Schedule:
    """Checkpoint steps as non-overlapping intervals of 0-indexed steps."""

    @dataclass
    class Range:
        start: int
        end: int  # exclusive
        step: int
        include_last: bool

        def __post_init__(self):
            _whole("start", self.start, 0)
            _whole("end", self.end, self.start + 1)
            _whole("step", self.step, 1)
            if not isinstance(self.include_last, bool):
                raise InvalidArgument(f"Schedule.Range: include_last must be True or False, not {self.include_last!r}.")

        def match(self, index: int) -> bool:
            return self.start <= index < self.end and (
                (index - self.start) % self.step == 0 or (self.include_last and index == self.end - 1))

        def range(self) -> range:
            """The steps start, start + step, … below end (end - 1 not added)."""
            return range(self.start, self.end, self.step)

        def __iter__(self):
            yield from self.range()
            if self.include_last and self.end - 1 not in self.range():
                yield self.end - 1

        def __len__(self) -> int:
            return len(self.range()) + (self.include_last and self.end - 1 not in self.range())

        @property
        def final_step(self) -> int:
            """The interval's last step."""
            return self.end - 1 if self.include_last else self.range()[-1]

        def next_immediate_step(self, target: int) -> int:
            """The interval's first step at or after `target` (ValueError past its last)."""
            if target > self.final_step:
                raise ValueError(f"Target {target} exceeds the last interval step {self.final_step}")
            if target <= self.start:
                return self.start
            return min(self.start + math.ceil((target - self.start) / self.step) * self.step, self.final_step)

    intervals: list

    def __post_init__(self):
        if not isinstance(self.intervals, (list, tuple)) or not all(
                isinstance(r, Schedule.Range) for r in self.intervals):
            raise InvalidArgument("Schedule: intervals must be a list of Schedule.Range.")
        for a, b in zip(self.intervals, self.intervals[1:]):
            if b.start < a.end:
                raise InvalidArgument(f"Schedule: intervals must be non-overlapping ranges in order, but got {a} "
                                      f"then {b}.")

    @classmethod
    def every(cls, every: int, num_steps: int) -> "Schedule":
        """Every `every`-th step of a run of `num_steps`, and its last (0: none)."""
        if not every:
            return cls([])
        return cls([cls.Range(start=min(every - 1, num_steps - 1), end=num_steps, step=every, include_last=True)])

    def match(self, index: int) -> bool:
        """Whether 0-indexed step `index` is a checkpoint step."""
        return any(r.match(index) for r in self.intervals)

    def __iter__(self):
        for r in self.intervals:
            yield from r

    def __len__(self) -> int:
        return sum(len(r) for r in self.intervals)

    def range(self) -> list:
        """Each interval's range()."""
        return [r.range() for r in self.intervals]

    @property
    def start(self) -> int | None:
        """The first interval's start (None: no interval)."""
        return self.intervals[0].start if self.intervals else None

    @property
    def final_step(self) -> int | None:
        """The last interval's last step (None: no interval)."""
        return self.intervals[-1].final_step if self.intervals else None

    def next_immediate_step(self, target: int) -> int | None:
        """The schedule's first step at or after `target` (None: no interval; ValueError past the
        last step)."""
        if not self.intervals:
            return None
        if target > self.final_step:
            raise ValueError(f"Target {target} exceeds the last interval step {self.final_step}")
        for r in self.intervals:
            if target <= r.final_step:
                return r.next_immediate_step(target)
        return None

    def steps(self, num_steps: int):
        """The checkpoint steps (1-indexed, as a loop counts them) of a run of `num_steps`, in order:
        a generator, from the intervals' arithmetic (a run of a billion steps is not walked)."""
        for r in self.intervals:
            end = min(r.end, num_steps)
            yield from range(r.start + 1, end + 1, r.step)
            if r.include_last and r.end <= num_steps and (r.end - 1 - r.start) % r.step:
                yield r.end

    def last(self, num_steps: int) -> int | None:
        """The last checkpoint step of a run of `num_steps` (None: none)."""
        for r in reversed(self.intervals):
            end = min(r.end, num_steps)
            if r.start < end:
                if r.include_last and r.end <= num_steps:
                    return r.end
                return r.start + 1 + (end - 1 - r.start) // r.step * r.step
        return None

    def common_divisor(self, num_steps: int) -> int:
        """The greatest common divisor of the checkpoint steps of a run of `num_steps` (0: none):
        an interval's steps first, first + step, … share gcd(first, step)."""
        divisor = 0
        for r in self.intervals:
            end = min(r.end, num_steps)
            if r.start >= end:
                continue
            divisor = math.gcd(divisor, r.start + 1, r.step if r.start + 1 + r.step <= end else 0)
            if r.include_last and r.end <= num_steps:
                divisor = math.gcd(divisor, r.end)
        return divisor

    def describe(self, num_steps: int | None = None) -> str:
        """In words, for messages."""
        if not self.intervals:
            return "checkpoint_steps=None: none"
        if num_steps is not None:
            shown = list(itertools.islice(self.steps(num_steps), 7))
            if not shown:
                return "steps none"
            if len(shown) <= 6:
                return "steps " + ", ".join(map(str, shown))
            return "steps " + ", ".join(map(str, shown[:6])) + f", …, {self.last(num_steps)}"
        return "; ".join(f"steps {r.start + 1}, {r.start + 1 + r.step}, … before {r.end + 1}"
                         + (f" and {r.end}" if r.include_last else "") for r in self.intervals)
