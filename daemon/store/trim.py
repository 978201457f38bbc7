"""Keeping the events, replies and audit records at their limits, in bounded steps.

A table is trimmed towards its limit once about 1% more rows than it keeps (at most PRUNE_STEP)
have been written, and at every commit while it is still over (and always when forced: at every
start, so the limits hold across restarts), deleting at most PRUNE_STEP of its oldest rows each
time: the limits hold within 1% once caught up, and no commit waits on a large delete (a limit
lowered by 10⁶ is reached over the next commits, not in one). The steps run inside the
store's transactions (daemon/store/store.py).
"""

from __future__ import annotations

PRUNE_STEP = 2_000  # rows deleted per table at most per commit
_KEYS = {"events": "seq", "replies": "n", "audit": "n"}


class Trimmer:
    def __init__(self, db, keep: dict[str, int]):
        """`keep`: table -> how many rows it keeps."""
        self.db = db
        self.keep = keep
        self._since = dict.fromkeys(keep, 0)  # rows written since the table's last step
        self._over = dict.fromkeys(keep, True)  # still above its limit after the last step

    def count(self, **written: int) -> None:
        for table, n in written.items():
            self._since[table] += n

    def step(self, force: bool = False) -> None:
        """Trim each table that is due (module docstring)."""
        for table, keep in self.keep.items():
            if force or self._over[table] or self._since[table] >= max(1, min(keep // 100, PRUNE_STEP)):
                key = _KEYS[table]
                # Keys are dense (seq and n only grow), so MAX - keep is where the kept rows begin.
                # Two subqueries: SQLite reads a lone MIN or MAX off the key, but scans for both at once.
                low, high = self.db.execute(
                    f"SELECT (SELECT MIN({key}) FROM {table}), (SELECT MAX({key}) FROM {table})").fetchone()
                if low is not None:
                    cut = high - keep
                    self.db.execute(f"DELETE FROM {table} WHERE {key} <= ?", (min(cut, low + PRUNE_STEP - 1),))
                    self._over[table] = cut >= low + PRUNE_STEP
                self._since[table] = 0
