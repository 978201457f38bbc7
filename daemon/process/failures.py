"""Logging what fails outside the rules — a bug while handling one request, or in the loop's
own work — without letting a flood of it fill the log: each kind (the exception's type and the
place it was raised) is logged with its traceback the first time, then as a counted one-liner at
most once a second. The request is answered INTERNAL and csd carries on (daemon/process/server.py).
"""

from __future__ import annotations

import traceback

from ..serve.coalesce import Coalescer


class Failures:
    def __init__(self):
        self._seen: set[str] = set()  # kinds already logged with a traceback
        self._repeats = Coalescer(per_second=1)

    def log(self, log, exc: Exception, event: str) -> None:
        """Log `exc` as `event` to `log` (the loop's logger, which a reload may replace)."""
        frame = traceback.extract_tb(exc.__traceback__)[-1] if exc.__traceback__ else None
        kind = f"{type(exc).__name__} at {frame.filename}:{frame.lineno}" if frame else type(exc).__name__
        if kind not in self._seen:
            self._seen.add(kind)
            log.error(event, kind=kind, exc_info=exc, effect="answered INTERNAL; csd carries on")
        elif self._repeats.admit(kind):
            log.error(event, kind=kind, repeated=True, effect="answered INTERNAL; csd carries on")
