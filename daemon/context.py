"""What a command's `execute` gets: the device and the facts the daemon knows about itself."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Callable

from statemachine.device import Device


@dataclass(frozen=True)
class Caller:
    """Who sent a request: `name` is the key name the authenticator gave the connection (its
    ZMQ User-Id; None if it has none) and `role` what the key registry says it may do now
    (`admin`, `operator`, `viewer`; None for a key that is not, or no longer, registered)."""

    name: str | None
    role: str | None


@dataclass
class Context:
    device: Device
    events_endpoint: str
    started_at: int  # ms since the epoch
    version: str
    audit_entries: Callable[[int], list[dict]] | None = None  # the newest N audit records
