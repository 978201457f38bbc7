"""What a command's `execute` gets: the device and the facts the daemon knows about itself."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Callable

from csadmin.statemachine.device import Device

from ..metrics.no_metrics import NO_METRICS


@dataclass(frozen=True)
class Caller:
    """Who sent a request: `name` is the key name the authenticator gave the connection (its
    ZMQ User-Id; None if it has none) and `role` what the key registry says it may do now
    (`admin`, `operator`, `viewer`; None for a key that is not, or no longer, registered)."""

    name: str | None
    role: str | None
    session: str = ""  # the client socket's identity: one shell or runtime process

    @property
    def client(self) -> str:
        """One client process: its key name and the first 16 characters of its socket identity
        (a client's sibling sockets, e.g. its heartbeat thread's, share them). Runs belong to
        the client that opened them, not to everyone holding the same key."""
        return f"{self.name}/{self.session[:16]}"

    def origin(self) -> dict:
        """How events caused by this caller name it (their `details.by`)."""
        return {"name": self.name, "session": self.session}


@dataclass
class Context:
    device: Device
    events_endpoint: str
    started_at: int  # ms since the epoch
    version: str
    tcp_events_endpoint: str = ""  # for clients that reach csd over TCP ("" = not bound)
    audit_entries: Callable[[int], list[dict]] | None = None  # the newest N audit records
    # The kept events matching events.show's filters (Store.events); None: the model's own tail.
    events: Callable[..., list[dict]] | None = None
    metrics: object = NO_METRICS  # what commands count beyond requests (daemon/metrics/no_metrics.py)
