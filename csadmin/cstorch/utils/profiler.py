"""A DataExecutor's profiler (`executor.profiler`): the run's samples per second as the loop sees
them, in both spellings public scripts use.

    executor.profiler.rate(), executor.profiler.global_rate()          # 2.0–2.1 (gigaGPT)
    executor.profiler.rate_tracker.rate, .global_rate, .total_samples  # later releases

The executor adds each step's batch size as the loop takes the batch (utils/data/data_executor.py).
These are the host's numbers; the system's own (performance.json) are csd's.
"""

from __future__ import annotations

from typing import NamedTuple

from .tracker import RateTracker


class RateSnapshot(NamedTuple):
    """The rate tracker's values when asked."""

    total_samples: int
    total_time: float
    rate: float
    global_rate: float
    samples_per_sec: float
    flops_utilization: None  # the real package's field: no FLOP counts are simulated


class Profiler:
    """The samples and rates of one DataExecutor's run."""

    def __init__(self):
        self._tracker = RateTracker()

    def step(self, batch_size: int) -> None:
        self._tracker.add(batch_size)

    def rate(self) -> float:
        return self._tracker.rate()

    def global_rate(self) -> float:
        return self._tracker.global_rate()

    @property
    def total_samples(self) -> int:
        return self._tracker.total_count

    @property
    def rate_tracker(self) -> RateSnapshot:
        rate, global_rate = self._tracker.rate(), self._tracker.global_rate()
        return RateSnapshot(self._tracker.total_count, self._tracker.elapsed_seconds(), rate, global_rate,
                            global_rate, None)
