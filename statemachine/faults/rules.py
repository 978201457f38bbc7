"""What each kind of fault does, as data: statemachine/faults/injector.py applies these rules when a fault
takes effect, and consults BLOCKING before each request a fault may refuse.

The catalogue (statemachine/faults/__init__.py) gives each fault its `Effect`; this table says what that
effect means for the device: whether the fault waits for its transition (`arms`), aborts the run
holding the fabric, drops the system to STANDBY, and which requests it refuses with FAULT_ACTIVE
while it is active.
"""

from __future__ import annotations

from dataclasses import dataclass

from . import Effect


@dataclass(frozen=True)
class EffectRule:
    arms: bool = False  # injected: armed, waiting for its transition (no event, health unchanged)
    aborts_run: bool = False  # injected: the run holding the fabric is aborted, naming the fault
    drops_to_standby: bool = False  # injected: STANDBY at once, no PENDING_STANDBY ramp


EFFECTS: dict[Effect, EffectRule] = {
    Effect.WARNING: EffectRule(),
    Effect.CRITICAL: EffectRule(aborts_run=True),
    Effect.SHUTDOWN: EffectRule(aborts_run=True, drops_to_standby=True),
    Effect.TRANSITION: EffectRule(arms=True),
}

# While a fault with this effect is active, these requests are refused with FAULT_ACTIVE:
# `open` (run.open), `program` (run.program), `activate` (system.activate). `system standby`
# is never refused by a fault: an admin must always be able to ramp down.
BLOCKING: dict[Effect, frozenset[str]] = {
    Effect.WARNING: frozenset(),
    Effect.CRITICAL: frozenset({"open", "program", "activate"}),
    Effect.SHUTDOWN: frozenset({"open", "program", "activate"}),
    Effect.TRANSITION: frozenset(),
}
