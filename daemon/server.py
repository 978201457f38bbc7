"""The serving loop: one thread, one `zmq.Poller`, the device's timed transition as the only timer.

Requests arrive on a ROUTER socket and are answered in arrival order; events go out on a PUB
socket after they are durable. SIGTERM/SIGINT wake the poller through a self-pipe and the loop
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

from .config import Config
from .context import Caller, Context
from .dispatch import Dispatcher
from .store import Store

IDLE_POLL_MS = 1000  # wake at least this often even with nothing to do
BATCH = 256  # requests served per wake-up before timers get a turn
LINGER_MS = 500


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

    def start(self) -> None:
        """Open and check the store, restore the device, roll forward an interrupted
        transition, then bind. Only after this returns does the daemon answer anyone."""
        cfg = self.config
        self.store = Store(cfg.state_dir, keep_events=cfg.keep_events)
        snapshot, events, replies = self.store.load()
        log = EventLog(capacity=cfg.keep_events)
        log.restore(events)
        timings = Timings(
            int(cfg.activate_seconds * 1000), int(cfg.standby_seconds * 1000),
            lease_ms=max(1, int(cfg.lease_seconds * 1000)), program_bytes_per_second=cfg.program_bytes_per_second,
        )
        self.device = Device(wall_ms, timings, serial=cfg.serial, events=log)
        if snapshot is not None:
            self.device.restore(snapshot)
        self.device.runs.restore(self.store.load_runs(self.device.runs.keep))
        self.device.runs.take_dirty()  # just loaded: nothing to write back
        seq_before = log.last_seq
        if self.device.recover():
            self.log.warning("transition_rolled_forward", state=self.device.lifecycle.value)
        # A run open when csd stopped cannot carry on: abort it before answering anyone.
        aborted = self.device.abort_open_run("daemon restarted")
        if aborted is not None:
            self.log.warning("run_aborted_at_start", run_id=aborted.run_id, owner=aborted.owner)
        if snapshot is None or log.last_seq != seq_before:
            self.store.commit(
                self.device.snapshot(), log.newest(log.last_seq - seq_before), runs=self.device.runs.take_dirty()
            )

        self.ctx = zmq.Context()
        self.router = self.ctx.socket(zmq.ROUTER)
        self.router.setsockopt(zmq.LINGER, LINGER_MS)
        self.router.setsockopt(zmq.MAXMSGSIZE, protocol.MAX_FRAME_BYTES)
        # A client that reconnects with the same identity (a retry after a network blip)
        # takes over its old route instead of being ignored.
        self.router.setsockopt(zmq.ROUTER_HANDOVER, 1)
        self.pub = self.ctx.socket(zmq.PUB)
        self.pub.setsockopt(zmq.LINGER, LINGER_MS)
        for sock, endpoint in ((self.router, cfg.endpoint), (self.pub, cfg.events_endpoint)):
            _ensure_ipc_dir(endpoint)
            sock.bind(endpoint)

        context = Context(self.device, cfg.events_endpoint, wall_ms(), __version__)
        self.dispatcher = Dispatcher(context, self.store, self._publish, self.log, replies)
        self.log.info(
            "ready", endpoint=cfg.endpoint, events_endpoint=cfg.events_endpoint, state_dir=cfg.state_dir,
            state=self.device.lifecycle.value, execmode=self.device.active_mode.value, seq=log.last_seq,
        )

    def _caller(self, identity: bytes) -> Caller:
        # Without authentication every local client is trusted as an admin (the ipc socket's
        # file permissions are the gate); with CURVE the key registry decides.
        return Caller(identity.decode(errors="backslashreplace")[:16], "admin")

    def _publish(self, event: dict) -> None:
        self.pub.send_multipart(protocol.event_frames(event))

    def _poll_timeout(self) -> int:
        deadline = self.device.next_deadline()
        if deadline is None:
            return IDLE_POLL_MS
        return max(0, min(IDLE_POLL_MS, deadline - wall_ms()))

    def request_stop(self, *_):
        self._stopping = True

    def serve_forever(self) -> None:
        wake_r, wake_w = os.pipe()
        os.set_blocking(wake_r, False)
        os.set_blocking(wake_w, False)
        previous_fd = signal.set_wakeup_fd(wake_w)
        for sig in (signal.SIGTERM, signal.SIGINT):
            signal.signal(sig, self.request_stop)
        poller = zmq.Poller()
        poller.register(self.router, zmq.POLLIN)
        poller.register(wake_r, zmq.POLLIN)
        router, dispatcher = self.router, self.dispatcher
        try:
            while not self._stopping:
                ready = dict(poller.poll(self._poll_timeout()))
                if router in ready:
                    for _ in range(BATCH):
                        try:
                            frames = router.recv_multipart(zmq.NOBLOCK)
                        except zmq.Again:
                            break
                        if len(frames) < 2:
                            continue  # no payload: nothing to answer
                        reply = dispatcher.handle(frames[0], frames[-1], self._caller(frames[0]))
                        router.send_multipart(frames[:-1] + [reply])
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
        self.router.close()
        self.pub.close()
        self.ctx.term()
        self.store.close()
