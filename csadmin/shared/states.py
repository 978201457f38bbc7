"""The system's vocabulary, as the wire and the real CLI spell it: lifecycle states, execution
modes, health and severity, and where each pending state settles.

Defined once for the model (which moves between these states), csd (which parses what requests
say) and the console (which shows and completes them). Stdlib only and importing nothing of ours,
like csadmin/errors.py: every layer may import it (docs/design.md, "Layers").
"""

from enum import Enum


class Lifecycle(str, Enum):
    STANDBY = "STANDBY"
    PENDING_ACTIVE = "PENDING_ACTIVE"
    ACTIVE = "ACTIVE"
    PENDING_STANDBY = "PENDING_STANDBY"


PENDING_STATES = frozenset({Lifecycle.PENDING_ACTIVE, Lifecycle.PENDING_STANDBY})

# Where each pending state settles once its simulated duration has elapsed (the model's
# transitions are built from this table).
SETTLES_TO = {
    Lifecycle.PENDING_ACTIVE: Lifecycle.ACTIVE,
    Lifecycle.PENDING_STANDBY: Lifecycle.STANDBY,
}


def settles_to(state: str) -> str | None:
    """Where a lifecycle state read off the wire is heading: `ACTIVE` for `PENDING_ACTIVE`, None
    for a settled state (or one this client does not know)."""
    for pending, target in SETTLES_TO.items():
        if pending.value == state:
            return target.value
    return None


def title(mode: str) -> str:
    """`WEIGHT_STREAMING` → `Weight Streaming`: a mode as the real CLI shows it to people."""
    return mode.replace("_", " ").title()


class ExecMode(str, Enum):
    PIPELINED = "PIPELINED"
    WEIGHT_STREAMING = "WEIGHT_STREAMING"

    @property
    def title(self) -> str:
        """The name the real CLI shows people: `Weight Streaming`, `Pipelined`."""
        return title(self.value)

    @classmethod
    def parse(cls, text: str) -> "ExecMode":
        """Accept `WEIGHT_STREAMING`, `weight-streaming`, `Weight Streaming`, any case.

        Raises ValueError naming the accepted values.
        """
        key = text.strip().upper().replace("-", "_").replace(" ", "_")
        try:
            return cls(key)
        except ValueError:
            accepted = ", ".join(m.value for m in cls)
            shown = repr(text) if len(text) <= 40 else repr(text[:39] + "…")
            raise ValueError(f"unknown execution mode {shown}; use one of {accepted}") from None


# What the console offers to complete a mode with (ExecMode.parse takes these and more).
EXECMODE_SPELLINGS = (*(m.value for m in ExecMode), *(m.value.lower().replace("_", "-") for m in ExecMode))


class Health(str, Enum):
    """The `systemHealth` values this model produces (a subset of the real enum): the
    lifecycle's, and those its faults imply (statemachine/faults/__init__.py ranks them)."""

    OK = "OK"
    DEGRADED = "DEGRADED"
    CRITICAL = "CRITICAL"
    STANDBY = "STANDBY"
    PENDING_STANDBY = "PENDING_STANDBY"
    PENDING_ACTIVE = "PENDING_ACTIVE"
    MISSING = "MISSING"
    HARDWARE_ERROR = "HARDWARE_ERROR"
    CRITICAL_EMERGENCY_SHUTDOWN = "CRITICAL_EMERGENCY_SHUTDOWN"


class Severity(str, Enum):
    INFO = "INFO"
    WARN = "WARN"
    ERROR = "ERROR"
    CRITICAL = "CRITICAL"
