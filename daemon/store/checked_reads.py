"""Reading the state store's rows, each checked before it is used: SQLite's damage errors and a
row that fails its checksum (daemon/store/rows.py) are refused as StoreDamaged with one clear
message (daemon/store/damage.py), never passed on as data.

While serving, damage found here (or by the Store's writes: `found`) is also kept in `damaged`,
which the Store shows and the loop stops csd for; at start it only raises, and csd does not start.
"""

from __future__ import annotations

import contextlib
import sqlite3

from . import rows
from .damage import StoreDamaged, guarded


class CheckedReads:
    def __init__(self, db: sqlite3.Connection, state_dir: str, path: str):
        self._db, self._state_dir, self._path = db, state_dir, path
        self.damaged: StoreDamaged | None = None  # found while serving: csd stops

    def found(self, what: str, serving: bool) -> StoreDamaged:
        """The refusal for damage `what`, kept in `damaged` while serving."""
        exc = StoreDamaged(self._state_dir, self._path, what, serving)
        if serving:
            self.damaged = exc
        return exc

    def read(self, table: str, sql: str, params=(), serving: bool = True) -> list[tuple]:
        """The rows of a rows.select() query on `table`, each checked."""
        try:
            with self._guard(f"table {table}", serving):
                found = self._db.execute(sql, params).fetchall()
        except sqlite3.OperationalError as exc:
            if getattr(exc, "sqlite_errorcode", None) is not None:
                raise
            # Python's sqlite3 could not decode a TEXT value as UTF-8 (it gives no SQLite code):
            # damaged text. Find the row, reading bytes.
            with self._guard(f"table {table}", serving):
                bad = rows.first_bad_row(self._db, table) or f"table {table}"
            raise self.found(f"{bad} fails its checksum (text that is not UTF-8)", serving) from None
        bad = rows.CHECK[table]
        for row in found:
            if bad(row):
                raise self.found(f"{rows.describe(table, row)} fails its checksum (its stored values changed)",
                                  serving)
        return found

    def newest(self, table: str, count: int, serving: bool = True) -> list[tuple]:
        """The newest `count` rows of `table` (by its key), checked, oldest first."""
        found = self.read(table, rows.select(table, f" ORDER BY {rows.TABLES[table][0]} DESC LIMIT ?"), (count,),
                          serving)
        found.reverse()
        return found

    @contextlib.contextmanager
    def _guard(self, where: str, serving: bool):
        """SQLite's damage errors inside raise StoreDamaged (kept in `damaged` while serving);
        other errors pass unchanged."""
        try:
            with guarded(self._state_dir, self._path, where, serving):
                yield
        except StoreDamaged as exc:
            if serving:
                self.damaged = exc
            raise
