"""Input workers in other Slurm tasks, on other nodes (csrun_wse with worker nodes): how the two
ends find each other through the job's rendezvous directory (csadmin/shared/rendezvous.py).

Trainer side (the training process, `$CSTORCH_WORKERS_RENDEZVOUS` set): the pool binds its socket
as usual (on `$CS_INPUT_WORKER_BIND`, the node's address), `publish`es where it is and the run's
secrets in trainer.json (0600), and watches each worker through a `RemoteTask`, which answers as a
multiprocessing.Process does (exitcode, pid) from the worker task's exit file.

Worker side (`$CSTORCH_INPUT_WORKER` set too; roles.py): the script runs up to its
`cstorch.utils.data.DataLoader(input_fn, …)`, and `python -m csadmin.cstorch` then `serve`s with
its input function: this process becomes input worker `$CSTORCH_INPUT_WORKER` of the layout's
count — it waits for trainer.json, then feeds the trainer as a forked worker does (worker.py),
saying hello with its Slurm task and node — and ends with the worker's status; 0 when the
trainer's task ended first.
"""

from __future__ import annotations

import os
import signal
import socket
import sys
import time

from csadmin.shared import rendezvous
from csadmin.errors import InvalidState

from .transport import Spec, TrainerSocket
from .worker import main as worker_main

POLL_SECONDS = 0.2  # how often a waiting worker looks for trainer.json and the trainer's exit
CHECK_SECONDS = 0.5  # how often the trainer reads a worker's exit file (a shared file system)


def trainer_directory() -> str | None:
    """The rendezvous directory when this process is a csrun_wse trainer with remote workers."""
    if os.environ.get(rendezvous.WORKER_ENV):
        return None
    return os.environ.get(rendezvous.DIR_ENV) or None


def worker_requested() -> bool:
    return bool(os.environ.get(rendezvous.DIR_ENV) and os.environ.get(rendezvous.WORKER_ENV))


def publish(directory: str, sock: TrainerSocket) -> None:
    rendezvous.write_json(directory, rendezvous.TRAINER, {
        "endpoint": sock.endpoint, "server_public": sock.server_public.decode(),
        "client_public": sock.client_public.decode(), "client_secret": sock.client_secret.decode(),
        "hello_secret": sock.hello_secret})


class RemoteTask:
    """A worker in Slurm task `slurm_task`, as the pool watches it (Slurm and the task's
    supervisor own the process: start, terminate and join do nothing; `stop` ends it)."""

    def __init__(self, directory: str, slurm_task: int):
        self.directory, self.slurm_task = directory, slurm_task
        self.ended: dict | None = None
        self.checked = 0.0

    def _read(self) -> dict | None:
        if self.ended is None and time.monotonic() - self.checked >= CHECK_SECONDS:
            self.checked = time.monotonic()
            self.ended = rendezvous.read_exit(self.directory, self.slurm_task)
        return self.ended

    @property
    def exitcode(self) -> int | None:
        ended = self._read()
        if ended is None:
            return None
        name = ended.get("signal")
        return -signal.Signals[name].value if name in signal.Signals.__members__ else int(ended.get("status", 1))

    @property
    def pid(self) -> int | None:
        return None if self.ended is None else self.ended.get("pid")

    def describe(self) -> str:
        where = f"Slurm task {self.slurm_task}"
        if self.ended is not None:
            where += f" on {self.ended.get('node')}, pid {self.ended.get('pid')}"
        return where

    def start(self) -> None:
        pass

    def is_alive(self) -> bool:
        return self.exitcode is None

    def terminate(self) -> None:
        pass

    def join(self, timeout: float | None = None) -> None:
        pass


def remote_tasks(directory: str, count: int) -> list[RemoteTask]:
    try:
        layout = rendezvous.read_layout(directory)
    except ValueError as exc:
        raise InvalidState(f"${rendezvous.DIR_ENV}: {exc}.",
                           "Launch the script with csrun_wse, which writes it.") from None
    if layout.workers != count:
        raise InvalidState(f"the job has {layout.workers} input worker task(s), the DataLoader wants {count}.",
                           "Let csrun_wse set num_workers_per_csx (it does, from the layout).")
    return [RemoteTask(directory, layout.first_worker_task + task) for task in range(count)]


def serve(input_fn, args: tuple, kwargs: dict, backend) -> int:
    """Be input worker `$CSTORCH_INPUT_WORKER` (see the module docstring) for `backend`'s
    configuration; return the exit status."""
    config = backend.require_config()
    directory = os.environ[rendezvous.DIR_ENV]
    layout = rendezvous.read_layout(directory)
    index = int(os.environ[rendezvous.WORKER_ENV])
    node = os.environ.get("SLURMD_NODENAME") or socket.gethostname()

    def trainer_gone() -> bool:
        return rendezvous.read_exit(directory, layout.trainer_task) is not None

    while (published := rendezvous.read_json(directory, rendezvous.TRAINER)) is None:
        if trainer_gone():
            print(f"input worker {index}: the training process ended before it took batches", file=sys.stderr)
            return 0
        time.sleep(POLL_SECONDS)
    spec = Spec(published["endpoint"], published["server_public"].encode(), published["client_public"].encode(),
                published["client_secret"].encode(), published["hello_secret"], index, layout.workers)
    csd = {"address": config.mgmt_address, "key": config.key}
    where = f"task {layout.first_worker_task + index} on {node}"
    return worker_main(spec, input_fn, args, kwargs, csd, where=where, trainer_gone=trainer_gone)
