"""The run requests: open, program, stream, heartbeat, join, leave, close, abort, and the timed
end of programming and of a lapsed lease, on an injected clock.

The wafer is exclusive: at most one run holds it, and ending a run always releases the fabric.
Ended runs stay queryable with their performance record. The record is statemachine/run.py, its
performance maths statemachine/performance.py, the book that keeps runs (and undoes a change)
statemachine/run_book.py, what the wire shows of a run statemachine/run_report.py; the rules are
data in statemachine/run_rules.py (`RUN_RULES`: every request in every phase; `OPEN_RULES`: when a
run may be opened; `PROGRAM_RULES`: what a program must match); the runtime's inputs are checked
in csadmin/shared/programs.py. This module applies the rules to the book.
"""

from __future__ import annotations

import math
from typing import Callable

from csadmin.errors import Busy, InvalidArgument, InvalidState, NotFound, PermissionDenied
from csadmin.shared.states import ExecMode

from .defaults import Timings
from .events import EventLog
from .performance import performance_record
from csadmin.shared.programs import RunMode
from .run import Fabric, Run, RunStatus, run_id_of, seconds, utc
from .run_book import RunBook
from .run_report import busy
from .run_rules import PROGRAM_RULES, RUN_RULES, Already, Refuse
from .workers import Worker, token_matches


class Runs:
    """The run requests on one book of runs (statemachine/run_book.py). Changes append events to
    `events` and touch the run in the book; refusals raise and change nothing. Only the model
    uses this (the device's collaborators): the Device's methods are the model's door."""

    def __init__(self, clock: Callable[[], int], events: EventLog, timings: Timings, book: RunBook):
        self._clock = clock
        self.events = events
        self.default_lease_ms = timings.lease_ms
        self.program_bytes_per_second = timings.program_bytes_per_second
        self._book = book

    @property
    def holder(self) -> Run | None:
        """The run holding the fabric, if any."""
        return self._book.holder

    # -- reading -------------------------------------------------------------------------------

    def get(self, run_id: str, client: str | None = None) -> Run:
        """The run, checked to belong to `client` unless client is None (admins, reads)."""
        run = self._book.find(run_id)
        if run is None:
            raise NotFound(f"No run {run_id!r}.", "`runs list` shows the kept runs; run ids look like run-000042.")
        if client is not None and run.client != client:
            worker = run.workers.get(client)
            if worker is not None:
                raise PermissionDenied(
                    f"{worker.name} is an input worker of run {run_id}: workers may only stream and heartbeat.",
                    f"The run's opener ({run.owner}) programs, closes or aborts it.",
                )
            raise PermissionDenied(
                f"Run {run_id} belongs to another client ({run.owner}).",
                "Use the run your client opened, or join it as an input worker with its join token (run.join); "
                "an admin can abort another client's run (`runs abort`).",
            )
        return run

    def feeder(self, run_id: str, client: str) -> tuple[Run, Worker | None]:
        """The run and, if `client` is one of its input workers, that worker (None: the opener).
        Anyone else is refused as by get()."""
        run = self._book.find(run_id)
        worker = run.workers.get(client) if run is not None else None
        if worker is None:
            return self.get(run_id, client), None
        if worker.left_at is not None:
            raise InvalidState(
                f"{worker.name} left run {run_id}; it no longer feeds it.",
                "Join it again (run.join with the token) to feed it once more.",
            )
        return run, worker

    def listing(self, max_count: int | None = None) -> list[Run]:
        """Kept runs, newest first."""
        return self._book.newest_first(max_count)

    def fabric(self) -> Fabric:
        """The wafer's fabric: the holder's, or UNPROGRAMMED when no run holds it."""
        return self.holder.fabric if self.holder is not None else Fabric.UNPROGRAMMED

    def next_deadline(self) -> int | None:
        run = self.holder
        if run is None:
            return None
        if run.fabric is Fabric.PROGRAMMING:
            return min(run.programming_until, run.lease_until)
        return run.lease_until

    # -- rules ---------------------------------------------------------------------------------

    def _rule(self, request: str, run: Run):
        rule = RUN_RULES[(request, run.phase)]
        if not isinstance(rule, (Refuse, Already)):  # going ahead: no message to fill (hot ops pass here)
            return rule
        fields = {"run_id": run.run_id, "reason": run.abort_reason, "until": utc(run.programming_until)}
        if isinstance(rule, Refuse):
            refusal = rule.refusal(**fields)
            refusal.fault = run.abort_fault  # a run a fault aborted: its runtime is told which
            raise refusal
        if isinstance(rule, Already):
            return rule.filled(**fields)
        return rule

    @staticmethod
    def _check_program(run: Run, program: dict, serial: str, execmode: ExecMode) -> None:
        facts = {"serial": serial, "execmode": execmode.value, "mode": run.mode}
        for rule in PROGRAM_RULES:
            fields = rule.broken_by(program, facts)
            if fields is not None:
                raise rule.refuse.refusal(run_id=run.run_id, **fields)

    def busy_error(self, doing: str, hint: str | None = None) -> Busy:
        """BUSY, naming the run that holds the fabric (run_report.busy)."""
        return busy(self.holder, doing, hint)

    # -- requests ------------------------------------------------------------------------------

    def open(
        self, owner: str, client: str, mode: RunMode, lease_ms: int | None = None, slurm_job: str | None = None,
        worker_slots: int = 0, token_digest: str | None = None, model_dir: str | None = None,
    ) -> Run:
        """Open a run holding the fabric. The caller (Device) has checked the lifecycle and says
        which Slurm job, if any, holds the wafer; with `worker_slots`, that many input workers
        may join it with the token whose digest is `token_digest`. `model_dir` is kept as given
        (the runtime's directory, for people reading the run)."""
        if self.holder is not None:
            raise self.busy_error("a second run cannot be opened")
        now = self._clock()
        lease = self.default_lease_ms if lease_ms is None else lease_ms
        number = self._book.next_number
        run = Run(run_id_of(number), number, owner, client, mode.value, lease, now, now + lease, slurm_job=slurm_job,
                  worker_slots=worker_slots, token_digest=token_digest if worker_slots else None, model_dir=model_dir)
        self._book.next_number += 1
        self._book.add(run)
        self._book.holder = run
        job = {"slurmJob": slurm_job} if slurm_job else {}
        self.events.emit("EventTrainingStarted", now, runId=run.run_id, owner=owner, mode=run.mode, **job)
        return run

    def program(
        self, run_id: str, client: str, program: dict, serial: str, execmode: ExecMode, worker_slots: int = 0,
        token_digest: str | None = None,
    ) -> Run:
        """Start programming the fabric with `program` (checked by programs.parse_program); with
        `worker_slots`, admit that many input workers from now on (if the run was opened without)."""
        run = self.get(run_id, client)
        self._rule("program", run)
        self._check_program(run, program, serial, execmode)
        if worker_slots and run.worker_slots:
            raise InvalidArgument(
                f"Run {run_id} already admits {run.worker_slots} input workers (asked for at run.open).",
                "Program it without `workers`; its workers join with the token run.open gave.",
            )
        now = self._clock()
        duration = math.ceil(program["size_bytes"] * 1000 / self.program_bytes_per_second)
        self._book.touch(run)
        self._renew(run, None, now)
        run.program = dict(program)
        if worker_slots:
            run.worker_slots, run.token_digest = worker_slots, token_digest
        run.fabric = Fabric.PROGRAMMING
        run.programming_started_at = now
        run.programming_until = now + duration
        self.events.emit(
            "EventProgrammingStarted", now, runId=run.run_id, fingerprint=program["fingerprint"],
            sizeBytes=program["size_bytes"], expectedCompletion=run.programming_until,
        )
        if duration == 0:
            self._finish_programming(run)
        return run

    def stream(self, run_id: str, client: str, samples: int) -> Run:
        """Count `samples` fed to the fabric by the opener or one of its input workers (a hot op:
        memory only until the next flush). Each sample is counted in the run's total and in its
        feeder's, so the breakdown always sums to the total."""
        run, worker = self.feeder(run_id, client)
        if run.is_open and run.fabric is Fabric.PROGRAMMING:
            self._settle_programming(run)
        self._rule("stream", run)
        self._book.touch(run)
        run.total_samples += samples
        if worker is None:
            self._renew(run, None, self._clock())
            run.opener_samples += samples
        else:
            run.workers[client] = worker.fed(samples, self._clock())
        return run

    def heartbeat(self, run_id: str, client: str) -> Run:
        """Renew the opener's lease, or say that an input worker is still alive."""
        run, worker = self.feeder(run_id, client)
        self._rule("heartbeat", run)
        self._book.touch(run)
        self._renew(run, worker, self._clock())
        return run

    def join(self, run_id: str, client: str, token: str, name: str | None) -> tuple[Run, Worker, bool]:
        """Admit `client` as an input worker of the run, with the join token its opener got.
        Returns (run, worker, changed): joining again is a success that changes nothing."""
        run = self._book.find(run_id)
        # The same answer for an unknown run and a wrong token: a stranger learns nothing.
        if run is None or not token_matches(token, run.token_digest):
            raise PermissionDenied(
                f"Access denied: that is not the join token of run {run_id}, or the run admits no input workers.",
                "Use the joinToken its opener got from run.open (opened with workers=N); ask the opener for it.",
            )
        self._rule("join", run)
        if client == run.client:
            raise InvalidArgument(
                f"This client opened run {run_id}; it feeds it as its opener, not as an input worker.",
                "Join from the worker process (its own key or socket), or just stream from the opener.",
            )
        worker = run.workers.get(client)
        if worker is not None and worker.left_at is None:
            return run, worker, False
        taken = {w.name for w in run.workers.values() if w.client != client}
        if worker is None and len(run.workers) >= run.worker_slots:
            raise Busy(
                f"All {run.worker_slots} worker slots of run {run_id} are taken ({', '.join(sorted(taken))}).",
                "Open the run with more workers (run.open workers=N), or let this process feed through another.",
            )
        name = name or (worker.name if worker is not None else f"worker-{len(run.workers) + 1}")
        if name in taken or name == run.owner:
            raise InvalidArgument(
                f"Run {run_id} already has a feeder named {name!r}.", "Give each worker its own name, or none."
            )
        now = self._clock()
        self._book.touch(run)
        samples = worker.samples if worker is not None else 0  # a worker that comes back keeps its count
        run.workers[client] = Worker(name, client, now, now, samples)
        return run, run.workers[client], True

    def leave(self, run_id: str, client: str) -> tuple[Run, Worker, bool]:
        """An input worker is done feeding the run (it is reported LEFT, never LOST). Returns
        (run, worker, changed)."""
        run = self._book.find(run_id)
        worker = run.workers.get(client) if run is not None else None
        if worker is None:
            self.get(run_id, client)  # NOT_FOUND, or another client's run
            raise PermissionDenied(
                f"This client is not an input worker of run {run_id}.",
                "Only a worker that joined (run.join) leaves; the opener closes the run (run.close).",
            )
        if worker.left_at is not None:
            return run, worker, False
        self._rule("leave", run)
        self._book.touch(run)
        run.workers[client] = worker.gone(self._clock())
        return run, run.workers[client], True

    def close(self, run_id: str, client: str, reason: str | None = None) -> tuple[Run, bool]:
        """End the run; with `reason` the runtime gives up and the run ends ABORTED.
        Returns (run, changed)."""
        run = self.get(run_id, client)
        rule = self._rule("close", run)
        if isinstance(rule, Already):
            return run, False
        if reason is not None:
            self._end(run, RunStatus.ABORTED, reason, "runtime")
        else:
            self._end(run, RunStatus.CLOSED, None)
        return run, True

    def abort(self, run_id: str, reason: str, dry_run: bool = False) -> tuple[Run, bool]:
        """Abort a run whoever holds it (admins). Returns (run, changed); with `dry_run`, what
        it would be, changing nothing."""
        run = self.get(run_id)
        rule = self._rule("abort", run)
        if isinstance(rule, Already) or dry_run:
            return run, not isinstance(rule, Already)
        self._end(run, RunStatus.ABORTED, reason, "admin")
        return run, True

    def abort_holder(self, reason: str, cause: str, fault: str | None = None) -> Run | None:
        """Abort the run holding the fabric, if any (forced standby, Slurm, daemon restart, a
        fault). `cause` is one of ABORT_CAUSES (the event says it; metrics count by it); `fault`
        names the fault that caused it."""
        run = self.holder
        if run is not None:
            self._end(run, RunStatus.ABORTED, reason, cause, fault)
        return run

    # -- time ----------------------------------------------------------------------------------

    def advance(self) -> bool:
        """Finish programming and abort a run whose lease lapsed, if their time has come."""
        run = self.holder
        if run is None:
            return False
        now = self._clock()
        changed = False
        if run.fabric is Fabric.PROGRAMMING and now >= run.programming_until:
            self._finish_programming(run)
            changed = True
        if now >= run.lease_until:
            self._end(run, RunStatus.ABORTED, f"lease expired (no heartbeat for {seconds(run.lease_ms):g} s)",
                      "lease_expired")
            changed = True
        return changed

    # -- internals -----------------------------------------------------------------------------

    def _renew(self, run: Run, worker: Worker | None, now: int) -> None:
        """A call from the opener renews the run's lease; one from a worker, only that worker's
        liveness (the lease is the opener's: a run its opener left is aborted)."""
        if worker is None:
            run.lease_until = now + run.lease_ms
        else:
            run.workers[worker.client] = worker.seen(now)

    def _settle_programming(self, run: Run) -> None:
        # The timer may not have fired yet when a request arrives just after the deadline.
        if self._clock() >= run.programming_until:
            self._finish_programming(run)

    def _finish_programming(self, run: Run) -> None:
        self._book.touch(run)
        run.fabric = Fabric.PROGRAMMED
        self.events.emit(
            "EventProgrammingFinished", self._clock(), runId=run.run_id,
            fingerprint=run.program["fingerprint"],
            programmingTime=seconds(run.programming_until - run.programming_started_at),
        )

    def _end(self, run: Run, status: RunStatus, reason: str | None, cause: str | None = None,
             fault: str | None = None) -> None:
        now = self._clock()
        if run.fabric is Fabric.PROGRAMMING:
            self._settle_programming(run)
        self._book.touch(run)
        run.ended_at = now
        run.status = status
        run.abort_reason = reason
        run.abort_fault = fault
        run.lease_until = None
        run.performance = performance_record(run, now)
        if self._book.holder is run:
            self._book.holder = None  # the fabric is released whenever a run ends
        if status is RunStatus.CLOSED:
            self.events.emit(
                "EventTrainingCompleted", now, runId=run.run_id, owner=run.owner,
                totalSamples=run.total_samples, samplesPerSec=run.performance["samples_per_sec"],
            )
        else:
            caused = {"fault": fault, "injected": True} if fault else {}
            self.events.emit("EventTrainingAborted", now, runId=run.run_id, owner=run.owner, reason=reason,
                             cause=cause, **caused)
