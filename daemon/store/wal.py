"""Is the write-ahead log the one csd was writing? Checked before SQLite opens it.

SQLite keeps every change since its last checkpoint only in `csd.sqlite3-wal`, and at open it
replays that log as far as its checksums hold and silently forgets the rest: a log that is
missing, emptied, cut short, or damaged in the middle loses acknowledged changes with
`PRAGMA quick_check` still saying "ok". So, before SQLite sees the files (it resets the index
file at its first open):

- the log's header must be one SQLite wrote (magic, version, header checksum);
- after an unclean stop (csd.identity says csd was running), the log must exist and not be
  empty: csd writes a frame to it at every start before it records that it is running, and
  SQLite never empties it while csd runs (csd never asks for a truncating checkpoint; only a
  clean close removes it, and csd records the clean stop before that);
- after an unclean stop, when SQLite's index (`csd.sqlite3-shm`) survives from this boot
  (a kill -9 or a crash leaves it; a reboot may leave a stale one, so it is then ignored), it
  says how many frames were committed and the checksum of the last one: the log must hold those
  frames, from the same generation (salts), with an unbroken checksum chain ending at that
  checksum. A log cut short, damaged before its last commit, or swapped for an older copy fails.

What this cannot see, and docs/operations.md says so: after a reboot without the index, a log
cut exactly at a frame boundary looks like a log written up to there.
"""

from __future__ import annotations

import os
import struct

_WAL_MAGIC = (0x377F0682, 0x377F0683)  # the low bit says which byte order the checksums use
_WAL_VERSION = 3007000
_WAL_HEADER = 32
_FRAME_HEADER = 24
_SHM_HEADER = 48  # one copy of the wal-index header; SQLite keeps two, back to back


def header_problem(path: str) -> str | None:
    """Why the write-ahead log at `path` is not one SQLite wrote, or None (also when absent/empty)."""
    try:
        with open(path, "rb") as f:
            header = f.read(_WAL_HEADER)
    except FileNotFoundError:
        return None
    if not header:
        return None
    if len(header) < _WAL_HEADER:
        return f"it is {len(header)} bytes long, shorter than a write-ahead-log header"
    magic, version = struct.unpack(">II", header[:8])
    if magic not in _WAL_MAGIC:
        return "it does not start with SQLite's write-ahead-log magic number"
    if version != _WAL_VERSION:
        return f"its format version is {version}, not {_WAL_VERSION}"
    if checksum(header[:24], big_endian=magic & 1 == 1) != struct.unpack(">II", header[24:32]):
        return "its header checksum does not match"
    return None


def unclean_stop_problem(db_path: str) -> str | None:
    """After an unclean stop: why the log cannot hold every committed change, or None."""
    wal = db_path + "-wal"
    try:
        size = os.path.getsize(wal)
    except FileNotFoundError:
        return "it is missing"
    if size == 0:
        return "it is empty"
    committed = _index_record(db_path + "-shm")
    if committed is None:
        return None
    frames, salts, last_checksum, page_size = committed
    with open(wal, "rb") as f:
        header = f.read(_WAL_HEADER)
        if header[16:24] != salts:
            return "it is not the log SQLite's index describes (another generation: an older copy?)"
        big_endian = struct.unpack(">I", header[:4])[0] & 1 == 1
        want = _WAL_HEADER + frames * (_FRAME_HEADER + page_size)
        if size < want:
            return f"it is {size} bytes long, but {frames} committed frames need {want}"
        s = struct.unpack(">II", header[24:32])
        for n in range(1, frames + 1):
            frame = f.read(_FRAME_HEADER + page_size)
            if frame[8:16] != salts:
                return f"frame {n} of the {frames} committed is not of this log's generation"
            s = checksum(frame[:8] + frame[_FRAME_HEADER:], big_endian, s)
            if s != struct.unpack(">II", frame[16:24]):
                return f"frame {n} of the {frames} committed fails its checksum"
    if s != last_checksum:
        return f"its {frames} committed frames do not end with the checksum SQLite's index recorded"
    return None


def _index_record(shm_path: str) -> tuple[int, bytes, tuple[int, int], int] | None:
    """(committed frames, salts, last frame's checksum, page size) from SQLite's wal-index
    header, when it is intact, initialised, non-empty and written since this machine booted."""
    try:
        if os.path.getmtime(shm_path) < _boot_time():
            return None  # from before a reboot: the index was never made durable
        with open(shm_path, "rb") as f:
            both = f.read(2 * _SHM_HEADER)
    except (FileNotFoundError, OSError):
        return None
    first = both[:_SHM_HEADER]
    if len(both) < 2 * _SHM_HEADER or first != both[_SHM_HEADER:]:
        return None  # being written, or not an index: nothing to go by
    # iVersion, unused, iChange, isInit, bigEndCksum, szPage, mxFrame, nPage, aFrameCksum[2],
    # aSalt (raw bytes), aCksum[2]: native byte order (the file is shared memory).
    version, _, _, init, _, page, frames, _, c1, c2 = struct.unpack("=IIIBBHIIII", first[:32])
    salts = first[32:40]
    if version != _WAL_VERSION or init != 1 or frames == 0:
        return None
    little = struct.pack("=I", 1) == struct.pack("<I", 1)
    if checksum(first[:40], big_endian=not little) != struct.unpack("=II", first[40:48]):
        return None
    return frames, salts, (c1, c2), 65536 if page == 1 else page


def _boot_time() -> float:
    with open("/proc/stat") as f:
        for line in f:
            if line.startswith("btime "):
                return float(line.split()[1])
    return 0.0


def checksum(data: bytes, big_endian: bool, start: tuple[int, int] = (0, 0)) -> tuple[int, int]:
    """SQLite's WAL checksum (wal.c, walChecksumBytes) over `data` (a multiple of 8 bytes),
    continuing from `start`."""
    s1, s2 = start
    for a, b in struct.iter_unpack(">II" if big_endian else "<II", data):
        s1 = (s1 + a + s2) & 0xFFFFFFFF
        s2 = (s2 + b + s1) & 0xFFFFFFFF
    return s1, s2
