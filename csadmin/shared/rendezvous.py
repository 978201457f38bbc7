"""Where a `csrun_wse` job's training process and its input workers on other nodes meet: a
directory on a file system every node of the job shares (csrun_wse makes it, mode 0700, in the
directory it was started from, which Slurm makes every task's working directory).

    layout.json      csrun_wse, before srun: which Slurm tasks are what
                     {"trainer_task": 0, "first_worker_task": 1, "workers": W}
    trainer.json     the training process, once its socket is bound (mode 0600: it holds the
                     run's CURVE keys and hello secret, which never go on a command line):
                     {"endpoint", "server_public", "client_public", "client_secret", "hello_secret"}
    task-<P>.exit    the supervisor of Slurm task P (csadmin/launch/task.py), once its process
                     ended, however it ended: {"status", "signal", "node", "pid"}

The workers find their trainer through trainer.json and learn that it is gone through its exit
file; the trainer learns that a worker is gone through that worker's exit file; csrun_wse returns
the status in the trainer's. The trainer binds its socket on `$CS_INPUT_WORKER_BIND` (the
supervisor sets it to the address Slurm knows the trainer's node by). Stdlib only: the launchers
(no torch) and cstorch both read it.
"""

from __future__ import annotations

import json
import os
from typing import NamedTuple

from csadmin.shared.atomic_write import write_atomically

DIR_ENV = "CSTORCH_WORKERS_RENDEZVOUS"  # the directory, in both roles
WORKER_ENV = "CSTORCH_INPUT_WORKER"  # set in a worker task only: its index among the workers
BIND_ENV = "CS_INPUT_WORKER_BIND"  # where the trainer binds its input workers' socket
LAYOUT = "layout.json"
TRAINER = "trainer.json"


class Layout(NamedTuple):
    trainer_task: int
    first_worker_task: int
    workers: int


def write_json(directory: str, name: str, value: dict, mode: int = 0o600) -> None:
    write_atomically(os.path.join(directory, name), (json.dumps(value) + "\n").encode(), mode)


def read_json(directory: str, name: str) -> dict | None:
    """The file's object, or None while it is not (completely) there."""
    try:
        with open(os.path.join(directory, name), encoding="utf-8") as f:
            value = json.load(f)
    except (OSError, ValueError):
        return None
    return value if isinstance(value, dict) else None


def write_layout(directory: str, layout: Layout) -> None:
    write_json(directory, LAYOUT, layout._asdict())


def read_layout(directory: str) -> Layout:
    """The job's layout; ValueError if csrun_wse wrote none here."""
    value = read_json(directory, LAYOUT)
    try:
        return Layout(int(value["trainer_task"]), int(value["first_worker_task"]), int(value["workers"]))
    except (TypeError, KeyError, ValueError):
        raise ValueError(f"{os.path.join(directory, LAYOUT)} is missing or damaged") from None


def exit_name(task: int) -> str:
    return f"task-{task}.exit"


def read_exit(directory: str, task: int) -> dict | None:
    """How Slurm task `task` ended (see the module docstring), or None while it runs."""
    return read_json(directory, exit_name(task))
