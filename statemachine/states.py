"""State constants and their groupings (stdlib only, in the manner of supervisor's states.py).

The string values are the wire and display strings; they match the real system's CLI.
"""

from enum import Enum


class Lifecycle(str, Enum):
    STANDBY = "STANDBY"
    PENDING_ACTIVE = "PENDING_ACTIVE"
    ACTIVE = "ACTIVE"
    PENDING_STANDBY = "PENDING_STANDBY"


PENDING_STATES = frozenset({Lifecycle.PENDING_ACTIVE, Lifecycle.PENDING_STANDBY})

# Where each pending state settles once its simulated duration has elapsed.
SETTLES_TO = {
    Lifecycle.PENDING_ACTIVE: Lifecycle.ACTIVE,
    Lifecycle.PENDING_STANDBY: Lifecycle.STANDBY,
}


class ExecMode(str, Enum):
    PIPELINED = "PIPELINED"
    WEIGHT_STREAMING = "WEIGHT_STREAMING"

    @property
    def title(self) -> str:
        """The name the real CLI shows people: `Weight Streaming`, `Pipelined`."""
        return self.value.replace("_", " ").title()

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


class Health(str, Enum):
    """The `systemHealth` values this model produces (a subset of the real enum)."""

    OK = "OK"
    DEGRADED = "DEGRADED"
    CRITICAL = "CRITICAL"
    STANDBY = "STANDBY"
    PENDING_STANDBY = "PENDING_STANDBY"
    PENDING_ACTIVE = "PENDING_ACTIVE"


class Severity(str, Enum):
    INFO = "INFO"
    WARN = "WARN"
    ERROR = "ERROR"
    CRITICAL = "CRITICAL"
