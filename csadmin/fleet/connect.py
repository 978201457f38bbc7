"""A client for one inventory system (stdlib and pyzmq only)."""

from __future__ import annotations

import zmq

from ..client import Client
from ..clientlib.inventory import System
from ..shared import connection


def endpoint_and_key(system: System) -> tuple[str, str]:
    """`system`'s request endpoint and server key, from the inventory alone (its connection file
    read now): $CS_ENDPOINT / $CS_SERVER_KEY, meant for the one csd `cs` talks to by default,
    must not redirect a named system. Unreachable if its connection file is missing (a stopped
    csd removes it) or is not one."""
    if system.connect is None:
        return system.endpoint, system.server_key
    info = connection.read(system.connect)
    return system.endpoint or info["endpoint"], system.server_key or info["server_key"]


def client_for(system: System, timeout: float, retries: int = 0, context: zmq.Context | None = None,
               default_key: str | None = None) -> Client:
    """A Client to `system`, with its own key, else `default_key` (else the key `cs` finds
    anyway: $CS_KEY, ~/.config/cs/client.key_secret). Reads its connection file now."""
    endpoint, server_key = endpoint_and_key(system)
    return Client(endpoint, timeout=timeout, retries=retries, context=context, connect=system.connect,
                  key=system.key or default_key, server_key=server_key)
