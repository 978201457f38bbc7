"""`cstorch.utils.tracker.RateTracker`: samples per second, as a training loop reports them.

    tracker = RateTracker()
    tracker.add(batch_size)        # after each step
    tracker.reset()                # count from zero, from now
    tracker.global_rate()          # samples / seconds since the start (or reset_time)
    tracker.rate()                 # samples / seconds since the previous rate() (the first: since the start)

Time is the host's monotonic clock: what the loop waited for, steps, closures and data loading
included. Stdlib only.
"""

from __future__ import annotations

import time


class RateTracker:
    """Counts samples and the time they took (see the module docstring)."""

    def __init__(self):
        self.total_count = 0
        self._start = self._since = time.monotonic()
        self._since_count = 0

    def add(self, count: int) -> None:
        """`count` more samples were processed."""
        self.total_count += count

    def reset(self) -> None:
        """Start over: no samples counted, time counted from now (ModelZoo resets its tracker at
        the start of each fit and validation)."""
        self.total_count = 0
        self.reset_time()

    def reset_time(self, offset: float = 0.0) -> None:
        """Count time from now (minus `offset` seconds), the samples so far kept."""
        self._start = self._since = time.monotonic() - offset
        self._since_count = self.total_count

    def elapsed_seconds(self) -> float:
        return time.monotonic() - self._start

    def global_rate(self) -> float:
        """Samples per second since the start."""
        return self.total_count / max(self.elapsed_seconds(), 1e-9)

    def rate(self) -> float:
        """Samples per second since the previous call (the first: since the start)."""
        now = time.monotonic()
        value = (self.total_count - self._since_count) / max(now - self._since, 1e-9)
        self._since, self._since_count = now, self.total_count
        return value
