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

    def update(self, snapshot: dict) -> None:
        with self.lock:
            self.snapshot = snapshot
            self.received_at = time.monotonic()
            self.connected = True

    def lost(self) -> None:
        with self.lock:
            self.connected = False
