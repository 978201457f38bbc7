"""Durable state: one SQLite database (WAL, synchronous=FULL) in the state directory.

A change and the reply that acknowledges it are written in one transaction, committed before
the reply is sent; so what a client was told survives kill -9 and power loss, and a retried
request after a crash still gets its first reply.

The store is the event log of record: each event is a row keyed by its seq, with its type
(indexed with seq) and time beside its JSON, so `events.show` is an indexed query whose cost
follows the events it returns, not the number kept (10⁶ by choice); the model holds only the
newest few in memory, and a restart reads only those.

The kept events, replies and audit records are trimmed to their limits in bounded steps (at most
PRUNE_STEP rows per commit, so no commit waits on a large delete): a step at every start and
whenever about 1% more (at most PRUNE_STEP) have been written, and again at each commit while a
table is still over its limit; so the limits hold across restarts. The database is
checked against `csd.identity` before use (daemon/identity.py): an empty, replaced or rolled-back
database stops csd instead of passing for a fresh system.
"""

from __future__ import annotations

import fcntl
import json
import os
import sqlite3
import time

from csadmin.statemachine.events import Event

from .identity import Identity, IdentityError, recovery_steps, wal_header_problem

SCHEMA = """
CREATE TABLE IF NOT EXISTS meta    (key TEXT PRIMARY KEY, value TEXT NOT NULL);
CREATE TABLE IF NOT EXISTS device  (id INTEGER PRIMARY KEY CHECK (id = 1), snapshot TEXT NOT NULL);
-- type and time are the event's own (also in body), for indexed queries.
CREATE TABLE IF NOT EXISTS events  (seq INTEGER PRIMARY KEY, body TEXT NOT NULL, type TEXT, time INTEGER);
-- request_id is the id as JSON (7 and "7" differ); fingerprint is what the request asked for.
CREATE TABLE IF NOT EXISTS replies (n INTEGER PRIMARY KEY AUTOINCREMENT, client BLOB NOT NULL,
                                    request_id TEXT NOT NULL, reply BLOB NOT NULL, fingerprint TEXT);
-- Run history grows without bound, so runs live in their own table, not in the device snapshot.
CREATE TABLE IF NOT EXISTS runs    (number INTEGER PRIMARY KEY, run_id TEXT NOT NULL UNIQUE, body TEXT NOT NULL);
CREATE TABLE IF NOT EXISTS audit   (n INTEGER PRIMARY KEY AUTOINCREMENT, time INTEGER NOT NULL, name TEXT,
                                    role TEXT, op TEXT, args TEXT NOT NULL, outcome TEXT NOT NULL,
                                    message TEXT NOT NULL);
"""

INDEXES = "CREATE INDEX IF NOT EXISTS events_by_type ON events (type, seq);"
PRUNE_STEP = 2_000  # rows deleted per table at most per commit
_GLOB_SPECIAL = frozenset("*?[")

AUDIT_COLUMNS = ("time", "name", "role", "op", "args", "outcome", "message")
IDENTITY_EVERY_SECONDS = 10.0  # how often the committed seq is recorded outside the database

_INSERT_REPLY = "INSERT INTO replies (client, request_id, fingerprint, reply) VALUES (?, ?, ?, ?)"
_INSERT_AUDIT = f"INSERT INTO audit ({', '.join(AUDIT_COLUMNS)}) VALUES ({', '.join('?' * len(AUDIT_COLUMNS))})"


class StoreError(RuntimeError):
    """The state store cannot be used; the message says what to do."""


def _when(recorded: dict) -> str:
    return time.strftime("%Y-%m-%d %H:%M:%S", time.localtime(recorded.get("written", 0) / 1000))


class Store:
    def __init__(self, state_dir: str, keep_events: int, keep_replies: int = 10_000, keep_audit: int = 100_000):
        os.makedirs(state_dir, mode=0o750, exist_ok=True)
        self.state_dir = state_dir
        self.path = os.path.join(state_dir, "csd.sqlite3")
        self.keep = {"events": keep_events, "replies": keep_replies, "audit": keep_audit}
        self.keep_events, self.keep_replies = keep_events, keep_replies
        # One daemon per state directory: a second would fork the truth.
        self._lock = open(os.path.join(state_dir, "csd.lock"), "w")
        try:
            fcntl.flock(self._lock, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            raise StoreError(f"Another csd is already using {state_dir}; stop it first or pick another --state-dir.")
        self.identity = Identity(state_dir)
        try:
            recorded = self.identity.read()
        except IdentityError as exc:
            raise StoreError(str(exc)) from None
        # Before SQLite sees the log: it would silently drop a damaged one, and delete it.
        problem = wal_header_problem(self.path + "-wal")
        if problem:
            raise StoreError(
                f"The state store's write-ahead log {self.path}-wal is damaged ({problem}); SQLite would ignore it "
                f"and every change since its last checkpoint would be lost. {recovery_steps(state_dir)}"
            )
        existed = os.path.exists(self.path) and os.path.getsize(self.path) > 0
        if recorded is not None and not existed:  # refused before SQLite writes a byte
            self._refuse_empty(recorded, "is missing" if not os.path.exists(self.path) else "is empty")
        self.db = sqlite3.connect(self.path, isolation_level=None)
        self.db.execute("PRAGMA journal_mode=WAL")
        self.db.execute("PRAGMA synchronous=FULL")
        check = self.db.execute("PRAGMA quick_check").fetchone()[0]
        if check != "ok":
            raise StoreError(f"The state store {self.path} is damaged ({check}); restore it from backup.")
        self._check_identity(recorded)  # before anything is written
        self.db.executescript(SCHEMA)
        self._migrate()
        if recorded is None:  # a new state directory, or one from a csd before this check
            self._adopt()
        self._identity_seq = recorded["seq"] if recorded else self.committed_seq
        self._since_prune = dict.fromkeys(self.keep, 0)
        self._over = dict.fromkeys(self.keep, True)  # still above its limit after the last step
        self._prune(force=True)  # limits hold across restarts, not only within one run
        self._identity_written = time.monotonic()

    # -- opening -----------------------------------------------------------------------------------

    def _migrate(self) -> None:
        columns = {row[1] for row in self.db.execute("PRAGMA table_info(replies)")}
        if "fingerprint" not in columns:  # a csd before replies knew what they answered
            self.db.execute("ALTER TABLE replies ADD COLUMN fingerprint TEXT")
        # Such rows cannot be matched safely to a retry (their id's type and request are unknown).
        self.db.execute("DELETE FROM replies WHERE fingerprint IS NULL")
        columns = {row[1] for row in self.db.execute("PRAGMA table_info(events)")}
        if "type" not in columns:  # a csd before the indexed event log: once, in one transaction
            with self.db:
                self.db.execute("BEGIN IMMEDIATE")
                self.db.execute("ALTER TABLE events ADD COLUMN type TEXT")
                self.db.execute("ALTER TABLE events ADD COLUMN time INTEGER")
                self.db.execute("UPDATE events SET type = json_extract(body, '$.type'), "
                                "time = json_extract(body, '$.triggerTime')")
        self.db.executescript(INDEXES)

    def _check_identity(self, recorded: dict | None) -> None:
        has_meta = self.db.execute("SELECT 1 FROM sqlite_master WHERE type = 'table' AND name = 'meta'").fetchone()
        row = self.db.execute("SELECT value FROM meta WHERE key = 'database'").fetchone() if has_meta else None
        database = row[0] if row else None
        has_events = self.db.execute("SELECT 1 FROM sqlite_master WHERE type = 'table' AND name = 'events'").fetchone()
        self.committed_seq = (
            self.db.execute("SELECT COALESCE(MAX(seq), 0) FROM events").fetchone()[0] if has_events else 0
        )
        if recorded is None:
            self.database = database
            return
        self.database, self.created = recorded["database"], int(recorded.get("created", 0))
        if database is None:
            self._refuse_empty(recorded, "holds no identity (it is a new or reset database)")
        if database != recorded["database"]:
            raise StoreError(
                f"The state store {self.path} is database {database}, but {self.identity.path} records database "
                f"{recorded['database']}: it was replaced by another system's or another state directory's. "
                f"{recovery_steps(self.state_dir)}"
            )
        if self.committed_seq < recorded["seq"]:
            raise StoreError(
                f"The state store {self.path} ends at event seq {self.committed_seq}, but {self.identity.path} "
                f"records that seq {recorded['seq']} was committed (as of {_when(recorded)}): the database went back "
                f"in time (a lost or damaged write-ahead log, or an older copy put back). "
                f"{recovery_steps(self.state_dir)}"
            )

    def _refuse_empty(self, recorded: dict, what: str) -> None:
        raise StoreError(
            f"The state store {self.path} {what}, but {self.identity.path} records that csd used database "
            f"{recorded['database']} here, with events up to seq {recorded['seq']} (as of {_when(recorded)}): the "
            f"database was truncated, replaced or lost, and csd will not pass it off as a fresh system. "
            f"{recovery_steps(self.state_dir)}"
        )

    def _adopt(self) -> None:
        """Give a database without an identity one, and record it in csd.identity."""
        if self.database is None:
            self.database = os.urandom(16).hex()
            self.db.execute("INSERT INTO meta (key, value) VALUES ('database', ?)", (self.database,))
        self.created = int(time.time() * 1000)
        self.identity.write(self.database, self.created, self.committed_seq)

    def record_progress(self, force: bool = False) -> None:
        """Record the committed seq in `csd.identity` (at start and stop, and from the loop,
        which calls this often: it writes at most every IDENTITY_EVERY_SECONDS, and only when
        the seq moved). A failure is not fatal; the next call tries again."""
        now = time.monotonic()
        if not force and now - self._identity_written < IDENTITY_EVERY_SECONDS:
            return
        self._identity_written = now
        if force or self.committed_seq != self._identity_seq:
            self.identity.write(self.database, self.created, self.committed_seq)
            self._identity_seq = self.committed_seq

    # -- reading -----------------------------------------------------------------------------------

    def load(self, events: int) -> tuple[dict | None, list[Event], list[tuple[bytes, str, str, bytes]]]:
        """Return (device snapshot or None for a fresh system, the newest `events` events, recent
        replies as (client, id key, fingerprint, reply)); what it reads does not grow with the
        number of events kept."""
        row = self.db.execute("SELECT snapshot FROM device WHERE id = 1").fetchone()
        snapshot = json.loads(row[0]) if row else None
        events = [
            Event.from_dict(json.loads(body))
            for (body,) in self.db.execute(
                "SELECT body FROM (SELECT seq, body FROM events ORDER BY seq DESC LIMIT ?) ORDER BY seq",
                (min(events, self.keep_events),),
            )
        ]
        replies = self.db.execute(
            "SELECT client, request_id, fingerprint, reply FROM "
            "(SELECT * FROM replies ORDER BY n DESC LIMIT ?) ORDER BY n",
            (self.keep_replies,),
        ).fetchall()
        return snapshot, events, replies

    def load_runs(self, keep: int) -> list[dict]:
        """The newest `keep` run records, oldest first (older ones stay on disk)."""
        rows = self.db.execute(
            "SELECT body FROM (SELECT number, body FROM runs ORDER BY number DESC LIMIT ?) ORDER BY number", (keep,)
        )
        return [json.loads(body) for (body,) in rows]

    def events(
        self,
        event_type: str | None = None,
        from_time: int | None = None,
        max_count: int | None = None,
        after_seq: int | None = None,
    ) -> list[dict]:
        """The kept events that match, oldest first, as Event.to_dict() data; with `max_count`,
        the newest that many. `event_type` is a shell-style glob matched case-sensitively (as
        EventLog.query). Read newest first along the seq key (or the (type, seq) index for an
        exact type) and stopped after `max_count` matches, so its cost follows what it returns."""
        where, params = [], []
        if event_type is not None:
            if _GLOB_SPECIAL.isdisjoint(event_type):
                where.append("type = ?")
            else:
                where.append("type GLOB ?")
                event_type = event_type.replace("[!", "[^")  # fnmatch's negation, in SQLite's spelling
            params.append(event_type)
        if from_time is not None:
            where.append("time >= ?")
            params.append(from_time)
        if after_seq is not None:
            where.append("seq > ?")
            params.append(after_seq)
        if max_count is not None and max_count <= 0:
            return []
        sql = "SELECT body FROM events" + (" WHERE " + " AND ".join(where) if where else "")
        if max_count is None:
            rows = self.db.execute(sql + " ORDER BY seq", params).fetchall()
        else:
            rows = self.db.execute(sql + " ORDER BY seq DESC LIMIT ?", (*params, max_count)).fetchall()
            rows.reverse()
        loads = json.loads
        return [loads(body) for (body,) in rows]

    def audit_entries(self, max_count: int) -> list[dict]:
        """The newest `max_count` audit records, oldest first."""
        rows = self.db.execute(
            f"SELECT {', '.join(AUDIT_COLUMNS)} FROM (SELECT * FROM audit ORDER BY n DESC LIMIT ?) ORDER BY n",
            (max_count,),
        ).fetchall()
        return [dict(zip(AUDIT_COLUMNS, row)) for row in rows]

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
        request's, or a group's (daemon/dispatch.py). `replies` are (client, id key,
        fingerprint, reply), `runs` changed run records (Run.to_dict()) and `audit` audit
        records (tuples in AUDIT_COLUMNS order), all written in the same transaction."""
        db = self.db
        db.execute("BEGIN IMMEDIATE")
        try:
            db.execute("INSERT OR REPLACE INTO device (id, snapshot) VALUES (1, ?)", (json.dumps(snapshot),))
            if events:
                db.executemany(
                    "INSERT OR REPLACE INTO events (seq, body, type, time) VALUES (?, ?, ?, ?)",
                    [(e.seq, json.dumps(e.to_dict()), e.type, e.triggerTime) for e in events],
                )
            if runs:
                db.executemany(
                    "INSERT OR REPLACE INTO runs (number, run_id, body) VALUES (?, ?, ?)",
                    [(r["number"], r["runId"], json.dumps(r)) for r in runs],
                )
            if replies:
                db.executemany(_INSERT_REPLY, replies)
            if audit:
                db.executemany(_INSERT_AUDIT, audit)
            self._count(events=len(events), replies=len(replies), audit=len(audit or ()))
            self._prune()
            db.execute("COMMIT")
        except BaseException:
            self._rollback()
            raise
        if events:
            self.committed_seq = max(self.committed_seq, events[-1].seq)

    def audit(self, records: list[tuple]) -> None:
        """Record audited requests that changed nothing (refusals, denials), durably, in one
        transaction."""
        db = self.db
        db.execute("BEGIN IMMEDIATE")
        try:
            db.executemany(_INSERT_AUDIT, records)
            self._count(audit=len(records))
            self._prune()
            db.execute("COMMIT")
        except BaseException:
            self._rollback()
            raise

    def _rollback(self) -> None:
        # After an I/O error (a full disk) SQLite may have rolled the transaction back itself.
        if self.db.in_transaction:
            self.db.execute("ROLLBACK")

    def _count(self, **written: int) -> None:
        for table, n in written.items():
            self._since_prune[table] += n

    def _prune(self, force: bool = False) -> None:
        """Trim a table towards its limit once about 1% more rows than it keeps (at most
        PRUNE_STEP) have been written, and at every commit while it is still over (and always
        when `force`), deleting at most PRUNE_STEP of its oldest rows each time: the limits hold
        within 1% once caught up, and no commit waits on a large delete (a limit lowered by
        10⁶ is reached over the next commits, not in one)."""
        keys = {"events": "seq", "replies": "n", "audit": "n"}
        for table, keep in self.keep.items():
            if force or self._over[table] or self._since_prune[table] >= max(1, min(keep // 100, PRUNE_STEP)):
                key = keys[table]
                # Keys are dense (seq and n only grow), so MAX - keep is where the kept rows begin.
                # Two subqueries: SQLite reads a lone MIN or MAX off the key, but scans for both at once.
                low, high = self.db.execute(
                    f"SELECT (SELECT MIN({key}) FROM {table}), (SELECT MAX({key}) FROM {table})").fetchone()
                if low is not None:
                    cut = high - keep
                    self.db.execute(f"DELETE FROM {table} WHERE {key} <= ?", (min(cut, low + PRUNE_STEP - 1),))
                    self._over[table] = cut >= low + PRUNE_STEP
                self._since_prune[table] = 0

    def close(self) -> None:
        self.db.close()
        self._lock.close()
