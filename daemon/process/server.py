"""The serving loop: one thread, one `zmq.Poller`; its timers are the device's timed transition
and the systemd watchdog ping. (What happens before it serves is daemon/process/boot.py.)

Requests arrive on a ROUTER socket and are handled in arrival order; the durable changes of one
loop turn are committed together (group commit, daemon/serve/group.py) and answered after that
commit; events go out on a PUB socket after they are durable. Both are CURVE servers; the ZAP authenticator (daemon/auth/zap.py) is polled
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
so are connections (daemon/serve/capacity.py).
"""

from __future__ import annotations

import os
import signal
import time

import zmq

from csadmin import errors
from csadmin.shared import protocol

from ..serve.callers import Callers
from .boot import Booted, boot, wall_ms
from .config import LIVE_KEYS, Config, ConfigError
from .failures import Failures
from .notify import Notifier

IDLE_POLL_MS = 1000  # wake at least this often even with nothing to do
BATCH = 256  # requests served per wake-up before timers get a turn
# Plain ints: combining pyzmq's flag enums costs an enum operation per call on the hot path.
NOBLOCK, MORE_NOBLOCK = int(zmq.NOBLOCK), int(zmq.SNDMORE | zmq.NOBLOCK)
EVENTS, POLLIN = int(zmq.EVENTS), int(zmq.POLLIN)


def monotonic_ms() -> int:
    return time.monotonic_ns() // 1_000_000


class Server:
    """csd from start to stop: boot, serve in one loop until SIGTERM, close."""

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
        self._failures = Failures()  # bugs outside the rules: logged once with a traceback, then counted

    def start(self) -> None:
        """Boot (daemon/process/boot.py: recover the state, then bind), then take the signals and tell
        systemd READY=1. Only after this returns does the daemon answer anyone."""
        self.booted: Booted = boot(self.config, self.log)
        b = self.booted
        self.device, self.auth, self.registry, self.dispatcher = b.device, b.auth, b.registry, b.dispatcher
        self.router, self.gate = b.sockets.router, b.gate
        self.callers = Callers(self.registry)
        self.metrics = b.metrics
        self._published = self.device.revision  # boot published the state as it was
        self._catch_signals()
        self._status_shown = self._status()
        self.notifier.ready(self._status_shown)
        if self.notifier.watchdog_ms:
            self.notifier.watchdog()
            self._watchdog_due = monotonic_ms() + self.notifier.watchdog_ms

    def _status(self) -> str:
        """The one-line STATUS= systemd shows: lifecycle state, the active execution mode and the
        health when a fault makes it other than the lifecycle's, or that csd is failing closed."""
        d = self.device
        if not self.healthy:
            return "UNHEALTHY: the authenticator is down, every request is refused; restart csd"
        health = d.health.value
        shown = "" if health in ("OK", d.lifecycle.value) else f", systemHealth {health}"
        return f"{d.system.lifecycle.value}, execution mode {d.system.active_mode.value}{shown}"

    def _housekeeping(self) -> None:
        """Once per loop turn: ping the watchdog when due, refresh STATUS= when it changed, and
        give the metrics the state when the device's revision says it changed."""
        revision = self.device.revision
        if revision != self._published:
            self._published = revision
            self.metrics.publish(self.device.show())
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

    @property
    def healthy(self) -> bool:
        """False once the authenticator is down: csd then refuses everything (fails closed).
        For health reporting (systemd STATUS=/watchdog): an unhealthy csd wants a restart."""
        return self.auth.healthy

    def reload_keys(self) -> None:
        """Re-read the key registry now (SIGHUP). Changes are also noticed on the next message."""
        self.registry.refresh(force=True)

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

    def serve_forever(self) -> int:
        """Serve until asked to stop (0), or until the store is found damaged (1: csd will not
        serve or change damaged state; the turn's replies are sent first, and systemd shows why)."""
        wake_r = self._wake_r
        poller = zmq.Poller()
        poller.register(self.router, zmq.POLLIN)
        poller.register(self.auth.socket, zmq.POLLIN)
        poller.register(wake_r, zmq.POLLIN)
        for monitor in self.gate.monitors:
            poller.register(monitor, zmq.POLLIN)
        router, dispatcher, auth, store = self.router, self.dispatcher, self.auth, self.booted.store
        auth_polled = True
        try:
            while not self._stopping and store.damaged is None:
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
                        self._serve_batch()
                    if wake_r in ready:
                        try:
                            os.read(wake_r, 512)
                        except BlockingIOError:
                            pass
                    dispatcher.tick()
                    self._send_ready()  # what a commit tick() had to make first answered (normally none)
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
        if store.damaged is not None:
            self.log.error("store_damaged", reason=str(store.damaged), effect="csd stops")
            self.notifier.status(f"stopped: {store.damaged}")
            return 1
        self.log.info("stopping", state=self.device.lifecycle.value)
        return 0

    def _serve_batch(self) -> None:
        """Receive what is waiting (up to BATCH messages), then check the key registry once, then
        answer them in order, then commit the durable changes among them as one group and send
        their replies. Checking after receiving is what keeps revocation immediate at one stat per
        batch instead of one per message: every message in hand was sent before the check, so a
        registry file changed before a message was sent is re-read before it is answered."""
        router, batch = self.router, []
        while True:  # the poller said a message waits; after each, ask whether another does
            try:
                identity = router.recv(NOBLOCK)  # bytes: for a few bytes, cheaper than a Frame
            except zmq.Again:
                break
            frames = [router.recv(copy=False)]  # Frames: they carry the User-Id
            while frames[-1].more:  # the rest of a multipart message is already here
                frames.append(router.recv(copy=False))
            batch.append((identity, frames))
            # Asking (~1.4 µs) costs half the zmq.Again a recv raises when nothing waits.
            if len(batch) >= BATCH or not router.get(EVENTS) & POLLIN:
                break
        self.registry.refresh()
        try:
            for identity, frames in batch:
                self._answer(identity, frames)
        finally:  # the turn's durable changes: one commit, then their replies
            self.dispatcher.commit_group()
            self._send_ready()

    def _answer(self, identity: bytes, frames: list[zmq.Frame]) -> None:
        """Answer one message from the request socket (`identity`, then its frames), whatever it
        holds: one frame is a request; more are refused (never echoed), and any exception raised
        while handling it is answered INTERNAL (with the request's id when it can be read)."""
        payload = frames[-1]
        started = time.perf_counter()
        try:  # None: a durable change, answered after the turn's group commit
            reply = self.dispatcher.submit(identity, payload.bytes, self.callers.of(identity, payload),
                                           parts=len(frames))
        except Exception as exc:
            self._failed(exc, "request_failed")
            try:
                request_id = protocol.decode_request(payload.bytes)[0]
            except protocol.ProtocolError:
                request_id = None
            reply = protocol.error(request_id, errors.Internal("csd failed while handling this request; it carries on serving."))
            self.metrics.observe_request(None, errors.Internal.code, time.perf_counter() - started)
        self._send_ready()  # replies of a group this request had committed first go before its own
        if reply is not None:
            self._send(identity, reply)

    def _send_ready(self) -> None:
        for identity, reply in self.dispatcher.take_ready():
            self._send(identity, reply)

    def _send(self, identity: bytes, reply: bytes) -> None:
        try:  # two sends, not send_multipart: its Python wrapper costs more than the two calls
            self.router.send(identity, MORE_NOBLOCK)
            self.router.send(reply, NOBLOCK)
        except zmq.ZMQError:  # the client is gone or not reading: its reply is dropped, not queued
            pass

    def _failed(self, exc: Exception, event: str) -> None:
        self._failures.log(self.log, exc, event)

    def close(self) -> None:
        self.booted.close()
