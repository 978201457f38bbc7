"""The device: one CS-2's lifecycle, execution mode, runs and Slurm job, on an injected clock.

This class is the model's only door. Everything csd asks of the model is a method here (the runs
too: the book of runs in statemachine/runs.py is the device's own), answers are plain data (the
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
from .defaults import EVENTS_IN_MEMORY, KEEP_RUNS, SERIAL, Timings
from .events import Event, EventLog
from .faults import Transition
from .faults.injector import FaultInjector
from .faults.state import FaultState
from .lifecycle_rules import (
    HEALTH, LIFECYCLE_TRANSITIONS, PENDING_TRANSITION, REQUEST_RULES, SET_EXECMODE_EVENTS, SETTLED_EVENTS,
)
from csadmin.programs import RunMode
from .rules import Already, Refuse
from .run_rules import OPEN_RULES
from .runs import Runs
from .slurm_jobs import SlurmJob, ended_reason

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
        self._runs = Runs(clock, self.events, timings, keep_runs)
        self._fault_state = FaultState()  # the faults present and the scenario (statemachine/faults/state.py)
        self._faults = FaultInjector(self._fault_state, clock, self._emit, self._runs.abort_holder, host=self)

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
            "runHolder": self._runs.holder_summary(),
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
        """One kept run, open or ended (its performance so far while open)."""
        return self._runs.record(self._runs.get(run_id))

    def list_runs(self, max_count: int | None = None) -> dict:
        """The kept runs, newest first, and the one holding the fabric."""
        runs = self._runs
        return {"runs": [runs.record(r) for r in runs.listing(max_count)], "runHolder": runs.holder_summary()}

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

    # -- runs (statemachine/runs.py keeps the book, statemachine/run_rules.py the rules) -----

    def open_run(
        self, owner: str, client: str, mode: RunMode, lease_ms: int | None = None, worker_slots: int = 0,
        token_digest: str | None = None, model_dir: str | None = None,
    ) -> dict:
        """Open a run holding the fabric, owned by `client`; only when ACTIVE, BUSY while
        another run holds it. With `worker_slots`, that many input workers may join it with the
        token whose digest (workers.token_digest) is `token_digest`; `model_dir` is the
        runtime's artifact directory, kept for people. Returns the run's record."""
        self._faults.refuse_if_blocked("open", "no run can be opened")
        rule = OPEN_RULES[self.lifecycle]
        if isinstance(rule, Refuse):
            raise rule.refusal()
        job = self.slurm_job.job_id if self.slurm_job else None
        run = self._runs.open(owner, client, mode, lease_ms, job, worker_slots, token_digest, model_dir)
        self._faults.run_opened(run.opened_at)
        return self._runs.record(run)

    def join_run(self, run_id: str, client: str, token: str, name: str | None = None) -> dict:
        """Admit `client` as an input worker of the run (statemachine/workers.py): from now on it
        may stream and heartbeat, nothing else. PERMISSION_DENIED for a wrong token (or a run
        that admits no workers), BUSY once every slot is taken. Returns the run's record,
        `worker` (the name it feeds under) and `changed` (False: it had joined already)."""
        run, worker, changed = self._runs.join(run_id, client, token, name)
        return {**self._runs.record(run), "worker": worker.name, "changed": changed}

    def leave_run(self, run_id: str, client: str) -> dict:
        """An input worker is done feeding the run: it is reported LEFT, not LOST. Returns the
        run's record, `worker` and `changed` (False: it had left already)."""
        run, worker, changed = self._runs.leave(run_id, client)
        return {**self._runs.record(run), "worker": worker.name, "changed": changed}

    def program_run(
        self, run_id: str, client: str, program: dict, worker_slots: int = 0, token_digest: str | None = None
    ) -> dict:
        """Program the fabric of a run, once, with a descriptor checked by programs.parse_program;
        with `worker_slots`, the run admits input workers from now on, as with open_run.
        Returns the run's record (PROGRAMMING until `programmingUntil`)."""
        if self._runs.get(run_id, client).is_open:  # unknown, another's, ended: those say more
            self._faults.refuse_if_blocked("program", "the fabric cannot be programmed")
        return self._runs.record(self._runs.program(
            run_id, client, program, self.serial, self.active_mode, worker_slots, token_digest
        ))

    def stream(self, run_id: str, client: str, samples: int) -> dict:
        """Count samples fed to the programmed fabric by its opener (renewing the lease) or by
        one of its input workers (a hot op)."""
        run = self._runs.stream(run_id, client, samples)
        return {"runId": run.run_id, "status": run.status.value, "fabric": run.fabric.value,
                "totalSamples": run.total_samples, "leaseUntil": run.lease_until}

    def heartbeat(self, run_id: str, client: str) -> dict:
        """Renew the run's lease, or, from an input worker, say it is alive (a hot op)."""
        run = self._runs.heartbeat(run_id, client)
        return {"runId": run.run_id, "status": run.status.value, "fabric": run.fabric.value,
                "leaseUntil": run.lease_until}

    def close_run(self, run_id: str, client: str, reason: str | None = None) -> dict:
        """End the run and release the fabric; with `reason` it ends ABORTED (its runtime gave
        up). Returns its record and `changed` (False: it was already closed)."""
        run, changed = self._runs.close(run_id, client, reason)
        return {**self._runs.record(run), "changed": changed}

    def abort_run(self, run_id: str, reason: str, dry_run: bool = False) -> dict:
        """Abort a run whoever holds it (admins). Returns its record and `changed` (False: it
        was already aborted); with `dry_run`, what it would be, changing nothing."""
        run, changed = self._runs.abort(run_id, reason, dry_run=dry_run)
        return {**self._runs.record(run), "changed": changed, **({"dryRun": True} if dry_run else {})}

    # -- the Slurm job holding the wafer (statemachine/slurm_jobs.py) ---------------------------

    def begin_slurm_job(self, job_id: str, user: str) -> dict:
        """Slurm gave the wafer to `job_id` (its prolog says so): runs opened from now on carry it.
        A run that belongs to no Slurm job keeps the fabric (BUSY: Slurm cannot give away what
        someone outside it holds); a run an earlier job left behind (its epilog never came) is
        aborted, since Slurm gives the wafer to one job at a time. Repeating it changes nothing."""
        current, holder = self.slurm_job, self._runs.holder
        if current is not None and current.job_id == job_id:
            return {"message": f"Slurm job {job_id} already holds the wafer.", "changed": False,
                    "slurmJob": current.to_dict(), "abortedRun": None}
        if holder is not None and holder.slurm_job is None:
            raise self._runs.busy_error(f"Slurm job {job_id} cannot be given the wafer while a run outside Slurm holds it")
        aborted = None
        if holder is not None and holder.slurm_job != job_id:
            aborted = self._runs.abort_holder(ended_reason(holder.slurm_job), "slurm_job_ended").run_id
        self.slurm_job = SlurmJob(job_id, user, self._clock())
        message = f"Slurm job {job_id} ({user}) holds the wafer; runs opened from now on carry its id."
        if aborted:
            message += f" Run {aborted}, left by Slurm job {holder.slurm_job}, was aborted."
        return {"message": message, "changed": True, "slurmJob": self.slurm_job.to_dict(), "abortedRun": aborted}

    def end_slurm_job(self, job_id: str) -> dict:
        """Slurm job `job_id` ended (its epilog says so): abort the run it left holding the
        fabric (reason "slurm job J ended"), so the next job gets the wafer at once, and forget
        the job. Repeating it, or ending a job csd never heard of, changes nothing."""
        holder = self._runs.holder
        aborted = None
        if holder is not None and holder.slurm_job == job_id:
            aborted = self._runs.abort_holder(ended_reason(job_id), "slurm_job_ended").run_id
        forgot = self.slurm_job is not None and self.slurm_job.job_id == job_id
        if forgot:
            self.slurm_job = None
        if aborted:
            message = f"Slurm job {job_id} ended; its run {aborted} was aborted and the fabric is free."
        elif forgot:
            message = f"Slurm job {job_id} ended; it left no run holding the fabric."
        else:
            message = f"Slurm job {job_id} does not hold the wafer; nothing to do."
        return {"message": message, "changed": bool(aborted or forgot), "abortedRun": aborted}

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
        return Change(self.events, self._runs, _OwnFields(self), self._fault_state)

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
        return self._runs.has_unsaved

    def unsaved_runs(self) -> list[dict]:
        """The records of the runs changed since they were last written."""
        return self._runs.unsaved()

    def runs_saved(self, records: list[dict]) -> None:
        """These run records (from unsaved_runs() or a change's dirty_runs()) are in the store."""
        self._runs.saved(records)

    def recover(self, snapshot: dict | None, events: Iterable[Event], runs: list[dict]) -> Recovery:
        """At start, before csd answers anyone: load what the store kept (`snapshot` is None
        for a new system; `events` and `runs` oldest first), roll forward a transition a stop
        interrupted, whatever the time, and abort the run left open (its runtime's calls went
        unanswered, so it cannot carry on). Returns what it did and what to write."""
        self.events.restore(events)
        if snapshot is not None:
            self._restore(snapshot)
        self._runs.load(runs)
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
            aborted_run=self._runs.record(aborted) if aborted is not None else None,
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
