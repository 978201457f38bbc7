"""The device: one CS-2's lifecycle, execution mode, runs and Slurm job, on an injected clock.

This class is the model's only door. Everything csd asks of the model is a method here, answers
are plain data (the wire's dicts, never a live object of the model), and every change can be made
a transaction with `change()` (statemachine/change.py), undone as a whole when it is refused or
cannot be saved.

Behind the door, each job is a collaborator with an explicit interface, which the device builds
and calls: the lifecycle and execution mode (statemachine/lifecycle.py, completing a pending
transition top to bottom), the run requests (statemachine/device_runs.py over statemachine/runs.py
and the book of runs, statemachine/run_book.py), the faults (statemachine/faults/injector.py, which
knows the device only as a `FaultHost`) and the Slurm job's rules (statemachine/slurm_jobs.py). The
rules themselves are data (lifecycle_rules.py, run_rules.py, faults/rules.py).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Callable, Iterable

from csadmin.shared.programs import RunMode
from csadmin.shared.states import PENDING_STATES, ExecMode, Health, Lifecycle

from .change import Change
from .defaults import EVENTS_IN_MEMORY, KEEP_RUNS, SERIAL, Timings
from .device_runs import DeviceRuns
from .events import Event, EventLog
from .faults.injector import FaultInjector
from .faults.state import FaultState
from .lifecycle import SystemLifecycle
from .lifecycle_rules import HEALTH
from .run_book import RunBook
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
        self._run_book = RunBook(keep_runs)
        self._runs = Runs(clock, self.events, timings, self._run_book)
        self._fault_state = FaultState()  # the faults present and the scenario (statemachine/faults/state.py)
        self._faults = FaultInjector(self._fault_state, clock, self._emit, self._runs.abort_holder, host=self)
        self._system = SystemLifecycle(clock, timings, self._runs, self._faults, self._emit)
        self._run_requests = DeviceRuns(self._runs, self._faults, clock, host=self)

    # -- reading -----------------------------------------------------------------------------

    @property
    def lifecycle(self) -> Lifecycle:
        return self._system.lifecycle

    @property
    def configured_mode(self) -> ExecMode:
        return self._system.configured_mode

    @property
    def active_mode(self) -> ExecMode:
        """The execution mode the system runs in: the configured one as of its last activation."""
        return self._system.active_mode

    @property
    def pending_until(self) -> int | None:
        """When the pending transition completes (ms), or None."""
        return self._system.pending_until

    @property
    def health(self) -> Health:
        """The lifecycle's health, or the worst active fault's if that ranks higher."""
        return self._faults.health(HEALTH[self.lifecycle])

    def faults(self) -> list[dict]:
        """Every fault present, as `system.show` carries them (`activeFaults`; FaultInjector.listing)."""
        return self._faults.listing()

    def scenario(self) -> dict | None:
        """The loaded fault scenario, in words (FaultInjector.scenario), or None."""
        return self._faults.scenario()

    def now(self) -> int:
        """The model's time (ms), from its injected clock."""
        return self._clock()

    def show(self) -> dict:
        return {
            "systemType": "cs2",
            "serial": self.serial,
            "state": self.lifecycle.value,
            "systemHealth": self.health.value,
            "activeExecmode": self.active_mode.value,
            "configuredExecmode": self.configured_mode.value,
            "pendingUntil": self.pending_until,
            "runHolder": self._run_requests.holder(),
            "slurmJob": self.slurm_job.to_dict() if self.slurm_job else None,
            "activeFaults": self.faults(),
            "seq": self.events.last_seq,
            "time": self._clock(),
        }

    def execmode(self) -> dict:
        return self._system.execmode()

    def show_run(self, run_id: str) -> dict:
        """One kept run, open or ended (DeviceRuns.show)."""
        return self._run_requests.show(run_id)

    def list_runs(self, max_count: int | None = None) -> dict:
        """The kept runs, newest first, and the one holding the fabric (DeviceRuns.listing)."""
        return self._run_requests.listing(max_count)

    @property
    def revision(self) -> tuple[int, int]:
        """Changes whenever what `show()` reports may have changed: the newest event's seq, and a
        count of the fault changes that emit no event (a fault armed or scheduled, a scenario
        loaded). A cache of `show()` (or of the metrics' view) is current while this is unchanged."""
        return self.events.last_seq, self._fault_state.revision

    def fabric(self) -> str:
        """The wafer's fabric: the holder's, or UNPROGRAMMED when no run holds it."""
        return self._runs.fabric().value

    def next_deadline(self) -> int | None:
        """When something timed is next due (ms): the pending transition's completion, the
        fabric's programming completion or the holder's lease expiry; for the daemon's timer."""
        deadlines = [d for d in (self.pending_until, self._runs.next_deadline(), self._fault_state.next_deadline())
                     if d is not None]
        return min(deadlines) if deadlines else None

    # -- the lifecycle: statemachine/lifecycle.py (its methods say the contracts) -------------

    def _emit(self, type_: str, now: int, origin: dict | None, **details) -> None:
        # `by` names who asked (a request's caller), so a console can tell its own events
        # from other clients'; events of timed completions have no `by`.
        if origin is not None:
            details["by"] = origin
        self.events.emit(type_, now, **details)

    def standby(self, force: bool = False, origin: dict | None = None, dry_run: bool = False) -> dict:
        return self._system.standby(force, origin, dry_run)

    def activate(self, origin: dict | None = None, dry_run: bool = False) -> dict:
        return self._system.activate(origin, dry_run)

    def setup_execmode(self, mode: ExecMode, origin: dict | None = None, dry_run: bool = False) -> dict:
        return self._system.setup_execmode(mode, origin, dry_run)

    def drop_to_standby(self, now: int, origin: dict | None, **details) -> None:
        """STANDBY at once, without the ramp (FaultHost; SystemLifecycle.drop_to_standby)."""
        self._system.drop_to_standby(now, origin, **details)

    # -- time --------------------------------------------------------------------------------

    def advance(self) -> bool:
        """Complete whatever is due: faults injected, cleared or lapsing on their schedule, the
        pending transition (or its failure), the fabric's programming, a lapsed lease. Returns
        whether anything changed."""
        changed = self._faults.fire_due()
        changed = self._runs.advance() or changed
        if not self._system.is_due():
            return changed
        self._system.complete(recovered=False)
        return True

    # -- runs: statemachine/device_runs.py answers them (its methods say the contracts) --------

    def open_run(self, owner: str, client: str, mode: RunMode, lease_ms: int | None = None, worker_slots: int = 0,
                 token_digest: str | None = None, model_dir: str | None = None) -> dict:
        return self._run_requests.open(owner, client, mode, lease_ms, worker_slots, token_digest, model_dir)

    def join_run(self, run_id: str, client: str, token: str, name: str | None = None) -> dict:
        return self._run_requests.join(run_id, client, token, name)

    def leave_run(self, run_id: str, client: str) -> dict:
        return self._run_requests.leave(run_id, client)

    def program_run(self, run_id: str, client: str, program: dict, worker_slots: int = 0,
                    token_digest: str | None = None) -> dict:
        return self._run_requests.program(run_id, client, program, worker_slots, token_digest)

    def stream(self, run_id: str, client: str, samples: int) -> dict:
        return self._run_requests.stream(run_id, client, samples)

    def heartbeat(self, run_id: str, client: str) -> dict:
        return self._run_requests.heartbeat(run_id, client)

    def close_run(self, run_id: str, client: str, reason: str | None = None) -> dict:
        return self._run_requests.close(run_id, client, reason)

    def abort_run(self, run_id: str, reason: str, dry_run: bool = False) -> dict:
        return self._run_requests.abort(run_id, reason, dry_run)

    # -- the Slurm job holding the wafer: statemachine/slurm_jobs.py has the rules -------------

    def begin_slurm_job(self, job_id: str, user: str) -> dict:
        """Slurm gave the wafer to `job_id` (slurm_jobs.begin_job)."""
        self.slurm_job, reply = begin_job(self.slurm_job, self._runs, job_id, user, self._clock())
        return reply

    def end_slurm_job(self, job_id: str) -> dict:
        """Slurm job `job_id` ended (slurm_jobs.end_job)."""
        self.slurm_job, reply = end_job(self.slurm_job, self._runs, job_id)
        return reply

    # -- faults (statemachine/faults/injector.py does the work) -------------------------------

    def inject_fault(self, name: str, origin: dict | None = None, for_ms: int | None = None,
                     after_ms: int | None = None, dry_run: bool = False) -> dict:
        """Inject the fault `name`: now, or `after_ms` from now; it clears `for_ms` after it is
        injected (FaultInjector.inject)."""
        return self._fault_result(*self._faults.inject(name, origin, for_ms, after_ms, dry_run), dry_run)

    def clear_fault(self, name: str | None, origin: dict | None = None, dry_run: bool = False) -> dict:
        """Clear the fault `name`, or every fault (None) (FaultInjector.clear)."""
        return self._fault_result(*self._faults.clear(name, origin, dry_run), dry_run)

    def load_scenario(self, text: str, source: str, origin: dict | None = None, dry_run: bool = False) -> dict:
        """Load a fault scenario from its TOML `text` (FaultInjector.load_scenario); the result
        lists its steps."""
        message, changed, steps = self._faults.load_scenario(text, source, origin, dry_run)
        return {**self._fault_result(message, changed, dry_run), "steps": steps}

    def _fault_result(self, message: str, changed: bool, dry_run: bool = False) -> dict:
        return {**self._system.result(message, changed, dry_run), "systemHealth": self.health.value,
                "activeFaults": self.faults()}

    # -- transactions and persistence --------------------------------------------------------

    def change(self) -> Change:
        """A transaction on the model: `with device.change() as change:` collects the events
        emitted (`change.events`) and the runs to write (`change.dirty_runs()`), and undoes all
        of it if the block raises. Changes nest (statemachine/change.py)."""
        return Change(self.events, self._run_book, self._system, _SlurmJobField(self), self._fault_state)

    def snapshot(self) -> dict:
        """The device's own state as JSON-ready data, for the store (events and runs are kept
        apart: they have their own tables)."""
        return {
            "serial": self.serial,
            **self._system.snapshot(),
            "slurmJob": self.slurm_job.to_dict() if self.slurm_job else None,
            "faults": self._fault_state.snapshot(),
        }

    def has_unsaved_runs(self) -> bool:
        """Whether runs changed since they were last written (hot ops leave them so)."""
        return self._run_book.has_unsaved

    def unsaved_runs(self) -> list[dict]:
        """The records of the runs changed since they were last written."""
        return self._run_book.unsaved()

    def runs_saved(self, records: list[dict]) -> None:
        """These run records (from unsaved_runs() or a change's dirty_runs()) are in the store."""
        self._run_book.saved(records)

    def recover(self, snapshot: dict | None, events: Iterable[Event], runs: list[dict]) -> Recovery:
        """At start, before csd answers anyone: load what the store kept (`snapshot` is None
        for a new system; `events` and `runs` oldest first), roll forward a transition a stop
        interrupted, whatever the time, and abort the run left open (its runtime's calls went
        unanswered, so it cannot carry on). Returns what it did and what to write."""
        self.events.restore(events)
        if snapshot is not None:
            self._restore(snapshot)
        self._run_book.load(runs)
        with self.change() as change:
            rolled_forward = None
            if self.lifecycle in PENDING_STATES:
                self._system.complete(recovered=True)
                rolled_forward = self.lifecycle
            aborted = self._runs.abort_holder(RESTART_REASON, "daemon_restarted")
            # What fell due while csd was down, in time order: a `--for` that expired clears, an
            # `--after` (or a scenario step) that came due is injected.
            self._faults.fire_due()
        return Recovery(
            fresh=snapshot is None, rolled_forward=rolled_forward,
            aborted_run=self._run_requests.record(aborted) if aborted is not None else None,
            events=change.events, runs=change.dirty_runs(),
        )

    def _restore(self, snap: dict) -> None:
        self.serial = snap.get("serial", self.serial)
        self._system.restore(snap)
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
