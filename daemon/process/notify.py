"""sd_notify: tell systemd (Type=notify) when csd is ready, reloading, stopping, and alive.

The protocol is one datagram of `KEY=value` lines to the unix socket named by $NOTIFY_SOCKET
(a leading `@` means the Linux abstract namespace). Without $NOTIFY_SOCKET (csd run by hand or
in tests) every call is a no-op. Sending never raises: a lost notification must not take the
daemon down (systemd's own watchdog will say so if the loop really is stuck).
"""

from __future__ import annotations

import os
import socket
import time


class Notifier:
    def __init__(self, environ=None):
        env = os.environ if environ is None else environ
        address = env.get("NOTIFY_SOCKET", "")
        if address.startswith("@"):
            address = "\0" + address[1:]
        self.address = address or None
        self._sock = None
        if self.address:
            self._sock = socket.socket(socket.AF_UNIX, socket.SOCK_DGRAM | socket.SOCK_CLOEXEC)
        self.watchdog_ms = self._watchdog_interval(env)

    @staticmethod
    def _watchdog_interval(env) -> int | None:
        """Half of $WATCHDOG_USEC in ms (systemd's advice), or None when no watchdog is asked
        for, or it is meant for another process ($WATCHDOG_PID)."""
        try:
            usec = int(env.get("WATCHDOG_USEC", "0"))
        except ValueError:
            return None
        pid = env.get("WATCHDOG_PID")
        if usec <= 0 or (pid and pid != str(os.getpid())):
            return None
        return max(1, usec // 2000)

    @property
    def enabled(self) -> bool:
        return self._sock is not None

    def send(self, *fields: str) -> bool:
        """Send `KEY=value` fields as one datagram; True if it went out."""
        if self._sock is None:
            return False
        try:
            self._sock.sendto("\n".join(fields).encode(), self.address)
            return True
        except OSError:
            return False

    def ready(self, status: str = "") -> bool:
        return self.send("READY=1", *([f"STATUS={status}"] if status else []))

    def status(self, text: str) -> bool:
        return self.send(f"STATUS={text}")

    def reloading(self) -> bool:
        # MONOTONIC_USEC lets systemd ≥ 253 (Type=notify-reload) match this to the reload.
        return self.send("RELOADING=1", f"MONOTONIC_USEC={time.clock_gettime_ns(time.CLOCK_MONOTONIC) // 1000}")

    def stopping(self) -> bool:
        return self.send("STOPPING=1")

    def watchdog(self) -> bool:
        return self.send("WATCHDOG=1")

    def close(self) -> None:
        if self._sock is not None:
            self._sock.close()
            self._sock = None
