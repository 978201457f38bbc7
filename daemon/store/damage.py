"""How a damaged state store is refused: one clear message, never SQLite's own words.

A store that cannot be trusted stops csd, at start (`cannot_start`) or while serving
(`store_damaged`, daemon/process/server.py), with what is damaged (the file, and the table and row when
they are known) and what to do (restore, or start over: identity.recovery_steps). SQLite's
exceptions for damage ("database disk image is malformed", "file is not a database") are turned
into that message here; its other failures (a full disk, an I/O error, a lock) are not damage:
the change is not saved and csd carries on (daemon/serve/dispatch.py).
"""

from __future__ import annotations

import contextlib
import sqlite3

from .identity import recovery_steps

# SQLite's primary result codes that mean the file's content is wrong, not its surroundings.
_DAMAGE_CODES = {11: "SQLITE_CORRUPT", 24: "SQLITE_FORMAT", 26: "SQLITE_NOTADB"}


class StoreError(RuntimeError):
    """The state store cannot be used; the message says what to do."""


class StoreDamaged(StoreError):
    """Stored data is damaged: a row fails its checksum, or SQLite finds the file corrupt.
    `what` names the damage without the recovery steps (csd.identity keeps it), `damage` without
    the file either (what a client is told)."""

    def __init__(self, state_dir: str, path: str, what: str, serving: bool = False):
        self.damage = what
        self.what = f"{path}: {what}"
        super().__init__(
            f"The state store {path} is damaged: {what}. csd will not serve damaged state. "
            f"{recovery_steps(state_dir, serving)}"
        )


def is_damage(exc: BaseException) -> bool:
    """Whether a SQLite exception says the database file itself is damaged."""
    code = getattr(exc, "sqlite_errorcode", None)
    return isinstance(exc, sqlite3.DatabaseError) and code is not None and code & 0xFF in _DAMAGE_CODES


def damage_name(exc: BaseException) -> str:
    """SQLite's name for a damage error ("SQLITE_CORRUPT"), for the message."""
    return _DAMAGE_CODES[exc.sqlite_errorcode & 0xFF]


@contextlib.contextmanager
def guarded(state_dir: str, path: str, where: str, serving: bool):
    """Turn SQLite's damage exceptions raised inside into StoreDamaged naming `where` (a table,
    or what was being done); other exceptions pass unchanged."""
    try:
        yield
    except sqlite3.DatabaseError as exc:
        if not is_damage(exc):
            raise
        raise StoreDamaged(state_dir, path, f"SQLite found {where} corrupt ({damage_name(exc)})", serving) from None
