"""Fill a stopped csd's store with N kept events quickly, for the event-log figures.

Making 10⁶ events through csd would take an hour of changes; instead the rows are written
straight into the `events` table of `<state dir>/csd.sqlite3`, in the format daemon/store/store.py
writes (one row per event: `seq` and `body`, the JSON of Event.to_dict()), numbered after the
events already there, in one transaction. csd must be stopped, and started afterwards with
`--keep-events` at least N (or it keeps only its default 10,000).

The store's layout may change (issue #12 item 3 adds indexed columns), so the columns are read
from the table itself: `seq`, `body`, and any of `type`, `severity`, `trigger_time` /
`triggerTime`, `details` are filled from the event; an unknown column that must be filled stops
the prefill with a message saying to teach this file. A `…seq…` number in the device snapshot
is moved to the new newest event. A `rowsum` column (issue 24: every row's checksum) is filled
with csd's own function (csadmin.daemon.store.rows: this runs in the csd venv), for the events and for
the device row whose snapshot it changes. eventlog.py then checks that csd reports exactly these
events.
"""

from __future__ import annotations

import json
import os
import sqlite3
import time

# A realistic mix: the admin procedure and runs, over and over.
CYCLE = (
    ("EventStandbyIssued", True), ("EventPendingStandby", True), ("EventEnteredStandby", False),
    ("EventStandbyCompleted", False), ("EventConfigOpIssued", True), ("EventSetExecModeWeightStreaming", True),
    ("EventConfigOpCompleted", True), ("EventActivateIssued", True), ("EventPendingActive", True),
    ("EventEnteredActive", False), ("EventActivateCompleted", False), ("EventTrainingStarted", False),
    ("EventProgrammingStarted", False), ("EventProgrammingFinished", False), ("EventTrainingCompleted", False),
)
BY = {"name": "bench-admin", "session": "0123456789abcdef0123456789abcdef"}


class PrefillError(RuntimeError):
    """The store is not in a format this file knows; the message says what to change."""


def _norm(name: str) -> str:
    return name.lower().replace("_", "")


def _event(seq: int, ms: int) -> dict:
    kind, by = CYCLE[seq % len(CYCLE)]
    details = {"by": BY} if by else {"recovered": False}
    if kind == "EventTrainingStarted":
        details = {"runId": f"run-{seq:06d}", "owner": "job-42", "mode": "train"}
    return {"seq": seq, "type": kind, "severity": "INFO", "triggerTime": ms, "details": details}


def prefill(state_dir: str, count: int) -> int:
    """Add `count` events after the newest one; return the new newest seq."""
    path = os.path.join(state_dir, "csd.sqlite3")
    db = sqlite3.connect(path, isolation_level=None)
    try:
        columns = db.execute("PRAGMA table_info(events)").fetchall()  # (cid, name, type, notnull, default, pk)
        if not columns:
            raise PrefillError(f"{path} has no `events` table: teach bench/prefill.py where csd keeps events now.")
        fill = {
            "seq": lambda e: e["seq"], "body": lambda e: json.dumps(e), "type": lambda e: e["type"],
            "severity": lambda e: e["severity"], "triggertime": lambda e: e["triggerTime"],
            "time": lambda e: e["triggerTime"], "details": lambda e: json.dumps(e["details"]),
        }
        names, getters, summed = [], [], False
        for _, name, _, notnull, default, pk in columns:
            if name == "rowsum":
                summed = True
                continue
            getter = fill.get(_norm(name))
            if getter is None:
                if notnull and default is None and not pk:
                    raise PrefillError(f"csd's events table has a column {name!r} bench/prefill.py cannot fill: "
                                       "teach it (see daemon/store/store.py for what goes there).")
                continue
            names.append(name)
            getters.append(getter)
        if "seq" not in map(_norm, names):
            raise PrefillError("csd's events table has no `seq` column: teach bench/prefill.py the new format.")
        first = (db.execute("SELECT MAX(seq) FROM events").fetchone()[0] or 0) + 1
        now = int(time.time() * 1000)
        rows = ([g(e) for g in getters] for e in (_event(seq, now - count + i) for i, seq in
                                                     enumerate(range(first, first + count))))
        if summed:
            rows, names = _with_rowsums(rows, names), [*names, "rowsum"]
        db.execute("PRAGMA synchronous=OFF")  # a bulk load of a stopped daemon's store
        db.execute("BEGIN")
        db.executemany(f"INSERT INTO events ({', '.join(names)}) VALUES ({', '.join('?' * len(names))})", rows)
        last = first + count - 1
        _move_snapshot_seq(db, last)
        db.execute("COMMIT")
        db.execute("PRAGMA wal_checkpoint(TRUNCATE)")
        return last
    finally:
        db.close()


def _with_rowsums(rows, names: list[str]):
    """Each row with its checksum over the columns csd's checksum covers, in its order."""
    from csadmin.daemon.store.rows import TABLES, rowsum

    covered = TABLES["events"]
    missing = [c for c in covered if c not in names]
    if missing:
        raise PrefillError(f"csd's events checksum covers {missing}, which bench/prefill.py does not fill.")
    at = [names.index(c) for c in covered]
    for row in rows:
        yield [*row, rowsum([row[i] for i in at])]


def _move_snapshot_seq(db: sqlite3.Connection, last: int) -> None:
    try:
        row = db.execute("SELECT snapshot FROM device WHERE id = 1").fetchone()
    except sqlite3.OperationalError:
        return
    if not row:
        return
    snapshot = json.loads(row[0])
    keys = [k for k, v in snapshot.items() if "seq" in k.lower() and isinstance(v, int)]
    if keys:
        snapshot.update({k: last for k in keys})
        db.execute("UPDATE device SET snapshot = ? WHERE id = 1", (json.dumps(snapshot),))
        if "rowsum" in {row[1] for row in db.execute("PRAGMA table_info(device)")}:
            from csadmin.daemon.store.rows import TABLES, rowsum

            values = db.execute(f"SELECT {', '.join(TABLES['device'])} FROM device WHERE id = 1").fetchone()
            db.execute("UPDATE device SET rowsum = ? WHERE id = 1", (rowsum(values),))
