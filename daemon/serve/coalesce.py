"""Rate limits with counted summaries, for records anyone can trigger at will (denials, refused
handshakes, repeated failures): the first few per source each second are kept one by one, the
rest are only counted, and a summary says how many, of what, once the second is over. So a flood
stays visible but cannot drive fsyncs or fill the log.
"""

from __future__ import annotations

import time
from collections import Counter
from typing import Callable, Hashable

MAX_KINDS = 5  # distinct kinds a summary lists; the rest are lumped together


class _Window:
    __slots__ = ("start", "admitted", "suppressed")

    def __init__(self, start: float):
        self.start = start
        self.admitted = 0
        self.suppressed: Counter = Counter()


class Summary:
    """`count` records of `source` were not kept one by one between `start` and `end`;
    `kinds` says of what (kind → count, the most common first)."""

    def __init__(self, source, count: int, kinds: list[tuple[str, int]], start: float, end: float):
        self.source, self.count, self.kinds, self.start, self.end = source, count, kinds, start, end

    def describe(self) -> str:
        return ", ".join(f"{kind} ×{n}" for kind, n in self.kinds)


class Coalescer:
    def __init__(self, per_second: int = 10, window: float = 1.0, clock: Callable[[], float] = time.monotonic):
        self.per_second = per_second
        self.window = window
        self.clock = clock
        self._windows: dict[Hashable, _Window] = {}
        self._due: list[Summary] = []

    def admit(self, source: Hashable, kind: str = "") -> bool:
        """True: keep this record. False: it was counted for `source`'s next summary."""
        now = self.clock()
        w = self._windows.get(source)
        if w is None or now - w.start >= self.window:
            if w is not None:
                self._close(source, w, now)
            w = self._windows[source] = _Window(now)
        if w.admitted < self.per_second:
            w.admitted += 1
            return True
        if kind not in w.suppressed and len(w.suppressed) >= MAX_KINDS:
            kind = "other"
        w.suppressed[kind] += 1
        return False

    def summaries(self) -> list[Summary]:
        """Summaries of windows that have ended with records suppressed (each reported once);
        idle windows are forgotten, so memory stays bounded by the sources active this second."""
        now = self.clock()
        for source, w in list(self._windows.items()):
            if now - w.start >= self.window:
                self._close(source, w, now)
                del self._windows[source]
        due, self._due = self._due, []
        return due

    def _close(self, source, w: _Window, now: float) -> None:
        if w.suppressed:
            total = sum(w.suppressed.values())
            self._due.append(Summary(source, total, w.suppressed.most_common(), w.start, min(now, w.start + self.window)))
