"""What a fresh system is and how long its simulated steps take, unless csd is told otherwise.

One home for these defaults: the model starts from them and csd's settings (daemon/process/config.py)
take theirs from here, so `csd --check-config` prints what the model really uses. Kept apart from
lifecycle.py so that reading them costs no `transitions` import (`csd keys …`, `--check-config`).
"""

from __future__ import annotations

from dataclasses import dataclass

SERIAL = "CS2-0001"
KEEP_EVENTS = 10_000  # events kept in the store (csd's --keep-events)
EVENTS_IN_MEMORY = 1_000  # the newest events the model holds (the rest are read from the store)
KEEP_RUNS = 1_000  # runs kept in memory for `runs list` / `runs show` (all stay in the store)


@dataclass(frozen=True)
class Timings:
    """Simulated durations in milliseconds."""

    activate_ms: int = 5_000
    standby_ms: int = 3_000
    lease_ms: int = 60_000  # a run's lease when its runtime asks for none
    program_bytes_per_second: float = 2e9  # programming time = size_bytes / this
