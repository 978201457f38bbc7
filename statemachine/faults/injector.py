"""The device's faults, as a collaborator of `Device` (statemachine/device.py): it injects,
clears, schedules and fires simulated faults and applies their effects, on the fault state the
device's changes carry (statemachine/faults/state.py), by the rules in statemachine/faults/rules.py.

It knows the device only through `FaultHost` (the lifecycle, the health, and dropping to
STANDBY) and the callables it is built with; the device calls it, and decides itself how a
pending transition completes (`SystemLifecycle.complete`, statemachine/lifecycle.py), asking it which fault is breaking
the transition and telling it how the transition ended.
"""

from __future__ import annotations

from typing import Callable, Protocol

from csadmin.errors import FaultActive, InvalidArgument, NotFound
from csadmin.shared.opargs import Args
from csadmin.shared.states import Health, Lifecycle

from . import TIMES_OUT_AFTER, Fault, Outcome, Transition, health_event, parse_fault, system_health
from . import scenario as fault_scenario
from .rules import EFFECTS, Blocked
from .state import ACTIVE, ARMED, FIRING, SCHEDULED, Entry, FaultState, LoadedScenario, parsed_scenario

S = Lifecycle.STANDBY


class FaultHost(Protocol):
    """What the faults need of the device they belong to."""

    @property
    def lifecycle(self) -> Lifecycle: ...

    @property
    def health(self) -> Health: ...

    def drop_to_standby(self, now: int, origin: dict | None, **details) -> None:
        """A fault's effect puts the system in STANDBY at once, without the ramp, emitting the
        settled events with `details`."""


# emit(event_type, now, origin, **details): an event in the device's log, `by` origin.
Emit = Callable[..., None]
# abort_holder(reason, cause, fault): abort the run holding the fabric, if any (Runs.abort_holder).
AbortHolder = Callable[..., object]


class FaultInjector:
    """The faults of one device. Requests return `(message, changed)` (a scenario also its steps)
    for the device to answer with; refusals raise a `csadmin.errors` class."""

    def __init__(self, state: FaultState, clock: Callable[[], int], emit: Emit, abort_holder: AbortHolder,
                 host: FaultHost):
        self._state = state
        self._clock = clock
        self._emit = emit
        self._abort_holder = abort_holder
        self._host = host

    # -- reading -----------------------------------------------------------------------------

    def health(self, lifecycle_health: Health) -> Health:
        """The lifecycle's health, or the worst active fault's if that ranks higher."""
        return system_health(lifecycle_health, [e.fault for e in self._state.with_status(ACTIVE)])

    def listing(self) -> list[dict]:
        """Every fault present (scheduled, armed, firing or active; the active last), with the
        catalogue's words: what `system.show` carries as `activeFaults`."""
        return [{**e.to_dict(), "event": e.fault.event, "severity": e.fault.severity.value,
                 "health": e.fault.health.value, "effect": e.fault.effect.value, "summary": e.fault.summary}
                for e in self._state.ordered()]

    def scenario(self) -> dict | None:
        """The loaded fault scenario: its source, description, steps in words, when it was
        loaded, runs opened since, and the run-anchored steps still waiting."""
        loaded = self._state.scenario
        if loaded is None:
            return None
        parsed = parsed_scenario(loaded.text, loaded.source)
        return {"source": loaded.source, "description": parsed.description, "loadedAt": loaded.loaded_at,
                "digest": loaded.digest, "runsOpened": loaded.runs_opened,
                "steps": [step.describe() for step in parsed.steps],
                "waiting": [parsed.steps[i].describe() for i in loaded.waiting]}

    # -- requests ----------------------------------------------------------------------------

    def inject(self, request: Args, origin: dict | None = None) -> tuple[str, bool]:
        """system.fault.inject: the fault `name` (statemachine/faults/__init__.py), now or
        `after_seconds` from now; it clears `for_seconds` after it is injected (a transition
        fault: stays armed that long). Injecting a fault already present renews when it clears
        (`changed` false when nothing moved)."""
        fault = _fault(request.name)
        for_ms, after_ms, dry_run = _ms(request.for_seconds), _ms(request.after_seconds), request.dry_run
        now = self._clock()
        if after_ms:
            if not dry_run:
                self._state.put(None, Entry(fault, SCHEDULED, now, due=now + after_ms, for_ms=for_ms, by=origin))
            return f"Fault {fault.name} will be injected in {after_ms / 1000:g} s.", True
        present = self._state.present(fault.name)
        if present is not None:
            until = now + for_ms if for_ms else None
            changed = present.until != until
            if changed and not dry_run:
                self._state.put(present, present.moved(until=until))
            return f"Fault {fault.name} is already {present.status}" + ("; its end was moved." if changed else "."), changed
        if not dry_run:
            self._start(fault, now, for_ms, origin)
        verb = "armed" if EFFECTS[fault.effect].arms else "injected"
        return f"Fault {fault.name} {'would be ' if dry_run else 'is '}{verb}: {fault.summary}.", True

    def clear(self, request: Args, origin: dict | None = None) -> tuple[str, bool]:
        """system.fault.clear: the fault `name`, or with `all` every fault and the scenario's
        steps still to come; NOT_FOUND naming the faults present if it is not."""
        name, dry_run = None if request.all else request.name, request.dry_run
        if name is None:
            targets = list(self._state.entries)
            waiting = self._state.scenario is not None and bool(self._state.scenario.waiting)
            changed = bool(targets) or waiting
            if not dry_run and waiting:
                self._state.set_scenario(self._state.scenario.moved(waiting=()))
            message = f"{len(targets)} fault(s) cleared." if changed else "No fault is present; nothing to clear."
        else:
            fault = _fault(name)
            targets = [e for e in self._state.entries if e.name == fault.name]
            if not targets:
                present = ", ".join(sorted({e.name for e in self._state.entries})) or "none"
                raise NotFound(f"Fault {fault.name} is not present (present: {present}).",
                               "`cs system fault list` shows the faults present.")
            changed, message = True, f"Fault {fault.name} cleared."
        if not dry_run:
            now = self._clock()
            for entry in targets:
                self._end(entry, now, origin)
        return (message if not dry_run else message.replace("cleared", "would be cleared")), changed

    def load_scenario(self, request: Args, origin: dict | None = None) -> tuple[str, bool, list]:
        """system.fault.scenario: a fault scenario (statemachine/faults/scenario.py) from its TOML
        `text`, named `source` in messages: it replaces the one loaded before (whose steps still
        to come are cancelled; active faults stay). Steps anchored at the load are scheduled from
        now; those anchored at a run wait for it."""
        text, source, dry_run = request.text, request.source, request.dry_run
        try:
            parsed = parsed_scenario(text, source)
        except fault_scenario.ScenarioError as exc:
            raise InvalidArgument(f"The fault scenario cannot be used:\n{exc}",
                                  "Fix the lines named and load it again.") from None
        steps = [step.describe() for step in parsed.steps]
        if dry_run:
            return f"Scenario {source} would be loaded.", True, steps
        now = self._clock()
        for entry in self._state.with_status(SCHEDULED):
            if entry.scenario is not None:
                self._state.put(entry, None)
        waiting = tuple(i for i, step in enumerate(parsed.steps) if step.anchor == fault_scenario.RUN)
        self._state.set_scenario(LoadedScenario(source, text, now, 0, waiting, origin))
        for step in parsed.steps:
            if step.anchor == fault_scenario.LOAD:
                self._schedule_step(step, now, source, origin)
        return f"Scenario {source} loaded: {len(steps)} step(s).", True, steps

    def refuse_if_blocked(self, request: Blocked, doing: str) -> None:
        """FAULT_ACTIVE while a fault that blocks `request` is active (faults/rules.py EFFECTS)."""
        for entry in self._state.with_status(ACTIVE):
            if request in EFFECTS[entry.fault.effect].blocks:
                fault = entry.fault
                raise FaultActive(
                    f"Fault {fault.name} is active ({fault.summary}, injected; systemHealth {fault.health.value}): {doing}.",
                    # How to wait is each surface's own words (errors.FaultActive's steps).
                    f"See `cs system fault list`; wait for it to clear, or have an admin clear it "
                    f"(`cs system fault clear {fault.name}`).",
                    fault=fault.name,
                )

    # -- what the device tells it ------------------------------------------------------------

    def run_opened(self, at: int) -> None:
        """A run opened: the scenario's steps anchored at this run are scheduled."""
        loaded = self._state.scenario
        if loaded is None:
            return
        number = loaded.runs_opened + 1
        steps = parsed_scenario(loaded.text, loaded.source).steps
        due = [i for i in loaded.waiting if steps[i].run == number]
        self._state.set_scenario(loaded.moved(runs_opened=number, waiting=tuple(i for i in loaded.waiting if i not in due)))
        for i in due:
            self._schedule_step(steps[i], at, loaded.source, loaded.by)

    def fire_due(self) -> bool:
        """Inject, clear or lapse every fault whose time has come, oldest deadline first."""
        now, changed = self._clock(), False
        while True:
            due = [e for e in self._state.entries if e.deadline is not None and e.deadline <= now]
            if not due:
                return changed
            entry = min(due, key=lambda e: e.deadline)
            changed = True
            if entry.status == SCHEDULED:
                self._state.put(entry, None)
                present = self._state.present(entry.name)
                until = entry.due + entry.for_ms if entry.for_ms else None
                if present is not None:
                    self._state.put(present, present.moved(until=until))
                else:
                    self._start(entry.fault, entry.due, entry.for_ms, entry.by, entry.scenario, entry.line,
                                scheduled=True)
            else:  # an active fault's `--for` is over, or an armed one lapsed unused
                self._end(entry, now, None, cause="expired")

    def armed(self, transition: Transition) -> Entry | None:
        """The fault armed to break `transition` next time it runs, if any."""
        return next((e for e in self._state.with_status(ARMED) if e.fault.transition is transition), None)

    def firing(self, transition: Transition) -> Entry | None:
        """The fault breaking `transition` while it runs, if any."""
        return next((e for e in self._state.with_status(FIRING) if e.fault.transition is transition), None)

    def transition_ms(self, transition: Transition, normal_ms: int) -> int:
        """How long the transition starting now takes: normal, unless an armed fault breaks it
        (then it is firing: it fails at the normal end, or times out after TIMES_OUT_AFTER × it)."""
        armed = self.armed(transition)
        if armed is None:
            return normal_ms
        self._state.put(armed, armed.moved(status=FIRING, until=None))
        return normal_ms if armed.fault.outcome is Outcome.FAILS else int(normal_ms * TIMES_OUT_AFTER)

    def transition_failed(self, entry: Entry, now: int, origin: dict | None, **details) -> None:
        """A transition fault broke its transition (the device has already left the pending
        state): it is active now, with its events."""
        active = entry.moved(status=ACTIVE, since=now, until=None)
        self._state.put(entry, active)
        fault = entry.fault
        facts = {**self._details(active), "summary": fault.summary, "state": self._host.lifecycle.value, **details}
        self._emit(fault.event, now, origin, **facts)
        for event_type in fault.also:
            self._emit(event_type, now, origin, **facts, op=fault.transition.value)

    def transition_succeeded(self, transition: Transition, now: int) -> None:
        """A transition succeeded: the faults it had left active are over."""
        for entry in self._state.with_status(ACTIVE):
            if entry.fault.transition is transition:
                self._end(entry, now, None, cause="succeeded")

    # -- effects -----------------------------------------------------------------------------

    def _schedule_step(self, step, anchor_ms: int, source: str, origin: dict | None) -> None:
        self._state.put(None, Entry(step.fault, SCHEDULED, anchor_ms, due=anchor_ms + step.offset_ms,
                                    for_ms=step.duration_ms, by=origin, scenario=source, line=step.line))

    def _start(self, fault: Fault, at: int, for_ms: int | None, origin: dict | None,
               scenario: str | None = None, line: int | None = None, scheduled: bool = False) -> None:
        """A fault takes effect (faults/rules.py EFFECTS): armed, or active with its event and
        effects. `scheduled`: its time came (`--after`, a scenario step), so its events say
        `scheduled`: they are not the answer to a request, though `by` names who scheduled it."""
        effect = EFFECTS[fault.effect]
        until = at + for_ms if for_ms else None
        entry = Entry(fault, ARMED if effect.arms else ACTIVE, at, until, by=origin, scenario=scenario, line=line)
        self._state.put(None, entry)
        if effect.arms:
            return
        now = self._clock()
        when = {"scheduled": True} if scheduled else {}
        self._emit(fault.event, now, origin, **self._details(entry), summary=fault.summary, **when)
        if effect.aborts_run:
            self._abort_holder(f"{fault.name}: {fault.summary} (injected)", "fault", fault.name)
        if effect.drops_to_standby and self._host.lifecycle is not S:
            for firing in self._state.with_status(FIRING):  # the transition it was breaking is over
                self._state.put(firing, firing.moved(status=ARMED))
            self._host.drop_to_standby(now, origin, cause="fault", fault=fault.name, injected=True, **when)

    def _details(self, entry: Entry) -> dict:
        """What every event about a fault says: which, that it was injected, the health now."""
        details = {"fault": entry.name, "injected": True, "systemHealth": self._host.health.value}
        if entry.scenario is not None:
            details.update(scenario=entry.scenario, line=entry.line)
        return details

    def _end(self, entry: Entry, now: int, origin: dict | None, cause: str = "cleared") -> None:
        """Remove an entry; an active one announces the health left (faults.health_event)."""
        self._state.put(entry, None)
        if entry.status != ACTIVE:
            return
        left = [e.fault.health for e in self._state.with_status(ACTIVE)]
        worst = Health.worst(*left) if left else None
        self._emit(health_event(worst), now, origin, **self._details(entry), cleared=True, cause=cause)


def _ms(seconds: float | None) -> int | None:
    return None if seconds is None else int(round(seconds * 1000))


def _fault(name: str) -> Fault:
    try:
        return parse_fault(name)
    except ValueError as exc:
        raise InvalidArgument(str(exc), "`cs system fault list` shows the catalogue.") from None
