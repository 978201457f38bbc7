"""Durable state: one SQLite database (WAL, synchronous=FULL) in the state directory.

A change and the reply that acknowledges it are written in one transaction, committed before
the reply is sent; so what a client was told survives kill -9 and power loss, and a retried
request after a crash still gets its first reply.
"""

from __future__ import annotations

import fcntl
import json
import os
import sqlite3

from statemachine.events import Event

SCHEMA = """
CREATE TABLE IF NOT EXISTS device  (id INTEGER PRIMARY KEY CHECK (id = 1), snapshot TEXT NOT NULL);
CREATE TABLE IF NOT EXISTS events  (seq INTEGER PRIMARY KEY, body TEXT NOT NULL);
CREATE TABLE IF NOT EXISTS replies (n INTEGER PRIMARY KEY AUTOINCREMENT, client BLOB NOT NULL,
                                    request_id TEXT NOT NULL, reply BLOB NOT NULL);
-- Run history grows without bound, so runs live in their own table, not in the device snapshot.
CREATE TABLE IF NOT EXISTS runs    (number INTEGER PRIMARY KEY, run_id TEXT NOT NULL UNIQUE, body TEXT NOT NULL);
CREATE TABLE IF NOT EXISTS audit   (n INTEGER PRIMARY KEY AUTOINCREMENT, time INTEGER NOT NULL, name TEXT,
                                    role TEXT, op TEXT, args TEXT NOT NULL, outcome TEXT NOT NULL,
                                    message TEXT NOT NULL);
"""

AUDIT_COLUMNS = ("time", "name", "role", "op", "args", "outcome", "message")


_INSERT_AUDIT = f"INSERT INTO audit ({', '.join(AUDIT_COLUMNS)}) VALUES ({', '.join('?' * len(AUDIT_COLUMNS))})"


class StoreError(RuntimeError):
    """The state store cannot be used; the message says what to do."""


class Store:
    def __init__(self, state_dir: str, keep_events: int, keep_replies: int = 10_000, keep_audit: int = 100_000):
        os.makedirs(state_dir, mode=0o750, exist_ok=True)
        self.path = os.path.join(state_dir, "csd.sqlite3")
        self.keep_events = keep_events
        self.keep_replies = keep_replies
        self.keep_audit = keep_audit
        # One daemon per state directory: a second would fork the truth.
        self._lock = open(os.path.join(state_dir, "csd.lock"), "w")
        try:
            fcntl.flock(self._lock, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            raise StoreError(f"Another csd is already using {state_dir}; stop it first or pick another --state-dir.")
        self.db = sqlite3.connect(self.path, isolation_level=None)
        self.db.execute("PRAGMA journal_mode=WAL")
        self.db.execute("PRAGMA synchronous=FULL")
        check = self.db.execute("PRAGMA quick_check").fetchone()[0]
        if check != "ok":
            raise StoreError(f"The state store {self.path} is damaged ({check}); restore it from backup.")
        self.db.executescript(SCHEMA)
        self._commits = 0

    def load(self) -> tuple[dict | None, list[Event], list[tuple[bytes, str, bytes]]]:
        """Return (device snapshot or None for a fresh system, kept events, recent replies)."""
        row = self.db.execute("SELECT snapshot FROM device WHERE id = 1").fetchone()
        snapshot = json.loads(row[0]) if row else None
        events = [
            Event.from_dict(json.loads(body))
            for (body,) in self.db.execute(
                "SELECT body FROM (SELECT seq, body FROM events ORDER BY seq DESC LIMIT ?) ORDER BY seq",
                (self.keep_events,),
            )
        ]
        replies = self.db.execute(
            "SELECT client, request_id, reply FROM (SELECT * FROM replies ORDER BY n DESC LIMIT ?) ORDER BY n",
            (self.keep_replies,),
        ).fetchall()
        return snapshot, events, replies

    def load_runs(self, keep: int) -> list[dict]:
        """The newest `keep` run records, oldest first (older ones stay on disk)."""
        rows = self.db.execute(
            "SELECT body FROM (SELECT number, body FROM runs ORDER BY number DESC LIMIT ?) ORDER BY number", (keep,)
        )
        return [json.loads(body) for (body,) in rows]

    def commit(
        self,
        snapshot: dict,
        events: list[Event],
        reply: tuple[bytes, str, bytes] | None = None,
        runs: list[dict] | None = None,
        audit: tuple | None = None,
    ) -> None:
        """Write a change atomically and durably (fsync'd by SQLite before this returns);
        `runs` are changed run records (Run.to_dict()) and `audit` the change's audit record (a
        tuple in AUDIT_COLUMNS order), written in the same transaction."""
        db = self.db
        db.execute("BEGIN IMMEDIATE")
        try:
            db.execute("INSERT OR REPLACE INTO device (id, snapshot) VALUES (1, ?)", (json.dumps(snapshot),))
            db.executemany(
                "INSERT OR REPLACE INTO events (seq, body) VALUES (?, ?)",
                [(e.seq, json.dumps(e.to_dict())) for e in events],
            )
            if runs:
                db.executemany(
                    "INSERT OR REPLACE INTO runs (number, run_id, body) VALUES (?, ?, ?)",
                    [(r["number"], r["runId"], json.dumps(r)) for r in runs],
                )
            if reply is not None:
                db.execute("INSERT INTO replies (client, request_id, reply) VALUES (?, ?, ?)", reply)
            if audit is not None:
                db.execute(_INSERT_AUDIT, audit)
            self._commits += 1
            if self._commits % 500 == 0:  # prune now and then, not on every commit
                self._prune()
            db.execute("COMMIT")
        except BaseException:
            db.execute("ROLLBACK")
            raise

    def audit(self, record: tuple) -> None:
        """Record an audited request that changed nothing (a refusal or a denial), durably."""
        self.db.execute(_INSERT_AUDIT, record)  # autocommit: its own transaction
        self._commits += 1
        if self._commits % 500 == 0:  # a flood of denials must not grow the table without bound
            self._prune()

    def audit_entries(self, max_count: int) -> list[dict]:
        """The newest `max_count` audit records, oldest first."""
        rows = self.db.execute(
            f"SELECT {', '.join(AUDIT_COLUMNS)} FROM (SELECT * FROM audit ORDER BY n DESC LIMIT ?) ORDER BY n",
            (max_count,),
        ).fetchall()
        return [dict(zip(AUDIT_COLUMNS, row)) for row in rows]

    def _prune(self) -> None:
        self.db.execute(
            "DELETE FROM events WHERE seq <= (SELECT MAX(seq) FROM events) - ?", (self.keep_events,)
        )
        self.db.execute("DELETE FROM replies WHERE n <= (SELECT MAX(n) FROM replies) - ?", (self.keep_replies,))
        self.db.execute("DELETE FROM audit WHERE n <= (SELECT MAX(n) FROM audit) - ?", (self.keep_audit,))

    def close(self) -> None:
        self.db.close()
        self._lock.close()
