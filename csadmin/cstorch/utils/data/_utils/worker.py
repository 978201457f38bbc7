"""One input worker process: it builds its own dataloader and feeds the trainer (004: workers
"cannot share a PyTorch dataloader", so "each worker will call this input function").

    main(spec, input_fn, args, kwargs, csd)     # the process's whole life; returns its exit status

A forked worker (pool.py) knows its trainer is gone when its parent changes; a worker in another
Slurm task (remote.py) is given `trainer_gone` and `where` (its Slurm task and node, which the
trainer puts in the name it joins the run under).

The worker says who it is (`cstorch.utils.data.worker_info()` → its task and the worker count),
calls `input_fn(*args, **kwargs)`, and sends batches to the trainer, at most PREFETCH ahead of
what the trainer has acknowledged; its input restarts when it runs out, until the trainer says
stop. Once the trainer hands it the run's id and join token it joins the run on csd
(`Client.join_run`, named `worker-<task>`) and streams the samples the trainer *consumed* (each
`ack`), so every sample csd counts went through a step exactly once. On `stop` it streams the rest,
leaves the run and says `bye` with what it produced, had consumed and streamed. Any exception —
in input_fn, in a batch, in csd's answers — goes to the trainer as `error` with the traceback.

It makes no batch before the trainer's `plan`, the answer to its hello: with a restartable input
(restart_plan.py) it first resumes its dataloader at the plan's state (deaggregate_state_dict,
then load_state_dict), and after each batch it makes it sends the dataloader's state for every
checkpoint step that batch completes its share of (`state`, ahead of the batch), the user's
state_dict seeing this worker's DataLoaderCheckpoint through get_worker_state().
"""

from __future__ import annotations

import os
import signal
import time
import traceback

import torch

from csadmin import errors

from ....backend.csd_link import csd_client
from ..restartable import DataLoaderCheckpoint, is_restartable, load_into, load_kwargs, worker_state_dict
from ..worker_info import enter_worker
from .batches import repeated, samples_of
from .restart_plan import RestartPlan
from .transport import Spec, WorkerSocket, pack_batch, unpack_batch

PREFETCH = 4  # batches a worker may have sent ahead of the trainer's acknowledgements
STREAM_EVERY_SECONDS = 1.0  # run.stream at most this often (and at the end)


def main(spec: Spec, input_fn, args: tuple, kwargs: dict, csd: dict, where: str | None = None,
         trainer_gone=None) -> int:
    enter_worker(spec.task, spec.count)
    sock = WorkerSocket(spec)
    try:
        return Feeder(spec, sock, csd, where, trainer_gone).feed(input_fn, args, kwargs)
    except BaseException:  # noqa: BLE001 — everything goes to the trainer, which raises it
        sock.send("error", {"task": spec.task, "traceback": traceback.format_exc()})
        return 1
    finally:
        sock.close()


def process_main(*args) -> None:
    """multiprocessing's target: run main() and end the process without the parent's atexit
    hooks (a forked copy of the trainer must never close the trainer's run). Ctrl-C at a
    terminal reaches the whole process group: the trainer owns it (it ends the run and stops
    its workers), so a worker ignores SIGINT rather than report it as its own failure.

    torch runs single-threaded in a forked worker, as in torch's own DataLoader workers: the
    parent's OpenMP thread pool does not survive the fork, and the first parallel op of a child
    whose parent had used it (a 2.x DataLoader calls the input function in the trainer first)
    would wait on it forever."""
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    torch.set_num_threads(1)
    os._exit(main(*args))


class Feeder:
    """The worker's loop (see the module docstring)."""

    def __init__(self, spec: Spec, sock: WorkerSocket, csd: dict, where: str | None = None, trainer_gone=None):
        self.spec, self.sock, self.csd, self.where = spec, sock, csd, where
        parent = os.getppid()
        self.trainer_gone = trainer_gone or (lambda: os.getppid() != parent)
        self.credits = PREFETCH
        self.produced = self.consumed = self.streamed = 0
        self.samples_made = 0  # in the batches produced (a checkpoint's samples_streamed)
        self.plan: RestartPlan | None = None  # a restartable input's, from the trainer's `plan`
        self.loader = None
        self.client = self.run = None
        self.last_stream = time.monotonic()

    def feed(self, input_fn, args, kwargs) -> int:
        self.sock.send("hello", {"task": self.spec.task, "pid": os.getpid(), "secret": self.spec.hello_secret,
                                 "where": self.where})
        self.loader = input_fn(*args, **kwargs)
        try:
            feeding = self._await_plan()
            if not feeding and self.trainer_gone():
                return 0
            batches = repeated(self.loader)
            while feeding:
                message = self.sock.recv(0 if self.credits else 1000)
                if message is None:
                    if self.credits:
                        self._send(next(batches))
                    elif self.trainer_gone():
                        return 0  # it ended first (having failed before this one said hello, say): it reports why
                    continue
                kind, header, _ = message
                if kind == "stop":
                    break
                self._handle(kind, header)
            self._stream(final=True)
            if self.run is not None:
                try:
                    self.run.leave()
                except (errors.RunAborted, errors.InvalidState):
                    pass  # the run ended first (the trainer learns why from csd)
        finally:
            if self.client is not None:
                self.client.close()
        self.sock.send("bye", {"task": self.spec.task, "produced": self.produced, "consumed": self.consumed,
                               "streamed": self.streamed})
        return 0

    def _await_plan(self) -> bool:
        """Wait for the trainer's plan; for a restartable input, resume the dataloader at its state
        and capture the steps this worker feeds no batch up to. False: the trainer said stop, or
        is gone, first."""
        while True:
            message = self.sock.recv(1000)
            if message is None:
                if self.trainer_gone():
                    return False
                continue
            kind, header, payload = message
            if kind == "stop":
                return False
            if kind == "plan":
                break
        if not header:
            return True
        self.plan = RestartPlan.from_header(header, None if payload is None else unpack_batch(payload))
        if not is_restartable(self.loader):
            raise errors.InvalidArgument(
                f"input worker {self.spec.task}: the input function returned a {type(self.loader).__name__}, which "
                "is not a RestartableDataLoader, but the training process's is.",
                hint="Return a restartable dataloader in every input worker alike.")
        load_kwargs(self.loader)  # both of its methods take `strict`, or neither
        if self.plan.start is not None:
            load_into(self.loader, self.plan.start, self.plan.kwargs)
        self._capture()
        return True

    def _capture(self) -> None:
        """Send the dataloader's state for each checkpoint step the batches made so far complete."""
        task, count = self.spec.task, self.spec.count
        for step in self.plan.worker_steps(self.produced, task, count):
            checkpoint = DataLoaderCheckpoint(local_worker_id=task, num_workers_per_csx=count, num_csx=1, wse_id=0,
                                              appliance_step=step, worker_step=self.produced,
                                              samples_streamed=self.samples_made, user_state_dict=None)
            self.sock.send("state", {"step": step}, pack_batch(worker_state_dict(self.loader, checkpoint)))

    def _send(self, batch) -> None:
        samples = samples_of(batch)
        self.produced += 1
        self.samples_made += samples
        if self.plan is not None:
            self._capture()  # before the batch: the trainer has every state of a step once it has its batches
        self.sock.send("batch", {"seq": self.produced - 1, "samples": samples}, pack_batch(batch))
        self.credits -= 1

    def _handle(self, kind: str, header: dict) -> None:
        if kind == "ack":
            self.credits += 1
            self.consumed += int(header["samples"])
            self._stream()
        elif kind == "join":
            self.client = csd_client(self.csd.get("address"), self.csd.get("key"))
            try:
                self.run = self.client.join_run(header["run_id"], header["token"], name=header["name"])
            except errors.RunAborted:
                return  # csd ended the run already: the trainer's next step says why
            self._stream(final=True)

    def _stream(self, final: bool = False) -> None:
        """Report the consumed samples not yet reported: at most once a second, and at the end."""
        pending = self.consumed - self.streamed
        due = final or time.monotonic() - self.last_stream >= STREAM_EVERY_SECONDS
        if self.run is None or not pending or not due:
            return
        try:
            self.run.stream(pending)
        except errors.RunAborted:
            self.run = None  # csd ended the run (standby --force, a fault, runs abort): the trainer's
            return  # next step raises RunAborted with csd's reason; this worker just stops reporting
        self.streamed += pending
        self.last_stream = time.monotonic()
