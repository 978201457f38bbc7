"""Following csd's events, none skipped: the one loop behind every wait and every follower
(Client.wait_for, a run's programming wait, `events follow`, the shell's watcher).

A SUB socket misses what was published before its subscription took hold (ZeroMQ's slow
joiner) and what was dropped while its client was slow or reconnecting. So an EventStream knows
the last seq it has handed out, and fills every gap from csd's kept log (`events.show` after
that seq): when an event arrives past the next seq, and whenever `tick` seconds pass without one.
"""

from __future__ import annotations

import time
from typing import Callable, TypeVar

import zmq

from .. import errors
from ..shared import protocol

TICK_SECONDS = 0.5  # the longest a follower goes without asking csd what it missed
T = TypeVar("T")


class EventStream:
    """csd's events after `after_seq` (default: from now on), in seq order, none skipped. A
    context manager; close() closes its subscription."""

    def __init__(self, client, after_seq: int | None = None):
        self._client = client
        self._sub = client.subscribe()
        try:
            self.last_seq: int = client.system_show()["seq"] if after_seq is None else after_seq
        except BaseException:
            self._sub.close(0)
            raise

    def next(self, timeout: float = TICK_SECONDS) -> list[dict]:
        """The events after the last ones returned, oldest first; waits up to `timeout` s for
        the first to arrive. Without one, it asks csd's log whether any were missed (so an empty
        list means none happened)."""
        if not self._sub.poll(max(0, int(timeout * 1000)), zmq.POLLIN):
            return self._missed()
        received = []
        while self._sub.poll(0, zmq.POLLIN):
            received.append(protocol.decode_event(self._sub.recv_multipart()[1]))
        new = [e for e in received if e["seq"] > self.last_seq]
        if [e["seq"] for e in new] != list(range(self.last_seq + 1, self.last_seq + 1 + len(new))):
            return self._missed()  # a gap: the log has all of them, in order
        if new:
            self.last_seq = new[-1]["seq"]
        return new

    def _missed(self) -> list[dict]:
        events = self._client.events_after(self.last_seq)
        if events:
            self.last_seq = events[-1]["seq"]
        return events

    def close(self) -> None:
        self._sub.close(0)

    def __enter__(self) -> "EventStream":
        return self

    def __exit__(self, *exc) -> None:
        self.close()


def until(client, check: Callable[[], T | None], timeout: float, timed_out: Callable[[], errors.CsError]) -> T:
    """Call `check` now and again after csd's next events (at least every tick) until it returns
    something other than None, and return that; raise `timed_out()` after `timeout` seconds."""
    deadline = time.monotonic() + timeout
    with EventStream(client) as stream:
        while True:
            done = check()
            if done is not None:
                return done
            remaining = deadline - time.monotonic()
            if remaining <= 0:
                raise timed_out()
            stream.next(min(remaining, TICK_SECONDS))
