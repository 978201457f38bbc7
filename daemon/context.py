"""What a command's `execute` gets: the device and the facts the daemon knows about itself."""

from __future__ import annotations

from dataclasses import dataclass

from statemachine.device import Device


@dataclass
class Context:
    device: Device
    events_endpoint: str
    started_at: int  # ms since the epoch
    version: str
