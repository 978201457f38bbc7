"""Who sent a request: the key name csd's authenticator gave its connection (the frame's
User-Id) and that key's role in the key registry as last refreshed, per client socket.

Remembered per registry load (a reload may change every role) and bounded (MAX_CALLERS: many
short-lived sockets start it again), so telling who asked costs a request one dict lookup.
"""

from __future__ import annotations

import zmq

from .context import Caller

MAX_CALLERS = 4096  # callers remembered between registry loads


class Callers:
    def __init__(self, registry):
        """`registry`: the key registry (daemon/auth/key_registry.py): its `loaded` changes at each
        load, and `role_of(name)` is a key's role (None: not registered)."""
        self._registry = registry
        self._known: dict[tuple[bytes, str], Caller] = {}  # (identity, key name) -> Caller, per registry load
        self._of_load = None  # the registry load they were made from

    def of(self, identity: bytes, frame: zmq.Frame) -> Caller:
        """Who sent `frame`: the User-Id our authenticator gave its connection, and that key's role
        in the registry as last refreshed (the loop refreshes it after receiving a batch, so a
        key revoked before a message was sent is refused). `identity` (the client socket's) tells
        one session of a key from another."""
        try:
            name = frame.get("User-Id")
        except zmq.ZMQError:  # the handshake never went through our authenticator
            return Caller(None, None, identity.decode(errors="backslashreplace"))
        registry = self._registry
        if self._of_load is not registry.loaded:  # re-read: every role may have changed
            self._of_load = registry.loaded
            self._known.clear()
        caller = self._known.get((identity, name))
        if caller is None:
            if len(self._known) >= MAX_CALLERS:
                self._known.clear()
            caller = Caller(name, registry.role_of(name), identity.decode(errors="backslashreplace"))
            self._known[(identity, name)] = caller
        return caller
