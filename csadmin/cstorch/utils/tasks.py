"""Which input worker this process is, for sharding: `cstorch.utils.data.worker_info()`.

The seeds: each input worker "will call this input function to construct their own dataloader"
and "some data sharding scheme is required" (004). An input function shards with

    info = cstorch.utils.data.worker_info()          # WorkerInfo(task_id=2, num_tasks=4)
    dataset = full_dataset[info.task_id::info.num_tasks]

or the two shorthands `task_id()` / `num_tasks()`. In the training process itself (one process,
`num_workers_per_csx=1`) they are 0 and 1, so the same input function runs either way. The worker
process sets them (`enter_worker`) before it calls the input function. Stdlib only.
"""

from __future__ import annotations

from typing import NamedTuple


class WorkerInfo(NamedTuple):
    task_id: int  # this worker's index, 0 … num_tasks - 1
    num_tasks: int  # how many input workers feed the run


_info = WorkerInfo(0, 1)


def worker_info() -> WorkerInfo:
    """This process's input worker index and the worker count (0 and 1 outside a worker)."""
    return _info


def task_id() -> int:
    return _info.task_id


def num_tasks() -> int:
    return _info.num_tasks


def enter_worker(task: int, count: int) -> None:
    """The worker process says who it is (csadmin.cstorch.utils.worker, before input_fn)."""
    global _info
    _info = WorkerInfo(task, count)
