"""The book of runs in memory: the kept runs, the one holding the fabric, what changed since it
was written, and how to take a change back (pure, no clock).

statemachine/runs.py applies the requests and their rules; this module only keeps what they
change. It is a part of a change (statemachine/change.py: `savepoint`, `rollback`, `release`):
inside one it remembers how to undo each step (a run added, a run's fields before its first
change, a run pushed out of memory), so an undo costs what the change touched.
"""

from __future__ import annotations

from collections import OrderedDict
from typing import Callable

from .defaults import KEEP_RUNS
from .run import Run


class RunBook:
    """Every kept run (oldest first), the `holder` of the fabric and the `next_number` to give.
    A run that changes must be `touch`ed first: it is marked unsaved (csd writes unsaved runs
    with the next commit) and, inside a change, what it was is kept for the undo."""

    def __init__(self, keep: int = KEEP_RUNS):
        self.keep = keep
        self.holder: Run | None = None
        self.next_number = 1
        self._runs: OrderedDict[str, Run] = OrderedDict()
        self._unsaved: set[str] = set()  # run ids changed since they were last written
        self._depth = 0  # open changes
        self._undo: list[Callable[[], None]] = []  # how to take back each step, newest last

    def find(self, run_id: str) -> Run | None:
        return self._runs.get(run_id)

    def newest_first(self, max_count: int | None = None) -> list[Run]:
        runs = list(reversed(self._runs.values()))
        return runs[:max_count] if max_count is not None else runs

    def add(self, run: Run) -> None:
        """A new run, unsaved; older ended and written runs beyond `keep` leave memory."""
        self._runs[run.run_id] = run
        self._unsaved.add(run.run_id)
        if self._depth:
            def forget(run_id=run.run_id):
                del self._runs[run_id]
                self._unsaved.discard(run_id)

            self._undo.append(forget)
        self._evict()

    def touch(self, run: Run) -> None:
        """Before `run` changes: mark it unsaved and, inside a change, keep what it was."""
        if self._depth:
            before, was_unsaved = run.copy(), run.run_id in self._unsaved

            def restore():
                vars(run).update(vars(before))  # in place: whoever holds `run` sees it restored
                if not was_unsaved:
                    self._unsaved.discard(run.run_id)

            self._undo.append(restore)
        self._unsaved.add(run.run_id)

    def _evict(self) -> None:
        """Keep at most `keep` runs in memory: the oldest ended, written ones go (they stay in the
        store)."""
        while len(self._runs) > self.keep:
            oldest = next(iter(self._runs.values()))
            if oldest.is_open or oldest.run_id in self._unsaved:
                break
            del self._runs[oldest.run_id]
            if self._depth:
                def put_back(run=oldest):
                    self._runs[run.run_id] = run
                    self._runs.move_to_end(run.run_id, last=False)

                self._undo.append(put_back)

    # -- the store -------------------------------------------------------------------------------

    def load(self, records: list[dict]) -> None:
        """Load the runs the store kept (oldest first); numbering continues after the newest."""
        for record in records:
            run = Run.from_dict(record)
            self._runs[run.run_id] = run
            self.next_number = max(self.next_number, run.number + 1)
            if run.is_open:
                self.holder = run
        self._evict()

    def unsaved(self) -> list[dict]:
        """The records of the runs changed since they were last written, for the store."""
        return [self._runs[r].to_store() for r in sorted(self._unsaved) if r in self._runs]

    def saved(self, records: list[dict]) -> None:
        """These records (from unsaved()) are in the store now."""
        self._unsaved.difference_update(r["runId"] for r in records)

    @property
    def has_unsaved(self) -> bool:
        return bool(self._unsaved)

    # -- as part of a change (statemachine/change.py) --------------------------------------------

    def savepoint(self) -> tuple:
        self._depth += 1
        return len(self._undo), self.holder.run_id if self.holder is not None else None, self.next_number

    def rollback(self, savepoint: tuple) -> None:
        """Take back every step since `savepoint`, newest first."""
        steps, holder_id, next_number = savepoint
        while len(self._undo) > steps:
            self._undo.pop()()
        self.next_number = next_number
        self.holder = self._runs[holder_id] if holder_id is not None else None

    def release(self, savepoint: tuple) -> None:
        self._depth -= 1
        if not self._depth:
            self._undo.clear()
