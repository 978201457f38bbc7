"""csd's two ZeroMQ sockets: requests on a ROUTER, events on a PUB, both CURVE servers.

Each is bound to its endpoint from the settings (an ipc socket's directory is made, and its file
removed at a clean stop), and to the optional TCP endpoint for remote runtimes. A wildcard TCP
port (tcp://host:*) is resolved to the one the kernel picked, which is what clients need.
"""

from __future__ import annotations

import errno
import os
from dataclasses import dataclass, field

import zmq

from csadmin.shared import protocol

from ..auth.zap import secure_server_socket

LINGER_MS = 500  # a stop never hangs on a gone peer
# Messages queued per client, each way (libzmq counts messages, not bytes). A client sends one
# request at a time (a few with its sibling sockets, each its own queue), so these only bite on
# a client that floods or never reads: its requests wait in its socket, its replies are dropped.
# Not much lower: the sender's view of a queue lags (libzmq acknowledges reads in batches of half
# the limit, and csd takes the acknowledgements at most every millisecond or so), and a fast
# client doing thousands of calls a second must never lose a reply to that lag.
RCVHWM = 100
SNDHWM = 100


class BindError(Exception):
    """An endpoint csd was told to listen on cannot be bound. The message names the endpoint and
    the setting (its flag and its csd.toml key) that chose it, and why (e.g. the port is taken)."""

    def __init__(self, setting: str, endpoint: str, exc: BaseException):
        reason = getattr(exc, "strerror", None) or str(exc)
        flag = "--" + setting.replace("_", "-")
        if getattr(exc, "errno", None) == errno.EADDRINUSE:
            what_next = (f"Stop what holds it (`ss -lxtnp | grep {_port_or_path(endpoint)}` shows it), "
                         f"or choose another with {flag}.")
        else:
            what_next = f"Choose another with {flag}."
        super().__init__(
            f"cannot listen on {endpoint}, the {setting} setting ({flag}, or `{setting}` in csd.toml): {reason}. "
            + what_next
        )
        self.setting, self.endpoint = setting, endpoint


def _port_or_path(endpoint: str) -> str:
    """What `ss` output shows of an endpoint: a TCP port (`:9464`) or an ipc socket's path."""
    if endpoint.startswith("ipc://"):
        return endpoint[len("ipc://"):]
    return ":" + endpoint.rsplit(":", 1)[-1].split("/")[0]


def bind_or_say(setting: str, endpoint: str, bind) -> None:
    """Call `bind()`; a failure becomes a BindError naming `setting` and `endpoint`."""
    try:
        bind()
    except (zmq.ZMQError, OSError) as exc:
        raise BindError(setting, endpoint, exc) from exc


@dataclass
class Sockets:
    router: zmq.Socket
    pub: zmq.Socket
    endpoint: str = ""  # as bound
    events_endpoint: str = ""
    tcp: dict[str, str] = field(default_factory=dict)  # tcp_endpoint / tcp_events_endpoint, as bound
    ipc_files: list[tuple[str, int]] = field(default_factory=list)  # (path, inode) of the socket files made

    def publish(self, event: dict) -> None:
        self.pub.send_multipart(protocol.event_frames(event))

    def close(self) -> None:
        self.router.close()
        self.pub.close()

    def remove_files(self) -> None:
        """Remove the ipc socket files (after the context is terminated): libzmq leaves them
        behind, and with them gone `cs` says "csd is not listening" at once. Only if still ours:
        a csd started since may have bound the same path."""
        for path, inode in self.ipc_files:
            try:
                if os.stat(path).st_ino == inode:
                    os.unlink(path)
            except OSError:
                pass


def bind(ctx: zmq.Context, config, server_secret: str, log) -> Sockets:
    """Make and bind both sockets as `config` says; their CURVE secret is `server_secret`."""
    router = ctx.socket(zmq.ROUTER)
    router.setsockopt(zmq.LINGER, LINGER_MS)
    router.setsockopt(zmq.MAXMSGSIZE, protocol.MAX_FRAME_BYTES)
    router.setsockopt(zmq.RCVHWM, RCVHWM)
    router.setsockopt(zmq.SNDHWM, SNDHWM)
    # A client that reconnects with the same identity (a retry after a network blip) takes over
    # its old route instead of being ignored.
    router.setsockopt(zmq.ROUTER_HANDOVER, 1)
    pub = ctx.socket(zmq.PUB)
    pub.setsockopt(zmq.LINGER, LINGER_MS)
    sockets = Sockets(router, pub)
    enforced = True
    for sock, setting in ((router, "endpoint"), (pub, "events_endpoint")):
        endpoint = getattr(config, setting)
        enforced = secure_server_socket(sock, server_secret) and enforced
        if endpoint.startswith("ipc://"):
            os.makedirs(os.path.dirname(os.path.abspath(endpoint[len("ipc://"):])), mode=0o755, exist_ok=True)
        bind_or_say(setting, endpoint, lambda: sock.bind(endpoint))
        sockets.ipc_files += _ipc_file(endpoint)
    if not enforced:
        log.warning("zap_not_enforced_by_libzmq", effect="csd's own checks still refuse unauthenticated requests")
    sockets.endpoint, sockets.events_endpoint = _bound(router), _bound(pub)
    for name, sock in (("tcp_endpoint", router), ("tcp_events_endpoint", pub)):
        if getattr(config, name):
            bind_or_say(name, getattr(config, name), lambda: sock.bind(getattr(config, name)))
            sockets.tcp[name] = _bound(sock)
    return sockets


def _bound(sock: zmq.Socket) -> str:
    """The endpoint a socket bound last (a TCP port 0 or * becomes the port it got)."""
    return sock.getsockopt(zmq.LAST_ENDPOINT).decode()


def _ipc_file(endpoint: str) -> list[tuple[str, int]]:
    """[(path, inode)] of the socket file a bound ipc endpoint made; [] for TCP or an abstract
    socket (ipc://@name), which have none."""
    if not endpoint.startswith("ipc://"):
        return []
    path = endpoint[len("ipc://"):]
    try:
        return [(path, os.stat(path).st_ino)]
    except OSError:
        return []
