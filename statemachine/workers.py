"""Input workers: the processes, often on other hosts, that feed one run alongside its opener.

The real system is fed by several input workers at once ("shard the input dataset across the N
input worker nodes"). A run opened with N worker slots gets a join token (the opener hands it to
its workers); a worker joins with the run id and the token, then may only stream and heartbeat.
The run's lease stays its opener's: a worker's calls keep the worker alive, not the run.

What the model keeps of a worker is its `Worker` record; what it reports (pure, from a run and a
time) is `breakdown()`: per feeder its samples, samples/s and share of the run's total, which
feeders fed below half their fair share, which stopped calling, and how many slots were never
joined. `suspected_input_bottleneck` in performance.json stays the aggregate verdict
(statemachine/performance.py); this report says which worker to look at.

The token itself is never kept: the run keeps its SHA-256 digest (`token_digest`), and a join is
checked against it in constant time (`token_matches`).
"""

from __future__ import annotations

import hashlib
import hmac
from dataclasses import dataclass

# A feeder below this fraction of its fair share of the samples is named as slow.
FAIR_SHARE_FRACTION = 0.5

ACTIVE = "ACTIVE"  # joined, and called within the run's lease
LOST = "LOST"  # joined, but no call for longer than the run's lease
LEFT = "LEFT"  # said it was done (run.leave)
OPENER = "opener"
WORKER = "worker"


def token_digest(token: str) -> str:
    """What a run keeps of its join token: its SHA-256, hex."""
    return hashlib.sha256(token.encode()).hexdigest()


def token_matches(token: str, digest: str | None) -> bool:
    """Whether `token` is the one whose digest the run keeps; constant time in the token."""
    return digest is not None and hmac.compare_digest(token_digest(token), digest)


@dataclass
class Worker:
    """One input worker of a run. `client` is how csd knows its process (key name and identity
    prefix, as for the opener); times are ms since the epoch. A record is replaced, never changed
    in place (`fed`, `seen`, `gone`), so that keeping a run's state for an undo copies no worker."""

    name: str
    client: str
    joined_at: int
    last_seen: int
    samples: int = 0
    left_at: int | None = None

    def fed(self, samples: int, now: int) -> "Worker":
        return Worker(self.name, self.client, self.joined_at, now, self.samples + samples, self.left_at)

    def seen(self, now: int) -> "Worker":
        return Worker(self.name, self.client, self.joined_at, now, self.samples, self.left_at)

    def gone(self, now: int) -> "Worker":
        return Worker(self.name, self.client, self.joined_at, self.last_seen, self.samples, now)

    def status(self, now: int, lease_ms: int) -> str:
        if self.left_at is not None:
            return LEFT
        return LOST if now - self.last_seen > lease_ms else ACTIVE

    def to_dict(self) -> dict:
        """The store form (camelCase, like the run's)."""
        return {"name": self.name, "client": self.client, "joinedAt": self.joined_at, "lastSeen": self.last_seen,
                "samples": self.samples, "leftAt": self.left_at}

    @classmethod
    def from_dict(cls, d: dict) -> "Worker":
        return cls(d["name"], d["client"], int(d["joinedAt"]), int(d["lastSeen"]), int(d["samples"]), d.get("leftAt"))


def _percent(fraction: float) -> str:
    return f"{fraction * 100:.1f}%"


def breakdown(run, now: int, feed_ms: int) -> tuple[list[dict], dict]:
    """(rows, report) for `run` as of `now` (its end, once ended); `feed_ms` is the time samples
    were fed over (performance.json's total_time). One row per feeder: every joined worker, and
    the opener when it fed samples itself, so the rows' samples always sum to the run's total."""
    end = run.ended_at if run.ended_at is not None else now
    total = run.total_samples
    rows = []
    if run.opener_samples or not run.workers:
        rows.append({"name": run.owner, "role": OPENER, "status": ACTIVE if run.is_open else run.status.value,
                     "samples": run.opener_samples})
    for worker in run.workers.values():
        rows.append({"name": worker.name, "role": WORKER, "client": worker.client,
                     "status": worker.status(end, run.lease_ms), "joinedAt": worker.joined_at,
                     "lastSeen": worker.last_seen, "leftAt": worker.left_at, "samples": worker.samples})
    for row in rows:
        window = feed_ms if row["role"] == OPENER else _window(run, row, end)
        row["samplesPerSec"] = round(row["samples"] / (window / 1000), 3) if window > 0 else 0.0
        row["share"] = round(row["samples"] / total, 4) if total else 0.0
    fair = 1 / len(rows) if rows else 0.0
    lost = [r["name"] for r in rows if r["status"] == LOST]
    slow = [r["name"] for r in rows
            if total and len(rows) > 1 and r["status"] != LOST and r["samples"] < FAIR_SHARE_FRACTION * fair * total]
    never = run.worker_slots - len(run.workers)
    report = {"slots": run.worker_slots, "joined": len(run.workers), "neverJoined": never,
              "fairShare": round(fair, 4), "slow": slow, "lost": lost, "message": _message(rows, slow, lost, never, fair)}
    return rows, report


def _window(run, row: dict, end: int) -> int:
    """The ms a worker fed over: from when it could stream (joined, fabric programmed) until it
    left, went silent, or the run ended (now, while open)."""
    if run.programming_until is None or run.programming_until > end:
        return 0
    start = max(row["joinedAt"], run.programming_until)
    stop = {LEFT: row["leftAt"], LOST: row["lastSeen"]}.get(row["status"], end)
    return max(0, stop - start)


def _message(rows: list[dict], slow: list[str], lost: list[str], never: int, fair: float) -> str:
    """The report in one paragraph, for people."""
    by_name = {r["name"]: r for r in rows}
    parts = []
    for name in slow:
        r = by_name[name]
        parts.append(f"{name} fed {_percent(r['share'])} of the samples ({r['samplesPerSec']:,.1f} samples/s), below "
                     f"half its fair share of {_percent(fair)}: it is the likely input bottleneck")
    for name in lost:
        parts.append(f"{name} stopped calling (no stream or heartbeat within the run's lease); the run carried on "
                     "without it")
    if never:
        parts.append(f"{never} worker slot{'s' if never != 1 else ''} never joined")
    if not parts:
        if len(rows) > 1:
            return f"All {len(rows)} feeders fed at least half their fair share ({_percent(fair)})."
        return "One feeder: nothing to compare."
    return "; ".join(parts) + "."
