"""Every stored row carries a checksum of its values, checked whenever csd reads it.

SQLite checks the structure of its file (`PRAGMA quick_check`) but not the values in it: one
flipped bit in a closed run's `totalSamples` reads back as another number. So each table has a
`rowsum` column: the CRC-32 of the row's other columns (key included), written with the row and
compared when it is read, at start and later (events.show, audit.show). A row that does not
match raises StoreDamaged naming the table and the row; csd never serves it.

The checksum is over the values' bytes (TEXT as its UTF-8, an INTEGER as its decimal digits,
a BLOB as it is), so it is the same whether a row is read as Python values (select(): the
fast path every read takes) or as bytes (`CAST(column AS BLOB)`: select_bytes(), which never
fails to decode; the upgrade and the search for a damaged row use it). A value whose type was
damaged (an INTEGER read as a REAL) fails its checksum; text damaged into invalid UTF-8 makes
Python's sqlite3 fail to decode it, which daemon/store/store.py turns into the same damage, found and
named with select_bytes().
"""

from __future__ import annotations

from zlib import crc32

# table -> its key column, then the columns the checksum covers (the key first), in order.
TABLES = {
    "meta": ("key", "value"),
    "device": ("id", "snapshot", "commits"),
    "events": ("seq", "body", "type", "time"),
    "replies": ("n", "client", "request_id", "fingerprint", "reply"),
    "runs": ("number", "run_id", "body"),
    "audit": ("n", "time", "name", "role", "op", "args", "outcome", "message"),
}
_NULL = b"\xff"  # never a whole value otherwise: TEXT is UTF-8, and an empty BLOB is b""


def rowsum(values) -> int:
    """The checksum of one row's values (int, str, bytes or None), in TABLES order: the CRC-32 of
    their bytes as select() reads them back, joined by NUL. (One expression: it runs for every
    row of every commit.)"""
    return crc32(b"\x00".join([
        v if v.__class__ is bytes else v.encode() if v.__class__ is str else b"%d" % v if v.__class__ is int
        else _NULL if v is None else repr(v).encode()  # a REAL: never written, only damage makes one
        for v in values
    ]))


def event_row(seq: int, body: str, type_: str, time: int) -> tuple:
    """An events row with its checksum: rowsum() spelled out for the table most written (three
    rows a change), the same bytes without the generic loop."""
    return seq, body, type_, time, crc32(b"%d\x00%s\x00%s\x00%d" % (seq, body.encode(), type_.encode(), time))


def with_rowsum(row: tuple) -> tuple:
    """`row` (values in TABLES order) with its checksum appended, for an INSERT."""
    return (*row, rowsum(row))


def _as_bytes(table: str) -> str:
    return ", ".join(f"CAST({column} AS BLOB)" for column in TABLES[table])


def select(table: str, where: str = "") -> str:
    """SELECT the checksummed columns of `table`, then `rowsum`: what bad_row() takes."""
    return f"SELECT {', '.join(TABLES[table])}, rowsum FROM {table}{where}"


def select_bytes(table: str, where: str = "") -> str:
    """select(), every value as bytes (or None): decoding cannot fail."""
    return f"SELECT {_as_bytes(table)}, rowsum FROM {table}{where}"


def insert(table: str, verb: str = "INSERT") -> str:
    columns = (*TABLES[table], "rowsum")
    return f"{verb} INTO {table} ({', '.join(columns)}) VALUES ({', '.join('?' * len(columns))})"


def bad_row(row: tuple) -> bool:
    """Whether a row from select() or select_bytes() fails its checksum."""
    return rowsum(row[:-1]) != row[-1]


def bad_event(row: tuple) -> bool:
    """bad_row() for an events row from select(), spelled out (a read may check thousands);
    any value of an unexpected type takes bad_row()."""
    seq, body, type_, time, stored = row
    try:
        return crc32(b"%d\x00%s\x00%s\x00%d" % (seq, body.encode(), type_.encode(), time)) != stored
    except (TypeError, AttributeError):
        return bad_row(row)


CHECK = {table: bad_event if table == "events" else bad_row for table in TABLES}


def describe(table: str, row: tuple) -> str:
    """'table events, row seq=42' for the damage message (the key as read: it may be the damage)."""
    key = row[0].decode("utf-8", "replace") if isinstance(row[0], bytes) else row[0]
    return f"table {table}, row {TABLES[table][0]}={key}"


def first_bad_row(db, table: str) -> str | None:
    """Scan every row of `table` (in key order); describe the first that fails its checksum."""
    for row in db.execute(select_bytes(table, f" ORDER BY {TABLES[table][0]}")):
        if bad_row(row):
            return describe(table, row)
    return None


def add_rowsums(db, table: str) -> None:
    """Give every row of `table` its checksum (the upgrade from a csd before checksums: the
    rows are taken as they are, after `PRAGMA quick_check` found the file sound)."""
    rows = db.execute(f"SELECT rowid, {_as_bytes(table)} FROM {table}").fetchall()
    db.executemany(f"UPDATE {table} SET rowsum = ? WHERE rowid = ?", [(rowsum(row[1:]), row[0]) for row in rows])
