"""The metrics listener's listening socket and the limits on the connections it accepts
(daemon/metrics/http_server.py serves them; daemon/metrics/listener.py says why they are so).
"""

from __future__ import annotations

import socket
from dataclasses import dataclass

from .endpoint import MetricsEndpoint

# Descriptors: csd gives the listener at most an eighth of the headroom it keeps for libzmq
# (daemon/serve/capacity.py; ~1,500 with the unit's LimitNOFILE=16384), so this is the cap there.
MAX_CONNECTIONS = 1024
MAX_PER_PEER = 512  # from one address (loopback included): half, so one never has them all


@dataclass(frozen=True)
class Limits:
    timeout: float  # seconds from a connection's accept to the end of its answer
    min_interval: float  # seconds between answers to complete requests (pacing)
    max_connections: int = MAX_CONNECTIONS
    max_per_peer: int = MAX_PER_PEER


def bind(endpoint: MetricsEndpoint) -> socket.socket:
    family, _, _, _, address = socket.getaddrinfo(endpoint.host, endpoint.port, type=socket.SOCK_STREAM,
                                                  flags=socket.AI_PASSIVE)[0]
    server = socket.socket(family, socket.SOCK_STREAM)
    try:
        server.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        server.bind(address)
        server.listen(socket.SOMAXCONN)  # a burst of connects waits in the kernel, not refused
        server.setblocking(False)
    except OSError:
        server.close()
        raise
    return server
