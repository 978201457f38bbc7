"""A background thread that keeps the shell's LiveState current from csd's event stream and
prints events other clients cause above the prompt.

It has its own Client, a sibling of the shell's with the same key (ZeroMQ sockets are not
thread-safe). It takes a snapshot on connect, after every event and every half second (so the
toolbar counts down and a lost daemon shows within about a second); it follows events with
csadmin/follow.py, so none is skipped (a reconnect's gap is filled from csd's kept log).
"""

from __future__ import annotations

import threading
from typing import Callable

import zmq

from .. import errors
from ..client import Client
from .live import LiveState

TICK_SECONDS = 0.5
RETRY_SECONDS = 1.0


class Watcher(threading.Thread):
    def __init__(
        self,
        new_client: Callable[[], Client],
        live: LiveState,
        announce: Callable[[dict], None],
        my_session: str,
        invalidate: Callable[[], None] = lambda: None,
    ):
        super().__init__(name="cs-watcher", daemon=True)
        self.new_client = new_client
        self.live = live
        self.announce = announce
        self.my_session = my_session
        self.invalidate = invalidate
        #: set while the shell runs a command: its own output tells the story then
        self.busy = False
        #: events up to this seq happened during the shell's own commands
        self.quiet_seq = 0
        self._stopped = threading.Event()
        self._retarget = threading.Event()

    def stop(self) -> None:
        self._stopped.set()

    def retarget(self) -> None:
        """The shell switched systems (`use`): follow the new one (new_client() gives it)."""
        self._retarget.set()

    def run(self) -> None:
        while not self._stopped.is_set():
            client = None
            try:
                self._retarget.clear()
                client = self.new_client()
                self.live.endpoint = client.endpoint
                self._follow(client)
            except (errors.CsError, zmq.ZMQError):
                if self._stopped.is_set():
                    break  # the shell is leaving (its context may be closing): not a lost csd
                if self._retarget.is_set():
                    continue  # the old system's failure says nothing of the new one
                self.live.lost()
                self.invalidate()
                self._stopped.wait(RETRY_SECONDS)
            finally:
                if client is not None:
                    try:
                        client.close()
                    except zmq.ZMQError:
                        pass

    def _follow(self, client: Client) -> None:
        with client.follow(after_seq=self._refresh(client)) as stream:
            while not self._stopped.is_set() and not self._retarget.is_set():
                for event in stream.next(TICK_SECONDS):
                    self._maybe_announce(event)
                self._refresh(client)  # every tick: the toolbar counts down, a lost csd shows

    def _refresh(self, client: Client) -> int:
        snap = client.system_show()
        self.live.update(snap)
        self.invalidate()
        return snap["seq"]

    def _maybe_announce(self, event: dict) -> None:
        by = event.get("details", {}).get("by") or {}
        if self.busy or event["seq"] <= self.quiet_seq or by.get("session") == self.my_session:
            return
        self.announce(event)
