"""The serving loop: one thread, one `zmq.Poller`, the device's timed transition as the only timer.

Requests arrive on a ROUTER socket and are answered in arrival order; events go out on a PUB
socket after they are durable. Both are CURVE servers; the ZAP authenticator (auth.py) is polled
by the same loop, and each request's caller comes from its User-Id and the key registry. SIGTERM/SIGINT wake the poller through a self-pipe and the loop
drains and exits (finite LINGER, so shutdown never hangs on a gone peer).
"""

from __future__ import annotations

import os
import signal
import time

import zmq

from csadmin import __version__, protocol
from statemachine.device import Device, Timings
from statemachine.events import EventLog

from . import connection
from .auth import Authenticator, check_libzmq, secure_server_socket
from .config import Config
from .context import Caller, Context
from .dispatch import Dispatcher
from .keys import KeyStore, Registry
from .store import Store

IDLE_POLL_MS = 1000  # wake at least this often even with nothing to do
BATCH = 256  # requests served per wake-up before timers get a turn
LINGER_MS = 500
REFUSED_AUDITED_PER_SECOND = 10  # refused handshakes recorded one by one; the rest are counted


def wall_ms() -> int:
    return int(time.time() * 1000)


def _ensure_ipc_dir(endpoint: str) -> None:
    if endpoint.startswith("ipc://"):
        os.makedirs(os.path.dirname(os.path.abspath(endpoint[len("ipc://"):])), mode=0o755, exist_ok=True)


class Server:
    def __init__(self, config: Config, log):
        self.config = config
        self.log = log
        self._stopping = False
        self._reload_requested = False
        self._refused_second, self._refused_in_second, self._refused_unrecorded = 0, 0, 0

    def start(self) -> None:
        """Open and check the store, restore the device, roll forward an interrupted
        transition, then bind. Only after this returns does the daemon answer anyone."""
        cfg = self.config
        check_libzmq()
        self.store = Store(cfg.state_dir, keep_events=cfg.keep_events)
        snapshot, events, replies = self.store.load()
        log = EventLog(capacity=cfg.keep_events)
        log.restore(events)
        timings = Timings(int(cfg.activate_seconds * 1000), int(cfg.standby_seconds * 1000))
        self.device = Device(wall_ms, timings, serial=cfg.serial, events=log)
        if snapshot is not None:
            self.device.restore(snapshot)
        seq_before = log.last_seq
        if self.device.recover():
            self.log.warning("transition_rolled_forward", state=self.device.lifecycle.value)
        if snapshot is None or log.last_seq != seq_before:
            self.store.commit(self.device.snapshot(), log.newest(log.last_seq - seq_before))

        keys = KeyStore(cfg.state_dir)
        server_public, server_secret = keys.ensure_server_keypair()
        self.registry = Registry(keys.registry_path, self.log)
        self.ctx = zmq.Context()
        # The authenticator binds before any CURVE socket does, in their context (auth.py says why).
        self.auth = Authenticator(self.ctx, self.registry, self.log, on_denied=self._audit_refused_connection)
        self.auth.start()
        self.router = self.ctx.socket(zmq.ROUTER)
        self.router.setsockopt(zmq.LINGER, LINGER_MS)
        self.router.setsockopt(zmq.MAXMSGSIZE, protocol.MAX_FRAME_BYTES)
        # A client that reconnects with the same identity (a retry after a network blip)
        # takes over its old route instead of being ignored.
        self.router.setsockopt(zmq.ROUTER_HANDOVER, 1)
        self.pub = self.ctx.socket(zmq.PUB)
        self.pub.setsockopt(zmq.LINGER, LINGER_MS)
        enforced = True
        for sock, endpoint in ((self.router, cfg.endpoint), (self.pub, cfg.events_endpoint)):
            enforced = secure_server_socket(sock, server_secret) and enforced
            _ensure_ipc_dir(endpoint)
            sock.bind(endpoint)
        if not enforced:
            self.log.warning("zap_not_enforced_by_libzmq", effect="csd's own checks still refuse unauthenticated requests")
        endpoint, events_endpoint = (connection.bound(s) for s in (self.router, self.pub))
        self.connection_file = connection.path_for(cfg)
        connection.write(self.connection_file, endpoint, events_endpoint, server_public, self.device.serial)

        context = Context(self.device, events_endpoint, wall_ms(), __version__, audit_entries=self.store.audit_entries)
        self.dispatcher = Dispatcher(context, self.store, self._publish, self.log, self.auth, replies)
        self.log.info(
            "ready", endpoint=endpoint, events_endpoint=events_endpoint, state_dir=cfg.state_dir,
            connection_file=self.connection_file, server_key=server_public,
            state=self.device.lifecycle.value, execmode=self.device.active_mode.value, seq=log.last_seq,
        )

    def _caller(self, frame: zmq.Frame) -> Caller:
        """Who sent `frame`: the User-Id our authenticator gave its connection, and that key's
        role in the registry as of now (so a revoked key is refused from its next message)."""
        try:
            name = frame.get("User-Id")
        except zmq.ZMQError:  # the handshake never went through our authenticator
            return Caller(None, None)
        self.registry.refresh()
        return Caller(name, self.registry.role_of(name))

    def _audit_refused_connection(self, public_key: str | None, address: str, reason: str) -> None:
        # Anyone can attempt a handshake, so these records are rate-limited: a flood of strangers
        # must not turn into a flood of fsyncs on the loop that serves everyone.
        second = int(time.monotonic())
        if second != self._refused_second:
            self._refused_second, self._refused_in_second = second, 0
        self._refused_in_second += 1
        if self._refused_in_second > REFUSED_AUDITED_PER_SECOND:
            self._refused_unrecorded += 1
            return
        message = f"Handshake refused: {reason}."
        if self._refused_unrecorded:
            message += f" ({self._refused_unrecorded} earlier refusals were not recorded one by one: too many.)"
            self._refused_unrecorded = 0
        args = protocol.encode({"public_key": public_key, "address": address}).decode()
        try:
            self.store.audit((wall_ms(), None, None, "connect", args, "REFUSED", message))
        except Exception:
            self.log.exception("audit_write_failed", op="connect")

    @property
    def healthy(self) -> bool:
        """False once the authenticator is down: csd then refuses everything (fails closed).
        For health reporting (systemd STATUS=/watchdog): an unhealthy csd wants a restart."""
        return self.auth.healthy

    def reload_keys(self) -> None:
        """Re-read the key registry now (SIGHUP). Changes are also noticed on the next message."""
        self.registry.refresh(force=True)

    def _publish(self, event: dict) -> None:
        self.pub.send_multipart(protocol.event_frames(event))

    def _poll_timeout(self) -> int:
        deadline = self.device.next_deadline()
        if deadline is None:
            return IDLE_POLL_MS
        return max(0, min(IDLE_POLL_MS, deadline - wall_ms()))

    def _request_reload(self, *_):
        self._reload_requested = True

    def request_stop(self, *_):
        self._stopping = True

    def serve_forever(self) -> None:
        wake_r, wake_w = os.pipe()
        os.set_blocking(wake_r, False)
        os.set_blocking(wake_w, False)
        previous_fd = signal.set_wakeup_fd(wake_w)
        for sig in (signal.SIGTERM, signal.SIGINT):
            signal.signal(sig, self.request_stop)
        signal.signal(signal.SIGHUP, self._request_reload)  # a flag only: the loop does the work
        poller = zmq.Poller()
        poller.register(self.router, zmq.POLLIN)
        poller.register(self.auth.socket, zmq.POLLIN)
        poller.register(wake_r, zmq.POLLIN)
        router, dispatcher, auth = self.router, self.dispatcher, self.auth
        auth_polled = True
        try:
            while not self._stopping:
                if auth_polled and auth.socket.closed:  # stopped: from now on requests are refused
                    poller.unregister(auth.socket)
                    auth_polled = False
                ready = dict(poller.poll(self._poll_timeout()))
                if self._reload_requested:
                    self._reload_requested = False
                    self.reload_keys()
                if auth_polled and auth.socket in ready:  # handshakes first: they gate everything else
                    auth.handle_ready()
                if router in ready:
                    for _ in range(BATCH):
                        try:
                            frames = router.recv_multipart(zmq.NOBLOCK, copy=False)  # Frames carry the User-Id
                        except zmq.Again:
                            break
                        if len(frames) < 2:
                            continue  # no payload: nothing to answer
                        identity, payload = frames[0].bytes, frames[-1]
                        reply = dispatcher.handle(identity, payload.bytes, self._caller(payload))
                        router.send_multipart([f.bytes for f in frames[:-1]] + [reply])
                if wake_r in ready:
                    try:
                        os.read(wake_r, 512)
                    except BlockingIOError:
                        pass
                dispatcher.tick()
        finally:
            signal.set_wakeup_fd(previous_fd)
            os.close(wake_r)
            os.close(wake_w)
        self.log.info("stopping", state=self.device.lifecycle.value)

    def close(self) -> None:
        connection.remove(self.connection_file)
        self.router.close()
        self.pub.close()
        self.auth.close()  # last: nothing it guards is open any more
        self.ctx.term()
        self.store.close()
