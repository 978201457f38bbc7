"""csd's settings: defaults here, overridden by command-line flags (daemon/main.py)."""

from __future__ import annotations

import os
from dataclasses import dataclass, field

from csadmin import protocol


def default_state_dir() -> str:
    # systemd's StateDirectory= sets $STATE_DIRECTORY; root without systemd uses /var/lib/csd.
    explicit = os.environ.get("STATE_DIRECTORY")
    if explicit:
        return explicit.split(":")[0]
    if os.geteuid() == 0:
        return "/var/lib/csd"
    base = os.environ.get("XDG_STATE_HOME") or os.path.expanduser("~/.local/state")
    return os.path.join(base, "csd")


@dataclass
class Config:
    state_dir: str = field(default_factory=default_state_dir)
    endpoint: str = field(default_factory=lambda: os.environ.get("CSD_ENDPOINT") or protocol.default_endpoint())
    events_endpoint: str = field(default_factory=protocol.default_events_endpoint)
    activate_seconds: float = 5.0
    standby_seconds: float = 3.0
    serial: str = "CS2-0001"
    keep_events: int = 10_000
    log_level: str = "info"
    log_format: str = "auto"  # auto: JSON unless stdout is a terminal
    connection_file: str = ""  # "": csd.json next to the ipc request socket, else in the runtime dir
