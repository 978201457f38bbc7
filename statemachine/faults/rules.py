"""What each kind of fault does, as one table: the `Effect`s a fault of the catalogue
(statemachine/faults/__init__.py) may have, and for each its `EffectRule` — whether the fault
waits for its transition (`arms`), aborts the run holding the fabric, drops the system to
STANDBY, and which requests it refuses with FAULT_ACTIVE while it is active.
statemachine/faults/injector.py applies the rule when a fault takes effect, and consults
`blocks` before each request a fault may refuse.

Every Effect has its rule (tests/statemachine/test_faults.py fails otherwise): a new Effect is its
member here and its row in EFFECTS.
"""

from __future__ import annotations

from dataclasses import dataclass
from enum import Enum


class Effect(str, Enum):
    """What an active fault does to the system."""

    # systemHealth DEGRADED; the run holding the fabric carries on and new runs may open.
    WARNING = "warning"
    # The run holding the fabric is aborted with the fault as its reason; new runs are refused
    # until the fault clears. The lifecycle does not move.
    CRITICAL = "critical"
    # Emergency shutdown: the run is aborted and the system drops to STANDBY at once (no
    # PENDING_STANDBY ramp); `system activate` is refused until the fault clears.
    SHUTDOWN = "shutdown"
    # Armed, not yet active: the next request for its transition fails or times out (with the
    # real …Failed / …Timedout event), leaving the system where the transition started. Once it
    # has fired it is active, with the health its event implies, until the next successful
    # transition of the same kind or until cleared.
    TRANSITION = "transition"


class Blocked(str, Enum):
    """The requests an active fault may refuse with FAULT_ACTIVE. `system standby` is never
    among them: an admin must always be able to ramp down."""

    OPEN = "open"  # run.open
    PROGRAM = "program"  # run.program
    ACTIVATE = "activate"  # system.activate


@dataclass(frozen=True)
class EffectRule:
    arms: bool = False  # injected: armed, waiting for its transition (no event, health unchanged)
    aborts_run: bool = False  # injected: the run holding the fabric is aborted, naming the fault
    drops_to_standby: bool = False  # injected: STANDBY at once, no PENDING_STANDBY ramp
    blocks: frozenset[Blocked] = frozenset()  # while active: these requests are refused (FAULT_ACTIVE)


_STOPS_RUNS = frozenset({Blocked.OPEN, Blocked.PROGRAM, Blocked.ACTIVATE})

EFFECTS: dict[Effect, EffectRule] = {
    Effect.WARNING: EffectRule(),
    Effect.CRITICAL: EffectRule(aborts_run=True, blocks=_STOPS_RUNS),
    Effect.SHUTDOWN: EffectRule(aborts_run=True, drops_to_standby=True, blocks=_STOPS_RUNS),
    Effect.TRANSITION: EffectRule(arms=True),
}
