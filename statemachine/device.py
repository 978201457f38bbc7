"""The device: one CS-2's lifecycle, execution mode, runs and Slurm job, on an injected clock.

This class is the model's only door. Everything csd asks of the model is a method here, answers
are plain data (the wire's dicts, never a live object of the model), and every change can be made
a transaction with `change()` (statemachine/change.py), undone as a whole when it is refused or
cannot be saved.

Behind the door, each job is a collaborator with an explicit interface, which the device builds;
csd asks the requests of the parts that answer them, each taking the op's arguments as one record
(csadmin/shared/opargs.py `Args`, built once from the op's declaration) and the caller's facts:

    device.system   the lifecycle and execution mode (statemachine/lifecycle.py): standby,
                    activate, setup_execmode, execmode(), and its state (configured_mode, ...)
    device.runs     the run requests (statemachine/run_requests.py over statemachine/runs.py):
                    open, program, stream, heartbeat, join, leave, close, abort, show, listing
    device.faults   the faults (statemachine/faults/injector.py, which knows the device only as a
                    `FaultHost`): listing() and scenario(); their requests are the device's own
                    (inject_fault, clear_fault, load_scenario: the answer says the health too)
    device.run_book the book of runs (statemachine/run_book.py): what is unsaved, and saved()

The device itself keeps what it composes from them — show(), health, revision, the timers
(next_deadline, advance), the Slurm job (statemachine/slurm_jobs.py has the rules), transactions,
snapshot and recovery — and no method that only hands a request on. The rules themselves are data
(lifecycle_rules.py, run_rules.py, faults/rules.py).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Callable, Iterable

from csadmin.shared.opargs import Args
from csadmin.shared.states import PENDING_STATES, Health, Lifecycle

from .change import Change
from .defaults import EVENTS_IN_MEMORY, KEEP_RUNS, SERIAL, Timings
from .events import Event, EventLog
from .faults.injector import FaultInjector
from .faults.state import FaultState
from .lifecycle import SystemLifecycle
from .lifecycle_rules import HEALTH
from .run import Fabric
from .run_book import RunBook
from .run_requests import RunRequests
from .runs import Runs
from .slurm_jobs import SlurmJob, begin_job, end_job

RESTART_REASON = "daemon restarted"  # why a run left open when csd stopped is aborted at start


@dataclass
class Recovery:
    """What Device.recover() found and did: csd commits `events` and `runs` before it serves."""

    fresh: bool  # nothing was stored: a new system
    rolled_forward: Lifecycle | None  # where an interrupted transition settled
    aborted_run: dict | None  # the run left open when csd stopped, now aborted
    events: list[Event]
    runs: list[dict]

    @property
    def needs_commit(self) -> bool:
        return self.fresh or bool(self.events or self.runs)


class Device:
    """One CS-2. Every public method that changes something returns a result dict and appends
    its events to `self.events`; refusals raise a `csadmin.errors` class (code, message, next
    step). With `dry_run=True` they apply the same rules and change nothing: the refusal they
    would raise, or the result with `changed` saying whether they would act (what a console
    checks before it asks for confirmation)."""

    def __init__(
        self,
        clock: Callable[[], int],
        timings: Timings = Timings(),
        serial: str = SERIAL,
        events_in_memory: int = EVENTS_IN_MEMORY,
        keep_runs: int = KEEP_RUNS,
    ):
        self._clock = clock
        self.timings = timings
        self.serial = serial
        self.events = EventLog(events_in_memory)  # the newest events; it changes only through this class
        self.slurm_job: SlurmJob | None = None  # the Slurm job the wafer is allocated to (slurm_jobs.py)
        # Runs and the fabric; their history is kept apart from snapshot().
        self.run_book = RunBook(keep_runs)
        self._runs = Runs(clock, self.events, timings, self.run_book)
        self._fault_state = FaultState()  # the faults present and the scenario (statemachine/faults/state.py)
        self.faults = FaultInjector(self._fault_state, clock, self._emit, self._runs.abort_holder, host=self)
        self.system = SystemLifecycle(clock, timings, self._runs, self.faults, self._emit)
        self.runs = RunRequests(self._runs, self.faults, clock, system=self.system, host=self)

    # -- reading -----------------------------------------------------------------------------

    @property
    def lifecycle(self) -> Lifecycle:
        """The lifecycle state (FaultHost: what the faults read of the device)."""
        return self.system.lifecycle

    @property
    def health(self) -> Health:
        """The lifecycle's health, or the worst active fault's if that ranks higher."""
        return self.faults.health(HEALTH[self.system.lifecycle])

    def now(self) -> int:
        """The model's time (ms), from its injected clock."""
        return self._clock()

    def show(self) -> dict:
        system = self.system
        return {
            "systemType": "cs2",
            "serial": self.serial,
            "state": system.lifecycle.value,
            "systemHealth": self.health.value,
            "activeExecmode": system.active_mode.value,
            "configuredExecmode": system.configured_mode.value,
            "pendingUntil": system.pending_until,
            "runHolder": self.runs.holder(),
            "slurmJob": self.slurm_job.to_dict() if self.slurm_job else None,
            "activeFaults": self.faults.listing(),
            "seq": self.events.last_seq,
            "time": self._clock(),
        }

    @property
    def revision(self) -> tuple[int, int]:
        """Changes whenever what `show()` reports may have changed: the newest event's seq, and a
        count of the fault changes that emit no event (a fault armed or scheduled, a scenario
        loaded). A cache of `show()` (or of the metrics' view) is current while this is unchanged."""
        return self.events.last_seq, self._fault_state.revision

    def fabric(self) -> str:
        """The wafer's fabric: the holder's, or UNPROGRAMMED when no run holds it."""
        holder = self.run_book.holder
        return (holder.fabric if holder is not None else Fabric.UNPROGRAMMED).value

    def next_deadline(self) -> int | None:
        """When something timed is next due (ms): the pending transition's completion, the
        fabric's programming completion or the holder's lease expiry; for the daemon's timer."""
        deadlines = [d for d in (self.system.pending_until, self._runs.next_deadline(), self._fault_state.next_deadline())
                     if d is not None]
        return min(deadlines) if deadlines else None

    def _emit(self, type_: str, now: int, origin: dict | None, **details) -> None:
        # `by` names who asked (a request's caller), so a console can tell its own events
        # from other clients'; events of timed completions have no `by`.
        if origin is not None:
            details["by"] = origin
        self.events.emit(type_, now, **details)

    def drop_to_standby(self, now: int, origin: dict | None, **details) -> None:
        """STANDBY at once, without the ramp (FaultHost: a fault's effect; SystemLifecycle.drop_to_standby)."""
        self.system.drop_to_standby(now, origin, **details)

    # -- time --------------------------------------------------------------------------------

    def advance(self) -> bool:
        """Complete whatever is due: faults injected, cleared or lapsing on their schedule, the
        pending transition (or its failure), the fabric's programming, a lapsed lease. Returns
        whether anything changed."""
        changed = self.faults.fire_due()
        changed = self._runs.advance() or changed
        if not self.system.is_due():
            return changed
        self.system.complete(recovered=False)
        return True

    # -- the Slurm job holding the wafer: statemachine/slurm_jobs.py has the rules -------------

    def begin_slurm_job(self, request: Args) -> dict:
        """slurm.job.begin: Slurm gave the wafer to `job_id` of `user` (slurm_jobs.begin_job)."""
        self.slurm_job, reply = begin_job(self.slurm_job, self._runs, request.job_id, request.user, self._clock())
        return reply

    def end_slurm_job(self, request: Args) -> dict:
        """slurm.job.end: Slurm job `job_id` ended (slurm_jobs.end_job)."""
        self.slurm_job, reply = end_job(self.slurm_job, self._runs, request.job_id)
        return reply

    # -- fault requests (statemachine/faults/injector.py does the work) ------------------------

    def inject_fault(self, request: Args, origin: dict | None = None) -> dict:
        """system.fault.inject (FaultInjector.inject), answered with the health it leaves."""
        return self._fault_result(*self.faults.inject(request, origin), request.dry_run)

    def clear_fault(self, request: Args, origin: dict | None = None) -> dict:
        """system.fault.clear (FaultInjector.clear), answered with the health it leaves."""
        return self._fault_result(*self.faults.clear(request, origin), request.dry_run)

    def load_scenario(self, request: Args, origin: dict | None = None) -> dict:
        """system.fault.scenario (FaultInjector.load_scenario); the answer lists its steps."""
        message, changed, steps = self.faults.load_scenario(request, origin)
        return {**self._fault_result(message, changed, request.dry_run), "steps": steps}

    def _fault_result(self, message: str, changed: bool, dry_run: bool = False) -> dict:
        return {**self.system.result(message, changed, dry_run), "systemHealth": self.health.value,
                "activeFaults": self.faults.listing()}

    # -- transactions and persistence --------------------------------------------------------

    def change(self) -> Change:
        """A transaction on the model: `with device.change() as change:` collects the events
        emitted (`change.events`) and the runs to write (`change.dirty_runs()`), and undoes all
        of it if the block raises. Changes nest (statemachine/change.py)."""
        return Change(self.events, self.run_book, self.system, _SlurmJobField(self), self._fault_state)

    def snapshot(self) -> dict:
        """The device's own state as JSON-ready data, for the store (events and runs are kept
        apart: they have their own tables)."""
        return {
            "serial": self.serial,
            **self.system.snapshot(),
            "slurmJob": self.slurm_job.to_dict() if self.slurm_job else None,
            "faults": self._fault_state.snapshot(),
        }

    def recover(self, snapshot: dict | None, events: Iterable[Event], runs: list[dict]) -> Recovery:
        """At start, before csd answers anyone: load what the store kept (`snapshot` is None
        for a new system; `events` and `runs` oldest first), roll forward a transition a stop
        interrupted, whatever the time, and abort the run left open (its runtime's calls went
        unanswered, so it cannot carry on). Returns what it did and what to write."""
        self.events.restore(events)
        if snapshot is not None:
            self._restore(snapshot)
        self.run_book.load(runs)
        with self.change() as change:
            rolled_forward = None
            if self.system.lifecycle in PENDING_STATES:
                self.system.complete(recovered=True)
                rolled_forward = self.system.lifecycle
            aborted = self._runs.abort_holder(RESTART_REASON, "daemon_restarted")
            # What fell due while csd was down, in time order: a `--for` that expired clears, an
            # `--after` (or a scenario step) that came due is injected.
            self.faults.fire_due()
        return Recovery(
            fresh=snapshot is None, rolled_forward=rolled_forward,
            aborted_run=self.runs.record(aborted) if aborted is not None else None,
            events=change.events, runs=change.dirty_runs(),
        )

    def _restore(self, snap: dict) -> None:
        self.serial = snap.get("serial", self.serial)
        self.system.restore(snap)
        job = snap.get("slurmJob")  # absent in stores written before the Slurm integration
        self.slurm_job = SlurmJob.from_dict(job) if job else None
        self._fault_state.restore(snap.get("faults"))  # absent in stores written before faults


class _SlurmJobField:
    """The device's Slurm job as a part of a change: one immutable value, kept whole."""

    def __init__(self, device: Device):
        self._device = device

    def savepoint(self) -> SlurmJob | None:
        return self._device.slurm_job

    def rollback(self, savepoint: SlurmJob | None) -> None:
        self._device.slurm_job = savepoint

    def release(self, savepoint: SlurmJob | None) -> None:
        pass
