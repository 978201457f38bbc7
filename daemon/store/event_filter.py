"""The filter of an events query (`events.show`, `events.follow`) in SQL: pure, no database.

The model's EventLog.query matches a type as a shell-style glob, case-sensitively; SQLite's GLOB
does the same but spells fnmatch's negation `[!…]` as `[^…]`. An exact type (no glob character)
is matched with `=`, so the (type, seq) index answers it.
"""

from __future__ import annotations

_GLOB_SPECIAL = frozenset("*?[")


def where(event_type: str | None = None, from_time: int | None = None,
          after_seq: int | None = None) -> tuple[str, list]:
    """The WHERE clause (with its leading space, or "" for none) and its parameters."""
    clauses, params = [], []
    if event_type is not None:
        if _GLOB_SPECIAL.isdisjoint(event_type):
            clauses.append("type = ?")
        else:
            clauses.append("type GLOB ?")
            event_type = event_type.replace("[!", "[^")  # fnmatch's negation, in SQLite's spelling
        params.append(event_type)
    if from_time is not None:
        clauses.append("time >= ?")
        params.append(from_time)
    if after_seq is not None:
        clauses.append("seq > ?")
        params.append(after_seq)
    return (" WHERE " + " AND ".join(clauses) if clauses else ""), params
