"""What the shell knows of the system between commands, shared by the watcher and the toolbar."""

from __future__ import annotations

import threading
import time


class LiveState:
    def __init__(self, endpoint: str):
        self.endpoint = endpoint
        self.connected = True
        self.snapshot: dict | None = None
        self.received_at = time.monotonic()
        self.lock = threading.Lock()
        self.system: str | None = None  # the inventory's name for it, when one was named

    def switch(self, system: str, endpoint: str) -> None:
        """Another system from now on (`use`): nothing known of it yet."""
        with self.lock:
            self.system, self.endpoint, self.snapshot, self.connected = system, endpoint, None, True

    def update(self, snapshot: dict) -> None:
        with self.lock:
            self.snapshot = snapshot
            self.received_at = time.monotonic()
            self.connected = True

    def lost(self) -> None:
        with self.lock:
            self.connected = False
