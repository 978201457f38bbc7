"""The trainer's side of its input workers: start them, take their batches in order, end them.

    pool = WorkerPool(input_fn, args, kwargs, count=4, config=config, run=run)
    task, batch = pool.next_batch()     # the next batch, from the worker whose turn it is
    pool.finish()                       # before the run closes: workers stream the rest and leave

Order: the workers take turns (0, 1, …, N-1, 0, …). The turn's worker is waited for, unless
another worker already has its whole prefetch (PREFETCH batches) waiting, which means the
turn's worker is the one holding the run up: then the next worker in turn order with a batch
ready goes first. While every worker keeps up, the order is strictly round-robin; a slow worker
feeds fewer batches, and csd's fair-share report names it. A restartable input (`restart`, a
RestartPlan) is strictly round-robin, as the real system's: which batches a worker made by a
checkpoint step must be known (restart_plan.py), so the turn's worker is always waited for.

Restart: every worker is sent the `plan` when it says hello (empty without one); it starts its
input at the plan's state and sends its dataloader's state for each checkpoint step (`state`,
before the batch it was captured after). `worker_states(step)` gives them, in worker order, for
the DataLoader to aggregate.

Each taken batch is acknowledged to its worker, which counts those samples as consumed and
streams them into the run (worker.py); the trainer streams nothing itself, so each sample is
counted once, by the worker that made it. Workers learn the run's id and join token once the
first step has opened the run (`hand_out`, over the CURVE socket).

A worker's exception, or a worker process that ends without saying bye (killed), ends the run
ABORTED and raises InputWorkerFailed in the training process, with the worker's traceback.

With `rendezvous` (a csrun_wse job's directory, remote.py) the workers are not forked: they are
Slurm tasks on other nodes, which find this socket through the directory and are watched through
their tasks' exit files; they join the run as `worker-<task> (task <slurm task> on <node>)`.
"""

from __future__ import annotations

import collections
import multiprocessing
import signal
import time

from csadmin.errors import InputWorkerFailed, InvalidState

from .batches import samples_of
from .remote import publish, remote_tasks
from .transport import TrainerSocket, pack_batch, unpack_batch
from .worker import PREFETCH, process_main

HELLO_TIMEOUT = 60.0  # a worker process must start and say hello within this
REMOTE_HELLO_TIMEOUT = 600.0  # … a Slurm task (it runs the script up to its DataLoader first; one
# that fails on the way is noticed by its exit file, not by this)
BYE_TIMEOUT = 30.0  # … and stream its last samples, leave the run and say bye within this
POLL_MS = 100  # how often a wait checks the worker processes are alive


def worker_name(task: int, where: str | None = None) -> str:
    """The name a worker feeds under in csd's run record (`where`: its Slurm task and node)."""
    return f"worker-{task}" + (f" ({where})" if where else "")


class WorkerPool:
    """N input worker processes feeding this process (see the module docstring)."""

    def __init__(self, input_fn, args: tuple, kwargs: dict, count: int, config, run, rendezvous: str | None = None,
                 restart=None):
        self.count = count
        self.plan = restart  # restart_plan.RestartPlan of a restartable input (None: none)
        self.states: dict[int, dict[int, object]] = {}  # checkpoint step -> task -> its dataloader's state
        self.taken = 0  # batches taken, from every worker
        self.run = run  # the cstorch run (run.Run) the workers feed: it finishes the pool before it closes
        self.remote = rendezvous is not None
        self.socket = TrainerSocket(linger_ms=1000 if self.remote else 0)
        if self.remote:
            self.processes = remote_tasks(rendezvous, count)
            publish(rendezvous, self.socket)
        else:
            csd = {"address": config.mgmt_address, "key": config.key}
            context = multiprocessing.get_context("fork")  # the input function needs no pickling
            self.processes = [
                context.Process(target=process_main, args=(spec, input_fn, args, kwargs, csd),
                                name=f"cstorch-{worker_name(spec.task)}", daemon=True)
                for spec in self.socket.specs(count)]
        self.identities: dict[int, bytes] = {}
        self.where: dict[int, str] = {}  # remote workers: "task 2 on cs3"
        self.queues = [collections.deque() for _ in range(count)]
        self.fed = [0] * count  # samples taken from each worker
        self.byes: dict[int, dict] = {}
        self.turn = 0
        self.run_id: str | None = None
        self.closed = False
        run.before_close.append(self.finish)
        for p in self.processes:
            p.start()
        timeout = REMOTE_HELLO_TIMEOUT if self.remote else HELLO_TIMEOUT
        deadline = time.monotonic() + timeout
        while len(self.identities) < count:
            if time.monotonic() > deadline:
                missing = sorted(set(range(count)) - set(self.identities))
                self._fail(f"input worker(s) {missing} did not start within {timeout:g} s")
            self._wait()

    # -- batches -------------------------------------------------------------------------------

    def next_batch(self) -> tuple[int, object]:
        """(task, batch): the next batch in turn order (see the module docstring)."""
        self._hand_out()
        while True:
            self._drain(0)
            self._check_alive()  # a killed worker ends the run even while the others keep up
            task = self._pick()
            if task is not None:
                return task, self._take(task)
            self._wait()

    def _pick(self) -> int | None:
        if self.queues[self.turn]:
            return self.turn
        if self.plan is not None or not any(len(q) >= PREFETCH for q in self.queues):
            return None  # nobody is held up by the turn's worker yet: wait for it
        order = [(self.turn + k) % self.count for k in range(1, self.count)]
        return next(t for t in order if self.queues[t])

    def _take(self, task: int):
        header, payload = self.queues[task].popleft()
        try:
            batch = unpack_batch(payload)
        except Exception as exc:  # noqa: BLE001 — whatever the bytes were, the worker is at fault
            self._fail(f"input worker {task} sent a batch that is not tensors ({type(exc).__name__}: "
                       f"{str(exc)[:200]})", short=f"input worker {task} sent a batch that is not tensors")
        samples = samples_of(batch)
        self.socket.send(self.identities[task], "ack", {"samples": samples})
        self.fed[task] += samples
        self.turn = (task + 1) % self.count
        self.taken += 1  # states are asked for at the last completed step (taken - 1) or later, never before
        self.states = {step: got for step, got in self.states.items() if step >= self.taken - 1}
        return batch

    def worker_states(self, step: int) -> list:
        """Every worker's dataloader state for checkpoint step `step`, in worker order (waiting
        for those not here yet: a worker that feeds no batch up to `step` sends its at its start)."""
        if not self.plan.captures(step):
            raise InvalidState(
                f"DataLoader state was requested at step {step}, but this step was not preconfigured as a "
                f"checkpoint step: the input workers capture their state on {self.plan.describe()}.",
                hint="Request it in a function decorated with @cstorch.checkpoint_closure: it runs on the "
                     "DataExecutor's checkpoint steps only.")
        deadline = time.monotonic() + BYE_TIMEOUT
        while len(got := self.states.get(step, {})) < self.count:
            if self.closed or time.monotonic() > deadline:
                self._fail(f"input worker(s) {sorted(set(range(self.count)) - set(got))} sent no dataloader state "
                           f"for step {step}")
            self._wait()
        return [got[task] for task in range(self.count)]

    # -- the run -------------------------------------------------------------------------------

    def _hand_out(self) -> None:
        """Once the run is open: give every worker its id and join token (a secret, encrypted)."""
        run = None if self.run.csd is None else self.run.csd.run
        if run is None or self.run_id is not None or self.closed:
            return
        self.run_id = run.id
        for task, identity in self.identities.items():
            self.socket.send(identity, "join", {"run_id": run.id, "token": run.join_token,
                                                "name": worker_name(task, self.where.get(task))})

    def finish(self) -> None:
        """Before the run closes: every worker streams what was consumed, leaves, says bye."""
        if self.closed:
            return
        self._hand_out()
        for identity in self.identities.values():
            self.socket.send(identity, "stop", {})
        deadline = time.monotonic() + BYE_TIMEOUT
        try:
            while len(self.byes) < self.count:
                if time.monotonic() > deadline:
                    self._fail(f"input worker(s) {sorted(set(range(self.count)) - set(self.byes))} did not "
                               f"finish within {BYE_TIMEOUT:g} s")
                self._wait()
        finally:
            self.shutdown()

    def shutdown(self) -> None:
        """Stop every worker process now (idempotent)."""
        if self.closed:
            return
        self.closed = True
        if self.remote:  # Slurm tasks: told to end (a `stop` they have had already is harmless)
            for task, identity in self.identities.items():
                if task not in self.byes:
                    self.socket.send(identity, "stop", {})
        for p in self.processes:
            if p.is_alive():
                p.terminate()
        for p in self.processes:
            p.join(5)
        self.socket.close()

    # -- messages and failures -----------------------------------------------------------------

    def _wait(self) -> None:
        self._drain(POLL_MS)
        self._check_alive()

    def _drain(self, timeout_ms: int) -> None:
        while (message := self.socket.recv(timeout_ms)) is not None:
            timeout_ms = 0
            self._handle(*message)

    def _handle(self, identity: bytes, kind: str, header: dict, payload) -> None:
        if kind == "hello":
            task = header.get("task")
            if header.get("secret") == self.socket.hello_secret and task in range(self.count):
                self.identities[task] = identity
                if isinstance(header.get("where"), str):
                    self.where[task] = header["where"][:100]
                plan = self.plan
                self.socket.send(identity, "plan", {} if plan is None else plan.header(),
                                 None if plan is None or plan.start is None else pack_batch(plan.start))
            return
        task = next((t for t, i in self.identities.items() if i == identity), None)
        if task is None:
            return  # not one of this run's workers: ignored
        if kind == "batch" and payload is not None:
            self.queues[task].append((header, payload))
        elif kind == "state" and payload is not None and isinstance(header.get("step"), int):
            try:
                self.states.setdefault(header["step"], {})[task] = unpack_batch(payload)
            except Exception as exc:  # noqa: BLE001 — as a batch's: the worker is at fault
                self._fail(f"input worker {task} sent a dataloader state that is not tensors, numbers, strings or "
                           f"containers of them ({type(exc).__name__}: {str(exc)[:200]})",
                           short=f"input worker {task} sent a dataloader state that could not be read")
        elif kind == "bye":
            self.byes[task] = header
        elif kind == "error":
            self._fail(f"input worker {task} raised:\n{header.get('traceback', '(no traceback)').rstrip()}",
                       short=f"input worker {task} raised {_last_line(header.get('traceback', ''))}")

    def _check_alive(self) -> None:
        for task, p in enumerate(self.processes):
            if p.exitcode is not None and task not in self.byes and not self.closed:
                self._drain(0)  # its error message may be waiting
                how = (f"was killed by signal {signal.Signals(-p.exitcode).name}" if p.exitcode < 0
                       else f"exited with status {p.exitcode}")
                self._fail(f"input worker {task} ({p.describe() if self.remote else f'pid {p.pid}'}) {how} "
                           "without finishing")

    def _fail(self, message: str, short: str | None = None) -> None:
        """End the workers and the run (ABORTED, saying why), then raise."""
        self.shutdown()
        error = InputWorkerFailed(f"{message}\nThe run was ended.")
        error.reason = short or message  # the run's abort reason
        if not self.run.finished:  # (inside Run.finish, it closes the run with this reason)
            self.run.finish(error.reason)
        raise error


def _last_line(text: str) -> str:
    lines = [line for line in text.strip().splitlines() if line.strip()]
    return lines[-1].strip() if lines else "an exception"
