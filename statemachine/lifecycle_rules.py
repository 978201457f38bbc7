"""The lifecycle's rules, as data: the `transitions` machine, what each request does in each
state, and the events a completed transition emits. statemachine/device.py applies them.

The machine is built with `auto_transitions=False` (device.py), so no `to_<state>()` shortcut
can bypass a rule; `REQUEST_RULES` says, for every request in every state, whether it starts a
transition, is an idempotent success, or is refused, with the message and next step the user sees.
"""

from __future__ import annotations

from csadmin.errors import InvalidState
from csadmin.states import SETTLES_TO, ExecMode, Lifecycle

from .faults import SETTLES_AFTER_FAILURE, Transition
from .rules import GO, Already, Go, Refuse

A, S = Lifecycle.ACTIVE, Lifecycle.STANDBY
PA, PS = Lifecycle.PENDING_ACTIVE, Lifecycle.PENDING_STANDBY

LIFECYCLE_TRANSITIONS = [
    {"trigger": "begin_standby", "source": A.value, "dest": PS.value},
    {"trigger": "begin_activate", "source": S.value, "dest": PA.value},
    # A pending state settles where csadmin/states.py says, once its time has come.
    *({"trigger": "settle", "source": pending.value, "dest": target.value} for pending, target in SETTLES_TO.items()),
    # A transition fault fired: the pending state goes back where it started (statemachine/faults/__init__.py).
    {"trigger": "fail_transition", "source": PA.value, "dest": SETTLES_AFTER_FAILURE[Transition.ACTIVATE]},
    {"trigger": "fail_transition", "source": PS.value, "dest": SETTLES_AFTER_FAILURE[Transition.STANDBY]},
    # An emergency shutdown drops the system to STANDBY from anywhere, without the ramp.
    {"trigger": "emergency_standby", "source": [A.value, PA.value, PS.value], "dest": S.value},
]

# The transition each pending state is carrying out (what a transition fault breaks).
PENDING_TRANSITION = {PA: Transition.ACTIVATE, PS: Transition.STANDBY}

_WAIT = "Wait for it to finish (`system show` reports the progress), then try again."

REQUEST_RULES: dict[tuple[str, Lifecycle], Go | Already | Refuse] = {
    ("standby", A): GO,
    ("standby", S): Already("System is already in STANDBY."),
    ("standby", PS): Refuse(InvalidState, "System is already going to STANDBY (PENDING_STANDBY).", _WAIT),
    ("standby", PA): Refuse(InvalidState, "System is activating (PENDING_ACTIVE); it cannot go to standby now.", _WAIT),
    ("activate", S): GO,
    ("activate", A): Already("System is already in ACTIVE."),
    ("activate", PA): Refuse(InvalidState, "System is already activating (PENDING_ACTIVE).", _WAIT),
    ("activate", PS): Refuse(
        InvalidState, "System is going to standby (PENDING_STANDBY); it cannot activate now.", _WAIT
    ),
    ("execmode_setup", S): GO,
    ("execmode_setup", A): Refuse(
        InvalidState,
        "The execution mode can only be changed in STANDBY; the system is ACTIVE.",
        "Put the system in standby first: `system standby`, then `config execmode setup`.",
    ),
    ("execmode_setup", PA): Refuse(
        InvalidState,
        "The execution mode can only be changed in STANDBY; the system is activating (PENDING_ACTIVE).",
        "Wait for ACTIVE, run `system standby`, then `config execmode setup`.",
    ),
    ("execmode_setup", PS): Refuse(
        InvalidState,
        "The execution mode can only be changed in STANDBY; the system is going to standby (PENDING_STANDBY).",
        "Wait for STANDBY (`system show`), then run `config execmode setup`.",
    ),
}

# The events that say a pending transition completed, by where it settled.
SETTLED_EVENTS = {S: ("EventEnteredStandby", "EventStandbyCompleted"), A: ("EventEnteredActive", "EventActivateCompleted")}

SET_EXECMODE_EVENTS = {
    ExecMode.PIPELINED: "EventSetExecModePipelined",
    ExecMode.WEIGHT_STREAMING: "EventSetExecModeWeightStreaming",
}
