"""The serving loop: one thread, one `zmq.Poller`; its timers are the device's timed transition
and the systemd watchdog ping.

Requests arrive on a ROUTER socket and are answered in arrival order; events go out on a PUB
socket after they are durable. Both are CURVE servers; the ZAP authenticator (auth.py) is polled
by the same loop, and each request's caller comes from its User-Id and the key registry.
SIGTERM/SIGINT wake the poller through a self-pipe and the loop drains and exits (finite
LINGER, so shutdown never hangs on a gone peer); SIGHUP wakes it to reload the config file and
the key registry. systemd hears READY=1 only after recovery, authenticator and bind, STATUS= on
each change, WATCHDOG=1 from this loop while it is healthy (so a hung loop, or one whose
authenticator is down, is restarted), RELOADING=1 … READY=1 around a reload and STOPPING=1 on
the way out.

Nothing a client sends can stop the loop: the decoder refuses what it cannot use (csadmin/
protocol.py), and any exception while handling one request is answered INTERNAL, logged with its
traceback (once per kind; repeats are counted) and the loop carries on. Each client's queues are
bounded (RCVHWM/SNDHWM: a client that does not read its replies loses them, not csd's memory), and
so are connections (daemon/capacity.py).
"""

from __future__ import annotations

import os
import signal
import time
import traceback

import zmq

from csadmin import __version__, connection, errors, protocol
from csadmin.statemachine.defaults import KEEP_RUNS, Timings
from csadmin.statemachine.device import Device

from . import audit
from .audit import HANDSHAKES, AuditTrail
from .auth import Authenticator, check_libzmq, secure_server_socket
from .capacity import ConnectionGate
from .coalesce import Coalescer
from .config import LIVE_KEYS, Config, ConfigError
from .context import Caller, Context
from .dispatch import Dispatcher
from .keys import KeyStore, Registry
from .memory import release_large_blocks
from .notify import Notifier
from .store import Store

IDLE_POLL_MS = 1000  # wake at least this often even with nothing to do
BATCH = 256  # requests served per wake-up before timers get a turn
LINGER_MS = 500
# Messages queued per client, each way (libzmq counts messages, not bytes). A client sends one
# request at a time (a few with its sibling sockets, each its own queue), so these only bite on
# a client that floods or never reads: its requests wait in its socket, its replies are dropped.
# Not much lower: the sender's view of a queue lags (libzmq acknowledges reads in batches of half
# the limit, and csd takes the acknowledgements at most every millisecond or so), and a fast
# client doing thousands of calls a second must never lose a reply to that lag.
RCVHWM = 100
SNDHWM = 100


def wall_ms() -> int:
    return int(time.time() * 1000)


def monotonic_ms() -> int:
    return time.monotonic_ns() // 1_000_000


def _ensure_ipc_dir(endpoint: str) -> None:
    if endpoint.startswith("ipc://"):
        os.makedirs(os.path.dirname(os.path.abspath(endpoint[len("ipc://"):])), mode=0o755, exist_ok=True)


def _ipc_file(endpoint: str) -> tuple[str, int] | None:
    """(path, inode) of the socket file a bound ipc endpoint made, to remove it at a clean stop."""
    if not endpoint.startswith("ipc://"):
        return None
    path = endpoint[len("ipc://"):]
    try:
        return path, os.stat(path).st_ino
    except OSError:  # an abstract socket (ipc://@name) has no file
        return None


def _bound(sock: zmq.Socket) -> str:
    """The endpoint a socket actually bound (a TCP port 0 or * becomes the port it got)."""
    return sock.getsockopt(zmq.LAST_ENDPOINT).decode()


def _remove_ipc_file(path: str, inode: int) -> None:
    # libzmq leaves the file behind; with it gone, `cs` says "csd is not listening" at once.
    # Only if it is still ours: a csd started since may have bound the same path.
    try:
        if os.stat(path).st_ino == inode:
            os.unlink(path)
    except OSError:
        pass


class Server:
    def __init__(self, config: Config, log, notifier: Notifier | None = None, load_config=None, configure_log=None):
        """`load_config()` re-reads the config for a reload (None: nothing to re-read);
        `configure_log(level, fmt)` returns a logger with new settings."""
        self.config = config
        self.log = log
        self.notifier = notifier or Notifier({})
        self._load_config = load_config
        self._configure_log = configure_log
        self._stopping = False
        self._reload_requested = False
        self._watchdog_due: int | None = None
        self._status_shown = None
        self._failures_seen: set[str] = set()  # kinds of failure already logged with a traceback
        self._failures = Coalescer(per_second=1)

    def start(self) -> None:
        """Open and check the store, restore the device, roll forward an interrupted
        transition, then bind. Only after this returns does the daemon answer anyone."""
        cfg = self.config
        check_libzmq()
        release_large_blocks()
        self.store = Store(cfg.state_dir, keep_events=cfg.keep_events)
        self.audit = AuditTrail(self.store, self.log)
        snapshot, events, replies = self.store.load()
        timings = Timings(
            int(cfg.activate_seconds * 1000), int(cfg.standby_seconds * 1000),
            lease_ms=max(1, int(cfg.lease_seconds * 1000)), program_bytes_per_second=cfg.program_bytes_per_second,
        )
        self.device = Device(wall_ms, timings, serial=cfg.serial, keep_events=cfg.keep_events)
        # Rolls an interrupted transition forward and aborts the run left open, before anyone is answered.
        recovery = self.device.recover(snapshot, events, self.store.load_runs(KEEP_RUNS))
        if recovery.rolled_forward is not None:
            self.log.warning("transition_rolled_forward", state=recovery.rolled_forward.value)
        if recovery.aborted_run is not None:
            run = recovery.aborted_run
            self.log.warning("run_aborted_at_start", run_id=run["runId"], owner=run["owner"])
        if recovery.needs_commit:
            self.store.commit(self.device.snapshot(), recovery.events, runs=recovery.runs)
            self.device.runs_saved(recovery.runs)
        self.store.record_progress(force=True)

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
        self.router.setsockopt(zmq.RCVHWM, RCVHWM)
        self.router.setsockopt(zmq.SNDHWM, SNDHWM)
        # A client that reconnects with the same identity (a retry after a network blip)
        # takes over its old route instead of being ignored.
        self.router.setsockopt(zmq.ROUTER_HANDOVER, 1)
        self.pub = self.ctx.socket(zmq.PUB)
        self.pub.setsockopt(zmq.LINGER, LINGER_MS)
        enforced = True
        self._ipc_files: list[tuple[str, int] | None] = []
        for sock, endpoint in ((self.router, cfg.endpoint), (self.pub, cfg.events_endpoint)):
            enforced = secure_server_socket(sock, server_secret) and enforced
            _ensure_ipc_dir(endpoint)
            sock.bind(endpoint)
            self._ipc_files.append(_ipc_file(endpoint))
        if not enforced:
            self.log.warning("zap_not_enforced_by_libzmq", effect="csd's own checks still refuse unauthenticated requests")
        endpoint, events_endpoint = (_bound(s) for s in (self.router, self.pub))
        # Optional TCP endpoints for remote runtimes, on the same (CURVE) sockets. A wildcard
        # port (tcp://host:*) is resolved to the one the kernel picked, which is what clients need.
        tcp = {}
        for name, sock in (("tcp_endpoint", self.router), ("tcp_events_endpoint", self.pub)):
            if getattr(cfg, name):
                sock.bind(getattr(cfg, name))
                tcp[name] = _bound(sock)
        self.gate = ConnectionGate([self.router, self.pub], self.log, self.ctx)
        self.connection_file = cfg.connection_file or connection.file_beside(cfg.endpoint) or connection.default_file()
        connection.write(self.connection_file, endpoint, events_endpoint, server_public, self.device.serial)

        context = Context(self.device, events_endpoint, wall_ms(), __version__,
                          tcp_events_endpoint=tcp.get("tcp_events_endpoint", ""))
        self.dispatcher = Dispatcher(context, self.store, self._publish, self.log, self.auth, replies,
                                     audit_trail=self.audit)
        context.audit_entries = self.audit.entries  # audit.show sees the records still being batched
        self.log.info(
            "ready", endpoint=endpoint, events_endpoint=events_endpoint, **tcp, state_dir=cfg.state_dir,
            connection_file=self.connection_file, server_key=server_public,
            state=self.device.lifecycle.value, execmode=self.device.active_mode.value, seq=self.device.events.last_seq,
        )
        self._catch_signals()
        self._status_shown = self._status()
        self.notifier.ready(self._status_shown)
        if self.notifier.watchdog_ms:
            self.notifier.watchdog()
            self._watchdog_due = monotonic_ms() + self.notifier.watchdog_ms

    def _status(self) -> str:
        """The one-line STATUS= systemd shows: lifecycle state and the active execution mode,
        or that csd is failing closed."""
        d = self.device
        if not self.healthy:
            return "UNHEALTHY: the authenticator is down, every request is refused; restart csd"
        return f"{d.lifecycle.value}, execution mode {d.active_mode.value}"

    def _housekeeping(self) -> None:
        """Once per loop turn: ping the watchdog when due, refresh STATUS= when it changed."""
        if self._watchdog_due is not None:
            now = monotonic_ms()
            # An unhealthy csd (authenticator down) stops pinging, so systemd restarts it.
            if now >= self._watchdog_due and self.healthy:
                self.notifier.watchdog()
                self._watchdog_due = now + self.notifier.watchdog_ms
        if self.notifier.enabled:
            status = self._status()
            if status != self._status_shown:
                self._status_shown = status
                self.notifier.status(status)

    def reload(self) -> None:
        """Re-read the key registry and the config file and apply what can change live (log
        level and format); report settings that need a restart. A bad file is logged and the
        old settings stay."""
        self.notifier.reloading()
        try:
            self.reload_keys()
            if self._load_config is None:
                return
            try:
                new = self._load_config()
            except ConfigError as exc:
                self.log.error("reload_failed", reason=str(exc), hint="fix the file and reload again")
                return
            old = self.config
            live = {k: getattr(new, k) for k in LIVE_KEYS}
            if self._configure_log and any(getattr(old, k) != v for k, v in live.items()):
                self.log = self.dispatcher.log = self._configure_log(new.log_level, new.log_format)
            for key, value in live.items():
                setattr(old, key, value)
            pending = sorted(k for k in vars(new) if k not in LIVE_KEYS and getattr(new, k) != getattr(old, k))
            self.log.info("reloaded", log_level=old.log_level, log_format=old.log_format)
            if pending:
                self.log.warning("restart_required", keys=pending, hint="systemctl restart csd applies these")
        finally:
            self.notifier.ready(self._status())

    def _caller(self, identity: bytes, frame: zmq.Frame) -> Caller:
        """Who sent `frame`: the User-Id our authenticator gave its connection, and that key's
        role in the registry as of now (so a revoked key is refused from its next message).
        `identity` (the client socket's) tells one session of a key from another."""
        session = identity.decode(errors="backslashreplace")
        try:
            name = frame.get("User-Id")
        except zmq.ZMQError:  # the handshake never went through our authenticator
            return Caller(None, None, session)
        self.registry.refresh()
        return Caller(name, self.registry.role_of(name), session)

    def _audit_refused_connection(self, public_key: str | None, address: str, reason: str) -> None:
        # Anyone can attempt a handshake, so these records and their log lines are rate-limited
        # (audit.py): a flood of strangers must not turn into a flood of fsyncs or log lines.
        row = audit.record(None, None, "connect", {"public_key": public_key, "address": address}, "REFUSED",
                           f"Handshake refused: {reason}.")
        self.audit.add(HANDSHAKES, row, "connection_refused", public_key=public_key, address=address, reason=reason)

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
        timeout = IDLE_POLL_MS
        deadline = self.device.next_deadline()
        if deadline is not None:
            timeout = min(timeout, deadline - wall_ms())
        if self._watchdog_due is not None:
            timeout = min(timeout, self._watchdog_due - monotonic_ms())
        return max(0, timeout)

    def request_stop(self, *_):
        self._stopping = True

    def request_reload(self, *_):
        self._reload_requested = True

    def _catch_signals(self) -> None:
        """SIGTERM/SIGINT stop and SIGHUP reloads, through a self-pipe that wakes the poller.
        Installed before READY=1, so a reload or stop that systemd sends right after never
        meets the default action (which for SIGHUP is to die)."""
        self._wake_r, self._wake_w = os.pipe()
        os.set_blocking(self._wake_r, False)
        os.set_blocking(self._wake_w, False)
        self._previous_wakeup_fd = signal.set_wakeup_fd(self._wake_w)
        for sig in (signal.SIGTERM, signal.SIGINT):
            signal.signal(sig, self.request_stop)
        signal.signal(signal.SIGHUP, self.request_reload)  # a flag only: the loop does the work

    def serve_forever(self) -> None:
        wake_r = self._wake_r
        poller = zmq.Poller()
        poller.register(self.router, zmq.POLLIN)
        poller.register(self.auth.socket, zmq.POLLIN)
        poller.register(wake_r, zmq.POLLIN)
        for monitor in self.gate.monitors:
            poller.register(monitor, zmq.POLLIN)
        router, dispatcher, auth = self.router, self.dispatcher, self.auth
        auth_polled = True
        try:
            while not self._stopping:
                try:
                    if auth_polled and auth.socket.closed:  # stopped: from now on requests are refused
                        poller.unregister(auth.socket)
                        auth_polled = False
                    ready = dict(poller.poll(self._poll_timeout()))
                    if auth_polled and auth.socket in ready:  # handshakes first: they gate everything else
                        auth.handle_ready()
                    for monitor in self.gate.monitors:
                        if monitor in ready:
                            self.gate.handle_ready(monitor)
                    if router in ready:
                        for _ in range(BATCH):
                            try:  # Frames (not bytes): no copy, and they carry the User-Id
                                self._answer(router.recv_multipart(zmq.NOBLOCK, copy=False))
                            except zmq.Again:
                                break
                    if wake_r in ready:
                        try:
                            os.read(wake_r, 512)
                        except BlockingIOError:
                            pass
                    dispatcher.tick()
                    if self._reload_requested:
                        self._reload_requested = False
                        self.reload()
                    self._housekeeping()
                except Exception as exc:  # a bug outside one request's handling: log it, keep serving
                    self._failed(exc, "loop_failed")
        finally:
            signal.set_wakeup_fd(self._previous_wakeup_fd)
            os.close(wake_r)
            os.close(self._wake_w)
        self.notifier.stopping()
        self.log.info("stopping", state=self.device.lifecycle.value)

    def _answer(self, frames: list[zmq.Frame]) -> None:
        """Answer one message from the request socket, whatever it holds: `[identity, request]`
        is a request; more frames are refused (never echoed), and any exception raised while
        handling it is answered INTERNAL (with the request's id when it can be read)."""
        identity, payload = frames[0].bytes, frames[-1]
        try:
            reply = self.dispatcher.handle(identity, payload.bytes, self._caller(identity, payload),
                                           parts=len(frames) - 1)
        except Exception as exc:
            self._failed(exc, "request_failed")
            try:
                request_id = protocol.decode_request(payload.bytes)[0]
            except protocol.ProtocolError:
                request_id = None
            reply = protocol.error(request_id, errors.Internal("csd failed while handling this request; it carries on serving."))
        try:
            self.router.send_multipart([identity, reply], zmq.NOBLOCK)
        except zmq.ZMQError:  # the client is gone or not reading: its reply is dropped, not queued
            pass

    def _failed(self, exc: Exception, event: str) -> None:
        """Log a failure: with its traceback the first time this kind (type and place) is seen,
        then as a counted one-liner at most once a second."""
        frame = traceback.extract_tb(exc.__traceback__)[-1] if exc.__traceback__ else None
        kind = f"{type(exc).__name__} at {frame.filename}:{frame.lineno}" if frame else type(exc).__name__
        if kind not in self._failures_seen:
            self._failures_seen.add(kind)
            self.log.error(event, kind=kind, exc_info=exc, effect="answered INTERNAL; csd carries on")
        elif self._failures.admit(kind):
            self.log.error(event, kind=kind, repeated=True, effect="answered INTERNAL; csd carries on")

    def close(self) -> None:
        connection.remove(self.connection_file)
        self.audit.flush()
        self.gate.close()
        self.router.close()
        self.pub.close()
        self.auth.close()  # last: nothing it guards is open any more
        self.ctx.term()
        for ipc_file in filter(None, self._ipc_files):
            _remove_ipc_file(*ipc_file)
        try:
            self.store.record_progress(force=True)
        except OSError as exc:
            self.log.error("identity_write_failed", path=self.store.identity.path, reason=str(exc))
        self.store.close()
