"""A background thread that keeps the shell's LiveState current from csd's event stream and
prints events above the prompt: every event except the echo of the shell's own command, which
that command has already reported (see `is_echo`). Faults the shell scheduled (`--after`, a
scenario) are shown when they fire; events that arrive while a command runs are held until it
is done, so they never break into its output.

It has its own Client, a sibling of the shell's with the same key (ZeroMQ sockets are not
thread-safe). It takes a snapshot on connect, after every event and every half second (so the
toolbar counts down and a lost daemon shows within about a second); it follows events with
csadmin/clientlib/follow.py, so none is skipped (a reconnect's gap is filled from csd's kept log).
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
        #: set while the shell runs a command: events are held, and its echo dropped, meanwhile
        self.busy = False
        #: events up to this seq happened during the shell's own commands
        self.quiet_seq = 0
        self._held: list[dict] = []
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
                    if not self.is_echo(event):
                        self._held.append(event)
                self._release()
                self._refresh(client)  # every tick: the toolbar counts down, a lost csd shows

    def _refresh(self, client: Client) -> int:
        snap = client.system_show()
        self.live.update(snap)
        self.invalidate()
        return snap["seq"]

    def is_echo(self, event: dict) -> bool:
        """Whether `event` is part of what the shell's command (running, or just run) reported:
        emitted during it, and either caused by its request (`by` is this shell, and the event
        is not a fault whose scheduled time came), or the end of the transition it waited for
        (events that conclude a pending transition carry `recovered`, and no `by`). Everything
        else — other clients' doings, timers, the shell's own scheduled faults — is shown."""
        if not (self.busy or event["seq"] <= self.quiet_seq):
            return False
        details = event.get("details", {})
        by = details.get("by")
        if by is None:
            return "recovered" in details
        return by.get("session") == self.my_session and not details.get("scheduled")

    def _release(self) -> None:
        """Print the held events, oldest first, once no command is running."""
        while self._held and not self.busy:
            self.announce(self._held.pop(0))
