"""`cstorch.distributed.cluster_resolver`: the specification of the tasks a run's cluster has
(TaskSpec, ClusterSpec, TaskRole), as ModelZoo's input pipeline builds and reads it to shard its
files between input workers (`cluster_spec.num_tasks()`, `task_spec.rank`).

Here one csd drives one CS-2: the cluster of an input worker is the run's input workers, one task
each (distributed.service_resolver()); a process that is no input worker is its own one-task
cluster (ModelZoo builds that one itself).
"""

from __future__ import annotations

from dataclasses import dataclass
from enum import Enum
from typing import List, Optional

from csadmin.errors import InvalidArgument


class TaskRole(Enum):
    """What a task does: the master drives the run, a worker streams its input."""

    MASTER = "master"
    WORKER = "worker"


@dataclass
class TaskSpec:
    """One task: its global `rank`, its `local_rank` on its node, the `wse_id` of the system it
    feeds, its `node_name` and its `roles`."""

    rank: int
    local_rank: int
    wse_id: int
    node_name: str
    roles: Optional[List[TaskRole]] = None

    def __post_init__(self):
        for name in ("rank", "local_rank", "wse_id"):
            if getattr(self, name) < 0:
                raise InvalidArgument(f"TaskSpec: {name} must be a non-negative integer, not {getattr(self, name)}.")
        self.roles = list(self.roles or [])


@dataclass
class ClusterSpec:
    """The cluster: its `tasks` (ranked 0..n-1 in order), the `rank` of this process's task, the
    number of systems and of input workers per system."""

    tasks: List[TaskSpec]
    rank: int
    num_csx: int
    num_workers_per_csx: int

    def __post_init__(self):
        if not self.tasks:
            raise InvalidArgument("ClusterSpec: a cluster must have at least one task.")
        if not 0 <= self.rank < len(self.tasks):
            raise InvalidArgument(f"ClusterSpec: invalid rank {self.rank} for {len(self.tasks)} task(s).")
        ranks = [task.rank for task in self.tasks]
        if ranks != list(range(len(self.tasks))):
            raise InvalidArgument(f"ClusterSpec: expected task ranks to be {list(range(len(self.tasks)))}, "
                                  f"but got {ranks}.")
        if self.num_workers_per_csx < 0:
            raise InvalidArgument("ClusterSpec: num_workers_per_csx must be a non-negative integer.")

    def num_tasks(self) -> int:
        """How many tasks the cluster has."""
        return len(self.tasks)

    def task(self, rank: Optional[int] = None) -> TaskSpec:
        """The task of `rank` (None: this process's)."""
        rank = self.rank if rank is None else rank
        if not 0 <= rank < self.num_tasks():
            raise InvalidArgument(f"Invalid task rank {rank}. Available ranks are: {list(range(self.num_tasks()))}.")
        return self.tasks[rank]

    def filter_tasks_by_role(self, role: TaskRole) -> List[TaskSpec]:
        """The tasks that have `role`."""
        return [task for task in self.tasks if role in task.roles]
