"""`cstorch.profiler` (2.x): the real package's op profiler, which ModelZoo's OpProfiler callback
uses (`runconfig.op_profiler_config`): `schedule(start_step=, end_step=)` and `profile(...)`.

The op profiler returns the system's own per-operation traces of the steps in its schedule; this
runtime has no such traces (a step here is one PyTorch program on this CPU), so `profile` is
refused when built, naming what is not built and what is (performance.json and the run's
samples_per_sec scalars, docs/cstorch/runs.md). `schedule` is the real function: the steps to
profile, checked.
"""

from typing import Callable, List

from csadmin.errors import InvalidArgument


def schedule(*, start_step: int, end_step: int) -> Callable[[], List[int]]:
    """The range of steps to profile, both ends included: a function returning [start, end]."""
    if start_step > end_step:
        raise InvalidArgument("The value of start step should be less than or equal to end_step")
    return lambda: [start_step, end_step]


class profile:
    """The op profiler's context: refused when built (see the module docstring)."""

    def __init__(self, *, schedule: Callable[[], List[int]], host_activities=None, on_trace_ready=None):
        raise InvalidArgument("cstorch.profiler.profile (the op profiler: the system's per-operation traces) is not "
                              "built here.",
                              hint="Remove op_profiler_config (ModelZoo's OpProfiler callback); the run's throughput "
                                   "is in performance.json and the samples_per_sec scalars.")


__all__ = ["profile", "schedule"]
