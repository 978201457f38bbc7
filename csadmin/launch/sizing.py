"""cs_input_analyzer's arithmetic (pure): from measured input workers and the compiled program's
estimate to the seeds' three settings, `nodes`, `tasks_per_node` and `cpus_per_task` (002).

A worker's rate is the median of the measured tasks' samples/s (each measured with
`cpus_per_task` CPUs). The input must feed the estimate itself with HEADROOM to spare: a worker
measured alone does not pay for handing its batches to the training process, and csd counts
the host's time between steps against the run. Workers needed = ceil(estimate × HEADROOM /
rate); a node holds at most node_cpus // cpus_per_task of them; nodes = ceil(workers /
tasks_per_node). The current settings are input-bound when their workers feed less than the
estimate; csd flags `suspected_input_bottleneck` below half of it.
"""

from __future__ import annotations

import math
import statistics
from dataclasses import dataclass

HEADROOM = 1.25


@dataclass(frozen=True)
class Sizing:
    per_worker: float  # samples/s of one worker (median of the measured tasks)
    per_cpu: float  # per_worker / the CPUs each task had
    target: float  # the compiled program's est_samples_per_sec
    workers: int  # workers needed
    nodes: int
    tasks_per_node: int
    cpus_per_task: int
    current_workers: int
    current_rate: float

    @property
    def input_bound(self) -> bool:
        return self.current_rate < self.target

    @property
    def flagged(self) -> bool:
        """What csd would say: suspected_input_bottleneck (fed below half the estimate)."""
        return self.current_rate < self.target / 2


def size(rates: list[float], cpus_per_task: int, target: float, node_cpus: int, current_workers: int) -> Sizing:
    """See the module docstring. `rates`: each measured task's samples/s (at least one > 0)."""
    per_worker = statistics.median(rates)
    if per_worker <= 0:
        raise ValueError("the input function produced no samples")
    workers = max(1, math.ceil(target * HEADROOM / per_worker))
    per_node = max(1, node_cpus // max(1, cpus_per_task))
    tasks_per_node = min(workers, per_node)
    nodes = math.ceil(workers / tasks_per_node)
    return Sizing(per_worker, per_worker / max(1, cpus_per_task), target, workers, nodes, tasks_per_node,
                  cpus_per_task, current_workers, per_worker * current_workers)
