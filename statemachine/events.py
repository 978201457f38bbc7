"""Events: what the model emits on every change, and the bounded log that answers queries.

Type names and severities follow the real system's catalog (tests/reference/cs2-events.tsv keeps
it; a test checks CATALOG against it).
"""

from __future__ import annotations

import fnmatch
import re
from collections import deque
from dataclasses import dataclass, field
from itertools import islice
from typing import Iterable

from csadmin.shared.states import Severity

from .defaults import EVENTS_IN_MEMORY
from .faults import EVENT_SEVERITIES

# type -> severity, for the events this model emits.
CATALOG: dict[str, Severity] = {
    "EventStandbyIssued": Severity.INFO,
    "EventPendingStandby": Severity.INFO,
    "EventEnteredStandby": Severity.INFO,
    "EventStandbyCompleted": Severity.INFO,
    "EventStandbyFailed": Severity.ERROR,
    "EventStandbyTimedout": Severity.ERROR,
    "EventActivateIssued": Severity.INFO,
    "EventPendingActive": Severity.INFO,
    "EventEnteredActive": Severity.INFO,
    "EventActivateCompleted": Severity.INFO,
    "EventActivateFailed": Severity.ERROR,
    "EventActivateTimedout": Severity.ERROR,
    "EventSetExecModePipelined": Severity.INFO,
    "EventSetExecModeWeightStreaming": Severity.INFO,
    "EventSetExecModeFailed": Severity.ERROR,
    "EventConfigOpIssued": Severity.INFO,
    "EventConfigOpCompleted": Severity.INFO,
    "EventConfigOpFailed": Severity.ERROR,
    "EventProgrammingStarted": Severity.INFO,
    "EventProgrammingFinished": Severity.INFO,
    "EventTrainingStarted": Severity.INFO,
    "EventTrainingCompleted": Severity.INFO,
    "EventTrainingAborted": Severity.WARN,
}
CATALOG.update(EVENT_SEVERITIES)  # what faults raise and what announces their clearing


@dataclass(frozen=True)
class Event:
    seq: int
    type: str
    severity: str
    triggerTime: int  # milliseconds since the epoch, as the real CLI reports it
    details: dict = field(default_factory=dict)

    def to_dict(self) -> dict:
        return {
            "seq": self.seq,
            "type": self.type,
            "severity": self.severity,
            "triggerTime": self.triggerTime,
            "details": dict(self.details),
        }

    @classmethod
    def from_dict(cls, data: dict) -> "Event":
        return cls(
            seq=int(data["seq"]),
            type=str(data["type"]),
            severity=str(data["severity"]),
            triggerTime=int(data["triggerTime"]),
            details=dict(data.get("details") or {}),
        )


class EventLog:
    """The newest `capacity` events in memory, in `seq` order, with the real CLI's query filters.

    csd keeps the log itself in its store (daemon/store/store.py answers `events.show` from there);
    the model holds only this bounded tail, so memory and a restart cost the same whatever the
    number of events kept. While a change is open (statemachine/change.py) nothing leaves the
    tail, so the change can take back exactly what it emitted by popping it; the tail is cut
    back to `capacity` when the outermost change ends. Every operation costs what it touches
    (the events emitted, or the `count` asked for), never the length of the log.
    """

    def __init__(self, capacity: int = EVENTS_IN_MEMORY, last_seq: int = 0):
        self._events: deque[Event] = deque()
        self.capacity = capacity
        self.last_seq = last_seq
        self._depth = 0  # open changes

    def __len__(self) -> int:
        return len(self._events)

    def emit(self, type_: str, now_ms: int, **details) -> Event:
        severity = CATALOG[type_].value  # an unknown type fails here, before using up a seq
        self.last_seq += 1
        event = Event(self.last_seq, type_, severity, now_ms, details)
        self._events.append(event)
        if not self._depth:
            self._trim()
        return event

    def _trim(self) -> None:
        events = self._events
        while len(events) > self.capacity:
            events.popleft()

    def since(self, seq: int) -> list[Event]:
        """The events after `seq`, oldest first (cheap: walks back from the newest only)."""
        newer = []
        for event in reversed(self._events):
            if event.seq <= seq:
                break
            newer.append(event)
        newer.reverse()
        return newer

    def newest(self, count: int) -> list[Event]:
        """The last `count` events kept, oldest first (O(count))."""
        return list(islice(reversed(self._events), count))[::-1] if count > 0 else []

    def restore(self, events: Iterable[Event]) -> None:
        """Load events kept from an earlier run (oldest first); `seq` continues after the newest."""
        for event in events:
            self._events.append(event)
            self.last_seq = max(self.last_seq, event.seq)
        self._trim()

    # -- as part of a change (statemachine/change.py) --------------------------------------------

    def savepoint(self) -> int:
        self._depth += 1
        return self.last_seq

    def rollback(self, seq: int) -> None:
        """Take back the events emitted since the savepoint `seq`; their seqs will be used again."""
        while self._events and self._events[-1].seq > seq:
            self._events.pop()
        self.last_seq = seq

    def release(self, savepoint: int) -> None:
        self._depth -= 1
        if not self._depth:
            self._trim()

    def query(
        self,
        event_type: str | None = None,
        from_time: int | None = None,
        max_count: int | None = None,
        after_seq: int | None = None,
    ) -> list[Event]:
        """Matching events, oldest first; with `max_count`, the newest that many.

        `event_type` is a shell-style glob (`EventActivate*`), matched case-sensitively like
        the real type names.
        """
        # Not fnmatch.fnmatchcase: its cache keeps 32,768 compiled patterns, so a client sending
        # distinct globs would grow csd by megabytes; re's own cache is bounded (512).
        matches = re.compile(fnmatch.translate(event_type)).match if event_type is not None else None
        selected = [
            e
            for e in self._events
            if (from_time is None or e.triggerTime >= from_time)
            and (after_seq is None or e.seq > after_seq)
            and (matches is None or matches(e.type))
        ]
        if max_count is not None:
            selected = selected[-max_count:] if max_count > 0 else []
        return selected
