"""The device's faults: the half of `Device` (statemachine/device.py) that injects, clears,
schedules and fires simulated faults, and applies their effects.

The catalogue is statemachine/faults.py, what each effect does statemachine/fault_rules.py, the
faults present statemachine/fault_state.py. `Device` inherits these methods, so they stay behind
the model's one door and share its transactions (`self._faults` is a part of every change); they
use the device's lifecycle, runs and event log as the rest of `Device` does.
"""

from __future__ import annotations

from csadmin.errors import FaultActive, InvalidArgument, NotFound
from csadmin.states import Lifecycle

from . import fault_scenario
from .fault_rules import BLOCKING, EFFECTS
from .fault_state import ACTIVE, ARMED, FIRING, SCHEDULED, Entry, LoadedScenario, parsed_scenario
from .faults import TIMES_OUT_AFTER, Fault, Outcome, Transition, health_event, parse_fault, worst_health
from .lifecycle_rules import PENDING_TRANSITION, SETTLED_EVENTS

S = Lifecycle.STANDBY


class DeviceFaults:
    """Fault methods of `Device` (which provides `_faults`, `_runs`, `_clock`, `_emit`, `events`,
    `lifecycle`, `health`, `pending_until` and the lifecycle's triggers)."""

    def inject_fault(self, name: str, origin: dict | None = None, for_ms: int | None = None,
                     after_ms: int | None = None, dry_run: bool = False) -> dict:
        """Inject the fault `name` (statemachine/faults.py): now, or `after_ms` from now; it clears
        `for_ms` after it is injected (a transition fault: stays armed that long). Injecting a
        fault already present renews when it clears (`changed` false when nothing moved)."""
        fault = _fault(name)
        now = self._clock()
        if after_ms:
            if not dry_run:
                self._faults.put(None, Entry(fault, SCHEDULED, now, due=now + after_ms, for_ms=for_ms, by=origin))
            return self._fault_result(f"Fault {fault.name} will be injected in {after_ms / 1000:g} s.", True, dry_run)
        present = self._faults.present(fault.name)
        if present is not None:
            until = now + for_ms if for_ms else None
            changed = present.until != until
            if changed and not dry_run:
                self._faults.put(present, present.moved(until=until))
            return self._fault_result(f"Fault {fault.name} is already {present.status}" +
                                      ("; its end was moved." if changed else "."), changed, dry_run)
        if not dry_run:
            self._start_fault(fault, now, for_ms, origin)
        verb = "armed" if EFFECTS[fault.effect].arms else "injected"
        return self._fault_result(f"Fault {fault.name} {'would be ' if dry_run else 'is '}{verb}: {fault.summary}.",
                                  True, dry_run)

    def clear_fault(self, name: str | None, origin: dict | None = None, dry_run: bool = False) -> dict:
        """Clear the fault `name` (None: every fault, and the scenario's steps still to come);
        NOT_FOUND naming the faults present if it is not."""
        if name is None:
            targets = list(self._faults.entries)
            waiting = self._faults.scenario is not None and bool(self._faults.scenario.waiting)
            changed = bool(targets) or waiting
            if not dry_run and waiting:
                self._faults.set_scenario(self._faults.scenario.moved(waiting=()))
            message = f"{len(targets)} fault(s) cleared." if changed else "No fault is present; nothing to clear."
        else:
            fault = _fault(name)
            targets = [e for e in self._faults.entries if e.name == fault.name]
            if not targets:
                present = ", ".join(sorted({e.name for e in self._faults.entries})) or "none"
                raise NotFound(f"Fault {fault.name} is not present (present: {present}).",
                               "`cs system fault list` shows the faults present.")
            changed, message = True, f"Fault {fault.name} cleared."
        if not dry_run:
            now = self._clock()
            for entry in targets:
                self._end_fault(entry, now, origin)
        return self._fault_result(message if not dry_run else message.replace("cleared", "would be cleared"),
                                  changed, dry_run)

    def load_scenario(self, text: str, source: str, origin: dict | None = None, dry_run: bool = False) -> dict:
        """Load a fault scenario (statemachine/fault_scenario.py) from its TOML `text`: it replaces
        the one loaded before (whose steps still to come are cancelled; active faults stay).
        Steps anchored at the load are scheduled from now; those anchored at a run wait for it."""
        try:
            parsed = parsed_scenario(text, source)
        except fault_scenario.ScenarioError as exc:
            raise InvalidArgument(f"The fault scenario cannot be used:\n{exc}",
                                  "Fix the lines named and load it again.") from None
        steps = [step.describe() for step in parsed.steps]
        if dry_run:
            return {**self._fault_result(f"Scenario {source} would be loaded.", True, True), "steps": steps}
        now = self._clock()
        for entry in self._faults.with_status(SCHEDULED):
            if entry.scenario is not None:
                self._faults.put(entry, None)
        waiting = tuple(i for i, step in enumerate(parsed.steps) if step.anchor == fault_scenario.RUN)
        self._faults.set_scenario(LoadedScenario(source, text, now, 0, waiting, origin))
        for step in parsed.steps:
            if step.anchor == fault_scenario.LOAD:
                self._schedule_step(step, now, source, origin)
        return {**self._fault_result(f"Scenario {source} loaded: {len(steps)} step(s).", True), "steps": steps}

    def _fault_result(self, message: str, changed: bool, dry_run: bool = False) -> dict:
        return {**self._result(message, changed, dry_run), "systemHealth": self.health.value,
                "activeFaults": self.faults()}

    def _schedule_step(self, step, anchor_ms: int, source: str, origin: dict | None) -> None:
        self._faults.put(None, Entry(step.fault, SCHEDULED, anchor_ms, due=anchor_ms + step.offset_ms,
                                     for_ms=step.duration_ms, by=origin, scenario=source, line=step.line))

    def _scenario_run_opened(self, at: int) -> None:
        """A run opened: the scenario's steps anchored at this run are scheduled."""
        loaded = self._faults.scenario
        if loaded is None:
            return
        number = loaded.runs_opened + 1
        steps = parsed_scenario(loaded.text, loaded.source).steps
        due = [i for i in loaded.waiting if steps[i].run == number]
        self._faults.set_scenario(loaded.moved(runs_opened=number, waiting=tuple(i for i in loaded.waiting if i not in due)))
        for i in due:
            self._schedule_step(steps[i], at, loaded.source, loaded.by)

    def _start_fault(self, fault: Fault, at: int, for_ms: int | None, origin: dict | None,
                     scenario: str | None = None, line: int | None = None, scheduled: bool = False) -> None:
        """A fault takes effect (fault_rules.EFFECTS): armed, or active with its event and effects.
        `scheduled`: its time came (`--after`, a scenario step), so its events say `scheduled`:
        they are not the answer to a request, though `by` names who scheduled it."""
        effect = EFFECTS[fault.effect]
        until = at + for_ms if for_ms else None
        entry = Entry(fault, ARMED if effect.arms else ACTIVE, at, until, by=origin, scenario=scenario, line=line)
        self._faults.put(None, entry)
        if effect.arms:
            return
        now = self._clock()
        when = {"scheduled": True} if scheduled else {}
        self._emit(fault.event, now, origin, **self._fault_details(entry), summary=fault.summary, **when)
        if effect.aborts_run:
            self._runs.abort_holder(f"{fault.name}: {fault.summary} (injected)", "fault", fault.name)
        if effect.drops_to_standby and self.lifecycle is not S:
            for firing in self._faults.with_status(FIRING):  # the transition it was breaking is over
                self._faults.put(firing, firing.moved(status=ARMED))
            self.pending_until = None
            self.emergency_standby()
            for event_type in SETTLED_EVENTS[S]:
                self._emit(event_type, now, origin, cause="fault", fault=fault.name, injected=True, **when)

    def _fault_details(self, entry: Entry) -> dict:
        """What every event about a fault says: which, that it was injected, the health now."""
        details = {"fault": entry.name, "injected": True, "systemHealth": self.health.value}
        if entry.scenario is not None:
            details.update(scenario=entry.scenario, line=entry.line)
        return details

    def _end_fault(self, entry: Entry, now: int, origin: dict | None, cause: str = "cleared") -> None:
        """Remove an entry; an active one announces the health left (faults.health_event)."""
        self._faults.put(entry, None)
        if entry.status != ACTIVE:
            return
        left = [e.fault.health for e in self._faults.with_status(ACTIVE)]
        worst = worst_health(*left) if left else None
        self._emit(health_event(worst), now, origin, **self._fault_details(entry), cleared=True, cause=cause)

    def _fire_due_faults(self) -> bool:
        """Inject, clear or lapse every fault whose time has come, oldest deadline first."""
        now, changed = self._clock(), False
        while True:
            due = [e for e in self._faults.entries if e.deadline is not None and e.deadline <= now]
            if not due:
                return changed
            entry = min(due, key=lambda e: e.deadline)
            changed = True
            if entry.status == SCHEDULED:
                self._faults.put(entry, None)
                present = self._faults.present(entry.name)
                until = entry.due + entry.for_ms if entry.for_ms else None
                if present is not None:
                    self._faults.put(present, present.moved(until=until))
                else:
                    self._start_fault(entry.fault, entry.due, entry.for_ms, entry.by, entry.scenario, entry.line,
                                      scheduled=True)
            else:  # an active fault's `--for` is over, or an armed one lapsed unused
                self._end_fault(entry, now, None, cause="expired")

    def _refuse_if_blocked(self, request: str, doing: str) -> None:
        """FAULT_ACTIVE while a fault that blocks `request` is active (fault_rules.BLOCKING)."""
        for entry in self._faults.with_status(ACTIVE):
            if request in BLOCKING[entry.fault.effect]:
                fault = entry.fault
                raise FaultActive(
                    f"Fault {fault.name} is active ({fault.summary}, injected; systemHealth {fault.health}): {doing}.",
                    f"See `cs system fault list`; wait for it to clear (wait_for(health=...)) or have an admin "
                    f"clear it (`cs system fault clear {fault.name}`).",
                    fault=fault.name,
                )

    def _armed(self, transition: Transition) -> Entry | None:
        return next((e for e in self._faults.with_status(ARMED) if e.fault.transition is transition), None)

    def _transition_ms(self, transition: Transition, normal_ms: int) -> int:
        """How long the transition starting now takes: normal, unless an armed fault breaks it
        (then it is firing: it fails at the normal end, or times out after TIMES_OUT_AFTER × it)."""
        armed = self._armed(transition)
        if armed is None:
            return normal_ms
        self._faults.put(armed, armed.moved(status=FIRING, until=None))
        return normal_ms if armed.fault.outcome is Outcome.FAILS else int(normal_ms * TIMES_OUT_AFTER)

    def _complete_transition(self, recovered: bool) -> None:
        """The pending transition's time has come: it settles, or fails if a fault is firing."""
        transition = PENDING_TRANSITION[self.lifecycle]
        firing = next((e for e in self._faults.with_status(FIRING) if e.fault.transition is transition), None)
        if firing is None:
            self._settle(recovered)
            return
        self.pending_until = None
        self.fail_transition()
        self._fire_transition_fault(firing, self._clock(), None, recovered=recovered)

    def _fire_transition_fault(self, entry: Entry, now: int, origin: dict | None, **details) -> None:
        """A transition fault broke its transition: it is active now, with its events."""
        active = entry.moved(status=ACTIVE, since=now, until=None)
        self._faults.put(entry, active)
        fault = entry.fault
        facts = {**self._fault_details(active), "summary": fault.summary, "state": self.lifecycle.value, **details}
        self._emit(fault.event, now, origin, **facts)
        for event_type in fault.also:
            self._emit(event_type, now, origin, **facts, op=fault.transition.value)

    def _clear_transition_faults(self, transition: Transition, now: int) -> None:
        """A transition succeeded: the faults it had left active are over."""
        for entry in self._faults.with_status(ACTIVE):
            if entry.fault.transition is transition:
                self._end_fault(entry, now, None, cause="succeeded")


def _fault(name: str) -> Fault:
    try:
        return parse_fault(name)
    except ValueError as exc:
        raise InvalidArgument(str(exc), "`cs system fault list` shows the catalogue.") from None
