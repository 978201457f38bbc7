"""The fault catalogue: what can go wrong with a CS-2, as data (stdlib only, no I/O); the
package holds the rest of the faults too: `rules` (what each effect does), `state` (the faults
present), `scenario` (scenario files) and `injector` (the device's faults, a collaborator).

Each named fault says which real event reports it (the real catalogue: tests/reference/
cs2-events.tsv), that event's severity, the `systemHealth` the fault implies while it is active,
and what it does to the system (its `Effect`). The device model keeps the set of active faults;
`system_health()` turns that set and the lifecycle into the one `systemHealth` csd reports: the
worst value wins, by the rank the real system's tooling gives them (tests/reference/
cs2-system-health.tsv).

Clearing a fault is announced by the health event of what is left (`health_event()`): the last
fault to go emits `EventHealthOk`; with others still active, `EventHealthDegraded` or
`EventHealthCritical`, so an event never claims a health the system does not have.
"""

from __future__ import annotations

import difflib
from dataclasses import dataclass
from enum import Enum
from typing import Iterable

from csadmin.shared.states import Health, Severity

from .rules import EFFECTS, Effect

# -- the faults ------------------------------------------------------------------------------------


class Transition(str, Enum):
    """The requests a transition fault breaks."""

    ACTIVATE = "activate"  # system activate: STANDBY → PENDING_ACTIVE → ACTIVE
    STANDBY = "standby"  # system standby: ACTIVE → PENDING_STANDBY → STANDBY
    EXECMODE = "execmode"  # config execmode setup (immediate: no pending state)


class Outcome(str, Enum):
    """How a transition fault breaks its transition."""

    # At the end of the transition's normal duration (immediately for an execmode change).
    FAILS = "fails"
    # The pending state outlasts its normal duration: after TIMES_OUT_AFTER times it, it gives up.
    TIMES_OUT = "times_out"


# A transition that times out gives up after this many times its normal duration
# (activate_seconds, standby_seconds), so a client waiting with the usual margin sees it first
# as slow, then as Timedout.
TIMES_OUT_AFTER = 2.0

# Where the lifecycle settles when its transition fails or times out: where it started (the
# real system reports the failure and stays as it was; the admin retries or investigates).
SETTLES_AFTER_FAILURE: dict[Transition, str] = {
    Transition.ACTIVATE: "STANDBY",
    Transition.STANDBY: "ACTIVE",
}


@dataclass(frozen=True)
class Fault:
    """One named fault. `event` is the real event raised when it becomes active (for a
    transition fault: when it fires), `severity` and `health` are that event's severity and the
    systemHealth it implies (the reference file's statusMapping); `also` are events emitted right
    after it (the config op's own failure after an execution mode change fails)."""

    name: str
    event: str
    severity: Severity
    health: Health
    effect: Effect
    summary: str  # what happened, for people: `system fault list`, refusals, RunAborted
    transition: Transition | None = None
    outcome: Outcome | None = None
    also: tuple[str, ...] = ()

    @property
    def stops_runs(self) -> bool:
        """While active, the run holding the fabric is aborted (faults/rules.py EFFECTS)."""
        return EFFECTS[self.effect].aborts_run


W, E, C = Severity.WARN, Severity.ERROR, Severity.CRITICAL

FAULTS: tuple[Fault, ...] = (
    # Warnings: health DEGRADED, runs carry on.
    Fault("health-degraded", "EventHealthDegraded", W, Health.DEGRADED, Effect.WARNING,
          "system health degraded"),
    Fault("temperature-high-warn", "EventSensorTemperatureHighWarn", W, Health.DEGRADED, Effect.WARNING,
          "temperature above its warning threshold"),
    Fault("flow-rate-low-warn", "EventSensorFlowRateLowWarn", W, Health.DEGRADED, Effect.WARNING,
          "coolant flow rate below its warning threshold"),
    # Critical sensor and hardware faults: the run is aborted, new runs refused.
    Fault("health-critical", "EventHealthCritical", C, Health.CRITICAL, Effect.CRITICAL,
          "system health critical"),
    Fault("temperature-high-critical", "EventSensorTemperatureHighCritical", C, Health.CRITICAL, Effect.CRITICAL,
          "temperature above its critical threshold"),
    Fault("flow-rate-low-critical", "EventSensorFlowRateLowCritical", C, Health.CRITICAL, Effect.CRITICAL,
          "coolant flow rate below its critical threshold"),
    Fault("psu-hardware-error", "EventPsuHardwareError", C, Health.HARDWARE_ERROR, Effect.CRITICAL,
          "a power supply unit reports a hardware error"),
    Fault("pump-missing", "EventPumpMissing", C, Health.MISSING, Effect.CRITICAL,
          "a coolant pump is missing"),
    # Emergency shutdown: the system drops to STANDBY.
    Fault("emergency-shutdown", "EventEmergencyShutdownSensorCritical", C, Health.CRITICAL_EMERGENCY_SHUTDOWN,
          Effect.SHUTDOWN, "emergency shutdown: a sensor reading is critical"),
    # Transition faults: the next such request fails or times out.
    Fault("activate-fails", "EventActivateFailed", E, Health.CRITICAL, Effect.TRANSITION,
          "activation failed", Transition.ACTIVATE, Outcome.FAILS),
    Fault("activate-times-out", "EventActivateTimedout", E, Health.CRITICAL, Effect.TRANSITION,
          "activation timed out", Transition.ACTIVATE, Outcome.TIMES_OUT),
    Fault("standby-fails", "EventStandbyFailed", E, Health.CRITICAL, Effect.TRANSITION,
          "going to standby failed", Transition.STANDBY, Outcome.FAILS),
    Fault("standby-times-out", "EventStandbyTimedout", E, Health.CRITICAL, Effect.TRANSITION,
          "going to standby timed out", Transition.STANDBY, Outcome.TIMES_OUT),
    Fault("execmode-fails", "EventSetExecModeFailed", E, Health.CRITICAL, Effect.TRANSITION,
          "setting the execution mode failed", Transition.EXECMODE, Outcome.FAILS,
          also=("EventConfigOpFailed",)),
)

BY_NAME: dict[str, Fault] = {f.name: f for f in FAULTS}
BY_EVENT: dict[str, Fault] = {f.event: f for f in FAULTS}

# -- events ----------------------------------------------------------------------------------------

# The health events, and which health each announces. A clear emits the one for what is left.
HEALTH_EVENTS: dict[Health, str] = {
    Health.OK: "EventHealthOk",
    Health.DEGRADED: "EventHealthDegraded",
    Health.CRITICAL: "EventHealthCritical",
}
CLEARED_EVENT = HEALTH_EVENTS[Health.OK]  # a fault cleared and none is left

# Every event the faults cause, with its severity (the reference's), for the event catalogue.
EVENT_SEVERITIES: dict[str, Severity] = {
    **{f.event: f.severity for f in FAULTS},
    "EventConfigOpFailed": E,
    "EventHealthOk": Severity.INFO,
    "EventHealthDegraded": W,
    "EventHealthCritical": C,
}


def health_event(remaining: Health | None) -> str:
    """The event that announces a clear, given the worst health of the faults still active
    (None: none is). DEGRADED → EventHealthDegraded; anything worse → EventHealthCritical."""
    if remaining is None:
        return CLEARED_EVENT
    if Health(remaining).rank <= Health.DEGRADED.rank:
        return HEALTH_EVENTS[Health.DEGRADED]
    return HEALTH_EVENTS[Health.CRITICAL]


def system_health(lifecycle_health: Health, active: Iterable[Fault] = ()) -> Health:
    """The systemHealth csd reports: its lifecycle's value (OK, STANDBY, PENDING_…) or the worst
    active fault's, whichever ranks higher (states.Health). Pass only faults that are active (a
    transition fault counts once it has fired, not while armed)."""
    return Health.worst(lifecycle_health, *(f.health for f in active))


# -- names ------------------------------------------------------------------------------------------


def _key(text: str) -> str:
    return text.strip().lower().replace("_", "-").replace(" ", "-")


_LOOKUP = {**{_key(f.name): f for f in FAULTS}, **{_key(f.event): f for f in FAULTS}}


def parse_fault(text: str) -> Fault:
    """The fault named `text`: its name in any case, with `-`, `_` or spaces (`PSU_HARDWARE_ERROR`),
    or the event it raises (`EventPsuHardwareError`). Raises ValueError naming the known faults
    (and the closest one, for a typo)."""
    fault = _LOOKUP.get(_key(text)) if isinstance(text, str) else None
    if fault is not None:
        return fault
    shown = repr(text) if len(str(text)) <= 40 else repr(str(text)[:39] + "…")
    close = difflib.get_close_matches(_key(str(text)), list(BY_NAME), n=1)
    guess = f" (did you mean {close[0]}?)" if close else ""
    raise ValueError(f"unknown fault {shown}{guess}; known faults: {', '.join(BY_NAME)}")

