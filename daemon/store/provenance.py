"""Is this the database csd was using, as far as it got? The refusals made at open.

daemon/store/store.py reads what the files say (the database's id, newest event seq, newest commit
number) and asks here; each check compares it with what csd recorded outside the database
(csd.identity, csd.progress, and SQLite's own write-ahead log and index: daemon/store/wal.py) and
raises StoreError with the files named and the recovery steps. Nothing here writes.
"""

from __future__ import annotations

import time

from . import rows, wal
from .damage import StoreDamaged, StoreError
from .identity import recovery_steps
from .schema import columns


def read_database(db, state_dir: str, path: str) -> tuple[str | None, int]:
    """(the id the database carries or None, its newest event seq or 0), before anything is
    written (the tables may not exist yet, or be from an older csd)."""
    tables = {row[0] for row in db.execute("SELECT name FROM sqlite_master WHERE type = 'table'")}
    database = None
    if "meta" in tables:
        summed = "rowsum" in columns(db, "meta")
        # As bytes: damaged text must fail its checksum here, not fail to decode.
        row = db.execute(rows.select_bytes("meta", " WHERE key = 'database'") if summed else
                         "SELECT key, CAST(value AS BLOB) FROM meta WHERE key = 'database'").fetchone()
        if row is not None and summed and rows.bad_row(row):
            raise StoreDamaged(state_dir, path, f"{rows.describe('meta', row)} fails its checksum")
        database = row[1].decode("utf-8", "replace") if row else None
    seq = db.execute("SELECT COALESCE(MAX(seq), 0) FROM events").fetchone()[0] if "events" in tables else 0
    return database, seq


def check_log(path: str, state_dir: str, recorded: dict | None) -> None:
    """Before SQLite sees the log: it would silently drop what it cannot read."""
    problem = wal.header_problem(path + "-wal")
    if problem is None and recorded is not None and recorded.get("running") is True:
        problem = wal.unclean_stop_problem(path)
        if problem is not None:
            problem += " after csd stopped uncleanly (it did not record a clean stop)"
    if problem:
        raise StoreError(
            f"The state store's write-ahead log {path}-wal is damaged or lost ({problem}); SQLite would "
            f"ignore what is missing and every change since its last checkpoint would be lost. "
            f"{recovery_steps(state_dir)}"
        )


def refuse_empty(path: str, identity_path: str, state_dir: str, recorded: dict, what: str) -> None:
    raise StoreError(
        f"The state store {path} {what}, but {identity_path} records that csd used database "
        f"{recorded['database']} here, with events up to seq {recorded['seq']} (as of {_when(recorded)}): the "
        f"database was truncated, replaced or lost, and csd will not pass it off as a fresh system. "
        f"{recovery_steps(state_dir)}"
    )


def check_recorded(path: str, identity_path: str, state_dir: str, recorded: dict, database: str | None,
                   committed_seq: int) -> None:
    """The database carries the recorded id, and is not behind the recorded seq."""
    if database is None:
        refuse_empty(path, identity_path, state_dir, recorded, "holds no identity (it is a new or reset database)")
    if database != recorded["database"]:
        raise StoreError(
            f"The state store {path} is database {database}, but {identity_path} records database "
            f"{recorded['database']}: it was replaced by another system's or another state directory's. "
            f"{recovery_steps(state_dir)}"
        )
    if committed_seq < recorded["seq"]:
        raise StoreError(
            f"The state store {path} ends at event seq {committed_seq}, but {identity_path} records that seq "
            f"{recorded['seq']} was committed (as of {_when(recorded)}): the database went back in time (a lost or "
            f"damaged write-ahead log, or an older copy put back). {recovery_steps(state_dir)}"
        )


def check_progress(path: str, progress_path: str, state_dir: str, commits: int, acknowledged: int | None) -> None:
    """The database is not behind the newest commit csd.progress says was acknowledged."""
    if acknowledged is not None and commits < acknowledged:
        raise StoreError(
            f"The state store {path} ends at commit {commits}, but {progress_path} records that commit "
            f"{acknowledged} was acknowledged: the database went back in time (a lost, cut-short or damaged "
            f"write-ahead log, or an older copy put back). {recovery_steps(state_dir)}"
        )


def _when(recorded: dict) -> str:
    return time.strftime("%Y-%m-%d %H:%M:%S", time.localtime(recorded.get("written", 0) / 1000))
