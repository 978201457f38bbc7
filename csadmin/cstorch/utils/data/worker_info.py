"""Which input worker this process is, for sharding: `cstorch.utils.data.worker_info()`.

The seeds: each input worker "will call this input function to construct their own dataloader"
and "some data sharding scheme is required" (004). An input function shards with

    info = cstorch.utils.data.worker_info()          # WorkerInfo(task_id=2, num_tasks=4)
    dataset = full_dataset[info.task_id::info.num_tasks]

or the two shorthands `task_id()` / `num_tasks()`. In the training process itself (one process,
`num_workers_per_csx=1`) they are 0 and 1, so the same input function runs either way. A worker
process says who it is (`enter_worker`, on the backend: backend/process_backend.py) before it calls
the input function. Stdlib only.
"""

from __future__ import annotations

from ...backend import process_backend
from ...backend.process_backend import WorkerInfo

__all__ = ["WorkerInfo", "worker_info", "task_id", "num_tasks"]


def worker_info() -> WorkerInfo:
    """This process's input worker index and the worker count (0 and 1 outside a worker)."""
    return process_backend.current().worker


def task_id() -> int:
    return worker_info().task_id


def num_tasks() -> int:
    return worker_info().num_tasks


def enter_worker(task: int, count: int) -> None:
    """An input worker process says who it is (before it calls the input function)."""
    backend = process_backend.current()
    backend.worker = WorkerInfo(task, count)
    backend.is_input_worker = True
