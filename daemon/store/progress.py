"""`csd.progress`: the number of the newest commit csd acknowledged, written after every commit.

csd.identity is made durable (fsync) and so is written only every 10 s; between two writes, an
older copy of the database put back after kill -9 (with its own log and index) cannot be told
from the real one by it. So every commit is numbered (the `commits` column of the device row,
written in the same transaction) and, once SQLite has made the commit durable, its number is
written here: 32 bytes in place, through a shared memory map, without fsync (as SQLite keeps
its -shm index: no system call per commit, and the file's mtime is not touched each time, which
on ext4 would start a journal handle per commit). That is what a kill -9 or a crash needs (the
page cache survives the process); after a power loss the record may be older or torn, never
newer than what is durable, since it is written after the commit's fsync. A torn or foreign
record is ignored. At start, a database whose newest commit is older than this record went
back in time (daemon/store/store.py refuses it).
"""

from __future__ import annotations

import mmap
import os
import struct
import zlib

FILE_NAME = "csd.progress"
_RECORD = struct.Struct("<16sQI4x")  # database id (raw), commit number, CRC-32 of both


class Progress:
    def __init__(self, state_dir: str):
        self.path = os.path.join(state_dir, FILE_NAME)
        self._map: mmap.mmap | None = None
        self._id: tuple[str, bytes] | None = None  # (hex id, raw): computed once, not per commit

    def read(self, database: str) -> int | None:
        """The recorded commit number of `database` (a hex id), or None: no record, a torn one,
        or one of another database (a state directory started over)."""
        try:
            with open(self.path, "rb") as f:
                data = f.read(_RECORD.size)
        except FileNotFoundError:
            return None
        if len(data) != _RECORD.size:
            return None
        raw, commits, crc = _RECORD.unpack(data)
        if zlib.crc32(data[:24]) != crc or raw != _raw(database):
            return None
        return commits

    def write(self, database: str, commits: int) -> None:
        """Record `commits` (after SQLite has made that commit durable). Not fsync'd, on purpose."""
        if self._map is None:
            fd = os.open(self.path, os.O_RDWR | os.O_CREAT, 0o640)
            try:
                if os.fstat(fd).st_size != _RECORD.size:
                    os.ftruncate(fd, _RECORD.size)
                self._map = mmap.mmap(fd, _RECORD.size)
            finally:
                os.close(fd)  # the map keeps the file
        if self._id is None or self._id[0] != database:
            self._id = (database, _raw(database))
        head = self._id[1] + commits.to_bytes(8, "little")
        self._map[:] = head + zlib.crc32(head).to_bytes(4, "little") + bytes(4)

    def close(self) -> None:
        if self._map is not None:
            self._map.close()
            self._map = None


def _raw(database: str) -> bytes:
    try:
        return bytes.fromhex(database)[:16].ljust(16, b"\0")
    except ValueError:
        return database.encode()[:16].ljust(16, b"\0")
