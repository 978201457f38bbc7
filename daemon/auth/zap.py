"""CURVE on csd's sockets, and the ZAP authenticator that admits registered keys only.

Why it is built this way (libzmq behaviour, checked against libzmq 4.3.5 in tests/daemon/
test_security.py):

- A CURVE server socket with no ZAP handler in its context completes the handshake with ANY
  client that knows the server's public key (which is public). So the handler must be bound
  before the sockets bind, in the same `zmq.Context`, and stay bound for the process lifetime.
- ZMQ_ZAP_ENFORCE_DOMAIN (a draft option in 4.3) makes libzmq fail the handshake when no handler
  is bound; we set it wherever it exists.
- Connections already made keep delivering after the handler goes away, carrying the User-Id they
  were given. So the request path refuses everything while the authenticator is unhealthy, and
  looks the User-Id up in the registry on every message (dispatch.py).

The handler runs inside the serving loop (its socket is polled with the request socket): no
thread, no lock around the registry, and a daemon stuck elsewhere is stuck for handshakes too.
If it ever fails, it answers every handshake with a refusal, and `healthy` turns false.
"""

from __future__ import annotations

import zmq
from zmq.utils import z85

ZAP_ENDPOINT = "inproc://zeromq.zap.01"
ZAP_DOMAIN = b"csd"
MIN_LIBZMQ = (4, 3, 3)  # 4.3.3 fixed CVE-2020-15166: unauthenticated peers could exhaust memory


class SecurityError(RuntimeError):
    """CURVE cannot be set up safely; the message says what to do."""


def check_libzmq() -> None:
    """Refuse a libzmq too old for a safe CURVE server, or built without CURVE."""
    if zmq.zmq_version_info() < MIN_LIBZMQ:
        raise SecurityError(
            f"libzmq {zmq.zmq_version()} is older than {'.'.join(map(str, MIN_LIBZMQ))}, which csd needs for a "
            "safe CURVE server (CVE-2020-15166). Upgrade pyzmq (its wheels bundle a current libzmq)."
        )
    if not zmq.has("curve"):
        raise SecurityError("This libzmq was built without CURVE; install a pyzmq wheel (it bundles libsodium).")


def secure_server_socket(sock: zmq.Socket, server_secret: str) -> bool:
    """Make `sock` a CURVE server that asks our ZAP handler about every peer.
    Return whether libzmq will also refuse peers when no handler answers (ZAP_ENFORCE_DOMAIN)."""
    sock.setsockopt(zmq.CURVE_SERVER, 1)
    sock.setsockopt(zmq.CURVE_SECRETKEY, server_secret.encode())
    sock.setsockopt(zmq.ZAP_DOMAIN, ZAP_DOMAIN)
    option = getattr(zmq, "ZAP_ENFORCE_DOMAIN", None)
    if option is None:
        return False
    try:
        sock.setsockopt(option, 1)
    except zmq.ZMQError:  # libzmq built without draft options: the dispatcher's checks still hold
        return False
    return True


class Authenticator:
    """The ZAP handler: maps a client's CURVE public key to its key name (the User-Id) through
    the registry; unknown keys are refused at the handshake."""

    def __init__(self, ctx: zmq.Context, registry, log, on_denied=None):
        self.ctx = ctx
        self.registry = registry
        self.log = log
        self.on_denied = on_denied  # called with (public key, address, reason) to log and audit it
        self.socket: zmq.Socket | None = None
        self.failure: str | None = None

    def start(self) -> None:
        """Bind the handler. Must run before any CURVE socket of `ctx` binds."""
        sock = self.ctx.socket(zmq.ROUTER)  # ROUTER, not REP: no send/recv state to wedge
        sock.setsockopt(zmq.LINGER, 0)
        sock.bind(ZAP_ENDPOINT)
        self.socket = sock

    @property
    def healthy(self) -> bool:
        return self.failure is None and self.socket is not None and not self.socket.closed

    def stop(self, reason: str = "stopped") -> None:
        """Unbind the handler. From here on every request is refused (the daemon is unhealthy)."""
        if self.failure is None:
            self._fail(reason)
        if self.socket is not None and not self.socket.closed:
            self.socket.close(0)

    def close(self) -> None:
        """At shutdown, after the sockets it guards are closed."""
        if self.socket is not None and not self.socket.closed:
            self.socket.close(0)

    def _fail(self, reason: str) -> None:
        self.failure = reason
        self.log.critical(
            "authenticator_down", reason=reason,
            effect="every request and new connection is refused until csd restarts",
        )

    def handle_ready(self) -> None:
        """Answer every pending ZAP request (called when the handler socket is readable)."""
        sock = self.socket
        while sock is not None and not sock.closed:
            try:
                frames = sock.recv_multipart(zmq.NOBLOCK)
            except zmq.Again:
                return
            if len(frames) < 4:
                continue  # not a ZAP request from libzmq; nothing to answer
            if self.failure is None:
                try:
                    status, text, user_id = self._authenticate(frames)
                except Exception as exc:  # a bug here must close the door, not open it
                    self.log.exception("authenticator_error")
                    self._fail(f"{type(exc).__name__}: {exc}")
            if self.failure is not None:
                status, text, user_id = b"500", b"csd's authenticator has failed", b""
            try:
                sock.send_multipart([frames[0], b"", b"1.0", frames[3], status, text, user_id, b""])
            except zmq.ZMQError as exc:
                if self.failure is None:
                    self._fail(f"cannot answer ZAP requests: {exc}")
                return

    def _authenticate(self, frames: list[bytes]) -> tuple[bytes, bytes, bytes]:
        # [routing id, b"", version, request id, domain, address, identity, mechanism, *credentials]
        version, domain, address, mechanism, credentials = frames[2], frames[4], frames[5], frames[7], frames[8:]
        if version != b"1.0" or domain != ZAP_DOMAIN or mechanism != b"CURVE" or len(credentials) != 1 \
                or len(credentials[0]) != 32:
            return self._deny(None, address, "not a CURVE request for csd")
        public = z85.encode(credentials[0]).decode()
        self.registry.refresh()
        name = self.registry.name_of(public)
        if name is None:
            return self._deny(public, address, "unknown or revoked key")
        return b"200", b"OK", name.encode()

    def _deny(self, public: str | None, address: bytes, reason: str) -> tuple[bytes, bytes, bytes]:
        peer = address.decode(errors="replace")
        if self.on_denied is not None:  # it logs and audits (rate-limited: anyone can knock)
            self.on_denied(public, peer, reason)
        else:
            self.log.warning("connection_refused", public_key=public, address=peer, reason=reason)
        return b"400", reason.encode(), b""
