"""How a client talks to csd: a CURVE DEALER socket, request ids, timeouts and retries.

Requests travel on a DEALER socket with a request id; a call that gets no answer within its
share of `timeout` is resent with the *same* id (csd answers a retried mutating request with its
first reply, so a retry never causes a second change). Errors raise the class of their code from
`csadmin.errors`. Every connection is CURVE-encrypted and authenticated: the client needs csd's
public key and its own secret key file (csadmin/clientlib/credentials.py says where each is looked for).

Every socket is made with LINGER 0, after the keys are read (so an unusable key raises before
any socket exists) and closed again on every error path; `close()` closes whatever is still open
on a context it made, so it never blocks. Importing this module loads only pyzmq and the stdlib.
"""

from __future__ import annotations

import os
import struct
import time

import zmq

from .. import errors
from ..shared import connection, protocol
from ..shared.ops import Op
from .credentials import check_listening, resolve

_HANDSHAKE_FAILURES = zmq.EVENT_HANDSHAKE_FAILED_AUTH | zmq.EVENT_HANDSHAKE_FAILED_NO_DETAIL
_LATE = object()  # a reply to an earlier request of ours that had timed out


def _name(op: Op | str) -> str:
    return op if isinstance(op, str) else op.name


class Transport:
    """One client's connection to csd: `call(op, **args)` and the sockets behind it (the
    operations themselves are csadmin/client.py's)."""

    def __init__(
        self,
        endpoint: str | None = None,
        timeout: float = 5.0,
        retries: int = 2,
        context: zmq.Context | None = None,
        identity: bytes | None = None,
        *,
        connect: str | None = None,
        key: str | None = None,
        server_key: str | None = None,
    ):
        """`endpoint`: the daemon's request socket (default: from the connection file, else
        `$CS_ENDPOINT` or the local ipc socket). `timeout`: seconds a call may take in all,
        spread over `retries` + 1 sends. `connect`: a connection file (`$CS_CONNECT`); `key`:
        this client's secret key file (`$CS_KEY`); `server_key`: csd's public key, Z85
        (`$CS_SERVER_KEY`). Files are read at the first call, not here. `identity`: the
        socket's routing id (default random), which csd reports as the caller's session."""
        self._given = (endpoint, server_key, connect, key)
        self._resolved = None
        self.endpoint = endpoint or connection.default_endpoint()
        self.timeout = timeout
        self.retries = retries
        self._own_context = context is None
        self._ctx = context or zmq.Context()
        self._identity = identity or os.urandom(16).hex().encode()
        self._sock: zmq.Socket | None = None
        self._monitor: zmq.Socket | None = None
        self._watched = _HANDSHAKE_FAILURES  # what the first connection's monitor reports
        self._events_endpoint: str | None = None

    def target(self) -> str:
        """The endpoint this client talks to, resolved from the connection file if need be
        (raises NoCredentials or Unreachable if it cannot be)."""
        return self._credentials().endpoint

    @property
    def session(self) -> str:
        """This client's connection identity, as events it causes name it (`details.by.session`)."""
        return self._identity.decode()

    # -- plumbing ------------------------------------------------------------------------------

    def _credentials(self):
        if self._resolved is None:
            endpoint, server_key, connect, key = self._given
            self._resolved = resolve(endpoint, server_key, connect, key)
            self.endpoint = self._resolved.endpoint
            self._events_endpoint = self._events_endpoint or self._resolved.events_endpoint
        return self._resolved

    def new_socket(self, kind: int, endpoint: str, **options) -> zmq.Socket:
        """A CURVE socket of `kind` with this client's keys, connected to `endpoint`. The keys
        are read before the socket exists; if anything fails after, the socket is closed again
        (an open socket would make Context.term() block forever)."""
        creds = self._credentials()
        sock = self._ctx.socket(kind)
        try:
            sock.setsockopt(zmq.LINGER, 0)
            sock.setsockopt(zmq.CURVE_SERVERKEY, creds.server_key.encode())
            sock.setsockopt(zmq.CURVE_PUBLICKEY, creds.public_key.encode())
            sock.setsockopt(zmq.CURVE_SECRETKEY, creds.secret_key.encode())
            for option, value in options.items():
                sock.setsockopt(getattr(zmq, option), value)
            if kind == zmq.DEALER:
                # Watch the first handshake, so a refused key fails at once and says so instead
                # of timing out; dropped after the first reply (later refusals arrive as replies).
                self._monitor = sock.get_monitor_socket(self._watched)
            sock.connect(endpoint)
        except BaseException as exc:
            if kind == zmq.DEALER:
                self._stop_monitor(sock)
            sock.close(0)
            if isinstance(exc, zmq.ZMQError):
                raise errors.Unreachable(f"Cannot connect to {endpoint}: {exc}.",
                                         "Check the endpoint (--endpoint, CS_ENDPOINT or the connection file).") from None
            raise
        return sock

    def _socket(self, probe: bool = True) -> zmq.Socket:
        if self._sock is None:
            # A named ipc endpoint with nothing behind it says more than a missing key would.
            given = self._given[0] or os.environ.get("CS_ENDPOINT")
            check_listening(given, probe)
            self._credentials()
            if self.endpoint != given:  # the connection file's: probed once, not twice
                check_listening(self.endpoint, probe)
            if not probe:  # then a refused connect shows on the monitor (_connection_failed)
                self._watched = _HANDSHAKE_FAILURES | zmq.EVENT_CONNECT_RETRIED
            # A stable identity lets the daemon recognise our retries as ours.
            self._sock = self.new_socket(zmq.DEALER, self.endpoint, ROUTING_ID=self._identity)
        return self._sock

    def _wait(self, sock: zmq.Socket, timeout_ms: int) -> bool:
        """Wait for a reply; raise if the handshake is refused meanwhile."""
        if self._monitor is None:
            return bool(sock.poll(timeout_ms, zmq.POLLIN))
        poller = zmq.Poller()
        poller.register(sock, zmq.POLLIN)
        poller.register(self._monitor, zmq.POLLIN)
        ready = dict(poller.poll(timeout_ms))
        if self._monitor in ready:
            self._connection_failed()
        return sock in ready

    def _connection_failed(self) -> None:
        while self._monitor.poll(0, zmq.POLLIN):
            event, value = struct.unpack("=HI", self._monitor.recv_multipart()[0][:6])
            if event == zmq.EVENT_CONNECT_RETRIED:  # watched only without the probe (send())
                raise errors.Unreachable(
                    f"csd is not listening at {self.endpoint}: the connection was refused.",
                    "Is csd running (`systemctl status csd`)? Check the endpoint or the connection file.",
                )
            if event == zmq.EVENT_HANDSHAKE_FAILED_AUTH and value == 400:
                raise errors.PermissionDenied(
                    f"csd at {self.endpoint} refused this client's key: it is not registered, or was revoked.",
                    "Check --key / CS_KEY, or ask an admin for a key (`csd keys add NAME --role ROLE`).",
                )
            if event == zmq.EVENT_HANDSHAKE_FAILED_AUTH:
                raise errors.Internal(
                    f"csd at {self.endpoint} could not authenticate this client (status {value}).",
                    "Its authenticator is down; csd refuses everyone until it is restarted (see its log).",
                )
            raise errors.Unreachable(
                f"The secure handshake with csd at {self.endpoint} failed.",
                "The server key is probably not this csd's: check --connect / --server-key "
                "(or csd cannot authenticate anyone right now: see its log).",
            )

    def _stop_monitor(self, sock: zmq.Socket | None = None) -> None:
        if self._monitor is not None:
            try:
                (sock or self._sock).disable_monitor()
            except zmq.ZMQError:
                pass
            self._monitor.close(0)
            self._monitor = None

    def call(self, op: Op | str, **args) -> dict:
        """Send one request for `op` (csadmin/shared/ops.py: `call(ops.SYSTEM_SHOW)`) and return its
        result, or raise the error's class. A bare name is sent as it is: what a client in
        another language sends, or a test of names csd must refuse."""
        sock = self._socket()
        request_id = os.urandom(12).hex()  # not uuid: its import costs ~4 ms per one-shot
        op = _name(op)
        frame = protocol.request(request_id, op, args)
        per_try_ms = max(1, int(self.timeout * 1000 / (self.retries + 1)))
        for _ in range(self.retries + 1):
            sock.send(frame)
            deadline = time.monotonic() + per_try_ms / 1000
            while True:
                remaining = int((deadline - time.monotonic()) * 1000)
                if remaining <= 0 or not self._wait(sock, remaining):
                    break
                result = self._answer(sock.recv(), request_id)
                if result is not _LATE:
                    return result
        raise self.no_answer(op)

    def _answer(self, frame: bytes, request_id: str):
        """A reply's result (its error raised), or _LATE: an answer to an earlier call that timed out."""
        reply = protocol.decode_reply(frame)
        self._stop_monitor()
        if reply.get("id") != request_id:
            return _LATE
        if reply["ok"]:
            return reply["result"]
        raise errors.from_wire(reply["error"])

    def no_answer(self, op: str) -> errors.Unreachable:
        """The error for `op` left unanswered within this client's timeout."""
        return errors.Unreachable(
            f"csd at {self.endpoint} did not answer {op} within {self.timeout:g} s.",
            "Check that csd is running and reachable, or raise --timeout. If it is, it may have refused "
            "this client's key (unknown or revoked: see --key / CS_KEY) or the server key is not csd's (--connect).",
        )

    # -- one request among many: a caller polling several clients at once (csadmin/fleet/query.py) --

    def send(self, op: Op | str, **args) -> str:
        """Send one request without waiting (no retry); returns its id for `reply`. The endpoint
        is not probed first: a refused connection raises from `reply` instead, at once."""
        request_id = os.urandom(12).hex()
        self._socket(probe=False).send(protocol.request(request_id, _name(op), args))
        return request_id

    def pollable(self) -> list[zmq.Socket]:
        """What to poll (POLLIN) for this client's answer: its request socket, and the
        connection's monitor while the first handshake is pending (a refused connection or key
        shows there)."""
        return [sock for sock in (self._sock, self._monitor) if sock is not None]

    def reply(self, request_id: str) -> dict | None:
        """The result of `request_id` if its answer has arrived (its error, or a refused
        connection or handshake, raised), else None. Never blocks."""
        if self._monitor is not None and self._monitor.poll(0, zmq.POLLIN):
            self._connection_failed()
        while self._sock is not None and self._sock.poll(0, zmq.POLLIN):
            result = self._answer(self._sock.recv(), request_id)
            if result is not _LATE:
                return result
        return None

    def sibling(self, timeout: float | None = None, retries: int | None = None):
        """Another client on the same context and with the same key, for another thread (zmq
        sockets are not thread-safe): csd knows it by the same key name, on its own route."""
        identity = self._identity[:16] + os.urandom(8).hex().encode()
        other = type(self)(
            self.endpoint, self.timeout if timeout is None else timeout,
            self.retries if retries is None else retries, context=self._ctx, identity=identity,
        )
        other._given, other._resolved = self._given, self._credentials()
        other.endpoint, other._events_endpoint = self.endpoint, self._events_endpoint
        return other

    def close(self) -> None:
        """Close this client's sockets. On a context the client made, every socket still open
        on it is closed too (a subscription its caller forgot), so this never blocks; a `context`
        passed in is its owner's to terminate."""
        if self._sock is not None:
            self._stop_monitor()
            self._sock.close(0)
            self._sock = None
        if self._own_context:
            self._ctx.destroy(linger=0)

    def __enter__(self):
        return self

    def __exit__(self, *exc) -> None:
        self.close()

