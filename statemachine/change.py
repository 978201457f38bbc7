"""A change to the model as a transaction: what it did, or nothing at all.

    with device.change() as change:
        result = device.standby(origin=...)
        store.commit(device.snapshot(), change.events, runs=change.dirty_runs(), ...)
    publish(change.events)

If the block raises (a refusal, a bug, a commit that failed), everything the model did since it
began is undone (except for an error whose `keeps_change` is true: a transition that was attempted
and failed, whose events are the record of it): the lifecycle and modes, the Slurm job, the runs (opened, changed, or pushed out
of memory) and the events (whose seqs are used again). Changes nest: a change that raises inside
another undoes only itself, and the outer one, if it raises, undoes all of it, inner changes
included; so several requests can be applied one by one and committed together, each refused on
its own and all undone if their common commit fails.

Each part of the model that can change (the device's own fields, the event log, the book of
runs) keeps what it needs to undo, from `savepoint()` until `release()`: a copy of a run the first
times it is touched, the few device fields, the events pushed out of the kept window. So an undo
costs what the change touched, never a copy of everything kept.
"""

from __future__ import annotations

from typing import Protocol

from .events import Event, EventLog
from .run_book import RunBook


class Part(Protocol):
    """A part of the model that can take back what it did since a savepoint."""

    def savepoint(self): ...

    def rollback(self, savepoint) -> None: ...

    def release(self, savepoint) -> None: ...


class Change:
    """One transaction on the model (Device.change())."""

    def __init__(self, events: EventLog, runs: RunBook, *parts: Part):
        self._log = events
        self._runs = runs
        self._parts: tuple[Part, ...] = (*parts, events, runs)
        self._savepoints: list = []
        self._seq = 0
        self._done: list[Event] | None = None

    def __enter__(self) -> "Change":
        self._savepoints = [part.savepoint() for part in self._parts]
        self._seq = self._log.last_seq
        self._done = None
        return self

    def __exit__(self, exc_type, exc, tb) -> bool:
        pairs = list(zip(self._parts, self._savepoints))
        # An error that says the attempt itself is history (errors.TransitionFailed) keeps it.
        if exc_type is not None and not getattr(exc, "keeps_change", False):
            for part, savepoint in reversed(pairs):
                part.rollback(savepoint)
            self._done = []
        else:
            self._done = self._log.since(self._seq)
        for part, savepoint in pairs:
            part.release(savepoint)
        return False  # the exception, if any, goes on to the caller

    @property
    def events(self) -> list[Event]:
        """The events this change emitted, in order (none once it was undone)."""
        return self._log.since(self._seq) if self._done is None else self._done

    def dirty_runs(self) -> list[dict]:
        """The records of every run not yet in the store: those this change touched, and any a
        hot op (run.stream, run.heartbeat) left unsaved before it. Device.runs_saved() says
        they were written."""
        return self._runs.unsaved()
