"""The lifecycle, declared once, as data: each state's health, each request's transition and its
rule in every other state, and the events a completed transition emits. The `transitions` machine
(`LIFECYCLE_TRANSITIONS`) and the request rules (`REQUEST_RULES`) are derived from these tables,
so a request's source state is written once. statemachine/lifecycle.py applies them.

The machine is built with `auto_transitions=False` (lifecycle.py), so no `to_<state>()` shortcut
can bypass a rule; `REQUEST_RULES` says, for every request in every state, whether it starts a
transition, is an idempotent success, or is refused, with the message and next step the user sees.
The machine's own `conditions`/`unless` guards are not used for these rules: a refused trigger
there returns False, while a request refused here must raise its coded error with a next step.

A new lifecycle state: its value in csadmin/shared/states.py (and, if pending, where it settles), its
health and every request's rule in it here.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from csadmin.errors import InvalidState
from csadmin.shared.states import SETTLES_TO, ExecMode, Health, Lifecycle

from .faults import SETTLES_AFTER_FAILURE, Transition
from .rules import GO, Already, Go, Refuse

A, S = Lifecycle.ACTIVE, Lifecycle.STANDBY
PA, PS = Lifecycle.PENDING_ACTIVE, Lifecycle.PENDING_STANDBY

# The `systemHealth` each state implies when no fault ranks worse (statemachine/faults ranks them).
HEALTH = {A: Health.OK, S: Health.STANDBY, PA: Health.PENDING_ACTIVE, PS: Health.PENDING_STANDBY}


@dataclass(frozen=True)
class Request:
    """A lifecycle request: allowed in `source` only, where it fires `trigger` (a transition to
    `dest`; no trigger: it changes no lifecycle state), and in each other state what `elsewhere` says."""

    source: Lifecycle
    elsewhere: dict[Lifecycle, Already | Refuse] = field(default_factory=dict)
    trigger: str | None = None
    dest: Lifecycle | None = None


_WAIT = "Wait for it to finish (`system show` reports the progress), then try again."

REQUESTS: dict[str, Request] = {
    "standby": Request(A, trigger="begin_standby", dest=PS, elsewhere={
        S: Already("System is already in STANDBY."),
        PS: Refuse(InvalidState, "System is already going to STANDBY (PENDING_STANDBY).", _WAIT),
        PA: Refuse(InvalidState, "System is activating (PENDING_ACTIVE); it cannot go to standby now.", _WAIT),
    }),
    "activate": Request(S, trigger="begin_activate", dest=PA, elsewhere={
        A: Already("System is already in ACTIVE."),
        PA: Refuse(InvalidState, "System is already activating (PENDING_ACTIVE).", _WAIT),
        PS: Refuse(InvalidState, "System is going to standby (PENDING_STANDBY); it cannot activate now.", _WAIT),
    }),
    "execmode_setup": Request(S, elsewhere={
        A: Refuse(
            InvalidState,
            "The execution mode can only be changed in STANDBY; the system is ACTIVE.",
            "Put the system in standby first: `system standby`, then `config execmode setup`.",
        ),
        PA: Refuse(
            InvalidState,
            "The execution mode can only be changed in STANDBY; the system is activating (PENDING_ACTIVE).",
            "Wait for ACTIVE, run `system standby`, then `config execmode setup`.",
        ),
        PS: Refuse(
            InvalidState,
            "The execution mode can only be changed in STANDBY; the system is going to standby (PENDING_STANDBY).",
            "Wait for STANDBY (`system show`), then run `config execmode setup`.",
        ),
    }),
}

# The transitions no request starts: a pending state settles where csadmin/shared/states.py says once its
# time has come; a transition fault sends it back where it started (statemachine/faults); an
# emergency shutdown drops the system to STANDBY from anywhere, without the ramp.
TIMED_TRANSITIONS = [
    *({"trigger": "settle", "source": pending.value, "dest": target.value} for pending, target in SETTLES_TO.items()),
    {"trigger": "fail_transition", "source": PA.value, "dest": SETTLES_AFTER_FAILURE[Transition.ACTIVATE]},
    {"trigger": "fail_transition", "source": PS.value, "dest": SETTLES_AFTER_FAILURE[Transition.STANDBY]},
    {"trigger": "emergency_standby", "source": [A.value, PA.value, PS.value], "dest": S.value},
]

# The transition each pending state is carrying out (what a transition fault breaks).
PENDING_TRANSITION = {PA: Transition.ACTIVATE, PS: Transition.STANDBY}

# -- derived: the machine's transitions and every (request, state) rule ---------------------------

LIFECYCLE_TRANSITIONS = [
    *({"trigger": r.trigger, "source": r.source.value, "dest": r.dest.value} for r in REQUESTS.values() if r.trigger),
    *TIMED_TRANSITIONS,
]

REQUEST_RULES: dict[tuple[str, Lifecycle], Go | Already | Refuse] = {
    (name, state): GO if state is request.source else request.elsewhere[state]
    for name, request in REQUESTS.items() for state in Lifecycle
}

# The events that say a pending transition completed, by where it settled.
SETTLED_EVENTS = {S: ("EventEnteredStandby", "EventStandbyCompleted"), A: ("EventEnteredActive", "EventActivateCompleted")}

SET_EXECMODE_EVENTS = {
    ExecMode.PIPELINED: "EventSetExecModePipelined",
    ExecMode.WEIGHT_STREAMING: "EventSetExecModeWeightStreaming",
}
