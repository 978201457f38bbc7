"""What a command's `execute` gets: the device and the facts the daemon knows about itself."""

from __future__ import annotations

from dataclasses import dataclass

from statemachine.device import Device


@dataclass(frozen=True)
class Caller:
    """Who sent a request: `name` identifies the client (its key name once CURVE is on, else
    its socket identity) and `role` is what it may do (`admin`, `operator`, `viewer`)."""

    name: str
    role: str
    session: str = ""  # the client socket's identity: one shell or runtime process

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
