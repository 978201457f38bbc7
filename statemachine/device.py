"""The device: one CS-2's lifecycle, execution mode, runs and Slurm job, on an injected clock.

This class is the model's only door. Everything csd asks of the model is a method here (the runs
too: the run requests in statemachine/runs.py and their book, statemachine/run_book.py, are the
device's own), answers are plain data (the
wire's dicts, never a live object of the model), and every change can be made a transaction with
`change()` (statemachine/change.py), undone as a whole when it is refused or cannot be saved.

The rules are data (statemachine/lifecycle_rules.py for the lifecycle, statemachine/run_rules.py
for runs, statemachine/faults/rules.py for faults); the device looks each request up and applies
what it finds. Its faults are a collaborator, statemachine/faults/injector.py, which it calls and
which knows the device only as a `FaultHost`; the device's fault methods stay here (one door).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Callable, Iterable

from transitions import Machine

from csadmin.errors import TransitionFailed
from csadmin.states import PENDING_STATES, ExecMode, Health, Lifecycle

from .change import Change
from .device_runs import DeviceRuns
from .defaults import EVENTS_IN_MEMORY, KEEP_RUNS, SERIAL, Timings
from .events import Event, EventLog
from .faults import Transition
from .faults.injector import FaultInjector
from .faults.state import FaultState
from .lifecycle_rules import (
    HEALTH, LIFECYCLE_TRANSITIONS, PENDING_TRANSITION, REQUEST_RULES, SET_EXECMODE_EVENTS, SETTLED_EVENTS,
)
from .programs import RunMode
from .rules import Already, Refuse
from .run_book import RunBook
from .runs import Runs
from .slurm_jobs import SlurmJob, begin_job, end_job

A, S = Lifecycle.ACTIVE, Lifecycle.STANDBY
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
        self.configured_mode = ExecMode.PIPELINED
        self.active_mode = ExecMode.PIPELINED
        self.pending_until: int | None = None
        self.slurm_job: SlurmJob | None = None  # the Slurm job the wafer is allocated to (slurm_jobs.py)
        self.machine = Machine(
            model=self,
            states=[s.value for s in Lifecycle],
            transitions=LIFECYCLE_TRANSITIONS,
            initial=A.value,
            auto_transitions=False,
        )
        # Runs and the fabric (statemachine/runs.py); their history is kept apart from snapshot().
        self._run_book = RunBook(keep_runs)
        self._runs = Runs(clock, self.events, timings, self._run_book)
        self._fault_state = FaultState()  # the faults present and the scenario (statemachine/faults/state.py)
        self._faults = FaultInjector(self._fault_state, clock, self._emit, self._runs.abort_holder, host=self)
        self._run_requests = DeviceRuns(self._runs, self._faults, clock, host=self)

    # -- reading -----------------------------------------------------------------------------

    @property
    def lifecycle(self) -> Lifecycle:
        return Lifecycle(self.state)

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
        return {
            "execmode": self.configured_mode.value,
            "activeExecmode": self.active_mode.value,
            "takesEffectOnActivate": self.configured_mode is not self.active_mode,
        }

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

    # -- requests ----------------------------------------------------------------------------

    def _rule(self, request: str):
        rule = REQUEST_RULES[(request, self.lifecycle)]
        if isinstance(rule, Refuse):
            raise rule.refusal()
        return rule

    def _emit(self, type_: str, now: int, origin: dict | None, **details) -> None:
        # `by` names who asked (a request's caller), so a console can tell its own events
        # from other clients'; events of timed completions have no `by`.
        if origin is not None:
            details["by"] = origin
        self.events.emit(type_, now, **details)

    def standby(self, force: bool = False, origin: dict | None = None, dry_run: bool = False) -> dict:
        """Ramp down. While a run holds the fabric this is refused as BUSY, unless `force`,
        which aborts the run first (its owner sees why on its next call and in the events)."""
        rule = self._rule("standby")
        if isinstance(rule, Already):
            return self._result(rule.message, changed=False, dry_run=dry_run)
        if self._runs.holder is not None and not force:
            holder = self._runs.holder.run_id
            raise self._runs.busy_error(
                "the system cannot go to standby",
                f"Wait for it to close, or go to standby anyway with `system standby --force`, "
                f"which aborts {holder}; an admin can also abort it first (`cs runs abort {holder}`).",
            )
        if dry_run:
            return self._result("System would go to STANDBY.", changed=True, dry_run=True)
        if self._runs.holder is not None:
            self._runs.abort_holder("system standby --force (an admin put the system in standby)", "standby_forced")
        now = self._clock()
        self._emit("EventStandbyIssued", now, origin)
        self.begin_standby()
        self.pending_until = now + self._faults.transition_ms(Transition.STANDBY, self.timings.standby_ms)
        self._emit("EventPendingStandby", now, origin, expectedCompletion=now + self.timings.standby_ms)
        return self._result("System is going to STANDBY.", changed=True)

    def activate(self, origin: dict | None = None, dry_run: bool = False) -> dict:
        rule = self._rule("activate")
        if isinstance(rule, Already):
            return self._result(rule.message, changed=False, dry_run=dry_run)
        self._faults.refuse_if_blocked("activate", "the system cannot activate")
        if dry_run:
            return self._result(f"System would activate in {self.configured_mode.value}.", changed=True, dry_run=True)
        now = self._clock()
        self._emit("EventActivateIssued", now, origin, execmode=self.configured_mode.value)
        self.begin_activate()
        self.pending_until = now + self._faults.transition_ms(Transition.ACTIVATE, self.timings.activate_ms)
        self._emit(
            "EventPendingActive", now, origin, execmode=self.configured_mode.value,
            expectedCompletion=now + self.timings.activate_ms,
        )
        return self._result(f"System is activating in {self.configured_mode.value}.", changed=True)

    def setup_execmode(self, mode: ExecMode, origin: dict | None = None, dry_run: bool = False) -> dict:
        self._rule("execmode_setup")
        if mode is self.configured_mode:
            return self._result(f"Execution mode is already configured as {mode.value}.", changed=False, dry_run=dry_run)
        if dry_run:
            return self._result(f"Execution mode would be configured as {mode.value}.", changed=True, dry_run=True)
        now = self._clock()
        self._emit("EventConfigOpIssued", now, origin, op="execmode", execmode=mode.value)
        armed = self._faults.armed(Transition.EXECMODE)
        if armed is not None:
            self._faults.transition_failed(armed, now, origin, execmode=mode.value)
            raise TransitionFailed(
                f"Setting the execution mode to {mode.value} failed: {armed.fault.summary} (injected fault "
                f"{armed.name}); the execution mode is still {self.configured_mode.value}.",
                f"Clear it (`cs system fault clear {armed.name}`) or retry: a successful change clears it.",
                fault=armed.name,
            )
        self.configured_mode = mode
        self._emit(SET_EXECMODE_EVENTS[mode], now, origin, execmode=mode.value)
        self._emit("EventConfigOpCompleted", now, origin, op="execmode", execmode=mode.value)
        self._faults.transition_succeeded(Transition.EXECMODE, now)
        return self._result(
            f"Execution mode configured as {mode.value}; it takes effect on `system activate`.", changed=True
        )

    # -- time --------------------------------------------------------------------------------

    def advance(self) -> bool:
        """Complete whatever is due: faults injected, cleared or lapsing on their schedule, the
        pending transition (or its failure), the fabric's programming, a lapsed lease. Returns
        whether anything changed."""
        changed = self._faults.fire_due()
        changed = self._runs.advance() or changed
        if self.pending_until is None or self._clock() < self.pending_until:
            return changed
        self._complete_transition(recovered=False)
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

    def _complete_transition(self, recovered: bool) -> None:
        """The pending transition's time has come (or csd restarted during it: `recovered`). A
        fault firing on it breaks it: the system goes where the failure leads and the fault is
        active. Otherwise it settles, with its events, and the faults it had left active are over."""
        transition = PENDING_TRANSITION[self.lifecycle]
        now = self._clock()
        self.pending_until = None
        breaking = self._faults.firing(transition)
        if breaking is not None:
            self.fail_transition()
            self._faults.transition_failed(breaking, now, None, recovered=recovered)
            return
        self.settle()
        details = {"recovered": recovered}
        if self.lifecycle is A:
            self.active_mode = self.configured_mode  # the system "reboots" into the configured mode
            details = {"execmode": self.active_mode.value, **details}
        for event_type in SETTLED_EVENTS[self.lifecycle]:
            self.events.emit(event_type, now, **details)
        self._faults.transition_succeeded(transition, now)

    def drop_to_standby(self, now: int, origin: dict | None, **details) -> None:
        """STANDBY at once, without the ramp (a fault's effect; FaultHost): the pending transition,
        if any, is dropped, and the settled events say why (`details`)."""
        self.pending_until = None
        self.emergency_standby()
        for event_type in SETTLED_EVENTS[S]:
            self._emit(event_type, now, origin, **details)

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
        return {**self._result(message, changed, dry_run), "systemHealth": self.health.value,
                "activeFaults": self.faults()}

    def _result(self, message: str, changed: bool, dry_run: bool = False) -> dict:
        result = {
            "message": message,
            "changed": changed,
            "state": self.lifecycle.value,
            "pendingUntil": self.pending_until,
        }
        if dry_run:
            result["dryRun"] = True
        return result

    # -- transactions and persistence --------------------------------------------------------

    def change(self) -> Change:
        """A transaction on the model: `with device.change() as change:` collects the events
        emitted (`change.events`) and the runs to write (`change.dirty_runs()`), and undoes all
        of it if the block raises. Changes nest (statemachine/change.py)."""
        return Change(self.events, self._run_book, _OwnFields(self), self._fault_state)

    def snapshot(self) -> dict:
        """The device's own state as JSON-ready data, for the store (events and runs are kept
        apart: they have their own tables)."""
        return {
            "serial": self.serial,
            "state": self.lifecycle.value,
            "configuredExecmode": self.configured_mode.value,
            "activeExecmode": self.active_mode.value,
            "pendingUntil": self.pending_until,
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
                self._complete_transition(recovered=True)
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
        self.configured_mode = ExecMode(snap["configuredExecmode"])
        self.active_mode = ExecMode(snap["activeExecmode"])
        self.pending_until = snap.get("pendingUntil")
        job = snap.get("slurmJob")  # absent in stores written before the Slurm integration
        self.slurm_job = SlurmJob.from_dict(job) if job else None
        self.machine.set_state(Lifecycle(snap["state"]).value)
        self._fault_state.restore(snap.get("faults"))  # absent in stores written before faults


class _OwnFields:
    """The device's own fields as a part of a change: a handful of values, kept whole."""

    def __init__(self, device: Device):
        self._device = device

    def savepoint(self) -> tuple:
        d = self._device
        return d.lifecycle, d.configured_mode, d.active_mode, d.pending_until, d.slurm_job

    def rollback(self, savepoint: tuple) -> None:
        d = self._device
        state, d.configured_mode, d.active_mode, d.pending_until, d.slurm_job = savepoint
        d.machine.set_state(state.value)

    def release(self, savepoint: tuple) -> None:
        pass
