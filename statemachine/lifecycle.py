"""The system's lifecycle and execution mode: the requests that move them (standby, activate,
execution mode setup) and the timed completion of a pending transition, on an injected clock.

A collaborator of `Device` (statemachine/device.py), which keeps the door. It owns its fields —
the lifecycle state (a `transitions` machine on this object, from the table in
statemachine/lifecycle_rules.py), the configured and active execution modes, and when the pending
transition completes — and is a part of a change (statemachine/change.py). It reaches the rest of
the model only through what it is built with: the run requests' `holder`, `busy_error` and
`abort_holder` (statemachine/runs.py), the device's faults (statemachine/faults/injector.py) and
`emit`. A pending transition completes top to bottom in `complete()`.
"""

from __future__ import annotations

from typing import Callable

from transitions import Machine

from csadmin.errors import TransitionFailed
from csadmin.shared.opargs import Args
from csadmin.shared.states import ExecMode, Lifecycle

from .defaults import Timings
from .faults import Transition
from .faults.injector import Emit, FaultInjector
from .faults.rules import Blocked
from .lifecycle_rules import LIFECYCLE_TRANSITIONS, PENDING_TRANSITION, REQUEST_RULES, SET_EXECMODE_EVENTS, SETTLED_EVENTS
from .rules import Already, Refuse
from .runs import Runs

A, S = Lifecycle.ACTIVE, Lifecycle.STANDBY


class _Fsm:
    """The `transitions` machine's model: the lifecycle state and the machine's triggers, kept
    inside SystemLifecycle so that none is in reach of whoever holds the lifecycle (csd, as
    `device.system`): the state moves only by a request's rule or a timed completion."""

    state: str


class SystemLifecycle:
    """The lifecycle of one CS-2. Requests return a result dict (`result()`), refusals raise a
    `csadmin.errors` class; with `dry_run=True` they apply the same rules and change nothing."""

    def __init__(self, clock: Callable[[], int], timings: Timings, runs: Runs, faults: FaultInjector, emit: Emit):
        self._clock = clock
        self._timings = timings
        self._runs = runs
        self._faults = faults
        self._emit = emit
        self.configured_mode = ExecMode.PIPELINED
        self.active_mode = ExecMode.PIPELINED
        self.pending_until: int | None = None
        self._fsm = _Fsm()
        self._machine = Machine(
            model=self._fsm,
            states=[s.value for s in Lifecycle],
            transitions=LIFECYCLE_TRANSITIONS,
            initial=A.value,
            auto_transitions=False,
        )

    @property
    def lifecycle(self) -> Lifecycle:
        return Lifecycle(self._fsm.state)

    def execmode(self) -> dict:
        return {
            "execmode": self.configured_mode.value,
            "activeExecmode": self.active_mode.value,
            "takesEffectOnActivate": self.configured_mode is not self.active_mode,
        }

    def result(self, message: str, changed: bool, dry_run: bool = False) -> dict:
        """A request's answer: what happened, whether it changed anything, and where the lifecycle is."""
        result = {
            "message": message,
            "changed": changed,
            "state": self.lifecycle.value,
            "pendingUntil": self.pending_until,
        }
        if dry_run:
            result["dryRun"] = True
        return result

    # -- requests ----------------------------------------------------------------------------

    def _rule(self, request: str):
        rule = REQUEST_RULES[(request, self.lifecycle)]
        if isinstance(rule, Refuse):
            raise rule.refusal()
        return rule

    def standby(self, request: Args, origin: dict | None = None) -> dict:
        """system.standby: ramp down. While a run holds the fabric this is refused as BUSY, unless
        `force`, which aborts the run first (its owner sees why on its next call and in the
        events). `origin`: who asked (the events' `by`)."""
        force, dry_run = request.force, request.dry_run
        rule = self._rule("standby")
        if isinstance(rule, Already):
            return self.result(rule.message, changed=False, dry_run=dry_run)
        if self._runs.holder is not None and not force:
            holder = self._runs.holder.run_id
            raise self._runs.busy_error(
                "the system cannot go to standby",
                f"Wait for it to close, or go to standby anyway with `system standby --force`, "
                f"which aborts {holder}; an admin can also abort it first (`cs runs abort {holder}`).",
            )
        if dry_run:
            return self.result("System would go to STANDBY.", changed=True, dry_run=True)
        if self._runs.holder is not None:
            self._runs.abort_holder("system standby --force (an admin put the system in standby)", "standby_forced")
        now = self._clock()
        self._emit("EventStandbyIssued", now, origin)
        self._fsm.begin_standby()
        self.pending_until = now + self._faults.transition_ms(Transition.STANDBY, self._timings.standby_ms)
        self._emit("EventPendingStandby", now, origin, expectedCompletion=now + self._timings.standby_ms)
        return self.result("System is going to STANDBY.", changed=True)

    def activate(self, request: Args, origin: dict | None = None) -> dict:
        """system.activate: ramp up into the configured execution mode."""
        dry_run = request.dry_run
        rule = self._rule("activate")
        if isinstance(rule, Already):
            return self.result(rule.message, changed=False, dry_run=dry_run)
        self._faults.refuse_if_blocked(Blocked.ACTIVATE, "the system cannot activate")
        if dry_run:
            return self.result(f"System would activate in {self.configured_mode.value}.", changed=True, dry_run=True)
        now = self._clock()
        self._emit("EventActivateIssued", now, origin, execmode=self.configured_mode.value)
        self._fsm.begin_activate()
        self.pending_until = now + self._faults.transition_ms(Transition.ACTIVATE, self._timings.activate_ms)
        self._emit(
            "EventPendingActive", now, origin, execmode=self.configured_mode.value,
            expectedCompletion=now + self._timings.activate_ms,
        )
        return self.result(f"System is activating in {self.configured_mode.value}.", changed=True)

    def setup_execmode(self, request: Args, origin: dict | None = None) -> dict:
        """config.execmode.setup: the execution mode the next activation boots into (STANDBY only)."""
        mode, dry_run = request.mode, request.dry_run
        self._rule("execmode_setup")
        if mode is self.configured_mode:
            return self.result(f"Execution mode is already configured as {mode.value}.", changed=False, dry_run=dry_run)
        if dry_run:
            return self.result(f"Execution mode would be configured as {mode.value}.", changed=True, dry_run=True)
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
        return self.result(
            f"Execution mode configured as {mode.value}; it takes effect on `system activate`.", changed=True
        )

    # -- time --------------------------------------------------------------------------------

    def is_due(self) -> bool:
        """Whether the pending transition's time has come."""
        return self.pending_until is not None and self._clock() >= self.pending_until

    def complete(self, recovered: bool) -> None:
        """The pending transition's time has come (or csd restarted during it: `recovered`). A
        fault firing on it breaks it: the system goes where the failure leads and the fault is
        active. Otherwise it settles, with its events, and the faults it had left active are over."""
        transition = PENDING_TRANSITION[self.lifecycle]
        now = self._clock()
        self.pending_until = None
        breaking = self._faults.firing(transition)
        if breaking is not None:
            self._fsm.fail_transition()
            self._faults.transition_failed(breaking, now, None, recovered=recovered)
            return
        self._fsm.settle()
        details = {"recovered": recovered}
        if self.lifecycle is A:
            self.active_mode = self.configured_mode  # the system "reboots" into the configured mode
            details = {"execmode": self.active_mode.value, **details}
        for event_type in SETTLED_EVENTS[self.lifecycle]:
            self._emit(event_type, now, None, **details)
        self._faults.transition_succeeded(transition, now)

    def drop_to_standby(self, now: int, origin: dict | None, **details) -> None:
        """STANDBY at once, without the ramp (a fault's effect): the pending transition, if any,
        is dropped, and the settled events say why (`details`)."""
        self.pending_until = None
        self._fsm.emergency_standby()
        for event_type in SETTLED_EVENTS[S]:
            self._emit(event_type, now, origin, **details)

    # -- the store, and as part of a change (statemachine/change.py) ----------------------------

    def snapshot(self) -> dict:
        return {
            "state": self.lifecycle.value,
            "configuredExecmode": self.configured_mode.value,
            "activeExecmode": self.active_mode.value,
            "pendingUntil": self.pending_until,
        }

    def restore(self, snap: dict) -> None:
        self.configured_mode = ExecMode(snap["configuredExecmode"])
        self.active_mode = ExecMode(snap["activeExecmode"])
        self.pending_until = snap.get("pendingUntil")
        self._machine.set_state(Lifecycle(snap["state"]).value)

    def savepoint(self) -> tuple:
        return self.lifecycle, self.configured_mode, self.active_mode, self.pending_until

    def rollback(self, savepoint: tuple) -> None:
        state, self.configured_mode, self.active_mode, self.pending_until = savepoint
        self._machine.set_state(state.value)

    def release(self, savepoint: tuple) -> None:
        pass
