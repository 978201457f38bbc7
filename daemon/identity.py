"""Knowing the state store is the one csd was using: `csd.identity` next to the database.

SQLite cannot tell a reset database from a new one: a database file truncated to 0 bytes opens
as an empty database, and a write-ahead log that is garbage is silently ignored (and deleted at
close), so every change since the last checkpoint vanishes while `PRAGMA quick_check` still says
"ok". Either way csd would come up as a fresh system, ACTIVE in PIPELINED, with every
acknowledged change gone and no word said. So csd records, outside the database:

- `database`: an id made at the first start and written in the database too (table `meta`).
  A database without it, or with another, is not the one this state directory was using.
- `seq`: the newest event sequence number known to be committed, written at start, about every
  10 s while things change, and at a clean stop. A database whose newest event is older went
  back in time (a lost or damaged write-ahead log, an old backup put back).

and checks, before SQLite opens the log, that `csd.sqlite3-wal`, if there is one, starts with a
valid write-ahead-log header (SQLite writes one before any frame, so garbage there is damage).

Any mismatch stops csd with the files named and the recovery steps; nothing is changed on disk.
A state directory without `csd.identity` is new (or from a csd before this check): csd writes it.
"""

from __future__ import annotations

import json
import os
import struct
import time

FILE_NAME = "csd.identity"
_WAL_MAGIC = (0x377F0682, 0x377F0683)  # the low bit says which byte order the checksums use
_WAL_VERSION = 3007000


class IdentityError(RuntimeError):
    """The database is not the one the state directory was using; the message says what to do."""


def wal_header_problem(path: str) -> str | None:
    """Why the write-ahead log at `path` is not one SQLite wrote, or None (also when absent/empty)."""
    try:
        with open(path, "rb") as f:
            header = f.read(32)
    except FileNotFoundError:
        return None
    if not header:
        return None
    if len(header) < 32:
        return f"it is {len(header)} bytes long, shorter than a write-ahead-log header"
    magic, version = struct.unpack(">II", header[:8])
    if magic not in _WAL_MAGIC:
        return "it does not start with SQLite's write-ahead-log magic number"
    if version != _WAL_VERSION:
        return f"its format version is {version}, not {_WAL_VERSION}"
    if _checksum(header[:24], big_endian=magic & 1 == 1) != struct.unpack(">II", header[24:32]):
        return "its header checksum does not match"
    return None


def _checksum(data: bytes, big_endian: bool) -> tuple[int, int]:
    """SQLite's WAL checksum (wal.c, walChecksumBytes) over `data` (a multiple of 8 bytes)."""
    words = struct.unpack(("<" if not big_endian else ">") + "I" * (len(data) // 4), data)
    s1 = s2 = 0
    for i in range(0, len(words), 2):
        s1 = (s1 + words[i] + s2) & 0xFFFFFFFF
        s2 = (s2 + words[i + 1] + s1) & 0xFFFFFFFF
    return s1, s2


class Identity:
    """`<state dir>/csd.identity`: {"database": id, "created": ms, "seq": n, "written": ms}."""

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

    def write(self, database: str, created: int, seq: int) -> None:
        """Replace the record atomically and durably (temp file, fsync, rename, fsync the directory)."""
        from csadmin.keyfile import write_atomically

        body = {"database": database, "created": created, "seq": seq, "written": int(time.time() * 1000)}
        write_atomically(self.path, (json.dumps(body, indent=2) + "\n").encode(), 0o640)
        fd = os.open(self.state_dir, os.O_RDONLY)
        try:
            os.fsync(fd)
        finally:
            os.close(fd)


def recovery_steps(state_dir: str) -> str:
    db = os.path.join(state_dir, "csd.sqlite3")
    return (
        f"csd did not start, so nothing more was changed. To recover: stop anything else using {state_dir}, "
        f"put back {db} (with its -wal file, if the backup has one) from your latest backup, and start csd again; "
        f"if that backup is older than csd's last start, csd will say so: remove {os.path.join(state_dir, FILE_NAME)} "
        "to accept it. To give up the old state and start over as a fresh system (every run, event and audit "
        f"record gone), move {db}* and {FILE_NAME} aside."
    )
