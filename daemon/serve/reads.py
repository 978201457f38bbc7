"""Encoded answers of cached reads, kept until the model changes.

An op whose answer depends only on the model and its arguments says so with `cached=True` (csadmin/shared/ops.py)
(system.show). The first time it is asked (per set of arguments) its result is encoded once;
later requests get those bytes with their own id, until the dispatcher says the model changed
(`clear()`: after every change it applied, every timer that fired). A `time` field in the result
is the one part that moves without a change: it is left out of the cached bytes and written
fresh into each reply, from the model's clock.

As a guard against a change the dispatcher did not report, each entry also remembers the
model's `revision` it was built at (the newest event's seq, and a count of the fault changes
that emit no event) and is rebuilt if that moved.
"""

from __future__ import annotations

from typing import Callable

from csadmin.shared import protocol

TIME = "time"


class ReadCache:
    def __init__(self, revision: Callable[[], object], clock: Callable[[], int]):
        """`revision()`: the model's revision (Device.revision); `clock()`: the model's time (ms)."""
        self._revision = revision
        self._clock = clock
        self._entries: dict[tuple, tuple[object, bytes, bool]] = {}  # key -> (revision, result bytes, has time)

    def clear(self) -> None:
        """The model changed: every cached answer is stale."""
        self._entries.clear()

    def answer(self, op: str, args: dict, request_id, build: Callable[[], dict]) -> bytes:
        """The reply to `op` with `args` for `request_id`: from the cache, or `build()` once."""
        key = (op, *sorted(args.items()))
        entry = self._entries.get(key)
        revision = self._revision()
        if entry is None or entry[0] != revision:
            result = build()
            has_time = TIME in result
            if has_time:
                result = {k: v for k, v in result.items() if k != TIME}
            # The bytes of the object without its closing brace: the time (if any) is appended per reply.
            entry = (revision, protocol.encode(result)[:-1], has_time)
            self._entries[key] = entry
        _, head, has_time = entry
        if has_time:
            tail = b'"time":%d}' % self._clock() if len(head) == 1 else b',"time":%d}' % self._clock()
            return protocol.ok_encoded(request_id, head + tail)
        return protocol.ok_encoded(request_id, head + b"}")
