"""Colour for a person at a terminal: systemHealth and event severities by how bad they are,
and `Error` in red. Never in a pipe or a file, never with `NO_COLOR` set (no-color.org), never on
a `dumb` terminal: scripts and logs get the same text, byte for byte, as before.
"""

from __future__ import annotations

import os

from ..shared.states import Health, Severity

_RESET = "\x1b[0m"
_SGR = {"green": "32", "yellow": "33", "red": "31", "bold red": "1;31", "cyan": "36"}
# How bad each systemHealth is: usable (green), usable with a warning (yellow), unusable (red),
# on its way or parked by an admin (cyan).
HEALTH = {
    Health.OK: "green", Health.DEGRADED: "yellow", Health.CRITICAL: "bold red", Health.MISSING: "bold red",
    Health.HARDWARE_ERROR: "bold red", Health.CRITICAL_EMERGENCY_SHUTDOWN: "bold red",
    Health.STANDBY: "cyan", Health.PENDING_STANDBY: "cyan", Health.PENDING_ACTIVE: "cyan",
}
SEVERITY = {Severity.WARN: "yellow", Severity.ERROR: "red", Severity.CRITICAL: "bold red"}


def wanted(stream) -> bool:
    """Whether text written to `stream` may be coloured."""
    if os.environ.get("NO_COLOR") or os.environ.get("TERM") == "dumb":
        return False
    try:
        return stream.isatty()
    except (AttributeError, ValueError):  # no isatty, or a closed stream
        return False


class Paint:
    """Wraps text in the colour its meaning calls for, or returns it unchanged when `on` is False."""

    def __init__(self, on: bool):
        self.on = on

    def _wrap(self, text: str, colour: str | None) -> str:
        return f"\x1b[{_SGR[colour]}m{text}{_RESET}" if self.on and colour else text

    def health(self, value: str, text: str | None = None) -> str:
        """`text` (default: the value itself) in the colour of the systemHealth `value`."""
        return self._wrap(value if text is None else text, HEALTH.get(value))

    def severity(self, value: str, text: str | None = None) -> str:
        return self._wrap(value if text is None else text, SEVERITY.get(value))

    def error(self, text: str) -> str:
        return self._wrap(text, "bold red")


PLAIN = Paint(False)
