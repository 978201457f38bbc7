"""The durable-write limit: a raw SQLite loop committing one row per transaction, in WAL mode
with synchronous=FULL (csd's settings, daemon/store/store.py), on the disk csd's state is on.

Run by writes.py: `python sqlite_commit.py DB WARMUP DURATION`. Commits for WARMUP seconds, then
counts commits, their latencies and its own CPU (getrusage) for DURATION seconds; prints JSON.
"""

from __future__ import annotations

import json
import resource
import sqlite3
import sys
import time

# A row the size of one of csd's event records.
BODY = ('{"seq":1,"type":"EventSetExecModeWeightStreaming","severity":"INFO","triggerTime":1795435301000,'
        '"details":{"execmode":"WEIGHT_STREAMING","by":{"name":"bench-admin","session":"0123456789abcdef"}}}')


def cpu() -> float:
    usage = resource.getrusage(resource.RUSAGE_SELF)
    return usage.ru_utime + usage.ru_stime


def main(path: str, warmup: float, duration: float) -> None:
    db = sqlite3.connect(path, isolation_level=None)
    db.execute("PRAGMA journal_mode=WAL")
    db.execute("PRAGMA synchronous=FULL")
    db.execute("CREATE TABLE IF NOT EXISTS t (n INTEGER PRIMARY KEY, body TEXT NOT NULL)")
    insert = "INSERT INTO t (body) VALUES (?)"
    start = time.monotonic()
    while time.monotonic() - start < warmup:
        db.execute(insert, (BODY,))  # autocommit: one transaction, fsync'd, per row
    count, lat, cpu0, t0 = 0, [], cpu(), time.monotonic()
    while True:
        a = time.monotonic()
        if a - t0 >= duration:
            break
        db.execute(insert, (BODY,))
        lat.append(time.monotonic() - a)
        count += 1
    t1, cpu1 = time.monotonic(), cpu()
    lat.sort()
    print(json.dumps({"rate": count / (t1 - t0), "cpu_us": (cpu1 - cpu0) / count * 1e6,
                      "p50_us": lat[len(lat) // 2] * 1e6, "count": count}))


if __name__ == "__main__":
    main(sys.argv[1], float(sys.argv[2]), float(sys.argv[3]))
