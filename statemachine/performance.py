"""A run's performance record: the fields of performance.json, computed from the run (pure).

samples_per_sec is what was fed over the time since programming finished, capped at the
program's estimate (the device consumes no faster); fed below half the estimate, the input
pipeline is the suspected bottleneck.
"""

from __future__ import annotations

from .run import Fabric, Run, seconds

# Fed below this fraction of the program's estimated capacity, the input pipeline is suspected.
BOTTLENECK_FRACTION = 0.5


def performance_record(run: Run, now: int) -> dict:
    """The fields of performance.json, as of `now` (or the end of the run)."""
    end = run.ended_at if run.ended_at is not None else now
    program = run.program or {}
    est = float(program.get("est_samples_per_sec", 0.0))
    programmed = run.fabric is Fabric.PROGRAMMED
    if run.programming_started_at is None:
        programming_ms = 0
    else:
        programming_ms = min(end, run.programming_until or end) - run.programming_started_at
    total_ms = max(0, end - run.programming_until) if programmed else 0
    if run.total_samples and total_ms == 0:
        rate = est  # everything fed within the same millisecond: at capacity
    else:
        rate = run.total_samples / (total_ms / 1000) if total_ms else 0.0
    rate = min(rate, est)  # the device consumes at most its estimated capacity
    return {
        "compile_time": program.get("compile_time", 0.0),
        "est_samples_per_sec": est,
        "programming_time": seconds(max(0, programming_ms)),
        "samples_per_sec": round(rate, 3),
        "suspected_input_bottleneck": bool(programmed and rate < BOTTLENECK_FRACTION * est),
        "total_samples": run.total_samples,
        "total_time": seconds(total_ms),
    }
