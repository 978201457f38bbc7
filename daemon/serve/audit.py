"""The audit trail of requests that changed nothing: refusals, denials, replays, refused
handshakes (all of them come here; a change's own record is written in the change's
transaction, by the dispatcher).

Anyone with a key, or just access to the socket, can make these at will, so they are:
- rate-limited per source (a key name, or "handshakes"): the first `PER_SECOND` each second
  are kept one by one, the rest counted into one summary record per source and second;
- written in batches: one transaction (one fsync) at most every `FLUSH_SECONDS`, or together
  with the next change. A kill -9 can lose the last fraction of a second of these records,
  never a change's record, which commits with the change.
Their log lines are coalesced the same way.
"""

from __future__ import annotations

import json
import time
from typing import Hashable

from .coalesce import Coalescer

PER_SECOND = 10  # records kept one by one per source and second
FLUSH_SECONDS = 0.2  # longest a record waits in memory
FLUSH_RECORDS = 500  # ... or this many waiting records
ARGS_MAX = 1000  # characters of a request's args kept in its record
OP_MAX = 100  # a refused stranger's op is not ours to store whole


SECRET_ARGS = frozenset({"token"})  # run.join's join token
SECRET_MARK = "<secret>"


def record(name, role, op, args, outcome: str, message: str, now_ms: int | None = None) -> tuple:
    """An audit row (store.AUDIT_COLUMNS order), with args as bounded JSON text and secrets
    (a run's join token) replaced by a mark: the trail says one was given, never what it was."""
    if isinstance(args, dict) and SECRET_ARGS.intersection(args):
        args = {k: (SECRET_MARK if k in SECRET_ARGS else v) for k, v in args.items()}
    text = json.dumps(args, separators=(",", ":"), ensure_ascii=False) if args is not None else "{}"
    if len(text) > ARGS_MAX:
        text = text[:ARGS_MAX] + "…"
    if isinstance(op, str) and len(op) > OP_MAX:
        op = op[:OP_MAX] + "…"
    elif op is not None and not isinstance(op, str):
        op = None
    return (int(time.time() * 1000) if now_ms is None else now_ms, name, role, op, text, outcome, message)


class AuditTrail:
    def __init__(self, store, log, coalescer: Coalescer | None = None, clock=time.monotonic):
        self.store = store
        self.log = log
        self.clock = clock
        self.coalescer = coalescer or Coalescer(PER_SECOND, clock=clock)
        self._pending: list[tuple] = []
        self._last_flush = clock()

    def add(self, source: Hashable, row: tuple, log_event: str | None = None, **log_fields) -> bool:
        """Keep `row` (and log `log_event` at WARNING) unless `source` is over its rate, in which
        case it is only counted. Returns whether it was kept."""
        if not self.admits(source, row[3], row[5]):
            return False
        self.keep(row, log_event, **log_fields)
        return True

    def admits(self, source: Hashable, op, outcome: str) -> bool:
        """Whether a record of `source` is kept one by one (else it is counted): ask first, and
        build the record only if so (a flood's records are never formatted)."""
        return self.coalescer.admit(source, f"{op if isinstance(op, str) and len(op) <= OP_MAX else '-'} {outcome}")

    def keep(self, row: tuple, log_event: str | None = None, **log_fields) -> None:
        """Write `row` with the next batch (after `admits` said yes), and log `log_event`."""
        self._pending.append(row)
        if log_event is not None:
            self.log.warning(log_event, **log_fields)

    def take(self) -> list[tuple]:
        """The waiting rows, for a transaction that is being committed anyway (they ride along)."""
        rows, self._pending = self._pending, []
        self._last_flush = self.clock()
        return rows

    def give_back(self, rows: list[tuple]) -> None:
        """Rows from take() whose transaction failed: write them with the next one."""
        self._pending[:0] = rows

    def tick(self) -> None:
        """Called every loop turn: turn ended windows into summary rows; write when due."""
        for summary in self.coalescer.summaries():
            self._summarize(summary)
        if self._pending and (len(self._pending) >= FLUSH_RECORDS or self.clock() - self._last_flush >= FLUSH_SECONDS):
            self.flush()

    def flush(self) -> None:
        rows = self.take()
        if not rows:
            return
        try:
            self.store.audit(rows)
        except Exception:
            self.log.exception("audit_write_failed", records=len(rows))

    def refused_handshake(self, public_key: str | None, address: str, reason: str) -> None:
        """A handshake the authenticator refused (its on_denied callback). Anyone can attempt
        one, so these records and their log lines are rate-limited like the rest: a flood of
        strangers must not turn into a flood of fsyncs or log lines."""
        row = record(None, None, "connect", {"public_key": public_key, "address": address}, "REFUSED",
                     f"Handshake refused: {reason}.")
        self.add(HANDSHAKES, row, "connection_refused", public_key=public_key, address=address, reason=reason)

    def entries(self, max_count: int) -> list[dict]:
        """The newest records, including those still waiting to be written."""
        self.flush()
        return self.store.audit_entries(max_count)

    def _summarize(self, summary) -> None:
        source = summary.source
        what = "refused handshakes" if source == HANDSHAKES else f"refused requests from key {source!r}"
        message = (f"{summary.count} more {what} in {summary.end - summary.start:.1f} s were not recorded one by one "
                   f"(too many): {summary.describe()}.")
        name = None if source == HANDSHAKES else source
        op = "connect" if source == HANDSHAKES else None
        outcome = summary.kinds[0][0].rpartition(" ")[2] or "REFUSED"
        self._pending.append(record(name, None, op, None, outcome, message))
        self.log.warning("refusals_coalesced", source="handshakes" if source == HANDSHAKES else source,
                         count=summary.count, kinds=dict(summary.kinds))


HANDSHAKES = ("handshakes",)  # the source of refused handshakes (no key name to tell them apart)
