"""The state store's tables: this csd's format (SCHEMA), and bringing a store written by an
earlier csd up to it, at start (migrate).

Each step is checked by looking at the tables, so it runs once, and a store already in this
format is left alone. Row checksums (daemon/store/rows.py): a store from before them gets a `rowsum`
column in every table, filled from the rows as they are, in one transaction, after
`PRAGMA quick_check` found the file sound; from then on every row is checked when read. (The
rows of such a store were never checked, so damage older than the upgrade cannot be seen; an
operator who doubts the store restores it from backup before upgrading.)
"""

from __future__ import annotations

from . import rows

SCHEMA = """
-- rowsum: every row's checksum of its other columns (daemon/store/rows.py).
CREATE TABLE IF NOT EXISTS meta    (key TEXT PRIMARY KEY, value TEXT NOT NULL, rowsum INTEGER);
-- commits: the number of the newest commit (daemon/store/progress.py).
CREATE TABLE IF NOT EXISTS device  (id INTEGER PRIMARY KEY CHECK (id = 1), snapshot TEXT NOT NULL, commits INTEGER,
                                    rowsum INTEGER);
-- type and time are the event's own (also in body), for indexed queries.
CREATE TABLE IF NOT EXISTS events  (seq INTEGER PRIMARY KEY, body TEXT NOT NULL, type TEXT, time INTEGER,
                                    rowsum INTEGER);
-- request_id is the id as JSON (7 and "7" differ); fingerprint is what the request asked for.
CREATE TABLE IF NOT EXISTS replies (n INTEGER PRIMARY KEY AUTOINCREMENT, client BLOB NOT NULL,
                                    request_id TEXT NOT NULL, reply BLOB NOT NULL, fingerprint TEXT, rowsum INTEGER);
-- Run history grows without bound, so runs live in their own table, not in the device snapshot.
CREATE TABLE IF NOT EXISTS runs    (number INTEGER PRIMARY KEY, run_id TEXT NOT NULL UNIQUE, body TEXT NOT NULL,
                                    rowsum INTEGER);
CREATE TABLE IF NOT EXISTS audit   (n INTEGER PRIMARY KEY AUTOINCREMENT, time INTEGER NOT NULL, name TEXT,
                                    role TEXT, op TEXT, args TEXT NOT NULL, outcome TEXT NOT NULL,
                                    message TEXT NOT NULL, rowsum INTEGER);
"""
INDEXES = "CREATE INDEX IF NOT EXISTS events_by_type ON events (type, seq);"


def columns(db, table: str) -> set[str]:
    """The column names of `table` (as str, whatever the connection's text_factory)."""
    return {_text(row[1]) for row in db.execute(f"PRAGMA table_info({table})")}


def migrate(db) -> None:
    """Bring every table to this csd's format (the tables exist: SCHEMA made them)."""
    if "fingerprint" not in columns(db, "replies"):  # a csd before replies knew what they answered
        db.execute("ALTER TABLE replies ADD COLUMN fingerprint TEXT")
    # Such rows cannot be matched safely to a retry (their id's type and request are unknown).
    db.execute("DELETE FROM replies WHERE fingerprint IS NULL")
    if "type" not in columns(db, "events"):  # a csd before the indexed event log: once, in one transaction
        with db:
            db.execute("BEGIN IMMEDIATE")
            db.execute("ALTER TABLE events ADD COLUMN type TEXT")
            db.execute("ALTER TABLE events ADD COLUMN time INTEGER")
            db.execute("UPDATE events SET type = json_extract(body, '$.type'), time = json_extract(body, '$.triggerTime')")
    if "commits" not in columns(db, "device"):  # a csd before numbered commits (daemon/store/progress.py)
        db.execute("ALTER TABLE device ADD COLUMN commits INTEGER")
    missing = [table for table in rows.TABLES if "rowsum" not in columns(db, table)]
    if missing:  # a csd before row checksums: once, in one transaction
        with db:
            db.execute("BEGIN IMMEDIATE")
            for table in missing:
                db.execute(f"ALTER TABLE {table} ADD COLUMN rowsum INTEGER")
                rows.add_rowsums(db, table)
    db.executescript(INDEXES)


def _text(value) -> str:
    return value.decode() if isinstance(value, bytes) else value
