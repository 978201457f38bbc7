"""The run requests (open, program, stream, heartbeat, join, leave, close, abort) and the timed
end of programming and of a lapsed lease, on an injected clock: the rules of
statemachine/run_rules.py applied to the book of runs (statemachine/run_book.py).

The wafer is exclusive: at most one run holds it, and ending a run always releases the fabric.
Ended runs stay queryable with their performance record (statemachine/run.py, performance.py).
Each request reads the op's arguments from its record (csadmin/shared/opargs.py `Args`).
"""

from __future__ import annotations

import math
from typing import Callable

from csadmin.errors import Busy
from csadmin.shared.opargs import Args
from csadmin.shared.states import ExecMode

from .defaults import Timings
from .events import EventLog
from .performance import performance_record
from .run import Fabric, Run, RunStatus, seconds, utc
from .run_book import RunBook
from .run_report import busy
from .run_rules import (ALREADY_ADMITS, ANOTHER_CLIENTS, NAME_TAKEN, NO_SUCH_RUN, NOT_A_WORKER, NOT_THE_TOKEN,
                        OPENER_JOINS, RUN_RULES, SLOTS_TAKEN, WORKER_LEFT, WORKERS_ONLY_FEED, Already, Refuse,
                        check_program)
from .workers import Worker, token_matches


class Runs:
    """The run requests on one book of runs (statemachine/run_book.py). Changes append events to
    `events` and touch the run in the book; refusals raise and change nothing. Only the model
    uses this: csd asks its requests of `device.runs` (statemachine/run_requests.py)."""

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
            raise NO_SUCH_RUN.refusal(run_id=run_id)
        if client is not None and run.client != client:
            worker = run.workers.get(client)
            refuse = ANOTHER_CLIENTS if worker is None else WORKERS_ONLY_FEED
            raise refuse.refusal(run_id=run_id, owner=run.owner, worker=worker and worker.name)
        return run

    def feeder(self, run_id: str, client: str) -> tuple[Run, Worker | None]:
        """The run and, if `client` is one of its input workers, that worker (None: the opener).
        Anyone else is refused as by get()."""
        run = self._book.find(run_id)
        worker = run.workers.get(client) if run is not None else None
        if worker is None:
            return self.get(run_id, client), None
        if worker.left_at is not None:
            raise WORKER_LEFT.refusal(run_id=run_id, worker=worker.name)
        return run, worker

    def listing(self, max_count: int | None = None) -> list[Run]:
        """Kept runs, newest first."""
        return self._book.newest_first(max_count)

    def next_deadline(self) -> int | None:
        """When the holder's programming completes or its lease lapses, or None."""
        return self.holder.deadline if self.holder is not None else None

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
        return rule.filled(**fields)

    def busy_error(self, doing: str, hint: str | None = None) -> Busy:
        """BUSY, naming the run that holds the fabric (run_report.busy)."""
        return busy(self.holder, doing, hint)

    # -- requests ------------------------------------------------------------------------------

    def open(self, request: Args, client: str, slurm_job: str | None = None, token_digest: str | None = None) -> Run:
        """Open a run holding the fabric, from a run.open request (the run keeps what it is
        opened with: Run.opened). The caller (RunRequests) has checked the lifecycle and says
        which Slurm job, if any, holds the wafer, and the digest of the join token csd drew."""
        if self.holder is not None:
            raise self.busy_error("a second run cannot be opened")
        now = self._clock()
        number = self._book.next_number
        run = Run.opened(number, request, client, now, self.default_lease_ms, slurm_job, token_digest)
        self._book.next_number += 1
        self._book.add(run)
        self._book.holder = run
        job = {"slurmJob": slurm_job} if slurm_job else {}
        self.events.emit("EventTrainingStarted", now, runId=run.run_id, owner=run.owner, mode=run.mode, **job)
        return run

    def program(self, request: Args, client: str, serial: str, execmode: ExecMode,
                token_digest: str | None = None) -> Run:
        """Start programming the fabric with the request's `program` (checked by
        programs.parse_program); with `workers`, admit that many input workers from now on (if
        the run was opened without), with the token whose digest is `token_digest`."""
        run_id, program, worker_slots = request.run_id, request.program, request.workers
        run = self.get(run_id, client)
        self._rule("program", run)
        check_program(run, program, serial, execmode)
        if worker_slots and run.worker_slots:
            raise ALREADY_ADMITS.refusal(run_id=run_id, slots=run.worker_slots)
        now = self._clock()
        duration = math.ceil(program["size_bytes"] * 1000 / self.program_bytes_per_second)
        self._book.touch(run)
        run.renew(None, now)
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

    def stream(self, request: Args, client: str) -> Run:
        """Count the request's `samples` fed to the fabric by the opener or one of its input
        workers (a hot op: memory only until the next flush). Each sample is counted in the run's
        total and in its feeder's, so the breakdown always sums to the total."""
        samples = request.samples
        run, worker = self.feeder(request.run_id, client)
        if run.is_open and run.fabric is Fabric.PROGRAMMING:
            self._settle_programming(run)
        self._rule("stream", run)
        self._book.touch(run)
        run.total_samples += samples
        if worker is None:
            run.renew(None, self._clock())
            run.opener_samples += samples
        else:
            run.workers[client] = worker.fed(samples, self._clock())
        return run

    def heartbeat(self, request: Args, client: str) -> Run:
        """Renew the opener's lease, or say that an input worker is still alive."""
        run, worker = self.feeder(request.run_id, client)
        self._rule("heartbeat", run)
        self._book.touch(run)
        run.renew(worker, self._clock())
        return run

    def join(self, request: Args, client: str) -> tuple[Run, Worker, bool]:
        """Admit `client` as an input worker of the run, with the join token its opener got, under
        the request's `name` (or worker-N). Returns (run, worker, changed): joining again is a
        success that changes nothing."""
        run_id, token, name = request.run_id, request.token, request.name
        run = self._book.find(run_id)
        # The same answer for an unknown run and a wrong token: a stranger learns nothing.
        if run is None or not token_matches(token, run.token_digest):
            raise NOT_THE_TOKEN.refusal(run_id=run_id)
        self._rule("join", run)
        if client == run.client:
            raise OPENER_JOINS.refusal(run_id=run_id)
        worker = run.workers.get(client)
        if worker is not None and worker.left_at is None:
            return run, worker, False
        taken = {w.name for w in run.workers.values() if w.client != client}
        if worker is None and len(run.workers) >= run.worker_slots:
            raise SLOTS_TAKEN.refusal(run_id=run_id, slots=run.worker_slots, taken=", ".join(sorted(taken)))
        name = name or (worker.name if worker is not None else f"worker-{len(run.workers) + 1}")
        if name in taken or name == run.owner:
            raise NAME_TAKEN.refusal(run_id=run_id, name=name)
        now = self._clock()
        self._book.touch(run)
        samples = worker.samples if worker is not None else 0  # a worker that comes back keeps its count
        run.workers[client] = Worker(name, client, now, now, samples)
        return run, run.workers[client], True

    def leave(self, request: Args, client: str) -> tuple[Run, Worker, bool]:
        """An input worker is done feeding the run (it is reported LEFT, never LOST). Returns
        (run, worker, changed)."""
        run_id = request.run_id
        run = self._book.find(run_id)
        worker = run.workers.get(client) if run is not None else None
        if worker is None:
            self.get(run_id, client)  # NOT_FOUND, or another client's run
            raise NOT_A_WORKER.refusal(run_id=run_id)
        if worker.left_at is not None:
            return run, worker, False
        self._rule("leave", run)
        self._book.touch(run)
        run.workers[client] = worker.gone(self._clock())
        return run, run.workers[client], True

    def close(self, request: Args, client: str) -> tuple[Run, bool]:
        """End the run; with a `reason` the runtime gives up and the run ends ABORTED.
        Returns (run, changed)."""
        run = self.get(request.run_id, client)
        rule = self._rule("close", run)
        if isinstance(rule, Already):
            return run, False
        if request.reason is not None:
            self._end(run, RunStatus.ABORTED, request.reason, "runtime")
        else:
            self._end(run, RunStatus.CLOSED, None)
        return run, True

    def abort(self, request: Args) -> tuple[Run, bool]:
        """Abort a run whoever holds it (admins), for the request's `reason`. Returns (run,
        changed); with `dry_run`, what it would be, changing nothing."""
        run = self.get(request.run_id)
        rule = self._rule("abort", run)
        if isinstance(rule, Already) or request.dry_run:
            return run, not isinstance(rule, Already)
        self._end(run, RunStatus.ABORTED, request.reason, "admin")
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
        """Finish programming and abort a run whose lease lapsed or whose time limit passed, if
        their time has come."""
        run = self.holder
        if run is None:
            return False
        now = self._clock()
        changed = False
        if run.fabric is Fabric.PROGRAMMING and now >= run.programming_until:
            self._finish_programming(run)
            changed = True
        overdue = run.overdue(now)
        if overdue is not None:
            self._end(run, RunStatus.ABORTED, *overdue)
            changed = True
        return changed

    # -- internals -----------------------------------------------------------------------------

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
        run.end(status, reason, fault, now, performance_record(run, now))
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
