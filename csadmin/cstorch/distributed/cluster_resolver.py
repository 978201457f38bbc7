"""`cstorch.distributed.cluster_resolver`: the cluster's tasks as the real module describes them
(ModelZoo's input functions read them to split their files over the input workers).

    spec = cstorch.distributed.service_resolver().cluster_spec    # in an input worker
    task = spec.task()              # this worker: rank, local_rank (among its CS-2's), wse_id
    spec.num_csx, spec.num_workers_per_csx

`TaskSpec` and `ClusterSpec` are the real dataclasses, with their checks. `resolve()` gives this
process's cluster as csd runs it: one CS-2 (`num_csx` 1); in an input worker its workers, one
task each (`rank` and `local_rank` the worker's index, `wse_id` 0, role WORKER), this process's
task the current one; in the script's own process, its one task (rank 0, role MASTER) and no
worker.
"""

import dataclasses
import socket
from enum import Enum
from typing import List, Optional

from csadmin.errors import InvalidArgument

from ..backend import process_backend


class TaskRole(Enum):
    """Roles that a task can have."""

    MASTER = "master"
    WORKER = "worker"


@dataclasses.dataclass
class TaskSpec:
    """One task: its global `rank`, its `local_rank` among its CS-2's tasks, the `wse_id` of its
    CS-2, the `node_name` it runs on and its `roles`."""

    rank: int
    local_rank: int
    wse_id: int
    node_name: str
    roles: List[TaskRole] = None

    def __post_init__(self) -> None:
        for name in ("rank", "local_rank", "wse_id"):
            if getattr(self, name) < 0:
                raise InvalidArgument(f"TaskSpec: {name} must be a non-negative integer; got {getattr(self, name)}.")
        if not self.node_name:
            raise InvalidArgument("TaskSpec: node_name must not be empty.")


@dataclasses.dataclass
class ClusterSpec:
    """The cluster: its `tasks` (ranked 0, 1, … in order), this process's task `rank`, `num_csx`
    and `num_workers_per_csx`."""

    tasks: List[TaskSpec]
    rank: int
    num_csx: int
    num_workers_per_csx: int

    def __post_init__(self) -> None:
        if not self.tasks:
            raise InvalidArgument("A cluster must have at least one task.")
        if not 0 <= self.rank < len(self.tasks):
            raise InvalidArgument(f"Invalid rank {self.rank}")
        given = [task.rank for task in self.tasks]
        if given != list(range(len(self.tasks))):
            raise InvalidArgument(f"Expected task ranks to be {list(range(len(self.tasks)))}, but got {given}")
        if self.num_workers_per_csx < 0:
            raise InvalidArgument("Num of workers per CSX must be a positive integer.")

    def num_tasks(self) -> int:
        """How many tasks the cluster has."""
        return len(self.tasks)

    def task(self, rank: Optional[int] = None) -> TaskSpec:
        """The task of `rank` (default: this process's)."""
        rank = self.rank if rank is None else rank
        if rank < 0 or rank >= self.num_tasks():
            raise InvalidArgument(f"Invalid task rank {rank}. Available ranks are: {list(range(self.num_tasks()))}.")
        return self.tasks[rank]

    def filter_tasks_by_role(self, role: TaskRole) -> List[TaskSpec]:
        """The tasks that have `role`."""
        return [task for task in self.tasks if role in (task.roles or [])]


def resolve() -> ClusterSpec:
    """This process's cluster (see the module docstring)."""
    backend = process_backend.current()
    node = socket.gethostname() or "localhost"
    if not backend.is_input_worker:
        return ClusterSpec([TaskSpec(0, 0, 0, node, [TaskRole.MASTER])], 0, 1, 0)
    worker = backend.worker
    tasks = [TaskSpec(i, i, 0, node, [TaskRole.WORKER]) for i in range(worker.num_tasks)]
    return ClusterSpec(tasks, worker.task_id, 1, worker.num_tasks)


class ServiceResolver:
    """What `cstorch.distributed.service_resolver()` returns: the cluster, and which of its
    tasks stream the input (the workers) and receive the outputs (the master)."""

    @property
    def cluster_spec(self) -> ClusterSpec:
        return resolve()

    def streamer_ordinals(self) -> List[int]:
        return [task.rank for task in self.cluster_spec.filter_tasks_by_role(TaskRole.WORKER)]

    def receiver_ordinals(self) -> List[int]:
        return [task.rank for task in self.cluster_spec.filter_tasks_by_role(TaskRole.MASTER)]
