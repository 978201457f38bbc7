"""Knowing the state store is the one csd was using: `csd.identity` next to the database.

SQLite cannot tell a reset database from a new one: a database file truncated to 0 bytes opens
as an empty database, and a write-ahead log that is missing, garbage or cut short is silently
replayed only as far as it holds (and deleted at close), so every change since the last
checkpoint vanishes while `PRAGMA quick_check` still says "ok". Either way csd would come up
with acknowledged changes gone and no word said. So csd records, outside the database:

- `database`: an id made at the first start and written in the database too (table `meta`).
  A database without it, or with another, is not the one this state directory was using.
- `seq`: the newest event sequence number known to be committed, written at start, about every
  10 s while things change, and at a clean stop (then exact). A database whose newest event is
  older went back in time (a lost or damaged write-ahead log, an old backup put back).
- `running`: true from each start (once the write-ahead log holds a frame) until a clean stop
  records false. After an unclean stop the log must be there and intact (daemon/store/wal.py).
- `damaged`: what csd found damaged while serving (it stopped then); until a start has
  checked every stored row again, csd refuses to start (daemon/store/store.py).

Any mismatch stops csd with the files named and the recovery steps; nothing is changed on disk.
A state directory without `csd.identity` is new (or from a csd before this check): csd writes it.
"""

from __future__ import annotations

import json
import os
import time

FILE_NAME = "csd.identity"


class IdentityError(RuntimeError):
    """The database is not the one the state directory was using; the message says what to do."""


class Identity:
    """`<state dir>/csd.identity`: {"database": id, "created": ms, "seq": n, "running": bool,
    "damaged": reason or absent, "written": ms}. A file from a csd before `running` reads as
    stopped cleanly (nothing to go by)."""

    def __init__(self, state_dir: str):
        self.state_dir = state_dir
        self.path = os.path.join(state_dir, FILE_NAME)

    def read(self) -> dict | None:
        """The record, or None if there is none yet; raises IdentityError if it is unreadable."""
        try:
            with open(self.path, encoding="utf-8") as f:
                data = json.load(f)
        except FileNotFoundError:
            return None
        except (OSError, ValueError) as exc:
            raise IdentityError(
                f"{self.path} cannot be read ({exc}), so csd cannot tell whether its database is the one it was "
                "using. Restore the file from backup; or, if you have checked that csd.sqlite3 is the right "
                "database, remove the file (csd writes a new one at start)."
            ) from None
        if not isinstance(data, dict) or not isinstance(data.get("database"), str) or not isinstance(data.get("seq"), int):
            raise IdentityError(f"{self.path} is not a csd identity file; restore it from backup, or remove it "
                                "once you have checked csd.sqlite3 is the right database.")
        return data

    def write(self, database: str, created: int, seq: int, running: bool, damaged: str | None = None) -> None:
        """Replace the record atomically and durably (temp file, fsync, rename, fsync the directory)."""
        from csadmin.shared.atomic_write import write_atomically

        body = {"database": database, "created": created, "seq": seq, "running": running,
                "written": int(time.time() * 1000)}
        if damaged:
            body["damaged"] = damaged
        write_atomically(self.path, (json.dumps(body, indent=2) + "\n").encode(), 0o640)
        fd = os.open(self.state_dir, os.O_RDONLY)
        try:
            os.fsync(fd)
        finally:
            os.close(fd)


def recovery_steps(state_dir: str, serving: bool = False) -> str:
    """What an operator does about a damaged or replaced store (`serving`: found while serving)."""
    db = os.path.join(state_dir, "csd.sqlite3")
    stopped = "csd stopped" if serving else "csd did not start"
    return (
        f"{stopped}, so nothing more was changed. To recover: stop anything else using {state_dir}, move "
        f"{db}-wal and {db}-shm aside, put back {db} (with its -wal file, if the backup has one) from your latest "
        f"backup, and start csd again; csd then says whether that backup is older than what it acknowledged (after "
        f"a crash it is): remove {os.path.join(state_dir, FILE_NAME)} to accept it. To give up the old state and "
        f"start over as a fresh system (every run, event and audit record gone), move {db}* and {FILE_NAME} aside."
    )
