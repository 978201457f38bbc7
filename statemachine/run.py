"""One run: the record of a training runtime's hold on the wafer, open or ended.

A run programs the fabric at most once (UNPROGRAMMED → PROGRAMMING → PROGRAMMED), streams
samples, renews its lease, and ends CLOSED (by its runtime) or ABORTED (lease lapsed, its time
limit passed, forced standby, an admin, Slurm, a daemon restart). The record is also the wire and store form
(`to_dict`, camelCase keys, stable: docs/protocol.md).
"""

from __future__ import annotations

import copy
from dataclasses import dataclass, field
from datetime import datetime, timezone
from enum import Enum

from csadmin.shared.opargs import Args

from .workers import Worker


class RunStatus(str, Enum):
    OPEN = "OPEN"
    CLOSED = "CLOSED"
    ABORTED = "ABORTED"


class Fabric(str, Enum):
    UNPROGRAMMED = "UNPROGRAMMED"
    PROGRAMMING = "PROGRAMMING"
    PROGRAMMED = "PROGRAMMED"


def run_id_of(number: int) -> str:
    return f"run-{number:06d}"


def utc(ms: int | None) -> str:
    """A time for messages people read (pure: no clock is read here)."""
    if ms is None:
        return "-"
    return datetime.fromtimestamp(ms / 1000, timezone.utc).strftime("%Y-%m-%d %H:%M:%S UTC")


def seconds(ms: int) -> float:
    """Milliseconds as the seconds the wire and performance.json show (to the millisecond)."""
    return round(ms / 1000, 3)


@dataclass
class Run:
    """One run, open or ended. Times are ms since the epoch."""

    run_id: str
    number: int
    owner: str  # the runtime's label for itself (e.g. a job name)
    client: str  # the caller that opened it; only it (and the input workers it admits) may use the run
    mode: str
    lease_ms: int
    opened_at: int
    lease_until: int | None
    status: RunStatus = RunStatus.OPEN
    fabric: Fabric = Fabric.UNPROGRAMMED
    program: dict | None = None
    programming_started_at: int | None = None
    programming_until: int | None = None  # when programming completes (completed, once PROGRAMMED)
    total_samples: int = 0
    ended_at: int | None = None
    abort_reason: str | None = None
    abort_fault: str | None = None  # the fault that aborted it (RunAborted names it)
    performance: dict | None = None  # performance.json's fields, set when the run ends
    slurm_job: str | None = None  # the Slurm job holding the wafer when the run was opened
    worker_slots: int = 0  # input workers the opener asked for (statemachine/workers.py)
    token_digest: str | None = None  # the join token's SHA-256: kept in the store, never on the wire
    workers: dict[str, Worker] = field(default_factory=dict)  # joined workers, by client
    opener_samples: int = 0  # of total_samples, those the opener streamed itself
    model_dir: str | None = None  # where the runtime keeps the run's artifacts (its label; csd never reads it)
    time_limit_until: int | None = None  # when the run must end (run.open's time_limit_seconds: job_time_sec)

    @property
    def phase(self) -> str:
        """The run's row in statemachine/run_rules.py: OPEN/<fabric>, CLOSED or ABORTED."""
        if self.status is RunStatus.OPEN:
            return f"OPEN/{self.fabric.value}"
        return self.status.value

    @property
    def is_open(self) -> bool:
        return self.status is RunStatus.OPEN

    @property
    def deadline(self) -> int | None:
        """When something of this run is due: its programming's completion, its lease's lapse or
        its time limit."""
        due = [self.lease_until, self.time_limit_until]
        if self.fabric is Fabric.PROGRAMMING:
            due.append(self.programming_until)
        due = [t for t in due if t is not None]
        return min(due) if due else None

    def overdue(self, now: int) -> tuple[str, str] | None:
        """(reason, cause) when an open run must be aborted at `now`: its time limit passed or its
        lease lapsed; else None."""
        if self.time_limit_until is not None and now >= self.time_limit_until:
            limit = seconds(self.time_limit_until - self.opened_at)
            return f"time limit exceeded (job_time_sec: the run may last {limit:g} s)", "time_limit"
        if self.lease_until is not None and now >= self.lease_until:
            return f"lease expired (no heartbeat for {seconds(self.lease_ms):g} s)", "lease_expired"
        return None

    def renew(self, worker: Worker | None, now: int) -> None:
        """A call from the opener renews the run's lease; one from an input worker, only that
        worker's liveness (the lease is the opener's: a run its opener left is aborted)."""
        if worker is None:
            self.lease_until = now + self.lease_ms
        else:
            self.workers[worker.client] = worker.seen(now)

    def end(self, status: RunStatus, reason: str | None, fault: str | None, now: int, performance: dict) -> None:
        """The run is over (CLOSED, or ABORTED for `reason`, by `fault` if one caused it): its
        lease is gone and `performance` (statemachine/performance.py) is its final record."""
        self.ended_at, self.status, self.abort_reason, self.abort_fault = now, status, reason, fault
        self.lease_until = None
        self.performance = performance

    @classmethod
    def opened(cls, number: int, request: Args, client: str, now: int, default_lease_ms: int, slurm_job: str | None,
               token_digest: str | None) -> "Run":
        """A new run, open and holding the fabric, from a run.open request (the record of its
        arguments, csadmin/shared/ops.py RUN_OPEN): what it keeps of them is read here, by the
        names the op declares. `client` opened it, `slurm_job` held the wafer, `token_digest` is
        the digest of the join token csd drew for its `workers`."""
        lease = default_lease_ms if request.lease_seconds is None else int(request.lease_seconds * 1000)
        slots = request.workers
        limit = None if request.time_limit_seconds is None else now + int(request.time_limit_seconds * 1000)
        return cls(run_id_of(number), number, request.owner, client, request.mode.value, lease, now, now + lease,
                   slurm_job=slurm_job, worker_slots=slots, token_digest=token_digest if slots else None,
                   model_dir=request.model_dir, time_limit_until=limit)

    def to_dict(self) -> dict:
        """The wire and store form (camelCase keys, stable: docs/protocol.md)."""
        return {
            "runId": self.run_id,
            "number": self.number,
            "owner": self.owner,
            "client": self.client,
            "mode": self.mode,
            "status": self.status.value,
            "fabric": self.fabric.value,
            "leaseSeconds": seconds(self.lease_ms),
            "leaseUntil": self.lease_until,
            "openedAt": self.opened_at,
            "program": dict(self.program) if self.program else None,
            "programmingStartedAt": self.programming_started_at,
            "programmingUntil": self.programming_until,
            "totalSamples": self.total_samples,
            "endedAt": self.ended_at,
            "abortReason": self.abort_reason,
            "abortFault": self.abort_fault,
            "performance": dict(self.performance) if self.performance else None,
            "slurmJob": self.slurm_job,
            "workerSlots": self.worker_slots,
            "workers": [w.to_dict() for w in self.workers.values()],
            "openerSamples": self.opener_samples,
            "modelDir": self.model_dir,
            "timeLimitUntil": self.time_limit_until,
        }

    def to_store(self) -> dict:
        """The store form: the wire form and the join token's digest (which never leaves csd)."""
        return {**self.to_dict(), "joinTokenDigest": self.token_digest}

    @classmethod
    def from_dict(cls, d: dict) -> "Run":
        return cls(
            run_id=d["runId"], number=int(d["number"]), owner=d["owner"], client=d["client"], mode=d["mode"],
            lease_ms=int(round(d["leaseSeconds"] * 1000)), opened_at=d["openedAt"], lease_until=d["leaseUntil"],
            status=RunStatus(d["status"]), fabric=Fabric(d["fabric"]), program=d.get("program"),
            programming_started_at=d.get("programmingStartedAt"), programming_until=d.get("programmingUntil"),
            total_samples=int(d.get("totalSamples", 0)), ended_at=d.get("endedAt"),
            abort_reason=d.get("abortReason"), abort_fault=d.get("abortFault"), performance=d.get("performance"), slurm_job=d.get("slurmJob"),
            # absent in stores written before input workers (issue #15)
            worker_slots=int(d.get("workerSlots", 0)), token_digest=d.get("joinTokenDigest"),
            workers={w["client"]: Worker.from_dict(w) for w in d.get("workers", ())},
            opener_samples=int(d.get("openerSamples", d.get("totalSamples", 0) if not d.get("workers") else 0)),
            model_dir=d.get("modelDir"),  # absent in stores written before issue 21
            time_limit_until=d.get("timeLimitUntil"),  # absent in stores written before issue 29
        )

    def copy(self) -> "Run":
        # `program`, `performance` and each Worker are replaced, never changed in place: copying
        # the dict of workers is enough (a stream from one of 16 workers copies no worker).
        twin = copy.copy(self)
        twin.workers = dict(self.workers)
        return twin
