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
    """`systemHealth`: every value of the real enum (status_cs2), each with its numeric code,
    declared least to most severe as the real tooling ranks them (tests/reference/
    cs2-system-health.tsv). `rank` is that position and `worst()` the most severe of some values.
    SYSTEM_NOT_REACHABLE and ADMIN_SVC_UNKNOWN are what a client says when it cannot ask: a system
    never reports them, so they have no rank. The model reports its lifecycle's values
    (statemachine/lifecycle_rules.py HEALTH) and its faults' (statemachine/faults); the console
    colours them (csadmin/cli/colour.py); csd's metrics show them and their codes.

    A new value is one line here, at its place in the rank: (value, code)."""

    UNKNOWN = "UNKNOWN", 0
    OK = "OK", 1
    PENDING_STANDBY = "PENDING_STANDBY", 6
    PENDING_ACTIVE = "PENDING_ACTIVE", 7
    STANDBY = "STANDBY", 5
    UPDATING_SW = "UPDATING_SW", 13
    DEGRADED = "DEGRADED", 2
    MISSING = "MISSING", 8
    NO_POWER = "NO_POWER", 9
    CRITICAL = "CRITICAL", 3
    CRITICAL_EMERGENCY_SHUTDOWN = "CRITICAL_EMERGENCY_SHUTDOWN", 4
    DISABLED = "DISABLED", 11
    UNAVAILABLE = "UNAVAILABLE", 12
    HARDWARE_ERROR = "HARDWARE_ERROR", 10
    SYSTEM_NOT_REACHABLE = "SYSTEM_NOT_REACHABLE", -2, False
    ADMIN_SVC_UNKNOWN = "ADMIN_SVC_UNKNOWN", -1, False

    def __new__(cls, value: str, code: int, ranked: bool = True):
        member = str.__new__(cls, value)
        member._value_ = value
        member.code = code  # the real enum's number (csd_system_health_code)
        member.ranked = ranked
        return member

    __hash__ = str.__hash__  # a value and its wire string are the same key

    @property
    def rank(self) -> int | None:
        """Its position, least severe first (None: a client-side value, never reported)."""
        return _RANKS.get(self)

    @classmethod
    def worst(cls, *healths: "Health | str") -> "Health":
        """The most severe of `healths` (at least one; each ranked: KeyError otherwise)."""
        return max((cls(h) for h in healths), key=_RANKS.__getitem__)


_RANKS = {health: i for i, health in enumerate(h for h in Health if h.ranked)}

# The values in which the system counts as activated, as the tooling says: runs may use it, and
# Slurm gives its node jobs (csadmin/slurm/health.py).
ACTIVATED_HEALTH = frozenset({Health.OK, Health.DEGRADED})


class Severity(str, Enum):
    INFO = "INFO"
    WARN = "WARN"
    ERROR = "ERROR"
    CRITICAL = "CRITICAL"
