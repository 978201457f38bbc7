"""Durable state: one SQLite database (WAL, synchronous=FULL) in the state directory.

A change and the reply that acknowledges it are written in one transaction, committed before
the reply is sent; so what a client was told survives kill -9 and power loss, and a retried
request after a crash still gets its first reply.

The store is the event log of record: each event is a row keyed by its seq, with its type
(indexed with seq) and time beside its JSON, so `events.show` is an indexed query whose cost
follows the events it returns, not the number kept (10⁶ by choice); the model holds only the
newest few in memory, and a restart reads only those.

The kept events, replies and audit records are trimmed to their limits in bounded steps
(daemon/store/trim.py), inside the commits. The database is
checked against `csd.identity` before use (daemon/store/identity.py): an empty, replaced or rolled-back
database stops csd instead of passing for a fresh system; so does a write-ahead log that is
missing, emptied, cut short or damaged after an unclean stop (daemon/store/wal.py). Every row carries
a checksum checked whenever it is read (daemon/store/rows.py), and every damage is refused with one
clear message (daemon/store/damage.py), at start and while serving: `damaged` then holds it, and the
loop stops csd (daemon/process/server.py).
"""

from __future__ import annotations

import fcntl
import json
import os
import sqlite3
import time

from csadmin.statemachine.events import Event

from . import event_filter, provenance, rows
from .checked_reads import CheckedReads
from .damage import StoreDamaged, StoreError, damage_name, guarded, is_damage
from .identity import Identity, IdentityError
from .progress import Progress
from .schema import SCHEMA, migrate
from .trim import Trimmer

AUDIT_COLUMNS = ("time", "name", "role", "op", "args", "outcome", "message")
IDENTITY_EVERY_SECONDS = 10.0  # how often the committed seq is recorded outside the database

_INSERT = {table: rows.insert(table) for table in ("replies", "audit")}
_PUT = {table: rows.insert(table, "INSERT OR REPLACE") for table in ("device", "events", "runs", "meta")}
__all__ = ["Store", "StoreError", "StoreDamaged"]


def _numbered(last: int, records) -> list[tuple]:
    """`records` with the keys after `last`, and their checksums."""
    return [rows.with_rowsum((last + i, *record)) for i, record in enumerate(records, 1)]


class Store:
    def __init__(self, state_dir: str, keep_events: int, keep_replies: int = 10_000, keep_audit: int = 100_000,
                 preload: tuple[int, int] | None = None):
        """Open and check the store. `preload` (events, runs): read (and so check) what a start
        needs before anything is written, into `preloaded` (load()'s result, load_runs()')."""
        os.makedirs(state_dir, mode=0o750, exist_ok=True)
        self.state_dir = state_dir
        self.path = os.path.join(state_dir, "csd.sqlite3")
        self.keep = {"events": keep_events, "replies": keep_replies, "audit": keep_audit}
        self.keep_events, self.keep_replies = keep_events, keep_replies
        self._reads: CheckedReads | None = None
        # One daemon per state directory: a second would fork the truth.
        self._lock = open(os.path.join(state_dir, "csd.lock"), "w")
        try:
            fcntl.flock(self._lock, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            raise StoreError(f"Another csd is already using {state_dir}; stop it first or pick another --state-dir.")
        self.identity = Identity(state_dir)
        self.progress = Progress(state_dir)
        try:
            recorded = self.identity.read()
        except IdentityError as exc:
            raise StoreError(str(exc)) from None
        existed = os.path.exists(self.path) and os.path.getsize(self.path) > 0
        if recorded is not None and not existed:  # refused before SQLite writes a byte
            provenance.refuse_empty(self.path, self.identity.path, state_dir, recorded,
                                    "is missing" if not os.path.exists(self.path) else "is empty")
        provenance.check_log(self.path, state_dir, recorded)
        with guarded(state_dir, self.path, "the database file", serving=False):
            self._open(recorded, preload)

    # -- opening -----------------------------------------------------------------------------------

    def _open(self, recorded: dict | None, preload: tuple[int, int] | None) -> None:
        self.db = sqlite3.connect(self.path, isolation_level=None)
        self.db.execute("PRAGMA journal_mode=WAL")
        self.db.execute("PRAGMA synchronous=FULL")
        self._reads = CheckedReads(self.db, self.state_dir, self.path)
        check = self.db.execute("PRAGMA quick_check").fetchone()[0]
        if check != "ok":
            raise StoreDamaged(self.state_dir, self.path, f"SQLite's quick_check says {check!r}")
        self._check_identity(recorded)  # before anything is written
        self.db.executescript(SCHEMA)
        migrate(self.db)
        device = self._reads.read("device", rows.select("device", " WHERE id = 1"), serving=False)
        self.commits = int(device[0][2]) if device and device[0][2] is not None else 0
        if recorded is not None:
            provenance.check_progress(self.path, self.progress.path, self.state_dir, self.commits,
                                      self.progress.read(self.database))
        if recorded is not None and recorded.get("damaged"):  # found while serving: is it still there?
            for table in rows.TABLES:
                bad = rows.first_bad_row(self.db, table)
                if bad:
                    raise StoreDamaged(self.state_dir, self.path, f"{bad} fails its checksum")
        self.preloaded = (self.load(preload[0]), self.load_runs(preload[1])) if preload else None
        # A frame in the log before csd.identity says "running" (daemon/store/wal.py counts on it).
        self._put("meta", ("started", str(int(time.time() * 1000))))
        if recorded is None:  # a new state directory, or one from a csd before this check
            self._adopt()
        self._identity_seq = recorded["seq"] if recorded else self.committed_seq
        # The newest keys AUTOINCREMENT gave (a row's key is in its checksum, so csd numbers them).
        self._last = dict.fromkeys(("replies", "audit"), 0)
        self._last.update(self.db.execute("SELECT name, seq FROM sqlite_sequence WHERE name IN ('replies', 'audit')"))
        self._trim = Trimmer(self.db, self.keep)
        self._trim.step(force=True)  # limits hold across restarts, not only within one run
        self._identity_written = time.monotonic()

    def _check_identity(self, recorded: dict | None) -> None:
        database, self.committed_seq = provenance.read_database(self.db, self.state_dir, self.path)
        if recorded is None:
            self.database = database
            return
        self.database, self.created = recorded["database"], int(recorded.get("created", 0))
        provenance.check_recorded(self.path, self.identity.path, self.state_dir, recorded, database, self.committed_seq)

    def _adopt(self) -> None:
        """Give a database without an identity one, and record it in csd.identity."""
        if self.database is None:
            self.database = os.urandom(16).hex()
            self._put("meta", ("database", self.database))
        self.created = int(time.time() * 1000)
        self.progress.write(self.database, self.commits)
        self.identity.write(self.database, self.created, self.committed_seq, running=True)

    def _put(self, table: str, row: tuple) -> None:
        self.db.execute(_PUT[table], rows.with_rowsum(row))

    def record_progress(self, force: bool = False) -> None:
        """Record the committed seq in `csd.identity` (at start, and from the loop, which calls
        this often: it writes at most every IDENTITY_EVERY_SECONDS, and only when the seq moved).
        A failure is not fatal; the next call tries again."""
        now = time.monotonic()
        if not force and now - self._identity_written < IDENTITY_EVERY_SECONDS:
            return
        self._identity_written = now
        if force or self.committed_seq != self._identity_seq:
            self.identity.write(self.database, self.created, self.committed_seq, running=True)
            self._identity_seq = self.committed_seq

    # -- reading: every row is checked against its rowsum before it is used (checked_reads.py) ------

    @property
    def damaged(self) -> StoreDamaged | None:
        """Damage found while serving (a read or a write): csd stops."""
        return self._reads.damaged if self._reads is not None else None

    def load(self, events: int) -> tuple[dict | None, list[Event], list[tuple[bytes, str, str, bytes]]]:
        """Return (device snapshot or None for a fresh system, the newest `events` events, recent
        replies as (client, id key, fingerprint, reply)); what it reads does not grow with the
        number of events kept."""
        device = self._reads.read("device", rows.select("device", " WHERE id = 1"), serving=False)
        snapshot = json.loads(device[0][1]) if device else None
        found = self._reads.newest("events", min(events, self.keep_events), serving=False)
        replies = self._reads.newest("replies", self.keep_replies, serving=False)
        return (snapshot, [Event.from_dict(json.loads(row[1])) for row in found],
                [(client, key, fp, reply) for _, client, key, fp, reply, _ in replies])

    def load_runs(self, keep: int) -> list[dict]:
        """The newest `keep` run records, oldest first (older ones stay on disk)."""
        found = self._reads.newest("runs", keep, serving=False)
        return [json.loads(row[2]) for row in found]

    def events(
        self,
        event_type: str | None = None,
        from_time: int | None = None,
        max_count: int | None = None,
        after_seq: int | None = None,
    ) -> list[dict]:
        """The kept events that match, oldest first, as Event.to_dict() data; with `max_count`,
        the newest that many. `event_type` is a shell-style glob matched case-sensitively (as
        EventLog.query; daemon/store/event_filter.py). Read newest first along the seq key (or the
        (type, seq) index for an exact type) and stopped after `max_count` matches, so its cost
        follows what it returns."""
        if max_count is not None and max_count <= 0:
            return []
        clause, params = event_filter.where(event_type, from_time, after_seq)
        sql = rows.select("events", clause)
        if max_count is None:
            found = self._reads.read("events", sql + " ORDER BY seq", params)
        else:
            found = self._reads.read("events", sql + " ORDER BY seq DESC LIMIT ?", (*params, max_count))
            found.reverse()
        loads = json.loads
        return [loads(row[1]) for row in found]

    def audit_entries(self, max_count: int) -> list[dict]:
        """The newest `max_count` audit records, oldest first."""
        found = self._reads.newest("audit", max_count)
        return [dict(zip(AUDIT_COLUMNS, row[1:-1])) for row in found]

    # -- writing -----------------------------------------------------------------------------------

    def commit(
        self,
        snapshot: dict,
        events: list[Event],
        replies: list[tuple[bytes, str, str, bytes]] = (),
        runs: list[dict] | None = None,
        audit: list[tuple] | None = None,
    ) -> None:
        """Write a change atomically and durably (fsync'd by SQLite before this returns): one
        request's, or a group's (daemon/serve/dispatch.py). `replies` are (client, id key,
        fingerprint, reply), `runs` changed run records (Run.to_dict()) and `audit` audit
        records (tuples in AUDIT_COLUMNS order), all written in the same transaction, each row
        with its checksum."""
        summed, last = rows.with_rowsum, self._last

        def write(db) -> None:
            db.execute(_PUT["device"], summed((1, json.dumps(snapshot), self.commits + 1)))
            if events:
                row = rows.event_row
                db.executemany(_PUT["events"], [row(e.seq, json.dumps(e.to_dict()), e.type, e.triggerTime)
                                                for e in events])
            if runs:
                db.executemany(_PUT["runs"], [summed((r["number"], r["runId"], json.dumps(r))) for r in runs])
            if replies:
                db.executemany(_INSERT["replies"], _numbered(last["replies"], replies))
            if audit:
                db.executemany(_INSERT["audit"], _numbered(last["audit"], audit))
            self._trim.count(events=len(events), replies=len(replies), audit=len(audit or ()))

        self._transaction(write)
        last["replies"] += len(replies)
        last["audit"] += len(audit or ())
        self.commits += 1
        try:
            self.progress.write(self.database, self.commits)
        except OSError:  # a safety record only: an older one refuses nothing wrongly
            pass
        if events:
            self.committed_seq = max(self.committed_seq, events[-1].seq)

    def audit(self, records: list[tuple]) -> None:
        """Record audited requests that changed nothing (refusals, denials), durably, in one
        transaction."""
        def write(db) -> None:
            db.executemany(_INSERT["audit"], _numbered(self._last["audit"], records))
            self._trim.count(audit=len(records))

        self._transaction(write)
        self._last["audit"] += len(records)

    def _transaction(self, write) -> None:
        """`write(db)` and a trimming step in one transaction, committed (fsync'd) or rolled back."""
        db = self.db
        try:
            db.execute("BEGIN IMMEDIATE")
            try:
                write(db)
                self._trim.step()
                db.execute("COMMIT")
            except BaseException:
                self._rollback()
                raise
        except sqlite3.DatabaseError as exc:
            raise self._written_damage(exc)

    def _written_damage(self, exc: sqlite3.DatabaseError) -> Exception:
        """What a failed write raises: StoreDamaged (and `damaged` set) if SQLite found the file
        corrupt; else the error itself (a full disk, an I/O error: not saved, csd carries on)."""
        if not is_damage(exc):
            return exc
        return self._reads.found(f"SQLite found it corrupt while writing ({damage_name(exc)})", serving=True)

    def _rollback(self) -> None:
        # After an I/O error (a full disk) SQLite may have rolled the transaction back itself.
        if self.db.in_transaction:
            try:
                self.db.execute("ROLLBACK")
            except sqlite3.DatabaseError:  # a damaged file may refuse even that: the write's error says why
                pass

    def close(self) -> None:
        """Record the stop in csd.identity (the exact seq; a clean stop, so the next start does not
        need the write-ahead log; and the damage, if csd stops for it), then close the database
        (SQLite checkpoints the log into it and removes it). The database is closed even if the
        record cannot be written (the OSError is raised after)."""
        try:
            self.identity.write(self.database, self.created, self.committed_seq, running=False,
                                damaged=self.damaged.what if self.damaged else None)
        finally:
            self.db.close()
            self.progress.close()
            self._lock.close()
