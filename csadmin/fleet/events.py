"""Every system's live events in one stream, tagged with the system, none skipped.

A thread per system follows it with csadmin/clientlib/follow.py's EventStream (which fills every gap from
that csd's kept log) and hands what it gets to one queue; the caller reads the queue on its own
thread (so Ctrl-C reaches it). A system that stops answering is reported once as lost; the
thread keeps trying, and when the system answers again it resumes after the last event it
handed out (the gap filled from the kept log) and reports it back.
"""

from __future__ import annotations

import queue
import threading
from typing import NamedTuple

import zmq

from .. import errors
from ..clientlib.inventory import System
from .connect import client_for

RETRY_SECONDS = 1.0  # between attempts to reach a lost system
TICK_SECONDS = 0.5


class Item(NamedTuple):
    """What happened on one system: an `event` (csd's event object), or a change in how it is
    followed: `status` "following" (from seq), "lost" (with the error's message) or "back"."""

    system: str
    event: dict | None = None
    status: str | None = None
    message: str = ""


class FleetEvents:
    """Follow `systems` until close(); `next(timeout)` returns what arrived, in arrival order."""

    def __init__(self, systems: list[System], timeout: float = 2.0, default_key: str | None = None):
        self._items: queue.Queue[Item] = queue.Queue()
        self._stopped = threading.Event()
        self._context = zmq.Context()
        self._timeout, self._default_key = timeout, default_key
        self._threads = [threading.Thread(target=self._follow, args=(s,), name=f"cs-fleet-events-{s.name}",
                                          daemon=True) for s in systems]
        for thread in self._threads:
            thread.start()

    def next(self, timeout: float = TICK_SECONDS) -> list[Item]:
        try:
            items = [self._items.get(timeout=timeout)]
        except queue.Empty:
            return []
        while True:
            try:
                items.append(self._items.get_nowait())
            except queue.Empty:
                return items

    def close(self) -> None:
        self._stopped.set()
        for thread in self._threads:
            thread.join(self._timeout + 1.0)
        if not any(thread.is_alive() for thread in self._threads):
            self._context.term()

    def __enter__(self) -> "FleetEvents":
        return self

    def __exit__(self, *exc) -> None:
        self.close()

    def _follow(self, system: System) -> None:
        last_seq: int | None = None  # None: from now on (the first connection)
        lost = False
        while not self._stopped.is_set():
            client = None
            try:
                client = client_for(system, timeout=self._timeout, retries=0, context=self._context,
                                    default_key=self._default_key)
                with client.follow(after_seq=last_seq) as stream:
                    if lost:
                        where = f"after event {last_seq}" if last_seq is not None else f"from event {stream.last_seq}"
                        self._items.put(Item(system.name, status="back", message=f"answers again; resuming {where}"))
                    elif last_seq is None:
                        self._items.put(Item(system.name, status="following",
                                             message=f"following from event {stream.last_seq}"))
                    lost = False
                    last_seq = stream.last_seq
                    while not self._stopped.is_set():
                        for event in stream.next(TICK_SECONDS):
                            self._items.put(Item(system.name, event=event))
                        last_seq = stream.last_seq
            except (errors.CsError, zmq.ZMQError) as exc:
                if self._stopped.is_set():
                    break
                if not lost:
                    message = exc.message if isinstance(exc, errors.CsError) else str(exc)
                    self._items.put(Item(system.name, status="lost", message=message))
                lost = True
                self._stopped.wait(RETRY_SECONDS)
            finally:
                if client is not None:
                    client.close()
