"""Bringing a state store written by an earlier csd up to this one's format, at start.

Each step is checked by looking at the tables, so it runs once, and a store already in this
format is left alone. Row checksums (daemon/rows.py): a store from before them gets a `rowsum`
column in every table, filled from the rows as they are, in one transaction, after
`PRAGMA quick_check` found the file sound; from then on every row is checked when read. (The
rows of such a store were never checked, so damage older than the upgrade cannot be seen; an
operator who doubts the store restores it from backup before upgrading.)
"""

from __future__ import annotations

from . import rows

INDEXES = "CREATE INDEX IF NOT EXISTS events_by_type ON events (type, seq);"


def columns(db, table: str) -> set[str]:
    """The column names of `table` (as str, whatever the connection's text_factory)."""
    return {_text(row[1]) for row in db.execute(f"PRAGMA table_info({table})")}


def migrate(db) -> None:
    """Bring every table to this csd's format (the tables exist: store.SCHEMA made them)."""
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
    if "commits" not in columns(db, "device"):  # a csd before numbered commits (daemon/progress.py)
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
